//! Reading a sushy-tools configuration key by key: [`Reader`] holds the
//! settings being built and what only the whole file decides (the driver,
//! the TLS pair), one method per family of keys, and [`Reader::finish`],
//! which decides them. A key no family knows is an error that suggests
//! the known key one typo away.

use std::path::PathBuf;

use uuid::Uuid;

use super::inventory::{chassis_list, fake_system_list, vmedia_devices};
use super::key::Key;
use super::literal::Py;
use super::{
    default_state_dir, key_since, similar, ChassisEntry, Driver, FakeSystem, Reading, SushyConfig,
    DEFAULT_FAKE_MAC, DEFAULT_FAKE_NAME, DEFAULT_FAKE_UUID, DEFAULT_LIBVIRT_URI, KEYS,
};
use crate::config::{ConfigError, FeatureSet};
use crate::model::IndicatorLed;

/// A configuration being read, one assignment at a time.
pub(super) struct Reader {
    c: SushyConfig,
    how: Reading,
    /// SUSHY_EMULATOR_FAKE_DRIVER as the last file sets it.
    fake_key: bool,
    fake_systems: Option<Vec<FakeSystem>>,
    libvirt_uri: Option<String>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    other_backend: Option<(String, &'static str)>,
    ironic_cloud: Option<String>,
    storage: super::storage::Collected,
}

impl Reader {
    /// sushy-tools' defaults; `how` as for [`super::load_all`].
    pub(super) fn new(how: Reading) -> Self {
        Reader {
            c: SushyConfig {
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
                ignore_boot_device: false,
                chassis: vec![ChassisEntry::sushy_default()],
                media_ip_family: None,
                storage_pool: None,
                storage: Vec::new(),
                vmedia_devices: None,
                loaders: None,
                notification: super::Notification::default(),
                notes: Vec::new(),
            },
            how,
            fake_key: false,
            fake_systems: None,
            libvirt_uri: None,
            cert: None,
            key: None,
            other_backend: None,
            ironic_cloud: None,
            storage: Default::default(),
        }
    }

    /// One assignment; a name that is not upper case is ignored with a
    /// note, as sushy-tools ignores it.
    pub(super) fn read(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        let a = k.a;
        if !a.name.bytes().any(|b| b.is_ascii_uppercase())
            || a.name.bytes().any(|b| b.is_ascii_lowercase())
        {
            self.note(
                k,
                "ignored, as sushy-tools ignores names that are not upper case",
            );
            return Ok(());
        }
        let known = self.service(k)?
            || self.driver(k)?
            || self.nova(k)?
            || self.firmware(k)?
            || self.devices(k)?
            || self.flask(k)?
            || self.sister(k);
        if known {
            Ok(())
        } else if self.how.unknown_keys_warn {
            let e = unknown_key(k, "ignored (--unknown-keys warn)");
            self.c.notes.push(e.to_string());
            Ok(())
        } else {
            Err(unknown_key(k, "--unknown-keys warn reads on past it"))
        }
    }

    /// Keys of sushy-tools' sister tools, which share the file: metal3's
    /// fake agent (sushy-fake-ipa) reads its `FAKE_IPA_*` and
    /// `SUSHY_FAKE_IPA_*` keys from the same `conf.py`.
    fn sister(&mut self, k: &Key<'_>) -> bool {
        let name = k.a.name.as_str();
        if name.starts_with("FAKE_IPA_") || name.starts_with("SUSHY_FAKE_IPA_") {
            self.note(
                k,
                "left alone: a key of sushy-fake-ipa (metal3's fake agent), which \
                 reads the same file",
            );
            return true;
        }
        false
    }

    /// The OpenStack (Nova) backend's keys: type-checked, then unused, as
    /// Shoal has no such backend (SUSHY_EMULATOR_OS_CLOUD is refused).
    fn nova(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        match k.a.name.as_str() {
            "SUSHY_EMULATOR_OS_VMEDIA_IMAGE_FILE_UPLOAD"
            | "SUSHY_EMULATOR_OS_VMEDIA_DELAY_EJECT"
            | "SUSHY_EMULATOR_OS_RESCUE_PXE_BOOT"
            | "SUSHY_EMULATOR_OS_VMEDIA_USE_RESCUE" => {
                k.truth()?;
            }
            "SUSHY_EMULATOR_OS_VMEDIA_BLANK_IMAGE"
            | "SUSHY_EMULATOR_OS_VMEDIA_DISK_FORMAT_OVERRIDE"
            | "SUSHY_EMULATOR_OS_RESCUE_PXE_IMAGE_BIOS"
            | "SUSHY_EMULATOR_OS_RESCUE_PXE_IMAGE_UEFI"
            | "SUSHY_EMULATOR_OS_VMEDIA_RESCUE_BUS"
            | "SUSHY_EMULATOR_OS_VMEDIA_RESCUE_DEVICE" => {
                k.string()?;
            }
            _ => return Ok(false),
        }
        if key_since(&k.a.name) == Some("master") {
            self.note(
                k,
                "a key of sushy-tools after 2.2.0 (its master), for its Nova backend only",
            );
        }
        Ok(true)
    }

    /// A note about this key: read, but not served as sushy-tools serves
    /// it, and why.
    fn note(&mut self, k: &Key<'_>, why: &str) {
        self.c.notes.push(format!(
            "{}: line {}: {}: {why}",
            k.file, k.a.line, k.a.name
        ))
    }

    /// The service itself: where it listens, TLS, Basic auth, the feature
    /// set, whether power-off is refused, where the fake driver's state
    /// survives.
    fn service(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        let a = k.a;
        match a.name.as_str() {
            "SUSHY_EMULATOR_LISTEN_IP" => {
                self.c.listen_ip = match k.string()? {
                    None | Some("") => None,
                    Some(s) => Some(super::listen_host(s).map_err(|e| k.err(&a.name, e))?),
                }
            }
            "SUSHY_EMULATOR_LISTEN_PORT" => {
                // Flask's run() takes `int(port)`: a quoted number too.
                let port = match &a.value {
                    Py::None => None,
                    Py::Int(p) => Some(*p),
                    Py::Str(s) if !s.trim().is_empty() => {
                        Some(s.trim().parse::<i64>().map_err(|_| {
                            k.err(&a.name, format!("{s:?} is not a TCP port (0-65535)"))
                        })?)
                    }
                    v => return Err(k.wrong("", "an int", v)),
                };
                self.c.listen_port = port
                    .map(|p| {
                        u16::try_from(p)
                            .map_err(|_| k.err(&a.name, format!("{p} is not a TCP port (0-65535)")))
                    })
                    .transpose()?;
            }
            "SUSHY_EMULATOR_SSL_CERT" => self.cert = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_SSL_KEY" => self.key = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_AUTH_FILE" => self.c.auth_file = k.string()?.map(PathBuf::from),
            "SUSHY_EMULATOR_FEATURE_SET" => {
                self.c.feature_set = match k.string()? {
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
            "SUSHY_EMULATOR_DISABLE_POWER_OFF" => {
                // sushy-tools tests `is True`.
                self.c.disable_power_off = matches!(a.value, Py::Bool(true));
                if !matches!(a.value, Py::Bool(_) | Py::None) {
                    return Err(k.wrong("", "True or False", &a.value));
                }
            }
            "SUSHY_EMULATOR_STATE_DIR" => {
                if let Some(d) = k.string()? {
                    self.c.state_dir = PathBuf::from(d);
                }
            }
            "SUSHY_EMULATOR_NO_MEMOIZE" => {
                k.truth()?;
                self.note(
                    k,
                    "ignored (a key of sushy-tools after 2.2.0, its master): Shoal keeps \
                     state in memory and in its state file",
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Which machines are served: the fake driver and its systems, libvirt,
    /// Ironic, OpenStack (refused at the end), the allowed instances, the
    /// fake systems' notifier.
    fn driver(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        let a = k.a;
        match a.name.as_str() {
            "SUSHY_EMULATOR_FAKE_DRIVER" => self.fake_key = k.truth()?,
            "SUSHY_EMULATOR_FAKE_SYSTEMS" => self.fake_systems = Some(fake_system_list(k)?),
            "SUSHY_EMULATOR_FAKE_IPA" => {
                k.truth()?;
                self.note(k, "ignored, as sushy-tools 2.2.0 ignores it");
            }
            "SUSHY_EMULATOR_LIBVIRT_URI" => self.libvirt_uri = k.string()?.map(str::to_string),
            "SUSHY_EMULATOR_OS_CLOUD" => {
                if let Some(s) = k.string()? {
                    self.other_backend.get_or_insert((
                        format!("line {}: {} = {s:?}", a.line, a.name),
                        "Shoal has no OpenStack (Nova) backend: it serves libvirt \
                         domains or fake systems (see docs/sushy-tools.md)",
                    ));
                }
            }
            "SUSHY_EMULATOR_IRONIC_CLOUD" => {
                self.ironic_cloud = k.string()?.filter(|c| !c.is_empty()).map(str::to_string)
            }
            "SUSHY_EMULATOR_ALLOWED_INSTANCES" => {
                self.c.allowed = k
                    .list()?
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Py::Str(s) => Ok(s.clone()),
                        v => Err(k.wrong(&format!("[{i}]"), "a name or UUID", v)),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "EXTERNAL_NOTIFICATION_URL" => {
                // sushy-tools' `setdefault`: a None set is None, no URL.
                self.c.notification.url = k.string()?.unwrap_or_default().to_string();
            }
            "EXTERNAL_NOTIFICATION_CAFILE" => {
                self.c.notification.ca_file =
                    k.string()?.filter(|s| !s.is_empty()).map(PathBuf::from)
            }
            "EXTERNAL_NOTIFICATION_CERTFILE" => {
                self.c.notification.cert_file =
                    k.string()?.filter(|s| !s.is_empty()).map(PathBuf::from)
            }
            "EXTERNAL_NOTIFICATION_KEYFILE" => {
                self.c.notification.key_file =
                    k.string()?.filter(|s| !s.is_empty()).map(PathBuf::from)
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// How machines boot: the boot device, the boot loaders and NVRAM
    /// templates (checked, then a note: Shoal picks firmware itself).
    fn firmware(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        let a = k.a;
        match a.name.as_str() {
            "SUSHY_EMULATOR_IGNORE_BOOT_DEVICE" => self.c.ignore_boot_device = k.truth()?,
            "SUSHY_EMULATOR_BOOT_LOADER_MAP" => self.loader_map(k)?,
            "SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM"
            | "SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM" => {
                let path = k.string()?.filter(|p| !p.is_empty()).map(str::to_string);
                let path = path.filter(|p| self.exists_here(k, p));
                let map = self.c.loaders.get_or_insert_with(Default::default);
                match a.name.as_str() {
                    "SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM" => map.secure_boot_vars = path,
                    _ => map.plain_vars = path,
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `SUSHY_EMULATOR_BOOT_LOADER_MAP`: the UEFI code per architecture
    /// (what a libvirt domain switched to UEFI runs); a Legacy loader is
    /// noted (Shoal's Legacy is the machine type's own BIOS).
    fn loader_map(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        let mut uefi = Vec::new();
        for (mode, arches) in k.dict()? {
            let Py::Dict(arches) = arches else {
                return Err(k.wrong(&format!("[{mode}]"), "a dict", arches));
            };
            let uefi_mode = match mode {
                Py::Str(m) if m == "UEFI" => true,
                Py::Str(m) if m == "Legacy" => false,
                _ => {
                    return Err(k.err(
                        format!("{}[{mode}]", k.a.name),
                        "not one of: 'UEFI', 'Legacy'",
                    ))
                }
            };
            for (arch, path) in arches {
                let path = match path {
                    Py::Str(p) => Some(p.clone()),
                    Py::None => None,
                    _ => return Err(k.wrong(&format!("[{mode}][{arch}]"), "a path or None", path)),
                };
                let Py::Str(arch) = arch else {
                    return Err(k.wrong(&format!("[{mode}]"), "architectures as keys", arch));
                };
                match (uefi_mode, path) {
                    (true, Some(p)) if self.exists_here(k, &p) => uefi.push((arch.clone(), p)),
                    (false, Some(p)) => self.note(
                        k,
                        &format!(
                            "the Legacy loader {p:?} is not used: Shoal's Legacy boot is \
                             the machine type's own BIOS (SeaBIOS)"
                        ),
                    ),
                    _ => {}
                }
            }
        }
        self.c
            .loaders
            .get_or_insert_with(Default::default)
            .uefi_code = uefi;
        Ok(())
    }

    /// Whether a firmware file the configuration names is on this host;
    /// one that is not is noted, and QEMU's descriptors serve instead.
    fn exists_here(&mut self, k: &Key<'_>, path: &str) -> bool {
        let here = std::path::Path::new(path).exists();
        if !here {
            self.note(
                k,
                &format!(
                    "{path:?} is not on this host: the firmware QEMU's descriptors \
                     name is used in its place"
                ),
            );
        }
        here
    }

    /// The machines' devices: chassis, indicator LEDs, virtual media (its
    /// devices, TLS verification, IP family, remote storage pool), storage.
    fn devices(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        let a = k.a;
        match a.name.as_str() {
            "SUSHY_EMULATOR_STORAGE_POOL" => {
                self.c.storage_pool = k.string()?.filter(|p| !p.is_empty()).map(str::to_string)
            }
            "SUSHY_EMULATOR_CHASSIS" => self.c.chassis = chassis_list(k)?,
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
                    self.c.indicator_leds.push((uuid, state));
                }
            }
            "SUSHY_EMULATOR_VMEDIA_DEVICES" => self.c.vmedia_devices = Some(vmedia_devices(k)?),
            "SUSHY_EMULATOR_VMEDIA_VERIFY_SSL" => self.c.vmedia_verify_ssl = k.truth()?,
            "SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY" => {
                self.c.media_ip_family =
                    match k.string()? {
                        None | Some("") => None,
                        Some(f) => Some(crate::netpolicy::IpFamily::parse(f).ok_or_else(|| {
                            k.err(&a.name, format!("{f:?} is not one of: '4', '6'"))
                        })?),
                    };
            }
            "SUSHY_EMULATOR_STORAGE" | "SUSHY_EMULATOR_DRIVES" | "SUSHY_EMULATOR_VOLUMES" => {
                self.storage.read(k)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Flask's own settings, which a Flask configuration may hold.
    fn flask(&mut self, k: &Key<'_>) -> Result<bool, ConfigError> {
        let a = k.a;
        match a.name.as_str() {
            "DEBUG" => {
                if k.truth()? {
                    self.note(
                        k,
                        "Flask's debug mode (reloader, debugger) has no Shoal \
                         counterpart; --debug or RUST_LOG=debug logs at debug level",
                    );
                }
            }
            "TESTING" | "SECRET_KEY" | "ENV" | "JSON_SORT_KEYS" => {
                self.note(k, "a Flask setting; Shoal is not a Flask application")
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// What only the whole file decides: TLS (both halves, or plain HTTP
    /// with a note) and the driver.
    pub(super) fn finish(mut self, file: &str) -> Result<SushyConfig, ConfigError> {
        if let (Some(c_), Some(k_)) = (&self.cert, &self.key) {
            self.c.tls = Some((c_.clone(), k_.clone()));
        } else if self.cert.is_some() || self.key.is_some() {
            self.c.notes.push(format!(
                "{file}: SUSHY_EMULATOR_SSL_CERT and SUSHY_EMULATOR_SSL_KEY: only one is \
                 set, so plain HTTP is served (as sushy-tools does)"
            ));
        }
        self.c.storage = std::mem::take(&mut self.storage).resolve()?;
        self.c.driver = if self.how.fake || self.fake_key {
            self.fake_driver(file)
        } else {
            self.other_driver(file)?
        };
        Ok(self.c)
    }

    /// The fake driver: the configured systems, else sushy-tools' one.
    fn fake_driver(&mut self, file: &str) -> Driver {
        let systems = self.fake_systems.take().unwrap_or_else(|| {
            vec![FakeSystem {
                entry_uuid: Uuid::parse_str(DEFAULT_FAKE_UUID).expect("a UUID"),
                name: DEFAULT_FAKE_NAME.into(),
                power_on: false,
                macs: vec![DEFAULT_FAKE_MAC.into()],
                boot_mode: None,
                boot_device: None,
                secure_boot: None,
                notifies: None,
                hardware: Default::default(),
            }]
        });
        if self.c.notification != super::Notification::default()
            && !systems.iter().any(|s| s.notifies.is_some())
        {
            self.c.notes.push(format!(
                "{file}: EXTERNAL_NOTIFICATION_*: no fake system has \
                 'external_notifier': True, so none is sent (as with sushy-tools)"
            ));
        }
        Driver::Fake(systems)
    }

    /// Without the fake driver: OpenStack refused, else Ironic, else
    /// libvirt.
    fn other_driver(&mut self, file: &str) -> Result<Driver, ConfigError> {
        if !self.c.storage.is_empty() {
            self.c.notes.push(format!(
                "{file}: SUSHY_EMULATOR_STORAGE: served for fake systems; a domain's \
                 or a node's Storage shows its own disks"
            ));
            self.c.storage.clear();
        }
        if let Some((what, why)) = self.other_backend.take() {
            return Err(ConfigError::Invalid {
                file: file.to_string(),
                key: what,
                message: why.to_string(),
            });
        }
        if self.fake_systems.is_some() {
            self.c.notes.push(format!(
                "{file}: SUSHY_EMULATOR_FAKE_SYSTEMS: not used, as \
                 SUSHY_EMULATOR_FAKE_DRIVER is not set (sushy-tools serves {})",
                if self.ironic_cloud.is_some() {
                    "Ironic's nodes"
                } else {
                    "libvirt"
                }
            ));
        }
        Ok(match self.ironic_cloud.take() {
            Some(cloud) => Driver::Ironic(cloud),
            None => Driver::Libvirt(
                self.libvirt_uri
                    .take()
                    .filter(|u| !u.is_empty())
                    .unwrap_or_else(|| DEFAULT_LIBVIRT_URI.into()),
            ),
        })
    }
}

/// A key no sushy-tools release reads, with the known key one typo away
/// and the release that key came in.
fn unknown_key(k: &Key<'_>, then: &str) -> ConfigError {
    let other = k.a.name.as_str();
    let near = KEYS
        .iter()
        .find(|known| similar(known.name, other))
        .map(|known| match known.since {
            "master" => format!(
                " (did you mean {}, of sushy-tools after 2.2.0?)",
                known.name
            ),
            "none" | "Flask" => format!(" (did you mean {}?)", known.name),
            v => format!(
                " (did you mean {}, read since sushy-tools {v}?)",
                known.name
            ),
        })
        .unwrap_or_default();
    k.err(
        other,
        format!(
            "no sushy-tools key by this name (2.2.0, nor its master as of March 2026){near}; \
             {then}"
        ),
    )
}
