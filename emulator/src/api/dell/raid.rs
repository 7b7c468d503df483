//! Dell's RAID service on the iDRAC profiles, over the storage model
//! (`crate::storage`), as sushy's Dell extension and Ironic's
//! `idrac-redfish` RAID interface use it:
//!
//! - `Systems/{id}/Oem/Dell/DellRaidService` (linked from the System's
//!   `Links.Oem.Dell`): `ConvertToRAID` / `ConvertToNonRAID` (`PDArray` of
//!   drive FQDDs) run as real-time jobs that change the drives when they
//!   complete; `ClearForeignConfig` (`TargetFQDD`) answers `STOR018`, as
//!   a controller with no foreign drives does (Shoal's drives are never
//!   foreign);
//! - the PERC's `Oem.Dell.DellStorageController.ControllerMode` (RAID or
//!   HBA), changed through the controller's settings object at the next
//!   reset, by a scheduled `RAIDConfiguration` job;
//! - the Storage's `StorageControllers` and the drives' `RaidStatus`
//!   (`api/storage.rs` shows those).
//!
//! Changes exist where the backend manages volumes (the fake); elsewhere
//! the service answers as a controller that supports none of them.

use std::time::Duration;

use crate::api::State;
use crate::bmc::changes::{with_cause, Cause};
use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use super::{dell_msg, job_uri, JobState};
use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::api::storage::Names;
use crate::api::{link, AppState, Sys, SysId};
use crate::model::{Change, System};
use crate::profile::DellLc;
use crate::storage::{ControllerMode, DriveUse, VolumeChange, VolumeError};

const TO_RAID: &str = "ConvertToRAID";
const TO_NON_RAID: &str = "ConvertToNonRAID";
const CLEAR_FOREIGN: &str = "ClearForeignConfig";
/// A PERC 9 (RAID and HBA modes; PERC 10's EnhancedHBA is not offered).
const PERC_MODEL: &str = "PERC H730P Mini";
/// Jobs on the controller are named after it.
const JOB_NAME: &str = "Configure: RAID.Integrated.1-1";
const REAL_TIME: &str = "RealTimeNoRebootConfiguration";
pub(super) const STAGED: &str = "RAIDConfiguration";
const SETTINGS_APPLY_TIME: &str = "@Redfish.SettingsApplyTime";
const MODE_PATH: &str = "Oem/Dell/DellStorageController/ControllerMode";

pub fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/Systems/{id}/Oem/Dell/DellRaidService",
            get(service),
        )
        .route(
            "/redfish/v1/Systems/{id}/Oem/Dell/DellRaidService/Actions/{action}",
            post(action),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Controllers/{c}/Settings",
            get(settings).patch(patch_settings),
        )
}

fn service_uri(sys: &System) -> String {
    format!("/redfish/v1/Systems/{}/Oem/Dell/DellRaidService", sys.id)
}

/// The RAID service of `sys`: on an iDRAC profile, on an endpoint of its
/// own (as the rest of the Lifecycle Controller API).
fn raid_of(st: &AppState, sys: &System, uri: &Uri) -> Result<&'static DellLc, ApiError> {
    match (&st.profile(sys).dell, &st.fixed) {
        (Some(d), Some(_)) => Ok(d),
        _ => Err(ApiError::NotFound(uri.path().to_string())),
    }
}

/// The System's `Links.Oem.Dell.DellRaidService`.
pub(in crate::api) fn system_parts(st: &AppState, sys: &System, v: &mut Value) {
    if st.profile(sys).dell.is_some() && st.fixed.is_some() {
        v["Links"]["Oem"] = json!({
            "Dell": {
                "@odata.type": "#DellOem.v1_3_0.DellOemLinks",
                "DellRaidService": link(&service_uri(sys)),
            }
        });
    }
}

/// The Storage's embedded `StorageControllers` (what sushy's Dell
/// extension reads to find RAID controllers).
pub(in crate::api) fn storage_parts(
    st: &AppState,
    sys: &System,
    names: &Names,
    raid: &[&str],
    v: &mut Value,
) {
    if st.profile(sys).dell.is_none() {
        return;
    }
    v["StorageControllers"] = json!([{
        "@odata.id": format!("{}#/StorageControllers/0", names.storage()),
        "MemberId": "0",
        "Name": PERC_MODEL,
        "Model": PERC_MODEL,
        "Manufacturer": "DELL",
        "SupportedRAIDTypes": raid,
        "Status": { "State": "Enabled", "Health": "OK" },
    }]);
    v["StorageControllers@odata.count"] = json!(1);
}

/// A drive's `Oem.Dell.DellPhysicalDisk`: its `RaidStatus` (drive `id`,
/// the machine's disk `disk`).
pub(in crate::api) fn drive_parts(
    st: &AppState,
    sys: &System,
    id: &str,
    disk: &str,
    v: &mut Value,
) {
    if st.profile(sys).dell.is_none() {
        return;
    }
    let status = match sys.bmc.storage.drive_use(disk) {
        DriveUse::NonRaid(_) => "NonRAID",
        DriveUse::Ready => "Ready",
        DriveUse::Online(_) => "Online",
    };
    v["Oem"] = json!({ "Dell": {
        "@odata.type": "#DellOem.v1_3_0.DellOemResources",
        "DellPhysicalDisk": {
        "@odata.type": "#DellPhysicalDisk.v1_6_0.DellPhysicalDisk",
        "Id": id,
        "RaidStatus": status,
    }}});
}

/// The PERC's name, its `ControllerMode`, and the settings object that
/// changes it where the backend keeps the change.
pub(in crate::api) fn controller_parts(st: &AppState, sys: &System, names: &Names, v: &mut Value) {
    if st.profile(sys).dell.is_none() {
        return;
    }
    v["Name"] = json!(PERC_MODEL);
    v["Model"] = json!(PERC_MODEL);
    v["Manufacturer"] = json!("DELL");
    let s = &sys.bmc.storage;
    v["Oem"] = json!({
        "Dell": {
            "@odata.type": "#DellOemStorageController.v1_0_0.DellOemStorageController",
            "DellStorageController": {
                "ControllerMode": s.mode.as_str(),
                "CurrentControllerMode": s.mode.as_str(),
                "RealtimeCapability": "Capable",
            }
        }
    });
    // The settings object is served where the rest of the Lifecycle
    // Controller API is: on an endpoint of its own (`raid_of`).
    if st.core.backend.manages_volumes() && st.fixed.is_some() {
        v["@Redfish.Settings"] = json!({
            "@odata.type": "#Settings.v1_3_3.Settings",
            "SettingsObject": link(&format!(
                "{}/Controllers/{}/Settings",
                names.storage(),
                names.controller_id()
            )),
            "SupportedApplyTimes": ["OnReset"],
        });
    }
}

async fn service(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    raid_of(&st, &sys, &uri)?;
    let base = service_uri(&sys);
    let mut actions = Map::new();
    for a in [CLEAR_FOREIGN, TO_NON_RAID, TO_RAID] {
        actions.insert(
            format!("#DellRaidService.{a}"),
            json!({ "target": format!("{base}/Actions/DellRaidService.{a}") }),
        );
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": "#DellRaidService.v1_5_1.DellRaidService",
            "@odata.id": base,
            "Id": "DellRaidService",
            "Name": "DellRaidService",
            "Description": "The DellRaidService resource provides some actions to support RAID functionality.",
            "Actions": actions,
        }),
        "GET",
    ))
}

/// 400 with the Base message and Dell's after it.
fn refused(d: &DellLc, base: Msg, dell: &'static str) -> ApiError {
    ApiError::BadRequest(vec![base, dell_msg(d, dell, &[])])
}

/// A conversion's drives: `PDArray`, a non-empty list of drive FQDDs.
fn pd_array(
    d: &DellLc,
    names: &Names,
    body: &Map<String, Value>,
    action: &str,
) -> Result<Vec<String>, ApiError> {
    json::action_known(body, &["PDArray"], action)?;
    let v = body
        .get("PDArray")
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[action, "PDArray"])))?;
    let type_error = || {
        ApiError::bad(Msg::new(
            "ActionParameterValueTypeError",
            &[&json::shown(v), "PDArray", action],
        ))
    };
    let list = v.as_array().ok_or_else(type_error)?;
    if list.is_empty() {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueError",
            &["PDArray", action],
        )));
    }
    list.iter()
        .map(|item| {
            let fqdd = item.as_str().ok_or_else(type_error)?;
            names.drive_name(fqdd).map(str::to_string).ok_or_else(|| {
                refused(
                    d,
                    Msg::new("ActionParameterValueError", &["PDArray", action]),
                    "STOR009",
                )
            })
        })
        .collect()
}

/// The changes a conversion makes on `sys` now.
fn conversion(
    sys: &System,
    action: &str,
    drives: &[String],
) -> Result<Vec<VolumeChange>, VolumeError> {
    let s = &sys.bmc.storage;
    if action == TO_RAID {
        s.to_raid(&sys.disks, drives)
    } else {
        s.to_non_raid(&sys.disks, drives)
    }
}

/// The LC takes no configuration while it reloads after a reset.
fn lc_ready(st: &AppState, d: &DellLc) -> Result<(), ApiError> {
    if st.jobs.ready() {
        return Ok(());
    }
    Err(ApiError::Status(
        StatusCode::SERVICE_UNAVAILABLE,
        vec![
            Msg::new("ServiceTemporarilyUnavailable", &["30"]),
            dell_msg(d, "SYS518", &[]),
        ],
    ))
}

async fn action(
    State(st): State<AppState>,
    SysId(id): SysId,
    Path((_, action)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    let d = raid_of(&st, sys, &uri)?;
    let action: &'static str = match action.strip_prefix("DellRaidService.") {
        Some(TO_RAID) => TO_RAID,
        Some(TO_NON_RAID) => TO_NON_RAID,
        Some(CLEAR_FOREIGN) => CLEAR_FOREIGN,
        _ => return Err(ApiError::NotFound(uri.path().to_string())),
    };
    let names = Names::of(&st, sys);
    if action == CLEAR_FOREIGN {
        json::action_known(&body, &["TargetFQDD"], action)?;
        let target = json::action_str(&body, "TargetFQDD", action)?.ok_or_else(|| {
            ApiError::bad(Msg::new("ActionParameterMissing", &[action, "TargetFQDD"]))
        })?;
        if target != names.storage_id() {
            return Err(refused(
                d,
                Msg::new("ActionParameterValueError", &["TargetFQDD", action]),
                "STOR030",
            ));
        }
        lc_ready(&st, d)?;
        // No drive Shoal models is foreign: nothing to clear.
        return Err(ApiError::BadRequest(vec![dell_msg(d, "STOR018", &[])]));
    }
    let drives = pd_array(d, &names, &body, action)?;
    lc_ready(&st, d)?;
    if !st.core.backend.manages_volumes() {
        return Err(refused(
            d,
            Msg::new("ActionNotSupported", &[action]),
            "STOR009",
        ));
    }
    if st.jobs.busy(&sys.id, REAL_TIME) || st.jobs.busy(&sys.id, STAGED) {
        return Err(refused(d, Msg::new("ResourceInUse", &[]), "STOR023"));
    }
    conversion(sys, action, &drives).map_err(|e| {
        tracing::info!(system = %sys.name, why = %e, "{action} refused");
        refused(
            d,
            Msg::new("ActionParameterValueError", &["PDArray", action]),
            "STOR009",
        )
    })?;
    let job = super::jobs::create(&st, sys, JOB_NAME, REAL_TIME, JobState::Running);
    tracing::info!(system = %sys.name, job = %job.id, ?drives, "{action}");
    let location = job_uri(&st, sys, &job.id);
    drop(locked);
    let (st2, jid, secs) = (st.clone(), job.id.clone(), d.import_secs);
    let job_cause = Cause::Bmc(format!("Dell job {jid}"));
    tokio::spawn(with_cause(job_cause, async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let outcome = finish(&st2, &id, action, &drives).await;
        let (state, msg) = match outcome {
            Ok(()) => (JobState::Completed, "PR19"),
            Err(why) => {
                tracing::warn!(system = %id, job = %jid, %why, "{action} failed");
                (JobState::Failed, "STOR009")
            }
        };
        super::jobs::moved(&st2, &jid, state, msg);
    }));
    Ok(super::jobs::job_accepted(&location))
}

/// A conversion job's end: the drives change, planned again under the
/// system's lock (something may have taken them since the request).
async fn finish(st: &AppState, id: &str, action: &str, drives: &[String]) -> Result<(), String> {
    let locked = st.locked(id).await.map_err(|e| e.to_string())?;
    let changes = conversion(&locked.sys, action, drives).map_err(|e| e.to_string())?;
    let changes = changes
        .into_iter()
        .map(|change| Change::Volume {
            change,
            staged: false,
        })
        .collect();
    st.core
        .backend
        .apply(&locked.sys.id, changes)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The controller's settings object: the mode it will have after the
/// next reset.
async fn settings(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, c)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    raid_of(&st, &sys, &uri)?;
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    if c != names.controller_id() || !st.core.backend.manages_volumes() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let mode = sys.bmc.storage.projected_mode();
    Ok(Resource::plain(
        json!({
            "@odata.type": "#StorageController.v1_7_0.StorageController",
            "@odata.id": uri.path(),
            "Id": c,
            "Name": PERC_MODEL,
            "Oem": { "Dell": {
                "@odata.type": "#DellOemStorageController.v1_0_0.DellOemStorageController",
                "DellStorageController": { "ControllerMode": mode.as_str() },
            }},
        }),
        "GET, PATCH",
    ))
}

/// `Oem.Dell.DellStorageController.ControllerMode` from a settings PATCH:
/// nothing else is writable there.
fn mode_of(body: &Map<String, Value>) -> Result<ControllerMode, ApiError> {
    let unknown = |path: &str| ApiError::bad(Msg::new("PropertyUnknown", &[path]).about(path));
    if let Some(k) = body
        .keys()
        .find(|k| *k != "Oem" && *k != SETTINGS_APPLY_TIME && !k.starts_with("@odata."))
    {
        return Err(unknown(k));
    }
    let mut v = body
        .get("Oem")
        .ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &[MODE_PATH]).about(MODE_PATH)))?;
    let mut path = String::from("Oem");
    for key in ["Dell", "DellStorageController", "ControllerMode"] {
        let obj = v.as_object().ok_or_else(|| {
            ApiError::bad(
                Msg::new("PropertyValueTypeError", &[&json::shown(v), &path]).about(&path),
            )
        })?;
        if let Some(k) = obj.keys().find(|k| *k != key && !k.starts_with("@odata.")) {
            return Err(unknown(&format!("{path}/{k}")));
        }
        path = format!("{path}/{key}");
        v = obj
            .get(key)
            .ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &[&path]).about(&path)))?;
    }
    let s = v.as_str().ok_or_else(|| {
        ApiError::bad(
            Msg::new("PropertyValueTypeError", &[&json::shown(v), MODE_PATH]).about(MODE_PATH),
        )
    })?;
    ControllerMode::parse(s).ok_or_else(|| {
        ApiError::bad(Msg::new("PropertyValueNotInList", &[s, MODE_PATH]).about(MODE_PATH))
    })
}

/// The apply time of a settings PATCH: the mode changes only at a reset.
fn check_apply_time(body: &Map<String, Value>) -> Result<(), ApiError> {
    let Some(v) = body.get(SETTINGS_APPLY_TIME) else {
        return Ok(());
    };
    let path = format!("{SETTINGS_APPLY_TIME}/ApplyTime");
    match v.get("ApplyTime") {
        Some(Value::String(s)) if s == "OnReset" => Ok(()),
        Some(Value::String(s)) => Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &[s, &path]).about(&path),
        )),
        _ => Err(ApiError::bad(
            Msg::new(
                "PropertyValueTypeError",
                &[&json::shown(v), SETTINGS_APPLY_TIME],
            )
            .about(SETTINGS_APPLY_TIME),
        )),
    }
}

async fn patch_settings(
    State(st): State<AppState>,
    SysId(id): SysId,
    Path((_, ctl, c)): Path<(String, String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    let d = raid_of(&st, sys, &uri)?;
    let names = Names::of(&st, sys);
    names.check(&ctl, &uri)?;
    if c != names.controller_id() || !st.core.backend.manages_volumes() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let mode = mode_of(&body)?;
    check_apply_time(&body)?;
    lc_ready(&st, d)?;
    if st.jobs.busy(&sys.id, REAL_TIME) || st.jobs.busy(&sys.id, STAGED) {
        return Err(refused(d, Msg::new("ResourceInUse", &[]), "STOR023"));
    }
    let s = &sys.bmc.storage;
    if mode == s.projected_mode() {
        return Ok(crate::api::json::no_content());
    }
    s.check_mode(mode).map_err(|e| {
        tracing::info!(system = %sys.name, why = %e, "controller mode refused");
        ApiError::bad(Msg::new("PropertyValueConflict", &[MODE_PATH, "Volumes"]).about(MODE_PATH))
    })?;
    let change = VolumeChange::Mode(mode);
    st.core
        .backend
        .apply(
            &sys.id,
            vec![Change::Volume {
                change: change.clone(),
                staged: true,
            }],
        )
        .await?;
    let job = super::jobs::create(&st, sys, JOB_NAME, STAGED, JobState::Scheduled);
    super::jobs::moved(&st, &job.id, JobState::Scheduled, "JCP001");
    tracing::info!(system = %sys.name, job = %job.id, mode = mode.as_str(), "controller mode staged");
    drop(locked);
    tokio::spawn(super::jobs::watch_job(
        st.clone(),
        id,
        job.id.clone(),
        move |s: &System| !s.bmc.storage.pending.contains(&change),
    ));
    Ok(super::jobs::job_accepted(&super::jobs::task_uri(&job.id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::DELL_PERC;

    #[test]
    fn jobs_are_named_after_the_controller() {
        assert_eq!(JOB_NAME, format!("Configure: {DELL_PERC}"));
    }
}
