//! `Manager.Reset` of a replayed capture's managers at their captured
//! targets, with the captured ResetType values: the BMC restarts as
//! Shoal's own do (`managers::restart_bmc`): away for a while, its
//! sessions lost on an endpoint of its own.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::response::Response;
use serde_json::{Map, Value};

use super::{offered, Replay};
use crate::api::error::{ApiError, Msg};
use crate::api::json;
use crate::api::AppState;
use crate::mockup::Mockup;

const RESET: &str = "#Manager.Reset";
/// What a manager resets to where the capture lists no values.
const RESET_TYPES: [&str; 2] = ["GracefulRestart", "ForceRestart"];

/// Each captured manager's Reset target → the manager's URI.
pub(super) fn manager_resets(capture: &Mockup) -> BTreeMap<String, String> {
    let Some(root) = capture.json("/redfish/v1") else {
        return BTreeMap::new();
    };
    let managers = root
        .pointer("/Managers/@odata.id")
        .and_then(Value::as_str)
        .and_then(|c| capture.json(c))
        .map(crate::mockup::members)
        .unwrap_or_default();
    managers
        .iter()
        .filter_map(|m| {
            let target = capture
                .json(m)?
                .get("Actions")?
                .get(RESET)?
                .get("target")?
                .as_str()?;
            Some((capture.canonical(target), capture.canonical(m)))
        })
        .collect()
}

/// The captured system `manager` manages (its first one the capture
/// holds), else the capture's first.
fn managed(replay: &Replay, manager: &str) -> Option<String> {
    let links = replay
        .capture
        .json(manager)
        .and_then(|m| m.pointer("/Links/ManagerForServers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    links
        .iter()
        .filter_map(|l| l.get("@odata.id").and_then(Value::as_str))
        .map(|l| replay.capture.canonical(l))
        .find(|l| replay.systems.contains_key(l))
        .or_else(|| replay.capture.systems.first().cloned())
}

pub(super) async fn reset(
    st: &AppState,
    replay: &Replay,
    manager: &str,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let action = replay
        .capture
        .json(manager)
        .and_then(|m| m.get("Actions")?.get(RESET));
    let values = offered(&replay.capture, action, "ResetType")
        .unwrap_or_else(|| RESET_TYPES.map(str::to_string).to_vec());
    let name = &RESET[1..];
    json::action_known(body, &["ResetType"], name)?;
    // Without one, the BMC's own default reset (the schema allows it).
    if let Some(kind) = json::action_str(body, "ResetType", name)? {
        if !values.iter().any(|v| v == kind) {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[kind, "ResetType", name],
            )));
        }
    }
    let system = managed(replay, manager).ok_or_else(|| ApiError::NotFound(manager.into()))?;
    let sys = st.core.backend.system(&replay.systems[&system]).await?;
    let down = Duration::from_secs(crate::api::managers::RESET_DOWN_SECS);
    tracing::info!(system = %sys.name, %manager, "replayed BMC reset");
    crate::api::managers::restart_bmc(st, &sys, "user initiated", (down, Duration::ZERO));
    Ok(json::no_content())
}
