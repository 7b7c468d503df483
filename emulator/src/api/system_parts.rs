//! The read-only inventory below a system: EthernetInterfaces, Processors,
//! Memory and SimpleStorage, derived from the machine's inventory (MACs,
//! CPUs, memory, disks). Storage, with its RAID volumes, is `storage.rs`.

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::json::Resource;
use super::{collection, AppState, Sys};
use crate::api::error::ApiError;
use crate::model::System;

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/EthernetInterfaces", get(nics))
        .route(
            "/redfish/v1/Systems/{id}/EthernetInterfaces/{nic}",
            get(nic),
        )
        .route("/redfish/v1/Systems/{id}/Processors", get(processors))
        .route("/redfish/v1/Systems/{id}/Processors/{cpu}", get(processor))
        .route("/redfish/v1/Systems/{id}/Memory", get(memories))
        .route("/redfish/v1/Systems/{id}/Memory/{dimm}", get(memory))
        .route(
            "/redfish/v1/Systems/{id}/SimpleStorage",
            get(simple_storages),
        )
        .route(
            "/redfish/v1/Systems/{id}/SimpleStorage/{ctl}",
            get(simple_storage),
        )
}

pub(super) const OK: fn() -> Value = || json!({ "State": "Enabled", "Health": "OK" });
/// The one storage controller every machine has.
pub(super) const CONTROLLER: &str = "1";

pub(super) fn base(sys: &System) -> String {
    format!("/redfish/v1/Systems/{}", sys.id)
}

pub(super) fn not_found(uri: &Uri) -> ApiError {
    ApiError::NotFound(uri.path().to_string())
}

async fn nics(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let ids = st.profile(&sys).inventory.nic_ids;
    let b = format!("{}/EthernetInterfaces", base(&sys));
    let members = (sys.nics.iter().enumerate()).map(|(i, n)| format!("{b}/{}", ids.id(i, &n.mac)));
    Ok(Resource::plain(
        collection(
            "EthernetInterfaceCollection",
            &b,
            "Ethernet Interface Collection",
            members,
        ),
        "GET",
    ))
}

async fn nic(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, nic)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let ids = st.profile(&sys).inventory.nic_ids;
    let n = (sys.nics.iter().enumerate())
        .find(|(i, n)| ids.id(*i, &n.mac) == nic)
        .map(|(_, n)| n)
        .ok_or_else(|| not_found(&uri))?;
    Ok(Resource::plain(
        json!({
            "@odata.type": "#EthernetInterface.v1_9_0.EthernetInterface",
            "@odata.id": format!("{}/EthernetInterfaces/{nic}", base(&sys)),
            "Id": nic,
            "Name": "Ethernet Interface",
            "MACAddress": n.mac,
            "PermanentMACAddress": n.mac,
            "LinkStatus": if sys.power == crate::model::PowerState::On { "LinkUp" } else { "LinkDown" },
            "SpeedMbps": 1000,
            "FullDuplex": true,
            "InterfaceEnabled": true,
            "Status": OK(),
        }),
        "GET",
    ))
}

async fn processors(Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = format!("{}/Processors", base(&sys));
    Ok(Resource::plain(
        collection(
            "ProcessorCollection",
            &b,
            "Processor Collection",
            [format!("{b}/CPU0")],
        ),
        "GET",
    ))
}

async fn processor(
    Sys(sys): Sys,
    Path((_, cpu)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if cpu != "CPU0" {
        return Err(not_found(&uri));
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": "#Processor.v1_18_0.Processor",
            "@odata.id": format!("{}/Processors/CPU0", base(&sys)),
            "Id": "CPU0",
            "Name": "Processor",
            "Socket": "CPU 0",
            "ProcessorType": "CPU",
            "ProcessorArchitecture": sys.arch.processor_architecture(),
            "InstructionSet": sys.arch.instruction_set(),
            "TotalCores": sys.cpus,
            "TotalThreads": sys.cpus,
            "Status": OK(),
        }),
        "GET",
    ))
}

async fn memories(Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = format!("{}/Memory", base(&sys));
    Ok(Resource::plain(
        collection(
            "MemoryCollection",
            &b,
            "Memory Collection",
            [format!("{b}/DIMM0")],
        ),
        "GET",
    ))
}

async fn memory(
    Sys(sys): Sys,
    Path((_, dimm)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if dimm != "DIMM0" {
        return Err(not_found(&uri));
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": "#Memory.v1_17_0.Memory",
            "@odata.id": format!("{}/Memory/DIMM0", base(&sys)),
            "Id": "DIMM0",
            "Name": "DIMM 0",
            "MemoryType": "DRAM",
            "MemoryDeviceType": "DDR4",
            "CapacityMiB": sys.memory_mib,
            "OperatingSpeedMhz": 3200,
            "Status": OK(),
        }),
        "GET",
    ))
}

async fn simple_storages(Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = format!("{}/SimpleStorage", base(&sys));
    Ok(Resource::plain(
        collection(
            "SimpleStorageCollection",
            &b,
            "Simple Storage Collection",
            [format!("{b}/{CONTROLLER}")],
        ),
        "GET",
    ))
}

async fn simple_storage(
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if ctl != CONTROLLER {
        return Err(not_found(&uri));
    }
    let devices: Vec<Value> = sys
        .disks
        .iter()
        .map(|d| json!({ "Name": d.name, "CapacityBytes": d.capacity_bytes, "Status": OK() }))
        .collect();
    Ok(Resource::plain(
        json!({
            "@odata.type": "#SimpleStorage.v1_3_1.SimpleStorage",
            "@odata.id": format!("{}/SimpleStorage/{CONTROLLER}", base(&sys)),
            "Id": CONTROLLER,
            "Name": "Simple Storage Controller",
            "Devices": devices,
            "Status": OK(),
        }),
        "GET",
    ))
}
