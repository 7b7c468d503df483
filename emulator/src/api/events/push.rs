//! A push subscription's HTTP client: each event a POST to the
//! destination over HTTP or HTTPS, on a connection kept between
//! deliveries, all of it async, so that a destination that is slow, dead
//! or never answers holds its own task only (no thread).
//!
//! Invariants: every address a destination resolves to passes the
//! address policy (`--event-allow-net`, `--event-reachable-net`) before a
//! connection is made, at each connection; HTTPS verifies the
//! destination's certificate against the public roots unless the
//! subscription's `VerifyCertificate` is false or the BMC was told never
//! to; a body goes with its `Content-Length`, never chunked (DMTF's Event
//! Listener answers 411 to chunked).

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, USER_AGENT};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::netpolicy::AddressPolicy;

/// How long a name lookup, or a connection (TLS included), may take.
const CONNECT: Duration = Duration::from_secs(5);
/// The most of an answer's body read (then dropped): a destination that
/// says more gets its connection closed.
const MAX_ANSWER: usize = 64 << 10;
/// The flags that open the address policy, for its refusals.
const FLAGS: &str = "--event-allow-net, --event-reachable-net";

/// Where a connection goes, and how it checks the other end.
#[derive(Clone, PartialEq, Eq)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
    verify: bool,
}

/// One subscription's client: its open connection, if any.
#[derive(Default)]
pub(super) struct Client {
    conn: Option<(Origin, SendRequest<Full<Bytes>>)>,
}

impl Client {
    /// POSTs `body` (JSON) to `url` with `headers`; `Ok` on a 2xx answer.
    pub async fn post(
        &mut self,
        url: &str,
        headers: &[(String, String)],
        body: Bytes,
        verify: bool,
        policy: &AddressPolicy,
    ) -> Result<(), String> {
        let uri: hyper::Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("{url:?} is not an http(s) URL")),
        };
        let host = uri.host().ok_or_else(|| format!("{url:?} names no host"))?;
        let origin = Origin {
            https,
            host: host.to_string(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
            verify,
        };
        let mut sender = match self.conn.take() {
            Some((o, s)) if o == origin && s.is_ready() => s,
            _ => connect(&origin, policy).await?,
        };
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let mut req = hyper::Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(HOST, authority)
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, concat!("shoal-bmc/", env!("CARGO_PKG_VERSION")))
            .header(CONTENT_LENGTH, body.len());
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(Full::new(body)).map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        // The answer's body read to its end keeps the connection for the
        // next event; one too long (or broken) closes it.
        if Limited::new(resp.into_body(), MAX_ANSWER)
            .collect()
            .await
            .is_ok()
        {
            self.conn = Some((origin, sender));
        }
        match status.is_success() {
            true => Ok(()),
            false => Err(format!("answered {}", status.as_u16())),
        }
    }
}

/// A connection to `o`: its addresses looked up (a literal one taken as
/// it is), those the policy refuses left out, the first that answers
/// taken, TLS over it for https.
async fn connect(o: &Origin, policy: &AddressPolicy) -> Result<SendRequest<Full<Bytes>>, String> {
    let bare = o.host.trim_start_matches('[').trim_end_matches(']');
    let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, o.port)],
        Err(_) => timeout(CONNECT, tokio::net::lookup_host((bare, o.port)))
            .await
            .map_err(|_| format!("{bare}: the name lookup timed out"))?
            .map_err(|e| format!("{bare}: {e}"))?
            .collect(),
    };
    let mut refused = Vec::new();
    let allowed: Vec<SocketAddr> = found
        .into_iter()
        .filter(|a| match policy.check(a.ip()) {
            Ok(()) => true,
            Err(why) => {
                refused.push(format!("{} ({why})", a.ip()));
                false
            }
        })
        .collect();
    if allowed.is_empty() {
        return Err(match refused.is_empty() {
            true => format!("{bare}: no address"),
            false => format!(
                "refused by the address policy: {} ({FLAGS})",
                refused.join(", ")
            ),
        });
    }
    let mut last = String::new();
    for a in allowed {
        match timeout(CONNECT, TcpStream::connect(a)).await {
            Ok(Ok(tcp)) => {
                let _ = tcp.set_nodelay(true);
                return timeout(CONNECT, start(tcp, o, bare))
                    .await
                    .map_err(|_| format!("{a}: the TLS handshake timed out"))?;
            }
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: the connection timed out"),
        }
    }
    Err(last)
}

/// HTTP/1.1 over `tcp` (TLS first for https); the connection's own task
/// runs until the client lets it go.
async fn start(tcp: TcpStream, o: &Origin, name: &str) -> Result<SendRequest<Full<Bytes>>, String> {
    if !o.https {
        return handshake(TokioIo::new(tcp)).await;
    }
    let name = ServerName::try_from(name.to_string()).map_err(|e| format!("{name}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(tls_config(o.verify))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    handshake(TokioIo::new(tls)).await
}

async fn handshake<T>(io: TokioIo<T>) -> Result<SendRequest<Full<Bytes>>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::handshake(io).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// The TLS client settings: the public roots (Mozilla's, as webpki-roots
/// carries them), or no verification at all.
fn tls_config(verify: bool) -> Arc<rustls::ClientConfig> {
    static VERIFYING: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    static TRUSTING: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let provider = || Arc::new(rustls::crypto::ring::default_provider());
    let builder = || {
        rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
    };
    match verify {
        true => VERIFYING.get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            Arc::new(
                builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth(),
            )
        }),
        false => TRUSTING.get_or_init(|| {
            Arc::new(
                builder()
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider())))
                    .with_no_client_auth(),
            )
        }),
    }
    .clone()
}

/// Takes any certificate (`VerifyCertificate: false`); the handshake's
/// signatures are still checked, so the server holds the key it shows.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
