//! Basic auth, sessions, accounts and privileges.

use axum::http::{Method, StatusCode};
use base64::Engine;
use serde_json::json;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};

use crate::common::Api;

fn basic(user: &str, pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

fn secured() -> Api {
    let hash = bcrypt::hash("admin-pass", 4).unwrap();
    let auth = AuthStore::parse_htpasswd("test", &format!("admin:{hash}\n")).unwrap();
    Api::with(
        fake_systems(1),
        FakeOptions::default(),
        auth,
        FeatureSet::Full,
    )
}

#[tokio::test]
async fn only_the_service_root_is_open() {
    let api = secured();
    for open in [
        "/redfish",
        "/redfish/v1",
        "/redfish/v1/",
        "/redfish/v1/odata",
        "/redfish/v1/$metadata",
    ] {
        assert_eq!(api.get(open).await.status, StatusCode::OK, "{open}");
    }
    for closed in [
        "/redfish/v1/Systems",
        "/redfish/v1/SessionService/Sessions",
        "/redfish/v1/Managers",
        "/redfish/v1/AccountService",
    ] {
        let r = api.get(closed).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{closed}");
        assert_eq!(r.message_ids(), ["NoValidSession"]);
        assert!(r.header("www-authenticate").is_some());
    }
    let r = api
        .req(
            Method::GET,
            "/redfish/v1/Systems",
            None,
            &[("Authorization", &basic("admin", "wrong"))],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = api
        .req(
            Method::GET,
            "/redfish/v1/Systems",
            None,
            &[("Authorization", &basic("admin", "admin-pass"))],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = api
        .req(
            Method::GET,
            "/redfish/v1/Systems",
            None,
            &[("X-Auth-Token", "forged")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn session_login_use_and_logout() {
    let api = secured();
    let r = api
        .post(
            "/redfish/v1/SessionService/Sessions",
            json!({"UserName": "admin", "Password": "nope"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = api
        .post(
            "/redfish/v1/SessionService/Sessions",
            json!({"UserName": "admin"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["CreateFailedMissingReqProperties"]);
    let r = api
        .post(
            "/redfish/v1/SessionService/Sessions",
            json!({"UserName": "admin", "Password": "admin-pass"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let token = r.header("x-auth-token").expect("token");
    let location = r.header("location").expect("location");
    assert_eq!(r.body["@odata.id"], json!(location));
    assert_eq!(r.body["UserName"], "admin");

    let with = |m: Method, p: &str| {
        let api = &api;
        let token = token.clone();
        let p = p.to_string();
        async move { api.req(m, &p, None, &[("X-Auth-Token", &token)]).await }
    };
    assert_eq!(
        with(Method::GET, "/redfish/v1/Systems").await.status,
        StatusCode::OK
    );
    let list = with(Method::GET, "/redfish/v1/SessionService/Sessions").await;
    assert_eq!(list.body["Members"][0]["@odata.id"], json!(location));
    assert_eq!(
        with(Method::DELETE, &location).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        with(Method::GET, "/redfish/v1/Systems").await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn session_timeout_is_enforced_and_validated() {
    let api = secured();
    let mut api = api;
    api.auth = vec![("Authorization".to_string(), basic("admin", "admin-pass"))];
    let r = api
        .patch("/redfish/v1/SessionService", json!({"SessionTimeout": 5}))
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueOutOfRange"]);
    let r = api
        .patch("/redfish/v1/SessionService", json!({"SessionTimeout": 30}))
        .await;
    assert_eq!(r.body["SessionTimeout"], 30);
}

#[tokio::test]
async fn accounts_and_roles_limit_what_a_user_may_do() {
    let mut api = secured();
    api.auth = vec![("Authorization".to_string(), basic("admin", "admin-pass"))];
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts",
            json!({"UserName": "viewer", "Password": "viewer-pass", "RoleId": "ReadOnly"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let account = r.header("location").unwrap();
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts",
            json!({"UserName": "viewer", "Password": "viewer-pass"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["ResourceAlreadyExists"]);
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts",
            json!({"UserName": "short", "Password": "abc"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueFormatError"]);
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts",
            json!({"UserName": "x", "Password": "long-enough", "RoleId": "God"}),
        )
        .await;
    assert_eq!(r.message_ids(), ["PropertyValueNotInList"]);
    let sys = api.system(0).await;

    let viewer = vec![("Authorization".to_string(), basic("viewer", "viewer-pass"))];
    let admin = std::mem::replace(&mut api.auth, viewer);
    assert_eq!(api.get(&sys).await.status, StatusCode::OK);
    let r = api.patch(&sys, json!({"AssetTag": "mine"})).await;
    assert_eq!(
        (r.status, r.message_ids()),
        (
            StatusCode::FORBIDDEN,
            vec!["InsufficientPrivilege".to_string()]
        )
    );
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        api.patch(&account, json!({"RoleId": "Administrator"}))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        api.patch(&account, json!({"Password": "viewer-pass-2"}))
            .await
            .status,
        StatusCode::OK,
        "own password"
    );
    assert_eq!(
        api.get(&sys).await.status,
        StatusCode::UNAUTHORIZED,
        "old password gone"
    );

    api.auth = admin;
    let roles = api
        .get("/redfish/v1/AccountService/Roles/Operator")
        .await
        .body;
    assert!(roles["AssignedPrivileges"]
        .as_array()
        .unwrap()
        .contains(&json!("ConfigureComponents")));
    assert_eq!(
        api.req(Method::DELETE, &account, None, &[]).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(api.get(&account).await.status, StatusCode::NOT_FOUND);
    let r = api
        .req(
            Method::DELETE,
            "/redfish/v1/AccountService/Accounts/1",
            None,
            &[],
        )
        .await;
    assert_eq!(
        r.message_ids(),
        ["ResourceCannotBeDeleted"],
        "the last administrator stays"
    );
}
