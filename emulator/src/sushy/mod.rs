//! sushy-tools compatibility: Shoal started the way `sushy-emulator` is,
//! from the same configuration file.
//!
//! A sushy-tools configuration is Python that Flask executes; Shoal reads
//! its literal assignments ([`literal`]) and maps every key sushy-tools
//! 2.2.0 reads onto Shoal's own settings. A key Shoal does not serve the
//! way sushy-tools does is reported with the reason (a note, logged at
//! start-up), or refused when serving without it would mislead the suite
//! (another backend). Code, an unknown key or a value of the wrong type is
//! an error naming the line.

mod inventory;
pub use inventory::MediaDevice;
mod key;
pub mod literal;
mod read;
pub mod storage;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::config::{ConfigError, FeatureSet, SystemEntry};
use crate::model::{BootMode, BootTarget, IndicatorLed};
use key::Key;
use read::Reader;

/// The libvirt URI sushy-tools uses when its configuration names none.
pub const DEFAULT_LIBVIRT_URI: &str = "qemu:///system";

/// The one system sushy-tools' fake driver serves when its configuration
/// lists none (`resources/systems/fakedriver.py`), so that scripts which
/// hard-code it keep working.
pub const DEFAULT_FAKE_UUID: &str = "27946b59-9e44-4fa7-8e91-f3527a1ef094";
const DEFAULT_FAKE_NAME: &str = "fake";
const DEFAULT_FAKE_MAC: &str = "00:5c:52:31:3a:9c";

/// Where sushy-tools keeps its fake driver's state when
/// `SUSHY_EMULATOR_STATE_DIR` is unset: `$TMPDIR/sushy-emulator`.
fn default_state_dir() -> PathBuf {
    std::env::temp_dir().join("sushy-emulator")
}

/// The systems backend the configuration selects, in sushy-tools' order:
/// the fake driver, else OpenStack (refused), else Ironic (refused), else
/// libvirt.
#[derive(Debug, Clone, PartialEq)]
pub enum Driver {
    Fake(Vec<FakeSystem>),
    Libvirt(String),
    /// `SUSHY_EMULATOR_IRONIC_CLOUD`: the cloud's name in clouds.yaml.
    Ironic(String),
}

/// One entry of `SUSHY_EMULATOR_FAKE_SYSTEMS`.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeSystem {
    pub entry_uuid: Uuid,
    pub name: String,
    pub power_on: bool,
    pub macs: Vec<String>,
    pub boot_mode: Option<BootMode>,
    pub boot_device: Option<BootTarget>,
    pub secure_boot: Option<bool>,
    /// With `external_notifier: True`: the entry as configured (JSON), the
    /// document sushy-tools PUTs on each change.
    pub notifies: Option<serde_json::Map<String, serde_json::Value>>,
    /// Shoal's own fields of the entry, which sushy-tools passes over.
    pub hardware: Hardware,
}

/// What an entry of `SUSHY_EMULATOR_FAKE_SYSTEMS` may say of the machine
/// beyond sushy-tools' fields: memory, CPUs, disks (name, GiB), the
/// architecture and the profile, as Shoal's own inventory says them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hardware {
    pub memory_mib: Option<u64>,
    pub cpus: Option<u32>,
    pub disks: Vec<(String, u64)>,
    pub arch: Option<String>,
    pub profile: Option<String>,
}

impl FakeSystem {
    /// The entry as Shoal's inventory has it (the default profile).
    pub fn entry(&self) -> SystemEntry {
        SystemEntry {
            name: self.name.clone(),
            uuid: Some(self.entry_uuid.hyphenated().to_string()),
            arch: self.hardware.arch.clone(),
            boot_mode: self.boot_mode.map(|m| m.as_str().to_string()),
            macs: self.macs.clone(),
            profile: self.hardware.profile.clone(),
            memory_mib: self.hardware.memory_mib,
            cpus: self.hardware.cpus,
            disks: self
                .hardware
                .disks
                .iter()
                .map(|(name, capacity_gib)| crate::config::DiskEntry {
                    name: name.clone(),
                    capacity_gib: *capacity_gib,
                })
                .collect(),
            secure_boot: self.secure_boot,
            power: Some(if self.power_on { "On" } else { "Off" }.into()),
        }
    }
}

/// A sushy-tools configuration, as Shoal serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct SushyConfig {
    /// `SUSHY_EMULATOR_LISTEN_IP`: None for sushy-tools' default
    /// (127.0.0.1, as Flask binds when it is unset or empty).
    pub listen_ip: Option<IpAddr>,
    pub listen_port: Option<u16>,
    /// Certificate and key: sushy-tools serves TLS only with both.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub auth_file: Option<PathBuf>,
    pub feature_set: Option<FeatureSet>,
    pub driver: Driver,
    /// `SUSHY_EMULATOR_ALLOWED_INSTANCES`: names or UUIDs; empty: all.
    pub allowed: Vec<String>,
    /// `SUSHY_EMULATOR_VMEDIA_VERIFY_SSL` (sushy-tools' default: False).
    pub vmedia_verify_ssl: bool,
    /// Where the fake driver's state survives restarts.
    pub state_dir: PathBuf,
    /// `SUSHY_EMULATOR_INDICATOR_LEDS`: the LED of these systems at start.
    pub indicator_leds: Vec<(Uuid, IndicatorLed)>,
    /// `SUSHY_EMULATOR_DISABLE_POWER_OFF`.
    pub disable_power_off: bool,
    /// `SUSHY_EMULATOR_IGNORE_BOOT_DEVICE`: boot device requests are
    /// answered and not applied.
    pub ignore_boot_device: bool,
    /// `SUSHY_EMULATOR_CHASSIS`, or sushy-tools' one default Chassis: the
    /// enclosures served beside each system's own Chassis.
    pub chassis: Vec<ChassisEntry>,
    /// `SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY`.
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
    /// `SUSHY_EMULATOR_STORAGE_POOL`: where a remote host's virtual media
    /// volumes go.
    pub storage_pool: Option<String>,
    /// `SUSHY_EMULATOR_STORAGE`, `_DRIVES` and `_VOLUMES`: fake systems'
    /// storage subsystems, drives and volumes.
    pub storage: Vec<storage::SystemStorage>,
    /// `SUSHY_EMULATOR_VMEDIA_DEVICES`: the devices on the CD slot and on
    /// the removable one (None: sushy-tools' two defaults).
    pub vmedia_devices: Option<[Option<inventory::MediaDevice>; 2]>,
    /// `SUSHY_EMULATOR_BOOT_LOADER_MAP` and the Secure Boot NVRAM
    /// templates: the UEFI firmware libvirt domains run.
    pub loaders: Option<crate::backend::options::LoaderMap>,
    /// `EXTERNAL_NOTIFICATION_*`: where notifying fake systems PUT their
    /// documents (sushy-tools' default `http://localhost:9999`).
    pub notification: Notification,
    /// What is read but not served as sushy-tools serves it, and why.
    pub notes: Vec<String>,
}

/// A Chassis of `SUSHY_EMULATOR_CHASSIS`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChassisEntry {
    pub id: String,
    pub name: String,
    pub uuid: Uuid,
}

impl ChassisEntry {
    /// sushy-tools' Chassis when its configuration names none.
    pub fn sushy_default() -> Self {
        ChassisEntry {
            id: "SheetMetalChassis".into(),
            name: "Chassis".into(),
            uuid: Uuid::from_u128(0x15693887_7984_9484_3272_842188918912),
        }
    }
}

/// The fake systems' state file in `SUSHY_EMULATOR_STATE_DIR`.
pub const STATE_FILE: &str = "shoal-fake-systems.json";

impl SushyConfig {
    /// The configuration as Shoal's own inventory file would say it.
    pub fn config_file(&self) -> crate::config::ConfigFile {
        crate::config::ConfigFile {
            feature_set: self.feature_set,
            auth: self
                .auth_file
                .clone()
                .map(|htpasswd| crate::config::AuthSection { htpasswd }),
            tls: self
                .tls
                .clone()
                .map(|(certificate, key)| crate::config::TlsSection { certificate, key }),
            systems: match &self.driver {
                Driver::Fake(v) => v
                    .iter()
                    .filter(|s| self.allows(s))
                    .map(FakeSystem::entry)
                    .collect(),
                Driver::Libvirt(_) | Driver::Ironic(_) => Vec::new(),
            },
            ..Default::default()
        }
    }

    /// `profile` with the configuration's virtual media devices, where it
    /// names its own: their Ids wherever the profile shows devices, a
    /// slot no device takes not served.
    pub fn media_profile(
        &self,
        profile: &crate::profile::Profile,
    ) -> Option<crate::profile::Profile> {
        let devices = self.vmedia_devices.as_ref()?;
        let mut p = profile.clone();
        let ids: Vec<String> = devices
            .iter()
            .map(|d| d.as_ref().map(|d| d.id.clone()).unwrap_or_default())
            .collect();
        for list in [&mut p.vmedia.system_ids, &mut p.vmedia.manager_ids] {
            if !list.is_empty() {
                list.clone_from(&ids);
            }
        }
        let defaults = [
            ("Virtual CD", ["CD", "DVD"]),
            ("Virtual Removable Media", ["Floppy", "USBStick"]),
        ];
        let shown = |i: usize| match &devices[i] {
            Some(d) => (d.name.clone(), d.media_types.clone()),
            None => (
                defaults[i].0.to_string(),
                defaults[i].1.iter().map(|t| t.to_string()).collect(),
            ),
        };
        p.vmedia.devices = Some([shown(0), shown(1)]);
        Some(p)
    }

    /// Whether `SUSHY_EMULATOR_ALLOWED_INSTANCES` lets a fake system be
    /// served (by name or UUID).
    fn allows(&self, s: &FakeSystem) -> bool {
        self.allowed.is_empty()
            || self
                .allowed
                .iter()
                .any(|a| *a == s.name || Uuid::parse_str(a).is_ok_and(|u| u == s.entry_uuid))
    }

    /// What the inventory cannot say: each fake system's boot device and
    /// the indicator LEDs the configuration sets at start.
    pub fn apply(&self, systems: &mut [crate::model::System]) {
        for sys in systems {
            if let Driver::Fake(v) = &self.driver {
                let dev = v.iter().find(|f| f.entry_uuid == sys.uuid);
                if let Some(t) = dev.and_then(|f| f.boot_device) {
                    sys.bmc.boot.target = t;
                    sys.bmc.boot.enabled = crate::model::OverrideEnabled::Continuous;
                }
            }
            if let Some(s) = self.storage.iter().find(|s| s.system == sys.uuid) {
                if !s.drives.is_empty() {
                    sys.disks = s.drives.clone();
                }
                sys.bmc.storage = crate::storage::StorageState {
                    volumes: s.volumes.clone(),
                    drives: sys.disks.clone(),
                    names: Some(s.names.clone()),
                    ..Default::default()
                };
            }
            if let Some((_, led)) = self.indicator_leds.iter().find(|(u, _)| *u == sys.uuid) {
                sys.bmc.indicator = *led;
            }
        }
    }
}

/// `EXTERNAL_NOTIFICATION_URL`, `_CAFILE`, `_CERTFILE` and `_KEYFILE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub url: String,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl Default for Notification {
    fn default() -> Self {
        Notification {
            url: "http://localhost:9999".into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }
}

/// Reads the sushy-tools configuration at `path`; `fake` forces the fake
/// driver (`--fake`), as sushy-emulator's flag does.
pub fn load(path: &Path, fake: bool) -> Result<SushyConfig, ConfigError> {
    load_all(&[path], Reading::new(fake))
}

/// How a configuration is read: with sushy-tools' fake driver forced
/// (`--fake`), and whether a key no sushy-tools release reads is an error
/// (the default, naming the key one typo away) or a warning.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    pub fake: bool,
    pub unknown_keys_warn: bool,
}

impl Reading {
    pub fn new(fake: bool) -> Self {
        Reading {
            fake,
            unknown_keys_warn: false,
        }
    }
}

/// Reads several configuration files as sushy-emulator loads them into one
/// Flask configuration: in order, a key of a later file replacing the same
/// key of an earlier one (its `SUSHY_EMULATOR_CONFIG` file first, then the
/// one `--config` names).
pub fn load_all(paths: &[&Path], how: Reading) -> Result<SushyConfig, ConfigError> {
    let mut files = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        files.push((file, text));
    }
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    parse_all(&named, how)
}

/// A sushy-tools key: its name and the release that first reads it
/// (`master`: read by sushy-tools' master after 2.2.0, as of March 2026).
pub struct KnownKey {
    pub name: &'static str,
    pub since: &'static str,
}

const fn key(name: &'static str, since: &'static str) -> KnownKey {
    KnownKey { name, since }
}

/// The keys sushy-tools reads (2.2.0 and its master since), with the
/// release each came in (the first tag whose source reads it; 0.5.0 is as
/// far back as the history names them), and Flask's own.
pub const KEYS: &[KnownKey] = &[
    key("SUSHY_EMULATOR_LISTEN_IP", "0.5.0"),
    key("SUSHY_EMULATOR_LISTEN_PORT", "0.5.0"),
    key("SUSHY_EMULATOR_SSL_CERT", "0.5.0"),
    key("SUSHY_EMULATOR_SSL_KEY", "0.5.0"),
    key("SUSHY_EMULATOR_LIBVIRT_URI", "0.5.0"),
    key("SUSHY_EMULATOR_OS_CLOUD", "0.5.0"),
    key("SUSHY_EMULATOR_BOOT_LOADER_MAP", "0.5.0"),
    key("SUSHY_EMULATOR_ALLOWED_INSTANCES", "0.5.0"),
    key("SUSHY_EMULATOR_CHASSIS", "0.7.0"),
    key("SUSHY_EMULATOR_INDICATOR_LEDS", "0.7.0"),
    key("SUSHY_EMULATOR_VMEDIA_DEVICES", "0.7.0"),
    key("SUSHY_EMULATOR_STORAGE", "0.7.0"),
    key("SUSHY_EMULATOR_DRIVES", "0.7.0"),
    key("SUSHY_EMULATOR_VOLUMES", "0.7.0"),
    key("SUSHY_EMULATOR_STATE_DIR", "0.7.0"),
    key("SUSHY_EMULATOR_IGNORE_BOOT_DEVICE", "0.15.0"),
    key("SUSHY_EMULATOR_VMEDIA_VERIFY_SSL", "0.16.0"),
    key("SUSHY_EMULATOR_AUTH_FILE", "0.18.0"),
    key("SUSHY_EMULATOR_FAKE_DRIVER", "0.19.0"),
    key("SUSHY_EMULATOR_FAKE_SYSTEMS", "0.19.0"),
    key("SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM", "1.0.0"),
    key("SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM", "1.0.0"),
    key("SUSHY_EMULATOR_FEATURE_SET", "1.1.0"),
    key("SUSHY_EMULATOR_IRONIC_CLOUD", "1.1.0"),
    key("EXTERNAL_NOTIFICATION_URL", "1.3.0"),
    key("SUSHY_EMULATOR_OS_VMEDIA_IMAGE_FILE_UPLOAD", "2.0.0"),
    key("SUSHY_EMULATOR_OS_VMEDIA_BLANK_IMAGE", "2.0.0"),
    key("SUSHY_EMULATOR_DISABLE_POWER_OFF", "2.0.0"),
    key("EXTERNAL_NOTIFICATION_CAFILE", "2.0.0"),
    key("EXTERNAL_NOTIFICATION_CERTFILE", "2.0.0"),
    key("EXTERNAL_NOTIFICATION_KEYFILE", "2.0.0"),
    key("SUSHY_EMULATOR_OS_VMEDIA_DELAY_EJECT", "2.1.0"),
    key("SUSHY_EMULATOR_STORAGE_POOL", "2.1.0"),
    key("SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY", "2.1.0"),
    key("SUSHY_EMULATOR_NO_MEMOIZE", "master"),
    key("SUSHY_EMULATOR_OS_RESCUE_PXE_BOOT", "master"),
    key("SUSHY_EMULATOR_OS_RESCUE_PXE_IMAGE_BIOS", "master"),
    key("SUSHY_EMULATOR_OS_RESCUE_PXE_IMAGE_UEFI", "master"),
    key("SUSHY_EMULATOR_OS_VMEDIA_DISK_FORMAT_OVERRIDE", "master"),
    key("SUSHY_EMULATOR_OS_VMEDIA_USE_RESCUE", "master"),
    key("SUSHY_EMULATOR_OS_VMEDIA_RESCUE_BUS", "master"),
    key("SUSHY_EMULATOR_OS_VMEDIA_RESCUE_DEVICE", "master"),
    // Written by metal3's fake platform, read by no sushy-tools release.
    key("SUSHY_EMULATOR_FAKE_IPA", "none"),
    // Flask's own, which a Flask configuration may set.
    key("DEBUG", "Flask"),
    key("TESTING", "Flask"),
    key("SECRET_KEY", "Flask"),
    key("ENV", "Flask"),
    key("JSON_SORT_KEYS", "Flask"),
];

/// The release that first reads `name`, if sushy-tools reads it.
pub fn key_since(name: &str) -> Option<&'static str> {
    KEYS.iter().find(|k| k.name == name).map(|k| k.since)
}

/// Maps a sushy-tools configuration's text (`file` names it in errors);
/// `fake` as for [`load`].
pub fn parse(file: &str, text: &str, fake: bool) -> Result<SushyConfig, ConfigError> {
    parse_all(&[(file, text)], Reading::new(fake))
}

/// Maps configuration texts (file name, text) read in order, as
/// [`load_all`] does.
pub fn parse_all(files: &[(&str, &str)], how: Reading) -> Result<SushyConfig, ConfigError> {
    let mut r = Reader::new(how);
    for (file, text) in files {
        let assignments = literal::parse(text).map_err(|e| ConfigError::Parse {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        for a in &assignments {
            r.read(&Key { file, a })?;
        }
    }
    let names: Vec<&str> = files.iter().map(|(f, _)| *f).collect();
    r.finish(&names.join(" + "))
}

/// The address a listen host names, as sushy-emulator binds it (Werkzeug:
/// an address as written; a name such as `localhost` resolved, its first
/// IPv4 address, as a socket of the IPv4 family binds a name).
pub fn listen_host(s: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = s.parse() {
        return Ok(ip);
    }
    if s.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    if s.contains(':') || s.is_empty() {
        return Err(format!("{s:?} is not an IP address"));
    }
    use std::net::ToSocketAddrs;
    (s, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()))
        .map(|a| a.ip())
        .ok_or_else(|| format!("{s:?} is neither an IP address nor a name this host resolves"))
}

/// Two key names one typo apart (a letter changed, added or dropped).
fn similar(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    match long.len() - short.len() {
        0 => long.iter().zip(short).filter(|(x, y)| x != y).count() == 1,
        1 => (0..long.len()).any(|i| long[..i] == short[..i] && long[i + 1..] == short[i..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// A configuration as metal3-dev-env writes one for its fake platform
    /// (conf.py), with TLS, Basic auth and two fake nodes.
    const METAL3_FAKE: &str = r#"
SUSHY_EMULATOR_LIBVIRT_URI = "qemu:///system"
SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = False
SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False
SUSHY_EMULATOR_AUTH_FILE = "/root/sushy/htpasswd"
SUSHY_EMULATOR_SSL_KEY = "/root/sushy/key.pem"
SUSHY_EMULATOR_SSL_CERT = "/root/sushy/cert.pem"
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_FAKE_IPA = True
SUSHY_EMULATOR_FAKE_SYSTEMS = [
  {
    'uuid': 'a9c9b3a4-7a8e-5a8c-9a9f-000000000001',
    'name': 'node-0',
    'power_state': 'Off',
    'external_notifier': True,
    'nics': [
      {'mac': '00:5c:52:31:3a:01', 'ip': '192.168.111.20'},
      {'mac': '00:5c:52:31:3b:01', 'ip': '192.168.111.21'},
    ]
  },
  {
    'uuid': 'a9c9b3a4-7a8e-5a8c-9a9f-000000000002',
    'name': 'node-1',
    'power_state': 'On',
    'boot_device': 'Pxe',
    'nics': [{'mac': '00:5c:52:31:3a:02', 'ip': '192.168.111.22'}]
  },
]
"#;

    fn notes_about<'a>(c: &'a SushyConfig, key: &str) -> Vec<&'a String> {
        c.notes.iter().filter(|n| n.contains(key)).collect()
    }

    #[test]
    fn a_metal3_fake_configuration_maps_onto_shoal_settings() {
        let c = parse("conf.py", METAL3_FAKE, false).unwrap();
        assert_eq!(
            c.tls,
            Some(("/root/sushy/cert.pem".into(), "/root/sushy/key.pem".into()))
        );
        assert_eq!(c.auth_file, Some("/root/sushy/htpasswd".into()));
        assert!(!c.vmedia_verify_ssl);
        let Driver::Fake(systems) = &c.driver else {
            panic!("{:?}", c.driver)
        };
        assert_eq!(systems.len(), 2);
        assert_eq!(systems[0].name, "node-0");
        assert_eq!(systems[0].macs.len(), 2);
        assert!(systems[1].power_on);
        assert_eq!(systems[1].boot_device, Some(BootTarget::Pxe));
        assert_eq!(notes_about(&c, "FAKE_IPA").len(), 1, "{:?}", c.notes);
        // node-0 notifies: its entry is the document sent, as written.
        let doc = systems[0].notifies.as_ref().expect("external_notifier");
        assert_eq!(doc["nics"][1]["ip"], "192.168.111.21");
        assert!(systems[1].notifies.is_none());
        assert_eq!(c.notification.url, "http://localhost:9999");
        let file = c.config_file();
        assert_eq!(file.systems.len(), 2);
        assert_eq!(
            file.systems[0].uuid.as_deref(),
            Some("a9c9b3a4-7a8e-5a8c-9a9f-000000000001")
        );
    }

    #[test]
    fn without_a_configuration_the_fake_driver_serves_sushy_tools_one_system() {
        let c = parse("--fake", "", true).unwrap();
        let Driver::Fake(v) = &c.driver else { panic!() };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].name, "fake");
        assert_eq!(v[0].entry_uuid.to_string(), DEFAULT_FAKE_UUID);
        assert_eq!(v[0].macs, ["00:5c:52:31:3a:9c"]);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        // Without the fake driver: libvirt, at sushy-tools' default URI.
        let c = parse("e.conf", "SUSHY_EMULATOR_LISTEN_IP = u''\n", false).unwrap();
        assert_eq!(c.driver, Driver::Libvirt(DEFAULT_LIBVIRT_URI.into()));
        assert_eq!(c.listen_ip, None);
        // sushy-tools' order: the fake driver, then Nova, then Ironic,
        // then libvirt.
        let ironic = "SUSHY_EMULATOR_IRONIC_CLOUD = 'lab'\n";
        let c = parse("e.conf", ironic, false).unwrap();
        assert_eq!(c.driver, Driver::Ironic("lab".into()));
        assert!(matches!(
            parse("e.conf", ironic, true).unwrap().driver,
            Driver::Fake(_)
        ));
        let nova = format!("{ironic}SUSHY_EMULATOR_OS_CLOUD = 'nova'\n");
        assert!(parse("e.conf", &nova, false).is_err());
    }

    #[test]
    fn the_command_line_serves_the_file_as_sushy_emulator_would() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("conf.py");
        let state = dir.path().join("state");
        std::fs::write(
            &conf,
            format!(
                "{}\nSUSHY_EMULATOR_LISTEN_IP = '::'\nSUSHY_EMULATOR_LISTEN_PORT = 8123\n\
                 SUSHY_EMULATOR_FEATURE_SET = 'vmedia'\nSUSHY_EMULATOR_STATE_DIR = {:?}\n\
                 SUSHY_EMULATOR_INDICATOR_LEDS = {{'a9c9b3a4-7a8e-5a8c-9a9f-000000000002': 'Blinking'}}\n\
                 SUSHY_EMULATOR_ALLOWED_INSTANCES = ['node-1']\n\
                 SUSHY_EMULATOR_DISABLE_POWER_OFF = True\n",
                METAL3_FAKE,
                state.display().to_string()
            ),
        )
        .unwrap();
        let cli =
            Cli::try_parse_from(["shoal-emulator", "--config", conf.to_str().unwrap()]).unwrap();
        let s = cli.settings().unwrap();
        assert_eq!(s.listen.to_string(), "[::]:8123");
        assert_eq!(s.feature_set, FeatureSet::Vmedia);
        assert!(s.tls.is_some() && s.auth_file.is_some());
        assert_eq!(s.systems.len(), 1, "ALLOWED_INSTANCES keeps node-1 only");
        let sys = &s.systems[0];
        assert_eq!(sys.id, "a9c9b3a4-7a8e-5a8c-9a9f-000000000002");
        assert_eq!(sys.power, crate::model::PowerState::On);
        assert_eq!(sys.bmc.indicator, IndicatorLed::Blinking);
        assert_eq!(sys.bmc.boot.target, BootTarget::Pxe);
        assert_eq!(s.fake.state_file, Some(state.join(STATE_FILE)));
        assert!(matches!(s.backend, crate::cli::BackendChoice::Fake));
        assert!(s.power_off_disabled);
        // Flags win over the file, as sushy-emulator's do.
        let cli = Cli::try_parse_from([
            "shoal-emulator",
            "--sushy-config",
            conf.to_str().unwrap(),
            "-p",
            "9132",
            "-i",
            "127.0.0.2",
        ])
        .unwrap();
        assert_eq!(cli.settings().unwrap().listen.to_string(), "127.0.0.2:9132");
        // A libvirt configuration (no fake driver) names the URI.
        std::fs::write(
            &conf,
            "SUSHY_EMULATOR_LIBVIRT_URI = 'test:///default'\n\
             SUSHY_EMULATOR_ALLOWED_INSTANCES = ['test']\n\
             SUSHY_EMULATOR_STORAGE_POOL = 'images'\n",
        )
        .unwrap();
        let cli =
            Cli::try_parse_from(["shoal-emulator", "--config", conf.to_str().unwrap()]).unwrap();
        match cli.settings().unwrap().backend {
            crate::cli::BackendChoice::Libvirt {
                uris,
                allow,
                media_pool,
                ..
            } => {
                assert_eq!(uris, ["test:///default"]);
                assert_eq!(allow, ["test"]);
                assert_eq!(media_pool, "images");
            }
            b => panic!("{b:?}"),
        }
        let cli = Cli::try_parse_from([
            "shoal-emulator",
            "--config",
            conf.to_str().unwrap(),
            "--libvirt-media-pool",
            "other",
        ])
        .unwrap();
        assert!(matches!(
            cli.settings().unwrap().backend,
            crate::cli::BackendChoice::Libvirt { media_pool, .. } if media_pool == "other"
        ));
        // --fake over the same file: its fake systems, here the default.
        let cli = Cli::try_parse_from([
            "shoal-emulator",
            "--fake",
            "--config",
            conf.to_str().unwrap(),
        ])
        .unwrap();
        let s = cli.settings().unwrap();
        assert_eq!(s.systems.len(), 0, "ALLOWED_INSTANCES names no fake system");
    }

    #[test]
    fn bad_configurations_name_their_line_and_key() {
        for (text, words) in [
            ("import os\nSUSHY_EMULATOR_LISTEN_PORT = 1\n", "line 1: `import os` is code"),
            (
                "SUSHY_EMULATOR_LISTEN_PORT = int('8000')\n",
                "line 1: `int` is a name",
            ),
            (
                "\nSUSHY_EMULATOR_LISTEN_PORT = 'eighty'\n",
                "line 2: SUSHY_EMULATOR_LISTEN_PORT: \"eighty\" is not a TCP port",
            ),
            (
                "SUSHY_EMULATOR_LISTEN_PORT = 70000\n",
                "not a TCP port",
            ),
            (
                "SUSHY_EMULATOR_LISTN_IP = '::'\n",
                "no sushy-tools key by this name (2.2.0, nor its master as of March 2026) (did you mean SUSHY_EMULATOR_LISTEN_IP, read since sushy-tools 0.5.0?)",
            ),
            ("SUSHY_EMULATOR_FROBNICATE = 1\n", "SUSHY_EMULATOR_FROBNICATE: no sushy-tools"),
            (
                "SUSHY_EMULATOR_FEATURE_SET = 'most'\n",
                "\"most\" is not one of: full, vmedia, minimum",
            ),
            (
                "SUSHY_EMULATOR_OS_CLOUD = 'devstack'\n",
                "no OpenStack (Nova) backend",
            ),
            (
                "SUSHY_EMULATOR_VMEDIA_DEVICES = {'Usb': {'Name': 'USB', 'MediaTypes': ['USBStick']}, \
                 'Flop': {'MediaTypes': ['Floppy']}}\n",
                "line 1: SUSHY_EMULATOR_VMEDIA_DEVICES[\"Flop\"]: \"Usb\" takes the same media",
            ),
            (
                "SUSHY_EMULATOR_VMEDIA_DEVICES = {'Both': {'MediaTypes': ['CD', 'USBStick']}}\n",
                "expected a list of CD and DVD",
            ),
            (
                "SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_FAKE_SYSTEMS = [{'name': 'x'}]\n",
                "line 2: SUSHY_EMULATOR_FAKE_SYSTEMS[0][\"uuid\"]: required",
            ),
            (
                "SUSHY_EMULATOR_FAKE_SYSTEMS = [{'uuid': 'x', 'name': 'x', 'colour': 1}]\n",
                "not a field of sushy-tools' fake systems",
            ),
            (
                "SUSHY_EMULATOR_INDICATOR_LEDS = {'27946b59-9e44-4fa7-8e91-f3527a1ef094': 'On'}\n",
                "is not one of: Lit, Blinking, Off",
            ),
            (
                "SUSHY_EMULATOR_ALLOWED_INSTANCES = 'node-0'\n",
                "expected a list, found a str",
            ),
        ] {
            let e = parse("conf.py", text, false).expect_err(text).to_string();
            assert!(e.contains(words), "{text:?}: {e}");
            assert!(e.starts_with("conf.py: "), "{e}");
        }
        // The fake driver is chosen before another backend, as in
        // sushy-tools: then the cloud is not used, and that is no error.
        parse(
            "conf.py",
            "SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_OS_CLOUD = 'x'\n",
            false,
        )
        .unwrap();
    }

    #[test]
    fn what_shoal_does_not_serve_is_said_with_the_reason() {
        let c = parse(
            "e.conf",
            "SUSHY_EMULATOR_BOOT_LOADER_MAP = {'UEFI': {'x86_64': '/nonexistent/OVMF_CODE.fd'}, \
             'Legacy': {'x86_64': '/usr/share/seabios/bios.bin'}}\n\
             SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = True\n\
             SUSHY_EMULATOR_CHASSIS = [{'Id': 'Chassis', 'Name': 'Chassis', 'UUID': '48295861-2522-3561-6729-621118518810'}]\n\
             SUSHY_EMULATOR_SSL_CERT = '/c.pem'\n\
             lowercase = 1\n",
            false,
        )
        .unwrap();
        for key in [
            "line 1: SUSHY_EMULATOR_BOOT_LOADER_MAP: \"/nonexistent/OVMF_CODE.fd\" is not on this host",
            "line 1: SUSHY_EMULATOR_BOOT_LOADER_MAP: the Legacy loader",
            "only one is set, so plain HTTP",
            "line 5: lowercase: ignored",
        ] {
            assert_eq!(notes_about(&c, key).len(), 1, "{key}: {:?}", c.notes);
        }
        assert_eq!(c.tls, None);
        assert!(c.ignore_boot_device);
        assert!(
            c.notes
                .iter()
                .all(|n| !n.contains("CHASSIS") && !n.contains("IGNORE")),
            "{:?}",
            c.notes
        );
        assert_eq!(
            c.chassis,
            [ChassisEntry {
                id: "Chassis".into(),
                name: "Chassis".into(),
                uuid: Uuid::parse_str("48295861-2522-3561-6729-621118518810").unwrap(),
            }]
        );
    }

    #[test]
    fn the_media_ip_family_is_4_or_6() {
        use crate::netpolicy::IpFamily;
        for (v, want) in [
            ("'4'", Some(IpFamily::V4)),
            ("'6'", Some(IpFamily::V6)),
            ("''", None),
        ] {
            let c = parse(
                "f.conf",
                &format!("SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY = {v}\n"),
                true,
            )
            .unwrap();
            assert_eq!(c.media_ip_family, want, "{v}");
        }
        assert_eq!(parse("f.conf", "", true).unwrap().media_ip_family, None);
        for (v, says) in [("'ipv4'", "is not one of: '4', '6'"), ("4", "string")] {
            let e = parse(
                "f.conf",
                &format!("SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY = {v}\n"),
                true,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(says) && e.contains("line 1"), "{v}: {e}");
        }
    }

    #[test]
    fn chassis_are_sushy_tools_default_or_the_configured_ones() {
        let default = parse("d.conf", "", true).unwrap();
        assert_eq!(default.chassis, [ChassisEntry::sushy_default()]);
        assert_eq!(
            default.chassis[0].uuid.to_string(),
            "15693887-7984-9484-3272-842188918912"
        );
        let two = parse(
            "t.conf",
            "SUSHY_EMULATOR_CHASSIS = [{'Id': 'A', 'UUID': '48295861-2522-3561-6729-621118518810'},\n             {'Id': 'B', 'Name': 'Rack B', 'UUID': '48295861-2522-3561-6729-621118518811'}]\n",
            true,
        )
        .unwrap();
        assert_eq!(
            two.chassis
                .iter()
                .map(|c| (&c.id[..], &c.name[..]))
                .collect::<Vec<_>>(),
            [("A", "A"), ("B", "Rack B")]
        );
        for (text, says) in [
            ("SUSHY_EMULATOR_CHASSIS = [{'Id': 'A'}]", "SUSHY_EMULATOR_CHASSIS[0][\"UUID\"]: required"),
            ("SUSHY_EMULATOR_CHASSIS = [{'UUID': '48295861-2522-3561-6729-621118518810'}]", "[0][\"Id\"]: required"),
            ("SUSHY_EMULATOR_CHASSIS = [{'Id': 'A', 'UUID': 'x'}]", "\"x\" is not a UUID"),
            ("SUSHY_EMULATOR_CHASSIS = [{'Id': 1, 'UUID': 'x'}]", "a string"),
            ("SUSHY_EMULATOR_CHASSIS = ['A']", "a dict"),
            (
                "SUSHY_EMULATOR_CHASSIS = [{'Id': 'A', 'Uuid': '48295861-2522-3561-6729-621118518810', \
                 'UUID': '48295861-2522-3561-6729-621118518810'}]",
                "not a field of sushy-tools' chassis",
            ),
            (
                "SUSHY_EMULATOR_CHASSIS = [{'Id': 'A', 'UUID': '48295861-2522-3561-6729-621118518810'}, \
                 {'Id': 'B', 'UUID': '48295861-2522-3561-6729-621118518810'}]",
                "another chassis has this Id or UUID",
            ),
        ] {
            let e = parse("bad.conf", text, true).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("bad.conf"), "{text}: {e}");
        }
    }

    #[test]
    fn one_typo_apart() {
        assert!(similar(
            "SUSHY_EMULATOR_LISTEN_IP",
            "SUSHY_EMULATOR_LISTN_IP"
        ));
        assert!(similar(
            "SUSHY_EMULATOR_LISTEN_IP",
            "SUSHY_EMULATOR_LISTEN_IQ"
        ));
        assert!(!similar(
            "SUSHY_EMULATOR_LISTEN_IP",
            "SUSHY_EMULATOR_LISTEN_PORT"
        ));
    }

    #[test]
    fn unknown_keys_name_the_release_of_the_near_one_or_warn_when_asked() {
        let e = parse("c.py", "SUSHY_EMULATOR_STORAGE_POL = 'x'\n", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("did you mean SUSHY_EMULATOR_STORAGE_POOL, read since sushy-tools 2.1.0?"),
            "{e}"
        );
        let e = parse("c.py", "SUSHY_EMULATOR_OS_VMEDIA_USE_RESCU = True\n", false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("of sushy-tools after 2.2.0"), "{e}");
        let lenient = Reading {
            fake: true,
            unknown_keys_warn: true,
        };
        let c = parse_all(
            &[(
                "c.py",
                "MY_OWN_KEY = 1\nSUSHY_EMULATOR_LISTEN_PORT = 8123\n",
            )],
            lenient,
        )
        .unwrap();
        assert_eq!(c.listen_port, Some(8123));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("MY_OWN_KEY") && n.contains("--unknown-keys warn")),
            "{:?}",
            c.notes
        );
        // The newest release's keys are read, and said to be newer.
        let c = parse(
            "c.py",
            "SUSHY_EMULATOR_OS_VMEDIA_DISK_FORMAT_OVERRIDE = 'raw'\n",
            true,
        )
        .unwrap();
        assert!(
            c.notes.iter().any(|n| n.contains("after 2.2.0")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn two_files_read_as_sushy_emulator_reads_its_variable_then_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("env.conf");
        let flag = dir.path().join("flag.py");
        std::fs::write(
            &env,
            "SUSHY_EMULATOR_LISTEN_PORT = 8100\nSUSHY_EMULATOR_FEATURE_SET = 'vmedia'\n",
        )
        .unwrap();
        std::fs::write(
            &flag,
            "SUSHY_EMULATOR_LISTEN_PORT = 8200\nSUSHY_EMULATOR_FAKE_DRIVER = True\n",
        )
        .unwrap();
        let cli = Cli::try_parse_from([
            "shoal-emulator",
            "--sushy-config",
            env.to_str().unwrap(),
            "--config",
            flag.to_str().unwrap(),
            "-i",
            "localhost",
        ])
        .unwrap();
        let s = cli.settings().unwrap();
        assert_eq!(
            s.listen.to_string(),
            "127.0.0.1:8200",
            "the flag's file wins"
        );
        assert_eq!(
            s.feature_set,
            FeatureSet::Vmedia,
            "the variable's file still counts"
        );
        // A Shoal inventory beside a sushy-tools file is one too many.
        let toml = dir.path().join("inv.toml");
        std::fs::write(&toml, "").unwrap();
        let e = Cli::try_parse_from([
            "shoal-emulator",
            "--sushy-config",
            env.to_str().unwrap(),
            "--config",
            toml.to_str().unwrap(),
        ])
        .unwrap()
        .settings()
        .unwrap_err()
        .to_string();
        assert!(e.contains("serve one of them"), "{e}");
        assert!(Cli::try_parse_from(["shoal-emulator", "-i", "no such host.invalid"]).is_err());
    }
}
