//! The fleet: one Shoal process with N BMC endpoints of their own (fake
//! backend, a mix of vendor profiles) and the standalone Ironic enrolling
//! all of them with the redfish hardware type, taking them through
//! manage (power synced), inspect (redfish) and provide (no cleaning) to
//! `available` (`drivers/ironic_fleet.py`); then the same with sushy-tools'
//! fake driver (one gunicorn process with N systems, as the bench runs
//! it). Everything runs in a network namespace of its own, on its
//! loopback. Reported: Ironic's wall time per phase, the BMC side's CPU
//! time and RSS, and the ratio of the two emulators' CPU.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::services::{fake_systems_conf, gunicorn, Daemon};
use super::Options;
use crate::emulator::{rss_kib, EmulatorProcess};
use crate::ironic::{Ironic, Layout};
use crate::lock;

/// The profiles the fleet's BMCs cycle through.
const PROFILES: &[&str] = &["generic", "idrac9", "ilo5", "supermicro-x12", "lenovo-xcc"];
/// The first endpoint's address; the next ones count up.
const FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 10, 1);
const SUSHY_PORT: u16 = 8100;
const IRONIC_PORT: u16 = 16385;
/// Ironic's power-sync period in the fleet: short enough for several
/// loops over every node within one run (its default is 120 s).
const POWER_SYNC_SECS: u64 = 30;

/// sushy-tools' gunicorn while it runs, for `stop_on_signal` (the
/// emulator and Ironic have their own ways to go with this process).
static GUNICORN: std::sync::Mutex<Option<u32>> = std::sync::Mutex::new(None);

/// Ctrl-C or SIGTERM during the fleet run: Ironic, sushy-tools and the
/// namespace go before this process does (a signal's exit skips the
/// drops).
fn stop_on_signal(ns: String) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(crate::lab::interrupted());
        eprintln!("interrupted: stopping the fleet's Ironic, sushy-tools and namespace");
        crate::ironic::stop_all();
        if let Some(pid) = *lock(&GUNICORN) {
            // SAFETY: kill(2) on the pid of a child of this process.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        crate::netns::delete(&ns);
        std::process::exit(130);
    });
}

/// The namespace, deleted when dropped.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        crate::netns::delete(&self.0);
    }
}

/// A process and its descendants, from `/proc`.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        all.push(p);
        for t in std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
        {
            let Ok(t) = t else { continue };
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                todo.extend(c.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
            }
        }
    }
    all
}

/// CPU seconds (user + system) a process and its descendants have used.
fn cpu_secs(pid: u32) -> f64 {
    let tick = 100.0; // USER_HZ on Linux
    let ticks: u64 = tree(pid)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .map(|stat| {
            // The fields after the command (which may hold spaces), whose
            // 12th and 13th are utime and stime.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let f: Vec<&str> = rest.split_whitespace().collect();
            [11, 12]
                .iter()
                .filter_map(|&i| f.get(i)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum();
    ticks as f64 / tick
}

/// RSS in MiB of a process and its descendants.
fn rss_mib(pid: u32) -> f64 {
    let kib: u64 = tree(pid).into_iter().filter_map(rss_kib).sum();
    kib as f64 / 1024.0
}

/// One emulator's run: Ironic's figures and the BMC side's.
struct Run {
    fleet: Value,
    /// The BMC side's CPU seconds over the whole run.
    cpu: f64,
    /// Its CPU seconds within each phase, by the phase's name.
    phase_cpu: Vec<(String, f64)>,
    rss: f64,
    /// Ironic's power-sync loops over the fleet: how many ran, and the
    /// last one's wall time (its `_sync_power_states` logs each at debug).
    power_sync: Option<(usize, f64)>,
    /// The requests Ironic sent the BMCs (sushy logs each at debug).
    requests: usize,
}

/// The requests sushy sent from Ironic, by its debug lines
/// (`HTTP request: GET http://…`).
fn requests(log: &str) -> usize {
    log.lines().filter(|l| l.contains("HTTP request: ")).count()
}

/// The power-sync loops in an Ironic log: how many, and the last one's
/// seconds.
fn power_sync(log: &str) -> Option<(usize, f64)> {
    let secs: Vec<f64> = log
        .lines()
        .filter_map(|l| {
            // "... Completed power state sync operation, evaluated N nodes
            // with M workers in S seconds <function> <source file>"
            let (_, tail) = l.split_once("Completed power state sync operation")?;
            let (_, after) = tail.split_once(" in ")?;
            after.split_whitespace().next()?.parse().ok()
        })
        .collect();
    Some((secs.len(), *secs.last()?))
}

/// Ironic over the nodes in `nodes.json`, the BMC side being `pid`.
fn drive(ns: &str, venv: &Path, dir: &Path, nodes: &[Value], pid: u32) -> Result<Run> {
    let file = dir.join("nodes.json");
    std::fs::write(&file, serde_json::to_vec_pretty(nodes)?)?;
    let layout = Layout {
        dir: dir.join("ironic"),
        www: dir.join("www"),
        http_url: "http://127.0.0.1:9".into(),
        verify_ca: None,
        tftp_server: "127.0.0.1".into(),
        api_port: IRONIC_PORT,
        console_port: IRONIC_PORT + 1,
        agent: None,
        ilo: false,
        basic_auth: None,
        power_sync_secs: Some(POWER_SYNC_SECS),
    };
    std::fs::create_dir_all(&layout.www)?;
    let ironic = Ironic::start(ns, Some(venv), &layout)?;
    let cpu0 = cpu_secs(pid);
    let python = crate::ironic::python(Some(venv))?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers/ironic_fleet.py");
    let log = dir.join("fleet.log");
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(python)
        .arg(script)
        .args(["--api", &ironic.api, "--nodes"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .context("running drivers/ironic_fleet.py")?;
    // The BMC side's CPU is read as each phase begins and ends.
    let mut stdout = String::new();
    let mut phase_cpu = Vec::new();
    let mut begun = None;
    if let Some(out) = child.stdout.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines() {
            let line = line?;
            if let Some(mark) = line.strip_prefix("PHASE ") {
                match mark.rsplit_once(' ') {
                    Some((name, "begin")) => begun = Some((name.to_string(), cpu_secs(pid))),
                    Some((name, "end")) => {
                        if let Some((b, at)) = begun.take().filter(|(b, _)| b == name) {
                            phase_cpu.push((b, cpu_secs(pid) - at));
                        }
                    }
                    _ => {}
                }
            }
            stdout.push_str(&line);
            stdout.push('\n');
        }
    }
    child.wait()?;
    let cpu = cpu_secs(pid) - cpu0;
    let rss = rss_mib(pid);
    let errors = std::fs::read(&log).unwrap_or_default();
    std::fs::write(&log, [stdout.as_bytes(), &errors].concat())?;
    drop(ironic);
    let log = std::fs::read_to_string(layout.dir.join("ironic.log")).unwrap_or_default();
    let power_sync = power_sync(&log);
    let requests = requests(&log);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("FLEET "))
        .with_context(|| {
            format!(
                "ironic_fleet.py printed no result; see {}",
                dir.join("fleet.log").display()
            )
        })?;
    Ok(Run {
        fleet: serde_json::from_str(line)?,
        cpu,
        phase_cpu,
        rss,
        power_sync,
        requests,
    })
}

fn shoal(opts: &Options, ns: &str, dir: &Path, n: usize) -> Result<(EmulatorProcess, Vec<Value>)> {
    let mut inv = String::new();
    for i in 0..n {
        writeln!(
            inv,
            "[[systems]]\nname = \"fleet-{i}\"\npower = \"Off\"\nprofile = \"{}\"",
            PROFILES[i % PROFILES.len()]
        )?;
    }
    let cfg = dir.join("shoal.toml");
    std::fs::write(&cfg, inv)?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(&opts.emulator)
        .arg("--config")
        .arg(&cfg)
        .args(["--port", "0", "--ipmi-port", "0", "--endpoint-per-system"])
        .arg(format!("{FIRST}:8000"))
        .env("RUST_LOG", "warn");
    let emu = EmulatorProcess::spawn_endpoints(cmd, &dir.join("shoal.log"), n)?;
    // Each BMC's one system, as an operator enrolls it (metal3's BMC
    // addresses name the system): the Ids differ by vendor.
    let addrs: Vec<SocketAddr> = (0..n)
        .map(|i| (Ipv4Addr::from(u32::from(FIRST) + i as u32), 8000).into())
        .collect();
    let systems = crate::netns::inside(ns, move || {
        addrs
            .into_iter()
            .map(|a| {
                let mut c = crate::fuzz::http::Client::new(a, Duration::from_secs(10));
                let r = c
                    .send(&crate::fuzz::http::Req::new("GET", "/redfish/v1/Systems"))
                    .map_err(|e| anyhow::anyhow!("{a}: {e:?}"))?;
                let id = r
                    .json()
                    .and_then(|j| j["Members"][0]["@odata.id"].as_str().map(str::to_string))
                    .with_context(|| format!("{a}: no system in /redfish/v1/Systems"))?;
                Ok((a, id))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let nodes = systems
        .into_iter()
        .enumerate()
        .map(|(i, (a, id))| {
            serde_json::json!({
                "name": format!("shoal-{i}"),
                "address": format!("http://{a}"),
                "system_id": id,
                "username": "admin",
                "password": "password",
            })
        })
        .collect();
    Ok((emu, nodes))
}

/// sushy-tools' fake driver with `n` systems under gunicorn, inside `ns`.
fn sushy_tools(venv: &Path, ns: &str, dir: &Path, n: usize) -> Result<(Daemon, Vec<Value>)> {
    let uuid = |i: usize| format!("f1ee7000-0000-4000-8000-{i:012x}");
    let conf = fake_systems_conf(n, uuid, "fleet", "Off", &dir.join("sushy-state"), None)?;
    let cfg = dir.join("sushy-tools.py");
    std::fs::write(&cfg, conf)?;
    let addr: SocketAddr = ([127, 0, 0, 1], SUSHY_PORT).into();
    let daemon = gunicorn(venv, Some(ns), addr, &cfg, &dir.join("sushy-tools.log"))?;
    let nodes = (0..n)
        .map(|i| {
            serde_json::json!({
                "name": format!("sushy-{i}"),
                "address": format!("http://127.0.0.1:{SUSHY_PORT}"),
                "system_id": format!("/redfish/v1/Systems/{}", uuid(i)),
                "username": "admin",
                "password": "password",
            })
        })
        .collect();
    Ok((daemon, nodes))
}

fn phase_line(name: &str, r: &Run, n: usize) -> String {
    let mut s = format!("  {name}:");
    for p in ["enroll", "manage", "inspect", "provide"] {
        let v = &r.fleet[p];
        if v.is_null() {
            write!(s, " {p} not reached;").ok();
            continue;
        }
        let cpu = r
            .phase_cpu
            .iter()
            .find(|(name, _)| name == p)
            .map_or(String::new(), |(_, c)| format!(", {c:.2} CPU s"));
        write!(
            s,
            " {p} {:.1} s{cpu} ({}/{n}{});",
            v["secs"].as_f64().unwrap_or(0.0),
            v["ok"].as_u64().unwrap_or(0),
            match v["failed"].as_u64().unwrap_or(0) + v["stuck"].as_u64().unwrap_or(0) {
                0 => String::new(),
                bad => {
                    let first = v["errors"][0].as_str().unwrap_or("stuck");
                    let cut: String = first.chars().take(120).collect();
                    format!(", {bad} not; first: {cut}")
                }
            }
        )
        .ok();
    }
    write!(
        s,
        " BMC side {:.1} CPU s for {} requests ({}), RSS {:.1} MiB",
        r.cpu,
        r.requests,
        per_request(r),
        r.rss
    )
    .ok();
    match r.power_sync {
        Some((loops, last)) => write!(
            s,
            "; Ironic's power sync over the fleet: {last:.2} s (the last of {loops} loops)"
        ),
        None => write!(s, "; no power-sync loop ran"),
    }
    .ok();
    s
}

/// The fleet run; its lines for the report.
pub fn run(opts: &Options, ironic_venv: &Path, n: usize) -> Result<String> {
    let ns = Namespace(format!("shoal-fleet-{}", std::process::id()));
    crate::netns::create(&ns.0)?;
    stop_on_signal(ns.0.clone());
    let dir = opts.out.join("fleet");
    let _ = std::fs::remove_dir_all(&dir);
    let mut text = format!(
        "fleet: {n} BMCs, the standalone Ironic enrolling them (redfish hardware type: \
         enroll, manage, inspect, provide without cleaning)\n"
    );
    super::progress(&format!(
        "fleet: Shoal with {n} BMC endpoints and Ironic ..."
    ));
    let shoal_dir = dir.join("shoal");
    std::fs::create_dir_all(&shoal_dir)?;
    let (emu, nodes) = shoal(opts, &ns.0, &shoal_dir, n)?;
    let ours = drive(&ns.0, ironic_venv, &shoal_dir, &nodes, emu.pid())?;
    drop(emu);
    text.push_str(&phase_line("shoal", &ours, n));
    text.push('\n');
    // The flow itself must keep working (what ci/test's small fleet is
    // for); sushy-tools' shortfalls are figures, not failures.
    if ours.fleet["provide"]["ok"].as_u64() != Some(n as u64) {
        bail!(
            "not every Shoal BMC reached available under Ironic:\n{text}see {}",
            shoal_dir.join("fleet.log").display()
        );
    }
    if let Some(venv) = &opts.sushy_venv {
        super::progress(&format!(
            "fleet: sushy-tools with {n} systems and Ironic ..."
        ));
        let sushy_dir = dir.join("sushy-tools");
        std::fs::create_dir_all(&sushy_dir)?;
        let (daemon, nodes) = sushy_tools(venv, &ns.0, &sushy_dir, n)?;
        *lock(&GUNICORN) = Some(daemon.pid());
        let theirs = drive(&ns.0, ironic_venv, &sushy_dir, &nodes, daemon.pid());
        *lock(&GUNICORN) = None;
        drop(daemon);
        // sushy-tools' run failing is a figure of the report too; Shoal's
        // line stays.
        match theirs {
            Ok(theirs) => {
                text.push_str(&phase_line("sushy-tools", &theirs, n));
                text.push('\n');
                text.push_str(&cpu_ratio(&ours, &theirs, n));
                text.push('\n');
            }
            Err(e) => writeln!(text, "  sushy-tools: the run did not finish: {e:#}")?,
        }
    }
    Ok(text)
}

/// CPU per request served, in µs.
fn per_request(r: &Run) -> String {
    match r.requests {
        0 => "no request counted".into(),
        n => format!("{:.0} µs CPU each", r.cpu * 1e6 / n as f64),
    }
}

/// The two emulators' BMC-side CPU compared over the same work: the
/// phases every node of both finished, per request served, and the whole
/// run.
fn cpu_ratio(ours: &Run, theirs: &Run, n: usize) -> String {
    let finished = |r: &Run, p: &str| r.fleet[p]["ok"].as_u64() == Some(n as u64);
    let cpu = |r: &Run, p: &str| {
        r.phase_cpu
            .iter()
            .find(|(name, _)| name == p)
            .map(|(_, c)| *c)
    };
    let mut same = Vec::new();
    let (mut a, mut b) = (0.0, 0.0);
    for p in ["enroll", "manage", "inspect", "provide"] {
        if let (true, true, Some(x), Some(y)) = (
            finished(ours, p),
            finished(theirs, p),
            cpu(ours, p),
            cpu(theirs, p),
        ) {
            same.push(p);
            a += x;
            b += y;
        }
    }
    let ratio = |theirs: f64, ours: f64| {
        if ours > 0.0 {
            format!("{:.1}x", theirs / ours)
        } else {
            // Under one clock tick: the ratio is a bound.
            format!("over {:.0}x", theirs / 0.01)
        }
    };
    let mut s = String::from("  BMC-side CPU, sushy-tools/shoal: ");
    if same.is_empty() {
        s.push_str("no phase finished on both");
    } else {
        write!(
            s,
            "{} over the phases both finished ({}: {b:.2} against {a:.2} CPU s)",
            ratio(b, a),
            same.join(", ")
        )
        .ok();
    }
    if ours.requests > 0 && theirs.requests > 0 && ours.cpu > 0.0 {
        let each = |r: &Run| r.cpu / r.requests as f64;
        write!(
            s,
            "; {:.1}x per request served ({} against {})",
            each(theirs) / each(ours),
            per_request(theirs),
            per_request(ours)
        )
        .ok();
    }
    write!(
        s,
        "; {} over the whole run{}",
        ratio(theirs.cpu, ours.cpu),
        if same.len() == 4 {
            ""
        } else {
            " (sushy-tools' nodes did not all reach available: over less work)"
        }
    )
    .ok();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fleet: Value, phase_cpu: &[(&str, f64)], cpu: f64) -> Run {
        Run {
            fleet,
            cpu,
            phase_cpu: phase_cpu.iter().map(|(p, c)| (p.to_string(), *c)).collect(),
            rss: 1.0,
            power_sync: None,
            requests: 0,
        }
    }

    #[test]
    fn requests_are_counted_from_sushys_debug_lines() {
        let log =
            "2026 DEBUG sushy.connector [-] HTTP request: GET http://127.0.10.4:8000/redfish/v1/; \
                   headers: {}\nother\n2026 DEBUG sushy.connector [-] HTTP request: POST \
                   http://127.0.10.4:8000/redfish/v1/SessionService/Sessions; headers\n";
        assert_eq!(requests(log), 2);
        let mut a = run(serde_json::json!({}), &[], 0.5);
        a.requests = 1000;
        let mut b = run(serde_json::json!({}), &[], 2.0);
        b.requests = 200;
        assert_eq!(per_request(&a), "500 µs CPU each");
        let line = cpu_ratio(&a, &b, 3);
        assert!(
            line.contains("20.0x per request served (10000 µs CPU each against 500 µs CPU each)"),
            "{line}"
        );
    }

    #[test]
    fn cpu_is_compared_over_the_phases_both_finished() {
        let all = serde_json::json!({
            "enroll": {"ok": 3}, "manage": {"ok": 3}, "inspect": {"ok": 3}, "provide": {"ok": 3}
        });
        let part = serde_json::json!({
            "enroll": {"ok": 3}, "manage": {"ok": 3}, "inspect": {"ok": 0, "failed": 3}
        });
        let ours = run(
            all,
            &[
                ("enroll", 0.1),
                ("manage", 0.2),
                ("inspect", 0.3),
                ("provide", 0.1),
            ],
            0.7,
        );
        let theirs = run(
            part,
            &[("enroll", 0.4), ("manage", 2.6), ("inspect", 0.5)],
            3.5,
        );
        let line = cpu_ratio(&ours, &theirs, 3);
        assert!(
            line.contains("10.0x over the phases both finished (enroll, manage: 3.00 against 0.30"),
            "{line}"
        );
        assert!(
            line.contains("5.0x over the whole run (sushy-tools'"),
            "{line}"
        );
        // Under a clock tick on our side: a bound, not a division by zero.
        let idle = run(
            serde_json::json!({"enroll": {"ok": 3}}),
            &[("enroll", 0.0)],
            0.0,
        );
        let line = cpu_ratio(&idle, &theirs, 3);
        assert!(line.contains("over 40x over the phases"), "{line}");
    }

    #[test]
    fn power_sync_loops_are_read_from_ironics_debug_lines() {
        let log = "2026-12-05 00:00:01.1 12 DEBUG ironic.conductor.manager [-] Completed power \
                   state sync operation, evaluated 0 nodes with 0 workers in 0.01 seconds\n\
                   x\n2026-12-05 00:01:01.1 12 DEBUG ironic.conductor.manager [-] Completed power \
                   state sync operation, evaluated 7 nodes with 8 workers in 2.53 seconds \
                   _sync_power_states /v/lib/python3.11/site-packages/ironic/conductor/manager.py:1750\n";
        assert_eq!(super::power_sync(log), Some((2, 2.53)));
        assert_eq!(super::power_sync("nothing"), None);
    }
}
