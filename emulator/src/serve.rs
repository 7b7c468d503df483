//! The accept loop every listener runs, HTTP or HTTPS: HTTP/1.1 through
//! hyper, with the limits a service on a lab network needs against slow,
//! idle and too many clients.
//!
//! - A connection must deliver each request's headers within
//!   [`Limits::header_timeout`]; that clock also runs while a kept-alive
//!   connection sits idle, so idle and half-open connections are closed.
//! - A TLS handshake must finish within the same time.
//! - At most [`Limits::max_connections`] connections are served at once,
//!   over all the process's listeners;
//!   one over the cap is closed as soon as it is accepted, so the listen
//!   backlog never fills with clients that wait forever.
//! - Request bodies are bounded in size and time by `api::guard`.
//!
//! On stop the listener closes, open connections finish the request they
//! are in (for at most [`DRAIN`]) and are closed.
//!
//! A [`Downtime`] takes a listener down for a while, as a BMC that reboots
//! is gone: the listening socket closes (connections are refused), open
//! connections are cut, and the same address listens again afterwards.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How long open connections may take to finish once a stop is asked.
pub const DRAIN: Duration = Duration::from_secs(5);

/// The bounds on clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            header_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// The connection slots of a process: every listener takes from the
    /// same ones, so the cap holds however many endpoints it serves.
    pub fn slots(&self) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(self.max_connections))
    }
}

/// When a listener is down: set by what reboots the BMC behind it, read
/// by its accept loop.
pub struct Downtime(watch::Sender<Option<Instant>>);

impl Default for Downtime {
    fn default() -> Self {
        Downtime(watch::channel(None).0)
    }
}

impl Downtime {
    /// The listener goes down now and listens again at `until`.
    pub fn until(&self, until: Instant) {
        self.0.send_replace(Some(until));
    }

    pub fn subscribe(&self) -> watch::Receiver<Option<Instant>> {
        self.0.subscribe()
    }
}

/// Resolves when a downtime is asked; never once its sender is gone.
async fn downtime_asked(down: &mut Option<watch::Receiver<Option<Instant>>>) -> Option<Instant> {
    let Some(rx) = down else {
        return std::future::pending().await;
    };
    match rx.changed().await {
        Ok(()) => *rx.borrow_and_update(),
        Err(_) => {
            *down = None;
            std::future::pending().await
        }
    }
}

/// Serves `router` on `listener` until `stop` turns true; each connection
/// holds one of `slots` while it is open. `down`, when given, takes the
/// listener down for the times it names.
pub async fn serve(
    listener: std::net::TcpListener,
    router: axum::Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    slots: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
    mut down: Option<watch::Receiver<Option<Instant>>>,
) -> Result<()> {
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let mut listener = tokio::net::TcpListener::from_std(listener)?;
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let (closing_tx, closing) = watch::channel(false);
    let mut conns = JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = stopped(&mut stop) => break,
            asked = downtime_asked(&mut down) => {
                let Some(until) = asked.filter(|u| *u > Instant::now()) else { continue };
                drop(listener);
                conns.abort_all();
                tracing::info!(%addr, secs = (until - Instant::now()).as_secs(), "listener down (the BMC resets)");
                match relisten(addr, until, &mut stop).await? {
                    Some(l) => listener = l,
                    None => return Ok(()),
                }
                tracing::info!(%addr, "listening again");
                continue;
            }
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: the listener stays.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Reap finished connections so the set stays small.
        while conns.try_join_next().is_some() {}
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "connection refused: too many open");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let tls = tls.clone();
        let closing = closing.clone();
        conns.spawn(async move {
            let _slot = slot;
            match tls {
                None => connection(stream, router, limits, closing, peer).await,
                Some(acceptor) => {
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await
                    {
                        Ok(Ok(s)) => connection(s, router, limits, closing, peer).await,
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = closing_tx.send(true);
    let drained =
        tokio::time::timeout(DRAIN, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::info!(open = conns.len(), "closing connections still open");
        conns.shutdown().await;
    }
    Ok(())
}

/// Listens on `addr` again from `until` (retrying while the address is
/// still taken); `None` when a stop came first.
async fn relisten(
    addr: SocketAddr,
    until: Instant,
    stop: &mut watch::Receiver<bool>,
) -> Result<Option<tokio::net::TcpListener>> {
    tokio::select! {
        _ = stopped(stop) => return Ok(None),
        _ = tokio::time::sleep_until(until) => {}
    }
    loop {
        match std::net::TcpListener::bind(addr) {
            Ok(l) => {
                l.set_nonblocking(true)?;
                return Ok(Some(tokio::net::TcpListener::from_std(l)?));
            }
            Err(e) => tracing::warn!(%addr, error = %e, "cannot listen again yet"),
        }
        tokio::select! {
            _ = stopped(stop) => return Ok(None),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}

/// Resolves once the flag turns true (or its sender is gone).
async fn stopped(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|s| *s).await;
}

async fn connection<I>(
    io: I,
    router: axum::Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
    peer: SocketAddr,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(tower::service_fn(move |req| {
        crate::access::logged(router.clone(), req, peer)
    }));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = stopped(&mut closing) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended");
    }
}

/// The TLS configuration of an HTTPS listener: the PEM certificate chain
/// and key given, TLS 1.2 and 1.3, HTTP/1.1.
pub fn tls_config(cert: &std::path::Path, key: &std::path::Path) -> Result<rustls::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("{}: cannot read certificate", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: bad PEM certificate", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no certificate found", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("{}: cannot read private key", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not match")?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn start(limits: Limits) -> (SocketAddr, watch::Sender<bool>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let (tx, rx) = watch::channel(false);
        tokio::spawn(serve(l, router, None, limits, limits.slots(), rx, None));
        (addr, tx)
    }

    /// Reads until EOF; `None` when nothing came back within `within`.
    async fn read_to_close(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        tokio::time::timeout(within, s.read_to_end(&mut out))
            .await
            .ok()?
            .ok()?;
        Some(out)
    }

    #[tokio::test]
    async fn a_downtime_refuses_connections_cuts_open_ones_and_listens_again() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let (_tx, rx) = watch::channel(false);
        let limits = Limits::default();
        let down = Downtime::default();
        tokio::spawn(serve(
            l,
            router,
            None,
            limits,
            limits.slots(),
            rx,
            Some(down.subscribe()),
        ));
        let get = |mut s: TcpStream| async move {
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 256];
            let n = s.read(&mut buf).await.unwrap();
            String::from_utf8_lossy(&buf[..n]).to_string()
        };
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 256];
        assert!(kept.read(&mut buf).await.unwrap() > 0);
        down.until(Instant::now() + Duration::from_millis(800));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "refused while down"
        );
        assert!(
            read_to_close(&mut kept, Duration::from_secs(2))
                .await
                .is_some(),
            "an open connection is cut"
        );
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let s = TcpStream::connect(addr).await.expect("listening again");
        assert!(get(s).await.starts_with("HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn slow_and_idle_clients_are_closed() {
        let limits = Limits {
            header_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let (addr, _stop) = start(limits).await;
        // Half a request line, then silence.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        assert!(
            read_to_close(&mut slow, Duration::from_secs(5))
                .await
                .is_some(),
            "a client that never finishes its headers is closed"
        );
        // Nothing at all.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        assert!(read_to_close(&mut idle, Duration::from_secs(5))
            .await
            .is_some());
        // One answered request, then an idle keep-alive.
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let all = read_to_close(&mut kept, Duration::from_secs(5))
            .await
            .expect("closed after idling");
        assert!(all.starts_with(b"HTTP/1.1 200"), "{all:?}");
    }

    #[tokio::test]
    async fn connections_over_the_cap_are_closed_at_once() {
        let limits = Limits {
            max_connections: 2,
            header_timeout: Duration::from_secs(30),
        };
        let (addr, _stop) = start(limits).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            // A full round trip proves the server took this one.
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0u8; 12];
            s.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"HTTP/1.1 200");
            held.push(s);
        }
        let mut third = TcpStream::connect(addr).await.unwrap();
        let got = read_to_close(&mut third, Duration::from_secs(5)).await;
        assert_eq!(got, Some(Vec::new()), "closed without an answer");
        // A slot freed is a slot taken again.
        drop(held.pop());
        let ok = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .await
                    .unwrap();
                let mut out = Vec::new();
                let _ = s.read_to_end(&mut out).await;
                if out.starts_with(b"HTTP/1.1 200") {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(ok.is_ok(), "a freed slot serves again");
    }

    #[tokio::test]
    async fn stop_closes_the_listener_and_idle_connections() {
        let (addr, stop) = start(Limits::default()).await;
        let mut idle = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(true).unwrap();
        assert!(read_to_close(&mut idle, DRAIN + Duration::from_secs(2))
            .await
            .is_some());
    }
}
