//! Managers: one BMC per system, sharing the system's Id, as sushy-tools
//! lays them out (Ironic finds a system's manager through `Links.ManagedBy`).

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use uuid::Uuid;

use super::json::Resource;
use super::{collection, link, AppState, Sys};
use crate::api::error::ApiError;
use crate::model::System;
use crate::profile::Profile;
use crate::timefmt::rfc3339;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/redfish/v1/Managers", get(list))
        .route("/redfish/v1/Managers/{id}", get(manager))
}

async fn list(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let members = st.backend.systems().await?.into_iter().map(|s| {
        format!(
            "/redfish/v1/Managers/{}",
            st.fixed.as_ref().map_or(&s.id, |f| &f.manager)
        )
    });
    Ok(Resource::plain(
        collection(
            "ManagerCollection",
            "/redfish/v1/Managers",
            "Manager Collection",
            members,
        ),
        "GET",
    ))
}

/// The manager's `ServiceEntryPointUUID`: the service root's UUID.
fn manager_json(st: &AppState, sys: &System, profile: &Profile) -> Value {
    let id = st.manager_id(sys);
    let base = format!("/redfish/v1/Managers/{id}");
    let mut v = json!({
        "@odata.type": "#Manager.v1_19_0.Manager",
        "@odata.id": base,
        "Id": id,
        "Name": format!("Manager for {}", sys.name),
        "Description": "Baseboard management controller",
        "ManagerType": "BMC",
        "UUID": Uuid::new_v5(&sys.uuid, b"manager").hyphenated().to_string(),
        "ServiceEntryPointUUID": st.service_uuid.hyphenated().to_string(),
        "Manufacturer": profile.manufacturer,
        "Model": profile.manager_model.clone().unwrap_or_else(|| format!("{} BMC", profile.model)),
        "FirmwareVersion": profile.bmc_firmware_version,
        "DateTime": rfc3339(std::time::SystemTime::now()),
        "DateTimeLocalOffset": "+00:00",
        "PowerState": "On",
        "Status": { "State": "Enabled", "Health": "OK" },
        "Links": {
            "ManagerForServers": [link(&format!("/redfish/v1/Systems/{}", sys.id))],
            "ManagerForChassis": [link(&format!("/redfish/v1/Chassis/{}", st.chassis_id(sys)))],
        },
    });
    if super::vmedia::shown(st, sys, false) {
        v["VirtualMedia"] = link(&format!("{base}/VirtualMedia"));
    }
    if let Some(oem) = &profile.oem.manager {
        v["Oem"] = json!(oem);
    }
    super::dell::manager_parts(st, sys, profile, &mut v);
    v
}

async fn manager(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    // DateTime changes every second: the manager carries no ETag.
    Ok(Resource::plain(manager_json(&st, &sys, profile), "GET"))
}
