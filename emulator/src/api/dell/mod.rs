//! Dell's Lifecycle Controller API, on the systems whose profile has it
//! (`[dell]`) and an endpoint of their own (one iDRAC, one server):
//!
//! - `#OemManager.ImportSystemConfiguration` under the Manager's
//!   `Actions.Oem` (`import.rs`): a Server Configuration Profile in
//!   `ImportBuffer` (`scp.rs`) applied to the machine, answered 202 with a
//!   job whose Task (`TaskService/Tasks/JID_…`) answers 202 while it runs;
//! - the job queue (`jobs.rs`) at `Managers/{id}/Oem/Dell/Jobs`, and the
//!   BIOS configuration jobs staged attributes wait for;
//! - the services (`services.rs`): `DellJobService.DeleteJobQueue`,
//!   `DellLCService.GetRemoteServicesAPIStatus`,
//!   `DelliDRACCardService.iDRACReset`;
//! - the RAID service and the PERC's `Oem.Dell` (`raid.rs`);
//! - what the generic resources show of an iDRAC, through the hooks
//!   `api/vendor.rs` calls (this module's `pub(in crate::api)` functions):
//!   the service root's service tag, the Manager's links and host name,
//!   the NICs' and drives' `Oem.Dell`, the BIOS registry under `Bios`.
//!
//! Dell's messages follow the Base message that says the same, as the
//! profiles' vendor messages do.

mod import;
mod jobs;
pub mod raid;
mod scp;
mod services;
pub(in crate::api) mod update;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::Resource;
use crate::api::state::endpoint_state;
use crate::api::{link, AppState, State, Sys};
use crate::config::FeatureSet;
use crate::model::System;
use crate::profile::{DellLc, Profile};

pub use crate::bmc::jobs::{Job, JobState};
use import::{HOST_POWER_STATES, SHUTDOWN_TYPES, TARGETS};
use jobs::job_uri;
pub(in crate::api) use jobs::{bios_job_scheduled, bios_jobs, check_bios_job, task_response};
use services::{API_STATUS, DELETE_QUEUE, IDRAC_RESET};
pub(in crate::api) use update::Outcome as UpdateOutcome;

/// The wing's routes in feature set `f`: the Lifecycle Controller API in
/// every one, the BIOS registry under `Bios` in the full one.
pub fn router(f: FeatureSet) -> Router {
    let mut r = Router::new()
        .route(
            "/redfish/v1/Managers/{id}/Actions/Oem/{action}",
            post(import::import),
        )
        .route(
            "/redfish/v1/Managers/{id}/Jobs",
            get(jobs::job_list).post(jobs::create_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Jobs/{jid}",
            get(jobs::job).delete(jobs::delete_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Oem/Dell/Jobs",
            get(jobs::job_list).post(jobs::create_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Oem/Dell/Jobs/{jid}",
            get(jobs::job).delete(jobs::delete_job),
        );
    // The services at their path (iDRAC 9 6.00 and later, iDRAC 10) and
    // at the older one.
    for svc in [
        "/redfish/v1/Managers/{id}/Oem/Dell",
        "/redfish/v1/Dell/Managers/{id}",
    ] {
        r = r
            .route(&format!("{svc}/DellJobService"), get(services::job_service))
            .route(
                &format!("{svc}/DellJobService/Actions/DellJobService.{DELETE_QUEUE}"),
                post(services::delete_queue),
            )
            .route(&format!("{svc}/DellLCService"), get(services::lc_service))
            .route(
                &format!("{svc}/DellLCService/Actions/DellLCService.{API_STATUS}"),
                post(services::api_status),
            )
            .route(
                &format!("{svc}/DelliDRACCardService"),
                get(services::card_service),
            )
            .route(
                &format!("{svc}/DelliDRACCardService/Actions/DelliDRACCardService.{IDRAC_RESET}"),
                post(services::idrac_reset),
            );
    }
    if f.full() {
        r = r.route(
            "/redfish/v1/Systems/{id}/Bios/BiosRegistry",
            get(bios_registry),
        );
    }
    r.merge(raid::router())
}

fn dell_msg(d: &DellLc, id: &'static str, args: &[&str]) -> Msg {
    let m = d.message(id);
    debug_assert!(m.is_some(), "Dell message {id} missing from the table");
    match m {
        Some(m) => Msg::vendor_with(m, args),
        None => Msg::new("GeneralError", &[]),
    }
}

/// The Lifecycle Controller API of `sys`, when its profile has it and it
/// has an endpoint of its own; otherwise `path` is not found.
fn lc_of(st: &AppState, sys: &System, path: &str) -> Result<&'static DellLc, ApiError> {
    let not_found = || ApiError::NotFound(path.to_string());
    let (Some(d), Some(_)) = (&st.profile(sys).dell, &st.fixed) else {
        return Err(not_found());
    };
    let mgr = format!("/redfish/v1/Managers/{}/", st.manager_id(sys));
    let legacy = path.starts_with("/redfish/v1/Dell/")
        || path
            .strip_prefix(&mgr)
            .is_some_and(|rest| rest == "Jobs" || rest.starts_with("Jobs/"));
    if legacy && !d.legacy_paths {
        return Err(not_found());
    }
    Ok(d)
}

/// A request for the Lifecycle Controller API of a System, read without
/// its lock ([`lc_of`] decides whether the URL is found): the endpoint's
/// state, the System, the path asked and the profile's API.
struct LcRequest {
    st: AppState,
    sys: System,
    path: String,
    d: &'static DellLc,
}

impl<S: Send + Sync> FromRequestParts<S> for LcRequest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        let Sys(sys) = Sys::from_request_parts(parts, s).await?;
        let st = endpoint_state(parts)?;
        let path = parts.uri.path().to_string();
        let d = lc_of(&st, &sys, &path)?;
        Ok(LcRequest { st, sys, path, d })
    }
}

/// 200 with Base `Success` and the Dell message after it.
fn success(m: Msg) -> Response {
    let msgs = [Msg::new("Success", &[]).render(), m.render()];
    (
        StatusCode::OK,
        axum::Json(json!({ "@Message.ExtendedInfo": msgs })),
    )
        .into_response()
}

/// What the Manager of `sys` shows of the API: the import action under
/// `Actions.Oem`, the services and the job queue under `Links.Oem.Dell`.
pub fn manager_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    let (Some(d), Some(_)) = (&profile.dell, &st.fixed) else {
        return;
    };
    let id = st.manager_id(sys);
    let base = format!("/redfish/v1/Managers/{id}");
    let svc = format!("{base}/Oem/Dell");
    v["Actions"]["Oem"] = json!({
        "#OemManager.ImportSystemConfiguration": {
            "target": format!("{base}/Actions/Oem/{}", d.import_action),
            "ShareParameters": { "Target@Redfish.AllowableValues": TARGETS },
            "ShutdownType@Redfish.AllowableValues": SHUTDOWN_TYPES,
            "HostPowerState@Redfish.AllowableValues": HOST_POWER_STATES,
            "ImportSystemConfiguration@Redfish.AllowableValues": ["TimeToWait", "ImportBuffer"],
        }
    });
    v["Links"]["Oem"] = json!({
        "Dell": {
            "@odata.type": "#DellOem.v1_3_0.DellOemLinks",
            "DellJobService": link(&format!("{svc}/DellJobService")),
            "DellLCService": link(&format!("{svc}/DellLCService")),
            "DelliDRACCardService": link(&format!("{svc}/DelliDRACCardService")),
            "Jobs": link(&format!("{base}/Oem/Dell/Jobs")),
        }
    });
}

/// An iDRAC's service root names its server by service tag (Dell's tools
/// identify the machine there before anything else).
pub(in crate::api) fn root_oem(st: &AppState) -> Option<Value> {
    let tag = st.service_tag.as_deref()?;
    Some(json!({ "Dell": {
        "@odata.type": "#DellServiceRoot.v1_0_0.DellServiceRoot",
        "IsBranded": 0,
        "ServiceTag": tag,
    }}))
}

/// The service tag an iDRAC's service root shows for its one server.
pub(in crate::api) fn service_tag(sys: &System, profile: &Profile) -> Option<Arc<str>> {
    profile
        .dell
        .as_ref()
        .map(|_| crate::api::systems::sku(sys, profile).into())
}

/// An iDRAC's host name out of the box: `idrac-<service tag>`.
pub(in crate::api) fn host_name(sys: &System, profile: &Profile) -> Option<String> {
    profile
        .dell
        .as_ref()
        .map(|_| format!("idrac-{}", crate::api::systems::sku(sys, profile)))
}

/// How long an iDRAC's reset keeps its address down, then its LC not
/// ready.
pub(in crate::api) fn reset_times(profile: &Profile) -> Option<(Duration, Duration)> {
    let d = profile.dell.as_ref()?;
    Some((
        Duration::from_secs(d.reset_down_secs),
        Duration::from_secs(d.lc_settle_secs),
    ))
}

/// The integrated NIC's `Manufacturer` as an iDRAC names it.
pub(in crate::api) fn adapter_manufacturer(profile: &Profile) -> Option<&'static str> {
    profile
        .dell
        .as_ref()
        .map(|_| "Broadcom Inc. and subsidiaries")
}

/// What a captured iDRAC 9 shows of a NetworkDeviceFunction beside the
/// links (deprecated since, read by Dell's older scripts): its port.
pub(in crate::api) fn function_parts(profile: &Profile, port: Value, body: &mut Value) {
    if profile.dell.is_some() {
        body["PhysicalPortAssignment"] = port.clone();
        body["AssignablePhysicalPorts"] = json!([port]);
    }
}

/// An iDRAC serves the BIOS attribute registry below the Bios resource
/// as well (`Bios/BiosRegistry`, where Dell's scripts and Ansible modules
/// read it): the same registry as `/redfish/v1/Registries` holds.
async fn bios_registry(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if st.profile(&sys).dell.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let uri = format!("/redfish/v1/Systems/{}/Bios/BiosRegistry", sys.id);
    Ok(Resource::new(
        crate::api::bios_registry::registry_document(&uri),
        crate::profile::generic(),
        "GET",
    ))
}
