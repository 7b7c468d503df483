//! iLO's own inventory (`[hpe]` profiles), read-only, as proliantutils'
//! `get_server_capabilities` (Ironic's `ilo` inspection) reads it, made
//! from the machine Shoal models:
//!
//! - the System's `Oem.Hpe.Links.PCIDevices` (`HpeServerPciDevice`: each
//!   NIC, with its speed in its name, and the Smart Array controller) and
//!   `SmartStorage` (`HpeSmartStorage`: one array controller, its logical
//!   drives from the RAID volumes, its physical drives from the disks);
//! - the BIOS's `Oem.Hpe.Links.iScsi` (its settings object takes no PATCH:
//!   no iSCSI boot);
//! - the Chassis's `Oem.Hpe.Links.Devices` (the PCI devices by function);
//! - the Manager's `Oem.Hpe.Links.SecurityService` with its security
//!   dashboard and parameters (`security.rs`).

mod security;

pub use security::manager_links;

use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::Ilo;
use crate::api::error::ApiError;
use crate::api::json::Resource;
use crate::api::{collection, link, AppState};
use crate::model::System;
use crate::storage::Volume;

const SMART_ARRAY: &str = "HPE Smart Array P408i-a SR Gen10";

pub(super) fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/PCIDevices", get(pci_devices))
        .route("/redfish/v1/Systems/{id}/PCIDevices/{n}", get(pci_device))
        .route("/redfish/v1/Systems/{id}/SmartStorage", get(smart_storage))
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers",
            get(array_controllers),
        )
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers/0",
            get(array_controller),
        )
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers/0/LogicalDrives",
            get(logical_drives),
        )
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers/0/LogicalDrives/{n}",
            get(logical_drive),
        )
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers/0/DiskDrives",
            get(disk_drives),
        )
        .route(
            "/redfish/v1/Systems/{id}/SmartStorage/ArrayControllers/0/DiskDrives/{n}",
            get(disk_drive),
        )
        .route("/redfish/v1/Systems/{id}/Bios/iscsi", get(iscsi))
        .route(
            "/redfish/v1/Systems/{id}/Bios/iscsi/settings",
            get(iscsi_settings),
        )
        .route("/redfish/v1/Chassis/{id}/Devices", get(chassis_devices))
        .route("/redfish/v1/Chassis/{id}/Devices/{n}", get(chassis_device))
        .merge(security::router())
}

fn base(sys: &System) -> String {
    format!("/redfish/v1/Systems/{}", sys.id)
}

/// `v`'s `Oem.Hpe`, typed `odata_type` unless it has a type already.
fn oem_hpe<'a>(v: &'a mut Value, odata_type: &str) -> &'a mut Value {
    let oem = &mut v["Oem"]["Hpe"];
    if oem.get("@odata.type").is_none() {
        oem["@odata.type"] = json!(odata_type);
    }
    oem
}

/// What the System's `Oem.Hpe.Links` adds.
pub fn system_links(sys: &System, v: &mut Value) {
    let b = base(sys);
    v["Oem"]["Hpe"]["Links"]["PCIDevices"] = link(&format!("{b}/PCIDevices/"));
    v["Oem"]["Hpe"]["Links"]["SmartStorage"] = link(&format!("{b}/SmartStorage/"));
}

/// The PCI devices: the NICs (1 … n), then the Smart Array controller.
fn devices(sys: &System) -> Vec<Value> {
    let b = base(sys);
    let mut out: Vec<Value> = sys
        .nics
        .iter()
        .enumerate()
        .map(|(i, _)| {
            json!({
                "Id": (i + 1).to_string(),
                "Name": format!("HPE Ethernet 1Gb 4-port 331i Adapter - NIC Port {}", i + 1),
                "ClassCode": 2,
                "SubclassCode": 0,
                "VendorID": 0x14e4,
                "DeviceID": 0x1657,
                "DeviceType": "LOM",
                "StructuredName": format!("NIC.LOM.1.{}", i + 1),
            })
        })
        .collect();
    out.push(json!({
        "Id": (sys.nics.len() + 1).to_string(),
        "Name": SMART_ARRAY,
        "ClassCode": 1,
        "SubclassCode": 4,
        "VendorID": 0x9005,
        "DeviceID": 0x028f,
        "DeviceType": "Embedded",
        "StructuredName": "PCI.Slot.0.1",
    }));
    for d in &mut out {
        d["@odata.type"] = json!("#HpeServerPciDevice.v2_0_0.HpeServerPciDevice");
        d["@odata.id"] = json!(format!("{b}/PCIDevices/{}", d["Id"].as_str().unwrap_or("")));
    }
    out
}

async fn pci_devices(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/PCIDevices", base(sys));
    let members = devices(sys)
        .into_iter()
        .filter_map(|d| d["@odata.id"].as_str().map(String::from));
    let v = collection("HpeServerPciDeviceCollection", &b, "PCI Devices", members);
    Ok(Resource::plain(v, "GET"))
}

async fn pci_device(Path((_, n)): Path<(String, String)>, ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let d = devices(sys)
        .into_iter()
        .find(|d| d["Id"] == json!(n))
        .ok_or_else(|| ilo.not_found())?;
    Ok(Resource::plain(d, "GET"))
}

fn controller_uri(sys: &System) -> String {
    format!("{}/SmartStorage/ArrayControllers/0", base(sys))
}

async fn smart_storage(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/SmartStorage", base(sys));
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeSmartStorage.v2_0_0.HpeSmartStorage",
            "@odata.id": b,
            "Id": "SmartStorage",
            "Name": "HpeSmartStorage",
            "Description": "HPE Smart Storage",
            "Links": { "ArrayControllers": link(&format!("{b}/ArrayControllers/")) },
            "Status": { "Health": "OK" },
        }),
        "GET",
    ))
}

async fn array_controllers(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/SmartStorage/ArrayControllers", base(sys));
    let v = collection(
        "HpeSmartStorageArrayControllerCollection",
        &b,
        "Array Controllers",
        [controller_uri(sys)],
    );
    Ok(Resource::plain(v, "GET"))
}

async fn array_controller(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let c = controller_uri(sys);
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeSmartStorageArrayController.v2_2_0.HpeSmartStorageArrayController",
            "@odata.id": c,
            "Id": "0",
            "Name": "HpeSmartStorageArrayController",
            "Model": SMART_ARRAY,
            "Location": "Slot 0",
            "LocationFormat": "PCISlot",
            "Links": {
                "LogicalDrives": link(&format!("{c}/LogicalDrives/")),
                "PhysicalDrives": link(&format!("{c}/DiskDrives/")),
            },
            "Status": { "Health": "OK", "State": "Enabled" },
        }),
        "GET",
    ))
}

/// The RAID volumes (pass-through drives are no logical drives), from 1.
fn logical(sys: &System) -> Vec<&Volume> {
    sys.bmc
        .storage
        .volumes
        .iter()
        .filter(|v| v.raid_type != "None")
        .collect()
}

/// A RAID type as the Smart Array names it.
fn raid_level(t: &str) -> &str {
    match t {
        "RAID10" => "10",
        other => other.strip_prefix("RAID").unwrap_or(other),
    }
}

async fn logical_drives(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/LogicalDrives", controller_uri(sys));
    let members = (1..=logical(sys).len()).map(|n| format!("{b}/{n}"));
    let v = collection(
        "HpeSmartStorageLogicalDriveCollection",
        &b,
        "Logical Drives",
        members,
    );
    Ok(Resource::plain(v, "GET"))
}

async fn logical_drive(
    Path((_, n)): Path<(String, usize)>,
    ilo: Ilo,
) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let not_found = || ilo.not_found();
    let v = logical(sys)
        .get(n.checked_sub(1).ok_or_else(not_found)?)
        .copied()
        .ok_or_else(not_found)?;
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeSmartStorageLogicalDrive.v2_3_0.HpeSmartStorageLogicalDrive",
            "@odata.id": ilo.path,
            "Id": n.to_string(),
            "Name": "HpeSmartStorageLogicalDrive",
            "LogicalDriveName": v.name,
            "LogicalDriveNumber": n,
            "CapacityMiB": v.capacity_bytes >> 20,
            "Raid": raid_level(&v.raid_type),
            "Status": { "Health": "OK", "State": "Enabled" },
        }),
        "GET",
    ))
}

async fn disk_drives(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/DiskDrives", controller_uri(sys));
    let members = (1..=sys.disks.len()).map(|n| format!("{b}/{n}"));
    let v = collection(
        "HpeSmartStorageDiskDriveCollection",
        &b,
        "Disk Drives",
        members,
    );
    Ok(Resource::plain(v, "GET"))
}

async fn disk_drive(Path((_, n)): Path<(String, usize)>, ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let not_found = || ilo.not_found();
    let d = sys
        .disks
        .get(n.checked_sub(1).ok_or_else(not_found)?)
        .ok_or_else(not_found)?;
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeSmartStorageDiskDrive.v2_1_0.HpeSmartStorageDiskDrive",
            "@odata.id": ilo.path,
            "Id": n.to_string(),
            "Name": "HpeSmartStorageDiskDrive",
            "CapacityMiB": d.capacity_bytes >> 20,
            "CapacityGB": d.capacity_bytes / 1_000_000_000,
            "InterfaceType": "SATA",
            "MediaType": "SSD",
            "Location": format!("1I:1:{n}"),
            "LocationFormat": "ControllerPort:Box:Bay",
            "SerialNumber": format!("SHOAL{n:04}{}", d.name),
            "Status": { "Health": "OK", "State": "Enabled" },
        }),
        "GET",
    ))
}

/// The BIOS's `Oem.Hpe.Links` additions.
pub fn bios_links(sys: &System, v: &mut Value) {
    oem_hpe(v, "#HpeBiosExt.v2_0_0.HpeBiosExt")["Links"]["iScsi"] =
        link(&format!("{}/Bios/iscsi/", base(sys)));
}

async fn iscsi(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = format!("{}/Bios/iscsi", base(sys));
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeiSCSISoftwareInitiator.v2_0_0.HpeiSCSISoftwareInitiator",
            "@odata.id": b,
            "Id": "iscsi",
            "Name": "iSCSI Software Initiator Current Settings",
            "iSCSIInitiatorName": format!("iqn.2015-02.com.hpe:uefi-{}", sys.id),
            "iSCSISources": [],
            "@Redfish.Settings": {
                "@odata.type": "#Settings.v1_0_0.Settings",
                "SettingsObject": link(&format!("{b}/settings/")),
            },
        }),
        "GET",
    ))
}

/// The iSCSI settings object: read-only (no iSCSI boot), which
/// proliantutils tells by its `Allow` header.
async fn iscsi_settings(ilo: Ilo) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeiSCSISoftwareInitiator.v2_0_0.HpeiSCSISoftwareInitiator",
            "@odata.id": ilo.path,
            "Id": "settings",
            "Name": "iSCSI Software Initiator Pending Settings",
            "iSCSISources": [],
        }),
        "GET",
    ))
}

/// The Chassis's `Oem.Hpe.Links.Devices`.
pub fn chassis_links(chassis: &str, v: &mut Value) {
    oem_hpe(v, "#HpeServerChassis.v2_3_1.HpeServerChassis")["Links"]["Devices"] =
        link(&format!("/redfish/v1/Chassis/{chassis}/Devices/"));
}

/// The chassis's devices: one per PCI device, naming it in
/// `DeviceInstances`.
fn chassis_device_list(st: &AppState, sys: &System) -> Vec<Value> {
    let b = format!("/redfish/v1/Chassis/{}/Devices", st.chassis_id(sys));
    devices(sys)
        .into_iter()
        .map(|d| {
            let id = d["Id"].as_str().unwrap_or("").to_string();
            let maker = if d["ClassCode"] == json!(2) {
                "Broadcom"
            } else {
                "Microchip"
            };
            json!({
                "@odata.type": "#HpeServerDevice.v2_0_0.HpeServerDevice",
                "@odata.id": format!("{b}/{id}"),
                "Id": id,
                "Name": d["Name"],
                "Manufacturer": maker,
                "DeviceType": d["DeviceType"],
                "DeviceInstances": [link(d["@odata.id"].as_str().unwrap_or(""))],
                "Status": { "Health": "OK", "State": "Enabled" },
            })
        })
        .collect()
}

async fn chassis_devices(ilo: Ilo) -> Result<Resource, ApiError> {
    let Ilo { st, sys, .. } = &ilo;
    let b = format!("/redfish/v1/Chassis/{}/Devices", st.chassis_id(sys));
    let members = chassis_device_list(st, sys)
        .into_iter()
        .filter_map(|d| d["@odata.id"].as_str().map(String::from));
    let v = collection("HpeServerDeviceCollection", &b, "Devices", members);
    Ok(Resource::plain(v, "GET"))
}

async fn chassis_device(
    Path((_, n)): Path<(String, String)>,
    ilo: Ilo,
) -> Result<Resource, ApiError> {
    let Ilo { st, sys, .. } = &ilo;
    let d = chassis_device_list(st, sys)
        .into_iter()
        .find(|d| d["Id"] == json!(n))
        .ok_or_else(|| ilo.not_found())?;
    Ok(Resource::plain(d, "GET"))
}
