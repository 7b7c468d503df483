//! `shoal-harness conformance`: the four DMTF conformance tools against a
//! `shoal-emulator` on the fake backend, the way a real BMC is checked:
//! HTTPS with a certificate the tools trust, Basic and session auth, the
//! full feature set and several kinds of systems.
//!
//! The service validator's CSDL comes from the service itself: `$metadata`
//! and every schema it references, transitively, fetched from
//! `/redfish/v1/Schemas/` (offline; OASIS's own vocabularies are not served
//! and the validator does not need them). Ironic's interop profile ships in
//! this binary (`conformance/`, Apache-2.0).
//!
//! Each tool's reports go to `OUT/<tool>/`, its console to `OUT/<tool>.log`;
//! the counts and every FAIL and WARN line go to `OUT/summary.txt` and JUnit
//! XML. A tool fails its case when it reports a FAIL, or when its counts
//! cannot be read (it crashed or changed its output).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::emulator::EmulatorProcess;

/// Ironic's Redfish interop profile (openstack/ironic, Apache-2.0).
pub const IRONIC_PROFILE: &str = include_str!("../conformance/OpenStackIronicProfile.v1_2_0.json");
const USER: &str = "shoal-admin";
const PASSWORD: &str = "conformance-Passw0rd";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Service,
    Protocol,
    UseCases,
    Interop,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Service, Tool::Protocol, Tool::UseCases, Tool::Interop];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Service => "service-validator",
            Tool::Protocol => "protocol-validator",
            Tool::UseCases => "use-case-checkers",
            Tool::Interop => "interop-validator",
        }
    }

    fn program(self) -> &'static str {
        match self {
            Tool::Service => "rf_service_validator",
            Tool::Protocol => "rf_protocol_validator",
            Tool::UseCases => "rf_use_case_checkers",
            Tool::Interop => "rf_interop_validator",
        }
    }

    pub fn parse(s: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == s)
    }
}

pub struct Options {
    pub emulator: PathBuf,
    /// The venv's `bin/` with the four tools.
    pub venv_bin: PathBuf,
    pub out: PathBuf,
    pub tools: Vec<Tool>,
    /// Limit per tool.
    pub timeout: Duration,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub pass: u64,
    pub warn: u64,
    pub fail: u64,
    pub not_tested: u64,
}

#[derive(Debug, Clone)]
pub struct ToolResult {
    pub tool: Tool,
    pub counts: Option<Counts>,
    /// The FAIL and WARN findings, one line each.
    pub findings: Vec<String>,
    /// Why the run is void (crash, timeout, unreadable output).
    pub error: Option<String>,
    pub elapsed: Duration,
    pub reports: PathBuf,
}

impl ToolResult {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.counts.as_ref().is_some_and(|c| c.fail == 0)
    }
}

/// The inventory the tools see: UEFI and legacy x86_64 machines and a
/// ppc64le one (no UEFI), one of them powered off.
fn inventory(dir: &Path) -> String {
    format!(
        r#"feature_set = "full"
[auth]
htpasswd = "{dir}/htpasswd"
[tls]
certificate = "{dir}/cert.pem"
key = "{dir}/key.pem"

[[systems]]
name = "conformance-uefi-0"
disks = [{{ name = "disk0", capacity_gib = 40 }}, {{ name = "disk1", capacity_gib = 40 }}]

[[systems]]
name = "conformance-uefi-1"
power = "Off"

[[systems]]
name = "conformance-legacy"
boot_mode = "Legacy"

[[systems]]
name = "conformance-ppc64le"
arch = "ppc64le"
boot_mode = "Legacy"
"#,
        dir = dir.display()
    )
}

/// Writes the certificate (127.0.0.1, self-signed), the htpasswd and the
/// inventory into `dir`; returns the inventory's path.
fn prepare(dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])?;
    std::fs::write(dir.join("cert.pem"), ck.cert.pem())?;
    std::fs::write(dir.join("key.pem"), ck.key_pair.serialize_pem())?;
    let hash = bcrypt::hash(PASSWORD, 10)?;
    std::fs::write(dir.join("htpasswd"), format!("{USER}:{hash}\n"))?;
    let inv = dir.join("inventory.toml");
    std::fs::write(&inv, inventory(dir))?;
    Ok(inv)
}

/// The schema file names a CSDL document references.
fn references(doc: &str) -> Vec<String> {
    doc.split("<edmx:Reference Uri=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter_map(|uri| uri.rsplit('/').next())
        .map(str::to_string)
        .collect()
}

/// Fetches `$metadata` and, transitively, every schema file it references
/// from the service into `dir`. Returns how many files were written.
pub fn fetch_schemas(base: &str, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir)?;
    // The certificate is checked by the tools; the crawl only needs bytes.
    let tls = ureq::tls::TlsConfig::builder()
        .disable_verification(true)
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .proxy(None)
        .build()
        .into();
    let get = |path: &str| -> Result<Option<String>> {
        let mut resp = agent
            .get(&format!("{base}{path}"))
            .call()
            .with_context(|| format!("GET {path}"))?;
        match resp.status().as_u16() {
            200 => Ok(Some(resp.body_mut().read_to_string()?)),
            404 => Ok(None),
            s => bail!("GET {path}: HTTP {s}"),
        }
    };
    let metadata = get("/redfish/v1/$metadata")?.context("no $metadata")?;
    std::fs::write(dir.join("metadata.xml"), &metadata)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = references(&metadata);
    let mut written = 0;
    while let Some(file) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        match get(&format!("/redfish/v1/Schemas/{file}"))? {
            Some(text) => {
                todo.extend(references(&text));
                std::fs::write(dir.join(&file), text)?;
                written += 1;
            }
            // OASIS's vocabularies (Org.OData.*) are not DMTF's to serve.
            None if file.starts_with("Org.OData.") => {}
            None => bail!("the service does not serve the schema {file} it references"),
        }
    }
    Ok(written)
}

/// `| 2198 | 33 | 0 | 3176 |` under the `PASS | WARN | FAIL | NOT TESTED`
/// header that three of the tools print.
fn parse_table(text: &str) -> Option<Counts> {
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
fn parse_protocol_summary(text: &str) -> Option<Counts> {
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
fn findings(tool: Tool, reports: &Path) -> Vec<String> {
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

fn run_tool(tool: Tool, opts: &Options, url: &str, dir: &Path) -> ToolResult {
    let started = Instant::now();
    let reports = opts.out.join(tool.name());
    let _ = std::fs::remove_dir_all(&reports);
    let mut result = ToolResult {
        tool,
        counts: None,
        findings: Vec::new(),
        error: None,
        elapsed: Duration::ZERO,
        reports: reports.clone(),
    };
    if let Err(e) = std::fs::create_dir_all(&reports) {
        result.error = Some(format!("{}: {e}", reports.display()));
        return result;
    }
    let mut cmd = Command::new(opts.venv_bin.join(tool.program()));
    match tool {
        Tool::Service => {
            cmd.args([
                "--authtype",
                "Session",
                "--skipschema",
                "--schema_directory",
            ])
            .arg(dir.join("schemas"))
            .arg("--logdir")
            .arg(&reports);
        }
        Tool::Protocol => {
            cmd.arg("--ca-bundle")
                .arg(dir.join("cert.pem"))
                .arg("--report-dir")
                .arg(&reports);
        }
        Tool::UseCases => {
            cmd.arg("--report-dir").arg(&reports);
        }
        Tool::Interop => {
            cmd.arg(dir.join("OpenStackIronicProfile.v1_2_0.json"))
                .args(["--authtype", "Session", "--logdir"])
                .arg(&reports);
        }
    }
    cmd.args(["-r", url, "-u", USER, "-p", PASSWORD])
        .current_dir(&reports)
        // python-requests trusts the service's certificate through this
        // (the tools build sessions that ignore their own CA options).
        .env("REQUESTS_CA_BUNDLE", dir.join("cert.pem"))
        .env("NO_PROXY", "*");
    let console = opts.out.join(format!("{}.log", tool.name()));
    let output = run_with_timeout(cmd, &console, opts.timeout);
    result.elapsed = started.elapsed();
    let text = std::fs::read_to_string(&console).unwrap_or_default();
    match output {
        Err(e) => result.error = Some(format!("{e:#}")),
        Ok(status) => {
            result.counts = match tool {
                Tool::Protocol => parse_protocol_summary(&text),
                _ => parse_table(&text),
            };
            if result.counts.is_none() {
                result.error = Some(format!(
                    "no result counts in its output ({status}); see {}",
                    console.display()
                ));
            }
        }
    }
    result.findings = findings(tool, &reports);
    result
}

/// Runs `cmd` with stdout and stderr to `console`, killing it (by its pid)
/// after `limit`.
fn run_with_timeout(
    mut cmd: Command,
    console: &Path,
    limit: Duration,
) -> Result<std::process::ExitStatus> {
    let log = std::fs::File::create(console)?;
    let mut child = cmd
        .stdout(log.try_clone()?)
        .stderr(log)
        .stdin(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", cmd.get_program().to_string_lossy()))?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!("still running after {limit:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts the emulator, fetches its schemas and runs each tool in turn.
pub fn run(opts: &Options) -> Result<Vec<ToolResult>> {
    for t in &opts.tools {
        let p = opts.venv_bin.join(t.program());
        if !p.exists() {
            bail!(
                "{} is missing (the conformance venv: ci/test builds it)",
                p.display()
            );
        }
    }
    let dir = opts.out.join("service");
    let inventory = prepare(&dir)?;
    std::fs::write(
        dir.join("OpenStackIronicProfile.v1_2_0.json"),
        IRONIC_PROFILE,
    )?;
    let mut cmd = Command::new(&opts.emulator);
    cmd.arg("--config")
        .arg(&inventory)
        .args(["--port", "0"])
        .env("RUST_LOG", "info");
    let mut emu = EmulatorProcess::spawn(cmd, &opts.out.join("emulator.log"))?;
    let url = emu.url.clone();
    eprintln!("conformance: shoal-emulator at {url} (pid {})", emu.pid());
    let n = fetch_schemas(&url, &dir.join("schemas"))?;
    eprintln!("conformance: {n} schema files fetched from the service");
    let mut results = Vec::new();
    for (i, &tool) in opts.tools.iter().enumerate() {
        eprintln!(
            "conformance: [{}/{}] {} ...",
            i + 1,
            opts.tools.len(),
            tool.name()
        );
        let r = run_tool(tool, opts, &url, &dir);
        eprintln!(
            "conformance: [{}/{}] {} {} in {:.0}s",
            i + 1,
            opts.tools.len(),
            tool.name(),
            if r.passed() { "passed" } else { "FAILED" },
            r.elapsed.as_secs_f64()
        );
        results.push(r);
        if let Some(status) = emu.exited() {
            bail!(
                "the emulator exited ({status}) during {}; see {}",
                tool.name(),
                opts.out.join("emulator.log").display()
            );
        }
    }
    Ok(results)
}

/// The readable summary: a table of counts, then every FAIL and WARN.
pub fn summary(results: &[ToolResult]) -> String {
    let mut out = format!(
        "{:<20} {:>6} {:>6} {:>6} {:>10} {:>7}\n",
        "tool", "PASS", "WARN", "FAIL", "NOT TESTED", "time"
    );
    for r in results {
        match &r.counts {
            Some(c) => out.push_str(&format!(
                "{:<20} {:>6} {:>6} {:>6} {:>10} {:>6.0}s\n",
                r.tool.name(),
                c.pass,
                c.warn,
                c.fail,
                c.not_tested,
                r.elapsed.as_secs_f64()
            )),
            None => out.push_str(&format!(
                "{:<20} {:>6} {:>6} {:>6} {:>10} {:>6.0}s\n",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_table_is_read() {
        let text = "noise\n+----+\n|     PASS     |     WARN     |     FAIL     |  NOT TESTED  |\n+--------------+\n|     2198     |      33      |      0       |     3176     |\n+----+\n";
        assert_eq!(
            parse_table(text),
            Some(Counts {
                pass: 2198,
                warn: 33,
                fail: 0,
                not_tested: 3176
            })
        );
        assert_eq!(parse_table("Traceback (most recent call last):"), None);
    }

    #[test]
    fn the_protocol_summary_is_read() {
        let text = "ERROR:root:x\nSummary - PASS: 328, WARN: 2, FAIL: 13, NOT_TESTED: 35\nReport output:\n";
        assert_eq!(
            parse_protocol_summary(text),
            Some(Counts {
                pass: 328,
                warn: 2,
                fail: 13,
                not_tested: 35
            })
        );
        assert_eq!(parse_protocol_summary("Summary - PASS: 1"), None);
    }

    #[test]
    fn references_are_listed() {
        let doc = r#"<edmx:Reference Uri="/redfish/v1/Schemas/Resource_v1.xml"><edmx:Include/></edmx:Reference>
<edmx:Reference Uri="http://redfish.dmtf.org/schemas/swordfish/v1/StoragePool_v1.xml">"#;
        assert_eq!(references(doc), ["Resource_v1.xml", "StoragePool_v1.xml"]);
    }

    #[test]
    fn findings_come_from_logs_and_tsv() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("2026-12-02");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join("Debug.log"),
            "t - redfish - INFO - PASS - /Drives ([Array]): Property present\n\
             t - redfish - ERROR - FAIL - /Controllers ([Not Present]): Read Requirement Error\n\
             t - redfish - WARNING - WARN - /IndicatorLED (Off): Deprecated\n\
             t - redfish - ERROR - Failing the Select Query test...\n\
             t - redfish - ERROR - $select returned everything\n",
        )
        .unwrap();
        let f = findings(Tool::Service, dir.path());
        assert_eq!(
            f,
            [
                "FAIL /Controllers ([Not Present]): Read Requirement Error",
                "WARN /IndicatorLED (Off): Deprecated",
                "FAIL Failing the Select Query test... $select returned everything",
            ]
        );
        std::fs::write(
            sub.join("r.tsv"),
            "Assertion\tMethod\tStatus code\tURI\tResult\tMessage\tRequirement\n\
             REQ_X\tGET\t200\t/redfish/v1/\tFAIL\tbad\tshall\n\
             REQ_Y\tGET\t200\t/redfish/v1/\tPASS\t\tshall\n",
        )
        .unwrap();
        assert_eq!(
            findings(Tool::Protocol, dir.path()),
            ["FAIL REQ_X GET /redfish/v1/ bad"]
        );
    }

    #[test]
    fn a_tool_passes_only_with_counts_and_no_fail() {
        let mut r = ToolResult {
            tool: Tool::Interop,
            counts: Some(Counts::default()),
            findings: vec![],
            error: None,
            elapsed: Duration::from_secs(1),
            reports: PathBuf::from("/r"),
        };
        assert!(r.passed());
        r.counts.as_mut().unwrap().fail = 1;
        assert!(!r.passed());
        r.findings = vec!["FAIL x <y>".into()];
        assert!(junit(&[r.clone()]).contains("FAIL x &lt;y&gt;"));
        r.counts = None;
        assert!(!r.passed());
        assert!(summary(&[r]).contains("0 tool(s) passed, 1 failed"));
    }
}
