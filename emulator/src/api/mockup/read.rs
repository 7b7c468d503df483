//! GETs of a replayed capture: each resource as captured (its body, its
//! captured headers, its status), the live machine grafted onto what
//! stands for it, ETags recomputed where the capture had them.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::{firmware, grafted, media_grafted, nic_grafted, BiosPart, Replay};
use crate::api::error::ApiError;
use crate::api::json::etag_of;
use crate::api::AppState;
use crate::mockup::{Body, Mockup};

/// Captured headers never replayed: the connection's, and those the
/// service computes itself.
const NOT_REPLAYED: [&str; 9] = [
    "content-length",
    "date",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-encoding",
    "etag",
    "set-cookie",
    "x-auth-token",
];

/// What a resource's captured headers make of its answers, worked out
/// once at start-up.
#[derive(Debug, Default)]
pub(super) struct Served {
    /// The headers replayed (those of `NOT_REPLAYED` left out).
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Whether it had an `ETag`, and a weak one.
    etag: Option<bool>,
}

impl Served {
    fn of(captured: &[(String, String)]) -> Served {
        let etag = captured
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
            .map(|(_, v)| v.starts_with("W/"));
        let headers = captured
            .iter()
            .filter(|(n, _)| !NOT_REPLAYED.contains(&n.to_ascii_lowercase().as_str()))
            .filter_map(|(n, v)| {
                Some((
                    HeaderName::try_from(n.as_str()).ok()?,
                    HeaderValue::from_str(v).ok()?,
                ))
            })
            .collect();
        Served { headers, etag }
    }
}

/// Each resource's captured headers as answered.
pub(super) fn served(capture: &Mockup) -> BTreeMap<String, Served> {
    capture
        .resources
        .iter()
        .map(|(uri, c)| (uri.clone(), Served::of(&c.headers)))
        .collect()
}

pub(super) async fn get(st: &AppState, replay: &Replay, path: &str) -> Result<Response, ApiError> {
    let Some(c) = replay.capture.resources.get(path) else {
        return Err(ApiError::NotFound(path.to_string()));
    };
    if replay.latency {
        if let Some(secs) = c.secs {
            tokio::time::sleep(Duration::from_secs_f64(secs.min(30.0))).await;
        }
    }
    let served = replay.served.get(path);
    let tagged = served.and_then(|s| s.etag);
    let (status, bytes, etag, kind) = match &c.body {
        Body::Json(v) => {
            let system = replay.systems.get(path).or_else(|| {
                let s = replay.settings.get(path)?;
                replay.systems.get(s)
            });
            let bios = replay.bios_at(path);
            let body = if let Some(id) = system {
                grafted(v, &st.core.backend.system(id).await?)
            } else if let Some((b, part)) = bios {
                let sys = st.core.backend.system(&replay.systems[&b.system]).await?;
                match part {
                    BiosPart::Settings => b.settings_grafted(v, &sys),
                    _ => b.grafted(v, &sys),
                }
            } else if let Some((system, _)) = replay.media.get(path) {
                let sys = st.core.backend.system(&replay.systems[system]).await?;
                media_grafted(v, replay, path, &sys)
            } else if let Some((system, i)) = replay.nics.get(path) {
                let sys = st.core.backend.system(&replay.systems[system]).await?;
                nic_grafted(v, &sys, *i)
            } else {
                v.clone()
            };
            let body = match replay.versions.get(path) {
                Some(shown) => {
                    let mut machines = Vec::with_capacity(shown.len());
                    for s in shown {
                        let id = &replay.systems[&s.system];
                        machines.push((s, st.core.backend.system(id).await?));
                    }
                    let pairs: Vec<_> = machines.iter().map(|(s, m)| (*s, m)).collect();
                    firmware::grafted(body, &pairs)
                }
                None => body,
            };
            let (body, tag) = with_etag(body, tagged);
            (
                StatusCode::OK,
                serde_json::to_vec(&body).unwrap_or_default(),
                tag,
                "application/json",
            )
        }
        Body::Xml(doc) => (
            StatusCode::OK,
            doc.clone().into_bytes(),
            None,
            "application/xml",
        ),
        Body::Error { status, body } => (
            StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body.clone().into_bytes(),
            None,
            "text/plain",
        ),
    };
    let mut r = (status, Bytes::from(bytes)).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if c.headers.is_empty() && status == StatusCode::OK {
        // A capture without headers (DMTF's mockups, Mockup-Creator
        // without -H): what every Redfish service sends.
        h.insert("odata-version", HeaderValue::from_static("4.0"));
        let writable = replay.systems.contains_key(path)
            || replay.settings.contains_key(path)
            || matches!(replay.bios_at(path), Some((_, BiosPart::Settings)))
            || matches!(replay.bios_at(path), Some((b, BiosPart::Resource)) if b.settings.is_none());
        let allow = if writable {
            "GET, HEAD, PATCH"
        } else {
            "GET, HEAD"
        };
        h.insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    for (n, v) in served.map(|s| &s.headers[..]).unwrap_or_default() {
        h.insert(n.clone(), v.clone());
    }
    if let Some(t) = etag.and_then(|t| HeaderValue::from_str(&t).ok()) {
        h.insert(header::ETAG, t);
    }
    Ok(r)
}

/// The body's ETag where the capture had one (`weak`: the header's
/// style, if it had one; or `@odata.etag`, which is then recomputed too),
/// of the body without `@odata.etag`, as If-Match is checked.
fn with_etag(mut body: Value, weak: Option<bool>) -> (Value, Option<String>) {
    let at = body
        .as_object()
        .and_then(|m| m.keys().position(|k| k == "@odata.etag"));
    if weak.is_none() && at.is_none() {
        return (body, None);
    }
    body = untagged(body);
    let prefix = if weak == Some(true) { "W/" } else { "" };
    let tag = format!("{prefix}\"{}\"", etag_of(&body));
    if let (Some(i), Some(m)) = (at, body.as_object_mut()) {
        // Where it was: the members keep the capture's order.
        m.shift_insert(i, "@odata.etag".into(), json!(tag));
    }
    (body, Some(tag))
}

/// `body` without `@odata.etag`, as ETags and If-Match see it.
pub(super) fn untagged(mut body: Value) -> Value {
    if let Some(m) = body.as_object_mut() {
        m.shift_remove("@odata.etag");
    }
    body
}
