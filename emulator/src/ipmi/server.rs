//! The UDP loop of one BMC: datagrams handled concurrently up to a bound,
//! the BMC's timers on a tick of their own, everything ended by the stop
//! flag.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;
use tokio::sync::{watch, Semaphore};

use super::{wire, Bmc};
use crate::bmc::changes::{with_cause, Cause};
use crate::sync::lock;

/// Datagrams handled at once per socket; more are dropped, as a busy
/// BMC drops them (clients retransmit).
const IN_FLIGHT: usize = 256;

/// Serves `bmc` on `socket` until `stop` turns true.
pub async fn serve(
    socket: UdpSocket,
    bmc: Arc<Bmc>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let socket = Arc::new(socket);
    bmc.set_outbound(socket.clone());
    let result = receive(&socket, &bmc, &mut stop).await;
    // No SOL task outlives its listener.
    if let Some(a) = lock(&bmc.sol).take() {
        a.task.abort();
    }
    result
}

async fn receive(
    socket: &Arc<UdpSocket>,
    bmc: &Arc<Bmc>,
    stop: &mut watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut buf = vec![0u8; wire::MAX_DATAGRAM + 1];
    loop {
        let (n, peer) = tokio::select! {
            _ = stopped(stop) => break,
            r = socket.recv_from(&mut buf) => match r {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(error = %e, "IPMI receive failed");
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let datagram = buf[..n].to_vec();
        let bmc = bmc.clone();
        let socket = socket.clone();
        tokio::spawn(async move {
            let _slot = slot;
            if let Some(reply) = bmc.handle(&datagram, peer).await {
                if let Err(e) = socket.send_to(&reply, peer).await {
                    tracing::debug!(%peer, error = %e, "IPMI send failed");
                }
            }
        });
    }
    Ok(())
}

/// The BMC's timers (watchdog, sessions, boot flags, identify), on a
/// one-second tick of their own until `stop`: they run whichever sides
/// (LAN, in-band) the BMC serves. A tick may wait for the system's lock
/// (a Redfish request can hold it for a download), so each runs apart and
/// a slow one is not started again before it ends.
pub async fn timers(bmc: Arc<Bmc>, mut stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut running: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            _ = tick.tick() => {
                if running.as_ref().is_some_and(|t| !t.is_finished()) {
                    continue;
                }
                let bmc = bmc.clone();
                running = Some(tokio::spawn(async move {
                    let timers = Cause::Bmc("IPMI timers".into());
                    with_cause(timers, bmc.tick(Instant::now())).await
                }));
            }
        }
    }
    // A tick still waiting (for the system's lock) ends with the BMC.
    if let Some(t) = running {
        t.abort();
    }
    Ok(())
}

/// Resolves once the flag turns true (or its sender is gone).
async fn stopped(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|s| *s).await;
}
