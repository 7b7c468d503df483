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

/// A component kept in a BMC's repository (iLO's ComponentRepository)
/// under the file name it was uploaded with.
#[derive(Clone)]
pub struct Kept {
    pub id: String,
    pub filename: String,
    pub image: Image,
    pub bytes: Bytes,
    pub created: std::time::SystemTime,
}

/// Where an entry of a BMC's update task queue stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    Pending,
    InProgress,
    Complete,
    Exception,
}

/// An entry of a BMC's update task queue (iLO's UpdateTaskQueue).
#[derive(Debug, Clone)]
pub struct Queued {
    pub id: String,
    pub name: String,
    pub command: String,
    pub filename: Option<String>,
    pub updatable_by: Vec<String>,
    pub wait_secs: u64,
    pub tpm_override: bool,
    pub state: QueueState,
    /// The outcome's MessageId (`Success`, `VerificationFailed`…).
    pub result: &'static str,
    pub created: std::time::SystemTime,
    /// A run of the queue holds it (working on it, or waiting for what it
    /// needs).
    pub held: bool,
}

/// Most entries a BMC's update task queue holds.
pub const MAX_QUEUED: usize = 32;

/// A BMC's uploaded images, oldest first, its component repository and
/// update task queue, and until when each of its systems' BMC refuses
/// pushes after a restart.
#[derive(Default)]
pub struct Uploads {
    images: Mutex<Vec<Upload>>,
    not_ready: Mutex<HashMap<String, Instant>>,
    kept: Mutex<Vec<Kept>>,
    queue: Mutex<Vec<Queued>>,
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

    /// The repository's components, oldest first.
    pub fn kept(&self) -> Vec<Kept> {
        lock(&self.kept).clone()
    }

    /// Keeps `k` in the repository, replacing a component of the same
    /// file name; the oldest goes past [`MAX_UPLOADS`].
    pub fn keep_component(&self, k: Kept) {
        let mut v = lock(&self.kept);
        v.retain(|c| !c.filename.eq_ignore_ascii_case(&k.filename));
        if v.len() == MAX_UPLOADS {
            v.remove(0);
        }
        v.push(k);
    }

    /// Removes the component `id` from the repository.
    pub fn forget_component(&self, id: &str) -> Option<Kept> {
        let mut v = lock(&self.kept);
        let i = v.iter().position(|c| c.id == id)?;
        Some(v.remove(i))
    }

    /// The update task queue, oldest first.
    pub fn queue(&self) -> Vec<Queued> {
        lock(&self.queue).clone()
    }

    /// Queues `q`; `false` when the queue is full.
    pub fn enqueue(&self, q: Queued) -> bool {
        let mut v = lock(&self.queue);
        if v.len() == MAX_QUEUED {
            return false;
        }
        v.push(q);
        true
    }

    /// The first unfinished entry, held for the caller; `None` when none
    /// is left or another run holds it.
    pub fn take_next(&self) -> Option<Queued> {
        let mut v = lock(&self.queue);
        let q = v
            .iter_mut()
            .find(|q| !matches!(q.state, QueueState::Complete | QueueState::Exception))?;
        if q.held {
            return None;
        }
        q.held = true;
        Some(q.clone())
    }

    /// Moves queue entry `id` to `state`, saying `result`.
    pub fn queued_moved(&self, id: &str, state: QueueState, result: &'static str) {
        if let Some(q) = lock(&self.queue).iter_mut().find(|q| q.id == id) {
            q.state = state;
            q.result = result;
        }
    }

    /// Removes queue entry `id`.
    pub fn dequeue(&self, id: &str) -> Option<Queued> {
        let mut v = lock(&self.queue);
        let i = v.iter().position(|q| q.id == id)?;
        Some(v.remove(i))
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
