//! AccountService, Accounts and Roles. Accounts can be created, changed
//! and deleted; a user without ConfigureUsers may change only their own
//! password.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Map, Value};

use super::json::{self, validate_patch, writable, JsonObject, Kind, Resource};
use super::{collection, created, link, AppState};
use crate::auth::{self, Account, AccountChange, AuthError, Principal, Privilege, Role};
use crate::error::{ApiError, Msg};

const ACCOUNTS: &str = "/redfish/v1/AccountService/Accounts";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/redfish/v1/AccountService", get(service))
        .route(
            "/redfish/v1/AccountService/Accounts",
            get(list).post(create),
        )
        .route(
            "/redfish/v1/AccountService/Accounts/Members",
            axum::routing::post(create),
        )
        .route(
            "/redfish/v1/AccountService/Accounts/{id}",
            get(account).patch(patch).delete(delete),
        )
        .route("/redfish/v1/AccountService/Roles", get(roles))
        .route("/redfish/v1/AccountService/Roles/{id}", get(role))
}

async fn service(State(st): State<AppState>) -> Resource {
    Resource::new(
        json!({
            "@odata.type": "#AccountService.v1_15_0.AccountService",
            "@odata.id": "/redfish/v1/AccountService",
            "Id": "AccountService",
            "Name": "Account Service",
            "ServiceEnabled": true,
            "AuthFailureLoggingThreshold": 3,
            "MinPasswordLength": auth::MIN_PASSWORD_LEN,
            "MaxPasswordLength": auth::MAX_PASSWORD_LEN,
            "AccountLockoutThreshold": 0,
            "AccountLockoutDuration": 0,
            "AccountLockoutCounterResetAfter": 0,
            "LocalAccountAuth": if st.auth.enabled() { "Enabled" } else { "Disabled" },
            "Status": { "State": "Enabled", "Health": "OK" },
            "Accounts": link(ACCOUNTS),
            "Roles": link("/redfish/v1/AccountService/Roles"),
        }),
        crate::profile::generic(),
        "GET",
    )
}

fn account_json(a: &Account) -> Value {
    json!({
        "@odata.type": "#ManagerAccount.v1_12_0.ManagerAccount",
        "@odata.id": format!("{ACCOUNTS}/{}", a.id),
        "Id": a.id,
        "Name": "User Account",
        "UserName": a.username,
        "RoleId": a.role.as_str(),
        "Enabled": a.enabled,
        "Locked": a.locked,
        "Password": null,
        "AccountTypes": ["Redfish"],
        "Links": { "Role": link(&format!("/redfish/v1/AccountService/Roles/{}", a.role.as_str())) },
    })
}

async fn list(State(st): State<AppState>) -> Resource {
    let members = st
        .auth
        .accounts()
        .into_iter()
        .map(|a| format!("{ACCOUNTS}/{}", a.id));
    Resource::plain(
        collection(
            "ManagerAccountCollection",
            ACCOUNTS,
            "Accounts Collection",
            members,
        ),
        "GET, POST",
    )
}

fn get_account(st: &AppState, id: &str) -> Result<Account, ApiError> {
    st.auth
        .account(id)
        .ok_or_else(|| ApiError::NotFound(format!("{ACCOUNTS}/{id}")))
}

async fn account(
    State(st): State<AppState>,
    Extension(me): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Resource, ApiError> {
    let a = get_account(&st, &id)?;
    if !me.role.has(Privilege::ConfigureUsers) && me.username.as_deref() != Some(&a.username) {
        return Err(ApiError::Forbidden);
    }
    Ok(Resource::new(
        account_json(&a),
        crate::profile::generic(),
        "GET, PATCH, DELETE",
    ))
}

fn auth_error(e: AuthError, property: &str, value: &str) -> ApiError {
    match e {
        AuthError::Exists(u) => ApiError::bad(Msg::new(
            "ResourceAlreadyExists",
            &["ManagerAccount", "UserName", &u],
        )),
        AuthError::PasswordLength => ApiError::bad(
            Msg::new("PropertyValueFormatError", &["(hidden)", "Password"]).about("Password"),
        ),
        AuthError::LastAdmin => {
            ApiError::bad(Msg::new("PropertyValueConflict", &[property, "RoleId"]))
        }
        AuthError::NoAccount(id) => ApiError::NotFound(format!("{ACCOUNTS}/{id}")),
        other => ApiError::Internal(format!("{other} ({property}={value})")),
    }
}

fn role_of(v: Option<&Value>, path: &str) -> Result<Option<Role>, ApiError> {
    match v.and_then(Value::as_str) {
        None => Ok(None),
        Some(r) => Role::parse(r).map(Some).ok_or_else(|| {
            ApiError::bad(Msg::new("PropertyValueNotInList", &[r, path]).about(path))
        }),
    }
}

fn create_fields() -> Vec<json::Writable> {
    vec![
        writable("UserName", Kind::Str),
        writable("Password", Kind::Str),
        writable(
            "RoleId",
            Kind::Enum(Role::ALL.iter().map(|r| r.as_str()).collect()),
        ),
        writable("Enabled", Kind::Bool),
        writable("Locked", Kind::Bool),
    ]
}

async fn create(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let mut missing = Vec::new();
    for k in ["UserName", "Password"] {
        if !body.contains_key(k) {
            missing.push(Msg::new("CreateFailedMissingReqProperties", &[k]));
        }
    }
    if !missing.is_empty() {
        return Err(ApiError::BadRequest(missing));
    }
    // AccountTypes is accepted on create but Shoal only has Redfish accounts.
    let body: Map<String, Value> = body
        .into_iter()
        .filter(|(k, _)| k != "AccountTypes")
        .collect();
    validate_patch(&body, &json!({}), &create_fields())?;
    let user = body["UserName"].as_str().unwrap_or_default();
    if user.is_empty() || user.contains(':') {
        return Err(ApiError::bad(
            Msg::new("PropertyValueFormatError", &[user, "UserName"]).about("UserName"),
        ));
    }
    let pass = body["Password"].as_str().unwrap_or_default();
    let role = role_of(body.get("RoleId"), "RoleId")?.unwrap_or(Role::ReadOnly);
    let enabled = body.get("Enabled").and_then(Value::as_bool).unwrap_or(true);
    let a = st
        .auth
        .create_account(user, pass, role, enabled)
        .await
        .map_err(|e| auth_error(e, "UserName", user))?;
    tracing::info!(user, role = role.as_str(), "account created");
    Ok(created(&format!("{ACCOUNTS}/{}", a.id), account_json(&a)))
}

async fn patch(
    State(st): State<AppState>,
    Extension(me): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    // If-Match is checked against the account as it is under this lock,
    // so of two writers holding the same ETag only the first succeeds.
    let _guard = st.locks.lock(&format!("account:{id}")).await;
    let a = get_account(&st, &id)?;
    let own = me.username.as_deref() == Some(&a.username);
    let only_password = body
        .keys()
        .all(|k| k == "Password" || k.starts_with("@odata."));
    let may = me.role.has(Privilege::ConfigureUsers) || (own && only_password);
    if !may {
        return Err(ApiError::Forbidden);
    }
    let current = account_json(&a);
    json::check_if_match(&headers, &current, crate::profile::generic())?;
    validate_patch(&body, &current, &create_fields())?;
    let change = AccountChange {
        username: body
            .get("UserName")
            .and_then(Value::as_str)
            .map(str::to_string),
        password: body
            .get("Password")
            .and_then(Value::as_str)
            .map(str::to_string),
        role: role_of(body.get("RoleId"), "RoleId")?,
        enabled: body.get("Enabled").and_then(Value::as_bool),
        locked: body.get("Locked").and_then(Value::as_bool),
    };
    if change.locked == Some(true) {
        // Only the service locks accounts; clients may only unlock.
        return Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &["true", "Locked"]).about("Locked"),
        ));
    }
    let a = st
        .auth
        .modify_account(&id, change)
        .await
        .map_err(|e| auth_error(e, "Enabled", &id))?;
    Ok(Resource::new(
        account_json(&a),
        crate::profile::generic(),
        "GET, PATCH, DELETE",
    ))
}

async fn delete(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let _guard = st.locks.lock(&format!("account:{id}")).await;
    json::check_if_match(
        &headers,
        &account_json(&get_account(&st, &id)?),
        crate::profile::generic(),
    )?;
    st.auth.delete_account(&id).map_err(|e| match e {
        AuthError::LastAdmin => ApiError::bad(Msg::new("ResourceCannotBeDeleted", &[])),
        other => auth_error(other, "Id", &id),
    })?;
    Ok(json::no_content().into_response())
}

async fn roles() -> Resource {
    let members = Role::ALL
        .iter()
        .map(|r| format!("/redfish/v1/AccountService/Roles/{}", r.as_str()));
    Resource::plain(
        collection(
            "RoleCollection",
            "/redfish/v1/AccountService/Roles",
            "Roles Collection",
            members,
        ),
        "GET",
    )
}

async fn role(Path(id): Path<String>) -> Result<Resource, ApiError> {
    let r = Role::parse(&id)
        .ok_or_else(|| ApiError::NotFound(format!("/redfish/v1/AccountService/Roles/{id}")))?;
    Ok(Resource::new(
        json!({
            "@odata.type": "#Role.v1_3_1.Role",
            "@odata.id": format!("/redfish/v1/AccountService/Roles/{id}"),
            "Id": id,
            "Name": format!("{id} Role"),
            "RoleId": id,
            "IsPredefined": true,
            "AssignedPrivileges": r.privileges().iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        }),
        crate::profile::generic(),
        "GET",
    ))
}
