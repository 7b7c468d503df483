//! In-band IPMI: the host's own interface to its BMC (KCS on x86_64, BT
//! on OpenPOWER), which QEMU's `ipmi-bmc-extern` device carries over a
//! chardev in OpenIPMI's "VM" serial protocol. Shoal is the BMC at the
//! other end: one Unix socket per machine (`<dir>/<system UUID>.sock`),
//! QEMU connecting to it.
//!
//! The protocol, as QEMU speaks it (hw/ipmi/ipmi_bmc_extern.c):
//! - A message ends with 0xA0, a control command with 0xA1; 0xA0, 0xA1
//!   and 0xAA inside either are sent as 0xAA then the byte with bit 4 set.
//! - A request: message id, NetFn/LUN, command, data, checksum (the sum
//!   of all bytes is 0). The answer: the same id, the response NetFn/LUN,
//!   command, completion code, data, checksum.
//! - Control commands from QEMU: version (`ff 01`), capabilities (`08`
//!   and a bit mask), reset (`04`, the host was reset).
//!
//! Requests are served by the same commands as over LAN, at the
//! privilege of the system interface (administrator, no session): the
//! host reads the boot flags Redfish or IPMI-over-LAN set, and its own
//! Chassis Control reaches the machine as any other power request. A
//! message that does not frame, or whose checksum is wrong, is dropped
//! (QEMU answers its host with a timeout after 4 s).

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use super::commands::{self, cc, netfn};
use super::users::Privilege;
use super::Bmc;
use crate::bmc::changes::{with_cause, Cause};

const MSG_END: u8 = 0xa0;
const CMD_END: u8 = 0xa1;
const ESCAPE: u8 = 0xaa;
/// Longest message kept (QEMU's own bound is 300 bytes); a longer one is
/// dropped whole.
const MAX_MSG: usize = 512;

/// What one framed unit of the stream is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// An IPMI message (id, NetFn/LUN, command, data, checksum).
    Message(Vec<u8>),
    /// A control command (its code and arguments).
    Control(Vec<u8>),
}

/// Splits the byte stream into frames; keeps what is not complete yet.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    escaped: bool,
    overlong: bool,
}

impl Decoder {
    /// Feeds bytes; the frames they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        for &b in bytes {
            match b {
                MSG_END | CMD_END => {
                    let body = std::mem::take(&mut self.buf);
                    let whole = !self.escaped && !self.overlong && !body.is_empty();
                    self.escaped = false;
                    self.overlong = false;
                    if whole {
                        out.push(match b {
                            MSG_END => Frame::Message(body),
                            _ => Frame::Control(body),
                        });
                    }
                }
                ESCAPE => self.escaped = true,
                _ => {
                    let b = if std::mem::take(&mut self.escaped) {
                        b & !0x10
                    } else {
                        b
                    };
                    if self.buf.len() >= MAX_MSG {
                        self.overlong = true;
                    } else if !self.overlong {
                        self.buf.push(b);
                    }
                }
            }
        }
        out
    }
}

/// `bytes` escaped, then the end marker.
pub fn encode(bytes: &[u8], end: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 2);
    for &b in bytes {
        if matches!(b, MSG_END | CMD_END | ESCAPE) {
            out.extend_from_slice(&[ESCAPE, b | 0x10]);
        } else {
            out.push(b);
        }
    }
    out.push(end);
    out
}

/// The two's complement of the sum of `bytes` (the sum with it is 0).
fn checksum(bytes: &[u8]) -> u8 {
    bytes
        .iter()
        .fold(0u8, |s, b| s.wrapping_add(*b))
        .wrapping_neg()
}

/// The answer to one request message, or `None` for one that is not a
/// well-formed request (too short, a response, a bad checksum).
pub async fn answer(bmc: &Bmc, msg: &[u8]) -> Option<Vec<u8>> {
    let [id, netfn_lun, cmd, ref data @ .., _sum] = msg[..] else {
        return None;
    };
    if checksum(msg) != 0 || (netfn_lun >> 2) & 1 == 1 {
        return None;
    }
    let fnc = netfn_lun >> 2;
    // Injected faults (method IPMI, path /ipmi/in-band/NN/CC): a host
    // interface that answers late, busy, or not at all (QEMU then times
    // its host out after 4 s), as a hung BMC's does.
    let faults = &bmc.core.faults;
    let fault = match faults.active() {
        true => Some(faults.decide(
            crate::faults::IPMI,
            &format!("/ipmi/in-band/{fnc:02x}/{cmd:02x}"),
            std::slice::from_ref(&bmc.system_name),
        )),
        false => None,
    };
    if let Some((latency, decision)) = fault {
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        match decision {
            crate::faults::Decision::Pass => {}
            crate::faults::Decision::Fail { .. } => {
                let mut out = vec![id, ((fnc | 1) << 2) | (netfn_lun & 3), cmd, cc::NODE_BUSY];
                out.push(checksum(&out));
                return Some(encode(&out, MSG_END));
            }
            crate::faults::Decision::Drop | crate::faults::Decision::Unavailable(_) => {
                tracing::debug!(system = %bmc.system_id, netfn = fnc, cmd, "in-band IPMI request dropped (fault)");
                return None;
            }
        }
    }
    let (code, body) = match (fnc, cmd) {
        // The system interface's own commands, which the host's driver
        // sends as it starts: BMC global enables (receive message queue
        // and event message buffer interrupts off, system event logging
        // on) and message flags (nothing waiting).
        (netfn::APP, 0x2e) if data.len() == 1 => (cc::OK, Vec::new()),
        (netfn::APP, 0x2f) if data.is_empty() => (cc::OK, vec![0x08]),
        (netfn::APP, 0x30) if data.len() == 1 => (cc::OK, Vec::new()),
        (netfn::APP, 0x31) if data.is_empty() => (cc::OK, vec![0x00]),
        (netfn::APP, 0x2e..=0x31) => (cc::BAD_LENGTH, Vec::new()),
        _ => {
            // The host's own interface: no user.
            let cause = Cause::Ipmi {
                netfn: fnc,
                cmd,
                user: None,
            };
            with_cause(
                cause,
                commands::execute(bmc, Privilege::Administrator, fnc, cmd, data),
            )
            .await
        }
    };
    tracing::debug!(system = %bmc.system_id, netfn = fnc, cmd, cc = code, "in-band IPMI request");
    let mut out = vec![id, ((fnc | 1) << 2) | (netfn_lun & 3), cmd, code];
    out.extend_from_slice(&body);
    out.push(checksum(&out));
    Some(encode(&out, MSG_END))
}

/// Listens on `path` (replacing a stale socket) for the machine's side.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    // QEMU runs as its own user (libvirt's `libvirt-qemu`): who reaches
    // the socket is decided by the folder's permissions.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(listener)
}

/// Serves the machine's in-band side on `listener` until `stop`: one
/// connection at a time (one host), each new one replacing the last.
pub async fn serve(
    listener: UnixListener,
    bmc: Arc<Bmc>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut current: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    if let Some(old) = current.take() {
                        old.abort();
                    }
                    tracing::info!(system = %bmc.system_id, "in-band IPMI: the host connected");
                    current = Some(tokio::spawn(connection(stream, bmc.clone())));
                }
                Err(e) => tracing::debug!(error = %e, "in-band IPMI accept failed"),
            },
        }
    }
    if let Some(c) = current {
        c.abort();
    }
    Ok(())
}

async fn connection(mut stream: UnixStream, bmc: Arc<Bmc>) {
    let mut decoder = Decoder::default();
    let mut buf = vec![0u8; 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for frame in decoder.feed(&buf[..n]) {
            match frame {
                Frame::Message(m) => {
                    if let Some(reply) = answer(&bmc, &m).await {
                        if stream.write_all(&reply).await.is_err() {
                            return;
                        }
                    } else {
                        tracing::debug!(system = %bmc.system_id, msg = ?m, "in-band IPMI message dropped");
                    }
                }
                Frame::Control(c) => {
                    tracing::debug!(system = %bmc.system_id, control = ?c, "in-band IPMI control");
                }
            }
        }
    }
    tracing::info!(system = %bmc.system_id, "in-band IPMI: the host went away");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_are_split_unescaped_and_bounded() {
        let mut d = Decoder::default();
        // QEMU's greeting: version 1, then its capabilities.
        assert_eq!(
            d.feed(&[0xff, 0x01, 0xa1, 0x08, 0x1f]),
            vec![Frame::Control(vec![0xff, 0x01])]
        );
        assert_eq!(d.feed(&[0xa1]), vec![Frame::Control(vec![0x08, 0x1f])]);
        // An escaped end marker inside a message.
        assert_eq!(
            d.feed(&[0x01, 0xaa, 0xb0, 0x02, 0xa0]),
            vec![Frame::Message(vec![0x01, 0xa0, 0x02])]
        );
        // An end marker right after an escape drops the frame.
        assert_eq!(d.feed(&[0x01, 0xaa, 0xa0]), vec![]);
        // Too long: dropped whole, and the next one is fine.
        let mut long = vec![0x11; MAX_MSG + 10];
        long.extend_from_slice(&[0xa0, 0x05, 0xa0]);
        assert_eq!(d.feed(&long), vec![Frame::Message(vec![0x05])]);
        assert_eq!(
            encode(&[0xa0, 0xa1, 0xaa, 0x10], MSG_END),
            vec![0xaa, 0xb0, 0xaa, 0xb1, 0xaa, 0xba, 0x10, 0xa0]
        );
    }

    proptest! {
        #[test]
        fn encoding_then_decoding_gives_the_bytes_back(
            frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..64), 1..8),
            split in 1usize..17,
        ) {
            let mut stream = Vec::new();
            for f in &frames {
                stream.extend(encode(f, MSG_END));
            }
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for chunk in stream.chunks(split) {
                got.extend(d.feed(chunk));
            }
            let want: Vec<Frame> = frames.into_iter().map(Frame::Message).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn garbage_never_panics_and_frames_stay_bounded(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
            let mut d = Decoder::default();
            for f in d.feed(&bytes) {
                let (Frame::Message(b) | Frame::Control(b)) = f;
                prop_assert!(!b.is_empty() && b.len() <= MAX_MSG);
            }
        }
    }
}
