//! Network namespaces: created with `ip netns`, and sockets (or tap
//! devices) opened inside one from this process (a helper thread enters
//! the namespace with setns(2), opens, and ends; what it opened stays in
//! the namespace).

use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::process::Command;

use anyhow::{bail, Context, Result};

pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

pub fn create(ns: &str) -> Result<()> {
    ip(&["netns", "add", ns])?;
    ip(&["netns", "exec", ns, "ip", "link", "set", "lo", "up"])?;
    // Bridges without a VM yet have no carrier; without duplicate address
    // detection their IPv6 addresses can be bound at once.
    for key in [
        "net.ipv6.conf.all.accept_dad=0",
        "net.ipv6.conf.default.accept_dad=0",
    ] {
        ip(&["netns", "exec", ns, "sysctl", "-qw", key])?;
    }
    Ok(())
}

pub fn delete(ns: &str) {
    let _ = Command::new("ip").args(["netns", "del", ns]).status();
}

/// A listening TCP socket inside namespace `ns`.
pub fn bind_in(ns: &str, addr: SocketAddr) -> Result<TcpListener> {
    let path = format!("/var/run/netns/{ns}");
    inside(ns, move || {
        let l = TcpListener::bind(addr).with_context(|| format!("bind {addr} in {path}"))?;
        l.set_nonblocking(true)?;
        Ok(l)
    })
}

/// Runs `f` inside namespace `ns`, on a thread spawned for it alone: what
/// `f` opens (sockets, tap devices) stays in the namespace, and no other
/// code of this process runs there by mistake.
pub fn inside<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || -> Result<T> {
        let ns = std::fs::File::open(&path).with_context(|| format!("open {path}"))?;
        // SAFETY: setns(2) takes a descriptor and a flag and touches no
        // memory; the descriptor is `ns`'s, open across the call. It moves
        // only the calling thread into the namespace, and this thread ends
        // once `f` has run.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("setns({path}): {}", std::io::Error::last_os_error());
        }
        f()
    })
    .join()
    .map_err(|_| anyhow::anyhow!("namespace helper thread panicked"))?
}
