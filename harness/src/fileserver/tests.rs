//! The boot file server against requests: content types, ranges, HEAD,
//! paths that leave the folder, the request and heartbeat logs.

use super::*;
use tower::ServiceExt;

/// A served folder: `x.efi` (10 bytes), `empty.img`, `big.iso` (over
/// three chunks), `sub/a.cfg`.
fn folder() -> (tempfile::TempDir, Router) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("x.efi"), b"0123456789").unwrap();
    std::fs::write(root.join("empty.img"), b"").unwrap();
    std::fs::write(root.join("big.iso"), big()).unwrap();
    std::fs::write(root.join("sub/a.cfg"), b"set a=1\n").unwrap();
    let app = router(&root, &dir.path().join("http.log")).unwrap();
    (dir, app)
}

fn big() -> Vec<u8> {
    (0..200_000u32).map(|i| (i % 251) as u8).collect()
}

async fn send(
    app: &Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, bytes::Bytes) {
    let mut b = axum::http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let r = app
        .clone()
        .oneshot(b.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (parts, body) = r.into_parts();
    let body = axum::body::to_bytes(body, 1 << 24).await.unwrap();
    (parts.status, parts.headers, body)
}

async fn get(app: &Router, path: &str, range: &str) -> (StatusCode, HeaderMap, bytes::Bytes) {
    send(app, "GET", path, &[("Range", range)]).await
}

#[tokio::test]
async fn header_names_go_out_in_title_case_as_grub_needs() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grub.cfg"), "echo hello\n").unwrap();
    let app = router(dir.path(), &dir.path().join("log")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app));
    let fetch = |request: &'static [u8]| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).await.unwrap();
        text
    };
    let text = fetch(b"GET /grub.cfg HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
    assert!(text.contains("\r\nContent-Length: 11\r\n"), "{text}");
    assert!(text.ends_with("echo hello\n"), "{text}");
    let text =
        fetch(b"GET /grub.cfg HTTP/1.1\r\nHost: x\r\nRange: bytes=5-\r\nConnection: close\r\n\r\n")
            .await;
    assert!(
        text.starts_with("HTTP/1.1 206 Partial Content\r\n"),
        "{text}"
    );
    assert!(
        text.contains("\r\nContent-Range: bytes 5-10/11\r\n"),
        "{text}"
    );
    assert!(text.contains("\r\nContent-Length: 6\r\n"), "{text}");
    assert!(text.ends_with("hello\n"), "{text}");
}

#[test]
fn content_types_follow_http_boot() {
    assert_eq!(content_type("boot.ISO"), "application/vnd.efi-iso");
    assert_eq!(content_type("a/b/bootx64.efi"), "application/efi");
    assert_eq!(content_type("disk.img"), "application/vnd.efi-img");
}

#[tokio::test]
async fn get_and_head_of_a_whole_file() {
    let (_dir, app) = folder();
    let (status, h, body) = send(&app, "GET", "/x.efi", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["content-type"], "application/efi");
    assert_eq!(h["content-length"], "10");
    assert_eq!(h["accept-ranges"], "bytes");
    assert_eq!(body, "0123456789");
    let (status, h, body) = send(&app, "HEAD", "/x.efi", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(h["content-length"], "10");
    assert!(body.is_empty());
    let (status, h, body) = send(&app, "GET", "/sub/a.cfg", &[]).await;
    assert_eq!(
        (status, &h["content-type"]),
        (StatusCode::OK, &HeaderValue::from_static("text/plain"))
    );
    assert_eq!(body, "set a=1\n");
}

#[tokio::test]
async fn a_file_larger_than_a_chunk_streams_whole_and_in_part() {
    let (_dir, app) = folder();
    let data = big();
    let (status, h, body) = send(&app, "GET", "/big.iso", &[]).await;
    assert_eq!(
        (status, &h["content-length"]),
        (StatusCode::OK, &HeaderValue::from(200_000))
    );
    assert!(body[..] == data[..], "the whole file, in order");
    let (status, h, body) = get(&app, "/big.iso", "bytes=65530-131080").await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(h["content-range"], "bytes 65530-131080/200000");
    assert_eq!(h["content-length"], "65551");
    assert!(body[..] == data[65530..=131080], "seeked, across chunks");
}

#[tokio::test]
async fn single_ranges_are_206_with_content_range() {
    let (_dir, app) = folder();
    for (range, content_range, want) in [
        ("bytes=2-4", "bytes 2-4/10", "234"),
        ("bytes=7-", "bytes 7-9/10", "789"),
        ("bytes=-3", "bytes 7-9/10", "789"),
        ("bytes=-30", "bytes 0-9/10", "0123456789"),
        ("bytes=8-100", "bytes 8-9/10", "89"),
        ("bytes=0-0", "bytes 0-0/10", "0"),
    ] {
        let (status, h, body) = get(&app, "/x.efi", range).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(h["content-range"], content_range, "{range}");
        assert_eq!(
            h["content-length"],
            want.len().to_string().as_str(),
            "{range}"
        );
        assert_eq!(body, want, "{range}");
    }
}

#[tokio::test]
async fn unsatisfiable_ranges_are_416_with_the_length() {
    let (_dir, app) = folder();
    for (path, range, len) in [
        ("/x.efi", "bytes=10-", "10"),
        ("/x.efi", "bytes=20-30", "10"),
        ("/x.efi", "bytes=-0", "10"),
        ("/x.efi", "bytes=10-,-0", "10"),
        ("/empty.img", "bytes=0-", "0"),
    ] {
        let (status, h, body) = get(&app, path, range).await;
        assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
        assert_eq!(
            h["content-range"],
            format!("bytes */{len}").as_str(),
            "{range}"
        );
        assert!(body.is_empty());
    }
}

#[tokio::test]
async fn a_suffix_range_of_an_empty_file_is_the_empty_file() {
    let (_dir, app) = folder();
    let (status, h, body) = get(&app, "/empty.img", "bytes=-5").await;
    assert_eq!(
        (status, &h["content-length"]),
        (StatusCode::OK, &HeaderValue::from(0))
    );
    assert!(body.is_empty());
}

#[tokio::test]
async fn other_ranges_get_the_whole_file() {
    let (_dir, app) = folder();
    for headers in [
        &[("Range", "bytes=0-1,4-5")][..], // several: no multipart
        &[("Range", "bytes=5-2")],
        &[("Range", "items=0-1")],
        &[("Range", "bytes=0-1"), ("Range", "bytes=2-3")],
        &[("Range", "bytes=0-1"), ("If-Range", "\"x\"")],
    ] {
        let (status, h, body) = send(&app, "GET", "/x.efi", headers).await;
        assert_eq!(status, StatusCode::OK, "{headers:?}");
        assert!(!h.contains_key("content-range"), "{headers:?}");
        assert_eq!(body, "0123456789", "{headers:?}");
    }
    let (status, h, body) = send(&app, "HEAD", "/x.efi", &[("Range", "bytes=0-1")]).await;
    assert_eq!(
        (status, &h["content-length"]),
        (StatusCode::OK, &HeaderValue::from(10))
    );
    assert!(body.is_empty());
}

#[tokio::test]
async fn symlinks_out_of_the_folder_are_not_served() {
    let (dir, app) = folder();
    let root = dir.path().join("root");
    std::fs::write(dir.path().join("secret"), b"no").unwrap();
    std::fs::create_dir(dir.path().join("outside")).unwrap();
    std::fs::write(dir.path().join("outside/f.efi"), b"no").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("secret.efi")).unwrap();
    std::os::unix::fs::symlink("../outside", root.join("out")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
    std::os::unix::fs::symlink("sub/a.cfg", root.join("inside.cfg")).unwrap();
    let abs = std::fs::canonicalize(&root).unwrap();
    for path in [
        "/secret.efi".to_string(),
        "/out/f.efi".into(),
        "/passwd".into(),
        format!("{}/secret.efi", abs.display()),
        "/../secret".into(),
        "/sub/../../secret".into(),
    ] {
        let (status, _, body) = send(&app, "GET", &path, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body.is_empty(), "{path}");
    }
    let (status, _, body) = send(&app, "GET", "/inside.cfg", &[]).await;
    assert_eq!(
        (status, &body[..]),
        (StatusCode::OK, &b"set a=1\n"[..]),
        "a link inside"
    );
}

#[tokio::test]
async fn the_folders_absolute_path_is_an_alias_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("x.efi"), b"0123456789").unwrap();
    // Served through a link to the folder: the alias is its canonical path.
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    let app = router(&dir.path().join("link"), &dir.path().join("log")).unwrap();
    let abs = std::fs::canonicalize(&real).unwrap();
    for path in ["/x.efi".to_string(), format!("{}/x.efi", abs.display())] {
        let (status, _, body) = send(&app, "GET", &path, &[]).await;
        assert_eq!(
            (status, &body[..]),
            (StatusCode::OK, &b"0123456789"[..]),
            "{path}"
        );
    }
    let outside = format!("{}x/x.efi", abs.display());
    assert_eq!(
        send(&app, "GET", &outside, &[]).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn what_is_not_a_file_is_not_found() {
    let (_dir, app) = folder();
    for path in ["/", "/sub", "/sub/", "/nope.efi"] {
        assert_eq!(
            send(&app, "GET", path, &[]).await.0,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    assert_eq!(
        send(&app, "PUT", "/x.efi", &[]).await.0,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn logs_requests_and_takes_capped_heartbeats() {
    let (dir, app) = folder();
    send(&app, "GET", "/x.efi", &[]).await;
    get(&app, "/x.efi", "bytes=2-4").await;
    send(&app, "HEAD", "/x.efi", &[]).await;
    let post = |body: Vec<u8>| {
        let app = app.clone();
        async move {
            let req = axum::http::Request::builder()
                .method("POST")
                .uri("/heartbeat")
                .body(Body::from(body))
                .unwrap();
            app.oneshot(req).await.unwrap().status()
        }
    };
    assert_eq!(
        post(b"cmdline=quiet\n".to_vec()).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(post(b"a\nb".to_vec()).await, StatusCode::NO_CONTENT);
    let long = vec![b'x'; heartbeat::MAX_LINE + 1];
    assert_eq!(post(long).await, StatusCode::PAYLOAD_TOO_LARGE);
    let text = std::fs::read_to_string(dir.path().join("http.log")).unwrap();
    assert_eq!(
        text,
        "GET /x.efi 200 10\nGET /x.efi 206 3\nHEAD /x.efi 200 0\n\
         POST /heartbeat 204 0\nPOST /heartbeat 204 0\nPOST /heartbeat 413 0\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("heartbeat.log")).unwrap(),
        "cmdline=quiet\na b\n"
    );
}

#[tokio::test]
async fn a_full_heartbeat_log_refuses_with_507() {
    let (dir, app) = folder();
    let full = vec![b'x'; heartbeat::MAX_BYTES as usize];
    std::fs::write(dir.path().join("heartbeat.log"), &full).unwrap();
    // The log was opened before it grew: a new router counts it.
    let app2 = router(&dir.path().join("root"), &dir.path().join("http.log")).unwrap();
    drop(app);
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/heartbeat")
        .body(Body::from("marker=x"))
        .unwrap();
    assert_eq!(
        app2.oneshot(req).await.unwrap().status(),
        StatusCode::INSUFFICIENT_STORAGE
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("heartbeat.log"))
            .unwrap()
            .len(),
        heartbeat::MAX_BYTES
    );
}

/// HTTPS as OVMF 2022.11 speaks it (TLS 1.2, DHE-RSA or RSA key exchange,
/// no elliptic curves) is served and logged with its cipher; a client that
/// trusts another CA fails the handshake, and the log says so.
#[tokio::test(flavor = "multi_thread")]
async fn https_serves_the_firmwares_ciphers_and_logs_failed_handshakes() {
    use crate::tls::{now, Ca};
    use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode, SslVersion};
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.efi"), b"0123456789").unwrap();
    let log = dir.path().join("https.log");
    let app = router(dir.path(), &log).unwrap();
    let ca = Ca::new("Test CA").unwrap();
    let ip: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let server = ca.server(&[ip], now() - 60, now() + 3600).unwrap();
    let acceptor = Arc::new(server.acceptor().unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log2 = log.clone();
    tokio::spawn(async move { serve_tls(listener, app, acceptor, &log2).await });

    let fetch = move |trust: &openssl::x509::X509, ciphers: &'static str| {
        let trust = trust.clone();
        std::thread::spawn(move || -> Result<String, String> {
            let mut c = SslConnector::builder(SslMethod::tls_client()).unwrap();
            c.set_max_proto_version(Some(SslVersion::TLS1_2)).unwrap();
            c.set_cipher_list(ciphers).unwrap();
            c.cert_store_mut().add_cert(trust).unwrap();
            c.set_verify(SslVerifyMode::PEER);
            let c = c.build();
            let tcp = std::net::TcpStream::connect(addr).unwrap();
            let mut s = c.connect("127.0.0.1", tcp).map_err(|e| e.to_string())?;
            s.write_all(b"GET /x.efi HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            Ok(out)
        })
        .join()
        .unwrap()
    };
    for ciphers in [
        "DHE-RSA-AES128-GCM-SHA256",
        "AES128-GCM-SHA256",
        "AES256-SHA256",
    ] {
        let got = fetch(&ca.cert, ciphers).unwrap();
        assert!(
            got.starts_with("HTTP/1.1 200") && got.ends_with("0123456789"),
            "{got}"
        );
    }
    let other = Ca::new("Other CA").unwrap();
    assert!(fetch(&other.cert, "AES128-GCM-SHA256").is_err());
    // The server's log line for the refused handshake comes once the
    // client's alert is read.
    crate::lab::wait_until(std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("TLS-HANDSHAKE-FAILED")
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "GET /x.efi 200 10 TLSv1.2 DHE-RSA-AES128-GCM-SHA256",
            "GET /x.efi 200 10 TLSv1.2 AES128-GCM-SHA256",
            "GET /x.efi 200 10 TLSv1.2 AES256-SHA256",
        ]
    );
    assert!(
        lines[3].starts_with("TLS-HANDSHAKE-FAILED 127.0.0.1 ") && lines[3].contains("unknown ca"),
        "{text}"
    );
}
