//! Dell's Lifecycle Controller API on the iDRAC profiles, as sushy's Dell
//! extension (Ironic's `idrac` hardware type) and Dell's own scripts use
//! it: SCP import, the job queue, the LC and iDRAC card services.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::{Api, Reply};

const SYS: &str = "/redfish/v1/Systems/System.Embedded.1";
const MGR: &str = "/redfish/v1/Managers/iDRAC.Embedded.1";

/// The buffer sushy's `set_virtual_boot_device` sends.
fn virtual_cd(once: bool) -> Value {
    let once = if once { "Enabled" } else { "Disabled" };
    json!({
        "ShareParameters": {"Target": ["ALL"]},
        "ImportBuffer": format!("<SystemConfiguration><Component FQDD=\"iDRAC.Embedded.1\"><Attribute Name=\"ServerBoot.1#BootOnce\">{once}</Attribute><Attribute Name=\"ServerBoot.1#FirstBootDevice\">VCD-DVD</Attribute></Component></SystemConfiguration>"),
    })
}

/// The import action's target, found as sushy finds it: the key under
/// the Manager's `Actions.Oem` that ends in
/// `#OemManager.ImportSystemConfiguration`.
async fn import_target(api: &Api) -> String {
    let m = api.get(MGR).await.body;
    let oem = m["Actions"]["Oem"].as_object().expect("Actions.Oem");
    let (_, a) = oem
        .iter()
        .find(|(k, _)| k.ends_with("#OemManager.ImportSystemConfiguration"))
        .expect("the import action");
    a["target"].as_str().unwrap().to_string()
}

/// Polls a job's Task as sushy's Dell extension does: GET while 202.
async fn poll(api: &Api, location: &str) -> (Reply, usize) {
    let start = Instant::now();
    let mut polls = 0;
    loop {
        let r = api.get(location).await;
        if r.status != StatusCode::ACCEPTED {
            return (r, polls);
        }
        polls += 1;
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "job still running: {r}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn boot(s: &Value) -> (String, String) {
    (
        s["Boot"]["BootSourceOverrideTarget"]
            .as_str()
            .unwrap()
            .into(),
        s["Boot"]["BootSourceOverrideEnabled"]
            .as_str()
            .unwrap()
            .into(),
    )
}

#[tokio::test]
async fn an_scp_import_sets_the_virtual_cd_boot_and_its_task_answers_202_until_done() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    assert_eq!(
        target,
        format!("{MGR}/Actions/Oem/EID_674_Manager.ImportSystemConfiguration")
    );
    let r = api.post(&target, virtual_cd(true)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let location = r.header("location").expect("Location");
    assert!(
        location.starts_with("/redfish/v1/TaskService/Tasks/JID_") && location.len() == 46,
        "{location}"
    );
    // The machine's next boot is the virtual CD, once.
    assert_eq!(boot(&api.get(SYS).await.body), ("Cd".into(), "Once".into()));
    let (done, polls) = poll(&api, &location).await;
    assert!(polls >= 1, "the import job ran for a while");
    assert_eq!(done.status, StatusCode::OK, "{done}");
    assert_eq!(done.body["TaskState"], "Completed");
    assert_eq!(done.body["Oem"]["Dell"]["JobState"], "Completed");
    assert_eq!(done.body["Oem"]["Dell"]["JobType"], "ImportConfiguration");
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS053");
    // The job is in the queue the Manager links to.
    let m = api.get(MGR).await.body;
    let jobs = m["Links"]["Oem"]["Dell"]["Jobs"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(jobs, format!("{MGR}/Oem/Dell/Jobs"));
    let jid = location.rsplit('/').next().unwrap();
    let list = api.get(&jobs).await.body;
    assert_eq!(list["Members"][0]["@odata.id"], format!("{jobs}/{jid}"));
    let job = api.get(&format!("{jobs}/{jid}")).await;
    assert_eq!(job.body["JobState"], "Completed", "{job}");
    // iDRAC 9 keeps the older path of the queue for older clients.
    let old = api.get(&format!("{MGR}/Jobs/{jid}")).await;
    assert_eq!(old.body["JobState"], "Completed", "{old}");
    // Persistent: BootOnce Disabled.
    let r = api.post(&target, virtual_cd(false)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    assert_eq!(
        boot(&api.get(SYS).await.body),
        ("Cd".into(), "Continuous".into())
    );
    // The same again changes nothing, and the job says so.
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS053");
    let r = api.post(&target, virtual_cd(false)).await;
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS069", "{done}");
    assert_eq!(done.body["Messages"][0]["MessageId"], "IDRAC.2.8.SYS069");
}

#[tokio::test]
async fn a_second_import_while_one_runs_is_refused_with_lc068() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    assert_eq!(
        api.post(&target, virtual_cd(true)).await.status,
        StatusCode::ACCEPTED
    );
    let r = api.post(&target, virtual_cd(false)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["ResourceInUse", "LC068"]);
    assert_eq!(boot(&api.get(SYS).await.body), ("Cd".into(), "Once".into()));
}

#[tokio::test]
async fn bad_imports_are_refused_and_change_nothing() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    let before = boot(&api.get(SYS).await.body);
    let buffer = |b: &str| json!({"ShareParameters": {"Target": ["ALL"]}, "ImportBuffer": b});
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (buffer("<SystemConfiguration><Component FQDD=\"iDRAC.Embedded.1\">"), vec!["ActionParameterValueError", "SYS063"]),
        (buffer("<SystemConfiguration>\n<Component>\n</Component></SystemConfiguration>"), vec!["ActionParameterValueError", "SYS064"]),
        (buffer("not a profile"), vec!["ActionParameterValueError", "SYS062"]),
        (buffer("{\"SystemConfiguration\": []}"), vec!["ActionParameterValueError", "SYS405"]),
        (
            buffer("<SystemConfiguration><Component FQDD=\"iDRAC.Embedded.1\"><Attribute Name=\"ServerBoot.1#FirstBootDevice\">VCD-DVD</Attribute><Attribute Name=\"IPv4.1#Enable\">Disabled</Attribute></Component></SystemConfiguration>"),
            vec!["ActionParameterValueError", "SYS067"],
        ),
        (
            buffer("<SystemConfiguration><Component FQDD=\"NIC.Integrated.1-1-1\"><Attribute Name=\"LegacyBootProto\">PXE</Attribute></Component></SystemConfiguration>"),
            vec!["ActionParameterValueError", "SYS076"],
        ),
        (
            buffer("<SystemConfiguration><Component FQDD=\"iDRAC.Embedded.1\"><Attribute Name=\"ServerBoot.1#FirstBootDevice\">Tape</Attribute></Component></SystemConfiguration>"),
            vec!["ActionParameterValueError", "SYS067"],
        ),
        (json!({"ShareParameters": {"Target": ["ALL"]}}), vec!["ActionParameterMissing"]),
        (json!({"ShareParameters": {"Target": ["ALL"], "IPAddress": "192.0.2.1", "ShareType": "NFS"}, "ImportBuffer": "<SystemConfiguration/>"}), vec!["ActionParameterNotSupported", "ActionParameterNotSupported"]),
        (json!({"ShareParameters": {"Target": ["Everything"]}, "ImportBuffer": "<SystemConfiguration/>"}), vec!["ActionParameterValueNotInList"]),
        (json!({"ImportBuffer": "<SystemConfiguration/>", "ShutdownType": "Now"}), vec!["ActionParameterValueNotInList"]),
        (json!({"ImportBuffer": 7}), vec!["ActionParameterValueTypeError"]),
        (json!({"ImportBuffer": "<SystemConfiguration/>", "Extra": 1}), vec!["ActionParameterUnknown"]),
    ];
    for (body, ids) in cases {
        let r = api.post(&target, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), ids, "{body}: {r}");
    }
    assert_eq!(boot(&api.get(SYS).await.body), before);
    // The line of a malformed profile is named.
    let r = api
        .post(
            &target,
            buffer("<SystemConfiguration>\n<Component>\n</Component></SystemConfiguration>"),
        )
        .await;
    let text = r.body["error"]["@Message.ExtendedInfo"][1]["Message"]
        .as_str()
        .unwrap();
    assert!(text.ends_with("invalid at line 2."), "{text}");
    let list = api.get(&format!("{MGR}/Oem/Dell/Jobs")).await.body;
    assert_eq!(
        list["Members@odata.count"], 0,
        "no job for a refused import"
    );
}

#[tokio::test]
async fn components_outside_the_target_are_left_alone() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    let mut body = virtual_cd(true);
    body["ShareParameters"]["Target"] = json!("BIOS");
    let r = api.post(&target, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    assert_eq!(boot(&api.get(SYS).await.body).0, "None");
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS069");
}

#[tokio::test]
async fn the_job_queue_deletes_one_job_or_all_and_refuses_unknown_ids() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    let r = api.post(&target, virtual_cd(true)).await;
    let jid = r
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let m = api.get(MGR).await.body;
    let svc = m["Links"]["Oem"]["Dell"]["DellJobService"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let s = api.get(&svc).await.body;
    let delete = s["Actions"]["#DellJobService.DeleteJobQueue"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .post(&delete, json!({"JobID": "JID_000000000000"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["ActionParameterValueError", "SUP011"]);
    let r = api.post(&delete, json!({})).await;
    assert_eq!(r.message_ids(), ["ActionParameterMissing"]);
    let r = api.post(&delete, json!({"JobID": "JID_CLEARALL"})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let ids: Vec<&str> = r.body["@Message.ExtendedInfo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["MessageId"].as_str().unwrap())
        .collect();
    assert!(
        ids[0].ends_with(".Success") && ids[1] == "IDRAC.2.8.SUP020",
        "{ids:?}"
    );
    assert_eq!(
        api.get(&format!("{MGR}/Jobs")).await.body["Members@odata.count"],
        0
    );
    assert_eq!(
        api.get(&format!("{MGR}/Jobs/{jid}")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get(&format!("/redfish/v1/TaskService/Tasks/{jid}"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // DELETE of one job.
    let r = api.post(&target, virtual_cd(false)).await;
    let loc = r.header("location").unwrap();
    let jid = loc.rsplit('/').next().unwrap();
    poll(&api, &loc).await;
    let r = api
        .req(
            axum::http::Method::DELETE,
            &format!("{MGR}/Jobs/{jid}"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let r = api
        .req(
            axum::http::Method::DELETE,
            &format!("{MGR}/Jobs/{jid}"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
}

#[tokio::test]
async fn the_lc_is_ready_until_an_idrac_reset_takes_the_bmc_away() {
    let api = Api::own_endpoint("idrac9");
    let m = api.get(MGR).await.body;
    let dell = &m["Links"]["Oem"]["Dell"];
    let lc = api
        .get(dell["DellLCService"]["@odata.id"].as_str().unwrap())
        .await
        .body;
    let status = lc["Actions"]["#DellLCService.GetRemoteServicesAPIStatus"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api.post(&status, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["LCStatus"], "Ready");
    assert_eq!(r.body["RTStatus"], "Ready");
    let card = api
        .get(dell["DelliDRACCardService"]["@odata.id"].as_str().unwrap())
        .await
        .body;
    let reset = &card["Actions"]["#DelliDRACCardService.iDRACReset"];
    assert_eq!(
        reset["Force@Redfish.AllowableValues"],
        json!(["Force", "Graceful"])
    );
    let reset = reset["target"].as_str().unwrap().to_string();
    let r = api.post(&reset, json!({"Force": "Gently"})).await;
    assert_eq!(r.message_ids(), ["ActionParameterValueNotInList"]);
    let mut down = api.state.downtime.subscribe();
    let r = api.post(&reset, json!({"Force": "Graceful"})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    tokio::time::timeout(Duration::from_secs(5), down.changed())
        .await
        .expect("the listener is taken down")
        .unwrap();
    let until = (*down.borrow()).expect("a downtime");
    let secs = (until - tokio::time::Instant::now()).as_secs_f64();
    assert!((115.0..=120.0).contains(&secs), "down for {secs} s");
    // Back, but the LC is not ready yet; an import meanwhile is refused.
    let r = api.post(&status, json!({})).await;
    assert_eq!(r.body["LCStatus"], "ReloadingData", "{r}");
    assert_eq!(r.body["RTStatus"], "NotReady", "{r}");
    let r = api.post(&import_target(&api).await, virtual_cd(true)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{r}");
    assert_eq!(r.message_ids(), ["ServiceTemporarilyUnavailable", "SYS518"]);
}

#[tokio::test]
async fn idrac10_keeps_its_jobs_under_oem_dell_and_says_its_generation() {
    let api = Api::own_endpoint("idrac10");
    let m = api.get(MGR).await.body;
    assert_eq!(m["Model"], "17G Monolithic");
    let jobs = m["Links"]["Oem"]["Dell"]["Jobs"]["@odata.id"]
        .as_str()
        .unwrap();
    assert_eq!(jobs, format!("{MGR}/Oem/Dell/Jobs"));
    assert_eq!(api.get(jobs).await.status, StatusCode::OK);
    assert_eq!(
        api.get(&format!("{MGR}/Jobs")).await.status,
        StatusCode::NOT_FOUND
    );
    let r = api.post(&import_target(&api).await, virtual_cd(true)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let jid = r
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        api.get(&format!("{jobs}/{jid}")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        Api::own_endpoint("idrac9").get(MGR).await.body["Model"],
        "15G Monolithic"
    );
}

#[tokio::test]
async fn without_the_profile_or_an_endpoint_of_its_own_there_is_no_lc_api() {
    // The iDRAC profile on a shared service root: no fixed Ids, no LC.
    let api = Api::profiled("idrac9", shoal_emulator::profile::Profiles::default());
    let sys = api.system(0).await;
    let id = sys.rsplit('/').next().unwrap();
    let m = api.get(&format!("/redfish/v1/Managers/{id}")).await.body;
    assert!(
        m["Links"].get("Oem").is_none() && m["Actions"].get("Oem").is_none(),
        "{m}"
    );
    for path in [
        format!("/redfish/v1/Managers/{id}/Jobs"),
        format!("/redfish/v1/Dell/Managers/{id}/DellLCService"),
    ] {
        assert_eq!(api.get(&path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
    let r = api
        .post(
            &format!(
                "/redfish/v1/Managers/{id}/Actions/Oem/EID_674_Manager.ImportSystemConfiguration"
            ),
            virtual_cd(true),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
}

#[tokio::test]
async fn idrac_virtual_media_are_the_systems_1_and_2_and_idrac9_keeps_the_managers() {
    for (profile, manager) in [("idrac9", true), ("idrac10", false)] {
        let api = Api::own_endpoint(profile);
        let s = api.get(SYS).await.body;
        assert_eq!(
            s["VirtualMedia"]["@odata.id"],
            format!("{SYS}/VirtualMedia")
        );
        let list = api.get(&format!("{SYS}/VirtualMedia")).await.body;
        let ids: Vec<&str> = list["Members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["@odata.id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                format!("{SYS}/VirtualMedia/1"),
                format!("{SYS}/VirtualMedia/2")
            ]
        );
        for id in &ids {
            let m = api.get(id).await.body;
            assert_eq!(
                m["MediaTypes"],
                json!(["CD", "DVD", "USBStick"]),
                "{profile} {id}"
            );
        }
        let m = api.get(MGR).await.body;
        assert_eq!(m.get("VirtualMedia").is_some(), manager, "{profile}");
        if manager {
            let cd = api.get(&format!("{MGR}/VirtualMedia/CD")).await.body;
            assert_eq!(cd["MediaTypes"], json!(["CD", "DVD"]));
            assert_eq!(
                api.get(&format!("{MGR}/VirtualMedia/Cd")).await.status,
                StatusCode::NOT_FOUND
            );
        } else {
            assert_eq!(
                api.get(&format!("{MGR}/VirtualMedia")).await.status,
                StatusCode::NOT_FOUND
            );
        }
        // Slot 1 is the CD: what is inserted there is what Cd boots.
        let r = api
            .post(
                &format!("{SYS}/VirtualMedia/1/Actions/VirtualMedia.InsertMedia"),
                json!({"Image": "http://192.0.2.1/a.iso"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{profile}: {r}");
        let one = api.get(&format!("{SYS}/VirtualMedia/1")).await.body;
        assert_eq!(one["Inserted"], true, "{one}");
        assert_eq!(one["@odata.id"], format!("{SYS}/VirtualMedia/1"));
    }
}

/// The fault rules `ironic-idrac-lc-errors` uses: a chosen Dell message
/// on the import, each a set number of times, under the profile's
/// registry; then the import goes through. A 404 on the job's Task right
/// after it was made, once. On a profile without Dell's registry the
/// same rule answers the Base message alone.
#[tokio::test]
async fn fault_rules_answer_the_import_with_lc068_then_rac0679_then_let_it_through() {
    use shoal_emulator::faults::{FaultConfig, Rule};
    let import_rule = |id: &str| Rule {
        methods: vec!["POST".into()],
        path: Some("/redfish/v1/Managers/*/Actions/Oem/*ImportSystemConfiguration".into()),
        error_rate: 1.0,
        message_id: Some(id.into()),
        times: Some(1),
        ..Default::default()
    };
    for (profile, registry) in [("idrac9", "IDRAC.2.8"), ("idrac10", "IDRAC.2.9")] {
        let api = Api::own_endpoint(profile);
        api.state.core.faults.replace(FaultConfig {
            seed: 1,
            rules: vec![
                import_rule("LC068"),
                import_rule("RAC0679"),
                Rule {
                    methods: vec!["GET".into()],
                    path: Some("/redfish/v1/TaskService/Tasks/JID_*".into()),
                    error_rate: 1.0,
                    status: Some(404),
                    times: Some(1),
                    ..Default::default()
                },
            ],
        });
        let target = import_target(&api).await;
        for id in ["LC068", "RAC0679"] {
            let r = api.post(&target, virtual_cd(true)).await;
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{profile}: {r}");
            assert_eq!(r.message_ids(), ["GeneralError", id]);
            let dell = &r.body["error"]["@Message.ExtendedInfo"][1];
            assert_eq!(dell["MessageId"], format!("{registry}.{id}"));
            assert_eq!(dell["Severity"], "Warning");
            assert_eq!(
                boot(&api.get(SYS).await.body).1,
                "Disabled",
                "{profile}: nothing applied"
            );
        }
        let r = api.post(&target, virtual_cd(true)).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{profile}: {r}");
        let location = r.headers["location"].to_str().unwrap().to_string();
        assert_eq!(api.get(&location).await.status, StatusCode::NOT_FOUND);
        let (done, _) = poll(&api, &location).await;
        assert_eq!(done.status, StatusCode::OK, "{profile}: {done}");
        assert_eq!(boot(&api.get(SYS).await.body), ("Cd".into(), "Once".into()));
        assert_eq!(api.state.core.faults.fired(), [1, 1, 1]);
    }
    let api = Api::new(1);
    let sys = api.system(0).await;
    api.state.core.faults.replace(FaultConfig {
        seed: 0,
        rules: vec![Rule {
            path: Some("/redfish/v1/Systems/*".into()),
            ..import_rule("LC068")
        }],
    });
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["GeneralError"]);
}

/// What Ironic's idrac inspection reads: EthernetInterfaces named by NIC
/// FQDD, the BIOS's PxeDev1..4 pairs naming them, the service tag as
/// `SKU` (another value than SerialNumber), which the service root's
/// `Oem.Dell.ServiceTag` repeats. Other profiles keep MAC Ids.
#[tokio::test]
async fn idrac_names_nics_by_fqdd_the_bios_pxe_devices_name_them_and_sku_is_the_service_tag() {
    let api = Api::own_endpoint("idrac9");
    let nics = api.get(&format!("{SYS}/EthernetInterfaces")).await.body;
    let first = nics["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        first,
        format!("{SYS}/EthernetInterfaces/NIC.Integrated.1-1-1")
    );
    let nic = api.get(&first).await;
    assert_eq!(nic.status, StatusCode::OK, "{nic}");
    assert_eq!(nic.body["Id"], "NIC.Integrated.1-1-1");
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    let attrs = &bios["Attributes"];
    assert_eq!(attrs["PxeDev1EnDis"], "Enabled");
    assert_eq!(attrs["PxeDev1Interface"], "NIC.Integrated.1-1-1");
    for n in 2..=4 {
        assert_eq!(attrs[format!("PxeDev{n}EnDis")], "Disabled");
        assert_eq!(
            attrs[format!("PxeDev{n}Interface")],
            format!("NIC.Integrated.1-{n}-1")
        );
    }
    let sys = api.get(SYS).await.body;
    let tag = sys["SKU"].as_str().unwrap();
    assert_eq!(tag.len(), 7, "{tag}");
    assert!(
        tag.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
        "{tag}"
    );
    assert_ne!(sys["SKU"], sys["SerialNumber"]);
    assert_eq!(api.get(SYS).await.body["SKU"], tag, "stable");
    // The service root names the server by the same tag.
    let root = api.get("/redfish/v1").await.body;
    assert_eq!(root["Oem"]["Dell"]["ServiceTag"], tag, "{root}");

    let api = Api::new(1);
    let sys = api.system(0).await;
    let nics = api.get(&format!("{sys}/EthernetInterfaces")).await.body;
    let id = nics["Members"][0]["@odata.id"].as_str().unwrap();
    assert!(!id.contains("NIC."), "{id}");
    let sys = api.get(&sys).await.body;
    assert_eq!(sys["SKU"], sys["Model"]);
    assert!(api.get("/redfish/v1").await.body["Oem"].is_null());
}

/// Dell's own reset script restarts the iDRAC with the standard
/// `Manager.Reset` (204): the same restart as `iDRACReset`.
#[tokio::test]
async fn a_manager_reset_restarts_the_idrac_as_its_own_reset_does() {
    let api = Api::own_endpoint("idrac9");
    let target = api.get(MGR).await.body["Actions"]["#Manager.Reset"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let mut down = api.state.downtime.subscribe();
    let r = api
        .post(&target, json!({"ResetType": "GracefulRestart"}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    tokio::time::timeout(Duration::from_secs(5), down.changed())
        .await
        .expect("the listener is taken down")
        .unwrap();
    let until = (*down.borrow()).expect("a downtime");
    let secs = (until - tokio::time::Instant::now()).as_secs_f64();
    assert!((115.0..=120.0).contains(&secs), "down for {secs} s");
    let status =
        format!("{MGR}/Oem/Dell/DellLCService/Actions/DellLCService.GetRemoteServicesAPIStatus");
    assert_eq!(
        api.post(&status, json!({})).await.body["LCStatus"],
        "ReloadingData"
    );
}

#[tokio::test]
async fn staged_bios_attributes_wait_for_a_configuration_job() {
    let api = Api::own_endpoint("idrac9");
    let settings = format!("{SYS}/Bios/Settings");
    let current = |b: Value| b["Attributes"]["ProcTurboMode"].clone();
    let before = current(api.get(&format!("{SYS}/Bios")).await.body);
    // Staged without an apply time (Dell's scripts' first step): 200, and
    // a reset leaves it staged.
    let r = api
        .patch(
            &settings,
            json!({"Attributes": {"ProcTurboMode": "Disabled"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(SYS, "On").await;
    assert_eq!(current(api.get(&format!("{SYS}/Bios")).await.body), before);
    assert_eq!(
        api.get(&settings).await.body["Attributes"]["ProcTurboMode"],
        json!("Disabled")
    );
    // Staged values without a job hold the LC: no import (LC068).
    let target = import_target(&api).await;
    let r = api.post(&target, virtual_cd(true)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert!(r.message_ids().iter().any(|m| m.ends_with("LC068")), "{r}");
    // Bad job requests change nothing.
    for (body, want) in [
        (json!({}), "CreateFailedMissingReqProperties"),
        (
            json!({"TargetSettingsURI": format!("{SYS}/Bios")}),
            "PropertyValueNotInList",
        ),
        (json!({"TargetSettingsURI": 7}), "PropertyValueTypeError"),
        (
            json!({"TargetSettingsURI": settings, "Reboot": true}),
            "PropertyUnknown",
        ),
        (
            json!({"TargetSettingsURI": settings, "StartTime": "tomorrow"}),
            "PropertyValueNotInList",
        ),
    ] {
        let r = api.post(&format!("{MGR}/Jobs"), body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert!(
            r.message_ids().iter().any(|m| m.ends_with(want)),
            "{body}: {r}"
        );
    }
    // The job (Dell's scripts' second step): 200, its Location a JID.
    let r = api
        .post(
            &format!("{MGR}/Jobs"),
            json!({"TargetSettingsURI": settings, "StartTime": "TIME_NOW"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let jid = r
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let task = format!("/redfish/v1/TaskService/Tasks/{jid}");
    let t = api.get(&task).await;
    assert_eq!(t.status, StatusCode::ACCEPTED);
    assert_eq!(
        t.body["Messages"][0]["Message"],
        json!("Task successfully scheduled.")
    );
    assert_eq!(t.body["Oem"]["Dell"]["JobType"], json!("BIOSConfiguration"));
    // One job at a time: another PATCH is refused while it waits.
    let r = api
        .patch(
            &settings,
            json!({"Attributes": {"ProcVirtualization": "Disabled"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{r}");
    api.reset(SYS, "ForceRestart").await;
    let done = api.finish_task(&task, Duration::from_secs(10)).await.body;
    assert_eq!(done["TaskState"], json!("Completed"));
    assert!(done["Messages"][0]["Message"]
        .as_str()
        .unwrap()
        .contains("completed"));
    assert_eq!(
        current(api.get(&format!("{SYS}/Bios")).await.body),
        json!("Disabled")
    );
    // Nothing staged: no job to make.
    let r = api
        .post(
            &format!("{MGR}/Jobs"),
            json!({"TargetSettingsURI": settings}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
}

#[tokio::test]
async fn an_apply_time_schedules_the_job_and_clearing_the_queue_holds_the_values_again() {
    let api = Api::own_endpoint("idrac9");
    let settings = format!("{SYS}/Bios/Settings");
    let body = json!({
        "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"},
        "Attributes": {"ProcTurboMode": "Disabled"},
    });
    let r = api.patch(&settings, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let task = r.header("location").unwrap();
    assert!(
        task.starts_with("/redfish/v1/TaskService/Tasks/JID_"),
        "{task}"
    );
    // The queue cleared: the job and its release go, the values stay
    // staged and a reset leaves them so.
    let r = api
        .post(
            &format!("{MGR}/Oem/Dell/DellJobService/Actions/DellJobService.DeleteJobQueue"),
            json!({"JobID": "JID_CLEARALL"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    api.reset(SYS, "On").await;
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    assert_eq!(bios["Attributes"]["ProcTurboMode"], json!("Enabled"));
    // Staged again with an apply time: the next reset applies it.
    apply_at_reset(&api, json!({"ProcTurboMode": "Disabled"})).await;
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    assert_eq!(bios["Attributes"]["ProcTurboMode"], json!("Disabled"));
}

/// Stages BIOS `attrs` with an `OnReset` apply time (202 and a job), makes
/// the reset that applies them, and waits for the job to complete.
async fn apply_at_reset(api: &Api, attrs: Value) {
    let body = json!({
        "@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"},
        "Attributes": attrs,
    });
    let r = api.patch(&format!("{SYS}/Bios/Settings"), body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let task = r.header("location").unwrap();
    api.reset(SYS, "ForceRestart").await;
    assert_eq!(
        api.finish_task(&task, Duration::from_secs(10)).await.body["TaskState"],
        json!("Completed")
    );
}

/// Dell's OpenManage idrac_bios deletes the pending BIOS job and stages
/// its own at once: the new job keeps the values (the old one's deletion
/// takes back only what it had, in its own request), and the next reset
/// applies them.
#[tokio::test]
async fn a_job_deleted_then_replaced_leaves_the_new_one_its_values() {
    let api = Api::own_endpoint("idrac9");
    let settings = format!("{SYS}/Bios/Settings");
    let at = json!({"ApplyTime": "OnReset"});
    let r = api
        .patch(
            &settings,
            json!({"@Redfish.SettingsApplyTime": at, "Attributes": {"ProcTurboMode": "Disabled"}}),
        )
        .await;
    let first = r
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let del = api
        .req(
            Method::DELETE,
            &format!("{MGR}/Oem/Dell/Jobs/{first}"),
            None,
            &[],
        )
        .await;
    assert_eq!(del.status, StatusCode::OK, "{del}");
    let r = api
        .patch(&settings, json!({"@Redfish.SettingsApplyTime": at, "Attributes": {"ProcVirtualization": "Disabled"}}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let task = r.header("location").unwrap();
    // Longer than the jobs' watchers take to look.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    api.reset(SYS, "On").await;
    assert_eq!(
        api.finish_task(&task, Duration::from_secs(10)).await.body["TaskState"],
        json!("Completed")
    );
    let attrs = api.get(&format!("{SYS}/Bios")).await.body["Attributes"].clone();
    assert_eq!(
        (
            attrs["ProcTurboMode"].as_str(),
            attrs["ProcVirtualization"].as_str()
        ),
        (Some("Disabled"), Some("Disabled"))
    );
}

/// An import of `attrs` in the BIOS component, with `extra` parameters.
fn bios_import(attrs: &str, extra: Value) -> Value {
    let mut b = json!({
        "ShareParameters": {"Target": ["BIOS"]},
        "ImportBuffer": format!("<SystemConfiguration><Component FQDD=\"BIOS.Setup.1-1\">{attrs}</Component></SystemConfiguration>"),
    });
    if let (Some(b), Some(extra)) = (b.as_object_mut(), extra.as_object()) {
        b.extend(extra.clone());
    }
    b
}

/// An SCP's BIOS component: checked as `Bios/Settings` checks it, staged,
/// and applied by the reboot the import makes (or, with `NoReboot`, the
/// next one), the job completing once the machine has started with it; a
/// host that is off is started for it and, with `HostPowerState` `Off`,
/// turned off again.
#[tokio::test]
async fn an_scp_bios_component_is_applied_by_the_reboot_the_import_makes() {
    let api = Api::own_endpoint("idrac9");
    let target = import_target(&api).await;
    let bios = format!("{SYS}/Bios");
    let attr = |v: &Value, name: &str| v["Attributes"][name].clone();
    api.reset(SYS, "On").await;
    for (attrs, what) in [
        ("<Attribute Name=\"ProcVirtualization\">Sometimes</Attribute>", "a value outside the list"),
        ("<Attribute Name=\"PowerOnDelaySeconds\">9000</Attribute>", "out of range"),
        ("<Attribute Name=\"PowerOnDelaySeconds\">soon</Attribute>", "not a number"),
        ("<Attribute Name=\"NoSuchSetting\">On</Attribute>", "unknown"),
        ("<Attribute Name=\"ProcVirtualization\">Disabled</Attribute><Attribute Name=\"NoSuchSetting\">On</Attribute>", "one unknown among good ones"),
    ] {
        let r = api.post(&target, bios_import(attrs, json!({}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{what}: {r}");
        assert_eq!(r.message_ids(), ["ActionParameterValueError", "SYS067"], "{what}");
    }
    let settings = api.get(&format!("{bios}/Settings")).await.body;
    assert!(
        attr(&settings, "ProcVirtualization").is_null(),
        "nothing staged: {settings}"
    );

    let r = api
        .post(
            &target,
            bios_import(
                "<Attribute Name=\"ProcVirtualization\">Disabled</Attribute><Attribute Name=\"PowerOnDelaySeconds\">30</Attribute>",
                json!({}),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let settings = api.get(&format!("{bios}/Settings")).await.body;
    assert_eq!(attr(&settings, "ProcVirtualization"), "Disabled", "staged");
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS053", "{done}");
    let now = api.get(&bios).await.body;
    assert_eq!(
        (
            attr(&now, "ProcVirtualization"),
            attr(&now, "PowerOnDelaySeconds")
        ),
        (json!("Disabled"), json!(30)),
        "applied by the reboot"
    );
    assert_eq!(api.get(SYS).await.body["PowerState"], "On");
    // The same values again: nothing to apply, no reboot.
    let r = api
        .post(
            &target,
            bios_import(
                "<Attribute Name=\"ProcVirtualization\">Disabled</Attribute>",
                json!({}),
            ),
        )
        .await;
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS069", "{done}");

    // NoReboot: the job waits for a reboot someone else makes.
    let r = api
        .post(
            &target,
            bios_import(
                "<Attribute Name=\"ProcVirtualization\">Enabled</Attribute>",
                json!({"ShutdownType": "NoReboot"}),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let location = r.header("location").unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        api.get(&location).await.status,
        StatusCode::ACCEPTED,
        "waiting"
    );
    assert_eq!(
        attr(&api.get(&bios).await.body, "ProcVirtualization"),
        "Disabled"
    );
    api.reset(SYS, "ForceRestart").await;
    let (done, _) = poll(&api, &location).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS053", "{done}");
    assert_eq!(
        attr(&api.get(&bios).await.body, "ProcVirtualization"),
        "Enabled"
    );

    // A host that is off is started to apply them, and left off as asked.
    api.reset(SYS, "ForceOff").await;
    let r = api
        .post(
            &target,
            bios_import(
                "<Attribute Name=\"NumLock\">Off</Attribute>",
                // As Dell's Ansible module spells HostPowerState.
                json!({"EndHostPowerState": "Off"}),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    let (done, _) = poll(&api, &r.header("location").unwrap()).await;
    assert_eq!(done.body["Oem"]["Dell"]["MessageId"], "SYS053", "{done}");
    assert_eq!(attr(&api.get(&bios).await.body, "NumLock"), "Off");
    assert_eq!(api.get(SYS).await.body["PowerState"], "Off");
}

/// An iDRAC serves its BIOS attribute registry below the Bios resource,
/// where Dell's scripts read it; other profiles only under Registries.
#[tokio::test]
async fn the_bios_registry_is_below_the_bios_on_an_idrac() {
    let api = Api::own_endpoint("idrac9");
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    let reg = api.get(&format!("{SYS}/Bios/BiosRegistry")).await;
    assert_eq!(reg.status, StatusCode::OK, "{reg}");
    assert_eq!(reg.body["Id"], bios["AttributeRegistry"]);
    assert_eq!(reg.body["@odata.id"], format!("{SYS}/Bios/BiosRegistry"));
    let attrs = reg.body["RegistryEntries"]["Attributes"]
        .as_array()
        .unwrap();
    assert!(attrs
        .iter()
        .any(|a| a["AttributeName"] == "ProcVirtualization"));
    let api = Api::new(1);
    let sys = api.system(0).await;
    let r = api.get(&format!("{sys}/Bios/BiosRegistry")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// Dell's BIOS one-time boot (what Dell's scripts and the quads tooling
/// set instead of a Redfish override): `OneTimeBootMode` with a UEFI boot
/// device by FQDD, applied by a configuration job, boots that device at
/// the reset that applies it, then returns to Disabled. A device the
/// BIOS does not have is refused, nothing staged.
#[tokio::test]
async fn the_bios_one_time_boot_device_boots_at_the_reset_that_applies_it() {
    let api = Api::own_endpoint("idrac9");
    let settings = format!("{SYS}/Bios/Settings");
    let r = api
        .patch(
            &settings,
            json!({"Attributes": {"OneTimeBootMode": "OneTimeUefiBootSeq", "OneTimeUefiBootSeqDev": "Unknown.Unknown.1-1"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"], "{r}");
    assert_eq!(api.get(&settings).await.body["Attributes"], json!({}));
    let registry = api.get(&format!("{SYS}/Bios/BiosRegistry")).await.body;
    let devices = registry["RegistryEntries"]["Attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["AttributeName"] == "OneTimeUefiBootSeqDev")
        .map(|a| a["Value"].to_string())
        .unwrap();
    assert!(devices.contains("Optical.iDRACVirtual.1-1"), "{devices}");

    api.reset(SYS, "On").await;
    apply_at_reset(
        &api,
        json!({"OneTimeBootMode": "OneTimeUefiBootSeq", "OneTimeUefiBootSeqDev": "Optical.iDRACVirtual.1-1"}),
    )
    .await;
    let booted = |api: &Api| {
        let backend = api.state.core.backend.clone();
        async move {
            let sys = backend.system("System.Embedded.1").await.unwrap();
            sys.bmc.last_boot.unwrap().target
        }
    };
    assert_eq!(booted(&api).await, shoal_emulator::model::BootTarget::Cd);
    let bios = api.get(&format!("{SYS}/Bios")).await.body;
    assert_eq!(bios["Attributes"]["OneTimeBootMode"], "Disabled", "spent");
    assert_eq!(
        bios["Attributes"]["OneTimeUefiBootSeqDev"],
        "Optical.iDRACVirtual.1-1"
    );
    // The next start follows the boot order again.
    api.reset(SYS, "ForceRestart").await;
    assert_eq!(booted(&api).await, shoal_emulator::model::BootTarget::Hdd);
}

/// An iDRAC's integrated NIC under its Chassis, Ids as a captured iDRAC 9
/// serves them: adapter `NIC.Integrated.1`, ports `NIC.Integrated.1-N`,
/// functions `NIC.Integrated.1-N-1` (the EthernetInterfaces' Ids); every
/// link resolves, and what is not there is 404.
#[tokio::test]
async fn idrac_network_adapters_carry_the_fqdds_of_its_nics() {
    let api = Api::own_endpoint("idrac9");
    let chassis = api.get(SYS).await.body["Links"]["Chassis"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = api.get(&format!("{chassis}/NetworkAdapters")).await.body;
    let adapter = format!("{chassis}/NetworkAdapters/NIC.Integrated.1");
    assert_eq!(list["Members"], json!([{ "@odata.id": adapter }]), "{list}");
    let a = api.get(&adapter).await.body;
    let functions = a["Controllers"][0]["Links"]["NetworkDeviceFunctions"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!functions.is_empty());
    let nics = api.get(&format!("{SYS}/EthernetInterfaces")).await.body;
    for (i, f) in functions.iter().enumerate() {
        let f = api.get(f["@odata.id"].as_str().unwrap()).await;
        assert_eq!(f.status, StatusCode::OK, "{f}");
        let n = i + 1;
        assert_eq!(f.body["Id"], format!("NIC.Integrated.1-{n}-1"));
        let eth = f.body["Links"]["EthernetInterfaces"][0]["@odata.id"]
            .as_str()
            .unwrap();
        assert_eq!(nics["Members"][i]["@odata.id"], eth);
        let nic = api.get(eth).await.body;
        assert_eq!(f.body["Ethernet"]["MACAddress"], nic["MACAddress"]);
        for port in [
            &f.body["PhysicalPortAssignment"],
            &f.body["Links"]["PhysicalPortAssignment"],
            &f.body["Links"]["PhysicalNetworkPortAssignment"],
        ] {
            let port = port["@odata.id"].as_str().unwrap();
            let p = api.get(port).await;
            assert_eq!(p.status, StatusCode::OK, "{port}: {p}");
            assert_eq!(p.body["Id"], format!("NIC.Integrated.1-{n}"));
        }
    }
    for missing in [
        format!("{chassis}/NetworkAdapters/1"),
        format!("{adapter}/Fans"),
        format!("{adapter}/NetworkPorts/NIC.Integrated.1-9"),
        format!("{adapter}/NetworkDeviceFunctions/NIC.Integrated.1-1"),
    ] {
        let r = api.get(&missing).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{missing}: {r}");
        assert_eq!(r.message_ids(), ["ResourceMissingAtURI"], "{missing}: {r}");
    }
}
