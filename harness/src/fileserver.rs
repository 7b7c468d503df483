//! The boot file server: serves a folder over HTTP with the Content-Type
//! HttpBootDxe decides on (`.efi`, `.iso`, `.img`), GET and HEAD, ranges
//! as RFC 9110 has them ([`range`]), files streamed from disk, and logs
//! every request (`METHOD PATH STATUS BYTES`, one line each, BYTES the
//! body's length) so scenarios can assert on what the machine fetched.
//! Only files inside the folder are served: a path whose canonical form
//! (symlinks resolved) leaves it is not found. `POST /heartbeat` appends
//! its body as one line to `heartbeat.log` beside the request log
//! ([`heartbeat`], capped); `POST /events` (a BMC's event deliveries)
//! appends each to `<log>-events.jsonl` beside it, the same way.
//! [`serve_tls`] serves the same over HTTPS: each
//! request's line then ends with the TLS version and cipher, and a failed
//! handshake is a line of its own (`TLS-HANDSHAKE-FAILED PEER REASON`).

mod heartbeat;
mod range;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::lock;
use range::Answer;

struct Server {
    root: PathBuf,
    /// The folder's own absolute path, served as an alias of `/`: boot
    /// configurations that name files by their path on the server (Ironic's
    /// grub.cfg sources `<tftp_root>/<mac>.conf`) find them, as an nginx
    /// `location <root> { alias <root>; }` lets them.
    alias: Option<String>,
    log: Mutex<std::fs::File>,
    heartbeats: Mutex<heartbeat::Log>,
    /// The events a BMC pushed here, one JSON line each.
    events: Mutex<heartbeat::Log>,
}

/// Where the events a server received are: `<log's stem>-events.jsonl`.
pub fn events_log(log: &Path) -> PathBuf {
    let stem = log.file_stem().and_then(|s| s.to_str()).unwrap_or("http");
    log.with_file_name(format!("{stem}-events.jsonl"))
}

/// The Content-Type for a file name.
pub fn content_type(name: &str) -> &'static str {
    match name
        .rsplit('.')
        .next()
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("efi") => "application/efi",
        Some("iso") => "application/vnd.efi-iso",
        Some("img") => "application/vnd.efi-img",
        Some("cfg") | Some("txt") | Some("ipxe") => "text/plain",
        _ => "application/octet-stream",
    }
}

/// What `headers` ask of a file of `len` bytes. Range applies to GET only
/// (RFC 9110 §14.2: HEAD answers as a GET without it would); with
/// `If-Range`, whose validator this server never issued, or with more
/// than one Range field, the whole file.
fn ranged(method: &Method, headers: &HeaderMap, len: u64) -> Answer {
    let mut fields = headers.get_all(header::RANGE).iter();
    match (fields.next(), fields.next()) {
        (Some(v), None) if method == Method::GET && !headers.contains_key(header::IF_RANGE) => {
            v.to_str().map_or(Answer::Whole, |v| range::answer(v, len))
        }
        _ => Answer::Whole,
    }
}

async fn handle(State(s): State<Arc<Server>>, req: Request) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let tls = req
        .extensions()
        .get::<TlsInfo>()
        .map(|t| format!(" {}", t.0));
    let (resp, bytes) = if method == Method::POST && path == "/heartbeat" {
        (
            append(&s.heartbeats, heartbeat::MAX_LINE, req.into_body()).await,
            0,
        )
    } else if method == Method::POST && path == "/events" {
        (append(&s.events, EVENT_MAX_LINE, req.into_body()).await, 0)
    } else if method == Method::GET || method == Method::HEAD {
        let local = s
            .alias
            .as_deref()
            .and_then(|a| path.strip_prefix(a))
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or(&path);
        serve_file(&s.root, local, &method, req.headers()).await
    } else {
        (StatusCode::METHOD_NOT_ALLOWED.into_response(), 0)
    };
    let mut log = lock(&s.log);
    let tls = tls.unwrap_or_default();
    let _ = writeln!(
        log,
        "{method} {path} {} {bytes}{tls}",
        resp.status().as_u16()
    );
    let _ = log.flush();
    resp
}

/// An event delivery's cap (one Event, its records included).
const EVENT_MAX_LINE: usize = 64 << 10;

/// `POST /heartbeat` or `/events`: 204 once written; 413 over the line
/// cap, 507 when the log is full.
async fn append(to: &Mutex<heartbeat::Log>, max: usize, body: Body) -> Response {
    let body = match axum::body::to_bytes(body, max).await {
        Ok(body) => body,
        Err(e) if too_long(&e) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
        Err(_) => return StatusCode::BAD_REQUEST.into_response(),
    };
    let mut log = lock(to);
    match log.append(&body) {
        Ok(()) => StatusCode::NO_CONTENT,
        Err(heartbeat::Refused::TooLong) => StatusCode::PAYLOAD_TOO_LARGE,
        Err(heartbeat::Refused::Full) => StatusCode::INSUFFICIENT_STORAGE,
        Err(heartbeat::Refused::Io) => StatusCode::INTERNAL_SERVER_ERROR,
    }
    .into_response()
}

/// Whether a body error is `to_bytes`'s limit.
fn too_long(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The file `path` names under `root`, opened, if it is a regular file
/// whose canonical path lies inside the canonical `root`.
async fn open_inside(root: &Path, path: &str) -> Option<(tokio::fs::File, String)> {
    let rel = path.trim_start_matches('/');
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    let root = tokio::fs::canonicalize(root).await.ok()?;
    let file = tokio::fs::canonicalize(root.join(rel)).await.ok()?;
    if !file.starts_with(&root) {
        return None; // a symlink out of the folder
    }
    let f = tokio::fs::File::open(&file).await.ok()?;
    f.metadata()
        .await
        .ok()?
        .is_file()
        .then(|| (f, rel.to_string()))
}

/// Bytes read from `file` in chunks until `n` have been sent; a file that
/// ends early fails the body (the connection closes short of
/// Content-Length, as a client sees it).
fn stream(file: tokio::fs::File, n: u64) -> Body {
    const CHUNK: usize = 64 << 10;
    let state = Some((file.take(n), n));
    Body::from_stream(futures_util::stream::unfold(state, |state| async move {
        let (mut file, left) = state?;
        if left == 0 {
            return None;
        }
        let mut buf = bytes::BytesMut::with_capacity(CHUNK.min(left as usize));
        match file.read_buf(&mut buf).await {
            Ok(0) => Some((Err(std::io::ErrorKind::UnexpectedEof.into()), None)),
            Ok(got) => Some((Ok(buf.freeze()), Some((file, left - got as u64)))),
            Err(e) => Some((Err::<bytes::Bytes, std::io::Error>(e), None)),
        }
    }))
}

async fn serve_file(
    root: &Path,
    path: &str,
    method: &Method,
    headers: &HeaderMap,
) -> (Response, u64) {
    let Some((mut file, rel)) = open_inside(root, path).await else {
        return (StatusCode::NOT_FOUND.into_response(), 0);
    };
    let Ok(len) = file.metadata().await.map(|m| m.len()) else {
        return (StatusCode::NOT_FOUND.into_response(), 0);
    };
    let r = Response::builder().header(header::ACCEPT_RANGES, "bytes");
    let (r, first, n) = match ranged(method, headers, len) {
        Answer::Whole => (r.status(StatusCode::OK), 0, len),
        Answer::Part { first, last } => (
            r.status(StatusCode::PARTIAL_CONTENT)
                .header(header::CONTENT_RANGE, format!("bytes {first}-{last}/{len}")),
            first,
            last - first + 1,
        ),
        Answer::Unsatisfiable => {
            let r = r
                .status(StatusCode::RANGE_NOT_SATISFIABLE)
                .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                .header(header::CONTENT_LENGTH, "0")
                .body(Body::empty());
            return (
                r.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
                0,
            );
        }
    };
    let r = r
        .header(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(&rel)),
        )
        .header(header::CONTENT_LENGTH, n.to_string());
    let (body, sent) = if method == Method::HEAD {
        (Body::empty(), 0)
    } else if first > 0 && file.seek(std::io::SeekFrom::Start(first)).await.is_err() {
        return (StatusCode::INTERNAL_SERVER_ERROR.into_response(), 0);
    } else {
        (stream(file, n), n)
    };
    let resp = r.body(body);
    (
        resp.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        sent,
    )
}

/// The router for `root`, logging to `log` (heartbeats beside it).
pub fn router(root: &Path, log: &Path) -> std::io::Result<Router> {
    let heartbeat_log = log.with_file_name("heartbeat.log");
    let alias = std::fs::canonicalize(root)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .filter(|p| p != "/");
    let s = Arc::new(Server {
        root: root.to_path_buf(),
        alias,
        log: Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)?,
        ),
        heartbeats: Mutex::new(heartbeat::Log::open(
            &heartbeat_log,
            heartbeat::MAX_LINE,
            heartbeat::MAX_BYTES,
        )?),
        events: Mutex::new(heartbeat::Log::open(
            &events_log(log),
            EVENT_MAX_LINE,
            4 * heartbeat::MAX_BYTES,
        )?),
    });
    Ok(Router::new().fallback(handle).with_state(s))
}

/// Serves until the process is stopped; prints `serving on ADDR` once bound.
pub async fn run(root: &Path, addr: SocketAddr, log: &Path) -> anyhow::Result<()> {
    let app = router(root, log)?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("serving on {}", listener.local_addr()?);
    serve(listener, app).await?;
    Ok(())
}

/// Serves `app` over HTTP/1.1 with header names in Title-Case, as nginx
/// and Apache write them: grub's HTTP client (2.12, net/http.c) matches
/// `Content-Length: ` case-sensitively and reads a lower-case header as
/// none, so a file it fetches itself (grub.cfg) comes out empty.
pub async fn serve(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    loop {
        // As axum::serve: a failed accept (a connection reset before it was
        // taken, or no file descriptor left) costs that connection, not
        // the server.
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                continue;
            }
        };
        let app = app.clone();
        tokio::spawn(async move {
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    tower::ServiceExt::oneshot(app.clone(), req)
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .title_case_headers(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// The TLS version and cipher of the connection a request came on.
#[derive(Clone)]
struct TlsInfo(Arc<str>);

/// [`serve`] over TLS: each connection's handshake through `acceptor`
/// (within 30 s); a failed one is logged to `log` with the peer and
/// OpenSSL's reason, and costs only that connection.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    app: Router,
    acceptor: Arc<openssl::ssl::SslAcceptor>,
    log: &Path,
) -> std::io::Result<()> {
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?,
    ));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                continue;
            }
        };
        let (app, acceptor, log) = (app.clone(), acceptor.clone(), log.clone());
        tokio::spawn(async move {
            let failed = |reason: String| {
                let mut log = lock(&log);
                let _ = writeln!(log, "TLS-HANDSHAKE-FAILED {} {reason}", peer.ip());
                let _ = log.flush();
            };
            let ssl = match openssl::ssl::Ssl::new(acceptor.context()) {
                Ok(s) => s,
                Err(e) => return failed(e.to_string()),
            };
            let mut tls = match tokio_openssl::SslStream::new(ssl, stream) {
                Ok(s) => s,
                Err(e) => return failed(e.to_string()),
            };
            let handshake = std::pin::Pin::new(&mut tls).accept();
            match tokio::time::timeout(std::time::Duration::from_secs(30), handshake).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let reason = e
                        .ssl_error()
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| e.to_string());
                    return failed(reason.replace('\n', " "));
                }
                Err(_) => return failed("no handshake within 30 s".into()),
            }
            let info = TlsInfo(
                format!(
                    "{} {}",
                    tls.ssl().version_str(),
                    tls.ssl().current_cipher().map_or("?", |c| c.name())
                )
                .into(),
            );
            let svc = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(info.clone());
                    tower::ServiceExt::oneshot(app.clone(), req)
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .title_case_headers(true)
                .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                .await;
        });
    }
}

#[cfg(test)]
mod tests;

/// The flags of `shoal-harness serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    #[arg(long, default_value = "http.log")]
    log: PathBuf,
}

impl ServeArgs {
    /// Serves until killed.
    pub fn serve(self) -> anyhow::Result<std::process::ExitCode> {
        let rt = tokio::runtime::Runtime::new()?;
        rt.block_on(run(&self.dir, self.bind, &self.log))?;
        Ok(std::process::ExitCode::SUCCESS)
    }
}
