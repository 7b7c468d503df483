//! iLO's own firmware path in-process, with the requests HPE's iLOrest
//! sends (`uploadcomp`, `flashfwpkg`, `taskqueue`, `listcomp`,
//! `deletecomp`): the multipart upload to `/cgi-bin/uploadFile`, the
//! ComponentRepository, the UpdateTaskQueue running its entries in
//! order, and every bad request refused with nothing kept or queued.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{json, Value};
use shoal_emulator::firmware::Component;

use crate::api_update::{image, multipart, push};
use crate::common::Api;

const SYS: &str = "/redfish/v1/Systems/1";
const UPLOAD: &str = "/cgi-bin/uploadFile";
const REPO: &str = "/redfish/v1/UpdateService/ComponentRepository";
const QUEUE: &str = "/redfish/v1/UpdateService/UpdateTaskQueue";

/// iLOrest's `parameters` part for `uploadcomp` (repository only) or a
/// flash (`flashfwpkg` of a BMC-updatable component).
fn parameters(repository: bool, target: bool, file: &str) -> String {
    json!({
        "UpdateRepository": repository,
        "UpdateTarget": target,
        "ETag": format!("sum{}", file.replace(['.', '-', '_'], "")),
        "Section": 0,
        "UpdateRecoverySet": false,
        "TPMOverride": false,
    })
    .to_string()
}

/// The upload as iLOrest posts it: sessionKey, parameters, file.
async fn upload(api: &Api, params: &str, file: &str, bytes: &[u8]) -> crate::common::Reply {
    let (ct, body) = multipart(&[
        ("sessionKey", None, b"0123456789abcdef"),
        ("parameters", None, params.as_bytes()),
        ("file", Some(file), bytes),
    ]);
    push(api, UPLOAD, &ct, body).await
}

/// Polls `path` until `key` reads `want`.
async fn until(api: &Api, path: &str, key: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = api.get(path).await.body;
        if v[key] == want {
            return v;
        }
        assert!(Instant::now() < deadline, "{path} {key} never {want}: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn queued(api: &Api, body: Value) -> String {
    let r = api.post(QUEUE, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
    let id = r.body["@odata.id"].as_str().unwrap().to_string();
    assert_eq!(r.headers["location"].to_str().unwrap(), id);
    id
}

fn nic(v: &Value) -> Value {
    v["Controllers"][0]["FirmwarePackageVersion"].clone()
}

#[tokio::test]
async fn ilorest_uploads_lists_and_queues_components_through_the_repository() {
    let api = Api::own_endpoint("ilo6");
    let svc = api.get("/redfish/v1/UpdateService/").await.body;
    assert_eq!(svc["Oem"]["Hpe"]["PushUpdateUri"], UPLOAD, "{svc}");
    assert_eq!(svc["HttpPushUri"], UPLOAD);
    assert_eq!(
        svc["Oem"]["Hpe"]["ComponentRepository"]["@odata.id"],
        format!("{REPO}/")
    );
    assert_eq!(
        svc["Oem"]["Hpe"]["UpdateTaskQueue"]["@odata.id"],
        format!("{QUEUE}/")
    );

    // uploadcomp: into the repository only, 200.
    let bios = image(Component::Bios, "1.62");
    let r = upload(
        &api,
        &parameters(true, false, "U54_1.62.fw"),
        "U54_1.62.fw",
        &bios,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let nic_img = image(Component::Nic, "22.41.1");
    let r = upload(&api, &parameters(true, false, "nic.fw"), "nic.fw", &nic_img).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    // listcomp: the collection expanded, as iLOrest reads it.
    let repo = api.get(&format!("{REPO}/?$expand=.")).await.body;
    let members = repo["Members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{repo}");
    let rom = members
        .iter()
        .find(|m| m["Filename"] == "U54_1.62.fw")
        .unwrap();
    assert_eq!(rom["Version"], "1.62");
    assert_eq!(rom["UpdatableBy"], json!(["Bmc"]));
    assert_eq!(rom["Locked"], false);
    assert_eq!(rom["SizeBytes"], bios.len());
    let nic_member = members.iter().find(|m| m["Filename"] == "nic.fw").unwrap();
    assert_eq!(nic_member["UpdatableBy"], json!(["Uefi"]));
    let file = api.get(rom["ComponentUri"].as_str().unwrap()).await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(
        file.body,
        Value::String(String::from_utf8_lossy(&bios).into())
    );

    // taskqueue create: the ROM by the iLO now (effective at the next
    // start), the NIC by UEFI at the next start, a wait behind it.
    let rom_task = queued(
        &api,
        json!({"Name": "Update-1", "Command": "ApplyUpdate", "Filename": "U54_1.62.fw",
               "UpdatableBy": ["Bmc"], "TPMOverride": false}),
    )
    .await;
    until(&api, &rom_task, "State", "Complete").await;
    let nic_task = queued(
        &api,
        json!({"Name": "Update-2", "Command": "ApplyUpdate", "Filename": "nic.fw",
               "UpdatableBy": ["Uefi"], "TPMOverride": false}),
    )
    .await;
    let wait = queued(
        &api,
        json!({"Name": "Wait-1 1 seconds", "Command": "Wait", "WaitTimeSeconds": 1,
               "UpdatableBy": ["Bmc"]}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(api.get(&nic_task).await.body["State"], "Pending");
    assert_eq!(
        api.get(&wait).await.body["State"],
        "Pending",
        "behind the NIC's"
    );
    // The component a pending entry needs stays.
    let r = api.delete(nic_member["@odata.id"].as_str().unwrap()).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{r}");
    assert_ne!(
        api.get(SYS).await.body["BiosVersion"],
        "1.62",
        "effective at the start"
    );
    api.reset(SYS, "On").await;
    until(&api, &nic_task, "State", "Complete").await;
    until(&api, &wait, "State", "Complete").await;
    assert_eq!(api.get(SYS).await.body["BiosVersion"], "1.62");
    let adapter = api.get("/redfish/v1/Chassis/1/NetworkAdapters/").await.body;
    let adapter = adapter["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(nic(&api.get(&adapter).await.body), "22.41.1");

    // taskqueue --cleanqueue, deletecomp.
    for id in [&rom_task, &nic_task, &wait] {
        assert_eq!(api.delete(id).await.status, StatusCode::NO_CONTENT);
    }
    assert_eq!(api.get(QUEUE).await.body["Members@odata.count"], 0);
    let r = api.delete(nic_member["@odata.id"].as_str().unwrap()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert_eq!(api.get(REPO).await.body["Members@odata.count"], 1);
}

/// flashfwpkg of a BMC-updatable component: the upload flashes it at once
/// (UpdateTarget), followed in `Oem.Hpe.State` as `firmwareupdate` is.
#[tokio::test]
async fn an_upload_that_targets_the_component_flashes_it() {
    let api = Api::own_endpoint("ilo6");
    let rom = image(Component::Bios, "1.70");
    let r = upload(&api, &parameters(false, true, "rom.fw"), "rom.fw", &rom).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen: Vec<String> = Vec::new();
    loop {
        let svc = api.get("/redfish/v1/UpdateService/").await.body;
        let state = svc["Oem"]["Hpe"]["State"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        if state == "Complete" || state == "Error" {
            break;
        }
        assert!(Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Complete"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s == "Updating"), "{seen:?}");
    // Not kept: UpdateRepository was false.
    assert_eq!(api.get(REPO).await.body["Members@odata.count"], 0);
    api.reset(SYS, "On").await;
    until(&api, SYS, "BiosVersion", "1.70").await;
}

/// Every bad request is refused, nothing kept or queued; a profile
/// without `[hpe]` has no such path.
#[tokio::test]
async fn bad_ilo_uploads_and_entries_are_refused() {
    let api = Api::own_endpoint("ilo6");
    let img = image(Component::Bios, "1.80");
    for (params, want) in [
        (
            r#"{"UpdateRepository": true, "Force": 1}"#.to_string(),
            "PropertyUnknown",
        ),
        (
            r#"{"UpdateRepository": true, "Section": 1}"#.to_string(),
            "PropertyValueNotInList",
        ),
        (
            r#"{"UpdateRepository": false, "UpdateTarget": false}"#.to_string(),
            "PropertyValueConflict",
        ),
        (
            r#"{"UpdateRepository": "yes"}"#.to_string(),
            "PropertyValueTypeError",
        ),
        ("not json".to_string(), "MalformedJSON"),
    ] {
        let r = upload(&api, &params, "rom.fw", &img).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{params}: {r}");
        assert_eq!(r.message_ids(), [want], "{params}: {r}");
    }
    let r = upload(
        &api,
        &parameters(true, false, "x.fw"),
        "x.fw",
        b"not firmware",
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    let (ct, body) = multipart(&[("parameters", None, parameters(true, false, "x").as_bytes())]);
    let r = push(&api, UPLOAD, &ct, body).await;
    assert_eq!(r.message_ids(), ["PropertyMissing"], "{r}");
    assert_eq!(api.get(REPO).await.body["Members@odata.count"], 0);

    for (body, want) in [
        (
            json!({"Name": "u", "Command": "ApplyUpdate", "Filename": "none.fw", "UpdatableBy": ["Bmc"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Name": "u", "Command": "Flash", "UpdatableBy": ["Bmc"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Name": "u", "Command": "Wait", "UpdatableBy": ["Bmc"]}),
            "PropertyMissing",
        ),
        (
            json!({"Name": "u", "Command": "Wait", "WaitTimeSeconds": -1, "UpdatableBy": ["Bmc"]}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"Command": "Wait", "WaitTimeSeconds": 1, "UpdatableBy": ["Bmc"]}),
            "PropertyMissing",
        ),
        (
            json!({"Name": "u", "Command": "Wait", "WaitTimeSeconds": 1}),
            "PropertyMissing",
        ),
        (
            json!({"Name": "u", "Command": "Wait", "WaitTimeSeconds": 1, "UpdatableBy": ["Os"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Name": "u", "Command": "Wait", "WaitTimeSeconds": 1, "UpdatableBy": ["Bmc"], "Extra": 1}),
            "PropertyUnknown",
        ),
    ] {
        let r = api.post(QUEUE, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [want], "{body}: {r}");
    }
    assert_eq!(api.get(QUEUE).await.body["Members@odata.count"], 0);
    // ResetServer needs HPE's agent in the OS: it stays Pending.
    let reset = queued(
        &api,
        json!({"Name": "Reboot-1", "Command": "ResetServer", "UpdatableBy": ["RuntimeAgent"]}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(api.get(&reset).await.body["State"], "Pending");

    let generic = Api::new(1);
    let r = upload(&generic, &parameters(true, false, "rom.fw"), "rom.fw", &img).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
    assert_eq!(generic.get(REPO).await.status, StatusCode::NOT_FOUND);
}

/// Polls the UpdateService until iLO's `Oem.Hpe.State` has finished.
async fn flashed(api: &Api) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let svc = api.get("/redfish/v1/UpdateService/").await.body;
        let state = &svc["Oem"]["Hpe"]["State"];
        if state == "Complete" || state == "Error" {
            return state.clone();
        }
        assert!(Instant::now() < deadline, "{svc}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pending UEFI entry's image waits for the start only while the entry
/// does: deleting the entry withdraws it, and an image flashed over it
/// before the start ends the entry in Exception.
#[tokio::test]
async fn a_pending_uefi_entry_deleted_or_replaced_does_not_install() {
    let api = Api::own_endpoint("ilo6");
    let adapter = api.get("/redfish/v1/Chassis/1/NetworkAdapters/").await.body;
    let adapter = adapter["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let factory = nic(&api.get(&adapter).await.body);
    let img = image(Component::Nic, "22.41.1");
    let r = upload(&api, &parameters(true, false, "nic.fw"), "nic.fw", &img).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let apply = json!({"Name": "Update-1", "Command": "ApplyUpdate", "Filename": "nic.fw",
                       "UpdatableBy": ["Uefi"], "TPMOverride": false});

    // Deleted while pending: the start installs nothing.
    let entry = queued(&api, apply.clone()).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(api.get(&entry).await.body["State"], "Pending");
    assert_eq!(api.delete(&entry).await.status, StatusCode::NO_CONTENT);
    api.reset(SYS, "On").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(nic(&api.get(&adapter).await.body), factory, "withdrawn");
    api.reset(SYS, "ForceOff").await;

    // Replaced while pending by a flashed image: Exception, and the start
    // installs the later image.
    let entry = queued(&api, apply).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(api.get(&entry).await.body["State"], "Pending");
    let later = image(Component::Nic, "22.50.0");
    let r = upload(&api, &parameters(false, true, "nic2.fw"), "nic2.fw", &later).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(flashed(&api).await, "Complete");
    let e = until(&api, &entry, "State", "Exception").await;
    assert_eq!(e["Result"]["MessageId"], "iLO.2.14.UpdateFailed", "{e}");
    api.reset(SYS, "On").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while nic(&api.get(&adapter).await.body) != "22.50.0" {
        assert!(Instant::now() < deadline, "the later image installs");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
