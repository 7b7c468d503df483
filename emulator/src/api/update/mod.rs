//! The UpdateService: `SimpleUpdate` (an image fetched from a URL),
//! `StartUpdate` (images staged for it), and the `FirmwareInventory`
//! (`inventory.rs`). An update is a task (`run.rs`); what a component
//! runs, and when a staged image is installed, is the core's
//! (`bmc/firmware.rs`).
//!
//! A request is checked whole before anything starts: a missing or
//! non-URL `ImageURI`, a `TransferProtocol` the BMC does not fetch with,
//! a target no component answers to, an unknown apply time, or a second
//! update of a system while one runs, each is a Redfish error and starts
//! nothing.

mod inventory;
pub(super) mod multipart;
pub(super) mod push;
mod run;
mod store;

pub(super) use inventory::system_for;
pub use store::{Kept, QueueState, Queued, Uploads};

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::api::task_store::TaskState;
use crate::api::{link, AppState, State};
use crate::backend::download::MediaOptions;
use crate::model::firmware::ApplyAt;
use crate::model::{MediaImage, System};

const SERVICE: &str = "/redfish/v1/UpdateService";
pub const SIMPLE_UPDATE: &str = "UpdateService.SimpleUpdate";
/// The Name of every update's Task.
pub const TASK_NAME: &str = "Firmware update";
const START_UPDATE: &str = "UpdateService.StartUpdate";
/// The largest image the BMC takes into memory (bmcweb's default is 30
/// MiB).
pub const MAX_IMAGE_BYTES: u64 = 32 << 20;
/// Where images are pushed: a POST under it that is no action may carry
/// one (the guard reads such bodies up to [`MAX_IMAGE_BYTES`]).
pub const PUSH_PREFIX: &str = "/redfish/v1/UpdateService/";
/// The apply times SimpleUpdate takes.
const APPLY_TIMES: [&str; 3] = ["Immediate", "OnReset", "OnStartUpdateRequest"];

/// How the BMC fetches images: InsertMedia's download options (its
/// address policy, TLS, timeout), the size bounded by [`MAX_IMAGE_BYTES`].
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    pub fetch: MediaOptions,
}

impl UpdateOptions {
    pub fn new(mut fetch: MediaOptions) -> Self {
        fetch.max_bytes = fetch.max_bytes.min(MAX_IMAGE_BYTES);
        UpdateOptions { fetch }
    }
}

impl Default for UpdateOptions {
    /// Verified TLS, the default address policy, ten minutes.
    fn default() -> Self {
        UpdateOptions::new(MediaOptions {
            cache: std::path::PathBuf::new(),
            max_bytes: MAX_IMAGE_BYTES,
            timeout: Duration::from_secs(600),
            insecure: false,
            addresses: crate::netpolicy::AddressPolicy::default(),
        })
    }
}

pub fn router() -> Router {
    live_router()
        .route(SERVICE, get(service))
        .route(
            inventory::INVENTORY,
            get(inventory::list).post(store::upload),
        )
        .route(
            &format!("{}/{{id}}", inventory::INVENTORY),
            get(inventory::member).delete(store::delete),
        )
        .route(&format!("{PUSH_PREFIX}{{segment}}"), post(push::push))
}

/// The update actions: also what a replayed capture serves of Shoal's
/// own beside its captured UpdateService and inventory (a push's URI is
/// under the UpdateService, whose captured resources it would shadow).
pub fn live_router() -> Router {
    Router::new()
        .route(
            &format!("{SERVICE}/Actions/{SIMPLE_UPDATE}"),
            post(simple_update),
        )
        .route(
            &format!("{SERVICE}/Actions/{START_UPDATE}"),
            post(start_update),
        )
}

async fn service(State(st): State<AppState>) -> Resource {
    let update = &st.root_profile.update;
    let mut v = json!({
        "@odata.type": "#UpdateService.v1_11_0.UpdateService",
        "@odata.id": SERVICE,
        "Id": "UpdateService",
        "Name": "Update Service",
        "Description": "Firmware updates of the BIOS, the BMC and the network adapter",
        "ServiceEnabled": true,
        "Status": { "State": "Enabled", "Health": "OK" },
        "MaxImageSizeBytes": st.updates.fetch.max_bytes,
        "FirmwareInventory": link(inventory::INVENTORY),
        "Actions": {
            format!("#{SIMPLE_UPDATE}"): {
                "target": format!("{SERVICE}/Actions/{SIMPLE_UPDATE}"),
                "TransferProtocol@Redfish.AllowableValues": update.transfer_protocols,
                "@Redfish.OperationApplyTimeSupport": {
                    "@odata.type": "#Settings.v1_4_0.OperationApplyTimeSupport",
                    "SupportedValues": APPLY_TIMES,
                },
            },
            format!("#{START_UPDATE}"): {
                "target": format!("{SERVICE}/Actions/{START_UPDATE}"),
            },
        },
    });
    if let Some(uri) = update.multipart_uri() {
        v["MultipartHttpPushUri"] = json!(uri);
    }
    super::vendor::update_service_parts(&st, &mut v);
    if let Some(uri) = update.push_uri() {
        v["HttpPushUri"] = json!(uri);
        v["HttpPushUriOptions"] = json!({ "HttpPushUriApplyTime": { "ApplyTime": "Immediate" } });
    }
    Resource::plain(v, "GET")
}

/// A string parameter's value, or the action's error.
fn required<'a>(body: &'a Map<String, Value>, param: &str) -> Result<&'a str, ApiError> {
    json::action_str(body, param, SIMPLE_UPDATE)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[SIMPLE_UPDATE, param])))
}

/// Where a request's parameters come from, for their error messages: an
/// action's body, or a push's `UpdateParameters`.
#[derive(Clone, Copy)]
pub(super) enum Ctx {
    Action(&'static str),
    Parameters,
}

impl Ctx {
    fn type_error(self, v: &Value, param: &str) -> ApiError {
        let shown = json::shown(v);
        ApiError::bad(match self {
            Ctx::Action(a) => Msg::new("ActionParameterValueTypeError", &[&shown, param, a]),
            Ctx::Parameters => Msg::new("PropertyValueTypeError", &[&shown, param]),
        })
    }

    fn not_in_list(self, v: &str, param: &str) -> ApiError {
        ApiError::bad(match self {
            Ctx::Action(a) => Msg::new("ActionParameterValueNotInList", &[v, param, a]),
            Ctx::Parameters => Msg::new("PropertyValueNotInList", &[v, param]),
        })
    }

    fn missing(self, param: &str) -> ApiError {
        ApiError::bad(match self {
            Ctx::Action(a) => Msg::new("ActionParameterMissing", &[a, param]),
            Ctx::Parameters => Msg::new("PropertyMissing", &[param]),
        })
    }

    fn conflict(self, param: &str) -> ApiError {
        ApiError::bad(match self {
            Ctx::Action(a) => Msg::new("ActionParameterValueConflict", &[param, a]),
            Ctx::Parameters => Msg::new("PropertyValueConflict", &[param, param]),
        })
    }
}

/// `@Redfish.OperationApplyTime`: unset, Immediate (`Some(None)`) or a
/// later time.
fn apply_time(body: &Map<String, Value>, ctx: Ctx) -> Result<Option<Option<ApplyAt>>, ApiError> {
    const KEY: &str = "@Redfish.OperationApplyTime";
    Ok(match body.get(KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match s.as_str() {
            "Immediate" => Some(None),
            "OnReset" => Some(Some(ApplyAt::OnReset)),
            "OnStartUpdateRequest" => Some(Some(ApplyAt::OnStartUpdateRequest)),
            other => return Err(ctx.not_in_list(other, KEY)),
        },
        Some(v) => return Err(ctx.type_error(v, KEY)),
    })
}

/// What an update acts on: a system, the component a target named, and
/// what messages call it.
pub(super) type Target = (System, Option<crate::firmware::Component>, String);

/// The system and component `Targets` name; without targets, the
/// service's one system.
pub(super) async fn target(
    st: &AppState,
    targets: Option<&Value>,
    ctx: Ctx,
) -> Result<Target, ApiError> {
    let targets: Vec<&str> = match targets {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| t.as_str().ok_or_else(|| ctx.type_error(t, "Targets")))
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(ctx.type_error(v, "Targets")),
    };
    let mut found: Option<Target> = None;
    for t in &targets {
        let (sys, c) = inventory::resolve_target(st, t)
            .await?
            .ok_or_else(|| ctx.not_in_list(t, "Targets"))?;
        match &found {
            // One BMC updates its own server: one system, one component.
            Some((s, prev, _))
                if s.id != sys.id || (prev.is_some() && c.is_some() && *prev != c) =>
            {
                return Err(ctx.conflict("Targets"))
            }
            Some((_, Some(_), _)) => {}
            _ => found = Some((sys, c, t.to_string())),
        }
    }
    if let Some(f) = found {
        return Ok(f);
    }
    match inventory::system_for(st, "").await? {
        (Some(sys), false) => {
            let label = format!("/redfish/v1/Systems/{}", sys.id);
            Ok((sys, None, label))
        }
        _ => Err(ctx.missing("Targets")),
    }
}

/// Starts the update task of `req`: the Task, as it stands.
pub(super) fn start(
    st: &AppState,
    req: run::Request,
    claim: crate::api::task_store::Claim,
    action: &str,
) -> Result<crate::api::task_store::Task, ApiError> {
    let mut req = req;
    let claim = match super::vendor::update_job(st, &req.sys) {
        Some(jid) => {
            req.vendor_job = true;
            claim.with_id(jid)
        }
        None => claim,
    };
    let work_state = st.clone();
    let id = st.tasks.spawn_tracked(
        claim,
        TASK_NAME,
        action,
        TaskState::New,
        st.events.clone(),
        move |p| Box::pin(run::run(work_state, req, p)),
    );
    st.tasks
        .get(&id)
        .ok_or_else(|| ApiError::Internal("the task just started is gone".into()))
}

/// The boundary of a `multipart/form-data` body's content type.
pub(super) fn multipart_boundary(content_type: &str) -> Result<String, ApiError> {
    multipart::boundary(content_type).map_err(|_| ApiError::UnsupportedMediaType)
}

/// The parts of a `multipart/form-data` body, or the client's error.
pub(super) fn multipart_parts<'a>(
    boundary: &str,
    body: &'a [u8],
) -> Result<Vec<multipart::Part<'a>>, ApiError> {
    multipart::parse(boundary, body).map_err(|e| {
        tracing::info!(error = %e, "multipart upload refused");
        ApiError::bad(Msg::new("MissingOrMalformedPart", &[]))
    })
}

/// Starts the update of `sys` with `bytes` pushed under `name` (to
/// `path`), at each component's default apply time: the Task.
pub(super) async fn start_pushed(
    st: &AppState,
    bytes: axum::body::Bytes,
    name: String,
    path: &str,
) -> Result<crate::api::task_store::Task, ApiError> {
    let (sys, only, target) = target(st, None, Ctx::Parameters).await?;
    let claim = claim(st, &sys)?;
    let req = run::Request {
        sys,
        source: run::Source::Pushed(bytes, name),
        only,
        apply: None,
        target,
        vendor_job: false,
    };
    start(st, req, claim, path)
}

/// The right to update `sys`: one update of a system at a time, as a BMC
/// runs one (409 while another runs).
pub(super) fn claim(
    st: &AppState,
    sys: &System,
) -> Result<crate::api::task_store::Claim, ApiError> {
    st.tasks.claim(&format!("update:{}", sys.id))
}

async fn simple_update(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    const PARAMS: [&str; 5] = [
        "ImageURI",
        "TransferProtocol",
        "Targets",
        "Username",
        "Password",
    ];
    let vendor = super::vendor::simple_update_params(st.root_profile);
    let known: Vec<&str> = PARAMS.iter().chain(vendor).copied().collect();
    json::action_known(&body, &known, SIMPLE_UPDATE)?;
    let uri = required(&body, "ImageURI")?;
    // An image uploaded to the inventory (an iDRAC's HttpPushUri), or
    // one to fetch.
    let upload = store::named(&st, uri);
    let parsed: Option<axum::http::Uri> = uri.parse().ok();
    let fetchable = parsed
        .as_ref()
        .is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
    if upload.is_none() && !fetchable {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueFormatError",
            &[uri, "ImageURI", SIMPLE_UPDATE],
        )));
    }
    let protocol = json::action_str(&body, "TransferProtocol", SIMPLE_UPDATE)?;
    if let Some(p) = protocol {
        if !st
            .root_profile
            .update
            .transfer_protocols
            .iter()
            .any(|x| x == p)
        {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[p, "TransferProtocol", SIMPLE_UPDATE],
            )));
        }
    }
    let user = json::action_str(&body, "Username", SIMPLE_UPDATE)?;
    let password = json::action_str(&body, "Password", SIMPLE_UPDATE)?;
    let ctx = Ctx::Action(SIMPLE_UPDATE);
    let apply = apply_time(&body, ctx)?;
    let (sys, only, target) = target(&st, body.get("Targets"), ctx).await?;
    let claim = claim(&st, &sys)?;
    let image = MediaImage {
        image: uri.to_string(),
        inserted: false,
        write_protected: true,
        // The URL's scheme decides (Ironic sends HTTP for https URLs).
        transfer_protocol: None,
        transfer_method: None,
        user_name: user.map(str::to_string),
        password: password.map(str::to_string),
        verify: None,
        cas: Vec::new(),
    };
    // Taken once the update is sure to run: a refused one leaves it.
    let source = match upload {
        Some(u) => {
            let u = st
                .uploads
                .take(&u.id)
                .ok_or_else(|| ApiError::NotFound(format!("{}/{}", inventory::INVENTORY, u.id)))?;
            run::Source::Pushed(u.bytes, u.id)
        }
        None => run::Source::Fetch(image),
    };
    let profile = st.profile(&sys);
    let req = run::Request {
        sys,
        source,
        only,
        apply,
        target,
        vendor_job: false,
    };
    let task = start(
        &st,
        req,
        claim,
        &format!("{SERVICE}/Actions/{SIMPLE_UPDATE}"),
    )?;
    Ok(super::vendor::simple_update_accepted(profile, &task)
        .unwrap_or_else(|| crate::api::tasks::accepted(&task)))
}

async fn start_update(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    json::action_known(&body, &[], START_UPDATE)?;
    let (all, _) = inventory::systems(&st).await?;
    let mut started = false;
    for sys in &all {
        let bmc_waits = sys
            .bmc
            .firmware
            .staged
            .get(&crate::firmware::Component::Bmc)
            .is_some_and(|s| s.apply == ApplyAt::OnStartUpdateRequest);
        if st.core.start_update(&sys.id).await? {
            started = true;
            if bmc_waits {
                restart_for_update(&st, sys);
            }
        }
    }
    if !started {
        return Err(ApiError::bad(Msg::new("OperationNotAllowed", &[])));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The BMC of `sys` restarts into the firmware it just wrote, away as
/// long as the profile says (else as long as a Manager reset).
pub(super) fn restart_for_update(st: &AppState, sys: &System) {
    let profile = st.profile(sys);
    let (reset_down, settle) = super::vendor::bmc_reset_times(profile).unwrap_or((
        Duration::from_secs(super::managers::RESET_DOWN_SECS),
        Duration::ZERO,
    ));
    let down = profile
        .update
        .bmc_down_secs
        .map_or(reset_down, Duration::from_secs);
    super::managers::restart_bmc(st, sys, "firmware update", (down, settle));
}
