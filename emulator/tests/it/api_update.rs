//! The UpdateService in-process: SimpleUpdate's task moving New →
//! Starting → Running → Completed, the versions following the core's
//! firmware state at each apply time, a BMC restarting into its new
//! firmware, and every bad request refused with nothing staged. Images
//! come from a loopback server the address policy is told to allow.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{json, Value};
use shoal_emulator::api::update::UpdateOptions;
use shoal_emulator::backend::download::MediaOptions;
use shoal_emulator::firmware::Component;
use shoal_emulator::netpolicy::AddressPolicy;
use shoal_emulator::profile::Profiles;

use crate::common::{file_server, Api};

const SIMPLE: &str = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate";

pub(crate) fn image(component: Component, version: &str) -> Vec<u8> {
    shoal_harness::firmware::image(
        component.as_str(),
        version,
        Some("2026-11-02"),
        format!("{component} {version} payload").as_bytes(),
    )
}

/// A profile whose updates are quick and whose BMC is back in a second.
fn quick_profiles(update: &str) -> Profiles {
    let dir = tempfile::tempdir().unwrap();
    crate::common::quick_update_profile(dir.path(), update, "");
    Profiles::load(Some(dir.path())).unwrap()
}

/// A service of one system with the quick profile, which its root speaks
/// for (as `server` sets it for systems that share one).
fn quick() -> Api {
    quick_with(
        "apply_secs = 0.3\nnew_secs = 0.2\nbmc_down_secs = 1\n\
         http_push_uri = \"/redfish/v1/UpdateService/update\"\n",
    )
}

/// The same with the profile's `[update]` rows `update`.
fn quick_with(update: &str) -> Api {
    let profiles = quick_profiles(update);
    let api = Api::profiled("quick", profiles.clone());
    let mut state = api.state;
    state.root_profile = profiles.get("quick").unwrap();
    Api::of_state(state)
}

/// `api` fetching images from loopback.
fn fetching(api: Api) -> Api {
    let mut state = api.state;
    state.updates = Arc::new(UpdateOptions::new(MediaOptions {
        cache: std::env::temp_dir(),
        max_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
        insecure: false,
        addresses: AddressPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            ..AddressPolicy::default()
        },
    }));
    Api::of_state(state)
}

/// Polls the task monitor until it stops answering 202; the task states
/// seen on the way (from the Task itself), and the Task at the end.
async fn follow(api: &Api, monitor: &str, task: &str) -> (Vec<String>, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen: Vec<String> = Vec::new();
    loop {
        let t = api.get(task).await.body;
        let state = t["TaskState"].as_str().unwrap_or_default().to_string();
        if seen.last() != Some(&state) {
            seen.push(state);
        }
        if api.get(monitor).await.status != StatusCode::ACCEPTED {
            let t = api.get(task).await.body;
            let last = t["TaskState"].as_str().unwrap_or_default().to_string();
            if seen.last() != Some(&last) {
                seen.push(last);
            }
            return (seen, t);
        }
        assert!(Instant::now() < deadline, "task still running: {seen:?}");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// Waits for task `task` to be Running.
async fn until_running(api: &Api, task: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.get(task).await.body["TaskState"] != "Running" {
        assert!(Instant::now() < deadline, "never Running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts an update; its monitor and task URIs.
async fn update(api: &Api, body: Value) -> (String, String) {
    let r = api.post(SIMPLE, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    assert_eq!(r.body["TaskState"], "New", "{r}");
    assert!(r.headers.contains_key("retry-after"));
    (monitor, task)
}

fn message_ids(task: &Value) -> Vec<String> {
    task["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["MessageId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_immediate_bios_update_runs_its_states_and_the_versions_follow() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "2.19.1"))]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "1.0.0");
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/bios.fw"), "@Redfish.OperationApplyTime": "Immediate"}),
    )
    .await;
    let (seen, t) = follow(&api, &monitor, &task).await;
    assert_eq!(seen.first().map(String::as_str), Some("New"), "{seen:?}");
    assert!(seen.iter().any(|s| s == "Running"), "{seen:?}");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Completed"),
        "{seen:?}"
    );
    assert_eq!(t["TaskStatus"], "OK");
    assert_eq!(t["PercentComplete"], 100);
    let ids = message_ids(&t);
    assert!(
        ids.iter()
            .any(|i| i == "Update.1.0.TransferringToComponent"),
        "{ids:?}"
    );
    assert_eq!(
        ids.last().unwrap(),
        "Update.1.0.UpdateSuccessful",
        "{ids:?}"
    );
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "2.19.1");
    let inv = api
        .get("/redfish/v1/UpdateService/FirmwareInventory/BIOS")
        .await
        .body;
    assert_eq!(inv["Version"], "2.19.1");
    assert_eq!(inv["ReleaseDate"], "2026-11-02T00:00:00Z");
    assert_eq!(inv["RelatedItem"][0]["@odata.id"], sys);
}

/// Without an apply time a BIOS image waits for the machine's next start
/// (Ironic reboots for it); the NIC's too.
#[tokio::test]
async fn a_host_image_waits_for_the_next_start() {
    let base = file_server(vec![
        ("/bios.fw", image(Component::Bios, "3.0")),
        ("/nic.fw", image(Component::Nic, "23.0.1")),
    ]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    for file in ["bios.fw", "nic.fw"] {
        let (monitor, task) = update(&api, json!({"ImageURI": format!("{base}/{file}")})).await;
        let (_, t) = follow(&api, &monitor, &task).await;
        assert_eq!(t["TaskState"], "Completed", "{t}");
        assert_eq!(
            message_ids(&t).last().unwrap(),
            "Update.1.0.AwaitToActivate"
        );
    }
    let adapter =
        "/redfish/v1/Chassis/".to_string() + sys.rsplit('/').next().unwrap() + "/NetworkAdapters/1";
    let nic = |v: &Value| v["Controllers"][0]["FirmwarePackageVersion"].clone();
    assert_eq!(
        api.get(&sys).await.body["BiosVersion"],
        "1.0.0",
        "staged only"
    );
    assert_eq!(nic(&api.get(&adapter).await.body), "22.31.6");
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On"}),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.get(&sys).await.body["BiosVersion"] != "3.0" {
        assert!(Instant::now() < deadline, "the start installed nothing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(nic(&api.get(&adapter).await.body), "23.0.1");
}

/// A staged image is in the BMC's staging area before its task ends: a
/// reset while the task is Running installs it (Ironic resets the host
/// when it sees its BIOS update Running), and the task then ends saying
/// it went through rather than that it waits.
#[tokio::test]
async fn a_reset_while_the_task_runs_installs_the_staged_image() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "3.1"))]);
    let api = fetching(quick_with(
        "apply_secs = 2\napply_spread = 0\nnew_secs = 0\n",
    ));
    let sys = api.system(0).await;
    let (monitor, task) = update(&api, json!({"ImageURI": format!("{base}/bios.fw")})).await;
    until_running(&api, &task).await;
    for reset in ["ForceOff", "On"] {
        let r = api
            .post(
                &format!("{sys}/Actions/ComputerSystem.Reset"),
                json!({"ResetType": reset}),
            )
            .await;
        assert!(r.status.is_success(), "{r}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.get(&sys).await.body["BiosVersion"] != "3.1" {
        assert!(Instant::now() < deadline, "the start installed nothing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = api.get(&task).await.body;
    assert_eq!(
        running["TaskState"], "Running",
        "installed before the task ended: {running}"
    );
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    assert_eq!(
        message_ids(&t).last().unwrap(),
        "Update.1.0.UpdateSuccessful",
        "{t}"
    );
}

/// The BMC writes its own image, restarts (its system answers 503 while
/// it is away) and comes back running it.
#[tokio::test]
async fn a_bmc_update_restarts_the_bmc_into_the_new_version() {
    let base = file_server(vec![("/bmc.fw", image(Component::Bmc, "9.9.9"))]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    let manager = api.get(&sys).await.body["Links"]["ManagedBy"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/bmc.fw"), "Targets": [manager]}),
    )
    .await;
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    assert_eq!(api.get(&manager).await.body["FirmwareVersion"], "1.0.0");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut away = false;
    loop {
        let r = api.get(&manager).await;
        away |= r.status == StatusCode::SERVICE_UNAVAILABLE;
        if r.status == StatusCode::OK && r.body["FirmwareVersion"] == "9.9.9" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the BMC never came back new: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(away, "the BMC restarted without going away");
}

/// An image that is not Shoal's, whose payload fails its digest, that is
/// for another component than the target, or that is not there: the task
/// ends in Exception with the Update registry's message, nothing staged.
#[tokio::test]
async fn a_bad_image_fails_the_task_and_stages_nothing() {
    let mut corrupt = image(Component::Bios, "6.6");
    *corrupt.last_mut().unwrap() ^= 0x20;
    let base = file_server(vec![
        ("/random.bin", b"MZ\x90\x00 not firmware".to_vec()),
        ("/corrupt.fw", corrupt),
        ("/nic.fw", image(Component::Nic, "1.2")),
    ]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    for (file, target, want) in [
        ("random.bin", None, "Update.1.0.VerificationFailed"),
        ("corrupt.fw", None, "Update.1.0.VerificationFailed"),
        (
            "nic.fw",
            Some("/redfish/v1/UpdateService/FirmwareInventory/BIOS"),
            "Update.1.0.VerificationFailed",
        ),
        ("missing.fw", None, "Update.1.0.TransferFailed"),
    ] {
        let mut body = json!({"ImageURI": format!("{base}/{file}")});
        if let Some(t) = target {
            body["Targets"] = json!([t]);
        }
        let (monitor, task) = update(&api, body).await;
        let (_, t) = follow(&api, &monitor, &task).await;
        assert_eq!(t["TaskState"], "Exception", "{file}: {t}");
        assert_eq!(t["TaskStatus"], "Critical", "{file}");
        assert!(message_ids(&t).iter().any(|i| i == want), "{file}: {t}");
        let r = api.get(&monitor).await;
        assert!(r.status.is_client_error(), "{file}: the monitor says {r}");
    }
    let s = api.get(&sys).await.body;
    assert_eq!(s["BiosVersion"], "1.0.0");
    let state = &api
        .state
        .core
        .backend
        .system(sys.rsplit('/').next().unwrap())
        .await
        .unwrap();
    assert!(state.bmc.firmware.staged.is_empty() && state.bmc.firmware.installed.is_empty());
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_starts() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "2.0"))]);
    let api = fetching(Api::new(2));
    let url = format!("{base}/bios.fw");
    let sys = api.system(0).await;
    let other = api.system(1).await;
    for (body, want) in [
        (json!({}), "ActionParameterMissing"),
        (
            json!({"ImageURI": 7, "Targets": [sys]}),
            "ActionParameterValueTypeError",
        ),
        (
            json!({"ImageURI": "bios.fw", "Targets": [sys]}),
            "ActionParameterValueFormatError",
        ),
        (
            json!({"ImageURI": "ftp://h/bios.fw", "Targets": [sys]}),
            "ActionParameterValueFormatError",
        ),
        (
            json!({"ImageURI": url, "TransferProtocol": "NFS", "Targets": [sys]}),
            "ActionParameterValueNotInList",
        ),
        (
            json!({"ImageURI": url, "Targets": ["/redfish/v1/Systems/nope"]}),
            "ActionParameterValueNotInList",
        ),
        (
            json!({"ImageURI": url, "Targets": sys}),
            "ActionParameterValueTypeError",
        ),
        (
            json!({"ImageURI": url, "Targets": [sys, other]}),
            "ActionParameterValueConflict",
        ),
        // Two systems: which one is the client's?
        (json!({"ImageURI": url}), "ActionParameterMissing"),
        (
            json!({"ImageURI": url, "Targets": [sys], "@Redfish.OperationApplyTime": "AtMaintenanceWindowStart"}),
            "ActionParameterValueNotInList",
        ),
        (
            json!({"ImageURI": url, "Targets": [sys], "Force": true}),
            "ActionParameterUnknown",
        ),
    ] {
        let r = api.post(SIMPLE, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [want], "{body}: {r}");
    }
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert_eq!(tasks["Members@odata.count"], 0, "nothing started: {tasks}");
    // One update of a system at a time; another system's may run.
    let (monitor, task) = update(&api, json!({"ImageURI": url, "Targets": [sys]})).await;
    let r = api
        .post(SIMPLE, json!({"ImageURI": url, "Targets": [sys]}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{r}");
    update(&api, json!({"ImageURI": url, "Targets": [other]})).await;
    follow(&api, &monitor, &task).await;
    // Nothing waits for StartUpdate.
    let r = api
        .post(
            "/redfish/v1/UpdateService/Actions/UpdateService.StartUpdate",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
}

/// OnStartUpdateRequest: staged until StartUpdate, then installed.
#[tokio::test]
async fn start_update_installs_what_waits_for_it() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "4.1"))]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/bios.fw"),
               "@Redfish.OperationApplyTime": "OnStartUpdateRequest"}),
    )
    .await;
    follow(&api, &monitor, &task).await;
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "1.0.0");
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    let start = svc["Actions"]["#UpdateService.StartUpdate"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api.post(&start, json!({})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "4.1");
    let inv = api
        .get("/redfish/v1/UpdateService/FirmwareInventory")
        .await
        .body;
    assert_eq!(inv["Members@odata.count"], 3, "BIOS, BMC, NIC: {inv}");
}

const UPLOAD: &str = "/redfish/v1/UpdateService/upload";

/// A multipart body of `parts` (name, file name, bytes) and its
/// Content-Type.
pub(crate) fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "shoal-b0undary";
    let mut body = Vec::new();
    for (name, file, bytes) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let disposition = match file {
            Some(f) => format!("form-data; name=\"{name}\"; filename=\"{f}\""),
            None => format!("form-data; name=\"{name}\""),
        };
        body.extend_from_slice(format!("Content-Disposition: {disposition}\r\n\r\n").as_bytes());
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) async fn push(
    api: &Api,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> crate::common::Reply {
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(path)
        .header("Content-Type", content_type)
        .body(axum::body::Body::from(body))
        .unwrap();
    api.raw(req).await
}

/// MultipartHttpPushUri: UpdateParameters and UpdateFile, as DMTF,
/// bmcweb, iDRAC and community.general send them.
#[tokio::test]
async fn a_multipart_upload_updates_like_a_simple_update() {
    let api = quick();
    let sys = api.system(0).await;
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    assert_eq!(svc["MultipartHttpPushUri"], UPLOAD);
    let params = br#"{"Targets": [], "@Redfish.OperationApplyTime": "Immediate"}"#;
    let img = image(Component::Bios, "5.0.2");
    let (ct, body) = multipart(&[
        ("UpdateParameters", None, params),
        ("UpdateFile", Some("bios.fw"), &img),
    ]);
    let r = push(&api, UPLOAD, &ct, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "5.0.2");
}

#[tokio::test]
async fn bad_uploads_are_refused_and_stage_nothing() {
    let api = quick();
    let sys = api.system(0).await;
    let img = image(Component::Bios, "7.0");
    let params: &[u8] = br#"{"Targets": []}"#;
    let cases: Vec<(String, Vec<u8>, StatusCode, &str)> = vec![
        {
            let (ct, b) = multipart(&[("UpdateParameters", None, params)]);
            (ct, b, StatusCode::BAD_REQUEST, "PropertyMissing")
        },
        {
            let (ct, b) = multipart(&[("UpdateFile", Some("f"), &img)]);
            (ct, b, StatusCode::BAD_REQUEST, "PropertyMissing")
        },
        {
            let (ct, b) = multipart(&[
                (
                    "UpdateParameters",
                    None,
                    br#"{"Targets": [], "Reboot": true}"#,
                ),
                ("UpdateFile", Some("f"), &img),
            ]);
            (ct, b, StatusCode::BAD_REQUEST, "PropertyUnknown")
        },
        {
            let (ct, b) = multipart(&[
                (
                    "UpdateParameters",
                    None,
                    br#"{"Targets": ["/redfish/v1/Chassis/x"]}"#,
                ),
                ("UpdateFile", Some("f"), &img),
            ]);
            (ct, b, StatusCode::BAD_REQUEST, "PropertyValueNotInList")
        },
        {
            let (ct, b) = multipart(&[
                ("UpdateParameters", None, b"[1]"),
                ("UpdateFile", Some("f"), &img),
            ]);
            (ct, b, StatusCode::BAD_REQUEST, "PropertyValueTypeError")
        },
        {
            let (ct, mut b) = multipart(&[("UpdateFile", Some("f"), &img)]);
            b.truncate(b.len() - 8);
            (ct, b, StatusCode::BAD_REQUEST, "MissingOrMalformedPart")
        },
        (
            "application/octet-stream".into(),
            img.clone(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnrecognizedRequestBody",
        ),
        {
            let big = vec![0u8; 33 << 20];
            let (ct, b) = multipart(&[
                ("UpdateParameters", None, params),
                ("UpdateFile", Some("f"), &big),
            ]);
            (ct, b, StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge")
        },
    ];
    for (ct, body, status, want) in cases {
        let r = push(&api, UPLOAD, &ct, body).await;
        assert_eq!(r.status, status, "{want}: {r}");
        assert_eq!(r.message_ids(), [want], "{r}");
    }
    let r = push(
        &api,
        "/redfish/v1/UpdateService/elsewhere",
        "application/octet-stream",
        img,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert_eq!(tasks["Members@odata.count"], 0, "nothing started: {tasks}");
    // An upload that is no Shoal image fails its task.
    let (ct, body) = multipart(&[
        ("UpdateParameters", None, params),
        ("UpdateFile", Some("x.bin"), b"\x7fELF not firmware"),
    ]);
    let r = push(&api, UPLOAD, &ct, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Exception", "{t}");
    assert!(
        message_ids(&t)
            .iter()
            .any(|m| m == "Update.1.0.VerificationFailed"),
        "{t}"
    );
    assert_eq!(
        api.get(&monitor).await.message_ids(),
        ["MissingOrMalformedPart"]
    );
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "1.0.0");
}

/// HttpPushUri (bmcweb's `/update`): the image is the body, installed at
/// once; a BMC image restarts the BMC into it.
#[tokio::test]
async fn an_http_push_installs_at_once() {
    let api = quick();
    let sys = api.system(0).await;
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    let uri = svc["HttpPushUri"].as_str().unwrap().to_string();
    let r = push(
        &api,
        &uri,
        "application/octet-stream",
        image(Component::Nic, "30.1"),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    let adapter =
        "/redfish/v1/Chassis/".to_string() + sys.rsplit('/').next().unwrap() + "/NetworkAdapters/1";
    let nic = api.get(&adapter).await.body;
    assert_eq!(
        nic["Controllers"][0]["FirmwarePackageVersion"], "30.1",
        "{nic}"
    );
    let r = push(
        &api,
        &uri,
        "multipart/form-data; boundary=x",
        image(Component::Nic, "30.2"),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{r}");
}

/// An iDRAC's update task answers `New` first and stays so a while
/// (Ironic's fix-firmware-update-new-task-state: Ironic took `New` for a
/// failure); its multipart URI is Dell's.
#[tokio::test]
async fn an_idrac_update_is_new_at_first() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "1.14.0"))]);
    let api = fetching(Api::own_endpoint("idrac9"));
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    assert_eq!(
        svc["MultipartHttpPushUri"],
        "/redfish/v1/UpdateService/MultipartUpload"
    );
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/bios.fw"), "@Redfish.OperationApplyTime": "Immediate"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(api.get(&task).await.body["TaskState"], "New");
    assert_eq!(api.get(&monitor).await.status, StatusCode::ACCEPTED);
    let (seen, _) = follow(&api, &monitor, &task).await;
    // Installed at once: it went Running once verified.
    assert_eq!(seen, ["New", "Running", "Completed"], "{seen:?}");
}

/// bmcweb fetches over HTTPS only: sushy's default `HTTP` is refused.
#[tokio::test]
async fn openbmc_takes_https_image_uris_only() {
    let api = Api::own_endpoint("openbmc");
    let r = api
        .post(
            SIMPLE,
            json!({"ImageURI": "https://images.example/bmc.fw", "TransferProtocol": "HTTP"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["ActionParameterValueNotInList"]);
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    assert_eq!(svc["HttpPushUri"], "/redfish/v1/UpdateService/update");
    assert_eq!(
        svc["MultipartHttpPushUri"],
        "/redfish/v1/UpdateService/update-multipart"
    );
}

/// An iDRAC runs the update as a Lifecycle Controller job: the Task's Id
/// is the JID; once the BIOS image is staged the Task answers 404 while
/// the job waits Scheduled in the job queue, which is what Ironic's
/// redfish firmware interface then looks for before it reboots (Ironic's
/// fix-bios-update-silent-fail and fix-dell-silent-failure); the host's
/// start installs the image and completes the job.
#[tokio::test]
async fn an_idrac_update_leaves_its_task_for_a_scheduled_job() {
    let base = file_server(vec![
        ("/bios.fw", image(Component::Bios, "1.15.1")),
        ("/bad.fw", b"not an update package".to_vec()),
    ]);
    let api = fetching(Api::own_endpoint("idrac9"));
    let sys = "/redfish/v1/Systems/System.Embedded.1";
    let (_, task) = update(&api, json!({"ImageURI": format!("{base}/bios.fw")})).await;
    let jid = task.rsplit('/').next().unwrap().to_string();
    assert!(jid.starts_with("JID_"), "{task}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = api.get(&task).await;
        if r.status == StatusCode::NOT_FOUND {
            break;
        }
        assert!(r.status.is_success(), "{r}");
        // New until it is gone: never Starting or Running (Ironic would
        // reset the host before the job is scheduled).
        assert_eq!(r.body["TaskState"], "New", "{r}");
        assert!(Instant::now() < deadline, "the task never went: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let manager = api.get("/redfish/v1/Managers/iDRAC.Embedded.1").await.body;
    let jobs = manager["Links"]["Oem"]["Dell"]["Jobs"]["@odata.id"]
        .as_str()
        .expect("the Manager links its job queue")
        .to_string();
    let job = api.get(&format!("{jobs}/{jid}")).await.body;
    assert_eq!(job["JobState"], "Scheduled", "{job}");
    assert_eq!(job["MessageId"], "JCP001", "{job}");
    assert_eq!(job["JobType"], "FirmwareUpdate", "{job}");
    let listed = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert!(!listed.to_string().contains(&jid), "{listed}");
    assert_eq!(api.get(sys).await.body["BiosVersion"], "1.13.2");
    api.reset(sys, "On").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.get(&format!("{jobs}/{jid}")).await.body["JobState"] != "Completed" {
        assert!(Instant::now() < deadline, "the start completed no job");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(api.get(sys).await.body["BiosVersion"], "1.15.1");
    assert_eq!(api.get(&task).await.body["TaskState"], "Completed");
    // A package that fails its check fails its job (RED007).
    let (monitor, task) = update(&api, json!({"ImageURI": format!("{base}/bad.fw")})).await;
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Exception", "{t}");
    let jid = task.rsplit('/').next().unwrap();
    let job = api.get(&format!("{jobs}/{jid}")).await.body;
    assert_eq!(job["JobState"], "Failed", "{job}");
    assert_eq!(job["MessageId"], "RED007", "{job}");
}

/// Update faults: a task that hangs in Running until the BMC restarts
/// (which ends it in Exception, nothing installed), and one whose write
/// fails; an image the rule's path does not select goes through.
#[tokio::test]
async fn update_faults_hang_or_fail_the_task() {
    use shoal_emulator::faults::{FaultConfig, Rule, UPDATE};
    let base = file_server(vec![
        ("/stuck.fw", image(Component::Bios, "8.0")),
        ("/fails.fw", image(Component::Bios, "8.1")),
        ("/fine.fw", image(Component::Bios, "8.2")),
    ]);
    let api = fetching(quick());
    let sys = api.system(0).await;
    let rule = |path: &str| Rule {
        methods: vec![UPDATE.into()],
        path: Some(path.into()),
        ..Rule::default()
    };
    api.state.core.faults.replace(FaultConfig {
        seed: 1,
        rules: vec![Rule {
            stuck_rate: 1.0,
            ..rule("/stuck.fw")
        }],
    });
    let now = json!("Immediate");
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/stuck.fw"), "@Redfish.OperationApplyTime": now}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = api.get(&task).await.body;
    assert_eq!(t["TaskState"], "Running", "{t}");
    assert!(t["PercentComplete"].as_u64().unwrap() < 100, "{t}");
    let manager = api.get(&sys).await.body["Links"]["ManagedBy"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .post(
            &format!("{manager}/Actions/Manager.Reset"),
            json!({"ResetType": "GracefulRestart"}),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Exception", "{t}");
    assert!(
        message_ids(&t)
            .iter()
            .any(|m| m == "Update.1.0.ApplyFailed"),
        "{t}"
    );
    // On a BMC that is up: the failing write, then a clean one.
    let api = fetching(quick());
    api.state.core.faults.replace(FaultConfig {
        seed: 1,
        rules: vec![Rule {
            error_rate: 1.0,
            ..rule("/fails.fw")
        }],
    });
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/fails.fw"), "@Redfish.OperationApplyTime": now}),
    )
    .await;
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Exception", "{t}");
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "1.0.0");
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": format!("{base}/fine.fw"), "@Redfish.OperationApplyTime": now}),
    )
    .await;
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "8.2");
}

/// iLO, as `ilorest firmwareupdate` drives it: SimpleUpdate with HPE's
/// `Action` and `TPMOverrideFlag` answers 200 (iLO's extended info, the
/// task's monitor in Location), and the UpdateService's `Oem.Hpe.State`
/// goes from Idle through Updating (FlashProgressPercent moving) to
/// Complete.
#[tokio::test]
async fn an_ilo_update_is_followed_in_the_update_services_state() {
    let base = file_server(vec![
        ("/bios.fw", image(Component::Bios, "U46 v2.90")),
        ("/bad.fw", b"not firmware".to_vec()),
    ]);
    let api = fetching(Api::own_endpoint("ilo5"));
    let svc = "/redfish/v1/UpdateService";
    let hpe = |v: &Value| v["Oem"]["Hpe"].clone();
    assert_eq!(hpe(&api.get(svc).await.body)["State"], "Idle");
    let r = api
        .post(
            SIMPLE,
            json!({"Action": "SimpleUpdate", "ImageURI": format!("{base}/bios.fw"), "TPMOverrideFlag": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(
        r.body["error"]["@Message.ExtendedInfo"][0]["MessageId"],
        "Base.1.4.Success"
    );
    assert!(r.headers.contains_key("location"), "{r}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let h = hpe(&api.get(svc).await.body);
        let state = h["State"].as_str().unwrap().to_string();
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        if state == "Complete" {
            assert_eq!(h["FlashProgressPercent"], 100);
            break;
        }
        assert!(Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen.iter().any(|s| s == "Updating"), "{seen:?}");
    let r = api
        .post(
            SIMPLE,
            json!({"Action": "SimpleUpdate", "ImageURI": format!("{base}/bad.fw")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while hpe(&api.get(svc).await.body)["State"] != "Error" {
        assert!(Instant::now() < deadline, "no Error state");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let h = hpe(&api.get(svc).await.body);
    assert_eq!(
        h["Result"]["MessageId"], "Update.1.0.VerificationFailed",
        "{h}"
    );
    // Elsewhere, HPE's parameters are unknown.
    let api = fetching(quick());
    let r = api
        .post(
            SIMPLE,
            json!({"Action": "SimpleUpdate", "ImageURI": format!("{base}/bios.fw")}),
        )
        .await;
    assert_eq!(r.message_ids(), ["ActionParameterUnknown"], "{r}");
}

/// Dell's DeviceFirmwareSimpleUpdateREDFISH.py: the package is POSTed to
/// the HttpPushUri (the FirmwareInventory) as a multipart `file`, with
/// If-Match set to the collection's ETag; the 201 names an Available
/// member, which SimpleUpdate's ImageURI then names; the job's Task
/// follows (its Id the JID). A stale ETag or a package that is no image
/// is refused and keeps nothing; DELETE removes an upload.
#[tokio::test]
async fn an_idrac_takes_an_uploaded_package_then_installs_it() {
    let api = Api::own_endpoint("idrac9");
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    let push = svc["HttpPushUri"].as_str().unwrap().to_string();
    assert_eq!(push, "/redfish/v1/UpdateService/FirmwareInventory");
    let etag = api.get(&push).await.headers["etag"]
        .to_str()
        .unwrap()
        .to_string();
    let upload = |etag: String, body: Vec<u8>| {
        let (ct, body) = multipart(&[("file", Some("BIOS_XYZ.EXE"), &body)]);
        let req = axum::http::Request::builder()
            .method("POST")
            .uri(&push)
            .header("Content-Type", ct)
            .header("If-Match", etag)
            .body(axum::body::Body::from(body))
            .unwrap();
        api.raw(req)
    };
    let r = upload("\"stale\"".into(), image(Component::Bios, "1.16.0")).await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "{r}");
    let r = upload(etag.clone(), b"MZ not a package".to_vec()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    let r = upload(etag, image(Component::Bios, "1.16.0")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
    let id = r.body["Id"].as_str().unwrap().to_string();
    assert_eq!(id, "Available-BIOS-1.16.0");
    let location = r.headers["location"].to_str().unwrap().to_string();
    assert_eq!(api.get(&location).await.body["Version"], "1.16.0");
    let listed = api.get(&push).await.body;
    assert!(listed.to_string().contains(&id), "{listed}");
    // As the script: the member's path as ImageURI, installed at once.
    let r = api
        .post(
            SIMPLE,
            json!({"ImageURI": format!("{push}/{id}"), "@Redfish.OperationApplyTime": "Immediate"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    assert!(task.contains("JID_"), "{task}");
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    let (_, t) = follow(&api, &monitor, &task).await;
    assert_eq!(t["TaskState"], "Completed", "{t}");
    let sys = api.get("/redfish/v1/Systems/System.Embedded.1").await.body;
    assert_eq!(sys["BiosVersion"], "1.16.0");
    assert_eq!(
        api.get(&location).await.status,
        StatusCode::NOT_FOUND,
        "spent"
    );
    // Another upload, deleted.
    let etag = api.get(&push).await.headers["etag"]
        .to_str()
        .unwrap()
        .to_string();
    let r = upload(etag, image(Component::Nic, "23.1")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
    let nic = r.headers["location"].to_str().unwrap().to_string();
    assert_eq!(api.delete(&nic).await.status, StatusCode::NO_CONTENT);
    assert_eq!(api.get(&nic).await.status, StatusCode::NOT_FOUND);
}

/// Where one service serves several systems, each has its own members
/// (`{system}-BIOS`, …), a target names one system's component, and the
/// others are untouched; without a target the request is ambiguous.
#[tokio::test]
async fn a_fleet_service_updates_the_system_its_target_names() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "4.1"))]);
    let api = fetching(Api::new(3));
    let (one, two) = (api.system(0).await, api.system(1).await);
    let id2 = two.rsplit('/').next().unwrap().to_string();
    let inv = api
        .get("/redfish/v1/UpdateService/FirmwareInventory")
        .await
        .body;
    assert_eq!(inv["Members@odata.count"], 9, "{inv}");
    let member = format!("/redfish/v1/UpdateService/FirmwareInventory/{id2}-BMC");
    let bmc = api.get(&member).await;
    assert_eq!(bmc.status, StatusCode::OK, "{bmc}");
    assert_eq!(
        bmc.body["RelatedItem"][0]["@odata.id"],
        format!("/redfish/v1/Managers/{id2}")
    );
    let missing = api
        .get("/redfish/v1/UpdateService/FirmwareInventory/nope-BMC")
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{missing}");

    let image_uri = format!("{base}/bios.fw");
    let (monitor, task) = update(
        &api,
        json!({"ImageURI": image_uri, "Targets": [two], "@Redfish.OperationApplyTime": "Immediate"}),
    )
    .await;
    let (seen, _) = follow(&api, &monitor, &task).await;
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Completed"),
        "{seen:?}"
    );
    assert_eq!(api.get(&two).await.body["BiosVersion"], "4.1");
    assert_ne!(api.get(&one).await.body["BiosVersion"], "4.1");
    let bios = api
        .get(&format!(
            "/redfish/v1/UpdateService/FirmwareInventory/{id2}-BIOS"
        ))
        .await;
    assert_eq!(bios.body["Version"], "4.1", "{bios}");
}

/// AMI MegaRAC serves Redfish again before its update service is ready:
/// back from the restart into its new firmware, a multipart push (with
/// the `OemParameters` part MegaRAC's clients send) is refused with 400
/// (Base's ServiceTemporarilyUnavailable, then AmiOem's
/// BMCNotReadyForFirmwareUpdate) and starts nothing, until the window
/// passes.
#[tokio::test]
async fn ami_refuses_a_push_while_it_boots_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::derived_profile(
        dir.path(),
        "ami-asrockrack",
        "ami-asrockrack",
        &[(
            "not_ready_secs = 60",
            "not_ready_secs = 2\nbmc_down_secs = 1\napply_secs = 0.2",
        )],
        "",
    );
    let api = Api::own_endpoint_with("ami-asrockrack", Profiles::load(Some(dir.path())).unwrap());
    let svc = api.get("/redfish/v1/UpdateService").await.body;
    assert_eq!(svc["MultipartHttpPushUri"], UPLOAD);
    let manager = "/redfish/v1/Managers/Self";
    let oem = br#"{"FlashType": "HPMFwUpdate", "UploadSelector": "Default"}"#;
    let pushed = |c: Component, version: &str| {
        let img = image(c, version);
        let params = format!(r#"{{"Targets": ["{manager}"]}}"#);
        let params = match c {
            Component::Bmc => params,
            _ => r#"{"Targets": []}"#.to_string(),
        };
        multipart(&[
            (
                "UpdateParameters",
                Some("parameters.json"),
                params.as_bytes(),
            ),
            ("OemParameters", Some("oem_parameters.json"), oem),
            ("UpdateFile", Some("image.fw"), &img),
        ])
    };
    let (ct, body) = pushed(Component::Bmc, "6.2.0");
    let r = push(&api, UPLOAD, &ct, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    let monitor = r.headers["location"].to_str().unwrap().to_string();
    follow(&api, &monitor, &task).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.get(manager).await.body["FirmwareVersion"] != "6.2.0" {
        assert!(Instant::now() < deadline, "the BMC never came back new");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (ct, body) = pushed(Component::Bios, "10.20");
    let r = push(&api, UPLOAD, &ct, body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(
        r.message_ids(),
        [
            "ServiceTemporarilyUnavailable",
            "BMCNotReadyForFirmwareUpdate"
        ],
        "{r}"
    );
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert_eq!(tasks["Members@odata.count"], 1, "nothing started: {tasks}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (ct, body) = pushed(Component::Bios, "10.20");
        let r = push(&api, UPLOAD, &ct, body).await;
        if r.status == StatusCode::ACCEPTED {
            break;
        }
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
        assert!(Instant::now() < deadline, "still not ready: {r}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A DELETE of a running update's Task cancels it: Cancelling, then
/// Cancelled with TaskEvent's TaskCancelled, the image staged before the
/// write withdrawn (the next start installs nothing); a finished Task's
/// DELETE removes it.
#[tokio::test]
async fn deleting_a_running_update_cancels_it_and_stages_nothing() {
    let base = file_server(vec![("/bios.fw", image(Component::Bios, "7.7"))]);
    let api = fetching(quick_with(
        "apply_secs = 3\napply_spread = 0\nnew_secs = 0\n",
    ));
    let sys = api.system(0).await;
    let (monitor, task) = update(&api, json!({"ImageURI": format!("{base}/bios.fw")})).await;
    until_running(&api, &task).await;
    let r = api.delete(&task).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    let (seen, t) = follow(&api, &monitor, &task).await;
    assert_eq!(
        seen.last().map(String::as_str),
        Some("Cancelled"),
        "{seen:?}"
    );
    assert_eq!(t["TaskStatus"], "Warning", "{t}");
    assert_eq!(
        message_ids(&t).last().unwrap(),
        "TaskEvent.1.0.TaskCancelled",
        "{t}"
    );
    api.reset(&sys, "On").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        api.get(&sys).await.body["BiosVersion"],
        "1.0.0",
        "nothing staged"
    );
    // Ended: a DELETE removes it; then it is gone.
    assert_eq!(api.delete(&task).await.status, StatusCode::NO_CONTENT);
    assert_eq!(api.get(&task).await.status, StatusCode::NOT_FOUND);
    assert_eq!(api.delete(&task).await.status, StatusCode::NOT_FOUND);
}
