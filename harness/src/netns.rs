//! Network namespaces: created with `ip netns`, and sockets bound inside one
//! from this process (a helper thread enters the namespace with setns(2),
//! binds, and ends; the socket stays in the namespace).

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
    std::thread::spawn(move || -> Result<TcpListener> {
        let f = std::fs::File::open(&path).with_context(|| format!("open {path}"))?;
        // SAFETY: setns(2) takes a descriptor and a flag and touches no
        // memory; the descriptor is `f`'s, open across the call. It moves
        // only the calling thread into the namespace, and this thread was
        // spawned for this alone and ends once the socket is bound, so no
        // other code runs in the namespace by mistake.
        if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("setns({path}): {}", std::io::Error::last_os_error());
        }
        let l = TcpListener::bind(addr).with_context(|| format!("bind {addr} in {path}"))?;
        l.set_nonblocking(true)?;
        Ok(l)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("namespace helper thread panicked"))?
}
