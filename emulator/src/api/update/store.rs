//! Images uploaded to the FirmwareInventory and kept until a SimpleUpdate
//! names them (an iDRAC's HttpPushUri, `[update] http_push_stores`): a
//! multipart POST with a `file` part (and the collection's ETag in
//! If-Match, as Dell's scripts send it) answers 201 with an
//! `Available-<component>-<version>` member, which a SimpleUpdate's
//! `ImageURI` then names; DELETE removes it. Each BMC keeps at most
//! [`MAX_UPLOADS`] images, the oldest dropped first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Request};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::inventory::{self, INVENTORY};
use super::multipart;
use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, Resource};
use crate::api::{AppState, State};
use crate::firmware::Image;
use crate::sync::lock;

/// Uploaded images a BMC keeps.
pub const MAX_UPLOADS: usize = 4;

/// One uploaded image.
#[derive(Clone)]
pub struct Upload {
    pub id: String,
    pub image: Image,
    pub bytes: Bytes,
}

/// A BMC's uploaded images, oldest first, and until when each of its
/// systems' BMC refuses pushes after a restart.
#[derive(Default)]
pub struct Uploads {
    images: Mutex<Vec<Upload>>,
    not_ready: Mutex<HashMap<String, Instant>>,
}

impl Uploads {
    pub fn list(&self) -> Vec<Upload> {
        lock(&self.images).clone()
    }

    pub fn get(&self, id: &str) -> Option<Upload> {
        lock(&self.images).iter().find(|u| u.id == id).cloned()
    }

    /// Takes the upload out (an update installs it).
    pub fn take(&self, id: &str) -> Option<Upload> {
        let mut v = lock(&self.images);
        let i = v.iter().position(|u| u.id == id)?;
        Some(v.remove(i))
    }

    /// The BMC of `system` takes no push until `until` (it is still
    /// booting after a restart).
    pub fn not_ready_until(&self, system: &str, until: Instant) {
        let mut m = lock(&self.not_ready);
        let now = Instant::now();
        m.retain(|_, t| *t > now);
        m.insert(system.to_string(), until);
    }

    /// How long the BMC of `system` still takes no push.
    pub fn not_ready_for(&self, system: &str) -> Option<Duration> {
        let until = *lock(&self.not_ready).get(system)?;
        until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    fn keep(&self, upload: Upload) {
        let mut v = lock(&self.images);
        v.retain(|u| u.id != upload.id);
        if v.len() == MAX_UPLOADS {
            v.remove(0);
        }
        v.push(upload);
    }
}

/// Whether this BMC keeps uploads (its HttpPushUri is the inventory).
fn stores(st: &AppState) -> bool {
    let u = &st.root_profile.update;
    u.http_push_stores && u.push_uri() == Some(INVENTORY)
}

/// An uploaded image's member Id: `Available-BIOS-1.15.1`, the version
/// kept to URL-safe characters.
fn upload_id(image: &Image) -> String {
    let version: String = image
        .version
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    format!(
        "Available-{}-{version}",
        image.component.as_str().to_ascii_uppercase()
    )
}

/// The member of an upload.
pub fn member_json(u: &Upload) -> Value {
    json!({
        "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
        "@odata.id": format!("{INVENTORY}/{}", u.id),
        "Id": u.id,
        "Name": format!("{} firmware (available)", u.image.component.as_str().to_ascii_uppercase()),
        "Version": u.image.version,
        "Updateable": true,
        "SoftwareId": u.image.component.as_str().to_ascii_uppercase(),
        "Status": { "State": "Enabled", "Health": "OK" },
    })
}

/// POST to the inventory: an image kept as an Available member.
pub async fn upload(State(st): State<AppState>, req: Request) -> Result<Response, ApiError> {
    if !stores(&st) {
        return Err(ApiError::MethodNotAllowed);
    }
    let headers = req.headers().clone();
    let collection = inventory::list_json(&st).await?;
    json::check_if_match(&headers, &collection, st.root_profile)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multipart::boundary(content_type).map_err(|_| ApiError::UnsupportedMediaType)?;
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .map_err(|_| ApiError::bad(Msg::new("UnrecognizedRequestBody", &[])))?;
    let parts = multipart::parse(&boundary, &body)
        .map_err(|_| ApiError::bad(Msg::new("MissingOrMalformedPart", &[])))?;
    let file = parts
        .iter()
        .find(|p| p.name == "file")
        .ok_or_else(|| ApiError::bad(Msg::new("PropertyMissing", &["file"])))?;
    let image = crate::firmware::parse(file.body).map_err(|e| {
        tracing::info!(error = %e, "uploaded firmware refused");
        ApiError::bad(Msg::new("MissingOrMalformedPart", &[]))
    })?;
    let upload = Upload {
        id: upload_id(&image),
        image,
        bytes: body.slice_ref(file.body),
    };
    let member = member_json(&upload);
    let location = format!("{INVENTORY}/{}", upload.id);
    tracing::info!(image = %upload.id, "firmware image uploaded");
    st.uploads.keep(upload);
    let mut r = Resource::plain(member, "GET, DELETE")
        .with_status(StatusCode::CREATED)
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

/// DELETE of an Available member.
pub async fn delete(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    match st.uploads.take(&id) {
        Some(_) => Ok(json::no_content()),
        None if st.uploads.list().is_empty() && !stores(&st) => Err(ApiError::MethodNotAllowed),
        None => Err(ApiError::NotFound(uri.path().to_string())),
    }
}

/// The upload an `ImageURI` names (its path, relative or not), if any.
pub fn named(st: &AppState, image_uri: &str) -> Option<Upload> {
    let path = image_uri
        .find(INVENTORY)
        .map(|i| &image_uri[i..])?
        .trim_end_matches('/');
    let id = path.strip_prefix(INVENTORY)?.strip_prefix('/')?;
    st.uploads.get(id)
}

/// The URIs of the uploads, for the collection.
pub fn members(st: &AppState) -> Vec<String> {
    st.uploads
        .list()
        .iter()
        .map(|u| format!("{INVENTORY}/{}", u.id))
        .collect()
}
