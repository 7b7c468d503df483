//! Ironic after a deploy that booted as expected, for the judge: the
//! rebuild, the undeploy (and its cleaning), the switch to another boot
//! interface with its deploy, the last undeploy; and the agent's phases,
//! how its deploys spent their time, read from Ironic's logs.

use std::path::Path;
use std::time::Instant;

use super::logs::{count, occurrences, watch, Watch};
use super::prepare::Prepared;
use crate::ironic::{deploy_args, Ironic, Layout};
use crate::scenario::IronicNode;

/// After a deploy that booted as expected: undeploy (back to
/// `available`), then the switch to another boot interface and its deploy
/// when the scenario asks for one.
pub(super) fn after_deploy(
    svc: &Ironic,
    node: &IronicNode,
    l: &Layout,
    case: &Prepared,
    problems: &mut Vec<String>,
) {
    let (domain, limit) = (case.domain.as_str(), case.limit);
    if node.rebuild {
        rebuild(svc, case, problems);
        if !problems.is_empty() {
            return;
        }
    }
    let undeploy = ["undeploy", "--name", domain];
    let erased = occurrences(&case.serial, METADATA_ERASED);
    if let Err(e) = svc.node(&undeploy, limit) {
        problems.push(format!("undeploy: {e:#}"));
        return;
    }
    if node.cleaning && occurrences(&case.serial, METADATA_ERASED) <= erased {
        problems.push(format!(
            "undeploy: the node is available, but the agent's log shows no cleaning ({METADATA_ERASED:?})"
        ));
    }
    let Some(sw) = &node.switch else { return };
    let set = [
        "set-boot-interface",
        "--name",
        domain,
        "--boot-interface",
        sw.boot_interface.as_str(),
    ];
    if let Err(e) = svc.node(&set, limit) {
        problems.push(format!("switching to {}: {e:#}", sw.boot_interface));
        return;
    }
    let log = case.dir.join("http.log");
    let before: Vec<usize> = sw.requests.iter().map(|r| count(&log, r)).collect();
    let t = Instant::now();
    let deployed = deploy_args(domain, &sw.instance, l).and_then(|a| svc.node(&a, limit));
    if let Err(e) = deployed {
        problems.push(format!("deploy through {}: {e:#}", sw.boot_interface));
        return;
    }
    // The serial log is opened without append (`append="off"`): the second boot's
    // log starts empty, so nothing of the first boot matches here.
    match watch(&case.serial, &sw.serial, &case.patterns.failure, limit, t) {
        Watch::Seen(_) => {}
        Watch::Failed(f) => problems.push(format!(
            "deploy through {}: the machine reported {f:?}",
            sw.boot_interface
        )),
        Watch::TimedOut(f) | Watch::Driver(f) => {
            problems.push(format!("deploy through {}: {f}", sw.boot_interface))
        }
    }
    for (r, b) in sw.requests.iter().zip(before) {
        if count(&log, r) <= b {
            problems.push(format!(
                "deploy through {}: the boot server never answered {r:?}",
                sw.boot_interface
            ));
        }
    }
    if problems.is_empty() {
        if let Err(e) = svc.node(&undeploy, limit) {
            problems.push(format!("second undeploy: {e:#}"));
        }
    }
}

/// What ironic-python-agent logs when its `erase_devices_metadata`
/// cleaning step has erased the machine's disk.
const METADATA_ERASED: &str = "Disk metadata on /dev/vda successfully destroyed";

/// `rebuild` of the active node: the agent boots, writes the image again,
/// and the instance boots again (the scenario's last serial line shows
/// once more: the machine's log keeps every start).
fn rebuild(svc: &Ironic, case: &Prepared, problems: &mut Vec<String>) {
    let Some(last) = case.patterns.serial.last() else {
        return;
    };
    let before = occurrences(&case.serial, last);
    if let Err(e) = svc.node(&["rebuild", "--name", &case.domain], case.limit) {
        problems.push(format!("rebuild: {e:#}"));
        return;
    }
    let again = crate::lab::wait_until(case.limit, || occurrences(&case.serial, last) > before);
    if again.is_none() {
        problems.push(format!(
            "rebuild: the node is active again, but the machine did not show {last:?} again within {} s",
            case.limit.as_secs()
        ));
    }
}

/// The agent's phases: each provision action `ironic_node.py` asked for
/// (its API log, `ironic-api.jsonl`, timed), how long it took, and within
/// it when the agent's first heartbeat reached Ironic (`POST
/// /v1/heartbeat/` in Ironic's log): the power-on, the firmware, the
/// agent's boot, its lookup.
/// `provide 40 s (first heartbeat at 28 s), active 90 s (…), …`
pub(super) fn agent_phases(api_log: &Path, ironic_log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(api_log).ok()?;
    let beats: Vec<f64> = std::fs::read_to_string(ironic_log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(" POST /v1/heartbeat/"))
        .filter_map(|l| log_time(l.get(..23)?))
        .collect();
    // (verb, when asked, the last record before the next action: the
    // state it reached), in order.
    let mut actions: Vec<(String, f64, f64)> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(t), Some(what)) = (v["t"].as_f64(), v["what"].as_str()) else {
            continue;
        };
        match (what.strip_prefix("provision "), actions.last_mut()) {
            (Some(verb), _) => actions.push((verb.to_string(), t, t)),
            (None, Some(a)) => a.2 = t,
            (None, None) => {}
        }
    }
    let out: Vec<String> = actions
        .iter()
        .map(|(verb, t0, end)| {
            let (t0, end) = (*t0, *end);
            let beat = beats
                .iter()
                .find(|b| **b >= t0 && **b <= end)
                .map(|b| format!(" (first heartbeat at {:.0} s)", b - t0))
                .unwrap_or_default();
            format!("{verb} {:.0} s{beat}", end - t0)
        })
        .collect();
    (!out.is_empty()).then(|| out.join(", "))
}

/// Seconds since the epoch of an oslo.log time stamp written in UTC,
/// `2026-12-05 05:48:40.265`.
fn log_time(stamp: &str) -> Option<f64> {
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm) = (num(11..13)?, num(14..16)?);
    let secs: f64 = stamp.get(17..)?.parse().ok()?;
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + hh * 3600 + mm * 60) as f64 + secs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_times_are_utc_seconds() {
        assert_eq!(super::log_time("1970-01-01 00:00:00.000"), Some(0.0));
        assert_eq!(
            super::log_time("2026-12-05 05:48:40.250"),
            Some(1_796_449_720.25)
        );
        assert_eq!(
            super::log_time("2000-02-29 12:00:00.5"),
            Some(951_825_600.5)
        );
        assert_eq!(super::log_time("not a time at all here"), None);
    }

    #[test]
    fn the_agents_phases_come_from_the_actions_and_heartbeats() {
        let dir = tempfile::tempdir().unwrap();
        let (api, log) = (
            dir.path().join("ironic-api.jsonl"),
            dir.path().join("ironic.log"),
        );
        let t0 = super::log_time("2026-12-05 05:00:00.000").unwrap();
        let lines = [
            (0.0, "POST node"),
            (1.0, "provision manage"),
            (2.0, "state manageable"),
            (3.0, "provision provide"),
            (60.0, "state available"),
            (70.0, "provision active"),
            (200.0, "state active"),
        ];
        let text: String = lines
            .iter()
            .map(|(t, w)| {
                format!(
                    "{{\"t\": {}, \"what\": \"{w}\", \"response\": {{}}}}\n",
                    t0 + t
                )
            })
            .collect();
        std::fs::write(&api, text).unwrap();
        let beat = |at: &str| {
            format!("2026-12-05 {at} 1 INFO ironic.api [-] 198.18.2.200 - POST /v1/heartbeat/x - 202 (7ms)\n")
        };
        let ironic = [
            beat("05:00:31.000"),
            beat("05:00:45.000"),
            "2026-12-05 05:01:00.000 1 INFO ironic.api [-] GET /v1/nodes/x\n".to_string(),
            beat("05:01:50.000"),
        ]
        .concat();
        std::fs::write(&log, ironic).unwrap();
        assert_eq!(
            super::agent_phases(&api, &log).unwrap(),
            "manage 1 s, provide 57 s (first heartbeat at 28 s), active 130 s (first heartbeat at 40 s)"
        );
        assert!(super::agent_phases(&dir.path().join("none"), &log).is_none());
    }
}
