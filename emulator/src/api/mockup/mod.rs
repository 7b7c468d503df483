//! `--mockup`: a captured BMC (`crate::mockup`) served as it was
//! captured (bodies, headers, odd Ids, OEM sections, missing properties,
//! captured errors with their status), with Shoal's live machine grafted
//! onto each captured ComputerSystem: its PowerState and Boot override
//! read from the backend, the Reset action at the capture's own target
//! with the capture's ResetType values, a Boot PATCH checked against the
//! capture's AllowableValues and decided by the core (each system runs on
//! a profile derived from its capture, `mockup::derived_profile`;
//! `system.rs`), virtual media inserted and ejected at each captured
//! device's own targets into a machine's CD or removable slot
//! (`media.rs`), and ETags recomputed where the capture had them. Sessions are Shoal's own,
//! at the standard URIs. Latencies from `time.json` when asked.
//!
//! Invariants: a captured resource is served byte for byte as JSON
//! re-serialised, except the grafted properties; a write reaches the
//! machine only through the core (`power_action`, `decide_boot`) or the
//! media path every InsertMedia takes (`vmedia::insert_into`); a
//! write the capture cannot show is refused with a Redfish error.

use std::collections::BTreeMap;
use std::sync::Arc;

mod bios;
mod firmware;
mod manager;
mod media;
mod read;
mod system;

use read::{get, untagged};

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{Map, Value};

use super::error::{ApiError, Msg};
use super::json;
use super::{AppState, State};
use crate::mockup::{key, ErrorStyle, Mockup};
use crate::model::{MediaSlot, ResetType};
use bios::CapturedBios;
use media::{
    inserts_by_patch, media_action, media_devices, media_grafted, media_patch, media_targets,
    Sharing,
};
use system::{grafted, nic_grafted, patch, reset};

/// The Reset action's name in a ComputerSystem's `Actions`.
const RESET: &str = "#ComputerSystem.Reset";

/// A capture being replayed, and which machine stands behind each of
/// its systems.
#[derive(Debug)]
pub struct Replay {
    pub capture: Arc<Mockup>,
    /// Captured system URI → backend system Id, in the capture's order.
    pub systems: BTreeMap<String, String>,
    /// Each system's Reset target → the system's URI.
    pub resets: BTreeMap<String, String>,
    /// Each captured VirtualMedia device a machine's slot stands behind →
    /// (its system's URI, the slot).
    pub media: BTreeMap<String, (String, MediaSlot)>,
    /// Devices that share a slot, and which of them shows its media.
    sharing: Sharing,
    /// InsertMedia and EjectMedia targets → (the device's URI, insert).
    pub media_actions: BTreeMap<String, (String, bool)>,
    /// Each system's settings object (`@Redfish.Settings`) → the system.
    pub settings: BTreeMap<String, String>,
    /// Each manager's Reset target → the manager's URI.
    pub manager_resets: BTreeMap<String, String>,
    /// Each captured resource that shows a firmware version → what.
    versions: BTreeMap<String, Vec<firmware::Shown>>,
    /// Each captured EthernetInterface of a system → (the system, which
    /// of the machine's NICs stands behind it).
    nics: BTreeMap<String, (String, usize)>,
    /// Each captured system's BIOS.
    pub bios: Vec<CapturedBios>,
    /// Sleep each GET's captured time before answering.
    pub latency: bool,
    /// Each resource's captured headers as answered (`Served::of`).
    served: BTreeMap<String, read::Served>,
    /// How the captured service words its errors.
    style: ErrorStyle,
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
                Some((capture.canonical(target.as_str()?), s.clone()))
            })
            .collect();
        let (media, sharing) = media_devices(&capture);
        let media_actions = media
            .keys()
            .flat_map(|dev| {
                let targets = capture.json(dev).map(media_targets).unwrap_or_default();
                let c = &capture;
                targets
                    .into_iter()
                    .map(move |(t, insert)| (c.canonical(&t), (dev.clone(), insert)))
            })
            .collect();
        let settings = capture
            .systems
            .iter()
            .filter_map(|s| {
                let v = capture.json(s)?;
                let o = v.pointer("/@Redfish.Settings/SettingsObject/@odata.id")?;
                Some((capture.canonical(o.as_str()?), s.clone()))
            })
            .collect();
        let served = read::served(&capture);
        Ok(Replay {
            bios: CapturedBios::of(&capture),
            manager_resets: manager::manager_resets(&capture),
            versions: firmware::versions(&capture),
            nics: system::interfaces(&capture),
            served,
            style: ErrorStyle::of(&capture),
            capture,
            systems,
            resets,
            media,
            media_actions,
            sharing,
            settings,
            latency,
        })
    }

    /// The BIOS whose resource, settings object or ResetBios target is
    /// `path`, and which of them it is.
    fn bios_at(&self, path: &str) -> Option<(&CapturedBios, BiosPart)> {
        self.bios.iter().find_map(|b| {
            let part = if b.uri == path {
                BiosPart::Resource
            } else if b.settings.as_deref() == Some(path) {
                BiosPart::Settings
            } else if b.reset.as_deref() == Some(path) {
                BiosPart::Reset
            } else {
                return None;
            };
            Some((b, part))
        })
    }

    /// Where the captured resources of the machine `id` are, for its
    /// events: its captured system and the manager that manages it.
    pub fn place(&self, id: &str) -> Option<crate::api::events::record::Place> {
        let (system, _) = self.systems.iter().find(|(_, m)| *m == id)?;
        let manager = self
            .capture
            .json(system)
            .and_then(|s| s.pointer("/Links/ManagedBy/0/@odata.id"))
            .and_then(Value::as_str)
            .map(|m| self.capture.canonical(m))
            .unwrap_or_else(|| "/redfish/v1/Managers".into());
        Some(crate::api::events::record::Place {
            system: system.clone(),
            manager,
            media: None,
        })
    }

    /// The machine and component an update's target names: a captured
    /// system (the whole machine), its manager or a FirmwareInventory
    /// entry that shows a version (`firmware::versions`).
    pub fn update_target(
        &self,
        target: &str,
    ) -> Option<(String, Option<crate::firmware::Component>)> {
        let uri = self.capture.canonical(target);
        if let Some(id) = self.systems.get(&uri) {
            return Some((id.clone(), None));
        }
        let shown = self.versions.get(&uri)?.first()?;
        Some((
            self.systems.get(&shown.system)?.clone(),
            Some(shown.component),
        ))
    }

    /// The ResetType values the capture offers for `system`: its
    /// AllowableValues, else its ActionInfo's, else every one.
    fn reset_types(&self, system: &str) -> Vec<String> {
        let action = self
            .capture
            .json(system)
            .and_then(|v| v.pointer("/Actions/#ComputerSystem.Reset"));
        offered(&self.capture, action, "ResetType").unwrap_or_else(|| {
            ResetType::ALL
                .iter()
                .map(|r| r.as_str().to_string())
                .collect()
        })
    }
}

/// The values a captured action lists for `param`: its
/// `@Redfish.AllowableValues`, else its ActionInfo's.
fn offered(capture: &Mockup, action: Option<&Value>, param: &str) -> Option<Vec<String>> {
    let listed = |v: Option<&Value>| -> Option<Vec<String>> {
        Some(
            v?.as_array()?
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
        )
    };
    let action = action?;
    if let Some(l) = listed(action.get(format!("{param}@Redfish.AllowableValues").as_str())) {
        return Some(l);
    }
    let info = action
        .get("@Redfish.ActionInfo")
        .and_then(Value::as_str)
        .and_then(|i| capture.json(i))?;
    info.get("Parameters")
        .and_then(Value::as_array)
        .and_then(|ps| ps.iter().find(|p| p["Name"] == param))
        .and_then(|p| listed(p.get("AllowableValues")))
}

/// Which part of a captured BIOS a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BiosPart {
    Resource,
    Settings,
    Reset,
}

/// The replay of `--mockup` (capture, latency) over the service's
/// systems `refs`, if asked.
pub fn replay_of(
    mockup: &Option<crate::mockup::Replayed>,
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

/// Sets `st` to replay `mockup` (capture, latency), if any, over the
/// systems its view shows: the N-th captured system over the machine
/// on the N-th derived profile (`capture-N`, `endpointK-capture-N`;
/// libvirt lists its domains in its own order), others after them in
/// the view's order.
pub async fn attach(
    st: &mut AppState,
    mockup: Option<&crate::mockup::Replayed>,
) -> Result<(), String> {
    let Some(m) = mockup else { return Ok(()) };
    let refs = st.core.backend.systems().await.map_err(|e| e.to_string())?;
    let mut keyed = Vec::with_capacity(refs.len());
    for r in refs {
        let profile = st
            .core
            .backend
            .system(&r.id)
            .await
            .map_err(|e| e.to_string())?
            .profile;
        keyed.push((capture_index(&profile), r));
    }
    keyed.sort_by_key(|(n, _)| *n);
    let refs: Vec<_> = keyed.into_iter().map(|(_, r)| r).collect();
    st.replay = replay_of(&Some(m.clone()), &refs)?;
    if let Some(r) = &st.replay {
        bios::seed(st, &r.capture, &r.systems).await;
    }
    Ok(())
}

/// N of a profile derived from a capture's N-th system (`…capture-N`).
fn capture_index(profile: &str) -> usize {
    profile
        .rsplit_once("capture-")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// The routes of a replayed capture: Shoal's sessions, its tasks (an
/// insert that runs as one answers 202 with its monitor), event
/// subscriptions (the machines' changes pushed, naming the captured
/// resources) and firmware updates (the captured versions following
/// what is installed), the rest from the capture.
pub fn routes(replay: &Replay) -> Router {
    let mut live = super::sessions::live_router()
        .merge(super::tasks::live_router())
        .merge(super::events::live_router())
        .merge(super::update::live_router());
    for uri in firmware::push_uris(&replay.capture) {
        live = live.route(&uri, axum::routing::post(firmware::push));
    }
    live.route_layer(axum::middleware::from_fn(captured_behind_live))
        .fallback(serve)
}

/// A session or task the capture holds (the capturer's own, which other
/// captured resources may link to) is served as captured where Shoal has
/// no live one of that Id, as DMTF's Mockup-Server serves it.
async fn captured_behind_live(req: Request, next: axum::middleware::Next) -> Response {
    let st = req.extensions().get::<AppState>().cloned();
    let replay = st.as_ref().and_then(|s| s.replay.clone());
    let path = replay.as_ref().map_or_else(
        || key(req.uri().path()).to_string(),
        |r| r.capture.canonical(req.uri().path()),
    );
    let replay =
        replay.filter(|r| req.method() == Method::GET && r.capture.resources.contains_key(&path));
    let style = st
        .as_ref()
        .and_then(|s| s.replay.as_ref())
        .map(|r| r.style.clone());
    let r = next.run(req).await;
    match (r.status(), st, replay) {
        (StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED, Some(st), Some(replay)) => {
            get(&st, &replay, &path)
                .await
                .unwrap_or_else(IntoResponse::into_response)
        }
        // Shoal's own refusals in the captured service's words.
        (s, _, _) if s.is_client_error() || s.is_server_error() => match style {
            Some(style) => restyled(r, &style).await,
            None => r,
        },
        _ => r,
    }
}

/// A request to the replay; its errors in the captured service's words
/// (`ErrorStyle`).
async fn serve(State(st): State<AppState>, req: Request) -> Response {
    let replay = st.replay.clone();
    match answer(st, req).await {
        Ok(r) => r,
        Err(e) => {
            let r = e.into_response();
            match replay {
                Some(replay) => restyled(r, &replay.style).await,
                None => r,
            }
        }
    }
}

/// `r`, a Redfish error, in `style`.
async fn restyled(r: Response, style: &ErrorStyle) -> Response {
    if *style == ErrorStyle::default() {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, json::MAX_BODY).await else {
        return (parts.status, "").into_response();
    };
    let bytes = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut v) => {
            style.apply(&mut v);
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
        }
        Err(_) => bytes,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

async fn answer(st: AppState, req: Request) -> Result<Response, ApiError> {
    let Some(replay) = st.replay.clone() else {
        return Err(ApiError::NotFound(req.uri().path().to_string()));
    };
    let path = replay.capture.canonical(req.uri().path());
    let method = req.method().clone();
    let headers = req.headers().clone();
    match method {
        Method::GET | Method::HEAD => get(&st, &replay, &path).await,
        Method::POST if replay.resets.contains_key(&path) => {
            let body = body_of(req).await?;
            reset(&st, &replay, &replay.resets[&path], &body).await
        }
        Method::POST if replay.manager_resets.contains_key(&path) => {
            let body = body_of(req).await?;
            manager::reset(&st, &replay, &replay.manager_resets[&path], &body).await
        }
        Method::POST if replay.media_actions.contains_key(&path) => {
            let body = body_of(req).await?;
            media_action(&st, &replay, &path, &body).await
        }
        Method::PATCH if replay.media.contains_key(&path) && inserts_by_patch(&replay, &path) => {
            let body = body_of(req).await?;
            media_patch(&st, &replay, &path, &headers, &body).await
        }
        Method::PATCH if replay.systems.contains_key(&path) => {
            let body = body_of(req).await?;
            patch(&st, &replay, (&path, &path), &headers, &body).await
        }
        Method::POST | Method::PATCH if replay.bios_at(&path).is_some() => {
            let (b, part) = replay.bios_at(&path).expect("matched");
            let machine = &replay.systems[&b.system];
            let body = body_of(req).await?;
            match (method, part) {
                // A BIOS without a settings object takes its PATCH itself.
                (Method::PATCH, BiosPart::Settings) | (Method::PATCH, BiosPart::Resource)
                    if part == BiosPart::Settings || b.settings.is_none() =>
                {
                    bios::patch(&st, b, machine, &headers, &body, &replay.capture).await
                }
                (Method::POST, BiosPart::Reset) => {
                    bios::reset(&st, b, machine, &body, &replay.capture).await
                }
                _ => Err(ApiError::MethodNotAllowed),
            }
        }
        Method::PATCH if replay.settings.contains_key(&path) => {
            let body = body_of(req).await?;
            let system = replay.settings[&path].clone();
            patch(&st, &replay, (&system, &path), &headers, &body).await
        }
        _ if replay.capture.resources.contains_key(&path) => Err(ApiError::MethodNotAllowed),
        _ => Err(ApiError::NotFound(req.uri().path().to_string())),
    }
}

/// A request's JSON object; no body at all is an empty one (EjectMedia
/// as many clients send it).
async fn body_of(req: Request) -> Result<Map<String, Value>, ApiError> {
    let bytes = axum::body::to_bytes(req.into_body(), json::MAX_BODY)
        .await
        .map_err(|_| ApiError::bad(Msg::new("MalformedJSON", &[])))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ApiError::bad(Msg::new("MalformedJSON", &[]))),
    }
}
