//! The Lifecycle Controller's job queue as Redfish shows it (the queue
//! itself is the BMC's, `bmc::jobs`): `Managers/{id}/Oem/Dell/Jobs` (and
//! `Managers/{id}/Jobs`), a job created for the staged BIOS attributes
//! (`TargetSettingsURI`), a job deleted with what it had scheduled taken
//! back, each job's Task (`TaskService/Tasks/JID_…`), and the BIOS
//! configuration job a settings PATCH with an apply time schedules.

use std::time::Duration;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::api::{collection, AppState, State, SysId};
use crate::model::{Change, System};
use crate::timefmt::rfc3339;

use super::{dell_msg, lc_of, raid, success, Job, JobState, LcRequest};

/// A BIOS configuration job: the staged attributes apply at the reset.
pub(super) const BIOS_JOB: &str = "BIOSConfiguration";
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
fn schedule_bios_job(st: &AppState, sys: &System) -> String {
    let job = create(st, sys, BIOS_JOB_NAME, BIOS_JOB, JobState::Scheduled);
    moved(st, &job.id, JobState::Scheduled, "JCP001");
    tracing::info!(system = %sys.name, job = %job.id, "BIOS job scheduled");
    tokio::spawn(watch_job(
        st.clone(),
        sys.id.clone(),
        job.id.clone(),
        |s: &System| s.bmc.bios.pending.is_empty(),
    ));
    job.id
}

/// Schedules the BIOS job for the attributes a settings PATCH with an
/// apply time released to it: 202, the job's Task in `Location`.
pub(in crate::api) fn bios_job_scheduled(st: &AppState, sys: &System) -> Response {
    let jid = schedule_bios_job(st, sys);
    job_accepted(&task_uri(&jid))
}

/// 202 for a request that started a job, with the job at `location`.
pub(super) fn job_accepted(location: &str) -> Response {
    let body = json!({ "@Message.ExtendedInfo": [Msg::new("Success", &[]).render()] });
    let mut r = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    if let Ok(h) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    r
}

/// A job's Task: what a settings PATCH that scheduled it names in
/// `Location` (Dell's scripts and sushy's task monitor follow it).
pub(super) fn task_uri(jid: &str) -> String {
    format!("/redfish/v1/TaskService/Tasks/{jid}")
}

/// A scheduled job completes once a reset has `applied` its change; a
/// deleted job is no longer watched (`take_back` undid its change as it
/// went).
pub(super) async fn watch_job<A>(st: AppState, id: String, jid: String, applied: A)
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
pub(super) async fn until_applied<A>(st: &AppState, id: &str, jid: &str, applied: A) -> bool
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
pub(super) fn complete(st: &AppState, jid: &str, msg: &'static str) {
    moved(st, jid, JobState::Completed, msg);
}

/// Queues a new job of `sys` in `state`, told to the EventService.
pub(super) fn create(
    st: &AppState,
    sys: &System,
    name: &'static str,
    job_type: &'static str,
    state: JobState,
) -> Job {
    let job = st.jobs.create(&sys.id, name, job_type, state);
    tell(st, &job);
    job
}

/// Moves job `jid` to `state` with Dell's message `msg`, told to the
/// EventService.
pub(super) fn moved(st: &AppState, jid: &str, state: JobState, msg: &'static str) {
    st.jobs
        .update(jid, state, msg, crate::profile::dell::text(msg));
    if let Some(job) = st.jobs.get(jid) {
        tell(st, &job);
    }
}

/// A job's state as a TaskEvent about it (a scheduled job tells
/// nothing yet): started, completed, with warnings, aborted.
fn tell(st: &AppState, job: &Job) {
    let key = match job.state {
        JobState::Scheduled => return,
        JobState::Running => "TaskStarted",
        JobState::Completed => "TaskCompletedOK",
        JobState::CompletedWithErrors => "TaskCompletedWarning",
        JobState::Failed => "TaskAborted",
    };
    let manager = st
        .fixed
        .as_ref()
        .map_or(job.system.as_str(), |f| f.manager.as_str());
    let uri = format!("/redfish/v1/Managers/{manager}/Oem/Dell/Jobs/{}", job.id);
    st.events.task(key, &job.id, uri);
}

/// Deletes jobs of system `id` (one, or the whole queue with `None`)
/// under the system's lock, and takes back what unfinished configuration
/// jobs had scheduled, in the same request: a BIOS job's values are held
/// again (staged, waiting for another job), a controller job's mode
/// change is dropped (the controller keeps its mode). How many went.
pub(super) async fn delete_jobs(
    st: &AppState,
    id: &str,
    one: Option<&str>,
) -> Result<usize, ApiError> {
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
pub(super) async fn create_job(
    State(st): State<AppState>,
    SysId(id): SysId,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    lc_of(&st, sys, uri.path())?;
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

pub(super) fn job_uri(st: &AppState, sys: &System, jid: &str) -> String {
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

pub(super) async fn job_list(lc: LcRequest) -> Result<Resource, ApiError> {
    let base = lc.path.as_str();
    let members = lc
        .st
        .jobs
        .of(&lc.sys.id)
        .into_iter()
        .map(|j| format!("{base}/{}", j.id));
    let mut v = collection("DellJobCollection", base, "JobQueue", members);
    v["Description"] = json!("Collection of Job Instances");
    Ok(Resource::plain(v, "GET"))
}

/// Job `jid` of the request's System.
fn job_of(lc: &LcRequest, jid: &str) -> Result<Job, ApiError> {
    lc.st
        .jobs
        .get(jid)
        .filter(|j| j.system == lc.sys.id)
        .ok_or_else(|| ApiError::NotFound(lc.path.clone()))
}

pub(super) async fn job(
    Path((_, jid)): Path<(String, String)>,
    lc: LcRequest,
) -> Result<Resource, ApiError> {
    let j = job_of(&lc, &jid)?;
    Ok(Resource::plain(job_json(&lc.path, &j), "GET, DELETE"))
}

pub(super) async fn delete_job(
    Path((_, jid)): Path<(String, String)>,
    lc: LcRequest,
) -> Result<Response, ApiError> {
    let LcRequest { st, sys, d, .. } = &lc;
    job_of(&lc, &jid)?;
    delete_jobs(st, &sys.id, Some(&jid)).await?;
    tracing::info!(system = %sys.name, job = %jid, "job deleted");
    Ok(success(dell_msg(d, "SUP020", &[])))
}
