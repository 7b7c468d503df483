//! `SUSHY_EMULATOR_STORAGE`, `SUSHY_EMULATOR_DRIVES` and
//! `SUSHY_EMULATOR_VOLUMES`: a system's storage subsystem (keyed by the
//! system's UUID), its drives and its volumes (keyed by the pair of the
//! system's UUID and the subsystem's Id). Each key is read as it comes;
//! [`Collected::resolve`] joins them once the whole file is read, so a
//! drive or volume list that no subsystem claims, and a subsystem that
//! names a drive no list has, are errors naming the key and the line.

use uuid::Uuid;

use super::key::Key;
use super::literal::Py;
use crate::config::ConfigError;
use crate::storage::{Disk, StorageNames, Volume};

/// What the configuration gives one fake system's storage, as served.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemStorage {
    pub system: Uuid,
    pub names: StorageNames,
    pub drives: Vec<Disk>,
    pub volumes: Vec<Volume>,
}

/// One subsystem of `SUSHY_EMULATOR_STORAGE`, with where it was said.
struct Subsystem {
    line: usize,
    system: Uuid,
    names: StorageNames,
    drive_ids: Vec<String>,
}

/// A list of drives or volumes, keyed by (system, storage Id).
struct Listed<T> {
    key: &'static str,
    line: usize,
    system: Uuid,
    storage: String,
    items: Vec<T>,
}

impl<T> Listed<T> {
    fn of(&self, s: &Subsystem) -> bool {
        self.system == s.system && self.storage == s.names.id
    }
}

/// The three keys as read so far.
#[derive(Default)]
pub(super) struct Collected {
    subsystems: Vec<Subsystem>,
    drives: Vec<Listed<Disk>>,
    volumes: Vec<Listed<Volume>>,
    /// Where the keys were set (for errors found only at the end).
    file: String,
}

/// A dict's fields, read with errors naming `KEY<path>["field"]`.
struct Fields<'k, 'a> {
    k: &'k Key<'a>,
    path: String,
    fields: &'a [(Py, Py)],
}

impl<'a> Fields<'_, 'a> {
    fn of<'k>(k: &'k Key<'a>, path: String, v: &'a Py) -> Result<Fields<'k, 'a>, ConfigError> {
        match v {
            Py::Dict(fields) => Ok(Fields { k, path, fields }),
            _ => Err(k.wrong(&path, "a dict", v)),
        }
    }

    fn at(&self, f: &str) -> String {
        format!("{}[{f:?}]", self.path)
    }

    fn get(&self, f: &str) -> Option<&'a Py> {
        self.fields
            .iter()
            .find(|(n, _)| matches!(n, Py::Str(s) if s == f))
            .map(|(_, v)| v)
    }

    /// Only `known` fields: another is an error listing them.
    fn only(&self, known: &[&str]) -> Result<(), ConfigError> {
        for (n, _) in self.fields {
            if !matches!(n, Py::Str(s) if known.contains(&s.as_str())) {
                return Err(self.k.err(
                    format!("{}{}[{n}]", self.k.a.name, self.path),
                    format!("not a field sushy-tools serves here ({})", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// A string, or a number as sushy-tools' templates print it.
    fn text(&self, f: &str) -> Result<Option<String>, ConfigError> {
        match self.get(f) {
            None | Some(Py::None) => Ok(None),
            Some(Py::Str(s)) => Ok(Some(s.clone())),
            Some(Py::Int(i)) => Ok(Some(i.to_string())),
            Some(v) => Err(self.k.wrong(&self.at(f), "a string", v)),
        }
    }

    fn required(&self, f: &str) -> Result<String, ConfigError> {
        self.text(f)?.ok_or_else(|| {
            self.k
                .err(format!("{}{}", self.k.a.name, self.at(f)), "required")
        })
    }

    fn bytes(&self, f: &str) -> Result<u64, ConfigError> {
        match self.get(f) {
            Some(Py::Int(i)) if *i >= 0 => Ok(*i as u64),
            Some(v) => Err(self.k.wrong(&self.at(f), "a number of bytes", v)),
            None => Err(self
                .k
                .err(format!("{}{}", self.k.a.name, self.at(f)), "required")),
        }
    }

    fn list(&self, f: &str) -> Result<&'a [Py], ConfigError> {
        match self.get(f) {
            None | Some(Py::None) => Ok(&[]),
            Some(Py::List(v) | Py::Tuple(v)) => Ok(v),
            Some(v) => Err(self.k.wrong(&self.at(f), "a list", v)),
        }
    }
}

/// A system UUID as a key of these dicts.
fn system_uuid(k: &Key<'_>, id: &Py) -> Result<Uuid, ConfigError> {
    match id {
        Py::Str(s) => {
            Uuid::parse_str(s).map_err(|_| k.err(&k.a.name, format!("{s:?} is not a system UUID")))
        }
        v => Err(k.wrong("", "system UUIDs as keys", v)),
    }
}

/// `(system UUID, storage Id)`, the key of the drive and volume dicts.
fn pair(k: &Key<'_>, key: &Py) -> Result<(Uuid, String), ConfigError> {
    match key {
        Py::Tuple(v) if v.len() == 2 => match (&v[0], &v[1]) {
            (u, Py::Str(s)) => Ok((system_uuid(k, u)?, s.clone())),
            _ => Err(k.wrong("", "(system UUID, storage Id) tuples as keys", key)),
        },
        v => Err(k.wrong("", "(system UUID, storage Id) tuples as keys", v)),
    }
}

impl Collected {
    /// One of the three keys.
    pub(super) fn read(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        self.file = k.file.to_string();
        match k.a.name.as_str() {
            "SUSHY_EMULATOR_STORAGE" => self.storage(k),
            "SUSHY_EMULATOR_DRIVES" => self.drives(k),
            _ => self.volumes(k),
        }
    }

    fn storage(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        self.subsystems.clear();
        for (id, list) in k.dict()? {
            let system = system_uuid(k, id)?;
            let Py::List(list) = list else {
                return Err(k.wrong(&format!("[{id}]"), "a list", list));
            };
            for (i, s) in list.iter().enumerate() {
                let f = Fields::of(k, format!("[{id}][{i}]"), s)?;
                f.only(&["Id", "Name", "StorageControllers", "Drives"])?;
                let mut names = StorageNames {
                    id: f.required("Id")?,
                    name: f.text("Name")?,
                    controller_id: None,
                    controller_name: None,
                    speed_gbps: None,
                };
                let controllers = f.list("StorageControllers")?;
                if let Some(c) = controllers.first() {
                    let c = Fields::of(k, f.at("StorageControllers") + "[0]", c)?;
                    c.only(&["MemberId", "Name", "SpeedGbps"])?;
                    names.controller_id = c.text("MemberId")?;
                    names.controller_name = c.text("Name")?;
                    names.speed_gbps = match c.get("SpeedGbps") {
                        None | Some(Py::None) => None,
                        Some(Py::Int(n)) => Some((*n).into()),
                        Some(Py::Float(x)) => serde_json::Number::from_f64(*x),
                        Some(v) => return Err(k.wrong(&c.at("SpeedGbps"), "a number", v)),
                    };
                }
                if controllers.len() > 1 || i > 0 {
                    return Err(k.err(
                        format!("{}{}", k.a.name, f.path),
                        "Shoal's machines have one storage subsystem with one \
                         controller; give each system one",
                    ));
                }
                let drive_ids = f
                    .list("Drives")?
                    .iter()
                    .map(|d| match d {
                        Py::Str(s) => Ok(s.clone()),
                        v => Err(k.wrong(&f.at("Drives"), "drive Ids", v)),
                    })
                    .collect::<Result<_, _>>()?;
                self.subsystems.push(Subsystem {
                    line: k.a.line,
                    system,
                    names,
                    drive_ids,
                });
            }
        }
        Ok(())
    }

    fn drives(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        self.drives.clear();
        for (key, list) in k.dict()? {
            let (system, storage) = pair(k, key)?;
            let Py::List(list) = list else {
                return Err(k.wrong(&format!("[{key}]"), "a list", list));
            };
            let mut items = Vec::new();
            for (i, d) in list.iter().enumerate() {
                let f = Fields::of(k, format!("[{key}][{i}]"), d)?;
                f.only(&["Id", "Name", "CapacityBytes", "Protocol"])?;
                let mut disk = Disk::new(f.required("Id")?, f.bytes("CapacityBytes")?);
                disk.label = f.text("Name")?;
                disk.protocol = f.text("Protocol")?;
                items.push(disk);
            }
            self.drives.push(Listed {
                key: "SUSHY_EMULATOR_DRIVES",
                line: k.a.line,
                system,
                storage,
                items,
            });
        }
        Ok(())
    }

    fn volumes(&mut self, k: &Key<'_>) -> Result<(), ConfigError> {
        self.volumes.clear();
        for (key, list) in k.dict()? {
            let (system, storage) = pair(k, key)?;
            let Py::List(list) = list else {
                return Err(k.wrong(&format!("[{key}]"), "a list", list));
            };
            let mut items = Vec::new();
            for (i, v) in list.iter().enumerate() {
                let f = Fields::of(k, format!("[{key}][{i}]"), v)?;
                f.only(&[
                    "Id",
                    "Name",
                    "VolumeType",
                    "CapacityBytes",
                    "libvirtPoolName",
                    "libvirtVolName",
                ])?;
                let id = f.required("Id")?;
                let vt = f.text("VolumeType")?.unwrap_or_else(|| "RawDevice".into());
                let raid = crate::storage::raid_of_volume_type(&vt).ok_or_else(|| {
                    k.err(
                        format!("{}{}", k.a.name, f.at("VolumeType")),
                        format!(
                            "{vt:?} is not one of: RawDevice, NonRedundant, Mirrored, \
                             StripedWithParity, SpannedMirrors"
                        ),
                    )
                })?;
                items.push(Volume {
                    name: f.text("Name")?.unwrap_or_else(|| id.clone()),
                    id,
                    raid_type: raid.into(),
                    capacity_bytes: f.bytes("CapacityBytes")?,
                    drives: Vec::new(),
                });
            }
            self.volumes.push(Listed {
                key: "SUSHY_EMULATOR_VOLUMES",
                line: k.a.line,
                system,
                storage,
                items,
            });
        }
        Ok(())
    }

    /// Each subsystem with its drives and volumes.
    pub(super) fn resolve(self) -> Result<Vec<SystemStorage>, ConfigError> {
        let err = |line: usize, key: String, message: String| ConfigError::Invalid {
            file: self.file.clone(),
            key: format!("line {line}: {key}"),
            message,
        };
        let claimed = |key: &'static str, line, system: Uuid, storage: &String| {
            if self
                .subsystems
                .iter()
                .any(|s| s.system == system && s.names.id == *storage)
            {
                return Ok(());
            }
            Err(err(
                line,
                format!("{key}[({:?}, {storage:?})]", system.to_string()),
                "no subsystem of SUSHY_EMULATOR_STORAGE has this system and Id".into(),
            ))
        };
        for l in &self.drives {
            claimed(l.key, l.line, l.system, &l.storage)?;
        }
        for l in &self.volumes {
            claimed(l.key, l.line, l.system, &l.storage)?;
        }
        let mut out = Vec::new();
        for s in &self.subsystems {
            let listed: Vec<Disk> = self
                .drives
                .iter()
                .filter(|l| l.of(s))
                .flat_map(|l| l.items.clone())
                .collect();
            // No `Drives` list: every drive listed for the subsystem.
            let mut drives = match s.drive_ids.is_empty() {
                true => listed.clone(),
                false => Vec::new(),
            };
            for id in &s.drive_ids {
                let d = listed.iter().find(|d| d.name == *id).ok_or_else(|| {
                    err(
                        s.line,
                        format!("SUSHY_EMULATOR_STORAGE[{:?}]", s.system.to_string()),
                        format!(
                            "drive {id:?} is in no list of SUSHY_EMULATOR_DRIVES for \
                             this system and storage {:?}",
                            s.names.id
                        ),
                    )
                })?;
                drives.push(d.clone());
            }
            let volumes = self
                .volumes
                .iter()
                .filter(|l| l.of(s))
                .flat_map(|l| l.items.clone());
            out.push(SystemStorage {
                system: s.system,
                names: s.names.clone(),
                drives,
                volumes: volumes.collect(),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const SYS: &str = "da69abcc-dae0-4913-9a7b-d344043097c0";

    fn conf(storage: &str, drives: &str, volumes: &str) -> String {
        format!(
            "SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_STORAGE = {storage}\n\
             SUSHY_EMULATOR_DRIVES = {drives}\n\
             SUSHY_EMULATOR_VOLUMES = {volumes}\n"
        )
    }

    fn one_storage(drives: &str) -> String {
        format!(
            "{{'{SYS}': [{{'Id': '1', 'Name': 'Local', 'StorageControllers': \
             [{{'MemberId': '0', 'Name': 'Contoso', 'SpeedGbps': 12}}], 'Drives': {drives}}}]}}"
        )
    }

    fn error(text: &str) -> String {
        parse("c.py", text, false).unwrap_err().to_string()
    }

    #[test]
    fn the_sample_joins_into_one_subsystem() {
        let c = parse(
            "c.py",
            &conf(
                &one_storage("['D1', 'D2']"),
                &format!(
                    "{{('{SYS}', '1'): [{{'Id': 'D2', 'CapacityBytes': 2000}}, \
                     {{'Id': 'D1', 'Name': 'Drive', 'CapacityBytes': 1000, 'Protocol': 'SAS'}}]}}"
                ),
                &format!(
                    "{{('{SYS}', '1'): [{{'Id': '1', 'VolumeType': 'Mirrored', 'CapacityBytes': 900, \
                     'libvirtPoolName': 'p', 'libvirtVolName': 'v'}}]}}"
                ),
            ),
            false,
        )
        .unwrap();
        let [s] = &c.storage[..] else {
            panic!("{:?}", c.storage)
        };
        assert_eq!(s.system.to_string(), SYS);
        assert_eq!(
            (s.names.id.as_str(), s.names.controller_name.as_deref()),
            ("1", Some("Contoso"))
        );
        // In the order the subsystem lists them, with their own fields.
        let drives: Vec<_> = s
            .drives
            .iter()
            .map(|d| (d.name.as_str(), d.capacity_bytes))
            .collect();
        assert_eq!(drives, [("D1", 1000), ("D2", 2000)]);
        assert_eq!(s.drives[0].protocol.as_deref(), Some("SAS"));
        assert_eq!(s.drives[0].label.as_deref(), Some("Drive"));
        assert_eq!(
            (s.volumes[0].raid_type.as_str(), s.volumes[0].capacity_bytes),
            ("RAID1", 900)
        );
    }

    #[test]
    fn what_does_not_join_is_an_error_naming_the_key() {
        let e = error(&conf(
            &one_storage("['D9']"),
            &format!("{{('{SYS}', '1'): [{{'Id': 'D1', 'CapacityBytes': 1}}]}}"),
            "{}",
        ));
        assert!(e.contains("line 2") && e.contains("\"D9\""), "{e}");
        let e = error(&conf(
            &one_storage("[]"),
            &format!("{{('{SYS}', '2'): [{{'Id': 'D1', 'CapacityBytes': 1}}]}}"),
            "{}",
        ));
        assert!(
            e.contains("SUSHY_EMULATOR_DRIVES") && e.contains("no subsystem"),
            "{e}"
        );
        let e = error(&conf(
            &one_storage("[]"),
            "{}",
            &format!(
                "{{('{SYS}', '1'): [{{'Id': '1', 'VolumeType': 'Striped', 'CapacityBytes': 1}}]}}"
            ),
        ));
        assert!(e.contains("VolumeType") && e.contains("Mirrored"), "{e}");
        let e = error(&conf(
            &format!("{{'{SYS}': [{{'Id': '1'}}, {{'Id': '2'}}]}}"),
            "{}",
            "{}",
        ));
        assert!(e.contains("one storage subsystem"), "{e}");
        let e = error(&conf("{'not-a-uuid': []}", "{}", "{}"));
        assert!(e.contains("not a system UUID"), "{e}");
        let e = error(&conf(
            &one_storage("[]"),
            &format!("{{'{SYS}': [{{'Id': 'D1', 'CapacityBytes': 1}}]}}"),
            "{}",
        ));
        assert!(e.contains("tuples as keys"), "{e}");
        let e = error(&conf(
            &one_storage("[]"),
            &format!("{{('{SYS}', '1'): [{{'Id': 'D1', 'CapacityBytes': 1, 'Size': 2}}]}}"),
            "{}",
        ));
        assert!(e.contains("[\"Size\"]") || e.contains("Size"), "{e}");
    }

    #[test]
    fn a_libvirt_configuration_keeps_its_domains_disks() {
        let text = conf(&one_storage("[]"), "{}", "{}")
            .replace("FAKE_DRIVER = True", "FAKE_DRIVER = False");
        let c = parse("c.py", &text, false).unwrap();
        assert!(c.storage.is_empty());
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("served for fake systems")),
            "{:?}",
            c.notes
        );
    }
}
