//! The keys whose values describe machines and their devices, each a
//! Python list or dict of entries: `SUSHY_EMULATOR_FAKE_SYSTEMS` (the
//! fake driver's systems), `SUSHY_EMULATOR_CHASSIS` and
//! `SUSHY_EMULATOR_VMEDIA_DEVICES`; every field checked, an unknown one
//! an error naming its path in the value.

use uuid::Uuid;

use super::key::Key;
use super::literal::Py;
use super::{ChassisEntry, FakeSystem};
use crate::config::ConfigError;
use crate::model::{BootMode, BootTarget};

/// `SUSHY_EMULATOR_FAKE_SYSTEMS`: each entry.
pub(super) fn fake_system_list(k: &Key<'_>) -> Result<Vec<FakeSystem>, ConfigError> {
    k.list()?
        .iter()
        .enumerate()
        .map(|(i, e)| fake_system(k, i, e))
        .collect()
}

/// The fields sushy-tools' fake systems have.
const FAKE_SYSTEM_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "power_state",
    "external_notifier",
    "nics",
    "boot_device",
    "boot_mode",
    "secure_boot",
    "boot_image",
    "pending_power",
    // Shoal's own, which sushy-tools passes over: the machine's hardware.
    "memory_mib",
    "cpus",
    "disks",
    "arch",
    "profile",
];

/// One entry of `SUSHY_EMULATOR_FAKE_SYSTEMS` (the `i`th); one that asks
/// for a notifier keeps its dict as JSON, the document sushy-tools sends.
fn fake_system(k: &Key<'_>, i: usize, e: &Py) -> Result<FakeSystem, ConfigError> {
    let Py::Dict(fields) = e else {
        return Err(k.wrong(&format!("[{i}]"), "a dict", e));
    };
    let f = Entry { k, i, fields };
    f.only_known_fields()?;
    let uuid = f.string("uuid")?.ok_or_else(|| f.err("uuid", "required"))?;
    let entry_uuid =
        Uuid::parse_str(uuid).map_err(|_| f.err("uuid", format!("{uuid:?} is not a UUID")))?;
    let name = f.string("name")?.ok_or_else(|| f.err("name", "required"))?;
    let power_on = match f.string("power_state")? {
        None | Some("Off") => false,
        Some("On") => true,
        Some(s) => {
            return Err(f.err("power_state", format!("{s:?} is not one of: On, Off")));
        }
    };
    let macs = f.nic_macs()?;
    let boot_mode = match f.string("boot_mode")? {
        None => None,
        Some(s) => Some(
            BootMode::parse(s)
                .ok_or_else(|| f.err("boot_mode", format!("{s:?} is not one of: UEFI, Legacy")))?,
        ),
    };
    let boot_device = f.boot_device()?;
    let secure_boot = f.flag("secure_boot")?;
    let notifies = match f.flag("external_notifier")?.unwrap_or(false) {
        true => match e.to_json() {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        },
        false => None,
    };
    let hardware = super::Hardware {
        memory_mib: f.count("memory_mib")?,
        cpus: f.count("cpus")?.map(|c| c.min(u32::MAX.into()) as u32),
        disks: f.disks()?,
        arch: f.string("arch")?.map(str::to_string),
        profile: f.string("profile")?.map(str::to_string),
    };
    Ok(FakeSystem {
        hardware,
        entry_uuid,
        name: name.to_string(),
        power_on,
        macs,
        boot_mode,
        boot_device,
        secure_boot,
        notifies,
    })
}

/// The fields of one fake system's dict, read with errors that name
/// `KEY[i]["field"]`.
struct Entry<'k, 'a> {
    k: &'k Key<'a>,
    i: usize,
    fields: &'a [(Py, Py)],
}

impl<'a> Entry<'_, 'a> {
    fn at(&self, f: &str) -> String {
        format!("[{}][{f:?}]", self.i)
    }

    fn err(&self, f: &str, message: impl Into<String>) -> ConfigError {
        self.k
            .err(format!("{}{}", self.k.a.name, self.at(f)), message)
    }

    fn get(&self, f: &str) -> Option<&'a Py> {
        self.fields
            .iter()
            .find(|(n, _)| *n == Py::Str(f.into()))
            .map(|(_, v)| v)
    }

    fn string(&self, f: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.get(f) {
            None | Some(Py::None) => Ok(None),
            Some(Py::Str(s)) => Ok(Some(s)),
            Some(v) => Err(self.k.wrong(&self.at(f), "a string", v)),
        }
    }

    fn flag(&self, f: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(f) {
            None | Some(Py::None) => Ok(None),
            Some(Py::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.k.wrong(&self.at(f), "True or False", v)),
        }
    }

    /// A whole number of at least 1.
    fn count(&self, f: &str) -> Result<Option<u64>, ConfigError> {
        match self.get(f) {
            None | Some(Py::None) => Ok(None),
            Some(Py::Int(n)) if *n >= 1 => Ok(Some(*n as u64)),
            Some(v) => Err(self.k.wrong(&self.at(f), "a whole number of at least 1", v)),
        }
    }

    /// `disks`: dicts of `name` and `capacity_gib`, as the inventory's.
    fn disks(&self) -> Result<Vec<(String, u64)>, ConfigError> {
        let list = match self.get("disks") {
            None | Some(Py::None) => return Ok(Vec::new()),
            Some(Py::List(v) | Py::Tuple(v)) => v,
            Some(v) => return Err(self.k.wrong(&self.at("disks"), "a list", v)),
        };
        let mut out = Vec::new();
        for (j, d) in list.iter().enumerate() {
            let field = |n: &str| match d {
                Py::Dict(f) => f
                    .iter()
                    .find(|(x, _)| *x == Py::Str(n.into()))
                    .map(|(_, v)| v),
                _ => None,
            };
            let all_known = matches!(d, Py::Dict(f) if f.iter().all(|(x, _)| {
                matches!(x, Py::Str(x) if x == "name" || x == "capacity_gib")
            }));
            match (field("name"), field("capacity_gib"), all_known) {
                (Some(Py::Str(n)), Some(Py::Int(g)), true) if *g >= 1 => {
                    out.push((n.clone(), *g as u64))
                }
                _ => {
                    return Err(self.k.err(
                        format!("{}[{}][\"disks\"][{j}]", self.k.a.name, self.i),
                        "expected a dict of \"name\" (a string) and \"capacity_gib\" \
                         (a whole number of at least 1)",
                    ))
                }
            }
        }
        Ok(out)
    }

    /// A field sushy-tools' fake systems do not have is an error.
    fn only_known_fields(&self) -> Result<(), ConfigError> {
        for (name, _) in self.fields {
            let known = matches!(name, Py::Str(n) if FAKE_SYSTEM_FIELDS.contains(&n.as_str()));
            if !known {
                return Err(self.k.err(
                    format!("{}[{}][{name}]", self.k.a.name, self.i),
                    "not a field of sushy-tools' fake systems (uuid, name, power_state, \
                     external_notifier, nics, boot_device, boot_mode, secure_boot, \
                     boot_image, pending_power) nor of Shoal's (memory_mib, cpus, \
                     disks, arch, profile)",
                ));
            }
        }
        Ok(())
    }

    /// `nics`: the MAC of each (a dict with a `mac` string).
    fn nic_macs(&self) -> Result<Vec<String>, ConfigError> {
        let mut macs = Vec::new();
        match self.get("nics") {
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
                            return Err(self.k.err(
                                format!("{}[{}][\"nics\"][{j}]", self.k.a.name, self.i),
                                "expected a dict with a \"mac\" string",
                            ))
                        }
                    }
                }
            }
            Some(v) => return Err(self.k.wrong(&self.at("nics"), "a list", v)),
        }
        Ok(macs)
    }

    /// `boot_device`: the devices sushy-tools' fake driver boots.
    fn boot_device(&self) -> Result<Option<BootTarget>, ConfigError> {
        let Some(s) = self.string("boot_device")? else {
            return Ok(None);
        };
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
            .map(Some)
            .ok_or_else(|| {
                self.err(
                    "boot_device",
                    format!("{s:?} is not one of: Pxe, Hdd, Cd, Floppy, UefiHttp"),
                )
            })
    }
}

/// `SUSHY_EMULATOR_CHASSIS`: dicts of `Id`, `Name` and `UUID`, the UUIDs
/// distinct (sushy-tools refuses to start otherwise); an empty list is
/// sushy-tools' default Chassis, as there.
pub(super) fn chassis_list(k: &Key<'_>) -> Result<Vec<ChassisEntry>, ConfigError> {
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

/// A device of `SUSHY_EMULATOR_VMEDIA_DEVICES`: its Id, Name and
/// MediaTypes, served on the slot those types take.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaDevice {
    pub id: String,
    pub name: String,
    pub media_types: Vec<String>,
}

/// `SUSHY_EMULATOR_VMEDIA_DEVICES`: each device on one of a Shoal BMC's two
/// slots, the CD (its MediaTypes among CD, DVD) and the removable one
/// (Floppy, USBStick); a slot no device takes is not served.
pub(super) fn vmedia_devices(k: &Key<'_>) -> Result<[Option<MediaDevice>; 2], ConfigError> {
    let mut slots: [Option<MediaDevice>; 2] = [None, None];
    for (id, dev) in k.dict()? {
        let Py::Str(id) = id else {
            return Err(k.wrong("", "device Ids as keys", id));
        };
        let at = |f: &str| format!("{}[{id:?}]{f}", k.a.name);
        let Py::Dict(fields) = dev else {
            return Err(k.wrong(&format!("[{id:?}]"), "a dict", dev));
        };
        let get = |f: &str| {
            fields
                .iter()
                .find(|(n, _)| *n == Py::Str(f.into()))
                .map(|(_, v)| v)
        };
        if let Some((n, _)) = fields
            .iter()
            .find(|(n, _)| !matches!(n, Py::Str(n) if n == "Name" || n == "MediaTypes"))
        {
            return Err(k.err(
                at(&format!("[{n}]")),
                "not a field of a device (Name, MediaTypes)",
            ));
        }
        let name = match get("Name") {
            None | Some(Py::None) => id.clone(),
            Some(Py::Str(n)) => n.clone(),
            Some(v) => return Err(k.wrong(&format!("[{id:?}][\"Name\"]"), "a string", v)),
        };
        let types: Vec<String> = match get("MediaTypes") {
            Some(Py::List(t) | Py::Tuple(t)) => t
                .iter()
                .map(|x| match x {
                    Py::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect::<Option<_>>()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let within =
            |set: &[&str]| !types.is_empty() && types.iter().all(|t| set.contains(&t.as_str()));
        let slot = if within(&["CD", "DVD"]) {
            0
        } else if within(&["Floppy", "USBStick"]) {
            1
        } else {
            return Err(k.err(
                at("[\"MediaTypes\"]"),
                "expected a list of CD and DVD (served on the BMC's CD) or of Floppy \
                 and USBStick (on its removable device)",
            ));
        };
        if let Some(other) = &slots[slot] {
            return Err(k.err(
                at(""),
                format!(
                    "{:?} takes the same media; a Shoal BMC has one CD device and one \
                     removable one",
                    other.id
                ),
            ));
        }
        slots[slot] = Some(MediaDevice {
            id: id.clone(),
            name,
            media_types: types,
        });
    }
    Ok(slots)
}
