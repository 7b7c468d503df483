//! iLO's UpdateTaskQueue (see `repository.rs`): entries posted as
//! iLOrest's `taskqueue` and `flashfwpkg` post them, run in order by
//! [`run_queue`].

use std::time::{Duration, SystemTime};

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::repository::{fnv, ilo, updatable_by, QUEUE};
use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::api::update::{QueueState, Queued};
use crate::api::{collection, AppState, State};
use crate::firmware::Component;
use crate::model::firmware::{ApplyAt, StagedFate};
use crate::model::System;
use crate::timefmt::rfc3339;

/// A queue entry's properties.
const ENTRY: [&str; 7] = [
    "Name",
    "Command",
    "Filename",
    "UpdatableBy",
    "WaitTimeSeconds",
    "TPMOverride",
    "Targets",
];

pub(super) fn router() -> Router {
    Router::new()
        .route(QUEUE, get(queue).post(enqueue))
        .route(&format!("{QUEUE}/{{id}}"), get(entry).delete(delete_entry))
}

fn entry_json(q: &Queued) -> Value {
    let state = match q.state {
        QueueState::Pending => "Pending",
        QueueState::InProgress => "InProgress",
        QueueState::Complete => "Complete",
        QueueState::Exception => "Exception",
    };
    let mut v = json!({
        "@odata.type": "#HpeComponentUpdateTask.v1_2_0.HpeComponentUpdateTask",
        "@odata.id": format!("{QUEUE}/{}", q.id),
        "Id": q.id,
        "Name": q.name,
        "Command": q.command,
        "UpdatableBy": q.updatable_by,
        "State": state,
        "Result": { "MessageId": format!("iLO.2.14.{}", q.result) },
        "TPMOverride": q.tpm_override,
        "Created": rfc3339(q.created),
    });
    if let Some(f) = &q.filename {
        v["Filename"] = json!(f);
    }
    if q.command == "Wait" {
        v["WaitTimeSeconds"] = json!(q.wait_secs);
    }
    v
}

async fn queue(State(st): State<AppState>, uri: Uri) -> Result<Resource, ApiError> {
    ilo(&st, uri.path()).await?;
    let members = st
        .uploads
        .queue()
        .iter()
        .map(|q| format!("{QUEUE}/{}", q.id))
        .collect::<Vec<_>>();
    Ok(Resource::plain(
        collection(
            "HpeComponentUpdateTaskQueueCollection",
            QUEUE,
            "Update Task Queue",
            members,
        ),
        "GET, POST",
    ))
}

async fn entry(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    ilo(&st, uri.path()).await?;
    let q = st
        .uploads
        .queue()
        .into_iter()
        .find(|q| q.id == id)
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    Ok(Resource::plain(entry_json(&q), "GET, DELETE"))
}

async fn delete_entry(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let sys = ilo(&st, uri.path()).await?;
    match st.uploads.queue().into_iter().find(|q| q.id == id) {
        None => Err(ApiError::NotFound(uri.path().to_string())),
        Some(q) if q.state == QueueState::InProgress => Err(ApiError::Status(
            StatusCode::CONFLICT,
            vec![Msg::new("ResourceInUse", &[])],
        )),
        Some(_) => {
            // A UEFI image it staged does not wait for the start any more.
            let staged = st.core.backend.system(&sys.id).await?;
            for (c, s) in &staged.bmc.firmware.staged {
                if s.task == id {
                    st.core.withdraw_firmware(&sys.id, *c, &id).await?;
                }
            }
            st.uploads.dequeue(&id);
            // What waited behind it may run now.
            tokio::spawn(run_queue(st.clone(), sys));
            Ok(json::no_content())
        }
    }
}

/// A queue entry as posted, checked whole.
fn posted(st: &AppState, body: &Map<String, Value>) -> Result<Queued, ApiError> {
    json::properties_known(body, &ENTRY)?;
    let text = |k: &str| -> Result<Option<String>, ApiError> {
        match body.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(ApiError::bad(Msg::new(
                "PropertyValueTypeError",
                &[&json::shown(v), k],
            ))),
        }
    };
    let name =
        text("Name")?.ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &["Name"])))?;
    let command =
        text("Command")?.ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &["Command"])))?;
    if !["ApplyUpdate", "Wait", "ResetServer", "ResetBmc"].contains(&command.as_str()) {
        return Err(ApiError::bad(Msg::new(
            "PropertyValueNotInList",
            &[&command, "Command"],
        )));
    }
    let by = match body.get("UpdatableBy") {
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|v| match v.as_str() {
                Some(s @ ("Bmc" | "Uefi" | "RuntimeAgent")) => Ok(s.to_string()),
                _ => Err(ApiError::bad(Msg::new(
                    "PropertyValueNotInList",
                    &[&json::shown(v), "UpdatableBy"],
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => return Err(ApiError::bad(Msg::new("PropertyMissing", &["UpdatableBy"]))),
        Some(v) => {
            return Err(ApiError::bad(Msg::new(
                "PropertyValueTypeError",
                &[&json::shown(v), "UpdatableBy"],
            )))
        }
    };
    let filename = text("Filename")?;
    if command == "ApplyUpdate" {
        let f = filename
            .as_deref()
            .ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &["Filename"])))?;
        if !st
            .uploads
            .kept()
            .iter()
            .any(|k| k.filename.eq_ignore_ascii_case(f))
        {
            return Err(ApiError::bad(Msg::new(
                "PropertyValueNotInList",
                &[f, "Filename"],
            )));
        }
    }
    let wait_secs = match (command.as_str(), body.get("WaitTimeSeconds")) {
        ("Wait", Some(v)) => v.as_u64().filter(|s| *s <= 3600).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "PropertyValueOutOfRange",
                &[&json::shown(v), "WaitTimeSeconds"],
            ))
        })?,
        ("Wait", None) => {
            return Err(ApiError::bad(Msg::new(
                "PropertyMissing",
                &["WaitTimeSeconds"],
            )))
        }
        _ => 0,
    };
    let tpm_override = match body.get("TPMOverride") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(ApiError::bad(Msg::new(
                "PropertyValueTypeError",
                &[&json::shown(v), "TPMOverride"],
            )))
        }
    };
    if let Some(t) = body
        .get("Targets")
        .filter(|t| !t.is_array() && !t.is_null())
    {
        return Err(ApiError::bad(Msg::new(
            "PropertyValueTypeError",
            &[&json::shown(t), "Targets"],
        )));
    }
    let id = format!(
        "{:08x}",
        fnv(format!("{name}{:?}", SystemTime::now()).as_bytes())
    );
    Ok(Queued {
        id,
        name,
        command,
        filename,
        updatable_by: by,
        wait_secs,
        tpm_override,
        state: QueueState::Pending,
        result: "Success",
        created: SystemTime::now(),
        held: false,
    })
}

/// POST to the queue: 201 with the entry, which runs in its turn.
async fn enqueue(
    State(st): State<AppState>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let sys = ilo(&st, uri.path()).await?;
    let q = posted(&st, &body)?;
    if !st.uploads.enqueue(q.clone()) {
        return Err(ApiError::Status(
            StatusCode::CONFLICT,
            vec![Msg::new("CreateLimitReachedForResource", &[])],
        ));
    }
    tracing::info!(system = %sys.name, entry = %q.id, command = %q.command, "update task queued");
    tokio::spawn(run_queue(st.clone(), sys));
    let location = format!("{QUEUE}/{}", q.id);
    let mut r = Resource::plain(entry_json(&q), "GET, DELETE")
        .with_status(StatusCode::CREATED)
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

/// Runs the queue's entries in order until one must wait (for the
/// server's start, or for a runtime agent) or none is left.
async fn run_queue(st: AppState, sys: System) {
    // The first unfinished entry, unless another run holds it.
    while let Some(q) = st.uploads.take_next() {
        let done = match q.command.as_str() {
            "Wait" => {
                st.uploads
                    .queued_moved(&q.id, QueueState::InProgress, "Success");
                tokio::time::sleep(Duration::from_secs(q.wait_secs)).await;
                (QueueState::Complete, "Success")
            }
            "ResetBmc" => {
                st.uploads
                    .queued_moved(&q.id, QueueState::InProgress, "Success");
                crate::api::update::restart_for_update(&st, &sys);
                (QueueState::Complete, "Success")
            }
            "ApplyUpdate" => match apply(&st, &sys, &q).await {
                Some(done) => done,
                None => return,
            },
            // ResetServer: HPE's runtime agent in the OS takes it; none
            // runs here, so it stays Pending (held) and so does what
            // follows, until it is deleted.
            _ => return,
        };
        st.uploads.queued_moved(&q.id, done.0, done.1);
        tracing::info!(system = %sys.name, entry = %q.id, state = ?done.0, "update task done");
    }
}

/// An ApplyUpdate entry: a BMC-updatable component flashed now (the
/// BMC's own restarting the BMC), a UEFI one staged for the server's
/// next start, which the entry waits for (`None`: still waiting, or
/// another run has it).
async fn apply(st: &AppState, sys: &System, q: &Queued) -> Option<(QueueState, &'static str)> {
    let f = q.filename.as_deref().unwrap_or("");
    let Some(k) = st
        .uploads
        .kept()
        .into_iter()
        .find(|k| k.filename.eq_ignore_ascii_case(f))
    else {
        return Some((QueueState::Exception, "ComponentNotFound"));
    };
    let c = k.image.component;
    let uefi = updatable_by(c) == ["Uefi"];
    if !uefi {
        st.uploads
            .queued_moved(&q.id, QueueState::InProgress, "Success");
    }
    let at = match c {
        Component::Bmc => None,
        _ => Some(ApplyAt::OnReset),
    };
    if let Err(e) = st
        .core
        .install_firmware(&sys.id, &k.image, None, at, &q.id)
        .await
    {
        tracing::warn!(system = %sys.name, entry = %q.id, error = %e, "queued update failed");
        return Some((QueueState::Exception, "UpdateFailed"));
    }
    if c == Component::Bmc {
        crate::api::update::restart_for_update(st, sys);
    }
    if !uefi {
        return Some((QueueState::Complete, "Success"));
    }
    // Pending (held by this run) until the start installs it; deleting
    // the entry withdraws the image (see `delete_entry`).
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if !st.uploads.queue().iter().any(|e| e.id == q.id) {
            return None;
        }
        let Ok(now) = st.core.backend.system(&sys.id).await else {
            return None;
        };
        match now.bmc.firmware.fate(c, &q.id, &k.image.version) {
            StagedFate::Waiting => {}
            StagedFate::Installed => return Some((QueueState::Complete, "Success")),
            // A later update replaced it before the start.
            StagedFate::Dropped => return Some((QueueState::Exception, "UpdateFailed")),
        }
    }
}
