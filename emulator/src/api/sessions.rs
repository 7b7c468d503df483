//! SessionService and Sessions: POST to log in (`X-Auth-Token` and
//! `Location`), DELETE to log out, a PATCHable idle timeout. Limits
//! (per account, Administrators' reserve, name and password lengths) are
//! `auth`'s; a login refused because too many checks wait for bcrypt is a
//! 503 with Retry-After.

use crate::api::events::record::Happened;
use crate::api::State;
use axum::extract::Path;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde_json::{json, Value};

use super::input::echo;
use super::json::{self, JsonObject, Resource};
use super::patch::{validate_patch, writable, Kind};
use super::{collection, created, link, AppState};
use crate::api::error::{ApiError, Msg};
use crate::auth::{self, AuthError, Principal, Privilege, Session};
use crate::timefmt::rfc3339;

pub fn router() -> Router {
    // DSP0266 §6.4: a POST to a collection's Members is the same create.
    live_router().route(
        "/redfish/v1/SessionService",
        get(service).patch(patch_service),
    )
}

/// The sessions themselves, without the SessionService resource: a
/// replayed capture (`mockup.rs`) shows its own SessionService and logs
/// in here.
pub fn live_router() -> Router {
    Router::new()
        .route("/redfish/v1/SessionService/Sessions", get(list).post(login))
        .route(
            "/redfish/v1/SessionService/Sessions/Members",
            axum::routing::post(login),
        )
        .route(
            "/redfish/v1/SessionService/Sessions/{id}",
            get(session).delete(logout),
        )
}

fn service_json(st: &AppState) -> Value {
    json!({
        "@odata.type": "#SessionService.v1_1_9.SessionService",
        "@odata.id": "/redfish/v1/SessionService",
        "Id": "SessionService",
        "Name": "Session Service",
        "ServiceEnabled": true,
        "SessionTimeout": st.auth.session_timeout(),
        "Status": { "State": "Enabled", "Health": "OK" },
        "Sessions": link("/redfish/v1/SessionService/Sessions"),
    })
}

async fn service(State(st): State<AppState>) -> Resource {
    Resource::new(service_json(&st), crate::profile::generic(), "GET, PATCH")
}

async fn patch_service(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    let (min, max) = auth::SESSION_TIMEOUT_RANGE;
    let current = service_json(&st);
    validate_patch(
        &body,
        &current,
        &[writable(
            "SessionTimeout",
            Kind::Int {
                min: min as i64,
                max: max as i64,
            },
        )],
    )?;
    if let Some(t) = body.get("SessionTimeout").and_then(Value::as_u64) {
        st.auth.set_session_timeout(t);
        st.events.resource(
            Happened::Changed,
            "/redfish/v1/SessionService".into(),
            "SessionService",
        );
    }
    Ok(Resource::new(
        service_json(&st),
        crate::profile::generic(),
        "GET, PATCH",
    ))
}

fn session_json(s: &Session) -> Value {
    json!({
        "@odata.type": "#Session.v1_7_0.Session",
        "@odata.id": format!("/redfish/v1/SessionService/Sessions/{}", s.id),
        "Id": s.id,
        "Name": "User Session",
        "UserName": s.username,
        "CreatedTime": rfc3339(s.created),
        "SessionType": "Redfish",
        "Password": null,
    })
}

async fn list(State(st): State<AppState>, Extension(me): Extension<Principal>) -> Resource {
    let members = st
        .auth
        .sessions()
        .into_iter()
        .filter(|s| {
            me.role.has(Privilege::ConfigureManager) || Some(&s.username) == me.username.as_ref()
        })
        .map(|s| format!("/redfish/v1/SessionService/Sessions/{}", s.id));
    Resource::plain(
        collection(
            "SessionCollection",
            "/redfish/v1/SessionService/Sessions",
            "Session Collection",
            members,
        ),
        "GET, POST",
    )
}

async fn login(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    const ACTION: &str = "Session";
    let mut missing = Vec::new();
    let user = json::action_str(&body, "UserName", ACTION)?;
    let pass = json::action_str(&body, "Password", ACTION)?;
    if user.is_none() {
        missing.push(Msg::new("CreateFailedMissingReqProperties", &["UserName"]));
    }
    if pass.is_none() {
        missing.push(Msg::new("CreateFailedMissingReqProperties", &["Password"]));
    }
    let (Some(user), Some(pass)) = (user, pass) else {
        return Err(ApiError::BadRequest(missing));
    };
    // Longer than any account has (the open service stores what it gets).
    let mut long = Vec::new();
    if user.len() > auth::MAX_USERNAME_LEN {
        long.push(
            Msg::new("PropertyValueFormatError", &[&echo(user), "UserName"]).about("UserName"),
        );
    }
    if pass.len() > auth::MAX_LOGIN_PASSWORD_LEN {
        long.push(
            Msg::new("PropertyValueFormatError", &["(hidden)", "Password"]).about("Password"),
        );
    }
    if !long.is_empty() {
        return Err(ApiError::BadRequest(long));
    }
    let (session, token) = match st.auth.login(user, pass).await {
        Ok(s) => s,
        Err(AuthError::SessionLimit) => {
            return Err(ApiError::bad(Msg::new("SessionLimitExceeded", &[])))
        }
        Err(AuthError::Busy) => {
            tracing::info!("login refused: bcrypt queue full");
            return Err(ApiError::Unavailable(1));
        }
        Err(_) => {
            tracing::info!(user, "login refused");
            return Err(ApiError::Unauthorized);
        }
    };
    tracing::info!(user, session = %session.id, "session created");
    let location = format!("/redfish/v1/SessionService/Sessions/{}", session.id);
    st.events
        .resource(Happened::Created, location.clone(), "Session");
    let mut r = created(&location, session_json(&session));
    if let Ok(v) = HeaderValue::from_str(&token) {
        r.headers_mut().insert("X-Auth-Token", v);
    }
    Ok(r)
}

fn visible(st: &AppState, me: &Principal, id: &str) -> Result<Session, ApiError> {
    let not_found = || ApiError::NotFound(format!("/redfish/v1/SessionService/Sessions/{id}"));
    let s = st.auth.session(id).ok_or_else(not_found)?;
    if me.role.has(Privilege::ConfigureManager) || Some(&s.username) == me.username.as_ref() {
        Ok(s)
    } else {
        Err(ApiError::Forbidden)
    }
}

async fn session(
    State(st): State<AppState>,
    Extension(me): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        session_json(&visible(&st, &me, &id)?),
        "GET, DELETE",
    ))
}

async fn logout(
    State(st): State<AppState>,
    Extension(me): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    visible(&st, &me, &id)?;
    if st.auth.delete_session(&id) {
        st.events.resource(
            Happened::Removed,
            format!("/redfish/v1/SessionService/Sessions/{id}"),
            "Session",
        );
    }
    tracing::info!(session = %id, "session deleted");
    Ok(json::no_content().into_response())
}
