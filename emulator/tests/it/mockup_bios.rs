//! A replayed capture's BIOS: the captured attributes are the machine's,
//! a PATCH of the captured settings object is checked against the
//! captured attribute registry (or the captured values' types where it
//! holds none) and staged for the next start, `Bios.ResetBios` at its
//! captured target stages the registry's defaults.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::Spawned;
use crate::mockup::{base, call, put};

const SYS: &str = "/redfish/v1/Systems/Node-7";

/// A capture of one system with a BIOS; `settings` the captured settings
/// object's attributes, `registry` whether the attribute registry is
/// captured.
fn capture(root: &Path, attributes: Value, settings: Value, registry: bool) {
    let write = |rel: &str, v: Value| put(root, rel, "index.json", v.to_string());
    write(
        "",
        json!({"@odata.id": "/redfish/v1", "Id": "RootService",
               "Systems": {"@odata.id": "/redfish/v1/Systems"},
               "Registries": {"@odata.id": "/redfish/v1/Registries"}}),
    );
    write(
        "Systems",
        json!({"@odata.id": "/redfish/v1/Systems", "Members": [{"@odata.id": SYS}]}),
    );
    write(
        "Systems/Node-7",
        json!({"@odata.id": SYS, "Id": "Node-7", "PowerState": "Off",
               "Bios": {"@odata.id": format!("{SYS}/Bios")},
               "Actions": {"#ComputerSystem.Reset": {
                   "target": format!("{SYS}/Actions/ComputerSystem.Reset")}}}),
    );
    write(
        "Systems/Node-7/Bios",
        json!({"@odata.id": format!("{SYS}/Bios"), "Id": "Bios",
               "AttributeRegistry": "BiosAttributeRegistryN7.v1_0_0",
               "Attributes": attributes,
               "@Redfish.Settings": {"SettingsObject": {"@odata.id": format!("{SYS}/Bios/Settings")}},
               "Actions": {"#Bios.ResetBios": {"target": format!("{SYS}/Bios/Actions/Bios.ResetBios")}}}),
    );
    write(
        "Systems/Node-7/Bios/Settings",
        json!({"@odata.id": format!("{SYS}/Bios/Settings"), "Id": "Settings",
               "Attributes": settings}),
    );
    let registries = if registry {
        vec![json!({"@odata.id": "/redfish/v1/Registries/BiosAttributeRegistryN7.v1_0_0"})]
    } else {
        Vec::new()
    };
    write(
        "Registries",
        json!({"@odata.id": "/redfish/v1/Registries", "Members": registries}),
    );
    if !registry {
        return;
    }
    let doc = "/redfish/v1/Registries/BiosAttributeRegistryN7.v1_0_0/Document";
    write(
        "Registries/BiosAttributeRegistryN7.v1_0_0",
        json!({"@odata.id": "/redfish/v1/Registries/BiosAttributeRegistryN7.v1_0_0",
               "Id": "BiosAttributeRegistryN7.v1_0_0",
               "Location": [{"Language": "en", "Uri": doc}]}),
    );
    let entry = |name: &str, kind: &str, extra: Value| {
        let mut e = json!({"AttributeName": name, "Type": kind});
        e.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        e
    };
    write(
        "Registries/BiosAttributeRegistryN7.v1_0_0/Document",
        json!({"@odata.id": doc, "Id": "BiosAttributeRegistryN7.v1_0_0",
        "RegistryEntries": {"Attributes": [
            entry("ProcTurboMode", "Enumeration", json!({"DefaultValue": "Enabled",
                "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]})),
            entry("ProcCores", "Integer", json!({"DefaultValue": 0, "LowerBound": 0, "UpperBound": 8})),
            entry("AdminPhone", "String", json!({"DefaultValue": "", "MaxLength": 20})),
            entry("SerialNumber", "String", json!({"ReadOnly": true})),
        ]}}),
    );
}

fn attributes(b: &str, uri: &str) -> Value {
    let (code, _, v) = call("GET", &format!("{b}{uri}"), "", None);
    assert_eq!(code, 200, "{uri}: {v}");
    v["Attributes"].clone()
}

fn message_ids(v: &Value) -> Vec<String> {
    let mut ids: Vec<String> = v["error"]["@Message.ExtendedInfo"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages: {v}"))
        .iter()
        .map(|m| {
            let id = m["MessageId"].as_str().unwrap();
            id.rsplit('.').next().unwrap().to_string()
        })
        .collect();
    ids.sort();
    ids
}

fn reset(b: &str, kind: &str) {
    let (code, _, v) = call(
        "POST",
        &format!("{b}{SYS}/Actions/ComputerSystem.Reset"),
        "",
        Some(json!({"ResetType": kind})),
    );
    assert!(code == 200 || code == 204, "{kind}: {code} {v}");
}

#[test]
fn a_replayed_bios_stages_against_the_captured_registry_and_applies_at_reset() {
    let dir = tempfile::tempdir().unwrap();
    let captured = json!({"ProcTurboMode": "Disabled", "ProcCores": 2,
                          "AdminPhone": "555", "SerialNumber": "N7-0001"});
    capture(dir.path(), captured.clone(), json!({}), true);
    let emu = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let b = base(&emu);
    let (bios, settings) = (format!("{SYS}/Bios"), format!("{SYS}/Bios/Settings"));
    assert_eq!(
        attributes(&b, &bios),
        captured,
        "the machine's BIOS is the capture's"
    );
    assert_eq!(attributes(&b, &settings), json!({}));

    // Every bad attribute is named, nothing is staged.
    let bad = json!({"Attributes": {"ProcTurboMode": "Sometimes", "ProcCores": 9,
                     "SerialNumber": "x", "Nope": 1, "AdminPhone": 5}});
    let (code, _, v) = call("PATCH", &format!("{b}{settings}"), "", Some(bad));
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        message_ids(&v),
        [
            "PropertyNotWritable",
            "PropertyUnknown",
            "PropertyValueNotInList",
            "PropertyValueOutOfRange",
            "PropertyValueTypeError"
        ]
    );
    let late = json!({"@Redfish.SettingsApplyTime": {"ApplyTime": "Never"},
                      "Attributes": {"ProcCores": 4}});
    let (code, _, v) = call("PATCH", &format!("{b}{settings}"), "", Some(late));
    assert_eq!(code, 400, "{v}");
    assert_eq!(message_ids(&v), ["PropertyValueNotInList"]);
    assert_eq!(attributes(&b, &settings), json!({}), "nothing staged");

    // Staged, then applied by the next start.
    let good = json!({"Attributes": {"ProcTurboMode": "Enabled", "ProcCores": 4}});
    let (code, _, v) = call("PATCH", &format!("{b}{settings}"), "", Some(good));
    assert_eq!(code, 204, "{v}");
    assert_eq!(
        attributes(&b, &settings),
        json!({"ProcTurboMode": "Enabled", "ProcCores": 4})
    );
    assert_eq!(attributes(&b, &bios)["ProcTurboMode"], "Disabled");
    reset(&b, "On");
    let now = attributes(&b, &bios);
    assert_eq!(now["ProcTurboMode"], "Enabled", "{now}");
    assert_eq!(now["ProcCores"], 4, "{now}");
    assert_eq!(now["SerialNumber"], "N7-0001", "{now}");
    assert_eq!(attributes(&b, &settings), json!({}));

    // ResetBios at its captured target stages the registry's defaults.
    let target = format!("{b}{SYS}/Bios/Actions/Bios.ResetBios");
    let (code, _, v) = call("POST", &target, "", Some(json!({"Bogus": 1})));
    assert_eq!(code, 400, "{v}");
    let (code, _, v) = call("POST", &target, "", Some(json!({})));
    assert_eq!(code, 204, "{v}");
    reset(&b, "ForceRestart");
    let now = attributes(&b, &bios);
    assert_eq!(now["ProcCores"], 0, "{now}");
    assert_eq!(now["AdminPhone"], "", "{now}");
    assert_eq!(now["SerialNumber"], "N7-0001", "read-only: kept");
    emu.stop();
}

/// Without a captured registry each attribute takes a value of its
/// captured type; a settings object captured as the whole next-start set
/// stays so, and what it showed staged applies at the next start.
#[test]
fn a_replayed_bios_without_registry_keeps_the_captured_types_and_staging() {
    let dir = tempfile::tempdir().unwrap();
    let current = json!({"BootMode": "Uefi", "EmbeddedSata": "Raid", "ProcCoreDisable": 0});
    let staged = json!({"BootMode": "Uefi", "EmbeddedSata": "Ahci", "ProcCoreDisable": 0});
    capture(dir.path(), current.clone(), staged.clone(), false);
    let emu = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let b = base(&emu);
    let (bios, settings) = (format!("{SYS}/Bios"), format!("{SYS}/Bios/Settings"));
    assert_eq!(attributes(&b, &bios), current);
    assert_eq!(attributes(&b, &settings), staged, "as captured");
    let bad = json!({"Attributes": {"ProcCoreDisable": "two", "Missing": "x"}});
    let (code, _, v) = call("PATCH", &format!("{b}{settings}"), "", Some(bad));
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        message_ids(&v),
        ["PropertyUnknown", "PropertyValueTypeError"]
    );
    let good = json!({"Attributes": {"ProcCoreDisable": 2}});
    let (code, _, v) = call("PATCH", &format!("{b}{settings}"), "", Some(good));
    assert_eq!(code, 204, "{v}");
    assert_eq!(attributes(&b, &settings)["ProcCoreDisable"], 2);
    reset(&b, "On");
    assert_eq!(
        attributes(&b, &bios),
        json!({"BootMode": "Uefi", "EmbeddedSata": "Ahci", "ProcCoreDisable": 2})
    );
    emu.stop();
}
