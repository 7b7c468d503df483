//! Dell's Lifecycle Controller API, on the systems whose profile has it
//! (`[dell]`) and an endpoint of their own (one iDRAC, one server):
//!
//! - `#OemManager.ImportSystemConfiguration` under the Manager's
//!   `Actions.Oem`: a Server Configuration Profile in `ImportBuffer`
//!   (`scp.rs`) applied to the machine, answered 202 with a job whose
//!   Task (`TaskService/Tasks/JID_…`) answers 202 while it runs;
//! - the job queue (`jobs.rs`) at `Managers/{id}/Oem/Dell/Jobs`, and
//!   `DellJobService.DeleteJobQueue`;
//! - `DellLCService.GetRemoteServicesAPIStatus` (LC, real-time and server
//!   status);
//! - `DelliDRACCardService.iDRACReset`: the endpoint's address refuses
//!   connections for `reset_down_secs` (sessions are lost), then the LC
//!   is not ready for `lc_settle_secs`.
//!
//! Dell's messages follow the Base message that says the same, as the
//! profiles' vendor messages do.

pub mod raid;
mod scp;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::api::State;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use super::json::{self, JsonObject, Resource};
use super::{collection, link, AppState, Sys, SysId};
use crate::api::error::{ApiError, Msg};
use crate::bmc::changes::{with_cause, Cause};
use crate::bmc::{BootRefused, BootRequest};
use crate::model::{BootTarget, Change, OverrideEnabled, PowerState, System};
use crate::profile::{DellLc, Profile};
use crate::timefmt::rfc3339;

pub use crate::bmc::jobs::{Job, JobState};

const IMPORT: &str = "ImportSystemConfiguration";
const DELETE_QUEUE: &str = "DeleteJobQueue";
const API_STATUS: &str = "GetRemoteServicesAPIStatus";
const IDRAC_RESET: &str = "iDRACReset";
/// `ShareParameters.Target` values (the component classes an import may
/// touch).
const TARGETS: &[&str] = &[
    "ALL",
    "IDRAC",
    "BIOS",
    "NIC",
    "RAID",
    "FC",
    "InfiniBand",
    "SupportAssist",
    "EventFilters",
    "System",
    "LifecycleController",
    "AHCI",
    "PCIeSSD",
];
const SHUTDOWN_TYPES: &[&str] = &["Graceful", "Forced", "NoReboot"];
const HOST_POWER_STATES: &[&str] = &["On", "Off"];
const FORCE: &[&str] = &["Force", "Graceful"];

pub fn router() -> Router {
    let mut r = Router::new()
        .route(
            "/redfish/v1/Managers/{id}/Actions/Oem/{action}",
            post(import),
        )
        .route(
            "/redfish/v1/Managers/{id}/Jobs",
            get(job_list).post(create_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Jobs/{jid}",
            get(job).delete(delete_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Oem/Dell/Jobs",
            get(job_list).post(create_job),
        )
        .route(
            "/redfish/v1/Managers/{id}/Oem/Dell/Jobs/{jid}",
            get(job).delete(delete_job),
        );
    // The services at their path (iDRAC 9 6.00 and later, iDRAC 10) and
    // at the older one.
    for svc in [
        "/redfish/v1/Managers/{id}/Oem/Dell",
        "/redfish/v1/Dell/Managers/{id}",
    ] {
        r = r
            .route(&format!("{svc}/DellJobService"), get(job_service))
            .route(
                &format!("{svc}/DellJobService/Actions/DellJobService.{DELETE_QUEUE}"),
                post(delete_queue),
            )
            .route(&format!("{svc}/DellLCService"), get(lc_service))
            .route(
                &format!("{svc}/DellLCService/Actions/DellLCService.{API_STATUS}"),
                post(api_status),
            )
            .route(&format!("{svc}/DelliDRACCardService"), get(card_service))
            .route(
                &format!("{svc}/DelliDRACCardService/Actions/DelliDRACCardService.{IDRAC_RESET}"),
                post(idrac_reset),
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
/// has an endpoint of its own; otherwise the URL is not found.
fn lc_of(st: &AppState, sys: &System, uri: &Uri) -> Result<&'static DellLc, ApiError> {
    let not_found = || ApiError::NotFound(uri.path().to_string());
    let (Some(d), Some(_)) = (&st.profile(sys).dell, &st.fixed) else {
        return Err(not_found());
    };
    let mgr = format!("/redfish/v1/Managers/{}/", st.manager_id(sys));
    let legacy = uri.path().starts_with("/redfish/v1/Dell/")
        || uri
            .path()
            .strip_prefix(&mgr)
            .is_some_and(|rest| rest == "Jobs" || rest.starts_with("Jobs/"));
    if legacy && !d.legacy_paths {
        return Err(not_found());
    }
    Ok(d)
}

/// A BIOS configuration job: the staged attributes apply at the reset.
const BIOS_JOB: &str = "BIOSConfiguration";
const BIOS_JOB_NAME: &str = "Configure: BIOS.Setup.1-1";

/// Whether `sys` is behind an iDRAC's Lifecycle Controller, whose staged
/// BIOS attributes wait for a configuration job.
pub(in crate::api) fn bios_jobs(st: &AppState, sys: &System) -> bool {
    st.profile(sys).dell.is_some() && st.fixed.is_some()
}

/// A BIOS change may not be staged while a BIOS job waits (the pending
/// values are committed to it).
pub(in crate::api) fn check_bios_job(st: &AppState, sys: &System) -> Result<(), ApiError> {
    if bios_jobs(st, sys) && st.jobs.busy(&sys.id, BIOS_JOB) {
        return Err(ApiError::Conflict(format!(
            "{} has a BIOS configuration job scheduled",
            sys.name
        )));
    }
    Ok(())
}

/// Schedules the BIOS job that the next reset completes (the staged
/// attributes were released to it); the job's `JID_`.
pub(in crate::api) fn schedule_bios_job(st: &AppState, sys: &System) -> String {
    let job = st
        .jobs
        .create(&sys.id, BIOS_JOB_NAME, BIOS_JOB, JobState::Scheduled);
    st.jobs.update(
        &job.id,
        JobState::Scheduled,
        "JCP001",
        crate::profile::dell::text("JCP001"),
    );
    tracing::info!(system = %sys.name, job = %job.id, "BIOS job scheduled");
    tokio::spawn(watch_job(
        st.clone(),
        sys.id.clone(),
        job.id.clone(),
        |s: &System| s.bmc.bios.pending.is_empty(),
    ));
    job.id
}

/// 202 for a request that started a job, with the job at `location`.
pub(in crate::api) fn job_accepted(location: &str) -> Response {
    let body = json!({ "@Message.ExtendedInfo": [Msg::new("Success", &[]).render()] });
    let mut r = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    if let Ok(h) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    r
}

/// A job's Task: what a settings PATCH that scheduled it names in
/// `Location` (Dell's scripts and sushy's task monitor follow it).
pub(in crate::api) fn task_uri(jid: &str) -> String {
    format!("/redfish/v1/TaskService/Tasks/{jid}")
}

/// A scheduled job completes once a reset has `applied` its change; a
/// deleted job is no longer watched (`take_back` undid its change as it
/// went).
async fn watch_job<A>(st: AppState, id: String, jid: String, applied: A)
where
    A: Fn(&System) -> bool + Send + 'static,
{
    if until_applied(&st, &id, &jid, applied).await {
        complete(&st, &jid, "PR19");
    }
}

/// Waits until a start of system `id` has `applied` what job `jid`
/// scheduled: false when the job was deleted or finished meanwhile, or
/// the system went away (nothing more to follow).
async fn until_applied<A>(st: &AppState, id: &str, jid: &str, applied: A) -> bool
where
    A: Fn(&System) -> bool,
{
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        match st.jobs.get(jid) {
            Some(j) if !j.state.finished() => {}
            _ => return false,
        }
        let Ok(sys) = st.core.backend.system(id).await else {
            return false;
        };
        if applied(&sys) {
            return true;
        }
    }
}

/// Job `jid` completed, with Dell's message `msg`.
fn complete(st: &AppState, jid: &str, msg: &'static str) {
    st.jobs.update(
        jid,
        JobState::Completed,
        msg,
        crate::profile::dell::text(msg),
    );
}

/// Deletes jobs of system `id` (one, or the whole queue with `None`)
/// under the system's lock, and takes back what unfinished configuration
/// jobs had scheduled, in the same request: a BIOS job's values are held
/// again (staged, waiting for another job), a controller job's mode
/// change is dropped (the controller keeps its mode). How many went.
async fn delete_jobs(st: &AppState, id: &str, one: Option<&str>) -> Result<usize, ApiError> {
    let locked = st.locked(id).await?;
    let sys = &locked.sys;
    let gone = match one {
        Some(jid) => st.jobs.delete(id, jid).into_iter().collect(),
        None => st.jobs.clear(id),
    };
    let mut changes = Vec::new();
    for j in gone.iter().filter(|j| !j.state.finished()) {
        match j.job_type {
            BIOS_JOB if !sys.bmc.bios.pending.is_empty() => changes.push(Change::BiosHold(true)),
            raid::STAGED => changes.push(Change::Volume {
                change: crate::storage::VolumeChange::Mode(sys.bmc.storage.mode),
                staged: true,
            }),
            _ => continue,
        }
        tracing::info!(system = %sys.name, job = %j.id, "job deleted: its change taken back");
    }
    if !changes.is_empty() {
        st.core.backend.apply(id, changes).await?;
    }
    Ok(gone.len())
}

/// `POST Managers/{id}/Jobs` with a `TargetSettingsURI`: a configuration
/// job for the BIOS attributes staged without an apply time (Dell's own
/// scripts' way), 200 with the job's `Location`.
async fn create_job(
    State(st): State<AppState>,
    SysId(id): SysId,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    lc_of(&st, sys, &uri)?;
    for k in body.keys() {
        if !["TargetSettingsURI", "StartTime", "EndTime"].contains(&k.as_str())
            && !k.starts_with("@odata.")
        {
            return Err(ApiError::bad(Msg::new("PropertyUnknown", &[k]).about(k)));
        }
    }
    for k in ["StartTime", "EndTime"] {
        match body.get(k) {
            None => {}
            Some(Value::String(v)) if v == "TIME_NOW" || v == "TIME_NA" => {}
            Some(v) => {
                return Err(ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[&json::shown(v), k]).about(k),
                ))
            }
        }
    }
    let target = match body.get("TargetSettingsURI") {
        Some(Value::String(t)) => t.clone(),
        Some(v) => {
            return Err(ApiError::bad(
                Msg::new(
                    "PropertyValueTypeError",
                    &[&json::shown(v), "TargetSettingsURI"],
                )
                .about("TargetSettingsURI"),
            ))
        }
        None => {
            return Err(ApiError::bad(Msg::new(
                "CreateFailedMissingReqProperties",
                &["TargetSettingsURI"],
            )))
        }
    };
    let bios = format!("/redfish/v1/Systems/{}/Bios/Settings", sys.id);
    if target.trim_end_matches('/') != bios {
        return Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &[&target, "TargetSettingsURI"])
                .about("TargetSettingsURI"),
        ));
    }
    check_bios_job(&st, sys)?;
    if sys.bmc.bios.pending.is_empty() {
        return Err(ApiError::bad(
            Msg::new(
                "PropertyValueConflict",
                &["TargetSettingsURI", "Attributes"],
            )
            .about("TargetSettingsURI"),
        ));
    }
    st.core
        .backend
        .apply(&sys.id, vec![Change::BiosHold(false)])
        .await?;
    let jid = schedule_bios_job(&st, sys);
    let body = json!({ "@Message.ExtendedInfo": [Msg::new("Success", &[]).render()] });
    let mut r = (StatusCode::OK, axum::Json(body)).into_response();
    if let Ok(h) = HeaderValue::from_str(&job_uri(&st, sys, &jid)) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    Ok(r)
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

/// A job as `Managers/{id}/Jobs/{jid}` shows it.
fn job_json(uri: &str, j: &Job) -> Value {
    let percent = if j.state.finished() { 100 } else { 0 };
    json!({
        "@odata.type": "#DellJob.v1_6_0.DellJob",
        "@odata.id": uri,
        "Id": j.id,
        "Name": j.name,
        "Description": "Job Instance",
        "JobType": j.job_type,
        "JobState": j.state.as_str(),
        "Message": j.message,
        "MessageId": j.message_id,
        "MessageArgs": [],
        "PercentComplete": percent,
        "StartTime": "TIME_NOW",
        "EndTime": "TIME_NA",
        "ActualRunningStartTime": rfc3339(j.start),
        "ActualRunningStopTime": j.end.map(rfc3339),
        "CompletionTime": j.end.map(rfc3339),
        "TargetSettingsURI": null,
    })
}

fn job_uri(st: &AppState, sys: &System, jid: &str) -> String {
    format!(
        "/redfish/v1/Managers/{}/Oem/Dell/Jobs/{jid}",
        st.manager_id(sys)
    )
}

/// The Task of a job (`TaskService/Tasks/JID_…`): 202 with the task while
/// the job has not finished (sushy's Dell extension polls while it sees
/// 202), then 200.
pub async fn task_response(st: &AppState, j: &Job) -> Result<Response, ApiError> {
    let sys = st.core.backend.system(&j.system).await?;
    let d = st.profile(&sys).dell.as_ref();
    let uri = format!("/redfish/v1/TaskService/Tasks/{}", j.id);
    let mut dell_job = job_json(&job_uri(st, &sys, &j.id), j);
    if let Some(o) = dell_job.as_object_mut() {
        o.remove("@odata.id");
    }
    let (state, status) = match j.state {
        JobState::Scheduled | JobState::Running => ("Running", "OK"),
        JobState::Completed => ("Completed", "OK"),
        JobState::CompletedWithErrors => ("Completed", "Warning"),
        JobState::Failed => ("Exception", "Critical"),
    };
    let mut v = json!({
        "@odata.type": "#Task.v1_5_1.Task",
        "@odata.id": uri,
        "Id": j.id,
        "Name": j.name,
        "TaskState": state,
        "TaskStatus": status,
        "PercentComplete": if j.state.finished() { 100 } else { 0 },
        "StartTime": rfc3339(j.start),
        "Description": "Server Configuration and other Tasks running on iDRAC are listed here",
        "Messages": [{
            "MessageId": d.map_or(j.message_id.to_string(), |d| format!("{}.{}", d.registry, j.message_id)),
            "Message": j.message,
            "MessageArgs": [],
        }],
        "Oem": { "Dell": dell_job },
    });
    if let Some(end) = j.end {
        v["EndTime"] = json!(rfc3339(end));
    }
    let mut r = Resource::plain(v, "GET").into_response();
    if !j.state.finished() {
        *r.status_mut() = StatusCode::ACCEPTED;
        if let Ok(h) = HeaderValue::from_str(&uri) {
            r.headers_mut().insert(header::LOCATION, h);
        }
    }
    Ok(r)
}

async fn job_list(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    lc_of(&st, &sys, &uri)?;
    let base = uri.path().to_string();
    let members = st
        .jobs
        .of(&sys.id)
        .into_iter()
        .map(|j| format!("{base}/{}", j.id));
    let mut v = collection("DellJobCollection", uri.path(), "JobQueue", members);
    v["@odata.type"] = json!("#DellJobCollection.DellJobCollection");
    v["Description"] = json!("Collection of Job Instances");
    Ok(Resource::plain(v, "GET"))
}

fn job_of(st: &AppState, sys: &System, jid: &str, uri: &Uri) -> Result<Job, ApiError> {
    st.jobs
        .get(jid)
        .filter(|j| j.system == sys.id)
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

async fn job(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, jid)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    lc_of(&st, &sys, &uri)?;
    let j = job_of(&st, &sys, &jid, &uri)?;
    Ok(Resource::plain(job_json(uri.path(), &j), "GET, DELETE"))
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

async fn delete_job(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, jid)): Path<(String, String)>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let d = lc_of(&st, &sys, &uri)?;
    job_of(&st, &sys, &jid, &uri)?;
    delete_jobs(&st, &sys.id, Some(&jid)).await?;
    tracing::info!(system = %sys.name, job = %jid, "job deleted");
    Ok(success(dell_msg(d, "SUP020", &[])))
}

/// One of the services linked under `Links.Oem.Dell`, with its one
/// action (`Service.Action`) and that action's allowable values.
struct Service {
    odata_type: &'static str,
    id: &'static str,
    name: &'static str,
    description: &'static str,
    action: (&'static str, &'static str),
    allowable: Option<(&'static str, &'static [&'static str])>,
}

fn service(st: &AppState, sys: &System, uri: &Uri, s: &Service) -> Result<Resource, ApiError> {
    lc_of(st, sys, uri)?;
    let (svc, action) = s.action;
    let mut a = json!({ "target": format!("{}/Actions/{svc}.{action}", uri.path()) });
    if let Some((param, values)) = s.allowable {
        a[format!("{param}@Redfish.AllowableValues")] = json!(values);
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": s.odata_type,
            "@odata.id": uri.path(),
            "Id": s.id,
            "Name": s.name,
            "Description": s.description,
            "Actions": { format!("#{svc}.{action}"): a },
        }),
        "GET",
    ))
}

async fn job_service(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    service(&st, &sys, &uri, &Service {
        odata_type: "#DellJobService.v1_6_0.DellJobService",
        id: "Job Service",
        name: "DellJobService",
        description: "The DellJobService resource provides some actions to support Job management functionality.",
        action: ("DellJobService", DELETE_QUEUE),
        allowable: None,
    })
}

async fn delete_queue(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let d = lc_of(&st, &sys, &uri)?;
    json::action_known(&body, &["JobID"], DELETE_QUEUE)?;
    let jid = json::action_str(&body, "JobID", DELETE_QUEUE)?.ok_or_else(|| {
        ApiError::bad(Msg::new("ActionParameterMissing", &[DELETE_QUEUE, "JobID"]))
    })?;
    if jid == "JID_CLEARALL" || jid == "JID_CLEARALL_FORCE" {
        let n = delete_jobs(&st, &sys.id, None).await?;
        tracing::info!(system = %sys.name, jobs = n, "job queue cleared");
    } else if delete_jobs(&st, &sys.id, Some(jid)).await? == 0 {
        return Err(ApiError::BadRequest(vec![
            Msg::new("ActionParameterValueError", &["JobID", DELETE_QUEUE]),
            dell_msg(d, "SUP011", &[]),
        ]));
    }
    Ok(success(dell_msg(d, "SUP020", &[])))
}

async fn lc_service(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    service(&st, &sys, &uri, &Service {
        odata_type: "#DellLCService.v1_7_0.DellLCService",
        id: "DellLCService",
        name: "DellLCService",
        description: "The DellLCService resource provides some actions to support Lifecycle Controller functionality.",
        action: ("DellLCService", API_STATUS),
        allowable: None,
    })
}

async fn api_status(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
    body: json::OptionalJsonObject,
) -> Result<Response, ApiError> {
    lc_of(&st, &sys, &uri)?;
    if let Some(b) = &body.0 {
        json::action_known(b, &[], API_STATUS)?;
    }
    let ready = st.jobs.ready();
    let word = |r: bool| if r { "Ready" } else { "NotReady" };
    // After a reset the LC reloads what it knows of the server.
    let lc = if ready { "Ready" } else { "ReloadingData" };
    let server = match sys.power {
        PowerState::Off | PowerState::PoweringOff => "PoweredOff",
        _ if st
            .core
            .power_clock
            .within(&sys.id, st.profile(&sys).power.post_secs, true) =>
        {
            "InPOST"
        }
        _ => "OutOfPOST",
    };
    Ok((
        StatusCode::OK,
        axum::Json(json!({
            "@Message.ExtendedInfo": [Msg::new("Success", &[]).render()],
            "LCStatus": lc,
            "RTStatus": word(ready),
            "SEKMServiceStatus": word(ready),
            "ServerStatus": server,
            "Status": word(ready),
            "TelemetryServiceStatus": word(ready),
        })),
    )
        .into_response())
}

async fn card_service(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    service(&st, &sys, &uri, &Service {
        odata_type: "#DelliDRACCardService.v1_6_0.DelliDRACCardService",
        id: "DelliDRACCardService",
        name: "DelliDRACCardService",
        description: "The DelliDRACCardService resource provides some actions to support iDRAC configuration.",
        action: ("DelliDRACCardService", IDRAC_RESET),
        allowable: Some(("Force", FORCE)),
    })
}

async fn idrac_reset(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let d = lc_of(&st, &sys, &uri)?;
    json::action_known(&body, &["Force"], IDRAC_RESET)?;
    if let Some(f) = json::action_str(&body, "Force", IDRAC_RESET)? {
        if !FORCE.contains(&f) {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[f, "Force", IDRAC_RESET],
            )));
        }
    }
    let down = Duration::from_secs(d.reset_down_secs);
    let settle = Duration::from_secs(d.lc_settle_secs);
    tracing::info!(system = %sys.name, ?down, ?settle, "iDRAC reset");
    super::managers::restart_bmc(&st, &sys, down, settle);
    Ok(success(dell_msg(d, "RAC064", &[])))
}

/// `ShareParameters`: only `Target` (a string or a list); a network
/// share (`IPAddress`, `ShareName`, …) is not something Shoal fetches.
fn targets(body: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let Some(sp) = body.get("ShareParameters") else {
        return Ok(vec!["ALL".into()]);
    };
    let sp = sp.as_object().ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterValueTypeError",
            &[&json::shown(sp), "ShareParameters", IMPORT],
        ))
    })?;
    let unsupported: Vec<Msg> = sp
        .keys()
        .filter(|k| *k != "Target")
        .map(|k| {
            Msg::new(
                "ActionParameterNotSupported",
                &[&format!("ShareParameters/{k}"), IMPORT],
            )
        })
        .collect();
    if !unsupported.is_empty() {
        return Err(ApiError::BadRequest(unsupported));
    }
    let list: Vec<&Value> = match sp.get("Target") {
        None => return Ok(vec!["ALL".into()]),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
    };
    let mut out = Vec::new();
    for v in list {
        // iDRAC takes "ALL" and "IDRAC,BIOS" alike.
        let s = v.as_str().ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueTypeError",
                &[&json::shown(v), "ShareParameters/Target", IMPORT],
            ))
        })?;
        for t in s.split(',').map(str::trim) {
            if !TARGETS.contains(&t) {
                return Err(ApiError::bad(Msg::new(
                    "ActionParameterValueNotInList",
                    &[t, "ShareParameters/Target", IMPORT],
                )));
            }
            out.push(t.to_string());
        }
    }
    if out.is_empty() {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueError",
            &["ShareParameters/Target", IMPORT],
        )));
    }
    Ok(out)
}

/// The component class of an FQDD (`iDRAC.Embedded.1` → `IDRAC`), as
/// `ShareParameters.Target` names it.
fn class_of(fqdd: &str) -> String {
    fqdd.split('.').next().unwrap_or("").to_ascii_uppercase()
}

async fn import(
    State(st): State<AppState>,
    SysId(id): SysId,
    Path((_, action)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    // The action's name is the profile's (checked before the body is read).
    let d = lc_of(&st, sys, &uri)?;
    if action != d.import_action {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    json::action_known(
        &body,
        &[
            "ShareParameters",
            "ImportBuffer",
            "ShutdownType",
            "HostPowerState",
            // Dell's Ansible module (idrac_server_config_profile, from a
            // local file) names the host's power state after the import so.
            "EndHostPowerState",
            "TimeToWait",
        ],
        IMPORT,
    )?;
    for (param, allowed) in [
        ("ShutdownType", SHUTDOWN_TYPES),
        ("HostPowerState", HOST_POWER_STATES),
        ("EndHostPowerState", HOST_POWER_STATES),
    ] {
        if let Some(v) = json::action_str(&body, param, IMPORT)? {
            if !allowed.contains(&v) {
                return Err(ApiError::bad(Msg::new(
                    "ActionParameterValueNotInList",
                    &[v, param, IMPORT],
                )));
            }
        }
    }
    if let Some(t) = body.get("TimeToWait") {
        if !t.as_u64().is_some_and(|n| (300..=3600).contains(&n)) {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueError",
                &["TimeToWait", IMPORT],
            )));
        }
    }
    let targets = targets(&body)?;
    let buffer = json::action_str(&body, "ImportBuffer", IMPORT)?.ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterMissing",
            &[IMPORT, "ImportBuffer"],
        ))
    })?;
    if !st.jobs.ready() {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            vec![
                Msg::new("ServiceTemporarilyUnavailable", &["30"]),
                dell_msg(d, "SYS518", &[]),
            ],
        ));
    }
    // LC068: an import runs, a configuration job waits, or attributes
    // are staged without one.
    let staged = sys.bmc.bios.held && !sys.bmc.bios.pending.is_empty();
    if st.jobs.busy(&sys.id, "ImportConfiguration") || st.jobs.busy(&sys.id, BIOS_JOB) || staged {
        return Err(ApiError::BadRequest(vec![
            Msg::new("ResourceInUse", &[]),
            dell_msg(d, "LC068", &[]),
        ]));
    }
    let refused = |e: scp::ScpError| {
        tracing::info!(system = %sys.name, why = %e, "SCP import refused");
        let line;
        let m = match &e {
            scp::ScpError::NoRoot => dell_msg(d, "SYS062", &[]),
            scp::ScpError::NotClosed(_) => dell_msg(d, "SYS063", &[]),
            scp::ScpError::Invalid(n, _) => {
                line = n.to_string();
                dell_msg(d, "SYS064", &[&line])
            }
            scp::ScpError::Malformed(_) => dell_msg(d, "SYS064", &["1"]),
            scp::ScpError::Json(_) => dell_msg(d, "SYS405", &[]),
            scp::ScpError::UnknownComponent(_) => dell_msg(d, "SYS076", &[]),
            scp::ScpError::UnknownAttribute(..) | scp::ScpError::BadValue(..) => {
                dell_msg(d, "SYS067", &[])
            }
        };
        ApiError::BadRequest(vec![
            Msg::new("ActionParameterValueError", &["ImportBuffer", IMPORT]),
            m,
        ])
    };
    let components = scp::parse(buffer).map_err(refused)?;
    let all = targets.iter().any(|t| t == "ALL");
    let chosen: Vec<scp::Component> = components
        .into_iter()
        .filter(|c| all || targets.contains(&class_of(&c.fqdd)))
        .collect();
    let now = scp::NextBoot {
        target: sys.bmc.boot.target,
        enabled: sys.bmc.boot.enabled,
    };
    let plan = scp::plan(&chosen, st.manager_id(sys), now).map_err(refused)?;
    for (name, value) in &plan.bios {
        if super::bios_registry::validate(name, value).is_err() {
            return Err(refused(scp::ScpError::BadValue(
                scp::BIOS.into(),
                name.clone(),
                json::shown(value),
            )));
        }
    }
    let mut changes = Vec::new();
    let changed = plan.next.filter(|n| *n != now);
    if let Some(n) = changed {
        // ServerBoot.1#BootOnce and FirstBootDevice: the one boot
        // decision; a device the server does not offer, or BootOnce
        // Disabled where it boots once only, is a bad value.
        let req = BootRequest {
            target: Some(match n.enabled {
                OverrideEnabled::Disabled => BootTarget::None,
                _ => n.target,
            }),
            enabled: Some(n.enabled),
            ..BootRequest::default()
        };
        let boot = st.core.decide_boot(sys, &req).map_err(|e| match e {
            BootRefused::TargetNotOffered(t) => refused(scp::ScpError::BadValue(
                st.manager_id(sys).to_string(),
                "ServerBoot.1#FirstBootDevice".into(),
                t.to_string(),
            )),
            BootRefused::ContinuousNotOffered => refused(scp::ScpError::BadValue(
                st.manager_id(sys).to_string(),
                "ServerBoot.1#BootOnce".into(),
                "Disabled".into(),
            )),
            other => crate::api::boot_rules::boot_refused(other, st.profile(sys)),
        })?;
        changes.push(Change::Boot(boot));
    }
    // BIOS values the machine would not have after its next start: staged
    // as a configuration job stages them, applied by the reboot the
    // import makes (or waits for, with NoReboot).
    let bios = &sys.bmc.bios;
    let bios_changes: BTreeMap<String, Value> = plan
        .bios
        .into_iter()
        .filter(|(k, v)| bios.pending.get(k).or_else(|| bios.current.get(k)) != Some(v))
        .collect();
    if !bios_changes.is_empty() {
        let mut pending = bios.pending.clone();
        pending.extend(bios_changes.clone());
        changes.push(Change::BiosPending(pending));
        changes.push(Change::BiosHold(false));
    }
    if !changes.is_empty() {
        st.core.backend.apply(&sys.id, changes).await?;
    }
    let job = st.jobs.create(
        &sys.id,
        "Configure: Import Server Configuration Profile",
        "ImportConfiguration",
        JobState::Running,
    );
    tracing::info!(system = %sys.name, job = %job.id, next = ?changed, bios = ?bios_changes, "SCP import");
    let power = ImportPower {
        shutdown: json::action_str(&body, "ShutdownType", IMPORT)?
            .unwrap_or("Graceful")
            .to_string(),
        host_off: json::action_str(&body, "HostPowerState", IMPORT)? == Some("Off")
            || json::action_str(&body, "EndHostPowerState", IMPORT)? == Some("Off"),
        was_on: sys.power != PowerState::Off,
    };
    let something = changed.is_some() || !bios_changes.is_empty();
    let reboot = !bios_changes.is_empty();
    drop(locked);
    let (st2, id, jid, secs) = (st.clone(), id.clone(), job.id.clone(), d.import_secs);
    let job_cause = Cause::Bmc(format!("Dell job {jid}"));
    tokio::spawn(with_cause(job_cause, async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        if reboot {
            apply_import_bios(&st2, &id, &jid, &power).await;
            return;
        }
        complete(&st2, &jid, if something { "SYS053" } else { "SYS069" });
    }));
    let mut r = StatusCode::ACCEPTED.into_response();
    if let Ok(h) = HeaderValue::from_str(&format!("/redfish/v1/TaskService/Tasks/{}", job.id)) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    r.headers_mut()
        .insert("OData-Version", HeaderValue::from_static("4.0"));
    Ok(r)
}

/// How an import with BIOS changes treats the host: `ShutdownType`
/// (`Graceful`, `Forced`, `NoReboot`), `HostPowerState` `Off` (the host is
/// left off afterwards), and whether it was on when the import came.
struct ImportPower {
    shutdown: String,
    host_off: bool,
    was_on: bool,
}

/// The rest of an import that staged BIOS changes, as an iDRAC runs it:
/// it reboots the host to apply them (gracefully or by force; a host that
/// is off is powered on for it), or with `NoReboot` waits for a reboot
/// someone else makes; once the machine has started with them the job
/// completes (SYS053), and with `HostPowerState` `Off` the host is turned
/// off again. A job deleted meanwhile is no longer followed.
async fn apply_import_bios(st: &AppState, id: &str, jid: &str, p: &ImportPower) {
    use crate::model::ResetType;
    let reset = match (p.was_on, p.shutdown.as_str()) {
        (true, "NoReboot") => None,
        (true, "Forced") => Some(ResetType::ForceRestart),
        (true, _) => Some(ResetType::GracefulRestart),
        (false, _) => Some(ResetType::On),
    };
    if let Some(r) = reset {
        tracing::info!(system = %id, job = %jid, reset = %r, "SCP import: the host restarts to apply the BIOS settings");
        if let Err(e) = st.core.backend.reset(id, r).await {
            tracing::warn!(system = %id, job = %jid, error = %e, "SCP import: the host did not restart");
            let msg = "SYS067";
            st.jobs
                .update(jid, JobState::Failed, msg, crate::profile::dell::text(msg));
            return;
        }
    }
    if !until_applied(st, id, jid, |sys| sys.bmc.bios.pending.is_empty()).await {
        return;
    }
    if p.host_off {
        if let Err(e) = st.core.backend.reset(id, ResetType::ForceOff).await {
            tracing::warn!(system = %id, job = %jid, error = %e, "SCP import: the host was not turned off");
        }
    }
    complete(st, jid, "SYS053");
}
