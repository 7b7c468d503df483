//! The BIOS attributes Shoal's machines have, with their types and defaults.
//!
//! One table serves the backends (defaults), the API's validation of
//! PATCHes to `Bios/Settings` and its attribute registry
//! (`api/bios_registry.rs`). Attribute names follow common vendor
//! spellings so driver code has familiar names to set.

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy)]
pub enum AttrKind {
    Enum(&'static [&'static str]),
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// One line of text (`api::input`'s text rule).
    Str {
        max_len: usize,
    },
    /// A boot URI the firmware fetches (`api::input`'s boot URI rule), or
    /// empty: none.
    Uri {
        max_len: usize,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct AttrDef {
    pub name: &'static str,
    pub kind: AttrKind,
    pub default: DefaultValue,
}

#[derive(Debug, Clone, Copy)]
pub enum DefaultValue {
    Str(&'static str),
    Bool(bool),
    Int(i64),
}

const ENABLED: &[&str] = &["Enabled", "Disabled"];
/// The integrated NIC's ports by Dell FQDD (`PxeDevNInterface`).
const NIC_PORTS: &[&str] = &[
    "NIC.Integrated.1-1-1",
    "NIC.Integrated.1-2-1",
    "NIC.Integrated.1-3-1",
    "NIC.Integrated.1-4-1",
];

/// `OneTimeBootMode`'s value that boots `OneTimeUefiBootSeqDev` once.
pub const ONE_TIME_UEFI: &str = "OneTimeUefiBootSeq";

/// The UEFI boot devices an iDRAC's BIOS names by FQDD: the boot disk
/// (the controller's volume, or the first drive), the PXE devices 1-4
/// (`PxeDevN*`), HTTP device 1 (`HttpDev1*`), the iDRAC's virtual CD and
/// floppy.
const ONE_TIME_DEVICES: &[&str] = &[
    "RAID.Integrated.1-1",
    "Disk.Bay.0:Enclosure.Internal.0-1",
    "NIC.PxeDevice.1-1",
    "NIC.PxeDevice.2-1",
    "NIC.PxeDevice.3-1",
    "NIC.PxeDevice.4-1",
    "NIC.HttpDevice.1-1",
    "Optical.iDRACVirtual.1-1",
    "Floppy.iDRACVirtual.1-1",
];

pub const ATTRIBUTES: &[AttrDef] = &[
    AttrDef {
        name: "ProcTurboMode",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Enabled"),
    },
    AttrDef {
        name: "ProcVirtualization",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Enabled"),
    },
    AttrDef {
        name: "ProcHyperThreading",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Enabled"),
    },
    AttrDef {
        name: "SriovGlobalEnable",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "EmbeddedSata",
        kind: AttrKind::Enum(&["AhciMode", "RaidMode", "Off"]),
        default: DefaultValue::Str("AhciMode"),
    },
    AttrDef {
        name: "NumLock",
        kind: AttrKind::Enum(&["On", "Off"]),
        default: DefaultValue::Str("On"),
    },
    AttrDef {
        name: "QuietBoot",
        kind: AttrKind::Bool,
        default: DefaultValue::Bool(true),
    },
    AttrDef {
        name: "PowerOnDelaySeconds",
        kind: AttrKind::Int { min: 0, max: 600 },
        default: DefaultValue::Int(0),
    },
    // Dell's UEFI PXE devices: each enabled or not, and the NIC port it
    // boots by FQDD (`NIC.Integrated.1-N-1`, the EthernetInterfaces' Ids
    // on the iDRAC profiles). Ironic's idrac inspection reads all four
    // pairs to mark the PXE ports.
    AttrDef {
        name: "PxeDev1EnDis",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Enabled"),
    },
    AttrDef {
        name: "PxeDev1Interface",
        kind: AttrKind::Enum(NIC_PORTS),
        default: DefaultValue::Str("NIC.Integrated.1-1-1"),
    },
    AttrDef {
        name: "PxeDev2EnDis",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "PxeDev2Interface",
        kind: AttrKind::Enum(NIC_PORTS),
        default: DefaultValue::Str("NIC.Integrated.1-2-1"),
    },
    AttrDef {
        name: "PxeDev3EnDis",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "PxeDev3Interface",
        kind: AttrKind::Enum(NIC_PORTS),
        default: DefaultValue::Str("NIC.Integrated.1-3-1"),
    },
    AttrDef {
        name: "PxeDev4EnDis",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "PxeDev4Interface",
        kind: AttrKind::Enum(NIC_PORTS),
        default: DefaultValue::Str("NIC.Integrated.1-4-1"),
    },
    AttrDef {
        name: "HttpDev1EnDis",
        kind: AttrKind::Enum(ENABLED),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "HttpDev1Uri",
        kind: AttrKind::Uri { max_len: 1024 },
        default: DefaultValue::Str(""),
    },
    // Dell's "TLS Authentication Mode" of HTTP device 1: OneWay, the
    // client checks the server against the enrolled CAs; None, neither
    // side is checked (Shoal's firmware, OVMF, always checks).
    AttrDef {
        name: "HttpDev1TlsMode",
        kind: AttrKind::Enum(&["None", "OneWay"]),
        default: DefaultValue::Str("None"),
    },
    // Dell's one-time boot in the BIOS: with `OneTimeBootMode`
    // `OneTimeUefiBootSeq` the next start boots `OneTimeUefiBootSeqDev`
    // (by FQDD, as Dell's scripts and Ansible modules set them), then the
    // mode returns to Disabled (`model::bmc`). The legacy-BIOS and custom
    // sequences are not modelled: their values are refused.
    AttrDef {
        name: "OneTimeBootMode",
        kind: AttrKind::Enum(&["Disabled", ONE_TIME_UEFI]),
        default: DefaultValue::Str("Disabled"),
    },
    AttrDef {
        name: "OneTimeUefiBootSeqDev",
        kind: AttrKind::Enum(ONE_TIME_DEVICES),
        default: DefaultValue::Str("RAID.Integrated.1-1"),
    },
    AttrDef {
        name: "UrlBootFile",
        kind: AttrKind::Uri { max_len: 1024 },
        default: DefaultValue::Str(""),
    },
    // HPE's pre-boot network: the NIC network boot uses (Auto: any) and
    // whether it takes its address from DHCP. Shoal's machines have one
    // NIC and their firmware (OVMF) always asks DHCP, so those are the
    // values there are.
    AttrDef {
        name: "PreBootNetwork",
        kind: AttrKind::Enum(&["Auto"]),
        default: DefaultValue::Str("Auto"),
    },
    AttrDef {
        name: "Dhcpv4",
        kind: AttrKind::Enum(&["Enabled"]),
        default: DefaultValue::Str("Enabled"),
    },
    // HPE's Pre-Boot Network Environment: the IP version of network boot
    // (Auto: both). Shoal's libvirt machines honour it for UefiHttp.
    AttrDef {
        name: "PrebootNetworkEnvPolicy",
        kind: AttrKind::Enum(&["Auto", "IPv4", "IPv6"]),
        default: DefaultValue::Str("Auto"),
    },
    AttrDef {
        name: "AssetTagBios",
        kind: AttrKind::Str { max_len: 64 },
        default: DefaultValue::Str(""),
    },
];

impl DefaultValue {
    pub fn to_json(self) -> Value {
        match self {
            DefaultValue::Str(s) => json!(s),
            DefaultValue::Bool(b) => json!(b),
            DefaultValue::Int(i) => json!(i),
        }
    }
}

pub fn lookup(name: &str) -> Option<&'static AttrDef> {
    ATTRIBUTES.iter().find(|a| a.name == name)
}

/// The factory defaults, as a fresh machine has them.
pub fn defaults() -> std::collections::BTreeMap<String, Value> {
    ATTRIBUTES
        .iter()
        .map(|a| (a.name.to_string(), a.default.to_json()))
        .collect()
}
