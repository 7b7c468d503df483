//! `shoal-harness bench`: shoal-emulator (fake backend) side by side with
//! sushy-tools 2.2.0 (its fake driver, under gunicorn as devstack runs it)
//! and nginx serving the same System JSON as a static file, on loopback,
//! driven by the same load generator (`load.rs`).
//!
//! It prints, per operation and auth mode, requests/s, p50 and p99 and the
//! ratio shoal/sushy-tools (and shoal/nginx for GET System); then shoal at
//! scale (10,000 systems: RSS and latencies), a PATCH storm under full load
//! that must lose no update, and a soak whose RSS at start and end it
//! reports. Figures are printed, never asserted; a lost update is an error.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::emulator::{rss_kib, EmulatorProcess};
use crate::load::{self, Conn, Operation, Outcome, Stats};

const USER: &str = "bench";
const PASSWORD: &str = "bench-Passw0rd";
/// The cost the issue asks for (and Debian's `htpasswd -B` default + 7).
const BCRYPT_COST: u32 = 12;

pub struct Options {
    pub emulator: PathBuf,
    /// Venv with sushy-tools and gunicorn; `None` skips sushy-tools.
    pub sushy_venv: Option<PathBuf>,
    /// nginx binary; `None` skips it.
    pub nginx: Option<PathBuf>,
    pub systems: usize,
    pub clients: usize,
    pub duration: Duration,
    pub scale_systems: usize,
    pub soak: Duration,
    pub out: PathBuf,
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

/// A child process started here, stopped by its pid on drop.
struct Daemon {
    child: Child,
    name: &'static str,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // gunicorn and nginx stop their workers on SIGTERM.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::warn!(name = self.name, "did not stop on SIGTERM; killing");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn wait_listening(addr: SocketAddr, what: &str, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!("{what} exited ({status}); see {}", log.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what} did not listen on {addr}; see {}", log.display())
}

fn htpasswd(dir: &Path) -> Result<PathBuf> {
    let p = dir.join("htpasswd");
    std::fs::write(
        &p,
        format!("{USER}:{}\n", bcrypt::hash(PASSWORD, BCRYPT_COST)?),
    )?;
    Ok(p)
}

fn start_shoal(opts: &Options, dir: &Path, systems: usize, auth: bool) -> Result<EmulatorProcess> {
    let mut inv = String::new();
    if auth {
        writeln!(
            inv,
            "[auth]\nhtpasswd = {:?}",
            htpasswd(dir)?.display().to_string()
        )?;
    }
    for i in 0..systems {
        writeln!(inv, "[[systems]]\nname = \"bench-{i}\"\npower = \"On\"")?;
    }
    let cfg = dir.join(format!("shoal-{systems}-{auth}.toml"));
    std::fs::write(&cfg, inv)?;
    let mut cmd = Command::new(&opts.emulator);
    cmd.arg("--config")
        .arg(&cfg)
        .args(["--port", "0"])
        .env("RUST_LOG", "warn");
    EmulatorProcess::spawn(cmd, &dir.join(format!("shoal-{systems}-{auth}.log")))
}

fn start_sushy_tools(
    venv: &Path,
    dir: &Path,
    systems: usize,
    auth: bool,
) -> Result<(Daemon, SocketAddr)> {
    let mut conf =
        String::from("SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_FAKE_SYSTEMS = [\n");
    for i in 0..systems {
        let uuid = uuid_of(i);
        writeln!(
            conf,
            "    {{'uuid': '{uuid}', 'name': 'bench-{i}', 'power_state': 'On', \
             'nics': [{{'mac': '52:54:00:00:{:02x}:{:02x}', 'ip': '198.51.100.{}'}}]}},",
            i / 256,
            i % 256,
            i % 250 + 1
        )?;
    }
    conf.push_str("]\n");
    let state = dir.join(format!("sushy-state-{auth}"));
    let _ = std::fs::remove_dir_all(&state);
    writeln!(
        conf,
        "SUSHY_EMULATOR_STATE_DIR = {:?}",
        state.display().to_string()
    )?;
    if auth {
        writeln!(
            conf,
            "SUSHY_EMULATOR_AUTH_FILE = {:?}",
            htpasswd(dir)?.display().to_string()
        )?;
    }
    let cfg = dir.join(format!("sushy-tools-{auth}.py"));
    std::fs::write(&cfg, conf)?;
    let port = free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let log = dir.join(format!("sushy-tools-{auth}.log"));
    let mut child = Command::new(venv.join("bin/gunicorn"))
        .args(["--workers", "2", "--threads", "2", "--bind"])
        .arg(addr.to_string())
        .args(["--log-level", "warning", "sushy_tools.emulator.main:app"])
        .env("SUSHY_EMULATOR_CONFIG", &cfg)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::options().append(true).open(&log)?)
        .spawn()
        .context("starting gunicorn (sushy-tools)")?;
    wait_listening(addr, "sushy-tools", &mut child, &log)?;
    Ok((
        Daemon {
            child,
            name: "sushy-tools",
        },
        addr,
    ))
}

fn uuid_of(i: usize) -> String {
    format!("5ea10000-0000-4000-8000-{i:012x}")
}

fn start_nginx(nginx: &Path, dir: &Path, body: &[u8]) -> Result<(Daemon, SocketAddr)> {
    let root = dir.join("nginx-root");
    std::fs::create_dir_all(root.join("logs"))?;
    std::fs::write(root.join("system.json"), body)?;
    let port = free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    // As many workers as cores, every request served from the page cache,
    // keep-alive without limit: the ceiling for HTTP on this machine.
    let conf = format!(
        "daemon off;\nmaster_process on;\nworker_processes auto;\nuser root;\npid {root}/nginx.pid;\n\
         error_log {root}/logs/error.log warn;\nevents {{ worker_connections 4096; }}\n\
         http {{\n  access_log off;\n  keepalive_requests 100000000;\n  keepalive_timeout 60s;\n\
         types {{ application/json json; }}\n  server {{\n    listen {addr};\n    root {root};\n\
         location / {{ try_files $uri =404; }}\n  }}\n}}\n",
        root = root.display()
    );
    let cfg = root.join("nginx.conf");
    std::fs::write(&cfg, conf)?;
    let log = root.join("logs/stderr.log");
    let mut child = Command::new(nginx)
        .arg("-c")
        .arg(&cfg)
        .arg("-p")
        .arg(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .context("starting nginx")?;
    wait_listening(addr, "nginx", &mut child, &log)?;
    Ok((
        Daemon {
            child,
            name: "nginx",
        },
        addr,
    ))
}

/// GET with the load generator's client (setup and checks, not timed).
async fn get_json(addr: SocketAddr, path: &str, basic: Option<&str>) -> Result<(Bytes, Value)> {
    let mut c = Conn::new(addr);
    let mut h = vec![("accept", "application/json")];
    if let Some(b) = basic {
        h.push(("authorization", b));
    }
    let a = c.send(&Method::GET, path, &h, &Bytes::new()).await?;
    if a.status != StatusCode::OK {
        bail!("GET {path}: {}", a.status);
    }
    let v = serde_json::from_slice(&a.body).with_context(|| format!("GET {path}: not JSON"))?;
    Ok((a.body, v))
}

async fn system_paths(addr: SocketAddr, basic: Option<&str>) -> Result<Vec<String>> {
    let (_, v) = get_json(addr, "/redfish/v1/Systems", basic).await?;
    let paths: Vec<String> = v["Members"]
        .as_array()
        .context("no Members")?
        .iter()
        .filter_map(|m| m["@odata.id"].as_str().map(str::to_string))
        .collect();
    if paths.is_empty() {
        bail!("no systems");
    }
    Ok(paths)
}

fn url_addr(url: &str) -> Result<SocketAddr> {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .with_context(|| format!("address of {url}"))
}

/// One row of the comparison table.
#[derive(Debug, Clone)]
pub struct Row {
    pub op: Op,
    pub auth: bool,
    pub shoal: Stats,
    pub sushy: Option<Stats>,
    pub nginx: Option<Stats>,
}

pub struct Report {
    pub rows: Vec<Row>,
    pub text: String,
}

fn fmt_stats(s: &Stats) -> String {
    let ms = |p| s.percentile_ms(p).map_or("-".into(), |v| format!("{v:.2}"));
    let mut out = format!("{:>10.0} {:>8} {:>8}", s.rate(), ms(50.0), ms(99.0));
    if s.errors > 0 {
        write!(out, " ({} errors)", s.errors).ok();
    }
    out
}

fn ratio(a: &Stats, b: Option<&Stats>) -> String {
    match b {
        Some(b) if b.ok > 0 => format!("{:.0}x", a.rate() / b.rate()),
        Some(_) => "∞ (0 ok)".into(),
        None => "-".into(),
    }
}

/// The first error of a run that had only errors, for the report.
fn why_failed(s: &Stats) -> Option<String> {
    (s.ok == 0 && s.errors > 0).then(|| s.first_error.clone().unwrap_or_default())
}

pub fn table(rows: &[Row], clients: usize, duration: Duration) -> String {
    let mut t = format!(
        "{clients} keep-alive clients, {:.0} s per row; req/s, p50 and p99 in ms\n\n",
        duration.as_secs_f64()
    );
    writeln!(
        t,
        "| operation | auth | shoal req/s | p50 | p99 | sushy-tools req/s | p50 | p99 | shoal/sushy-tools |"
    )
    .ok();
    writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|").ok();
    let cells = |s: &Stats| {
        let ms = |p| s.percentile_ms(p).map_or("-".into(), |v| format!("{v:.2}"));
        format!("{:.0} | {} | {}", s.rate(), ms(50.0), ms(99.0))
    };
    for r in rows {
        let sushy = match &r.sushy {
            Some(s) if s.ok > 0 => cells(s),
            Some(s) => format!("0 ({} errors) | - | -", s.errors),
            None => "- | - | -".into(),
        };
        writeln!(
            t,
            "| {} | {} | {} | {} | {} |",
            r.op.label(),
            if r.auth { "Basic (bcrypt 12)" } else { "none" },
            cells(&r.shoal),
            sushy,
            ratio(&r.shoal, r.sushy.as_ref())
        )
        .ok();
    }
    for r in rows {
        if let Some(n) = &r.nginx {
            writeln!(
                t,
                "\nnginx, the same System JSON as a static file: {:.0} req/s, p50 {} ms, p99 {} ms; shoal/nginx {:.2}",
                n.rate(),
                n.percentile_ms(50.0).map_or("-".into(), |v| format!("{v:.2}")),
                n.percentile_ms(99.0).map_or("-".into(), |v| format!("{v:.2}")),
                r.shoal.rate() / n.rate().max(1e-9)
            )
            .ok();
        }
    }
    for r in rows {
        if let Some(why) = r.sushy.as_ref().and_then(why_failed) {
            writeln!(
                t,
                "sushy-tools, {} ({}): every request failed: {why}",
                r.op.label(),
                if r.auth { "auth" } else { "no auth" }
            )
            .ok();
        }
    }
    t
}

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
        let shoal = start_shoal(opts, dir, opts.systems, auth)?;
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
    let emu = start_shoal(opts, &opts.out, opts.scale_systems, false)?;
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

/// Counter increments with If-Match on one system's AssetTag from
/// `writers` concurrent clients while `clients` others GET at full load.
/// Every 2xx PATCH was applied to the value it read: the final value must
/// equal the number of successful PATCHes.
pub fn storm(opts: &Options) -> Result<String> {
    let rt = rt()?;
    progress("PATCH storm on one system under full GET load ...");
    let emu = start_shoal(opts, &opts.out, opts.systems, false)?;
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
    let emu = start_shoal(opts, &opts.out, opts.systems, false)?;
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

pub fn run(opts: &Options) -> Result<Report> {
    std::fs::create_dir_all(&opts.out)?;
    let rows = compare(opts)?;
    let mut text = table(&rows, opts.clients, opts.duration);
    text.push('\n');
    let (scale_text, rss_mib) = scale(opts)?;
    text.push_str(&scale_text);
    text.push_str(&storm(opts)?);
    text.push_str(&soak(opts)?);
    text.push('\n');
    text.push_str(&targets(&rows, opts.clients, opts.scale_systems, rss_mib));
    Ok(Report { rows, text })
}

/// The issue's targets beside what was measured. Figures, not assertions:
/// a missed target is reported, never turned into a failure.
pub fn targets(rows: &[Row], clients: usize, scale_systems: usize, rss_mib: f64) -> String {
    let mut t = String::from("targets (this machine, load generator included):\n");
    let mut line = |what: String, measured: String, met: Option<bool>| {
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        writeln!(t, "- {what}: {measured}: {verdict}").ok();
    };
    for r in rows {
        let mode = if r.auth { "Basic auth" } else { "no auth" };
        let want = if r.auth { 1000.0 } else { 40.0 };
        let (measured, met) = match &r.sushy {
            Some(s) if s.ok > 0 => {
                let x = r.shoal.rate() / s.rate();
                (format!("{x:.0}x"), Some(x >= want))
            }
            Some(_) => ("sushy-tools answered none".into(), None),
            None => ("sushy-tools not run".into(), None),
        };
        line(
            format!("{} ({mode}) >= {want:.0}x sushy-tools", r.op.label()),
            measured,
            met,
        );
    }
    if let Some(r) = rows.iter().find(|r| r.nginx.is_some()) {
        let n = r.nginx.as_ref().expect("found");
        let x = r.shoal.rate() / n.rate().max(1e-9);
        line(
            "GET System >= 0.5x nginx".into(),
            format!("{x:.2}x"),
            Some(x >= 0.5),
        );
    }
    for r in rows {
        let p99 = r.shoal.percentile_ms(99.0);
        line(
            format!(
                "{} ({}) p99 < 5 ms at {clients} clients",
                r.op.label(),
                if r.auth { "Basic auth" } else { "no auth" }
            ),
            p99.map_or("-".into(), |v| format!("{v:.2} ms")),
            p99.map(|v| v < 5.0),
        );
    }
    line(
        format!("RSS with {scale_systems} systems < 200 MiB"),
        format!("{rss_mib:.1} MiB"),
        Some(rss_mib < 200.0),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rate: u64, p: u32) -> Stats {
        Stats {
            ok: rate,
            errors: 0,
            first_error: None,
            elapsed: Duration::from_secs(1),
            latencies_us: vec![p; 10],
        }
    }

    #[test]
    fn the_table_shows_ratios_and_failures() {
        let rows = vec![
            Row {
                op: Op::GetSystem,
                auth: false,
                shoal: stats(40_000, 1500),
                sushy: Some(stats(1000, 60_000)),
                nginx: Some(stats(80_000, 800)),
            },
            Row {
                op: Op::Login,
                auth: true,
                shoal: stats(5000, 3000),
                sushy: Some(Stats {
                    errors: 7,
                    first_error: Some("404".into()),
                    elapsed: Duration::from_secs(1),
                    ..Stats::default()
                }),
                nginx: None,
            },
        ];
        let t = table(&rows, 64, Duration::from_secs(10));
        assert!(
            t.contains("| GET System | none | 40000 | 1.50 | 1.50 | 1000 | 60.00 | 60.00 | 40x |"),
            "{t}"
        );
        assert!(t.contains("shoal/nginx 0.50"), "{t}");
        assert!(t.contains("every request failed: 404"), "{t}");
        let goals = targets(&rows, 64, 10_000, 150.0);
        for want in [
            "- GET System (no auth) >= 40x sushy-tools: 40x: met",
            "- session login+logout (Basic auth) >= 1000x sushy-tools: sushy-tools answered none: not measured",
            "- GET System >= 0.5x nginx: 0.50x: met",
            "- GET System (no auth) p99 < 5 ms at 64 clients: 1.50 ms: met",
            "- RSS with 10000 systems < 200 MiB: 150.0 MiB: met",
        ] {
            assert!(goals.contains(want), "{want} not in\n{goals}");
        }
        let slow = targets(&rows[..1], 64, 10, 250.0);
        assert!(slow.contains("250.0 MiB: MISSED"), "{slow}");
    }
}
