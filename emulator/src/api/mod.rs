//! The Redfish API: the router assembled per feature set, with the layers
//! every request passes (`guard`, the query layer, path normalisation, the
//! fault and authentication middlewares, 404/405 bodies), and the small
//! body builders the resource modules share (`link`, `collection`,
//! `created`).
//!
//! Invariants: Redfish JSON and DMTF property names live only under `api/`;
//! handlers reach machines only through `AppState::backend`; every
//! read-check-write of a system holds that system's lock from `bmc::SystemLocks`.

mod accounts;
mod bios;
mod bios_registry;
mod boot_certs;
mod boot_options;
mod boot_rules;
mod chassis;
pub mod dell;
pub mod enclosure;
pub mod error;
pub mod events;
mod guard;
mod hpe;
pub(crate) mod input;
pub mod json;
mod logs;
mod managers;
pub mod metadata;
mod middleware;
pub mod mockup;
mod network_adapters;
pub mod patch;
pub mod query;
mod render_cache;
mod root;
mod secure_boot;
mod sessions;
mod state;
mod storage;
mod system_parts;
mod systems;
pub mod task_store;
mod tasks;
pub mod update;
mod vendor;
mod vmedia;
mod vmedia_certs;

use axum::extract::Request;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt;

use crate::api::error::ApiError;

pub(crate) use middleware::authorize;
pub use state::{AppState, Locked, Ports, State, Sys, SysId};
pub use tasks::TASK_MONITOR_PREFIX;

/// The routes of a feature set, with their fallbacks: built once per
/// process and feature set and shared by every endpoint, which passes its
/// state in each request (`State`). Giving each endpoint its own copy
/// (`with_state`) cost about 170 KiB per endpoint.
fn routes(f: crate::config::FeatureSet) -> Router {
    use crate::config::FeatureSet;
    static TABLES: std::sync::OnceLock<[Router; 3]> = std::sync::OnceLock::new();
    let build = |f: FeatureSet| {
        let mut r = Router::new()
            .merge(root::router())
            .merge(systems::router())
            .merge(managers::router())
            .merge(chassis::router())
            .merge(sessions::router())
            .merge(accounts::router())
            .merge(tasks::router())
            .merge(metadata::router())
            .merge(events::router())
            .merge(dell::router(f))
            .merge(hpe::router(f));
        if f.vmedia() {
            r = r.merge(vmedia::router()).merge(vmedia_certs::router());
        }
        if f.full() {
            r = r
                .merge(bios::router())
                .merge(logs::router())
                .merge(secure_boot::router())
                .merge(boot_certs::router())
                .merge(boot_options::router())
                .merge(system_parts::router())
                .merge(network_adapters::router())
                .merge(update::router())
                .merge(storage::router());
        }
        r.fallback(|uri: Uri| async move { ApiError::NotFound(uri.path().to_string()) })
            .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
    };
    let tables = TABLES.get_or_init(|| {
        [
            build(FeatureSet::Minimum),
            build(FeatureSet::Vmedia),
            build(FeatureSet::Full),
        ]
    });
    let i = match f {
        FeatureSet::Minimum => 0,
        FeatureSet::Vmedia => 1,
        FeatureSet::Full => 2,
    };
    tables[i].clone()
}

/// This endpoint's routes: its feature set's, or a replayed capture's.
fn routes_of(st: &AppState) -> Router {
    match st.replay {
        Some(ref r) => mockup::routes(r),
        None => routes(st.features),
    }
}

/// A resource of this endpoint as a GET of `uri` renders it, past the
/// middlewares (the service's own read, for an event's expanded
/// `OriginOfCondition`); `None` unless it answers 200 with JSON (a
/// handler that needs the caller, as the accounts' do, does not).
pub async fn render(st: &AppState, uri: &str) -> Option<serde_json::Value> {
    use tower::ServiceExt;
    let mut req = Request::get(uri).body(axum::body::Body::empty()).ok()?;
    req.extensions_mut().insert(st.clone());
    let resp = routes_of(st).oneshot(req).await.ok()?;
    if resp.status() != axum::http::StatusCode::OK {
        return None;
    }
    let bytes = axum::body::to_bytes(resp.into_body(), json::MAX_BODY * 16)
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The whole Redfish service of one endpoint as one router.
pub fn app(state: AppState) -> Router {
    // The middlewares wrap the routed service as a whole (routing is
    // their innermost step, as with `Router::layer`), so that layering
    // does not rebuild every route per endpoint.
    let routed: Router = routes_of(&state);
    let own = state.clone();
    let inner = tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::inject_faults,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(json::MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::authenticate,
        ))
        // The shared route table's handlers find this endpoint's state in
        // the request (`State`); `$expand`'s inner requests pass here too.
        .map_request(move |mut req: Request| {
            req.extensions_mut().insert(own.clone());
            req
        })
        .service(routed);
    let inner = Router::new().fallback_service(inner);
    let st = state;
    let replay = st.replay.clone();
    // Trailing slashes are common in clients (`/redfish/v1/Systems/`); the
    // URI is normalised before routing, so this wraps the inner router. A
    // replayed capture's URIs are found in any case, as an iLO's are.
    let normalized = inner.map_request(move |mut req: Request| {
        let path = req.uri().path();
        let cased = replay
            .as_ref()
            .map(|r| r.capture.canonical_prefix(path))
            .filter(|c| c.as_str() != path.trim_end_matches('/') && path != "/redfish/v1/");
        if let Some(c) = cased {
            let pq = match req.uri().query() {
                Some(q) => format!("{c}?{q}"),
                None => c,
            };
            if let Ok(uri) = pq.parse::<Uri>() {
                *req.uri_mut() = uri;
            }
        } else if path.len() > 1 && path.ends_with('/') && path != "/redfish/v1/" {
            let trimmed = path.trim_end_matches('/').to_string();
            let pq = match req.uri().query() {
                Some(q) => format!("{trimmed}?{q}"),
                None => trimmed,
            };
            if let Ok(uri) = pq.parse::<Uri>() {
                *req.uri_mut() = uri;
            }
        }
        req
    });
    // The protocol layer (OData-Version, If-None-Match, query parameters)
    // answers from the routed service, and fetches what `$expand`,
    // `$filter` and `only` need through it.
    let routed = Router::new().fallback_service(normalized);
    Router::new().fallback_service(tower::service_fn(move |req: Request| {
        let routed = routed.clone();
        let st = st.clone();
        async move {
            let (req, hold) = match guard::check(&st, req).await {
                Ok(checked) => checked,
                Err(refused) => return Ok::<_, std::convert::Infallible>(refused),
            };
            let resp = query::handle(routed, &st, req).await;
            drop(hold);
            Ok(resp)
        }
    }))
}

/// `Created` with a Location header, for POSTs that make a resource.
pub fn created(location: &str, body: serde_json::Value) -> Response {
    let mut r = json::Resource::plain(body, "GET, DELETE")
        .with_status(StatusCode::CREATED)
        .into_response();
    if let Ok(v) = location.parse() {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// The `{"@odata.id": ...}` link object.
pub fn link(uri: &str) -> serde_json::Value {
    serde_json::json!({ "@odata.id": uri })
}

/// A resource collection body.
pub fn collection(
    odata_type: &str,
    uri: &str,
    name: &str,
    members: impl IntoIterator<Item = String>,
) -> serde_json::Value {
    let members: Vec<serde_json::Value> = members.into_iter().map(|m| link(&m)).collect();
    serde_json::json!({
        "@odata.type": format!("#{odata_type}.{odata_type}"),
        "@odata.id": uri,
        "Name": name,
        "Members@odata.count": members.len(),
        "Members": members,
    })
}
