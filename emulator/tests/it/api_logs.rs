//! Log services in-process: the SEL and event logs of a System and its
//! Manager fill from what really happens, entries shown inline, one at a
//! time and filtered; ClearLog clears and says so, and refuses what it
//! does not take with nothing cleared; iDRAC's Sel and Lclog; a profile
//! without logs serves none.

use axum::http::Method;
use serde_json::{json, Value};
use shoal_emulator::backend::fake::FakeOptions;

use crate::common::Api;

fn full() -> Api {
    Api::with(
        shoal_emulator::config::fake_systems(1),
        FakeOptions::default(),
        shoal_emulator::auth::AuthStore::open(),
        shoal_emulator::config::FeatureSet::Full,
    )
}

async fn first_system(api: &Api) -> String {
    let list = api.get("/redfish/v1/Systems").await;
    list.body["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn reset(api: &Api, sys: &str, kind: &str) {
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({ "ResetType": kind }),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
}

/// The entries' (Id, MessageId) in the order served.
fn ids(entries: &Value) -> Vec<(String, String)> {
    entries["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["Id"].as_str().unwrap().to_string(),
                m["MessageId"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_systems_sel_and_its_managers_log_fill_from_what_happens_and_clear() {
    let api = full();
    let sys = first_system(&api).await;
    let system = api.get(&sys).await;
    let services = system.body["LogServices"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(services, format!("{sys}/LogServices"));
    let list = api.get(&services).await;
    assert_eq!(list.status, 200, "{list}");
    assert_eq!(
        list.body["Members"],
        json!([{"@odata.id": format!("{sys}/LogServices/Sel")}])
    );
    let sel = api.get(&format!("{sys}/LogServices/Sel")).await;
    assert_eq!(sel.body["LogEntryType"], "SEL");
    assert_eq!(sel.body["OverWritePolicy"], "WrapsWhenFull");
    let clear = sel.body["Actions"]["#LogService.ClearLog"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let entries = format!("{sys}/LogServices/Sel/Entries");
    assert_eq!(api.get(&entries).await.body["Members@odata.count"], 0);

    reset(&api, &sys, "On").await;
    reset(&api, &sys, "ForceOff").await;
    let got = api.get(&entries).await;
    assert_eq!(
        ids(&got.body),
        [
            ("1".into(), "0x6F00FFFF".into()),
            ("2".into(), "0x6F00FFFF".into()),
            ("3".into(), "0x6F05FFFF".into())
        ]
    );
    let first = &got.body["Members"][0];
    assert_eq!(first["EntryType"], "SEL");
    assert_eq!(first["SensorType"], "System ACPI PowerState");
    assert_eq!(got.body["Members"][1]["SensorType"], "SystemBoot/Restart");
    assert_eq!(first["GeneratorId"], "0x0020");
    assert_eq!(first["Severity"], "OK");
    assert!(first["Message"].as_str().unwrap().contains("S0/G0"));
    assert!(first["Created"].as_str().unwrap().ends_with("+00:00"));
    assert_eq!(
        first["Links"]["OriginOfCondition"]["@odata.id"],
        sys.as_str()
    );
    // One entry at a time, the same; what is not there is 404.
    let one = api.get(&format!("{entries}/1")).await;
    assert_eq!(one.status, 200);
    assert_eq!(&one.body, first);
    for missing in ["9", "abc", "0"] {
        assert_eq!(api.get(&format!("{entries}/{missing}")).await.status, 404);
    }
    // The Manager's event log tells the same changes in ResourceEvent's words.
    let manager_uri = system.body["Links"]["ManagedBy"][0]["@odata.id"]
        .as_str()
        .unwrap();
    let manager = api.get(manager_uri).await;
    let mlog = format!(
        "{}/Log/Entries",
        manager.body["LogServices"]["@odata.id"].as_str().unwrap()
    );
    let events = api.get(&mlog).await;
    let messages: Vec<String> = ids(&events.body).into_iter().map(|(_, m)| m).collect();
    assert_eq!(messages.len(), 2, "{events}");
    assert!(
        messages[0].ends_with(".ResourcePoweredOn") && messages[1].ends_with(".ResourcePoweredOff"),
        "{messages:?}"
    );
    assert_eq!(events.body["Members"][0]["EntryType"], "Event");

    // Refused, nothing cleared: an unknown parameter, a stale ETag.
    let bad = api.post(&clear, json!({"Force": true})).await;
    assert_eq!(bad.status, 400, "{bad}");
    assert_eq!(bad.message_ids(), ["ActionParameterUnknown"]);
    let stale = api
        .post(&clear, json!({"LogEntriesETag": "\"nope\""}))
        .await;
    assert_eq!(stale.status, 428, "{stale}");
    let typed = api.post(&clear, json!({"LogEntriesETag": 7})).await;
    assert_eq!(typed.status, 400, "{typed}");
    assert_eq!(api.get(&entries).await.body["Members@odata.count"], 3);
    // The collection's own ETag clears it; so does no body at all.
    let tag = api.get(&entries).await.header("etag").expect("ETag");
    let done = api.post(&clear, json!({ "LogEntriesETag": tag })).await;
    assert_eq!(done.status, 204, "{done}");
    let left = api.get(&entries).await;
    assert_eq!(ids(&left.body), [("1".into(), "0x6F02FFFF".into())]);
    assert_eq!(
        left.body["Members"][0]["SensorType"],
        "Event Logging Disabled"
    );
    let none = api.req(Method::POST, &clear, None, &[]).await;
    assert_eq!(none.status, 204, "{none}");
    // The Manager's log keeps what it had.
    assert_eq!(api.get(&mlog).await.body["Members@odata.count"], 2);
    // An unknown service is 404, as its actions are.
    assert_eq!(
        api.get(&format!("{sys}/LogServices/Nope")).await.status,
        404
    );
    let r = api
        .post(
            &format!("{sys}/LogServices/Nope/Actions/LogService.ClearLog"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn idracs_logs_are_the_managers_sel_and_lifecycle_log_newest_first() {
    let api = Api::own_endpoint("idrac9");
    let sys = "/redfish/v1/Systems/System.Embedded.1";
    assert!(api.get(sys).await.body.get("LogServices").is_none());
    let services = "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices";
    let list = api.get(services).await;
    let members: Vec<&str> = list.body["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["@odata.id"].as_str().unwrap())
        .collect();
    assert_eq!(
        members,
        [format!("{services}/Sel"), format!("{services}/Lclog")]
    );
    reset(&api, sys, "On").await;
    reset(&api, sys, "ForceRestart").await;
    let sel = api.get(&format!("{services}/Sel/Entries")).await;
    assert_eq!(
        ids(&sel.body),
        [
            ("3".into(), "6f01ffff".into()),
            ("2".into(), "6f00ffff".into()),
            ("1".into(), "6f00ffff".into())
        ],
        "newest first, bare hex"
    );
    let lc = api.get(&format!("{services}/Lclog/Entries")).await;
    let first = &lc.body["Members"][lc.body["Members"].as_array().unwrap().len() - 1];
    assert_eq!(first["MessageId"], "IDRAC.2.8.SYS1000");
    assert_eq!(first["EntryType"], "Oem");
    assert_eq!(first["OemRecordFormat"], "Dell");
    assert_eq!(first["Message"], "System is turning on.");
    assert_eq!(first["Oem"]["Dell"]["LastUpdatedByUser"], "iDRAC");
    // Dell's Ansible BIOS module waits for SYS1003 with a $filter.
    let reset_seen = api
        .get(&format!(
            "{services}/Lclog/Entries?$filter=MessageId%20eq%20'IDRAC.2.8.SYS1003'"
        ))
        .await;
    assert_eq!(
        reset_seen.body["Members"].as_array().unwrap().len(),
        1,
        "{reset_seen}"
    );
    // The Lclog has no ClearLog; the Sel's answers 204 to `{}`.
    let lclog = api.get(&format!("{services}/Lclog")).await;
    assert!(lclog.body.get("Actions").is_none(), "{lclog}");
    let r = api
        .post(
            &format!("{services}/Lclog/Actions/LogService.ClearLog"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
    let r = api
        .post(
            &format!("{services}/Sel/Actions/LogService.ClearLog"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        api.get(&format!("{services}/Sel/Entries")).await.body["Members@odata.count"],
        1
    );
}

#[tokio::test]
async fn a_profile_without_logs_serves_none() {
    let api = Api::profiled("sushy-tools", shoal_emulator::profile::Profiles::default());
    let sys = first_system(&api).await;
    assert!(api.get(&sys).await.body.get("LogServices").is_none());
    assert_eq!(
        api.get(&format!("{sys}/LogServices")).await.body["Members@odata.count"],
        0
    );
    assert_eq!(api.get(&format!("{sys}/LogServices/Sel")).await.status, 404);
}
