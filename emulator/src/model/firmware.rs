//! The firmware a BMC keeps track of for its machine: what each component
//! runs, where an update changed it from the factory's (the profile's
//! versions), and images staged for a later apply time.
//!
//! A staged BIOS or NIC image waiting for `OnReset` is installed by the
//! machine's next start ([`FirmwareState::start`], called from
//! `BmcState::start`); a BMC image waiting for `OnReset` by the BMC's next
//! restart; one waiting for `OnStartUpdateRequest` by the StartUpdate
//! action. Each of those is a [`FirmwareChange`] through the backend, so
//! every version that moves is on the change stream.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::firmware::Component;

/// A version a component runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub version: String,
    /// `YYYY-MM-DD`, when the image said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_date: Option<String>,
}

/// When a staged image is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApplyAt {
    /// The component's next reset: the machine's start (BIOS, NIC), the
    /// BMC's restart (BMC).
    OnReset,
    /// The UpdateService's StartUpdate action.
    OnStartUpdateRequest,
}

impl ApplyAt {
    /// The DMTF `OperationApplyTime` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyAt::OnReset => "OnReset",
            ApplyAt::OnStartUpdateRequest => "OnStartUpdateRequest",
        }
    }
}

/// An image verified and waiting for its apply time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Staged {
    pub image: Installed,
    pub apply: ApplyAt,
    /// The task that staged it (which ends when it is installed).
    pub task: String,
}

/// What the BMC knows of its machine's firmware beyond the factory's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareState {
    /// What a component runs since an update (the rest: the profile's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub installed: BTreeMap<Component, Installed>,
    /// At most one image per component waits.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub staged: BTreeMap<Component, Staged>,
}

/// One change of the firmware state, decided by the core.
#[derive(Debug, Clone, PartialEq)]
pub enum FirmwareChange {
    /// The component runs this image from now on (a staged one for it is
    /// spent).
    Install(Component, Installed),
    /// The image waits for its apply time (replacing any staged before).
    Stage(Component, Staged),
    /// The StartUpdate action: every image waiting for it is installed.
    StartUpdate,
    /// The BMC restarted: its image waiting for `OnReset` is installed.
    BmcRestarted,
    /// The update task `task` was cancelled: the image it staged for the
    /// component, if still waiting, is dropped.
    Withdraw(Component, String),
}

/// What became of a staged image (see [`FirmwareState::fate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedFate {
    /// Still waiting for its apply time.
    Waiting,
    /// Installed: the component runs it.
    Installed,
    /// Gone without being installed.
    Dropped,
}

impl FirmwareState {
    pub fn is_empty(&self) -> bool {
        self.installed.is_empty() && self.staged.is_empty()
    }

    pub fn apply(&mut self, change: FirmwareChange) {
        match change {
            FirmwareChange::Install(c, image) => {
                self.staged.remove(&c);
                self.installed.insert(c, image);
            }
            FirmwareChange::Stage(c, staged) => {
                self.staged.insert(c, staged);
            }
            FirmwareChange::StartUpdate => {
                self.install_where(|_, s| s.apply == ApplyAt::OnStartUpdateRequest)
            }
            FirmwareChange::BmcRestarted => {
                self.install_where(|c, s| c == Component::Bmc && s.apply == ApplyAt::OnReset)
            }
            FirmwareChange::Withdraw(c, task) => {
                if self.staged.get(&c).is_some_and(|s| s.task == task) {
                    self.staged.remove(&c);
                }
            }
        }
    }

    /// The machine starts: its BIOS and NIC images waiting for a reset
    /// are installed (the firmware flashes them in POST).
    pub fn start(&mut self) {
        self.install_where(|c, s| c != Component::Bmc && s.apply == ApplyAt::OnReset);
    }

    /// What became of the image `version` task `task` staged for `c`.
    pub fn fate(&self, c: Component, task: &str, version: &str) -> StagedFate {
        if self.staged.get(&c).is_some_and(|s| s.task == task) {
            StagedFate::Waiting
        } else if self.installed.get(&c).is_some_and(|i| i.version == version) {
            StagedFate::Installed
        } else {
            // Withdrawn, or replaced by a later image before it was due.
            StagedFate::Dropped
        }
    }

    fn install_where(&mut self, pick: impl Fn(Component, &Staged) -> bool) {
        let due: Vec<Component> = self
            .staged
            .iter()
            .filter(|(c, s)| pick(**c, s))
            .map(|(c, _)| *c)
            .collect();
        for c in due {
            if let Some(s) = self.staged.remove(&c) {
                self.installed.insert(c, s.image);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(v: &str) -> Installed {
        Installed {
            version: v.into(),
            release_date: None,
        }
    }

    fn staged(v: &str, apply: ApplyAt) -> Staged {
        Staged {
            image: image(v),
            apply,
            task: "1".into(),
        }
    }

    #[test]
    fn each_staged_image_waits_for_its_own_apply_time() {
        let mut f = FirmwareState::default();
        f.apply(FirmwareChange::Stage(
            Component::Bios,
            staged("2", ApplyAt::OnReset),
        ));
        f.apply(FirmwareChange::Stage(
            Component::Bmc,
            staged("9", ApplyAt::OnReset),
        ));
        f.apply(FirmwareChange::Stage(
            Component::Nic,
            staged("5", ApplyAt::OnStartUpdateRequest),
        ));
        f.start();
        assert_eq!(f.installed.get(&Component::Bios), Some(&image("2")));
        assert!(
            !f.installed.contains_key(&Component::Bmc),
            "a host start leaves the BMC's"
        );
        assert!(
            !f.installed.contains_key(&Component::Nic),
            "waits for StartUpdate"
        );
        f.apply(FirmwareChange::BmcRestarted);
        assert_eq!(f.installed.get(&Component::Bmc), Some(&image("9")));
        f.apply(FirmwareChange::StartUpdate);
        assert_eq!(f.installed.get(&Component::Nic), Some(&image("5")));
        assert!(f.staged.is_empty());
        // An immediate install spends what was staged for the component.
        f.apply(FirmwareChange::Stage(
            Component::Bios,
            staged("3", ApplyAt::OnReset),
        ));
        f.apply(FirmwareChange::Install(Component::Bios, image("4")));
        f.start();
        assert_eq!(f.installed.get(&Component::Bios), Some(&image("4")));
    }

    #[test]
    fn a_staged_image_is_installed_or_dropped_never_both() {
        let mut f = FirmwareState::default();
        let nic = Component::Nic;
        f.apply(FirmwareChange::Stage(nic, staged("5", ApplyAt::OnReset)));
        assert_eq!(f.fate(nic, "1", "5"), StagedFate::Waiting);
        // A later image for the same component replaces it.
        let mut later = staged("6", ApplyAt::OnReset);
        later.task = "2".into();
        f.apply(FirmwareChange::Stage(nic, later));
        assert_eq!(f.fate(nic, "1", "5"), StagedFate::Dropped);
        f.start();
        assert_eq!(f.fate(nic, "1", "5"), StagedFate::Dropped);
        assert_eq!(f.fate(nic, "2", "6"), StagedFate::Installed);
        // Withdrawn by its own task only.
        f.apply(FirmwareChange::Stage(nic, staged("7", ApplyAt::OnReset)));
        f.apply(FirmwareChange::Withdraw(nic, "2".into()));
        assert_eq!(f.fate(nic, "1", "7"), StagedFate::Waiting);
        f.apply(FirmwareChange::Withdraw(nic, "1".into()));
        assert_eq!(f.fate(nic, "1", "7"), StagedFate::Dropped);
    }
}
