//! A case's machine and what it boots: the scenario's boot files built
//! (or taken from the cache) and copied into the served folder, the domain
//! defined (UEFI x86_64 with its blank disk and fw_cfg CA list, or ppc64le
//! pseries or powernv running the netboot image), and its stable UUID.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::lab::{Lab, Net, Ppc64le, Uefi};
use crate::scenario::{Enroll, Image, Platform, Scenario};

/// Builds (or takes from the cache) the scenario's boot files and copies
/// them into the served folder `www` under their scenario names.
pub(super) fn copy_artifacts(s: &Scenario, www: &Path) -> Result<()> {
    for a in &s.artifacts {
        let marker = a.marker.as_deref().unwrap_or_default();
        let firmware = match a.image {
            Image::FirmwareBios => Some("bios"),
            Image::FirmwareBmc => Some("bmc"),
            Image::FirmwareNic => Some("nic"),
            _ => None,
        };
        if let Some(component) = firmware {
            std::fs::write(
                www.join(&a.name),
                crate::firmware::artifact(component, marker),
            )?;
            continue;
        }
        std::fs::copy(built(a.image, marker)?, www.join(&a.name))?;
    }
    Ok(())
}

/// Builds (or takes from the cache) every image `scenarios` boot, one
/// after another, as their cases would on first use: their artifacts and
/// the ppc64le machines' kernel and netboot images. Each image is built
/// under its own lock, so cases running meanwhile wait for it and reuse
/// it. Returns how many it went through.
pub fn prebuild(scenarios: &[Scenario]) -> Result<usize> {
    let mut seen = std::collections::BTreeSet::new();
    for s in scenarios {
        let mut wanted: Vec<(Image, &str)> = s
            .artifacts
            .iter()
            .filter(|a| {
                !matches!(
                    a.image,
                    Image::FirmwareBios | Image::FirmwareBmc | Image::FirmwareNic
                )
            })
            .map(|a| (a.image, a.marker.as_deref().unwrap_or_default()))
            .collect();
        if s.machine.arch == "ppc64le" {
            wanted.push((Image::Ppc64leKernel, ""));
        }
        for (image, marker) in wanted {
            if seen.insert((format!("{image:?}"), marker.to_string())) {
                built(image, marker).with_context(|| format!("{}: {image:?}", s.name))?;
            }
        }
        if s.machine.arch == "ppc64le"
            && seen.insert((format!("{:?}", s.machine.platform), String::new()))
        {
            netboot(s.machine.platform)?;
        }
    }
    Ok(seen.len())
}

/// The file of a (non-firmware) image with its marker, built or cached.
fn built(image: Image, marker: &str) -> Result<PathBuf> {
    Ok(match image {
        Image::GrubMarkerEfi => crate::images::grub_marker("efi", marker)?,
        Image::GrubMarkerIso => crate::images::grub_marker("iso", marker)?,
        Image::DeployRamdisk => crate::images::build("deploy-ramdisk.sh", &["iso"], "deploy.iso")?,
        Image::DeployKernel => crate::images::build("deploy-ramdisk.sh", &["kernel"], "vmlinuz")?,
        Image::DeployInitrd => crate::images::build("deploy-ramdisk.sh", &["initrd"], "initrd.gz")?,
        Image::DeployRamdiskIpmi => {
            crate::images::build("deploy-ramdisk.sh", &["iso-ipmi"], "deploy-ipmi.iso")?
        }
        Image::IpxeSnponly => packaged(crate::lab::IPXE_SNPONLY, "ipxe")?,
        Image::GrubNetbootEfi => packaged(crate::lab::GRUB_NETBOOT, "grub-efi-amd64-signed")?,
        Image::Ppc64leKernel => ppc64le("kernel", "vmlinux")?,
        Image::IpaKernel => crate::images::ipa_ramdisk()?.join("vmlinuz"),
        Image::IpaInitrd => crate::images::ipa_ramdisk()?.join("initrd"),
        Image::IpaEsp => crate::images::ipa_ramdisk()?.join("esp.img"),
        Image::IpaIso => crate::images::ipa_ramdisk()?.join("ipa.iso"),
        Image::InstanceQcow2 => crate::images::instance_image("qcow2", marker)?,
        Image::InstanceRaw => crate::images::instance_image("raw", marker)?,
        Image::Ppc64lePayload => ppc64le("payload", "payload.cpio.gz")?,
        Image::FirmwareBios | Image::FirmwareBmc | Image::FirmwareNic => {
            bail!("{image:?} is made per case, not built")
        }
    })
}

/// The netboot image a ppc64le machine on `platform` runs.
fn netboot(platform: Platform) -> Result<PathBuf> {
    match platform {
        Platform::Pseries => ppc64le("netboot", "netboot.cpio.gz"),
        Platform::Powernv => ppc64le("netboot-opal", "netboot.cpio.gz"),
    }
}

/// The names a case's domain is defined with.
pub(super) struct Machine<'a> {
    pub domain: &'a str,
    pub uuid: &'a str,
    pub net: &'a Net,
    pub mac: &'a str,
    pub serial: &'a Path,
}

/// Defines the case's machine: a ppc64le machine (pseries or powernv) running the netboot
/// image (with a disk when the scenario gives it an OS), else UEFI x86_64.
pub(super) fn define_machine(lab: &mut Lab, s: &Scenario, m: &Machine, dir: &Path) -> Result<()> {
    if !s.petitboot() {
        let cacerts = match s.https.as_ref().and_then(|h| h.fw_cfg) {
            Some(which) => {
                let cas = crate::tls::run_cas()?;
                let list: Vec<&openssl::x509::X509> = match which {
                    Enroll::RunCa => vec![&cas.ca.cert],
                    Enroll::OtherCa => vec![&cas.other.cert],
                    Enroll::Intermediate => vec![&cas.intermediate.cert],
                    Enroll::None => vec![],
                };
                let p = std::fs::canonicalize(dir)?
                    .join("tls")
                    .join("fw_cfg-cacerts.bin");
                std::fs::write(&p, crate::tls::edk2_cacerts(&list)?)?;
                Some(p)
            }
            None => None,
        };
        let disk = match s.machine.disk_gib {
            Some(gib) => Some(blank_disk(dir, gib)?),
            None => None,
        };
        lab.define_uefi(&Uefi {
            name: m.domain,
            net: m.net,
            mac: m.mac,
            memory_mib: s.machine.memory_mib,
            cpus: s.machine.cpus,
            serial: m.serial,
            https_cacerts: cacerts.as_deref(),
            disk: disk.as_deref(),
        })?;
        return Ok(());
    }
    let gone = crate::lab::missing_ppc64le();
    if !gone.is_empty() {
        bail!(
            "this host cannot run ppc64le machines; missing: {}",
            gone.join(", ")
        );
    }
    let kernel = ppc64le("kernel", "vmlinux")?;
    // powernv's image reads the BMC over in-band IPMI (ipmitool and its
    // libraries); pseries keeps the smaller one its kexec was measured with.
    let netboot = netboot(s.machine.platform)?;
    let disk = match &s.machine.disk_os {
        Some(os) => {
            // An installed OS, as far as petitboot can tell.
            let mut bytes = format!("SHOAL-DISK-OS {os}\n").into_bytes();
            bytes.resize(1 << 20, 0);
            let p = std::fs::canonicalize(dir)?.join("disk.img");
            std::fs::write(&p, bytes)?;
            Some(p)
        }
        None => None,
    };
    lab.define_ppc64le(&Ppc64le {
        platform: s.machine.platform,
        name: m.domain,
        uuid: m.uuid,
        net: m.net,
        mac: m.mac,
        memory_mib: s.machine.memory_mib,
        cpus: s.machine.cpus,
        serial: m.serial,
        kernel: &kernel,
        initrd: &netboot,
        disk: disk.as_deref(),
    })?;
    Ok(())
}

/// A blank sparse qcow2 disk of `gib` GiB in the case folder.
fn blank_disk(dir: &Path, gib: u64) -> Result<PathBuf> {
    let p = std::fs::canonicalize(dir)?.join("disk.qcow2");
    let out = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&p)
        .arg(format!("{gib}G"))
        .output()
        .context("running qemu-img (Debian package qemu-utils)")?;
    if !out.status.success() {
        bail!(
            "qemu-img create {}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(p)
}

/// A boot file a Debian package installs.
fn packaged(path: &str, package: &str) -> Result<PathBuf> {
    let p = PathBuf::from(path);
    if !p.exists() {
        bail!("{path} is missing (Debian package {package}; ci/test installs it)");
    }
    Ok(p)
}

/// A ppc64le image from vm-images/ppc64le-netboot.sh.
fn ppc64le(kind: &str, name: &str) -> Result<PathBuf> {
    crate::images::build("ppc64le-netboot.sh", &[kind], name)
}

/// A stable UUID for a domain name, so that templates can name the machine
/// before it is defined.
pub(super) fn domain_uuid(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = hex::encode(&Sha256::digest(name.as_bytes())[..16]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}
