//! A `shoal-emulator` child process: started with `--port 0`, its URL read
//! from the one line it prints once it accepts connections, stopped (by its
//! own pid) when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

/// The networks a harness's emulator reaches with its events, unless a
/// command says otherwise.
pub const LOOPBACK_ONLY: &str = "127.0.0.0/8,::1/128";

pub struct EmulatorProcess {
    child: Child,
    /// Base URL, e.g. `https://127.0.0.1:40123`.
    pub url: String,
    /// The URLs of its endpoints of their own (`spawn_endpoints`).
    pub endpoints: Vec<String>,
}

impl EmulatorProcess {
    /// Spawns `cmd` (the emulator with its flags), logging stderr to `log`,
    /// and waits for its `listening on URL` line.
    pub fn spawn(cmd: Command, log: &Path) -> Result<EmulatorProcess> {
        Self::spawn_endpoints(cmd, log, 0)
    }

    /// `spawn`, then reads the `endpoints` lines that follow the main one
    /// (`shoal-emulator endpoint NAMES on URL`).
    pub fn spawn_endpoints(
        mut cmd: Command,
        log: &Path,
        endpoints: usize,
    ) -> Result<EmulatorProcess> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let file = std::fs::File::create(log).with_context(|| format!("{}", log.display()))?;
        // The emulator goes when this process goes, however it ends (a
        // signal handler's exit skips the drop below).
        // SAFETY: `pre_exec` runs the closure in the forked child before
        // exec, where only async-signal-safe calls are allowed: prctl(2) is
        // a plain system call on integer arguments that allocates nothing,
        // takes no lock and touches no memory of the parent's.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        // The harness's BMCs push events only to loopback: a subscription
        // a tool makes elsewhere (DMTF's Protocol Validator subscribes
        // https://192.168.1.50/) never sends a packet off the machine. A
        // command that names its own networks keeps them.
        if !cmd
            .get_envs()
            .any(|(k, _)| k == "SHOAL_EVENT_REACHABLE_NETS")
        {
            cmd.env("SHOAL_EVENT_REACHABLE_NETS", LOOPBACK_ONLY);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        let mut out = BufReader::new(
            child
                .stdout
                .take()
                .expect("stdout is Stdio::piped() in this very spawn"),
        );
        let mut urls = Vec::with_capacity(endpoints + 1);
        for _ in 0..=endpoints {
            let mut line = String::new();
            out.read_line(&mut line)?;
            let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
            if !url.starts_with("http") {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the emulator did not start; see {}", log.display());
            }
            urls.push(url);
        }
        let url = urls.remove(0);
        Ok(EmulatorProcess {
            child,
            url,
            endpoints: urls,
        })
    }

    /// The address of its plain-HTTP listener (an error when its URL is
    /// not `http://`).
    pub fn http_addr(&self) -> Result<std::net::SocketAddr> {
        let addr = self
            .url
            .strip_prefix("http://")
            .with_context(|| format!("{} is not plain HTTP", self.url))?;
        Ok(addr.parse()?)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident set size in KiB, from `/proc/PID/status`.
    pub fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid())
    }

    /// Whether the process has exited (and how), without waiting.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for EmulatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VmRSS` of process `pid` in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_rss_is_read() {
        let kib = rss_kib(std::process::id()).expect("VmRSS");
        assert!(kib > 100, "{kib} KiB");
    }

    #[test]
    fn a_program_that_prints_no_url_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        // stderr first: the child is killed once its first stdout line is read.
        cmd.args(["-c", "echo oops >&2; echo nothing here"]);
        let err = EmulatorProcess::spawn(cmd, &dir.path().join("log"))
            .err()
            .expect("no URL");
        assert!(err.to_string().contains("did not start"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("log")).unwrap(),
            "oops\n"
        );
    }
}
