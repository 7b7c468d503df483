//! Whether the BMC's access log holds every Redfish request of an Ironic
//! deploy: each response sushy logged (`HTTP response for GET <url>:
//! status code: 200`, at debug, which the case's Ironic runs at) must be a
//! line of the emulator's access log with the same method, path and status,
//! as many times as sushy saw it. The access log may hold more (the
//! harness's own checks, other clients).

use std::collections::BTreeMap;

/// (method, path with its query, status).
type Request = (String, String, u16);

/// The responses sushy logged in Ironic's log.
fn sushy_responses(ironic_log: &str) -> Vec<Request> {
    const AT: &str = "HTTP response for ";
    ironic_log
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find(AT)? + AT.len()..];
            let (method, rest) = rest.split_once(' ')?;
            // oslo.log appends the function and file at debug.
            let (url, status) = rest.split_once(": status code: ")?;
            let status: u16 = status.split_whitespace().next()?.parse().ok()?;
            // The path (and query) of an absolute URL.
            let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
            let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
            Some((method.to_string(), path.to_string(), status))
        })
        .collect()
}

/// The requests of the emulator's access log (`... "GET /path" 200 ...`).
fn access_lines(emulator_log: &str) -> Vec<Request> {
    emulator_log
        .lines()
        .filter(|l| l.contains("shoal_emulator::access"))
        .filter_map(|l| {
            let (_, rest) = l.split_once('"')?;
            let (line, rest) = rest.split_once('"')?;
            let (method, path) = line.split_once(' ')?;
            let status = rest.split_whitespace().next()?.parse().ok()?;
            Some((method.to_string(), path.to_string(), status))
        })
        .collect()
}

/// How many of sushy's requests the access log holds, or what it lacks.
pub(super) fn covered(ironic_log: &str, emulator_log: &str) -> Result<usize, String> {
    let asked = sushy_responses(ironic_log);
    if asked.is_empty() {
        return Err("Ironic's log shows no Redfish response (sushy logs them at debug)".into());
    }
    let mut logged: BTreeMap<&Request, usize> = BTreeMap::new();
    let lines = access_lines(emulator_log);
    for r in &lines {
        *logged.entry(r).or_default() += 1;
    }
    let mut missing: Vec<String> = Vec::new();
    for r in &asked {
        match logged.get_mut(r) {
            Some(n) if *n > 0 => *n -= 1,
            _ => missing.push(format!("{} {} {}", r.0, r.1, r.2)),
        }
    }
    match missing.len() {
        0 => Ok(asked.len()),
        n => Err(format!(
            "the emulator's access log lacks {n} of the {} Redfish requests Ironic made, \
             first {}",
            asked.len(),
            missing[0]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRONIC: &str = "\
2026-12-07 10:00:01.123 5 DEBUG sushy.connector [-] HTTP request: GET https://[fd00::1]:8443/redfish/v1/Systems/1; headers: {}; body: None; blocking: False; timeout: 60; session arguments: {};
2026-12-07 10:00:01.130 5 DEBUG sushy.connector [-] HTTP response for GET https://[fd00::1]:8443/redfish/v1/Systems/1: status code: 200 _op /venv/lib/python3.11/site-packages/sushy/connector.py:417
2026-12-07 10:00:01.200 5 DEBUG sushy.connector [-] HTTP response for PATCH https://[fd00::1]:8443/redfish/v1/Systems/1: status code: 200
2026-12-07 10:00:01.300 5 DEBUG sushy.connector [-] HTTP response for GET https://[fd00::1]:8443/redfish/v1/Systems/1: status code: 200
2026-12-07 10:00:02.000 5 DEBUG sushy.connector [-] HTTP response for POST http://10.0.0.1:8000/redfish/v1/Systems/1/Actions/ComputerSystem.Reset: status code: 400
";

    fn access(lines: &[&str]) -> String {
        lines
            .iter()
            .map(|l| format!("2026-12-07T10:00:01Z  INFO shoal_emulator::access: 10.0.0.2:40522 admin {l} 0.3 ms\n"))
            .collect()
    }

    #[test]
    fn every_response_sushy_saw_is_a_line_with_its_status() {
        let log = access(&[
            "\"GET /redfish/v1/Systems/1\" 200",
            "\"GET /redfish/v1\" 200",
            "\"PATCH /redfish/v1/Systems/1\" 200",
            "\"GET /redfish/v1/Systems/1\" 200",
            "\"POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset\" 400 Base.1.19.ActionParameterNotSupported",
        ]);
        assert_eq!(covered(IRONIC, &log), Ok(4));
    }

    #[test]
    fn a_request_missing_or_with_another_status_is_named() {
        // One GET of the two, and the Reset answered otherwise.
        let log = access(&[
            "\"GET /redfish/v1/Systems/1\" 200",
            "\"PATCH /redfish/v1/Systems/1\" 200",
            "\"POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset\" 204",
        ]);
        let e = covered(IRONIC, &log).unwrap_err();
        assert!(e.contains("lacks 2 of the 4"), "{e}");
        assert!(e.contains("GET /redfish/v1/Systems/1 200"), "{e}");
        assert!(covered("no sushy here", &log).is_err());
    }
}
