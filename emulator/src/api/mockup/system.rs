//! The ComputerSystems of a replayed capture: live PowerState and Boot,
//! the Reset action at the captured target with the captured values, a
//! Boot PATCH checked against the captured AllowableValues and decided by
//! the core; the machine's MACs in the captured EthernetInterfaces (what
//! inspection turns into the ports the machine's own NICs then match).

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Map, Value};

use super::{untagged, Replay, RESET};
use crate::api::boot_rules::{boot_refused, boot_request, checked_patch};
use crate::api::error::{ApiError, Msg};
use crate::api::json;
use crate::api::patch::{writable, Kind, Writable};
use crate::api::AppState;
use crate::mockup::Mockup;
use crate::model::{BootMode, BootTarget, Change, OverrideEnabled, ResetType, System};

/// The captured system with the machine's live state where the capture
/// shows the property.
pub(super) fn grafted(captured: &Value, sys: &System) -> Value {
    let mut v = captured.clone();
    let Some(m) = v.as_object_mut() else {
        return v;
    };
    if m.contains_key("PowerState") {
        m.insert("PowerState".into(), json!(sys.power.as_str()));
    }
    if let Some(Value::Object(boot)) = m.get_mut("Boot") {
        let b = &sys.bmc.boot;
        for (k, live) in [
            ("BootSourceOverrideTarget", json!(b.target.as_str())),
            ("BootSourceOverrideEnabled", json!(b.enabled.as_str())),
            ("BootSourceOverrideMode", json!(b.mode.as_str())),
            ("HttpBootUri", json!(b.http_boot_uri)),
            ("UefiTargetBootSourceOverride", json!(b.uefi_target)),
        ] {
            if boot.contains_key(k) {
                boot.insert(k.into(), live);
            }
        }
    }
    v
}

/// Each captured EthernetInterface of each captured system → (the
/// system, its place in the collection): the machine's N-th NIC stands
/// behind the N-th interface.
pub(super) fn interfaces(capture: &Mockup) -> BTreeMap<String, (String, usize)> {
    let mut out = BTreeMap::new();
    for s in &capture.systems {
        let members = capture
            .json(s)
            .and_then(|v| v.pointer("/EthernetInterfaces/@odata.id"))
            .and_then(Value::as_str)
            .and_then(|c| capture.json(c))
            .map(crate::mockup::members)
            .unwrap_or_default();
        for (i, m) in members.iter().enumerate() {
            out.insert(capture.canonical(m), (s.clone(), i));
        }
    }
    out
}

/// The captured interface with the machine's `index`-th NIC's MAC where
/// it shows one (a machine with fewer NICs leaves the rest as captured).
pub(super) fn nic_grafted(captured: &Value, sys: &System, index: usize) -> Value {
    let mut v = captured.clone();
    let (Some(m), Some(nic)) = (v.as_object_mut(), sys.nics.get(index)) else {
        return v;
    };
    for k in ["MACAddress", "PermanentMACAddress"] {
        let Some(shown) = m.get(k).and_then(Value::as_str) else {
            continue;
        };
        // In the capture's case (an iDRAC's are upper case).
        let mac = match shown.bytes().any(|b| b.is_ascii_uppercase()) {
            true => nic.mac.to_uppercase(),
            false => nic.mac.to_lowercase(),
        };
        m.insert(k.into(), json!(mac));
    }
    v
}

pub(super) async fn reset(
    st: &AppState,
    replay: &Replay,
    system: &str,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    json::action_known(body, &["ResetType"], RESET)?;
    let offered = replay.reset_types(system);
    let asked = json::action_str(body, "ResetType", RESET)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[RESET, "ResetType"])))?;
    // A capture may list values of its own for standard resets (DMTF's
    // composition mockup lists `PowerOn`): either name is taken when the
    // capture offers the reset under one of them.
    let reset = reset_type(asked)
        .filter(|r| offered.iter().any(|o| reset_type(o) == Some(*r)))
        .ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[asked, "ResetType", RESET],
            ))
        })?;
    let sys = st.core.backend.system(&replay.systems[system]).await?;
    crate::api::systems::power_action_response(st, &sys, reset).await?;
    Ok(json::no_content())
}

/// The reset a ResetType value names: a standard value, or a name BMCs
/// use for one (`PowerOn`, `PowerOffNonGraceful`, `PowerOffGraceful`).
fn reset_type(value: &str) -> Option<ResetType> {
    ResetType::parse(value).or(match value {
        "PowerOn" => Some(ResetType::On),
        "PowerOff" | "PowerOffNonGraceful" => Some(ResetType::ForceOff),
        "PowerOffGraceful" => Some(ResetType::GracefulShutdown),
        _ => None,
    })
}

/// The Boot properties the capture shows, writable with the values it
/// lists.
fn boot_writables(captured: &Value) -> Vec<Writable> {
    let boot = captured.get("Boot").cloned().unwrap_or(Value::Null);
    let listed = |p: &str, all: Vec<&'static str>| -> Vec<&'static str> {
        match boot
            .get(format!("{p}@Redfish.AllowableValues"))
            .and_then(Value::as_array)
        {
            Some(l) => all
                .into_iter()
                .filter(|a| l.iter().any(|v| v == a))
                .collect(),
            None => all,
        }
    };
    let mut w = Vec::new();
    if boot.get("BootSourceOverrideTarget").is_some() {
        let all = BootTarget::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideTarget",
            Kind::Enum(listed("BootSourceOverrideTarget", all)),
        ));
    }
    if boot.get("BootSourceOverrideEnabled").is_some() {
        let all = OverrideEnabled::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideEnabled",
            Kind::Enum(listed("BootSourceOverrideEnabled", all)),
        ));
    }
    if boot.get("BootSourceOverrideMode").is_some() {
        let all = BootMode::ALL.iter().map(|t| t.as_str()).collect();
        w.push(writable(
            "Boot/BootSourceOverrideMode",
            Kind::Enum(listed("BootSourceOverrideMode", all)),
        ));
    }
    for k in ["HttpBootUri", "UefiTargetBootSourceOverride"] {
        if boot.get(k).is_some() {
            let path = if k == "HttpBootUri" {
                "Boot/HttpBootUri"
            } else {
                "Boot/UefiTargetBootSourceOverride"
            };
            w.push(writable(path, Kind::NullableStr));
        }
    }
    w
}

/// A Boot PATCH of `shown`: the system `system` itself, or its settings
/// object (applied at once: the replay has no pending state).
pub(super) async fn patch(
    st: &AppState,
    replay: &Replay,
    (system, shown): (&str, &str),
    headers: &HeaderMap,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let captured = replay
        .capture
        .json(shown)
        .ok_or_else(|| ApiError::NotFound(shown.to_string()))?;
    let locked = st.locked(&replay.systems[system]).await?;
    let (sys, profile) = (&locked.sys, locked.profile);
    let current = untagged(grafted(captured, sys));
    json::check_if_match(headers, &current, profile)?;
    checked_patch(body, &current, &boot_writables(captured))?;
    let Some(boot) = body.get("Boot").and_then(Value::as_object) else {
        return Ok(json::no_content());
    };
    let decided = st
        .core
        .decide_boot(sys, &boot_request(boot))
        .map_err(|e| boot_refused(e, profile))?;
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::Boot(decided)])
        .await?;
    drop(locked);
    tracing::info!(system = %sys.name, boot = ?sys.bmc.boot, "replayed system patched");
    Ok(json::no_content())
}
