//! Dell's RAID service on the iDRAC profiles, as sushy's Dell extension
//! and Ironic's `idrac-redfish` RAID interface drive it: drives by FQDD,
//! ConvertToRAID / ConvertToNonRAID jobs that change the drives when they
//! complete, ClearForeignConfig's STOR018, the PERC's ControllerMode
//! changed at the next reset by a scheduled job.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::config::fake_systems;
use shoal_emulator::storage::{Disk, StorageState};

use crate::common::{Api, Reply};

const SYS: &str = "/redfish/v1/Systems/System.Embedded.1";
const PERC: &str = "RAID.Integrated.1-1";

fn storage() -> String {
    format!("{SYS}/Storage/{PERC}")
}

fn disk(i: usize) -> String {
    format!("Disk.Bay.{i}:Enclosure.Internal.0-1:{PERC}")
}

fn action(a: &str) -> String {
    format!("{SYS}/Oem/Dell/DellRaidService/Actions/DellRaidService.{a}")
}

/// An iDRAC 9 in front of a machine with three 100 GiB drives, all
/// non-RAID (passed through), as a PERC in RAID mode with converted
/// drives shows them.
fn idrac(profile: &str) -> Api {
    let mut sys = fake_systems(1).remove(0);
    sys.disks = (0..3)
        .map(|i| Disk::new(format!("disk{i}"), 100 << 30))
        .collect();
    sys.bmc.storage = StorageState::jbod(&sys.disks);
    Api::own_endpoint_of(profile, Default::default(), sys)
}

fn messages(r: &Reply) -> Vec<String> {
    r.body["error"]["@Message.ExtendedInfo"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["MessageId"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn raid_status(api: &Api, i: usize) -> String {
    let d = api.get(&format!("{}/Drives/{}", storage(), disk(i))).await;
    assert_eq!(d.status, StatusCode::OK, "{d}");
    d.body["Oem"]["Dell"]["DellPhysicalDisk"]["RaidStatus"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Finds a job's Task as sushy's Dell extension does (the Location's last
/// segment among the TaskService's members), then polls it while 202.
async fn wait_job(api: &Api, started: &Reply) -> Value {
    assert_eq!(started.status, StatusCode::ACCEPTED, "{started}");
    let location = started.header("location").expect("Location");
    let jid = location.rsplit('/').next().unwrap().to_string();
    assert!(jid.starts_with("JID_"), "{location}");
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    let task = tasks["Members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["@odata.id"].as_str())
        .find(|u| u.ends_with(&jid))
        .expect("the job among the Tasks")
        .to_string();
    let r = api.finish_task(&task, Duration::from_secs(10)).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    r.body
}

#[tokio::test]
async fn the_system_links_the_raid_service_and_storage_is_named_by_fqdd() {
    let api = idrac("idrac9");
    let s = api.get(SYS).await.body;
    let svc = s["Links"]["Oem"]["Dell"]["DellRaidService"]["@odata.id"]
        .as_str()
        .expect("Links.Oem.Dell.DellRaidService");
    let svc = api.get(svc).await;
    assert_eq!(svc.status, StatusCode::OK);
    for a in ["ConvertToRAID", "ConvertToNonRAID", "ClearForeignConfig"] {
        assert_eq!(
            svc.body["Actions"][format!("#DellRaidService.{a}")]["target"],
            json!(action(a))
        );
    }
    let st = api.get(&storage()).await.body;
    assert_eq!(st["Id"], json!(PERC));
    assert_eq!(
        st["Drives"][0]["@odata.id"],
        json!(format!("{}/Drives/{}", storage(), disk(0)))
    );
    assert_eq!(st["StorageControllers"][0]["MemberId"], json!("0"));
    assert_eq!(
        st["StorageControllers"][0]["Name"],
        json!("PERC H730P Mini")
    );
    assert!(st["StorageControllers"][0]["SupportedRAIDTypes"]
        .as_array()
        .unwrap()
        .contains(&json!("RAID1")));
    let ctl = api
        .get(&format!("{}/Controllers/{PERC}", storage()))
        .await
        .body;
    assert_eq!(
        ctl["Oem"]["Dell"]["DellStorageController"]["ControllerMode"],
        json!("RAID")
    );
    // Non-RAID drives are raw devices under their own FQDD.
    let v = api.get(&format!("{}/Volumes/{}", storage(), disk(1))).await;
    assert_eq!(v.status, StatusCode::OK, "{v}");
    assert_eq!(v.body["VolumeType"], json!("RawDevice"));
    assert!(v.body["RAIDType"].is_null());
    assert_eq!(raid_status(&api, 1).await, "NonRAID");
    // The plain names are not there.
    assert_eq!(
        api.get(&format!("{SYS}/Storage/1")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn convert_to_raid_then_a_volume_then_back_to_non_raid() {
    let api = idrac("idrac9");
    let r = api
        .post(
            &action("ConvertToRAID"),
            json!({"PDArray": [disk(0), disk(1)]}),
        )
        .await;
    assert!(
        r.header("location")
            .unwrap()
            .contains("/Oem/Dell/Jobs/JID_"),
        "{r}"
    );
    // Nothing changes before the job completes.
    assert_eq!(raid_status(&api, 0).await, "NonRAID");
    let task = wait_job(&api, &r).await;
    assert_eq!(task["TaskState"], json!("Completed"), "{task}");
    assert_eq!(
        task["Oem"]["Dell"]["JobType"],
        json!("RealTimeNoRebootConfiguration")
    );
    assert_eq!(
        task["Oem"]["Dell"]["Name"],
        json!("Configure: RAID.Integrated.1-1")
    );
    assert!(task["Messages"][0]["MessageId"]
        .as_str()
        .unwrap()
        .ends_with("PR19"));
    assert_eq!(raid_status(&api, 0).await, "Ready");
    assert_eq!(raid_status(&api, 2).await, "NonRAID");
    // A RAID1 over the Ready drives, named Disk.Virtual.N.
    let v = api
        .post(
            &format!("{}/Volumes", storage()),
            json!({"RAIDType": "RAID1", "Links": {"Drives": [
                {"@odata.id": format!("{}/Drives/{}", storage(), disk(0))},
                {"@odata.id": format!("{}/Drives/{}", storage(), disk(1))}]}}),
        )
        .await;
    assert_eq!(v.status, StatusCode::CREATED, "{v}");
    let loc = v.header("location").unwrap();
    assert!(
        loc.ends_with(&format!("/Volumes/Disk.Virtual.0:{PERC}")),
        "{loc}"
    );
    assert_eq!(raid_status(&api, 0).await, "Online");
    // A member of a volume converts neither way.
    for a in ["ConvertToNonRAID", "ConvertToRAID"] {
        let r = api.post(&action(a), json!({"PDArray": [disk(0)]})).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{a}: {r}");
        assert!(messages(&r).iter().any(|m| m.ends_with("STOR009")), "{r}");
    }
    let d = api.req(Method::DELETE, &loc, None, &[]).await;
    assert_eq!(d.status, StatusCode::NO_CONTENT, "{d}");
    let r = api
        .post(
            &action("ConvertToNonRAID"),
            json!({"PDArray": [disk(0), disk(1)]}),
        )
        .await;
    wait_job(&api, &r).await;
    assert_eq!(raid_status(&api, 0).await, "NonRAID");
    assert_eq!(raid_status(&api, 1).await, "NonRAID");
}

#[tokio::test]
async fn bad_conversions_are_refused_and_change_nothing() {
    let api = idrac("idrac9");
    let before = api.get(&format!("{}/Volumes", storage())).await.body["Members"].clone();
    let cases = [
        (json!({}), "ActionParameterMissing"),
        (json!({"PDArray": disk(0)}), "ActionParameterValueTypeError"),
        (json!({"PDArray": []}), "ActionParameterValueError"),
        (json!({"PDArray": [7]}), "ActionParameterValueTypeError"),
        (
            json!({"PDArray": ["Disk.Bay.9:Enclosure.Internal.0-1:RAID.Integrated.1-1"]}),
            "STOR009",
        ),
        (json!({"PDArray": [disk(0), disk(0)]}), "STOR009"),
        (
            json!({"PDArray": [disk(0)], "Extra": 1}),
            "ActionParameterUnknown",
        ),
    ];
    for (body, want) in cases {
        let r = api.post(&action("ConvertToRAID"), body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert!(
            messages(&r).iter().any(|m| m.ends_with(want)),
            "{body}: wanted {want}: {r}"
        );
    }
    // Ready drives are needed to go non-RAID; these are all non-RAID.
    let r = api
        .post(&action("ConvertToNonRAID"), json!({"PDArray": [disk(2)]}))
        .await;
    assert!(messages(&r).iter().any(|m| m.ends_with("STOR009")), "{r}");
    let after = api.get(&format!("{}/Volumes", storage())).await.body["Members"].clone();
    assert_eq!(before, after);
    // One job at a time on the controller.
    let first = api
        .post(&action("ConvertToRAID"), json!({"PDArray": [disk(0)]}))
        .await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let second = api
        .post(&action("ConvertToRAID"), json!({"PDArray": [disk(1)]}))
        .await;
    assert!(
        messages(&second).iter().any(|m| m.ends_with("STOR023")),
        "{second}"
    );
    wait_job(&api, &first).await;
    assert_eq!(raid_status(&api, 1).await, "NonRAID");
}

#[tokio::test]
async fn clear_foreign_config_finds_nothing_to_clear() {
    let api = idrac("idrac9");
    let r = api
        .post(&action("ClearForeignConfig"), json!({"TargetFQDD": PERC}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    let ids = messages(&r);
    assert_eq!(ids, ["IDRAC.2.8.STOR018"], "{r}");
    let r = api
        .post(
            &action("ClearForeignConfig"),
            json!({"TargetFQDD": "RAID.Slot.6-1"}),
        )
        .await;
    assert!(messages(&r).iter().any(|m| m.ends_with("STOR030")), "{r}");
    let r = api.post(&action("ClearForeignConfig"), json!({})).await;
    assert!(
        messages(&r)
            .iter()
            .any(|m| m == "Base.1.19.ActionParameterMissing"
                || m.ends_with("ActionParameterMissing")),
        "{r}"
    );
    let r = api
        .post(&action("ResetConfig"), json!({"TargetFQDD": PERC}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
}

#[tokio::test]
async fn the_controller_mode_changes_at_the_next_reset_by_a_scheduled_job() {
    let api = idrac("idrac9");
    let ctl = format!("{}/Controllers/{PERC}", storage());
    let c = api.get(&ctl).await.body;
    let settings = c["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
        .as_str()
        .expect("a settings object")
        .to_string();
    // What sushy's Dell controller extension sends.
    let hba = json!({
        "Oem": {"Dell": {"DellStorageController": {"ControllerMode": "HBA"}}},
        "@Redfish.SettingsApplyTime": {"@odata.type": "#Settings.v1_0_0.PreferredApplyTime", "ApplyTime": "OnReset"},
    });
    // Bad input first: nothing staged.
    for (body, want) in [
        (
            json!({"Oem": {"Dell": {"DellStorageController": {"ControllerMode": "EnhancedHBA"}}}}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Oem": {"Dell": {"DellStorageController": {"ControllerMode": "HBA", "PatrolReadMode": "Manual"}}}}),
            "PropertyUnknown",
        ),
        (json!({"Name": "x"}), "PropertyUnknown"),
        (
            json!({"Oem": {"Dell": {"DellStorageController": {"ControllerMode": "HBA"}}}, "@Redfish.SettingsApplyTime": {"ApplyTime": "Immediate"}}),
            "PropertyValueNotInList",
        ),
    ] {
        let r = api.patch(&settings, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert!(
            messages(&r).iter().any(|m| m.ends_with(want)),
            "{body}: {r}"
        );
    }
    let r = api.patch(&settings, hba.clone()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let location = r.header("location").unwrap();
    assert!(
        location.starts_with("/redfish/v1/TaskService/Tasks/JID_"),
        "{location}"
    );
    let t = api.get(&location).await;
    assert_eq!(t.status, StatusCode::ACCEPTED, "scheduled: {t}");
    assert_eq!(t.body["Oem"]["Dell"]["JobType"], json!("RAIDConfiguration"));
    assert_eq!(t.body["Oem"]["Dell"]["JobState"], json!("Scheduled"));
    assert_eq!(
        api.get(&settings).await.body["Oem"]["Dell"]["DellStorageController"]["ControllerMode"],
        json!("HBA")
    );
    assert_eq!(
        api.get(&ctl).await.body["Oem"]["Dell"]["DellStorageController"]["ControllerMode"],
        json!("RAID")
    );
    // No RAID conversion while the controller's job waits.
    let busy = api
        .post(&action("ConvertToRAID"), json!({"PDArray": [disk(0)]}))
        .await;
    assert!(
        messages(&busy).iter().any(|m| m.ends_with("STOR023")),
        "{busy}"
    );
    api.reset(SYS, "On").await;
    let t = api.finish_task(&location, Duration::from_secs(10)).await;
    assert_eq!(t.body["TaskState"], json!("Completed"), "{t}");
    let c = api.get(&ctl).await.body;
    assert_eq!(
        c["Oem"]["Dell"]["DellStorageController"]["ControllerMode"],
        json!("HBA")
    );
    assert_eq!(c["SupportedRAIDTypes"], json!(["None"]));
    // In HBA mode no RAID volume is made and no drive converts.
    let r = api
        .post(&action("ConvertToRAID"), json!({"PDArray": [disk(0)]}))
        .await;
    assert!(messages(&r).iter().any(|m| m.ends_with("STOR009")), "{r}");
}

#[tokio::test]
async fn hba_mode_is_refused_while_a_raid_volume_exists_and_a_deleted_job_takes_its_change_back() {
    let api = idrac("idrac9");
    let ctl = format!("{}/Controllers/{PERC}", storage());
    let settings = format!("{ctl}/Settings");
    let r = api
        .post(&action("ConvertToRAID"), json!({"PDArray": [disk(0)]}))
        .await;
    wait_job(&api, &r).await;
    let v = api
        .post(
            &format!("{}/Volumes", storage()),
            json!({"RAIDType": "RAID0", "Links": {"Drives": [
                {"@odata.id": format!("{}/Drives/{}", storage(), disk(0))}]}}),
        )
        .await;
    assert_eq!(v.status, StatusCode::CREATED, "{v}");
    let hba = json!({"Oem": {"Dell": {"DellStorageController": {"ControllerMode": "HBA"}}}});
    let r = api.patch(&settings, hba.clone()).await;
    assert!(
        messages(&r)
            .iter()
            .any(|m| m.ends_with("PropertyValueConflict")),
        "{r}"
    );
    let loc = v.header("location").unwrap();
    assert_eq!(
        api.req(Method::DELETE, &loc, None, &[]).await.status,
        StatusCode::NO_CONTENT
    );
    let r = api.patch(&settings, hba).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let jid = r
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let del = api
        .req(
            Method::DELETE,
            &format!("/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/{jid}"),
            None,
            &[],
        )
        .await;
    assert_eq!(del.status, StatusCode::OK, "{del}");
    // The watcher takes the staged mode back; the reset leaves RAID mode.
    let start = Instant::now();
    while api.get(&settings).await.body["Oem"]["Dell"]["DellStorageController"]["ControllerMode"]
        != json!("RAID")
    {
        assert!(start.elapsed() < Duration::from_secs(5), "staged mode kept");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    api.reset(SYS, "On").await;
    let c = api.get(&ctl).await.body;
    assert_eq!(
        c["Oem"]["Dell"]["DellStorageController"]["ControllerMode"],
        json!("RAID")
    );
}

#[tokio::test]
async fn the_generic_profile_keeps_its_plain_storage_and_has_no_raid_service() {
    let api = Api::new(1);
    let s = api.get("/redfish/v1/Systems").await.body;
    let sys = s["Members"][0]["@odata.id"].as_str().unwrap().to_string();
    let body = api.get(&sys).await.body;
    assert!(body["Links"]["Oem"].is_null(), "{body}");
    let st = api.get(&format!("{sys}/Storage/1")).await;
    assert_eq!(st.status, StatusCode::OK);
    // The plain embedded controller, no Dell section in it.
    let embedded = &st.body["StorageControllers"][0];
    assert_eq!(embedded["MemberId"], "0", "{}", st.body);
    assert!(embedded.get("Oem").is_none(), "{}", st.body);
    let svc = api.get(&format!("{sys}/Oem/Dell/DellRaidService")).await;
    assert_eq!(svc.status, StatusCode::NOT_FOUND);
}
