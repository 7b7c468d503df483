//! The EventService: subscriptions as Ironic, sushy, DMTF's Protocol
//! Validator and Event Listener make them; events pushed to a receiver on
//! loopback from what really changed (a Redfish reset, a boot override,
//! a power transition the machine ends by itself), with retries and the
//! retry policies when the receiver is down; Server-Sent Events with a
//! `$filter`, shown as a subscription whose DELETE closes the stream, and
//! resumed with `Last-Event-ID`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use shoal_emulator::api::events::EventOptions;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::netpolicy::AddressPolicy;

use crate::common::Api;

const SUBS: &str = "/redfish/v1/EventService/Subscriptions";

/// One POST a receiver got.
#[derive(Debug, Clone)]
struct Delivered {
    headers: HashMap<String, String>,
    body: Value,
}

/// A receiver on loopback that answers every POST with `status`.
struct Receiver {
    url: String,
    rx: mpsc::Receiver<Delivered>,
}

impl Receiver {
    fn start(status: u16) -> Receiver {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), status)
    }

    fn on(listener: TcpListener, status: u16) -> Receiver {
        let url = format!("http://{}/events", listener.local_addr().unwrap());
        Self::accepting(listener, url, move |conn, tx| serve(conn, status, tx))
    }

    /// Serves each connection to `listener` on a thread of its own with
    /// `each`, which gets the connection and where deliveries go.
    fn accepting<F>(listener: TcpListener, url: String, each: F) -> Receiver
    where
        F: Fn(std::net::TcpStream, &Mutex<mpsc::Sender<Delivered>>) + Send + Sync + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let (tx, each) = (Arc::new(Mutex::new(tx)), Arc::new(each));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (tx, each) = (tx.clone(), each.clone());
                std::thread::spawn(move || each(conn, &tx));
            }
        });
        Receiver { url, rx }
    }

    /// The next delivery, waiting up to `limit`.
    fn next(&self, limit: Duration) -> Option<Delivered> {
        self.rx.recv_timeout(limit).ok()
    }

    /// The MessageIds (without version) of the next delivery's records.
    fn next_ids(&self) -> Vec<String> {
        let d = self
            .next(Duration::from_secs(10))
            .expect("an event in time");
        ids_of(&d.body)
    }

    /// A receiver over HTTPS, its certificate self-signed for 127.0.0.1
    /// (no public root signed it).
    fn tls(status: u16) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/events", listener.local_addr().unwrap());
        let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![key.cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.key_pair.serialize_der().into()),
        )
        .unwrap();
        let cfg = Arc::new(cfg);
        Self::accepting(listener, url, move |conn, tx| {
            let tls = rustls::ServerConnection::new(cfg.clone()).unwrap();
            serve(rustls::StreamOwned::new(tls, conn), status, tx)
        })
    }
}

fn serve(conn: impl Read + Write, status: u16, tx: &Mutex<mpsc::Sender<Delivered>>) {
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let _ = tx.lock().unwrap().send(Delivered { headers, body });
        let reason = if status == 204 { "No Content" } else { "Error" };
        let w = r.get_mut();
        let answer = format!("HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\n\r\n");
        if w.write_all(answer.as_bytes())
            .and_then(|()| w.flush())
            .is_err()
        {
            return;
        }
    }
}

fn ids_of(event: &Value) -> Vec<String> {
    event["Events"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    let id = e["MessageId"].as_str().unwrap_or("");
                    let parts: Vec<&str> = id.split('.').collect();
                    format!("{}.{}", parts[0], parts[parts.len() - 1])
                })
                .collect()
        })
        .unwrap_or_default()
}

/// An open service of `n` fake systems whose events may go to loopback.
fn service(n: usize, opts: FakeOptions) -> Api {
    let api = Api::with(
        shoal_emulator::config::fake_systems(n),
        opts,
        shoal_emulator::auth::AuthStore::open(),
        shoal_emulator::config::FeatureSet::Full,
    );
    to_loopback(api)
}

/// `api` with events that may go to loopback.
fn to_loopback(api: Api) -> Api {
    let options = EventOptions {
        addresses: AddressPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            ..Default::default()
        },
        insecure: false,
    };
    Api::of_state(api.state.clone().with_events(options))
}

/// A BMC of profile `name` (its own endpoint) whose events may go to
/// loopback.
fn profiled(name: &str) -> Api {
    let api = Api::own_endpoint(name);
    to_loopback(api)
}

/// Sets the service's retries: `attempts` of them, `secs` apart.
async fn retries(api: &Api, attempts: u32, secs: u32) {
    let r = api
        .patch(
            "/redfish/v1/EventService",
            json!({"DeliveryRetryAttempts": attempts, "DeliveryRetryIntervalSeconds": secs}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
}

async fn subscribe(api: &Api, body: Value) -> String {
    let r = api.post(SUBS, body).await;
    assert_eq!(r.status, 201, "{r}");
    let loc = r.header("location").expect("Location");
    assert_eq!(r.body["@odata.id"], loc.as_str(), "{r}");
    loc
}

#[tokio::test]
async fn subscriptions_are_made_listed_changed_and_deleted_as_clients_expect() {
    let api = service(1, FakeOptions::default());
    // What sushy requires of the EventService, and Ironic checks against.
    let es = api.get("/redfish/v1/EventService").await;
    assert_eq!(es.status, 200, "{es}");
    for k in [
        "Id",
        "Name",
        "Actions",
        "Subscriptions",
        "ServerSentEventUri",
    ] {
        assert!(es.body.get(k).is_some(), "{k}: {es}");
    }
    assert!(es.body["EventTypesForSubscription"]
        .as_array()
        .unwrap()
        .contains(&json!("Alert")));
    let root = api.get("/redfish/v1").await;
    assert_eq!(
        root.body["EventService"]["@odata.id"],
        "/redfish/v1/EventService"
    );

    // Ironic's create_subscription body, HttpHeaders as metal3 sends them.
    let loc = subscribe(
        &api,
        json!({"Destination": "https://192.0.2.10/ev", "Protocol": "Redfish", "Context": "",
               "EventTypes": ["Alert"], "HttpHeaders": [{"Authorization": "Basic eDp5"}]}),
    )
    .await;
    let m = api.get(&loc).await;
    assert_eq!(m.status, 200, "{m}");
    assert_eq!(m.body["Id"], loc.rsplit('/').next().unwrap());
    assert_eq!(m.body["HttpHeaders"], json!([]), "never shown back");
    assert_eq!(m.body["SubscriptionType"], "RedfishEvent");
    // The Protocol Validator's: no EventTypes (201); FTP refused (400).
    let rpv = subscribe(
        &api,
        json!({"Context": "RPV test subscription", "Protocol": "Redfish",
               "Destination": "https://192.168.1.50/Destination1"}),
    )
    .await;
    let ftp = api
        .post(
            SUBS,
            json!({"Context": "x", "Protocol": "FTP", "Destination": "https://192.168.1.50/D"}),
        )
        .await;
    assert_eq!(ftp.status, 400, "{ftp}");
    assert_eq!(ftp.message_ids(), ["PropertyValueNotInList"]);
    let list = api.get(SUBS).await;
    assert_eq!(list.body["Members@odata.count"], 2, "{list}");

    let p = api
        .patch(
            &loc,
            json!({"Context": "mine", "DeliveryRetryPolicy": "SuspendRetries"}),
        )
        .await;
    assert_eq!(p.status, 200, "{p}");
    assert_eq!(p.body["Context"], "mine");
    assert_eq!(p.body["DeliveryRetryPolicy"], "SuspendRetries");
    let ro = api
        .patch(&loc, json!({"Destination": "https://192.0.2.11/"}))
        .await;
    assert_eq!(ro.message_ids(), ["PropertyNotWritable"], "{ro}");
    assert_eq!(
        api.get(&loc).await.body["Destination"],
        "https://192.0.2.10/ev"
    );

    for l in [&loc, &rpv] {
        assert_eq!(api.delete(l).await.status, 204);
        assert_eq!(api.get(l).await.status, 404);
    }
    assert_eq!(api.delete(&loc).await.status, 404);
}

#[tokio::test]
async fn bad_subscriptions_create_nothing_and_the_limit_holds() {
    let api = service(1, FakeOptions::default());
    for (body, want) in [
        (
            json!({"Destination": "not a url"}),
            "PropertyValueFormatError",
        ),
        (json!({"Destination": "http://127.0.0.1:1/"}), ""),
        (
            json!({"Destination": "http://169.254.169.254/"}),
            "PropertyValueFormatError",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "EventTypes": ["Nope"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "RegistryPrefixes": ["Nope"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "ResourceTypes": ["Nope"]}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "EventFormatType": "MetricReport"}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "HttpHeaders": [{"Content-Length": "1"}]}),
            "PropertyValueFormatError",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "HttpHeaders": [{"X": "a".repeat(9000)}]}),
            "PropertyValueFormatError",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "Bogus": 1}),
            "PropertyUnknown",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "IncludeOriginOfCondition": "yes"}),
            "PropertyValueTypeError",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "SubscriptionType": "SSE"}),
            "PropertyValueNotInList",
        ),
        (
            json!({"Destination": "http://192.0.2.1/", "HeartbeatIntervalMinutes": 0}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"Protocol": "Redfish"}),
            "CreateFailedMissingReqProperties",
        ),
    ] {
        let r = api.post(SUBS, body.clone()).await;
        if want.is_empty() {
            // Loopback is allowed here (--event-allow-net 127.0.0.0/8).
            assert_eq!(r.status, 201, "{body}: {r}");
            api.delete(&r.header("location").unwrap()).await;
            continue;
        }
        assert_eq!(r.status, 400, "{body}: {r}");
        assert!(r.message_ids().contains(&want.to_string()), "{body}: {r}");
    }
    assert_eq!(api.get(SUBS).await.body["Members@odata.count"], 0);
    // The default policy (no --event-allow-net) refuses loopback.
    let strict = Api::new(1);
    let r = strict
        .post(SUBS, json!({"Destination": "http://127.0.0.1:9/"}))
        .await;
    assert_eq!(r.status, 400, "{r}");
    // At most the profile's 20.
    for i in 0..20 {
        subscribe(
            &api,
            json!({"Destination": format!("http://192.0.2.1/{i}")}),
        )
        .await;
    }
    let r = api
        .post(SUBS, json!({"Destination": "http://192.0.2.1/x"}))
        .await;
    assert_eq!(r.status, 400, "{r}");
    assert_eq!(r.message_ids(), ["EventSubscriptionLimitExceeded"]);
    assert_eq!(api.get(SUBS).await.body["Members@odata.count"], 20);
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_gets_the_events_of_real_changes_in_order_with_its_headers() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": rx.url, "Context": "ctx-1",
               "HttpHeaders": [{"X-Token": "t0k"}]}),
    )
    .await;
    // Another that takes only power events: never sees the boot change.
    let power_only = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": power_only.url, "EventTypes": ["StatusChange"]}),
    )
    .await;
    api.reset(&sys, "On").await;
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    api.reset(&sys, "ForceOff").await;

    let first = rx.next(Duration::from_secs(10)).expect("an event");
    assert_eq!(ids_of(&first.body), ["ResourceEvent.ResourcePoweredOn"]);
    assert_eq!(
        first.headers.get("x-token").map(String::as_str),
        Some("t0k")
    );
    assert_eq!(
        first.headers.get("content-type").map(String::as_str),
        Some("application/json")
    );
    assert!(first.headers.contains_key("content-length"), "{first:?}");
    assert_eq!(first.body["Context"], "ctx-1");
    let rec = &first.body["Events"][0];
    assert_eq!(rec["OriginOfCondition"]["@odata.id"], sys.as_str());
    assert_eq!(rec["EventType"], "StatusChange");
    assert!(rec["EventTimestamp"].as_str().unwrap().contains('T'));
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourceChanged"]);
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOff"]);

    assert_eq!(power_only.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);
    assert_eq!(power_only.next_ids(), ["ResourceEvent.ResourcePoweredOff"]);
    assert!(power_only.next(Duration::from_millis(300)).is_none());

    // A test event goes to every subscriber that takes its type.
    let t = api
        .post(
            "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent",
            json!({"EventType": "StatusChange", "Message": "hello", "MessageId": "ResourceEvent.1.3.0.TestMessage"}),
        )
        .await;
    assert_eq!(t.status, 204, "{t}");
    let got = power_only
        .next(Duration::from_secs(10))
        .expect("the test event");
    assert_eq!(got.body["Events"][0]["Message"], "hello");
    assert_eq!(rx.next_ids(), ["ResourceEvent.TestMessage"]);
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_power_transition_the_machine_ends_itself_is_an_event() {
    let api = service(
        1,
        FakeOptions {
            power_delay: Duration::from_millis(300),
            ..Default::default()
        },
    );
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(&api, json!({"Destination": rx.url})).await;
    api.reset(&sys, "On").await;
    // Asked for: powering on. Ended by the machine: powered on, seen by
    // the service reading its machines.
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweringOn"]);
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_is_retried_then_its_policy_applies() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    retries(&api, 1, 1).await;
    // Answers 500: delivered to, refused.
    let failing = Receiver::start(500);
    let terminated = subscribe(&api, json!({"Destination": failing.url})).await;
    // Nobody listens yet: connection refused, suspended after its retries.
    let hold = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hold.local_addr().unwrap().port();
    drop(hold);
    let suspended = subscribe(
        &api,
        json!({"Destination": format!("http://127.0.0.1:{port}/events"),
               "DeliveryRetryPolicy": "SuspendRetries"}),
    )
    .await;
    // Sees the other's end.
    let watcher = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": watcher.url, "RegistryPrefixes": ["Base"]}),
    )
    .await;
    api.reset(&sys, "On").await;

    // The first try and one retry, a second apart; then it is gone.
    let a = failing.next(Duration::from_secs(10)).expect("first try");
    let b = failing.next(Duration::from_secs(10)).expect("the retry");
    assert_eq!(a.body, b.body, "the same event again");
    let end = watcher.next(Duration::from_secs(10)).expect("the end told");
    assert_eq!(ids_of(&end.body), ["Base.SubscriptionTerminated"]);
    assert_eq!(
        end.body["Events"][0]["OriginOfCondition"]["@odata.id"],
        terminated.as_str()
    );
    assert_eq!(api.get(&terminated).await.status, 404);

    // Suspended: shown Disabled, kept.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let m = api.get(&suspended).await;
        if m.body["Status"]["State"] == "Disabled" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never suspended: {m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The receiver comes up; resumed, it gets the event it missed.
    let back = Receiver::on(TcpListener::bind(("127.0.0.1", port)).unwrap(), 204);
    let r = api
        .post(
            &format!("{suspended}/Actions/EventDestination.ResumeSubscription"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(back.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);
    assert_eq!(api.get(&suspended).await.body["Status"]["State"], "Enabled");
}

/// HTTPS: a destination whose certificate no public root signed gets
/// nothing while its subscription verifies certificates (the default);
/// once a client turns `VerifyCertificate` off, the retry delivers over
/// TLS, and the next event follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_destination_is_verified_unless_its_subscription_says_not() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    retries(&api, 30, 1).await;
    let rx = Receiver::tls(204);
    let sub = subscribe(&api, json!({"Destination": rx.url})).await;
    assert_eq!(api.get(&sub).await.body["VerifyCertificate"], true);
    api.reset(&sys, "On").await;
    assert!(
        rx.next(Duration::from_secs(3)).is_none(),
        "delivered to a certificate nothing vouches for"
    );
    let r = api.patch(&sub, json!({"VerifyCertificate": false})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);
    api.reset(&sys, "ForceOff").await;
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOff"]);
}

/// The next SSE frame's lines (`id:`, `data:`), comments skipped.
async fn frame(body: &mut Body) -> Option<(u64, Value)> {
    let mut text = String::new();
    loop {
        let f = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .ok()??
            .ok()?;
        let Ok(data) = f.into_data() else { continue };
        text.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            if block.starts_with(':') {
                continue;
            }
            let mut id = 0;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().unwrap();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            return Some((id, serde_json::from_str(&data).unwrap()));
        }
    }
}

fn sse_request(query: &str, last: Option<u64>) -> Request<Body> {
    let mut b = Request::get(format!("/redfish/v1/EventService/SSE{query}"))
        .header("Accept", "text/event-stream");
    if let Some(l) = last {
        b = b.header("Last-Event-ID", l.to_string());
    }
    b.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn an_sse_stream_filters_shows_as_a_subscription_resumes_and_closes() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    // A JSON client is told it cannot have a stream.
    let json_client = api
        .req(
            axum::http::Method::GET,
            "/redfish/v1/EventService/SSE",
            None,
            &[("Accept", "application/json")],
        )
        .await;
    assert!(json_client.status.as_u16() >= 400, "{json_client}");
    assert!(json_client.body["error"]["@Message.ExtendedInfo"].is_array());
    let bad = api
        .open(sse_request("?$filter=Bogus%20eq%20'x'", None))
        .await;
    assert_eq!(bad.status(), 400);

    let resp = api
        .open(sse_request(
            "?$filter=MessageId%20eq%20'ResourceEvent.ResourcePoweredOn'",
            None,
        ))
        .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut body = resp.into_body();
    let list = api.get(SUBS).await;
    assert_eq!(list.body["Members@odata.count"], 1, "{list}");
    let member = list.body["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let m = api.get(&member).await;
    assert_eq!(m.body["SubscriptionType"], "SSE");
    assert!(m.body["Context"].is_string());

    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    api.reset(&sys, "On").await;
    let (id, ev) = frame(&mut body).await.expect("a frame");
    assert_eq!(
        ids_of(&ev),
        ["ResourceEvent.ResourcePoweredOn"],
        "the boot change filtered out"
    );
    assert_eq!(ev["@odata.type"], "#Event.v1_7_0.Event");

    // Resumed after the first event: the rest of the buffer, unfiltered.
    let mut again = api.open(sse_request("", Some(id - 2))).await.into_body();
    let (id1, e1) = frame(&mut again).await.expect("replayed");
    assert_eq!(ids_of(&e1), ["ResourceEvent.ResourceChanged"]);
    let (id2, _) = frame(&mut again).await.expect("replayed");
    assert!(id1 < id2 && id2 == id, "{id1} {id2} {id}");

    // DELETE of its member ends the stream.
    assert_eq!(api.delete(&member).await.status, 204);
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = body.frame().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream did not end");
    drop(again);
}

fn faults(api: &Api, rules: Value) {
    let cfg = shoal_emulator::faults::FaultConfig::from_json(
        json!({"seed": 7, "rules": rules}).to_string().as_bytes(),
    )
    .expect("event fault rules");
    api.state.core.faults.replace(cfg);
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_faults_drop_duplicate_reorder_and_empty_what_is_sent() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(&api, json!({"Destination": rx.url})).await;
    let boot = json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}});
    let hdd = json!({"Boot": {"BootSourceOverrideTarget": "Hdd"}});

    // Dropped: the first delivery to /events is never sent.
    faults(
        &api,
        json!([{"methods": ["EVENT"], "path": "/events", "drop_rate": 1.0, "times": 1}]),
    );
    assert_eq!(api.patch(&sys, boot.clone()).await.status, 200);
    api.reset(&sys, "On").await;
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);

    // Sent twice, its origin and arguments empty as some BMCs send them.
    faults(
        &api,
        json!([{"methods": ["EVENT"], "duplicate_rate": 1.0, "times": 1,
                "empty_fields": ["OriginOfCondition", "MessageArgs"]}]),
    );
    api.reset(&sys, "ForceOff").await;
    for _ in 0..2 {
        let d = rx.next(Duration::from_secs(10)).expect("the event, twice");
        assert_eq!(ids_of(&d.body), ["ResourceEvent.ResourcePoweredOff"]);
        assert_eq!(d.body["Events"][0]["OriginOfCondition"], "");
        assert_eq!(d.body["Events"][0]["MessageArgs"], json!([]));
    }

    // Held back: the next event overtakes it.
    faults(
        &api,
        json!([{"methods": ["EVENT"], "reorder_rate": 1.0, "times": 1}]),
    );
    assert_eq!(api.patch(&sys, hdd).await.status, 200);
    api.reset(&sys, "On").await;
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOn"]);
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourceChanged"]);
    assert!(rx.next(Duration::from_millis(300)).is_none(), "each once");

    // A request rule never touches events, nor an event rule requests.
    for (bad, key) in [
        (json!([{"methods": ["EVENT", "GET"]}]), "rules[0].methods"),
        (json!([{"duplicate_rate": 0.5}]), "rules[0].duplicate_rate"),
        (
            json!([{"methods": ["EVENT"], "empty_fields": ["Bogus"]}]),
            "rules[0].empty_fields",
        ),
        (
            json!([{"methods": ["EVENT"], "error_rate": 0.5}]),
            "rules[0].error_rate",
        ),
        (
            json!([{"methods": ["EVENT"], "reorder_rate": 2.0}]),
            "rules[0].reorder_rate",
        ),
    ] {
        let e = shoal_emulator::faults::FaultConfig::from_json(
            json!({"rules": bad}).to_string().as_bytes(),
        )
        .unwrap_err();
        assert!(e.starts_with(key), "{bad}: {e}");
    }
}

#[tokio::test]
async fn accounts_and_sessions_made_and_removed_are_events() {
    let api = service(1, FakeOptions::default());
    let mut body = api
        .open(sse_request(
            "?$filter=ResourceType%20eq%20'ManagerAccount'%20or%20ResourceType%20eq%20'Session'",
            None,
        ))
        .await
        .into_body();
    let accounts = "/redfish/v1/AccountService/Accounts";
    let r = api
        .post(
            accounts,
            json!({"UserName": "ev-user", "Password": "ev-Passw0rd!", "RoleId": "Operator"}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let account = r.header("location").unwrap();
    let r = api.patch(&account, json!({"RoleId": "ReadOnly"})).await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .post(
            "/redfish/v1/SessionService/Sessions",
            json!({"UserName": "ev-user", "Password": "ev-Passw0rd!"}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let session = r.header("location").unwrap();
    assert_eq!(api.delete(&session).await.status, 204);
    assert_eq!(api.delete(&account).await.status, 204);
    let mut got = Vec::new();
    for _ in 0..5 {
        let (_, ev) = frame(&mut body).await.expect("an event");
        let rec = &ev["Events"][0];
        got.push(format!(
            "{} {}",
            rec["MessageId"]
                .as_str()
                .unwrap()
                .rsplit('.')
                .next()
                .unwrap(),
            rec["OriginOfCondition"]["@odata.id"].as_str().unwrap()
        ));
    }
    assert_eq!(
        got,
        [
            format!("ResourceCreated {account}"),
            format!("ResourceChanged {account}"),
            format!("ResourceCreated {session}"),
            format!("ResourceRemoved {session}"),
            format!("ResourceRemoved {account}"),
        ]
    );
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_service_publishes_nothing_and_streams_nothing() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(&api, json!({"Destination": rx.url})).await;
    let mut open = api.open(sse_request("", None)).await.into_body();
    let off = api
        .patch("/redfish/v1/EventService", json!({"ServiceEnabled": false}))
        .await;
    assert_eq!(off.status, 200, "{off}");
    assert_eq!(off.body["Status"]["State"], "Disabled");
    // The open stream ends; a new one is refused; nothing is pushed.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = open.frame().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived the service");
    let refused = api.open(sse_request("", None)).await;
    assert_eq!(refused.status(), 503);
    api.reset(&sys, "On").await;
    let t = api
        .post(
            "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent",
            json!({}),
        )
        .await;
    assert_eq!(t.status, 503, "{t}");
    assert_eq!(t.message_ids(), ["ServiceDisabled"]);
    assert!(rx.next(Duration::from_millis(500)).is_none());
    // On again: the next change is pushed.
    let on = api
        .patch("/redfish/v1/EventService", json!({"ServiceEnabled": true}))
        .await;
    assert_eq!(on.status, 200, "{on}");
    api.reset(&sys, "ForceOff").await;
    assert_eq!(rx.next_ids(), ["ResourceEvent.ResourcePoweredOff"]);
}

#[tokio::test]
async fn an_idrac_starts_disabled_and_pushes_over_https_only() {
    let api = Api::own_endpoint("idrac9");
    let es = api.get("/redfish/v1/EventService").await;
    assert_eq!(es.body["ServiceEnabled"], false, "{es}");
    assert_eq!(es.body["ServerSentEventUri"], "/redfish/v1/SSE");
    assert_eq!(es.body["DeliveryRetryIntervalSeconds"], 5);
    let http = api
        .post(SUBS, json!({"Destination": "http://192.0.2.1/events"}))
        .await;
    assert_eq!(http.status, 400, "{http}");
    assert_eq!(http.message_ids(), ["PropertyValueFormatError"]);
    let https = api
        .post(SUBS, json!({"Destination": "https://192.0.2.1/events"}))
        .await;
    assert_eq!(https.status, 201, "{https}");
    // Its SSE URI is its own; the DMTF path is not served there.
    let dmtf = api.open(sse_request("", None)).await;
    assert_eq!(dmtf.status(), 404);
}

// The receiver is waited on by blocking: the service runs beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_asking_for_heartbeats_gets_them() {
    let api = service(1, FakeOptions::default());
    let rx = Receiver::start(204);
    // Filters leave heartbeats alone: this one takes no resource event.
    let sub = subscribe(
        &api,
        json!({"Destination": rx.url, "SendHeartbeat": true, "HeartbeatIntervalMinutes": 1,
               "RegistryPrefixes": ["Base"]}),
    )
    .await;
    let m = api.get(&sub).await;
    assert_eq!(m.body["SendHeartbeat"], true);
    assert_eq!(m.body["HeartbeatIntervalMinutes"], 1);
    let beat = rx
        .next(Duration::from_secs(75))
        .expect("a heartbeat within a minute");
    assert_eq!(
        ids_of(&beat.body),
        ["HeartbeatEvent.RedfishServiceFunctional"]
    );
    assert_eq!(
        beat.body["Events"][0]["OriginOfCondition"]["@odata.id"],
        sub.as_str()
    );
}

/// `IncludeOriginOfCondition`: the subscription that asks gets the
/// resource itself as it was rendered when the change was published;
/// another, beside it, the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_including_the_origin_gets_the_resource_itself() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let full = Receiver::start(204);
    let sub = subscribe(
        &api,
        json!({"Destination": full.url, "IncludeOriginOfCondition": true,
               "EventTypes": ["StatusChange"]}),
    )
    .await;
    assert_eq!(api.get(&sub).await.body["IncludeOriginOfCondition"], true);
    let plain = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": plain.url, "EventTypes": ["StatusChange"]}),
    )
    .await;
    api.reset(&sys, "On").await;
    let got = full.next(Duration::from_secs(10)).expect("an event");
    let origin = &got.body["Events"][0]["OriginOfCondition"];
    assert_eq!(origin["@odata.id"], sys.as_str(), "{origin}");
    assert_eq!(
        origin["@odata.type"]
            .as_str()
            .map(|t| t.starts_with("#ComputerSystem.")),
        Some(true)
    );
    assert_eq!(origin["PowerState"], "On", "rendered after the change");
    let linked = plain.next(Duration::from_secs(10)).expect("an event");
    assert_eq!(
        linked.body["Events"][0]["OriginOfCondition"],
        json!({ "@odata.id": sys })
    );
}

/// A virtual media insert that runs as a Task tells its start and its
/// end as TaskEvents about the task, beside the medium's own change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tells_its_start_and_end() {
    let api = service(
        1,
        FakeOptions {
            media_delay: Duration::from_millis(300),
            ..FakeOptions::default()
        },
    );
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": rx.url, "ResourceTypes": ["Task"]}),
    )
    .await;
    let service_types = api.get("/redfish/v1/EventService").await;
    assert!(service_types.body["ResourceTypes"]
        .as_array()
        .unwrap()
        .contains(&json!("Task")));
    let r = api
        .post(
            &format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": "http://192.0.2.9/boot.iso"}),
        )
        .await;
    assert_eq!(r.status, 202, "{r}");
    let task = r.header("location").expect("the task monitor");
    let started = rx.next(Duration::from_secs(10)).expect("TaskStarted");
    assert_eq!(ids_of(&started.body), ["TaskEvent.TaskStarted"]);
    let rec = &started.body["Events"][0];
    let origin = rec["OriginOfCondition"]["@odata.id"].as_str().unwrap();
    assert!(
        origin.starts_with("/redfish/v1/TaskService/Tasks/"),
        "{origin}"
    );
    let id = origin.rsplit('/').next().unwrap();
    assert_eq!(rec["MessageArgs"], json!([id]));
    assert!(task.contains(id), "{task} is the same task");
    assert_eq!(rx.next_ids(), ["TaskEvent.TaskCompletedOK"]);
}

/// An iDRAC's EventService turned on (it ships off) and its SSE stream
/// (`/redfish/v1/SSE`) opened with `$filter` = `filter` (URL-encoded).
async fn idrac_stream(api: &Api, filter: &str) -> Body {
    let r = api
        .patch("/redfish/v1/EventService", json!({"ServiceEnabled": true}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let req = Request::get(format!("/redfish/v1/SSE?$filter={filter}"))
        .header("Accept", "text/event-stream")
        .body(Body::empty())
        .unwrap();
    let resp = api.open(req).await;
    assert_eq!(resp.status(), 200);
    resp.into_body()
}

/// An iDRAC's Dell job (an SCP import) tells its start and completion as
/// TaskEvents about the job, on an SSE stream filtered to tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dell_jobs_states_are_task_events() {
    let api = Api::own_endpoint("idrac9");
    let mut body = idrac_stream(&api, "ResourceType%20eq%20'Task'").await;
    let mgr = "/redfish/v1/Managers/iDRAC.Embedded.1";
    let import = api
        .post(
            &format!("{mgr}/Actions/Oem/EID_674_Manager.ImportSystemConfiguration"),
            json!({
                "ShareParameters": {"Target": ["ALL"]},
                "ImportBuffer": "<SystemConfiguration><Component FQDD=\"iDRAC.Embedded.1\"><Attribute Name=\"ServerBoot.1#BootOnce\">Enabled</Attribute><Attribute Name=\"ServerBoot.1#FirstBootDevice\">VCD-DVD</Attribute></Component></SystemConfiguration>",
            }),
        )
        .await;
    assert_eq!(import.status, 202, "{import}");
    let jid = import
        .header("location")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let (_, started) = frame(&mut body).await.expect("TaskStarted");
    assert_eq!(ids_of(&started), ["TaskEvent.TaskStarted"]);
    let rec = &started["Events"][0];
    assert_eq!(rec["MessageArgs"], json!([jid]));
    assert_eq!(
        rec["OriginOfCondition"]["@odata.id"],
        format!("{mgr}/Oem/Dell/Jobs/{jid}")
    );
    let (_, done) = frame(&mut body).await.expect("TaskCompletedOK");
    assert_eq!(ids_of(&done), ["TaskEvent.TaskCompletedOK"]);
}

/// An iDRAC's reset: its SSE streams end, its push subscriptions stay
/// (iDRAC keeps them), and its Lifecycle log says RAC0182, the reboot
/// and why, about the Manager.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bmc_reset_ends_streams_keeps_subscriptions_and_is_logged() {
    let api = Api::own_endpoint("idrac9");
    let r = api
        .patch("/redfish/v1/EventService", json!({"ServiceEnabled": true}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let push = subscribe(&api, json!({"Destination": "https://192.0.2.1/events"})).await;
    let req = Request::get("/redfish/v1/SSE")
        .header("Accept", "text/event-stream")
        .body(Body::empty())
        .unwrap();
    let mut stream = api.open(req).await.into_body();
    assert_eq!(api.get(SUBS).await.body["Members@odata.count"], 2);
    let mgr = "/redfish/v1/Managers/iDRAC.Embedded.1";
    let r = api
        .post(
            &format!("{mgr}/Actions/Manager.Reset"),
            json!({"ResetType": "GracefulRestart"}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = stream.frame().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ended with the BMC");
    let left = api.get(SUBS).await;
    assert_eq!(left.body["Members@odata.count"], 1, "{left}");
    assert_eq!(left.body["Members"][0]["@odata.id"], push.as_str());
    let lc = api
        .get(&format!(
            "{mgr}/LogServices/Lclog/Entries?$filter=MessageId%20eq%20'IDRAC.2.8.RAC0182'"
        ))
        .await;
    let entry = &lc.body["Members"][0];
    assert_eq!(entry["MessageArgs"], json!(["user initiated"]), "{lc}");
    assert_eq!(
        entry["Message"],
        "The iDRAC firmware was rebooted with the following reason: user initiated."
    );
    assert_eq!(entry["Links"]["OriginOfCondition"]["@odata.id"], mgr);
}

/// Media inserted, then ejected: each a ResourceChanged about the
/// virtual CD, in order, and the SEL untouched (media is not a SEL's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn media_inserted_then_ejected_are_told_about_the_cd() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": rx.url, "ResourceTypes": ["VirtualMedia"]}),
    )
    .await;
    // Where a generic BMC keeps its media (what the events name).
    let cd = format!("{}/VirtualMedia/Cd", sys.replace("Systems", "Managers"));
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": "http://192.0.2.9/boot.iso"}),
        )
        .await;
    assert!(r.status.is_success(), "{r}");
    let r = api
        .post(&format!("{cd}/Actions/VirtualMedia.EjectMedia"), json!({}))
        .await;
    assert!(r.status.is_success(), "{r}");
    for what in ["inserted", "ejected"] {
        let got = rx.next(Duration::from_secs(10)).expect(what);
        assert_eq!(
            ids_of(&got.body),
            ["ResourceEvent.ResourceChanged"],
            "{what}"
        );
        assert_eq!(
            got.body["Events"][0]["OriginOfCondition"]["@odata.id"],
            cd.as_str(),
            "{what}"
        );
    }
    assert!(
        rx.next(Duration::from_millis(300)).is_none(),
        "one event each"
    );
    let sel = api.get(&format!("{sys}/LogServices/Sel/Entries")).await;
    assert_eq!(sel.body["Members@odata.count"], 0, "{sel}");
    let log = api
        .get(&format!(
            "{}/LogServices/Log/Entries",
            sys.replace("Systems", "Managers")
        ))
        .await;
    assert_eq!(log.body["Members@odata.count"], 2, "{log}");
}

/// iLO 5 speaks its own registry: power as iLOEvents ServerPoweredOn and
/// ServerPoweredOff, a change as ResourceUpdated, each about the resource
/// (a plain URI, as iLO sends it); a subscription may name the prefix, the
/// EventService lists it and the registry is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ilo_tells_power_and_changes_in_its_own_registry() {
    let api = profiled("ilo5");
    let sys = api.system(0).await;
    let es = api.get("/redfish/v1/EventService").await;
    assert!(es.body["RegistryPrefixes"]
        .as_array()
        .unwrap()
        .contains(&json!("iLOEvents")));
    let rx = Receiver::start(204);
    subscribe(
        &api,
        json!({"Destination": rx.url, "RegistryPrefixes": ["iLOEvents"]}),
    )
    .await;
    // Off, out of POST: the override may change.
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert!(r.status.is_success(), "{r}");
    let changed = rx.next(Duration::from_secs(10)).expect("the change told");
    assert_eq!(ids_of(&changed.body), ["iLOEvents.ResourceUpdated"]);
    assert_eq!(changed.body["Events"][0]["EventType"], "ResourceUpdated");
    api.reset(&sys, "On").await;
    let on = rx.next(Duration::from_secs(10)).expect("power on told");
    assert_eq!(ids_of(&on.body), ["iLOEvents.ServerPoweredOn"]);
    let rec = &on.body["Events"][0];
    assert_eq!(rec["MessageId"], "iLOEvents.2.3.ServerPoweredOn");
    assert_eq!(rec["Message"], "The server has been powered on.");
    assert_eq!(rec["EventType"], "Alert");
    assert_eq!(rec["OriginOfCondition"], sys.as_str());
    let reg = api.get("/redfish/v1/Registries/iLOEvents/iLOEvents").await;
    assert_eq!(reg.status, 200, "{reg}");
    assert_eq!(reg.body["Id"], "iLOEvents.2.3.0");
    assert_eq!(reg.body["OwningEntity"], "HPE");
    assert_eq!(
        reg.body["Messages"]["ServerPoweredOn"]["Message"],
        "The server has been powered on."
    );
    // The vendor's MessageIds are known to a subscription's filter.
    let by_id = api
        .post(
            SUBS,
            json!({"Destination": rx.url, "MessageIds": ["iLOEvents.ServerPoweredOff"]}),
        )
        .await;
    assert_eq!(by_id.status, 201, "{by_id}");
}

/// bmcweb pushes its event log's entries in its OpenBMC registry, with
/// no origin, and no ResourceEvent: a boot override's change is not told;
/// its EventLog holds the same entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openbmc_tells_power_in_its_registry_and_no_resource_events() {
    let api = profiled("openbmc");
    let sys = api.system(0).await;
    let rx = Receiver::start(204);
    subscribe(&api, json!({"Destination": rx.url})).await;
    api.reset(&sys, "On").await;
    let on = rx.next(Duration::from_secs(10)).expect("power on told");
    assert_eq!(ids_of(&on.body), ["OpenBMC.DCPowerOn"]);
    let rec = &on.body["Events"][0];
    assert_eq!(rec["MessageId"], "OpenBMC.0.5.DCPowerOn");
    assert_eq!(rec["Message"], "Host system DC power is on");
    assert!(rec.get("OriginOfCondition").is_none(), "{rec}");
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert!(r.status.is_success(), "{r}");
    api.reset(&sys, "ForceOff").await;
    let off = rx.next(Duration::from_secs(10)).expect("power off told");
    assert_eq!(
        ids_of(&off.body),
        ["OpenBMC.DCPowerOff"],
        "nothing before it"
    );
    let log = api
        .get(&format!("{sys}/LogServices/EventLog/Entries"))
        .await;
    let ids: Vec<&str> = log.body["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["MessageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["OpenBMC.0.5.DCPowerOn", "OpenBMC.0.5.DCPowerOff"]);
}

/// An iDRAC's power changes come in its own registry, under its prefix
/// (IDRAC.2.8.SYS1000), on its SSE stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idrac_tells_power_in_its_own_registry() {
    let api = Api::own_endpoint("idrac9");
    let sys = api.system(0).await;
    let mut body = idrac_stream(&api, "RegistryPrefix%20eq%20'IDRAC'").await;
    api.reset(&sys, "On").await;
    let (_, on) = frame(&mut body).await.expect("SYS1000");
    let rec = &on["Events"][0];
    assert_eq!(rec["MessageId"], "IDRAC.2.8.SYS1000");
    assert_eq!(rec["Message"], "System is turning on.");
    assert_eq!(rec["EventType"], "Alert");
    assert_eq!(rec["OriginOfCondition"]["@odata.id"], sys.as_str());
}

/// Event faults act on an SSE stream as on a push delivery (rules whose
/// path is the stream's URI): a frame dropped, one sent twice with its
/// fields emptied, one held back until after the next.
#[tokio::test]
async fn event_faults_act_on_sse_streams_too() {
    let api = service(1, FakeOptions::default());
    let sys = api.system(0).await;
    let mut body = api.open(sse_request("", None)).await.into_body();
    let sse = "/redfish/v1/EventService/SSE";
    faults(
        &api,
        json!([{"methods": ["EVENT"], "path": sse, "drop_rate": 1.0, "times": 1}]),
    );
    api.reset(&sys, "On").await;
    api.reset(&sys, "ForceOff").await;
    let (off, e) = frame(&mut body).await.expect("the second event");
    assert_eq!(
        ids_of(&e),
        ["ResourceEvent.ResourcePoweredOff"],
        "the first dropped"
    );

    faults(
        &api,
        json!([{"methods": ["EVENT"], "path": sse, "duplicate_rate": 1.0, "times": 1,
                "empty_fields": ["OriginOfCondition"]}]),
    );
    api.reset(&sys, "On").await;
    let (a, first) = frame(&mut body).await.expect("the event");
    let (b, again) = frame(&mut body).await.expect("the event again");
    assert_eq!((a, b), (off + 1, off + 1), "the same id twice");
    assert_eq!(first, again);
    assert_eq!(ids_of(&first), ["ResourceEvent.ResourcePoweredOn"]);
    assert_eq!(first["Events"][0]["OriginOfCondition"], "");

    faults(
        &api,
        json!([{"methods": ["EVENT"], "path": sse, "reorder_rate": 1.0, "times": 1}]),
    );
    api.reset(&sys, "ForceOff").await;
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let (_, next) = frame(&mut body).await.expect("the next event");
    let (_, held) = frame(&mut body).await.expect("the one held back");
    assert_eq!(ids_of(&next), ["ResourceEvent.ResourceChanged"]);
    assert_eq!(ids_of(&held), ["ResourceEvent.ResourcePoweredOff"]);
}
