//! Firmware decisions: what each component of a system runs (its
//! profile's factory version until an update installs another), which
//! image a component takes, and the one place an image is installed or
//! staged (through the backend, so every version that moves is a change
//! record).

use crate::backend::BackendError;
use crate::firmware::{Component, Image};
use crate::model::firmware::{ApplyAt, FirmwareChange, Installed, Staged};
use crate::model::{Change, System};
use crate::profile::Profile;

use super::Core;

/// What `c` of `sys` runs now.
pub fn installed(sys: &System, profile: &Profile, c: Component) -> Installed {
    if let Some(i) = sys.bmc.firmware.installed.get(&c) {
        return i.clone();
    }
    let version = match c {
        Component::Bios => &profile.bios_version,
        Component::Bmc => &profile.bmc_firmware_version,
        Component::Nic => &profile.update.nic_firmware_version,
    };
    Installed {
        version: version.clone(),
        release_date: None,
    }
}

/// The components `sys` has: a BIOS and a BMC always, a NIC when it has
/// network interfaces.
pub fn components(sys: &System) -> impl Iterator<Item = Component> + '_ {
    Component::ALL
        .into_iter()
        .filter(|c| *c != Component::Nic || !sys.nics.is_empty())
}

/// When an image is installed where the client named no time: a BMC
/// at once (it restarts into it), a host's component at the machine's
/// next start (its firmware flashes in POST).
pub fn default_apply(c: Component) -> Option<ApplyAt> {
    match c {
        Component::Bmc => None,
        Component::Bios | Component::Nic => Some(ApplyAt::OnReset),
    }
}

/// Why an image is not taken.
#[derive(Debug, thiserror::Error)]
pub enum FirmwareRefused {
    /// The image is for a component the request did not target, or that
    /// the system does not have.
    #[error("the image is for the {image}, not for {target}")]
    WrongTarget { image: Component, target: String },
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl Core {
    /// Drops the image update task `task` staged for `c`, if it still
    /// waits (the task was cancelled).
    pub async fn withdraw_firmware(
        &self,
        id: &str,
        c: Component,
        task: &str,
    ) -> Result<(), BackendError> {
        let change = FirmwareChange::Withdraw(c, task.to_string());
        self.backend
            .apply(id, vec![Change::Firmware(change)])
            .await?;
        Ok(())
    }

    /// Installs `image` on system `id` now (`at` `None`) or stages it for
    /// `at`, under the system's lock. `only` is the component the client
    /// targeted, if it named one. A BMC image installed now is staged for
    /// the BMC's restart, which the caller then starts ([`Core::bmc_restarted`]
    /// installs it).
    pub async fn install_firmware(
        &self,
        id: &str,
        image: &Image,
        only: Option<Component>,
        at: Option<ApplyAt>,
        task: &str,
    ) -> Result<System, FirmwareRefused> {
        let locked = self.locked(id).await?;
        let sys = &locked.sys;
        let c = image.component;
        if only.is_some_and(|o| o != c) || !components(sys).any(|x| x == c) {
            return Err(FirmwareRefused::WrongTarget {
                image: c,
                target: only.map_or_else(|| sys.name.clone(), |o| o.to_string()),
            });
        }
        let new = Installed {
            version: image.version.clone(),
            release_date: image.release_date.clone(),
        };
        let at = match (c, at) {
            (Component::Bmc, None) => Some(ApplyAt::OnReset),
            (_, at) => at,
        };
        let change = match at {
            None => FirmwareChange::Install(c, new),
            Some(apply) => FirmwareChange::Stage(
                c,
                Staged {
                    image: new,
                    apply,
                    task: task.to_string(),
                },
            ),
        };
        Ok(self
            .backend
            .apply(id, vec![Change::Firmware(change)])
            .await?)
    }

    /// The StartUpdate action: every image of system `id` waiting for it
    /// is installed (a BMC's then waits for the restart the caller starts).
    /// Whether there were any.
    pub async fn start_update(&self, id: &str) -> Result<bool, BackendError> {
        let locked = self.locked(id).await?;
        let waiting = |c: Component| {
            locked
                .sys
                .bmc
                .firmware
                .staged
                .get(&c)
                .is_some_and(|s| s.apply == ApplyAt::OnStartUpdateRequest)
        };
        if !Component::ALL.into_iter().any(waiting) {
            return Ok(false);
        }
        let mut changes = vec![Change::Firmware(FirmwareChange::StartUpdate)];
        if waiting(Component::Bmc) {
            // Installed by the restart, as an Immediate BMC update.
            let staged = &locked.sys.bmc.firmware.staged[&Component::Bmc];
            changes.insert(
                0,
                Change::Firmware(FirmwareChange::Stage(
                    Component::Bmc,
                    Staged {
                        apply: ApplyAt::OnReset,
                        ..staged.clone()
                    },
                )),
            );
        }
        self.backend.apply(id, changes).await?;
        Ok(true)
    }
}
