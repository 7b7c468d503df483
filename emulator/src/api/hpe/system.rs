//! iLO's System extensions (`Oem.Hpe`): `PostState`, live (`PowerOff`,
//! `InPost`, `InPostDiscoveryComplete`, `FinishedPost`: the host's POST
//! after a start lasts the profile's `power.post_secs`), the
//! `#HpeComputerSystemExt.PowerButton` action (`PushType` `Press`, a press
//! of the power button; `PressAndHold`, held until the host is off), and
//! `Bios` (`UefiClass`, the ROM's version), with the inventory's and the
//! RAID configuration's links.
//!
//! Shapes from HPE's iLO 5 Redfish reference and proliantutils 2.16.3
//! (`redfish/resources/system/system.py`).

use crate::api::State;
use axum::http::Uri;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject};
use crate::api::{AppState, Sys};
use crate::model::{PowerState, ResetType, System};
use crate::profile::Profile;

const POWER_BUTTON: &str = "HpeComputerSystemExt.PowerButton";
const PUSH_TYPES: &[&str] = &["Press", "PressAndHold"];

pub(super) fn router() -> Router {
    Router::new().route(
        &format!("/redfish/v1/Systems/{{id}}/Actions/Oem/Hpe/{POWER_BUTTON}"),
        post(power_button),
    )
}

/// Where the host is in its start, as iLO's `Oem.Hpe.PostState` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostState {
    PowerOff,
    InPost,
    InPostDiscoveryComplete,
    FinishedPost,
}

impl PostState {
    pub fn as_str(self) -> &'static str {
        match self {
            PostState::PowerOff => "PowerOff",
            PostState::InPost => "InPost",
            PostState::InPostDiscoveryComplete => "InPostDiscoveryComplete",
            PostState::FinishedPost => "FinishedPost",
        }
    }
}

/// The host's POST state now: off; in the first two thirds of the POST
/// window after a start, in POST; in its last third, past device
/// discovery; after it, finished. `None` where the profile has no `[hpe]`.
pub fn post_state(st: &AppState, sys: &System) -> Option<PostState> {
    let profile = st.profile(sys);
    profile.hpe.as_ref()?;
    if sys.power != PowerState::On {
        return Some(PostState::PowerOff);
    }
    let secs = profile.power.post_secs;
    let early = secs - secs / 3;
    Some(if st.core.power_clock.within(&sys.id, early, true) {
        PostState::InPost
    } else if st.core.power_clock.within(&sys.id, secs, true) {
        PostState::InPostDiscoveryComplete
    } else {
        PostState::FinishedPost
    })
}

/// Adds the System's `Oem.Hpe` live parts to `v` (over the profile's
/// static `[oem.system.Hpe]`).
pub(in crate::api) fn system_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    let (Some(hpe), Some(post)) = (&profile.hpe, post_state(st, sys)) else {
        return;
    };
    let base = format!("/redfish/v1/Systems/{}", sys.id);
    let oem = &mut v["Oem"]["Hpe"];
    if oem.get("@odata.type").is_none() {
        oem["@odata.type"] = json!("#HpeComputerSystemExt.v2_13_0.HpeComputerSystemExt");
    }
    oem["PostState"] = json!(post.as_str());
    oem["Actions"] = json!({
        format!("#{POWER_BUTTON}"): {
            "target": format!("{base}/Actions/Oem/Hpe/{POWER_BUTTON}"),
            "PushType@Redfish.AllowableValues": PUSH_TYPES,
        }
    });
    oem["Bios"] = json!({
        "UefiClass": hpe.uefi_class,
        "Current": { "VersionString": profile.bios_version },
    });
    super::inventory::system_links(sys, v);
    super::raid::system_parts(sys, v);
}

/// `PushType: Press` presses the power button (a host that is off
/// starts; one that is on is asked to shut down); `PressAndHold` holds
/// it until the host is off.
async fn power_button(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    if st.profile(&sys).hpe.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    json::action_known(&body, &["PushType"], POWER_BUTTON)?;
    let push = json::action_str(&body, "PushType", POWER_BUTTON)?.ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterMissing",
            &[POWER_BUTTON, "PushType"],
        ))
    })?;
    let reset = match push {
        "Press" => Some(ResetType::PushPowerButton),
        "PressAndHold" => (sys.power != PowerState::Off).then_some(ResetType::ForceOff),
        other => {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[other, "PushType", POWER_BUTTON],
            )))
        }
    };
    tracing::info!(system = %sys.name, push, "power button");
    if let Some(reset) = reset {
        crate::api::systems::power_action_response(&st, &sys, reset).await?;
    }
    Ok(json::no_content())
}
