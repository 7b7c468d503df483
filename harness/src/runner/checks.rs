//! A case's judgement: the serial port watched for the expected lines in
//! order (or a failure pattern, which ends the case at once), then what
//! the scenario asks to be seen once the machine booted: requests the
//! boot servers answered, heartbeats, the Redfish state, and a second
//! start (`[then]`). Produces the case's verdict and its one-line detail.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::after_deploy::{after_deploy, agent_phases};
use super::drive::Drive;
use super::logs::{count, watch, Watch};
use super::prepare::Prepared;
use crate::driver::Bmc;
use crate::lab::{wait_until, Lab};
use crate::scenario::{Driver, Outcome, Scenario, Then};

/// A case's result, before its timing and artifacts are added.
pub(super) struct Verdict {
    pub passed: bool,
    pub detail: String,
    pub to_marker: Option<Duration>,
}

/// Judges a driven case: what the serial port showed against the expected
/// outcome, then (only while nothing is wrong yet, as each step needs the
/// last) the servers' logs, the Redfish state, the second start and
/// Ironic's undeploy and boot-interface switch. Keeps the domain's XML.
pub(super) fn judge(
    lab: &Mutex<Lab>,
    s: &Scenario,
    driver: Driver,
    case: &Prepared,
    drive: Drive,
) -> Result<Verdict> {
    let Drive {
        started,
        seen,
        expected_error,
        mut problems,
        ironic,
        subscribers,
    } = drive;
    let bmc = &case.bmc;
    let to_marker = outcome(&seen, s.expect, started, &mut problems);
    // When Ironic failed before the machine booted, that is the news.
    let booted = !matches!(seen, Watch::Driver(_)) && expected_error.is_none();
    if booted {
        server_checks(s, case, &mut problems);
        if let Some(subs) = &subscribers {
            super::events::check(s, case, subs, &mut problems);
        }
    }
    if problems.is_empty() {
        for (path, want) in &s.checks.redfish {
            let deadline = Instant::now() + Duration::from_secs(30);
            let got = loop {
                let got = if case.layout.is_some() {
                    // Ironic's emulator listens inside the lab's namespace.
                    let (b, p) = (bmc.clone(), path.clone());
                    crate::netns::inside(&case.ns, move || b.property(&p))?
                } else {
                    bmc.property(path)?
                };
                if &got == want || Instant::now() > deadline {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(500));
            };
            if &got != want {
                problems.push(format!("Redfish {path} is {got:?}, expected {want:?}"));
            }
        }
    }
    if let (Some(then), true) = (&case.patterns.then, problems.is_empty()) {
        second_start(lab, bmc, driver, case, then, &mut problems)?;
    }
    let mut access = None;
    if let (Some(svc), Some(node), Some(l)) = (&ironic, &s.ironic, &case.layout) {
        if problems.is_empty() && node.expect_error.is_none() {
            after_deploy(svc, node, l, case, &mut problems);
            access = ironic_in_access_log(node, l, case, &mut problems);
        }
    }
    if let Some(xml) = lab.lock().ok().and_then(|l| l.domain_xml(&case.domain)) {
        let _ = std::fs::write(case.dir.join("domain.xml"), xml);
    }
    let passed = problems.is_empty();
    let detail = if passed {
        match seen {
            _ if expected_error.is_some() => {
                format!("failed as expected: {}", expected_error.unwrap_or_default())
            }
            Watch::Failed(f) => format!("failed as expected: {f:?}"),
            _ => "booted as expected".into(),
        }
    } else {
        problems.join("; ")
    };
    let detail = match access {
        Some(n) => format!("{detail}; the access log holds all {n} of Ironic's Redfish requests"),
        None => detail,
    };
    // How the agent's deploys spent their time, passed or not.
    let detail = match case.layout.as_ref().filter(|l| l.agent.is_some()) {
        Some(l) => match agent_phases(&l.dir.join("ironic-api.jsonl"), &l.dir.join("ironic.log")) {
            Some(p) => format!("{detail}; {p}"),
            None => detail,
        },
        None => detail,
    };
    Ok(Verdict {
        passed,
        detail,
        to_marker,
    })
}

/// Whether the emulator's access log holds every Redfish request of the
/// deploy with its status (sushy's hardware types; the log at its
/// default level): how many it holds.
fn ironic_in_access_log(
    node: &crate::scenario::IronicNode,
    layout: &crate::ironic::Layout,
    case: &Prepared,
    problems: &mut Vec<String>,
) -> Option<usize> {
    use crate::scenario::IronicDriver;
    let sushy = matches!(node.driver, IronicDriver::Redfish | IronicDriver::Idrac);
    if !sushy || std::env::var_os("SHOAL_EMULATOR_LOG").is_some() {
        return None;
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let (ironic, emulator) = (
        read(&layout.dir.join("ironic.log")),
        read(&case.dir.join("emulator.log")),
    );
    match super::access::covered(&ironic, &emulator) {
        Ok(n) => Some(n),
        Err(e) => {
            problems.push(e);
            None
        }
    }
}

/// What the serial port showed against what the scenario expects; the
/// time to the marker when it went as expected.
fn outcome(
    seen: &Watch,
    expect: Outcome,
    started: Instant,
    problems: &mut Vec<String>,
) -> Option<Duration> {
    match (seen, expect) {
        (Watch::Seen(d), Outcome::Pass) => Some(*d),
        (Watch::Seen(_), Outcome::Fail) => {
            problems.push("the boot succeeded, but this scenario expects it to fail".to_string());
            None
        }
        (Watch::Failed(f), Outcome::Pass) => {
            problems.push(format!("the firmware reported {f:?}"));
            None
        }
        (Watch::Failed(_), Outcome::Fail) => Some(started.elapsed()),
        (Watch::TimedOut(why) | Watch::Driver(why), _) => {
            problems.push(why.clone());
            None
        }
    }
}

/// How long a request the serial port already showed the outcome of may
/// take to reach the server's log: OVMF prints a 404 at its HEAD and only
/// then sends the GET a scenario names.
const LOG_LAG: Duration = Duration::from_secs(10);

/// Whether `log` shows `request` (as [`count`] matches it) within
/// [`LOG_LAG`].
fn logged(log: &Path, request: &str) -> bool {
    crate::lab::wait_until(LOG_LAG, || count(log, request) > 0).is_some()
}

/// What the boot server, the BMC's file server and the heartbeat log show
/// of a booted machine.
fn server_checks(s: &Scenario, case: &Prepared, problems: &mut Vec<String>) {
    for r in &case.patterns.requests {
        if !logged(&case.dir.join("http.log"), r) {
            problems.push(format!("the boot server never answered {r:?}"));
        }
    }
    let https = case.dir.join("https.log");
    for r in &s.checks.https_requests {
        if !logged(&https, r) {
            problems.push(format!("the HTTPS boot server never logged {r:?}"));
        }
    }
    for r in &s.checks.https_requests_absent {
        if count(&https, r) > 0 {
            problems.push(format!("the HTTPS boot server logged {r:?}"));
        }
    }
    if !s.checks.emulator_log.is_empty() {
        let log = std::fs::read_to_string(case.dir.join("emulator.log")).unwrap_or_default();
        for want in &s.checks.emulator_log {
            if !log.contains(want.as_str()) {
                problems.push(format!("the emulator never logged {want:?}"));
            }
        }
    }
    for r in &s.checks.bmc_requests {
        if !logged(&case.dir.join("bmc-http.log"), r) {
            problems.push(format!("the BMC never fetched {r:?}"));
        }
    }
    if !s.checks.heartbeat.is_empty() {
        let beats = std::fs::read_to_string(case.dir.join("heartbeat.log")).unwrap_or_default();
        if beats.trim().is_empty() {
            problems.push("the machine sent no heartbeat".into());
        }
        for line in beats.lines().filter(|l| !l.is_empty()) {
            for want in &s.checks.heartbeat {
                if !line.contains(want.as_str()) {
                    problems.push(format!("heartbeat {line:?} lacks {want:?}"));
                }
            }
        }
    }
}

/// `[then]`: once the machine powered itself off, the driver starts it
/// again; the serial port must show `then.serial` and the boot server must
/// not answer `then.requests_absent` again.
fn second_start(
    lab: &Mutex<Lab>,
    bmc: &Bmc,
    driver: Driver,
    case: &Prepared,
    then: &Then,
    problems: &mut Vec<String>,
) -> Result<()> {
    let running = |d: &str| lab.lock().map(|l| l.is_running(d)).unwrap_or(false);
    if wait_until(Duration::from_secs(30), || !running(&case.domain)).is_none() {
        problems.push("the machine did not power off after its boot".into());
        return Ok(());
    }
    let log = case.dir.join("http.log");
    let before: Vec<usize> = then
        .requests_absent
        .iter()
        .map(|r| count(&log, r))
        .collect();
    let t2 = Instant::now();
    bmc.power_on(driver)?;
    match watch(&case.serial, &then.serial, &[], case.limit, t2) {
        Watch::Seen(_) => {}
        Watch::Failed(f) | Watch::TimedOut(f) | Watch::Driver(f) => {
            problems.push(format!("second start: {f}"))
        }
    }
    for (r, b) in then.requests_absent.iter().zip(before) {
        if count(&log, r) > b {
            problems.push(format!(
                "second start: the boot server answered {r:?} again"
            ));
        }
    }
    Ok(())
}
