//! Storage below a system: the controller (with its RAID capabilities), its
//! Drives, and its Volumes, which a client creates (POST) and deletes at
//! once or at the next reset (`@Redfish.OperationApplyTime`), as Ironic's
//! RAID interface does. Creation and deletion exist only where the backend
//! manages volumes (the fake); elsewhere volumes are read-only.

mod volumes;

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::json::Resource;
use super::system_parts::{base, not_found, OK};
use super::{collection, link, AppState, Sys};
use crate::api::error::ApiError;
use crate::model::System;
use crate::profile::StorageIds;
use crate::storage::{Volume, VolumeChange, RAID_TYPES};

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/Storage", get(storages))
        .route("/redfish/v1/Systems/{id}/Storage/{ctl}", get(storage))
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Controllers",
            get(controllers),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Controllers/{c}",
            get(controller),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Drives/{drive}",
            get(drive),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Volumes",
            get(volumes).post(volumes::create_volume),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Volumes/{vol}",
            get(volume).delete(volumes::delete_volume),
        )
}

const APPLY_TIME: &str = "@Redfish.OperationApplyTime";
/// The longest volume Name.
const NAME_MAX: usize = 64;

/// A system's storage as its profile names it (`inventory.storage_ids`).
pub(super) struct Names<'a> {
    pub ids: StorageIds,
    pub sys: &'a System,
}

impl<'a> Names<'a> {
    pub fn of(st: &AppState, sys: &'a System) -> Names<'a> {
        Names {
            ids: st.profile(sys).inventory.storage_ids,
            sys,
        }
    }

    /// The names a configuration gave (plain Ids only: a vendor's Ids
    /// are the vendor's).
    fn configured(&self) -> Option<&'a crate::storage::StorageNames> {
        match self.ids {
            StorageIds::Plain => self.sys.bmc.storage.names.as_ref(),
            StorageIds::DellFqdd => None,
        }
    }

    /// The Storage resource's Id.
    pub fn storage_id(&self) -> &'a str {
        self.configured()
            .map_or(self.ids.storage(), |n| n.id.as_str())
    }

    /// The Id of the StorageController member.
    pub fn controller_id(&self) -> &'a str {
        self.configured()
            .and_then(|n| n.controller_id.as_deref())
            .unwrap_or(self.ids.controller())
    }

    /// The Storage resource's path.
    pub fn storage(&self) -> String {
        format!("{}/Storage/{}", base(self.sys), self.storage_id())
    }

    /// The Storage Id in a path is this system's, or the path is not found.
    pub fn check(&self, ctl: &str, uri: &Uri) -> Result<(), ApiError> {
        if ctl == self.storage_id() {
            Ok(())
        } else {
            Err(not_found(uri))
        }
    }

    pub fn drive_id(&self, name: &str) -> String {
        let i = self
            .sys
            .disks
            .iter()
            .position(|d| d.name == name)
            .unwrap_or(0);
        self.ids.drive(i, name)
    }

    /// The drive whose Id is `id`.
    pub fn drive_name(&self, id: &str) -> Option<&'a str> {
        self.sys
            .disks
            .iter()
            .enumerate()
            .find(|(i, d)| self.ids.drive(*i, &d.name) == id)
            .map(|(_, d)| d.name.as_str())
    }

    pub fn drive_uri(&self, name: &str) -> String {
        format!("{}/Drives/{}", self.storage(), self.drive_id(name))
    }

    pub fn volume_id(&self, v: &Volume) -> String {
        self.ids.volume(v, &self.sys.disks)
    }

    pub fn volume_uri(&self, v: &Volume) -> String {
        format!("{}/Volumes/{}", self.storage(), self.volume_id(v))
    }

    /// The volume (its Shoal Id) whose Id is `id`, now or once the staged
    /// changes apply.
    pub fn volume_of(&self, id: &str) -> Option<String> {
        let st = &self.sys.bmc.storage;
        let staged = st.pending.iter().filter_map(|c| match c {
            VolumeChange::Create(v) => Some(v),
            _ => None,
        });
        st.volumes
            .iter()
            .chain(staged)
            .find(|v| self.volume_id(v) == id)
            .map(|v| v.id.clone())
    }
}

/// Where creating and deleting volumes is offered: the apply times.
fn apply_time_support(st: &AppState) -> Option<Value> {
    st.core.backend.manages_volumes().then(|| {
        json!({
            "@odata.type": "#Settings.v1_4_0.OperationApplyTimeSupport",
            "SupportedValues": ["Immediate", "OnReset"],
        })
    })
}

async fn storages(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = format!("{}/Storage", base(&sys));
    Ok(Resource::plain(
        collection(
            "StorageCollection",
            &b,
            "Storage Collection",
            [Names::of(&st, &sys).storage()],
        ),
        "GET",
    ))
}

/// What the controller supports: RAID where the backend manages volumes
/// and the controller is in RAID mode.
fn raid_types(st: &AppState, sys: &System) -> &'static [&'static str] {
    let raid_mode = sys.bmc.storage.mode == crate::storage::ControllerMode::Raid;
    if st.core.backend.manages_volumes() && raid_mode {
        RAID_TYPES
    } else {
        &["None"]
    }
}

async fn storage(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = names.storage();
    let drives: Vec<Value> = sys
        .disks
        .iter()
        .map(|d| link(&names.drive_uri(&d.name)))
        .collect();
    let mut v = json!({
        "@odata.type": "#Storage.v1_15_0.Storage",
        "@odata.id": b,
        "Id": names.storage_id(),
        "Name": names.configured().and_then(|n| n.name.as_deref()).unwrap_or("Storage Subsystem"),
        "Drives@odata.count": drives.len(),
        "Drives": drives,
        "Volumes": link(&format!("{b}/Volumes")),
        "Controllers": link(&format!("{b}/Controllers")),
        "Status": OK(),
    });
    // The controllers embedded too (deprecated in Storage v1_15, served by
    // the BMCs of that era, read by Ironic's redfish inspection).
    let member = names.controller_id();
    let mut embedded = json!({
        "@odata.id": format!("{b}#/StorageControllers/{member}"),
        "MemberId": member,
    });
    described(&mut embedded, &names, raid_types(&st, &sys));
    v["StorageControllers"] = json!([embedded]);
    v["StorageControllers@odata.count"] = json!(1);
    super::vendor::storage_parts(&st, &sys, &names, raid_types(&st, &sys), &mut v);
    Ok(Resource::plain(v, "GET"))
}

async fn controllers(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = format!("{}/Controllers", names.storage());
    Ok(Resource::plain(
        collection(
            "StorageControllerCollection",
            &b,
            "Storage Controller Collection",
            [format!("{b}/{}", names.controller_id())],
        ),
        "GET",
    ))
}

async fn controller(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, c)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    if c != names.controller_id() {
        return Err(not_found(&uri));
    }
    let mut v = json!({
        "@odata.type": "#StorageController.v1_7_0.StorageController",
        "@odata.id": format!("{}/Controllers/{c}", names.storage()),
        "Id": c,
    });
    described(&mut v, &names, raid_types(&st, &sys));
    super::vendor::controller_parts(&st, &sys, &names, &mut v);
    Ok(Resource::plain(v, "GET"))
}

/// What a controller is, in the resource and in Storage's
/// `StorageControllers` array alike (its name and speed the
/// configuration's, where it gives them).
fn described(v: &mut Value, names: &Names, raid: &[&str]) {
    let given = names.configured();
    let name = given.and_then(|n| n.controller_name.as_deref());
    let speed = given.and_then(|n| n.speed_gbps.clone());
    for (k, x) in [
        ("Name", json!(name.unwrap_or("Shoal RAID Controller"))),
        ("Manufacturer", json!("Shoal")),
        ("Model", json!("Virtual RAID Controller")),
        ("SpeedGbps", speed.map_or(json!(6), Value::Number)),
        ("SupportedRAIDTypes", json!(raid)),
        ("SupportedControllerProtocols", json!(["PCIe"])),
        ("SupportedDeviceProtocols", json!(["SATA"])),
        ("Status", OK()),
    ] {
        v[k] = x;
    }
}

async fn drive(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, drive)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let name = names.drive_name(&drive).ok_or_else(|| not_found(&uri))?;
    let d = sys
        .disks
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| not_found(&uri))?;
    let volumes: Vec<Value> = sys
        .bmc
        .storage
        .volumes
        .iter()
        .filter(|v| v.drives.contains(&d.name))
        .map(|v| link(&names.volume_uri(v)))
        .collect();
    let mut v = json!({
        "@odata.type": "#Drive.v1_17_0.Drive",
        "@odata.id": names.drive_uri(&d.name),
        "Id": drive,
        "Name": d.label.as_deref().unwrap_or(&d.name),
        "CapacityBytes": d.capacity_bytes,
        "MediaType": "SSD",
        "Protocol": d.protocol.as_deref().unwrap_or("SATA"),
        "Links": { "Volumes": volumes },
        "Status": OK(),
    });
    super::vendor::drive_parts(&st, &sys, &drive, &d.name, &mut v);
    Ok(Resource::plain(v, "GET"))
}

async fn volumes(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = format!("{}/Volumes", names.storage());
    let members = sys.bmc.storage.volumes.iter().map(|v| names.volume_uri(v));
    let mut body = collection("VolumeCollection", &b, "Volume Collection", members);
    let allow = match apply_time_support(&st) {
        Some(support) => {
            body["@Redfish.OperationApplyTimeSupport"] = support;
            "GET, POST"
        }
        None => "GET",
    };
    Ok(Resource::plain(body, allow))
}

fn volume_json(names: &Names, v: &Volume) -> Value {
    let mut body = json!({
        "@odata.type": "#Volume.v1_9_0.Volume",
        "@odata.id": names.volume_uri(v),
        "Id": names.volume_id(v),
        "Name": v.name,
        "CapacityBytes": v.capacity_bytes,
        "RAIDType": v.raid_type,
        "VolumeType": crate::storage::volume_type_of_raid(&v.raid_type),
        "Encrypted": false,
        "Links": {
            "Drives": v.drives.iter().map(|d| link(&names.drive_uri(d))).collect::<Vec<_>>(),
        },
        "Status": OK(),
    });
    // Dell: a non-RAID drive is a raw device, with no RAID type.
    if names.ids == StorageIds::DellFqdd && v.raid_type == "None" {
        body["RAIDType"] = Value::Null;
        body["VolumeType"] = json!("RawDevice");
    }
    body
}

async fn volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, vol)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let v = sys
        .bmc
        .storage
        .volumes
        .iter()
        .find(|v| names.volume_id(v) == vol)
        .ok_or_else(|| not_found(&uri))?;
    let mut body = volume_json(&names, v);
    let allow = match apply_time_support(&st) {
        Some(support) => {
            body["@Redfish.OperationApplyTimeSupport"] = support;
            "GET, DELETE"
        }
        None => "GET",
    };
    Ok(Resource::new(body, st.profile(&sys), allow))
}
