//! HPE's wing: the iLO profiles' own extensions (profiles with `[hpe]`),
//! as proliantutils, the library behind Ironic's iLO drivers, and HPE's
//! iLOrest read and drive them.
//!
//! - `system.rs`: the System's `Oem.Hpe` (live `PostState`, the
//!   `PowerButton` action, `Bios`);
//! - `media.rs`: a VirtualMedia device's `Oem.Hpe`
//!   (`BootOnNextServerReset`, taken by PATCH) and iLO's own insert and
//!   eject actions;
//! - `bios.rs`: the Bios resource's `Oem.Hpe` and machine attributes,
//!   the base configurations and the UEFI boot settings;
//! - `tls.rs`: the BIOS TLS configuration (`HpeTlsConfig`), where iLO
//!   takes the CAs for HTTPS boot;
//! - `inventory.rs`: iLO's read-only inventory (PCI devices, Smart
//!   Storage, iSCSI, chassis devices, the security service);
//! - `raid.rs`: the Smart Storage configuration (`smartstorageconfig`);
//! - here: the service root's `Oem.Hpe`, the links the Manager and Chassis
//!   show, the BMC's host name: the hooks `api/vendor.rs` calls, as are
//!   the `pub(in crate::api)` functions of the submodules.
//!
//! Every route answers 404 on a system whose profile has no `[hpe]`.

mod bios;
mod inventory;
mod media;
mod queue;
mod raid;
mod repository;
mod system;
mod tls;
pub(in crate::api) mod update;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::Router;
use serde_json::{json, Value};

use crate::api::error::ApiError;
use crate::api::state::endpoint_state;
use crate::api::{AppState, Sys};
use crate::config::FeatureSet;
use crate::model::System;
use crate::profile::Profile;

pub(in crate::api) use bios::bios_parts;
pub(in crate::api) use media::{media_parts, patch_boot_next};
pub(in crate::api) use repository::PUSH_URI as IMAGE_UPLOAD_URI;
pub(in crate::api) use system::{post_state, system_parts};

/// The wing's routes in feature set `f`: iLO's virtual media actions
/// where there is virtual media, the rest in the full set.
pub fn router(f: FeatureSet) -> Router {
    let mut r = Router::new();
    if f.vmedia() {
        r = r.merge(media::router());
    }
    if f.full() {
        r = r
            .merge(tls::router())
            .merge(system::router())
            .merge(bios::router())
            .merge(inventory::router())
            .merge(raid::router())
            .merge(repository::router())
            .merge(queue::router())
            .route(JSON_SCHEMAS, axum::routing::get(json_schemas));
    }
    r
}

/// Where iLO lists its JSON schemas.
const JSON_SCHEMAS: &str = "/redfish/v1/JsonSchemas";

/// iLO's top-level resources beyond DMTF's usual: `JsonSchemas`, which
/// iLOrest needs at login (it reads the iLO's version after fetching
/// `JsonSchemas/?$expand=.` and `Registries/?$expand=.`).
pub(in crate::api) fn top_level(profile: &Profile) -> Vec<(&'static str, &'static str)> {
    match profile.hpe {
        Some(_) => vec![("JsonSchemas", JSON_SCHEMAS)],
        None => Vec::new(),
    }
}

/// The JSON schema collection: the service serves no schema files of its
/// own (clients validate against DMTF's), so it has no members.
async fn json_schemas(
    crate::api::State(st): crate::api::State<AppState>,
    uri: axum::http::Uri,
) -> Result<crate::api::json::Resource, ApiError> {
    if st.root_profile.hpe.is_none() {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let v = crate::api::collection(
        "JsonSchemaFileCollection",
        JSON_SCHEMAS,
        "JSON Schema Files",
        Vec::<String>::new(),
    );
    Ok(crate::api::json::Resource::plain(v, "GET"))
}

/// iLO's root says which iLO it is (`Oem.Hpe.Manager[0].ManagerType`,
/// `Moniker.PRODGEN`): HPE's iLOrest reads the generation there before
/// it logs in.
pub(in crate::api) fn root_oem(profile: &Profile) -> Option<Value> {
    profile.hpe.as_ref()?;
    let fw = &profile.bmc_firmware_version;
    let (kind, version) = fw.split_once(" v").unwrap_or((fw.as_str(), ""));
    Some(json!({ "Hpe": {
        "@odata.type": "#HpeiLOServiceExt.v2_3_0.HpeiLOServiceExt",
        "Manager": [{
            "ManagerType": kind,
            "ManagerFirmwareVersion": version,
            "Status": { "Health": "OK" },
        }],
        "Moniker": {
            "PRODGEN": kind,
            "PRODABR": "iLO",
            "PRODFAM": "Integrated Lights-Out",
            "VENDABR": "HPE",
            "VENDNAM": "Hewlett Packard Enterprise",
        },
    }}))
}

/// The Manager's `Oem.Hpe.Links` (the security service).
pub(in crate::api) fn manager_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    if profile.hpe.is_some() {
        inventory::manager_links(st.manager_id(sys), v);
    }
}

/// The Chassis's `Oem.Hpe.Links` (its devices).
pub(in crate::api) fn chassis_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    if profile.hpe.is_some() {
        inventory::chassis_links(st.chassis_id(sys), v);
    }
}

/// An iLO's host name out of the box: `ILO<serial number>`.
pub(in crate::api) fn host_name(sys: &System, profile: &Profile) -> Option<String> {
    profile
        .hpe
        .as_ref()
        .map(|_| format!("ILO{}", crate::api::systems::serial(sys)))
}

/// A request for one of iLO's own resources of a System: the endpoint's
/// state, the System and the path asked (as sent). On a system whose
/// profile has no `[hpe]` the URL is not found.
struct Ilo {
    st: AppState,
    sys: System,
    path: String,
}

impl Ilo {
    /// What a URL below this one that names no resource answers.
    fn not_found(&self) -> ApiError {
        ApiError::NotFound(self.path.clone())
    }

    /// The path asked without a trailing slash: the resource's
    /// `@odata.id`.
    fn id(&self) -> &str {
        self.path.trim_end_matches('/')
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Ilo {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        let Sys(sys) = Sys::from_request_parts(parts, s).await?;
        let st = endpoint_state(parts)?;
        ilo_only(&st, &sys, parts.uri.path())?;
        let path = parts.uri.path().to_string();
        Ok(Ilo { st, sys, path })
    }
}

/// `path` is one of iLO's own resources of `sys`: not found unless its
/// profile has `[hpe]`.
fn ilo_only(st: &AppState, sys: &System, path: &str) -> Result<(), ApiError> {
    match st.profile(sys).hpe {
        Some(_) => Ok(()),
        None => Err(ApiError::NotFound(path.to_string())),
    }
}
