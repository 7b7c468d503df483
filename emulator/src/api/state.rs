//! The state every handler shares (`AppState`: the backend, accounts,
//! tasks, profiles, faults, an endpoint's fixed Ids), the per-resource
//! `Sys` extractor, which turns the `{id}` of a URL into a system (or a
//! redirect when it is a name). What the BMC decides (locks, power, boot)
//! is its `Core` (`bmc/`), which the state holds.
//!
//! Invariant: every read-check-write of a system holds that system's lock
//! (`AppState::locked`).

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use axum::http::{Method, Uri};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use uuid::Uuid;

use super::render_cache::RenderCache;
use crate::api::error::ApiError;
use crate::api::task_store::Tasks;
use crate::auth::AuthStore;
use crate::backend::Backend;
use crate::bmc::Core;
pub use crate::bmc::Locked;
use crate::config::FeatureSet;
use crate::faults::Faults;
use crate::model::System;
use crate::profile::{self, Profile, Profiles};

/// Everything a handler needs: one shared [`Service`], so that the
/// clones each request's extractors make cost one reference count.
/// Start-up code writes its fields through `DerefMut`, before the state
/// is shared; a write to a shared state changes that clone alone (copy
/// on write), as a write to a copied struct would.
#[derive(Clone)]
pub struct AppState(Arc<Service>);

impl std::ops::Deref for AppState {
    type Target = Service;
    fn deref(&self) -> &Service {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut Service {
        Arc::make_mut(&mut self.0)
    }
}

/// What an [`AppState`] shares.
#[derive(Clone)]
pub struct Service {
    /// The endpoint's BMC: its machines, locks, profiles, faults and
    /// power clock, shared with its IPMI side.
    pub core: Core,
    pub auth: Arc<AuthStore>,
    pub tasks: Arc<Tasks>,
    /// The last rendering of each System resource.
    pub renders: Arc<RenderCache>,
    pub features: FeatureSet,
    /// `ServiceRoot.UUID`, stable for a given inventory.
    pub service_uuid: Uuid,
    /// On an endpoint of one system whose profile fixes them: the Ids of
    /// its Manager and Chassis (the System's is the backend view's).
    pub fixed: Option<Arc<profile::Ids>>,
    /// The profile the service root speaks for (its `Vendor`, its links):
    /// that of the systems this service serves when they share one, else
    /// the generic one (`server::endpoints`).
    pub root_profile: &'static Profile,
    /// On an iDRAC's endpoint: its one server's service tag, which the
    /// service root shows (fixed by the system's UUID and profile).
    pub service_tag: Option<Arc<str>>,
    /// The BMC's job queue and whether its job service is ready (shown
    /// by Dell's Lifecycle Controller API, `api/dell`).
    pub jobs: Arc<crate::bmc::jobs::Jobs>,
    /// Takes this service's listener down while its BMC resets.
    pub downtime: Arc<crate::serve::Downtime>,
    /// Where this service is reached (`ManagerNetworkProtocol`).
    pub ports: Arc<Ports>,
    /// Whether the backend checks an image server's certificate when a
    /// device's `VerifyCertificate` was never set.
    pub media_verifies: bool,
    /// Chassis that enclose the systems' own (sushy-tools' chassis when
    /// started as sushy-emulator; `api/enclosure`).
    pub enclosures: Arc<Vec<crate::model::Enclosure>>,
    /// The only IP family image URLs may name (`--media-ip-family`).
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
    /// The EventService: settings, subscriptions, published events.
    pub events: Arc<super::events::Events>,
    /// How the UpdateService fetches images.
    pub updates: Arc<super::update::UpdateOptions>,
    /// Images uploaded to this BMC's FirmwareInventory, not installed yet.
    pub uploads: Arc<super::update::Uploads>,
    /// A captured BMC this endpoint replays instead of Shoal's own
    /// resources (`--mockup`, `api/mockup/`).
    pub replay: Option<Arc<super::mockup::Replay>>,
}

/// The ports this service's BMC answers on, set by the server once its
/// sockets are bound (unset in-process, where nothing listens).
#[derive(Debug, Default)]
pub struct Ports {
    /// The Redfish listener: whether it speaks TLS, and its port.
    pub redfish: std::sync::OnceLock<(bool, u16)>,
    /// The IPMI (RMCP+) socket's port, where this BMC has one.
    pub ipmi: std::sync::OnceLock<u16>,
}

impl AppState {
    pub fn new(
        backend: Arc<dyn Backend>,
        auth: AuthStore,
        features: FeatureSet,
        service_uuid: Uuid,
    ) -> Self {
        let tasks = Arc::new(Tasks::default());
        let core = Core::new(backend).with_work(tasks.clone());
        AppState(Arc::new(Service {
            core,
            auth: Arc::new(auth),
            tasks,
            renders: Arc::new(RenderCache::default()),
            features,
            service_uuid,
            fixed: None,
            root_profile: profile::generic(),
            service_tag: None,
            jobs: Arc::default(),
            downtime: Arc::default(),
            ports: Arc::default(),
            enclosures: Arc::default(),
            media_ip_family: None,
            media_verifies: true,
            events: Arc::default(),
            updates: Arc::default(),
            uploads: Arc::default(),
            replay: None,
        }))
    }

    /// The same state with an EventService pushing as `options` say,
    /// shaped by the root's profile (set that first).
    pub fn with_events(mut self, options: super::events::EventOptions) -> Self {
        self.events = Arc::new(super::events::Events::new(
            options,
            &self.root_profile.events,
        ));
        self
    }

    /// The same state sharing the process's faults.
    pub fn with_faults(mut self, faults: Arc<Faults>) -> Self {
        self.core.faults = faults;
        self
    }

    /// The same state as an endpoint of its own serving these systems.
    pub fn with_endpoint_systems(mut self, names: Vec<String>) -> Self {
        self.core.endpoint_systems = Some(Arc::new(names));
        self
    }

    /// The service of one BMC, managing `sys`: the Ids its profile fixes,
    /// its root speaking for that profile, an iDRAC's service tag.
    pub fn serving_one(mut self, sys: &System) -> Self {
        let p = self.profile(sys);
        if let Some(ids) = &p.ids {
            self.fixed = Some(Arc::new(ids.clone()));
        }
        self.root_profile = p;
        self.service_tag = super::vendor::service_tag(sys, p);
        let options = self.events.options.clone();
        self.with_events(options)
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
        self.core.profiles = Arc::new(profiles);
        self
    }

    /// Finds the system a URL names. A name (rather than the Id) answers
    /// with a redirect to the same URL under the Id, as sushy-tools does;
    /// GET and HEAD get 301, other methods 308 so that they are repeated.
    pub async fn resolve(&self, id: &str, uri: &Uri, method: &Method) -> Result<System, ApiError> {
        let id = self.resolve_id(id, uri, method).await?;
        Ok(self.core.backend.system(&id).await?)
    }

    /// The backend Id of the system a URL names, as [`AppState::resolve`]
    /// finds it, without reading the system.
    pub async fn resolve_id(
        &self,
        id: &str,
        uri: &Uri,
        method: &Method,
    ) -> Result<String, ApiError> {
        // Under fixed Ids a Manager or Chassis has its own Id, no other.
        let id = match &self.fixed {
            Some(f) => {
                let path = uri.path();
                let own = if path.starts_with("/redfish/v1/Managers/")
                    || path.starts_with("/redfish/v1/Dell/Managers/")
                {
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
        match self.core.backend.find(id).await? {
            None => Err(ApiError::NotFound(uri.path().to_string())),
            Some(r) if r.id != id => match renamed(uri, id, &r.id) {
                Some(location) => Err(ApiError::Redirect {
                    location,
                    permanent_method: !matches!(*method, Method::GET | Method::HEAD),
                }),
                None => Err(ApiError::NotFound(uri.path().to_string())),
            },
            Some(r) => Ok(r.id),
        }
    }

    pub fn profile(&self, sys: &System) -> &'static Profile {
        self.core.profile(sys)
    }

    /// Takes the system's lock and reads it, for a read-check-write.
    pub async fn locked(&self, id: &str) -> Result<Locked, ApiError> {
        Ok(self.core.locked(id).await?)
    }
}

/// Extracts the system named by the `{id}` segment of the URL, resolving a
/// name to a redirect (see [`AppState::resolve`]).
pub struct Sys(pub System);

/// The backend Id of the system the `{id}` segment names, resolved as
/// [`Sys`] resolves it but not read: for writes, which read the system
/// under its lock ([`AppState::locked`]) and need no copy from before.
pub struct SysId(pub String);

/// The `{id}` segment of the request's path.
pub(super) async fn id_segment(parts: &mut Parts, st: &AppState) -> Result<String, ApiError> {
    let params = RawPathParams::from_request_parts(parts, st)
        .await
        .map_err(|e| ApiError::Internal(format!("path parameters: {e}")))?;
    params
        .iter()
        .find(|(k, _)| *k == "id")
        .map(|(_, v)| v.to_string())
        .ok_or_else(|| ApiError::Internal("route without {id}".into()))
}

/// Characters a path segment carries percent-encoded.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// Where a resource named by an alias (a system's name, an enclosure's
/// `Id`) is served: `uri` with the path segment that reads `from` once
/// decoded replaced by `to`, the rest of the path as it came and the query
/// (an OData `$select`, `$expand`) kept. The `{id}` segment is the first
/// after the collection's (`/redfish/v1/Systems/{id}`). `None` when no
/// segment reads `from`.
pub(super) fn renamed(uri: &Uri, from: &str, to: &str) -> Option<String> {
    let mut segments: Vec<String> = uri.path().split('/').map(str::to_string).collect();
    let at = segments
        .iter()
        .skip(4)
        .position(|s| percent_decode_str(s).decode_utf8_lossy() == from)?
        + 4;
    segments[at] = utf8_percent_encode(to, SEGMENT).to_string();
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{}{query}", segments.join("/")))
}

/// The state of the endpoint a request came to, as handlers take it
/// (`State(st): State<AppState>`). The route table is one for every
/// endpoint (built once per feature set: `api::routes`), so it holds no
/// endpoint's state; `app` puts each endpoint's `AppState` into its
/// requests' extensions, where this reads it.
#[derive(Clone)]
pub struct State<T>(pub T);

impl<T> std::ops::Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The endpoint's state a request carries (see [`State`]).
pub fn endpoint_state(parts: &Parts) -> Result<AppState, ApiError> {
    parts
        .extensions
        .get::<AppState>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("a request without its endpoint's state".into()))
}

impl<S: Send + Sync> FromRequestParts<S> for State<AppState> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        endpoint_state(parts).map(State)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Sys {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let st = endpoint_state(parts)?;
        let id = id_segment(parts, &st).await?;
        st.resolve(&id, &parts.uri, &parts.method).await.map(Sys)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SysId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let st = endpoint_state(parts)?;
        let id = id_segment(parts, &st).await?;
        st.resolve_id(&id, &parts.uri, &parts.method)
            .await
            .map(SysId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(uri: &str, from: &str, to: &str) -> Option<String> {
        renamed(&uri.parse().unwrap(), from, to)
    }

    #[test]
    fn an_alias_is_replaced_in_its_segment_with_the_rest_kept() {
        assert_eq!(
            at("/redfish/v1/Systems/node-1", "node-1", "abc").as_deref(),
            Some("/redfish/v1/Systems/abc")
        );
        // Percent-encoded as it came: compared decoded, the rest kept.
        assert_eq!(
            at(
                "/redfish/v1/Systems/my%20node/Bios?$select=Attributes",
                "my node",
                "abc"
            )
            .as_deref(),
            Some("/redfish/v1/Systems/abc/Bios?$select=Attributes")
        );
        // The collection's own segment is never the one replaced.
        assert_eq!(
            at("/redfish/v1/Systems/Systems/Bios", "Systems", "x").as_deref(),
            Some("/redfish/v1/Systems/x/Bios")
        );
        // An Id that needs encoding is encoded.
        assert_eq!(
            at("/redfish/v1/Chassis/a", "a", "b c/d").as_deref(),
            Some("/redfish/v1/Chassis/b%20c%2Fd")
        );
        assert_eq!(at("/redfish/v1/Systems/x", "y", "z"), None);
    }
}
