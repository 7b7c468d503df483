//! Images pushed to the BMC: `MultipartHttpPushUri` (an `UpdateParameters`
//! JSON part and an `UpdateFile` part, as DMTF specifies and bmcweb,
//! iDRAC and community.general's redfish_command send) and, where a
//! profile has one, `HttpPushUri` (the image itself as the body, installed
//! at once, as bmcweb's `/update`). Both answer 202 with the update's
//! Task; the body was read whole, within the image limit, by the guard.

use axum::extract::{Path, Request};
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use serde_json::{Map, Value};

use super::multipart::{self, Part};
use super::{claim, run, start, target, Ctx, PUSH_PREFIX};
use crate::api::error::{ApiError, Msg};
use crate::api::{AppState, State};

/// `UpdateParameters`' properties.
const PARAMETERS: [&str; 4] = [
    "Targets",
    "@Redfish.OperationApplyTime",
    "ForceUpdate",
    "Oem",
];

/// POST to a push URI of the UpdateService: the profile's multipart one
/// or its HttpPushUri; any other is not found.
pub async fn push(
    State(st): State<AppState>,
    Path(segment): Path<String>,
    req: Request,
) -> Result<Response, ApiError> {
    push_to(&st, format!("{PUSH_PREFIX}{segment}"), req).await
}

/// A POST to `path`, a push URI of the root profile's or not found.
pub(in crate::api) async fn push_to(
    st: &AppState,
    path: String,
    req: Request,
) -> Result<Response, ApiError> {
    let st = st.clone();
    let update = &st.root_profile.update;
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .map_err(|_| ApiError::bad(Msg::new("UnrecognizedRequestBody", &[])))?;
    if update.multipart_uri() == Some(path.as_str()) {
        return multipart_push(&st, &path, &content_type, body).await;
    }
    if update.push_uri() == Some(path.as_str()) {
        return http_push(&st, &path, &content_type, body).await;
    }
    Err(ApiError::NotFound(path))
}

async fn multipart_push(
    st: &AppState,
    path: &str,
    content_type: &str,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let boundary = multipart::boundary(content_type).map_err(|_| ApiError::UnsupportedMediaType)?;
    let parts = multipart::parse(&boundary, &body).map_err(|e| {
        tracing::info!(error = %e, "multipart upload refused");
        ApiError::bad(Msg::new("MissingOrMalformedPart", &[]))
    })?;
    let named = |name: &str| parts.iter().find(|p| p.name == name);
    let params = parameters(named("UpdateParameters"))?;
    let file = named("UpdateFile").ok_or_else(|| Ctx::Parameters.missing("UpdateFile"))?;
    let ctx = Ctx::Parameters;
    let apply = super::apply_time(&params, ctx)?;
    let (sys, only, target) = target(st, params.get("Targets"), ctx).await?;
    not_ready(st, &sys)?;
    let claim = claim(st, &sys)?;
    let name = file.filename.clone().unwrap_or_else(|| "UpdateFile".into());
    let image = body.slice_ref(file.body);
    let req = run::Request {
        sys,
        source: run::Source::Pushed(image, name),
        only,
        apply,
        target,
        vendor_job: false,
    };
    Ok(crate::api::tasks::accepted(&start(st, req, claim, path)?))
}

/// 400 while the BMC of `sys` is still booting after a restart, where
/// its profile says so (AMI MegaRAC).
fn not_ready(st: &AppState, sys: &crate::model::System) -> Result<(), ApiError> {
    let Some(left) = st.uploads.not_ready_for(&sys.id) else {
        return Ok(());
    };
    let update = &st.profile(sys).update;
    let secs = left.as_secs().max(1).to_string();
    let mut msgs = vec![Msg::new("ServiceTemporarilyUnavailable", &[&secs])];
    if let Some(m) = &update.not_ready {
        msgs.push(Msg::vendor_with(m, &["UpdateService.MultipartPush"]));
    }
    tracing::info!(system = %sys.name, secs = %secs, "multipart push refused: the BMC is still booting");
    Err(ApiError::BadRequest(msgs))
}

/// The `UpdateParameters` part: a JSON object of known properties.
fn parameters(part: Option<&Part<'_>>) -> Result<Map<String, Value>, ApiError> {
    let part = part.ok_or_else(|| Ctx::Parameters.missing("UpdateParameters"))?;
    let v: Value = serde_json::from_slice(part.body)
        .map_err(|_| ApiError::bad(Msg::new("MalformedJSON", &[])))?;
    let Value::Object(map) = v else {
        return Err(Ctx::Parameters.type_error(&v, "UpdateParameters"));
    };
    crate::api::json::properties_known(&map, &PARAMETERS)?;
    if let Some(v) = map.get("ForceUpdate").filter(|v| !v.is_boolean()) {
        return Err(Ctx::Parameters.type_error(v, "ForceUpdate"));
    }
    Ok(map)
}

/// The image as the body (`application/octet-stream`), installed at once
/// on the service's one system (the image says which component).
async fn http_push(
    st: &AppState,
    path: &str,
    content_type: &str,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/octet-stream") {
        return Err(ApiError::UnsupportedMediaType);
    }
    let (sys, only, target) = target(st, None, Ctx::Parameters)
        .await
        .map_err(|_| ApiError::bad(Msg::new("PropertyMissing", &["HttpPushUriTargets"])))?;
    let claim = claim(st, &sys)?;
    let req = run::Request {
        sys,
        source: run::Source::Pushed(body, "image".into()),
        only,
        apply: Some(None),
        target,
        vendor_job: false,
    };
    Ok(crate::api::tasks::accepted(&start(st, req, claim, path)?))
}
