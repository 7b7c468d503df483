//! Domain types shared by the API and the backends.
//!
//! Nothing here knows Redfish JSON: these are the machines' facts and the
//! requests made of them. The API renders them (`api/`), backends store and
//! act on them (`backend/`). Enum `as_str`/`parse` pairs are the only place
//! where the DMTF spellings of enumerations live.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

mod bmc;
mod enclosure;
pub mod firmware;

use crate::storage::Disk;
pub use bmc::{
    bios_at_start, http_boot_uri_at_start, BmcState, Change, MediaTls, Ntp, SystemSettings,
    TargetSource,
};
pub use enclosure::Enclosure;

macro_rules! redfish_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $($variant),* }

        impl $name {
            /// Every value, in DMTF order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The DMTF spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            /// Parses the DMTF spelling (case-sensitive, as Redfish is).
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
/// For DMTF enums outside the model (an EventDestination's retry policy).
pub(crate) use redfish_enum;

redfish_enum!(
    /// Processor architecture of a machine.
    Arch { X86_64 = "x86_64", Ppc64le = "ppc64le", Aarch64 = "aarch64" }
);

impl Arch {
    /// `ProcessorArchitecture` of the Processor schema.
    pub fn processor_architecture(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86",
            Arch::Ppc64le => "Power",
            Arch::Aarch64 => "ARM",
        }
    }

    /// `InstructionSet` of the Processor schema.
    pub fn instruction_set(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86-64",
            Arch::Ppc64le => "PowerISA",
            Arch::Aarch64 => "ARM-A64",
        }
    }

    /// Whether machines of this architecture have UEFI firmware at all.
    pub fn has_uefi(self) -> bool {
        !matches!(self, Arch::Ppc64le)
    }
}

redfish_enum!(
    /// Firmware boot mode (`BootSourceOverrideMode`).
    BootMode { Uefi = "UEFI", Legacy = "Legacy" }
);

redfish_enum!(
    /// `PowerState` of a ComputerSystem.
    PowerState { On = "On", Off = "Off", PoweringOn = "PoweringOn", PoweringOff = "PoweringOff" }
);

redfish_enum!(
    /// `ResetType` of `ComputerSystem.Reset`.
    ResetType {
        On = "On",
        ForceOff = "ForceOff",
        GracefulShutdown = "GracefulShutdown",
        GracefulRestart = "GracefulRestart",
        ForceRestart = "ForceRestart",
        Nmi = "Nmi",
        ForceOn = "ForceOn",
        PushPowerButton = "PushPowerButton",
        PowerCycle = "PowerCycle",
    }
);

impl ResetType {
    /// Whether this reset leaves a machine that was `before` starting (so
    /// its firmware in POST).
    pub fn starts(self, before: PowerState) -> bool {
        match self {
            ResetType::On
            | ResetType::ForceOn
            | ResetType::ForceRestart
            | ResetType::GracefulRestart
            | ResetType::PowerCycle => true,
            ResetType::PushPowerButton => before == PowerState::Off,
            ResetType::ForceOff | ResetType::GracefulShutdown | ResetType::Nmi => false,
        }
    }
}

redfish_enum!(
    /// `BootSourceOverrideTarget`.
    BootTarget {
        None = "None",
        Pxe = "Pxe",
        Floppy = "Floppy",
        Cd = "Cd",
        Usb = "Usb",
        Hdd = "Hdd",
        BiosSetup = "BiosSetup",
        Utilities = "Utilities",
        Diags = "Diags",
        UefiShell = "UefiShell",
        UefiTarget = "UefiTarget",
        SDCard = "SDCard",
        UefiHttp = "UefiHttp",
        RemoteDrive = "RemoteDrive",
        UefiBootNext = "UefiBootNext",
        Recovery = "Recovery",
        // Supermicro's name for the virtual CD (not in the DMTF enum;
        // offered only by profiles that have it).
        UsbCd = "UsbCd",
    }
);

impl BootTarget {
    /// Targets that only exist in UEFI mode.
    pub fn requires_uefi(self) -> bool {
        matches!(
            self,
            BootTarget::UefiHttp
                | BootTarget::UefiShell
                | BootTarget::UefiTarget
                | BootTarget::UefiBootNext
        )
    }
}

redfish_enum!(
    /// `BootSourceOverrideEnabled`.
    OverrideEnabled { Disabled = "Disabled", Once = "Once", Continuous = "Continuous" }
);

redfish_enum!(
    /// `IndicatorLED` (deprecated in favour of `LocationIndicatorActive`, both served).
    IndicatorLed { Lit = "Lit", Blinking = "Blinking", Off = "Off" }
);

redfish_enum!(
    /// `PowerRestorePolicy`: what the machine does when power returns
    /// after it was lost (IPMI's chassis power restore policy).
    PowerRestorePolicy { AlwaysOn = "AlwaysOn", AlwaysOff = "AlwaysOff", LastState = "LastState" }
);

impl Default for PowerRestorePolicy {
    /// Off until someone says otherwise, as IPMI's "always off".
    fn default() -> Self {
        PowerRestorePolicy::AlwaysOff
    }
}

redfish_enum!(
    /// The two virtual media devices every manager has.
    MediaSlot { Cd = "Cd", Floppy = "Floppy" }
);

redfish_enum!(
    /// `TransferProtocolType` of `VirtualMedia.InsertMedia`.
    TransferProtocol {
        Cifs = "CIFS", Ftp = "FTP", Sftp = "SFTP", Http = "HTTP", Https = "HTTPS",
        Nfs = "NFS", Scp = "SCP", Tftp = "TFTP", Oem = "OEM",
    }
);

redfish_enum!(
    /// `TransferMethod` of `VirtualMedia.InsertMedia`.
    TransferMethod { Stream = "Stream", Upload = "Upload" }
);

redfish_enum!(
    /// `ResetKeysType` of `SecureBoot.ResetKeys`.
    ResetKeysType {
        ResetAllKeysToDefault = "ResetAllKeysToDefault",
        DeleteAllKeys = "DeleteAllKeys",
        DeletePK = "DeletePK",
    }
);

/// The boot source override of a system, as a BMC stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootOverride {
    pub target: BootTarget,
    pub enabled: OverrideEnabled,
    pub mode: BootMode,
    /// `None` is JSON null: with UefiHttp, "take the URL from DHCP".
    pub http_boot_uri: Option<String>,
    pub uefi_target: Option<String>,
}

impl BootOverride {
    pub fn disabled(mode: BootMode) -> Self {
        BootOverride {
            target: BootTarget::None,
            enabled: OverrideEnabled::Disabled,
            mode,
            http_boot_uri: None,
            uefi_target: None,
        }
    }

    /// The override after one boot consumed it: `Once` reverts to
    /// Disabled/None (the mode and the URI stay, as on real BMCs).
    pub fn after_boot(&self) -> BootOverride {
        match self.enabled {
            OverrideEnabled::Once => BootOverride {
                target: BootTarget::None,
                enabled: OverrideEnabled::Disabled,
                ..self.clone()
            },
            _ => self.clone(),
        }
    }

    /// What the next boot uses, if the override is active.
    pub fn effective_target(&self) -> Option<BootTarget> {
        match (self.enabled, self.target) {
            (OverrideEnabled::Disabled, _) | (_, BootTarget::None) => None,
            // The virtual CD, attached over USB: the CD to the machine.
            (_, BootTarget::UsbCd) => Some(BootTarget::Cd),
            (_, t) => Some(t),
        }
    }
}

/// What is (or is not) in one virtual media device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MediaState {
    pub image: Option<String>,
    pub inserted: bool,
    pub write_protected: bool,
    pub transfer_protocol: Option<TransferProtocol>,
    pub transfer_method: Option<TransferMethod>,
    pub user_name: Option<String>,
}

/// An InsertMedia request after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaImage {
    pub image: String,
    pub inserted: bool,
    pub write_protected: bool,
    pub transfer_protocol: Option<TransferProtocol>,
    pub transfer_method: Option<TransferMethod>,
    pub user_name: Option<String>,
    pub password: Option<String>,
    /// Whether an HTTPS server's certificate is checked (the device's
    /// `VerifyCertificate`); `None`: the service's default.
    pub verify: Option<bool>,
    /// The CAs (DER) it is checked against; empty: the trusted roots.
    pub cas: Vec<Vec<u8>>,
}

impl MediaImage {
    /// The image fetched with the device's certificate checking.
    pub fn checked_by(mut self, tls: &MediaTls) -> Self {
        self.verify = tls.verify;
        self.cas = tls.certs.certs.iter().map(|c| c.der.clone()).collect();
        self
    }
}

impl From<&MediaImage> for MediaState {
    /// What the device holds once the image is in (the password is not kept).
    fn from(img: &MediaImage) -> Self {
        MediaState {
            image: Some(img.image.clone()),
            inserted: img.inserted,
            write_protected: img.write_protected,
            transfer_protocol: img.transfer_protocol,
            transfer_method: img.transfer_method,
            user_name: img.user_name.clone(),
        }
    }
}

/// UEFI Secure Boot state of a system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecureBoot {
    /// What the user asked for (`SecureBootEnable`).
    pub enable: bool,
    /// What the last boot ran with (`SecureBootCurrentBoot`).
    pub current_boot: bool,
    /// Whether the platform key is enrolled (`UserMode`) or not (`SetupMode`).
    pub keys_enrolled: bool,
}

/// BIOS attributes: the current set and the set staged for the next reset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BiosState {
    pub current: BTreeMap<String, serde_json::Value>,
    pub pending: BTreeMap<String, serde_json::Value>,
    /// The staged set waits for a configuration job (an iDRAC applies
    /// staged attributes only through one): a reset leaves it staged.
    #[serde(default)]
    pub held: bool,
}

impl BiosState {
    /// The attributes the next start applies.
    pub fn applying(&self) -> Option<&BTreeMap<String, serde_json::Value>> {
        (!self.held).then_some(&self.pending)
    }
}

/// What the machine last booted, as the backend observed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRecord {
    /// Seconds since the Unix epoch.
    pub at: u64,
    /// Which boot of the machine this is (1, 2, ...): two boots within a
    /// second differ by it.
    #[serde(default)]
    pub number: u64,
    pub target: BootTarget,
    pub mode: BootMode,
    pub uri: Option<String>,
    pub media: Option<String>,
}

/// A network interface of the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    pub mac: String,
}

/// A snapshot of one machine, everything the API renders: what the machine
/// is (its hardware, from the inventory or the domain definition), its
/// power state, and what its BMC keeps about it ([`BmcState`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct System {
    /// The Redfish `Id` (the UUID, hyphenated lower case).
    pub id: String,
    pub name: String,
    pub uuid: Uuid,
    pub arch: Arch,
    pub memory_mib: u64,
    pub cpus: u32,
    pub disks: Vec<Disk>,
    pub nics: Vec<Nic>,
    pub power: PowerState,
    pub profile: String,
    /// Flattened, so a state file keeps the shape it always had.
    #[serde(flatten)]
    pub bmc: BmcState,
}

impl System {
    /// Whether the firmware runs in UEFI mode. The override's mode is the
    /// firmware mode: setting `BootSourceOverrideMode` switches it, as
    /// Ironic's boot-mode management expects.
    pub fn uefi(&self) -> bool {
        self.arch.has_uefi() && self.bmc.boot.mode == BootMode::Uefi
    }

    /// Boot targets this machine can honour (before profile filtering).
    pub fn boot_targets(&self) -> Vec<BootTarget> {
        use BootTarget::*;
        let mut v = vec![None, Pxe, Cd, Usb, Hdd, BiosSetup, Floppy];
        if self.uefi() {
            v.extend([UefiShell, UefiTarget, UefiHttp]);
        }
        v
    }
}

/// A short reference to a system, for collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemRef {
    pub id: String,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_is_consumed_by_a_boot() {
        let b = BootOverride {
            target: BootTarget::UefiHttp,
            enabled: OverrideEnabled::Once,
            mode: BootMode::Uefi,
            http_boot_uri: Some("http://h/x.iso".into()),
            uefi_target: None,
        };
        let after = b.after_boot();
        assert_eq!(after.enabled, OverrideEnabled::Disabled);
        assert_eq!(after.target, BootTarget::None);
        assert_eq!(after.http_boot_uri.as_deref(), Some("http://h/x.iso"));
        let cont = BootOverride {
            enabled: OverrideEnabled::Continuous,
            ..b
        };
        assert_eq!(cont.after_boot(), cont);
    }

    #[test]
    fn enum_spellings_round_trip() {
        for t in BootTarget::ALL {
            assert_eq!(BootTarget::parse(t.as_str()), Some(*t));
        }
        assert_eq!(ResetType::parse("forceoff"), None);
    }
}
