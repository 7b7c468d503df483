//! TaskService, Tasks and task monitors.
//!
//! A task monitor answers 202 (with `Location` and `Retry-After`) while the
//! task runs, then the operation's own result: 204 on success, or the error
//! body the operation would have returned.

use crate::api::State;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::json::{no_content, Resource};
use super::{collection, link, AppState};
use crate::api::error::{error_body, ApiError};
use crate::api::task_store::{Task, TaskState};
use crate::timefmt::rfc3339;

pub const TASK_MONITOR_PREFIX: &str = "/redfish/v1/TaskService/TaskMonitors/";

pub fn router() -> Router {
    live_router()
        .route("/redfish/v1/TaskService", get(service))
        .route("/redfish/v1/TaskService/Tasks", get(list))
}

/// The tasks themselves and their monitors: also what a replayed capture
/// serves of Shoal's own (its InsertMedia on libvirt runs as one).
pub fn live_router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/TaskService/Tasks/{id}",
            get(task).delete(delete_task),
        )
        .route("/redfish/v1/TaskService/TaskMonitors/{id}", get(monitor))
}

async fn service() -> Resource {
    Resource::new(
        json!({
            "@odata.type": "#TaskService.v1_2_0.TaskService",
            "@odata.id": "/redfish/v1/TaskService",
            "Id": "TaskService",
            "Name": "Task Service",
            "ServiceEnabled": true,
            "CompletedTaskOverWritePolicy": "Oldest",
            "LifeCycleEventOnTaskStateChange": false,
            "DateTime": rfc3339(std::time::SystemTime::now()),
            "Status": {"State": "Enabled", "Health": "OK"},
            "Tasks": link("/redfish/v1/TaskService/Tasks"),
        }),
        crate::profile::generic(),
        "GET",
    )
}

async fn list(State(st): State<AppState>) -> Resource {
    // The BMC's jobs are Tasks too (once each: a job may run as a task).
    let tasks: Vec<String> = st.tasks.list().into_iter().map(|t| t.id).collect();
    let jobs = st
        .jobs
        .all()
        .into_iter()
        .filter(|j| !tasks.contains(&j.id) && !super::vendor::job_task_gone(j))
        .map(|j| j.id);
    let members = tasks
        .clone()
        .into_iter()
        .chain(jobs)
        .map(|id| format!("/redfish/v1/TaskService/Tasks/{id}"));
    Resource::plain(
        collection(
            "TaskCollection",
            "/redfish/v1/TaskService/Tasks",
            "Task Collection",
            members,
        ),
        "GET",
    )
}

fn task_json(t: &Task) -> serde_json::Value {
    let mut v = json!({
        "@odata.type": "#Task.v1_7_0.Task",
        "@odata.id": format!("/redfish/v1/TaskService/Tasks/{}", t.id),
        "Id": t.id,
        "Name": t.name,
        "TaskState": t.state.as_str(),
        "TaskStatus": match t.state {
            TaskState::Exception => "Critical",
            TaskState::Cancelling | TaskState::Cancelled => "Warning",
            _ => "OK",
        },
        "StartTime": rfc3339(t.start),
        "TaskMonitor": format!("{TASK_MONITOR_PREFIX}{}", t.id),
        "PercentComplete": t.percent.unwrap_or(if t.state.live() { 0 } else { 100 }),
        "Messages": messages(t),
        "Payload": { "TargetUri": t.target },
    });
    if let Some(end) = t.end {
        v["EndTime"] = json!(rfc3339(end));
    }
    v
}

/// What the task's work said, then why it failed.
fn messages(t: &Task) -> Vec<serde_json::Value> {
    let failed = t
        .error
        .iter()
        .flat_map(|(_, m)| m.iter().map(|m| m.render()));
    t.messages.iter().cloned().chain(failed).collect()
}

async fn task(State(st): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    if let Some(t) = st.tasks.get(&id) {
        let allow = if t.cancellable || !t.state.live() {
            "GET, DELETE"
        } else {
            "GET"
        };
        return Ok(Resource::plain(task_json(&t), allow).into_response());
    }
    match st.jobs.get(&id) {
        Some(job) => super::vendor::job_task(&st, &job).await,
        None => Err(ApiError::NotFound(format!(
            "/redfish/v1/TaskService/Tasks/{id}"
        ))),
    }
}

/// DELETE of a Task: a running one that can stop is cancelled (it reads
/// Cancelling, then Cancelled), a finished one removed; a vendor job's
/// Task is the job's, deleted through the vendor's job queue.
async fn delete_task(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match st.tasks.delete(&id)? {
        Some(d) => {
            tracing::info!(task = %id, outcome = ?d, "task deleted");
            Ok(crate::api::json::no_content())
        }
        None if st.jobs.get(&id).is_some() => Err(ApiError::MethodNotAllowed),
        None => Err(ApiError::NotFound(format!(
            "/redfish/v1/TaskService/Tasks/{id}"
        ))),
    }
}

async fn monitor(State(st): State<AppState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let t = st
        .tasks
        .get(&id)
        .ok_or_else(|| ApiError::NotFound(format!("{TASK_MONITOR_PREFIX}{id}")))?;
    Ok(match (t.state, &t.error) {
        (state, _) if state.live() => accepted(&t),
        (TaskState::Completed, _) => no_content(),
        (TaskState::Cancelled, _) => Resource::plain(task_json(&t), "GET").into_response(),
        (_, Some((status, msgs))) => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, axum::Json(error_body(msgs))).into_response()
        }
        (_, None) => ApiError::Internal("task failed".into()).into_response(),
    })
}

/// 202 Accepted pointing at the task monitor, with the Task as body.
pub fn accepted(t: &Task) -> Response {
    let mut r = Resource::plain(task_json(t), "GET")
        .with_status(StatusCode::ACCEPTED)
        .into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("{TASK_MONITOR_PREFIX}{}", t.id)) {
        h.insert(header::LOCATION, v);
    }
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}
