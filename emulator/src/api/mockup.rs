//! `--mockup`: a captured BMC (`crate::mockup`) served as it was
//! captured (bodies, headers, odd Ids, OEM sections, missing properties,
//! captured errors with their status), with Shoal's live machine grafted
//! onto each captured ComputerSystem: its PowerState and Boot override
//! read from the backend, the Reset action at the capture's own target
//! with the capture's ResetType values, a Boot PATCH checked against the
//! capture's AllowableValues and decided by the core (each system runs on
//! a profile derived from its capture, `mockup::derived_profile`), and
//! ETags recomputed where the capture had them. Sessions are Shoal's own,
//! at the standard URIs. Latencies from `time.json` when asked.
//!
//! Invariants: a captured resource is served byte for byte as JSON
//! re-serialised, except the grafted properties; a write reaches the
//! machine only through the core (`power_action`, `decide_boot`); a
//! write the capture cannot show is refused with a Redfish error.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Map, Value};

use super::boot_rules::{boot_refused, boot_request, checked_patch};
use super::error::{ApiError, Msg};
use super::json::{self, etag_of};
use super::patch::{writable, Kind, Writable};
use super::{AppState, State};
use crate::mockup::{key, Body, Mockup};
use crate::model::{BootMode, BootTarget, Change, OverrideEnabled, ResetType, System};

/// The Reset action's name in a ComputerSystem's `Actions`.
const RESET: &str = "#ComputerSystem.Reset";

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

/// A capture being replayed, and which machine stands behind each of
/// its systems.
#[derive(Debug)]
pub struct Replay {
    pub capture: Arc<Mockup>,
    /// Captured system URI → backend system Id, in the capture's order.
    pub systems: BTreeMap<String, String>,
    /// Each system's Reset target → the system's URI.
    pub resets: BTreeMap<String, String>,
    /// Sleep each GET's captured time before answering.
    pub latency: bool,
}

impl Replay {
    /// The capture over `refs`, the endpoint's systems in order: one for
    /// each captured system.
    pub fn new(
        capture: Arc<Mockup>,
        refs: &[crate::model::SystemRef],
        latency: bool,
    ) -> Result<Replay, String> {
        let ids: Vec<String> = refs.iter().map(|r| r.id.clone()).collect();
        if ids.len() != capture.systems.len() {
            return Err(format!(
                "--mockup {}: the capture has {} system(s), the service {}",
                capture.source.display(),
                capture.systems.len(),
                ids.len()
            ));
        }
        let systems: BTreeMap<String, String> = capture
            .systems
            .iter()
            .cloned()
            .zip(ids.iter().cloned())
            .collect();
        let resets = capture
            .systems
            .iter()
            .filter_map(|s| {
                let target = capture
                    .json(s)?
                    .pointer("/Actions/#ComputerSystem.Reset/target")?;
                Some((key(target.as_str()?).to_string(), s.clone()))
            })
            .collect();
        Ok(Replay {
            capture,
            systems,
            resets,
            latency,
        })
    }

    /// The ResetType values the capture offers for `system`: its
    /// AllowableValues, else its ActionInfo's, else every one.
    fn reset_types(&self, system: &str) -> Vec<String> {
        let action = self
            .capture
            .json(system)
            .and_then(|v| v.pointer("/Actions/#ComputerSystem.Reset"));
        let listed = |v: Option<&Value>| -> Option<Vec<String>> {
            Some(
                v?.as_array()?
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect(),
            )
        };
        if let Some(l) = listed(action.and_then(|a| a.get("ResetType@Redfish.AllowableValues"))) {
            return l;
        }
        let info = action
            .and_then(|a| a.get("@Redfish.ActionInfo"))
            .and_then(Value::as_str)
            .and_then(|i| self.capture.json(i));
        let from_info = info
            .and_then(|i| i.get("Parameters"))
            .and_then(Value::as_array)
            .and_then(|ps| ps.iter().find(|p| p["Name"] == "ResetType"))
            .and_then(|p| listed(p.get("AllowableValues")));
        from_info.unwrap_or_else(|| {
            ResetType::ALL
                .iter()
                .map(|r| r.as_str().to_string())
                .collect()
        })
    }
}

/// The replay of `--mockup` (capture, latency) over the service's
/// systems `refs`, if asked.
pub fn replay_of(
    mockup: &Option<(Arc<Mockup>, bool)>,
    refs: &[crate::model::SystemRef],
) -> Result<Option<Arc<Replay>>, String> {
    match mockup {
        None => Ok(None),
        Some((capture, latency)) => Ok(Some(Arc::new(Replay::new(
            capture.clone(),
            refs,
            *latency,
        )?))),
    }
}

/// The routes of a replayed capture: Shoal's sessions, the rest from the
/// capture.
pub fn routes() -> Router {
    super::sessions::live_router().fallback(serve)
}

async fn serve(State(st): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let Some(replay) = st.replay.clone() else {
        return Err(ApiError::NotFound(req.uri().path().to_string()));
    };
    let path = key(req.uri().path()).to_string();
    let method = req.method().clone();
    let headers = req.headers().clone();
    match method {
        Method::GET | Method::HEAD => get(&st, &replay, &path).await,
        Method::POST if replay.resets.contains_key(&path) => {
            let body = body_of(req).await?;
            reset(&st, &replay, &replay.resets[&path], &body).await
        }
        Method::PATCH if replay.systems.contains_key(&path) => {
            let body = body_of(req).await?;
            patch(&st, &replay, &path, &headers, &body).await
        }
        _ if replay.capture.resources.contains_key(&path) => Err(ApiError::MethodNotAllowed),
        _ => Err(ApiError::NotFound(req.uri().path().to_string())),
    }
}

async fn body_of(req: Request) -> Result<Map<String, Value>, ApiError> {
    let bytes = axum::body::to_bytes(req.into_body(), json::MAX_BODY)
        .await
        .map_err(|_| ApiError::bad(Msg::new("MalformedJSON", &[])))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ApiError::bad(Msg::new("MalformedJSON", &[]))),
    }
}

async fn get(st: &AppState, replay: &Replay, path: &str) -> Result<Response, ApiError> {
    let Some(c) = replay.capture.resources.get(path) else {
        return Err(ApiError::NotFound(path.to_string()));
    };
    if replay.latency {
        if let Some(secs) = c.secs {
            tokio::time::sleep(Duration::from_secs_f64(secs.min(30.0))).await;
        }
    }
    let tagged = c
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("etag"))
        .map(|(_, v)| v.starts_with("W/"));
    let (status, bytes, etag, kind) = match &c.body {
        Body::Json(v) => {
            let body = match replay.systems.get(path) {
                Some(id) => grafted(v, &st.core.backend.system(id).await?),
                None => v.clone(),
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
    for (n, v) in &c.headers {
        if NOT_REPLAYED.contains(&n.to_ascii_lowercase().as_str()) {
            continue;
        }
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(n.as_str()), HeaderValue::from_str(v)) {
            h.insert(n, v);
        }
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
    let in_body = body.get("@odata.etag").is_some();
    if weak.is_none() && !in_body {
        return (body, None);
    }
    let prefix = if weak == Some(true) { "W/" } else { "" };
    let tag = format!("{prefix}\"{}\"", etag_of(&untagged(&body)));
    if let Some(t) = body.get_mut("@odata.etag") {
        // In place: the members keep the capture's order.
        *t = json!(tag);
    }
    (body, Some(tag))
}

/// `body` without `@odata.etag`, as ETags and If-Match see it.
fn untagged(body: &Value) -> Value {
    let mut v = body.clone();
    if let Some(m) = v.as_object_mut() {
        m.shift_remove("@odata.etag");
    }
    v
}

/// The captured system with the machine's live state where the capture
/// shows the property.
fn grafted(captured: &Value, sys: &System) -> Value {
    let mut v = captured.clone();
    let Some(m) = v.as_object_mut() else {
        return v;
    };
    m.insert("PowerState".into(), json!(sys.power.as_str()));
    if let Some(Value::Object(boot)) = m.get_mut("Boot") {
        let b = &sys.bmc.boot;
        boot.insert("BootSourceOverrideTarget".into(), json!(b.target.as_str()));
        boot.insert(
            "BootSourceOverrideEnabled".into(),
            json!(b.enabled.as_str()),
        );
        for (k, live) in [
            ("BootSourceOverrideMode", json!(b.mode.as_str())),
            ("HttpBootUri", json!(b.http_boot_uri)),
            ("UefiTargetBootSourceOverride", json!(b.uefi_target)),
        ] {
            if boot.contains_key(k) {
                boot.insert(k.into(), live);
            }
        }
    }
    v
}

async fn reset(
    st: &AppState,
    replay: &Replay,
    system: &str,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    json::action_known(body, &["ResetType"], RESET)?;
    let offered = replay.reset_types(system);
    let asked = json::action_str(body, "ResetType", RESET)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[RESET, "ResetType"])))?;
    let reset = ResetType::parse(asked)
        .filter(|_| offered.iter().any(|o| o == asked))
        .ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[asked, "ResetType", RESET],
            ))
        })?;
    let sys = st.core.backend.system(&replay.systems[system]).await?;
    super::systems::power_action_response(st, &sys, reset).await?;
    Ok(json::no_content())
}

/// The Boot properties the capture shows, writable with the values it
/// lists.
fn boot_writables(captured: &Value) -> Vec<Writable> {
    let boot = captured.get("Boot").cloned().unwrap_or(Value::Null);
    let listed = |p: &str, all: Vec<&'static str>| -> Vec<&'static str> {
        match boot
            .get(format!("{p}@Redfish.AllowableValues"))
            .and_then(Value::as_array)
        {
            Some(l) => all
                .into_iter()
                .filter(|a| l.iter().any(|v| v == a))
                .collect(),
            None => all,
        }
    };
    let mut w = Vec::new();
    if boot.get("BootSourceOverrideTarget").is_some() {
        let all = BootTarget::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideTarget",
            Kind::Enum(listed("BootSourceOverrideTarget", all)),
        ));
    }
    if boot.get("BootSourceOverrideEnabled").is_some() {
        let all = OverrideEnabled::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideEnabled",
            Kind::Enum(listed("BootSourceOverrideEnabled", all)),
        ));
    }
    if boot.get("BootSourceOverrideMode").is_some() {
        let all = BootMode::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideMode",
            Kind::Enum(listed("BootSourceOverrideMode", all)),
        ));
    }
    for k in ["HttpBootUri", "UefiTargetBootSourceOverride"] {
        if boot.get(k).is_some() {
            let path = if k == "HttpBootUri" {
                "Boot/HttpBootUri"
            } else {
                "Boot/UefiTargetBootSourceOverride"
            };
            w.push(writable(path, Kind::NullableStr));
        }
    }
    w
}

async fn patch(
    st: &AppState,
    replay: &Replay,
    system: &str,
    headers: &HeaderMap,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let captured = replay
        .capture
        .json(system)
        .ok_or_else(|| ApiError::NotFound(system.to_string()))?;
    let locked = st.locked(&replay.systems[system]).await?;
    let (sys, profile) = (&locked.sys, locked.profile);
    let current = untagged(&grafted(captured, sys));
    json::check_if_match(headers, &current, profile)?;
    checked_patch(body, &current, &boot_writables(captured))?;
    let Some(boot) = body.get("Boot").and_then(Value::as_object) else {
        return Ok(json::no_content());
    };
    let decided = st
        .core
        .decide_boot(sys, &boot_request(boot))
        .map_err(|e| boot_refused(e, profile))?;
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::Boot(decided)])
        .await?;
    drop(locked);
    tracing::info!(system = %sys.name, boot = ?sys.bmc.boot, "replayed system patched");
    Ok(json::no_content())
}
