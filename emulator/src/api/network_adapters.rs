//! NetworkAdapters: the machine's NICs as the adapter that carries them,
//! under its Chassis (where DMTF puts them, sushy reads them and a
//! captured iDRAC 9 serves them). One adapter per machine (the integrated
//! NIC), one port and one Ethernet device function per NIC of the
//! machine; each function links its port and the EthernetInterface it is.
//!
//! Ids: on profiles that name NICs by Dell FQDD the adapter is
//! `NIC.Integrated.1`, its ports `NIC.Integrated.1-N` and their functions
//! `NIC.Integrated.1-N-1` (the EthernetInterfaces' Ids); elsewhere `1`,
//! `N` and `N`.

use crate::api::State;
use crate::firmware::Component;
use axum::extract::Path;
use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::json::Resource;
use super::system_parts::{not_found, OK};
use super::{collection, link, AppState, Sys};
use crate::api::error::ApiError;
use crate::model::{PowerState, System};
use crate::profile::NicIds;

pub fn router() -> Router {
    let at = |tail: &str| format!("/redfish/v1/Chassis/{{id}}/NetworkAdapters{tail}");
    Router::new()
        .route(&at(""), get(adapters))
        .route(&at("/{adapter}"), get(adapter))
        .route(&at("/{adapter}/{kind}"), get(members))
        .route(&at("/{adapter}/{kind}/{member}"), get(member))
}

/// The collections below an adapter: the deprecated `NetworkPorts` (which
/// sushy and older clients read), `Ports` and `NetworkDeviceFunctions`.
const KINDS: &[&str] = &["NetworkPorts", "Ports", "NetworkDeviceFunctions"];

/// The adapters' collection of `sys`.
fn base(st: &AppState, sys: &System) -> String {
    format!("/redfish/v1/Chassis/{}/NetworkAdapters", st.chassis_id(sys))
}

/// The adapter's Id, and the Ids of its Nth port (from 1) and that port's
/// function.
struct Names(NicIds);

impl Names {
    fn adapter(&self) -> &'static str {
        match self.0 {
            NicIds::DellFqdd => "NIC.Integrated.1",
            NicIds::Mac | NicIds::MacColons => "1",
        }
    }

    fn port(&self, n: usize) -> String {
        match self.0 {
            NicIds::DellFqdd => format!("NIC.Integrated.1-{n}"),
            NicIds::Mac | NicIds::MacColons => n.to_string(),
        }
    }

    fn function(&self, n: usize) -> String {
        match self.0 {
            NicIds::DellFqdd => format!("NIC.Integrated.1-{n}-1"),
            NicIds::Mac | NicIds::MacColons => n.to_string(),
        }
    }

    /// The member of collection `kind` named `id`: its port number.
    fn number(&self, sys: &System, kind: &str, id: &str) -> Option<usize> {
        (1..=sys.nics.len()).find(|&n| match kind {
            "NetworkDeviceFunctions" => self.function(n) == id,
            _ => self.port(n) == id,
        })
    }
}

/// The URI of the adapter of `sys` (which has one where it has NICs).
pub fn adapter_uri(st: &AppState, sys: &System) -> String {
    format!("{}/{}", base(st, sys), names(st, sys).adapter())
}

fn names(st: &AppState, sys: &System) -> Names {
    Names(st.profile(sys).inventory.nic_ids)
}

async fn adapters(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = base(&st, &sys);
    let members = (!sys.nics.is_empty()).then(|| format!("{b}/{}", names(&st, &sys).adapter()));
    Ok(Resource::plain(
        collection(
            "NetworkAdapterCollection",
            &b,
            "Network Adapter Collection",
            members,
        ),
        "GET",
    ))
}

/// The adapter `id` of `sys`, or not found.
fn check_adapter(sys: &System, names: &Names, id: &str, uri: &Uri) -> Result<(), ApiError> {
    if sys.nics.is_empty() || id != names.adapter() {
        return Err(not_found(uri));
    }
    Ok(())
}

async fn adapter(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, id)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = names(&st, &sys);
    check_adapter(&sys, &names, &id, &uri)?;
    let b = format!("{}/{id}", base(&st, &sys));
    let count = sys.nics.len();
    let ports: Vec<Value> = (1..=count)
        .map(|n| link(&format!("{b}/Ports/{}", names.port(n))))
        .collect();
    let functions: Vec<Value> = (1..=count)
        .map(|n| link(&format!("{b}/NetworkDeviceFunctions/{}", names.function(n))))
        .collect();
    let manufacturer = super::vendor::adapter_manufacturer(st.profile(&sys)).unwrap_or("Broadcom");
    let firmware = crate::bmc::firmware::installed(&sys, st.profile(&sys), Component::Nic);
    Ok(Resource::plain(
        json!({
            "@odata.type": "#NetworkAdapter.v1_9_0.NetworkAdapter",
            "@odata.id": b,
            "Id": id,
            "Name": "Network Adapter",
            "Description": "Integrated NIC",
            "Manufacturer": manufacturer,
            "Model": format!("NetXtreme BCM5720 Gigabit Ethernet ({count} ports)"),
            "PartNumber": "BCM95720",
            "SerialNumber": format!("{}N", super::systems::serial(&sys)),
            "Status": OK(),
            "Controllers": [{
                "FirmwarePackageVersion": firmware.version,
                "ControllerCapabilities": {
                    "NetworkPortCount": count,
                    "NetworkDeviceFunctionCount": count,
                },
                "Links": {
                    "Ports": ports,
                    "Ports@odata.count": count,
                    "NetworkDeviceFunctions": functions,
                    "NetworkDeviceFunctions@odata.count": count,
                },
            }],
            "NetworkPorts": link(&format!("{b}/NetworkPorts")),
            "Ports": link(&format!("{b}/Ports")),
            "NetworkDeviceFunctions": link(&format!("{b}/NetworkDeviceFunctions")),
        }),
        "GET",
    ))
}

async fn members(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, id, kind)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = names(&st, &sys);
    check_adapter(&sys, &names, &id, &uri)?;
    if !KINDS.contains(&kind.as_str()) {
        return Err(not_found(&uri));
    }
    let b = format!("{}/{id}/{kind}", base(&st, &sys));
    let (odata_type, name) = match kind.as_str() {
        "NetworkPorts" => ("NetworkPortCollection", "Network Port Collection"),
        "Ports" => ("PortCollection", "Port Collection"),
        _ => (
            "NetworkDeviceFunctionCollection",
            "Network Device Function Collection",
        ),
    };
    let members = (1..=sys.nics.len()).map(|n| match kind.as_str() {
        "NetworkDeviceFunctions" => format!("{b}/{}", names.function(n)),
        _ => format!("{b}/{}", names.port(n)),
    });
    Ok(Resource::plain(
        collection(odata_type, &b, name, members),
        "GET",
    ))
}

async fn member(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, id, kind, member)): Path<(String, String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = names(&st, &sys);
    check_adapter(&sys, &names, &id, &uri)?;
    let n = KINDS
        .contains(&kind.as_str())
        .then(|| names.number(&sys, &kind, &member))
        .flatten()
        .ok_or_else(|| not_found(&uri))?;
    let adapter = format!("{}/{id}", base(&st, &sys));
    let mac = &sys.nics[n - 1].mac;
    let up = sys.power == PowerState::On;
    let body = match kind.as_str() {
        "NetworkPorts" => json!({
            "@odata.type": "#NetworkPort.v1_4_1.NetworkPort",
            "PhysicalPortNumber": n.to_string(),
            "LinkStatus": if up { "Up" } else { "Down" },
            "CurrentLinkSpeedMbps": if up { 1000 } else { 0 },
            "AssociatedNetworkAddresses": [mac],
            "SupportedLinkCapabilities": [{ "LinkSpeedMbps": 1000 }],
        }),
        "Ports" => json!({
            "@odata.type": "#Port.v1_11_0.Port",
            "PortId": n.to_string(),
            "PortProtocol": "Ethernet",
            "PortType": "BidirectionalPort",
            "LinkState": "Enabled",
            "LinkStatus": if up { "LinkUp" } else { "LinkDown" },
            "CurrentSpeedGbps": if up { 1.0 } else { 0.0 },
            "MaxSpeedGbps": 1.0,
            "Ethernet": { "AssociatedMACAddresses": [mac] },
        }),
        _ => {
            let nic = st.profile(&sys).inventory.nic_ids.id(n - 1, mac);
            json!({
                "@odata.type": "#NetworkDeviceFunction.v1_9_0.NetworkDeviceFunction",
                "NetDevFuncType": "Ethernet",
                "NetDevFuncCapabilities": ["Ethernet"],
                "DeviceEnabled": true,
                "Ethernet": {
                    "MACAddress": mac,
                    "PermanentMACAddress": mac,
                    "MTUSize": 1500,
                },
                "Links": {
                    "PhysicalPortAssignment": link(&format!("{adapter}/NetworkPorts/{}", names.port(n))),
                    "PhysicalNetworkPortAssignment": link(&format!("{adapter}/Ports/{}", names.port(n))),
                    "EthernetInterfaces": [link(&format!("/redfish/v1/Systems/{}/EthernetInterfaces/{nic}", sys.id))],
                    "EthernetInterfaces@odata.count": 1,
                },
            })
        }
    };
    let mut body = body;
    if kind == "NetworkDeviceFunctions" {
        let port = link(&format!("{adapter}/NetworkPorts/{}", names.port(n)));
        super::vendor::function_parts(st.profile(&sys), port, &mut body);
    }
    body["@odata.id"] = json!(format!("{adapter}/{kind}/{member}"));
    body["Id"] = json!(member);
    body["Name"] = json!(match kind.as_str() {
        "NetworkDeviceFunctions" => format!("Device function of port {n}"),
        _ => format!("Port {n}"),
    });
    body["Status"] = OK();
    Ok(Resource::plain(body, "GET"))
}
