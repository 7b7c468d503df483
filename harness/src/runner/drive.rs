//! A case's drive: what asks for the boot once the machine and its BMC are
//! up. Either a driver asks the BMC (`sushy`, `ironic-sequence`: the
//! scenario's `[boot]` as a `BootRequest`), or Ironic itself enrolls and
//! deploys the node (`ironic`), with the checks of what its DHCP provider
//! wrote; after a good deploy, the undeploy and the boot-interface switch
//! the scenario asks for.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::checks::{count, watch, Watch};
use super::prepare::Prepared;
use super::Options;
use crate::driver::BootRequest;
use crate::ironic::{Ironic, Layout};
use crate::scenario::{Driver, HttpBoot, IronicDriver, IronicNode, Machine, Method, Scenario};

/// What the drive left for the judgement.
pub(super) struct Drive {
    /// When the drive began (before Ironic starts, for the `ironic` driver).
    pub started: Instant,
    /// What the serial port showed (or the driver's failure).
    pub seen: Watch,
    /// Ironic's error, when the scenario expects it and it came.
    pub expected_error: Option<String>,
    pub problems: Vec<String>,
    /// The case's Ironic, kept running for the undeploy.
    pub ironic: Option<Ironic>,
}

/// Has the case's driver ask for the boot and watches the serial port.
pub(super) fn drive(
    opts: &Options,
    s: &Scenario,
    driver: Driver,
    case: &Prepared,
) -> Result<Drive> {
    let started = Instant::now();
    if let (Some(l), Some(node)) = (&case.layout, &s.ironic) {
        return ironic_deploy(opts, node, &s.machine, l, case, started);
    }
    let boot = s
        .boot
        .as_ref()
        .ok_or_else(|| anyhow!("scenario without [boot]"))?;
    let bmc_side = boot.method == Method::VirtualMedia || s.emulator.http_boot == HttpBoot::Vmedia;
    let uri = boot.uri.as_ref().map(|u| {
        if bmc_side {
            format!("{}/{u}", case.bmc_url)
        } else if s.https.is_some() {
            format!("{}/{u}", case.net.boot_url_tls())
        } else {
            format!("{}/{u}", case.net.boot_url())
        }
    });
    let bios = boot
        .bios
        .iter()
        .map(|(k, v)| (k.clone(), v.replace("{uri}", uri.as_deref().unwrap_or(""))))
        .collect();
    let req = BootRequest {
        method: boot.method,
        uri,
        enabled: boot.enabled,
        bios,
        with_mode: boot.with_mode,
        mailbox: boot.mailbox.clone(),
        lock_flags: boot.lock_flags,
        enroll: case.enroll.clone(),
    };
    case.bmc.boot(driver, &req)?;
    let p = &case.patterns;
    Ok(Drive {
        started,
        seen: watch(&case.serial, &p.serial, &p.failure, case.limit, started),
        expected_error: None,
        problems: Vec::new(),
        ironic: None,
    })
}

/// Starts the case's Ironic, enrolls the machine and deploys it; checks
/// what Ironic's DHCP provider wrote, as the scenario says it must.
fn ironic_deploy(
    opts: &Options,
    node: &IronicNode,
    machine: &Machine,
    l: &Layout,
    case: &Prepared,
    started: Instant,
) -> Result<Drive> {
    if let Some(pem) = &case.enroll {
        // The emulator listens in the lab's namespace, where Ironic is.
        let (bmc, pem) = (case.bmc.clone(), pem.clone());
        crate::netns::inside(&case.ns, move || bmc.enroll_ca(&pem))
            .context("enrolling the CA in the BMC's Boot.Certificates")?;
    }
    let venv = match node.driver.ironic35() {
        true => Some(opts.ironic35_venv.as_deref().ok_or_else(|| {
            anyhow!("the {} hardware type needs Ironic 35 (--ironic35-venv or SHOAL_IRONIC35_VENV; ci/test builds it)", node.driver.as_str())
        })?),
        false => opts.ironic_venv.as_deref(),
    };
    let svc = Ironic::start(&case.ns, venv, l)?;
    let mut args = vec![
        "enroll".to_string(),
        "--name".into(),
        case.domain.clone(),
        "--bmc".into(),
        case.bmc.url.clone(),
        "--system".into(),
        case.bmc.system.clone(),
        "--mac".into(),
        case.mac.clone(),
        "--boot-interface".into(),
        node.boot_interface.clone(),
        "--driver".into(),
        node.driver.as_str().into(),
    ];
    if node.driver == IronicDriver::Ipmi || !node.console.is_empty() {
        // The emulator's IPMI listener shares its Redfish address.
        let host = url_host(&case.bmc.url)?;
        args.extend([
            "--ipmi-address".into(),
            host,
            "--ipmi-port".into(),
            case.ipmi_port.to_string(),
        ]);
    }
    if !node.console.is_empty() {
        args.extend(["--console-port".into(), l.console_port.to_string()]);
    }
    if node.driver == IronicDriver::Ilo5 {
        // proliantutils takes the iLO's address with its port; the BMC's
        // certificate is the run CA's.
        let host = case.bmc.url.strip_prefix("https://").ok_or_else(|| {
            anyhow!(
                "the ilo5 hardware type speaks HTTPS; the BMC is at {}",
                case.bmc.url
            )
        })?;
        let ca = std::fs::canonicalize(case.dir.join("bmc-tls").join("run-ca.pem"))?;
        args.extend([
            "--ilo-address".into(),
            host.trim_end_matches('/').to_string(),
            "--ilo-verify-ca".into(),
            ca.display().to_string(),
        ]);
    }
    for (k, v) in &node.properties {
        args.extend(["--property".into(), format!("{k}={v}")]);
    }
    args.extend([
        "--deploy-interface".into(),
        node.deploy_interface.as_str().into(),
    ]);
    for (k, v) in &node.driver_info {
        args.extend([
            "--driver-info".into(),
            format!("{k}={}", crate::ironic::render(v, l)?),
        ]);
    }
    for how in &node.inspect {
        args.extend(["--inspect".into(), how.clone()]);
    }
    for step in &node.clean_steps {
        args.extend(["--clean-step".into(), serde_json::to_string(step)?]);
    }
    if let Some(t) = &node.target_raid_config {
        let raid = match node.driver {
            crate::scenario::IronicDriver::Idrac => "idrac-redfish",
            _ => "redfish",
        };
        args.extend([
            "--raid-interface".into(),
            raid.into(),
            "--target-raid-config".into(),
            serde_json::to_string(t)?,
        ]);
    }
    // Cleaning at `provide` and agent inspection boot the agent: as long
    // as a deploy may take, each.
    let boots =
        u32::from(node.cleaning) + node.inspect.iter().filter(|i| *i == "agent").count() as u32;
    let enroll_limit = match boots {
        0 => Duration::from_secs(300),
        n => case.limit * n,
    } + case.limit * u32::from(!node.clean_steps.is_empty());
    let enrolled = svc.node(&strs(&args), enroll_limit)?;
    let mut problems = inspected(&enrolled, node, machine, &case.mac);
    let t = Instant::now();
    let deployed = svc.node(
        &strs(&deploy_args(&case.domain, &node.instance, l)?),
        case.limit,
    );
    // The node's console, enabled at enrollment, is read once the node is
    // active: Ironic stops it during the deploy and starts it again at its
    // end (the instance's console, never the deploy's), before the
    // firmware prints its first line.
    let console_log = case.dir.join("console.log");
    let console = match (&deployed, node.console.is_empty()) {
        (Ok(_), false) => match svc.console(&case.domain, &console_log, case.limit * 2) {
            Ok(reader) => Some(reader),
            Err(e) => {
                problems.push(format!("the node's console: {e:#}"));
                None
            }
        },
        _ => None,
    };
    let written = read_all(&l.optsdir());
    for want in &node.dhcp_opts_contain {
        if !written.contains(want.as_str()) {
            problems.push(format!(
                "Ironic's DHCP options ({}) lack {want:?}",
                l.optsdir().display()
            ));
        }
    }
    let mut expected_error = None;
    let p = &case.patterns;
    let seen = match (deployed, &node.expect_error) {
        (Ok(_), None) => watch(&case.serial, &p.serial, &p.failure, case.limit, t),
        (Err(e), Some(want)) if format!("{e:#}").contains(want.as_str()) => {
            expected_error = Some(format!("{e:#}"));
            Watch::Seen(t.elapsed())
        }
        (Err(e), _) => Watch::Driver(format!("{e:#}")),
        (Ok(_), Some(want)) => Watch::Driver(format!(
            "the node became active, but this scenario expects Ironic to fail with {want:?}"
        )),
    };
    if let (Some(reader), Watch::Seen(_)) = (console, &seen) {
        // The console carries what the serial port showed, a moment later.
        let grace = Duration::from_secs(30);
        match watch(&console_log, &node.console, &[], grace, Instant::now()) {
            Watch::Seen(_) => {}
            _ => problems.push(format!(
                "the node's console ({}) did not show {:?} in order",
                console_log.display(),
                node.console
            )),
        }
        drop(reader);
    }
    Ok(Drive {
        started,
        seen,
        expected_error,
        problems,
        ironic: Some(svc),
    })
}

/// What each inspection (an `IRONIC-INSPECTED` line of the enrollment)
/// found, against the machine: its one vCPU, its memory, its disk's size
/// and its NIC's MAC, in the inventory Ironic stored (the BMC's for redfish
/// inspection, the agent's own for agent inspection), and for redfish
/// also the properties Ironic derived (memory_mb, local_gb) and the ports
/// it created.
fn inspected(out: &str, node: &IronicNode, machine: &Machine, mac: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let found: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("IRONIC-INSPECTED "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    let disk_gib = machine.disk_gib.unwrap_or(0);
    let int = |v: &serde_json::Value| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    };
    let strings = |v: &serde_json::Value, key: &str| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| match key {
                "" => i.as_str(),
                k => i[k].as_str(),
            })
            .map(str::to_lowercase)
            .collect()
    };
    let mac = mac.to_lowercase();
    for how in &node.inspect {
        let Some(f) = found.iter().find(|f| f["interface"] == how.as_str()) else {
            problems.push(format!("{how} inspection: Ironic reported nothing"));
            continue;
        };
        let mut want = |what: &str, ok: bool, got: String| {
            if !ok {
                problems.push(format!("{how} inspection: {what} is {got}"));
            }
        };
        let (p, inv) = (&f["properties"], &f["inventory"]);
        if how == "ilo" {
            // iLO's inspection keeps no inventory: the node's properties,
            // the capabilities proliantutils found, and a port per MAC.
            let mem = int(&p["memory_mb"]);
            want(
                "properties.memory_mb",
                mem == Some(machine.memory_mib),
                format!("{mem:?}, not {}", machine.memory_mib),
            );
            let gb = int(&p["local_gb"]);
            want(
                "properties.local_gb",
                gb == Some(disk_gib.saturating_sub(1)),
                format!("{gb:?}, not {}", disk_gib.saturating_sub(1)),
            );
            let caps = p["capabilities"].as_str().unwrap_or("");
            for cap in [
                "server_model:ProLiant",
                "nic_capacity:1Gb",
                "boot_mode:uefi",
            ] {
                want(
                    "properties.capabilities",
                    caps.contains(cap),
                    format!("{caps:?}, without {cap}"),
                );
            }
            let ports = strings(&f["ports"], "");
            want(
                "the ports",
                ports.contains(&mac),
                format!("{ports:?}, not with {mac}"),
            );
            continue;
        }
        let macs = strings(&inv["interfaces"], "mac_address");
        want(
            "the inventory's MACs",
            macs.contains(&mac),
            format!("{macs:?}, not with {mac}"),
        );
        let cpus = int(&inv["cpu"]["count"]);
        want("cpu.count", cpus == Some(1), format!("{cpus:?}, not 1"));
        let mem = int(&inv["memory"]["physical_mb"]);
        want(
            "memory.physical_mb",
            mem == Some(machine.memory_mib),
            format!("{mem:?}, not {}", machine.memory_mib),
        );
        let sizes: Vec<u64> = inv["disks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| int(&d["size"]))
            .collect();
        want(
            "the disks' sizes",
            sizes.contains(&(disk_gib << 30)),
            format!(
                "{sizes:?} bytes, not with {} ({disk_gib} GiB)",
                disk_gib << 30
            ),
        );
        if how == "idrac-redfish" {
            // Dell's serial number is the service tag (the System's SKU).
            let tag = inv["system_vendor"]["serial_number"].as_str().unwrap_or("");
            want(
                "system_vendor.serial_number",
                tag.len() == 7
                    && tag
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
                format!("{tag:?}, not a 7-character service tag"),
            );
            // Ironic 39 compares sushy's boot mode (`UEFI`) with its own
            // `uefi`, so it never reads the PxeDev attributes and reports
            // no PXE interface; once it does, it must be this port.
            if let Some(pxe) = inv["boot"]["pxe_interface"].as_str() {
                let pxe = pxe.to_lowercase();
                want(
                    "boot.pxe_interface",
                    pxe == mac,
                    format!("{pxe:?}, not {mac}"),
                );
            }
        }
        if how == "redfish" || how == "idrac-redfish" {
            let ports = strings(&f["ports"], "");
            want(
                "the ports",
                ports.contains(&mac),
                format!("{ports:?}, not with {mac}"),
            );
            let mem = int(&p["memory_mb"]);
            want(
                "properties.memory_mb",
                mem == Some(machine.memory_mib),
                format!("{mem:?}, not {}", machine.memory_mib),
            );
            // Ironic keeps a GiB for partitioning: the disk's size less one.
            let gb = int(&p["local_gb"]);
            want(
                "properties.local_gb",
                gb == Some(disk_gib - 1),
                format!("{gb:?}, not {}", disk_gib - 1),
            );
        }
    }
    problems
}

/// The host of a base URL (`https://127.0.0.1:40123` → `127.0.0.1`).
pub(super) fn url_host(url: &str) -> Result<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        bail!("no host in the emulator's URL {url:?}");
    }
    Ok(host.to_string())
}

/// The text of every file in `dir`, in name order (empty when none).
fn read_all(dir: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `ironic_node.py deploy` for node `name` with `instance` (rendered).
fn deploy_args(name: &str, instance: &BTreeMap<String, String>, l: &Layout) -> Result<Vec<String>> {
    let mut args = vec!["deploy".to_string(), "--name".into(), name.to_string()];
    for (k, v) in instance {
        args.extend([
            "--instance".into(),
            format!("{k}={}", crate::ironic::render(v, l)?),
        ]);
    }
    Ok(args)
}

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
    let deployed = deploy_args(domain, &sw.instance, l).and_then(|a| svc.node(&strs(&a), limit));
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

/// How often `text` occurs in the (serial) log at `path`.
fn occurrences(path: &Path, text: &str) -> usize {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes).matches(text).count()
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
    use super::url_host;

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

    #[test]
    fn the_ipmi_host_is_the_redfish_urls() {
        assert_eq!(url_host("https://127.0.0.1:40123").unwrap(), "127.0.0.1");
        assert_eq!(
            url_host("http://[fd00::1]:8000/redfish").unwrap(),
            "fd00::1"
        );
        assert_eq!(url_host("http://bmc.example").unwrap(), "bmc.example");
        assert!(url_host("http://:80").is_err());
    }
}
