//! The access log: one line per request a service answered, at info level
//! (as sushy-tools' Werkzeug log is on by default), under the target
//! `shoal_emulator::access` (`RUST_LOG=info,shoal_emulator::access=warn`
//! silences it alone):
//!
//! ```text
//! 127.0.0.1:40522 admin "PATCH /redfish/v1/Systems/1" 400 0.3 ms Base.1.19.PropertyValueNotInList
//! ```
//!
//! the client's address, the account (`-` when none), the request line,
//! the status, the time to the response's head, and the MessageId a
//! refusal carried. What the service knows of a request (its account, its
//! refusal) it leaves on the response ([`Who`], [`Refused`]); nothing
//! here reads a body.
//!
//! Invariant: with the target off, a request costs one level check.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Instant;

use axum::response::Response;
use tower::ServiceExt;

/// On a response, for the access log: the account the request was
/// authenticated as.
#[derive(Debug, Clone)]
pub struct Who(pub String);

/// On an error's response, for the access log: the MessageId it refused
/// the request with.
#[derive(Debug, Clone)]
pub struct Refused(pub String);

/// Serves `req` with `router`, then logs it.
pub async fn logged<B>(
    router: axum::Router,
    req: axum::http::Request<B>,
    peer: SocketAddr,
) -> Result<Response, Infallible>
where
    B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    if !tracing::enabled!(tracing::Level::INFO) {
        return router.oneshot(req).await;
    }
    let method = req.method().clone();
    let target = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let started = Instant::now();
    let resp = router.oneshot(req).await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let user = resp.extensions().get::<Who>().map_or("-", |w| w.0.as_str());
    let refused = resp
        .extensions()
        .get::<Refused>()
        .map(|r| format!(" {}", r.0))
        .unwrap_or_default();
    tracing::info!(
        "{peer} {user} \"{method} {target}\" {} {ms:.1} ms{refused}",
        resp.status().as_u16()
    );
    Ok(resp)
}
