//! The boot override: the one decision every route that sets it makes
//! (Redfish's System and settings object, Dell's Server Configuration
//! Profile import, HPE's `BootOnNextServerReset`, IPMI's boot flags).
//!
//! A route turns its input into a [`BootRequest`] (what it names; what it
//! leaves out stays as it is) and the core decides, under the system's
//! lock: the host in POST refuses any, a target must be one the machine
//! offers under its profile, `Continuous` only where the profile takes
//! it, UEFI only on UEFI firmware, a UEFI-only target only in UEFI mode.
//! A refusal is a [`BootRefused`], which each front-end maps once.

use super::{Core, Locked};
use crate::backend::BackendError;
use crate::model::{BootMode, BootOverride, BootTarget, Change, OverrideEnabled, System};
use crate::profile::Profile;

/// What a route asks of the boot override: each field it names; `None`
/// keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootRequest {
    pub target: Option<BootTarget>,
    pub enabled: Option<OverrideEnabled>,
    pub mode: Option<BootMode>,
    /// `Some(None)`: JSON null (with UefiHttp, the URL from DHCP).
    pub http_boot_uri: Option<Option<String>>,
    pub uefi_target: Option<Option<String>>,
    /// The route has one word for any network boot (IPMI's boot flags
    /// say PXE): asking for Pxe where the override is UefiHttp in the same
    /// mode keeps UefiHttp and its URI, which the route cannot say.
    pub pxe_means_network: bool,
}

impl BootRequest {
    /// Boot `target` (or, with `None`, nothing) once.
    pub fn once(target: BootTarget) -> BootRequest {
        BootRequest {
            target: Some(target),
            enabled: Some(OverrideEnabled::Once),
            ..BootRequest::default()
        }
    }

    /// No override: the machine boots its own order.
    pub fn off() -> BootRequest {
        BootRequest {
            target: Some(BootTarget::None),
            enabled: Some(OverrideEnabled::Disabled),
            ..BootRequest::default()
        }
    }
}

/// Why a boot override request was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum BootRefused {
    /// The host is in POST after a start (the profile's `post_secs`).
    #[error("the host is in POST")]
    InPost,
    /// A target this machine does not offer under its profile.
    #[error("boot target {0} is not offered")]
    TargetNotOffered(BootTarget),
    /// `Continuous`, where the profile takes Once only.
    #[error("BootSourceOverrideEnabled Continuous is not offered")]
    ContinuousNotOffered,
    /// A mode the machine's firmware has not (UEFI on OpenPOWER).
    #[error("boot mode {0} is not offered")]
    ModeNotOffered(BootMode),
    /// A UEFI-only target with the firmware in Legacy mode.
    #[error("boot target {0} needs UEFI mode")]
    NeedsUefi(BootTarget),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// The boot targets this machine offers under its profile: what its
/// firmware can boot in its mode, the profile's virtual CD name, less the
/// targets the profile hides.
pub fn offered_targets(sys: &System, profile: &Profile) -> Vec<BootTarget> {
    let mut targets = sys.boot_targets();
    if profile.vmedia.usb_cd {
        targets.push(BootTarget::UsbCd);
    }
    targets.retain(|t| profile.offers(*t));
    targets
}

impl Core {
    /// The override `req` makes of `sys`'s, or why it is refused.
    pub fn decide_boot(
        &self,
        sys: &System,
        req: &BootRequest,
    ) -> Result<BootOverride, BootRefused> {
        let profile = self.profile(sys);
        if self
            .power_clock
            .within(&sys.id, profile.power.post_secs, true)
        {
            return Err(BootRefused::InPost);
        }
        if let Some(t) = req.target {
            if t != BootTarget::None && !offered_targets(sys, profile).contains(&t) {
                return Err(BootRefused::TargetNotOffered(t));
            }
        }
        if req.enabled == Some(OverrideEnabled::Continuous) && !profile.boot.continuous {
            return Err(BootRefused::ContinuousNotOffered);
        }
        if req.mode == Some(BootMode::Uefi) && !sys.arch.has_uefi() {
            return Err(BootRefused::ModeNotOffered(BootMode::Uefi));
        }
        let now = &sys.bmc.boot;
        let mut b = now.clone();
        if let Some(t) = req.target {
            b.target = t;
        }
        if let Some(e) = req.enabled {
            b.enabled = e;
        }
        if let Some(m) = req.mode {
            b.mode = m;
        }
        if let Some(u) = &req.http_boot_uri {
            b.http_boot_uri = u.clone();
        }
        if let Some(u) = &req.uefi_target {
            b.uefi_target = u.clone();
        }
        if req.pxe_means_network
            && b.target == BootTarget::Pxe
            && now.target == BootTarget::UefiHttp
            && b.mode == now.mode
        {
            b.target = BootTarget::UefiHttp;
        }
        if b.target.requires_uefi()
            && b.mode != BootMode::Uefi
            && b.enabled != OverrideEnabled::Disabled
        {
            return Err(BootRefused::NeedsUefi(b.target));
        }
        if self.boot_device_ignored && (b.target != now.target || b.enabled != now.enabled) {
            tracing::warn!(
                system = %sys.name,
                target = b.target.as_str(),
                "boot device ignored (SUSHY_EMULATOR_IGNORE_BOOT_DEVICE): the machine \
                 boots its own order"
            );
            b = BootOverride {
                mode: b.mode,
                ..now.clone()
            };
        }
        Ok(b)
    }

    /// Decides `req` for the system `locked` holds and applies it: the
    /// system afterwards.
    pub async fn set_boot(
        &self,
        locked: &Locked,
        req: &BootRequest,
    ) -> Result<System, BootRefused> {
        let boot = self.decide_boot(&locked.sys, req)?;
        Ok(self
            .backend
            .apply(&locked.sys.id, vec![Change::Boot(boot)])
            .await?)
    }
}
