//! Creating and deleting a system's volumes (POST to `Volumes`, DELETE
//! of one), at once or, with `@Redfish.OperationApplyTime: OnReset`,
//! staged for the next start behind a Task; a body is checked whole
//! before the system's lock is taken, the drives and the plan under it.

use axum::extract::Path;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::{apply_time_support, volume_json, Names, APPLY_TIME, NAME_MAX};
use crate::api::error::{ApiError, Msg};
use crate::api::input::{self, Rule};
use crate::api::json::{self, JsonObject};
use crate::api::system_parts::not_found;
use crate::api::task_store::{Claim, Staged};
use crate::api::{created, AppState, State, Sys};
use crate::backend::{BackendError, BoxFuture};
use crate::model::{Change, PowerState, System};
use crate::storage::{VolumeChange, VolumeError};

/// `@Redfish.OperationApplyTime`: whether the change waits for a reset.
fn staged(body: &Map<String, Value>) -> Result<bool, ApiError> {
    match body.get(APPLY_TIME) {
        None => Ok(false),
        Some(Value::String(s)) if s == "Immediate" => Ok(false),
        Some(Value::String(s)) if s == "OnReset" => Ok(true),
        Some(Value::String(s)) => Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &[&input::echo(s), APPLY_TIME]).about(APPLY_TIME),
        )),
        Some(other) => Err(ApiError::bad(
            Msg::new("PropertyValueTypeError", &[&json::shown(other), APPLY_TIME])
                .about(APPLY_TIME),
        )),
    }
}

fn volume_error(e: VolumeError) -> ApiError {
    let bad =
        |id: &'static str, args: &[&str], prop: &str| ApiError::bad(Msg::new(id, args).about(prop));
    match e {
        VolumeError::RaidType(t) => bad("PropertyValueNotInList", &[&t, "RAIDType"], "RAIDType"),
        VolumeError::NoDrive(d) => bad(
            "PropertyValueNotInList",
            &[&d, "Links/Drives"],
            "Links/Drives",
        ),
        VolumeError::Duplicate(d) => bad(
            "PropertyValueFormatError",
            &[&d, "Links/Drives"],
            "Links/Drives",
        ),
        VolumeError::DriveCount { .. } => bad(
            "PropertyValueConflict",
            &["Links/Drives", "RAIDType"],
            "Links/Drives",
        ),
        VolumeError::Capacity { asked, .. } => bad(
            "PropertyValueOutOfRange",
            &[&asked.to_string(), "CapacityBytes"],
            "CapacityBytes",
        ),
        e @ VolumeError::InUse { .. } => ApiError::Conflict(e.to_string()),
        VolumeError::NoVolume(v) => ApiError::NotFound(v),
        e @ (VolumeError::Mode(_)
        | VolumeError::NotNonRaid(_)
        | VolumeError::NotReady(_)
        | VolumeError::Staged(_)) => ApiError::Conflict(e.to_string()),
    }
}

/// The drive names a `Links/Drives` array names (URIs below this storage).
fn drive_names(names: &Names, links: &Value) -> Result<Vec<String>, ApiError> {
    let bad = |v: &Value| {
        ApiError::bad(
            Msg::new(
                "PropertyValueFormatError",
                &[&json::shown(v), "Links/Drives"],
            )
            .about("Links/Drives"),
        )
    };
    let prefix = format!("{}/Drives/", names.storage());
    let items = links.as_array().ok_or_else(|| bad(links))?;
    items
        .iter()
        .map(|item| {
            let uri = item
                .get("@odata.id")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(item))?;
            match uri
                .strip_prefix(&prefix)
                .and_then(|id| names.drive_name(id))
            {
                Some(name) => Ok(name.to_string()),
                _ => Err(ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[uri, "Links/Drives"])
                        .about("Links/Drives"),
                )),
            }
        })
        .collect()
}

/// The key a volume's task holds: one staged change per volume.
fn volume_key(sys: &System, volume: &str) -> String {
    format!("volume:{}:{volume}", sys.id)
}

/// The task that ends once a staged change has been applied (at a start).
/// It looks at the machine again only when a reset wakes it.
fn staged_task(
    st: &AppState,
    claim: Claim,
    sys: &System,
    target: &str,
    change: VolumeChange,
) -> Response {
    let backend = st.core.backend.clone();
    let id = sys.id.clone();
    let check = move || {
        let (backend, id, change) = (backend.clone(), id.clone(), change.clone());
        let look: BoxFuture<Result<Staged, BackendError>> = Box::pin(async move {
            let now = backend.system(&id).await?;
            Ok(if !now.bmc.storage.pending.contains(&change) {
                Staged::Applied
            } else if matches!(now.power, PowerState::PoweringOn | PowerState::PoweringOff) {
                Staged::Settling
            } else {
                Staged::Waiting
            })
        });
        look
    };
    let task = st.tasks.spawn_staged(
        claim,
        "Volume change at the next reset",
        target,
        check,
        st.events.clone(),
    );
    match st.tasks.get(&task) {
        Some(t) => crate::api::tasks::accepted(&t),
        None => ApiError::Internal("task vanished".into()).into_response(),
    }
}

/// The body of a volume's POST, checked property by property.
struct NewVolume<'a> {
    raid: String,
    /// `Links/Drives`, resolved under the system's lock.
    drives: &'a Value,
    capacity: Option<u64>,
    name: Option<&'a str>,
    later: bool,
}

impl<'a> NewVolume<'a> {
    fn read(body: &'a Map<String, Value>) -> Result<Self, ApiError> {
        only_known(body)?;
        let raid = raid_type(body)?;
        let drives = body
            .get("Links")
            .and_then(|l| l.get("Drives"))
            .ok_or_else(|| {
                ApiError::bad(Msg::new(
                    "CreateFailedMissingReqProperties",
                    &["Links/Drives"],
                ))
            })?;
        let capacity = match body.get("CapacityBytes") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                ApiError::bad(
                    Msg::new(
                        "PropertyValueTypeError",
                        &[&json::shown(v), "CapacityBytes"],
                    )
                    .about("CapacityBytes"),
                )
            })?),
        };
        let name = match body.get("Name") {
            None => None,
            Some(Value::String(n)) if !n.is_empty() => {
                input::property("Name", n, Rule::Text { max: NAME_MAX }).map_err(ApiError::bad)?;
                Some(n.as_str())
            }
            Some(v) => {
                return Err(ApiError::bad(
                    Msg::new("PropertyValueFormatError", &[&json::shown(v), "Name"]).about("Name"),
                ))
            }
        };
        if let Some(e) = body.get("Encrypted") {
            if e != &Value::Bool(false) {
                return Err(ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[&json::shown(e), "Encrypted"])
                        .about("Encrypted"),
                ));
            }
        }
        let later = staged(body)?;
        Ok(NewVolume {
            raid,
            drives,
            capacity,
            name,
            later,
        })
    }
}

/// Every property of a POST a volume takes; any other is refused, each
/// named.
fn only_known(body: &Map<String, Value>) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    for k in body.keys() {
        let known = [
            "RAIDType",
            "VolumeType",
            "CapacityBytes",
            "Name",
            "Encrypted",
            "Links",
            APPLY_TIME,
        ];
        if !known.contains(&k.as_str()) && !k.starts_with("@odata.") {
            problems.push(Msg::new("PropertyUnknown", &[k]).about(k));
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::BadRequest(problems));
    }
    Ok(())
}

/// `RAIDType`, else the deprecated `VolumeType` as one; one is required.
fn raid_type(body: &Map<String, Value>) -> Result<String, ApiError> {
    Ok(match (body.get("RAIDType"), body.get("VolumeType")) {
        (Some(Value::String(r)), _) => r.clone(),
        (None, Some(Value::String(t))) => crate::storage::raid_of_volume_type(t)
            .ok_or_else(|| {
                ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[t, "VolumeType"]).about("VolumeType"),
                )
            })?
            .to_string(),
        (Some(v), _) | (None, Some(v)) => {
            return Err(ApiError::bad(
                Msg::new("PropertyValueTypeError", &[&json::shown(v), "RAIDType"])
                    .about("RAIDType"),
            ))
        }
        (None, None) => {
            return Err(ApiError::bad(Msg::new(
                "CreateFailedMissingReqProperties",
                &["RAIDType"],
            )))
        }
    })
}

pub(super) async fn create_volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    Names::of(&st, &sys).check(&ctl, &uri)?;
    if !st.core.backend.manages_volumes() {
        return Err(ApiError::MethodNotAllowed);
    }
    let new = NewVolume::read(&body)?;
    let later = new.later;
    // Planned and applied under the system's lock: no other change of the
    // volumes comes between the check and the write.
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let names = Names::of(&st, sys);
    let drives = drive_names(&names, new.drives)?;
    let v = sys
        .bmc
        .storage
        .plan(
            &sys.disks,
            &new.raid,
            &drives,
            new.capacity,
            new.name,
            later,
        )
        .map_err(volume_error)?;
    let location = names.volume_uri(&v);
    // The task's place is taken before anything changes.
    let claim = match later {
        true => Some(st.tasks.claim(&volume_key(sys, &v.id))?),
        false => None,
    };
    tracing::info!(system = %sys.name, volume = %v.id, raid = %v.raid_type, staged = later, "create volume");
    let change = VolumeChange::Create(v.clone());
    let volume = Change::Volume {
        change: change.clone(),
        staged: later,
    };
    st.core.backend.apply(&sys.id, vec![volume]).await?;
    if let Some(claim) = claim {
        return Ok(staged_task(&st, claim, sys, &location, change));
    }
    Ok(created(&location, volume_json(&names, &v)))
}

pub(super) async fn delete_volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, vol)): Path<(String, String, String)>,
    uri: Uri,
    headers: axum::http::HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    Names::of(&st, &sys).check(&ctl, &uri)?;
    if !st.core.backend.manages_volumes() {
        return Err(ApiError::MethodNotAllowed);
    }
    if let Some(k) = body
        .keys()
        .find(|k| *k != APPLY_TIME && !k.starts_with("@odata."))
    {
        return Err(ApiError::bad(Msg::new("PropertyUnknown", &[k]).about(k)));
    }
    let later = staged(&body)?;
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let names = Names::of(&st, sys);
    let vol = names.volume_of(&vol).ok_or_else(|| not_found(&uri))?;
    if let Some(v) = sys.bmc.storage.volumes.iter().find(|v| v.id == vol) {
        let mut current = volume_json(&names, v);
        if let Some(support) = apply_time_support(&st) {
            current["@Redfish.OperationApplyTimeSupport"] = support;
        }
        json::check_if_match(&headers, &current, locked.profile)?;
    }
    if sys.bmc.storage.has_pending(&vol) {
        // Its creation or deletion waits for the reset: like a controller
        // with a scheduled configuration job, it takes no other change.
        return Err(ApiError::Conflict(format!(
            "volume {vol} of {} has a change staged for the next reset",
            sys.name
        )));
    }
    sys.bmc
        .storage
        .check_delete(&vol)
        .map_err(|_| not_found(&uri))?;
    let claim = match later {
        true => Some(st.tasks.claim(&volume_key(sys, &vol))?),
        false => None,
    };
    tracing::info!(system = %sys.name, volume = %vol, staged = later, "delete volume");
    let change = VolumeChange::Delete(vol);
    let volume = Change::Volume {
        change: change.clone(),
        staged: later,
    };
    st.core.backend.apply(&sys.id, vec![volume]).await?;
    if let Some(claim) = claim {
        return Ok(staged_task(&st, claim, sys, uri.path(), change));
    }
    Ok(json::no_content())
}
