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
use shoal_emulator::netpolicy::AddressPolicy;

use crate::common::{fake_iso, file_server, Api};

fn fetching(allow_loopback: bool, media_delay: Duration) -> Api {
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
        },
    };
    Api::with(
        fake_systems(1),
        FakeOptions {
            media_delay,
            fetch_media: Some(opts),
            ..FakeOptions::default()
        },
        AuthStore::open(),
        FeatureSet::Full,
    )
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
