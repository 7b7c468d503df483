//! `shoal-harness bench`: shoal-emulator (fake backend) side by side with
//! sushy-tools 2.2.0 (its fake driver, under gunicorn as devstack runs it)
//! and nginx serving the same System JSON as a static file, on loopback,
//! driven by the same load generator (`load.rs`).
//!
//! It prints, per operation and auth mode, requests/s, p50 and p99 and the
//! ratio shoal/sushy-tools (and shoal/nginx for GET System); then shoal at
//! scale (10,000 systems: RSS and latencies), a PATCH storm under full load
//! that must lose no update, and a soak whose RSS at start and end it
//! reports, and the events row (`events.rs`: GET System beside 100 push
//! subscribers and 10 SSE streams, events/s and delivery latency).
//! Figures are printed, never asserted; a lost update is an error.
//!
//! With `--ab-baseline` it runs only the A/B rows instead (`ab.rs`): two
//! builds of shoal-emulator, interleaved in one run.

mod ab;
mod events;
mod fleet;
mod ipmi;
mod report;
mod services;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use base64::Engine;
use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::emulator::rss_kib;
use crate::load::{self, Conn, Operation, Outcome};
pub use ab::{run_ab, Ab};
use report::fmt_stats;
pub use report::{table, targets, Report, Row};
use services::{get_json, start_nginx, start_shoal, start_sushy_tools, system_paths, url_addr};

const USER: &str = "bench";
const PASSWORD: &str = "bench-Passw0rd";
/// The cost the issue asks for (and Debian's `htpasswd -B` default + 7).
const BCRYPT_COST: u32 = 12;

pub struct Options {
    pub emulator: PathBuf,
    /// Venv with sushy-tools and gunicorn; `None` skips sushy-tools.
    pub sushy_venv: Option<PathBuf>,
    /// Venv with virtualbmc (vbmcd, vbmc); `None` skips it.
    pub vbmc_venv: Option<PathBuf>,
    /// nginx binary; `None` skips it.
    pub nginx: Option<PathBuf>,
    pub systems: usize,
    pub clients: usize,
    pub duration: Duration,
    pub scale_systems: usize,
    /// BMC endpoints of their own in the rack run.
    pub rack_endpoints: usize,
    pub soak: Duration,
    pub out: PathBuf,
    /// The fleet run: Ironic's venv and the number of BMCs; `None` skips it.
    pub fleet: Option<(PathBuf, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    GetSystem,
    GetSystems,
    PatchBoot,
    Reset,
    Login,
}

impl Op {
    pub const ALL: [Op; 5] = [
        Op::GetSystem,
        Op::GetSystems,
        Op::PatchBoot,
        Op::Reset,
        Op::Login,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Op::GetSystem => "GET System",
            Op::GetSystems => "GET Systems",
            Op::PatchBoot => "PATCH Boot",
            Op::Reset => "POST Reset",
            Op::Login => "session login+logout",
        }
    }
}

/// One service under test: where it listens and its systems' paths.
struct Target {
    name: &'static str,
    addr: SocketAddr,
    systems: Vec<String>,
    basic: Option<String>,
}

fn basic_header() -> String {
    let t = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    format!("Basic {t}")
}

/// The operation `op` against `t`, for the load generator.
fn operation(op: Op, t: &Target) -> Operation {
    let systems = Arc::new(t.systems.clone());
    let auth = t.basic.clone();
    Arc::new(move |client, seq, conn: &mut Conn| {
        let systems = systems.clone();
        let auth = auth.clone();
        Box::pin(async move {
            let mut h: Vec<(&str, &str)> = vec![("accept", "application/json")];
            if let Some(a) = auth.as_deref() {
                h.push(("authorization", a));
            }
            let sys = &systems[client % systems.len()];
            let empty = Bytes::new();
            let (what, a) = match op {
                Op::GetSystem => (
                    "GET System",
                    conn.send(&Method::GET, sys, &h, &empty).await?,
                ),
                Op::GetSystems => (
                    "GET Systems",
                    conn.send(&Method::GET, "/redfish/v1/Systems", &h, &empty)
                        .await?,
                ),
                Op::PatchBoot => {
                    let target = if seq % 2 == 0 { "Pxe" } else { "Hdd" };
                    let body = json!({"Boot": {"BootSourceOverrideTarget": target,
                                               "BootSourceOverrideEnabled": "Once"}});
                    (
                        "PATCH System",
                        conn.send(&Method::PATCH, sys, &h, &Bytes::from(body.to_string()))
                            .await?,
                    )
                }
                Op::Reset => {
                    let body = Bytes::from_static(br#"{"ResetType": "On"}"#);
                    let path = format!("{sys}/Actions/ComputerSystem.Reset");
                    (
                        "POST Reset",
                        conn.send(&Method::POST, &path, &h, &body).await?,
                    )
                }
                Op::Login => {
                    let body = json!({"UserName": USER, "Password": PASSWORD}).to_string();
                    let a = conn
                        .send(
                            &Method::POST,
                            "/redfish/v1/SessionService/Sessions",
                            &h[..1],
                            &Bytes::from(body),
                        )
                        .await?;
                    if a.status != StatusCode::CREATED {
                        return Ok(Outcome::Wrong(format!(
                            "POST SessionService/Sessions answered {}",
                            a.status
                        )));
                    }
                    let (Some(loc), Some(tok)) = (
                        a.headers.get("location").and_then(|v| v.to_str().ok()),
                        a.headers.get("x-auth-token").and_then(|v| v.to_str().ok()),
                    ) else {
                        return Ok(Outcome::Wrong(
                            "a session without Location or X-Auth-Token".into(),
                        ));
                    };
                    let loc = loc.to_string();
                    let tok = tok.to_string();
                    (
                        "DELETE Session",
                        conn.send(&Method::DELETE, &loc, &[("x-auth-token", &tok)], &empty)
                            .await?,
                    )
                }
            };
            Ok(Outcome::success(&a, what))
        })
    })
}

/// The load generator's runtime: two workers, like the service's.
fn rt() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn progress(msg: &str) {
    eprintln!("bench: {msg}");
}

/// The comparison: every operation, without and with Basic auth.
pub fn compare(opts: &Options) -> Result<Vec<Row>> {
    let dir = &opts.out;
    let rt = rt()?;
    let mut rows = Vec::new();
    for auth in [false, true] {
        let shoal = start_shoal(&opts.emulator, dir, opts.systems, auth)?;
        let shoal_addr = url_addr(&shoal.url)?;
        let basic = auth.then(basic_header);
        let shoal_t = Target {
            name: "shoal",
            addr: shoal_addr,
            systems: rt.block_on(system_paths(shoal_addr, basic.as_deref()))?,
            basic: basic.clone(),
        };
        let sushy = match &opts.sushy_venv {
            Some(v) => {
                let (d, addr) = start_sushy_tools(v, dir, opts.systems, auth)?;
                let systems = rt.block_on(system_paths(addr, basic.as_deref()))?;
                Some((
                    d,
                    Target {
                        name: "sushy-tools",
                        addr,
                        systems,
                        basic: basic.clone(),
                    },
                ))
            }
            None => None,
        };
        let nginx = match (&opts.nginx, auth) {
            (Some(n), false) => {
                let (body, _) = rt.block_on(get_json(shoal_addr, &shoal_t.systems[0], None))?;
                Some(start_nginx(n, dir, &body)?)
            }
            _ => None,
        };
        for op in Op::ALL {
            let run = |t: &Target| {
                progress(&format!(
                    "{} {} ({}) ...",
                    t.name,
                    op.label(),
                    if auth { "Basic auth" } else { "no auth" }
                ));
                let s = rt.block_on(load::run(
                    t.addr,
                    opts.clients,
                    opts.duration,
                    operation(op, t),
                ));
                progress(&format!("  {}", fmt_stats(&s)));
                s
            };
            let s = run(&shoal_t);
            let sushy_s = sushy.as_ref().map(|(_, t)| run(t));
            let nginx_s = match (&nginx, op) {
                (Some((_, addr)), Op::GetSystem) => {
                    let t = Target {
                        name: "nginx",
                        addr: *addr,
                        systems: vec!["/system.json".into()],
                        basic: None,
                    };
                    Some(run(&t))
                }
                _ => None,
            };
            rows.push(Row {
                op,
                auth,
                shoal: s,
                sushy: sushy_s,
                nginx: nginx_s,
            });
        }
        drop(nginx);
        drop(sushy);
        drop(shoal);
    }
    Ok(rows)
}

/// Shoal with `scale_systems` systems: RSS and the latency of the
/// collection and of one system.
pub fn scale(opts: &Options) -> Result<(String, f64)> {
    let rt = rt()?;
    progress(&format!("shoal with {} systems ...", opts.scale_systems));
    let started = Instant::now();
    let emu = start_shoal(&opts.emulator, &opts.out, opts.scale_systems, false)?;
    let up = started.elapsed();
    let addr = url_addr(&emu.url)?;
    let systems = rt.block_on(system_paths(addr, None))?;
    let rss_idle = emu.rss_kib().unwrap_or(0);
    let t = Target {
        name: "shoal",
        addr,
        systems,
        basic: None,
    };
    let d = opts.duration.min(Duration::from_secs(5));
    let coll = rt.block_on(load::run(addr, 8, d, operation(Op::GetSystems, &t)));
    let one = rt.block_on(load::run(
        addr,
        opts.clients,
        d,
        operation(Op::GetSystem, &t),
    ));
    let rss_after = emu.rss_kib().unwrap_or(0);
    let text = format!(
        "{} systems in one process: up in {:.1} s; RSS {:.1} MiB idle, {:.1} MiB after load\n\
         GET Systems ({} members, 8 clients): {}\n\
         GET one System ({} clients): {}\n",
        t.systems.len(),
        up.as_secs_f64(),
        rss_idle as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        t.systems.len(),
        fmt_stats(&coll),
        opts.clients,
        fmt_stats(&one)
    );
    Ok((text, rss_idle.max(rss_after) as f64 / 1024.0))
}

/// A rack of BMCs in one process: `rack_endpoints` iDRAC endpoints, one
/// system each, each on its own loopback address (127.0.8.1, ...): the
/// time until all listen, RSS, and one GET of each BMC's System in turn
/// (as a driver polling its fleet does).
pub fn rack(opts: &Options) -> Result<String> {
    let n = opts.rack_endpoints;
    progress(&format!("shoal with {n} BMC endpoints of their own ..."));
    let mut cmd = std::process::Command::new(&opts.emulator);
    cmd.args(["--port", "0", "--fake-systems", &n.to_string()])
        .args([
            "--profile",
            "idrac9",
            "--endpoint-per-system",
            "127.0.8.1:0",
            // Each BMC's IPMI socket too (on 623 of its address), as a
            // rack's BMCs serve it: asked for, with the drivers' account.
            "--ipmi-user",
            &crate::driver::ipmi_user_flag(),
        ])
        .env("RUST_LOG", "warn");
    let started = Instant::now();
    let emu = crate::emulator::EmulatorProcess::spawn_endpoints(
        cmd,
        &opts.out.join("shoal-rack.log"),
        n,
    )?;
    let up = started.elapsed();
    let rss_idle = emu.rss_kib().unwrap_or(0);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut lat = Vec::with_capacity(n);
    let sweep = Instant::now();
    for url in &emu.endpoints {
        let t = Instant::now();
        let resp = agent
            .get(&format!("{url}/redfish/v1/Systems/System.Embedded.1"))
            .call()?;
        if resp.status().as_u16() != 200 {
            bail!("{url}: HTTP {}", resp.status().as_u16());
        }
        lat.push(t.elapsed());
    }
    let sweep = sweep.elapsed();
    let rss_after = emu.rss_kib().unwrap_or(0);
    lat.sort();
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    Ok(format!(
        "{n} BMC endpoints (idrac9, one system each, own address) in one process: up in {:.2} s; \
         RSS {:.1} MiB idle, {:.1} MiB after a sweep\n\
         one GET System.Embedded.1 on each, in turn (a new connection each): {:.2} s in all, p50 {:.2} ms, p99 {:.2} ms\n",
        up.as_secs_f64(),
        rss_idle as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        sweep.as_secs_f64(),
        pct(0.5),
        pct(0.99),
    ))
}

/// Counter increments with If-Match on one system's AssetTag from
/// `writers` concurrent clients while `clients` others GET at full load.
/// Every 2xx PATCH was applied to the value it read: the final value must
/// equal the number of successful PATCHes.
pub fn storm(opts: &Options) -> Result<String> {
    let rt = rt()?;
    progress("PATCH storm on one system under full GET load ...");
    let emu = start_shoal(&opts.emulator, &opts.out, opts.systems, false)?;
    let addr = url_addr(&emu.url)?;
    let systems = rt.block_on(system_paths(addr, None))?;
    let target = systems[0].clone();
    let load_t = Target {
        name: "shoal",
        addr,
        systems: systems.clone(),
        basic: None,
    };
    // Start from AssetTag "0".
    rt.block_on(async {
        let mut c = Conn::new(addr);
        let a = c
            .send(
                &Method::PATCH,
                &target,
                &[],
                &Bytes::from(r#"{"AssetTag": "0"}"#),
            )
            .await?;
        if !a.status.is_success() {
            bail!("reset AssetTag: {}", a.status);
        }
        Ok(())
    })?;
    let applied = Arc::new(AtomicU64::new(0));
    let conflicts = Arc::new(AtomicU64::new(0));
    let (a2, c2, tgt) = (applied.clone(), conflicts.clone(), target.clone());
    let increment: Operation = Arc::new(move |_, _, conn: &mut Conn| {
        let (applied, conflicts, target) = (a2.clone(), c2.clone(), tgt.clone());
        Box::pin(async move {
            let g = conn.send(&Method::GET, &target, &[], &Bytes::new()).await?;
            let v: Value = serde_json::from_slice(&g.body)?;
            let n: u64 = v["AssetTag"].as_str().unwrap_or("0").parse().unwrap_or(0);
            let tag = g
                .headers
                .get("etag")
                .and_then(|t| t.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = json!({"AssetTag": (n + 1).to_string()}).to_string();
            let p = conn
                .send(
                    &Method::PATCH,
                    &target,
                    &[("if-match", &tag)],
                    &Bytes::from(body),
                )
                .await?;
            match p.status {
                s if s.is_success() => {
                    applied.fetch_add(1, Ordering::SeqCst);
                    Ok(Outcome::Done)
                }
                StatusCode::PRECONDITION_FAILED => {
                    conflicts.fetch_add(1, Ordering::SeqCst);
                    Ok(Outcome::Done)
                }
                _ => Ok(Outcome::success(&p, "PATCH AssetTag")),
            }
        })
    });
    let d = opts.duration;
    let (reads, writes) = rt.block_on(async {
        let reads = tokio::spawn(load::run(
            addr,
            opts.clients,
            d,
            operation(Op::GetSystem, &load_t),
        ));
        let writes = tokio::spawn(load::run(addr, 8, d, increment));
        (reads.await, writes.await)
    });
    let (reads, writes) = (reads?, writes?);
    let (_, v) = rt.block_on(get_json(addr, &target, None))?;
    let final_value: u64 = v["AssetTag"]
        .as_str()
        .unwrap_or("")
        .parse()
        .unwrap_or(u64::MAX);
    let applied = applied.load(Ordering::SeqCst);
    let text =
        format!(
        "PATCH storm: 8 writers incrementing AssetTag with If-Match for {:.0} s beside {} readers \
         ({:.0} GET/s, p99 {} ms): {applied} PATCHes applied, {} refused with 412, {} errors; \
         final AssetTag {final_value}\n",
        d.as_secs_f64(),
        opts.clients,
        reads.rate(),
        reads.percentile_ms(99.0).map_or("-".into(), |v| format!("{v:.2}")),
        conflicts.load(Ordering::SeqCst),
        writes.errors,
    );
    if final_value != applied {
        bail!("lost update: {text}");
    }
    Ok(text)
}

/// Full load (GET System, PATCH Boot) for `soak`; RSS at start and end.
pub fn soak(opts: &Options) -> Result<String> {
    let rt = rt()?;
    progress(&format!("soak for {:.0} s ...", opts.soak.as_secs_f64()));
    let emu = start_shoal(&opts.emulator, &opts.out, opts.systems, false)?;
    let addr = url_addr(&emu.url)?;
    let t = Target {
        name: "shoal",
        addr,
        systems: rt.block_on(system_paths(addr, None))?,
        basic: None,
    };
    // Warm up so the start figure includes the allocator's working set.
    rt.block_on(load::run(
        addr,
        opts.clients,
        Duration::from_secs(1),
        operation(Op::GetSystem, &t),
    ));
    let pid = emu.pid();
    let start_rss = rss_kib(pid).unwrap_or(0);
    let half = opts.clients / 2;
    let (g, p) = rt.block_on(async {
        let g = tokio::spawn(load::run(
            addr,
            opts.clients - half,
            opts.soak,
            operation(Op::GetSystem, &t),
        ));
        let p = tokio::spawn(load::run(
            addr,
            half.max(1),
            opts.soak,
            operation(Op::PatchBoot, &t),
        ));
        (g.await, p.await)
    });
    let (g, p) = (g?, p?);
    let end_rss = rss_kib(pid).unwrap_or(0);
    Ok(format!(
        "soak: {:.0} s of GET System + PATCH Boot ({:.0} + {:.0} req/s, {} errors): \
         RSS {:.1} MiB at start, {:.1} MiB at end\n",
        opts.soak.as_secs_f64(),
        g.rate(),
        p.rate(),
        g.errors + p.errors,
        start_rss as f64 / 1024.0,
        end_rss as f64 / 1024.0
    ))
}

/// The events row alone.
pub fn run_events(opts: &Options) -> Result<Report> {
    std::fs::create_dir_all(&opts.out)?;
    Ok(Report {
        rows: Vec::new(),
        text: events::run(opts)?,
    })
}

pub fn run(opts: &Options) -> Result<Report> {
    std::fs::create_dir_all(&opts.out)?;
    let rows = compare(opts)?;
    let mut text = table(&rows, opts.clients, opts.duration);
    text.push('\n');
    let (scale_text, rss_mib) = scale(opts)?;
    text.push_str(&scale_text);
    text.push_str(&rack(opts)?);
    text.push_str(&ipmi::run(opts)?);
    text.push_str(&storm(opts)?);
    text.push_str(&events::run(opts)?);
    text.push_str(&soak(opts)?);
    if let Some((venv, n)) = &opts.fleet {
        text.push_str(&fleet::run(opts, venv, *n)?);
    }
    text.push('\n');
    text.push_str(&targets(&rows, opts.clients, opts.scale_systems, rss_mib));
    Ok(Report { rows, text })
}
