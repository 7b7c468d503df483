//! Serial-over-LAN (IPMI v2.0 section 15): the machine's serial console
//! carried in RMCP+ payloads of type 1, one SOL session per BMC.
//!
//! A task per active payload moves bytes both ways: the console's output
//! goes out in packets of at most [`CHUNK`] characters, each numbered
//! 1..15 and sent again until the console acknowledges it (at most
//! [`TRIES`] times, a second apart); what the console types is passed to
//! the machine once per packet number and acknowledged with the count of
//! characters taken. The task ends with its session, with Deactivate
//! Payload, or when the machine's console goes away.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};

use super::commands::cc;
use super::users::Privilege;
use super::wire::payload;
use super::Bmc;
use crate::backend::SerialConsole;
use crate::sync::lock;

/// Characters per packet, both ways (Activate Payload announces it).
pub const CHUNK: usize = 200;
/// Operation/status bit of a BMC's SOL packet: the payload is ending.
const DEACTIVATING: u8 = 0x10;
/// Sends of one packet before it is given up.
const TRIES: u32 = 5;
const RETRY: Duration = Duration::from_secs(1);
/// Console output kept while the remote console is behind; older bytes
/// are dropped first.
const BACKLOG: usize = 64 * 1024;

/// The BMC's handle on its active SOL payload.
pub struct Active {
    pub bmc_sid: u32,
    /// Where that session's console is.
    pub peer: SocketAddr,
    pub inbound: mpsc::Sender<Vec<u8>>,
    pub task: tokio::task::AbortHandle,
}

/// One packet the remote console has not acknowledged yet.
struct Pending {
    seq: u8,
    data: Vec<u8>,
    sent: Instant,
    tries: u32,
}

/// Starts the payload for session `sid`, whose console is at `peer`.
pub fn start(bmc: Arc<Bmc>, sid: u32, peer: SocketAddr, console: SerialConsole) -> Active {
    let (tx, rx) = mpsc::channel(64);
    let task = tokio::spawn(run(bmc, sid, peer, console, rx)).abort_handle();
    Active {
        bmc_sid: sid,
        peer,
        inbound: tx,
        task,
    }
}

async fn run(
    bmc: Arc<Bmc>,
    sid: u32,
    peer: SocketAddr,
    mut console: SerialConsole,
    mut inbound: mpsc::Receiver<Vec<u8>>,
) {
    let mut out_seq: u8 = 0;
    let mut last_in: Option<u8> = None;
    let mut pending: Option<Pending> = None;
    let mut backlog: Vec<u8> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let why = loop {
        tokio::select! {
            out = console.output.recv() => match out {
                Ok(b) => {
                    backlog.extend_from_slice(&b);
                    if backlog.len() > BACKLOG {
                        backlog.drain(..backlog.len() - BACKLOG);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break "the machine's console went away",
            },
            p = inbound.recv() => {
                let Some(p) = p else { break "the BMC let go of the payload" };
                let [seq, ack, accepted, op, ref data @ ..] = p[..] else {
                    continue;
                };
                let (seq, ack) = (seq & 0x0f, ack & 0x0f);
                // Our packet acknowledged (a NACK: sent again on the timer).
                if ack != 0 && op & 0x40 == 0 {
                    if let Some(q) = pending.take_if(|q| q.seq == ack) {
                        let taken = (accepted as usize).min(q.data.len());
                        if taken < q.data.len() {
                            let rest = q.data[taken..].to_vec();
                            backlog.splice(0..0, rest);
                        }
                    }
                }
                // Characters typed: to the machine once per number, and
                // acknowledged every time (the console may have lost ours).
                if seq != 0 {
                    if last_in != Some(seq) {
                        last_in = Some(seq);
                        // A machine that does not take its input (off,
                        // or a console that is not there) loses it, as a
                        // serial line overruns: the session goes on.
                        if !data.is_empty() {
                            let _ = console.input.try_send(bytes::Bytes::copy_from_slice(data));
                        }
                    }
                    send(&bmc, sid, peer, &[0, seq, data.len().min(255) as u8, 0]).await;
                }
            }
            _ = tick.tick() => {
                if !bmc.session_alive(sid) {
                    break "its session ended";
                }
                if let Some(q) = pending.as_mut() {
                    if q.sent.elapsed() >= RETRY {
                        if q.tries >= TRIES {
                            pending = None;
                        } else {
                            q.tries += 1;
                            q.sent = Instant::now();
                            let mut body = vec![q.seq, 0, 0, 0];
                            body.extend_from_slice(&q.data);
                            send(&bmc, sid, peer, &body).await;
                        }
                    }
                }
            }
        }
        if pending.is_none() && !backlog.is_empty() {
            out_seq = out_seq % 15 + 1;
            let n = backlog.len().min(CHUNK);
            let data: Vec<u8> = backlog.drain(..n).collect();
            let mut body = vec![out_seq, 0, 0, 0];
            body.extend_from_slice(&data);
            send(&bmc, sid, peer, &body).await;
            pending = Some(Pending {
                seq: out_seq,
                data,
                sent: Instant::now(),
                tries: 1,
            });
        }
    };
    tracing::info!(system = %bmc.system_id, session = sid, why, "SOL payload ended");
    bmc.sol_ended(tokio::task::id());
}

async fn send(bmc: &Bmc, sid: u32, peer: SocketAddr, body: &[u8]) {
    if let Some(datagram) = bmc.seal(sid, super::wire::payload::SOL, body) {
        bmc.send_to(&datagram, peer).await;
    }
}

impl Bmc {
    /// Activate Payload (SOL, instance 1): the machine's console to this
    /// session, one at a time.
    pub(super) async fn activate_sol(
        self: &Arc<Self>,
        sid: u32,
        privilege: Privilege,
        data: &[u8],
        peer: SocketAddr,
    ) -> (u8, Vec<u8>) {
        let [kind, instance, _, _, _, _] = data else {
            return (cc::BAD_LENGTH, Vec::new());
        };
        if kind & 0x3f != payload::SOL || *instance != 1 {
            return (cc::INVALID_FIELD, Vec::new());
        }
        if privilege < Privilege::User {
            return (cc::INSUFFICIENT_PRIVILEGE, Vec::new());
        }
        if lock(&self.sol).is_some() {
            // Payload already active on another session.
            return (0x80, Vec::new());
        }
        let console = match self.core.backend.console(&self.system_id).await {
            Ok(c) => c,
            // The payload type is disabled: this machine has no console
            // Shoal can carry.
            Err(_) => return (0x81, Vec::new()),
        };
        let mut sol = lock(&self.sol);
        if sol.is_some() {
            return (0x80, Vec::new());
        }
        *sol = Some(start(self.clone(), sid, peer, console));
        tracing::info!(system = %self.system_id, session = sid, %peer, "SOL payload activated");
        let chunk = (CHUNK as u16).to_le_bytes();
        let port = self.addr.port().to_le_bytes();
        (
            cc::OK,
            vec![
                0, 0, 0, 0, chunk[0], chunk[1], chunk[0], chunk[1], port[0], port[1], 0xff, 0xff,
            ],
        )
    }

    /// Deactivate Payload: this session's SOL, or anyone's for an
    /// administrator. A console whose payload another session ends is
    /// told so (a SOL packet with "SOL deactivating", section 15.9), as
    /// it would otherwise wait on a silent line.
    pub(super) async fn deactivate_sol(
        &self,
        sid: u32,
        privilege: Privilege,
        data: &[u8],
    ) -> (u8, Vec<u8>) {
        let [kind, instance, ..] = data else {
            return (cc::BAD_LENGTH, Vec::new());
        };
        if kind & 0x3f != payload::SOL || *instance != 1 {
            return (cc::INVALID_FIELD, Vec::new());
        }
        let ended = {
            let mut sol = lock(&self.sol);
            match sol.as_ref() {
                // Payload already deactivated.
                None => return (0x80, Vec::new()),
                Some(a) if a.bmc_sid != sid && privilege < Privilege::Administrator => {
                    return (cc::INSUFFICIENT_PRIVILEGE, Vec::new());
                }
                Some(_) => sol.take(),
            }
        };
        if let Some(a) = ended {
            a.task.abort();
            tracing::info!(system = %self.system_id, session = a.bmc_sid, by = sid, "SOL payload deactivated");
            if a.bmc_sid != sid {
                if let Some(d) = self.seal(a.bmc_sid, payload::SOL, &[0, 0, 0, DEACTIVATING]) {
                    self.send_to(&d, a.peer).await;
                }
            }
        }
        (cc::OK, Vec::new())
    }
}
