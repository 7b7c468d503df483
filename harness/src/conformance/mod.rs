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

mod output;
mod report;
mod schemas;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::emulator::EmulatorProcess;
use output::{findings, parse_protocol_summary, parse_table};
pub use report::{junit, summary};
pub use schemas::fetch_schemas;

/// Ironic's Redfish interop profile (openstack/ironic, Apache-2.0).
pub const IRONIC_PROFILE: &str =
    include_str!("../../conformance/OpenStackIronicProfile.v1_2_0.json");
const USER: &str = "shoal-admin";
const PASSWORD: &str = "conformance-Passw0rd";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Service,
    Protocol,
    UseCases,
    Interop,
    /// The Service Validator again, on Shoal started as sushy-emulator
    /// (a sushy-tools configuration: its paths, its chassis).
    SushyService,
    /// The Service Validator again, on a capture of the first service
    /// (`shoal-harness capture`, taken before any tool runs) replayed by
    /// `--mockup`: a replay validates as its original does (the same
    /// counts as the first pass, where it ran).
    ReplayService,
}

impl Tool {
    pub const ALL: [Tool; 6] = [
        Tool::Service,
        Tool::Protocol,
        Tool::UseCases,
        Tool::Interop,
        Tool::SushyService,
        Tool::ReplayService,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::Service => "service-validator",
            Tool::Protocol => "protocol-validator",
            Tool::UseCases => "use-case-checkers",
            Tool::Interop => "interop-validator",
            Tool::SushyService => "service-validator-sushy-config",
            Tool::ReplayService => "service-validator-replay",
        }
    }

    fn program(self) -> &'static str {
        match self {
            Tool::Service | Tool::SushyService | Tool::ReplayService => "rf_service_validator",
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

/// The sushy-tools configuration of the second pass, metal3-dev-env's
/// shape (TLS, Basic auth, fake systems) with two chassis, beside the
/// files `prepare` wrote into `dir`; returns its path.
fn sushy_config(dir: &Path) -> Result<PathBuf> {
    let conf = format!(
        "# sushy-tools configuration (conformance)\n\
         SUSHY_EMULATOR_SSL_CERT = '{dir}/cert.pem'\n\
         SUSHY_EMULATOR_SSL_KEY = '{dir}/key.pem'\n\
         SUSHY_EMULATOR_AUTH_FILE = '{dir}/htpasswd'\n\
         SUSHY_EMULATOR_STATE_DIR = '{dir}/sushy-state'\n\
         SUSHY_EMULATOR_FAKE_DRIVER = True\n\
         SUSHY_EMULATOR_FAKE_SYSTEMS = [\n\
         \x20   {{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'fake', 'power_state': 'Off',\n\
         \x20    'nics': [{{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.0.100'}}]}},\n\
         \x20   {{'uuid': '48295861-2522-3561-6729-621118518811', 'name': 'fake-2', 'power_state': 'On',\n\
         \x20    'boot_mode': 'Legacy', 'nics': [{{'mac': '00:5c:52:31:3a:9d', 'ip': '172.22.0.101'}}]}},\n\
         ]\n\
         SUSHY_EMULATOR_CHASSIS = [\n\
         \x20   {{'Id': 'Chassis', 'Name': 'Chassis', 'UUID': '48295861-2522-3561-6729-621118518810'}},\n\
         \x20   {{'Id': 'Spare', 'Name': 'Spare', 'UUID': '48295861-2522-3561-6729-621118518812'}},\n\
         ]\n",
        dir = dir.display()
    );
    let p = dir.join("sushy-emulator.conf");
    std::fs::write(&p, conf)?;
    Ok(p)
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
        Tool::Service | Tool::SushyService | Tool::ReplayService => {
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
/// HTTPS boot CAs through DMTF's own client, Redfish-Tacklebox's
/// `rf_certificates.py` (in the conformance venv), into the first system
/// that takes them (`Boot.Certificates`): install (a POST to the
/// collection), replace (install onto that certificate:
/// `ReplaceCertificate`), list (`CertificateLocations`), install a second
/// and delete it. The replaced one stays for the tools to read; returns
/// its URI.
fn certificates_through_tacklebox(opts: &Options, base: &str, dir: &Path) -> Result<String> {
    use base64::Engine;
    let agent = schemas::unverified_agent();
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
    );
    let get = |path: &str| -> Result<serde_json::Value> {
        let mut r = agent
            .get(&format!("{base}{path}"))
            .header("Authorization", &auth)
            .call()?;
        Ok(serde_json::from_str(&r.body_mut().read_to_string()?)?)
    };
    let mut coll = None;
    for m in get("/redfish/v1/Systems")?["Members"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let sys = get(m["@odata.id"].as_str().unwrap_or_default())?;
        if sys["Boot"]["BootSourceOverrideMode"] == "UEFI" {
            if let Some(c) = sys["Boot"]["Certificates"]["@odata.id"].as_str() {
                coll = Some(c.to_string());
                break;
            }
        }
    }
    let coll = coll.context("no UEFI system of the conformance inventory has Boot.Certificates")?;
    let tool = |args: &[&str]| -> Result<String> {
        let out = Command::new(opts.venv_bin.join("python"))
            .arg(opts.venv_bin.join("rf_certificates.py"))
            .args(["-u", USER, "-p", PASSWORD, "-r", base])
            .args(args)
            .output()
            .context("rf_certificates.py")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!(
                "rf_certificates.py {}: {}{}",
                args.join(" "),
                text,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(text)
    };
    let write = |name: &str, cn: &str| -> Result<String> {
        let p = dir.join(name);
        std::fs::write(&p, crate::tls::Ca::new(cn)?.pem()?)?;
        Ok(p.display().to_string())
    };
    let (first, second, third) = (
        write("boot-ca-1.pem", "Shoal conformance CA one")?,
        write("boot-ca-2.pem", "Shoal conformance CA two")?,
        write("boot-ca-3.pem", "Shoal conformance CA three")?,
    );
    tool(&["install", "-dest", &coll, "-cert", &first])?;
    let members = |want: usize| -> Result<Vec<String>> {
        let c = get(&coll)?;
        let m: Vec<String> = c["Members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["@odata.id"].as_str().map(str::to_string))
            .collect();
        if m.len() != want {
            bail!("{coll} lists {} certificates, not {want}: {c}", m.len());
        }
        Ok(m)
    };
    let cert = members(1)?.remove(0);
    tool(&["install", "-dest", &cert, "-cert", &second])?;
    let info = tool(&["info", "-details"])?;
    if !info.contains(&format!("Certificate: {cert}"))
        || !info.contains("CN=Shoal conformance CA two")
    {
        bail!("rf_certificates.py info does not show the replaced CA at {cert}:\n{info}");
    }
    tool(&["install", "-dest", &coll, "-cert", &third])?;
    let extra = members(2)?
        .into_iter()
        .find(|m| *m != cert)
        .unwrap_or_default();
    tool(&["delete", "-cert", &extra])?;
    members(1)?;
    Ok(cert)
}

/// A replay validates as its original: where the first pass ran too, its
/// PASS, WARN and FAIL counts must be the same.
fn same_counts(replayed: &mut ToolResult, results: &[ToolResult]) {
    let first = results.iter().find(|r| r.tool == Tool::Service);
    let (Some(a), Some(b)) = (first.and_then(|r| r.counts.as_ref()), &replayed.counts) else {
        return;
    };
    if (a.pass, a.warn, a.fail) != (b.pass, b.warn, b.fail) {
        replayed.error = Some(format!(
            "the replay's counts (PASS {}, WARN {}, FAIL {}) are not the service's (PASS {}, WARN {}, FAIL {})",
            b.pass, b.warn, b.fail, a.pass, a.warn, a.fail
        ));
    }
}

/// The first service captured as it stands (HTTPS, a session) and
/// replayed by a second emulator with the same certificate and accounts.
fn replay_of(opts: &Options, url: &str, dir: &Path) -> Result<EmulatorProcess> {
    let capture = opts.out.join("replay-capture");
    let _ = std::fs::remove_dir_all(&capture);
    let summary = crate::capture::capture(&crate::capture::Options {
        auth: crate::capture::Auth::Session,
        user: Some(USER.into()),
        password: Some(PASSWORD.into()),
        insecure: true,
        rate: 0.0,
        description: "the conformance service".into(),
        quiet: true,
        ..crate::capture::Options::new(url, &capture)
    })?;
    let mut cmd = Command::new(&opts.emulator);
    cmd.arg("--mockup")
        .arg(&capture)
        .arg("--auth-file")
        .arg(dir.join("htpasswd"))
        .arg("--ssl-certificate")
        .arg(dir.join("cert.pem"))
        .arg("--ssl-key")
        .arg(dir.join("key.pem"))
        .args(["--port", "0"])
        .env("RUST_LOG", "info");
    let e = EmulatorProcess::spawn(cmd, &opts.out.join("emulator-replay.log"))?;
    eprintln!(
        "conformance: {} resources captured into {}, replayed at {} (pid {})",
        summary.resources,
        capture.display(),
        e.url,
        e.pid()
    );
    Ok(e)
}

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
    let tacklebox = opts.venv_bin.join("rf_certificates.py");
    if !tacklebox.exists() {
        bail!(
            "{} is missing (Redfish-Tacklebox, in the conformance venv: ci/test builds it)",
            tacklebox.display()
        );
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
    let cert = certificates_through_tacklebox(opts, &url, &dir)?;
    eprintln!("conformance: Tacklebox's rf_certificates installed, replaced, listed and deleted HTTPS boot CAs; {cert} stays for the tools to read");
    // The sushy-tools configuration's service, started when its pass comes.
    let mut sushy: Option<(EmulatorProcess, PathBuf)> = None;
    // Captured before any tool runs, as the first pass sees the service.
    let replay = match opts.tools.contains(&Tool::ReplayService) {
        true => Some(replay_of(opts, &url, &dir)?),
        false => None,
    };
    let mut results = Vec::new();
    for (i, &tool) in opts.tools.iter().enumerate() {
        eprintln!(
            "conformance: [{}/{}] {} ...",
            i + 1,
            opts.tools.len(),
            tool.name()
        );
        let r = if tool == Tool::SushyService {
            if sushy.is_none() {
                let sdir = opts.out.join("sushy-config");
                prepare(&sdir)?;
                let mut cmd = Command::new(&opts.emulator);
                cmd.arg("--config")
                    .arg(sushy_config(&sdir)?)
                    .args(["--port", "0"])
                    .env("RUST_LOG", "info");
                let e = EmulatorProcess::spawn(cmd, &opts.out.join("emulator-sushy-config.log"))?;
                let n = fetch_schemas(&e.url, &sdir.join("schemas"))?;
                eprintln!(
                    "conformance: shoal-emulator with a sushy-tools configuration at {} (pid {}), \
                     {n} schema files",
                    e.url,
                    e.pid()
                );
                sushy = Some((e, sdir));
            }
            let (e, sdir) = sushy.as_ref().context("the sushy-tools service")?;
            run_tool(tool, opts, &e.url, sdir)
        } else if let (Tool::ReplayService, Some(e)) = (tool, &replay) {
            let mut r = run_tool(tool, opts, &e.url, &dir);
            same_counts(&mut r, &results);
            r
        } else {
            run_tool(tool, opts, &url, &dir)
        };
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
        if let Some(status) = sushy.as_mut().and_then(|(e, _)| e.exited()) {
            bail!(
                "the emulator with a sushy-tools configuration exited ({status}); see {}",
                opts.out.join("emulator-sushy-config.log").display()
            );
        }
    }
    Ok(results)
}
