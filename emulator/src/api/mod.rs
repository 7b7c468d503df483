//! The Redfish API: the router, shared state and the middleware every
//! request passes (path normalisation, authentication, privileges, error
//! bodies for 404/405).
//!
//! Invariants: Redfish JSON and DMTF property names live only under `api/`;
//! handlers reach machines only through `AppState::backend`; every
//! read-check-write of a system holds that system's lock from `SystemLocks`.

mod accounts;
mod bios;
mod bios_registry;
mod boot_rules;
mod chassis;
mod guard;
pub(crate) mod input;
pub mod json;
mod managers;
pub mod metadata;
pub mod query;
mod render_cache;
mod root;
mod secure_boot;
mod sessions;
mod storage;
mod system_parts;
mod systems;
mod tasks;
mod vmedia;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use base64::Engine;
use tower::ServiceExt;
use uuid::Uuid;

use crate::auth::{AuthStore, Principal, Privilege};
use crate::backend::Backend;
use crate::config::FeatureSet;
use crate::error::{ApiError, Msg};
use crate::faults::{Decision, Faults};
use crate::model::System;
use crate::profile::{self, Profile, Profiles};
use crate::tasks::Tasks;

pub use tasks::TASK_MONITOR_PREFIX;

/// Per-resource async locks serialising read-check-write sequences, keyed
/// by system Id (accounts use `account:ID`). Only locks someone holds or
/// waits for stay in the map: each new key first drops the others.
#[derive(Default)]
pub struct SystemLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl SystemLocks {
    pub async fn lock(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let m = {
            let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            match map.get(id) {
                Some(m) => m.clone(),
                None => {
                    // A holder or waiter has a clone of its own; only the
                    // map's is left of a lock nobody wants (and no one can
                    // reach it but through the map, under this mutex).
                    map.retain(|_, m| Arc::strong_count(m) > 1);
                    map.entry(id.to_string()).or_default().clone()
                }
            }
        };
        m.lock_owned().await
    }

    /// How many locks the map keeps.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Everything a handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub backend: Arc<dyn Backend>,
    pub auth: Arc<AuthStore>,
    pub tasks: Arc<Tasks>,
    pub locks: Arc<SystemLocks>,
    /// The last rendering of each System resource.
    pub renders: Arc<systems::RenderCache>,
    pub features: FeatureSet,
    /// `ServiceRoot.UUID`, stable for a given inventory.
    pub service_uuid: Uuid,
    /// The behaviour profiles systems may name.
    pub profiles: Arc<Profiles>,
    /// On an endpoint of one system whose profile fixes them: the Ids of
    /// its Manager and Chassis (the System's is the backend view's).
    pub fixed: Option<Arc<profile::Ids>>,
    /// The process's injected faults.
    pub faults: Arc<Faults>,
    /// On an endpoint of its own: the names of its systems (what a fault
    /// aimed at them hits, service root included).
    pub endpoint_systems: Option<Arc<Vec<String>>>,
    /// The last power action of each system, for profiles whose BMC is
    /// busy or whose host is in POST for a while after one.
    pub power_clock: Arc<systems::PowerClock>,
    /// `ServiceRoot.Vendor`: the profile's of the systems this service
    /// serves, when they share one (`server::endpoints`).
    pub vendor: Arc<str>,
}

impl AppState {
    pub fn new(
        backend: Arc<dyn Backend>,
        auth: AuthStore,
        features: FeatureSet,
        service_uuid: Uuid,
    ) -> Self {
        AppState {
            backend,
            auth: Arc::new(auth),
            tasks: Arc::new(Tasks::default()),
            locks: Arc::new(SystemLocks::default()),
            renders: Arc::new(systems::RenderCache::default()),
            features,
            service_uuid,
            profiles: Arc::new(Profiles::default()),
            fixed: None,
            faults: Arc::new(Faults::default()),
            endpoint_systems: None,
            power_clock: Arc::new(systems::PowerClock::default()),
            vendor: profile::generic().vendor.as_str().into(),
        }
    }

    /// The same state sharing the process's faults.
    pub fn with_faults(mut self, faults: Arc<Faults>) -> Self {
        self.faults = faults;
        self
    }

    /// The same state as an endpoint of its own serving these systems.
    pub fn with_endpoint_systems(mut self, names: Vec<String>) -> Self {
        self.endpoint_systems = Some(Arc::new(names));
        self
    }

    /// The same state serving one system under a profile's fixed Ids.
    pub fn with_fixed_ids(mut self, ids: profile::Ids) -> Self {
        self.fixed = Some(Arc::new(ids));
        self
    }

    /// The Id of the Manager of `sys`.
    pub fn manager_id<'a>(&'a self, sys: &'a System) -> &'a str {
        self.fixed.as_ref().map_or(&sys.id, |f| &f.manager)
    }

    /// The Id of the Chassis of `sys`.
    pub fn chassis_id<'a>(&'a self, sys: &'a System) -> &'a str {
        self.fixed.as_ref().map_or(&sys.id, |f| &f.chassis)
    }

    /// The same state knowing `profiles` (built-in and user profiles).
    pub fn with_profiles(mut self, profiles: Profiles) -> Self {
        self.profiles = Arc::new(profiles);
        self
    }

    /// Finds the system a URL names. A name (rather than the Id) answers
    /// with a redirect to the same URL under the Id, as sushy-tools does;
    /// GET and HEAD get 301, other methods 308 so that they are repeated.
    pub async fn resolve(&self, id: &str, uri: &Uri, method: &Method) -> Result<System, ApiError> {
        // Under fixed Ids a Manager or Chassis has its own Id, no other.
        let id = match &self.fixed {
            Some(f) => {
                let path = uri.path();
                let own = if path.starts_with("/redfish/v1/Managers/") {
                    Some(&f.manager)
                } else if path.starts_with("/redfish/v1/Chassis/") {
                    Some(&f.chassis)
                } else {
                    None
                };
                match own {
                    Some(own) if own == id => f.system.as_str(),
                    Some(_) => return Err(ApiError::NotFound(path.to_string())),
                    None => id,
                }
            }
            None => id,
        };
        match self.backend.find(id).await? {
            None => Err(ApiError::NotFound(uri.path().to_string())),
            Some(r) if r.id != id => {
                let from = format!("/{id}");
                let path = uri.path();
                let location = match path
                    .find(&format!("{from}/"))
                    .or_else(|| path.strip_suffix(&from).map(|p| p.len()))
                {
                    Some(i) => format!("{}/{}{}", &path[..i], r.id, &path[i + from.len()..]),
                    None => return Err(ApiError::NotFound(path.to_string())),
                };
                let permanent_method = !matches!(*method, Method::GET | Method::HEAD);
                Err(ApiError::Redirect {
                    location,
                    permanent_method,
                })
            }
            Some(_) => Ok(self.backend.system(id).await?),
        }
    }

    pub fn profile(&self, sys: &System) -> &'static Profile {
        // Inventories are checked against the profiles at start-up; a name
        // only a state file from elsewhere could bring falls back.
        self.profiles
            .get(&sys.profile)
            .unwrap_or_else(|_| profile::generic())
    }

    /// Takes the system's lock and re-reads it, for a read-check-write.
    pub async fn locked(&self, sys: &System) -> Result<Locked, ApiError> {
        let guard = self.locks.lock(&sys.id).await;
        let sys = self.backend.system(&sys.id).await?;
        let profile = self.profile(&sys);
        Ok(Locked {
            sys,
            profile,
            _guard: guard,
        })
    }
}

/// A system read under its lock; the lock is held until this is dropped.
pub struct Locked {
    pub sys: System,
    pub profile: &'static Profile,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// Extracts the system named by the `{id}` segment of the URL, resolving a
/// name to a redirect (see [`AppState::resolve`]).
pub struct Sys(pub System);

impl FromRequestParts<AppState> for Sys {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, ApiError> {
        let params = RawPathParams::from_request_parts(parts, st)
            .await
            .map_err(|e| ApiError::Internal(format!("path parameters: {e}")))?;
        let id = params
            .iter()
            .find(|(k, _)| *k == "id")
            .map(|(_, v)| v.to_string())
            .ok_or_else(|| ApiError::Internal("route without {id}".into()))?;
        st.resolve(&id, &parts.uri, &parts.method).await.map(Sys)
    }
}

/// The whole Redfish service as one router.
pub fn app(state: AppState) -> Router {
    let f = state.features;
    let mut r = Router::new()
        .merge(root::router())
        .merge(systems::router())
        .merge(managers::router())
        .merge(chassis::router())
        .merge(sessions::router())
        .merge(accounts::router())
        .merge(tasks::router())
        .merge(metadata::router());
    if f.vmedia() {
        r = r.merge(vmedia::router());
    }
    if f.full() {
        r = r
            .merge(bios::router())
            .merge(secure_boot::router())
            .merge(system_parts::router())
            .merge(storage::router());
    }
    let inner = r
        .fallback(|uri: Uri| async move { ApiError::NotFound(uri.path().to_string()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(axum::extract::DefaultBodyLimit::max(json::MAX_BODY))
        .layer(middleware::from_fn_with_state(state.clone(), inject_faults))
        .with_state(state.clone());
    let st = state;
    // Trailing slashes are common in clients (`/redfish/v1/Systems/`); the
    // URI is normalised before routing, so this wraps the inner router.
    let normalized = inner.map_request(|mut req: Request| {
        let path = req.uri().path();
        if path.len() > 1 && path.ends_with('/') && path != "/redfish/v1/" {
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

/// The systems a request concerns, by name: the one its path names, else
/// those of the endpoint it reached (none on the shared service root).
async fn request_systems(st: &AppState, path: &str) -> Vec<String> {
    let mut segs = path.trim_start_matches("/redfish/v1/").split('/');
    if let (Some(kind @ ("Systems" | "Managers" | "Chassis")), Some(id)) =
        (segs.next(), segs.next())
    {
        let id = match &st.fixed {
            Some(f) if kind != "Systems" && (id == f.manager || id == f.chassis) => {
                f.system.as_str()
            }
            _ => id,
        };
        if let Ok(Some(r)) = st.backend.find(id).await {
            return vec![r.name];
        }
    }
    st.endpoint_systems
        .as_ref()
        .map(|v| v.as_ref().clone())
        .unwrap_or_default()
}

/// The error a failing fault answers with: the status asked for, else the
/// profile's busy error (iDRAC's SYS518, ...), else 500; the Base message
/// for the status, and the vendor's when its status is the one sent.
async fn injected_error(st: &AppState, systems: &[String], status: Option<u16>) -> ApiError {
    let mut busy = None;
    if let Some(name) = systems.first() {
        if let Ok(Some(r)) = st.backend.find(name).await {
            if let Ok(sys) = st.backend.system(&r.id).await {
                busy = st.profile(&sys).errors.busy.as_ref();
            }
        }
    }
    let code = status.or(busy.map(|b| b.status)).unwrap_or(500);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut msgs = vec![match code {
        503 => Msg::new("ServiceTemporarilyUnavailable", &["1"]),
        409 => Msg::new("ResourceInUse", &[]),
        500..=599 => Msg::new("InternalError", &[]),
        _ => Msg::new("GeneralError", &[]),
    }];
    if let Some(b) = busy.filter(|b| b.status == code) {
        msgs.push(Msg::vendor(&b.message, ""));
    }
    ApiError::Status(status, msgs)
}

/// A body that fails at once: the server closes the connection without
/// a complete answer, as a BMC that drops it.
struct Dropped;

impl axum::body::HttpBody for Dropped {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "connection dropped by an injected fault",
        ))))
    }
}

async fn inject_faults(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if !st.faults.active() {
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    let systems = request_systems(&st, &path).await;
    let (latency, decision) = st.faults.decide(req.method().as_str(), &path, &systems);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match decision {
        Decision::Pass => next.run(req).await,
        Decision::Unavailable(secs) => ApiError::Unavailable(secs).into_response(),
        Decision::Fail(status) => injected_error(&st, &systems, status).await.into_response(),
        Decision::Drop => {
            tracing::debug!(%path, "fault: connection dropped");
            Response::new(axum::body::Body::new(Dropped))
        }
    }
}

fn is_public(method: &Method, path: &str) -> bool {
    matches!(
        path,
        "/redfish" | "/redfish/v1" | "/redfish/v1/" | "/redfish/v1/odata" | "/redfish/v1/$metadata"
    ) || path.starts_with("/redfish/v1/Schemas/")
        || (*method == Method::POST
            && matches!(
                path,
                "/redfish/v1/SessionService/Sessions"
                    | "/redfish/v1/SessionService/Sessions/Members"
            ))
}

/// The privilege an operation needs before its handler runs. Handlers
/// refine it where the target matters (own account, own session).
fn required_privilege(method: &Method, path: &str) -> Privilege {
    // A login is open to every user, whatever else the request carries.
    if matches!(*method, Method::GET | Method::HEAD) || is_public(method, path) {
        return Privilege::Login;
    }
    if path.starts_with("/redfish/v1/AccountService/Accounts/") && *method == Method::PATCH {
        return Privilege::ConfigureSelf;
    }
    if path.starts_with("/redfish/v1/AccountService") {
        return Privilege::ConfigureUsers;
    }
    if path.starts_with("/redfish/v1/SessionService/Sessions/") {
        return Privilege::Login;
    }
    // DMTF's privilege registry: VirtualMedia needs ConfigureManager
    // wherever it is reached, a System's or a Manager's.
    if path.starts_with("/redfish/v1/SessionService")
        || path.starts_with("/redfish/v1/Managers")
        || path.contains("/VirtualMedia")
    {
        return Privilege::ConfigureManager;
    }
    Privilege::ConfigureComponents
}

async fn authenticate(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    // The guard decided for a client's request; a subrequest of the query
    // layer (`$expand`, `$filter`) is checked here.
    let decided = match req.extensions_mut().remove::<guard::Decided>() {
        Some(guard::Decided(d)) => d,
        None => authorize(&st, req.headers(), req.method(), req.uri().path()).await,
    };
    match decided {
        Ok(Some(p)) => {
            req.extensions_mut().insert(p);
        }
        Ok(None) => {}
        Err(e) => return e.into_response(),
    }
    next.run(req).await
}

/// Who a request is from, once its credentials are checked and its role
/// has the privilege the operation needs; `None` for an anonymous request
/// to a public URL.
pub(crate) async fn authorize(
    st: &AppState,
    h: &axum::http::HeaderMap,
    method: &Method,
    path: &str,
) -> Result<Option<Principal>, ApiError> {
    let header_str = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let creds = Credentials {
        token: header_str("X-Auth-Token"),
        basic: header_str(header::AUTHORIZATION.as_str()),
        public: is_public(method, path),
    };
    let p = principal(st, creds).await?;
    if let Some(p) = &p {
        if !p.role.has(required_privilege(method, path)) {
            return Err(ApiError::Forbidden);
        }
    }
    Ok(p)
}

/// What a request presents to authenticate itself.
struct Credentials {
    token: Option<String>,
    basic: Option<String>,
    /// The URL is readable without authentication.
    public: bool,
}

/// Who the request is from; `None` for an anonymous request to a public URL.
/// Wrong credentials are refused even on public URLs, as BMCs do.
async fn principal(st: &AppState, c: Credentials) -> Result<Option<Principal>, ApiError> {
    if !st.auth.enabled() {
        return Ok(Some(Principal::anonymous_admin()));
    }
    if let Some(token) = &c.token {
        return match st.auth.by_token(token) {
            Some(p) => Ok(Some(p)),
            None if c.public => Ok(None),
            None => Err(ApiError::Unauthorized),
        };
    }
    if let Some(auth) = &c.basic {
        let (user, pass) = parse_basic(auth).ok_or(ApiError::Unauthorized)?;
        return match st.auth.verify(&user, &pass).await {
            Ok(p) => Ok(Some(p)),
            Err(crate::auth::AuthError::Busy) => Err(ApiError::Unavailable(1)),
            Err(_) => Err(ApiError::Unauthorized),
        };
    }
    if c.public {
        return Ok(None);
    }
    Err(ApiError::Unauthorized)
}

fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_string(), p.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_header_parses() {
        let v = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:pa:ss")
        );
        assert_eq!(parse_basic(&v), Some(("admin".into(), "pa:ss".into())));
        assert_eq!(parse_basic("Bearer x"), None);
    }
}
