//! iLO's own side of VirtualMedia (`[hpe]` profiles): a device's
//! `Oem.Hpe` (`BootOnNextServerReset`, shown and taken by PATCH: the host
//! boots that CD once at its next start) and the
//! `#HpeiLOVirtualMedia.InsertVirtualMedia` / `EjectVirtualMedia`
//! actions, iLO's own insert and eject, which are the standard ones
//! (`api/vmedia`) under iLO's names.

use axum::extract::Path;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::api::boot_rules::boot_refused;
use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, OptionalJsonObject, Resource};
use crate::api::vmedia::{boots_next, eject, insert, media_json};
use crate::api::{AppState, State, Sys};
use crate::bmc::BootRequest;
use crate::model::{BootTarget, MediaSlot, System};

pub(super) const INSERT: &str = "HpeiLOVirtualMedia.InsertVirtualMedia";
pub(super) const EJECT: &str = "HpeiLOVirtualMedia.EjectVirtualMedia";

/// iLO's insert and eject, under the System and the Manager alike.
pub(super) fn router() -> Router {
    let mut r = Router::new();
    for root in ["Managers", "Systems"] {
        let base = format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Actions/Oem/Hpe");
        r = r
            .route(&format!("{base}/{INSERT}"), post(hpe_insert))
            .route(&format!("{base}/{EJECT}"), post(hpe_eject));
    }
    r
}

/// A VirtualMedia device's `Oem.Hpe`: whether the host boots it at its
/// next start, and iLO's own insert and eject actions.
pub(in crate::api) fn media_parts(
    st: &AppState,
    sys: &System,
    base: &str,
    slot: MediaSlot,
    v: &mut Value,
) {
    if st.profile(sys).hpe.is_none() {
        return;
    }
    v["Oem"] = json!({
        "Hpe": {
            "@odata.type": "#HpeiLOVirtualMedia.v2_2_0.HpeiLOVirtualMedia",
            "BootOnNextServerReset": boots_next(sys, slot),
            "Actions": {
                format!("#{INSERT}"): { "target": format!("{base}/Actions/Oem/Hpe/{INSERT}") },
                format!("#{EJECT}"): { "target": format!("{base}/Actions/Oem/Hpe/{EJECT}") },
            },
        }
    });
}

/// iLO's PATCH of a VirtualMedia device: `{"Oem": {"Hpe":
/// {"BootOnNextServerReset": bool}}}`, the one property it takes there.
/// `true` makes the CD the host's one-time boot device (in the boot mode
/// it has), `false` withdraws that.
pub(in crate::api) async fn patch_boot_next(
    st: &AppState,
    sys: &System,
    (slot, id): (MediaSlot, &'static str),
    uri: &Uri,
    headers: &axum::http::HeaderMap,
    body: &serde_json::Map<String, Value>,
) -> Result<Response, ApiError> {
    const PROP: &str = "Oem/Hpe/BootOnNextServerReset";
    let profile = st.profile(sys);
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let current = media_json(st, sys, (slot, id), uri, false);
    json::check_if_match(headers, &current, profile)?;
    if body.is_empty() {
        return Err(ApiError::bad(Msg::new("EmptyJSON", &[])));
    }
    if let Some(k) = body.keys().find(|k| *k != "Oem") {
        return Err(ApiError::bad(
            Msg::new("PropertyNotWritable", &[k]).about(k),
        ));
    }
    let hpe = body["Oem"].get("Hpe").and_then(Value::as_object);
    let Some(hpe) = hpe.filter(|h| h.len() == 1 && h.contains_key("BootOnNextServerReset")) else {
        return Err(ApiError::bad(
            Msg::new("PropertyUnknown", &["Oem"]).about("Oem"),
        ));
    };
    let want = match &hpe["BootOnNextServerReset"] {
        Value::Bool(b) => *b,
        other => {
            let v = other.to_string();
            return Err(ApiError::bad(
                Msg::new("PropertyValueTypeError", &[&v, "BootOnNextServerReset"]).about(PROP),
            ));
        }
    };
    if want && slot != MediaSlot::Cd {
        return Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &["true", "BootOnNextServerReset"]).about(PROP),
        ));
    }
    // Boot from this CD once, or (false) no longer: the one boot decision.
    let req = if want {
        Some(BootRequest::once(BootTarget::Cd))
    } else {
        boots_next(sys, slot).then(BootRequest::off)
    };
    let sys = match req {
        Some(req) => {
            tracing::info!(system = %sys.name, %slot, boot_next = want, "BootOnNextServerReset");
            st.core
                .set_boot(&locked, &req)
                .await
                .map_err(|e| boot_refused(e, profile))?
        }
        None => locked.sys.clone(),
    };
    Ok(Resource::new(
        media_json(st, &sys, (slot, id), uri, false),
        profile,
        "GET, PATCH",
    )
    .into_response())
}

/// iLO's own insert (`#HpeiLOVirtualMedia.InsertVirtualMedia`): the
/// standard insert, where the profile has HPE's extensions.
async fn hpe_insert(
    st: State<AppState>,
    sys: Sys,
    path: Path<(String, String)>,
    uri: Uri,
    body: JsonObject,
) -> Result<Response, ApiError> {
    if st.profile(&sys.0).hpe.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    insert(st, sys, path, uri, body).await
}

/// iLO's own eject (`#HpeiLOVirtualMedia.EjectVirtualMedia`).
async fn hpe_eject(
    st: State<AppState>,
    sys: Sys,
    path: Path<(String, String)>,
    uri: Uri,
    body: OptionalJsonObject,
) -> Result<Response, ApiError> {
    if st.profile(&sys.0).hpe.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    eject(st, sys, path, uri, body).await
}
