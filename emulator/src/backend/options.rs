//! Backend options that the flags and the configuration name whatever
//! features the build has: how the libvirt backend carries out `UefiHttp`
//! (`--http-boot`). The libvirt backend's own options
//! (`LibvirtOptions`) hold it; `cli` resolves it.

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
