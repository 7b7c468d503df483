//! A NIC for machines libvirt cannot give one: a tap device on the
//! case's bridge inside the lab's namespace, wired to QEMU's `-netdev
//! stream` (a Unix socket QEMU connects to; each frame behind its length,
//! 4 bytes big-endian). powernv needs it: libvirt passes `-nodefaults`,
//! which leaves the machine without PCI host bridges, and places the
//! NICs it defines on a `pci.0` that does not exist there; the lab adds
//! the bridges and the NIC through the QEMU command line instead.
//!
//! Two threads per wire: one moves frames from the tap to the connected
//! QEMU, the other accepts QEMU's connection (a new start connects again)
//! and moves its frames to the tap. A connection that stalls (a write
//! times out) or goes out of step (a length no frame has) is dropped.
//! Both threads end when the wire is dropped, which the lab does when the
//! machine's case ends.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lock;
use anyhow::{bail, Context, Result};

/// The largest frame carried (a jumbo frame and its headers).
const MAX_FRAME: usize = 65_536;

/// How long the rest of a frame begun may wait for QEMU to take it.
const WRITE_TIMEOUT: Duration = Duration::from_millis(500);

/// The connected QEMU, shared by the two threads.
type Peer = Mutex<Option<Arc<UnixStream>>>;

pub struct Wire {
    stop: Arc<AtomicBool>,
}

impl Wire {
    /// Creates tap `tap` in namespace `ns`, puts it on `bridge`, and
    /// listens on `socket` for QEMU.
    pub fn start(ns: &str, tap: &str, bridge: &str, socket: &Path) -> Result<Wire> {
        let dev = Arc::new(tap_in(ns, tap)?);
        crate::netns::ip(&[
            "netns", "exec", ns, "ip", "link", "set", tap, "master", bridge,
        ])?;
        crate::netns::ip(&["netns", "exec", ns, "ip", "link", "set", tap, "up"])?;
        let _ = std::fs::remove_file(socket);
        let listener =
            UnixListener::bind(socket).with_context(|| format!("bind {}", socket.display()))?;
        // QEMU runs as its own user.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let peer: Arc<Peer> = Arc::default();
        {
            let (dev, peer, stop) = (dev.clone(), peer.clone(), stop.clone());
            std::thread::spawn(move || to_qemu(&dev, &peer, &stop));
        }
        {
            let stop = stop.clone();
            std::thread::spawn(move || from_qemu(&listener, &dev, &peer, &stop));
        }
        Ok(Wire { stop })
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Waits up to 200 ms for `fd` to be readable.
fn readable(fd: &impl AsRawFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, its count, a timeout; poll(2) writes only
    // `revents` of that struct, which lives across the call.
    unsafe { libc::poll(&mut p, 1, 200) > 0 }
}

/// Forgets `stream` as the peer, unless a newer connection replaced it.
fn forget(peer: &Peer, stream: &Arc<UnixStream>) {
    let mut p = lock(peer);
    if p.as_ref().is_some_and(|s| Arc::ptr_eq(s, stream)) {
        *p = None;
    }
}

fn to_qemu(dev: &File, peer: &Peer, stop: &AtomicBool) {
    let mut frame = vec![0u8; 4 + MAX_FRAME];
    while !stop.load(Ordering::Relaxed) {
        if !readable(dev) {
            continue;
        }
        let n = match (&*dev).read(&mut frame[4..]) {
            Ok(n) => n,
            Err(_) => return,
        };
        // The stream is taken out of the lock: a write holds neither the
        // other thread nor a new connection.
        let stream = lock(peer).clone();
        let Some(stream) = stream else {
            continue;
        };
        frame[..4].copy_from_slice(&(n as u32).to_be_bytes());
        if send_frame(&stream, &frame[..4 + n]).is_err() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            forget(peer, &stream);
        }
    }
}

/// Sends one frame whole or not at all: none of it when QEMU is not
/// reading (its guest's receive ring is full, it is between kernels), so
/// the frame is lost as on a wire whose far end does not listen; else all
/// of it. A frame begun must end: one that cannot (the write timed out)
/// leaves the stream out of step, an error, and the connection is dropped.
fn send_frame(stream: &UnixStream, frame: &[u8]) -> std::io::Result<()> {
    // SAFETY: send(2) reads `frame.len()` bytes from `frame`, a live slice,
    // on the stream's descriptor, open across the call.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.kind() {
            std::io::ErrorKind::WouldBlock => Ok(()),
            _ => Err(e),
        };
    }
    (&*stream).write_all(&frame[n as usize..])
}

fn from_qemu(listener: &UnixListener, dev: &File, peer: &Peer, stop: &AtomicBool) {
    let mut frame = vec![0u8; MAX_FRAME];
    while !stop.load(Ordering::Relaxed) {
        let Ok((stream, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let configured = stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(Some(Duration::from_millis(200))))
            .and_then(|()| stream.set_write_timeout(Some(WRITE_TIMEOUT)));
        if configured.is_err() {
            continue;
        }
        let stream = Arc::new(stream);
        *lock(peer) = Some(stream.clone());
        let mut len = [0u8; 4];
        loop {
            if !matches!(read_full(&stream, &mut len, stop), Ok(true)) {
                break;
            }
            let n = u32::from_be_bytes(len) as usize;
            // A length no Ethernet frame has: the stream is out of step.
            if n > MAX_FRAME || !matches!(read_full(&stream, &mut frame[..n], stop), Ok(true)) {
                break;
            }
            // A frame the tap refuses is lost, as on a wire.
            let _ = (&*dev).write(&frame[..n]);
        }
        forget(peer, &stream);
    }
}

/// Fills `buf`, waiting through read timeouts; `Ok(false)` at the end of
/// the stream or when stopped.
fn read_full(r: &UnixStream, buf: &mut [u8], stop: &AtomicBool) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match (&*r).read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Opens tap device `name` (no packet information header) inside
/// namespace `ns`.
fn tap_in(ns: &str, name: &str) -> Result<File> {
    if name.len() >= libc::IFNAMSIZ {
        bail!("tap name {name:?} is too long");
    }
    let name = name.to_string();
    crate::netns::inside(ns, move || {
        let tun = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")
            .context("open /dev/net/tun")?;
        // struct ifreq: the name, then the flags (a short).
        let mut req = [0u8; 40];
        req[..name.len()].copy_from_slice(name.as_bytes());
        let flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        req[16..18].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq (40 bytes on
        // Linux), which `req` is, alive across the call.
        if unsafe { libc::ioctl(tun.as_raw_fd(), libc::TUNSETIFF, req.as_mut_ptr()) } != 0 {
            bail!("TUNSETIFF {name}: {}", std::io::Error::last_os_error());
        }
        Ok(tun)
    })
}
