//! Behaviour profiles: BMC quirks as data.
//!
//! A profile is a TOML file (the built-in ones are `emulator/profiles/*.toml`,
//! compiled in; `--profile-dir` adds a user's) read into [`Profile`], whose
//! fields are the hooks handlers ask: identity strings and OEM blocks, the
//! ETag style and If-Match policy, and how the Boot object behaves (where its
//! AllowableValues are, a settings object and which Boot fields go there,
//! Continuous refused, Mode or Enabled required, HttpBootUri absent). Handlers
//! never test a vendor name. Each quirk cites where it comes from
//! (`[[sources]]`: a public source naming the vendor, or `synthetic = true`);
//! the loader refuses a quirk without either.
//!
//! Profiles are loaded once at start-up and live for the whole process
//! (`&'static`), so a system's profile is a plain reference.
//!
//! This module holds the profile's data types; `behaviour` the hooks over
//! them (what a handler asks of a profile); `check` validates a file (`Profile::parse`, the quirks and their
//! sources), `load` holds the built-in profiles and `Profiles`.

use serde::Deserialize;

mod behaviour;
mod check;
pub mod dell;
pub mod event_messages;
mod load;
pub mod logs;
#[cfg(test)]
mod tests;
pub mod update;

pub use check::QUIRKS;
pub use load::{generic, ProfileError, Profiles};

/// How a BMC emits and compares ETags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EtagStyle {
    /// `ETag: "abc"`, compared strongly or weakly as the client asks.
    #[default]
    Strong,
    /// `ETag: W/"abc"`.
    Weak,
    /// No ETag at all; If-Match is ignored.
    None,
}

/// Where the Boot object's `@Redfish.AllowableValues` annotations are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AllowableValues {
    /// On the System, as the schema has it.
    #[default]
    System,
    /// Only in the Boot object of the settings object.
    Settings,
    /// Nowhere.
    Absent,
}

/// How the BMC treats `Boot.HttpBootUri` (UEFI systems).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HttpBootUri {
    /// Shown and writable.
    #[default]
    Writable,
    /// Shown, but a PATCH of it is refused.
    ReadOnly,
    /// Not shown; a PATCH of it is refused as unknown. The URI then goes
    /// through the firmware's own BIOS attributes.
    Absent,
}

/// A message of the vendor's own registry, sent after the Base message
/// that says the same, as the vendor's firmware words it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorMessage {
    /// The full `MessageId` (`IDRAC.2.9.SYS518`).
    pub id: String,
    pub message: String,
    #[serde(default = "critical")]
    pub severity: String,
    #[serde(default = "no_resolution")]
    pub resolution: String,
}

fn critical() -> String {
    "Critical".into()
}

fn no_resolution() -> String {
    "None.".into()
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Etag {
    #[serde(default)]
    pub style: EtagStyle,
    /// PATCH without If-Match is refused with 428.
    #[serde(default)]
    pub if_match_required: bool,
    /// If-Match is compared strongly (RFC 9110): a weak tag, even the one
    /// the BMC sent, gets 412 (sushy then retries with the strong form).
    #[serde(default)]
    pub strict_if_match: bool,
}

/// A settings object (`@Redfish.Settings`) for the System's Boot fields.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsObject {
    /// The path under the System (`Settings`, `Pending`, `SD`).
    pub path: String,
    /// Boot fields the settings object shows and takes; a PATCH of any
    /// other Boot field there is refused.
    #[serde(default)]
    pub fields: Vec<String>,
    /// When set, a PATCH of one of `fields` on the System itself is refused
    /// with this message (the firmware wants them in the settings object).
    pub refused_on_system: Option<VendorMessage>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    #[serde(default)]
    pub allowable_values: AllowableValues,
    pub settings: Option<SettingsObject>,
    /// `BootSourceOverrideEnabled: Continuous` is offered and taken.
    #[serde(default = "yes")]
    pub continuous: bool,
    /// Every Boot PATCH must carry `BootSourceOverrideMode`.
    #[serde(default)]
    pub mode_required: bool,
    /// Every Boot PATCH must carry `BootSourceOverrideEnabled`.
    #[serde(default)]
    pub enabled_required: bool,
    #[serde(default)]
    pub http_boot_uri: HttpBootUri,
    /// Sent after the Base message when a PATCH of HttpBootUri is refused.
    pub http_boot_uri_refusal: Option<VendorMessage>,
    /// Targets the BMC hides even when the machine could boot them.
    #[serde(default)]
    pub hidden_targets: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Default for Boot {
    fn default() -> Self {
        Boot {
            allowable_values: AllowableValues::System,
            settings: None,
            continuous: true,
            mode_required: false,
            enabled_required: false,
            http_boot_uri: HttpBootUri::Writable,
            http_boot_uri_refusal: None,
            hidden_targets: Vec::new(),
        }
    }
}

/// Transient states after power actions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Power {
    /// After a power-on the host is in POST this long, and a Boot PATCH is
    /// refused (400) meanwhile, with `post_refusal` after the Base message
    /// (iLO).
    #[serde(default)]
    pub post_secs: u64,
    pub post_refusal: Option<VendorMessage>,
    /// After a power action the BMC refuses another this long with a 409
    /// (and `busy_refusal`, when the vendor's message is known) (iDRAC 10).
    #[serde(default)]
    pub busy_secs: u64,
    pub busy_refusal: Option<VendorMessage>,
    /// The Base message of that refusal.
    #[serde(default)]
    pub busy_base: BusyBase,
}

/// The Base message a BMC busy with its last power action answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum BusyBase {
    /// `ResourceInUse`.
    #[default]
    ResourceInUse,
    /// `ActionParameterValueConflict` naming `ResetType` and the value
    /// refused (iDRAC 10, whose refusal Ironic retries).
    ActionParameterValueConflict,
}

/// InsertMedia's parameters besides `Image` (what a profile may refuse or
/// require, and what a PATCH of a VirtualMedia resource may set).
pub const INSERT_PARAMS: &[&str] = &[
    "Inserted",
    "WriteProtected",
    "TransferProtocolType",
    "TransferMethod",
    "UserName",
    "Password",
];

/// Virtual media quirks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VirtualMedia {
    /// `UsbCd` is offered as a boot target and boots the virtual CD
    /// (Supermicro).
    #[serde(default)]
    pub usb_cd: bool,
    /// InsertMedia parameters refused when present (Supermicro refuses
    /// `Inserted` and `WriteProtected`).
    #[serde(default)]
    pub insert_refuses: Vec<String>,
    /// InsertMedia parameters required (NVIDIA DGX: `UserName`,
    /// `Password`).
    #[serde(default)]
    pub insert_requires: Vec<String>,
    /// EjectMedia without a JSON body is refused (iLO wants `{}`).
    #[serde(default)]
    pub eject_needs_body: bool,
    /// No Insert/Eject actions: media is inserted and ejected by a PATCH of
    /// the VirtualMedia resource (Lenovo).
    #[serde(default)]
    pub insert_by_patch: bool,
    /// The Ids of the two devices (the CD, then the removable one) under
    /// the System; empty: no VirtualMedia there.
    #[serde(default = "default_slot_ids")]
    pub system_ids: Vec<String>,
    /// The same under the Manager.
    #[serde(default = "default_slot_ids")]
    pub manager_ids: Vec<String>,
    /// `MediaTypes` of both devices under the System, when they take the
    /// same (iDRAC: CD, DVD and USBStick each).
    #[serde(default)]
    pub system_media_types: Vec<String>,
    /// Each device's Name and MediaTypes (the CD's, then the removable
    /// one's) where a configuration gives its own (sushy-tools'
    /// `SUSHY_EMULATOR_VMEDIA_DEVICES`); there an empty Id in
    /// `system_ids`/`manager_ids` is a device not served.
    #[serde(skip)]
    pub devices: Option<[(String, Vec<String>); 2]>,
}

impl Default for VirtualMedia {
    fn default() -> Self {
        VirtualMedia {
            usb_cd: false,
            insert_refuses: Vec::new(),
            insert_requires: Vec::new(),
            eject_needs_body: false,
            insert_by_patch: false,
            system_ids: default_slot_ids(),
            manager_ids: default_slot_ids(),
            system_media_types: Vec::new(),
            devices: None,
        }
    }
}

fn default_slot_ids() -> Vec<String> {
    vec!["Cd".into(), "Floppy".into()]
}

impl VirtualMedia {
    /// The device Ids under the System (`under_system`) or the Manager;
    /// `None` when there are none there.
    pub fn ids(&self, under_system: bool) -> Option<[&str; 2]> {
        let ids = if under_system {
            &self.system_ids
        } else {
            &self.manager_ids
        };
        match ids.as_slice() {
            [cd, removable] => Some([cd.as_str(), removable.as_str()]),
            _ => None,
        }
    }
}

/// How the vendor's BMC says it is busy: the error an injected failure
/// carries (`faults.rs`), and which clients know to retry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Busy {
    pub status: u16,
    #[serde(flatten)]
    pub message: VendorMessage,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    pub busy: Option<Busy>,
}

/// `Oem` blocks, as the vendor's firmware shows them.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Oem {
    pub system: Option<toml::Table>,
    pub manager: Option<toml::Table>,
}

/// The fixed resource Ids of the vendor's BMC, used where a system has an
/// endpoint of its own (`System.Embedded.1`, `iDRAC.Embedded.1`; `1`;
/// `Self`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    pub system: String,
    pub manager: String,
    pub chassis: String,
}

/// Where the quirks of a profile come from: a public source that names the
/// vendor (a code line in a client that special-cases it, a vendor document,
/// a bug report), or a mark that they are Shoal's own invention.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The quirks this entry covers, as profile keys (`etag.style`,
    /// `boot.hidden_targets`, ...; see [`QUIRKS`]).
    pub quirks: Vec<String>,
    /// A URL or repository + path (+ commit) that shows the behaviour.
    #[serde(default)]
    pub reference: String,
    /// One line on what the reference shows (or, when synthetic, why the
    /// quirk is there).
    #[serde(alias = "behaviour")]
    pub shows: String,
    /// No public source shows this vendor doing it: Shoal made it up (to
    /// exercise a client path), and says so.
    #[serde(default)]
    pub synthetic: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// `ServiceRoot.Vendor`: what clients key vendor quirks on (Ironic's
    /// `detect_vendor` reads it before the System's Manufacturer).
    #[serde(default = "default_vendor")]
    pub vendor: String,
    pub manufacturer: String,
    pub model: String,
    /// The Manager's `Model`, when the vendor's BMC says more than "the
    /// machine's BMC" (iDRAC: the server generation, `15G Monolithic`,
    /// which Ironic's idrac driver reads to tell iDRAC 9 from 10).
    pub manager_model: Option<String>,
    pub bios_version: String,
    pub bmc_firmware_version: String,
    /// Resource Ids on an endpoint of its own; without them, the UUID.
    pub ids: Option<Ids>,
    #[serde(default)]
    pub etag: Etag,
    #[serde(default)]
    pub boot: Boot,
    #[serde(default)]
    pub power: Power,
    #[serde(default)]
    pub vmedia: VirtualMedia,
    #[serde(default)]
    pub errors: Errors,
    #[serde(default)]
    pub oem: Oem,
    /// What Get Device ID says over IPMI.
    #[serde(default)]
    pub ipmi: IpmiIdentity,
    /// Where the CAs for HTTPS boot are enrolled, and what the BMC asks
    /// first.
    #[serde(default)]
    pub https_boot: HttpsBoot,
    /// Dell's Lifecycle Controller API (`api/dell`).
    pub dell: Option<DellLc>,
    /// How the inventory names itself.
    #[serde(default)]
    pub inventory: Inventory,
    /// HPE's own extensions (`api/hpe`).
    pub hpe: Option<Hpe>,
    /// The EventService: what it advertises and how it delivers.
    #[serde(default)]
    pub events: Events,
    /// The log services of systems and managers.
    #[serde(default)]
    pub logs: logs::Logs,
    /// Firmware updates (the UpdateService).
    #[serde(default)]
    pub update: update::Update,
    #[serde(default)]
    pub sources: Vec<Source>,
}

/// The BMC's EventService (`api/events`): its settings when it starts,
/// its limits and the shape of what it sends.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Events {
    /// `ServiceEnabled` when the BMC starts (iDRAC 9 ships with it off).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `DeliveryRetryAttempts`: retries after a failed delivery.
    #[serde(default = "retry_attempts")]
    pub retry_attempts: u32,
    /// `DeliveryRetryIntervalSeconds`.
    #[serde(default = "retry_interval")]
    pub retry_interval_seconds: u32,
    /// Subscriptions at most, SSE streams included.
    #[serde(default = "max_subscriptions")]
    pub max_subscriptions: usize,
    /// SSE streams at most.
    #[serde(default = "max_sse")]
    pub max_sse: usize,
    /// `ServerSentEventUri`.
    #[serde(default = "sse_uri")]
    pub sse_uri: String,
    /// The `EventType` of every event (iDRAC: `Alert`); unset: by what
    /// changed (`StatusChange` for power, `ResourceUpdated` for the rest).
    #[serde(default)]
    pub event_type: Option<String>,
    /// Push destinations must be `https` (iDRAC).
    #[serde(default)]
    pub https_only: bool,
    /// `OriginOfCondition` sent as a plain URI string, not a link object
    /// (iLO 5, bmcweb).
    #[serde(default)]
    pub origin_as_string: bool,
    /// The Event's `Id` and each record's `EventId` sent as JSON numbers
    /// (bmcweb), which strict parsers refuse.
    #[serde(default)]
    pub ids_as_numbers: bool,
    /// The Event carries `Oem.Dell` (`DellEvent`, `ServerHostname`), as
    /// iDRAC's do.
    #[serde(default)]
    pub dell_oem: bool,
    /// Push subscriptions survive a BMC reset (kept in persistent
    /// storage, as iDRAC's and bmcweb's are); SSE streams never do.
    #[serde(default = "yes")]
    pub subscriptions_survive_reset: bool,
    /// The vendor's own messages for changes its registry has one for,
    /// sent instead of DMTF's ResourceEvent record.
    #[serde(default)]
    pub messages: event_messages::EventMessages,
    /// Whether a change the vendor's registry has no message for is told
    /// in DMTF's ResourceEvent (bmcweb sends none).
    #[serde(default = "yes")]
    pub resource_events: bool,
}

fn retry_attempts() -> u32 {
    3
}

fn retry_interval() -> u32 {
    30
}

fn max_subscriptions() -> usize {
    20
}

fn max_sse() -> usize {
    10
}

fn sse_uri() -> String {
    "/redfish/v1/EventService/SSE".into()
}

impl Default for Events {
    fn default() -> Self {
        Events {
            enabled: true,
            retry_attempts: retry_attempts(),
            retry_interval_seconds: retry_interval(),
            max_subscriptions: max_subscriptions(),
            max_sse: max_sse(),
            sse_uri: sse_uri(),
            event_type: None,
            https_only: false,
            origin_as_string: false,
            ids_as_numbers: false,
            dell_oem: false,
            subscriptions_survive_reset: true,
            messages: event_messages::EventMessages::default(),
            resource_events: true,
        }
    }
}

/// HPE's own extensions on an iLO: the System's live `Oem.Hpe`
/// (`PostState`, the `PowerButton` action, `Bios`), VirtualMedia's
/// `Oem.Hpe` (`BootOnNextServerReset`, iLO's insert and eject), and the
/// service root's collection links ending in `/` as iLO's do (proliantutils
/// joins `1` onto them).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hpe {
    /// `Oem.Hpe.Bios.UefiClass`: 2, legacy BIOS and UEFI; 3, UEFI only.
    #[serde(default = "uefi_class")]
    pub uefi_class: u8,
}

fn uefi_class() -> u8 {
    2
}

/// How a vendor names the inventory below a System.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// The EthernetInterfaces' Ids.
    #[serde(default)]
    pub nic_ids: NicIds,
    /// The System's `SKU` is a 7-character service tag (Dell's, which its
    /// tools and Ironic's idrac inspection read as the serial number).
    #[serde(default)]
    pub service_tag: bool,
    /// The Storage below a System: its controller, drives and volumes.
    #[serde(default)]
    pub storage_ids: StorageIds,
}

/// How a System's Storage, controller, drives and volumes are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageIds {
    /// Storage `1`, controller `0`, drives and volumes by the machine's
    /// own names.
    #[default]
    Plain,
    /// Dell's FQDDs: the PERC `RAID.Integrated.1-1` (Storage and
    /// controller alike), drives `Disk.Bay.N:Enclosure.Internal.0-1:…`,
    /// RAID volumes `Disk.Virtual.N:…`, and a non-RAID drive's volume by
    /// the drive's own FQDD.
    DellFqdd,
}

/// The PERC controller's FQDD on the Dell profiles.
pub const DELL_PERC: &str = "RAID.Integrated.1-1";

impl StorageIds {
    /// The Storage resource's Id.
    pub fn storage(self) -> &'static str {
        match self {
            StorageIds::Plain => "1",
            StorageIds::DellFqdd => DELL_PERC,
        }
    }

    /// The Id of the StorageController member.
    pub fn controller(self) -> &'static str {
        match self {
            StorageIds::Plain => "0",
            StorageIds::DellFqdd => DELL_PERC,
        }
    }

    /// The Id of the `index`th drive (from 0), named `name`.
    pub fn drive(self, index: usize, name: &str) -> String {
        match self {
            StorageIds::Plain => name.to_string(),
            StorageIds::DellFqdd => {
                format!("Disk.Bay.{index}:Enclosure.Internal.0-1:{DELL_PERC}")
            }
        }
    }

    /// The Id of volume `id` (Shoal's `VolumeN`, or a drive's name for
    /// its pass-through volume) over the machine's `disks`.
    pub fn volume(self, v: &crate::storage::Volume, disks: &[crate::storage::Disk]) -> String {
        match self {
            StorageIds::Plain => v.id.clone(),
            StorageIds::DellFqdd if v.raid_type == "None" => {
                let first = v.drives.first().map(String::as_str).unwrap_or("");
                match disks.iter().position(|d| d.name == first) {
                    Some(i) => self.drive(i, first),
                    None => v.id.clone(),
                }
            }
            StorageIds::DellFqdd => match v.id.strip_prefix("Volume") {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("Disk.Virtual.{n}:{DELL_PERC}")
                }
                _ => v.id.clone(),
            },
        }
    }
}

/// How EthernetInterfaces are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicIds {
    /// The MAC without separators.
    #[default]
    Mac,
    /// The MAC as libvirt spells it, with colons (sushy-tools' Ids).
    MacColons,
    /// Dell's FQDDs, the Nth port of the integrated NIC
    /// (`NIC.Integrated.1-N-1`): the names the BIOS's `PxeDevNInterface`
    /// attributes hold.
    DellFqdd,
}

impl NicIds {
    /// The Id of the `index`th NIC (from 0), whose MAC is `mac`.
    pub fn id(self, index: usize, mac: &str) -> String {
        match self {
            NicIds::Mac => mac.replace(':', ""),
            NicIds::MacColons => mac.to_string(),
            NicIds::DellFqdd => format!("NIC.Integrated.1-{}-1", index + 1),
        }
    }
}

/// Dell's Lifecycle Controller API on an iDRAC: Server Configuration
/// Profile import (`#OemManager.ImportSystemConfiguration`), the job queue
/// and `DellJobService`, `DellLCService`, `DelliDRACCardService`. Shown
/// where the system has an endpoint of its own (one iDRAC, one server).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DellLc {
    /// The Dell message registry's prefix (`IDRAC.2.8`).
    pub registry: String,
    /// The import action's last path segment under `Actions/Oem`
    /// (`EID_674_Manager.ImportSystemConfiguration` on iDRAC 9,
    /// `OemManager.ImportSystemConfiguration` on iDRAC 10).
    pub import_action: String,
    /// The services and the job queue also answer at their older paths
    /// (`/redfish/v1/Dell/Managers/{id}/…`, `Managers/{id}/Jobs`), as
    /// iDRAC 9 keeps them for older clients.
    #[serde(default)]
    pub legacy_paths: bool,
    /// How long an SCP import job runs before it completes.
    #[serde(default = "one")]
    pub import_secs: u64,
    /// An iDRAC reset: its address refuses connections this long.
    pub reset_down_secs: u64,
    /// Then `GetRemoteServicesAPIStatus` says the LC is not ready this
    /// long.
    #[serde(default)]
    pub lc_settle_secs: u64,
}

fn one() -> u64 {
    1
}

/// How a BMC takes the CAs its machine trusts for HTTPS boot.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct HttpsBoot {
    /// HPE's route instead of `Boot.Certificates`: the BIOS TLS
    /// configuration (`HpeTlsConfig`) at this path under the System
    /// (`bios/oem/hpe/tlsconfig` on iLO 6, `bios/tlsconfig` on iLO 5),
    /// changed by PUT on its settings object and applied at the next start.
    pub hpe_tlsconfig: Option<String>,
    /// BIOS attributes that must hold these values (now, or staged for the
    /// next start) before a CA is enrolled; otherwise the POST is refused.
    #[serde(default)]
    pub needs_bios: std::collections::BTreeMap<String, String>,
}

/// The System-relative paths the HPE TLS configuration may live at.
pub const HPE_TLSCONFIG_PATHS: &[&str] = &["bios/oem/hpe/tlsconfig", "bios/tlsconfig"];

/// The BMC's identity over IPMI (Get Device ID).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct IpmiIdentity {
    /// The vendor's IANA Private Enterprise Number (0: unspecified).
    #[serde(default)]
    pub manufacturer_id: u32,
    #[serde(default)]
    pub product_id: u16,
}

fn default_vendor() -> String {
    "Shoal".into()
}
