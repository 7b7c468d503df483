//! `$metadata` (the OData CSDL document) and the DMTF schema files it
//! references, served from the CSDL embedded at build time.
//!
//! `SCHEMAS` is the one list of schema versions Shoal renders; a test checks
//! that each exists in the embedded DSP8010 set and that every `@odata.type`
//! the API emits is listed here.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::api::error::ApiError;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/csdl.rs"));
}
pub use embedded::CSDL;

/// (schema file stem, versioned namespace Shoal uses or "" for unversioned).
pub const SCHEMAS: &[(&str, &str)] = &[
    ("AccountService", "AccountService.v1_15_0"),
    ("ActionInfo", "ActionInfo.v1_4_0"),
    ("AttributeRegistry", "AttributeRegistry.v1_3_6"),
    ("Bios", "Bios.v1_2_0"),
    ("BootOption", "BootOption.v1_0_4"),
    ("BootOptionCollection", ""),
    ("Certificate", "Certificate.v1_8_0"),
    ("CertificateCollection", ""),
    ("CertificateLocations", "CertificateLocations.v1_0_4"),
    ("CertificateService", "CertificateService.v1_1_0"),
    ("Chassis", "Chassis.v1_25_0"),
    ("ChassisCollection", ""),
    ("ComputerSystem", "ComputerSystem.v1_22_0"),
    ("ComputerSystemCollection", ""),
    ("Drive", "Drive.v1_17_0"),
    ("EnvironmentMetrics", "EnvironmentMetrics.v1_3_0"),
    ("EthernetInterface", "EthernetInterface.v1_9_0"),
    ("Event", "Event.v1_7_0"),
    ("EventDestination", "EventDestination.v1_14_1"),
    ("EventDestinationCollection", ""),
    ("EventService", "EventService.v1_10_0"),
    ("EthernetInterfaceCollection", ""),
    ("LogEntry", "LogEntry.v1_21_0"),
    ("LogEntryCollection", ""),
    ("LogService", "LogService.v1_9_0"),
    ("LogServiceCollection", ""),
    ("Manager", "Manager.v1_19_0"),
    ("ManagerAccount", "ManagerAccount.v1_12_0"),
    ("ManagerAccountCollection", ""),
    ("ManagerCollection", ""),
    ("ManagerNetworkProtocol", "ManagerNetworkProtocol.v1_10_0"),
    ("Memory", "Memory.v1_17_0"),
    ("MemoryCollection", ""),
    ("Message", "Message.v1_1_1"),
    ("MessageRegistry", "MessageRegistry.v1_6_0"),
    ("MessageRegistryFile", "MessageRegistryFile.v1_1_3"),
    ("MessageRegistryFileCollection", ""),
    ("NetworkAdapter", "NetworkAdapter.v1_9_0"),
    ("NetworkAdapterCollection", ""),
    ("NetworkDeviceFunction", "NetworkDeviceFunction.v1_9_0"),
    ("NetworkDeviceFunctionCollection", ""),
    ("NetworkPort", "NetworkPort.v1_4_1"),
    ("NetworkPortCollection", ""),
    ("Port", "Port.v1_11_0"),
    ("PortCollection", ""),
    ("Power", "Power.v1_7_1"),
    ("Processor", "Processor.v1_18_0"),
    ("ProcessorCollection", ""),
    ("RedfishExtensions", "RedfishExtensions.v1_0_0"),
    ("Resource", "Resource.v1_16_0"),
    ("Role", "Role.v1_3_1"),
    ("RoleCollection", ""),
    ("SecureBoot", "SecureBoot.v1_1_0"),
    ("SecureBootDatabase", "SecureBootDatabase.v1_0_1"),
    ("SecureBootDatabaseCollection", ""),
    ("ServiceRoot", "ServiceRoot.v1_17_0"),
    ("Session", "Session.v1_7_0"),
    ("SessionCollection", ""),
    ("SessionService", "SessionService.v1_1_9"),
    ("Settings", "Settings.v1_4_0"),
    ("SimpleStorage", "SimpleStorage.v1_3_1"),
    ("SimpleStorageCollection", ""),
    ("SoftwareInventory", "SoftwareInventory.v1_10_0"),
    ("SoftwareInventoryCollection", ""),
    ("Storage", "Storage.v1_15_0"),
    ("StorageCollection", ""),
    ("StorageController", "StorageController.v1_7_0"),
    ("StorageControllerCollection", ""),
    ("Task", "Task.v1_7_0"),
    ("TaskCollection", ""),
    ("TaskService", "TaskService.v1_2_0"),
    ("Thermal", "Thermal.v1_7_1"),
    ("UpdateService", "UpdateService.v1_11_0"),
    ("VirtualMedia", "VirtualMedia.v1_6_0"),
    ("VirtualMediaCollection", ""),
    ("Volume", "Volume.v1_9_0"),
    ("VolumeCollection", ""),
];

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/$metadata", get(metadata))
        .route("/redfish/v1/Schemas/{file}", get(schema_file))
}

fn xml(body: String) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    h.insert("OData-Version", HeaderValue::from_static("4.0"));
    h.insert(header::ALLOW, HeaderValue::from_static("GET"));
    r
}

/// The `$metadata` document: one reference per schema file Shoal uses.
pub fn metadata_document() -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<edmx:Edmx xmlns:edmx=\"http://docs.oasis-open.org/odata/ns/edmx\" Version=\"4.0\">\n",
    );
    for (file, ns) in SCHEMAS {
        s.push_str(&format!("  <edmx:Reference Uri=\"/redfish/v1/Schemas/{file}_v1.xml\">\n    <edmx:Include Namespace=\"{file}\"/>\n"));
        if !ns.is_empty() {
            s.push_str(&format!("    <edmx:Include Namespace=\"{ns}\"/>\n"));
        }
        s.push_str("  </edmx:Reference>\n");
    }
    s.push_str(
        "  <edmx:DataServices>\n    <Schema xmlns=\"http://docs.oasis-open.org/odata/ns/edm\" Namespace=\"Service\">\n      <EntityContainer Name=\"Service\" Extends=\"ServiceRoot.v1_17_0.ServiceContainer\"/>\n    </Schema>\n  </edmx:DataServices>\n</edmx:Edmx>\n",
    );
    s
}

async fn metadata() -> Response {
    xml(metadata_document())
}

async fn schema_file(Path(file): Path<String>) -> Result<Response, ApiError> {
    CSDL.iter()
        .find(|(name, _)| *name == file)
        .map(|(_, text)| xml(text.to_string()))
        .ok_or_else(|| ApiError::NotFound(format!("/redfish/v1/Schemas/{file}")))
}

/// Whether the embedded CSDL defines `namespace` (e.g. `ComputerSystem.v1_22_0`).
pub fn namespace_exists(namespace: &str) -> bool {
    let stem = namespace.split('.').next().unwrap_or("");
    let file = format!("{stem}_v1.xml");
    let needle = format!("Namespace=\"{namespace}\"");
    CSDL.iter()
        .any(|(name, text)| *name == file && text.contains(&needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_namespace_exists_in_dsp8010() {
        assert!(
            CSDL.len() > 200,
            "CSDL set looks incomplete: {}",
            CSDL.len()
        );
        for (file, ns) in SCHEMAS {
            assert!(
                CSDL.iter().any(|(n, _)| *n == format!("{file}_v1.xml")),
                "{file}"
            );
            if !ns.is_empty() {
                assert!(namespace_exists(ns), "{ns} not in the CSDL");
            }
        }
    }
}
