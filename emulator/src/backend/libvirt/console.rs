//! A domain's serial console for the BMC's Serial-over-LAN, through
//! libvirt's console stream (`virDomainOpenConsole`), never a pty opened
//! by hand.
//!
//! One pump per domain while anyone listens: a thread that waits for the
//! domain to run, opens its console (taking it over from any other
//! client, as a BMC owns the host's serial port), moves bytes both ways
//! until the domain stops, and then waits for its next start. What the
//! machine prints goes to a broadcast channel that each listener
//! subscribes to; what is typed comes through one channel, and is lost
//! while the machine is off, as on a real serial line. The pump ends once
//! nobody listens.
//!
//! libvirt serves consoles of pty character devices only: a domain whose
//! console is a file (or absent) has none to give (`Unsupported::Console`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::runtime::Handle;
use tokio::sync::{broadcast, mpsc};
use virt::stream::Stream;
use virt::sys;

use super::{virt_err, xml, Inner};
use crate::backend::{Result, SerialConsole};
use crate::sync::lock;

/// How often a pump looks whether its domain runs, and whether anyone
/// still listens.
const POLL: Duration = Duration::from_millis(250);
/// Console output kept for a listener that lags (chunks of up to 4 KiB).
const BACKLOG: usize = 256;

/// The pumps running now, by domain UUID.
#[derive(Default)]
pub(super) struct Pumps {
    map: Mutex<HashMap<String, Arc<Pump>>>,
}

struct Pump {
    output: broadcast::Sender<Bytes>,
    input: mpsc::Sender<Bytes>,
}

/// Whether the domain definition's console is one libvirt can stream: the
/// `<console>` (else the first `<serial>`) device is a pty.
pub(super) fn streamable(d: &xml::Element) -> bool {
    let Some(devices) = d.child("devices") else {
        return false;
    };
    let device = devices
        .elements()
        .find(|e| e.name == "console")
        .or_else(|| devices.elements().find(|e| e.name == "serial"));
    device.and_then(|e| e.attr("type")) == Some("pty")
}

/// A listener on domain `id`'s console: the running pump's, or a new one.
pub(super) fn attach(inner: &Arc<Inner>, id: &str, rt: Handle) -> Result<SerialConsole> {
    let mut map = lock(&inner.consoles.map);
    if let Some(p) = map.get(id) {
        return Ok(SerialConsole {
            output: p.output.subscribe(),
            input: p.input.clone(),
        });
    }
    let (output, listener) = broadcast::channel(BACKLOG);
    let (input, typed) = mpsc::channel(64);
    let pump = Arc::new(Pump { output, input });
    let console = SerialConsole {
        output: listener,
        input: pump.input.clone(),
    };
    let (inner2, id2, pump2) = (inner.clone(), id.to_string(), pump.clone());
    std::thread::Builder::new()
        .name(format!("console-{}", &id[..id.len().min(8)]))
        .spawn(move || run(inner2, id2, pump2, typed, rt))
        .map_err(|e| crate::backend::BackendError::Internal(format!("console thread: {e}")))?;
    map.insert(id.to_string(), pump);
    Ok(console)
}

/// The pump of domain `id`: opens its console whenever it runs, until
/// nobody listens.
fn run(
    inner: Arc<Inner>,
    id: String,
    pump: Arc<Pump>,
    mut typed: mpsc::Receiver<Bytes>,
    rt: Handle,
) {
    // The last reason the console could not be had, logged once.
    let mut failing: Option<String> = None;
    loop {
        {
            // Decided under the map's lock, where `attach` subscribes: a
            // listener either finds this pump alive or starts another.
            let mut map = lock(&inner.consoles.map);
            if pump.output.receiver_count() == 0 {
                if map.get(&id).is_some_and(|p| Arc::ptr_eq(p, &pump)) {
                    map.remove(&id);
                }
                tracing::debug!(domain = %id, "console pump ended: nobody listens");
                return;
            }
        }
        let started = std::time::Instant::now();
        match open(&inner, &id) {
            Ok(Some(stream)) => {
                failing = None;
                tracing::info!(domain = %id, "console opened");
                carry(stream, &pump, &mut typed, &rt);
                tracing::info!(domain = %id, "console closed");
            }
            Ok(None) => {}
            Err(crate::backend::BackendError::NotFound(_)) => {
                // The domain is gone: so is its console. Its listeners see
                // the channel close.
                tracing::info!(domain = %id, "console ended: the domain is gone");
                let mut map = lock(&inner.consoles.map);
                if map.get(&id).is_some_and(|p| Arc::ptr_eq(p, &pump)) {
                    map.remove(&id);
                }
                return;
            }
            Err(e) => {
                let e = e.to_string();
                if failing.as_ref() != Some(&e) {
                    tracing::warn!(domain = %id, error = %e, "console not available");
                    failing = Some(e);
                }
            }
        }
        // Off, unavailable, or a stream that ended at once (the domain
        // stopping, another client taking the console): what was typed
        // meanwhile is lost, as on a serial line, and the next try waits.
        while typed.try_recv().is_ok() {}
        if let Some(rest) = POLL.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

/// The console stream of domain `id` when it runs.
fn open(inner: &Inner, id: &str) -> Result<Option<Stream>> {
    let (conn, dom) = inner.domain(id)?;
    if !dom.is_active().map_err(virt_err)? {
        return Ok(None);
    }
    let stream = inner.with_conn(conn, |c| Stream::new(c, 0))?;
    dom.open_console(None, &stream, sys::VIR_DOMAIN_CONSOLE_FORCE)
        .map_err(virt_err)?;
    Ok(Some(stream))
}

/// Moves bytes both ways on `stream` until the domain stops (the stream
/// ends), or nobody listens (the stream is aborted); then releases the
/// stream as libvirt asks (finished at its end, aborted otherwise), so
/// that the connection keeps no stream of a stopped domain.
fn carry(stream: Stream, pump: &Pump, typed: &mut mpsc::Receiver<Bytes>, rt: &Handle) {
    let stream = Arc::new(stream);
    let ended = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stream, output, ended) = (stream.clone(), pump.output.clone(), ended.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            // 0: the end of the stream; an error: it was aborted or lost.
            let eof = loop {
                match stream.recv(&mut buf) {
                    // No listener left: this chunk is dropped, the pump
                    // sees it.
                    Ok(n @ 1..) => drop(output.send(Bytes::copy_from_slice(&buf[..n as usize]))),
                    Ok(_) => break true,
                    Err(e) => {
                        tracing::debug!(error = %e.message(), "console stream ended");
                        break false;
                    }
                }
            };
            ended.store(true, Ordering::SeqCst);
            eof
        })
    };
    let mut aborted = false;
    while !ended.load(Ordering::SeqCst) && pump.output.receiver_count() > 0 {
        match rt.block_on(async { tokio::time::timeout(POLL, typed.recv()).await }) {
            Ok(Some(bytes)) => {
                if !send_all(&stream, &bytes) {
                    tracing::debug!("console input refused");
                    break;
                }
            }
            // Every sender is gone: the pump itself holds one, so never.
            Ok(None) => break,
            Err(_) => {}
        }
    }
    if !ended.load(Ordering::SeqCst) {
        // SAFETY: the pointer is the stream's own, valid while `stream`
        // (an Arc this function holds) lives. virStreamAbort may be called
        // while another thread waits in virStreamRecv on the same stream:
        // the waiting receive then returns an error ("stream is closed",
        // seen with libvirt 11.3 when a SOL session ends), which ends the
        // reader.
        unsafe { sys::virStreamAbort(stream.as_ptr()) };
        aborted = true;
    }
    let eof = reader.join().unwrap_or(false);
    // The reader's handle is gone with it: this is the last one.
    if let Ok(stream) = Arc::try_unwrap(stream) {
        let released = match (eof, aborted) {
            (true, false) => stream.finish(),
            (_, true) => Ok(()),
            (false, false) => stream.abort(),
        };
        if let Err(e) = released {
            tracing::debug!(error = %e.message(), "console stream release");
        }
    }
}

/// Sends all of `bytes`; false when the stream is gone.
fn send_all(stream: &Stream, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match stream.send(bytes) {
            Ok(n) if n > 0 => bytes = &bytes[n as usize..],
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pty_consoles_are_streamed() {
        let d = |devices: &str| {
            xml::parse(&format!("<domain><devices>{devices}</devices></domain>")).unwrap()
        };
        assert!(streamable(&d("<serial type='pty'/><console type='pty'/>")));
        assert!(streamable(&d(
            "<serial type='pty'><log file='/x'/></serial>"
        )));
        assert!(!streamable(&d(
            "<serial type='file'/><console type='file'/>"
        )));
        assert!(!streamable(&d(
            "<serial type='pty'/><console type='file'/>"
        )));
        assert!(!streamable(&d("")));
        assert!(!streamable(&xml::parse("<domain/>").unwrap()));
    }
}
