//! `[[artifacts]]`: the files a case serves by name, each one of Shoal's
//! built images (`image`, from the recipes in `vm-images/`), a file of the
//! user's own (`file`, relative to the scenario's folder: an ISO, an EFI
//! application, a disk image, a kernel or an initramfs), or a download
//! (`url`, fetched once into the image cache). A `sha256` is checked
//! before any case boots the bytes; a download must have one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Image {
    /// A grub EFI application printing `SHOAL-MARKER <marker>`.
    GrubMarkerEfi,
    /// The same as a bootable ISO.
    GrubMarkerIso,
    /// A Linux ramdisk ISO that reports its command line and boot path and
    /// sends a heartbeat (vm-images/deploy-ramdisk.sh).
    DeployRamdisk,
    /// That ramdisk's kernel alone (for network boot).
    DeployKernel,
    /// That ramdisk's initramfs alone.
    DeployInitrd,
    /// The ramdisk ISO with IPMI drivers and ipmitool: over in-band IPMI
    /// it prints the boot flags, power state and GUID its BMC reports,
    /// then powers off through the BMC.
    DeployRamdiskIpmi,
    /// iPXE's EFI build over the firmware's NIC (Debian's snponly.efi).
    IpxeSnponly,
    /// Debian's signed network grub (grub-efi-amd64-signed,
    /// grubnetx64.efi.signed), the bootloader Ironic's docs name for its
    /// `http` and `pxe` interfaces on UEFI.
    GrubNetbootEfi,
    /// Debian's ppc64el kernel (vm-images/ppc64le-netboot.sh kernel).
    Ppc64leKernel,
    /// The ironic-python-agent ramdisk's kernel (vm-images/ipa-ramdisk.sh).
    IpaKernel,
    /// Its initramfs: Debian 12 with ironic-python-agent from PyPI.
    IpaInitrd,
    /// Its ESP image, the `bootloader` Ironic puts into the ISOs it builds.
    IpaEsp,
    /// The agent ramdisk as a bootable ISO.
    IpaIso,
    /// A whole-disk instance image (GPT, an ESP whose removable-media
    /// loader prints `SHOAL-MARKER <marker>` and `SHOAL-BOOTPATH disk`, a
    /// root partition), qcow2 (vm-images/instance-image.sh).
    InstanceQcow2,
    /// The same, raw.
    InstanceRaw,
    /// The ppc64le payload initramfs: marker, command line, heartbeat.
    Ppc64lePayload,
    /// A Shoal firmware image for the BIOS (`crate::firmware`): the
    /// marker is its version, then optionally a space and its release
    /// date (`2.19.1 2026-11-02`).
    FirmwareBios,
    /// The same for the BMC.
    FirmwareBmc,
    /// The same for the network adapter.
    FirmwareNic,
}

impl Image {
    /// A Shoal firmware image (`firmware-*`).
    pub fn is_firmware(self) -> bool {
        matches!(
            self,
            Image::FirmwareBios | Image::FirmwareBmc | Image::FirmwareNic
        )
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// The name the case serves it under (a plain file name).
    pub name: String,
    /// One of Shoal's built images.
    pub image: Option<Image>,
    /// A file of the user's own; a relative path is from the scenario's
    /// folder (resolved at load).
    pub file: Option<PathBuf>,
    /// An `http(s)` URL the file is downloaded from, once.
    pub url: Option<String>,
    /// The file's SHA-256 (hex): checked before it is served.
    pub sha256: Option<String>,
    /// The marker text of the grub images.
    pub marker: Option<String>,
}

/// Where an artifact's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    Built(Image),
    File(&'a Path),
    Url(&'a str),
}

impl Artifact {
    /// Its source (a loaded scenario's artifacts have exactly one).
    pub fn source(&self) -> Source<'_> {
        match (&self.image, &self.file, &self.url) {
            (Some(i), _, _) => Source::Built(*i),
            (None, Some(f), _) => Source::File(f),
            (None, None, Some(u)) => Source::Url(u),
            (None, None, None) => unreachable!("checked at load: one of image, file, url"),
        }
    }

    /// A Shoal firmware image (`firmware-*`).
    pub fn is_firmware(&self) -> bool {
        self.image.is_some_and(Image::is_firmware)
    }

    /// Whether the image takes a marker (grub marker, instance and
    /// firmware images).
    pub fn marked(&self) -> bool {
        self.image.is_some_and(|i| {
            i.is_firmware()
                || matches!(
                    i,
                    Image::GrubMarkerEfi
                        | Image::GrubMarkerIso
                        | Image::InstanceQcow2
                        | Image::InstanceRaw
                )
        })
    }

    /// The checks of `artifacts[i]` alone; a relative `file` made
    /// absolute from `folder` (the scenario's) and found there.
    pub(super) fn check(&mut self, i: usize, folder: &Path) -> Result<()> {
        let at = format!("artifacts[{i}]");
        if self.name.contains('/') || self.name.is_empty() {
            bail!("{at}.name: {:?} is not a plain file name", self.name);
        }
        let given = [
            self.image.is_some(),
            self.file.is_some(),
            self.url.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            bail!("{at}: give one of image (Shoal's), file (your own) or url (downloaded)");
        }
        if self.marked() != self.marker.is_some() {
            bail!("{at}.marker: grub marker, instance and firmware images need one (a firmware image's version), other artifacts take none");
        }
        if let Some(h) = &self.sha256 {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("{at}.sha256: {h:?} is not a SHA-256 (64 hex digits)");
            }
        }
        if let Some(u) = &self.url {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                bail!("{at}.url: {u:?} is not an http:// or https:// URL");
            }
            if self.sha256.is_none() {
                bail!("{at}.sha256: a downloaded file needs its SHA-256, checked before it boots");
            }
        }
        if let Some(f) = &mut self.file {
            if f.is_relative() {
                *f = folder.join(&*f);
            }
            if !f.is_file() {
                bail!("{at}.file: {} is not a file", f.display());
            }
        }
        Ok(())
    }
}
