//! iLO's own firmware path beside SimpleUpdate, as HPE's iLOrest drives it
//! (`uploadcomp`, `flashfwpkg`, `listcomp`, `deletecomp`, `taskqueue`):
//! a multipart upload to the UpdateService's `Oem.Hpe.PushUpdateUri`
//! (`/cgi-bin/uploadFile`: `sessionKey`, `parameters`, `compsig`, `file`)
//! that flashes the image (`UpdateTarget`) and/or keeps it in the
//! `ComponentRepository` (`UpdateRepository`), answering 200; the
//! `UpdateTaskQueue` (`queue.rs`), whose entries run in order: `ApplyUpdate` of a
//! repository component (a BMC-updatable one at once, a UEFI one at the
//! server's next start), `Wait`, `ResetBmc`; `ResetServer` needs HPE's
//! runtime agent in the OS, which no machine here runs, so it stays
//! Pending and holds the entries behind it, as on an iLO without one.
//! Progress shows in `Oem.Hpe.State` (`update.rs`) as each flash is a
//! firmware update task.

use std::time::SystemTime;

use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, Resource};
use crate::api::update::{Kept, QueueState};
use crate::api::{collection, AppState, State};
use crate::firmware::Component;
use crate::model::System;
use crate::timefmt::rfc3339;

/// Where iLO takes uploads (`Oem.Hpe.PushUpdateUri`, `HttpPushUri`).
pub const PUSH_URI: &str = "/cgi-bin/uploadFile";
const REPOSITORY: &str = "/redfish/v1/UpdateService/ComponentRepository";
pub(super) const QUEUE: &str = "/redfish/v1/UpdateService/UpdateTaskQueue";
/// Where a kept component's file is served.
const FWREPO: &str = "/fwrepo";
/// The upload's `parameters` part.
const PARAMETERS: [&str; 6] = [
    "UpdateRepository",
    "UpdateTarget",
    "ETag",
    "Section",
    "UpdateRecoverySet",
    "TPMOverride",
];

pub(super) fn router() -> Router {
    Router::new()
        .route(PUSH_URI, post(upload))
        .route(REPOSITORY, get(repository))
        .route(
            &format!("{REPOSITORY}/{{id}}"),
            get(component).delete(delete_component),
        )
        .route(&format!("{FWREPO}/{{name}}"), get(file))
}

/// The UpdateService's `Oem.Hpe` links and push URI.
pub(super) fn service_links(v: &mut Value) {
    let hpe = &mut v["Oem"]["Hpe"];
    hpe["PushUpdateUri"] = json!(PUSH_URI);
    hpe["ComponentRepository"] = json!({ "@odata.id": format!("{REPOSITORY}/") });
    hpe["UpdateTaskQueue"] = json!({ "@odata.id": format!("{QUEUE}/") });
    v["HttpPushUri"] = json!(PUSH_URI);
}

/// The endpoint's one iLO system, or not found (not an iLO, or a service
/// of several systems).
pub(super) async fn ilo(st: &AppState, path: &str) -> Result<System, ApiError> {
    if st.root_profile.hpe.is_none() {
        return Err(ApiError::NotFound(path.to_string()));
    }
    match crate::api::update::system_for(st, "").await? {
        (Some(sys), false) => Ok(sys),
        _ => Err(ApiError::NotFound(path.to_string())),
    }
}

/// Who may update what, as iLO says it: the BMC and the system ROM are
/// flashed by the iLO itself, the NIC by UEFI at the next start.
pub(super) fn updatable_by(c: Component) -> &'static [&'static str] {
    match c {
        Component::Bios | Component::Bmc => &["Bmc"],
        Component::Nic => &["Uefi"],
    }
}

/// iLO's 200: Base Success in its `error` wrapper.
fn ilo_success() -> Response {
    let body = json!({ "error": {
        "code": "iLO.0.10.ExtendedInfo",
        "message": "See @Message.ExtendedInfo for more information.",
        "@Message.ExtendedInfo": [{ "MessageId": "Base.1.4.Success" }],
    }});
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// The upload's `parameters`: (UpdateRepository, UpdateTarget).
fn parameters(part: Option<&[u8]>) -> Result<(bool, bool), ApiError> {
    let Some(body) = part else {
        return Ok((true, false));
    };
    let v: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::bad(Msg::new("MalformedJSON", &[])))?;
    let Value::Object(map) = v else {
        return Err(ApiError::bad(Msg::new(
            "PropertyValueTypeError",
            &[&json::shown(&v), "parameters"],
        )));
    };
    crate::api::json::properties_known(&map, &PARAMETERS)?;
    let flag = |k: &str, default: bool| match map.get(k) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(ApiError::bad(Msg::new(
            "PropertyValueTypeError",
            &[&json::shown(v), k],
        ))),
    };
    let (repository, target) = (
        flag("UpdateRepository", true)?,
        flag("UpdateTarget", false)?,
    );
    for k in ["UpdateRecoverySet", "TPMOverride"] {
        flag(k, false)?;
    }
    // One section: the image whole (iLOrest splits only signed images
    // over 32 MiB, more than the BMC takes).
    match map.get("Section") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64() == Some(0) => {}
        Some(v) => {
            return Err(ApiError::bad(Msg::new(
                "PropertyValueNotInList",
                &[&json::shown(v), "Section"],
            )))
        }
    }
    if !repository && !target {
        return Err(ApiError::bad(Msg::new(
            "PropertyValueConflict",
            &["UpdateRepository", "UpdateTarget"],
        )));
    }
    Ok((repository, target))
}

/// POST /cgi-bin/uploadFile: the image flashed and/or kept; 200.
async fn upload(State(st): State<AppState>, uri: Uri, req: Request) -> Result<Response, ApiError> {
    let sys = ilo(&st, uri.path()).await?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let boundary = crate::api::update::multipart_boundary(&content_type)
        .map_err(|_| ApiError::UnsupportedMediaType)?;
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .map_err(|_| ApiError::bad(Msg::new("UnrecognizedRequestBody", &[])))?;
    let parts = crate::api::update::multipart_parts(&boundary, &body)?;
    let named = |n: &str| parts.iter().find(|p| p.name == n);
    let (repository, target) = parameters(named("parameters").map(|p| p.body))?;
    let file =
        named("file").ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &["file"])))?;
    let filename = file
        .filename
        .clone()
        .unwrap_or_else(|| "component.bin".into());
    let bytes = body.slice_ref(file.body);
    if repository {
        let image = crate::firmware::parse(&bytes).map_err(|e| {
            tracing::info!(error = %e, file = %filename, "iLO upload refused");
            ApiError::bad(Msg::new("MissingOrMalformedPart", &[]))
        })?;
        let id = format!("{:08x}", fnv(filename.as_bytes()));
        tracing::info!(system = %sys.name, file = %filename, component = %image.component, version = %image.version, "component kept in the iLO repository");
        st.uploads.keep_component(Kept {
            id,
            filename: filename.clone(),
            image,
            bytes: bytes.clone(),
            created: SystemTime::now(),
        });
    }
    if target {
        crate::api::update::start_pushed(&st, bytes, filename, PUSH_URI).await?;
    }
    Ok(ilo_success())
}

/// A stable, short Id for a file name (FNV-1a).
pub(super) fn fnv(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0193)
    })
}

fn component_json(k: &Kept) -> Value {
    let c = k.image.component;
    json!({
        "@odata.type": "#HpeComponent.v1_2_0.HpeComponent",
        "@odata.id": format!("{REPOSITORY}/{}", k.id),
        "Id": k.id,
        "Name": format!("{} firmware {}", c.as_str().to_ascii_uppercase(), k.image.version),
        "Filename": k.filename,
        "Filepath": k.filename,
        "ComponentUri": format!("{FWREPO}/{}", k.filename),
        "Version": k.image.version,
        "SizeBytes": k.bytes.len(),
        "Locked": false,
        "UpdatableBy": updatable_by(c),
        "Created": rfc3339(k.created),
    })
}

async fn repository(State(st): State<AppState>, uri: Uri) -> Result<Resource, ApiError> {
    ilo(&st, uri.path()).await?;
    let members = st
        .uploads
        .kept()
        .iter()
        .map(|k| format!("{REPOSITORY}/{}", k.id))
        .collect::<Vec<_>>();
    Ok(Resource::plain(
        collection(
            "HpeComponentCollection",
            REPOSITORY,
            "Component Collection",
            members,
        ),
        "GET",
    ))
}

fn kept(st: &AppState, id: &str) -> Option<Kept> {
    st.uploads.kept().into_iter().find(|k| k.id == id)
}

async fn component(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    ilo(&st, uri.path()).await?;
    let k = kept(&st, &id).ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    Ok(Resource::plain(component_json(&k), "GET, DELETE"))
}

async fn delete_component(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    ilo(&st, uri.path()).await?;
    let k = kept(&st, &id).ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    let waiting = st.uploads.queue().into_iter().any(|q| {
        !finished(q.state)
            && q.filename
                .as_deref()
                .is_some_and(|f| f.eq_ignore_ascii_case(&k.filename))
    });
    if waiting {
        // A queued update still needs it.
        return Err(ApiError::Status(
            StatusCode::CONFLICT,
            vec![Msg::new("ResourceInUse", &[])],
        ));
    }
    st.uploads.forget_component(&id);
    Ok(json::no_content())
}

/// GET /fwrepo/NAME: a kept component's file.
async fn file(
    State(st): State<AppState>,
    Path(name): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    ilo(&st, uri.path()).await?;
    let k = st
        .uploads
        .kept()
        .into_iter()
        .find(|k| k.filename.eq_ignore_ascii_case(&name))
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    let mut r = (StatusCode::OK, k.bytes).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok(r)
}

/// Whether a queue entry is done with.
pub(super) fn finished(s: QueueState) -> bool {
    matches!(s, QueueState::Complete | QueueState::Exception)
}
