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
use crate::mockup::{Body, Mockup};
use crate::model::{MediaSlot, MediaState, System};

/// Devices of one collection that share a machine's slot (bmcweb's
/// `Slot_0`…`Slot_N`, more than the machine has slots): the media shows
/// on the device that inserted it (at first, the group's first device),
/// the others show empty.
#[derive(Debug, Default)]
pub struct Sharing {
    /// Device → its group (collection and slot).
    group_of: BTreeMap<String, String>,
    /// Group → its first device.
    first: BTreeMap<String, String>,
    /// Group → the device that last inserted media.
    holders: std::sync::Mutex<BTreeMap<String, String>>,
}

impl Sharing {
    /// Whether `device` shows its slot's media.
    pub fn shows(&self, device: &str) -> bool {
        let Some(group) = self.group_of.get(device) else {
            return true;
        };
        let holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        holders
            .get(group)
            .or_else(|| self.first.get(group))
            .map(String::as_str)
            == Some(device)
    }

    /// `device` now holds its slot's media.
    fn hold(&self, device: &str) {
        if let Some(group) = self.group_of.get(device) {
            let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
            holders.insert(group.clone(), device.to_string());
        }
    }
}

/// The captured VirtualMedia devices a machine's slots stand behind: in
/// each VirtualMedia collection, the first CD-like device the system's
/// CD, the first other one its removable slot, any more share one of
/// them (`Sharing`). A device below a system
/// is that system's; a Manager's belongs to the first captured system it
/// manages (else the first captured system). A system with devices of its
/// own and its Manager's (an iDRAC 9 from firmware 6 on) shows the same
/// slots through both, as the BMC does.
pub(super) fn media_devices(capture: &Mockup) -> (BTreeMap<String, (String, MediaSlot)>, Sharing) {
    let mut out = BTreeMap::new();
    let mut sharing = Sharing::default();
    let mut taken = BTreeMap::new();
    // Devices a client can insert into take the slots first; one that
    // only ejects (bmcweb's proxy-mode `Slot_0`) shares theirs.
    let (inserting, others): (Vec<_>, Vec<_>) = capture
        .resources
        .iter()
        .filter_map(|(uri, c)| match &c.body {
            Body::Json(v) => Some((uri, v)),
            _ => None,
        })
        .partition(|(_, v)| inserts(v));
    for (uri, v) in inserting.into_iter().chain(others) {
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
            .iter()
            .find(|slot| !taken.contains_key(&(collection.clone(), slot.as_str())));
        match (free, allowed.first()) {
            (Some(slot), _) => {
                taken.insert((collection, slot.as_str()), uri.clone());
                out.insert(uri.clone(), (system, *slot));
            }
            (None, Some(slot)) => {
                let group = format!("{collection}#{slot}");
                let first = taken[&(collection, slot.as_str())].clone();
                sharing.group_of.insert(first.clone(), group.clone());
                sharing.group_of.insert(uri.clone(), group.clone());
                sharing.first.insert(group, first);
                out.insert(uri.clone(), (system, *slot));
            }
            (None, None) => {}
        }
    }
    (out, sharing)
}

/// A captured device's insert and eject targets (target, insert): the
/// standard actions, and a vendor's own under `Oem` (iLO's
/// `#HpeiLOVirtualMedia.InsertVirtualMedia`, which inserts as the
/// standard one does).
pub(super) fn media_targets(device: &Value) -> Vec<(String, bool)> {
    let mut sets: Vec<&Value> = device.get("Actions").into_iter().collect();
    sets.extend(device.pointer("/Actions/Oem"));
    if let Some(Value::Object(vendors)) = device.get("Oem") {
        sets.extend(vendors.values().filter_map(|v| v.get("Actions")));
    }
    sets.iter()
        .filter_map(|a| a.as_object())
        .flatten()
        .filter_map(|(name, action)| {
            let insert = match name.rsplit('.').next()? {
                "InsertMedia" | "InsertVirtualMedia" => true,
                "EjectMedia" | "EjectVirtualMedia" => false,
                _ => return None,
            };
            Some((action.get("target")?.as_str()?.to_string(), insert))
        })
        .collect()
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
        .map(|l| capture.canonical(l))
        .find(|l| capture.systems.contains(l));
    managed.or_else(|| capture.systems.first().cloned())
}

/// The captured device with the slot's live media where the capture
/// shows the property.
/// (Empty on a device whose slot's media another device shows.)
pub(super) fn media_grafted(
    captured: &Value,
    replay: &Replay,
    device: &str,
    sys: &System,
) -> Value {
    let mut v = captured.clone();
    let Some(obj) = v.as_object_mut() else {
        return v;
    };
    let empty = MediaState::default();
    let state = match replay.sharing.shows(device) {
        true => sys.bmc.media(replay.media[device].1),
        false => &empty,
    };
    for (k, live) in crate::api::vmedia::media_live(state) {
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
        let r = crate::api::vmedia::insert_into(st, &sys, *slot, device, body).await?;
        replay.sharing.hold(device);
        Ok(r)
    } else if !replay.sharing.shows(device) {
        // Empty as it shows: nothing to eject, and the slot's media is
        // another device's.
        crate::api::json::action_known(body, &[], "VirtualMedia.EjectMedia")?;
        Ok(crate::api::json::no_content())
    } else {
        crate::api::vmedia::eject_from(st, &sys, *slot, body).await
    }
}

/// Whether the captured device takes its media by PATCH: it shows no
/// insert or eject action at all (as Lenovo's XCC).
pub(super) fn inserts_by_patch(replay: &Replay, device: &str) -> bool {
    replay
        .capture
        .json(device)
        .is_some_and(|v| media_targets(v).is_empty())
}

/// Whether a client can insert media into the captured device: by an
/// action, or by PATCH.
fn inserts(device: &Value) -> bool {
    let targets = media_targets(device);
    targets.is_empty() || targets.iter().any(|(_, insert)| *insert)
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
    let current = super::untagged(media_grafted(captured, replay, device, &sys));
    crate::api::json::check_if_match(headers, &current, st.profile(&sys))?;
    if !replay.sharing.shows(device) && sys.bmc.media(*slot).image.is_some() {
        return Err(ApiError::Conflict(format!(
            "{slot} of {} holds media another device inserted",
            sys.name
        )));
    }
    crate::api::vmedia::patch_media(st, &sys, *slot, body).await?;
    replay.sharing.hold(device);
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
            folded: Default::default(),
        }
    }

    fn device(types: &[&str]) -> Value {
        json!({"@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia", "MediaTypes": types})
    }

    /// bmcweb's two Manager slots that each take a CD or a USB stick: the
    /// first is the CD, the second the removable slot, both for the
    /// system the Manager manages; a third shares the CD slot.
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
        let (d, _) = media_devices(&m);
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
        let (d, _) = media_devices(&m);
        let sys = "/redfish/v1/Systems/system".to_string();
        assert_eq!(
            d["/redfish/v1/Managers/bmc/VirtualMedia/Slot_0"],
            (sys.clone(), MediaSlot::Cd)
        );
        assert_eq!(
            d["/redfish/v1/Managers/bmc/VirtualMedia/Slot_1"],
            (sys.clone(), MediaSlot::Floppy)
        );
        // A third shares the first's slot, showing empty until it inserts.
        let (slot_0, slot_2) = (
            "/redfish/v1/Managers/bmc/VirtualMedia/Slot_0",
            "/redfish/v1/Managers/bmc/VirtualMedia/Slot_2",
        );
        assert_eq!(d[slot_2], (sys, MediaSlot::Cd));
        let (_, sharing) = media_devices(&m);
        assert!(sharing.shows(slot_0) && !sharing.shows(slot_2));
        sharing.hold(slot_2);
        assert!(!sharing.shows(slot_0) && sharing.shows(slot_2));
        assert!(sharing.shows("/redfish/v1/Managers/bmc/VirtualMedia/Slot_1"));
    }

    /// A System's own devices are its own; a floppy-only device never
    /// takes the CD slot.
    #[test]
    fn standard_and_vendor_insert_targets_are_found() {
        let dev = json!({
            "Actions": {
                "#VirtualMedia.InsertMedia": {"target": "/d/Actions/VirtualMedia.InsertMedia"},
                "Oem": {"#Acme.Reload": {"target": "/d/Actions/Oem/Acme.Reload"}}
            },
            "Oem": {"Hpe": {"Actions": {
                "#HpeiLOVirtualMedia.InsertVirtualMedia": {"target": "/d/Actions/Oem/Hpe/Insert"},
                "#HpeiLOVirtualMedia.EjectVirtualMedia": {"target": "/d/Actions/Oem/Hpe/Eject"}
            }}}
        });
        let mut t = media_targets(&dev);
        t.sort();
        assert_eq!(
            t,
            [
                ("/d/Actions/Oem/Hpe/Eject".to_string(), false),
                ("/d/Actions/Oem/Hpe/Insert".to_string(), true),
                ("/d/Actions/VirtualMedia.InsertMedia".to_string(), true),
            ]
        );
        assert!(media_targets(&json!({"Inserted": false})).is_empty());
    }

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
        let (d, _) = media_devices(&m);
        let two = "/redfish/v1/Systems/2".to_string();
        assert_eq!(
            d["/redfish/v1/Systems/2/VirtualMedia/CD1"],
            (two.clone(), MediaSlot::Cd)
        );
        assert_eq!(
            d["/redfish/v1/Systems/2/VirtualMedia/Floppy1"],
            (two.clone(), MediaSlot::Floppy)
        );
        assert_eq!(
            d["/redfish/v1/Systems/2/VirtualMedia/Floppy2"],
            (two, MediaSlot::Floppy),
            "shares the removable slot, never the CD"
        );
    }
}
