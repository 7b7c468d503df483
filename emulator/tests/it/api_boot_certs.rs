//! `Boot.Certificates` and the `CertificateService`: the HTTPS boot CAs a
//! client enrolls, what each shows, and every bad input refused with
//! nothing changed.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::common::Api;

/// A self-signed certificate; a CA (KeyCertSign) unless `ca` is false.
pub fn cert_pem(cn: &str, ca: bool) -> String {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, "Shoal tests");
    if ca {
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
    }
    p.self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap()
        .pem()
}

fn enroll_body(pem: &str) -> serde_json::Value {
    json!({"CertificateString": pem, "CertificateType": "PEM"})
}

#[tokio::test]
async fn a_ca_is_enrolled_shown_replaced_and_deleted() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let s = api.get(&sys).await.body;
    let coll = s["Boot"]["Certificates"]["@odata.id"]
        .as_str()
        .expect("Boot.Certificates")
        .to_string();
    assert_eq!(coll, format!("{sys}/Boot/Certificates"));
    let r = api.get(&coll).await;
    assert_eq!(r.body["Members@odata.count"], 0, "{r}");
    assert_eq!(r.body["@Redfish.SupportedCertificates"], json!(["PEM"]));

    let pem = cert_pem("Shoal Boot CA", true);
    let r = api.post(&coll, enroll_body(&pem)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
    let loc = r.header("Location").unwrap();
    assert_eq!(loc, format!("{coll}/1"));
    let c = api.get(&loc).await;
    assert_eq!(c.status, StatusCode::OK, "{c}");
    assert_eq!(c.body["Subject"]["CommonName"], "Shoal Boot CA");
    assert_eq!(c.body["Issuer"]["Organization"], "Shoal tests");
    assert_eq!(c.body["CertificateType"], "PEM");
    assert_eq!(c.body["KeyUsage"], json!(["KeyCertSign", "CRLSigning"]));
    assert_eq!(c.body["FingerprintHashAlgorithm"], "TPM_ALG_SHA256");
    assert!(c.body["ValidNotAfter"].as_str().unwrap() > c.body["ValidNotBefore"].as_str().unwrap());
    // The text shown is the certificate enrolled (PEM normalised).
    let shown = c.body["CertificateString"].as_str().unwrap();
    assert_eq!(
        shown.split_whitespace().collect::<String>(),
        pem.split_whitespace().collect::<String>()
    );
    assert_eq!(api.get(&coll).await.body["Members@odata.count"], 1);
    let locs = api
        .get("/redfish/v1/CertificateService/CertificateLocations")
        .await;
    assert_eq!(
        locs.body["Links"]["Certificates"],
        json!([{"@odata.id": loc}])
    );

    // ReplaceCertificate keeps the Id and changes the certificate.
    let other = cert_pem("Second CA", true);
    let r = api
        .post(
            "/redfish/v1/CertificateService/Actions/CertificateService.ReplaceCertificate",
            json!({"CertificateUri": {"@odata.id": loc}, "CertificateString": other, "CertificateType": "PEM"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert_eq!(
        api.get(&loc).await.body["Subject"]["CommonName"],
        "Second CA"
    );

    let r = api.req(Method::DELETE, &loc, None, &[]).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert_eq!(api.get(&loc).await.status, StatusCode::NOT_FOUND);
    // A deleted certificate's Id is not given again.
    let r = api.post(&coll, enroll_body(&pem)).await;
    assert_eq!(r.header("Location").unwrap(), format!("{coll}/2"));
}

#[tokio::test]
async fn bad_certificates_are_refused_and_change_nothing() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let coll = format!("{sys}/Boot/Certificates");
    let ca = cert_pem("CA", true);
    assert_eq!(
        api.post(&coll, enroll_body(&ca)).await.status,
        StatusCode::CREATED
    );
    let before = api.get(&coll).await.body;

    let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let chain = format!("{}{}", cert_pem("a", true), cert_pem("b", true));
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (enroll_body("not a certificate"), "PropertyValueFormatError"),
        (enroll_body(&key), "PropertyValueFormatError"),
        (enroll_body(&chain), "PropertyValueFormatError"),
        (
            enroll_body("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
            "PropertyValueFormatError",
        ),
        (enroll_body(&cert_pem("leaf", false)), "PropertyValueError"),
        (enroll_body(&ca), "ResourceAlreadyExists"),
        (
            json!({"CertificateString": ca}),
            "CreateFailedMissingReqProperties",
        ),
        (
            json!({"CertificateString": ca, "CertificateType": "PKCS7"}),
            "PropertyValueNotInList",
        ),
        (
            json!({"CertificateString": 7, "CertificateType": "PEM"}),
            "PropertyValueTypeError",
        ),
        (
            json!({"CertificateString": ca, "CertificateType": "PEM", "Color": 1}),
            "PropertyUnknown",
        ),
    ];
    for (body, id) in cases {
        let r = api.post(&coll, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [id], "{body}: {r}");
    }
    assert_eq!(api.get(&coll).await.body, before, "nothing half-applied");

    // More than the firmware's variable holds: refused, the set unchanged.
    let mut added = 0;
    let limit = loop {
        let r = api
            .post(&coll, enroll_body(&cert_pem(&format!("CA {added}"), true)))
            .await;
        if r.status != StatusCode::CREATED {
            break r;
        }
        added += 1;
        assert!(added < 200, "no limit reached");
    };
    assert_eq!(
        limit.message_ids(),
        ["CreateLimitReachedForResource"],
        "{limit}"
    );
    let count = api.get(&coll).await.body["Members@odata.count"]
        .as_u64()
        .unwrap();
    assert_eq!(count, added + 1);
    assert!(count > 20, "{count} certificates fit");

    // Replace: the same checks, as action messages.
    let target = json!({"@odata.id": format!("{coll}/1")});
    let replace = "/redfish/v1/CertificateService/Actions/CertificateService.ReplaceCertificate";
    for (body, id) in [
        (
            json!({"CertificateUri": target, "CertificateString": key, "CertificateType": "PEM"}),
            "ActionParameterValueFormatError",
        ),
        (
            json!({"CertificateUri": {"@odata.id": format!("{coll}/999")}, "CertificateString": ca, "CertificateType": "PEM"}),
            "ActionParameterValueError",
        ),
        (
            json!({"CertificateUri": {"@odata.id": "/redfish/v1/Managers/x/Certificates/1"}, "CertificateString": ca, "CertificateType": "PEM"}),
            "ActionParameterValueError",
        ),
        (
            json!({"CertificateString": ca, "CertificateType": "PEM"}),
            "ActionParameterMissing",
        ),
        (
            json!({"CertificateUri": target, "CertificateString": cert_pem("leaf", false), "CertificateType": "PEM"}),
            "ActionParameterValueError",
        ),
        (
            json!({"CertificateUri": target, "CertificateString": ca, "CertificateType": "PEM", "Extra": 1}),
            "ActionParameterUnknown",
        ),
    ] {
        let r = api.post(replace, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [id], "{body}: {r}");
    }
    assert_eq!(
        api.get(&format!("{coll}/1")).await.body["Subject"]["CommonName"],
        "CA"
    );
}

#[tokio::test]
async fn legacy_bios_has_no_https_boot() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    api.patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "Legacy"}}))
        .await;
    let r = api
        .post(
            &format!("{sys}/Boot/Certificates"),
            enroll_body(&cert_pem("CA", true)),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueConflict"], "{r}");
    assert_eq!(
        api.get(&format!("{sys}/Boot/Certificates")).await.body["Members@odata.count"],
        0
    );
    let root = api.get("/redfish/v1").await.body;
    assert_eq!(
        root["CertificateService"]["@odata.id"],
        "/redfish/v1/CertificateService"
    );
    let cs = api.get("/redfish/v1/CertificateService").await.body;
    assert!(cs["Actions"]["#CertificateService.ReplaceCertificate"]["target"].is_string());
}

/// iDRAC takes a CA only once HTTP device 1 is on and its TLS mode is
/// one-way (set, or staged for the next start), as Dell's own script sets
/// them first.
#[tokio::test]
async fn idrac_asks_for_its_http_device_tls_mode_first() {
    let api = Api::profiled("idrac9", shoal_emulator::profile::Profiles::default());
    let sys = api.system(0).await;
    let coll = format!("{sys}/Boot/Certificates");
    let ca = cert_pem("Dell CA", true);
    let r = api.post(&coll, enroll_body(&ca)).await;
    assert_eq!(r.message_ids(), ["PropertyValueConflict"], "{r}");
    let r = api
        .patch(
            &format!("{sys}/Bios/Settings"),
            json!({"Attributes": {"HttpDev1EnDis": "Enabled", "HttpDev1TlsMode": "OneWay"}}),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let r = api.post(&coll, enroll_body(&ca)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
}

/// iLO's route: no Boot.Certificates; the Bios links HpeTlsConfig, whose
/// settings object takes PUTs of new and deleted certificates that the
/// next start applies; what the firmware cannot do is refused.
#[tokio::test]
async fn ilo_stages_tls_certificates_in_its_bios_tls_settings() {
    let api = Api::profiled("ilo6", shoal_emulator::profile::Profiles::default());
    let sys = api.system(0).await;
    let s = api.get(&sys).await.body;
    assert!(s["Boot"].get("Certificates").is_none(), "{s}");
    let bios = api.get(&format!("{sys}/Bios")).await.body;
    let tls = bios["Oem"]["Hpe"]["Links"]["TlsConfig"]["@odata.id"]
        .as_str()
        .expect("Oem.Hpe.Links.TlsConfig")
        .to_string();
    assert_eq!(tls, format!("{sys}/bios/oem/hpe/tlsconfig"));
    let cur = api.get(&tls).await.body;
    assert_eq!(cur["@odata.type"], "#HpeTlsConfig.v1_0_0.HpeTlsConfig");
    assert_eq!(cur["TlsCaCertificateCount"], 0);
    let settings = cur["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();

    let ca = cert_pem("HPE CA", true);
    let put = |body: serde_json::Value| {
        let api = &api;
        let settings = settings.clone();
        async move { api.req(Method::PUT, &settings, Some(body), &[]).await }
    };
    let r = put(json!({"NewCertificates": [{"X509Certificate": ca}]})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["TlsCaCertificateCount"], 1);
    // Staged: the current settings change at the next start.
    assert_eq!(api.get(&tls).await.body["TlsCaCertificateCount"], 0);
    api.post(
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        json!({"ResetType": "On"}),
    )
    .await;
    let cur = api.get(&tls).await.body;
    assert_eq!(cur["TlsCaCertificateCount"], 1, "{cur}");
    let fp = cur["Certificates"][0]["FingerPrint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(cur["Certificates"][0]["Subject"], "CN=HPE CA");

    // Bad input: each refused, nothing staged.
    for (body, id) in [
        (
            json!({"NewCertificates": [{"X509Certificate": "junk"}]}),
            "PropertyValueFormatError",
        ),
        (
            json!({"NewCertificates": [{"X509Certificate": ca}]}),
            "ResourceAlreadyExists",
        ),
        (json!({"NewCertificates": [{}]}), "PropertyMissing"),
        (
            json!({"DeleteCertificates": [{"FingerPrint": "00:11"}]}),
            "PropertyValueNotInList",
        ),
        (json!({"VerifyMode": "NONE"}), "PropertyValueNotInList"),
        (json!({"TlsCaCertificateCount": 4}), "PropertyNotWritable"),
        (json!({"Colour": 1}), "PropertyUnknown"),
    ] {
        let r = put(body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(r.message_ids(), [id], "{body}: {r}");
    }
    assert_eq!(api.get(&settings).await.body["TlsCaCertificateCount"], 1);
    let r = api.patch(&settings, json!({"VerifyMode": "PEER"})).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "only PUT: {r}");

    let r = put(json!({"DeleteCertificates": [{"FingerPrint": fp}]})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["TlsCaCertificateCount"], 0);
    assert_eq!(api.get(&tls).await.body["TlsCaCertificateCount"], 1);
}
