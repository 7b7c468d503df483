//! The fake backend with `--fake-fetch-media`: InsertMedia downloads the
//! image and checks it as the libvirt backend does, so a CI suite without
//! libvirt still sees a bad URL refused. Images come from a loopback
//! server, which the address policy must be told to allow.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::download::MediaOptions;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};
use shoal_emulator::netpolicy::{AddressPolicy, IpFamily};

use crate::common::{fake_iso, file_server, Api};

fn fetching(allow_loopback: bool, media_delay: Duration) -> Api {
    fetching_on(allow_loopback, media_delay, None)
}

/// The same on a network of one IP family (`--media-ip-family`).
fn fetching_on(allow_loopback: bool, media_delay: Duration, family: Option<IpFamily>) -> Api {
    let opts = MediaOptions {
        cache: std::env::temp_dir(),
        max_bytes: 1 << 20,
        timeout: Duration::from_secs(10),
        insecure: false,
        addresses: AddressPolicy {
            allow: if allow_loopback {
                vec!["127.0.0.0/8".parse().unwrap()]
            } else {
                vec![]
            },
            family,
            reachable: vec![],
        },
    };
    let api = Api::with(
        fake_systems(1),
        FakeOptions {
            media_delay,
            fetch_media: Some(opts),
            ..FakeOptions::default()
        },
        AuthStore::open(),
        FeatureSet::Full,
    );
    let mut state = api.state;
    state.media_ip_family = family;
    Api::of_state(state)
}

/// On a single-stack network (sushy-tools'
/// `SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY`): an image URL naming an
/// address of the other family is refused before anything changes, and a
/// host name is fetched only from addresses of the network's family.
#[tokio::test]
async fn a_single_stack_bmc_takes_images_of_its_family_only() {
    let base = file_server(vec![("/good.iso", fake_iso(0x9000))]);
    let port = base.rsplit(':').next().unwrap().to_string();
    let by_name = format!("http://localhost:{port}/good.iso");
    for (family, url, want) in [
        // The literal address is checked when the action is asked.
        (
            IpFamily::V6,
            format!("{base}/good.iso"),
            Err("ActionParameterValueConflict"),
        ),
        (
            IpFamily::V4,
            "http://[2001:db8::7]/x.iso".to_string(),
            Err("ActionParameterValueConflict"),
        ),
        (IpFamily::V4, format!("{base}/good.iso"), Ok(())),
        // A name: what it resolves to is checked when fetched (the server
        // listens on 127.0.0.1 only).
        (
            IpFamily::V6,
            by_name.clone(),
            Err("CouldNotEstablishConnection"),
        ),
        (IpFamily::V4, by_name.clone(), Ok(())),
    ] {
        let api = fetching_on(true, Duration::ZERO, Some(family));
        let sys = api.system(0).await;
        let cd = format!("{sys}/VirtualMedia/Cd");
        let r = api
            .post(
                &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
                json!({"Image": url}),
            )
            .await;
        let inserted = api.get(&cd).await.body["Inserted"].clone();
        match want {
            Ok(()) => {
                assert_eq!(
                    r.status,
                    StatusCode::NO_CONTENT,
                    "{family:?} {url}: {}",
                    r.body
                );
                assert_eq!(inserted, true);
            }
            Err(id) => {
                assert_eq!(
                    r.status,
                    StatusCode::BAD_REQUEST,
                    "{family:?} {url}: {}",
                    r.body
                );
                assert_eq!(r.message_ids(), [id], "{family:?} {url}: {}", r.body);
                assert_eq!(inserted, false, "{family:?} {url}");
            }
        }
    }
}

#[tokio::test]
async fn the_fake_downloads_and_checks_the_image_when_asked() {
    let base = file_server(vec![
        ("/good.iso", fake_iso(0x9000)),
        ("/not-an-iso.iso", vec![7u8; 0x9000]),
        ("/huge.iso", fake_iso(2 << 20)),
    ]);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        drop(l);
        format!("http://{a}/x.iso")
    };
    let api = fetching(true, Duration::ZERO);
    let sys = api.system(0).await;
    let cd = format!("{sys}/VirtualMedia/Cd");
    let insert = format!("{cd}/Actions/VirtualMedia.InsertMedia");
    for (url, want) in [
        (format!("{base}/missing.iso"), "ResourceMissingAtURI"),
        (
            format!("{base}/not-an-iso.iso"),
            "ActionParameterValueFormatError",
        ),
        (format!("{base}/huge.iso"), "PayloadTooLarge"),
        (closed, "CouldNotEstablishConnection"),
    ] {
        let r = api.post(&insert, json!({"Image": url})).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{url}: {}", r.body);
        assert_eq!(r.message_ids(), [want], "{url}");
        assert_eq!(api.get(&cd).await.body["Inserted"], false, "{url}");
    }
    let good = format!("{base}/good.iso");
    let r = api.post(&insert, json!({"Image": good})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let m = api.get(&cd).await.body;
    assert_eq!(
        (m["Inserted"].clone(), m["Image"].clone()),
        (json!(true), json!(good))
    );
}

#[tokio::test]
async fn the_fakes_download_follows_the_address_policy() {
    let base = file_server(vec![("/good.iso", fake_iso(0x9000))]);
    let api = fetching(false, Duration::ZERO);
    let sys = api.system(0).await;
    let cd = format!("{sys}/VirtualMedia/Cd");
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": format!("{base}/good.iso")}),
        )
        .await;
    assert_eq!(
        r.message_ids(),
        ["CouldNotEstablishConnection"],
        "{}",
        r.body
    );
    assert_eq!(api.get(&cd).await.body["Inserted"], false);
}

#[tokio::test]
async fn a_slow_fakes_failed_download_fails_its_task() {
    let base = file_server(vec![]);
    let api = fetching(true, Duration::from_millis(50));
    let sys = api.system(0).await;
    let cd = format!("{sys}/VirtualMedia/Cd");
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": format!("{base}/missing.iso")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let monitor = r.header("location").expect("a task monitor");
    // The monitor answers, once done, what the action would have.
    let done = api.finish_task(&monitor, Duration::from_secs(10)).await;
    assert_eq!(done.status, StatusCode::BAD_REQUEST, "{}", done.body);
    assert_eq!(done.message_ids(), ["ResourceMissingAtURI"]);
    assert_eq!(api.get(&cd).await.body["Inserted"], false);
}

/// An HTTPS file server on loopback serving `good.iso` with a certificate
/// of `ca`'s; its base URL.
async fn https_server(ca: &shoal_harness::tls::Ca, dir: &std::path::Path) -> String {
    std::fs::write(dir.join("good.iso"), fake_iso(0x9000)).unwrap();
    let now = shoal_harness::tls::now();
    let server = ca
        .server(&["127.0.0.1".parse().unwrap()], now - 3600, now + 86400)
        .unwrap();
    let acceptor = std::sync::Arc::new(server.acceptor().unwrap());
    let log = dir.join("http.log");
    let app = shoal_harness::fileserver::router(dir, &log).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = shoal_harness::fileserver::serve_tls(listener, app, acceptor, &log).await;
    });
    format!("https://{addr}")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_checks_an_https_image_server_against_its_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let ca = shoal_harness::tls::Ca::new("Shoal media test CA").unwrap();
    let other = shoal_harness::tls::Ca::new("Another CA").unwrap();
    let image = format!("{}/good.iso", https_server(&ca, dir.path()).await);
    let api = fetching(true, Duration::ZERO);
    let sys = api.system(0).await;
    let cd = format!("{sys}/VirtualMedia/Cd");
    let insert = format!("{cd}/Actions/VirtualMedia.InsertMedia");
    let eject = format!("{cd}/Actions/VirtualMedia.EjectMedia");
    let certs = format!("{cd}/Certificates");
    let m = api.get(&cd).await.body;
    assert_eq!(m["VerifyCertificate"], true, "{m}");
    assert_eq!(m["Certificates"]["@odata.id"], certs);
    assert_eq!(api.get(&certs).await.body["Members@odata.count"], 0);

    // The server's CA is nobody's root: the fetch fails.
    let r = api.post(&insert, json!({"Image": image})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.message_ids(), ["CouldNotEstablishConnection"]);

    // Another CA in the device's collection: still not this server.
    let r = api
        .post(
            &certs,
            json!({"CertificateString": other.pem().unwrap(), "CertificateType": "PEM"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let other_uri = r.header("location").unwrap();
    let r = api.post(&insert, json!({"Image": image})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // Its own CA: the image arrives.
    let r = api
        .post(
            &certs,
            json!({"CertificateString": ca.pem().unwrap(), "CertificateType": "PEM"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ca_uri = r.header("location").unwrap();
    assert_eq!(r.body["CertificateUsageTypes"], json!(["Device"]));
    let r = api.post(&insert, json!({"Image": image})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        api.post(&eject, json!({})).await.status,
        StatusCode::NO_CONTENT
    );
    let listed = api.get(&certs).await.body;
    assert_eq!(listed["Members@odata.count"], 2, "{listed}");
    let locations = api
        .get("/redfish/v1/CertificateService/CertificateLocations")
        .await
        .body;
    assert!(locations.to_string().contains(&ca_uri), "{locations}");

    // ReplaceCertificate: the other CA becomes this one too.
    let r = api
        .post(
            "/redfish/v1/CertificateService/Actions/CertificateService.ReplaceCertificate",
            json!({"CertificateUri": {"@odata.id": other_uri}, "CertificateString": ca.pem().unwrap(),
                   "CertificateType": "PEM"}),
        )
        .await;
    // The same CA twice in one device is refused, as for boot CAs.
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.message_ids(), ["ResourceAlreadyExists"]);
    let third = shoal_harness::tls::Ca::new("A third CA").unwrap();
    let r = api
        .post(
            "/redfish/v1/CertificateService/Actions/CertificateService.ReplaceCertificate",
            json!({"CertificateUri": {"@odata.id": other_uri}, "CertificateString": third.pem().unwrap(),
                   "CertificateType": "PEM"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let replaced = api.get(&other_uri).await.body;
    assert_eq!(
        replaced["Subject"]["CommonName"], "A third CA",
        "{replaced}"
    );

    // Without the CA and with checking off, the image arrives unchecked;
    // with checking on and no certificate, the trusted roots decide.
    assert_eq!(
        api.req(axum::http::Method::DELETE, &ca_uri, None, &[])
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    let r = api.patch(&cd, json!({"VerifyCertificate": false})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["VerifyCertificate"], false);
    let r = api.post(&insert, json!({"Image": image})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(
        api.post(&eject, json!({})).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        api.req(axum::http::Method::DELETE, &other_uri, None, &[])
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    let r = api.patch(&cd, json!({"VerifyCertificate": true})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = api.post(&insert, json!({"Image": image})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    // Bad input: a clear error, nothing changed.
    for (body, want) in [
        (
            json!({"VerifyCertificate": "yes"}),
            "PropertyValueTypeError",
        ),
        (
            json!({"Image": "http://192.0.2.1/x.iso"}),
            "PropertyNotWritable",
        ),
        (json!({"Frobnicate": 1}), "PropertyUnknown"),
    ] {
        let r = api.patch(&cd, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.message_ids(), [want], "{body}");
    }
    for (body, want) in [
        (
            json!({"CertificateString": "not a certificate", "CertificateType": "PEM"}),
            "PropertyValueFormatError",
        ),
        (
            json!({"CertificateString": ca.pem().unwrap(), "CertificateType": "PKCS7"}),
            "PropertyValueNotInList",
        ),
        (
            json!({"CertificateType": "PEM"}),
            "CreateFailedMissingReqProperties",
        ),
    ] {
        let r = api.post(&certs, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.message_ids(), [want], "{body}");
    }
    assert_eq!(
        api.get(&format!("{certs}/99")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(api.get(&certs).await.body["Members@odata.count"], 0);
    assert_eq!(api.get(&cd).await.body["VerifyCertificate"], true);
}
