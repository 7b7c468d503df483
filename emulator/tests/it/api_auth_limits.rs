//! What a client cannot do to accounts and sessions: keep rights it lost,
//! grow the lock map, guess passwords without limit or at others' expense,
//! fill the session table.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use base64::Engine;
use serde_json::{json, Value};
use shoal_emulator::auth::{self, AuthStore};
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};

use crate::common::{Api, Reply};

const SESSIONS: &str = "/redfish/v1/SessionService/Sessions";
const ACCOUNTS: &str = "/redfish/v1/AccountService/Accounts";

fn basic(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// A service with the htpasswd account `admin` (`admin-pass`), sending
/// admin's Basic credentials by default.
fn secured() -> Api {
    let hash = bcrypt::hash("admin-pass", 4).unwrap();
    let auth = AuthStore::parse_htpasswd("test", &format!("admin:{hash}\n")).unwrap();
    let mut api = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        auth,
        FeatureSet::Full,
    );
    api.auth = vec![("Authorization".into(), basic("admin", "admin-pass"))];
    api
}

/// Creates an account; its URL.
async fn account(api: &Api, user: &str, pass: &str, role: &str) -> String {
    let r = api
        .post(
            ACCOUNTS,
            json!({"UserName": user, "Password": pass, "RoleId": role}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.header("location").unwrap()
}

/// A login without admin's Basic header.
async fn login(api: &Api, user: &str, pass: &str) -> Reply {
    let body = serde_json::to_vec(&json!({"UserName": user, "Password": pass})).unwrap();
    let req = axum::http::Request::post(SESSIONS)
        .header("Content-Type", "application/json")
        .body(axum::body::Body::from(body))
        .unwrap();
    api.raw(req).await
}

async fn token(api: &Api, user: &str, pass: &str) -> String {
    let r = login(api, user, pass).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.header("x-auth-token").unwrap()
}

/// A request with only this header for credentials.
async fn as_(api: &Api, cred: (&str, &str), m: Method, path: &str, body: Option<Value>) -> Reply {
    let mut b = axum::http::Request::builder()
        .method(m)
        .uri(path)
        .header(cred.0, cred.1);
    let body = match body {
        Some(v) => {
            b = b.header("Content-Type", "application/json");
            axum::body::Body::from(serde_json::to_vec(&v).unwrap())
        }
        None => axum::body::Body::empty(),
    };
    api.raw(b.body(body).unwrap()).await
}

#[tokio::test]
async fn a_session_has_the_accounts_current_role() {
    let api = secured();
    let boss = account(&api, "boss", "boss-pass", "Administrator").await;
    let t = token(&api, "boss", "boss-pass").await;
    let s = ("X-Auth-Token", t.as_str());
    let r = api.patch(&boss, json!({"RoleId": "ReadOnly"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let r = as_(
        &api,
        s,
        Method::POST,
        ACCOUNTS,
        Some(json!({"UserName": "evil", "Password": "evil-pass", "RoleId": "Administrator"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "demoted: {}", r.body);
    let sys = api.system(0).await;
    let r = as_(&api, s, Method::PATCH, &sys, Some(json!({"AssetTag": "x"}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        as_(&api, s, Method::GET, &sys, None).await.status,
        StatusCode::OK
    );

    api.patch(&boss, json!({"Enabled": false})).await;
    let r = as_(&api, s, Method::GET, &sys, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "disabled");

    api.patch(&boss, json!({"Enabled": true})).await;
    let t = token(&api, "boss", "boss-pass").await;
    let r = api.req(Method::DELETE, &boss, None, &[]).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = as_(&api, ("X-Auth-Token", &t), Method::GET, &sys, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "deleted");
}

#[tokio::test]
async fn a_password_change_ends_the_accounts_other_sessions() {
    let api = secured();
    let me = account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    let mine = token(&api, "viewer", "viewer-pass").await;
    let other = token(&api, "viewer", "viewer-pass").await;
    let r = as_(
        &api,
        ("X-Auth-Token", &mine),
        Method::PATCH,
        &me,
        Some(json!({"Password": "viewer-pass-2"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = as_(&api, ("X-Auth-Token", &mine), Method::GET, &me, None).await;
    assert_eq!(r.status, StatusCode::OK, "the session that changed it");
    let r = as_(&api, ("X-Auth-Token", &other), Method::GET, &me, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn unknown_accounts_take_no_lock_and_locks_are_released() {
    let api = secured();
    account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    let viewer = basic("viewer", "viewer-pass");
    for i in 0..200 {
        let path = format!("{ACCOUNTS}/{i}-{}", "x".repeat(200));
        let r = as_(
            &api,
            ("Authorization", &viewer),
            Method::PATCH,
            &path,
            Some(json!({"Password": "whatever-1"})),
        )
        .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        let r = api.req(Method::DELETE, &path, None, &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
    }
    assert!(
        api.state.core.locks.len() <= 1,
        "{} locks",
        api.state.core.locks.len()
    );
    // Locks of real resources go once nobody holds them.
    let sys = api.system(0).await;
    for tag in ["a", "b"] {
        assert_eq!(
            api.patch(&sys, json!({"AssetTag": tag})).await.status,
            StatusCode::OK
        );
        api.patch(&format!("{ACCOUNTS}/1"), json!({"Enabled": true}))
            .await;
    }
    assert!(
        api.state.core.locks.len() <= 1,
        "{} locks",
        api.state.core.locks.len()
    );
}

#[tokio::test]
async fn any_user_logs_in_with_a_basic_header_too() {
    let api = secured();
    account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    let r = as_(
        &api,
        ("Authorization", &basic("viewer", "viewer-pass")),
        Method::POST,
        SESSIONS,
        Some(json!({"UserName": "viewer", "Password": "viewer-pass"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn lockout_settings_are_shown_patched_and_checked_whole() {
    let api = secured();
    let svc = "/redfish/v1/AccountService";
    let r = api.get(svc).await;
    let lockout = |b: &Value| {
        (
            b["AccountLockoutThreshold"].clone(),
            b["AccountLockoutDuration"].clone(),
            b["AccountLockoutCounterResetAfter"].clone(),
        )
    };
    assert_eq!(lockout(&r.body), (json!(5), json!(300), json!(300)));
    let r = api
        .patch(
            svc,
            json!({"AccountLockoutThreshold": 3, "AccountLockoutDuration": 600}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(lockout(&r.body), (json!(3), json!(600), json!(300)));
    for (body, id) in [
        (
            json!({"AccountLockoutThreshold": 1, "AccountLockoutCounterResetAfter": 900}),
            "PropertyValueConflict",
        ),
        (
            json!({"AccountLockoutDuration": 60}),
            "PropertyValueConflict",
        ),
        (
            json!({"AccountLockoutThreshold": -1}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"AccountLockoutDuration": 1u64 << 40}),
            "PropertyValueOutOfRange",
        ),
        (
            json!({"AccountLockoutThreshold": "5"}),
            "PropertyValueTypeError",
        ),
        (json!({"MinPasswordLength": 1}), "PropertyNotWritable"),
    ] {
        let r = api.patch(svc, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.message_ids(), [id], "{body}");
    }
    assert_eq!(
        lockout(&api.get(svc).await.body),
        (json!(3), json!(600), json!(300)),
        "nothing half-applied"
    );
    let r = as_(
        &api,
        ("Authorization", &basic("nobody", "x")),
        Method::PATCH,
        svc,
        Some(json!({"AccountLockoutThreshold": 0})),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn failed_logins_lock_the_account_until_it_is_unlocked() {
    let api = secured();
    let url = account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    for _ in 0..5 {
        assert_eq!(
            login(&api, "viewer", "wrong-one").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let r = login(&api, "viewer", "viewer-pass").await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "locked: as a wrong password"
    );
    assert_eq!(r.message_ids(), ["NoValidSession"]);
    let r = as_(
        &api,
        ("Authorization", &basic("viewer", "viewer-pass")),
        Method::GET,
        &url,
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "Basic too");
    assert_eq!(api.get(&url).await.body["Locked"], true);
    let r = api.patch(&url, json!({"Locked": true})).await;
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"]);
    let r = api.patch(&url, json!({"Locked": false})).await;
    assert_eq!(r.body["Locked"], false, "{}", r.body);
    assert_eq!(
        login(&api, "viewer", "viewer-pass").await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn every_refused_login_costs_a_bcrypt_and_a_cached_one_none() {
    let api = secured();
    account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    let checks = || api.state.auth.bcrypt_checks();
    let n = checks();
    assert_eq!(
        login(&api, "nobody", "whatever").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        checks(),
        n + 1,
        "an unknown user costs as much as a known one"
    );
    assert_eq!(
        login(&api, "viewer", "whatever").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(checks(), n + 2);
    let t = token(&api, "viewer", "viewer-pass").await;
    let n = checks();
    let sys = api.system(0).await;
    for _ in 0..3 {
        as_(&api, ("X-Auth-Token", &t), Method::GET, &sys, None).await;
        as_(
            &api,
            ("Authorization", &basic("viewer", "viewer-pass")),
            Method::GET,
            &sys,
            None,
        )
        .await;
    }
    assert_eq!(checks(), n, "sessions and cached credentials run no bcrypt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_storm_is_bounded_and_leaves_others_fast() {
    let api = std::sync::Arc::new(secured());
    // Created here, so with Shoal's own cost (10): a few ms each.
    account(&api, "victim", "victim-pass", "Operator").await;
    let t = token(&api, "admin", "admin-pass").await;
    let sys = api.system(0).await;
    let storm: Vec<_> = (0..300)
        .map(|i| {
            let api = api.clone();
            tokio::spawn(async move {
                let user = if i % 2 == 0 {
                    "victim".to_string()
                } else {
                    format!("ghost{i}")
                };
                let r = login(&api, &user, "not-the-password").await;
                (r.status, r.header("retry-after"), r.message_ids())
            })
        })
        .collect();
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        for cred in [
            ("X-Auth-Token", t.as_str()),
            ("Authorization", api.auth[0].1.as_str()),
        ] {
            let start = Instant::now();
            let r = as_(&api, cred, Method::GET, &sys, None).await;
            worst = worst.max(start.elapsed());
            assert_eq!(r.status, StatusCode::OK);
        }
    }
    let mut busy = 0;
    for s in storm {
        match s.await.unwrap() {
            (StatusCode::UNAUTHORIZED, _, _) => {}
            (StatusCode::SERVICE_UNAVAILABLE, retry, ids) => {
                assert_eq!(retry.as_deref(), Some("1"));
                assert_eq!(ids, ["ServiceTemporarilyUnavailable"]);
                busy += 1;
            }
            other => panic!("storm answer {other:?}"),
        }
    }
    assert!(
        busy > 0,
        "the bcrypt queue is bounded: some logins are refused at once"
    );
    assert!(
        api.state.auth.bcrypt_checks() < 300,
        "refused logins run no bcrypt"
    );
    eprintln!("storm: {busy} of 300 refused at once, worst authenticated GET {worst:?}");
    // Generous: a cached check is well under a millisecond in release.
    assert!(
        worst < Duration::from_millis(500),
        "worst {worst:?} during the storm"
    );
}

#[tokio::test]
async fn sessions_are_capped_per_account_but_an_administrator_gets_in() {
    let api = secured();
    account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    for _ in 0..auth::MAX_SESSIONS_PER_USER {
        token(&api, "viewer", "viewer-pass").await;
    }
    let r = login(&api, "viewer", "viewer-pass").await;
    assert_eq!(
        (r.status, r.message_ids()),
        (
            StatusCode::BAD_REQUEST,
            vec!["SessionLimitExceeded".to_string()]
        )
    );
    token(&api, "admin", "admin-pass").await;
}

#[tokio::test]
async fn long_names_and_passwords_are_refused_before_anything_is_stored() {
    // Authentication off: a login stores whatever name it brings.
    let api = Api::new(1);
    let huge = "u".repeat((1 << 20) - 64);
    let r = login(&api, &huge, "pw").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.message_ids(), ["PropertyValueFormatError"]);
    assert!(
        r.body.to_string().len() < 4096,
        "the value is not echoed whole"
    );
    let r = login(&api, "me", &"p".repeat(auth::MAX_LOGIN_PASSWORD_LEN + 1)).await;
    assert_eq!(r.message_ids(), ["PropertyValueFormatError"]);
    assert!(api.state.auth.sessions().is_empty());
    let name = "n".repeat(auth::MAX_USERNAME_LEN);
    assert_eq!(login(&api, &name, "pw").await.status, StatusCode::CREATED);

    let api = secured();
    let long = "n".repeat(auth::MAX_USERNAME_LEN + 1);
    let r = api
        .post(
            ACCOUNTS,
            json!({"UserName": long, "Password": "long-enough"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueFormatError"]);
    let url = account(&api, "viewer", "viewer-pass", "ReadOnly").await;
    for bad in [long.as_str(), "a:b", ""] {
        let r = api
            .patch(&url, json!({"UserName": bad, "Enabled": false}))
            .await;
        assert_eq!(r.message_ids(), ["PropertyValueFormatError"], "{bad:?}");
    }
    let r = api.get(&url).await;
    assert_eq!(
        (&r.body["UserName"], &r.body["Enabled"]),
        (&json!("viewer"), &json!(true))
    );
    let r = as_(
        &api,
        ("Authorization", &basic(&long, "x")),
        Method::GET,
        &url,
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn accounts_are_capped_like_a_bmcs_user_slots() {
    let api = secured();
    let have = api.get(ACCOUNTS).await.body["Members@odata.count"]
        .as_u64()
        .unwrap() as usize;
    for i in have..auth::MAX_ACCOUNTS {
        account(&api, &format!("user{i}"), "pw-12345678", "ReadOnly").await;
    }
    let r = api
        .post(
            ACCOUNTS,
            json!({"UserName": "one-too-many", "Password": "pw-12345678", "RoleId": "ReadOnly"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.message_ids(), ["CreateLimitReachedForResource"]);
    let count = api.get(ACCOUNTS).await.body["Members@odata.count"].clone();
    assert_eq!(count, json!(auth::MAX_ACCOUNTS));
}
