//! ComputerSystem: the collection, the member (GET/PATCH with the boot
//! override semantics), `ComputerSystem.Reset` and its ActionInfo.

use std::sync::Arc;

use crate::api::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use super::boot_rules::{
    allowed_modes, allowed_targets, boot_patch_rules, boot_refused, boot_request, checked_patch,
    merged_settings, writables,
};
use super::json::{self, check_if_match, JsonObject, Rendered, Resource};
use super::patch::Writable;
use super::render_cache::SystemView;
use super::{collection, link, AppState, Sys, SysId};
use crate::api::error::{ApiError, Msg};
use crate::bmc::PowerError;
use crate::model::{Arch, Change, IndicatorLed, ResetType, System, SystemSettings};
use crate::profile::{AllowableValues, HttpBootUri, Profile};
use crate::timefmt::rfc3339_secs;

const RESET: &str = "ComputerSystem.Reset";

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems", get(list))
        .route(
            "/redfish/v1/Systems/{id}",
            get(get_system).patch(patch_system),
        )
        .route(
            "/redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset",
            post(reset),
        )
        .route(
            "/redfish/v1/Systems/{id}/ResetActionInfo",
            get(reset_action_info),
        )
        // A profile's settings object (`Settings`, `Pending`, `SD`); the
        // static routes of the System's other parts win over this one.
        .route(
            "/redfish/v1/Systems/{id}/{settings}",
            get(get_settings).patch(patch_settings),
        )
}

async fn list(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let members = st
        .core
        .backend
        .systems()
        .await?
        .into_iter()
        .map(|s| format!("/redfish/v1/Systems/{}", s.id));
    Ok(Resource::plain(
        collection(
            "ComputerSystemCollection",
            "/redfish/v1/Systems",
            "Computer System Collection",
            members,
        ),
        "GET",
    ))
}

/// The ComputerSystem resource (without `@odata.etag`, which `Resource` adds).
pub fn system_json(st: &AppState, sys: &System, profile: &Profile) -> Value {
    let base = format!("/redfish/v1/Systems/{}", sys.id);
    let mut boot = json!({
        "BootSourceOverrideTarget": sys.bmc.boot.target.as_str(),
        "BootSourceOverrideEnabled": sys.bmc.boot.enabled.as_str(),
        "BootSourceOverrideMode": sys.bmc.boot.mode.as_str(),
        "UefiTargetBootSourceOverride": sys.bmc.boot.uefi_target,
    });
    if profile.boot.allowable_values == AllowableValues::System {
        add_allowable_values(&mut boot, sys, profile);
    }
    if sys.arch.has_uefi() && profile.boot.http_boot_uri != HttpBootUri::Absent {
        boot["HttpBootUri"] = json!(sys.bmc.boot.http_boot_uri);
    }
    if st.features.full() && sys.arch.has_uefi() {
        super::boot_options::boot_parts(sys, &mut boot);
    }
    if st.features.full() {
        if let Some(uri) = super::boot_certs::collection_uri(sys, profile) {
            boot["Certificates"] = link(&uri);
        }
    }
    let mut v = json!({
        "@odata.type": "#ComputerSystem.v1_22_0.ComputerSystem",
        "@odata.id": base,
        "Id": sys.id,
        "Name": sys.name,
        "Description": "Computer System",
        "SystemType": "Physical",
        "UUID": sys.uuid.hyphenated().to_string(),
        "HostName": sys.name,
        "Manufacturer": profile.manufacturer,
        "Model": profile.model,
        "SerialNumber": serial(sys),
        "SKU": sku(sys, profile),
        "AssetTag": sys.bmc.asset_tag,
        "PowerRestorePolicy": sys.bmc.power_restore.as_str(),
        "BiosVersion": crate::bmc::firmware::installed(sys, profile, crate::firmware::Component::Bios).version,
        "PowerState": sys.power.as_str(),
        "IndicatorLED": sys.bmc.indicator.as_str(),
        "LocationIndicatorActive": sys.bmc.indicator != IndicatorLed::Off,
        "Status": { "State": "Enabled", "Health": "OK" },
        "ProcessorSummary": {
            "Count": 1,
            "LogicalProcessorCount": sys.cpus,
            "CoreCount": sys.cpus,
            "Model": processor_model(sys.arch),
        },
        "MemorySummary": {
            "TotalSystemMemoryGiB": sys.memory_mib as f64 / 1024.0,
        },
        "Boot": boot,
        "BootProgress": {
            "LastState": if sys.power == crate::model::PowerState::On { "OSRunning" } else { "None" },
            "LastStateTime": sys.bmc.last_boot.as_ref().map(|b| rfc3339_secs(b.at)),
        },
        "Links": {
            "Chassis": [link(&format!("/redfish/v1/Chassis/{}", st.chassis_id(sys)))],
            "ManagedBy": [link(&format!("/redfish/v1/Managers/{}", st.manager_id(sys)))],
        },
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": format!("{base}/Actions/{RESET}"),
                "@Redfish.ActionInfo": format!("{base}/ResetActionInfo"),
                "ResetType@Redfish.AllowableValues": ResetType::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            }
        },
    });
    if let Some(path) = profile.settings_path() {
        v["@Redfish.Settings"] = json!({
            "@odata.type": "#Settings.v1_3_5.Settings",
            "SettingsObject": link(&format!("{base}/{path}")),
        });
    }
    if let Some(oem) = &profile.oem.system {
        v["Oem"] = json!(oem);
    }
    super::vendor::system_parts(st, sys, profile, &mut v);
    if v["BootProgress"]["LastStateTime"].is_null() {
        if let Some(bp) = v["BootProgress"].as_object_mut() {
            bp.remove("LastStateTime");
        }
    }
    if super::vmedia::shown(st, sys, true) {
        v["VirtualMedia"] = link(&format!("{base}/VirtualMedia"));
    }
    if st.features.full() {
        for (k, tail) in [
            ("Processors", "Processors"),
            ("Memory", "Memory"),
            ("EthernetInterfaces", "EthernetInterfaces"),
            ("SimpleStorage", "SimpleStorage"),
            ("Storage", "Storage"),
            ("Bios", "Bios"),
            ("SecureBoot", "SecureBoot"),
        ] {
            v[k] = link(&format!("{base}/{tail}"));
        }
        if !profile.logs.system.is_empty() {
            v["LogServices"] = link(&format!("{base}/LogServices"));
        }
    }
    v
}

/// The Boot object's `@Redfish.AllowableValues` annotations.
fn add_allowable_values(boot: &mut Value, sys: &System, profile: &Profile) {
    boot["BootSourceOverrideTarget@Redfish.AllowableValues"] = json!(allowed_targets(sys, profile));
    boot["BootSourceOverrideEnabled@Redfish.AllowableValues"] = json!(profile.enabled_values());
    boot["BootSourceOverrideMode@Redfish.AllowableValues"] = json!(allowed_modes(sys));
}

/// The profile's settings object for the System's Boot fields: the fields
/// it takes, with their current values (a change made there applies to the
/// override at once: it concerns the next boot either way), and the
/// AllowableValues when the profile keeps them there.
fn settings_json(sys: &System, profile: &Profile, path: &str) -> Value {
    let system = system_boot_values(sys);
    let mut boot = Map::new();
    for f in profile.boot.settings.iter().flat_map(|s| &s.fields) {
        if let Some(v) = system.get(f.as_str()) {
            boot.insert(f.clone(), v.clone());
        }
    }
    let mut boot = Value::Object(boot);
    if profile.boot.allowable_values == AllowableValues::Settings {
        add_allowable_values(&mut boot, sys, profile);
    }
    json!({
        "@odata.type": "#ComputerSystem.v1_22_0.ComputerSystem",
        "@odata.id": format!("/redfish/v1/Systems/{}/{path}", sys.id),
        "Id": path,
        "Name": format!("Pending settings of {}", sys.name),
        "Boot": boot,
    })
}

/// The Boot fields' current values, by name.
fn system_boot_values(sys: &System) -> Map<String, Value> {
    let v = json!({
        "BootSourceOverrideTarget": sys.bmc.boot.target.as_str(),
        "BootSourceOverrideEnabled": sys.bmc.boot.enabled.as_str(),
        "BootSourceOverrideMode": sys.bmc.boot.mode.as_str(),
        "UefiTargetBootSourceOverride": sys.bmc.boot.uefi_target,
        "HttpBootUri": sys.bmc.boot.http_boot_uri,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn processor_model(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "Shoal Virtual x86-64 CPU",
        Arch::Ppc64le => "Shoal Virtual POWER9 CPU",
        Arch::Aarch64 => "Shoal Virtual ARMv8 CPU",
    }
}

/// A serial number derived from the UUID (stable, unique per system).
pub fn serial(sys: &System) -> String {
    format!(
        "SHL{}",
        &sys.uuid.simple().to_string()[..10].to_ascii_uppercase()
    )
}

/// The System's `SKU`: a 7-character service tag where the vendor's is
/// one (Dell), stable per machine; else the model's.
pub fn sku(sys: &System, profile: &Profile) -> String {
    if !profile.inventory.service_tag {
        return profile.model.clone();
    }
    // Seven base-36 digits from the UUID's first 64 bits.
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut n = sys.uuid.as_u64_pair().0;
    (0..7)
        .map(|_| {
            let d = DIGITS[(n % 36) as usize] as char;
            n /= 36;
            d
        })
        .collect()
}

async fn get_system(State(st): State<AppState>, Sys(sys): Sys) -> Rendered {
    system_view(&st, &sys).rendered.clone()
}

/// The System resource, as JSON and as sent, from the render cache when
/// `sys` has not changed since it was last rendered.
fn system_view(st: &AppState, sys: &System) -> Arc<SystemView> {
    // What moves with time after a start (iLO's PostState) is part of
    // what the rendering is a function of.
    let clock = super::vendor::system_clock(st, sys);
    st.renders.get_or_render(sys, clock, || {
        let profile = st.profile(sys);
        let res = Resource::new(system_json(st, sys, profile), profile, "GET, PATCH");
        let rendered = res.render();
        (res.body, rendered)
    })
}

async fn patch_system(
    State(st): State<AppState>,
    SysId(id): SysId,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let (sys, profile) = (&locked.sys, locked.profile);
    let current = system_view(&st, sys);
    check_if_match(&headers, &current.json, profile)?;
    let boot_body = body.get("Boot").and_then(Value::as_object);
    boot_patch_rules(
        checked_patch(&body, &current.json, &writables(sys, profile)),
        boot_body,
        profile,
    )?;
    if let (Some(b), Some(s)) = (boot_body, &profile.boot.settings) {
        if let Some(m) = &s.refused_on_system {
            // The firmware takes these only in its settings object.
            let uri = format!("/redfish/v1/Systems/{}/{}", sys.id, s.path);
            let mut msgs: Vec<Msg> = b
                .keys()
                .filter(|k| profile.in_settings(k))
                .map(|k| {
                    let path = format!("Boot/{k}");
                    Msg::new("PropertyNotWritable", &[&path]).about(&path)
                })
                .collect();
            if !msgs.is_empty() {
                msgs.push(Msg::vendor(m, &uri));
                return Err(ApiError::BadRequest(msgs));
            }
        }
    }
    let mut changes = Vec::new();
    if let Some(b) = boot_body {
        let boot = st
            .core
            .decide_boot(sys, &boot_request(b))
            .map_err(|e| boot_refused(e, profile))?;
        changes.push(Change::Boot(boot));
    }
    let settings = merged_settings(&body)?;
    if settings != SystemSettings::default() {
        changes.push(Change::Settings(settings));
    }
    let sys = st.core.backend.apply(&sys.id, changes).await?;
    // The state answered is the one this PATCH made; rendering it needs no
    // lock, so the next writer to this system goes ahead meanwhile.
    drop(locked);
    tracing::info!(system = %sys.name, boot = ?sys.bmc.boot, "system patched");
    Ok(system_view(&st, &sys).rendered.clone().into_response())
}

/// The settings object's path segment, or 404 when the system's profile
/// has none by that name.
fn settings_of(
    st: &AppState,
    sys: &System,
    path: &str,
    uri: &axum::http::Uri,
) -> Result<&'static Profile, ApiError> {
    let profile = st.profile(sys);
    match profile.settings_path() {
        Some(p) if p == path => Ok(profile),
        _ => Err(ApiError::NotFound(uri.path().to_string())),
    }
}

async fn get_settings(
    State(st): State<AppState>,
    Sys(sys): Sys,
    axum::extract::Path((_, path)): axum::extract::Path<(String, String)>,
    uri: axum::http::Uri,
) -> Result<Resource, ApiError> {
    let profile = settings_of(&st, &sys, &path, &uri)?;
    Ok(Resource::new(
        settings_json(&sys, profile, &path),
        profile,
        "GET, PATCH",
    ))
}

async fn patch_settings(
    State(st): State<AppState>,
    SysId(id): SysId,
    axum::extract::Path((_, path)): axum::extract::Path<(String, String)>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let (sys, profile) = (&locked.sys, locked.profile);
    settings_of(&st, sys, &path, &uri)?;
    let current = settings_json(sys, profile, &path);
    check_if_match(&headers, &current, profile)?;
    // Only the Boot fields the settings object lists are writable here.
    let fields: Vec<Writable> = writables(sys, profile)
        .into_iter()
        .filter(|w| {
            w.path
                .strip_prefix("Boot/")
                .is_some_and(|f| profile.in_settings(f))
        })
        .collect();
    let boot_body = body.get("Boot").and_then(Value::as_object);
    boot_patch_rules(checked_patch(&body, &current, &fields), boot_body, profile)?;
    let req = boot_body.map(boot_request).unwrap_or_default();
    let sys = st
        .core
        .set_boot(&locked, &req)
        .await
        .map_err(|e| boot_refused(e, profile))?;
    drop(locked);
    tracing::info!(system = %sys.name, boot = ?sys.bmc.boot, settings = %path, "settings object patched");
    Ok(Resource::new(settings_json(&sys, profile, &path), profile, "GET, PATCH").into_response())
}

async fn reset(
    State(st): State<AppState>,
    Sys(sys): Sys,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    // iLO also takes the action's own name as `Action` (HPE's iLOrest
    // sends it with every action).
    let named = super::vendor::takes_action_name(st.profile(&sys));
    let known: &[&str] = if named {
        &["ResetType", "Action"]
    } else {
        &["ResetType"]
    };
    json::action_known(&body, known, RESET)?;
    if let Some(a) = json::action_str(&body, "Action", RESET)?.filter(|a| *a != RESET) {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueNotInList",
            &[a, "Action", RESET],
        )));
    }
    let reset = match json::action_str(&body, "ResetType", RESET)? {
        None => {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterMissing",
                &[RESET, "ResetType"],
            )))
        }
        Some(s) => ResetType::parse(s).ok_or_else(|| {
            ApiError::BadRequest(vec![
                Msg::new(
                    "ActionParameterNotSupported",
                    &[&format!("ResetType={s}"), RESET],
                ),
                Msg::new("ActionParameterValueNotInList", &[s, "ResetType", RESET]),
            ])
        })?,
    };
    power_action_response(&st, &sys, reset).await?;
    Ok(json::no_content())
}

/// A power action asked for over Redfish, its refusal as this BMC words
/// it (the Reset action, HPE's power button).
pub(super) async fn power_action_response(
    st: &AppState,
    sys: &System,
    reset: ResetType,
) -> Result<(), ApiError> {
    match st.core.power_action(sys, reset).await {
        Ok(()) => Ok(()),
        Err(PowerError::Busy) => {
            // Still busy with the last power action: this BMC says 409.
            let mut msgs = vec![match st.profile(sys).power.busy_base {
                crate::profile::BusyBase::ResourceInUse => Msg::new("ResourceInUse", &[]),
                crate::profile::BusyBase::ActionParameterValueConflict => Msg::new(
                    "ActionParameterValueConflict",
                    &["ResetType", reset.as_str()],
                ),
            }];
            msgs.extend(
                st.profile(sys)
                    .power
                    .busy_refusal
                    .iter()
                    .map(|m| Msg::vendor(m, "")),
            );
            Err(ApiError::Status(axum::http::StatusCode::CONFLICT, msgs))
        }
        Err(PowerError::PowerOffDisabled) => Err(ApiError::bad(Msg::new(
            "ActionParameterNotSupported",
            &[&format!("ResetType={reset}"), RESET],
        ))),
        Err(PowerError::Backend(e)) => Err(e.into()),
    }
}

async fn reset_action_info(Sys(sys): Sys) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        json!({
            "@odata.type": "#ActionInfo.v1_4_0.ActionInfo",
            "@odata.id": format!("/redfish/v1/Systems/{}/ResetActionInfo", sys.id),
            "Id": "ResetActionInfo",
            "Name": "Reset Action Info",
            "Parameters": [{
                "Name": "ResetType",
                "Required": true,
                "DataType": "String",
                "AllowableValues": ResetType::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            }],
        }),
        "GET",
    ))
}
