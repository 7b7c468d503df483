//! What a tool printed, read back: its counts (the box table three tools
//! print, the protocol validator's summary line) and its FAIL and WARN
//! findings (the validators' and use-case checkers' logs, the protocol
//! validator's TSV).

use std::path::{Path, PathBuf};

use super::{Counts, Tool};

/// `| 2198 | 33 | 0 | 3176 |` under the `PASS | WARN | FAIL | NOT TESTED`
/// header that three of the tools print.
pub(super) fn parse_table(text: &str) -> Option<Counts> {
    let mut lines = text.lines();
    lines.find(|l| l.contains("PASS") && l.contains("FAIL") && l.contains("NOT TESTED"))?;
    let row = lines.find(|l| l.trim_start().starts_with('|'))?;
    let n: Vec<u64> = row
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| c.parse().ok())
        .collect::<Option<_>>()?;
    match n[..] {
        [pass, warn, fail, not_tested] => Some(Counts {
            pass,
            warn,
            fail,
            not_tested,
        }),
        _ => None,
    }
}

/// `Summary - PASS: 328, WARN: 2, FAIL: 13, NOT_TESTED: 35`.
pub(super) fn parse_protocol_summary(text: &str) -> Option<Counts> {
    let line = text.lines().rev().find(|l| l.starts_with("Summary - "))?;
    let num = |key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some(Counts {
        pass: num("PASS:")?,
        warn: num("WARN:")?,
        fail: num("FAIL:")?,
        not_tested: num("NOT_TESTED:")?,
    })
}

fn files_with(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_with(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
}

/// The FAIL and WARN lines of a tool's reports.
pub(super) fn findings(tool: Tool, reports: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if tool == Tool::Protocol {
        // TSV: Assertion, Method, Status, URI, Result, Message, Requirement.
        let mut tsv = Vec::new();
        files_with(reports, ".tsv", &mut tsv);
        for f in tsv {
            for l in std::fs::read_to_string(f).unwrap_or_default().lines() {
                let c: Vec<&str> = l.split('\t').collect();
                if c.len() >= 6 && (c[4] == "FAIL" || c[4] == "WARN") {
                    out.push(format!("{} {} {} {} {}", c[4], c[0], c[1], c[3], c[5]));
                }
            }
        }
        return out;
    }
    let mut logs = Vec::new();
    files_with(reports, ".log", &mut logs);
    for f in logs {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            // "<time> - redfish - ERROR - FAIL - /Controllers …": the
            // validators; "Failing the X test..." then the message: the
            // use-case checkers.
            let Some((_, msg)) = l.split_once(" - redfish - ") else {
                continue;
            };
            let Some((level, msg)) = msg.split_once(" - ") else {
                continue;
            };
            if !(level == "ERROR" || level == "WARNING") {
                continue;
            }
            if msg.starts_with("Failing the ") || msg.starts_with("Warning occurred during the ") {
                let detail = lines
                    .next()
                    .and_then(|n| n.split_once(" - redfish - "))
                    .and_then(|(_, m)| m.split_once(" - "))
                    .map(|(_, m)| m.to_string())
                    .unwrap_or_default();
                let tag = if level == "ERROR" { "FAIL" } else { "WARN" };
                out.push(format!("{tag} {msg} {detail}"));
            } else if msg.starts_with("FAIL - ") || msg.starts_with("WARN - ") {
                out.push(msg.replacen(" - ", " ", 1));
            }
        }
    }
    out
}
