//! The admin endpoint: Shoal's own control API, apart from the Redfish
//! tree (its own listener, `--admin-listen`) and with its own auth (a
//! bearer token, `--admin-token`). It drives fault injection at runtime:
//!
//! - `GET /shoal/v1/faults`: the rules, their seed and the BMC reboots in
//!   progress;
//! - `PUT /shoal/v1/faults`: replaces the rules (`{"seed": N, "rules": [...]}`,
//!   the format of the config's `[faults]`), restarting the generator;
//! - `DELETE /shoal/v1/faults`: no rules, no reboots;
//! - `POST /shoal/v1/faults/reboot` `{"seconds": N, "systems": [...]}`: the
//!   BMCs of those systems (all when none) answer 503 for N seconds and
//!   lose their sessions;
//! - `POST /shoal/v1/faults/expire-sessions` `{"systems": [...]}`: their
//!   sessions are dropped (clients must log in again);
//! - `POST /shoal/v1/faults/power-loss` `{"seconds": N, "systems": [...]}`:
//!   those machines (all when none) lose power with their BMCs: the hosts
//!   are off at once, the BMCs answer 503 for N seconds and lose their
//!   sessions, then power returns and each machine does what its
//!   `PowerRestorePolicy` says (AlwaysOn: starts; LastState: starts if it
//!   was on; AlwaysOff: stays off).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Backend;
use crate::faults::{FaultConfig, Faults};
use crate::model::{PowerRestorePolicy, PowerState, ResetType};

#[derive(Clone)]
struct Admin {
    faults: Arc<Faults>,
    backend: Arc<dyn Backend>,
    token: Arc<str>,
}

fn error(status: StatusCode, why: impl Into<String>) -> Response {
    (status, Json(json!({ "error": why.into() }))).into_response()
}

/// A JSON body (none reads as `{}`), or what is wrong with it.
fn body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let text = if bytes.is_empty() {
        b"{}".as_slice()
    } else {
        bytes
    };
    serde_json::from_slice(text).map_err(|e| e.to_string())
}

fn state_json(f: &Faults) -> Value {
    let outages: Vec<Value> = f
        .outages()
        .into_iter()
        .map(|(systems, secs)| json!({ "systems": systems, "seconds_left": secs }))
        .collect();
    json!({ "faults": f.config(), "fired": f.fired(), "reboots": outages })
}

async fn get_faults(State(a): State<Admin>) -> Response {
    Json(state_json(&a.faults)).into_response()
}

async fn put_faults(State(a): State<Admin>, bytes: axum::body::Bytes) -> Response {
    // Every number bounded, every error naming its key.
    let cfg = match FaultConfig::from_json(&bytes) {
        Ok(c) => c,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    tracing::info!(rules = cfg.rules.len(), seed = cfg.seed, "faults replaced");
    a.faults.replace(cfg);
    Json(state_json(&a.faults)).into_response()
}

async fn delete_faults(State(a): State<Admin>) -> Response {
    a.faults.clear();
    tracing::info!("faults cleared");
    Json(state_json(&a.faults)).into_response()
}

/// A time the BMCs of some systems (all when none) are away: a reboot's
/// or a power loss's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Away {
    seconds: u64,
    #[serde(default)]
    systems: Vec<String>,
}

impl Away {
    /// The request's body, or what is wrong with it (a 400's reason).
    fn parse(bytes: &[u8]) -> Result<Away, String> {
        let a: Away = body(bytes)?;
        if a.seconds > 3600 {
            return Err("seconds: at most 3600".into());
        }
        Ok(a)
    }
}

async fn reboot(State(a): State<Admin>, bytes: axum::body::Bytes) -> Response {
    let r = match Away::parse(&bytes) {
        Ok(r) => r,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    tracing::info!(systems = ?r.systems, seconds = r.seconds, "BMC reboot (fault)");
    a.faults.reboot(r.systems, r.seconds);
    Json(state_json(&a.faults)).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expire {
    #[serde(default)]
    systems: Vec<String>,
}

async fn expire_sessions(State(a): State<Admin>, bytes: axum::body::Bytes) -> Response {
    let e: Expire = match body(&bytes) {
        Ok(e) => e,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let n = a.faults.expire_sessions(&e.systems);
    tracing::info!(systems = ?e.systems, sessions = n, "sessions expired (fault)");
    Json(json!({ "expired": n })).into_response()
}

/// A power loss (see the module's list): checked whole before anything
/// happens; 202, since the power returns later.
async fn power_loss(State(a): State<Admin>, bytes: axum::body::Bytes) -> Response {
    let p = match Away::parse(&bytes) {
        Ok(p) => p,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let all = match a.backend.systems().await {
        Ok(all) => all,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let unknown: Vec<&str> = (p.systems.iter())
        .filter(|n| !all.iter().any(|r| &r.name == *n))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let why = format!("systems: no system named {}", unknown.join(", "));
        return error(StatusCode::BAD_REQUEST, why);
    }
    let hit: Vec<_> = (all.into_iter())
        .filter(|r| p.systems.is_empty() || p.systems.contains(&r.name))
        .collect();
    let mut lost = Vec::new();
    for r in &hit {
        let was_on = match a.backend.system(&r.id).await {
            Ok(sys) => sys.power != PowerState::Off,
            Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        };
        if was_on {
            if let Err(e) = a.backend.reset(&r.id, ResetType::ForceOff).await {
                tracing::warn!(system = %r.name, error = %e, "power loss: the host did not go off");
            }
        }
        lost.push((r.clone(), was_on));
    }
    let names: Vec<String> = hit.iter().map(|r| r.name.clone()).collect();
    tracing::info!(systems = ?names, seconds = p.seconds, "power loss (fault)");
    a.faults.reboot(p.systems, p.seconds);
    let backend = a.backend.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(p.seconds)).await;
        for (r, was_on) in lost {
            let policy = match backend.system(&r.id).await {
                Ok(sys) => sys.bmc.power_restore,
                Err(_) => continue,
            };
            let start = match policy {
                PowerRestorePolicy::AlwaysOn => true,
                PowerRestorePolicy::LastState => was_on,
                PowerRestorePolicy::AlwaysOff => false,
            };
            tracing::info!(system = %r.name, %policy, start, "power restored");
            if start {
                if let Err(e) = backend.reset(&r.id, ResetType::On).await {
                    tracing::warn!(system = %r.name, error = %e, "power restored: the host did not start");
                }
            }
        }
    });
    let body = Json(json!({ "systems": names, "seconds": p.seconds }));
    (StatusCode::ACCEPTED, body).into_response()
}

async fn bearer(State(a): State<Admin>, req: Request, next: Next) -> Response {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), a.token.as_bytes()));
    if !ok {
        let mut r = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"shoal-admin\""),
        );
        return r;
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The admin service over `faults` and the machines of `backend`, for
/// holders of `token`.
pub fn router(faults: Arc<Faults>, backend: Arc<dyn Backend>, token: &str) -> Router {
    let a = Admin {
        faults,
        backend,
        token: Arc::from(token),
    };
    Router::new()
        .route(
            "/shoal/v1/faults",
            get(get_faults).put(put_faults).delete(delete_faults),
        )
        .route("/shoal/v1/faults/reboot", post(reboot))
        .route("/shoal/v1/faults/expire-sessions", post(expire_sessions))
        .route("/shoal/v1/faults/power-loss", post(power_loss))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such admin resource") })
        .layer(middleware::from_fn_with_state(a.clone(), bearer))
        .with_state(a)
}
