//! The hooks over a profile: what a handler asks of the profile of the
//! system it serves, each named for the behaviour (a boot target
//! offered, a settings object's fields, links that end in `/`), never
//! for the vendor whose BMC behaves so.

use super::{Profile, VendorMessage};
use crate::model::{BootTarget, OverrideEnabled};

impl Profile {
    pub fn offers(&self, target: BootTarget) -> bool {
        !self
            .boot
            .hidden_targets
            .iter()
            .any(|t| t == target.as_str())
    }

    /// The override frequencies this BMC offers.
    pub fn enabled_values(&self) -> Vec<&'static str> {
        OverrideEnabled::ALL
            .iter()
            .filter(|e| self.boot.continuous || **e != OverrideEnabled::Continuous)
            .map(|e| e.as_str())
            .collect()
    }

    /// The settings object's path under the System, if there is one.
    pub fn settings_path(&self) -> Option<&str> {
        self.boot.settings.as_ref().map(|s| s.path.as_str())
    }

    /// Whether `field` (a Boot property) belongs to the settings object.
    pub fn in_settings(&self, field: &str) -> bool {
        self.boot
            .settings
            .as_ref()
            .is_some_and(|s| s.fields.iter().any(|f| f == field))
    }

    /// The service root's links to the top-level collections end in `/`,
    /// as iLO's do (proliantutils joins `1` onto them:
    /// `urljoin(Systems, "1")`, which without it would drop `Systems`).
    pub fn collection_links_end_in_slash(&self) -> bool {
        self.hpe.is_some()
    }

    /// The BIOS settings object shows the whole set as the next start
    /// will have it (current values, staged ones over them, the machine's
    /// own), as iLO's does (proliantutils reads the pending `BootMode`
    /// there); otherwise only what is staged.
    pub fn bios_settings_show_next_start(&self) -> bool {
        self.hpe.is_some()
    }

    /// The BIOS settings object takes a POST as it takes a PATCH (iLO's:
    /// proliantutils POSTs `UrlBootFile` there).
    pub fn bios_settings_take_post(&self) -> bool {
        self.hpe.is_some()
    }

    /// A PATCH of a VirtualMedia device may set whether the host boots it
    /// at its next start (iLO's `Oem.Hpe.BootOnNextServerReset`).
    pub fn media_patch_sets_boot_next(&self) -> bool {
        self.hpe.is_some()
    }

    /// Message `id` of the vendor's own registry (an injected fault may
    /// name one), under the profile's registry prefix; `None` where the
    /// profile has no registry or the registry no such message.
    pub fn vendor_message(&self, id: &str) -> Option<&'static VendorMessage> {
        self.dell.as_ref().and_then(|d| d.message(id))
    }
}
