//! Backend options that the flags and the configuration name whatever
//! features the build has: how the libvirt backend carries out `UefiHttp`
//! (`--http-boot`), and the UEFI firmware a configuration names (sushy-tools'
//! `SUSHY_EMULATOR_BOOT_LOADER_MAP`). The libvirt backend's own options
//! (`LibvirtOptions`) hold them; `cli` resolves them.

use serde::Deserialize;

/// How the libvirt backend carries out `UefiHttp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum HttpBootMapping {
    /// The firmware's own HTTP boot: a URI load option in the NVRAM.
    Firmware,
    /// sushy-tools' mapping: the image at HttpBootUri as a virtual CD,
    /// booted from it.
    Vmedia,
}

/// The UEFI firmware a configuration names in place of QEMU's firmware
/// descriptors (sushy-tools' `SUSHY_EMULATOR_BOOT_LOADER_MAP` and its
/// `SECURE_BOOT_ENABLED_NVRAM`/`_DISABLED_NVRAM`): the code per
/// architecture (`x86_64`, `aarch64`), and the varstore templates with
/// Secure Boot's keys and without.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoaderMap {
    pub uefi_code: Vec<(String, String)>,
    pub secure_boot_vars: Option<String>,
    pub plain_vars: Option<String>,
}

impl LoaderMap {
    /// The code the map names for `arch` (QEMU's name for it).
    pub fn code(&self, arch: &str) -> Option<&str> {
        self.uefi_code
            .iter()
            .find(|(a, _)| a == arch)
            .map(|(_, c)| c.as_str())
    }
}
