//! The fuzz run's readable summary, its findings as JSON lines and JUnit
//! XML (one test case per target and invariant).

use super::{Finding, Options, Target, TargetResult};
use crate::junit;

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

pub fn summary(opts: &Options, results: &[TargetResult]) -> String {
    let mut o = format!(
        "shoal-harness fuzz: seed {} ({}s, RSS bound {}, timeout {:?})\n",
        opts.seed,
        opts.duration.as_secs(),
        mib(opts.rss_limit_kib),
        opts.timeout
    );
    o.push_str(&format!(
        "{:<14} {:>8} {:>7} {:>8} {:>10} {:>10} {:>9} {:>8}\n",
        "target", "cases", "time", "cases/s", "RSS start", "RSS max", "restarts", "findings"
    ));
    for r in results {
        let secs = r.elapsed.as_secs_f64();
        o.push_str(&format!(
            "{:<14} {:>8} {:>6.0}s {:>8.0} {:>10} {:>10} {:>9} {:>8}\n",
            r.name,
            r.cases,
            secs,
            if secs > 0.0 {
                r.cases as f64 / secs
            } else {
                0.0
            },
            mib(r.rss_start_kib),
            mib(r.rss_max_kib),
            r.restarts.len(),
            r.findings.len()
        ));
    }
    for r in results {
        o.push_str(&format!("\n{}:\n", r.name));
        if let Some(e) = &r.error {
            o.push_str(&format!("  ERROR {e}\n"));
            continue;
        }
        if r.datagrams > 0 {
            let secs = r.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
            o.push_str(&format!(
                "  {} datagrams ({:.0}/s); volatile: {}\n",
                r.datagrams,
                r.datagrams as f64 / secs,
                r.volatile.join(", ")
            ));
        } else {
            o.push_str(&format!(
                "  crawled {} resources, {} actions; volatile: {}\n",
                r.resources,
                r.actions,
                r.volatile.join(", ")
            ));
        }
        let st: Vec<String> = r
            .statuses
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        o.push_str(&format!("  status: {}\n", st.join(", ")));
        let kinds: Vec<String> = r.kinds.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        o.push_str(&format!("  kinds: {}\n", kinds.join(", ")));
        for why in r.restarts.iter().take(5) {
            o.push_str(&format!("  restarted: {why}\n"));
        }
        if r.restarts.len() > 5 {
            o.push_str(&format!("  … and {} more restarts\n", r.restarts.len() - 5));
        }
        for f in &r.findings {
            o.push_str(&format!(
                "  FINDING {} (case {}, {}, {} like it): {}\n    {}\n    replay: shoal-harness fuzz --seed {} --case {} --targets {}\n",
                f.invariant.name(),
                f.case,
                f.kind,
                f.count,
                f.detail,
                f.request,
                opts.seed,
                f.case,
                r.name
            ));
        }
    }
    let failed = results.iter().filter(|r| !r.passed()).count();
    let cases: u64 = results.iter().map(|r| r.cases).sum();
    o.push_str(&format!(
        "\n{cases} cases; {} target(s) passed, {failed} failed\n",
        results.len() - failed
    ));
    o
}

/// One JSON object a line per finding, with the whole request.
pub fn findings_jsonl(opts: &Options, results: &[TargetResult]) -> String {
    let mut o = String::new();
    for f in results.iter().flat_map(|r| &r.findings) {
        let v = serde_json::json!({
            "invariant": f.invariant.name(),
            "target": f.target.name(),
            "seed": opts.seed,
            "case": f.case,
            "kind": f.kind,
            "count": f.count,
            "detail": f.detail,
            "request": f.request,
            "wire": f.wire,
        });
        o.push_str(&v.to_string());
        o.push('\n');
    }
    o
}

/// JUnit XML: one test case per target and invariant, the findings (with
/// their replay command) as the failure's text.
pub fn junit(opts: &Options, results: &[TargetResult]) -> String {
    let mut cases = Vec::new();
    for r in results {
        let invariants =
            Target::parse(&r.name).map_or(Target::Auth.invariants(), Target::invariants);
        for &inv in invariants {
            let found: Vec<&Finding> = r.findings.iter().filter(|f| f.invariant == inv).collect();
            let failure = match (&r.error, found.is_empty()) {
                (Some(e), _) => Some(junit::Failure {
                    message: e.clone(),
                    text: Some(String::new()),
                }),
                (None, true) => None,
                (None, false) => Some(junit::Failure {
                    message: format!("{} finding(s)", found.len()),
                    text: Some(
                        found
                            .iter()
                            .map(|f| {
                                format!(
                                    "case {} ({}): {}\n  {}\n  replay: shoal-harness fuzz --seed {} --case {} --targets {}",
                                    f.case, f.kind, f.detail, f.request, opts.seed, f.case, r.name
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ),
                }),
            };
            cases.push(junit::Case {
                classname: format!("fuzz.{}", r.name),
                name: inv.name().into(),
                time: r.elapsed.as_secs_f64(),
                failure,
            });
        }
    }
    junit::Suite {
        name: "shoal-fuzz",
        time: None,
        cases,
    }
    .to_xml()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::{Invariant, Target, TargetResult};
    use std::time::Duration;

    #[test]
    fn junit_and_summary_name_each_finding_with_its_replay() {
        let opts = Options {
            emulator: "/e".into(),
            out: "/o".into(),
            duration: Duration::from_secs(10),
            seed: 42,
            targets: vec![Target::Auth],
            rss_limit_kib: 200 << 10,
            max_cases: None,
            only_case: None,
            timeout: Duration::from_secs(10),
        };
        let mut r = TargetResult {
            name: "fake-auth".into(),
            cases: 100,
            elapsed: Duration::from_secs(10),
            ..Default::default()
        };
        assert!(junit(&opts, &[r.clone()]).contains("failures=\"0\""));
        r.findings.push(Finding {
            invariant: Invariant::NoServerError,
            target: Target::Auth,
            case: 7,
            kind: "path",
            request: "GET /redfish/v1/Systems/%FF".into(),
            wire: String::new(),
            detail: "<500>".into(),
            count: 3,
        });
        let j = junit(&opts, &[r.clone()]);
        assert!(
            j.contains("failures=\"1\"") && j.contains("&lt;500&gt;"),
            "{j}"
        );
        let s = summary(&opts, &[r.clone()]);
        assert!(s.contains("--seed 42 --case 7 --targets fake-auth"), "{s}");
        assert!(s.contains("0 target(s) passed, 1 failed"), "{s}");
        assert!(findings_jsonl(&opts, &[r]).contains("\"case\":7"));
    }

    #[test]
    fn the_ipmi_target_reports_its_own_invariants() {
        let opts = Options {
            emulator: "/e".into(),
            out: "/o".into(),
            duration: Duration::from_secs(10),
            seed: 1,
            targets: vec![Target::Ipmi],
            rss_limit_kib: 200 << 10,
            max_cases: None,
            only_case: None,
            timeout: Duration::from_secs(10),
        };
        let r = TargetResult {
            name: "ipmi".into(),
            cases: 10,
            datagrams: 80,
            elapsed: Duration::from_secs(4),
            ..Default::default()
        };
        let j = junit(&opts, std::slice::from_ref(&r));
        for inv in Target::Ipmi.invariants() {
            assert!(j.contains(&format!("name=\"{}\"", inv.name())), "{j}");
        }
        assert!(!j.contains("error-body"), "{j}");
        assert!(summary(&opts, &[r]).contains("80 datagrams (20/s)"));
    }
}
