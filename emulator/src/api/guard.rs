//! The checks every request passes before anything else reads it: a URL
//! whose path decodes to UTF-8, no cross-site writes, and a body read
//! whole (bounded in size and time) before any handler or middleware
//! answers.
//!
//! Reading the body first keeps the connection usable whatever the answer:
//! an early 401 or 404 that left a body unread made hyper close the
//! connection, and a client reusing it (requests' pool) got a reset.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use super::json::MAX_BODY;
use crate::error::{ApiError, Msg};

/// How long a client may take to send its body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the checks; `Err` is the answer to send instead of routing.
pub async fn check(req: Request) -> Result<Request, Response> {
    if decoded_path(req.uri().path()).is_none() {
        return Err(ApiError::NotFound(req.uri().path().to_string()).into_response());
    }
    if !is_safe(req.method()) {
        if let Some(why) = cross_site(req.headers()) {
            tracing::info!(%why, method = %req.method(), path = %req.uri().path(), "cross-site write refused");
            return Err(ApiError::Status(
                StatusCode::FORBIDDEN,
                vec![Msg::new("HeaderInvalid", &[&why])],
            )
            .into_response());
        }
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(BODY_TIMEOUT, read_bounded(body)).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(BodyError::TooLarge)) => Err(closing(ApiError::PayloadTooLarge.into_response())),
        Ok(Err(BodyError::Broken)) => Err(closing(
            ApiError::bad(Msg::new("UnrecognizedRequestBody", &[])).into_response(),
        )),
        Err(_) => Err(closing(
            ApiError::Status(
                StatusCode::REQUEST_TIMEOUT,
                vec![Msg::new("OperationTimeout", &[])],
            )
            .into_response(),
        )),
    }
}

fn is_safe(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// An answer after which the connection is closed: its request was not
/// read to the end.
fn closing(mut r: Response) -> Response {
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

enum BodyError {
    TooLarge,
    Broken,
}

async fn read_bounded(mut body: Body) -> Result<Bytes, BodyError> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > MAX_BODY {
                return Err(BodyError::TooLarge);
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buf))
}

/// Why a write request comes from another site, if it does: a browser
/// page must not reset machines or insert media on a BMC it can reach
/// (the default service has no authentication). Browsers send
/// `Sec-Fetch-Site` and `Origin` on such requests; command-line clients
/// and libraries send neither.
fn cross_site(h: &HeaderMap) -> Option<String> {
    if let Some(site) = h.get("sec-fetch-site") {
        let site = String::from_utf8_lossy(site.as_bytes());
        if !matches!(site.as_ref(), "same-origin" | "none") {
            return Some(format!("Sec-Fetch-Site: {site}"));
        }
    }
    let origin = h.get(header::ORIGIN)?;
    let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    match (authority, host) {
        (Some(a), Some(host)) if same_authority(a, host) => None,
        _ => Some(format!("Origin: {origin}")),
    }
}

/// `a` and `b` name the same host and port, the default ports spelled or
/// not.
fn same_authority(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        let s = s.to_ascii_lowercase();
        s.strip_suffix(":80")
            .or_else(|| s.strip_suffix(":443"))
            .map(str::to_string)
            .unwrap_or(s)
    };
    norm(a) == norm(b)
}

/// The path with its percent-escapes decoded, if that is UTF-8 (no
/// resource has any other name).
pub fn decoded_path(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_decode_to_utf8_or_not_at_all() {
        assert_eq!(decoded_path("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(decoded_path("/%C3%A9").as_deref(), Some("/é"));
        assert_eq!(decoded_path("/Systems/%FF"), None);
        assert_eq!(decoded_path("/%"), None);
        assert_eq!(decoded_path("/%4"), None);
        assert_eq!(decoded_path("/%zz"), None);
        assert_eq!(decoded_path("/%+1"), None);
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn cross_site_writes_are_recognised() {
        assert_eq!(cross_site(&headers(&[("host", "127.0.0.1:8000")])), None);
        assert_eq!(
            cross_site(&headers(&[
                ("host", "127.0.0.1:8000"),
                ("origin", "http://127.0.0.1:8000")
            ])),
            None
        );
        assert_eq!(
            cross_site(&headers(&[("host", "bmc"), ("origin", "https://BMC:443")])),
            None
        );
        assert_eq!(
            cross_site(&headers(&[("sec-fetch-site", "same-origin")])),
            None
        );
        for bad in [
            headers(&[("host", "127.0.0.1:8000"), ("origin", "http://evil.test")]),
            headers(&[("host", "127.0.0.1:8000"), ("origin", "null")]),
            headers(&[("origin", "http://127.0.0.1:8000")]),
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("sec-fetch-site", "same-site")]),
        ] {
            assert!(cross_site(&bad).is_some(), "{bad:?}");
        }
    }
}
