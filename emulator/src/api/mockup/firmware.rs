//! Firmware on a replayed capture: the versions its resources show of a
//! machine's BIOS and BMC (a system's `BiosVersion`, its manager's
//! `FirmwareVersion`, the FirmwareInventory entries that name them)
//! follow what the machine has installed since (Shoal's updates, at the
//! standard UpdateService actions, `update::live_router`, and at the
//! captured push URIs, `push_uris`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::api::AppState;
use crate::firmware::Component;
use crate::mockup::{members, Mockup};
use crate::model::System;

/// The captured UpdateService's push URIs (`MultipartHttpPushUri`,
/// `HttpPushUri`) a replay takes images at: those under the
/// UpdateService, where the guard reads an image's body whole.
pub(super) fn push_uris(capture: &Mockup) -> Vec<String> {
    let Some(update) = capture
        .json("/redfish/v1")
        .and_then(|r| r.pointer("/UpdateService/@odata.id"))
        .and_then(Value::as_str)
        .and_then(|u| capture.json(u))
    else {
        return Vec::new();
    };
    ["MultipartHttpPushUri", "HttpPushUri"]
        .iter()
        .filter_map(|k| update.get(*k)?.as_str())
        .map(|u| crate::mockup::key(u).to_string())
        .filter(|u| {
            u.strip_prefix(crate::api::update::PUSH_PREFIX)
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
        })
        .collect()
}

/// An image pushed to a captured push URI: Shoal's own push (the
/// derived profile has the captured URIs).
pub(super) async fn push(
    crate::api::State(st): crate::api::State<AppState>,
    req: axum::extract::Request,
) -> Result<axum::response::Response, crate::api::error::ApiError> {
    let path = crate::mockup::key(req.uri().path()).to_string();
    crate::api::update::push::push_to(&st, path, req).await
}

/// A property of a captured resource that shows a component's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The captured system whose machine has the component.
    pub system: String,
    pub component: Component,
    pub property: &'static str,
}

/// Each captured resource that shows a version → what it shows.
pub(super) fn versions(capture: &Mockup) -> BTreeMap<String, Vec<Shown>> {
    let mut out: BTreeMap<String, Vec<Shown>> = BTreeMap::new();
    let Some(first) = capture.systems.first() else {
        return out;
    };
    let mut add = |uri: String, system: &str, component, property| {
        out.entry(uri).or_default().push(Shown {
            system: system.to_string(),
            component,
            property,
        });
    };
    for s in &capture.systems {
        add(s.clone(), s, Component::Bios, "BiosVersion");
    }
    let root = capture.json("/redfish/v1").cloned().unwrap_or(Value::Null);
    let listed = |link: &str| -> Vec<String> {
        root.pointer(link)
            .and_then(Value::as_str)
            .and_then(|c| capture.json(c))
            .map(members)
            .unwrap_or_default()
    };
    for m in listed("/Managers/@odata.id") {
        let managed = capture
            .json(&m)
            .and_then(|v| v.pointer("/Links/ManagerForServers/0/@odata.id"))
            .and_then(Value::as_str)
            .map(|s| capture.canonical(s))
            .filter(|s| capture.systems.contains(s))
            .unwrap_or_else(|| first.clone());
        add(
            capture.canonical(&m),
            &managed,
            Component::Bmc,
            "FirmwareVersion",
        );
    }
    let inventory = root
        .pointer("/UpdateService/@odata.id")
        .and_then(Value::as_str)
        .and_then(|u| capture.json(u))
        .and_then(|u| u.pointer("/FirmwareInventory/@odata.id"))
        .and_then(Value::as_str)
        .and_then(|i| capture.json(i))
        .map(members)
        .unwrap_or_default();
    for entry in inventory {
        if let Some(c) = capture.json(&entry).and_then(component_of) {
            add(capture.canonical(&entry), first, c, "Version");
        }
    }
    out
}

/// The component a FirmwareInventory entry is, by what it calls itself
/// (iDRAC's `BIOS` and `Integrated Dell Remote Access Controller`, iLO's
/// `System ROM` and `iLO 5`, bmcweb's `bios_active` and `bmc_active`).
fn component_of(entry: &Value) -> Option<Component> {
    let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
    let words = format!("{} {}", text("Name"), text("Id")).to_lowercase();
    let has = |w: &str| {
        words
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|x| x == w)
    };
    if has("bios") || words.contains("system rom") || has("uefi") {
        Some(Component::Bios)
    } else if has("bmc")
        || has("idrac")
        || has("ilo")
        || words.contains("remote access controller")
        || words.contains("baseboard management")
    {
        Some(Component::Bmc)
    } else {
        None
    }
}

/// `body` with the versions the machine has installed since where it
/// shows them (what `shown` lists of it; `sys` the machine of each).
pub(super) fn grafted(mut body: Value, shown: &[(&Shown, &System)]) -> Value {
    let Some(m) = body.as_object_mut() else {
        return body;
    };
    for (s, sys) in shown {
        let Some(installed) = sys.bmc.firmware.installed.get(&s.component) else {
            continue;
        };
        if m.contains_key(s.property) {
            m.insert(s.property.into(), json!(installed.version));
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inventory_entries_are_named_by_what_they_call_themselves() {
        for (name, id, want) in [
            ("BIOS", "Installed-159-1.5.4", Some(Component::Bios)),
            ("System ROM", "2", Some(Component::Bios)),
            ("iLO 5", "1", Some(Component::Bmc)),
            (
                "Integrated Dell Remote Access Controller",
                "Installed-25227-6.10",
                Some(Component::Bmc),
            ),
            ("Software Inventory", "bmc_active", Some(Component::Bmc)),
            ("Silo Controller", "7", None),
            ("PERC H755", "Installed-101-52.16", None),
        ] {
            let e = json!({"Name": name, "Id": id});
            assert_eq!(component_of(&e), want, "{name} {id}");
        }
    }
}
