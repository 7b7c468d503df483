//! VirtualMedia (Cd and Floppy of each manager), reachable both under
//! `Managers/{id}/VirtualMedia` and `Systems/{id}/VirtualMedia`, with the
//! InsertMedia and EjectMedia actions. A backend that needs time (a real
//! download) answers with a Task.

use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::json::{self, JsonObject, Resource};
use super::{collection, AppState, Sys};
use crate::backend::Completion;
use crate::error::{ApiError, Msg};
use crate::model::{MediaImage, MediaSlot, System, TransferMethod, TransferProtocol};

const INSERT: &str = "VirtualMedia.InsertMedia";
const EJECT: &str = "VirtualMedia.EjectMedia";

pub fn router() -> Router<AppState> {
    let mut r = Router::new();
    for root in ["Managers", "Systems"] {
        r = r
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia"), get(list))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}"), get(member))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Actions/VirtualMedia.InsertMedia"), post(insert))
            .route(&format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Actions/VirtualMedia.EjectMedia"), post(eject));
    }
    r
}

/// `Systems/{id}` or `Managers/{id}`, whichever the request came through.
fn owner_of(st: &AppState, sys: &System, uri: &Uri) -> String {
    if uri.path().starts_with("/redfish/v1/Systems/") {
        format!("Systems/{}", sys.id)
    } else {
        format!("Managers/{}", st.manager_id(sys))
    }
}

async fn list(State(st): State<AppState>, Sys(sys): Sys, uri: Uri) -> Result<Resource, ApiError> {
    let base = format!("/redfish/v1/{}/VirtualMedia", owner_of(&st, &sys, &uri));
    let members = MediaSlot::ALL.iter().map(|s| format!("{base}/{s}"));
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

fn slot_of(slot: &str, uri: &Uri) -> Result<MediaSlot, ApiError> {
    MediaSlot::parse(slot).ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

fn media_json(sys: &System, slot: MediaSlot, owner: &str) -> Value {
    let m = sys.media(slot);
    let base = format!("/redfish/v1/{owner}/VirtualMedia/{slot}");
    let (types, name) = match slot {
        MediaSlot::Cd => (vec!["CD", "DVD"], "Virtual CD"),
        MediaSlot::Floppy => (vec!["Floppy", "USBStick"], "Virtual Removable Media"),
    };
    let image_name = m
        .image
        .as_deref()
        .and_then(|i| i.rsplit('/').next())
        .filter(|n| !n.is_empty());
    json!({
        "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia",
        "@odata.id": base,
        "Id": slot.as_str(),
        "Name": name,
        "MediaTypes": types,
        "ConnectedVia": if m.inserted { "URI" } else { "NotConnected" },
        "Image": m.image,
        "ImageName": image_name,
        "Inserted": m.inserted,
        "WriteProtected": m.write_protected,
        "TransferProtocolType": m.transfer_protocol.map(|p| p.as_str()),
        "TransferMethod": m.transfer_method.map(|p| p.as_str()),
        "UserName": m.user_name,
        "Status": { "State": "Enabled", "Health": "OK" },
        "Actions": {
            "#VirtualMedia.InsertMedia": { "target": format!("{base}/Actions/{INSERT}") },
            "#VirtualMedia.EjectMedia": { "target": format!("{base}/Actions/{EJECT}") },
        },
    })
}

async fn member(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let slot = slot_of(&slot, &uri)?;
    let profile = st.profile(&sys);
    Ok(Resource::new(
        media_json(&sys, slot, &owner_of(&st, &sys, &uri)),
        profile,
        "GET",
    ))
}

/// Validates InsertMedia's parameters into a `MediaImage`.
fn parse_insert(body: &serde_json::Map<String, Value>) -> Result<MediaImage, ApiError> {
    json::action_known(
        body,
        &[
            "Image",
            "Inserted",
            "WriteProtected",
            "TransferProtocolType",
            "TransferMethod",
            "UserName",
            "Password",
            "MediaType",
        ],
        INSERT,
    )?;
    let image = json::action_str(body, "Image", INSERT)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[INSERT, "Image"])))?;
    let scheme = image.split_once("://").map(|(s, _)| s.to_ascii_uppercase());
    let from_url = scheme.as_deref().and_then(TransferProtocol::parse);
    if from_url.is_none() || image.len() < 8 || image.chars().any(char::is_whitespace) {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueFormatError",
            &[image, "Image", INSERT],
        )));
    }
    let protocol = match json::action_str(body, "TransferProtocolType", INSERT)? {
        None => None,
        Some(p) => Some(TransferProtocol::parse(p).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[p, "TransferProtocolType", INSERT],
            ))
        })?),
    };
    if let (Some(p), Some(u)) = (protocol, from_url) {
        if p != u {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueFormatError",
                &[image, "Image", INSERT],
            )));
        }
    }
    let method = match json::action_str(body, "TransferMethod", INSERT)? {
        None => None,
        Some(m) => Some(TransferMethod::parse(m).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[m, "TransferMethod", INSERT],
            ))
        })?),
    };
    Ok(MediaImage {
        image: image.to_string(),
        inserted: json::action_bool(body, "Inserted", INSERT)?.unwrap_or(true),
        write_protected: json::action_bool(body, "WriteProtected", INSERT)?.unwrap_or(true),
        transfer_protocol: protocol.or(from_url),
        transfer_method: method,
        user_name: json::action_str(body, "UserName", INSERT)?.map(str::to_string),
        password: json::action_str(body, "Password", INSERT)?.map(str::to_string),
    })
}

async fn insert(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let slot = slot_of(&slot, &uri)?;
    let image = parse_insert(&body)?;
    let _guard = st.locks.lock(&sys.id).await;
    let sys = st.backend.system(&sys.id).await?;
    if sys.media(slot).inserted {
        return Err(ApiError::Conflict(format!(
            "{slot} of {} already holds media",
            sys.name
        )));
    }
    let target = format!(
        "/redfish/v1/{}/VirtualMedia/{slot}",
        owner_of(&st, &sys, &uri)
    );
    tracing::info!(system = %sys.name, %slot, image = %image.image, "insert media");
    match st.backend.insert_media(&sys.id, slot, image).await? {
        Completion::Done => Ok(json::no_content()),
        Completion::Running(work) => {
            let id = st.tasks.spawn(INSERT, &target, work);
            let task = st
                .tasks
                .get(&id)
                .ok_or_else(|| ApiError::Internal("task vanished".into()))?;
            Ok(super::tasks::accepted(&task).into_response())
        }
    }
}

async fn eject(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let slot = slot_of(&slot, &uri)?;
    json::action_known(&body, &[], EJECT)?;
    let _guard = st.locks.lock(&sys.id).await;
    st.backend.eject_media(&sys.id, slot).await?;
    tracing::info!(system = %sys.name, %slot, "eject media");
    Ok(json::no_content())
}
