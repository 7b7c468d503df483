//! Every resource: reachable, typed with a schema that exists, and the
//! behaviour of virtual media, BIOS settings, secure boot and tasks.

use std::collections::{BTreeSet, VecDeque};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::api::metadata;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};

use crate::common::Api;

fn links(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "@odata.id" {
                    if let Some(s) = x.as_str() {
                        out.push(s.split('#').next().unwrap().to_string());
                    }
                } else {
                    links(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| links(x, out)),
        _ => {}
    }
}

/// Walks every link from the service root: each resource answers 200, its
/// `@odata.id` is its URL and its `@odata.type` names a schema version that
/// exists in DSP8010 and is referenced by `$metadata`.
#[tokio::test]
async fn every_linked_resource_is_served_with_a_valid_type() {
    let api = Api::new(2);
    let meta = metadata::metadata_document();
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from(["/redfish/v1".to_string()]);
    while let Some(uri) = queue.pop_front() {
        if !seen.insert(uri.clone()) {
            continue;
        }
        let r = api.get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        assert_eq!(r.body["@odata.id"], json!(uri), "{uri}");
        let ty = r.body["@odata.type"]
            .as_str()
            .unwrap_or_else(|| panic!("{uri} has no @odata.type"));
        let ns = ty.trim_start_matches('#').rsplit_once('.').unwrap().0;
        let stem = ns.split('.').next().unwrap();
        assert!(
            meta.contains(&format!("Namespace=\"{stem}\"")),
            "{uri}: $metadata lacks {stem}"
        );
        if ns.contains(".v") {
            assert!(
                metadata::namespace_exists(ns),
                "{uri}: {ns} is not in DSP8010"
            );
            assert!(
                meta.contains(&format!("Namespace=\"{ns}\"")),
                "{uri}: $metadata lacks {ns}"
            );
        }
        assert!(r.header("allow").is_some(), "{uri}: no Allow header");
        let mut found = Vec::new();
        links(&r.body, &mut found);
        queue.extend(found.into_iter().filter(|l| l.starts_with("/redfish/v1")));
    }
    assert!(seen.len() > 50, "only {} resources reached", seen.len());
    for must in [
        "/Bios/Settings",
        "/SecureBoot/SecureBootDatabases/db",
        "/VirtualMedia/Cd",
        "/Storage/1/Drives/disk0",
        "/Thermal",
        "/EnvironmentMetrics",
        "/Registries/Base",
    ] {
        assert!(
            seen.iter().any(|s| s.ends_with(must)),
            "{must} not reachable"
        );
    }
}

#[tokio::test]
async fn metadata_and_schemas_are_served_offline() {
    let api = Api::new(1);
    let r = api.get("/redfish/v1/$metadata").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/xml; charset=utf-8")
    );
    let r = api.get("/redfish/v1/Schemas/ComputerSystem_v1.xml").await;
    assert!(r
        .body
        .as_str()
        .unwrap()
        .contains("Namespace=\"ComputerSystem.v1_22_0\""));
    let r = api.get("/redfish/v1/odata").await;
    assert!(r.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["name"] == "Systems"));
    let r = api.get("/redfish/v1/Registries/Base/Base").await;
    assert!(r.body["Messages"]["PropertyValueNotInList"]["NumberOfArgs"] == json!(2));
    // The registry the Bios resource names describes its attributes.
    let sys = api.system(0).await;
    let registry_name = api.get(&format!("{sys}/Bios")).await.body["AttributeRegistry"].clone();
    // Its file is found under that name (as Ansible's GetBiosRegistries
    // looks it up: Registries/<AttributeRegistry>).
    let file = api
        .get(&format!(
            "/redfish/v1/Registries/{}",
            registry_name.as_str().unwrap()
        ))
        .await
        .body;
    assert_eq!(file["Registry"], registry_name);
    assert_eq!(file["Id"], registry_name);
    let uri = file["Location"][0]["Uri"].as_str().unwrap().to_string();
    let reg = api.get(&uri).await.body;
    let attrs = reg["RegistryEntries"]["Attributes"].as_array().unwrap();
    let turbo = attrs
        .iter()
        .find(|a| a["AttributeName"] == "ProcTurboMode")
        .unwrap();
    assert_eq!(turbo["Type"], "Enumeration");
    assert_eq!(turbo["Value"][1]["ValueName"], "Disabled");
    let ns = reg["@odata.type"]
        .as_str()
        .unwrap()
        .trim_start_matches('#')
        .rsplit_once('.')
        .unwrap()
        .0
        .to_string();
    assert!(metadata::namespace_exists(&ns), "{ns}");
}

#[tokio::test]
async fn virtual_media_insert_and_eject_through_both_paths() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let id = sys.rsplit('/').next().unwrap().to_string();
    let mgr = format!("/redfish/v1/Managers/{id}/VirtualMedia/Cd");
    let via_sys = format!("{sys}/VirtualMedia/Cd");
    let r = api.post(&format!("{mgr}/Actions/VirtualMedia.InsertMedia"), json!({
        "Image": "http://192.0.2.1/deploy.iso", "Inserted": true, "WriteProtected": true,
        "TransferProtocolType": "HTTP", "TransferMethod": "Stream", "UserName": "u", "Password": "p"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let m = api.get(&via_sys).await.body;
    assert_eq!(
        (
            m["Inserted"].clone(),
            m["Image"].clone(),
            m["ImageName"].clone()
        ),
        (
            json!(true),
            json!("http://192.0.2.1/deploy.iso"),
            json!("deploy.iso")
        )
    );
    assert_eq!(m["Password"], json!(null), "password never shown");
    assert_eq!(m["@odata.id"], json!(via_sys));
    let again = api
        .post(
            &format!("{via_sys}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": "http://192.0.2.1/x.iso"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);

    // Booting Cd Once records the image and consumes the override.
    api.patch(
        &sys,
        json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}),
    )
    .await;
    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "On"}),
    )
    .await;
    let rec = api
        .state
        .core
        .backend
        .system(&id)
        .await
        .unwrap()
        .bmc
        .last_boot
        .unwrap();
    assert_eq!(rec.media.as_deref(), Some("http://192.0.2.1/deploy.iso"));

    let r = api
        .post(
            &format!("{via_sys}/Actions/VirtualMedia.EjectMedia"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let m = api.get(&mgr).await.body;
    assert_eq!(
        (m["Inserted"].clone(), m["Image"].clone()),
        (json!(false), json!(null))
    );

    for (body, id) in [
        (json!({}), "ActionParameterMissing"),
        (
            json!({"Image": "not a url"}),
            "ActionParameterValueFormatError",
        ),
        (
            json!({"Image": "http://h/x.iso", "TransferProtocolType": "Carrier"}),
            "ActionParameterValueNotInList",
        ),
        (
            json!({"Image": "http://h/x.iso", "TransferProtocolType": "NFS"}),
            "ActionParameterValueFormatError",
        ),
        (
            json!({"Image": "http://h/x.iso", "Inserted": "yes"}),
            "ActionParameterValueTypeError",
        ),
        (
            json!({"Image": "http://h/x.iso", "Speed": 1}),
            "ActionParameterUnknown",
        ),
    ] {
        let r = api
            .post(
                &format!("{mgr}/Actions/VirtualMedia.InsertMedia"),
                body.clone(),
            )
            .await;
        assert_eq!(r.message_ids(), [id], "{body}");
    }
    assert_eq!(api.get(&mgr).await.body["Inserted"], json!(false));
    assert_eq!(
        api.get(&format!("/redfish/v1/Managers/{id}/VirtualMedia/Tape"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn slow_insert_media_runs_as_a_task_with_a_monitor() {
    let opts = FakeOptions {
        media_delay: std::time::Duration::from_millis(200),
        ..Default::default()
    };
    let api = Api::with(fake_systems(1), opts, AuthStore::open(), FeatureSet::Full);
    let sys = api.system(0).await;
    let r = api
        .post(
            &format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": "https://192.0.2.1/big.iso"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let monitor = r.header("location").expect("task monitor");
    assert_eq!(r.body["TaskState"], "Running");
    let task = r.body["@odata.id"].as_str().unwrap().to_string();
    assert_eq!(api.get(&monitor).await.status, StatusCode::ACCEPTED);
    assert_eq!(
        api.get(&format!("{sys}/VirtualMedia/Cd")).await.body["Inserted"],
        json!(false)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let m = api.get(&monitor).await;
        if m.status == StatusCode::NO_CONTENT {
            break;
        }
        assert_eq!(m.status, StatusCode::ACCEPTED);
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(api.get(&task).await.body["TaskState"], "Completed");
    assert_eq!(
        api.get(&format!("{sys}/VirtualMedia/Cd")).await.body["Inserted"],
        json!(true)
    );
    let tasks = api.get("/redfish/v1/TaskService/Tasks").await.body;
    assert_eq!(tasks["Members@odata.count"], json!(1));
}

#[tokio::test]
async fn bios_settings_are_pending_until_reset() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let bios = api.get(&format!("{sys}/Bios")).await.body;
    let settings_uri = bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        bios["@Redfish.Settings"]["SupportedApplyTimes"],
        json!(["OnReset"])
    );
    assert_eq!(bios["Attributes"]["ProcTurboMode"], "Enabled");

    let r = api
        .patch(
            &settings_uri,
            json!({"Attributes": {"ProcTurboMode": "Disabled", "PowerOnDelaySeconds": 30}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        api.get(&settings_uri).await.body["Attributes"]["ProcTurboMode"],
        "Disabled"
    );
    assert_eq!(
        api.get(&format!("{sys}/Bios")).await.body["Attributes"]["ProcTurboMode"],
        "Enabled"
    );

    for (attrs, id) in [
        (json!({"Nope": 1}), "PropertyUnknown"),
        (json!({"ProcTurboMode": "Turbo"}), "PropertyValueNotInList"),
        (json!({"QuietBoot": "yes"}), "PropertyValueTypeError"),
        (
            json!({"PowerOnDelaySeconds": 10_000}),
            "PropertyValueOutOfRange",
        ),
    ] {
        let r = api.patch(&settings_uri, json!({"Attributes": attrs})).await;
        assert_eq!(r.message_ids(), [id], "{attrs}");
    }
    let r = api
        .patch(
            &settings_uri,
            json!({"Attributes": {"NumLock": "Off", "Bad": 1}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        api.get(&settings_uri).await.body["Attributes"]
            .get("NumLock")
            .is_none(),
        "half-applied"
    );
    let r = api
        .patch(
            &format!("{sys}/Bios"),
            json!({"Attributes": {"NumLock": "Off"}}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::METHOD_NOT_ALLOWED,
        "current settings are read-only"
    );

    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "ForceRestart"}),
    )
    .await;
    let bios = api.get(&format!("{sys}/Bios")).await.body;
    assert_eq!(bios["Attributes"]["ProcTurboMode"], "Disabled");
    assert_eq!(bios["Attributes"]["PowerOnDelaySeconds"], 30);
    assert_eq!(api.get(&settings_uri).await.body["Attributes"], json!({}));

    let r = api
        .post(&format!("{sys}/Bios/Actions/Bios.ResetBios"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "ForceRestart"}),
    )
    .await;
    assert_eq!(
        api.get(&format!("{sys}/Bios")).await.body["Attributes"]["ProcTurboMode"],
        "Enabled"
    );
}

#[tokio::test]
async fn secure_boot_takes_effect_at_the_next_boot() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let sb = format!("{sys}/SecureBoot");
    let r = api.patch(&sb, json!({"SecureBootEnable": true})).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["SecureBootCurrentBoot"], "Disabled");
    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "On"}),
    )
    .await;
    assert_eq!(api.get(&sb).await.body["SecureBootCurrentBoot"], "Enabled");
    let r = api
        .post(
            &format!("{sb}/Actions/SecureBoot.ResetKeys"),
            json!({"ResetKeysType": "DeleteAllKeys"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(api.get(&sb).await.body["SecureBootMode"], "SetupMode");
    let r = api
        .post(
            &format!("{sb}/Actions/SecureBoot.ResetKeys"),
            json!({"ResetKeysType": "Forget"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["ActionParameterValueNotInList"]);
    let r = api.patch(&sb, json!({"SecureBootMode": "UserMode"})).await;
    assert_eq!(r.message_ids(), ["PropertyNotWritable"]);
    // Legacy mode cannot run Secure Boot.
    api.patch(&sb, json!({"SecureBootEnable": false})).await;
    api.patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "Legacy"}}))
        .await;
    let r = api.patch(&sb, json!({"SecureBootEnable": true})).await;
    assert_eq!(r.message_ids(), ["PropertyValueConflict"]);
}

#[tokio::test]
async fn indicator_led_and_location_indicator_agree() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let id = sys.rsplit('/').next().unwrap();
    let r = api
        .patch(&sys, json!({"LocationIndicatorActive": true}))
        .await;
    assert_eq!(r.body["IndicatorLED"], "Blinking");
    let chassis = api.get(&format!("/redfish/v1/Chassis/{id}")).await.body;
    assert_eq!(chassis["LocationIndicatorActive"], json!(true));
    let r = api
        .patch(
            &format!("/redfish/v1/Chassis/{id}"),
            json!({"IndicatorLED": "Off"}),
        )
        .await;
    assert_eq!(r.body["LocationIndicatorActive"], json!(false));
    let r = api
        .patch(
            &sys,
            json!({"IndicatorLED": "Lit", "LocationIndicatorActive": false}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueConflict"]);
}

#[tokio::test]
async fn feature_sets_limit_the_resources() {
    let minimum = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        AuthStore::open(),
        FeatureSet::Minimum,
    );
    let sys = minimum.system(0).await;
    let body = minimum.get(&sys).await.body;
    assert!(body.get("Bios").is_none() && body.get("VirtualMedia").is_none());
    assert_eq!(
        minimum.get(&format!("{sys}/Bios")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        minimum.get(&format!("{sys}/VirtualMedia")).await.status,
        StatusCode::NOT_FOUND
    );
    let vmedia = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        AuthStore::open(),
        FeatureSet::Vmedia,
    );
    let sys = vmedia.system(0).await;
    assert_eq!(
        vmedia.get(&format!("{sys}/VirtualMedia")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        vmedia.get(&format!("{sys}/SecureBoot")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn unknown_urls_and_methods_get_redfish_errors() {
    let api = Api::new(1);
    let r = api.get("/redfish/v1/Nowhere").await;
    assert_eq!(
        (r.status, r.message_ids()),
        (
            StatusCode::NOT_FOUND,
            vec!["ResourceMissingAtURI".to_string()]
        )
    );
    let r = api
        .req(axum::http::Method::DELETE, "/redfish/v1/Systems", None, &[])
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.message_ids(), ["OperationNotAllowed"]);
    assert!(r.header("allow").is_some());
}

#[tokio::test]
async fn insert_media_parameters_that_would_reach_the_domain_xml_are_checked() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let insert = format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia");
    let long = format!("http://192.0.2.1/{}.iso", "a".repeat(3000));
    for (body, param) in [
        (json!({"Image": long}), "Image"),
        (json!({"Image": "http://192.0.2.1/café.iso"}), "Image"),
        (json!({"Image": "http://192.0.2.1/a\u{FFFF}.iso"}), "Image"),
        (json!({"Image": "http://192.0.2.1/a\"b.iso"}), "Image"),
        (
            json!({"Image": "http://192.0.2.1/x.iso", "UserName": "u\u{1}"}),
            "UserName",
        ),
        (
            json!({"Image": "http://192.0.2.1/x.iso", "UserName": "u", "Password": "p\u{FFFE}"}),
            "Password",
        ),
        (
            json!({"Image": "http://192.0.2.1/x.iso", "Password": "p".repeat(300)}),
            "Password",
        ),
    ] {
        let r = api.post(&insert, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(
            r.message_ids(),
            ["ActionParameterValueFormatError"],
            "{body}"
        );
        assert_eq!(
            r.body["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][1],
            param
        );
    }
    assert_eq!(
        api.get(&format!("{sys}/VirtualMedia/Cd")).await.body["Inserted"],
        json!(false)
    );
    let r = api
        .post(
            &insert,
            json!({"Image": "http://192.0.2.1/a%20b.iso", "UserName": "Ünïcode user", "Password": "p@ss w0rd"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}

#[tokio::test]
async fn an_insert_in_progress_holds_its_slot() {
    let opts = FakeOptions {
        media_delay: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let api = Api::with(fake_systems(1), opts, AuthStore::open(), FeatureSet::Full);
    let sys = api.system(0).await;
    let id = sys.rsplit('/').next().unwrap().to_string();
    let cd = format!("{sys}/VirtualMedia/Cd");
    let insert = |base: String, image: &'static str| {
        let api = &api;
        async move {
            api.post(
                &format!("{base}/Actions/VirtualMedia.InsertMedia"),
                json!({ "Image": image }),
            )
            .await
        }
    };
    let first = insert(cd.clone(), "http://192.0.2.1/first.iso").await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    // The same slot, reached through the System or the Manager: refused
    // while the first download runs, and so is an eject.
    let mgr_cd = format!("/redfish/v1/Managers/{id}/VirtualMedia/Cd");
    for base in [cd.clone(), mgr_cd] {
        let r = insert(base, "http://192.0.2.1/second.iso").await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
        assert_eq!(r.message_ids(), ["ResourceInUse"]);
    }
    let r = api
        .post(&format!("{cd}/Actions/VirtualMedia.EjectMedia"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    // The other slot is free.
    let r = insert(
        format!("{sys}/VirtualMedia/Floppy"),
        "http://192.0.2.1/f.img",
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let monitor = first.header("location").unwrap();
    let done = api
        .finish_task(&monitor, std::time::Duration::from_secs(5))
        .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT);
    let media = api.get(&cd).await.body;
    assert_eq!(
        media["Image"], "http://192.0.2.1/first.iso",
        "the first one won"
    );
    assert_eq!(
        insert(cd.clone(), "http://192.0.2.1/third.iso")
            .await
            .status,
        StatusCode::CONFLICT,
        "now it holds media"
    );
    let r = api
        .post(&format!("{cd}/Actions/VirtualMedia.EjectMedia"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        insert(cd.clone(), "http://192.0.2.1/fourth.iso")
            .await
            .status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn the_admin_endpoint_refuses_unbounded_fault_rules() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let faults = std::sync::Arc::new(shoal_emulator::faults::Faults::default());
    let backend =
        shoal_emulator::backend::fake::FakeBackend::new(fake_systems(1), FakeOptions::default())
            .unwrap();
    let admin =
        shoal_emulator::admin::router(faults.clone(), std::sync::Arc::new(backend), "t0ken");
    let put = |body: String| {
        let admin = admin.clone();
        async move {
            let req = axum::http::Request::builder()
                .method("PUT")
                .uri("/shoal/v1/faults")
                .header("Authorization", "Bearer t0ken")
                .body(Body::from(body))
                .unwrap();
            let r = admin.oneshot(req).await.unwrap();
            let status = r.status();
            let bytes = r.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    for (rule, key) in [
        (json!({"latency_ms": u64::MAX}), "rules[0].latency_ms"),
        (json!({"latency_ms": 60_001}), "rules[0].latency_ms"),
        (json!({"latency_ms": -5}), "rules[0].latency_ms"),
        (json!({"latency_ms": 1e300}), "rules[0].latency_ms"),
        (
            json!({"power_delay_ms": u64::MAX}),
            "rules[0].power_delay_ms",
        ),
        (json!({"error_rate": 1.5}), "rules[0].error_rate"),
        (json!({"drop_rate": -0.5}), "rules[0].drop_rate"),
        (json!({"status": 70_000}), "rules[0].status"),
    ] {
        let (status, body) = put(json!({"rules": [rule]}).to_string()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{rule}");
        let why = body["error"].as_str().unwrap();
        assert!(why.starts_with(key), "{rule}: {why}");
    }
    let many: Vec<Value> = (0..300).map(|_| json!({})).collect();
    let (status, body) = put(json!({ "rules": many }).to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().starts_with("rules:"));
    assert!(faults.config().rules.is_empty(), "nothing replaced");
    let (status, _) = put(json!({"rules": [{"latency_ms": 60_000}]}).to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(faults.config().rules[0].latency_ms, 60_000);
}

/// `Manager.Reset`: refused without a ResetType it offers; taken with 204,
/// after which (a second later) that BMC is away: on a service of many
/// BMCs only its system answers 503 with Retry-After, the others serve on.
#[tokio::test]
async fn a_manager_reset_takes_only_that_bmc_away() {
    let api = Api::new(2);
    let (a, b) = (api.system(0).await, api.system(1).await);
    let mgr = a.replace("/Systems/", "/Managers/");
    let m = api.get(&mgr).await.body;
    let action = &m["Actions"]["#Manager.Reset"];
    assert_eq!(
        action["ResetType@Redfish.AllowableValues"],
        json!(["GracefulRestart", "ForceRestart"])
    );
    let target = action["target"].as_str().unwrap().to_string();
    for (body, id) in [
        (json!({}), "ActionParameterMissing"),
        (json!({"ResetType": "On"}), "ActionParameterValueNotInList"),
    ] {
        let r = api.post(&target, body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
        assert_eq!(r.message_ids()[0], id);
    }
    assert_eq!(api.get(&a).await.status, StatusCode::OK, "nothing happened");
    let r = api
        .post(&target, json!({"ResetType": "GracefulRestart"}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let r = api.get(&a).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{r}");
    assert!(r.header("retry-after").is_some());
    assert_eq!(api.get(&b).await.status, StatusCode::OK);
}

/// Each Manager links its NetworkProtocol, with the vendor's default host
/// name. Its NTP client is writable (as DMTF's protocol validator and
/// Ansible set it): an array PATCH where `null` removes an entry and `{}`
/// keeps one; bad entries are refused whole, nothing changed. The served
/// protocols are what the process listens on: not writable. What is
/// bound is checked where something listens (`ipmi.rs`, Ansible).
#[tokio::test]
async fn the_manager_network_protocol_sets_ntp_and_names_the_bmc() {
    let api = Api::new(1);
    let mgr = manager_of(&api, &api.system(0).await).await;
    let link = api.get(&mgr).await.body["NetworkProtocol"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(link, format!("{mgr}/NetworkProtocol"));
    let np = api.get(&link).await;
    assert_eq!(np.status, StatusCode::OK, "{np}");
    assert_eq!(np.body["HostName"], "node-0-bmc");
    assert_eq!(np.body["IPMI"]["ProtocolEnabled"], false, "nothing bound");
    assert_eq!(
        np.body["NTP"],
        json!({"ProtocolEnabled": false, "NTPServers": []})
    );

    let ntp = |body: Value| json!({ "NTP": body });
    let r = api
        .patch(
            &link,
            ntp(json!({"ProtocolEnabled": true, "NTPServers": ["192.0.2.1", "ntp.example.org"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(
        r.body["NTP"],
        json!({"ProtocolEnabled": true, "NTPServers": ["192.0.2.1", "ntp.example.org"]})
    );
    // Array PATCH: {} keeps the first, null removes the second, one added.
    let r = api
        .patch(
            &link,
            ntp(json!({"NTPServers": [{}, null, "198.51.100.7"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(
        r.body["NTP"]["NTPServers"],
        json!(["192.0.2.1", "198.51.100.7"])
    );
    let kept = api.get(&link).await.body;
    assert_eq!(
        kept["NTP"], r.body["NTP"],
        "what the PATCH answered is kept"
    );

    for (body, want) in [
        (
            json!({"SSH": {"ProtocolEnabled": true}}),
            "PropertyNotWritable",
        ),
        (json!({"HTTPS": {"Port": 8443}}), "PropertyNotWritable"),
        (
            ntp(json!({"NTPServers": "192.0.2.1"})),
            "PropertyValueTypeError",
        ),
        (ntp(json!({"NTPServers": [5]})), "PropertyValueTypeError"),
        (
            ntp(json!({"NTPServers": ["two words"]})),
            "PropertyValueFormatError",
        ),
        (
            ntp(json!({"NTPServers": ["bad\u{7}bell"]})),
            "PropertyValueFormatError",
        ),
        (
            ntp(json!({"NTPServers": ["a", "b", "c", "d", "e"]})),
            "PropertyValueOutOfRange",
        ),
        (
            ntp(json!({"ProtocolEnabled": "yes"})),
            "PropertyValueTypeError",
        ),
    ] {
        let r = api.patch(&link, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [want], "{body}: {r}");
    }
    assert_eq!(api.get(&link).await.body, kept, "nothing changed");

    let api = Api::own_endpoint("idrac9");
    let tag = api.get("/redfish/v1/Systems/System.Embedded.1").await.body["SKU"]
        .as_str()
        .unwrap()
        .to_string();
    let np = api
        .get("/redfish/v1/Managers/iDRAC.Embedded.1/NetworkProtocol")
        .await
        .body;
    assert_eq!(np["HostName"], format!("idrac-{tag}"));
}

/// The admin endpoint's power loss: the hosts go off with their BMCs
/// (503 meanwhile), then power returns and each machine follows its
/// `PowerRestorePolicy`, set over Redfish. A request naming a system that
/// does not exist changes nothing.
#[tokio::test]
async fn a_power_loss_ends_as_each_power_restore_policy_says() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let api = Api::new(3);
    let admin = shoal_emulator::admin::router(
        api.state.core.faults.clone(),
        api.state.core.backend.clone(),
        "t0ken",
    );
    let post = |body: Value| {
        let admin = admin.clone();
        async move {
            let req = axum::http::Request::builder()
                .method("POST")
                .uri("/shoal/v1/faults/power-loss")
                .header("Authorization", "Bearer t0ken")
                .body(Body::from(body.to_string()))
                .unwrap();
            let r = admin.oneshot(req).await.unwrap();
            let status = r.status();
            let bytes = r.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let mut systems = Vec::new();
    for (i, (policy, on)) in [
        ("AlwaysOn", false),
        ("LastState", true),
        ("AlwaysOff", true),
    ]
    .into_iter()
    .enumerate()
    {
        let sys = api.system(i).await;
        let r = api
            .patch(&sys, json!({ "PowerRestorePolicy": policy }))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{r}");
        assert_eq!(r.body["PowerRestorePolicy"], policy);
        if on {
            api.reset(&sys, "On").await;
        }
        systems.push(sys);
    }
    let r = api
        .patch(&systems[0], json!({ "PowerRestorePolicy": "Sometimes" }))
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"], "{r}");

    let (status, body) = post(json!({"seconds": 1, "systems": ["node-0", "nobody"]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("nobody"), "{body}");
    assert_eq!(
        api.get(&systems[1]).await.body["PowerState"],
        "On",
        "nothing happened"
    );
    let (status, _) = post(json!({"seconds": 7200})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, body) = post(json!({"seconds": 1})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["systems"], json!(["node-0", "node-1", "node-2"]));
    assert_eq!(
        api.get(&systems[1]).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    for s in &systems {
        let id = s.rsplit('/').next().unwrap();
        let sys = api.state.core.backend.system(id).await.unwrap();
        assert_eq!(
            sys.power,
            shoal_emulator::model::PowerState::Off,
            "{s}: lost power"
        );
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let power = |i: usize| {
        let (api, s) = (&api, systems[i].clone());
        async move { api.get(&s).await.body["PowerState"].clone() }
    };
    loop {
        let now = (power(0).await, power(1).await, power(2).await);
        if now == (json!("On"), json!("On"), json!("Off")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "after the power returned: {now:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// `ServiceIdentification` is the one writable property of a Manager:
/// kept with the BMC's state, one line of text; anything else refused,
/// nothing changed.
#[tokio::test]
async fn a_manager_takes_its_service_identification_and_nothing_else() {
    let api = Api::new(1);
    let mgr = manager_of(&api, &api.system(0).await).await;
    assert_eq!(api.get(&mgr).await.body["ServiceIdentification"], "");
    let r = api
        .patch(&mgr, json!({"ServiceIdentification": "rack 7, slot 3"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["ServiceIdentification"], "rack 7, slot 3");
    for (body, want) in [
        (
            json!({"ServiceIdentification": 7}),
            "PropertyValueTypeError",
        ),
        (
            json!({"ServiceIdentification": "two\nlines"}),
            "PropertyValueFormatError",
        ),
        (
            json!({"ServiceIdentification": "x".repeat(256)}),
            "PropertyValueFormatError",
        ),
        (json!({"FirmwareVersion": "9"}), "PropertyNotWritable"),
        (json!({}), "EmptyJSON"),
    ] {
        let r = api.patch(&mgr, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [want], "{body}: {r}");
    }
    assert_eq!(
        api.get(&mgr).await.body["ServiceIdentification"],
        "rack 7, slot 3"
    );

    // Its ETag follows its state, not its clock: the same a second later,
    // another after a change, and a stale one is refused (412).
    let tag = api.get(&mgr).await.header("etag").expect("ETag");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        api.get(&mgr).await.header("etag").as_deref(),
        Some(tag.as_str())
    );
    let body = json!({"ServiceIdentification": "rack 8"});
    let r = api
        .req(
            axum::http::Method::PATCH,
            &mgr,
            Some(body.clone()),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_ne!(r.header("etag").as_deref(), Some(tag.as_str()));
    let r = api
        .req(
            axum::http::Method::PATCH,
            &mgr,
            Some(body),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "{r}");
}

/// The Manager of system `sys`, by its `Links.ManagedBy`.
async fn manager_of(api: &Api, sys: &str) -> String {
    api.get(sys).await.body["Links"]["ManagedBy"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A service that refuses power-off (`--disable-power-off`, sushy-tools'
/// `SUSHY_EMULATOR_DISABLE_POWER_OFF`): ForceOff and GracefulShutdown are
/// 400 with `ActionParameterNotSupported` and the machine stays on; the
/// other resets are taken.
#[tokio::test]
async fn a_service_that_refuses_power_off_keeps_its_machines_on() {
    let mut state = Api::new(1).state;
    state.core.power_off_disabled = true;
    let api = Api::of_state(state);
    let sys = api.system(0).await;
    api.reset(&sys, "On").await;
    for off in ["ForceOff", "GracefulShutdown"] {
        let r = api
            .post(
                &format!("{sys}/Actions/ComputerSystem.Reset"),
                json!({"ResetType": off}),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
        assert_eq!(r.message_ids(), ["ActionParameterNotSupported"], "{r}");
        assert_eq!(api.get(&sys).await.body["PowerState"], "On", "{off}");
    }
    api.reset(&sys, "ForceRestart").await;
    assert_eq!(api.get(&sys).await.body["PowerState"], "On");
}

/// sushy-tools' Chassis, as a service started as sushy-emulator serves it
/// (`api/enclosure`): at its UUID, its Id and Name redirected there,
/// enclosing every system's own Chassis, its LED set by PATCH under
/// If-Match, a bad value refused with nothing changed, and a Thermal that
/// follows the systems' power.
#[tokio::test]
async fn an_enclosure_holds_every_system_chassis_at_sushy_tools_paths() {
    use shoal_emulator::api::enclosure::Enclosure;
    use shoal_emulator::model::IndicatorLed;
    const UUID: &str = "15693887-7984-9484-3272-842188918912";
    let mut state = Api::new(2).state;
    state.enclosures = std::sync::Arc::new(vec![
        Enclosure::new(
            "SheetMetalChassis".into(),
            "Chassis".into(),
            UUID.parse().unwrap(),
            IndicatorLed::Lit,
        ),
        Enclosure::new(
            "Spare".into(),
            "Spare rack".into(),
            "48295861-2522-3561-6729-621118518810".parse().unwrap(),
            IndicatorLed::Off,
        ),
    ]);
    let api = Api::of_state(state);
    let enc = format!("/redfish/v1/Chassis/{UUID}");
    let list = api.get("/redfish/v1/Chassis").await.body;
    assert_eq!(list["Members@odata.count"], 4, "{list}");
    assert_eq!(list["Members"][0]["@odata.id"], enc);
    let sys = api.system(0).await;
    let sys_id = sys.rsplit('/').next().unwrap().to_string();
    let own = format!("/redfish/v1/Chassis/{sys_id}");
    let r = api.get(&enc).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["Id"], UUID);
    assert_eq!(r.body["Name"], "Chassis");
    assert_eq!(r.body["ChassisType"], "Enclosure");
    assert_eq!(r.body["IndicatorLED"], "Lit");
    assert_eq!(
        r.body["Links"]["ComputerSystems"].as_array().unwrap().len(),
        2
    );
    assert!(r.body["Links"]["Contains"]
        .as_array()
        .unwrap()
        .contains(&json!({"@odata.id": own})));
    assert_eq!(
        api.get(&own).await.body["Links"]["ContainedBy"]["@odata.id"],
        enc
    );
    // The second is empty, as sushy-tools serves all but the first.
    let spare = api
        .get("/redfish/v1/Chassis/48295861-2522-3561-6729-621118518810")
        .await
        .body;
    assert_eq!(spare["Links"]["ComputerSystems"], json!([]), "{spare}");
    // Id and Name lead to the UUID, subpaths kept.
    for alias in ["SheetMetalChassis", "Chassis"] {
        let r = api
            .get(&format!("/redfish/v1/Chassis/{alias}/Thermal"))
            .await;
        assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY, "{alias}: {r}");
        assert_eq!(r.header("location").unwrap(), format!("{enc}/Thermal"));
    }
    // A percent-encoded alias: the rest of the path is kept.
    let r = api.get("/redfish/v1/Chassis/Spare%20rack/Thermal").await;
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY, "{r}");
    assert_eq!(
        r.header("location").unwrap(),
        "/redfish/v1/Chassis/48295861-2522-3561-6729-621118518810/Thermal"
    );
    let r = api.get("/redfish/v1/Chassis/%43hassis").await;
    assert_eq!(r.header("location").unwrap(), enc);
    let r = api
        .req(
            Method::PATCH,
            "/redfish/v1/Chassis/Chassis",
            Some(json!({"IndicatorLED": "Off"})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::PERMANENT_REDIRECT, "{r}");
    // The query goes along; another spelling of the UUID redirects too.
    let r = api.get("/redfish/v1/Chassis/Chassis?$select=Name").await;
    assert_eq!(r.header("location").unwrap(), format!("{enc}?$select=Name"));
    let r = api.get(&enc.replace('-', "")).await;
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY, "{r}");
    assert_eq!(r.header("location").unwrap(), enc);
    // Thermal: a CPU reading per system, following its power.
    let cpu = |t: &Value| {
        t["Temperatures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["Name"] == "CPU Temp")
            .map(|m| m["ReadingCelsius"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    let before = cpu(&api.get(&format!("{enc}/Thermal")).await.body);
    assert_eq!(before.len(), 2);
    api.reset(&sys, "On").await;
    let after = cpu(&api.get(&format!("{enc}/Thermal")).await.body);
    assert_ne!(before, after);
    // The LED: a stale ETag and a bad value change nothing.
    let tag = api.get(&enc).await.header("etag").unwrap();
    let r = api
        .req(
            Method::PATCH,
            &enc,
            Some(json!({"IndicatorLED": "Dim"})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"], "{r}");
    let r = api
        .req(
            Method::PATCH,
            &enc,
            Some(json!({"IndicatorLED": "Blinking"})),
            &[("If-Match", "\"stale\"")],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "{r}");
    // The two LED properties disagreeing: refused, on the enclosure and on
    // a system's own Chassis alike.
    for url in [&enc, &own] {
        let r = api
            .req(
                Method::PATCH,
                url,
                Some(json!({"IndicatorLED": "Off", "LocationIndicatorActive": true})),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{url}: {r}");
        assert_eq!(r.message_ids(), ["PropertyValueConflict"], "{r}");
    }
    assert_eq!(api.get(&enc).await.body["IndicatorLED"], "Lit");
    let r = api
        .req(
            Method::PATCH,
            &enc,
            Some(json!({"IndicatorLED": "Blinking"})),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["IndicatorLED"], "Blinking");
    assert_eq!(r.body["LocationIndicatorActive"], true);
    // The systems' own LEDs are theirs.
    assert_ne!(api.get(&own).await.body["IndicatorLED"], "Blinking");
    // Without enclosures (Shoal's own inventories) nothing of this shows.
    let plain = Api::new(1);
    assert_eq!(plain.get(&enc).await.status, StatusCode::NOT_FOUND);
    let s = plain.system(0).await;
    let own = s.replace("/Systems/", "/Chassis/");
    assert!(plain.get(&own).await.body["Links"]
        .get("ContainedBy")
        .is_none());
}
