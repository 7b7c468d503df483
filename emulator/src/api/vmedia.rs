//! VirtualMedia (a CD and a removable device per machine), reachable under
//! `Managers/{id}/VirtualMedia` and `Systems/{id}/VirtualMedia` (`Cd` and
//! `Floppy`, or the Ids and owners a profile gives them), with the
//! InsertMedia and EjectMedia actions. A backend that needs time (a real
//! download) answers with a Task.

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::input::{self, Rule};
use super::json::{self, JsonObject, OptionalJsonObject, Resource};
use super::{collection, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::backend::Completion;
use crate::model::{
    BootTarget, Change, MediaImage, MediaSlot, MediaState, OverrideEnabled, System, TransferMethod,
    TransferProtocol,
};

const INSERT: &str = "VirtualMedia.InsertMedia";
const EJECT: &str = "VirtualMedia.EjectMedia";
/// The longest UserName or Password of InsertMedia.
const CREDENTIAL_MAX: usize = 256;

/// The key an insert's task holds: one insert at a time per slot, however
/// the slot is reached (under its System or its Manager).
fn slot_key(sys: &System, slot: MediaSlot) -> String {
    // Under the prefix a start waits for (`bmc::media_work_of`).
    format!("{}{slot}", crate::bmc::media_work_of(sys))
}

/// 409 while an insert into the slot is under way.
fn check_not_inserting(st: &AppState, sys: &System, slot: MediaSlot) -> Result<(), ApiError> {
    if st.tasks.busy(&slot_key(sys, slot)) {
        return Err(ApiError::Conflict(format!(
            "{slot} of {} is being inserted",
            sys.name
        )));
    }
    Ok(())
}

pub fn router() -> Router {
    let mut r = Router::new();
    for root in ["Managers", "Systems"] {
        r = r
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia"), get(list))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}"), get(member).patch(patch_member))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Actions/VirtualMedia.InsertMedia"), post(insert))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Actions/VirtualMedia.EjectMedia"), post(eject));
    }
    r
}

/// Whether the request came through `Systems/{id}` (else `Managers/{id}`).
fn under_system(uri: &Uri) -> bool {
    uri.path().starts_with("/redfish/v1/Systems/")
}

/// `Systems/{id}` or `Managers/{id}`, whichever the request came through.
pub(super) fn owner_of(st: &AppState, sys: &System, uri: &Uri) -> String {
    if under_system(uri) {
        format!("Systems/{}", sys.id)
    } else {
        format!("Managers/{}", st.manager_id(sys))
    }
}

/// The device Ids the profile gives under the owner the request came
/// through (the CD's, then the removable device's); 404 where it has none.
fn ids_of(st: &AppState, sys: &System, uri: &Uri) -> Result<[&'static str; 2], ApiError> {
    st.profile(sys)
        .vmedia
        .ids(under_system(uri))
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

/// Whether `sys` has VirtualMedia under its System (`under_system`) or
/// its Manager, for the links to it.
pub fn shown(st: &AppState, sys: &System, under_system: bool) -> bool {
    st.features.vmedia() && st.profile(sys).vmedia.ids(under_system).is_some()
}

async fn list(State(st): State<AppState>, Sys(sys): Sys, uri: Uri) -> Result<Resource, ApiError> {
    let base = format!("/redfish/v1/{}/VirtualMedia", owner_of(&st, &sys, &uri));
    let members = ids_of(&st, &sys, &uri)?
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| format!("{base}/{s}"));
    Ok(Resource::plain(
        collection(
            "VirtualMediaCollection",
            &base,
            "Virtual Media Collection",
            members,
        ),
        "GET",
    ))
}

/// The device a URL's `{slot}` names, and its Id.
pub(super) fn slot_of(
    st: &AppState,
    sys: &System,
    slot: &str,
    uri: &Uri,
) -> Result<(MediaSlot, &'static str), ApiError> {
    let [cd, removable] = ids_of(st, sys, uri)?;
    if slot.is_empty() {
        Err(ApiError::NotFound(uri.path().to_string()))
    } else if slot == cd {
        Ok((MediaSlot::Cd, cd))
    } else if slot == removable {
        Ok((MediaSlot::Floppy, removable))
    } else {
        Err(ApiError::NotFound(uri.path().to_string()))
    }
}

pub(super) fn media_json(
    st: &AppState,
    sys: &System,
    (slot, id): (MediaSlot, &str),
    uri: &Uri,
    by_patch: bool,
) -> Value {
    let m = sys.bmc.media(slot);
    let owner = owner_of(st, sys, uri);
    let base = format!("/redfish/v1/{owner}/VirtualMedia/{id}");
    let vm = &st.profile(sys).vmedia;
    let (mut types, mut name) = match slot {
        MediaSlot::Cd => (vec!["CD", "DVD"], "Virtual CD"),
        MediaSlot::Floppy => (vec!["Floppy", "USBStick"], "Virtual Removable Media"),
    };
    if let Some(devices) = &vm.devices {
        let (n, t) = &devices[(slot == MediaSlot::Floppy) as usize];
        name = n;
        types = t.iter().map(String::as_str).collect();
    }
    if under_system(uri) && !vm.system_media_types.is_empty() {
        types = vm.system_media_types.iter().map(String::as_str).collect();
    }
    let mut v = json!({
        "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia",
        "@odata.id": base,
        "Id": id,
        "Name": name,
        "MediaTypes": types,
    });
    for (k, live) in media_live(m) {
        v[k] = live;
    }
    v["Status"] = json!({ "State": "Enabled", "Health": "OK" });
    v["VerifyCertificate"] = json!(sys.bmc.media_tls(slot).verify.unwrap_or(st.media_verifies));
    v["Certificates"] = json!({ "@odata.id": format!("{base}/Certificates") });
    if !by_patch {
        v["Actions"] = json!({
            "#VirtualMedia.InsertMedia": { "target": format!("{base}/Actions/{INSERT}") },
            "#VirtualMedia.EjectMedia": { "target": format!("{base}/Actions/{EJECT}") },
        });
    }
    super::vendor::media_parts(st, sys, &base, slot, &mut v);
    v
}

/// A device's live properties: what its slot holds (a replayed capture's
/// devices show those of them it has).
pub(crate) fn media_live(m: &crate::model::MediaState) -> [(&'static str, Value); 8] {
    let image_name = m
        .image
        .as_deref()
        .and_then(|i| i.rsplit('/').next())
        .filter(|n| !n.is_empty());
    [
        (
            "ConnectedVia",
            json!(if m.inserted { "URI" } else { "NotConnected" }),
        ),
        ("Image", json!(m.image)),
        ("ImageName", json!(image_name)),
        ("Inserted", json!(m.inserted)),
        ("WriteProtected", json!(m.write_protected)),
        (
            "TransferProtocolType",
            json!(m.transfer_protocol.map(|p| p.as_str())),
        ),
        (
            "TransferMethod",
            json!(m.transfer_method.map(|p| p.as_str())),
        ),
        ("UserName", json!(m.user_name)),
    ]
}

/// Whether the host boots this device once at its next start (iLO's
/// `BootOnNextServerReset`): the CD, when a one-time override names it.
pub(super) fn boots_next(sys: &System, slot: MediaSlot) -> bool {
    let b = &sys.bmc.boot;
    slot == MediaSlot::Cd && b.target == BootTarget::Cd && b.enabled == OverrideEnabled::Once
}

async fn member(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let slot = slot_of(&st, &sys, &slot, &uri)?;
    let profile = st.profile(&sys);
    let by_patch = profile.vmedia.insert_by_patch;
    Ok(Resource::new(
        media_json(&st, &sys, slot, &uri, by_patch),
        profile,
        // Every device takes a PATCH of VerifyCertificate.
        "GET, PATCH",
    ))
}

/// Insert and eject by PATCH, for profiles without the actions (Lenovo):
/// `{"Image": URL, "Inserted": true, ...}` attaches (without `Inserted:
/// true` the image is not attached, as on that firmware), `{"Image": null,
/// "Inserted": false}` detaches.
async fn patch_member(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    headers: axum::http::HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let (slot, id) = slot_of(&st, &sys, &slot, &uri)?;
    let profile = st.profile(&sys);
    let mut body = body;
    if let Some(v) = body.remove("VerifyCertificate") {
        // Every device takes this one, whatever else its PATCH does.
        let Some(verify) = v.as_bool() else {
            let shown = super::input::echo(&v.to_string());
            return Err(ApiError::bad(
                Msg::new("PropertyValueTypeError", &[&shown, "VerifyCertificate"])
                    .about("VerifyCertificate"),
            ));
        };
        let _guard = st.core.locks.lock(&sys.id).await;
        let sys = st.core.backend.system(&sys.id).await?;
        let current = media_json(&st, &sys, (slot, id), &uri, profile.vmedia.insert_by_patch);
        json::check_if_match(&headers, &current, profile)?;
        if !body.is_empty()
            && !profile.vmedia.insert_by_patch
            && !profile.media_patch_sets_boot_next()
        {
            return Err(not_writable(&body, &current));
        }
        let tls = crate::model::MediaTls {
            verify: Some(verify),
            ..sys.bmc.media_tls(slot).clone()
        };
        st.core
            .backend
            .apply(&sys.id, vec![Change::MediaTls(slot, tls)])
            .await?;
        tracing::info!(system = %sys.name, %slot, verify, "VerifyCertificate set");
        if body.is_empty() {
            let sys = st.core.backend.system(&sys.id).await?;
            return Ok(Resource::new(
                media_json(&st, &sys, (slot, id), &uri, profile.vmedia.insert_by_patch),
                profile,
                "GET, PATCH",
            )
            .into_response());
        }
    }
    if profile.media_patch_sets_boot_next() && !profile.vmedia.insert_by_patch {
        return super::vendor::media_oem_patch(&st, &sys, (slot, id), &uri, &headers, &body).await;
    }
    if !profile.vmedia.insert_by_patch {
        let sys = st.core.backend.system(&sys.id).await?;
        let current = media_json(&st, &sys, (slot, id), &uri, false);
        return Err(if body.is_empty() {
            ApiError::bad(Msg::new("EmptyJSON", &[]))
        } else {
            not_writable(&body, &current)
        });
    }
    let _guard = st.core.locks.lock(&sys.id).await;
    let sys = st.core.backend.system(&sys.id).await?;
    let current = media_json(&st, &sys, (slot, id), &uri, true);
    json::check_if_match(&headers, &current, profile)?;
    patch_media(&st, &sys, slot, &body).await?;
    let sys = st.core.backend.system(&sys.id).await?;
    Ok(Resource::new(
        media_json(&st, &sys, (slot, id), &uri, true),
        profile,
        "GET, PATCH",
    )
    .into_response())
}

/// A PATCH that inserts or ejects (insert by PATCH, as Lenovo's XCC
/// takes it), checked whole; the caller holds the system's lock.
pub(super) async fn patch_media(
    st: &AppState,
    sys: &System,
    slot: MediaSlot,
    body: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad(Msg::new("EmptyJSON", &[])));
    }
    let detach = body.get("Image").is_some_and(Value::is_null)
        || body.get("Inserted") == Some(&Value::Bool(false));
    if detach {
        for k in body.keys() {
            if !matches!(k.as_str(), "Image" | "Inserted") {
                return Err(ApiError::bad(Msg::new("PropertyUnknown", &[k]).about(k)));
            }
        }
        check_not_inserting(st, sys, slot)?;
        st.core
            .backend
            .apply(&sys.id, vec![Change::Media(slot, MediaState::default())])
            .await?;
        tracing::info!(system = %sys.name, %slot, "eject media (PATCH)");
    } else {
        let image = parse_media(body, "VirtualMedia", false)?;
        check_family(st, &image, true)?;
        if body.get("Inserted") == Some(&Value::Bool(true)) {
            if sys.bmc.media(slot).inserted {
                return Err(ApiError::Conflict(format!(
                    "{slot} of {} already holds media",
                    sys.name
                )));
            }
            let _claim = st.tasks.claim(&slot_key(sys, slot))?;
            tracing::info!(system = %sys.name, %slot, image = %image.image, "insert media (PATCH)");
            if let Completion::Running(work) = st
                .core
                .backend
                .insert_media(&sys.id, slot, image.checked_by(sys.bmc.media_tls(slot)))
                .await?
            {
                // No task monitor on this route: the PATCH answers when done.
                work.await?;
            }
        }
    }
    Ok(())
}

/// A PATCH of properties this device does not let a client set: each
/// read-only one `PropertyNotWritable`, each unknown one `PropertyUnknown`.
fn not_writable(body: &serde_json::Map<String, Value>, current: &Value) -> ApiError {
    ApiError::BadRequest(
        body.keys()
            .map(|k| match current.get(k) {
                Some(_) => Msg::new("PropertyNotWritable", &[k]).about(k),
                None => Msg::new("PropertyUnknown", &[k]).about(k),
            })
            .collect(),
    )
}

/// An image URL naming an address of the family the BMC's network lacks
/// (`--media-ip-family`) is refused before anything changes: in InsertMedia
/// as a parameter the implementation cannot take, in a PATCH (`by_patch`)
/// as a property value that is not valid.
fn check_family(st: &AppState, image: &MediaImage, by_patch: bool) -> Result<(), ApiError> {
    match st.media_ip_family.and_then(|f| f.refuses(&image.image)) {
        None => Ok(()),
        Some(why) => {
            tracing::info!(image = %image.image, %why, "image URL refused");
            let msg = if by_patch {
                Msg::new("PropertyValueError", &["Image"])
            } else {
                Msg::new("ActionParameterValueConflict", &["Image", &image.image])
            };
            Err(ApiError::bad(msg.about("Image")))
        }
    }
}

/// Validates InsertMedia's parameters into a `MediaImage`.
fn parse_insert(body: &serde_json::Map<String, Value>) -> Result<MediaImage, ApiError> {
    parse_media(body, INSERT, true)
}

/// The media parameters of InsertMedia (`action`) or of a PATCH of the
/// VirtualMedia resource (messages name `what`).
fn parse_media(
    body: &serde_json::Map<String, Value>,
    what: &str,
    action: bool,
) -> Result<MediaImage, ApiError> {
    if !action {
        for k in body.keys() {
            if k != "Image" && !crate::profile::INSERT_PARAMS.contains(&k.as_str()) {
                return Err(ApiError::bad(Msg::new("PropertyUnknown", &[k]).about(k)));
            }
        }
        if body.get("Image").and_then(Value::as_str).is_none() {
            return Err(ApiError::bad(
                Msg::new("PropertyMissing", &["Image"]).about("Image"),
            ));
        }
    }
    let known: Vec<&str> = ["Image", "MediaType"]
        .into_iter()
        .chain(crate::profile::INSERT_PARAMS.iter().copied())
        .collect();
    json::action_known(body, &known, what)?;
    let image = json::action_str(body, "Image", what)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[what, "Image"])))?;
    input::parameter(what, "Image", image, Rule::URI).map_err(ApiError::bad)?;
    let mut bad = Vec::new();
    for p in ["UserName", "Password"] {
        if let Some(v) = json::action_str(body, p, what)? {
            if let Err(m) = input::parameter(
                what,
                p,
                v,
                Rule::Text {
                    max: CREDENTIAL_MAX,
                },
            ) {
                bad.push(m);
            }
        }
    }
    if !bad.is_empty() {
        return Err(ApiError::BadRequest(bad));
    }
    let scheme = image.split_once("://").map(|(s, _)| s.to_ascii_uppercase());
    let from_url = scheme.as_deref().and_then(TransferProtocol::parse);
    if from_url.is_none() || image.len() < 8 || image.chars().any(char::is_whitespace) {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueFormatError",
            &[image, "Image", what],
        )));
    }
    let protocol = match json::action_str(body, "TransferProtocolType", what)? {
        None => None,
        Some(p) => Some(TransferProtocol::parse(p).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[p, "TransferProtocolType", what],
            ))
        })?),
    };
    if let (Some(p), Some(u)) = (protocol, from_url) {
        if p != u {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueFormatError",
                &[image, "Image", what],
            )));
        }
    }
    let method = match json::action_str(body, "TransferMethod", what)? {
        None => None,
        Some(m) => Some(TransferMethod::parse(m).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[m, "TransferMethod", what],
            ))
        })?),
    };
    Ok(MediaImage {
        image: image.to_string(),
        inserted: json::action_bool(body, "Inserted", what)?.unwrap_or(true),
        write_protected: json::action_bool(body, "WriteProtected", what)?.unwrap_or(true),
        transfer_protocol: protocol.or(from_url),
        transfer_method: method,
        user_name: json::action_str(body, "UserName", what)?.map(str::to_string),
        password: json::action_str(body, "Password", what)?.map(str::to_string),
        verify: None,
        cas: Vec::new(),
    })
}

pub(super) async fn insert(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let (slot, id) = slot_of(&st, &sys, &slot, &uri)?;
    if st.profile(&sys).vmedia.insert_by_patch {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let target = format!(
        "/redfish/v1/{}/VirtualMedia/{id}",
        owner_of(&st, &sys, &uri)
    );
    insert_into(&st, &sys, slot, &target, &body).await
}

/// InsertMedia of the device `target` (`slot` of `sys`), its parameters
/// checked whole: done, or a task while the backend downloads.
pub(super) async fn insert_into(
    st: &AppState,
    sys: &System,
    slot: MediaSlot,
    target: &str,
    body: &serde_json::Map<String, Value>,
) -> Result<Response, ApiError> {
    let profile = st.profile(sys);
    let mut refused: Vec<Msg> = profile
        .vmedia
        .insert_refuses
        .iter()
        .filter(|p| body.contains_key(p.as_str()))
        .map(|p| Msg::new("ActionParameterNotSupported", &[p, INSERT]).about(p))
        .collect();
    refused.extend(
        profile
            .vmedia
            .insert_requires
            .iter()
            .filter(|p| !body.contains_key(p.as_str()))
            .map(|p| Msg::new("ActionParameterMissing", &[INSERT, p]).about(p)),
    );
    if !refused.is_empty() {
        return Err(ApiError::BadRequest(refused));
    }
    let image = parse_insert(body)?;
    check_family(st, &image, false)?;
    let _guard = st.core.locks.lock(&sys.id).await;
    let sys = st.core.backend.system(&sys.id).await?;
    if sys.bmc.media(slot).inserted {
        return Err(ApiError::Conflict(format!(
            "{slot} of {} already holds media",
            sys.name
        )));
    }
    // Held from here until the insert is done (or failed): a concurrent
    // insert is refused, not raced.
    let claim = st.tasks.claim(&slot_key(&sys, slot))?;
    tracing::info!(system = %sys.name, %slot, image = %image.image, "insert media");
    match st
        .core
        .backend
        .insert_media(&sys.id, slot, image.checked_by(sys.bmc.media_tls(slot)))
        .await?
    {
        Completion::Done => Ok(json::no_content()),
        Completion::Running(work) => {
            let id = st
                .tasks
                .spawn(claim, INSERT, target, work, st.events.clone());
            let task = st
                .tasks
                .get(&id)
                .ok_or_else(|| ApiError::Internal("task vanished".into()))?;
            Ok(super::tasks::accepted(&task).into_response())
        }
    }
}

pub(super) async fn eject(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    OptionalJsonObject(body): OptionalJsonObject,
) -> Result<Response, ApiError> {
    let (slot, _) = slot_of(&st, &sys, &slot, &uri)?;
    let profile = st.profile(&sys);
    if profile.vmedia.insert_by_patch {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    // iLO wants the action's (empty) JSON object.
    let body = match body {
        Some(b) => b,
        None if profile.vmedia.eject_needs_body => return Err(ApiError::UnsupportedMediaType),
        None => serde_json::Map::new(),
    };
    eject_from(&st, &sys, slot, &body).await
}

/// EjectMedia of `slot` of `sys` (refused while an insert runs).
pub(super) async fn eject_from(
    st: &AppState,
    sys: &System,
    slot: MediaSlot,
    body: &serde_json::Map<String, Value>,
) -> Result<Response, ApiError> {
    json::action_known(body, &[], EJECT)?;
    let _guard = st.core.locks.lock(&sys.id).await;
    check_not_inserting(st, sys, slot)?;
    st.core
        .backend
        .apply(&sys.id, vec![Change::Media(slot, MediaState::default())])
        .await?;
    tracing::info!(system = %sys.name, %slot, "eject media");
    Ok(json::no_content())
}
