//! The boot file server: serves a folder over HTTP with the Content-Type
//! HttpBootDxe decides on (`.efi`, `.iso`, `.img`), HEAD and single Range
//! requests, and logs every request (`METHOD PATH STATUS BYTES`, one line
//! each) so scenarios can assert on what the machine fetched. `POST
//! /heartbeat` appends its body to `heartbeat.log` beside the request log.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

struct Server {
    root: PathBuf,
    /// The folder's own absolute path, served as an alias of `/`: boot
    /// configurations that name files by their path on the server (Ironic's
    /// grub.cfg sources `<tftp_root>/<mac>.conf`) find them, as an nginx
    /// `location <root> { alias <root>; }` lets them.
    alias: Option<String>,
    log: Mutex<std::fs::File>,
    heartbeats: Mutex<std::fs::File>,
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

/// Parses `bytes=a-b`, `bytes=a-` or `bytes=-n` against a length.
fn range(headers: &HeaderMap, len: u64) -> Option<Result<(u64, u64), ()>> {
    let v = headers.get(header::RANGE)?.to_str().ok()?;
    let spec = v.strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None; // multi-range: serve the whole file
    }
    let (a, b) = spec.split_once('-')?;
    let r = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) if a <= b && a < len => Ok((a, b.min(len - 1))),
        (Ok(a), Err(_)) if b.is_empty() && a < len => Ok((a, len - 1)),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => Ok((len.saturating_sub(n), len - 1)),
        _ => Err(()),
    };
    Some(r)
}

async fn handle(State(s): State<Arc<Server>>, req: Request) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let headers = req.headers().clone();
    let (resp, bytes) = if method == Method::POST && path == "/heartbeat" {
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        let mut f = s.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f
            .write_all(&body)
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.flush());
        (StatusCode::NO_CONTENT.into_response(), 0)
    } else if method == Method::GET || method == Method::HEAD {
        let local = s
            .alias
            .as_deref()
            .and_then(|a| path.strip_prefix(a))
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or(&path);
        serve_file(&s.root, local, &headers, method == Method::HEAD).await
    } else {
        (StatusCode::METHOD_NOT_ALLOWED.into_response(), 0)
    };
    let mut log = s.log.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(log, "{method} {path} {} {bytes}", resp.status().as_u16());
    let _ = log.flush();
    resp
}

async fn serve_file(root: &Path, path: &str, headers: &HeaderMap, head: bool) -> (Response, u64) {
    let rel = path.trim_start_matches('/');
    if rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return (StatusCode::NOT_FOUND.into_response(), 0);
    }
    let file = root.join(rel);
    let Ok(data) = tokio::fs::read(&file).await else {
        return (StatusCode::NOT_FOUND.into_response(), 0);
    };
    let len = data.len() as u64;
    let ct = HeaderValue::from_static(content_type(rel));
    let (status, body) = match range(headers, len) {
        Some(Ok((a, b))) => (
            StatusCode::PARTIAL_CONTENT,
            data[a as usize..=b as usize].to_vec(),
        ),
        Some(Err(())) => {
            let mut r = StatusCode::RANGE_NOT_SATISFIABLE.into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return (r, 0);
        }
        None => (StatusCode::OK, data),
    };
    let sent = body.len() as u64;
    let mut r = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, ct)
        .header(header::ACCEPT_RANGES, "bytes");
    if status == StatusCode::PARTIAL_CONTENT {
        let (a, b) = match range(headers, len) {
            Some(Ok(ab)) => ab,
            _ => (0, len.saturating_sub(1)),
        };
        r = r.header(header::CONTENT_RANGE, format!("bytes {a}-{b}/{len}"));
    }
    let r = r.header(header::CONTENT_LENGTH, sent.to_string());
    let resp = if head {
        r.body(Body::empty())
    } else {
        r.body(Body::from(body))
    };
    (
        resp.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        if head { 0 } else { sent },
    )
}

/// The router for `root`, logging to `log` (heartbeats beside it).
pub fn router(root: &Path, log: &Path) -> std::io::Result<Router> {
    let open = |p: &Path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
    };
    let heartbeat_log = log.with_file_name("heartbeat.log");
    let alias = std::fs::canonicalize(root)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .filter(|p| p != "/");
    let s = Arc::new(Server {
        root: root.to_path_buf(),
        alias,
        log: Mutex::new(open(log)?),
        heartbeats: Mutex::new(open(&heartbeat_log)?),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn header_names_go_out_in_title_case_as_grub_needs() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("grub.cfg"), "echo hello\n").unwrap();
        let app = router(dir.path(), &dir.path().join("log")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, app));
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /grub.cfg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).await.unwrap();
        assert!(text.contains("\r\nContent-Length: 11\r\n"), "{text}");
        assert!(text.ends_with("echo hello\n"), "{text}");
    }

    #[test]
    fn content_types_follow_http_boot() {
        assert_eq!(content_type("boot.ISO"), "application/vnd.efi-iso");
        assert_eq!(content_type("a/b/bootx64.efi"), "application/efi");
        assert_eq!(content_type("disk.img"), "application/vnd.efi-img");
    }

    #[test]
    fn ranges() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::RANGE, HeaderValue::from_str(v).unwrap());
            m
        };
        assert_eq!(range(&h("bytes=0-9"), 100), Some(Ok((0, 9))));
        assert_eq!(range(&h("bytes=90-"), 100), Some(Ok((90, 99))));
        assert_eq!(range(&h("bytes=-10"), 100), Some(Ok((90, 99))));
        assert_eq!(range(&h("bytes=100-"), 100), Some(Err(())));
        assert_eq!(range(&HeaderMap::new(), 100), None);
    }

    #[tokio::test]
    async fn serves_logs_and_takes_heartbeats() {
        use tower::ServiceExt;
        let oneshot = |app: &Router, req| app.clone().oneshot(req);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.efi"), b"0123456789").unwrap();
        let log = dir.path().join("http.log");
        let app = router(dir.path(), &log).unwrap();
        let get = |path: &str, range: Option<&str>| {
            let mut b = axum::http::Request::builder().uri(path);
            if let Some(r) = range {
                b = b.header("Range", r);
            }
            b.body(Body::empty()).unwrap()
        };
        let r = oneshot(&app, get("/x.efi", None)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "application/efi");
        let r = oneshot(&app, get("/x.efi", Some("bytes=2-4")))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(r.headers()["content-range"], "bytes 2-4/10");
        assert_eq!(
            axum::body::to_bytes(r.into_body(), 100).await.unwrap(),
            "234"
        );
        // The folder's own absolute path is an alias of the root.
        let abs = std::fs::canonicalize(dir.path()).unwrap();
        let aliased = format!("{}/x.efi", abs.display());
        let r = oneshot(&app, get(&aliased, None)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let outside = format!("{}x/x.efi", abs.display());
        let r = oneshot(&app, get(&outside, None)).await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            oneshot(&app, get("/../etc/passwd", None))
                .await
                .unwrap()
                .status(),
            StatusCode::NOT_FOUND
        );
        let post = axum::http::Request::builder()
            .method("POST")
            .uri("/heartbeat")
            .body(Body::from("cmdline=quiet"))
            .unwrap();
        assert_eq!(
            oneshot(&app, post).await.unwrap().status(),
            StatusCode::NO_CONTENT
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("GET /x.efi 200 10")
                && text.contains("GET /x.efi 206 3")
                && text.contains("POST /heartbeat 204"),
            "{text}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("heartbeat.log")).unwrap(),
            "cmdline=quiet\n"
        );
    }
}
