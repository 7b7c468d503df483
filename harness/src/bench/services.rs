//! The services the bench measures, started on loopback and stopped by
//! pid: shoal-emulator, sushy-tools under gunicorn, nginx; and the few
//! untimed requests that set a run up.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::Value;

use super::{BCRYPT_COST, PASSWORD, USER};
use crate::emulator::EmulatorProcess;
use crate::load::Conn;

/// A child process started here, stopped by its pid on drop.
pub(super) struct Daemon {
    child: Child,
    name: &'static str,
}

impl Daemon {
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // gunicorn and nginx stop their workers on SIGTERM.
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory; the pid is our child's, not reaped yet (only
        // `try_wait`/`wait` below reap it), so it cannot name another
        // process.
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
    wait_until_listening(child, what, log, || {
        std::net::TcpStream::connect(addr).is_ok()
    })
}

/// Waits (60 s at most) until `listening`, failing if `child` exits first.
fn wait_until_listening(
    child: &mut Child,
    what: &str,
    log: &Path,
    listening: impl Fn() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if listening() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!("{what} exited ({status}); see {}", log.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what} did not listen; see {}", log.display())
}

fn htpasswd(dir: &Path) -> Result<PathBuf> {
    let p = dir.join("htpasswd");
    std::fs::write(
        &p,
        format!("{USER}:{}\n", bcrypt::hash(PASSWORD, BCRYPT_COST)?),
    )?;
    Ok(p)
}

/// shoal-emulator `emulator` with `systems` fake systems (from a config
/// file in `dir`, Basic auth if `auth`), as every HTTP row starts it; its
/// log in `dir`.
pub(super) fn start_shoal(
    emulator: &Path,
    dir: &Path,
    systems: usize,
    auth: bool,
) -> Result<EmulatorProcess> {
    start_shoal_with(emulator, dir, systems, auth, &[])
}

/// [`start_shoal`] with flags of its own.
pub(super) fn start_shoal_with(
    emulator: &Path,
    dir: &Path,
    systems: usize,
    auth: bool,
    flags: &[&str],
) -> Result<EmulatorProcess> {
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
    let mut cmd = Command::new(emulator);
    cmd.arg("--config")
        .arg(&cfg)
        .args(["--port", "0"])
        .args(flags)
        .env("RUST_LOG", "warn");
    let name = if flags.is_empty() { "" } else { "-flags" };
    EmulatorProcess::spawn(cmd, &dir.join(format!("shoal-{systems}-{auth}{name}.log")))
}

/// sushy-tools' configuration for `n` fake systems (`uuid(i)`, named
/// `{prefix}-{i}`, each with a NIC), their state under `state` (emptied
/// first), with Basic auth from `htpasswd` if given.
pub(super) fn fake_systems_conf(
    n: usize,
    uuid: impl Fn(usize) -> String,
    prefix: &str,
    power: &str,
    state: &Path,
    htpasswd: Option<&Path>,
) -> Result<String> {
    let mut conf =
        String::from("SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_FAKE_SYSTEMS = [\n");
    for i in 0..n {
        writeln!(
            conf,
            "    {{'uuid': '{}', 'name': '{prefix}-{i}', 'power_state': '{power}', \
             'nics': [{{'mac': '52:54:00:00:{:02x}:{:02x}', 'ip': '198.51.100.{}'}}]}},",
            uuid(i),
            i / 256,
            i % 256,
            i % 250 + 1
        )?;
    }
    conf.push_str("]\n");
    let _ = std::fs::remove_dir_all(state);
    writeln!(
        conf,
        "SUSHY_EMULATOR_STATE_DIR = {:?}",
        state.display().to_string()
    )?;
    if let Some(file) = htpasswd {
        writeln!(
            conf,
            "SUSHY_EMULATOR_AUTH_FILE = {:?}",
            file.display().to_string()
        )?;
    }
    Ok(conf)
}

/// sushy-tools' app under gunicorn as the bench runs it (2 workers of 2
/// threads) on `addr`, inside the namespace `ns` if given, with the
/// configuration `cfg`; its output in `log`. Returns once it listens.
pub(super) fn gunicorn(
    venv: &Path,
    ns: Option<&str>,
    addr: SocketAddr,
    cfg: &Path,
    log: &Path,
) -> Result<Daemon> {
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(venv.join("bin/gunicorn"));
            c
        }
        None => Command::new(venv.join("bin/gunicorn")),
    };
    let mut child = cmd
        .args(["--workers", "2", "--threads", "2", "--bind"])
        .arg(addr.to_string())
        .args(["--log-level", "warning", "sushy_tools.emulator.main:app"])
        .env("SUSHY_EMULATOR_CONFIG", cfg)
        .current_dir(cfg.parent().unwrap_or(Path::new("/")))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(log)?)
        .stderr(std::fs::File::options().append(true).open(log)?)
        .spawn()
        .context("starting gunicorn (sushy-tools)")?;
    let listening = match ns {
        Some(ns) => {
            let ns = ns.to_string();
            wait_until_listening(&mut child, "sushy-tools", log, move || {
                crate::netns::inside(&ns, move || Ok(std::net::TcpStream::connect(addr)?)).is_ok()
            })
        }
        None => wait_listening(addr, "sushy-tools", &mut child, log),
    };
    let daemon = Daemon {
        child,
        name: "sushy-tools",
    };
    listening?;
    Ok(daemon)
}

pub(super) fn start_sushy_tools(
    venv: &Path,
    dir: &Path,
    systems: usize,
    auth: bool,
) -> Result<(Daemon, SocketAddr)> {
    let pw = if auth { Some(htpasswd(dir)?) } else { None };
    let conf = fake_systems_conf(
        systems,
        uuid_of,
        "bench",
        "On",
        &dir.join(format!("sushy-state-{auth}")),
        pw.as_deref(),
    )?;
    let cfg = dir.join(format!("sushy-tools-{auth}.py"));
    std::fs::write(&cfg, conf)?;
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
    let log = dir.join(format!("sushy-tools-{auth}.log"));
    Ok((gunicorn(venv, None, addr, &cfg, &log)?, addr))
}

fn uuid_of(i: usize) -> String {
    format!("5ea10000-0000-4000-8000-{i:012x}")
}

pub(super) fn start_nginx(nginx: &Path, dir: &Path, body: &[u8]) -> Result<(Daemon, SocketAddr)> {
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
pub(super) async fn get_json(
    addr: SocketAddr,
    path: &str,
    basic: Option<&str>,
) -> Result<(Bytes, Value)> {
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

pub(super) async fn system_paths(addr: SocketAddr, basic: Option<&str>) -> Result<Vec<String>> {
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

pub(super) fn url_addr(url: &str) -> Result<SocketAddr> {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .with_context(|| format!("address of {url}"))
}
