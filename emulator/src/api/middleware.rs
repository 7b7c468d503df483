//! The middlewares around the router: injected faults (outermost, so a
//! rebooting BMC answers before authentication) and authentication with the
//! privilege an operation needs (`authorize`, also asked by `guard` and by
//! the query layer's subrequests).
//!
//! Invariant: only the service root, `/redfish`, `odata`, `$metadata`,
//! schemas and session login are open; wrong credentials are refused even
//! there.

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::{guard, AppState};
use crate::api::error::{ApiError, Msg};
use crate::auth::{Principal, Privilege};
use crate::bmc::changes::{with_cause, Cause};
use crate::faults::Decision;

/// The systems a request concerns, by name: the one its path names, else
/// those of the endpoint it reached (none on the shared service root).
async fn request_systems(st: &AppState, path: &str) -> Vec<String> {
    let mut segs = path.trim_start_matches("/redfish/v1/").split('/');
    if let (Some(kind @ ("Systems" | "Managers" | "Chassis")), Some(id)) =
        (segs.next(), segs.next())
    {
        let id = match &st.fixed {
            Some(f) if kind != "Systems" && (id == f.manager || id == f.chassis) => {
                f.system.as_str()
            }
            _ => id,
        };
        if let Ok(Some(r)) = st.core.backend.find(id).await {
            return vec![r.name];
        }
    }
    st.core
        .endpoint_systems
        .as_ref()
        .map(|v| v.as_ref().clone())
        .unwrap_or_default()
}

/// The error a failing fault answers with: the status asked for, else the
/// profile's busy error (iDRAC's SYS518, ...), else 500; the Base message
/// for the status, and the vendor's when its status is the one sent.
async fn injected_error(
    st: &AppState,
    systems: &[String],
    status: Option<u16>,
    message_id: Option<&str>,
) -> ApiError {
    let mut profile = None;
    if let Some(name) = systems.first() {
        if let Ok(Some(r)) = st.core.backend.find(name).await {
            if let Ok(sys) = st.core.backend.system(&r.id).await {
                profile = Some(st.profile(&sys));
            }
        }
    }
    let busy = profile
        .and_then(|p| p.errors.busy.as_ref())
        .filter(|_| message_id.is_none());
    let default = match message_id {
        Some(_) => 400,
        None => busy.map_or(500, |b| b.status),
    };
    let code = status.unwrap_or(default);
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let by_status = match code {
        503 => Msg::new("ServiceTemporarilyUnavailable", &["1"]),
        409 => Msg::new("ResourceInUse", &[]),
        500..=599 => Msg::new("InternalError", &[]),
        _ => Msg::new("GeneralError", &[]),
    };
    let mut msgs = Vec::new();
    match message_id {
        Some(id) if let Some(def) = crate::registry::lookup(id) => msgs.push(Msg::new(def.id, &[])),
        Some(id) => {
            msgs.push(by_status);
            // A vendor message, under the registry of the system's vendor.
            match profile.and_then(|p| p.vendor_message(id)) {
                Some(m) => msgs.push(Msg::vendor_with(m, &[])),
                None => tracing::warn!(
                    message_id = id,
                    ?systems,
                    "fault: the system's profile has no registry for this message; sent without it"
                ),
            }
        }
        None => {
            msgs.push(by_status);
            if let Some(b) = busy.filter(|b| b.status == code) {
                msgs.push(Msg::vendor(&b.message, ""));
            }
        }
    }
    tracing::info!(status = code, message_id, ?systems, "fault: injected error");
    ApiError::Status(status, msgs)
}

/// A body that fails at once: the server closes the connection without
/// a complete answer, as a BMC that drops it.
struct Dropped;

impl axum::body::HttpBody for Dropped {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "connection dropped by an injected fault",
        ))))
    }
}

pub(super) async fn inject_faults(
    State(st): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if !st.core.faults.active() {
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    let systems = request_systems(&st, &path).await;
    let (latency, decision) = st
        .core
        .faults
        .decide(req.method().as_str(), &path, &systems);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match decision {
        Decision::Pass => next.run(req).await,
        Decision::Unavailable(secs) => ApiError::Unavailable(secs).into_response(),
        Decision::Fail { status, message_id } => {
            injected_error(&st, &systems, status, message_id.as_deref())
                .await
                .into_response()
        }
        Decision::Drop => {
            tracing::debug!(%path, "fault: connection dropped");
            Response::new(axum::body::Body::new(Dropped))
        }
    }
}

fn is_public(method: &Method, path: &str) -> bool {
    matches!(
        path,
        "/redfish" | "/redfish/v1" | "/redfish/v1/" | "/redfish/v1/odata" | "/redfish/v1/$metadata"
    ) || path.starts_with("/redfish/v1/Schemas/")
        || (*method == Method::POST
            && matches!(
                path,
                "/redfish/v1/SessionService/Sessions"
                    | "/redfish/v1/SessionService/Sessions/Members"
            ))
}

/// The privilege an operation needs before its handler runs. Handlers
/// refine it where the target matters (own account, own session).
fn required_privilege(method: &Method, path: &str) -> Privilege {
    // A login is open to every user, whatever else the request carries.
    if matches!(*method, Method::GET | Method::HEAD) || is_public(method, path) {
        return Privilege::Login;
    }
    if path.starts_with("/redfish/v1/AccountService/Accounts/") && *method == Method::PATCH {
        return Privilege::ConfigureSelf;
    }
    if path.starts_with("/redfish/v1/AccountService") {
        return Privilege::ConfigureUsers;
    }
    if path.starts_with("/redfish/v1/SessionService/Sessions/") {
        return Privilege::Login;
    }
    // DMTF's privilege registry: VirtualMedia needs ConfigureManager
    // wherever it is reached, a System's or a Manager's.
    // DMTF's privilege registry: EventService and EventDestination
    // writes need ConfigureManager.
    if path.starts_with("/redfish/v1/SessionService")
        || path.starts_with("/redfish/v1/EventService")
        || path.starts_with("/redfish/v1/Managers")
        || path.starts_with("/redfish/v1/Dell/Managers")
        || path.starts_with("/redfish/v1/CertificateService")
        || path.contains("/VirtualMedia")
    {
        return Privilege::ConfigureManager;
    }
    Privilege::ConfigureComponents
}

pub(super) async fn authenticate(
    State(st): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    // The guard decided for a client's request; a subrequest of the query
    // layer (`$expand`, `$filter`) is checked here.
    let decided = match req.extensions_mut().remove::<guard::Decided>() {
        Some(guard::Decided(d)) => d,
        None => authorize(&st, req.headers(), req.method(), req.uri().path()).await,
    };
    let user = match decided {
        Ok(Some(p)) => {
            let user = p.username.clone();
            req.extensions_mut().insert(p);
            user
        }
        Ok(None) => None,
        Err(e) => return e.into_response(),
    };
    let who = user.clone().map(crate::access::Who);
    // What a request that may change something changes, the change
    // stream says it did; reads (most requests) carry no cause.
    let mut resp = if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        next.run(req).await
    } else {
        let cause = Cause::Redfish {
            method: req.method().to_string(),
            path: req.uri().path().to_string(),
            user,
        };
        with_cause(cause, next.run(req)).await
    };
    if let Some(w) = who {
        resp.extensions_mut().insert(w);
    }
    resp
}

/// Who a request is from, once its credentials are checked and its role
/// has the privilege the operation needs; `None` for an anonymous request
/// to a public URL.
pub(crate) async fn authorize(
    st: &AppState,
    h: &axum::http::HeaderMap,
    method: &Method,
    path: &str,
) -> Result<Option<Principal>, ApiError> {
    let header_str = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let creds = Credentials {
        token: header_str("X-Auth-Token"),
        basic: header_str(header::AUTHORIZATION.as_str()),
        public: is_public(method, path),
    };
    let p = principal(st, creds).await?;
    if let Some(p) = &p {
        if !p.role.has(required_privilege(method, path)) {
            return Err(ApiError::Forbidden);
        }
    }
    Ok(p)
}

/// What a request presents to authenticate itself.
struct Credentials {
    token: Option<String>,
    basic: Option<String>,
    /// The URL is readable without authentication.
    public: bool,
}

/// Who the request is from; `None` for an anonymous request to a public URL.
/// Wrong credentials are refused even on public URLs, as BMCs do.
async fn principal(st: &AppState, c: Credentials) -> Result<Option<Principal>, ApiError> {
    if !st.auth.enabled() {
        return Ok(Some(Principal::anonymous_admin()));
    }
    if let Some(token) = &c.token {
        return match st.auth.by_token(token) {
            Some(p) => Ok(Some(p)),
            None if c.public => Ok(None),
            None => Err(ApiError::Unauthorized),
        };
    }
    if let Some(auth) = &c.basic {
        let (user, pass) = parse_basic(auth).ok_or(ApiError::Unauthorized)?;
        return match st.auth.verify(&user, &pass).await {
            Ok(p) => Ok(Some(p)),
            Err(crate::auth::AuthError::Busy) => Err(ApiError::Unavailable(1)),
            Err(_) => Err(ApiError::Unauthorized),
        };
    }
    if c.public {
        return Ok(None);
    }
    Err(ApiError::Unauthorized)
}

fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_header_parses() {
        let v = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:pa:ss")
        );
        assert_eq!(parse_basic(&v), Some(("admin".into(), "pa:ss".into())));
        assert_eq!(parse_basic("Bearer x"), None);
    }
}
