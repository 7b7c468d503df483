//! The VirtualMedia devices of a replayed capture: which machine's slot
//! stands behind each, their live media, InsertMedia and EjectMedia at
//! their captured targets (through Shoal's own checks and backend).

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Map, Value};

use super::Replay;
use crate::api::error::ApiError;
use crate::api::AppState;
use crate::mockup::{key, Body, Mockup};
use crate::model::{MediaSlot, System};

/// The captured VirtualMedia devices a machine's slots stand behind: in
/// each VirtualMedia collection, the first CD-like device the system's
/// CD, the first other one its removable slot. A device below a system
/// is that system's; a Manager's belongs to the first captured system it
/// manages (else the first captured system). A system with devices of its
/// own and its Manager's (an iDRAC 9 from firmware 6 on) shows the same
/// slots through both, as the BMC does.
pub(super) fn media_devices(capture: &Mockup) -> BTreeMap<String, (String, MediaSlot)> {
    let mut out = BTreeMap::new();
    let mut taken = std::collections::BTreeSet::new();
    for (uri, c) in &capture.resources {
        let Body::Json(v) = &c.body else { continue };
        let is_media = v
            .get("@odata.type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with("#VirtualMedia.") && !t.contains("Collection"));
        let Some(system) = is_media.then(|| owner(capture, uri)).flatten() else {
            continue;
        };
        let types: Vec<&str> = v
            .get("MediaTypes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let cd_like = types.iter().any(|t| matches!(*t, "CD" | "DVD"));
        let removable = types.iter().any(|t| matches!(*t, "Floppy" | "USBStick"));
        let mut allowed = Vec::new();
        if cd_like || types.is_empty() {
            allowed.push(MediaSlot::Cd);
        }
        if removable || types.is_empty() {
            allowed.push(MediaSlot::Floppy);
        }
        let collection = uri.rsplit_once('/').map_or("", |(c, _)| c).to_string();
        let free = allowed
            .into_iter()
            .find(|slot| !taken.contains(&(collection.clone(), slot.as_str())));
        if let Some(slot) = free {
            taken.insert((collection, slot.as_str()));
            out.insert(uri.clone(), (system, slot));
        }
    }
    out
}

/// The captured system a VirtualMedia device at `uri` serves.
fn owner(capture: &Mockup, uri: &str) -> Option<String> {
    if let Some(s) = capture
        .systems
        .iter()
        .find(|s| uri.starts_with(&format!("{s}/")))
    {
        return Some(s.clone());
    }
    let manager = uri.split("/VirtualMedia").next()?;
    let managed = capture
        .json(manager)
        .and_then(|m| m.pointer("/Links/ManagerForServers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("@odata.id").and_then(Value::as_str))
        .map(|l| key(l).to_string())
        .find(|l| capture.systems.contains(l));
    managed.or_else(|| capture.systems.first().cloned())
}

/// The captured device with the slot's live media where the capture
/// shows the property.
pub(super) fn media_grafted(captured: &Value, sys: &System, slot: MediaSlot) -> Value {
    let mut v = captured.clone();
    let Some(obj) = v.as_object_mut() else {
        return v;
    };
    for (k, live) in crate::api::vmedia::media_live(sys.bmc.media(slot)) {
        if obj.contains_key(k) {
            obj.insert(k.into(), live);
        }
    }
    v
}

/// InsertMedia or EjectMedia at a captured device's own target.
pub(super) async fn media_action(
    st: &AppState,
    replay: &Replay,
    target: &str,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let (device, insert) = &replay.media_actions[target];
    let (system, slot) = &replay.media[device];
    let sys = st.core.backend.system(&replay.systems[system]).await?;
    if *insert {
        crate::api::vmedia::insert_into(st, &sys, *slot, device, body).await
    } else {
        crate::api::vmedia::eject_from(st, &sys, *slot, body).await
    }
}

/// Whether the captured device takes its media by PATCH: it shows no
/// InsertMedia action (as Lenovo's XCC).
pub(super) fn inserts_by_patch(replay: &Replay, device: &str) -> bool {
    replay
        .capture
        .json(device)
        .is_some_and(|v| v.pointer("/Actions/#VirtualMedia.InsertMedia").is_none())
}

/// A PATCH of `Image`/`Inserted` on a device that inserts by PATCH,
/// checked against the live device's ETag.
pub(super) async fn media_patch(
    st: &AppState,
    replay: &Replay,
    device: &str,
    headers: &HeaderMap,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    let (system, slot) = &replay.media[device];
    let captured = replay
        .capture
        .json(device)
        .ok_or_else(|| ApiError::NotFound(device.to_string()))?;
    let _guard = st.core.locks.lock(&replay.systems[system]).await;
    let sys = st.core.backend.system(&replay.systems[system]).await?;
    let current = super::untagged(media_grafted(captured, &sys, *slot));
    crate::api::json::check_if_match(headers, &current, st.profile(&sys))?;
    crate::api::vmedia::patch_media(st, &sys, *slot, body).await?;
    Ok(crate::api::json::no_content())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mockup::Captured;
    use serde_json::json;

    fn capture(resources: &[(&str, Value)], systems: &[&str]) -> Mockup {
        Mockup {
            source: "test".into(),
            resources: resources
                .iter()
                .map(|(u, v)| {
                    let c = Captured {
                        body: Body::Json(v.clone()),
                        headers: Vec::new(),
                        secs: None,
                        file: "test".into(),
                    };
                    (u.to_string(), c)
                })
                .collect(),
            systems: systems.iter().map(|s| s.to_string()).collect(),
            dangling: Vec::new(),
        }
    }

    fn device(types: &[&str]) -> Value {
        json!({"@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia", "MediaTypes": types})
    }

    /// bmcweb's two Manager slots that each take a CD or a USB stick: the
    /// first is the CD, the second the removable slot, both for the
    /// system the Manager manages; a third finds no slot left.
    #[test]
    fn a_system_and_its_manager_show_the_same_slots() {
        // An iDRAC 9 from firmware 6 on: the Manager's CD and
        // RemovableDisk, and the System's 1 and 2.
        let m = capture(
            &[
                (
                    "/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia/CD",
                    device(&["CD", "DVD"]),
                ),
                (
                    "/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia/RemovableDisk",
                    device(&["USBStick"]),
                ),
                (
                    "/redfish/v1/Systems/System.Embedded.1/VirtualMedia/1",
                    device(&["CD", "DVD", "USBStick"]),
                ),
                (
                    "/redfish/v1/Systems/System.Embedded.1/VirtualMedia/2",
                    device(&["CD", "DVD", "USBStick"]),
                ),
                ("/redfish/v1/Systems/System.Embedded.1", json!({})),
            ],
            &["/redfish/v1/Systems/System.Embedded.1"],
        );
        let d = media_devices(&m);
        let sys = "/redfish/v1/Systems/System.Embedded.1".to_string();
        for (dev, slot) in [
            ("Managers/iDRAC.Embedded.1/VirtualMedia/CD", MediaSlot::Cd),
            (
                "Managers/iDRAC.Embedded.1/VirtualMedia/RemovableDisk",
                MediaSlot::Floppy,
            ),
            ("Systems/System.Embedded.1/VirtualMedia/1", MediaSlot::Cd),
            (
                "Systems/System.Embedded.1/VirtualMedia/2",
                MediaSlot::Floppy,
            ),
        ] {
            assert_eq!(
                d[&format!("/redfish/v1/{dev}")],
                (sys.clone(), slot),
                "{dev}"
            );
        }
    }

    #[test]
    fn a_managers_devices_fill_the_managed_systems_slots_in_order() {
        let m = capture(
            &[
                (
                    "/redfish/v1/Managers/bmc",
                    json!({"Links": {"ManagerForServers": [{"@odata.id": "/redfish/v1/Systems/system"}]}}),
                ),
                (
                    "/redfish/v1/Managers/bmc/VirtualMedia/Slot_0",
                    device(&["CD", "USBStick"]),
                ),
                (
                    "/redfish/v1/Managers/bmc/VirtualMedia/Slot_1",
                    device(&["CD", "USBStick"]),
                ),
                (
                    "/redfish/v1/Managers/bmc/VirtualMedia/Slot_2",
                    device(&["CD", "USBStick"]),
                ),
                ("/redfish/v1/Systems/other", json!({})),
                ("/redfish/v1/Systems/system", json!({})),
            ],
            &["/redfish/v1/Systems/other", "/redfish/v1/Systems/system"],
        );
        let d = media_devices(&m);
        let sys = "/redfish/v1/Systems/system".to_string();
        assert_eq!(
            d["/redfish/v1/Managers/bmc/VirtualMedia/Slot_0"],
            (sys.clone(), MediaSlot::Cd)
        );
        assert_eq!(
            d["/redfish/v1/Managers/bmc/VirtualMedia/Slot_1"],
            (sys, MediaSlot::Floppy)
        );
        assert!(!d.contains_key("/redfish/v1/Managers/bmc/VirtualMedia/Slot_2"));
    }

    /// A System's own devices are its own; a floppy-only device never
    /// takes the CD slot.
    #[test]
    fn a_systems_devices_are_its_own() {
        let m = capture(
            &[
                ("/redfish/v1/Systems/1", json!({})),
                ("/redfish/v1/Systems/2", json!({})),
                (
                    "/redfish/v1/Systems/2/VirtualMedia/Floppy1",
                    device(&["Floppy", "USBStick"]),
                ),
                (
                    "/redfish/v1/Systems/2/VirtualMedia/Floppy2",
                    device(&["Floppy"]),
                ),
                (
                    "/redfish/v1/Systems/2/VirtualMedia/CD1",
                    device(&["CD", "DVD"]),
                ),
            ],
            &["/redfish/v1/Systems/1", "/redfish/v1/Systems/2"],
        );
        let d = media_devices(&m);
        let two = "/redfish/v1/Systems/2".to_string();
        assert_eq!(
            d["/redfish/v1/Systems/2/VirtualMedia/CD1"],
            (two.clone(), MediaSlot::Cd)
        );
        assert_eq!(
            d["/redfish/v1/Systems/2/VirtualMedia/Floppy1"],
            (two, MediaSlot::Floppy)
        );
        assert!(!d.contains_key("/redfish/v1/Systems/2/VirtualMedia/Floppy2"));
    }
}
