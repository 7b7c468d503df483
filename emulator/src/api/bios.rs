//! Bios with a `@Redfish.Settings` object: PATCHes to `Bios/Settings` stage
//! attributes that the next reset applies (SupportedApplyTimes: OnReset),
//! as real BMCs do; `Bios.ResetBios` stages the factory defaults.

use std::collections::BTreeMap;

use crate::api::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use super::json::{self, JsonObject, Resource};
use super::patch::SysPatch;
use super::patch::{writable, Kind};
use super::{link, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::model::{Change, System};
use crate::profile::Profile;

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/Bios", get(bios))
        .route(
            "/redfish/v1/Systems/{id}/Bios/Settings",
            get(settings).patch(patch_settings).post(post_settings),
        )
        .route(
            "/redfish/v1/Systems/{id}/Bios/Actions/Bios.ResetBios",
            post(reset_bios),
        )
}

/// The apply times `@Redfish.Settings` advertises for `Bios/Settings`
/// (staged attributes take effect at the next reset).
const APPLY_TIMES: &[&str] = &["OnReset"];
const SETTINGS_APPLY_TIME: &str = "@Redfish.SettingsApplyTime";

/// What is wrong with a `@Redfish.SettingsApplyTime` annotation: it must
/// be an object whose `ApplyTime` is one of `supported` (the resource's
/// `SupportedApplyTimes`); messages name the path.
fn check_apply_time(apply: &Value, supported: &[&str]) -> Vec<Msg> {
    let at = |k: &str| format!("{SETTINGS_APPLY_TIME}/{}", super::input::echo(k));
    let Some(obj) = apply.as_object() else {
        let shown = super::input::echo(&json::shown(apply));
        return vec![
            Msg::new("PropertyValueTypeError", &[&shown, SETTINGS_APPLY_TIME])
                .about(SETTINGS_APPLY_TIME),
        ];
    };
    let mut errors = Vec::new();
    for (k, v) in obj {
        let path = at(k);
        match k.as_str() {
            "@odata.type" => {}
            "ApplyTime" => match v.as_str() {
                Some(t) if supported.contains(&t) => {}
                Some(t) => errors.push(
                    Msg::new("PropertyValueNotInList", &[&super::input::echo(t), &path])
                        .about(&path),
                ),
                None => {
                    let shown = super::input::echo(&json::shown(v));
                    errors.push(Msg::new("PropertyValueTypeError", &[&shown, &path]).about(&path))
                }
            },
            _ => errors.push(Msg::new("PropertyUnknown", &[&path]).about(&path)),
        }
    }
    if !obj.contains_key("ApplyTime") {
        let path = at("ApplyTime");
        errors.push(Msg::new("PropertyMissing", &[&path]).about(&path));
    }
    errors
}

/// The settings object. An iLO's shows the whole set as the next start
/// will have it (current values, staged ones over them, and the machine's
/// own), where proliantutils reads the pending `BootMode`; elsewhere only
/// what is staged.
fn settings_json(sys: &System, profile: &Profile) -> Value {
    let attributes = match profile.bios_settings_show_next_start() {
        true => {
            let mut all = sys.bmc.bios.current.clone();
            all.extend(sys.bmc.bios.pending.clone());
            for (k, v) in machine_attributes(sys) {
                all.insert(k.to_string(), json!(v));
            }
            json!(all)
        }
        false => json!(sys.bmc.bios.pending),
    };
    json!({
        "@odata.type": "#Bios.v1_2_0.Bios",
        "@odata.id": format!("/redfish/v1/Systems/{}/Bios/Settings", sys.id),
        "Id": "Settings",
        "Name": "BIOS Pending Settings",
        "AttributeRegistry": super::bios_registry::REGISTRY,
        "Attributes": attributes,
    })
}

async fn bios(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    let base = format!("/redfish/v1/Systems/{}/Bios", sys.id);
    let pending_etag = json::etag_header(&settings_json(&sys, profile), profile);
    let mut settings = json!({
        "@odata.type": "#Settings.v1_4_0.Settings",
        "SettingsObject": link(&format!("{base}/Settings")),
        "SupportedApplyTimes": APPLY_TIMES,
    });
    if let Some(tag) = pending_etag {
        settings["ETag"] = json!(tag);
    }
    let mut body = json!({
        "@odata.type": "#Bios.v1_2_0.Bios",
        "@odata.id": base,
        "Id": "Bios",
        "Name": "BIOS Configuration Current Settings",
        "AttributeRegistry": super::bios_registry::REGISTRY,
        "Attributes": sys.bmc.bios.current,
        "@Redfish.Settings": settings,
        "Actions": {
            "#Bios.ResetBios": { "target": format!("{base}/Actions/Bios.ResetBios") },
        },
    });
    super::vendor::bios_parts(&st, &sys, profile, &mut body);
    Ok(Resource::new(body, profile, "GET"))
}

/// The attributes iLO's BIOS shows of the machine itself: `BootMode`
/// (`Uefi`, `LegacyBios`) and `UefiOptimizedBoot`. They follow the
/// machine's boot mode (`BootSourceOverrideMode`); staging them is
/// refused (`validate`).
pub(super) const MACHINE_ATTRIBUTES: &[&str] = &["BootMode", "UefiOptimizedBoot"];

pub(super) fn machine_attributes(sys: &System) -> [(&'static str, &'static str); 2] {
    let uefi = sys.uefi();
    [
        ("BootMode", if uefi { "Uefi" } else { "LegacyBios" }),
        (
            "UefiOptimizedBoot",
            if uefi { "Enabled" } else { "Disabled" },
        ),
    ]
}

/// The methods `Bios/Settings` takes: iLO's takes a POST too (proliantutils
/// POSTs `UrlBootFile` there).
fn settings_allow(st: &AppState, sys: &System) -> &'static str {
    if st.profile(sys).bios_settings_take_post() {
        "GET, PATCH, POST"
    } else {
        "GET, PATCH"
    }
}

async fn settings(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    Ok(Resource::new(
        settings_json(&sys, profile),
        profile,
        settings_allow(&st, &sys),
    ))
}

/// iLO's POST to the settings object: the same as a PATCH.
async fn post_settings(st: State<AppState>, req: SysPatch) -> Result<Response, ApiError> {
    let sys = st.core.backend.system(&req.id).await?;
    if !st.profile(&sys).bios_settings_take_post() {
        return Err(ApiError::MethodNotAllowed);
    }
    patch_settings(st, req).await
}

/// Where staged attributes wait for a configuration job (an iDRAC's): with
/// `@Redfish.SettingsApplyTime` one is scheduled (202, its Task in
/// `Location`), without it they stay held until a job is created.
async fn patch_settings(State(st): State<AppState>, req: SysPatch) -> Result<Response, ApiError> {
    let p = st.begin_patch(&req, settings_json).await?;
    let (sys, profile) = (&p.target, p.profile);
    // `@Redfish.SettingsApplyTime` may name when to apply: one of the
    // times `@Redfish.Settings` advertises. The whole body is checked
    // before anything is staged.
    let mut body: Map<String, Value> = req.body;
    let apply = body.remove(SETTINGS_APPLY_TIME);
    let mut errors = apply
        .as_ref()
        .map(|a| check_apply_time(a, APPLY_TIMES))
        .unwrap_or_default();
    if apply.is_some() && body.is_empty() {
        // Only the apply time: nothing to stage.
        if errors.is_empty() {
            return Ok(Resource::new(p.current, profile, settings_allow(&st, sys)).into_response());
        }
        return Err(ApiError::BadRequest(errors));
    }
    errors.extend(p.problems(&body, &[writable("Attributes", Kind::Object)]));
    let attrs = body
        .get("Attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    errors.extend(
        attrs
            .iter()
            .filter_map(|(k, v)| super::bios_registry::validate(k, v).err()),
    );
    if !errors.is_empty() {
        return Err(ApiError::BadRequest(errors));
    }
    let held = super::vendor::bios_waits_for_job(&st, sys);
    super::vendor::check_bios_job(&st, sys)?;
    let mut pending: BTreeMap<String, Value> = sys.bmc.bios.pending.clone();
    pending.extend(attrs);
    let mut changes = vec![Change::BiosPending(pending)];
    if held {
        changes.push(Change::BiosHold(apply.is_none()));
    }
    let sys = st.core.backend.apply(&sys.id, changes).await?;
    tracing::info!(system = %sys.name, pending = ?sys.bmc.bios.pending, "BIOS settings staged");
    if held && apply.is_some() {
        return Ok(super::vendor::bios_job_scheduled(&st, &sys));
    }
    Ok(Resource::new(
        settings_json(&sys, profile),
        profile,
        settings_allow(&st, &sys),
    )
    .into_response())
}

async fn reset_bios(
    State(st): State<AppState>,
    Sys(sys): Sys,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    json::action_known(&body, &[], "Bios.ResetBios")?;
    let _guard = st.core.locks.lock(&sys.id).await;
    st.core
        .backend
        .apply(&sys.id, vec![Change::BiosDefaults])
        .await?;
    Ok(json::no_content())
}
