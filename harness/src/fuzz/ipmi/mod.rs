//! The `ipmi` target: an emulator serving one fake system over Redfish
//! and IPMI (RMCP+) with three accounts (the fuzzer's administrator, a
//! user-level victim, and the administrator the session-setup cases log
//! in as, which the lockout policy may lock), and the cases of `gen` sent to it over UDP on
//! loopback (`link`), one after another with a health check every
//! `BATCH`.
//!
//! Judged per case: `no-hang` (a well-formed request in an established
//! session gets its answer within the timeout; silence to malformed or
//! unauthenticated datagrams is what the spec allows, never a finding),
//! `unchanged-after-refusal` (a command answered with a non-zero
//! completion code leaves the state it could touch as it was: the
//! `link::probes` read over IPMI, and the system's PowerState and Boot
//! over Redfish), `rejects-invalid` (no session from a wrong password or
//! HMAC), `spec-codes` (completion codes and RMCP+ status codes are ones
//! the IPMI v2.0 spec defines) and `no-panic` (no "panicked" line in the
//! emulator's log). Per batch: `alive` (the process is up, and a fresh
//! login with the configured account and Get Device ID succeed) and
//! `rss-bound`.

mod cases;
mod datagram;
pub mod gen;
mod link;
mod setup;

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use serde_json::Value;
use shoal_ipmi::console::Session;

use super::http::{Client, Req};
use super::judge::stable;
use super::{Finding, Invariant, Options, Target, TargetResult};
use super::{BATCH, PASSWORD, USER, VOLATILE};
use crate::emulator::EmulatorProcess;
use gen::Case;
use link::Link;

/// The victim account: a user-level one, the target of wrong passwords
/// and user commands. Not `fuzz::VICTIM`, whose 17 bytes are over IPMI's
/// 16-byte names.
const VICTIM: &str = "shoal-victim";
/// The victim account's password (IPMI passwords: at most 20 bytes).
const VICTIM_PASSWORD: &str = "victim-Passw0rd";
/// The administrator that session-setup cases log in as, with the right
/// password or a wrong one, or give up half way: the BMC may lock it out
/// for that (the accounts' lockout policy), which must never lock out the
/// fuzzer's own account, whose logins are the `alive` check and carry the
/// in-session cases.
const SETUP_ADMIN: &str = "shoal-fuzz-adm";
const SETUP_ADMIN_PASSWORD: &str = "adm-Passw0rd";

fn free_udp_port() -> Result<u16> {
    Ok(UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port())
}

struct Service {
    emu: EmulatorProcess,
    bmc: SocketAddr,
    http: SocketAddr,
    log: PathBuf,
}

fn start(opts: &Options, dir: &Path, n: usize) -> Result<Service> {
    let port = free_udp_port()?;
    let mut cmd = Command::new(&opts.emulator);
    cmd.args([
        "--port",
        "0",
        "--interface",
        "127.0.0.1",
        "--fake-systems",
        "1",
    ])
    .args(["--ipmi-port", &port.to_string()])
    .args(["--ipmi-user", &format!("{USER}:{PASSWORD}")])
    .args(["--ipmi-user", &format!("{VICTIM}:{VICTIM_PASSWORD}:user")])
    .args([
        "--ipmi-user",
        &format!("{SETUP_ADMIN}:{SETUP_ADMIN_PASSWORD}"),
    ])
    .arg("--auth-file")
    .arg(dir.join("htpasswd"))
    .env("RUST_LOG", "warn");
    let log = dir.join(format!("emulator-{n}.log"));
    let emu = EmulatorProcess::spawn(cmd, &log)?;
    let http = emu.http_addr()?;
    short_lockout(http, opts.timeout)?;
    let bmc: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut l = Link::new(bmc)?;
        match link::login(&mut l, USER, PASSWORD, 1, Duration::from_millis(300)) {
            Ok(mut s) => {
                link::close(&mut l, &mut s);
                break;
            }
            Err(e) if Instant::now() > deadline => bail!("no IPMI login at {bmc}: {e:#}"),
            Err(_) => {}
        }
    }
    Ok(Service {
        emu,
        bmc,
        http,
        log,
    })
}

/// Spec-defined completion codes: normal, command-specific (0x80-0xBE),
/// generic (0xC0-0xD6) and unspecified (0xFF).
fn spec_cc(cc: u8) -> bool {
    matches!(cc, 0x00 | 0x80..=0xbe | 0xc0..=0xd6 | 0xff)
}

/// RMCP+ status codes (IPMI v2.0 table 13-15).
fn spec_status(s: u8) -> bool {
    s <= 0x12
}

pub(super) struct Run<'a> {
    opts: &'a Options,
    dir: PathBuf,
    svc: Service,
    link: Link,
    /// The fuzzer's administrator session, logged in when needed.
    session: Option<Session>,
    logins: u32,
    http: Client,
    auth: (String, Vec<u8>),
    /// The system's Redfish path.
    system: String,
    volatile: Vec<String>,
    /// The last in-session datagram sent (for the replay mutation).
    last_datagram: Option<Vec<u8>>,
    log_read: u64,
    res: TargetResult,
    seen: BTreeMap<String, usize>,
    starts: usize,
    verbose: bool,
}

impl Run<'_> {
    fn finding(&mut self, inv: Invariant, case: &Case, key: &str, wire: &[u8], detail: String) {
        let key = format!("{} {} {key}", inv.name(), case.family());
        if let Some(&i) = self.seen.get(&key) {
            self.res.findings[i].count += 1;
            return;
        }
        tracing::warn!(case = case.id, "{}: {}: {detail}", inv.name(), case.short());
        let mut w = link::hex(&wire[..wire.len().min(1400)]);
        if wire.len() > 1400 {
            w.push_str(&format!("…({} bytes in all)", wire.len()));
        }
        self.seen.insert(key, self.res.findings.len());
        self.res.findings.push(Finding {
            invariant: inv,
            target: Target::Ipmi,
            case: case.id,
            kind: case.family(),
            request: case.short(),
            wire: w,
            detail,
            count: 1,
        });
    }

    fn status(&mut self, s: String) {
        if self.verbose {
            println!("  → {s}");
        }
        *self.res.statuses.entry(s).or_default() += 1;
    }

    fn restart(&mut self, why: String) -> Result<()> {
        self.res.restarts.push(why);
        self.res.datagrams += self.link.sent;
        self.starts += 1;
        self.svc = start(self.opts, &self.dir, self.starts)?;
        self.link = Link::new(self.svc.bmc)?;
        self.http = Client::new(self.svc.http, self.opts.timeout);
        self.session = None;
        self.log_read = 0;
        Ok(())
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

    /// The fuzzer's session, logged in when there is none.
    fn session(&mut self) -> Result<Session> {
        if let Some(s) = self.session.take() {
            return Ok(s);
        }
        self.logins += 1;
        let n = self.logins;
        link::login(&mut self.link, USER, PASSWORD, n, self.opts.timeout)
    }

    /// The state a command may change, volatile items left out: the
    /// probes over IPMI (in the fuzzer's session), PowerState and Boot
    /// over Redfish.
    fn state(&mut self, probes: &[link::Probe]) -> Result<Vec<(String, String)>> {
        let mut s = self.session()?;
        let read = link::read_state(&mut self.link, &mut s, probes, self.opts.timeout);
        self.session = Some(s);
        let mut out = read?;
        let r = Req::new("GET", &self.system).header(&self.auth.0, self.auth.1.clone());
        let sys = self
            .http
            .send(&r)
            .ok()
            .and_then(|r| r.json())
            .unwrap_or(Value::Null);
        let vol: Vec<String> = VOLATILE.iter().map(|s| s.to_string()).collect();
        for k in ["PowerState", "Boot"] {
            let v = sys.get(k).map(|v| stable(v, &vol).to_string());
            out.push((format!("redfish {k}"), v.unwrap_or_else(|| "-".into())));
        }
        out.retain(|(k, _)| !self.volatile.contains(k));
        Ok(out)
    }

    /// New "panicked" lines in the emulator's log since the last look.
    fn panics(&mut self, case: &Case, wire: &[u8]) {
        let len = std::fs::metadata(&self.svc.log).map_or(0, |m| m.len());
        if len <= self.log_read {
            return;
        }
        let text = std::fs::read(&self.svc.log).unwrap_or_default();
        let new =
            String::from_utf8_lossy(&text[(self.log_read as usize).min(text.len())..]).to_string();
        self.log_read = len;
        if let Some(line) = new.lines().find(|l| l.contains("panicked")) {
            let detail = format!("{} (log {})", line.trim(), self.svc.log.display());
            self.finding(Invariant::NoPanic, case, line, wire, detail);
        }
    }

    /// Liveness (a fresh login and Get Device ID) and RSS between batches.
    fn health(&mut self, last: &Case) -> Result<()> {
        if let Some(rss) = self.svc.emu.rss_kib() {
            self.res.rss_max_kib = self.res.rss_max_kib.max(rss);
            if rss > self.opts.rss_limit_kib {
                let detail = format!(
                    "VmRSS {} MiB over the bound of {} MiB after case {}",
                    rss / 1024,
                    self.opts.rss_limit_kib / 1024,
                    last.id
                );
                self.finding(Invariant::RssBound, last, "rss", &[], detail);
                return self.restart(format!("case {}: RSS {} MiB", last.id, rss / 1024));
            }
        }
        if let Some(exit) = self.died() {
            let detail = format!("the emulator exited ({exit}) in the batch ending with this case");
            self.finding(Invariant::Alive, last, "exit", &[], detail);
            return self.restart(format!("after case {}: exited ({exit})", last.id));
        }
        let mut fresh = Link::new(self.svc.bmc)?;
        let mut why = String::new();
        for attempt in 0..3u32 {
            self.logins += 1;
            let n = self.logins;
            let wait = Duration::from_secs(2);
            match link::login(&mut fresh, USER, PASSWORD, n, wait) {
                Ok(mut s) => {
                    let r = fresh.call(&mut s, 0x06, 0x01, &[], [6; 16], self.opts.timeout)?;
                    link::close(&mut fresh, &mut s);
                    self.res.datagrams += fresh.sent;
                    match r {
                        Some((0, _)) => return Ok(()),
                        Some((cc, _)) => why = format!("Get Device ID: completion code 0x{cc:02x}"),
                        None => why = "no answer to Get Device ID".into(),
                    }
                }
                Err(e) => why = format!("login: {e:#}"),
            }
            // A lost datagram on a busy machine: once more, a moment later.
            std::thread::sleep(Duration::from_millis(200 * u64::from(attempt + 1)));
        }
        self.res.datagrams += fresh.sent;
        let detail = format!("after the batch ending with this case, three fresh logins: {why}");
        self.finding(Invariant::Alive, last, "login", &[], detail);
        self.restart(format!("after case {}: {why}", last.id))
    }

    /// Items that change between two plain reads: volatile.
    fn find_volatile(&mut self) -> Result<()> {
        let mut probes = link::probes(0x00, 0x08);
        probes.extend(link::probes(0x06, 0x47).into_iter().skip(2));
        probes.extend(link::probes(0x06, 0x24).into_iter().skip(2));
        let a = self.state(&probes)?;
        std::thread::sleep(Duration::from_millis(300));
        let b = self.state(&probes)?;
        for ((k, x), (_, y)) in a.iter().zip(&b) {
            if x != y {
                self.volatile.push(k.clone());
            }
        }
        Ok(())
    }
}

/// The accounts' lockout (which IPMI logins share) made short: the setup
/// cases' administrator, locked by their wrong passwords, comes back in
/// seconds and its right-password sessions are fuzzed too, while the
/// lockout itself stays on.
fn short_lockout(http: SocketAddr, timeout: Duration) -> Result<()> {
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let mut r = Req::new("PATCH", "/redfish/v1/AccountService")
        .header("Authorization", format!("Basic {b}"))
        .header("Content-Type", "application/json");
    r.body = br#"{"AccountLockoutThreshold": 5, "AccountLockoutDuration": 5, "AccountLockoutCounterResetAfter": 5}"#.to_vec();
    let resp = Client::new(http, timeout)
        .send(&r)
        .map_err(|e| anyhow::anyhow!("PATCH /redfish/v1/AccountService: {e}"))?;
    if !(200..300).contains(&resp.status) {
        bail!(
            "PATCH /redfish/v1/AccountService: {} {}",
            resp.status,
            String::from_utf8_lossy(&resp.body)
        );
    }
    Ok(())
}

fn first_system(http: &mut Client, auth: &(String, Vec<u8>)) -> Result<String> {
    let r = Req::new("GET", "/redfish/v1/Systems").header(&auth.0, auth.1.clone());
    let v = http
        .send(&r)
        .map_err(|e| anyhow::anyhow!("GET /redfish/v1/Systems: {e}"))?
        .json()
        .context("GET /redfish/v1/Systems: no JSON")?;
    v.pointer("/Members/0/@odata.id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .context("GET /redfish/v1/Systems: no member")
}

pub(super) fn run_target(opts: &Options, budget: Duration) -> Result<TargetResult> {
    let dir = opts.out.join(Target::Ipmi.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let hash = bcrypt::hash(PASSWORD, 4)?;
    std::fs::write(dir.join("htpasswd"), format!("{USER}:{hash}\n"))?;
    let svc = start(opts, &dir, 0)?;
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let auth = (
        "Authorization".to_string(),
        format!("Basic {b}").into_bytes(),
    );
    let mut http = Client::new(svc.http, opts.timeout);
    let system = first_system(&mut http, &auth)?;
    let mut run = Run {
        opts,
        dir,
        link: Link::new(svc.bmc)?,
        res: TargetResult {
            name: Target::Ipmi.name().into(),
            rss_start_kib: svc.emu.rss_kib().unwrap_or(0),
            ..Default::default()
        },
        svc,
        session: None,
        logins: 1,
        http,
        auth,
        system,
        volatile: Vec::new(),
        last_datagram: None,
        log_read: 0,
        seen: BTreeMap::new(),
        starts: 0,
        verbose: opts.only_case.is_some(),
    };
    run.find_volatile()?;
    run.res.volatile = run.volatile.clone();
    eprintln!(
        "fuzz: ipmi: BMC at {}, system {}; volatile {:?}",
        run.svc.bmc, run.system, run.volatile
    );
    let started = Instant::now();
    if let Some(n) = opts.only_case {
        let case = gen::case(opts.seed, n);
        println!("ipmi: seed {} case {n} ({}):", opts.seed, case.family());
        println!("  {}", case.short());
        run.one(&case)?;
        run.health(&case)?;
        run.res.cases = 1;
    } else {
        let mut id = 0u64;
        while started.elapsed() < budget && opts.max_cases.is_none_or(|m| id < m) {
            let case = gen::case(opts.seed, id);
            run.one(&case)?;
            id += 1;
            if id % BATCH == 0 {
                run.health(&case)?;
            }
        }
        run.res.cases = id;
    }
    run.res.elapsed = started.elapsed();
    run.res.datagrams += run.link.sent;
    if let Some(rss) = run.svc.emu.rss_kib() {
        run.res.rss_max_kib = run.res.rss_max_kib.max(rss);
    }
    Ok(run.res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_codes_are_the_ones_ipmi_defines() {
        for ok in [0x00, 0x80, 0x81, 0xc1, 0xc7, 0xcc, 0xd4, 0xd6, 0xff] {
            assert!(spec_cc(ok), "{ok:#x}");
        }
        for bad in [0x01, 0x7e, 0xbf, 0xd7, 0xfe] {
            assert!(!spec_cc(bad), "{bad:#x}");
        }
        assert!(spec_status(0x12) && !spec_status(0x13));
    }
}
