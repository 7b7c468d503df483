//! OpenStack Ironic, standalone, for the `ironic` driver: one service per
//! case inside the lab's namespace (the single-process `ironic` command,
//! no authentication, no RPC bus, SQLite made by `ironic-dbsync`), the
//! `redfish` or `ipmi` hardware type (sushy against the BMC's Redfish,
//! ipmitool against its IPMI) with the `ramdisk` deploy interface, its dnsmasq
//! DHCP provider writing into folders that the case network's dnsmasq
//! reads, and `[deploy] http_root` (also `[pxe] tftp_root`) the case's
//! boot folder, served on the machine's network; the BMC, in the same
//! namespace, fetches virtual media from there too. The node is driven through the API by
//! `drivers/ironic_node.py` (python-ironicclient), also inside the
//! namespace; every response it acts on goes to `ironic-api.jsonl`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::lock;
use anyhow::{anyhow, bail, Context, Result};

pub use layout::{deploy_args, render, render_json, Agent, Layout};

mod layout;

/// The venv's Python, from `--ironic-venv` or `$SHOAL_IRONIC_VENV`.
pub fn python(venv: Option<&Path>) -> Result<PathBuf> {
    let venv = venv.ok_or_else(|| {
        anyhow!("the ironic driver needs the Ironic venv (--ironic-venv or SHOAL_IRONIC_VENV; ci/test builds it)")
    })?;
    let py = venv.join("bin/python");
    if !py.exists() || !venv.join("bin/ironic").exists() {
        bail!(
            "{} is not an Ironic venv (no bin/ironic); ci/test --only venv builds one",
            venv.display()
        );
    }
    Ok(py)
}

/// Puts the database in write-ahead-log mode, which SQLite keeps in the
/// file. Ironic means to (`ironic.db.sqlalchemy` issues the PRAGMA as each
/// connection opens, so that the API reads while the conductor writes), but
/// its listener is registered on the `ConnectionEvents` class, which
/// SQLAlchemy 2.1 never calls: the database stays in rollback-journal
/// mode, where a writer locks out every reader, and a fleet of 1,000 nodes
/// logged over 30,000 "database is locked" errors.
fn wal(python: &Path, db: &Path) -> Result<()> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sqlite3, sys; \
             print(sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=WAL').fetchone()[0])",
        ])
        .arg(db)
        .output()
        .context("setting Ironic's database to WAL mode")?;
    let mode = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || mode.trim() != "wal" {
        bail!(
            "Ironic's database {} did not take WAL mode: {}{}",
            db.display(),
            mode.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `[DEFAULT] grub_config_template` (see `Layout::grub_template`): Ironic's
/// own, with upstream grub's `linux` and `initrd`, the serial console, no
/// wait, and first the search for the medium that holds the kernel (the
/// ESP's grub reads this file from the ISO with its own memory disk as
/// the root).
const GRUB_TEMPLATE: &str = "search --no-floppy --file --set=root {{ linux }}
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial console
menuentry \"boot_partition\" {
linux {{ linux }} {{ kernel_params }} --
initrd {{ initrd }}
}
";

/// Whether `GET /v1` on the API's port inside `ns` answers 200.
fn api_answers(ns: &str, port: u16) -> bool {
    use std::io::{Read, Write};
    crate::netns::inside(ns, move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"GET /v1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head)?;
        Ok(head.ends_with(b"200"))
    })
    .unwrap_or(false)
}

/// The process groups of the Ironic services running now, for
/// `stop_all` (a run interrupted by a signal leaves without dropping them).
static RUNNING: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Stops every Ironic this process started and has not stopped yet (their
/// process groups: TERM, then KILL).
pub fn stop_all() {
    let groups = std::mem::take(&mut *lock(&RUNNING));
    for g in &groups {
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory. Each group is one `Ironic::start` made
        // (`process_group(0)`: its id is the leader's pid) and whose leader
        // is not reaped yet (only the drop, which first takes it out of
        // RUNNING, waits for it), so the id still names that group.
        unsafe { libc::kill(-g, libc::SIGTERM) };
    }
    std::thread::sleep(Duration::from_secs(2));
    for g in &groups {
        // SAFETY: kill(2) touches no memory; the leaders are still not
        // reaped (nothing here waits for them), so the ids are still these
        // groups'.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
}

/// A running Ironic; stopped (its process group, which it started) on drop.
pub struct Ironic {
    child: Child,
    pub api: String,
    python: PathBuf,
    ns: String,
    dir: PathBuf,
}

impl Ironic {
    /// Writes the config, creates the database, starts the service in
    /// namespace `ns` and waits until its API answers.
    pub fn start(ns: &str, venv: Option<&Path>, layout: &Layout) -> Result<Ironic> {
        let python = python(venv)?;
        // The venv's bin/, where python() found `ironic` beside python.
        let bin = python.parent().unwrap_or(Path::new("/")).to_path_buf();
        let dir = &layout.dir;
        layout.create_dhcp_dirs()?;
        for d in [dir.join("locks"), dir.join("tmp")] {
            std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
        }
        std::fs::write(dir.join("dhcp-leases"), "")?;
        let conf = dir.join("ironic.conf");
        std::fs::write(&conf, layout.config())?;
        std::fs::write(layout.grub_template(), GRUB_TEMPLATE)?;
        // Ironic builds ISOs with `mkisofs`, a name Debian gives no
        // package; xorriso's mkisofs emulation answers to it.
        let shims = dir.join("bin");
        std::fs::create_dir_all(&shims)?;
        let mkisofs = shims.join("mkisofs");
        if !mkisofs.exists() {
            std::os::unix::fs::symlink("/usr/bin/xorrisofs", &mkisofs)?;
        }
        let path = format!(
            "{}:{}",
            shims.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into())
        );
        let out = Command::new(bin.join("ironic-dbsync"))
            .arg("--config-file")
            .arg(&conf)
            .arg("create_schema")
            .output()
            .context("running ironic-dbsync")?;
        std::fs::write(
            dir.join("dbsync.log"),
            [&out.stdout[..], &out.stderr].concat(),
        )?;
        if !out.status.success() {
            bail!(
                "ironic-dbsync create_schema failed; see {}",
                dir.join("dbsync.log").display()
            );
        }
        wal(&python, &dir.join("ironic.sqlite"))?;
        let log = std::fs::File::create(dir.join("ironic-stdout.log"))?;
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(bin.join("ironic"))
            .arg("--config-file")
            .arg(&conf)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: the service forks its workers, and
            // all of them are stopped together.
            .process_group(0)
            .spawn()
            .context("starting ironic")?;
        lock(&RUNNING).push(child.id() as i32);
        let mut ironic = Ironic {
            child,
            api: format!("http://127.0.0.1:{}", layout.api_port),
            python,
            ns: ns.to_string(),
            dir: dir.clone(),
        };
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = ironic.child.try_wait() {
                bail!(
                    "ironic exited ({status}) while starting; see {} and {}",
                    dir.join("ironic.log").display(),
                    dir.join("ironic-stdout.log").display()
                );
            }
            // With credentials required, the public `/v1` says the API is
            // up (ironic_node.py talks without credentials).
            let up = match layout.basic_auth {
                Some(_) => api_answers(ns, layout.api_port),
                None => ironic.node(&["wait-api"], Duration::from_secs(30)).is_ok(),
            };
            if up {
                break;
            }
            if layout.basic_auth.is_some() {
                std::thread::sleep(Duration::from_millis(250));
            }
            if start.elapsed() > Duration::from_secs(90) {
                bail!(
                    "Ironic's API did not answer within 90 s; see {}",
                    dir.join("ironic.log").display()
                );
            }
        }
        Ok(ironic)
    }

    /// `ironic_node.py` inside the namespace, against this Ironic, with
    /// its deadline and API log; the action and its arguments follow.
    fn script(&self, limit: Duration) -> Command {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers/ironic_node.py");
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns])
            .arg(&self.python)
            .arg(script)
            .args(["--api", &self.api, "--timeout"])
            .arg(limit.as_secs().to_string())
            .arg("--log")
            .arg(self.dir.join("ironic-api.jsonl"));
        c
    }

    /// Runs `ironic_node.py ARGS` inside the namespace; its output lines
    /// go to `driver.log`. Returns stdout; an error carries Ironic's error
    /// (the `IRONIC-ERROR` line) when there is one.
    pub fn node<S: AsRef<str>>(&self, args: &[S], limit: Duration) -> Result<String> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let out = self
            .script(limit)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .context("running drivers/ironic_node.py")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if args.first() != Some(&"wait-api") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join("driver.log"))?;
            writeln!(f, "$ ironic_node.py {}\n{stdout}{stderr}", args.join(" "))?;
        }
        if !out.status.success() {
            let err = stdout
                .lines()
                .find_map(|l| l.strip_prefix("IRONIC-ERROR "))
                .map(str::to_string);
            // Ironic's words first; the script's account (state, deadline)
            // stays in driver.log.
            return Err(match err {
                Some(e) => anyhow!("Ironic: {e}"),
                None => anyhow!("ironic_node.py {}: {}", args.join(" "), stderr.trim()),
            });
        }
        Ok(stdout)
    }
}

/// A running `ironic_node.py console`: the node's console copied into a
/// file; stopped (by its pid) when dropped.
pub struct ConsoleReader(Child);

impl Drop for ConsoleReader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Ironic {
    /// Copies what node `name`'s console (enabled at enrollment) shows
    /// into `out` (for at most `limit`), from when this returns.
    pub fn console(&self, name: &str, out: &Path, limit: Duration) -> Result<ConsoleReader> {
        use std::io::BufRead;
        let err = std::fs::File::create(self.dir.join("console-reader.log"))?;
        let mut child = self
            .script(limit)
            .args(["console", "--name", name, "--out"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .context("running drivers/ironic_node.py console")?;
        let stdout = child.stdout.take().context("the reader's stdout")?;
        let reader = ConsoleReader(child);
        // The script connects within its own deadlines (60 s, 30 s), or
        // exits: either way this line read ends.
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        if !line.starts_with("IRONIC-CONSOLE ") {
            bail!(
                "the node's console did not open: {}; see {}",
                line.trim(),
                self.dir.join("console-reader.log").display()
            );
        }
        Ok(reader)
    }
}

impl Drop for Ironic {
    fn drop(&mut self) {
        // SIGTERM to the group first: the service stops its workers.
        let pgid = self.child.id() as i32;
        lock(&RUNNING).retain(|g| *g != pgid);
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory. `pgid` is the group `start` made with the child
        // as its leader (`process_group(0)`), and the child is not reaped
        // yet (`wait` comes below), so the id cannot have been reused.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut exited = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever of the group is left. Once the leader is reaped, the
        // group id is still ours only while a member lives (kill 0 says).
        // SAFETY: kill(2) touches no memory. If the leader is not reaped,
        // the id is still ours (as above); once it is, signal 0 first
        // checks that a member of the group lives, which keeps the id from
        // being reused, before the KILL goes to it.
        unsafe {
            if !exited || libc::kill(-pgid, 0) == 0 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_venv_the_driver_says_how_to_get_one() {
        let e = python(None).unwrap_err().to_string();
        assert!(e.contains("SHOAL_IRONIC_VENV"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = python(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("not an Ironic venv"), "{e}");
    }
}
