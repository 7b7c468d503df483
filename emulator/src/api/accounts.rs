//! AccountService, Accounts and Roles. Accounts can be created, changed
//! and deleted; a user without ConfigureUsers may change only their own
//! password. AccountService PATCHes the lockout settings (checked whole).
//! Handlers check that an account exists, and the caller's rights, before
//! taking its lock.

use crate::api::events::record::Happened;
use crate::api::State;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Map, Value};

use super::json::{self, JsonObject, Resource};
use super::patch::{validate_patch, writable, Kind, Writable};
use super::{collection, created, link, AppState};
use crate::api::error::{ApiError, Msg};
use crate::auth::{self, Account, AccountChange, AuthError, Principal, Privilege, Role};

const ACCOUNTS: &str = "/redfish/v1/AccountService/Accounts";

pub fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/AccountService",
            get(service).patch(patch_service),
        )
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

fn service_json(st: &AppState) -> Value {
    let lockout = st.auth.lockout_policy();
    json!({
        "@odata.type": "#AccountService.v1_15_0.AccountService",
        "@odata.id": "/redfish/v1/AccountService",
        "Id": "AccountService",
        "Name": "Account Service",
        "ServiceEnabled": true,
        "AuthFailureLoggingThreshold": 3,
        "MinPasswordLength": auth::MIN_PASSWORD_LEN,
        "MaxPasswordLength": auth::MAX_PASSWORD_LEN,
        "AccountLockoutThreshold": lockout.threshold,
        "AccountLockoutDuration": lockout.duration,
        "AccountLockoutCounterResetAfter": lockout.reset_after,
        "LocalAccountAuth": if st.auth.enabled() { "Enabled" } else { "Disabled" },
        "Status": { "State": "Enabled", "Health": "OK" },
        "Accounts": link(ACCOUNTS),
        "Roles": link("/redfish/v1/AccountService/Roles"),
    })
}

async fn service(State(st): State<AppState>) -> Resource {
    Resource::new(service_json(&st), crate::profile::generic(), "GET, PATCH")
}

/// The lockout settings, checked whole: each in its range, and (DSP0268)
/// the counter reset no later than the lockout ends.
async fn patch_service(
    State(st): State<AppState>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    let seconds = || Kind::Int {
        min: 0,
        max: auth::MAX_LOCKOUT_SECONDS as i64,
    };
    let fields = [
        writable(
            "AccountLockoutThreshold",
            Kind::Int {
                min: 0,
                max: auth::MAX_LOCKOUT_THRESHOLD as i64,
            },
        ),
        writable("AccountLockoutDuration", seconds()),
        writable("AccountLockoutCounterResetAfter", seconds()),
    ];
    // One writer at a time, so If-Match and the checks see what is applied.
    let _patch = st
        .begin_patch_keyed(
            "account:service",
            &headers,
            crate::profile::generic(),
            || Ok(((), service_json(&st))),
        )
        .await?
        .validated(&body, &fields)?;
    let int = |k: &str| body.get(k).and_then(Value::as_u64);
    let p = st.auth.update_lockout_policy(|p| {
        if let Some(v) = int("AccountLockoutThreshold") {
            p.threshold = v as u32;
        }
        if let Some(v) = int("AccountLockoutDuration") {
            p.duration = v;
        }
        if let Some(v) = int("AccountLockoutCounterResetAfter") {
            p.reset_after = v;
        }
        if p.consistent() {
            return Ok(());
        }
        let (prop, other) = if body.contains_key("AccountLockoutCounterResetAfter") {
            ("AccountLockoutCounterResetAfter", "AccountLockoutDuration")
        } else {
            ("AccountLockoutDuration", "AccountLockoutCounterResetAfter")
        };
        Err(ApiError::bad(
            Msg::new("PropertyValueConflict", &[prop, other]).about(prop),
        ))
    })?;
    tracing::info!(
        threshold = p.threshold,
        duration = p.duration,
        reset_after = p.reset_after,
        "account lockout policy changed"
    );
    st.events.resource(
        Happened::Changed,
        "/redfish/v1/AccountService".into(),
        "AccountService",
    );
    Ok(Resource::new(
        service_json(&st),
        crate::profile::generic(),
        "GET, PATCH",
    ))
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
        "Locked": a.locked(),
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
        AuthError::AccountLimit => ApiError::bad(Msg::new("CreateLimitReachedForResource", &[])),
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

/// A UserName an account may have: not empty, no `:` (the htpasswd and
/// Basic separator), at most `MAX_USERNAME_LEN` bytes.
fn check_username(user: &str) -> Result<(), ApiError> {
    if user.is_empty() || user.contains(':') || user.len() > auth::MAX_USERNAME_LEN {
        return Err(ApiError::bad(
            Msg::new(
                "PropertyValueFormatError",
                &[&super::input::echo(user), "UserName"],
            )
            .about("UserName"),
        ));
    }
    Ok(())
}

fn create_fields() -> Vec<Writable> {
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
    check_username(user)?;
    let pass = body["Password"].as_str().unwrap_or_default();
    let role = role_of(body.get("RoleId"), "RoleId")?.unwrap_or(Role::ReadOnly);
    let enabled = body.get("Enabled").and_then(Value::as_bool).unwrap_or(true);
    let a = st
        .auth
        .create_account(user, pass, role, enabled)
        .await
        .map_err(|e| auth_error(e, "UserName", user))?;
    tracing::info!(user, role = role.as_str(), "account created");
    let uri = format!("{ACCOUNTS}/{}", a.id);
    st.events
        .resource(Happened::Created, uri.clone(), "ManagerAccount");
    Ok(created(&uri, account_json(&a)))
}

async fn patch(
    State(st): State<AppState>,
    Extension(me): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    // Who may change what is decided before the lock is taken, so a URL
    // naming no account (or one the caller may not touch) costs nothing.
    let a = get_account(&st, &id)?;
    let only_password = body
        .keys()
        .all(|k| k == "Password" || k.starts_with("@odata."));
    may_change(&me, &a, only_password)?;
    // If-Match is checked against the account as it is under this lock,
    // so of two writers holding the same ETag only the first succeeds.
    let key = format!("account:{id}");
    let _patch = st
        .begin_patch_keyed(&key, &headers, crate::profile::generic(), || {
            let a = get_account(&st, &id)?;
            may_change(&me, &a, only_password)?;
            let current = account_json(&a);
            Ok((a, current))
        })
        .await?
        .validated(&body, &create_fields())?;
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
    let change = AccountChange {
        username: text("UserName"),
        password: text("Password"),
        role: role_of(body.get("RoleId"), "RoleId")?,
        enabled: body.get("Enabled").and_then(Value::as_bool),
        locked: body.get("Locked").and_then(Value::as_bool),
    };
    if let Some(u) = &change.username {
        check_username(u)?;
    }
    if change.locked == Some(true) {
        // Only the service locks accounts; clients may only unlock.
        return Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &["true", "Locked"]).about("Locked"),
        ));
    }
    let a = st
        .auth
        .modify_account(&id, change, me.session.as_deref())
        .await
        .map_err(|e| auth_error(e, "Enabled", &id))?;
    st.events.resource(
        Happened::Changed,
        format!("{ACCOUNTS}/{id}"),
        "ManagerAccount",
    );
    Ok(Resource::new(
        account_json(&a),
        crate::profile::generic(),
        "GET, PATCH, DELETE",
    ))
}

/// ConfigureUsers changes any account; anyone their own password.
fn may_change(me: &Principal, a: &Account, only_password: bool) -> Result<(), ApiError> {
    let own = me.username.as_deref() == Some(&a.username);
    if me.role.has(Privilege::ConfigureUsers) || (own && only_password) {
        Ok(())
    } else {
        Err(ApiError::Forbidden)
    }
}

async fn delete(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    get_account(&st, &id)?;
    let _guard = st.core.locks.lock(&format!("account:{id}")).await;
    json::check_if_match(
        &headers,
        &account_json(&get_account(&st, &id)?),
        crate::profile::generic(),
    )?;
    st.auth.delete_account(&id).map_err(|e| match e {
        AuthError::LastAdmin => ApiError::bad(Msg::new("ResourceCannotBeDeleted", &[])),
        other => auth_error(other, "Id", &id),
    })?;
    st.events.resource(
        Happened::Removed,
        format!("{ACCOUNTS}/{id}"),
        "ManagerAccount",
    );
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
