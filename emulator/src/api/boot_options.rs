//! A System's `BootOptions` and its `Boot.BootOrder`: the UEFI load
//! options the machine's firmware has, made from what the machine has
//! (each disk, each NIC's PXE and HTTP over IPv4, the virtual CD and
//! USB key), named as OVMF names them, in the order the firmware tries
//! them without an override (disks first). Read-only: the order and the
//! options belong to the firmware (`BootOrder` is not writable here), as
//! Ansible's `GetBootOrder`, Dell's `idrac_boot` and HPE's boot settings
//! (`Bios/boot`, which lists the same sources) read them.

use axum::extract::Path;
use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::json::Resource;
use super::{collection, Sys};
use crate::api::error::ApiError;
use crate::model::System;

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/BootOptions", get(list))
        .route("/redfish/v1/Systems/{id}/BootOptions/{n}", get(option))
}

/// One boot source of the machine.
pub struct Source {
    /// `Boot0001` …, in the firmware's order.
    pub reference: String,
    /// What OVMF calls it.
    pub display: String,
    /// The `BootSourceOverrideTarget` it boots as.
    pub alias: &'static str,
    pub device_path: String,
    /// iLO's structured boot string (`HD.Emb.1.1`, `NIC.LOM.1.1.IPv4`, …).
    pub structured: String,
    /// iLO's boot string (proliantutils tells the device by it).
    pub hpe_string: String,
}

/// The machine's boot sources, in the firmware's order.
pub fn sources(sys: &System) -> Vec<Source> {
    let mut out = Vec::new();
    let mut push = |display: String, alias, device_path: String, structured: String, hpe_string| {
        out.push(Source {
            reference: format!("Boot{:04X}", out.len() + 1),
            display,
            alias,
            device_path,
            structured,
            hpe_string,
        });
    };
    for (i, d) in sys.disks.iter().enumerate() {
        push(
            format!(
                "UEFI Disk {} ({}, {} GiB)",
                i + 1,
                d.name,
                d.capacity_bytes >> 30
            ),
            "Hdd",
            format!("PciRoot(0x0)/Pci(0x17,0x0)/Sata(0x{i:X},0x0,0x0)"),
            format!("HD.Emb.1.{}", i + 1),
            format!(
                "Embedded SATA Port {} HDD : {} {} GiB",
                i + 1,
                d.name,
                d.capacity_bytes >> 30
            ),
        );
    }
    for (i, n) in sys.nics.iter().enumerate() {
        let port = i + 1;
        let mac = n.mac.replace(':', "").to_uppercase();
        let pci = format!("PciRoot(0x0)/Pci(0x1C,0x0)/Pci(0x0,0x{i:X})/MAC({mac},0x1)");
        for (alias, what, kind, hpe_what, tail) in [
            ("Pxe", "PXEv4", "IPv4", "PXE IPv4", "/IPv4(0.0.0.0)"),
            (
                "UefiHttp",
                "HTTPv4",
                "Httpv4",
                "HTTP(S) IPv4",
                "/IPv4(0.0.0.0)/Uri()",
            ),
        ] {
            push(
                format!("UEFI {what} (MAC:{mac})"),
                alias,
                format!("{pci}{tail}"),
                format!("NIC.LOM.1.{port}.{kind}"),
                format!("Embedded LOM 1 Port {port} : Virtual Ethernet Adapter - NIC ({hpe_what})"),
            );
        }
    }
    push(
        "UEFI Virtual USB Key".into(),
        "Usb",
        "PciRoot(0x0)/Pci(0x14,0x0)/USB(0x1,0x0)".into(),
        "FD.Virtual.1.1".into(),
        "iLO Virtual USB 1 : HPE Virtual USB Key".into(),
    );
    push(
        "UEFI Virtual CD-ROM".into(),
        "Cd",
        "PciRoot(0x0)/Pci(0x14,0x0)/USB(0x2,0x0)".into(),
        "CD.Virtual.2.1".into(),
        "iLO Virtual USB 2 : HPE Virtual CD-ROM".into(),
    );
    out
}

/// `Boot.BootOptions` and `Boot.BootOrder` of the System.
pub fn boot_parts(sys: &System, boot: &mut Value) {
    boot["BootOptions"] =
        json!({ "@odata.id": format!("/redfish/v1/Systems/{}/BootOptions", sys.id) });
    boot["BootOrder"] = json!(sources(sys)
        .into_iter()
        .map(|s| s.reference)
        .collect::<Vec<_>>());
}

/// Only machines with UEFI have load options.
fn uefi(sys: &System, uri: &Uri) -> Result<(), ApiError> {
    match sys.arch.has_uefi() {
        true => Ok(()),
        false => Err(ApiError::NotFound(uri.path().to_string())),
    }
}

async fn list(Sys(sys): Sys, uri: Uri) -> Result<Resource, ApiError> {
    uefi(&sys, &uri)?;
    let b = format!("/redfish/v1/Systems/{}/BootOptions", sys.id);
    let members = sources(&sys)
        .into_iter()
        .map(|s| format!("{b}/{}", s.reference));
    Ok(Resource::plain(
        collection("BootOptionCollection", &b, "Boot Options", members),
        "GET",
    ))
}

async fn option(
    Sys(sys): Sys,
    Path((_, n)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    uefi(&sys, &uri)?;
    let s = sources(&sys)
        .into_iter()
        .find(|s| s.reference == n)
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    Ok(Resource::plain(
        json!({
            "@odata.type": "#BootOption.v1_0_4.BootOption",
            "@odata.id": uri.path(),
            "Id": s.reference,
            "Name": s.display,
            "DisplayName": s.display,
            "BootOptionReference": s.reference,
            "BootOptionEnabled": true,
            "Alias": s.alias,
            "UefiDevicePath": s.device_path,
        }),
        "GET",
    ))
}
