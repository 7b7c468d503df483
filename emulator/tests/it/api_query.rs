//! The protocol layer: query parameters (`only`, `$filter`, `$top`/`$skip`,
//! `$expand`, `$select`), conditional GET, the request's OData-Version, the
//! Link header, POST to a collection's `Members`, and account ETags.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::FakeOptions;
use shoal_emulator::config::{fake_systems, FeatureSet};

use crate::common::{htpasswd, Api};

/// A query string as a client sends it (spaces and quotes encoded).
fn enc(path: &str) -> String {
    path.replace(' ', "%20").replace('\'', "%27")
}

fn member_ids(v: &Value) -> Vec<String> {
    v["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["@odata.id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn filter_selects_collection_members_by_their_properties() {
    let api = Api::new(1);
    let roles = "/redfish/v1/AccountService/Roles";
    let r = api
        .get(&enc(&format!("{roles}?$filter=Id eq 'Operator'")))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(member_ids(&r.body), ["Operator"]);
    assert_eq!(r.body["Members@odata.count"], 1);
    let r = api
        .get(&enc(&format!("{roles}?$filter=not (Id eq 'Operator')")))
        .await;
    assert_eq!(member_ids(&r.body), ["Administrator", "ReadOnly"]);
    let r = api
        .get(&enc(&format!(
            "{roles}?$filter=Id eq 'Administrator' or Id eq 'ReadOnly'"
        )))
        .await;
    assert_eq!(member_ids(&r.body), ["Administrator", "ReadOnly"]);
    // On the systems: nested properties and the power state.
    api.reset(&api.system(0).await, "ForceOff").await;
    let r = api
        .get(&enc("/redfish/v1/Systems?$filter=PowerState eq 'Off' and Boot/BootSourceOverrideEnabled ne 'Once'"))
        .await;
    assert_eq!(r.body["Members@odata.count"], 1, "{}", r.body);
    // Not on a single resource, and not with a bad expression.
    let r = api
        .get(&enc(&format!("{roles}/Operator?$filter=Id eq 'Operator'")))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.message_ids(), ["QueryNotSupportedOnResource"]);
    let r = api.get(&enc(&format!("{roles}?$filter=Id eq"))).await;
    assert_eq!(r.message_ids(), ["QueryParameterValueFormatError"]);
}

#[tokio::test]
async fn select_returns_the_chosen_properties_with_the_resource_etag() {
    let api = Api::new(1);
    let full = api.get("/redfish/v1/AccountService/Roles/Operator").await;
    let r = api
        .get("/redfish/v1/AccountService/Roles/Operator?$select=Name,AssignedPrivileges")
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let mut keys: Vec<&String> = r.body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "@odata.etag",
            "@odata.id",
            "@odata.type",
            "AssignedPrivileges",
            "Name"
        ]
    );
    assert_eq!(r.body["@odata.etag"], full.body["@odata.etag"]);
    assert_eq!(r.header("etag"), full.header("etag"));
    let sys = api.system(0).await;
    let r = api
        .get(&format!("{sys}?$select=Boot/BootSourceOverrideTarget"))
        .await;
    assert_eq!(
        r.body["Boot"],
        json!({"BootSourceOverrideTarget": "None"}),
        "{}",
        r.body
    );
    assert!(r.body.get("PowerState").is_none());
}

#[tokio::test]
async fn expand_follows_links_by_kind_and_depth() {
    let api = Api::new(2);
    let root = api.get("/redfish/v1/?$expand=.").await;
    assert_eq!(root.status, StatusCode::OK);
    // Subordinate collections are expanded, their members are not.
    assert_eq!(root.body["Systems"]["Members@odata.count"], 2);
    let first = &root.body["Systems"]["Members"][0];
    assert_eq!(first.as_object().unwrap().len(), 1, "{first}");
    // `.` leaves Links alone; `~` expands only them; `*` both.
    assert_eq!(root.body["Links"]["Sessions"].as_object().unwrap().len(), 1);
    let links = api.get("/redfish/v1/?$expand=~").await;
    assert!(links.body["Links"]["Sessions"].get("Members").is_some());
    assert_eq!(links.body["Systems"].as_object().unwrap().len(), 1);
    let all = api.get("/redfish/v1/?$expand=*").await;
    assert!(all.body["Links"]["Sessions"].get("Members").is_some());
    assert!(all.body["Systems"].get("Members").is_some());
    // Two levels reach the systems themselves.
    let deep = api.get("/redfish/v1/Systems?$expand=.($levels=2)").await;
    let sys = &deep.body["Members"][0];
    assert_eq!(sys["@odata.type"], "#ComputerSystem.v1_22_0.ComputerSystem");
    assert!(
        sys["Bios"].get("Attributes").is_some(),
        "second level: {}",
        sys["Bios"]
    );
    let r = api.get("/redfish/v1/?$expand=*($levels=7)").await;
    assert_eq!(r.message_ids(), ["QueryParameterOutOfRange"]);
    let r = api.get("/redfish/v1/?$expand=x").await;
    assert_eq!(r.message_ids(), ["QueryParameterValueFormatError"]);
}

#[tokio::test]
async fn only_answers_with_the_single_member() {
    let one = Api::new(1);
    let sys = one.system(0).await;
    let r = one.get("/redfish/v1/Systems?only").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["@odata.id"], sys.as_str());
    assert!(r.header("etag").is_some(), "the member's own headers");
    let two = Api::new(2);
    let r = two.get("/redfish/v1/Systems?only").await;
    assert_eq!(r.body["@odata.id"], "/redfish/v1/Systems");
    let r = two.get("/redfish/v1/AccountService?only").await;
    assert_eq!(r.message_ids(), ["QueryNotSupportedOnResource"]);
    let r = two.get("/redfish/v1/Systems?only&$top=1").await;
    assert_eq!(r.message_ids(), ["QueryCombinationInvalid"]);
}

#[tokio::test]
async fn top_and_skip_page_a_collection() {
    let api = Api::new(5);
    let all = member_ids(&api.get("/redfish/v1/Systems").await.body);
    let r = api.get("/redfish/v1/Systems?$skip=1&$top=2").await;
    assert_eq!(member_ids(&r.body), all[1..3]);
    assert_eq!(r.body["Members@odata.count"], 5, "the count is the whole");
    let r = api.get("/redfish/v1/Systems?$top=x").await;
    assert_eq!(r.message_ids(), ["QueryParameterValueTypeError"]);
}

#[tokio::test]
async fn unknown_dollar_parameters_are_501_and_other_unknowns_ignored() {
    let api = Api::new(1);
    let r = api.get("/redfish/v1/?$rpvunknown").await;
    assert_eq!(r.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(r.message_ids(), ["QueryParameterUnsupported"]);
    let r = api.get("/redfish/v1/?vendor=1").await;
    assert_eq!(r.status, StatusCode::OK);
    let sys = api.system(0).await;
    let r = api
        .req(
            Method::PATCH,
            &format!("{sys}?$select=Boot"),
            Some(json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}})),
            &[],
        )
        .await;
    assert_eq!(r.message_ids(), ["QueryNotSupportedOnOperation"]);
    let after = api.get(&sys).await;
    assert_eq!(after.body["Boot"]["BootSourceOverrideTarget"], "None");
}

#[tokio::test]
async fn queries_are_answered_with_the_callers_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let file = htpasswd(dir.path(), "admin", "pw-12345", 4);
    let mut api = Api::with(
        fake_systems(1),
        FakeOptions::default(),
        AuthStore::from_htpasswd(&file).unwrap(),
        FeatureSet::Full,
    );
    let r = api.get("/redfish/v1/Systems?$expand=.").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The service root is public, but what it links to is not.
    let r = api.get("/redfish/v1/?$expand=.").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["Systems"].as_object().unwrap().len(), 1);
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode("admin:pw-12345");
    api.auth = vec![("Authorization".into(), format!("Basic {basic}"))];
    let r = api.get("/redfish/v1/?$expand=.").await;
    assert!(r.body["Systems"].get("Members").is_some(), "{}", r.body);
}

#[tokio::test]
async fn conditional_get_and_odata_version() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let r = api.get(&sys).await;
    let tag = r.header("etag").unwrap();
    let r = api
        .req(Method::GET, &sys, None, &[("If-None-Match", &tag)])
        .await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    assert_eq!(r.header("etag").as_deref(), Some(tag.as_str()));
    assert_eq!(r.body, Value::Null);
    let r = api
        .req(Method::GET, &sys, None, &[("If-None-Match", "\"other\"")])
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = api
        .req(
            Method::GET,
            "/redfish/v1/",
            None,
            &[("OData-Version", "4.1")],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(r.message_ids(), ["HeaderInvalid"]);
    let r = api
        .req(
            Method::GET,
            "/redfish/v1/",
            None,
            &[("OData-Version", "4.0")],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn responses_link_the_schema_that_describes_them() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let r = api.get(&sys).await;
    assert_eq!(
        r.header("link").as_deref(),
        Some("<http://redfish.dmtf.org/schemas/v1/ComputerSystem.v1_22_0.json>; rel=describedby")
    );
    let r = api
        .req(Method::HEAD, "/redfish/v1/Systems", None, &[])
        .await;
    assert_eq!(
        r.header("link").as_deref(),
        Some("<http://redfish.dmtf.org/schemas/v1/ComputerSystemCollection.json>; rel=describedby")
    );
}

#[tokio::test]
async fn post_to_members_creates_like_the_collection() {
    let api = Api::new(1);
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts/Members",
            json!({"UserName": "viamembers", "Password": "pw-123456", "RoleId": "Operator"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["UserName"], "viamembers");
}

#[tokio::test]
async fn account_patches_honour_if_match_atomically() {
    let api = Api::new(1);
    let r = api
        .post(
            "/redfish/v1/AccountService/Accounts",
            json!({"UserName": "etaguser", "Password": "pw-123456", "RoleId": "ReadOnly"}),
        )
        .await;
    let uri = r.header("location").unwrap();
    let tag = api.get(&uri).await.header("etag").unwrap();
    let patch = |role: &'static str, tag: String| {
        let api = &api;
        let uri = uri.clone();
        async move {
            api.req(
                Method::PATCH,
                &uri,
                Some(json!({"RoleId": role})),
                &[("If-Match", &tag)],
            )
            .await
        }
    };
    let r = patch("Operator", "\"never-issued\"".into()).await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "{}", r.body);
    // Four writers with the same ETag: exactly one wins.
    let rs = futures_join4(
        patch("Operator", tag.clone()),
        patch("Operator", tag.clone()),
        patch("Operator", tag.clone()),
        patch("Operator", tag.clone()),
    )
    .await;
    let won = rs.iter().filter(|r| r.status == StatusCode::OK).count();
    assert_eq!(
        won,
        1,
        "{:?}",
        rs.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    let now = api.get(&uri).await;
    assert_eq!(now.body["RoleId"], "Operator");
    assert_ne!(
        now.header("etag").unwrap(),
        tag,
        "the ETag rotates on write"
    );
}

async fn futures_join4<F: std::future::Future>(a: F, b: F, c: F, d: F) -> [F::Output; 4] {
    let (a, b, c, d) = tokio::join!(a, b, c, d);
    [a, b, c, d]
}
