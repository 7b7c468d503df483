//! What a run leaves behind: the readable summary, JUnit XML, and the
//! table of how long each case took (`$SHOAL_CACHE/case-times.tsv`), which
//! orders the next run's cases.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::scenario::Driver;

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub scenario: String,
    pub driver: Driver,
    pub passed: bool,
    pub detail: String,
    pub elapsed: Duration,
    /// From the power-on request to the last expected serial line.
    pub to_marker: Option<Duration>,
    pub artifacts: Option<PathBuf>,
}

/// How long each case took when it last ran on this machine, kept beside
/// the image cache (`$SHOAL_CACHE/case-times.tsv`: scenario, driver,
/// seconds). Only for ordering: a missing or unreadable file changes
/// nothing but the order.
pub(super) struct CaseTimes(std::collections::BTreeMap<(String, String), f64>);

impl CaseTimes {
    fn path() -> PathBuf {
        crate::images::cache_root().with_file_name("case-times.tsv")
    }

    pub(super) fn load() -> CaseTimes {
        let text = std::fs::read_to_string(Self::path()).unwrap_or_default();
        CaseTimes(
            text.lines()
                .filter_map(|l| {
                    let mut f = l.split('\t');
                    let (s, d, t) = (f.next()?, f.next()?, f.next()?.parse().ok()?);
                    Some(((s.to_string(), d.to_string()), t))
                })
                .collect(),
        )
    }

    pub(super) fn expected(&self, scenario: &str, driver: Driver) -> Option<f64> {
        self.0
            .get(&(scenario.to_string(), driver.name().to_string()))
            .copied()
    }

    pub(super) fn save(mut self, results: &[CaseResult]) {
        for r in results {
            self.0.insert(
                (r.scenario.clone(), r.driver.name().to_string()),
                r.elapsed.as_secs_f64(),
            );
        }
        let text: String = self
            .0
            .iter()
            .map(|((s, d), t)| format!("{s}\t{d}\t{t:.1}\n"))
            .collect();
        let path = Self::path();
        let _ = std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")));
        let _ = std::fs::write(path, text);
    }
}

/// The readable summary, ending with the `N passed, M failed` line.
pub fn summary(results: &[CaseResult]) -> String {
    let mut out = format!(
        "{:<42} {:<16} {:<6} {:>8} {:>10}\n",
        "scenario", "driver", "result", "total", "to marker"
    );
    for r in results {
        out.push_str(&format!(
            "{:<42} {:<16} {:<6} {:>7.1}s {:>10}\n",
            r.scenario,
            r.driver.name(),
            if r.passed { "PASS" } else { "FAIL" },
            r.elapsed.as_secs_f64(),
            r.to_marker
                .map(|d| format!("{:.1}s", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into())
        ));
    }
    let passed = results.iter().filter(|r| r.passed).count();
    out.push_str(&format!(
        "{} passed, {} failed\n",
        passed,
        results.len() - passed
    ));
    out
}

/// JUnit XML for CI systems.
pub fn junit(results: &[CaseResult]) -> String {
    crate::junit::Suite {
        name: "shoal-harness",
        time: Some(results.iter().map(|r| r.elapsed.as_secs_f64()).sum()),
        cases: results
            .iter()
            .map(|r| crate::junit::Case {
                classname: format!("scenarios.{}", r.scenario),
                name: r.driver.name().to_string(),
                time: r.elapsed.as_secs_f64(),
                failure: (!r.passed).then(|| {
                    let art = r
                        .artifacts
                        .as_ref()
                        .map(|p| format!(" (artifacts: {})", p.display()))
                        .unwrap_or_default();
                    crate::junit::Failure {
                        message: format!("{}{art}", r.detail),
                        text: None,
                    }
                }),
            })
            .collect(),
    }
    .to_xml()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn case_times_are_kept_per_scenario_and_driver() {
        // nextest runs each test in a process of its own: the variable is ours.
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("SHOAL_CACHE", dir.path());
        assert_eq!(CaseTimes::load().expected("a", Driver::Sushy), None);
        let mut slow = r("a", true);
        slow.elapsed = Duration::from_millis(81_240);
        CaseTimes::load().save(&[slow, r("b", false)]);
        let t = CaseTimes::load();
        assert_eq!(t.expected("a", Driver::Sushy), Some(81.2));
        assert_eq!(t.expected("a", Driver::IronicSequence), None);
        assert!(t.expected("b", Driver::Sushy).is_some());
        assert!(dir.path().join("case-times.tsv").exists());
    }

    fn r(name: &str, passed: bool) -> CaseResult {
        CaseResult {
            scenario: name.into(),
            driver: Driver::Sushy,
            passed,
            detail: "the firmware reported \"404 <Not Found>\"".into(),
            elapsed: Duration::from_millis(1500),
            to_marker: passed.then_some(Duration::from_secs(1)),
            artifacts: (!passed).then(|| PathBuf::from("/tmp/a")),
        }
    }

    #[test]
    fn reports() {
        let rs = [r("a", true), r("b", false)];
        let s = summary(&rs);
        assert!(s.ends_with("1 passed, 1 failed\n"), "{s}");
        let j = junit(&rs);
        assert!(j.contains("tests=\"2\" failures=\"1\""));
        assert!(
            j.contains("&quot;404 &lt;Not Found&gt;&quot; (artifacts: /tmp/a)"),
            "{j}"
        );
    }
}
