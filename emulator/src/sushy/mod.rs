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

pub mod literal;

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::config::{ConfigError, FeatureSet, SystemEntry};
use crate::model::{BootMode, BootTarget, IndicatorLed};
use literal::{Assignment, Py};

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
}

impl FakeSystem {
    /// The entry as Shoal's inventory has it (the default profile).
    pub fn entry(&self) -> SystemEntry {
        SystemEntry {
            name: self.name.clone(),
            uuid: Some(self.entry_uuid.hyphenated().to_string()),
            arch: None,
            boot_mode: self.boot_mode.map(|m| m.as_str().to_string()),
            macs: self.macs.clone(),
            profile: None,
            memory_mib: None,
            cpus: None,
            disks: Vec::new(),
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
    /// `SUSHY_EMULATOR_CHASSIS`, or sushy-tools' one default Chassis: the
    /// enclosures served beside each system's own Chassis.
    pub chassis: Vec<ChassisEntry>,
    /// `SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY`.
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
    /// `SUSHY_EMULATOR_STORAGE_POOL`: where a remote host's virtual media
    /// volumes go.
    pub storage_pool: Option<String>,
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
            if let Some((_, led)) = self.indicator_leds.iter().find(|(u, _)| *u == sys.uuid) {
                sys.bmc.indicator = *led;
            }
        }
    }
}

/// Reads a sushy-tools configuration file; `fake`: the fake driver
/// whatever the file says (sushy-emulator's `--fake`).
pub fn load(path: &Path, fake: bool) -> Result<SushyConfig, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &text, fake)
}

/// The keys sushy-tools 2.2.0 reads (and those its users write), with what
/// Shoal does with each.
pub const KEYS: &[&str] = &[
    "SUSHY_EMULATOR_LISTEN_IP",
    "SUSHY_EMULATOR_LISTEN_PORT",
    "SUSHY_EMULATOR_SSL_CERT",
    "SUSHY_EMULATOR_SSL_KEY",
    "SUSHY_EMULATOR_AUTH_FILE",
    "SUSHY_EMULATOR_FEATURE_SET",
    "SUSHY_EMULATOR_FAKE_DRIVER",
    "SUSHY_EMULATOR_FAKE_SYSTEMS",
    "SUSHY_EMULATOR_FAKE_IPA",
    "SUSHY_EMULATOR_LIBVIRT_URI",
    "SUSHY_EMULATOR_OS_CLOUD",
    "SUSHY_EMULATOR_OS_VMEDIA_IMAGE_FILE_UPLOAD",
    "SUSHY_EMULATOR_OS_VMEDIA_BLANK_IMAGE",
    "SUSHY_EMULATOR_OS_VMEDIA_DELAY_EJECT",
    "SUSHY_EMULATOR_IRONIC_CLOUD",
    "SUSHY_EMULATOR_IGNORE_BOOT_DEVICE",
    "SUSHY_EMULATOR_BOOT_LOADER_MAP",
    "SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM",
    "SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM",
    "SUSHY_EMULATOR_STORAGE_POOL",
    "SUSHY_EMULATOR_CHASSIS",
    "SUSHY_EMULATOR_INDICATOR_LEDS",
    "SUSHY_EMULATOR_VMEDIA_DEVICES",
    "SUSHY_EMULATOR_VMEDIA_VERIFY_SSL",
    "SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY",
    "SUSHY_EMULATOR_STORAGE",
    "SUSHY_EMULATOR_DRIVES",
    "SUSHY_EMULATOR_VOLUMES",
    "SUSHY_EMULATOR_ALLOWED_INSTANCES",
    "SUSHY_EMULATOR_DISABLE_POWER_OFF",
    "SUSHY_EMULATOR_STATE_DIR",
    "SUSHY_EMULATOR_NO_MEMOIZE",
    "EXTERNAL_NOTIFICATION_URL",
    "EXTERNAL_NOTIFICATION_CAFILE",
    "EXTERNAL_NOTIFICATION_CERTFILE",
    "EXTERNAL_NOTIFICATION_KEYFILE",
    // Flask's own, which a Flask configuration may set.
    "DEBUG",
    "TESTING",
    "SECRET_KEY",
    "ENV",
    "JSON_SORT_KEYS",
];

/// One value being read: its key and line, for errors.
struct Key<'a> {
    file: &'a str,
    a: &'a Assignment,
}

impl<'a> Key<'a> {
    fn err(&self, what: impl std::fmt::Display, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.to_string(),
            key: format!("line {}: {what}", self.a.line),
            message: message.into(),
        }
    }

    fn wrong(&self, path: &str, want: &str, v: &Py) -> ConfigError {
        self.err(
            format!("{}{path}", self.a.name),
            format!("expected {want}, found {} ({v})", v.type_name()),
        )
    }

    fn string(&self) -> Result<Option<&'a str>, ConfigError> {
        match &self.a.value {
            Py::None => Ok(None),
            Py::Str(s) => Ok(Some(s)),
            v => Err(self.wrong("", "a string or None", v)),
        }
    }

    /// A Python truth value, as sushy-tools tests it (`if value:`), from
    /// the types a configuration writes for one.
    fn truth(&self) -> Result<bool, ConfigError> {
        match &self.a.value {
            Py::None => Ok(false),
            Py::Bool(b) => Ok(*b),
            Py::Int(i) => Ok(*i != 0),
            v => Err(self.wrong("", "True or False", v)),
        }
    }

    fn dict(&self) -> Result<&'a [(Py, Py)], ConfigError> {
        match &self.a.value {
            Py::Dict(d) => Ok(d),
            Py::None => Ok(&[]),
            v => Err(self.wrong("", "a dict", v)),
        }
    }

    fn list(&self) -> Result<&'a [Py], ConfigError> {
        match &self.a.value {
            Py::List(v) | Py::Tuple(v) | Py::Set(v) => Ok(v),
            Py::None => Ok(&[]),
            v => Err(self.wrong("", "a list", v)),
        }
    }
}

/// Maps a sushy-tools configuration's text (`file` names it in errors);
/// `fake` as for [`load`].
pub fn parse(file: &str, text: &str, fake: bool) -> Result<SushyConfig, ConfigError> {
    let assignments = literal::parse(text).map_err(|e| ConfigError::Parse {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let mut c = SushyConfig {
        listen_ip: None,
        listen_port: None,
        tls: None,
        auth_file: None,
        feature_set: None,
        driver: Driver::Libvirt(DEFAULT_LIBVIRT_URI.into()),
        allowed: Vec::new(),
        vmedia_verify_ssl: false,
        state_dir: default_state_dir(),
        indicator_leds: Vec::new(),
        disable_power_off: false,
        chassis: vec![ChassisEntry::sushy_default()],
        media_ip_family: None,
        storage_pool: None,
        notes: Vec::new(),
    };
    let mut fake = fake;
    let mut fake_systems = None;
    let mut libvirt_uri = None;
    let (mut cert, mut key) = (None, None);
    let mut other_backend: Option<(String, &'static str)> = None;
    let mut ironic_cloud: Option<String> = None;
    let mut notifier_keys = false;
    for a in &assignments {
        let k = Key { file, a };
        let note = |c: &mut SushyConfig, why: &str| {
            c.notes
                .push(format!("{file}: line {}: {}: {why}", a.line, a.name))
        };
        if !a.name.bytes().any(|b| b.is_ascii_uppercase())
            || a.name.bytes().any(|b| b.is_ascii_lowercase())
        {
            note(
                &mut c,
                "ignored, as sushy-tools ignores names that are not upper case",
            );
            continue;
        }
        match a.name.as_str() {
            "SUSHY_EMULATOR_LISTEN_IP" => {
                c.listen_ip = match k.string()? {
                    None | Some("") => None,
                    Some("localhost") => Some(IpAddr::from([127, 0, 0, 1])),
                    Some(s) => Some(
                        s.parse()
                            .map_err(|_| k.err(&a.name, format!("{s:?} is not an IP address")))?,
                    ),
                }
            }
            "SUSHY_EMULATOR_LISTEN_PORT" => {
                c.listen_port =
                    match &a.value {
                        Py::None => None,
                        Py::Int(p) => Some(u16::try_from(*p).map_err(|_| {
                            k.err(&a.name, format!("{p} is not a TCP port (0-65535)"))
                        })?),
                        v => return Err(k.wrong("", "an int", v)),
                    }
            }
            "SUSHY_EMULATOR_SSL_CERT" => cert = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_SSL_KEY" => key = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_AUTH_FILE" => c.auth_file = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_FEATURE_SET" => {
                c.feature_set = match k.string()? {
                    None => None,
                    Some("full") => Some(FeatureSet::Full),
                    Some("vmedia") => Some(FeatureSet::Vmedia),
                    Some("minimum") => Some(FeatureSet::Minimum),
                    Some(s) => {
                        return Err(k.err(
                            &a.name,
                            format!("{s:?} is not one of: full, vmedia, minimum"),
                        ))
                    }
                }
            }
            "SUSHY_EMULATOR_FAKE_DRIVER" => fake |= k.truth()?,
            "SUSHY_EMULATOR_FAKE_SYSTEMS" => fake_systems = Some(fake_system_list(&k)?),
            "SUSHY_EMULATOR_FAKE_IPA" => {
                k.truth()?;
                note(&mut c, "ignored, as sushy-tools 2.2.0 ignores it");
            }
            "SUSHY_EMULATOR_LIBVIRT_URI" => libvirt_uri = k.string()?.map(str::to_string),
            "SUSHY_EMULATOR_OS_CLOUD" => {
                if let Some(s) = k.string()? {
                    other_backend.get_or_insert((
                        format!("line {}: {} = {s:?}", a.line, a.name),
                        "Shoal has no OpenStack (Nova) backend: it serves libvirt \
                         domains or fake systems (see the README)",
                    ));
                }
            }
            "SUSHY_EMULATOR_IRONIC_CLOUD" => {
                ironic_cloud = k.string()?.filter(|c| !c.is_empty()).map(str::to_string)
            }
            "SUSHY_EMULATOR_OS_VMEDIA_IMAGE_FILE_UPLOAD"
            | "SUSHY_EMULATOR_OS_VMEDIA_DELAY_EJECT" => {
                k.truth()?;
            }
            "SUSHY_EMULATOR_OS_VMEDIA_BLANK_IMAGE" => {
                k.string()?;
            }
            "SUSHY_EMULATOR_IGNORE_BOOT_DEVICE" => {
                if k.truth()? {
                    note(
                        &mut c,
                        "not served: Shoal's machines boot what the BMC was told, \
                         the override in the definition or the NVRAM (BootNext), as \
                         a real server's firmware does",
                    );
                }
            }
            "SUSHY_EMULATOR_BOOT_LOADER_MAP" => {
                for (mode, arches) in k.dict()? {
                    let Py::Dict(arches) = arches else {
                        return Err(k.wrong(&format!("[{mode}]"), "a dict", arches));
                    };
                    for (arch, path) in arches {
                        if !matches!(path, Py::Str(_) | Py::None) {
                            return Err(k.wrong(
                                &format!("[{mode}][{arch}]"),
                                "a path or None",
                                path,
                            ));
                        }
                    }
                }
                note(
                    &mut c,
                    "checked, not used: Shoal picks each domain's firmware from \
                     QEMU's firmware descriptors (the UEFI build with Secure Boot \
                     and enrolled keys when Secure Boot is on)",
                );
            }
            "SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM"
            | "SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM" => {
                k.string()?;
                note(
                    &mut c,
                    "checked, not used: the NVRAM template comes with the firmware \
                     Shoal picks from QEMU's firmware descriptors",
                );
            }
            "SUSHY_EMULATOR_STORAGE_POOL" => {
                c.storage_pool = k.string()?.filter(|p| !p.is_empty()).map(str::to_string)
            }
            "SUSHY_EMULATOR_CHASSIS" => c.chassis = chassis_list(&k)?,
            "SUSHY_EMULATOR_INDICATOR_LEDS" => {
                for (id, led) in k.dict()? {
                    let Py::Str(id) = id else {
                        return Err(k.wrong("", "system UUIDs as keys", id));
                    };
                    let uuid = Uuid::parse_str(id)
                        .map_err(|_| k.err(&a.name, format!("{id:?} is not a UUID")))?;
                    let state = match led {
                        Py::Str(s) => IndicatorLed::parse(s),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        k.err(
                            format!("{}[{id:?}]", a.name),
                            format!("{led} is not one of: Lit, Blinking, Off"),
                        )
                    })?;
                    c.indicator_leds.push((uuid, state));
                }
            }
            "SUSHY_EMULATOR_VMEDIA_DEVICES" => vmedia_devices(&k)?,
            "SUSHY_EMULATOR_VMEDIA_VERIFY_SSL" => c.vmedia_verify_ssl = k.truth()?,
            "SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY" => {
                c.media_ip_family =
                    match k.string()? {
                        None | Some("") => None,
                        Some(f) => Some(crate::netpolicy::IpFamily::parse(f).ok_or_else(|| {
                            k.err(&a.name, format!("{f:?} is not one of: '4', '6'"))
                        })?),
                    };
            }
            "SUSHY_EMULATOR_STORAGE" | "SUSHY_EMULATOR_DRIVES" | "SUSHY_EMULATOR_VOLUMES" => {
                if !k.dict()?.is_empty() {
                    note(
                        &mut c,
                        "not served: Shoal's Storage shows each machine's own disks \
                         (the domain's, or the inventory's) behind one controller, \
                         and volumes made over them through Redfish",
                    );
                }
            }
            "SUSHY_EMULATOR_ALLOWED_INSTANCES" => {
                c.allowed = k
                    .list()?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Py::Str(s) => Ok(s.clone()),
                        v => Err(k.wrong(&format!("[{i}]"), "a name or UUID", v)),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "SUSHY_EMULATOR_DISABLE_POWER_OFF" => {
                // sushy-tools tests `is True`.
                c.disable_power_off = matches!(a.value, Py::Bool(true));
                if !matches!(a.value, Py::Bool(_) | Py::None) {
                    return Err(k.wrong("", "True or False", &a.value));
                }
            }
            "SUSHY_EMULATOR_STATE_DIR" => {
                if let Some(d) = k.string()? {
                    c.state_dir = PathBuf::from(d);
                }
            }
            "SUSHY_EMULATOR_NO_MEMOIZE" => {
                k.truth()?;
                note(
                    &mut c,
                    "ignored (a later sushy-tools' key): Shoal keeps state in memory \
                     and in its state file",
                );
            }
            "EXTERNAL_NOTIFICATION_URL"
            | "EXTERNAL_NOTIFICATION_CAFILE"
            | "EXTERNAL_NOTIFICATION_CERTFILE"
            | "EXTERNAL_NOTIFICATION_KEYFILE" => {
                k.string()?;
                notifier_keys = true;
            }
            "DEBUG" => {
                if k.truth()? {
                    note(
                        &mut c,
                        "Flask's debug mode (reloader, debugger) has no Shoal \
                         counterpart; --debug or RUST_LOG=debug logs at debug level",
                    );
                }
            }
            "TESTING" | "SECRET_KEY" | "ENV" | "JSON_SORT_KEYS" => {
                note(&mut c, "a Flask setting; Shoal is not a Flask application")
            }
            other => {
                let near = KEYS
                    .iter()
                    .find(|known| similar(known, other))
                    .map(|known| format!(" (did you mean {known}?)"))
                    .unwrap_or_default();
                return Err(k.err(
                    other,
                    format!("no sushy-tools 2.2.0 key by this name{near}"),
                ));
            }
        }
    }
    if let (Some(c_), Some(k_)) = (&cert, &key) {
        c.tls = Some((c_.clone(), k_.clone()));
    } else if cert.is_some() || key.is_some() {
        c.notes.push(format!(
            "{file}: SUSHY_EMULATOR_SSL_CERT and SUSHY_EMULATOR_SSL_KEY: only one is \
             set, so plain HTTP is served (as sushy-tools does)"
        ));
    }
    c.driver = if fake {
        let systems = fake_systems.unwrap_or_else(|| {
            vec![(
                FakeSystem {
                    entry_uuid: Uuid::parse_str(DEFAULT_FAKE_UUID).expect("a UUID"),
                    name: DEFAULT_FAKE_NAME.into(),
                    power_on: false,
                    macs: vec![DEFAULT_FAKE_MAC.into()],
                    boot_mode: None,
                    boot_device: None,
                    secure_boot: None,
                },
                false,
            )]
        });
        if notifier_keys || systems.iter().any(|(_, notifies)| *notifies) {
            c.notes.push(format!(
                "{file}: EXTERNAL_NOTIFICATION_*, external_notifier: not served: \
                 Shoal's fake systems notify nobody of their changes (sushy-tools \
                 PUTs each system's JSON to a URL)"
            ));
        }
        Driver::Fake(systems.into_iter().map(|(s, _)| s).collect())
    } else {
        if let Some((what, why)) = other_backend {
            return Err(ConfigError::Invalid {
                file: file.to_string(),
                key: what,
                message: why.to_string(),
            });
        }
        if fake_systems.is_some() {
            c.notes.push(format!(
                "{file}: SUSHY_EMULATOR_FAKE_SYSTEMS: not used, as \
                 SUSHY_EMULATOR_FAKE_DRIVER is not set (sushy-tools serves {})",
                if ironic_cloud.is_some() {
                    "Ironic's nodes"
                } else {
                    "libvirt"
                }
            ));
        }
        match ironic_cloud {
            Some(cloud) => Driver::Ironic(cloud),
            None => Driver::Libvirt(
                libvirt_uri
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| DEFAULT_LIBVIRT_URI.into()),
            ),
        }
    };
    Ok(c)
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

/// `SUSHY_EMULATOR_FAKE_SYSTEMS`: each entry with whether it asked for a
/// notifier.
fn fake_system_list(k: &Key<'_>) -> Result<Vec<(FakeSystem, bool)>, ConfigError> {
    let mut out = Vec::new();
    for (i, e) in k.list()?.iter().enumerate() {
        let at = |f: &str| format!("[{i}][{f:?}]");
        let Py::Dict(fields) = e else {
            return Err(k.wrong(&format!("[{i}]"), "a dict", e));
        };
        let get = |f: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == Py::Str(f.into()))
                .map(|(_, v)| v)
        };
        let string = |f: &str| -> Result<Option<&str>, ConfigError> {
            match get(f) {
                None | Some(Py::None) => Ok(None),
                Some(Py::Str(s)) => Ok(Some(s)),
                Some(v) => Err(k.wrong(&at(f), "a string", v)),
            }
        };
        for (name, _) in fields {
            let known = matches!(name, Py::Str(n) if matches!(n.as_str(),
                "uuid" | "name" | "power_state" | "external_notifier" | "nics"
                | "boot_device" | "boot_mode" | "secure_boot" | "boot_image" | "pending_power"));
            if !known {
                return Err(k.err(
                    format!("{}[{i}][{name}]", k.a.name),
                    "not a field of sushy-tools' fake systems (uuid, name, power_state, \
                     external_notifier, nics, boot_device, boot_mode, secure_boot, \
                     boot_image, pending_power)",
                ));
            }
        }
        let uuid = string("uuid")?
            .ok_or_else(|| k.err(format!("{}{}", k.a.name, at("uuid")), "required"))?;
        let entry_uuid = Uuid::parse_str(uuid).map_err(|_| {
            k.err(
                format!("{}{}", k.a.name, at("uuid")),
                format!("{uuid:?} is not a UUID"),
            )
        })?;
        let name = string("name")?
            .ok_or_else(|| k.err(format!("{}{}", k.a.name, at("name")), "required"))?;
        let power_on = match string("power_state")? {
            None | Some("Off") => false,
            Some("On") => true,
            Some(s) => {
                return Err(k.err(
                    format!("{}{}", k.a.name, at("power_state")),
                    format!("{s:?} is not one of: On, Off"),
                ))
            }
        };
        let mut macs = Vec::new();
        match get("nics") {
            None | Some(Py::None) => {}
            Some(Py::List(nics)) => {
                for (j, n) in nics.iter().enumerate() {
                    let mac = match n {
                        Py::Dict(f) => f.iter().find(|(x, _)| *x == Py::Str("mac".into())),
                        _ => None,
                    };
                    match mac {
                        Some((_, Py::Str(m))) => macs.push(m.clone()),
                        _ => {
                            return Err(k.err(
                                format!("{}[{i}][\"nics\"][{j}]", k.a.name),
                                "expected a dict with a \"mac\" string",
                            ))
                        }
                    }
                }
            }
            Some(v) => return Err(k.wrong(&at("nics"), "a list", v)),
        }
        let boot_mode = match string("boot_mode")? {
            None => None,
            Some(s) => Some(BootMode::parse(s).ok_or_else(|| {
                k.err(
                    format!("{}{}", k.a.name, at("boot_mode")),
                    format!("{s:?} is not one of: UEFI, Legacy"),
                )
            })?),
        };
        let boot_device = match string("boot_device")? {
            None => None,
            Some(s) => Some(
                BootTarget::parse(s)
                    .filter(|t| {
                        matches!(
                            t,
                            BootTarget::Pxe
                                | BootTarget::Hdd
                                | BootTarget::Cd
                                | BootTarget::Floppy
                                | BootTarget::UefiHttp
                        )
                    })
                    .ok_or_else(|| {
                        k.err(
                            format!("{}{}", k.a.name, at("boot_device")),
                            format!("{s:?} is not one of: Pxe, Hdd, Cd, Floppy, UefiHttp"),
                        )
                    })?,
            ),
        };
        let flag = |f: &str| -> Result<Option<bool>, ConfigError> {
            match get(f) {
                None | Some(Py::None) => Ok(None),
                Some(Py::Bool(b)) => Ok(Some(*b)),
                Some(v) => Err(k.wrong(&at(f), "True or False", v)),
            }
        };
        let secure_boot = flag("secure_boot")?;
        let notifier = flag("external_notifier")?.unwrap_or(false);
        out.push((
            FakeSystem {
                entry_uuid,
                name: name.to_string(),
                power_on,
                macs,
                boot_mode,
                boot_device,
                secure_boot,
            },
            notifier,
        ));
    }
    Ok(out)
}

/// `SUSHY_EMULATOR_CHASSIS`: dicts of `Id`, `Name` and `UUID`, the UUIDs
/// distinct (sushy-tools refuses to start otherwise); an empty list is
/// sushy-tools' default Chassis, as there.
fn chassis_list(k: &Key<'_>) -> Result<Vec<ChassisEntry>, ConfigError> {
    let mut out: Vec<ChassisEntry> = Vec::new();
    for (i, e) in k.list()?.iter().enumerate() {
        let at = |f: &str| format!("{}[{i}][{f:?}]", k.a.name);
        let Py::Dict(fields) = e else {
            return Err(k.wrong(&format!("[{i}]"), "a dict", e));
        };
        let get = |f: &str| -> Result<Option<String>, ConfigError> {
            match fields.iter().find(|(n, _)| *n == Py::Str(f.into())) {
                None => Ok(None),
                Some((_, Py::Str(v))) => Ok(Some(v.clone())),
                Some((_, v)) => Err(k.wrong(&format!("[{i}][{f:?}]"), "a string", v)),
            }
        };
        let id = get("Id")?.ok_or_else(|| k.err(at("Id"), "required"))?;
        let name = get("Name")?.unwrap_or_else(|| id.clone());
        let uuid = get("UUID")?.ok_or_else(|| k.err(at("UUID"), "required"))?;
        let uuid = Uuid::parse_str(&uuid)
            .map_err(|_| k.err(at("UUID"), format!("{uuid:?} is not a UUID")))?;
        for (n, _) in fields {
            if !matches!(n, Py::Str(n) if matches!(n.as_str(), "Id" | "Name" | "UUID")) {
                return Err(k.err(
                    format!("{}[{i}][{n}]", k.a.name),
                    "not a field of sushy-tools' chassis (Id, Name, UUID)",
                ));
            }
        }
        if out.iter().any(|c| c.uuid == uuid || c.id == id) {
            return Err(k.err(
                format!("{}[{i}]", k.a.name),
                "another chassis has this Id or UUID",
            ));
        }
        out.push(ChassisEntry { id, name, uuid });
    }
    if out.is_empty() {
        out.push(ChassisEntry::sushy_default());
    }
    Ok(out)
}

/// `SUSHY_EMULATOR_VMEDIA_DEVICES`: Shoal's BMCs have sushy-tools' two
/// default devices, a CD (`Cd`) and a removable disk (`Floppy`); a
/// configuration may list those, not others.
fn vmedia_devices(k: &Key<'_>) -> Result<(), ConfigError> {
    for (id, dev) in k.dict()? {
        let Py::Str(id) = id else {
            return Err(k.wrong("", "device Ids as keys", id));
        };
        let types = match dev {
            Py::Dict(f) => f.iter().find(|(n, _)| *n == Py::Str("MediaTypes".into())),
            _ => None,
        };
        let want: &[&str] = match id.as_str() {
            "Cd" => &["CD", "DVD"],
            "Floppy" => &["Floppy", "USBStick"],
            _ => {
                return Err(k.err(
                    format!("{}[{id:?}]", k.a.name),
                    "not served: Shoal's BMCs have two virtual media devices, `Cd` \
                     (CD, DVD) and `Floppy` (Floppy, USBStick), as sushy-tools' default",
                ))
            }
        };
        let ok = match types {
            None => true,
            Some((_, Py::List(t) | Py::Tuple(t))) => t
                .iter()
                .all(|x| matches!(x, Py::Str(s) if want.contains(&s.as_str()))),
            _ => false,
        };
        if !ok {
            return Err(k.err(
                format!("{}[{id:?}][\"MediaTypes\"]", k.a.name),
                format!("Shoal's {id} takes {}", want.join(", ")),
            ));
        }
    }
    Ok(())
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
        assert_eq!(
            notes_about(&c, "external_notifier").len(),
            1,
            "{:?}",
            c.notes
        );
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
            ("import os\nSUSHY_EMULATOR_LISTEN_PORT = 1\n", "line 1: `import` is code"),
            (
                "SUSHY_EMULATOR_LISTEN_PORT = int('8000')\n",
                "line 1: `int` is a name",
            ),
            (
                "\nSUSHY_EMULATOR_LISTEN_PORT = '8000'\n",
                "line 2: SUSHY_EMULATOR_LISTEN_PORT: expected an int, found a str",
            ),
            (
                "SUSHY_EMULATOR_LISTEN_PORT = 70000\n",
                "not a TCP port",
            ),
            (
                "SUSHY_EMULATOR_LISTN_IP = '::'\n",
                "no sushy-tools 2.2.0 key by this name (did you mean SUSHY_EMULATOR_LISTEN_IP?)",
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
                "SUSHY_EMULATOR_VMEDIA_DEVICES = {'Usb': {'Name': 'USB', 'MediaTypes': ['USBStick']}}\n",
                "two virtual media devices",
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
            "SUSHY_EMULATOR_BOOT_LOADER_MAP = {'UEFI': {'x86_64': '/usr/share/OVMF/OVMF_CODE.fd'}}\n\
             SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = True\n\
             SUSHY_EMULATOR_CHASSIS = [{'Id': 'Chassis', 'Name': 'Chassis', 'UUID': '48295861-2522-3561-6729-621118518810'}]\n\
             SUSHY_EMULATOR_SSL_CERT = '/c.pem'\n\
             lowercase = 1\n",
            false,
        )
        .unwrap();
        for key in [
            "line 1: SUSHY_EMULATOR_BOOT_LOADER_MAP: checked, not used",
            "line 2: SUSHY_EMULATOR_IGNORE_BOOT_DEVICE: not served",
            "only one is set, so plain HTTP",
            "line 5: lowercase: ignored",
        ] {
            assert_eq!(notes_about(&c, key).len(), 1, "{key}: {:?}", c.notes);
        }
        assert_eq!(c.tls, None);
        assert!(
            c.notes.iter().all(|n| !n.contains("CHASSIS")),
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
}
