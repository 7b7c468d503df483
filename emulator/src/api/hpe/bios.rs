//! iLO's BIOS (`[hpe]` profiles): the Bios resource's `Oem.Hpe` (the
//! HTTPS boot CAs' `TlsConfig`, `BaseConfigs`, `Boot`, `iScsi`) and the
//! machine's own attributes (`BootMode`, `UefiOptimizedBoot`) with the
//! outcome of the last start's settings, and the pages behind those
//! links: the base configurations (factory defaults) and the UEFI boot
//! settings, as proliantutils reads them.

use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::api::error::ApiError;
use crate::api::json::Resource;
use crate::api::{link, AppState, State, Sys};
use crate::model::System;
use crate::profile::Profile;

pub(super) fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/Systems/{id}/Bios/baseconfigs",
            get(base_configs),
        )
        .route("/redfish/v1/Systems/{id}/Bios/boot", get(boot_settings))
}

/// The Bios resource's HPE parts, over the generic body.
pub(in crate::api) fn bios_parts(st: &AppState, sys: &System, profile: &Profile, body: &mut Value) {
    // HPE's HTTPS boot CAs: where proliantutils finds them.
    if let Some(tls) = super::tls::config_uri(st, sys) {
        body["Oem"] = json!({ "Hpe": { "Links": { "TlsConfig": link(&tls) } } });
    }
    if profile.hpe.is_some() {
        let base = format!("/redfish/v1/Systems/{}/Bios", sys.id);
        // iLO's BIOS says the boot mode the machine has (proliantutils
        // reads it before it enrolls a CA).
        for (k, v) in crate::api::bios::machine_attributes(sys) {
            body["Attributes"][k] = json!(v);
        }
        // What became of the settings the last start applied: they were
        // checked when staged, so each start applies them all.
        body["@Redfish.Settings"]["Messages"] = match sys.bmc.last_boot {
            Some(_) => json!([crate::registry::message("Success", &[], &[])]),
            None => json!([]),
        };
        body["Oem"]["Hpe"]["Links"]["BaseConfigs"] = link(&format!("{base}/baseconfigs"));
        body["Oem"]["Hpe"]["Links"]["Boot"] = link(&format!("{base}/boot"));
        super::inventory::bios_links(sys, body);
    }
}

/// iLO's BIOS base configurations: the factory defaults, which
/// proliantutils reads (`get_default_bios_settings`) and POSTs back to the
/// settings object to reset the BIOS.
async fn base_configs(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    if profile.hpe.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    Ok(Resource::new(
        json!({
            "@odata.type": "#HpeBaseConfigs.v2_0_0.HpeBaseConfigs",
            "@odata.id": uri.path(),
            "Id": "baseconfigs",
            "Name": "BIOS Default Settings",
            "BaseConfigs": [{ "default": crate::bios::defaults() }],
        }),
        profile,
        "GET",
    ))
}

/// iLO's UEFI boot settings (`HpeServerBootSettings`): the boot sources
/// the machine has (its disks, each NIC's PXE and HTTP(S) over IPv4, iLO's
/// virtual USB key and CD) by iLO's structured boot strings, and the
/// persistent order (disks first, as the machine boots without an
/// override), where proliantutils reads the persistent boot device.
async fn boot_settings(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    if profile.hpe.is_none() || !sys.uefi() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    // The machine's boot sources (its `BootOptions`), by iLO's names.
    let sources: Vec<Value> = crate::api::boot_options::sources(&sys)
        .into_iter()
        .map(|s| {
            json!({
                "BootOptionNumber": s.reference.trim_start_matches("Boot"),
                "StructuredBootString": s.structured,
                "BootString": s.hpe_string,
                "UEFIDevicePath": s.device_path,
                "CorrelatableID": s.device_path.split("/MAC").next().unwrap_or(&s.device_path),
            })
        })
        .collect();
    let order: Vec<Value> = sources
        .iter()
        .map(|s| s["StructuredBootString"].clone())
        .collect();
    Ok(Resource::new(
        json!({
            "@odata.type": "#HpeServerBootSettings.v2_0_0.HpeServerBootSettings",
            "@odata.id": uri.path(),
            "Id": "boot",
            "Name": "Boot Order Current Settings",
            "BootSources": sources,
            "PersistentBootConfigOrder": order,
            "DefaultBootOrder": ["Floppy", "Cd", "Usb", "EmbeddedStorage", "PcieSlotStorage", "EmbeddedFlexLOM", "PcieSlotNic", "UefiShell"],
        }),
        profile,
        "GET",
    ))
}
