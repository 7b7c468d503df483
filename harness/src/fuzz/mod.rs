//! `shoal-harness fuzz`: requests generated from the service's own surface
//! (crawled from `/redfish/v1`, see `crawl`) against a `shoal-emulator` on
//! the fake backend, with authentication on (htpasswd) and off, and
//! optionally on libvirt's `test:///default` driver, over loopback, for a
//! bounded time. Deterministic: case `n` of a seed is always the same
//! request (`--seed S --case N` replays one alone).
//!
//! Invariants, each a JUnit test case per target:
//! - `no-5xx`: no 5xx, except 501 for a query parameter it does not support;
//! - `alive`: the process stays up and answers (checked after each case's
//!   transport error and after every batch);
//! - `no-hang`: every request is answered within the timeout;
//! - `unchanged-after-4xx`: the resource a refused PATCH/POST/PUT/DELETE
//!   aimed at reads the same afterwards, volatile properties aside
//!   (`VOLATILE`, plus those that change between two plain GETs);
//! - `error-body`: every 4xx is a Redfish error whose `@Message.ExtendedInfo`
//!   MessageIds are `Registry.Major.Minor.Name` of a registry it serves;
//! - `rejects-invalid`: input that is certainly wrong (wrong JSON type,
//!   strings over `gen::MAX_STRING`, values outside AllowableValues,
//!   unknown properties, missing credentials) is not answered 2xx;
//! - `rss-bound`: VmRSS stays under the limit.

pub mod crawl;
pub mod gen;
pub mod http;
mod report;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use serde_json::Value;

use crate::emulator::EmulatorProcess;
use gen::{Case, Gen};
use http::{Client, Req, Resp};
pub use report::{findings_jsonl, junit, summary};

const USER: &str = "shoal-fuzz";
/// A second account, the target of the wrong-password cases: its lockout
/// (the service's answer to guessing) must not lock the fuzzer out.
pub(crate) const VICTIM: &str = "shoal-fuzz-victim";
const PASSWORD: &str = "fuzz-Passw0rd";
/// Cases between two health checks (liveness, credentials, RSS).
const BATCH: u64 = 25;
/// Properties that change without a request, by name, wherever they are.
pub const VOLATILE: [&str; 3] = ["@odata.etag", "DateTime", "DateTimeLocalOffset"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Fake backend, Basic authentication from an htpasswd file.
    Auth,
    /// Fake backend, no authentication.
    NoAuth,
    /// libvirt's `test:///default` driver (an emulator built with the
    /// `libvirt` feature), authentication on.
    Libvirt,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Auth, Target::NoAuth, Target::Libvirt];

    pub fn name(self) -> &'static str {
        match self {
            Target::Auth => "fake-auth",
            Target::NoAuth => "fake-noauth",
            Target::Libvirt => "libvirt-test",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    fn auth(self) -> bool {
        self != Target::NoAuth
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    NoServerError,
    Alive,
    NoHang,
    UnchangedAfter4xx,
    ErrorBody,
    RejectsInvalid,
    RssBound,
}

impl Invariant {
    pub const ALL: [Invariant; 7] = [
        Invariant::NoServerError,
        Invariant::Alive,
        Invariant::NoHang,
        Invariant::UnchangedAfter4xx,
        Invariant::ErrorBody,
        Invariant::RejectsInvalid,
        Invariant::RssBound,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoServerError => "no-5xx",
            Invariant::Alive => "alive",
            Invariant::NoHang => "no-hang",
            Invariant::UnchangedAfter4xx => "unchanged-after-4xx",
            Invariant::ErrorBody => "error-body",
            Invariant::RejectsInvalid => "rejects-invalid",
            Invariant::RssBound => "rss-bound",
        }
    }
}

pub struct Options {
    pub emulator: PathBuf,
    pub out: PathBuf,
    /// For all targets together, split evenly.
    pub duration: Duration,
    pub seed: u64,
    pub targets: Vec<Target>,
    pub rss_limit_kib: u64,
    /// Stop a target after this many cases.
    pub max_cases: Option<u64>,
    /// Run only this case (a replay), printing request and response.
    pub only_case: Option<u64>,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub invariant: Invariant,
    pub target: Target,
    pub case: u64,
    pub kind: &'static str,
    pub request: String,
    /// The whole request, escaped, cut at 4 KiB.
    pub wire: String,
    pub detail: String,
    /// How many cases hit the same (invariant, method, path, status).
    pub count: u64,
}

#[derive(Debug, Clone, Default)]
pub struct TargetResult {
    pub name: String,
    pub cases: u64,
    pub elapsed: Duration,
    pub statuses: BTreeMap<String, u64>,
    pub kinds: BTreeMap<&'static str, u64>,
    pub resources: usize,
    pub actions: usize,
    pub rss_start_kib: u64,
    pub rss_max_kib: u64,
    pub restarts: Vec<String>,
    pub volatile: Vec<String>,
    pub findings: Vec<Finding>,
    /// A reason the target could not run at all.
    pub error: Option<String>,
}

impl TargetResult {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.findings.is_empty()
    }
}

/// Inventory: UEFI and legacy x86_64 machines and a ppc64le one, one off,
/// under profiles without fixed Ids (they share one service root).
fn inventory(auth: Option<&Path>) -> String {
    let mut s = String::from("feature_set = \"full\"\n");
    if let Some(h) = auth {
        s.push_str(&format!("[auth]\nhtpasswd = \"{}\"\n", h.display()));
    }
    s.push_str(
        r#"[fake]
power_delay_ms = 0
media_delay_ms = 0

[[systems]]
name = "fuzz-uefi-0"
disks = [{ name = "disk0", capacity_gib = 40 }, { name = "disk1", capacity_gib = 40 }, { name = "disk2", capacity_gib = 40 }]

[[systems]]
name = "fuzz-uefi-1"
power = "Off"
profile = "no-allowable-values"

[[systems]]
name = "fuzz-legacy"
boot_mode = "Legacy"
profile = "synthetic-strict-etag"

[[systems]]
name = "fuzz-ppc64le"
arch = "ppc64le"
boot_mode = "Legacy"
"#,
    );
    s
}

struct Service {
    emu: EmulatorProcess,
    addr: SocketAddr,
}

fn start(opts: &Options, target: Target, dir: &Path, n: usize) -> Result<Service> {
    let mut cmd = Command::new(&opts.emulator);
    let htpasswd = dir.join("htpasswd");
    if target == Target::Libvirt {
        cmd.args(["--libvirt-uri", "test:///default", "--feature-set", "full"])
            .arg("--media-cache")
            .arg(dir.join("media"))
            .arg("--auth-file")
            .arg(&htpasswd);
    } else {
        let inv = dir.join("inventory.toml");
        std::fs::write(&inv, inventory(target.auth().then_some(&htpasswd)))?;
        cmd.arg("--config").arg(&inv);
    }
    cmd.args(["--port", "0", "--interface", "127.0.0.1"])
        .env("RUST_LOG", "warn");
    let log = dir.join(format!("emulator-{n}.log"));
    let emu = EmulatorProcess::spawn(cmd, &log)?;
    let addr: SocketAddr = emu
        .url
        .strip_prefix("http://")
        .with_context(|| format!("{} is not plain HTTP", emu.url))?
        .parse()?;
    Ok(Service { emu, addr })
}

/// The MessageId shapes DSP0266 gives: `Registry.Major.Minor[.Errata].Name`.
fn message_id_ok(id: &str, registries: &std::collections::BTreeSet<String>) -> bool {
    let parts: Vec<&str> = id.split('.').collect();
    let n = parts.len();
    (4..=5).contains(&n)
        && registries.contains(parts[0])
        && parts[1..n - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !parts[n - 1].is_empty()
        && parts[n - 1].bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Why a 4xx body is not a Redfish error, if it is not.
fn error_body_problem(
    resp: &Resp,
    registries: &std::collections::BTreeSet<String>,
) -> Option<String> {
    let Some(v) = resp.json() else {
        return Some(format!(
            "not JSON ({} bytes, Content-Type {:?})",
            resp.body.len(),
            resp.header("content-type")
        ));
    };
    let Some(e) = v.get("error") else {
        return Some("no \"error\" object".into());
    };
    if !e.get("code").is_some_and(Value::is_string)
        || !e.get("message").is_some_and(Value::is_string)
    {
        return Some("error without code and message".into());
    }
    let Some(info) = e.get("@Message.ExtendedInfo").and_then(Value::as_array) else {
        return Some("no @Message.ExtendedInfo array".into());
    };
    if info.is_empty() {
        return Some("an empty @Message.ExtendedInfo".into());
    }
    for m in info {
        match m.get("MessageId").and_then(Value::as_str) {
            Some(id) if message_id_ok(id, registries) => {}
            other => {
                return Some(format!(
                    "MessageId {other:?} is not Registry.Major.Minor.Name of a served registry"
                ))
            }
        }
    }
    None
}

/// `v` without the properties named in `volatile`, anywhere.
fn stable(v: &Value, volatile: &[String]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !volatile.iter().any(|x| x == *k))
                .map(|(k, x)| (k.clone(), stable(x, volatile)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| stable(x, volatile)).collect()),
        _ => v.clone(),
    }
}

/// The names of the properties whose values differ between `a` and `b`.
fn changed_keys(a: &Value, b: &Value, out: &mut Vec<String>) {
    if let (Value::Object(x), Value::Object(y)) = (a, b) {
        for (k, va) in x {
            match y.get(k) {
                Some(vb) if vb.is_object() => changed_keys(va, vb, out),
                Some(vb) if vb == va => {}
                _ => out.push(k.clone()),
            }
        }
    }
}

fn wire_text(req: &Req, addr: SocketAddr) -> String {
    let w = req.wire(&addr.to_string());
    let mut s = http::escape(&w[..w.len().min(4096)]);
    if w.len() > 4096 {
        s.push_str(&format!("…({} bytes in all)", w.len()));
    }
    s
}

struct Run<'a> {
    opts: &'a Options,
    target: Target,
    dir: PathBuf,
    svc: Service,
    client: Client,
    auth: Option<(String, Vec<u8>)>,
    surface: crawl::Surface,
    volatile: Vec<String>,
    res: TargetResult,
    /// (invariant, method, path, status) → index in findings.
    seen: BTreeMap<String, usize>,
    starts: usize,
}

impl Run<'_> {
    fn finding(&mut self, inv: Invariant, case: &Case, status: &str, detail: String) {
        let target = case.req.target.split(|&b| b == b'?').next().unwrap_or(&[]);
        // One crash or hang is one finding, whichever resource it hit.
        let key = if matches!(
            inv,
            Invariant::Alive | Invariant::NoHang | Invariant::RssBound
        ) {
            format!("{} {}", inv.name(), case.kind.name())
        } else {
            format!(
                "{} {} {} {status}",
                inv.name(),
                case.req.method,
                http::escape(&target[..target.len().min(100)])
            )
        };
        if let Some(&i) = self.seen.get(&key) {
            self.res.findings[i].count += 1;
            return;
        }
        tracing::warn!(
            case = case.id,
            "{}: {} → {status}: {detail}",
            inv.name(),
            case.req.short()
        );
        self.seen.insert(key, self.res.findings.len());
        self.res.findings.push(Finding {
            invariant: inv,
            target: self.target,
            case: case.id,
            kind: case.kind.name(),
            request: case.req.short(),
            wire: wire_text(&case.req, self.svc.addr),
            detail,
            count: 1,
        });
    }

    fn restart(&mut self, why: String) -> Result<()> {
        self.res.restarts.push(why);
        self.starts += 1;
        self.svc = start(self.opts, self.target, &self.dir, self.starts)?;
        self.client = Client::new(self.svc.addr, self.opts.timeout);
        Ok(())
    }

    fn get(&mut self, path: &str) -> Option<Value> {
        let mut r = Req::new("GET", path);
        if let Some((n, v)) = &self.auth {
            r = r.header(n, v.clone());
        }
        let resp = self.client.send(&r).ok()?;
        if resp.status == 200 {
            resp.json()
        } else {
            None
        }
    }

    /// Whether the process is gone, giving it a moment to finish dying.
    fn died(&mut self) -> Option<String> {
        for _ in 0..10 {
            if let Some(s) = self.svc.emu.exited() {
                return Some(s.to_string());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        None
    }

    /// Sends one case and checks every per-request invariant.
    fn one(&mut self, case: &Case, verbose: bool) -> Result<()> {
        let before = case
            .guard
            .clone()
            .and_then(|g| self.get(&g).map(|v| (g, v)));
        let sent = self.client.send(&case.req);
        if case.req.raw.is_some() {
            self.client = Client::new(self.svc.addr, self.opts.timeout);
        }
        *self.res.kinds.entry(case.kind.name()).or_default() += 1;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                let status = if matches!(e, http::Error::Timeout) {
                    "timeout"
                } else {
                    "closed"
                };
                *self.res.statuses.entry(status.into()).or_default() += 1;
                if verbose {
                    println!("{} → {e}", case.req.short());
                }
                if let Some(exit) = self.died() {
                    let log = self.dir.join(format!("emulator-{}.log", self.starts));
                    self.finding(
                        Invariant::Alive,
                        case,
                        "exit",
                        format!("the emulator exited ({exit}); see {}", log.display()),
                    );
                    self.restart(format!("case {}: crashed ({exit})", case.id))?;
                } else if matches!(e, http::Error::Timeout) {
                    self.finding(
                        Invariant::NoHang,
                        case,
                        "timeout",
                        format!("no response in {:?}", self.opts.timeout),
                    );
                } else if !case.protocol_level {
                    self.finding(Invariant::NoServerError, case, "closed", e.to_string());
                }
                return Ok(());
            }
        };
        let s = resp.status;
        *self.res.statuses.entry(s.to_string()).or_default() += 1;
        if verbose {
            println!(
                "{}\n→ {s} {}",
                case.req.short(),
                String::from_utf8_lossy(&resp.body[..resp.body.len().min(2000)])
            );
        }
        let has_query = case.req.target.contains(&b'?');
        if s >= 500 && !(s == 501 && has_query) {
            let body = String::from_utf8_lossy(&resp.body[..resp.body.len().min(300)]).to_string();
            self.finding(Invariant::NoServerError, case, &s.to_string(), body);
        }
        if (200..300).contains(&s) {
            if let Some(why) = &case.must_reject {
                let why = format!("accepted ({s}) {why}");
                self.finding(Invariant::RejectsInvalid, case, &s.to_string(), why);
            }
            // An accepted request may have changed the fuzzer's own account.
            if case.req.target.starts_with(b"/redfish/v1/AccountService")
                && self.auth.is_some()
                && self.get("/redfish/v1/Systems").is_none()
            {
                self.restart(format!(
                    "case {}: the fuzz account's credentials changed",
                    case.id
                ))?;
                return Ok(());
            }
        }
        if (400..500).contains(&s) {
            let bare = case.protocol_level && resp.body.is_empty();
            if case.req.method != "HEAD" && !bare {
                if let Some(p) = error_body_problem(&resp, &self.surface.registries) {
                    self.finding(Invariant::ErrorBody, case, &s.to_string(), p);
                }
            }
            if let Some((path, old)) = before {
                if let Some(new) = self.get(&path) {
                    let (a, b) = (stable(&old, &self.volatile), stable(&new, &self.volatile));
                    if a != b {
                        // Confirm: the same refused request, from a fresh
                        // reading, changes it again.
                        let mut keys = Vec::new();
                        changed_keys(&a, &b, &mut keys);
                        let again = self.get(&path);
                        let _ = self.client.send(&case.req);
                        let after = self.get(&path);
                        let confirmed = match (again, after) {
                            (Some(x), Some(y)) => {
                                stable(&x, &self.volatile) != stable(&y, &self.volatile)
                            }
                            _ => true,
                        };
                        if confirmed {
                            self.finding(
                                Invariant::UnchangedAfter4xx,
                                case,
                                &s.to_string(),
                                format!(
                                    "{path} changed ({}) though the answer was {s}",
                                    keys.join(", ")
                                ),
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Liveness, credentials and RSS between batches.
    fn health(&mut self, last: &Case) -> Result<()> {
        if let Some(rss) = self.svc.emu.rss_kib() {
            self.res.rss_max_kib = self.res.rss_max_kib.max(rss);
            if rss > self.opts.rss_limit_kib {
                self.finding(
                    Invariant::RssBound,
                    last,
                    "rss",
                    format!(
                        "VmRSS {} MiB over the bound of {} MiB after case {}",
                        rss / 1024,
                        self.opts.rss_limit_kib / 1024,
                        last.id
                    ),
                );
                self.restart(format!("case {}: RSS {} MiB", last.id, rss / 1024))?;
                return Ok(());
            }
        }
        if self.get("/redfish/v1/Systems").is_some() {
            return Ok(());
        }
        if let Some(exit) = self.died() {
            self.finding(
                Invariant::Alive,
                last,
                "exit",
                format!("the emulator exited ({exit}) in the batch ending with this case"),
            );
            return self.restart(format!("after case {}: exited ({exit})", last.id));
        }
        let mut r = Req::new("GET", "/redfish/v1/Systems");
        if let Some((n, v)) = &self.auth {
            r = r.header(n, v.clone());
        }
        match self.client.send(&r) {
            Ok(resp) if resp.status == 401 => self.restart(format!(
                "after case {}: the fuzz account's credentials changed",
                last.id
            )),
            Ok(resp) => {
                self.finding(
                    Invariant::Alive,
                    last,
                    &resp.status.to_string(),
                    format!(
                        "GET /redfish/v1/Systems answers {} after the batch ending with this case",
                        resp.status
                    ),
                );
                self.restart(format!(
                    "after case {}: GET /Systems {}",
                    last.id, resp.status
                ))
            }
            Err(e) => {
                self.finding(
                    Invariant::Alive,
                    last,
                    "no answer",
                    format!("GET /redfish/v1/Systems: {e}"),
                );
                self.restart(format!("after case {}: {e}", last.id))
            }
        }
    }
}

fn run_target(opts: &Options, target: Target, budget: Duration) -> Result<TargetResult> {
    let dir = opts.out.join(target.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    // Cost 4: the fuzzer's own logins are many; bcrypt's cost is not under test.
    let hash = bcrypt::hash(PASSWORD, 4)?;
    std::fs::write(
        dir.join("htpasswd"),
        format!("{USER}:{hash}\n{VICTIM}:{hash}\n"),
    )?;
    let svc = start(opts, target, &dir, 0)?;
    let auth = target.auth().then(|| {
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        (
            "Authorization".to_string(),
            format!("Basic {b}").into_bytes(),
        )
    });
    let mut client = Client::new(svc.addr, opts.timeout);
    let surface = crawl::crawl(&mut client, auth.as_ref());
    if surface.resources.len() < 5 {
        bail!("the crawl found only {} resources", surface.resources.len());
    }
    // Properties that change between two plain GETs are volatile too.
    let mut volatile: Vec<String> = VOLATILE.iter().map(|s| s.to_string()).collect();
    let mut run = Run {
        opts,
        target,
        dir: dir.clone(),
        res: TargetResult {
            name: target.name().into(),
            resources: surface.resources.len(),
            actions: surface.actions.len(),
            rss_start_kib: svc.emu.rss_kib().unwrap_or(0),
            ..Default::default()
        },
        svc,
        client,
        auth: auth.clone(),
        surface: crawl::Surface::default(),
        volatile: Vec::new(),
        seen: BTreeMap::new(),
        starts: 0,
    };
    for r in &surface.resources {
        if let Some(again) = run.get(&r.path) {
            let mut keys = Vec::new();
            changed_keys(&r.body, &again, &mut keys);
            for k in keys {
                if !volatile.contains(&k) {
                    volatile.push(k);
                }
            }
        }
    }
    run.res.volatile = volatile.clone();
    run.volatile = volatile;
    eprintln!(
        "fuzz: {}: {} resources, {} actions, registries {:?}; volatile {:?}",
        target.name(),
        surface.resources.len(),
        surface.actions.len(),
        surface.registries,
        run.volatile
    );
    let gen = Gen::new(&surface, auth);
    run.surface = surface.clone();
    let started = Instant::now();
    if let Some(n) = opts.only_case {
        let case = gen.case(opts.seed, n);
        println!(
            "{}: seed {} case {n} ({}):",
            target.name(),
            opts.seed,
            case.kind.name()
        );
        run.one(&case, true)?;
        run.health(&case)?;
        run.res.cases = 1;
    } else {
        let mut id = 0u64;
        while started.elapsed() < budget && opts.max_cases.is_none_or(|m| id < m) {
            let case = gen.case(opts.seed, id);
            run.one(&case, false)?;
            id += 1;
            if id % BATCH == 0 {
                run.health(&case)?;
            }
        }
        run.res.cases = id;
    }
    run.res.elapsed = started.elapsed();
    if let Some(rss) = run.svc.emu.rss_kib() {
        run.res.rss_max_kib = run.res.rss_max_kib.max(rss);
    }
    Ok(run.res)
}

/// Runs every target in turn for its share of the time.
pub fn run(opts: &Options) -> Result<Vec<TargetResult>> {
    if !opts.emulator.exists() {
        bail!("{} is missing", opts.emulator.display());
    }
    std::fs::create_dir_all(&opts.out)?;
    let budget = opts.duration / opts.targets.len().max(1) as u32;
    let mut out = Vec::new();
    for &t in &opts.targets {
        eprintln!(
            "fuzz: {} for {:.0}s (seed {})",
            t.name(),
            budget.as_secs_f64(),
            opts.seed
        );
        let r = run_target(opts, t, budget).unwrap_or_else(|e| TargetResult {
            name: t.name().into(),
            error: Some(format!("{e:#}")),
            ..Default::default()
        });
        eprintln!(
            "fuzz: {}: {} cases in {:.0}s, {} finding(s){}",
            t.name(),
            r.cases,
            r.elapsed.as_secs_f64(),
            r.findings.len(),
            r.error
                .as_deref()
                .map(|e| format!("; ERROR {e}"))
                .unwrap_or_default()
        );
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_ids_are_checked_against_served_registries() {
        let regs = ["Base".to_string()].into_iter().collect();
        assert!(message_id_ok("Base.1.18.PropertyUnknown", &regs));
        assert!(message_id_ok("Base.1.18.1.PropertyUnknown", &regs));
        assert!(!message_id_ok("Base.PropertyUnknown", &regs));
        assert!(!message_id_ok("IDRAC.2.9.SYS403", &regs));
        assert!(!message_id_ok("Base.1.x.Name", &regs));
    }

    #[test]
    fn error_bodies_are_judged() {
        let regs = ["Base".to_string()].into_iter().collect();
        let resp = |b: Value| Resp {
            status: 400,
            headers: vec![],
            body: serde_json::to_vec(&b).unwrap(),
        };
        let good = json!({"error": {"code": "Base.1.18.GeneralError", "message": "m",
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.18.MalformedJSON"}]}});
        assert_eq!(error_body_problem(&resp(good), &regs), None);
        let bad = json!({"error": {"code": "c", "message": "m", "@Message.ExtendedInfo": []}});
        assert!(error_body_problem(&resp(bad), &regs).is_some());
        let text = Resp {
            status: 405,
            headers: vec![],
            body: b"Method Not Allowed".to_vec(),
        };
        assert!(error_body_problem(&text, &regs)
            .unwrap()
            .starts_with("not JSON"));
    }

    #[test]
    fn volatile_properties_are_ignored_and_changes_named() {
        let a = json!({"@odata.etag": "1", "Boot": {"T": "None", "DateTime": "x"}, "P": "On"});
        let b = json!({"@odata.etag": "2", "Boot": {"T": "Pxe", "DateTime": "y"}, "P": "On"});
        let vol: Vec<String> = VOLATILE.iter().map(|s| s.to_string()).collect();
        assert_ne!(stable(&a, &vol), stable(&b, &vol));
        let mut k = Vec::new();
        changed_keys(&stable(&a, &vol), &stable(&b, &vol), &mut k);
        assert_eq!(k, ["T"]);
        let c = json!({"@odata.etag": "3", "Boot": {"T": "None", "DateTime": "z"}, "P": "On"});
        assert_eq!(stable(&a, &vol), stable(&c, &vol));
    }
}
