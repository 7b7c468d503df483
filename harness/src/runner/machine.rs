//! A case's machine and what it boots: the scenario's boot files built
//! (or taken from the cache, or the user's own, checked) and copied into the served folder, the domain
//! defined (UEFI x86_64 with its blank disk and fw_cfg CA list, or ppc64le
//! pseries or powernv running the netboot image), and its stable UUID.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::lab::{Lab, Net, Ppc64le, Uefi};
use crate::scenario::{Enroll, Image, Platform, Scenario, Source};

/// Builds (or takes from the cache) the scenario's boot files and copies
/// them into the served folder `www` under their scenario names.
pub(super) fn copy_artifacts(s: &Scenario, www: &Path) -> Result<()> {
    for a in &s.artifacts {
        let marker = a.marker.as_deref().unwrap_or_default();
        let source = match a.source() {
            Source::Built(image) => match firmware_component(image) {
                Some(component) => {
                    std::fs::write(
                        www.join(&a.name),
                        crate::firmware::artifact(component, marker),
                    )?;
                    continue;
                }
                None => built(image, marker)?,
            },
            Source::File(f) => crate::images::own(Some(f), None, a.sha256.as_deref())
                .with_context(|| format!("artifact {}", a.name))?,
            Source::Url(u) => crate::images::own(None, Some(u), a.sha256.as_deref())
                .with_context(|| format!("artifact {}", a.name))?,
        };
        std::fs::copy(source, www.join(&a.name))?;
    }
    Ok(())
}

/// The component a firmware image is for.
fn firmware_component(image: Image) -> Option<&'static str> {
    match image {
        Image::FirmwareBios => Some("bios"),
        Image::FirmwareBmc => Some("bmc"),
        Image::FirmwareNic => Some("nic"),
        _ => None,
    }
}

/// Builds (or takes from the cache) every image `scenarios` boot, one
/// after another, as their cases would on first use: their artifacts
/// (downloads of the user's own fetched and checked) and the ppc64le
/// machines' kernel and netboot images. Each image is built under its
/// own lock, so cases running meanwhile wait for it and reuse it.
/// Returns how many it went through.
pub fn prebuild(scenarios: &[Scenario]) -> Result<usize> {
    let mut seen = std::collections::BTreeSet::new();
    for s in scenarios {
        let mut wanted: Vec<(Image, &str)> = Vec::new();
        for a in &s.artifacts {
            match a.source() {
                Source::Built(i) if firmware_component(i).is_none() => {
                    wanted.push((i, a.marker.as_deref().unwrap_or_default()))
                }
                Source::Url(u) if seen.insert((u.to_string(), String::new())) => {
                    crate::images::own(None, Some(u), a.sha256.as_deref())
                        .with_context(|| format!("{}: artifact {}", s.name, a.name))?;
                }
                _ => {}
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;
    use std::io::{Read, Write};

    /// One HTTP response of `body` on loopback, for the download.
    fn serve_once(body: &'static [u8]) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/dl/kernel?x=1", l.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            c.write_all(head.as_bytes()).unwrap();
            c.write_all(body).unwrap();
        });
        url
    }

    /// The user's own files reach the served folder as they are, once
    /// their SHA-256 matches; a download is kept in the cache for the
    /// next case; a wrong checksum serves nothing and names the artifact.
    #[test]
    fn your_own_files_are_served_once_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("SHOAL_CACHE", dir.path().join("cache"));
        let file = dir.path().join("disk.img");
        std::fs::write(&file, b"my disk").unwrap();
        let sha = |b: &[u8]| hex::encode(sha2::Sha256::digest(b));
        let url = serve_once(b"my kernel");
        let text = format!(
            "description = \"x\"\n\
             [[artifacts]]\nname = \"disk.img\"\nfile = {file:?}\nsha256 = \"{}\"\n\
             [[artifacts]]\nname = \"vmlinuz\"\nurl = \"{url}\"\nsha256 = \"{}\"\n\
             [boot]\nmethod = \"uefi-http\"\nuri = \"vmlinuz\"\n[checks]\nserial = [\"login:\"]\n",
            sha(b"my disk"),
            sha(b"my kernel"),
        );
        let p = dir.path().join("s.toml");
        std::fs::write(&p, &text).unwrap();
        let s = Scenario::load(&p).unwrap();
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        copy_artifacts(&s, &www).unwrap();
        assert_eq!(std::fs::read(www.join("disk.img")).unwrap(), b"my disk");
        assert_eq!(std::fs::read(www.join("vmlinuz")).unwrap(), b"my kernel");
        // The second case takes the cached download: no server now.
        std::fs::remove_file(www.join("vmlinuz")).unwrap();
        copy_artifacts(&s, &www).unwrap();
        assert_eq!(std::fs::read(www.join("vmlinuz")).unwrap(), b"my kernel");
        std::fs::write(&p, text.replace(&sha(b"my disk"), &"0".repeat(64))).unwrap();
        let s = Scenario::load(&p).unwrap();
        let e = format!("{:#}", copy_artifacts(&s, &www).unwrap_err());
        assert!(
            e.contains("artifact disk.img") && e.contains("SHA-256"),
            "{e}"
        );
    }
}
