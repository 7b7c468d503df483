//! Behaviour profiles: the per-system hook through which BMC quirks are
//! expressed as data.
//!
//! Handlers never branch on a vendor; they ask the system's [`Profile`] (ETag
//! style, If-Match policy, identity strings, which boot targets to offer).
//! Only the neutral `generic` profile exists so far; vendor profiles add
//! values here, not code in handlers.

use crate::model::BootTarget;

/// How a BMC emits and compares ETags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtagStyle {
    /// `ETag: "abc"`, compared strongly or weakly as the client asks.
    Strong,
    /// `ETag: W/"abc"`.
    Weak,
    /// No ETag at all; If-Match is ignored.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    pub manufacturer: &'static str,
    pub model: &'static str,
    pub bios_version: &'static str,
    pub bmc_firmware_version: &'static str,
    pub etag: EtagStyle,
    /// PATCH without If-Match is refused with 428.
    pub if_match_required: bool,
    /// Targets the BMC hides even when the machine could boot them.
    pub hidden_boot_targets: &'static [BootTarget],
}

pub const GENERIC: Profile = Profile {
    name: "generic",
    manufacturer: "Shoal",
    model: "Shoal Virtual Machine",
    bios_version: "1.0.0",
    bmc_firmware_version: env!("CARGO_PKG_VERSION"),
    etag: EtagStyle::Strong,
    if_match_required: false,
    hidden_boot_targets: &[],
};

/// Profile names the emulator knows.
pub const NAMES: &[&str] = &["generic"];

/// Looks up a built-in profile by name.
pub fn by_name(name: &str) -> Option<&'static Profile> {
    match name {
        "generic" => Some(&GENERIC),
        _ => None,
    }
}

impl Profile {
    pub fn offers(&self, target: BootTarget) -> bool {
        !self.hidden_boot_targets.contains(&target)
    }
}
