//! RAID volumes of a machine's storage controller: which RAID levels exist,
//! how many drives each needs, what capacity it yields, and the changes a
//! client stages for the next reset (`@Redfish.OperationApplyTime:
//! OnReset`) or applies at once.
//!
//! Every drive belongs to at most one volume. A machine starts with one
//! pass-through volume (RAIDType `None`) per drive, as controllers in JBOD
//! mode present them; Ironic's RAID interface deletes those and creates
//! the volumes of its target configuration.

use serde::{Deserialize, Serialize};

/// A disk of the machine's inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disk {
    pub name: String,
    pub capacity_bytes: u64,
    /// The drive's `Name` where a configuration gives one (else `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The drive's `Protocol` where a configuration gives one (else SATA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

impl Disk {
    pub fn new(name: impl Into<String>, capacity_bytes: u64) -> Disk {
        Disk {
            name: name.into(),
            capacity_bytes,
            label: None,
            protocol: None,
        }
    }
}

/// What a configuration calls the storage subsystem and its controller
/// (sushy-tools' `SUSHY_EMULATOR_STORAGE`), where it names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageNames {
    pub id: String,
    pub name: Option<String>,
    pub controller_id: Option<String>,
    pub controller_name: Option<String>,
    pub speed_gbps: Option<serde_json::Number>,
}

/// The RAID types Shoal's controller supports (DMTF `Volume.RAIDType`).
pub const RAID_TYPES: &[&str] = &["RAID0", "RAID1", "RAID5", "RAID6", "RAID10", "None"];

/// The RAID type of the deprecated `VolumeType` (which some clients still
/// send and sushy-tools' configurations still speak).
pub fn raid_of_volume_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "RawDevice" => "None",
        "NonRedundant" => "RAID0",
        "Mirrored" => "RAID1",
        "StripedWithParity" => "RAID5",
        "SpannedMirrors" => "RAID10",
        _ => return None,
    })
}

/// The `VolumeType` a RAID type implies.
pub fn volume_type_of_raid(raid: &str) -> &'static str {
    match raid {
        "RAID0" => "NonRedundant",
        "RAID1" => "Mirrored",
        "RAID5" | "RAID6" => "StripedWithParity",
        "RAID10" => "SpannedMirrors",
        _ => "RawDevice",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Volume {
    pub id: String,
    pub name: String,
    pub raid_type: String,
    pub capacity_bytes: u64,
    /// Names of the member drives.
    pub drives: Vec<String>,
}

/// One change to the set of volumes, or to the controller's mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VolumeChange {
    Create(Volume),
    Delete(String),
    Mode(ControllerMode),
}

/// The controller's personality (Dell's `ControllerMode`): RAID, where
/// drives are Ready for volumes or converted to non-RAID one by one; HBA,
/// where every drive is passed through and no RAID volume can be made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControllerMode {
    #[default]
    Raid,
    Hba,
}

impl ControllerMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ControllerMode::Raid => "RAID",
            ControllerMode::Hba => "HBA",
        }
    }

    pub fn parse(s: &str) -> Option<ControllerMode> {
        match s {
            "RAID" => Some(ControllerMode::Raid),
            "HBA" => Some(ControllerMode::Hba),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StorageState {
    pub volumes: Vec<Volume>,
    /// Changes staged for the next start, in order.
    #[serde(default)]
    pub pending: Vec<VolumeChange>,
    #[serde(default)]
    pub mode: ControllerMode,
    /// The drives this configuration was made over: a backend whose disks
    /// can change under it (libvirt: the domain's definition) starts over
    /// from JBOD when they differ, and tells "every volume deleted" from
    /// "never configured".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drives: Vec<Disk>,
    /// The subsystem's own names, where the configuration gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<StorageNames>,
}

/// What a drive is used for, as Dell's `RaidStatus` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriveUse<'a> {
    /// Passed through to the host (a `None` volume of its own).
    NonRaid(&'a Volume),
    /// In no volume: free for a RAID volume.
    Ready,
    /// A member of a RAID volume.
    Online(&'a Volume),
}

/// Why a volume cannot be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VolumeError {
    #[error("RAID type {0} is not supported")]
    RaidType(String),
    #[error("drive {0} does not exist")]
    NoDrive(String),
    #[error("{raid} needs {needs} drives, got {got}")]
    DriveCount {
        raid: String,
        needs: &'static str,
        got: usize,
    },
    #[error("drive {0} is listed twice")]
    Duplicate(String),
    #[error("drive {drive} already belongs to volume {volume}")]
    InUse { drive: String, volume: String },
    #[error("{asked} bytes exceed the {max} the drives give")]
    Capacity { asked: u64, max: u64 },
    #[error("volume {0} does not exist")]
    NoVolume(String),
    #[error("the controller is in {0} mode")]
    Mode(&'static str),
    #[error("drive {0} is not a non-RAID drive")]
    NotNonRaid(String),
    #[error("drive {0} is not Ready (in no volume)")]
    NotReady(String),
    #[error("drive {0} has a change staged for the next reset")]
    Staged(String),
}

impl StorageState {
    /// No volumes and nothing staged (a machine without disks, or one
    /// whose backend keeps no volumes).
    pub fn is_empty(&self) -> bool {
        self.volumes.is_empty() && self.pending.is_empty() && self.drives.is_empty()
    }

    /// This configuration if it was made over `disks`, else the JBOD one.
    pub fn over(self, disks: &[Disk]) -> StorageState {
        if self.drives == disks {
            self
        } else {
            StorageState {
                names: self.names,
                ..StorageState::jbod(disks)
            }
        }
    }

    /// One pass-through volume per drive, named after it.
    pub fn jbod(disks: &[Disk]) -> StorageState {
        StorageState {
            volumes: disks
                .iter()
                .map(|d| Volume {
                    id: d.name.clone(),
                    name: d.name.clone(),
                    raid_type: "None".into(),
                    capacity_bytes: d.capacity_bytes,
                    drives: vec![d.name.clone()],
                })
                .collect(),
            pending: Vec::new(),
            mode: ControllerMode::Raid,
            drives: disks.to_vec(),
            names: None,
        }
    }

    /// The mode once the staged changes apply.
    pub fn projected_mode(&self) -> ControllerMode {
        self.pending
            .iter()
            .rev()
            .find_map(|c| match c {
                VolumeChange::Mode(m) => Some(*m),
                _ => None,
            })
            .unwrap_or(self.mode)
    }

    /// What drive `name` is used for now.
    pub fn drive_use(&self, name: &str) -> DriveUse<'_> {
        match self
            .volumes
            .iter()
            .find(|v| v.drives.iter().any(|d| d == name))
        {
            Some(v) if v.raid_type == "None" => DriveUse::NonRaid(v),
            Some(v) => DriveUse::Online(v),
            None => DriveUse::Ready,
        }
    }

    /// Whether a staged change touches drive `name`.
    fn drive_staged(&self, name: &str) -> bool {
        self.pending.iter().any(|c| match c {
            VolumeChange::Create(v) => v.drives.iter().any(|d| d == name),
            VolumeChange::Delete(id) => self
                .volumes
                .iter()
                .any(|v| &v.id == id && v.drives.iter().any(|d| d == name)),
            VolumeChange::Mode(_) => false,
        })
    }

    /// The changes that make non-RAID `drives` Ready for RAID volumes
    /// (Dell's `ConvertToRAID`): their pass-through volumes go.
    pub fn to_raid(
        &self,
        disks: &[Disk],
        drives: &[String],
    ) -> Result<Vec<VolumeChange>, VolumeError> {
        self.convertible(disks, drives)?;
        drives
            .iter()
            .map(|d| match self.drive_use(d) {
                DriveUse::NonRaid(v) => Ok(VolumeChange::Delete(v.id.clone())),
                _ => Err(VolumeError::NotNonRaid(d.clone())),
            })
            .collect()
    }

    /// The changes that pass Ready `drives` through to the host (Dell's
    /// `ConvertToNonRAID`): a `None` volume each, named after the drive.
    pub fn to_non_raid(
        &self,
        disks: &[Disk],
        drives: &[String],
    ) -> Result<Vec<VolumeChange>, VolumeError> {
        self.convertible(disks, drives)?;
        drives
            .iter()
            .map(|d| {
                if self.drive_use(d) != DriveUse::Ready {
                    return Err(VolumeError::NotReady(d.clone()));
                }
                Ok(VolumeChange::Create(self.pass_through(disks, d)))
            })
            .collect()
    }

    /// Drive `d`'s pass-through volume, named after it (its Id too, unless
    /// a volume has that Id).
    fn pass_through(&self, disks: &[Disk], d: &str) -> Volume {
        let taken = self.volumes.iter().any(|v| v.id == d);
        Volume {
            id: if taken {
                format!("{d}-nonraid")
            } else {
                d.to_string()
            },
            name: d.to_string(),
            raid_type: "None".into(),
            capacity_bytes: disks
                .iter()
                .find(|x| x.name == d)
                .map_or(0, |x| x.capacity_bytes),
            drives: vec![d.to_string()],
        }
    }

    /// Drives a conversion may take: known, listed once, with nothing
    /// staged, on a controller in RAID mode now and after the reset.
    fn convertible(&self, disks: &[Disk], drives: &[String]) -> Result<(), VolumeError> {
        for mode in [self.mode, self.projected_mode()] {
            if mode != ControllerMode::Raid {
                return Err(VolumeError::Mode(mode.as_str()));
            }
        }
        for (i, d) in drives.iter().enumerate() {
            if !disks.iter().any(|x| &x.name == d) {
                return Err(VolumeError::NoDrive(d.clone()));
            }
            if drives[..i].contains(d) {
                return Err(VolumeError::Duplicate(d.clone()));
            }
            if self.drive_staged(d) {
                return Err(VolumeError::Staged(d.clone()));
            }
        }
        Ok(())
    }

    /// Whether the controller may be set to `mode` at the next reset: HBA
    /// passes every drive through, so no RAID volume may exist or be
    /// staged.
    pub fn check_mode(&self, mode: ControllerMode) -> Result<(), VolumeError> {
        if mode == ControllerMode::Hba {
            let projected = self.projected();
            if let Some(v) = projected
                .iter()
                .chain(&self.volumes)
                .find(|v| v.raid_type != "None")
            {
                return Err(VolumeError::InUse {
                    drive: v.drives.first().cloned().unwrap_or_default(),
                    volume: v.id.clone(),
                });
            }
        }
        Ok(())
    }

    /// The volumes as they will be once the staged changes apply.
    fn projected(&self) -> Vec<Volume> {
        let mut s = self.clone();
        for c in std::mem::take(&mut s.pending) {
            s.apply(c);
        }
        s.volumes
    }

    /// Checks a new volume over `drives` against the drives and the volumes
    /// (including those staged), and fills in its Id and capacity. A volume
    /// made now (not `staged`) needs drives free both now and once the
    /// staged changes apply.
    pub fn plan(
        &self,
        disks: &[Disk],
        raid_type: &str,
        drives: &[String],
        capacity: Option<u64>,
        name: Option<&str>,
        staged: bool,
    ) -> Result<Volume, VolumeError> {
        if !RAID_TYPES.contains(&raid_type) {
            return Err(VolumeError::RaidType(raid_type.into()));
        }
        if raid_type != "None" {
            for mode in [self.mode, self.projected_mode()] {
                if mode != ControllerMode::Raid {
                    return Err(VolumeError::Mode(mode.as_str()));
                }
            }
        }
        let mut sizes = Vec::new();
        for (i, d) in drives.iter().enumerate() {
            if drives[..i].contains(d) {
                return Err(VolumeError::Duplicate(d.clone()));
            }
            let disk = disks
                .iter()
                .find(|x| &x.name == d)
                .ok_or_else(|| VolumeError::NoDrive(d.clone()))?;
            sizes.push(disk.capacity_bytes);
        }
        let n = drives.len();
        let (ok, needs) = match raid_type {
            "None" => (n == 1, "exactly 1"),
            "RAID0" => (n >= 1, "at least 1"),
            "RAID1" => (n >= 2, "at least 2"),
            "RAID5" => (n >= 3, "at least 3"),
            "RAID6" => (n >= 4, "at least 4"),
            _ => (n >= 4 && n % 2 == 0, "an even number, at least 4,"),
        };
        if !ok {
            return Err(VolumeError::DriveCount {
                raid: raid_type.into(),
                needs,
                got: n,
            });
        }
        let volumes = self.projected();
        let now: &[Volume] = if staged { &[] } else { &self.volumes };
        for d in drives {
            if let Some(v) = volumes.iter().chain(now).find(|v| v.drives.contains(d)) {
                return Err(VolumeError::InUse {
                    drive: d.clone(),
                    volume: v.id.clone(),
                });
            }
        }
        let smallest = sizes.iter().copied().min().unwrap_or(0);
        let n = n as u64;
        let max = match raid_type {
            "None" | "RAID0" => sizes.iter().sum(),
            "RAID1" => smallest,
            "RAID5" => (n - 1) * smallest,
            "RAID6" => (n - 2) * smallest,
            _ => n / 2 * smallest,
        };
        let capacity_bytes = match capacity {
            Some(c) if c > max => return Err(VolumeError::Capacity { asked: c, max }),
            Some(c) => c,
            None => max,
        };
        // Ids are never reused while any volume, staged or not, has them.
        let taken: Vec<&str> = volumes
            .iter()
            .map(|v| v.id.as_str())
            .chain(self.volumes.iter().map(|v| v.id.as_str()))
            .collect();
        let id = (0..)
            .map(|i| format!("Volume{i}"))
            .find(|c| !taken.contains(&c.as_str()))
            .expect("an unused id");
        Ok(Volume {
            name: name.map(str::to_string).unwrap_or_else(|| id.clone()),
            id,
            raid_type: raid_type.into(),
            capacity_bytes,
            drives: drives.to_vec(),
        })
    }

    /// Whether volume `id` exists now or once the staged changes apply.
    pub fn check_delete(&self, id: &str) -> Result<(), VolumeError> {
        if self.projected().iter().any(|v| v.id == id) {
            Ok(())
        } else {
            Err(VolumeError::NoVolume(id.into()))
        }
    }

    /// Whether volume `id` has a change staged (its creation or deletion):
    /// it takes no other change before the reset, as a controller with a
    /// scheduled configuration job takes none.
    pub fn has_pending(&self, id: &str) -> bool {
        self.pending.iter().any(|c| match c {
            VolumeChange::Create(v) => v.id == id,
            VolumeChange::Delete(d) => d == id,
            VolumeChange::Mode(_) => false,
        })
    }

    /// Applies one change now.
    pub fn apply(&mut self, change: VolumeChange) {
        match change {
            VolumeChange::Create(v) => self.volumes.push(v),
            VolumeChange::Delete(id) => self.volumes.retain(|v| v.id != id),
            VolumeChange::Mode(m) => self.mode = m,
        }
    }

    /// Stages one change; a mode replaces any mode staged before it.
    pub fn stage(&mut self, change: VolumeChange) {
        if matches!(change, VolumeChange::Mode(_)) {
            self.pending.retain(|c| !matches!(c, VolumeChange::Mode(_)));
        }
        self.pending.push(change);
    }

    /// Applies the staged changes (at a machine's start). A controller
    /// that comes up in HBA mode passes every free drive through.
    pub fn apply_pending(&mut self, disks: &[Disk]) {
        for c in std::mem::take(&mut self.pending) {
            self.apply(c);
        }
        if self.mode == ControllerMode::Hba {
            let free: Vec<String> = disks
                .iter()
                .filter(|d| self.drive_use(&d.name) == DriveUse::Ready)
                .map(|d| d.name.clone())
                .collect();
            for d in free {
                let v = self.pass_through(disks, &d);
                self.volumes.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disks(sizes: &[u64]) -> Vec<Disk> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| Disk::new(format!("disk{i}"), s))
            .collect()
    }

    fn names(n: &[usize]) -> Vec<String> {
        n.iter().map(|i| format!("disk{i}")).collect()
    }

    #[test]
    fn capacity_follows_the_raid_level() {
        let d = disks(&[100, 100, 100, 80]);
        let empty = StorageState::default();
        let cap = |raid: &str, n: &[usize]| {
            empty
                .plan(&d, raid, &names(n), None, None, false)
                .map(|v| v.capacity_bytes)
        };
        assert_eq!(cap("RAID0", &[0, 1]), Ok(200));
        assert_eq!(cap("RAID1", &[0, 3]), Ok(80));
        assert_eq!(cap("RAID5", &[0, 1, 3]), Ok(160));
        assert_eq!(cap("RAID6", &[0, 1, 2, 3]), Ok(160));
        assert_eq!(cap("RAID10", &[0, 1, 2, 3]), Ok(160));
        assert_eq!(cap("None", &[2]), Ok(100));
        assert!(matches!(
            cap("RAID5", &[0, 1]),
            Err(VolumeError::DriveCount { .. })
        ));
        assert!(matches!(
            cap("RAID10", &[0, 1, 2]),
            Err(VolumeError::DriveCount { .. })
        ));
        assert_eq!(
            cap("RAID3", &[0, 1, 2]),
            Err(VolumeError::RaidType("RAID3".into()))
        );
        assert_eq!(
            cap("RAID1", &[0, 9]),
            Err(VolumeError::NoDrive("disk9".into()))
        );
        assert_eq!(
            cap("RAID1", &[0, 0]),
            Err(VolumeError::Duplicate("disk0".into()))
        );
        assert_eq!(
            empty.plan(&d, "RAID1", &names(&[0, 1]), Some(101), None, false),
            Err(VolumeError::Capacity {
                asked: 101,
                max: 100
            })
        );
    }

    #[test]
    fn drives_in_use_and_staged_changes_are_respected() {
        let d = disks(&[100, 100, 100]);
        let mut s = StorageState::jbod(&d);
        assert!(matches!(
            s.plan(&d, "RAID1", &names(&[0, 1]), None, None, true),
            Err(VolumeError::InUse { .. })
        ));
        // Deleting the pass-through volumes, staged, frees their drives
        // for a staged RAID1; nothing changes before the start.
        s.pending.push(VolumeChange::Delete("disk0".into()));
        s.pending.push(VolumeChange::Delete("disk1".into()));
        assert!(
            matches!(
                s.plan(&d, "RAID1", &names(&[0, 1]), None, None, false),
                Err(VolumeError::InUse { .. })
            ),
            "made now, the drives are still taken now"
        );
        let v = s
            .plan(&d, "RAID1", &names(&[0, 1]), None, Some("os"), true)
            .unwrap();
        assert_eq!((v.id.as_str(), v.name.as_str()), ("Volume0", "os"));
        assert!(s.has_pending("disk0") && !s.has_pending("disk2"));
        s.pending.push(VolumeChange::Create(v));
        assert!(s.has_pending("Volume0"));
        assert_eq!(s.volumes.len(), 3);
        assert_eq!(s.check_delete("Volume0"), Ok(()));
        assert!(s.check_delete("disk0").is_err(), "already going");
        s.apply_pending(&d);
        let ids: Vec<&str> = s.volumes.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["disk2", "Volume0"]);
        assert!(s.pending.is_empty());
    }

    #[test]
    fn drives_convert_between_non_raid_and_ready_and_hba_passes_them_through() {
        let d = disks(&[100, 100, 100]);
        let mut s = StorageState::jbod(&d);
        assert!(matches!(s.drive_use("disk0"), DriveUse::NonRaid(_)));
        assert_eq!(
            s.to_non_raid(&d, &names(&[0])),
            Err(VolumeError::NotReady("disk0".into()))
        );
        for c in s.to_raid(&d, &names(&[0, 1])).unwrap() {
            s.apply(c);
        }
        assert_eq!(s.drive_use("disk0"), DriveUse::Ready);
        assert_eq!(
            s.to_raid(&d, &names(&[0])),
            Err(VolumeError::NotNonRaid("disk0".into()))
        );
        assert_eq!(
            s.to_raid(&d, &names(&[2, 2])),
            Err(VolumeError::Duplicate("disk2".into()))
        );
        assert_eq!(
            s.to_raid(&d, &names(&[7])),
            Err(VolumeError::NoDrive("disk7".into()))
        );
        let v = s
            .plan(&d, "RAID1", &names(&[0, 1]), None, None, false)
            .unwrap();
        s.apply(VolumeChange::Create(v));
        assert!(matches!(s.drive_use("disk1"), DriveUse::Online(_)));
        assert!(matches!(
            s.check_mode(ControllerMode::Hba),
            Err(VolumeError::InUse { .. })
        ));
        s.apply(VolumeChange::Delete("Volume0".into()));
        // HBA staged: no RAID volume now, and at the start every free
        // drive is passed through.
        s.stage(VolumeChange::Mode(ControllerMode::Hba));
        assert_eq!(s.projected_mode(), ControllerMode::Hba);
        assert_eq!(
            s.plan(&d, "RAID0", &names(&[0]), None, None, false),
            Err(VolumeError::Mode("HBA"))
        );
        s.stage(VolumeChange::Mode(ControllerMode::Hba));
        assert_eq!(s.pending.len(), 1, "a mode replaces the one staged before");
        s.apply_pending(&d);
        assert_eq!(s.mode, ControllerMode::Hba);
        for i in 0..3 {
            assert!(matches!(
                s.drive_use(&format!("disk{i}")),
                DriveUse::NonRaid(_)
            ));
        }
        assert_eq!(s.to_raid(&d, &names(&[0])), Err(VolumeError::Mode("HBA")));
    }
}
