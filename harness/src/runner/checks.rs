//! A case's judgement: the serial port watched for the expected lines in
//! order (or a failure pattern, which ends the case at once), then what
//! the scenario asks to be seen once the machine booted: requests the
//! boot servers answered, heartbeats, the Redfish state, and a second
//! start (`[then]`). Produces the case's verdict and its one-line detail.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::drive::{self, Drive};
use super::prepare::Prepared;
use crate::driver::Bmc;
use crate::lab::{wait_until, Lab};
use crate::scenario::{Driver, Outcome, Scenario, Then};

/// What the serial port showed.
pub(super) enum Watch {
    /// Every expected line, in order; when the last appeared.
    Seen(Duration),
    /// A failure pattern appeared.
    Failed(String),
    TimedOut(String),
    /// The driver failed before the machine booted (Ironic's error).
    Driver(String),
}

/// The patterns of a case: the scenario's, rendered for the machine where
/// it is a petitboot one.
pub(super) struct Patterns {
    pub serial: Vec<String>,
    pub requests: Vec<String>,
    pub failure: Vec<String>,
    pub then: Option<Then>,
}

/// A case's result, before its timing and artifacts are added.
pub(super) struct Verdict {
    pub passed: bool,
    pub detail: String,
    pub to_marker: Option<Duration>,
}

/// Reads `serial` every 250 ms until every `expected` line appeared in
/// order, a `failure` pattern appeared, or `limit` passed since `start`.
/// When each expected line was first seen (to 250 ms) is appended to
/// `markers.txt` beside the serial log, one block per watch: how long a
/// boot took to each step (to kexec, to the payload's marker), and how
/// far a failed one got.
pub(super) fn watch(
    serial: &Path,
    expected: &[String],
    failure: &[String],
    limit: Duration,
    start: Instant,
) -> Watch {
    let mut marks: Vec<Duration> = Vec::new();
    let result = watch_marks(serial, expected, failure, limit, start, &mut marks);
    if let Some(dir) = serial.parent() {
        let mut text = String::from("watch\n");
        for (line, at) in expected.iter().zip(&marks) {
            text.push_str(&format!("{:>8.1} s  {line}\n", at.as_secs_f64()));
        }
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("markers.txt"));
        if let Ok(mut f) = file {
            let _ = f.write_all(text.as_bytes());
        }
    }
    result
}

fn watch_marks(
    serial: &Path,
    expected: &[String],
    failure: &[String],
    limit: Duration,
    start: Instant,
    marks: &mut Vec<Duration>,
) -> Watch {
    loop {
        let raw = String::from_utf8_lossy(&std::fs::read(serial).unwrap_or_default()).into_owned();
        let text = firmware_lines_apart(&raw);
        let mut rest = text.as_str();
        let mut found = 0;
        for e in expected {
            match rest.find(e.as_str()) {
                Some(i) => {
                    rest = &rest[i + e.len()..];
                    found += 1;
                }
                None => break,
            }
        }
        while marks.len() < found {
            marks.push(start.elapsed());
        }
        if found == expected.len() && !expected.is_empty() {
            return Watch::Seen(start.elapsed());
        }
        if let Some(f) = failure.iter().find(|f| text.contains(f.as_str())) {
            return Watch::Failed(f.clone());
        }
        if start.elapsed() > limit {
            let missing = expected.get(found).cloned().unwrap_or_default();
            return Watch::TimedOut(format!(
                "after {limit:?}, still waiting for {missing:?} on the serial port"
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The serial text with skiboot's (OPAL's) log lines, `[   80.246797197,4]
/// SBE: Timer is lagging ...`, kept whole: the firmware writes them to the
/// console it shares with the host whenever it likes, even into the middle
/// of one of the host's lines, which a watched line must still be found
/// across. Such a line is moved to after the host line it cut; one that
/// starts a line stays where it is (scenarios watch for some, `INIT:
/// Starting kernel`). Its timestamp (nanoseconds and a log level after a
/// comma) tells it from the kernel's (`[    1.503029]`).
fn firmware_lines_apart(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut moved = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(['[', '\n']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix('\n') {
            out.push('\n');
            out.push_str(&moved);
            moved.clear();
            rest = after;
            continue;
        }
        let mid_line = !out.is_empty() && !out.ends_with('\n');
        match opal_line_len(tail) {
            Some(n) if mid_line => {
                moved.push_str(&tail[..n]);
                if !moved.ends_with('\n') {
                    moved.push('\n');
                }
                rest = &tail[n..];
            }
            _ => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    if !moved.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&moved);
    }
    out
}

/// The length of the OPAL log line `s` starts with (through its newline),
/// if it starts with one: `[`, spaces, seconds, `.`, nine digits, `,`, a
/// level digit, `] `.
fn opal_line_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    let digits = |from: usize| {
        b[from.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let secs = digits(i);
    if secs == 0 || b.get(i + secs) != Some(&b'.') {
        return None;
    }
    i += secs + 1;
    if digits(i) != 9 || b.get(i + 9) != Some(&b',') {
        return None;
    }
    i += 10;
    if digits(i) != 1 || b.get(i + 1..i + 3) != Some(b"] ".as_slice()) {
        return None;
    }
    let end = s[i..].find('\n').map_or(s.len(), |n| i + n + 1);
    Some(end)
}

/// How many requests the log shows of `request` (`METHOD /path`); a
/// trailing `*` matches any rest of the path (`GET /redfish/boot-*`, where
/// Ironic names the file after the node).
pub(super) fn count(log: &Path, request: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let needle = match request.strip_suffix('*') {
        Some(prefix) => prefix.to_string(),
        None => format!("{request} "),
    };
    text.lines().filter(|l| l.starts_with(&needle)).count()
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
    } = drive;
    let bmc = &case.bmc;
    let to_marker = outcome(&seen, s.expect, started, &mut problems);
    // When Ironic failed before the machine booted, that is the news.
    let booted = !matches!(seen, Watch::Driver(_)) && expected_error.is_none();
    if booted {
        server_checks(s, case, &mut problems);
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
    if let (Some(svc), Some(node), Some(l)) = (&ironic, &s.ironic, &case.layout) {
        if problems.is_empty() && node.expect_error.is_none() {
            drive::after_deploy(svc, node, l, case, &mut problems);
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
    // How the agent's deploys spent their time, passed or not.
    let detail = match case.layout.as_ref().filter(|l| l.agent.is_some()) {
        Some(l) => {
            match drive::agent_phases(&l.dir.join("ironic-api.jsonl"), &l.dir.join("ironic.log")) {
                Some(p) => format!("{detail}; {p}"),
                None => detail,
            }
        }
        None => detail,
    };
    Ok(Verdict {
        passed,
        detail,
        to_marker,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_checks_match_whole_paths_or_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("http.log");
        std::fs::write(
            &log,
            "GET /redfish/boot-3f2a.iso 200 1024\nGET /deploy.iso 200 9\n",
        )
        .unwrap();
        assert_eq!(count(&log, "GET /deploy.iso"), 1);
        assert_eq!(count(&log, "GET /deploy"), 0, "a path is matched whole");
        assert_eq!(count(&log, "GET /redfish/boot-*"), 1);
        assert_eq!(count(&log, "HEAD /redfish/boot-*"), 0);
    }

    /// Seen in a cold CI run (openpower-tftp, ipmitool): skiboot's log
    /// line cut the payload's marker in two on the shared console. Its
    /// lines at a line's start are watched for themselves.
    #[test]
    fn a_firmware_log_line_inside_a_host_line_is_read_past() {
        let serial = "[    1.300000000,5] INIT: Starting kernel at 0x20010000\n\
                      SHOAL-MARKER ppc64le-payload\nSHOAL-CMDLINE co[   80.246797197,4] SBE: \
                      Timer is lagging, increasing polling rate.\nnsole=hvc0 shoal.deploy=1 \n\
                      [    4.211167] reboot: Power down\n[   80.504095619,5] OPAL: Shutdown\n";
        let text = firmware_lines_apart(serial);
        assert_eq!(
            text,
            "[    1.300000000,5] INIT: Starting kernel at 0x20010000\n\
             SHOAL-MARKER ppc64le-payload\nSHOAL-CMDLINE console=hvc0 shoal.deploy=1 \n\
             [   80.246797197,4] SBE: Timer is lagging, increasing polling rate.\n\
             [    4.211167] reboot: Power down\n[   80.504095619,5] OPAL: Shutdown\n"
        );
        for kept in [
            "[",
            "[1.2,3] x\n",
            "a [ 1.12345678,4] short\n",
            "a [ 1.123456789,45] x\n",
            "[ 1.123456789,4] at a line's start\n",
        ] {
            assert_eq!(firmware_lines_apart(kept), kept);
        }
        assert_eq!(
            firmware_lines_apart("a[ 1.123456789,4] cut"),
            "a\n[ 1.123456789,4] cut\n"
        );
    }

    #[test]
    fn watch_finds_lines_in_order_and_failures() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("serial");
        std::fs::write(&p, "b then a then c").unwrap();
        let exp = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches!(
            watch(&p, &exp(&["a", "c"]), &[], Duration::ZERO, Instant::now()),
            Watch::Seen(_)
        ));
        assert!(matches!(
            watch(&p, &exp(&["c", "a"]), &[], Duration::ZERO, Instant::now()),
            Watch::TimedOut(_)
        ));
        assert!(matches!(
            watch(
                &p,
                &exp(&["z"]),
                &exp(&["then"]),
                Duration::ZERO,
                Instant::now()
            ),
            Watch::Failed(_)
        ));
    }
}
