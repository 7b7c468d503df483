//! Vendor BMC profiles: each hook, as a client of that vendor's BMC sees it.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::model::BootTarget;
use shoal_emulator::profile::Profiles;

use crate::common::Api;

fn api(profile: &str) -> Api {
    Api::profiled(profile, Profiles::default())
}

fn target_once(target: &str) -> Value {
    json!({"Boot": {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}})
}

#[tokio::test]
async fn identity_and_oem_blocks_follow_the_profile() {
    let api = api("idrac9");
    let sys = api.system(0).await;
    let s = api.get(&sys).await.body;
    assert_eq!(s["Manufacturer"], "Dell Inc.");
    assert_eq!(s["Model"], "PowerEdge R650");
    assert_eq!(s["BiosVersion"], "1.13.2");
    assert_eq!(
        s["Oem"]["Dell"]["DellSystem"]["SystemGeneration"],
        "15G Monolithic"
    );
    let m = api
        .get(s["Links"]["ManagedBy"][0]["@odata.id"].as_str().unwrap())
        .await;
    assert_eq!(m.body["FirmwareVersion"], "7.00.00.181");
    // The neutral profile has no Oem block.
    let g = crate::common::Api::new(1);
    let gs = g.system(0).await;
    assert!(g.get(&gs).await.body.get("Oem").is_none());
}

/// PATCH with `tag` in If-Match: the status.
async fn patch_with(api: &Api, sys: &str, target: &str, tag: &str) -> StatusCode {
    api.req(
        Method::PATCH,
        sys,
        Some(target_once(target)),
        &[("If-Match", tag)],
    )
    .await
    .status
}

#[tokio::test]
async fn ilo_etags_are_weak_and_its_own_tag_back_matches() {
    // HPE's own client sends the ETag back as served: iLO compares weakly.
    for profile in ["ilo5", "ilo6"] {
        let api = api(profile);
        let sys = api.system(0).await;
        let tag = api.get(&sys).await.header("etag").unwrap();
        assert!(tag.starts_with("W/\""), "{profile}: {tag}");
        assert_eq!(
            patch_with(&api, &sys, "Pxe", &tag).await,
            StatusCode::OK,
            "{profile}: its own weak tag"
        );
        assert_eq!(
            patch_with(&api, &sys, "Hdd", &tag).await,
            StatusCode::PRECONDITION_FAILED,
            "{profile}: a stale tag"
        );
    }
}

#[tokio::test]
async fn the_synthetic_strict_etag_profile_refuses_its_own_weak_tag() {
    let api = api("synthetic-strict-etag");
    let sys = api.system(0).await;
    let tag = api.get(&sys).await.header("etag").unwrap();
    assert!(tag.starts_with("W/\""), "{tag}");
    // Its own weak tag back is 412 (RFC 9110: If-Match compares strongly).
    assert_eq!(
        patch_with(&api, &sys, "Pxe", &tag).await,
        StatusCode::PRECONDITION_FAILED
    );
    let strong = tag.trim_start_matches("W/").to_string();
    assert_eq!(patch_with(&api, &sys, "Pxe", &strong).await, StatusCode::OK);
    assert_eq!(
        patch_with(&api, &sys, "Hdd", &strong).await,
        StatusCode::PRECONDITION_FAILED,
        "a stale tag"
    );
}

#[test]
fn every_builtin_quirk_cites_a_source_or_says_it_is_synthetic() {
    let all = Profiles::default();
    for name in all.names() {
        let p = all.get(name).unwrap();
        for q in p.quirks() {
            let entry = p
                .sources
                .iter()
                .find(|s| s.quirks.iter().any(|c| c == q))
                .unwrap_or_else(|| panic!("{name}: {q} cites nothing"));
            assert!(
                entry.synthetic || !entry.reference.is_empty(),
                "{name}: {q}"
            );
        }
    }
    // The strict If-Match comparison is nobody's: only a synthetic profile.
    for name in all.names() {
        let p = all.get(name).unwrap();
        assert_eq!(
            p.etag.strict_if_match,
            p.synthetic_quirks().contains(&"etag.strict_if_match"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn ilo_refuses_http_boot_uri_with_its_own_message_and_changes_nothing() {
    for (profile, base) in [("ilo5", "PropertyUnknown"), ("ilo6", "PropertyNotWritable")] {
        let api = api(profile);
        let sys = api.system(0).await;
        let shown = api.get(&sys).await.body["Boot"]
            .get("HttpBootUri")
            .is_some();
        assert_eq!(
            shown,
            profile == "ilo6",
            "{profile}: iLO 6 shows it, iLO 5 not"
        );
        let r = api
            .patch(
                &sys,
                json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": "http://192.0.2.1/x.efi"}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{profile}");
        assert_eq!(
            r.message_ids(),
            [base, "PropertyNotWritableOrUnknown"],
            "{profile}"
        );
        let vendor = &r.body["error"]["@Message.ExtendedInfo"][1]["MessageId"];
        assert!(vendor.as_str().unwrap().starts_with("iLO.2."), "{vendor}");
        // Nothing of the refused PATCH was applied.
        assert_eq!(
            api.get(&sys).await.body["Boot"]["BootSourceOverrideTarget"],
            "None"
        );
    }
}

#[tokio::test]
async fn idrac10_keeps_allowable_values_in_the_settings_object_only() {
    let api = api("idrac10");
    let sys = api.system(0).await;
    let s = api.get(&sys).await.body;
    assert!(s["Boot"]
        .get("BootSourceOverrideTarget@Redfish.AllowableValues")
        .is_none());
    assert!(s["Boot"].get("HttpBootUri").is_none());
    let settings = s["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(settings, format!("{sys}/Settings"));
    let so = api.get(&settings).await;
    assert_eq!(so.status, StatusCode::OK);
    let allowed = so.body["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
        .as_array()
        .unwrap();
    assert!(allowed.contains(&json!("UefiHttp")));
    assert!(so.body["Boot"].get("BootSourceOverrideTarget").is_none());
    // Target and Enabled are refused there, and taken by the System.
    let r = api.patch(&settings, target_once("Pxe")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = api.patch(&sys, target_once("Pxe")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Other profiles have no such resource.
    let g = crate::common::Api::new(1);
    let gs = g.system(0).await;
    assert_eq!(
        g.get(&format!("{gs}/Settings")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get(&format!("{sys}/SD")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn ami_sends_boot_to_the_future_state_uri_with_mode_and_if_match() {
    let api = api("ami-asrockrack");
    let sys = api.system(0).await;
    let sd = format!("{sys}/SD");
    let body = json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once", "BootSourceOverrideMode": "UEFI"}});
    // On the System: refused, pointing at the settings object.
    let tag = api.get(&sys).await.header("etag").unwrap();
    let r = api
        .req(
            Method::PATCH,
            &sys,
            Some(body.clone()),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let ami = r.body["error"]["@Message.ExtendedInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["MessageId"] == "Ami.1.0.OperationSupportedInFutureStateURI")
        .cloned()
        .unwrap_or_else(|| panic!("{}", r.body));
    assert!(ami["Message"].as_str().unwrap().contains(&sd), "{ami}");
    // The settings object wants If-Match ...
    let r = api.patch(&sd, body.clone()).await;
    assert_eq!(r.status, StatusCode::PRECONDITION_REQUIRED);
    let tag = api.get(&sd).await.header("etag").unwrap();
    // ... and the Mode in every Boot PATCH.
    let r = api
        .req(
            Method::PATCH,
            &sd,
            Some(target_once("Pxe")),
            &[("If-Match", &tag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.message_ids()
            .iter()
            .any(|i| i.ends_with("PropertyMissing")),
        "{:?}",
        r.message_ids()
    );
    let r = api
        .req(Method::PATCH, &sd, Some(body), &[("If-Match", &tag)])
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["Boot"]["BootSourceOverrideTarget"], "Pxe");
    let b = &api.get(&sys).await.body["Boot"];
    assert_eq!(b["BootSourceOverrideTarget"], "Pxe");
    assert_eq!(b["BootSourceOverrideEnabled"], "Once");
}

#[tokio::test]
async fn supermicro_wants_enabled_in_every_boot_patch() {
    let api = api("supermicro-x12");
    let sys = api.system(0).await;
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.message_ids().len(), 1);
    assert!(r.message_ids()[0].ends_with("PropertyMissing"));
    assert_eq!(
        api.patch(&sys, target_once("Pxe")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_user_profile_can_refuse_continuous() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("strict.toml"),
        r#"
name = "strict"
description = "refuses Continuous"
manufacturer = "Example"
model = "E1"
bios_version = "1"
bmc_firmware_version = "1"
[boot]
continuous = false
[[sources]]
quirks = ["boot.continuous"]
reference = "openstack/ironic redfish management: falls back to Once when Continuous is refused"
shows = "Continuous refused"
"#,
    )
    .unwrap();
    let api = Api::profiled("strict", Profiles::load(Some(dir.path())).unwrap());
    let sys = api.system(0).await;
    let s = api.get(&sys).await.body;
    assert_eq!(
        s["Boot"]["BootSourceOverrideEnabled@Redfish.AllowableValues"],
        json!(["Disabled", "Once"])
    );
    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.message_ids()[0].ends_with("PropertyValueNotInList"));
    assert_eq!(s["Manufacturer"], "Example");
}

#[tokio::test]
async fn idrac_http_boot_goes_through_the_bios_attributes() {
    let api = api("idrac9");
    let sys = api.system(0).await;
    // No HttpBootUri: sushy would refuse to send one (MissingAttributeError).
    assert!(api.get(&sys).await.body["Boot"]
        .get("HttpBootUri")
        .is_none());
    let r = api
        .patch(
            &format!("{sys}/Bios/Settings"),
            json!({"Attributes": {"HttpDev1EnDis": "Enabled", "HttpDev1Uri": "http://192.0.2.1/dell.efi"}}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    assert_eq!(
        api.patch(&sys, target_once("UefiHttp")).await.status,
        StatusCode::OK
    );
    api.reset(&sys, "On").await;
    let id = api.get(&sys).await.body["Id"].as_str().unwrap().to_string();
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
    assert_eq!(rec.target, BootTarget::UefiHttp);
    assert_eq!(rec.uri.as_deref(), Some("http://192.0.2.1/dell.efi"));
}

#[tokio::test]
async fn lenovo_takes_the_boot_override_in_its_pending_object() {
    let api = api("lenovo-xcc");
    let sys = api.system(0).await;
    let pending = format!("{sys}/Pending");
    let so = api.get(&pending).await.body;
    assert_eq!(so["Boot"]["BootSourceOverrideTarget"], "None");
    assert!(
        so["Boot"].get("HttpBootUri").is_none(),
        "not one of its fields"
    );
    let r = api.patch(&pending, target_once("Cd")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        api.get(&sys).await.body["Boot"]["BootSourceOverrideTarget"],
        "Cd"
    );
    // HttpBootUri is not a field of /Pending: refused there.
    let r = api
        .patch(
            &pending,
            json!({"Boot": {"HttpBootUri": "http://192.0.2.1/x"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

fn cd_of(sys: &str) -> String {
    format!("{sys}/VirtualMedia/Cd")
}

#[tokio::test]
async fn ilo_refuses_boot_changes_while_the_host_is_in_post() {
    let api = api("ilo5");
    let sys = api.system(0).await;
    api.reset(&sys, "On").await;
    let r = api.patch(&sys, target_once("Pxe")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.message_ids(),
        ["ResourceInUse", "UnableToModifyDuringSystemPOST"]
    );
    // Other properties are fine, and so is Boot once the host is off.
    assert_eq!(
        api.patch(&sys, json!({"AssetTag": "a"})).await.status,
        StatusCode::OK
    );
    api.reset(&sys, "ForceOff").await;
    assert_eq!(
        api.patch(&sys, target_once("Pxe")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn idrac10_answers_409_to_a_power_action_while_busy() {
    let api = api("idrac10");
    let sys = api.system(0).await;
    api.reset(&sys, "On").await;
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "ForceOff"}),
        )
        .await;
    // What Ironic's power-on retry looks for (ironic 238c9e0c).
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.message_ids(), ["ActionParameterValueConflict"]);
    let text = r.body["error"]["@Message.ExtendedInfo"][0]["Message"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("'ResetType'") && text.contains("'ForceOff'"),
        "{text}"
    );
}

#[tokio::test]
async fn supermicro_offers_usbcd_and_refuses_inserted_on_insert_media() {
    let api = api("supermicro-x12");
    let sys = api.system(0).await;
    let allowed = api.get(&sys).await.body["Boot"]
        ["BootSourceOverrideTarget@Redfish.AllowableValues"]
        .clone();
    assert!(
        allowed.as_array().unwrap().contains(&json!("UsbCd")),
        "{allowed}"
    );
    let insert = format!("{}/Actions/VirtualMedia.InsertMedia", cd_of(&sys));
    let r = api
        .post(
            &insert,
            json!({"Image": "http://192.0.2.1/a.iso", "Inserted": true, "WriteProtected": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.message_ids(),
        ["ActionParameterNotSupported", "ActionParameterNotSupported"]
    );
    assert_eq!(
        api.get(&cd_of(&sys)).await.body["Inserted"],
        false,
        "nothing applied"
    );
    let r = api
        .post(&insert, json!({"Image": "http://192.0.2.1/a.iso"}))
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    // UsbCd boots the virtual CD.
    assert_eq!(
        api.patch(&sys, target_once("UsbCd")).await.status,
        StatusCode::OK
    );
    api.reset(&sys, "On").await;
    let id = api.get(&sys).await.body["Id"].as_str().unwrap().to_string();
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
    assert_eq!(rec.target, BootTarget::Cd);
    assert_eq!(rec.media.as_deref(), Some("http://192.0.2.1/a.iso"));
}

#[tokio::test]
async fn ami_wants_credentials_on_insert_media() {
    let api = api("ami-asrockrack");
    let sys = api.system(0).await;
    let insert = format!("{}/Actions/VirtualMedia.InsertMedia", cd_of(&sys));
    let r = api
        .post(&insert, json!({"Image": "http://192.0.2.1/a.iso"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.message_ids(),
        ["ActionParameterMissing", "ActionParameterMissing"]
    );
    let r = api
        .post(
            &insert,
            json!({"Image": "http://192.0.2.1/a.iso", "UserName": "none", "Password": "none"}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
}

#[tokio::test]
async fn ilo_wants_a_json_body_on_eject() {
    let api = api("ilo5");
    let sys = api.system(0).await;
    // iLO's CD is the Manager's VirtualMedia 2; the System has none.
    assert_eq!(api.get(&cd_of(&sys)).await.status, StatusCode::NOT_FOUND);
    let body = api.get(&sys).await.body;
    let mgr = body["Links"]["ManagedBy"][0]["@odata.id"].as_str().unwrap();
    let cd = format!("{mgr}/VirtualMedia/2");
    api.post(
        &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
        json!({"Image": "http://192.0.2.1/a.iso"}),
    )
    .await;
    let eject = format!("{cd}/Actions/VirtualMedia.EjectMedia");
    let r = api.req(Method::POST, &eject, None, &[]).await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(api.get(&cd).await.body["Inserted"], true);
    let r = api.post(&eject, json!({})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(api.get(&cd).await.body["Inserted"], false);
}

#[tokio::test]
async fn lenovo_inserts_and_ejects_media_by_patch() {
    let api = api("lenovo-xcc");
    let sys = api.system(0).await;
    let cd = cd_of(&sys);
    let m = api.get(&cd).await;
    assert!(m.body.get("Actions").is_none());
    assert_eq!(m.header("allow").as_deref(), Some("GET, PATCH"));
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": "http://192.0.2.1/a.iso"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Without Inserted: true nothing is attached, as on that firmware.
    let r = api
        .patch(&cd, json!({"Image": "http://192.0.2.1/a.iso"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["Inserted"], false);
    let r = api
        .patch(
            &cd,
            json!({"Image": "http://192.0.2.1/a.iso", "Inserted": true, "WriteProtected": true}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["Inserted"]),
        (StatusCode::OK, &json!(true)),
        "{}",
        r.body
    );
    let r = api
        .patch(&cd, json!({"Image": null, "Inserted": false}))
        .await;
    assert_eq!(
        (r.status, &r.body["Inserted"]),
        (StatusCode::OK, &json!(false))
    );
    // Bad input is refused whole.
    let r = api
        .patch(&cd, json!({"Image": "no url", "Inserted": true}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = api.patch(&cd, json!({"Colour": 1})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // On an IPv6-only network an IPv4 image is a value the PATCH cannot
    // take (InsertMedia would say the parameter's): nothing is attached.
    let mut state = api.state;
    state.media_ip_family = Some(shoal_emulator::netpolicy::IpFamily::V6);
    let api = Api::of_state(state);
    let r = api
        .patch(
            &cd,
            json!({"Image": "http://192.0.2.1/a.iso", "Inserted": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.message_ids(), ["PropertyValueError"], "{}", r.body);
    assert_eq!(api.get(&cd).await.body["Inserted"], false);
    // Other profiles keep the media read-only (a PATCH takes only
    // VerifyCertificate there).
    let g = crate::common::Api::new(1);
    let gs = g.system(0).await;
    let r = g
        .patch(&cd_of(&gs), json!({"Image": "http://192.0.2.1/a.iso"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.message_ids(), ["PropertyNotWritable"]);
}
