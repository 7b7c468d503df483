//! The inventory file and the resolved settings the emulator runs with.
//!
//! A TOML file (`--config`) is parsed strictly (unknown keys are errors) and
//! validated into typed values at start-up; every error names the file and
//! the key (`systems[1].arch`) and, for enumerations, the allowed values.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use uuid::Uuid;

use crate::backend::machines::derived_mac;
#[cfg(test)]
pub use crate::backend::machines::test_system;
pub use crate::backend::machines::{default_system, fake_systems};
use crate::model::{Arch, BootMode, BootOverride, Nic, PowerState, System};
use crate::profile::Profiles;
use crate::storage::Disk;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: {key}: {message}")]
    Invalid {
        file: String,
        key: String,
        message: String,
    },
}

/// Which Redfish resources are served (as sushy-tools' feature sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FeatureSet {
    /// Systems with power and boot, Managers, Chassis, sessions, accounts.
    Minimum,
    /// Minimum plus virtual media.
    Vmedia,
    /// Everything: BIOS, secure boot, storage, processors, memory, NICs, tasks.
    Full,
}

impl FeatureSet {
    pub fn vmedia(self) -> bool {
        self != FeatureSet::Minimum
    }
    pub fn full(self) -> bool {
        self == FeatureSet::Full
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub feature_set: Option<FeatureSet>,
    /// The profile of systems that name none (`--profile`).
    pub profile: Option<String>,
    /// User profiles (`--profile-dir`).
    pub profile_dir: Option<PathBuf>,
    pub auth: Option<AuthSection>,
    pub tls: Option<TlsSection>,
    pub fake: Option<FakeSection>,
    #[serde(default)]
    pub systems: Vec<SystemEntry>,
    /// BMC endpoints of their own (the rest share the main service root).
    #[serde(default)]
    pub endpoints: Vec<EndpointEntry>,
    /// Injected faults from the start (the admin endpoint changes them).
    pub faults: Option<crate::faults::FaultConfig>,
    /// IPMI listeners and users (`--ipmi-*` win).
    pub ipmi: Option<IpmiSection>,
}

/// `[ipmi]`: the IPMI (RMCP+) side of the BMCs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpmiSection {
    pub port: Option<u16>,
    #[serde(default)]
    pub cipher_suite_zero: bool,
    pub users: Option<Vec<IpmiUserEntry>>,
    /// `--ipmi-in-band-dir`.
    pub in_band_dir: Option<std::path::PathBuf>,
    /// `--ipmi-boot-mailbox`.
    pub boot_mailbox: Option<String>,
}

/// `[[ipmi.users]]`: clear passwords, as RAKP needs them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpmiUserEntry {
    pub name: String,
    pub password: String,
    #[serde(default = "IpmiUserEntry::default_privilege")]
    pub privilege: IpmiPrivilege,
}

/// The privilege levels a user may have.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpmiPrivilege {
    User,
    Operator,
    Administrator,
}

impl IpmiUserEntry {
    fn default_privilege() -> IpmiPrivilege {
        IpmiPrivilege::Administrator
    }

    pub fn user(self) -> crate::ipmi::users::User {
        use crate::ipmi::users::Privilege;
        crate::ipmi::users::User {
            name: self.name.into_bytes(),
            password: self.password.into_bytes(),
            privilege: match self.privilege {
                IpmiPrivilege::User => Privilege::User,
                IpmiPrivilege::Operator => Privilege::Operator,
                IpmiPrivilege::Administrator => Privilege::Administrator,
            },
        }
    }
}

/// A BMC endpoint of its own: listen address, service root, sessions and
/// accounts, for these systems (names, or Ids).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointEntry {
    pub listen: std::net::SocketAddr,
    pub systems: Vec<String>,
    /// A capture this endpoint replays (`--mockup`'s, for one endpoint):
    /// its systems stand behind the captured ones, in order.
    #[serde(default)]
    pub mockup: Option<PathBuf>,
    /// Answer the replay's GETs after their captured times.
    #[serde(default)]
    pub mockup_latency: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// htpasswd file with bcrypt hashes.
    pub htpasswd: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    pub certificate: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FakeSection {
    #[serde(default)]
    pub power_delay_ms: u64,
    #[serde(default)]
    pub media_delay_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemEntry {
    pub name: String,
    pub uuid: Option<String>,
    pub arch: Option<String>,
    pub boot_mode: Option<String>,
    #[serde(default)]
    pub macs: Vec<String>,
    pub profile: Option<String>,
    pub memory_mib: Option<u64>,
    pub cpus: Option<u32>,
    #[serde(default)]
    pub disks: Vec<DiskEntry>,
    pub secure_boot: Option<bool>,
    pub power: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskEntry {
    pub name: String,
    pub capacity_gib: u64,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        Self::parse(&file, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Validates the `[[systems]]` entries into machines; an entry without
    /// a profile gets `default_profile`.
    pub fn systems(
        &self,
        file: &str,
        profiles: &Profiles,
        default_profile: &str,
    ) -> Result<Vec<System>, ConfigError> {
        let mut seen = Seen::default();
        let mut out = Vec::with_capacity(self.systems.len());
        for (i, e) in self.systems.iter().enumerate() {
            let err = |key: &str, message: String| ConfigError::Invalid {
                file: file.to_string(),
                key: format!("systems[{i}].{key}"),
                message,
            };
            let mut sys = identity(e, &err, &mut seen)?;
            let mode = firmware(e, &mut sys, &err)?;
            nics(e, &mut sys, &err, &mut seen.macs)?;
            sys.profile = match &e.profile {
                Some(p) => {
                    profiles.get(p).map_err(|x| err("profile", x.to_string()))?;
                    p.clone()
                }
                None => default_profile.to_string(),
            };
            hardware(e, &mut sys, &err, mode)?;
            out.push(sys);
        }
        Ok(out)
    }

    pub fn fake_options(&self) -> (Duration, Duration) {
        let f = self.fake.as_ref();
        (
            Duration::from_millis(f.map_or(0, |f| f.power_delay_ms)),
            Duration::from_millis(f.map_or(0, |f| f.media_delay_ms)),
        )
    }
}

fn parse_enum<T: Copy>(
    s: &str,
    parse: fn(&str) -> Option<T>,
    all: &[T],
    show: fn(T) -> &'static str,
) -> Result<T, String> {
    parse(s).ok_or_else(|| {
        let allowed: Vec<String> = all.iter().map(|v| format!("{:?}", show(*v))).collect();
        format!("{s:?} is not one of: {}", allowed.join(", "))
    })
}

/// Accepts `aa:bb:cc:dd:ee:ff` or `aa-bb-...` in any case; returns lower case with colons.
pub fn normalize_mac(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6
        || parts
            .iter()
            .any(|p| p.len() != 2 || !p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return None;
    }
    Some(parts.join(":").to_ascii_lowercase())
}

/// What the entries so far took: names, Ids and MACs are each one
/// system's.
#[derive(Default)]
struct Seen {
    names: HashSet<String>,
    ids: HashSet<String>,
    macs: HashSet<String>,
}

/// An entry's error: `systems[i].<key>` in its file.
type EntryErr<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// The machine an entry names, with its identity: the name (usable, not
/// taken), the UUID and Id (given, or derived from the name; not taken).
fn identity(e: &SystemEntry, err: &EntryErr, seen: &mut Seen) -> Result<System, ConfigError> {
    if e.name.is_empty() || e.name.contains('/') {
        return Err(err(
            "name",
            format!("{:?} is not a usable name (non-empty, no '/')", e.name),
        ));
    }
    if !seen.names.insert(e.name.clone()) {
        return Err(err("name", format!("{:?} is used twice", e.name)));
    }
    let mut sys = default_system(&e.name);
    if let Some(u) = &e.uuid {
        let u = Uuid::parse_str(u).map_err(|x| err("uuid", format!("{u:?} is not a UUID: {x}")))?;
        sys.uuid = u;
        sys.id = u.hyphenated().to_string();
    }
    if !seen.ids.insert(sys.id.clone()) {
        return Err(err("uuid", format!("{} is used twice", sys.id)));
    }
    Ok(sys)
}

/// The architecture and the boot mode (UEFI where the architecture has
/// it, unless the entry says; never UEFI where it has none).
fn firmware(e: &SystemEntry, sys: &mut System, err: &EntryErr) -> Result<BootMode, ConfigError> {
    if let Some(a) = &e.arch {
        sys.arch =
            parse_enum(a, Arch::parse, Arch::ALL, Arch::as_str).map_err(|m| err("arch", m))?;
    }
    let mode = match &e.boot_mode {
        Some(m) => parse_enum(m, BootMode::parse, BootMode::ALL, BootMode::as_str)
            .map_err(|x| err("boot_mode", x))?,
        None if sys.arch.has_uefi() => BootMode::Uefi,
        None => BootMode::Legacy,
    };
    if mode == BootMode::Uefi && !sys.arch.has_uefi() {
        return Err(err(
            "boot_mode",
            format!(
                "{} machines have no UEFI firmware; use \"Legacy\"",
                sys.arch
            ),
        ));
    }
    sys.bmc.boot = BootOverride::disabled(mode);
    Ok(mode)
}

/// The NICs: the entry's MACs, else one derived from the name (again
/// while another system has it); each MAC one system's.
fn nics(
    e: &SystemEntry,
    sys: &mut System,
    err: &EntryErr,
    macs: &mut HashSet<String>,
) -> Result<(), ConfigError> {
    if !e.macs.is_empty() {
        sys.nics.clear();
        for (j, m) in e.macs.iter().enumerate() {
            let mac = normalize_mac(m).ok_or_else(|| {
                err(
                    &format!("macs[{j}]"),
                    format!("{m:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"),
                )
            })?;
            sys.nics.push(Nic { mac });
        }
    }
    if e.macs.is_empty() {
        // A derived MAC has 24 bits of the name's hash: in a large
        // inventory two names can share one, so derive again.
        sys.nics[0].mac = (0..)
            .map(|k| derived_mac(&sys.name, k))
            .find(|m| !macs.contains(m))
            .expect("a free MAC");
    }
    for (j, n) in sys.nics.iter().enumerate() {
        if !macs.insert(n.mac.clone()) {
            return Err(err(
                &format!("macs[{j}]"),
                format!("{} is used by another system", n.mac),
            ));
        }
    }
    Ok(())
}

/// Memory, CPUs, disks (JBOD over them), Secure Boot (UEFI only) and the
/// power at start, where the entry gives them.
fn hardware(
    e: &SystemEntry,
    sys: &mut System,
    err: &EntryErr,
    mode: BootMode,
) -> Result<(), ConfigError> {
    if let Some(m) = e.memory_mib {
        if m == 0 {
            return Err(err("memory_mib", "must be at least 1".into()));
        }
        sys.memory_mib = m;
    }
    if let Some(c) = e.cpus {
        if c == 0 {
            return Err(err("cpus", "must be at least 1".into()));
        }
        sys.cpus = c;
    }
    if !e.disks.is_empty() {
        sys.disks = e
            .disks
            .iter()
            .map(|d| Disk::new(d.name.clone(), d.capacity_gib << 30))
            .collect();
        sys.bmc.storage = crate::storage::StorageState::jbod(&sys.disks);
    }
    if let Some(sb) = e.secure_boot {
        if sb && mode != BootMode::Uefi {
            return Err(err("secure_boot", "needs boot_mode = \"UEFI\"".into()));
        }
        sys.bmc.secure_boot.enable = sb;
        sys.bmc.secure_boot.current_boot = sb;
    }
    if let Some(p) = &e.power {
        sys.power = match p.as_str() {
            "On" => PowerState::On,
            "Off" => PowerState::Off,
            _ => return Err(err("power", format!("{p:?} is not one of: On, Off"))),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_macs_stay_unique_in_large_inventories() {
        // 24 bits of hash: 10,000 names collide with near certainty.
        let fake = fake_systems(10_000);
        let macs: HashSet<&str> = fake.iter().map(|s| s.nics[0].mac.as_str()).collect();
        assert_eq!(macs.len(), 10_000);
        let text: String = (0..10_000)
            .map(|i| format!("[[systems]]\nname = \"n-{i}\"\n"))
            .collect();
        let from_file = systems(&text).unwrap();
        let macs: HashSet<&str> = from_file.iter().map(|s| s.nics[0].mac.as_str()).collect();
        assert_eq!(macs.len(), 10_000);
        // An explicit duplicate is still an error.
        let dup = "[[systems]]\nname = \"a\"\nmacs = [\"52:54:00:00:00:01\"]\n[[systems]]\nname = \"b\"\nmacs = [\"52:54:00:00:00:01\"]\n";
        assert!(systems(dup).is_err());
    }

    fn systems(text: &str) -> Result<Vec<System>, ConfigError> {
        ConfigFile::parse("inv.toml", text)?.systems("inv.toml", &Profiles::default(), "generic")
    }

    #[test]
    fn full_entry_is_honoured() {
        let s = systems(
            r#"
            [[systems]]
            name = "p9"
            uuid = "0b7c6f1a-1111-4222-8333-444455556666"
            arch = "ppc64le"
            macs = ["52:54:00:AA:BB:01"]
            memory_mib = 8192
            cpus = 4
            disks = [{ name = "sda", capacity_gib = 40 }]
            "#,
        )
        .unwrap();
        let p = &s[0];
        assert_eq!(p.id, "0b7c6f1a-1111-4222-8333-444455556666");
        assert_eq!(p.arch, Arch::Ppc64le);
        assert_eq!(p.bmc.boot.mode, BootMode::Legacy);
        assert_eq!(p.nics[0].mac, "52:54:00:aa:bb:01");
        assert_eq!(p.disks[0].capacity_bytes, 40 << 30);
    }

    #[test]
    fn errors_name_the_key_and_allowed_values() {
        let e = systems("[[systems]]\nname = \"a\"\narch = \"sparc\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("systems[0].arch"), "{e}");
        assert!(e.contains("\"x86_64\", \"ppc64le\", \"aarch64\""), "{e}");
        let e = systems("[[systems]]\nname = \"a\"\n[[systems]]\nname = \"a\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("systems[1].name"), "{e}");
        let e = systems("[[systems]]\nname = \"a\"\ncolour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("inv.toml") && e.contains("colour"), "{e}");
        let e = systems("[[systems]]\nname = \"a\"\narch = \"ppc64le\"\nboot_mode = \"UEFI\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("systems[0].boot_mode"), "{e}");
    }

    #[test]
    fn identity_is_stable_per_name() {
        assert_eq!(default_system("x").id, default_system("x").id);
        assert_ne!(default_system("x").nics, default_system("y").nics);
    }
}
