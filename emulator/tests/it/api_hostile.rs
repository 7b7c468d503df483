//! What a hostile or careless client sends: query strings built to exhaust
//! the parser, paths that decode to no UTF-8, writes from another site's
//! page, form bodies, and bodies left unread by an early refusal. Each
//! answer is a Redfish error and no state changes.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::common::{htpasswd, Api};

const ROLES: &str = "/redfish/v1/AccountService/Roles";

#[tokio::test]
async fn filters_built_to_exhaust_the_parser_are_refused() {
    let api = Api::new(1);
    // Deep but short: the depth bound, not the size bound, refuses them.
    let deep_parens = format!("{}Id eq 'x'{}", "(".repeat(100), ")".repeat(100));
    let deep_not = format!("{}Id eq 'x'", "not ".repeat(200));
    let huge = "(".repeat(30_000);
    let long_chain = vec!["Id eq 'x'"; 400].join(" and ");
    let nested_ok = format!("{}Id eq 'Operator'{}", "(".repeat(10), ")".repeat(10));
    for (f, why) in [
        (&deep_parens, "nested"),
        (&deep_not, "nested"),
        (&long_chain, "bytes"),
        (&huge, "bytes"),
    ] {
        let r = api
            .get(&format!("{ROLES}?$filter={}", f.replace(' ', "%20")))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
        assert_eq!(r.message_ids(), ["QueryParameterOutOfRange"], "{}", r.body);
        let text = r.body["error"]["@Message.ExtendedInfo"][0]["Message"]
            .as_str()
            .unwrap();
        assert!(text.contains(why), "{text}");
        assert!(text.len() < 1_000, "the argument is shortened: {text}");
    }
    // 200 comparisons fit the size bound but not the token bound.
    let many = vec!["Id eq 1"; 90].join(" or ");
    let r = api
        .get(&format!("{ROLES}?$filter={}", many.replace(' ', "%20")))
        .await;
    assert_eq!(r.message_ids(), ["QueryParameterOutOfRange"], "{}", r.body);
    // Within the bounds, nesting still works.
    let r = api
        .get(&format!(
            "{ROLES}?$filter={}",
            nested_ok.replace(' ', "%20").replace('\'', "%27")
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["Members@odata.count"], 1);
}

#[tokio::test]
async fn queries_are_parsed_only_after_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let file = htpasswd(dir.path(), "admin", "pw-12345", 4);
    let api = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        AuthStore::from_htpasswd(&file).unwrap(),
        FeatureSet::Full,
    );
    for q in ["$filter=((((", "$expand=bogus", "$top=x", "$unknown=1"] {
        let r = api.get(&format!("/redfish/v1/Systems?{q}")).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{q}: {}", r.body);
        let r = api
            .req(
                Method::POST,
                &format!("/redfish/v1/Systems?{q}"),
                Some(json!({})),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "POST {q}: {}", r.body);
    }
}

#[tokio::test]
async fn paths_that_decode_to_no_utf8_are_redfish_404s() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    for path in [
        "/redfish/v1/Systems/%FF".to_string(),
        format!("{sys}/%FF"),
        "/redfish/v1/Managers/%FF/VirtualMedia".to_string(),
        "/redfish/v1/Managers/%C3/VirtualMedia/Cd".to_string(),
        "/redfish/v1/AccountService/Accounts/%FE%FF".to_string(),
        "/redfish/v1/Systems/%".to_string(),
    ] {
        for m in [Method::GET, Method::PATCH, Method::DELETE] {
            let body = (m == Method::PATCH).then(|| json!({"AssetTag": "x"}));
            let r = api.req(m.clone(), &path, body, &[]).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{m} {path}: {}", r.body);
            assert_eq!(r.message_ids(), ["ResourceMissingAtURI"], "{m} {path}");
        }
    }
}

#[tokio::test]
async fn writes_from_another_site_change_nothing() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let before = api.get(&sys).await.body["PowerState"].clone();
    let reset = format!("{sys}/Actions/ComputerSystem.Reset");
    let body = json!({"ResetType": "ForceOff"});
    for headers in [
        &[("Origin", "http://evil.test"), ("Host", "127.0.0.1:8000")][..],
        &[("Origin", "null"), ("Host", "127.0.0.1:8000")][..],
        &[("Sec-Fetch-Site", "cross-site")][..],
    ] {
        let r = api
            .req(Method::POST, &reset, Some(body.clone()), headers)
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{headers:?}: {}", r.body);
        assert_eq!(r.message_ids(), ["HeaderInvalid"]);
    }
    assert_eq!(api.get(&sys).await.body["PowerState"], before);
    // A form body, which a page may post cross-site without asking.
    let form = Request::post(&reset)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(Body::from(r#"{"ResetType": "ForceOff"}"#))
        .unwrap();
    let r = api.raw(form).await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", r.body);
    let text = Request::post(&reset)
        .header("Content-Type", "text/plain")
        .body(Body::from(r#"{"ResetType": "ForceOff"}"#))
        .unwrap();
    assert_eq!(
        api.raw(text).await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    for ct in ["application/jsonx", "application/json-patch+json"] {
        let req = Request::post(&reset)
            .header("Content-Type", ct)
            .body(Body::from(r#"{"ResetType": "ForceOff"}"#))
            .unwrap();
        assert_eq!(
            api.raw(req).await.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{ct}"
        );
    }
    assert_eq!(api.get(&sys).await.body["PowerState"], before);
    // The same page's own requests, and tools that send no Origin, pass.
    let r = api
        .req(
            Method::POST,
            &reset,
            Some(body.clone()),
            &[
                ("Origin", "http://127.0.0.1:8000"),
                ("Host", "127.0.0.1:8000"),
            ],
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    // Reads are never refused for their origin.
    let r = api
        .req(Method::GET, &sys, None, &[("Origin", "http://evil.test")])
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn an_oversized_body_is_refused_and_the_connection_closed() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let big = format!(r#"{{"AssetTag": "{}"}}"#, "x".repeat(2 << 20));
    let req = Request::patch(&sys)
        .header("Content-Type", "application/json")
        .body(Body::from(big))
        .unwrap();
    let r = api.raw(req).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(r.message_ids(), ["PayloadTooLarge"]);
    assert_eq!(r.header("connection").as_deref(), Some("close"));
}

/// Reads one HTTP/1.1 response with a Content-Length body; its status.
async fn response<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> u16 {
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    let status: u16 = line
        .split(' ')
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {line:?}"))
        .parse()
        .unwrap();
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).await.unwrap();
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await.unwrap();
    status
}

/// The Protocol Validator's unauthenticated POST, PATCH and DELETE in a
/// row on one kept-alive connection, and the guard's own refusals: each
/// gets its answer, none a reset. The
/// bodies arrive in pieces, as they do over TLS, so the 401 is ready
/// before the body is in.
#[tokio::test]
async fn refused_writes_keep_the_connection_usable() {
    let dir = tempfile::tempdir().unwrap();
    let file = htpasswd(dir.path(), "admin", "pw-12345", 4);
    let api = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        AuthStore::from_htpasswd(&file).unwrap(),
        FeatureSet::Full,
    );
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (_stop, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(shoal_emulator::serve::serve(
        l,
        shoal_emulator::app(api.state.clone()),
        None,
        shoal_emulator::serve::Limits::default(),
        shoal_emulator::serve::Limits::default().slots(),
        stop,
        None,
    ));
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let body = format!(
        r#"{{"UserName": "u", "Password": "{}"}}"#,
        "p".repeat(64 << 10)
    );
    // The guard's own refusals (a path that is no UTF-8, a cross-site
    // write) read the body first too.
    for (method, path, extra, want) in [
        ("POST", "/redfish/v1/AccountService/Accounts", "", 401),
        ("PATCH", "/redfish/v1/AccountService/Accounts/1", "", 401),
        ("DELETE", "/redfish/v1/AccountService/Accounts/4", "", 401),
        ("PATCH", "/redfish/v1/Systems/%FF", "", 404),
        (
            "POST",
            "/redfish/v1/AccountService/Accounts",
            "Origin: http://evil.test\r\n",
            403,
        ),
        ("DELETE", "/redfish/v1/AccountService/Accounts/4", "", 401),
    ] {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        wr.write_all(head.as_bytes()).await.unwrap();
        let (first, rest) = body.as_bytes().split_at(100);
        wr.write_all(first).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        wr.write_all(rest).await.unwrap();
        let status = tokio::time::timeout(Duration::from_secs(10), response(&mut rd))
            .await
            .expect("an answer");
        assert_eq!(status, want, "{method} {path} {extra}");
    }
}
