//! What a BMC keeps about its machine, and every change a client (over
//! Redfish today, IPMI next) can make to it.
//!
//! [`BmcState`] is the BMC-owned part of a [`System`](super::System): the
//! boot override, BIOS settings, Secure Boot, virtual media, the indicator,
//! the asset tag, RAID volumes, the BMC's NTP settings and the last boot. Each backend persists it
//! as it is (the fake in its state file, libvirt in the domain's
//! `<metadata>`). [`Change`] is the closed set of things a front-end asks
//! of it; [`BmcState::apply`] is the one pure transition, and
//! [`BmcState::start`] the one place where a machine's start acts on it
//! (staged BIOS applied, Secure Boot latched, Once consumed, boot
//! recorded). A backend adds only its feasibility checks and effects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::firmware::{FirmwareChange, FirmwareState};
use super::{
    BiosState, BootMode, BootOverride, BootRecord, BootTarget, IndicatorLed, MediaSlot, MediaState,
    PowerRestorePolicy, ResetKeysType, SecureBoot,
};
use crate::certs::BootCerts;
use crate::storage::{StorageState, VolumeChange};

/// What the BMC owns about a machine, as opposed to what the machine is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmcState {
    pub boot: BootOverride,
    pub bios: BiosState,
    pub secure_boot: SecureBoot,
    pub cd: MediaState,
    pub floppy: MediaState,
    pub indicator: IndicatorLed,
    pub asset_tag: String,
    pub last_boot: Option<BootRecord>,
    /// RAID volumes over the machine's disks (the controller's
    /// configuration: on libvirt the guest still sees the drives).
    #[serde(default, skip_serializing_if = "StorageState::is_empty")]
    pub storage: StorageState,
    /// The CAs the firmware trusts for HTTPS boot, from its next start.
    #[serde(default, skip_serializing_if = "BootCerts::is_empty")]
    pub boot_certs: BootCerts,
    /// The BMC's own NTP client settings (`ManagerNetworkProtocol.NTP`).
    #[serde(default, skip_serializing_if = "Ntp::is_default")]
    pub ntp: Ntp,
    /// What the machine does when power returns after a loss.
    #[serde(default, skip_serializing_if = "is_default_policy")]
    pub power_restore: PowerRestorePolicy,
    /// The operator's name for this BMC's service
    /// (`Manager.ServiceIdentification`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_identification: String,
    /// How the virtual CD checks an HTTPS image server.
    #[serde(default, skip_serializing_if = "MediaTls::is_default")]
    pub cd_tls: MediaTls,
    /// ... and the removable device.
    #[serde(default, skip_serializing_if = "MediaTls::is_default")]
    pub floppy_tls: MediaTls,
    /// Firmware versions an update changed, and images staged.
    #[serde(default, skip_serializing_if = "FirmwareState::is_empty")]
    pub firmware: FirmwareState,
}

/// How a virtual media device checks the HTTPS server of an image it
/// fetches (`VirtualMedia.VerifyCertificate` and `Certificates`); kept
/// across inserts and ejects, as a BMC keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaTls {
    /// `VerifyCertificate` as a client set it; unset: the service's
    /// default (`--media-insecure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// The CAs a verified server's chain must lead to; none: the system's
    /// trusted roots.
    #[serde(default, skip_serializing_if = "BootCerts::is_empty")]
    pub certs: BootCerts,
}

impl MediaTls {
    fn is_default(&self) -> bool {
        *self == MediaTls::default()
    }
}

fn is_default_policy(p: &PowerRestorePolicy) -> bool {
    *p == PowerRestorePolicy::default()
}

/// The BMC's NTP client: whether it is on, and its servers in order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Ntp {
    pub enabled: bool,
    pub servers: Vec<String>,
}

impl Ntp {
    /// Servers a BMC keeps at most (iDRAC and iLO have two or three).
    pub const MAX_SERVERS: usize = 4;

    fn is_default(&self) -> bool {
        *self == Ntp::default()
    }
}

/// Settable top-level properties of a system (other than Boot).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemSettings {
    pub indicator: Option<IndicatorLed>,
    pub asset_tag: Option<String>,
    pub power_restore: Option<PowerRestorePolicy>,
}

/// One change of a machine's BMC state, already validated by the front-end
/// that asked for it. A request that makes several (a System PATCH sets the
/// override and the asset tag) passes them together, and they apply all or
/// none.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The whole boot override (the front-end merged it with the current one).
    Boot(BootOverride),
    Settings(SystemSettings),
    /// Replaces the BIOS attributes staged for the next start.
    BiosPending(BTreeMap<String, serde_json::Value>),
    /// Stages the factory defaults for the next start.
    BiosDefaults,
    /// Whether the staged attributes wait for a configuration job.
    BiosHold(bool),
    /// The whole BIOS, current and staged attributes: a replayed
    /// capture's, set when a machine first stands behind its system.
    BiosReplaced {
        current: BTreeMap<String, serde_json::Value>,
        pending: BTreeMap<String, serde_json::Value>,
    },
    SecureBoot(bool),
    ResetKeys(ResetKeysType),
    /// What a virtual media device holds now (the backend fetched and
    /// attached it first, or ejects it).
    Media(MediaSlot, MediaState),
    /// A volume change the front-end checked against the current volumes,
    /// now or (`staged`) at the next start.
    Volume {
        change: VolumeChange,
        staged: bool,
    },
    /// The whole set of HTTPS boot CAs (the front-end checked it).
    BootCerts(BootCerts),
    /// The BMC's NTP settings, whole.
    Ntp(Ntp),
    /// The Manager's `ServiceIdentification`.
    ServiceIdentification(String),
    /// A virtual media device's certificate checking, whole.
    MediaTls(MediaSlot, MediaTls),
    /// A firmware image installed or staged.
    Firmware(FirmwareChange),
}

impl BmcState {
    /// The state of a machine its BMC has done nothing to yet: no override
    /// (firmware in `mode`), factory BIOS settings, empty media, the
    /// indicator off, no volumes, never booted.
    pub fn new(mode: BootMode, secure_boot: SecureBoot) -> Self {
        BmcState {
            boot: BootOverride::disabled(mode),
            bios: BiosState {
                current: crate::bios::defaults(),
                pending: BTreeMap::new(),
                held: false,
            },
            secure_boot,
            cd: MediaState::default(),
            floppy: MediaState::default(),
            indicator: IndicatorLed::Off,
            asset_tag: String::new(),
            last_boot: None,
            storage: StorageState::default(),
            boot_certs: BootCerts::default(),
            ntp: Ntp::default(),
            power_restore: PowerRestorePolicy::default(),
            service_identification: String::new(),
            cd_tls: MediaTls::default(),
            floppy_tls: MediaTls::default(),
            firmware: FirmwareState::default(),
        }
    }

    /// The one state transition of every change: pure, infallible; whether
    /// a machine can take it is the backend's check, made before.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Boot(b) => self.boot = b,
            Change::Settings(s) => {
                if let Some(led) = s.indicator {
                    self.indicator = led;
                }
                if let Some(tag) = s.asset_tag {
                    self.asset_tag = tag;
                }
                if let Some(p) = s.power_restore {
                    self.power_restore = p;
                }
            }
            Change::BiosPending(p) => self.bios.pending = p,
            Change::BiosDefaults => self.bios.pending = crate::bios::defaults(),
            Change::BiosHold(held) => self.bios.held = held,
            Change::BiosReplaced { current, pending } => {
                self.bios = BiosState {
                    current,
                    pending,
                    held: false,
                }
            }
            Change::SecureBoot(enable) => self.secure_boot.enable = enable,
            Change::BootCerts(c) => self.boot_certs = c,
            Change::Ntp(n) => self.ntp = n,
            Change::ServiceIdentification(id) => self.service_identification = id,
            Change::ResetKeys(kind) => {
                self.secure_boot.keys_enrolled = kind == ResetKeysType::ResetAllKeysToDefault
            }
            Change::Media(slot, state) => *self.media_mut(slot) = state,
            Change::MediaTls(slot, tls) => match slot {
                MediaSlot::Cd => self.cd_tls = tls,
                MediaSlot::Floppy => self.floppy_tls = tls,
            },
            Change::Firmware(f) => self.firmware.apply(f),
            Change::Volume {
                change,
                staged: true,
            } => self.storage.stage(change),
            Change::Volume {
                change,
                staged: false,
            } => self.storage.apply(change),
        }
    }

    /// What a BMC does when its machine starts: staged volume changes,
    /// firmware images and BIOS settings take effect, the Secure Boot state is latched for this
    /// boot, a Once override is consumed, and the boot is recorded.
    /// `booted` is what the firmware was pointed at, `media` the image it
    /// booted from, if any. Every backend calls this, so the semantics are
    /// the same on fake and real machines.
    pub fn start(
        &mut self,
        uefi: bool,
        booted: BootTarget,
        source: Option<TargetSource>,
        media: Option<String>,
        disks: &[crate::storage::Disk],
    ) {
        let uri = (booted == BootTarget::UefiHttp)
            .then(|| self.http_boot_uri_at_start())
            .flatten();
        self.storage.apply_pending(disks);
        self.firmware.start();
        if !self.bios.held {
            let pending = std::mem::take(&mut self.bios.pending);
            self.bios.current.extend(pending);
        }
        // The BIOS's one-time boot is spent by a start the BMC's override
        // did not serve (an override takes its place and leaves it armed).
        if source != Some(TargetSource::Override) {
            let mode = self.bios.current.get(ONE_TIME_MODE);
            if matches!(mode, Some(m) if m != "Disabled") {
                self.bios
                    .current
                    .insert(ONE_TIME_MODE.into(), serde_json::json!("Disabled"));
            }
        }
        if let Some(certs) = self.boot_certs.pending.take() {
            self.boot_certs.certs = certs;
        }
        let sb = &mut self.secure_boot;
        sb.current_boot = sb.enable && uefi && sb.keys_enrolled;
        let number = self.last_boot.as_ref().map_or(1, |b| b.number + 1);
        self.last_boot = Some(BootRecord {
            at: crate::timefmt::unix_now(),
            number,
            target: booted,
            mode: self.boot.mode,
            uri,
            media,
        });
        self.boot = self.boot.after_boot();
    }

    pub fn media(&self, slot: MediaSlot) -> &MediaState {
        match slot {
            MediaSlot::Cd => &self.cd,
            MediaSlot::Floppy => &self.floppy,
        }
    }

    pub fn media_tls(&self, slot: MediaSlot) -> &MediaTls {
        match slot {
            MediaSlot::Cd => &self.cd_tls,
            MediaSlot::Floppy => &self.floppy_tls,
        }
    }

    pub fn media_mut(&mut self, slot: MediaSlot) -> &mut MediaState {
        match slot {
            MediaSlot::Cd => &mut self.cd,
            MediaSlot::Floppy => &mut self.floppy,
        }
    }

    /// What the firmware boots at the next start of a machine in UEFI
    /// mode (`uefi`) or not: the BMC's override while one is active, else
    /// the BIOS's one-time UEFI boot device (`OneTimeBootMode`
    /// `OneTimeUefiBootSeq` with `OneTimeUefiBootSeqDev`, staged values
    /// included since this start applies them), with where it came from.
    /// `None`: the normal boot order.
    pub fn target_at_start(&self, uefi: bool) -> Option<(BootTarget, TargetSource)> {
        if let Some(t) = self.boot.effective_target() {
            return Some((t, TargetSource::Override));
        }
        let attr = |name: &str| bios_at_start(&self.bios, name);
        if !uefi || attr(ONE_TIME_MODE) != Some(crate::bios::ONE_TIME_UEFI) {
            return None;
        }
        one_time_target(attr("OneTimeUefiBootSeqDev")?, |name| {
            attr(name) == Some("Enabled")
        })
        .map(|t| (t, TargetSource::BiosOnce))
    }

    /// The URI the firmware HTTP-boots at the next start.
    pub fn http_boot_uri_at_start(&self) -> Option<String> {
        http_boot_uri_at_start(&self.boot, &self.bios)
    }
}

/// What the firmware boots for a one-time UEFI boot device (`None`: no
/// such device; the normal boot order then). `enabled` says whether a
/// BIOS attribute (`PxeDevNEnDis`, `HttpDev1EnDis`) is Enabled: a
/// disabled PXE or HTTP device does not exist at boot.
fn one_time_target(dev: &str, enabled: impl Fn(&str) -> bool) -> Option<BootTarget> {
    if let Some(n) = dev
        .strip_prefix("NIC.PxeDevice.")
        .and_then(|r| r.strip_suffix("-1"))
    {
        return enabled(&format!("PxeDev{n}EnDis")).then_some(BootTarget::Pxe);
    }
    match dev {
        "NIC.HttpDevice.1-1" => enabled("HttpDev1EnDis").then_some(BootTarget::UefiHttp),
        "Optical.iDRACVirtual.1-1" => Some(BootTarget::Cd),
        "Floppy.iDRACVirtual.1-1" => Some(BootTarget::Floppy),
        d if d.starts_with("RAID.") || d.starts_with("Disk.") => Some(BootTarget::Hdd),
        _ => None,
    }
}

/// Where a start's boot target came from (`BmcState::target_at_start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSource {
    /// The BMC's boot override (Redfish, IPMI).
    Override,
    /// The BIOS's one-time boot device, armed for one start.
    BiosOnce,
}

/// The BIOS attribute that arms a one-time boot (Dell's).
const ONE_TIME_MODE: &str = "OneTimeBootMode";

/// The URI the firmware HTTP-boots at the next start: `Boot.HttpBootUri`
/// when the BMC set one, else the firmware's own HTTP boot settings (the
/// BIOS attributes that vendors without a writable HttpBootUri use, staged
/// ones included since they take effect in that same start): Dell's
/// `HttpDev1Uri` while `HttpDev1EnDis` is Enabled, then HPE's
/// `UrlBootFile`. `None`: the URL comes from DHCP.
pub fn http_boot_uri_at_start(boot: &BootOverride, bios: &BiosState) -> Option<String> {
    if let Some(u) = &boot.http_boot_uri {
        return Some(u.clone());
    }
    let attr = |name: &str| bios_at_start(bios, name);
    if attr("HttpDev1EnDis") == Some("Enabled") {
        if let Some(u) = attr("HttpDev1Uri") {
            return Some(u.to_string());
        }
    }
    attr("UrlBootFile").map(str::to_string)
}

/// A string BIOS attribute as the next start applies it (staged value
/// first); `None` when unset or empty.
pub fn bios_at_start<'a>(bios: &'a BiosState, name: &str) -> Option<&'a str> {
    bios.applying()
        .and_then(|p| p.get(name))
        .or_else(|| bios.current.get(name))
        .and_then(serde_json::Value::as_str)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OverrideEnabled;

    fn state() -> BmcState {
        let secure_boot = SecureBoot {
            enable: true,
            current_boot: false,
            keys_enrolled: true,
        };
        BmcState::new(BootMode::Uefi, secure_boot)
    }

    #[test]
    fn a_start_applies_staged_bios_consumes_once_and_records_the_boot() {
        let mut s = state();
        s.apply(Change::Boot(BootOverride {
            target: BootTarget::UefiHttp,
            enabled: OverrideEnabled::Once,
            mode: BootMode::Uefi,
            http_boot_uri: Some("http://h/a.efi".into()),
            uefi_target: None,
        }));
        s.apply(Change::BiosPending(BTreeMap::from([(
            "ProcTurboMode".to_string(),
            serde_json::json!("Disabled"),
        )])));
        s.start(
            true,
            BootTarget::UefiHttp,
            Some(TargetSource::Override),
            None,
            &[],
        );
        assert_eq!(s.bios.current["ProcTurboMode"], "Disabled");
        assert!(s.bios.pending.is_empty());
        assert_eq!(s.boot.enabled, OverrideEnabled::Disabled);
        assert!(s.secure_boot.current_boot);
        let rec = s.last_boot.clone().unwrap();
        assert_eq!(rec.target, BootTarget::UefiHttp);
        assert_eq!(rec.uri.as_deref(), Some("http://h/a.efi"));
        // Not UEFI: Secure Boot is not what this boot ran with.
        s.start(false, BootTarget::Hdd, None, None, &[]);
        assert!(!s.secure_boot.current_boot);
        assert_eq!(s.last_boot.unwrap().uri, None);
    }

    #[test]
    fn settings_change_only_what_they_name() {
        let mut s = state();
        s.apply(Change::Settings(SystemSettings {
            indicator: Some(IndicatorLed::Lit),
            ..Default::default()
        }));
        s.apply(Change::Settings(SystemSettings {
            asset_tag: Some("rack-1".into()),
            ..Default::default()
        }));
        assert_eq!(
            (s.indicator, s.asset_tag.as_str()),
            (IndicatorLed::Lit, "rack-1")
        );
        s.apply(Change::ResetKeys(ResetKeysType::DeleteAllKeys));
        assert!(!s.secure_boot.keys_enrolled);
        s.apply(Change::BiosDefaults);
        assert_eq!(s.bios.pending, crate::bios::defaults());
    }

    #[test]
    fn staged_volume_changes_wait_for_a_start() {
        let mut s = state();
        let v = crate::storage::Volume {
            id: "v1".into(),
            name: "v1".into(),
            raid_type: "RAID0".into(),
            capacity_bytes: 1,
            drives: vec!["sda".into()],
        };
        s.apply(Change::Volume {
            change: VolumeChange::Create(v),
            staged: true,
        });
        assert!(s.storage.volumes.is_empty());
        s.start(false, BootTarget::Hdd, None, None, &[]);
        assert_eq!(s.storage.volumes.len(), 1);
    }

    #[test]
    fn the_http_boot_uri_is_the_bmcs_else_the_firmwares_own_attributes() {
        let mut boot = BootOverride::disabled(BootMode::Uefi);
        let mut bios = BiosState::default();
        assert_eq!(http_boot_uri_at_start(&boot, &bios), None);
        // Dell: the URI counts only while the device is enabled; a staged
        // value counts, since it applies in the same start.
        bios.current
            .insert("HttpDev1Uri".into(), serde_json::json!("http://h/dell.iso"));
        assert_eq!(http_boot_uri_at_start(&boot, &bios), None);
        bios.pending
            .insert("HttpDev1EnDis".into(), serde_json::json!("Enabled"));
        assert_eq!(
            http_boot_uri_at_start(&boot, &bios).as_deref(),
            Some("http://h/dell.iso")
        );
        // HPE: UrlBootFile, when the Dell device is off.
        bios.pending
            .insert("HttpDev1EnDis".into(), serde_json::json!("Disabled"));
        bios.current
            .insert("UrlBootFile".into(), serde_json::json!("http://h/hpe.efi"));
        assert_eq!(
            http_boot_uri_at_start(&boot, &bios).as_deref(),
            Some("http://h/hpe.efi")
        );
        // The BMC's HttpBootUri wins over both.
        boot.http_boot_uri = Some("http://h/bmc.efi".into());
        assert_eq!(
            http_boot_uri_at_start(&boot, &bios).as_deref(),
            Some("http://h/bmc.efi")
        );
    }

    fn stage(s: &mut BmcState, attrs: &[(&str, &str)]) {
        for (k, v) in attrs {
            s.bios.pending.insert(k.to_string(), serde_json::json!(v));
        }
    }

    #[test]
    fn the_bios_one_time_device_boots_once_then_the_mode_returns_to_disabled() {
        let mut s = state();
        let target = |s: &BmcState, uefi| s.target_at_start(uefi).map(|(t, _)| t);
        assert_eq!(target(&s, true), None, "factory: boot order");
        stage(
            &mut s,
            &[
                ("OneTimeBootMode", "OneTimeUefiBootSeq"),
                ("OneTimeUefiBootSeqDev", "NIC.HttpDevice.1-1"),
                ("HttpDev1EnDis", "Enabled"),
                ("HttpDev1Uri", "http://h/once.efi"),
            ],
        );
        // A held job's values are not there yet.
        s.bios.held = true;
        assert_eq!(target(&s, true), None);
        s.bios.held = false;
        assert_eq!(
            s.target_at_start(true),
            Some((BootTarget::UefiHttp, TargetSource::BiosOnce))
        );
        assert_eq!(target(&s, false), None, "a UEFI sequence only");
        s.start(
            true,
            BootTarget::UefiHttp,
            Some(TargetSource::BiosOnce),
            None,
            &[],
        );
        let rec = s.last_boot.clone().unwrap();
        assert_eq!(rec.uri.as_deref(), Some("http://h/once.efi"));
        assert_eq!(s.bios.current["OneTimeBootMode"], "Disabled");
        assert_eq!(
            s.bios.current["OneTimeUefiBootSeqDev"],
            "NIC.HttpDevice.1-1"
        );
        assert_eq!(target(&s, true), None, "spent");
    }

    #[test]
    fn the_bmc_override_wins_over_the_bios_one_time_device_and_leaves_it_armed() {
        let mut s = state();
        stage(
            &mut s,
            &[
                ("OneTimeBootMode", "OneTimeUefiBootSeq"),
                ("OneTimeUefiBootSeqDev", "Optical.iDRACVirtual.1-1"),
            ],
        );
        s.apply(Change::Boot(BootOverride {
            target: BootTarget::Pxe,
            enabled: OverrideEnabled::Once,
            ..BootOverride::disabled(BootMode::Uefi)
        }));
        assert_eq!(
            s.target_at_start(true),
            Some((BootTarget::Pxe, TargetSource::Override))
        );
        s.start(
            true,
            BootTarget::Pxe,
            Some(TargetSource::Override),
            None,
            &[],
        );
        assert_eq!(s.bios.current["OneTimeBootMode"], "OneTimeUefiBootSeq");
        assert_eq!(
            s.target_at_start(true),
            Some((BootTarget::Cd, TargetSource::BiosOnce))
        );
    }

    #[test]
    fn one_time_devices_map_to_what_the_firmware_boots() {
        use super::one_time_target;
        let on = |_: &str| true;
        let pxe2_off = |n: &str| n != "PxeDev2EnDis";
        assert_eq!(
            one_time_target("NIC.PxeDevice.1-1", on),
            Some(BootTarget::Pxe)
        );
        assert_eq!(one_time_target("NIC.PxeDevice.2-1", pxe2_off), None);
        assert_eq!(
            one_time_target("RAID.Integrated.1-1", on),
            Some(BootTarget::Hdd)
        );
        assert_eq!(
            one_time_target("Disk.Bay.0:Enclosure.Internal.0-1", on),
            Some(BootTarget::Hdd)
        );
        assert_eq!(
            one_time_target("Floppy.iDRACVirtual.1-1", on),
            Some(BootTarget::Floppy)
        );
        assert_eq!(one_time_target("NIC.HttpDevice.1-1", |_| false), None);
        assert_eq!(one_time_target("Unknown.Unknown.1-1", on), None);
    }
}
