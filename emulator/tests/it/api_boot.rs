//! Boot override semantics, validation, ETags and concurrency.

use axum::http::{Method, StatusCode};
use serde_json::json;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{default_system, FeatureSet};
use shoal_emulator::model::{Arch, BootMode, BootOverride, BootTarget, PowerState};

use crate::common::Api;

fn uefi_http_once(uri: serde_json::Value) -> serde_json::Value {
    json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": uri}})
}

#[tokio::test]
async fn uefi_http_once_is_stored_reported_and_consumed_by_the_boot() {
    let api = Api::new(2);
    let sys = api.system(0).await;
    let before = api.get(&sys).await;
    assert_eq!(
        before.body["Boot"]["HttpBootUri"],
        json!(null),
        "unset reads as null"
    );
    assert!(
        before.body["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
            .as_array()
            .unwrap()
            .contains(&json!("UefiHttp"))
    );

    let r = api
        .patch(&sys, uefi_http_once(json!("http://192.0.2.1/boot.iso")))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let b = &api.get(&sys).await.body["Boot"];
    assert_eq!(b["BootSourceOverrideTarget"], "UefiHttp");
    assert_eq!(b["BootSourceOverrideEnabled"], "Once");
    assert_eq!(b["HttpBootUri"], "http://192.0.2.1/boot.iso");

    // The URI is per system: the other system is untouched.
    let other = api.system(1).await;
    assert_eq!(
        api.get(&other).await.body["Boot"]["HttpBootUri"],
        json!(null)
    );

    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let after = api.get(&sys).await.body;
    assert_eq!(after["PowerState"], "On");
    assert_eq!(after["Boot"]["BootSourceOverrideEnabled"], "Disabled");
    assert_eq!(after["Boot"]["BootSourceOverrideTarget"], "None");
    let id = after["Id"].as_str().unwrap();
    let s = api.state.core.backend.system(id).await.unwrap();
    let rec = s.bmc.last_boot.unwrap();
    assert_eq!(rec.target, BootTarget::UefiHttp);
    assert_eq!(rec.uri.as_deref(), Some("http://192.0.2.1/boot.iso"));
}

#[tokio::test]
async fn http_boot_uri_null_means_dhcp_and_continuous_persists() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    api.patch(&sys, uefi_http_once(json!("http://192.0.2.1/a.efi")))
        .await;
    let r = api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Continuous", "HttpBootUri": null}})).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["Boot"]["HttpBootUri"], json!(null));
    for reset in ["On", "ForceRestart", "PowerCycle"] {
        api.post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": reset}),
        )
        .await;
        assert_eq!(
            api.get(&sys).await.body["Boot"]["BootSourceOverrideEnabled"],
            "Continuous"
        );
    }
}

#[tokio::test]
async fn validation_errors_carry_base_messages_and_change_nothing() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let before = api.get(&sys).await.body;
    let cases = [
        (
            json!({"Boot": {"BootSourceOverrideTarget": "Bogus"}}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Sometimes"}}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "Colour": "red"}}),
            "PropertyUnknown",
        ),
        (
            json!({"Boot": {"BootSourceOverrideTarget": 7}}),
            "PropertyValueTypeError",
        ),
        (json!({"PowerState": "On"}), "PropertyNotWritable"),
        (json!({"UUID": "x"}), "PropertyNotWritable"),
        (
            json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "HttpBootUri": "tftp://h/x"}}),
            "PropertyValueFormatError",
        ),
        (
            json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "HttpBootUri": "boot.iso"}}),
            "PropertyValueFormatError",
        ),
        (json!({}), "EmptyJSON"),
    ];
    for (body, id) in cases {
        let r = api.patch(&sys, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            r.message_ids().contains(&id.to_string()),
            "{body}: {:?}",
            r.message_ids()
        );
        assert_eq!(api.get(&sys).await.body, before, "{body} changed state");
    }
    let r = api
        .req(
            Method::PATCH,
            &sys,
            None,
            &[("Content-Type", "application/json")],
        )
        .await;
    assert_eq!(r.message_ids(), ["EmptyJSON"]);
    let req = axum::http::Request::builder()
        .method("PATCH")
        .uri(&sys)
        .header("Content-Type", "application/json")
        .body(axum::body::Body::from("{\"Boot\": "))
        .unwrap();
    let r = api.raw(req).await;
    assert_eq!(
        (r.status, r.message_ids()),
        (StatusCode::BAD_REQUEST, vec!["MalformedJSON".to_string()])
    );
    let big = format!("{{\"AssetTag\": \"{}\"}}", "x".repeat(1 << 20));
    let req = axum::http::Request::builder()
        .method("PATCH")
        .uri(&sys)
        .header("Content-Type", "application/json")
        .body(axum::body::Body::from(big))
        .unwrap();
    let r = api.raw(req).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(r.message_ids(), ["PayloadTooLarge"]);
    assert_eq!(api.get(&sys).await.body, before);
}

#[tokio::test]
async fn uefi_only_targets_follow_the_boot_mode_and_architecture() {
    let mut p9 = default_system("p9");
    p9.arch = Arch::Ppc64le;
    p9.bmc.boot = BootOverride::disabled(BootMode::Legacy);
    let api = Api::with(
        vec![default_system("x86"), p9],
        FakeOptions::default(),
        AuthStore::open(),
        FeatureSet::Full,
    );
    let x86 = api.system(0).await;
    let ppc = api.system(1).await;
    let r = api.get(&ppc).await.body;
    let allowed = r["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!allowed.contains(&json!("UefiHttp")) && allowed.contains(&json!("Pxe")));
    assert_eq!(
        r["Boot"]["BootSourceOverrideMode@Redfish.AllowableValues"],
        json!(["Legacy"])
    );
    assert!(
        r["Boot"].get("HttpBootUri").is_none(),
        "no UEFI, no HttpBootUri"
    );
    let r = api
        .patch(
            &ppc,
            json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp"}}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"]);
    let r = api
        .patch(&ppc, json!({"Boot": {"BootSourceOverrideMode": "UEFI"}}))
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"]);
    assert_eq!(
        api.get(&ppc).await.body["Processors"]["@odata.id"]
            .as_str()
            .map(|_| ()),
        Some(())
    );

    // Switching an x86 machine to Legacy hides UefiHttp; asking for both at once conflicts.
    let r = api.patch(&x86, json!({"Boot": {"BootSourceOverrideMode": "Legacy", "BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once"}})).await;
    assert_eq!(r.message_ids(), ["PropertyValueConflict"]);
    let r = api
        .patch(&x86, json!({"Boot": {"BootSourceOverrideMode": "Legacy"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let allowed = r.body["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!allowed.contains(&json!("UefiHttp")));
}

#[tokio::test]
async fn etags_guard_patches() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let r = api.get(&sys).await;
    let etag = r.header("etag").expect("ETag header");
    assert_eq!(r.body["@odata.etag"], json!(etag));
    let body =
        json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}});
    let r = api
        .req(
            Method::PATCH,
            &sys,
            Some(body.clone()),
            &[("If-Match", "\"deadbeef\"")],
        )
        .await;
    assert_eq!(
        (r.status, r.message_ids()),
        (
            StatusCode::PRECONDITION_FAILED,
            vec!["PreconditionFailed".to_string()]
        )
    );
    let weak = format!("W/{etag}");
    let r = api
        .req(
            Method::PATCH,
            &sys,
            Some(body.clone()),
            &[("If-Match", &weak)],
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "weak form of the current tag matches"
    );
    // The tag changed with the state: the old one no longer matches.
    let r = api
        .req(
            Method::PATCH,
            &sys,
            Some(body.clone()),
            &[("If-Match", &etag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let fresh = api.get(&sys).await.header("etag").unwrap();
    assert_ne!(fresh, etag);
    let r = api
        .req(Method::PATCH, &sys, Some(body), &[("If-Match", &fresh)])
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn system_names_redirect_to_the_uuid_url() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let r = api.get("/redfish/v1/Systems/node-0").await;
    assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(r.header("location").as_deref(), Some(sys.as_str()));
    let r = api.get("/redfish/v1/Systems/node-0/Bios").await;
    assert_eq!(r.header("location"), Some(format!("{sys}/Bios")));
    let r = api
        .patch("/redfish/v1/Systems/node-0", json!({"AssetTag": "x"}))
        .await;
    assert_eq!(r.status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(
        api.get("/redfish/v1/Systems/nope").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get(&format!("{sys}/")).await.status,
        StatusCode::OK,
        "trailing slash"
    );
}

#[tokio::test]
async fn every_reset_type_is_honoured() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let reset = |t: &'static str| {
        let api = &api;
        let sys = sys.clone();
        async move {
            api.post(
                &format!("{sys}/Actions/ComputerSystem.Reset"),
                json!({"ResetType": t}),
            )
            .await
        }
    };
    let power = || async {
        api.get(&sys).await.body["PowerState"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let steps = [
        ("On", "On"),
        ("ForceOff", "Off"),
        ("ForceOn", "On"),
        ("GracefulShutdown", "Off"),
        ("PushPowerButton", "On"),
        ("PushPowerButton", "Off"),
        ("PowerCycle", "On"),
        ("GracefulRestart", "On"),
        ("ForceRestart", "On"),
        ("Nmi", "On"),
    ];
    for (t, want) in steps {
        let r = reset(t).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{t}: {}", r.body);
        assert_eq!(power().await, want, "after {t}");
    }
    reset("ForceOff").await;
    assert_eq!(
        reset("Nmi").await.status,
        StatusCode::CONFLICT,
        "no NMI to a machine that is off"
    );
    let r = reset("Bogus").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r
        .message_ids()
        .contains(&"ActionParameterNotSupported".to_string()));
    let r = api
        .post(&format!("{sys}/Actions/ComputerSystem.Reset"), json!({}))
        .await;
    assert_eq!(r.message_ids(), ["ActionParameterMissing"]);
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On", "Force": true}),
        )
        .await;
    assert_eq!(r.message_ids(), ["ActionParameterUnknown"]);
    assert_eq!(power().await, "Off", "rejected resets change nothing");
}

#[tokio::test]
async fn power_delay_shows_transitions_to_polling_clients() {
    let opts = FakeOptions {
        power_delay: std::time::Duration::from_millis(150),
        ..Default::default()
    };
    let api = Api::with(
        vec![default_system("n")],
        opts,
        AuthStore::open(),
        FeatureSet::Full,
    );
    let sys = api.system(0).await;
    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "On"}),
    )
    .await;
    assert_eq!(api.get(&sys).await.body["PowerState"], "PoweringOn");
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "ForceOff"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while api.get(&sys).await.body["PowerState"] != "On" {
        assert!(std::time::Instant::now() < deadline, "never reached On");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let id = sys.rsplit('/').next().unwrap();
    assert_eq!(
        api.state.core.backend.system(id).await.unwrap().power,
        PowerState::On
    );
}

/// Many clients increment a counter kept in AssetTag with GET + If-Match
/// PATCH, retrying on 412: the final value proves no update was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_lose_no_update() {
    let api = std::sync::Arc::new(Api::new(1));
    let sys = api.system(0).await;
    api.patch(&sys, json!({"AssetTag": "0"})).await;
    let clients = 16;
    let per_client = 10;
    let mut handles = Vec::new();
    for _ in 0..clients {
        let api = api.clone();
        let sys = sys.clone();
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..per_client {
                loop {
                    let r = api.get(&sys).await;
                    let n: u64 = r.body["AssetTag"].as_str().unwrap().parse().unwrap();
                    let tag = r.header("etag").unwrap();
                    let p = api
                        .req(
                            Method::PATCH,
                            &sys,
                            Some(json!({"AssetTag": (n + 1).to_string()})),
                            &[("If-Match", &tag)],
                        )
                        .await;
                    match p.status {
                        StatusCode::OK => break,
                        StatusCode::PRECONDITION_FAILED => conflicts += 1,
                        s => panic!("unexpected {s}"),
                    }
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for h in handles {
        conflicts += h.await.unwrap();
    }
    let final_tag = api.get(&sys).await.body["AssetTag"].clone();
    assert_eq!(
        final_tag,
        json!((clients * per_client).to_string()),
        "{conflicts} conflicts seen"
    );
}

#[tokio::test]
async fn strings_bound_for_nvram_and_domain_xml_are_checked_before_anything_applies() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let before = api.get(&sys).await.body;
    let huge = format!("http://192.0.2.1/{}", "a".repeat(70_000));
    let cases = [
        // The URI node's u16 length would wrap; far over the 2,048 bound.
        (uefi_http_once(json!(huge)), "Boot/HttpBootUri"),
        (
            uefi_http_once(json!(format!("http://h/{}", "a".repeat(2040)))),
            "Boot/HttpBootUri",
        ),
        (
            uefi_http_once(json!("file:///boot.efi")),
            "Boot/HttpBootUri",
        ),
        (
            uefi_http_once(json!("tftp://h/boot.efi")),
            "Boot/HttpBootUri",
        ),
        (
            uefi_http_once(json!("http://h/bööt.efi")),
            "Boot/HttpBootUri",
        ),
        (
            uefi_http_once(json!("http://h/a\u{FFFF}")),
            "Boot/HttpBootUri",
        ),
        (uefi_http_once(json!("http://h/a\u{1}")), "Boot/HttpBootUri"),
        (uefi_http_once(json!("http://h/<x>&y")), "Boot/HttpBootUri"),
        (json!({"AssetTag": "rack\u{FFFE}"}), "AssetTag"),
        (json!({"AssetTag": "a\u{0}b"}), "AssetTag"),
        (json!({"AssetTag": "x".repeat(65)}), "AssetTag"),
        (
            json!({"Boot": {"UefiTargetBootSourceOverride": "PciRoot(0x0)\u{1b}"}}),
            "Boot/UefiTargetBootSourceOverride",
        ),
    ];
    for (body, path) in cases {
        let r = api.patch(&sys, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {}", r.body);
        assert_eq!(r.message_ids(), ["PropertyValueFormatError"], "{path}");
        let m = &r.body["error"]["@Message.ExtendedInfo"][0];
        assert_eq!(m["MessageArgs"][1], path);
        assert_eq!(m["RelatedProperties"][0], format!("#/{path}"));
        assert!(
            m["MessageArgs"][0].as_str().unwrap().len() <= 70,
            "the refused value is echoed short"
        );
    }
    // Several problems at once, the valid parts not applied either.
    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once",
                            "HttpBootUri": "http://h/é"}, "AssetTag": "\u{7}", "IndicatorLED": "Lit"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.message_ids(),
        ["PropertyValueFormatError", "PropertyValueFormatError"]
    );
    let after = api.get(&sys).await.body;
    for k in ["Boot", "AssetTag", "IndicatorLED"] {
        assert_eq!(after[k], before[k], "{k} unchanged");
    }
    // What the rules allow still goes through: percent escapes, a query,
    // the longest URI, Unicode text.
    let longest = format!("http://h/{}", "a".repeat(2048 - 9));
    for uri in ["https://[fd00::1]:8080/a%20b.efi?x=1&y=2", longest.as_str()] {
        let r = api.patch(&sys, uefi_http_once(json!(uri))).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        assert_eq!(r.body["Boot"]["HttpBootUri"], uri);
    }
    let r = api
        .patch(&sys, json!({"AssetTag": "Rack 7 — Zürich"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn bios_strings_and_settings_apply_time_are_checked_whole() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let settings = format!("{sys}/Bios/Settings");
    let pending = || async { api.get(&settings).await.body["Attributes"].clone() };
    let before = pending().await;
    let attr = |name: &str, v: &str| json!({"Attributes": {name: v, "ProcTurboMode": "Disabled"}});
    for (body, path) in [
        (
            attr("HttpDev1Uri", "file:///EFI/boot.efi"),
            "Attributes/HttpDev1Uri",
        ),
        (
            attr("UrlBootFile", "http://h/ünïcode.efi"),
            "Attributes/UrlBootFile",
        ),
        (
            attr("UrlBootFile", "http://h/\u{FFFE}"),
            "Attributes/UrlBootFile",
        ),
        (
            attr("HttpDev1Uri", &format!("http://h/{}", "a".repeat(1100))),
            "Attributes/HttpDev1Uri",
        ),
        (attr("AssetTagBios", "tag\u{1f}"), "Attributes/AssetTagBios"),
    ] {
        let r = api.patch(&settings, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.message_ids(), ["PropertyValueFormatError"], "{body}");
        assert_eq!(
            r.body["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][1],
            path
        );
    }
    assert_eq!(
        pending().await,
        before,
        "nothing staged, not even the valid one"
    );

    // `@Redfish.SettingsApplyTime`: an object whose ApplyTime is one the
    // resource advertises (OnReset); every other shape is refused, and the
    // attributes beside it are not staged.
    let advertised = api.get(&format!("{sys}/Bios")).await.body["@Redfish.Settings"]
        ["SupportedApplyTimes"]
        .clone();
    assert_eq!(advertised, json!(["OnReset"]));
    const AT: &str = "@Redfish.SettingsApplyTime";
    for (apply, id, path) in [
        (json!(5), "PropertyValueTypeError", AT.to_string()),
        (json!("OnReset"), "PropertyValueTypeError", AT.to_string()),
        (
            json!({"ApplyTime": 5}),
            "PropertyValueTypeError",
            format!("{AT}/ApplyTime"),
        ),
        (
            json!({"ApplyTime": "Immediate"}),
            "PropertyValueNotInList",
            format!("{AT}/ApplyTime"),
        ),
        (
            json!({"ApplyTime": "AtMaintenanceWindowStart"}),
            "PropertyValueNotInList",
            format!("{AT}/ApplyTime"),
        ),
        (json!({}), "PropertyMissing", format!("{AT}/ApplyTime")),
        (
            json!({"ApplyTime": "OnReset", "Later": true}),
            "PropertyUnknown",
            format!("{AT}/Later"),
        ),
    ] {
        let body = json!({AT: apply, "Attributes": {"ProcTurboMode": "Disabled"}});
        let r = api.patch(&settings, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.message_ids(), [id], "{body}");
        assert_eq!(
            r.body["error"]["@Message.ExtendedInfo"][0]["MessageArgs"]
                .as_array()
                .unwrap()
                .last()
                .unwrap(),
            &json!(path),
            "{body}"
        );
        // Alone, too.
        let r = api.patch(&settings, json!({AT: apply})).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{apply} alone");
    }
    assert_eq!(pending().await, before);
    let r = api
        .patch(
            &settings,
            json!({AT: {"ApplyTime": "OnReset"}, "Attributes": {"HttpDev1Uri": "http://h/x.efi"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["Attributes"]["HttpDev1Uri"], "http://h/x.efi");
    let r = api
        .patch(&settings, json!({"Attributes": {"HttpDev1Uri": ""}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "empty means none: {}", r.body);
}

/// The machine's UEFI load options: one per disk, PXE and HTTP per NIC,
/// the virtual USB key and CD, in `BootOrder` (disks first), each with the
/// override target it boots as; the order is the firmware's (read-only);
/// a machine without UEFI has none.
#[tokio::test]
async fn boot_options_list_what_the_machine_has_in_the_firmware_order() {
    let mut p9 = default_system("p9");
    p9.arch = Arch::Ppc64le;
    p9.bmc.boot = BootOverride::disabled(BootMode::Legacy);
    let api = Api::with(
        vec![default_system("x86"), p9],
        FakeOptions::default(),
        AuthStore::open(),
        FeatureSet::Full,
    );
    let x86 = api.system(0).await;
    let s = api.get(&x86).await.body;
    let order: Vec<String> = serde_json::from_value(s["Boot"]["BootOrder"].clone()).unwrap();
    let options = api
        .get(s["Boot"]["BootOptions"]["@odata.id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(options["Members@odata.count"], json!(order.len()));
    let mut aliases = Vec::new();
    for (i, m) in options["Members"].as_array().unwrap().iter().enumerate() {
        let o = api.get(m["@odata.id"].as_str().unwrap()).await.body;
        assert_eq!(o["BootOptionReference"], json!(order[i]));
        assert!(
            o["UefiDevicePath"]
                .as_str()
                .unwrap()
                .starts_with("PciRoot("),
            "{o}"
        );
        aliases.push(o["Alias"].as_str().unwrap().to_string());
    }
    // One disk and one NIC: the disk, PXE and HTTP over the NIC, the
    // virtual USB key and CD.
    assert_eq!(aliases, ["Hdd", "Pxe", "UefiHttp", "Usb", "Cd"]);
    let r = api
        .patch(
            &x86,
            json!({"Boot": {"BootOrder": ["Boot0005", "Boot0001"]}}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyNotWritable"]);
    assert_eq!(api.get(&x86).await.body["Boot"]["BootOrder"], json!(order));
    let ppc = api.system(1).await;
    let p = api.get(&ppc).await.body;
    assert!(p["Boot"].get("BootOptions").is_none());
    assert_eq!(
        api.get(&format!("{ppc}/BootOptions")).await.status,
        StatusCode::NOT_FOUND
    );
}
