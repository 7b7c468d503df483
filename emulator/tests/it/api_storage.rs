//! RAID volumes on the fake backend: creation checked against the drives
//! and the RAID level, Immediate and OnReset apply times, errors that
//! change nothing.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{default_system, FeatureSet};
use shoal_emulator::storage::Disk;
use shoal_emulator::storage::StorageState;

use crate::common::Api;

/// One machine with three 100 GiB drives, in pass-through mode.
fn api() -> (Api, String) {
    let mut sys = default_system("raid-0");
    sys.disks = (0..3)
        .map(|i| Disk::new(format!("disk{i}"), 100 << 30))
        .collect();
    sys.bmc.storage = StorageState::jbod(&sys.disks);
    let base = format!("/redfish/v1/Systems/{}/Storage/1", sys.id);
    let api = Api::with(
        vec![sys],
        FakeOptions::default(),
        AuthStore::open(),
        FeatureSet::Full,
    );
    (api, base)
}

fn drives(base: &str, n: &[usize]) -> Value {
    json!(n
        .iter()
        .map(|i| json!({"@odata.id": format!("{base}/Drives/disk{i}")}))
        .collect::<Vec<_>>())
}

fn ids(v: &Value) -> Vec<String> {
    v["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["@odata.id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .into()
        })
        .collect()
}

#[tokio::test]
async fn controller_advertises_raid_and_apply_times() {
    let (api, base) = api();
    let s = api.get(&base).await;
    let ctl = api
        .get(s.body["Controllers"]["@odata.id"].as_str().unwrap())
        .await;
    let c = api
        .get(ctl.body["Members"][0]["@odata.id"].as_str().unwrap())
        .await;
    assert_eq!(
        c.body["SupportedRAIDTypes"],
        json!(["RAID0", "RAID1", "RAID5", "RAID6", "RAID10", "None"])
    );
    // Embedded in Storage too, as Ironic's inspection reads it.
    let embedded = &s.body["StorageControllers"][0];
    assert_eq!(embedded["MemberId"], "0");
    for k in [
        "Name",
        "Model",
        "SpeedGbps",
        "SupportedRAIDTypes",
        "SupportedDeviceProtocols",
        "Status",
    ] {
        assert_eq!(embedded[k], c.body[k], "{k}");
    }
    let v = api.get(&format!("{base}/Volumes")).await;
    assert_eq!(v.header("allow").as_deref(), Some("GET, POST"));
    assert_eq!(
        v.body["@Redfish.OperationApplyTimeSupport"]["SupportedValues"],
        json!(["Immediate", "OnReset"])
    );
    assert_eq!(ids(&v.body), ["disk0", "disk1", "disk2"]);
}

#[tokio::test]
async fn volumes_are_created_over_free_drives_only() {
    let (api, base) = api();
    let vols = format!("{base}/Volumes");
    let create = |body: Value| api.post(&vols, body);
    // The drives are taken by their pass-through volumes.
    let r = create(json!({"RAIDType": "RAID1", "Links": {"Drives": drives(&base, &[0, 1])}})).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    for d in ["disk0", "disk1"] {
        let r = api
            .req(Method::DELETE, &format!("{vols}/{d}"), None, &[])
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
    }
    let bad = [
        (
            json!({"RAIDType": "RAID5", "Links": {"Drives": drives(&base, &[0, 1])}}),
            "PropertyValueConflict",
        ),
        (
            json!({"RAIDType": "RAID7", "Links": {"Drives": drives(&base, &[0, 1])}}),
            "PropertyValueNotInList",
        ),
        (
            json!({"RAIDType": "RAID1", "Links": {"Drives": drives(&base, &[0, 7])}}),
            "PropertyValueNotInList",
        ),
        (
            json!({"RAIDType": "RAID1", "Links": {"Drives": drives(&base, &[0, 0])}}),
            "PropertyValueFormatError",
        ),
        (
            json!({"RAIDType": "RAID1", "CapacityBytes": 101u64 << 30, "Links": {"Drives": drives(&base, &[0, 1])}}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"RAIDType": "RAID1"}),
            "CreateFailedMissingReqProperties",
        ),
        (
            json!({"RAIDType": "RAID1", "Links": {"Drives": drives(&base, &[0, 1])}, "Bogus": 1}),
            "PropertyUnknown",
        ),
        (
            json!({"RAIDType": "RAID1", "Links": {"Drives": drives(&base, &[0, 1])}, "@Redfish.OperationApplyTime": "Later"}),
            "PropertyValueNotInList",
        ),
    ];
    for (body, id) in bad {
        let r = create(body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.message_ids(), [id], "{body}");
    }
    assert_eq!(
        ids(&api.get(&vols).await.body),
        ["disk2"],
        "nothing half-made"
    );
    // The deprecated VolumeType is understood too.
    let r = create(json!({"VolumeType": "Mirrored", "Name": "os", "Links": {"Drives": drives(&base, &[0, 1])}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["RAIDType"], "RAID1");
    assert_eq!(r.body["CapacityBytes"], 100u64 << 30);
    assert_eq!(r.body["Name"], "os");
    let loc = r.header("location").unwrap();
    assert_eq!(
        api.get(&loc).await.body["Links"]["Drives"],
        drives(&base, &[0, 1])
    );
    let d0 = api.get(&format!("{base}/Drives/disk0")).await;
    assert_eq!(d0.body["Links"]["Volumes"][0]["@odata.id"], loc.as_str());
}

#[tokio::test]
async fn on_reset_changes_wait_for_the_next_start() {
    let (api, base) = api();
    let vols = format!("{base}/Volumes");
    let later = json!({"@Redfish.OperationApplyTime": "OnReset"});
    let r = api
        .req(Method::DELETE, &format!("{vols}/disk2"), Some(later), &[])
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let monitor = r.header("location").unwrap();
    let r = api
        .post(
            &vols,
            json!({"RAIDType": "RAID0", "Links": {"Drives": drives(&base, &[2])},
                            "@Redfish.OperationApplyTime": "OnReset"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "the staged delete frees disk2: {}",
        r.body
    );
    assert_eq!(ids(&api.get(&vols).await.body), ["disk0", "disk1", "disk2"]);
    let r = api.get(&monitor).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "still waiting for a reset");
    let sys = api.system(0).await;
    api.reset(&sys, "On").await;
    assert_eq!(
        ids(&api.get(&vols).await.body),
        ["disk0", "disk1", "Volume0"]
    );
    let done = api
        .finish_task(&monitor, std::time::Duration::from_secs(5))
        .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn staged_changes_are_one_per_volume_and_wait_without_polling() {
    let (api, base) = api();
    let vols = format!("{base}/Volumes");
    let later = json!({"@Redfish.OperationApplyTime": "OnReset"});
    let delete = |vol: String, body: Option<Value>| {
        let api = &api;
        async move { api.req(Method::DELETE, &vol, body, &[]).await }
    };
    let r = delete(format!("{vols}/disk2"), Some(later.clone())).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let create = json!({"RAIDType": "RAID0", "Links": {"Drives": drives(&base, &[2])},
                        "@Redfish.OperationApplyTime": "OnReset"});
    let r = api.post(&vols, create.clone()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    // Each task looks once as it starts...
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while api.state.tasks.staged_checks() < 2 {
        assert!(std::time::Instant::now() < deadline, "tasks never looked");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let staged_checks = api.state.tasks.staged_checks();
    assert_eq!(staged_checks, 2);
    // A client repeating itself: each target keeps its one pending change;
    // the rest is refused as a controller with a scheduled job refuses.
    for _ in 0..500 {
        let r = api.post(&vols, create.clone()).await;
        assert_eq!(
            r.status,
            StatusCode::CONFLICT,
            "drive taken by the staged volume"
        );
        let r = delete(format!("{vols}/Volume0"), Some(later.clone())).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
        assert_eq!(r.message_ids(), ["ResourceInUse"]);
        let r = delete(format!("{vols}/disk2"), Some(later.clone())).await;
        assert_eq!(r.status, StatusCode::CONFLICT);
        let r = delete(format!("{vols}/disk2"), None).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "not even at once");
    }
    // Nor may a volume made now take a drive a staged change frees.
    let r = api
        .post(
            &vols,
            json!({"RAIDType": "RAID0", "Links": {"Drives": drives(&base, &[2])}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert_eq!(tasks["Members@odata.count"], json!(2));
    // ...then, while nothing happens, sleeps: no look at the machine.
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert_eq!(api.state.tasks.staged_checks(), staged_checks, "no polling");
    let sys = api.system(0).await;
    api.reset(&sys, "On").await;
    for m in tasks["Members"].as_array().unwrap() {
        let t = m["@odata.id"].as_str().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while api.get(t).await.body["TaskState"] != "Completed" {
            assert!(
                std::time::Instant::now() < deadline,
                "{t} not woken by the reset"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    assert_eq!(
        api.state.tasks.staged_checks(),
        staged_checks + 2,
        "one look each, when the reset woke them"
    );
    assert_eq!(
        ids(&api.get(&vols).await.body),
        ["disk0", "disk1", "Volume0"]
    );
}

#[tokio::test]
async fn volume_names_are_one_short_line() {
    let (api, base) = api();
    let vols = format!("{base}/Volumes");
    let r = api
        .req(Method::DELETE, &format!("{vols}/disk2"), None, &[])
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    for name in ["a\u{0}b".to_string(), "x\u{FFFF}".into(), "n".repeat(65)] {
        let r = api
            .post(
                &vols,
                json!({"RAIDType": "RAID0", "Name": name, "Links": {"Drives": drives(&base, &[2])}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{name:?}");
        assert_eq!(r.message_ids(), ["PropertyValueFormatError"]);
    }
    assert_eq!(ids(&api.get(&vols).await.body), ["disk0", "disk1"]);
}
