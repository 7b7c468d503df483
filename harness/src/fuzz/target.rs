//! One target's run: its emulator (restarted when it dies), the crawl of
//! its surface, the properties that change by themselves, then the cases
//! one after another with a health check every `BATCH`, each answer
//! judged against the invariants and every broken one kept as a finding.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use base64::Engine;
use serde_json::Value;

use super::gen::{Case, Gen};
use super::http::{self, Client, Req};
use super::judge::{changed_keys, error_body_problem, stable};
use super::{crawl, Finding, Invariant, Options, Target, TargetResult};
use super::{BATCH, PASSWORD, USER, VICTIM, VOLATILE};
use crate::emulator::EmulatorProcess;

/// The action that restarts a BMC (`Manager.Reset`).
const RESTART: &[u8] = b"/Actions/Manager.Reset";

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
    if target == Target::Sushy {
        // metal3-dev-env's shape: auth file, fake systems (one on, one
        // off, one Legacy), two chassis.
        let conf = dir.join("sushy-emulator.conf");
        std::fs::write(
            &conf,
            format!(
                "SUSHY_EMULATOR_AUTH_FILE = {:?}\n\
                 SUSHY_EMULATOR_STATE_DIR = {:?}\n\
                 SUSHY_EMULATOR_FAKE_DRIVER = True\n\
                 SUSHY_EMULATOR_FAKE_SYSTEMS = [\n\
                 \x20   {{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'fuzz-0', 'power_state': 'On',\n\
                 \x20    'nics': [{{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.0.100'}}]}},\n\
                 \x20   {{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef095', 'name': 'fuzz-1', 'power_state': 'Off',\n\
                 \x20    'boot_mode': 'Legacy'}},\n\
                 ]\n\
                 SUSHY_EMULATOR_CHASSIS = [\n\
                 \x20   {{'Id': 'Chassis', 'Name': 'Chassis', 'UUID': '48295861-2522-3561-6729-621118518810'}},\n\
                 \x20   {{'Id': 'Spare', 'Name': 'Spare rack', 'UUID': '48295861-2522-3561-6729-621118518812'}},\n\
                 ]\n",
                htpasswd.display().to_string(),
                dir.join(format!("sushy-state-{n}")).display().to_string(),
            ),
        )?;
        cmd.arg("--config").arg(&conf);
    } else if target == Target::Libvirt {
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
    let addr = emu.http_addr()?;
    Ok(Service { emu, addr })
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
            Err(e) => return self.unanswered(case, e, verbose),
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
            // An accepted BMC restart takes that BMC away for half a
            // minute (503 meanwhile): a fresh emulator instead of a blind
            // run.
            if case.req.method == "POST"
                && case.req.target.windows(RESTART.len()).any(|w| w == RESTART)
            {
                self.restart(format!("case {}: a BMC restarts (Manager.Reset)", case.id))?;
                return Ok(());
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
                self.refused_left_unchanged(case, s, &path, &old);
            }
        }
        Ok(())
    }

    /// A case that got no response: the emulator crashed (restarted),
    /// hung, or closed the connection where it should have answered.
    fn unanswered(&mut self, case: &Case, e: http::Error, verbose: bool) -> Result<()> {
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
        Ok(())
    }

    /// After a 4xx: whether the guarded resource still reads as before;
    /// a change the same refused request makes again is a finding.
    fn refused_left_unchanged(&mut self, case: &Case, s: u16, path: &str, old: &Value) {
        if let Some(new) = self.get(path) {
            let (a, b) = (stable(old, &self.volatile), stable(&new, &self.volatile));
            if a != b {
                // Confirm: the same refused request, from a fresh
                // reading, changes it again.
                let mut keys = Vec::new();
                changed_keys(&a, &b, &mut keys);
                let again = self.get(path);
                let _ = self.client.send(&case.req);
                let after = self.get(path);
                let confirmed = match (again, after) {
                    (Some(x), Some(y)) => stable(&x, &self.volatile) != stable(&y, &self.volatile),
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

pub(super) fn run_target(opts: &Options, target: Target, budget: Duration) -> Result<TargetResult> {
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
