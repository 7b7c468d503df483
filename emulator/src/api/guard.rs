//! The checks every request passes before anything else reads it: a URL
//! whose path decodes to UTF-8, no cross-site writes, the caller's
//! credentials, and a body read whole (bounded in size, time and, over
//! all requests in flight, memory) before any handler or middleware
//! answers.
//!
//! Reading the body first keeps the connection usable whatever the answer:
//! an early 401 or 404 that left a body unread made hyper close the
//! connection, and a client reusing it (requests' pool) got a reset. A
//! body only an authenticated (or public) request may have is kept; any
//! other is read and dropped as it arrives, so anonymous clients cannot
//! make the service hold their bodies.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use tokio::sync::{Semaphore, SemaphorePermit};

use super::json::MAX_BODY;
use super::AppState;
use crate::api::error::{ApiError, Msg};
use crate::auth::Principal;

/// How long a client may take to send its body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of request bodies held at once over the whole process, in KiB:
/// past it a request is answered 503 rather than buffered.
pub const BODY_BUDGET_KIB: usize = 64 << 10;
static BODY_BUDGET: Semaphore = Semaphore::const_new(BODY_BUDGET_KIB);

/// The authentication decision taken here, for the authentication
/// middleware to use rather than check the credentials again (a wrong
/// password must cost one bcrypt and count once against the lockout).
#[derive(Clone)]
pub(crate) struct Decided(pub Result<Option<Principal>, ApiError>);

/// The share of [`BODY_BUDGET_KIB`] a request's body holds until its
/// answer is ready.
pub struct BodyHold(#[allow(dead_code)] Vec<SemaphorePermit<'static>>);

/// Runs the checks; `Err` is the answer to send instead of routing.
pub async fn check(st: &AppState, req: Request) -> Result<(Request, BodyHold), Response> {
    let (mut parts, body) = req.into_parts();
    let refused = if decoded_path(parts.uri.path()).is_none() {
        Some(ApiError::NotFound(parts.uri.path().to_string()))
    } else if is_safe(&parts.method) {
        None
    } else {
        cross_site(&parts.headers).map(|why| {
            tracing::info!(%why, method = %parts.method, path = %parts.uri.path(), "cross-site write refused");
            ApiError::Status(
                StatusCode::FORBIDDEN,
                vec![Msg::new("HeaderInvalid", &[&why])],
            )
        })
    };
    if let Some(e) = refused {
        return Err(after_draining(body, e.into_response()).await);
    }
    let decision = super::authorize(st, &parts.headers, &parts.method, parts.uri.path()).await;
    let (body, hold) = match &decision {
        Ok(_) => match tokio::time::timeout(
            BODY_TIMEOUT,
            read_bounded(body, body_limit(&parts.method, parts.uri.path())),
        )
        .await
        {
            Ok(Ok((bytes, hold))) => (Body::from(bytes), hold),
            Ok(Err(e)) => return Err(closing(e.into_response())),
            Err(_) => return Err(closing(timed_out())),
        },
        // Refused: the body is read and dropped; the request goes on
        // without it, to be refused where it always was (after the
        // fault layer: a rebooting BMC answers before authentication).
        Err(e) => match tokio::time::timeout(BODY_TIMEOUT, drain(body)).await {
            Ok(Ok(())) => (Body::empty(), BodyHold(Vec::new())),
            _ => return Err(closing(e.clone().into_response())),
        },
    };
    parts.extensions.insert(Decided(decision));
    Ok((Request::from_parts(parts, body), hold))
}

/// `answer`, once `body` is read to its end (or, when it is too long or
/// too slow, with the connection closed after it).
async fn after_draining(body: Body, answer: Response) -> Response {
    match tokio::time::timeout(BODY_TIMEOUT, drain(body)).await {
        Ok(Ok(())) => answer,
        _ => closing(answer),
    }
}

fn timed_out() -> Response {
    ApiError::Status(
        StatusCode::REQUEST_TIMEOUT,
        vec![Msg::new("UnrecognizedRequestBody", &[])],
    )
    .into_response()
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

/// The largest body a request may have: a firmware image pushed to the
/// UpdateService (a POST under it that is no action) up to the image
/// limit, every other [`MAX_BODY`].
fn body_limit(method: &Method, path: &str) -> usize {
    let push = *method == Method::POST
        && ((path.starts_with(super::update::PUSH_PREFIX) && !path.contains("/Actions/"))
            || super::vendor::image_upload(path));
    if push {
        super::update::MAX_IMAGE_BYTES as usize
    } else {
        MAX_BODY
    }
}

/// Reads a body whole within `limit` bytes and the process's budget.
async fn read_bounded(mut body: Body, limit: usize) -> Result<(Bytes, BodyHold), ApiError> {
    let mut buf = Vec::new();
    let mut hold = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ApiError::bad(Msg::new("UnrecognizedRequestBody", &[])))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(ApiError::PayloadTooLarge);
            }
            let kib = data.len().div_ceil(1024) as u32;
            match BODY_BUDGET.try_acquire_many(kib) {
                Ok(p) => hold.push(p),
                Err(_) => {
                    tracing::warn!(
                        budget_kib = BODY_BUDGET_KIB,
                        "request bodies over the memory budget"
                    );
                    return Err(ApiError::Unavailable(1));
                }
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok((Bytes::from(buf), BodyHold(hold)))
}

/// Reads a body to its end, keeping nothing; `Err` past [`MAX_BODY`].
async fn drain(mut body: Body) -> Result<(), ()> {
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ())?;
        if let Ok(data) = frame.into_data() {
            seen += data.len();
            if seen > MAX_BODY {
                return Err(());
            }
        }
    }
    Ok(())
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
    let parsed = origin
        .strip_prefix("https://")
        .map(|a| ("https", a))
        .or_else(|| origin.strip_prefix("http://").map(|a| ("http", a)));
    match (parsed, host) {
        (Some((scheme, a)), Some(host)) if same_authority(scheme, a, host) => None,
        _ => Some(format!("Origin: {origin}")),
    }
}

/// The origin `scheme://authority` names the host and port of `host`,
/// the scheme's default port spelled or not.
fn same_authority(scheme: &str, authority: &str, host: &str) -> bool {
    let default = if scheme == "https" { ":443" } else { ":80" };
    let norm = |s: &str| {
        let s = s.to_ascii_lowercase();
        s.strip_suffix(default).map(str::to_string).unwrap_or(s)
    };
    norm(authority) == norm(host)
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
            headers(&[("host", "bmc"), ("origin", "https://bmc:80")]),
            headers(&[("origin", "http://127.0.0.1:8000")]),
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("sec-fetch-site", "same-site")]),
        ] {
            assert!(cross_site(&bad).is_some(), "{bad:?}");
        }
    }
}
