//! The conformance run's readable summary and JUnit XML (one test case
//! per tool).

use super::ToolResult;

/// The readable summary: a table of counts, then every FAIL and WARN.
pub fn summary(results: &[ToolResult]) -> String {
    let mut out = format!(
        "{:<30} {:>6} {:>6} {:>6} {:>10} {:>7}\n",
        "tool", "PASS", "WARN", "FAIL", "NOT TESTED", "time"
    );
    for r in results {
        match &r.counts {
            Some(c) => out.push_str(&format!(
                "{:<30} {:>6} {:>6} {:>6} {:>10} {:>6.0}s\n",
                r.tool.name(),
                c.pass,
                c.warn,
                c.fail,
                c.not_tested,
                r.elapsed.as_secs_f64()
            )),
            None => out.push_str(&format!(
                "{:<30} {:>6} {:>6} {:>6} {:>10} {:>6.0}s\n",
                r.tool.name(),
                "-",
                "-",
                "-",
                "-",
                r.elapsed.as_secs_f64()
            )),
        }
    }
    for r in results {
        if let Some(e) = &r.error {
            out.push_str(&format!("\n{}: ERROR {e}\n", r.tool.name()));
        }
        if !r.findings.is_empty() {
            out.push_str(&format!("\n{} ({}):\n", r.tool.name(), r.reports.display()));
            for f in &r.findings {
                out.push_str(&format!("  {f}\n"));
            }
        }
    }
    let failed = results.iter().filter(|r| !r.passed()).count();
    out.push_str(&format!(
        "\n{} tool(s) passed, {failed} failed\n",
        results.len() - failed
    ));
    out
}

/// JUnit XML: one test case per tool, its FAIL lines as the failure's text.
pub fn junit(results: &[ToolResult]) -> String {
    crate::junit::Suite {
        name: "shoal-conformance",
        time: None,
        cases: results
            .iter()
            .map(|r| crate::junit::Case {
                classname: "conformance".into(),
                name: r.tool.name().into(),
                time: r.elapsed.as_secs_f64(),
                failure: (!r.passed()).then(|| {
                    let message = match (&r.error, &r.counts) {
                        (Some(e), _) => e.clone(),
                        (None, Some(c)) => format!("{} FAIL", c.fail),
                        (None, None) => "no counts".into(),
                    };
                    let fails: Vec<&str> = r
                        .findings
                        .iter()
                        .filter(|f| f.starts_with("FAIL"))
                        .map(String::as_str)
                        .collect();
                    crate::junit::Failure {
                        message,
                        text: Some(fails.join("\n")),
                    }
                }),
            })
            .collect(),
    }
    .to_xml()
}
