//! iLO's side of firmware updates (profiles with `[hpe]`): its
//! SimpleUpdate takes the parameters HPE's tools send (`Action`,
//! `TPMOverrideFlag`, `UpdateRepository`, `UpdateTarget`) and answers 200
//! with iLO's extended-info body (the task still in `Location`), and its
//! UpdateService says how the last update stands in `Oem.Hpe` (`State`:
//! Idle, Uploading, Verifying, Writing, Updating, Complete, Error;
//! `FlashProgressPercent`; `Result`), which `ilorest firmwareupdate` and
//! proliantutils poll instead of a task.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::api::task_store::{Task, TaskState};
use crate::api::AppState;
use crate::profile::Profile;

/// What HPE's tools add to a SimpleUpdate.
pub const PARAMS: [&str; 4] = [
    "Action",
    "TPMOverrideFlag",
    "UpdateRepository",
    "UpdateTarget",
];

/// The parameters SimpleUpdate takes beyond DMTF's on this profile.
pub(in crate::api) fn simple_update_params(profile: &Profile) -> &'static [&'static str] {
    match profile.hpe {
        Some(_) => &PARAMS,
        None => &[],
    }
}

/// iLO's answer to a SimpleUpdate that started task `t`: 200, Base
/// Success in iLO's `error` wrapper, the task's monitor in `Location`.
pub(in crate::api) fn accepted(profile: &Profile, t: &Task) -> Option<Response> {
    profile.hpe.as_ref()?;
    let body = json!({ "error": {
        "code": "iLO.0.10.ExtendedInfo",
        "message": "See @Message.ExtendedInfo for more information.",
        "@Message.ExtendedInfo": [{ "MessageId": "Base.1.4.Success" }],
    }});
    let mut r = (StatusCode::OK, axum::Json(body)).into_response();
    let monitor = format!("{}{}", crate::api::tasks::TASK_MONITOR_PREFIX, t.id);
    if let Ok(v) = HeaderValue::from_str(&monitor) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Some(r)
}

/// The UpdateService's `Oem.Hpe`: the newest update's state.
pub(in crate::api) fn service_oem(st: &AppState, v: &mut Value) {
    if st.root_profile.hpe.is_none() {
        return;
    }
    let last = st
        .tasks
        .list()
        .into_iter()
        .filter(|t| t.name == crate::api::update::TASK_NAME)
        .max_by_key(|t| t.start);
    let (state, percent) = match &last {
        None => ("Idle", 0),
        Some(t) => match t.state {
            TaskState::New | TaskState::Starting => ("Verifying", 0),
            TaskState::Running | TaskState::Cancelling => ("Updating", t.percent.unwrap_or(0)),
            TaskState::Completed => ("Complete", 100),
            TaskState::Exception => ("Error", t.percent.unwrap_or(0)),
            TaskState::Cancelled => ("Idle", 0),
        },
    };
    // The task's last message (Update registry): what went wrong, or
    // that it went through.
    let result = last.as_ref().and_then(|t| t.messages.last()).map_or_else(
        || json!({ "MessageId": "Update.1.0.UpdateInProgress", "MessageArgs": [] }),
        |m| json!({ "MessageId": m["MessageId"], "MessageArgs": m["MessageArgs"] }),
    );
    v["Oem"] = json!({ "Hpe": {
        "@odata.type": "#HpeiLOUpdateServiceExt.v2_1_5.HpeiLOUpdateServiceExt",
        "State": state,
        "FlashProgressPercent": percent,
        "Result": result,
        "DowngradePolicy": "AllowDowngrade",
    }});
    super::repository::service_links(v);
}
