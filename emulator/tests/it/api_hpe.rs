//! HPE's own extensions on the iLO profiles, as proliantutils (the library
//! behind Ironic's iLO drivers) reads and drives them: the root's links,
//! the live POST state, the power button, iLO's virtual media actions and
//! `BootOnNextServerReset`.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::Api;

const SYS: &str = "/redfish/v1/Systems/1";
const CD: &str = "/redfish/v1/Managers/1/VirtualMedia/2";
const BUTTON: &str = "/redfish/v1/Systems/1/Actions/Oem/Hpe/HpeComputerSystemExt.PowerButton";

/// `urljoin(link, "1")`, as proliantutils builds `Systems/1`.
fn urljoin_one(link: &str) -> String {
    match link.rfind('/') {
        Some(i) => format!("{}1", &link[..=i]),
        None => "1".into(),
    }
}

async fn hpe(api: &Api) -> Value {
    api.get(SYS).await.body["Oem"]["Hpe"].clone()
}

/// ilo5 with a POST window of `secs`, for watching it pass.
fn ilo5_post_secs(secs: u64) -> Api {
    let dir = tempfile::tempdir().unwrap();
    let post = format!("post_secs = {secs}");
    crate::common::derived_profile(dir.path(), "ilo5", "ilo5", &[("post_secs = 15", &post)], "");
    let profiles = shoal_emulator::profile::Profiles::load(Some(dir.path())).unwrap();
    Api::own_endpoint_with("ilo5", profiles)
}

#[tokio::test]
async fn ilo_root_links_end_in_a_slash_so_urljoin_finds_system_1() {
    let api = Api::own_endpoint("ilo5");
    let root = api.get("/redfish/v1/").await.body;
    for (k, owner) in [
        ("Systems", SYS),
        ("Managers", "/redfish/v1/Managers/1"),
        ("Chassis", "/redfish/v1/Chassis/1"),
    ] {
        let link = root[k]["@odata.id"].as_str().unwrap();
        assert!(link.ends_with('/'), "{k}: {link}");
        assert_eq!(urljoin_one(link), owner);
        assert_eq!(api.get(owner).await.status, StatusCode::OK);
    }
    // The generation, where HPE's iLOrest reads it before it logs in.
    let m = &root["Oem"]["Hpe"]["Manager"][0];
    assert_eq!(
        (
            m["ManagerType"].as_str(),
            m["ManagerFirmwareVersion"].as_str()
        ),
        (Some("iLO 5"), Some("3.08"))
    );
    assert_eq!(root["Oem"]["Hpe"]["Moniker"]["PRODGEN"], "iLO 5");
    let generic = Api::own_endpoint("idrac9").get("/redfish/v1/").await.body;
    assert_eq!(generic["Systems"]["@odata.id"], "/redfish/v1/Systems");
    assert!(generic["Oem"].get("Hpe").is_none());
}

/// The power button: a press starts the host, whose POST state goes
/// InPost, InPostDiscoveryComplete, FinishedPost as its POST passes; a
/// press and hold turns it off (PowerOff). Each step is a new rendering.
#[tokio::test]
async fn the_power_button_starts_the_host_and_post_state_follows_it() {
    let api = ilo5_post_secs(3);
    let oem = hpe(&api).await;
    assert_eq!(oem["PostState"], "PowerOff");
    assert_eq!(oem["Bios"]["UefiClass"], 2);
    let action = &oem["Actions"]["#HpeComputerSystemExt.PowerButton"];
    assert_eq!(action["target"], BUTTON);
    assert_eq!(
        action["PushType@Redfish.AllowableValues"],
        json!(["Press", "PressAndHold"])
    );
    let etag = api.get(SYS).await.body["@odata.etag"].clone();
    let r = api.post(BUTTON, json!({"PushType": "Press"})).await;
    assert!(r.status.is_success(), "{r}");
    let s = api.get(SYS).await.body;
    assert_eq!(s["PowerState"], "On");
    assert_eq!(s["Oem"]["Hpe"]["PostState"], "InPost");
    // Boot changes are refused while the host is in POST.
    let r = api
        .patch(SYS, json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert!(
        r.message_ids()
            .iter()
            .any(|m| m == "UnableToModifyDuringSystemPOST"),
        "{r}"
    );
    let mut seen = vec!["InPost".to_string()];
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let s = api.get(SYS).await.body["Oem"]["Hpe"]["PostState"]
            .as_str()
            .unwrap()
            .to_string();
        if seen.last() != Some(&s) {
            seen.push(s);
        }
    }
    assert_eq!(seen, ["InPost", "InPostDiscoveryComplete", "FinishedPost"]);
    assert_ne!(api.get(SYS).await.body["@odata.etag"], etag);
    let r = api.post(BUTTON, json!({"PushType": "PressAndHold"})).await;
    assert!(r.status.is_success(), "{r}");
    let s = api.get(SYS).await.body;
    assert_eq!(
        (
            s["PowerState"].as_str(),
            s["Oem"]["Hpe"]["PostState"].as_str()
        ),
        (Some("Off"), Some("PowerOff"))
    );
    // Held again with the host off: nothing happens, and that is fine.
    assert!(api
        .post(BUTTON, json!({"PushType": "PressAndHold"}))
        .await
        .status
        .is_success());
    assert_eq!(api.get(SYS).await.body["PowerState"], "Off");
}

#[tokio::test]
async fn bad_power_button_pushes_are_refused_and_change_nothing() {
    let api = Api::own_endpoint("ilo5");
    for (body, id) in [
        (json!({}), "ActionParameterMissing"),
        (json!({"PushType": "Tap"}), "ActionParameterValueNotInList"),
        (json!({"PushType": 1}), "ActionParameterValueTypeError"),
        (
            json!({"PushType": "Press", "Force": true}),
            "ActionParameterUnknown",
        ),
    ] {
        let r = api.post(BUTTON, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids()[0], id, "{body}");
    }
    assert_eq!(api.get(SYS).await.body["PowerState"], "Off");
    // Other vendors have no such button.
    let dell = Api::own_endpoint("idrac9");
    let r = dell
        .post(
            "/redfish/v1/Systems/System.Embedded.1/Actions/Oem/Hpe/HpeComputerSystemExt.PowerButton",
            json!({"PushType": "Press"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// The CD is the Manager's VirtualMedia 2: iLO's own insert puts the
/// image in, `BootOnNextServerReset` makes it the one-time boot device
/// (and `false` withdraws that), iLO's eject takes it out.
#[tokio::test]
async fn ilo_inserts_by_its_own_action_and_boots_the_cd_once_on_next_reset() {
    let api = Api::own_endpoint("ilo5");
    let cd = api.get(CD).await;
    assert_eq!(cd.body["MediaTypes"], json!(["CD", "DVD"]));
    assert_eq!(cd.header("allow").as_deref(), Some("GET, PATCH"));
    let oem = &cd.body["Oem"]["Hpe"];
    assert_eq!(oem["BootOnNextServerReset"], false);
    let insert = oem["Actions"]["#HpeiLOVirtualMedia.InsertVirtualMedia"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let eject = oem["Actions"]["#HpeiLOVirtualMedia.EjectVirtualMedia"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        api.get("/redfish/v1/Managers/1/VirtualMedia/1").await.body["MediaTypes"],
        json!(["Floppy", "USBStick"])
    );
    let r = api
        .post(&insert, json!({"Image": "http://192.0.2.1/boot.iso"}))
        .await;
    assert!(r.status.is_success(), "{r}");
    assert_eq!(api.get(CD).await.body["Inserted"], true);

    let r = api
        .patch(CD, json!({"Oem": {"Hpe": {"BootOnNextServerReset": true}}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["Oem"]["Hpe"]["BootOnNextServerReset"], true);
    let boot = &api.get(SYS).await.body["Boot"];
    assert_eq!(
        (
            boot["BootSourceOverrideTarget"].as_str(),
            boot["BootSourceOverrideEnabled"].as_str()
        ),
        (Some("Cd"), Some("Once"))
    );
    let r = api
        .patch(
            CD,
            json!({"Oem": {"Hpe": {"BootOnNextServerReset": false}}}),
        )
        .await;
    assert_eq!(r.body["Oem"]["Hpe"]["BootOnNextServerReset"], false, "{r}");
    assert_eq!(
        api.get(SYS).await.body["Boot"]["BootSourceOverrideEnabled"],
        "Disabled"
    );

    for (path, body, id) in [
        (
            CD,
            json!({"Oem": {"Hpe": {"BootOnNextServerReset": "yes"}}}),
            "PropertyValueTypeError",
        ),
        (
            CD,
            json!({"Oem": {"Hpe": {"Other": true}}}),
            "PropertyUnknown",
        ),
        (
            CD,
            json!({"Image": "http://192.0.2.1/x.iso"}),
            "PropertyNotWritable",
        ),
        (CD, json!({}), "EmptyJSON"),
        (
            "/redfish/v1/Managers/1/VirtualMedia/1",
            json!({"Oem": {"Hpe": {"BootOnNextServerReset": true}}}),
            "PropertyValueNotInList",
        ),
    ] {
        let r = api.patch(path, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids()[0], id, "{body}");
    }
    assert_eq!(
        api.get(SYS).await.body["Boot"]["BootSourceOverrideEnabled"],
        "Disabled"
    );

    let r = api.post(&eject, json!({})).await;
    assert!(r.status.is_success(), "{r}");
    assert_eq!(api.get(CD).await.body["Inserted"], false);
    // iLO's actions are iLO's.
    let dell = Api::own_endpoint("idrac9");
    let r = dell
        .post(
            "/redfish/v1/Systems/System.Embedded.1/VirtualMedia/1/Actions/Oem/Hpe/HpeiLOVirtualMedia.InsertVirtualMedia",
            json!({"Image": "http://192.0.2.1/boot.iso"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// iLO's BIOS: the settings object takes a POST as well as a PATCH (what
/// proliantutils' set_http_boot_url sends), and the BIOS says the machine's
/// boot mode, which a setting cannot change. Elsewhere a POST is not
/// allowed.
#[tokio::test]
async fn ilo_bios_settings_take_a_post_and_show_the_boot_mode() {
    let api = Api::own_endpoint("ilo5");
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    assert_eq!(bios["Attributes"]["BootMode"], "Uefi");
    assert_eq!(bios["Attributes"]["UefiOptimizedBoot"], "Enabled");
    let settings = bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        api.get(&settings).await.header("allow").as_deref(),
        Some("GET, PATCH, POST")
    );
    let url = "https://192.0.2.1/boot.efi";
    let r = api
        .post(&settings, json!({"Attributes": {"PreBootNetwork": "Auto", "UrlBootFile": url, "Dhcpv4": "Enabled"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(
        api.get(&settings).await.body["Attributes"]["UrlBootFile"],
        url
    );
    for (attrs, id) in [
        (json!({"BootMode": "LegacyBios"}), "PropertyNotWritable"),
        (json!({"Dhcpv4": "Disabled"}), "PropertyValueNotInList"),
        (
            json!({"PreBootNetwork": "EmbNicPort9"}),
            "PropertyValueNotInList",
        ),
    ] {
        let r = api.post(&settings, json!({ "Attributes": attrs })).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{attrs}: {r}");
        assert_eq!(r.message_ids()[0], id, "{attrs}");
    }
    // iLO's settings object shows the whole set the next start has:
    // nothing of the refused bodies is in it.
    let pending = api.get(&settings).await.body;
    let a = &pending["Attributes"];
    assert_eq!(a["BootMode"], "Uefi", "nothing staged: {pending}");
    assert_ne!(a["Dhcpv4"], "Disabled", "nothing staged: {pending}");
    assert_ne!(
        a["PreBootNetwork"], "EmbNicPort9",
        "nothing staged: {pending}"
    );

    let dell = Api::own_endpoint("idrac9");
    let dell_settings = "/redfish/v1/Systems/System.Embedded.1/Bios/Settings";
    let r = dell
        .post(dell_settings, json!({"Attributes": {"UrlBootFile": url}}))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{r}");
    assert!(dell
        .get("/redfish/v1/Systems/System.Embedded.1/Bios")
        .await
        .body["Attributes"]
        .get("BootMode")
        .is_none());
}

/// An iLO 5 in front of a machine with three 480 GiB drives.
fn ilo_with_drives() -> Api {
    let mut sys = shoal_emulator::config::fake_systems(1).remove(0);
    sys.disks = (0..3)
        .map(|i| shoal_emulator::storage::Disk::new(format!("sd{i}"), 480 << 30))
        .collect();
    sys.bmc.storage = shoal_emulator::storage::StorageState::jbod(&sys.disks);
    Api::own_endpoint_of("ilo5", Default::default(), sys)
}

#[tokio::test]
async fn smart_storage_config_stages_logical_drives_for_the_next_reset_and_refuses_bad_ones() {
    let api = ilo_with_drives();
    let s = api.get("/redfish/v1/Systems/1").await.body;
    let ssc = s["Oem"]["Hpe"]["SmartStorageConfig"][0]["@odata.id"]
        .as_str()
        .expect("Oem.Hpe.SmartStorageConfig")
        .trim_end_matches('/')
        .to_string();
    let current = api.get(&ssc).await.body;
    assert_eq!(current["Location"], "Slot 0");
    assert_eq!(current["LogicalDrives"], json!([]));
    let settings = format!("{ssc}/settings");
    let before = api.get(&settings).await.body;
    for (body, want) in [
        (
            json!({"LogicalDrives": [{"Raid": "Raid1", "DataDrives": ["1I:1:1", "1I:1:9"]}]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"LogicalDrives": [{"Raid": "Raid50", "DataDrives": ["1I:1:1", "1I:1:2"]}]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"LogicalDrives": [{"Raid": "Raid5", "DataDrives": ["1I:1:1", "1I:1:2"]}]}),
            "PropertyValueConflict",
        ),
        (
            json!({"LogicalDrives": [{"Raid": "Raid0", "DataDrives": {"DataDriveCount": 4}}]}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"LogicalDrives": [{"Raid": "Raid0", "CapacityGiB": 5000, "DataDrives": ["1I:1:1"]}]}),
            "PropertyValueConflict",
        ),
        (
            json!({"LogicalDrives": [{"Raid": "Raid0", "DataDrives": ["1I:1:1"], "Spare": true}]}),
            "PropertyUnknown",
        ),
        (
            json!({"LogicalDrives": [{"Actions": [{"Action": "LogicalDriveDelete"}], "VolumeUniqueIdentifier": "600508B1001CFFFF"}]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"LogicalDrives": [], "DataGuard": "Loose"}),
            "PropertyValueNotInList",
        ),
        (json!({"DataGuard": "Disabled"}), "PropertyMissing"),
    ] {
        let r = api
            .req(Method::PUT, &settings, Some(body.clone()), &[])
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids()[0], want, "{body}: {r}");
    }
    assert_eq!(api.get(&settings).await.body, before, "nothing staged");
    // A RAID 1 over the first two drives (passed through until now), by
    // count: staged, then made by the reset.
    let r = api
        .req(
            Method::PUT,
            &settings,
            Some(json!({"DataGuard": "Disabled", "LogicalDrives": [
                {"Raid": "Raid1", "CapacityGiB": -1, "LogicalDriveName": "os",
                 "DataDrives": {"DataDriveCount": 2}}]})),
            &[],
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let pending = api.get(&settings).await.body;
    assert_eq!(
        pending["LogicalDrives"][0]["DataDrives"],
        json!(["1I:1:1", "1I:1:2"])
    );
    assert_eq!(
        api.get(&ssc).await.body["LogicalDrives"],
        json!([]),
        "not before the reset"
    );
    api.reset("/redfish/v1/Systems/1", "On").await;
    let current = api.get(&ssc).await.body;
    let ld = &current["LogicalDrives"][0];
    assert_eq!(
        (ld["Raid"].as_str(), ld["CapacityGiB"].as_u64()),
        (Some("Raid1"), Some(480))
    );
    assert!(current["@Redfish.Settings"]["Messages"][0]["MessageId"]
        .as_str()
        .unwrap()
        .ends_with("Success"));
    // The Smart Array's own view and the DMTF one agree.
    let lds = api
        .get("/redfish/v1/Systems/1/SmartStorage/ArrayControllers/0/LogicalDrives/1")
        .await
        .body;
    assert_eq!(lds["Raid"], "1");
    let vols = api
        .get("/redfish/v1/Systems/1/Storage/1/Volumes")
        .await
        .body;
    assert_eq!(
        vols["Members@odata.count"], 2,
        "the RAID 1 and the third drive: {vols}"
    );
    // Deleted by its identifier.
    let vuid = ld["VolumeUniqueIdentifier"].clone();
    let r = api
        .req(
            Method::PUT,
            &settings,
            Some(json!({"DataGuard": "Permissive", "LogicalDrives": [
                {"Actions": [{"Action": "LogicalDriveDelete"}], "VolumeUniqueIdentifier": vuid}]})),
            &[],
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    api.reset("/redfish/v1/Systems/1", "ForceRestart").await;
    assert_eq!(api.get(&ssc).await.body["LogicalDrives"], json!([]));
    // Not an iLO: not there.
    let dell = Api::own_endpoint("idrac9");
    let r = dell
        .get("/redfish/v1/Systems/System.Embedded.1/smartstorageconfig")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// iLO takes an action's own name as `Action` (HPE's iLOrest sends it);
/// another name is refused, and other profiles know no such parameter.
#[tokio::test]
async fn ilo_actions_take_their_own_name_as_action() {
    let api = Api::own_endpoint("ilo6");
    let reset = format!("{SYS}/Actions/ComputerSystem.Reset");
    let r = api
        .post(
            &reset,
            json!({"Action": "ComputerSystem.Reset", "ResetType": "ForceOff"}),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let r = api
        .post(
            &reset,
            json!({"Action": "Manager.Reset", "ResetType": "On"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["ActionParameterValueNotInList"], "{r}");
    let generic = Api::new(1);
    let sys = generic.system(0).await;
    let r = generic
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"Action": "ComputerSystem.Reset", "ResetType": "On"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["ActionParameterUnknown"], "{r}");
}
