//! What a case's logs show, for the drive and the judge alike: the serial
//! port watched for the expected lines in order (firmware lines that cut a
//! host line put after it), how many requests a server's log shows, how
//! often a text occurs in the serial log. It reads files only and imports
//! nothing else of the runner.

use std::path::Path;
use std::time::{Duration, Instant};

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

/// How often `text` occurs in the (serial) log at `path`.
pub(super) fn occurrences(path: &Path, text: &str) -> usize {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&bytes).matches(text).count()
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
