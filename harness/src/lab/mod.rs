//! The confined lab that real-VM runs happen in: a network namespace of its
//! own with libvirtd and virtlogd inside, isolated libvirt networks (no
//! forward; DHCP with the dnsmasq options a scenario asks for), boot file
//! servers bound inside the namespace, and domains whose serial port goes
//! to a file. Everything started here is stopped on drop: domains
//! destroyed and undefined, networks removed, daemons killed by pid, the
//! namespace deleted.
//!
//! This module is what needs no libvirt (the host's requirements, the
//! networks' addressing, `wait_until`), always built; `libvirt.rs`, the
//! `Lab` itself, is behind the cargo feature `lab` (libvirt's C library).

pub mod inventory;
#[cfg(feature = "lab")]
mod libvirt;
#[cfg(feature = "lab")]
mod up;
#[cfg(feature = "lab")]
mod wire;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[cfg(feature = "lab")]
pub use libvirt::{Lab, Ppc64le, Uefi};
#[cfg(feature = "lab")]
pub use up::{read_state, LabCommand};

pub const SYSTEM_URI: &str = "qemu:///system";
pub const BOOT_PORT: u16 = 8080;
/// The boot server's HTTPS port (scenarios with `[https]`).
pub const BOOT_TLS_PORT: u16 = 8443;

/// An isolated network of the lab: 198.18.N.0/24 (and fd00:5e:N::/64).
#[derive(Debug, Clone)]
pub struct Net {
    pub name: String,
    pub index: u8,
    pub host: Ipv4Addr,
    pub host6: Option<String>,
}

impl Net {
    /// The boot server's base URL on this network.
    pub fn boot_url(&self) -> String {
        format!("http://{}:{BOOT_PORT}", self.host)
    }

    /// The boot server's HTTPS base URL on this network.
    pub fn boot_url_tls(&self) -> String {
        format!("https://{}:{BOOT_TLS_PORT}", self.host)
    }
}

/// The host's IPv6 address on network `index`: fd00:5e:N::1.
pub fn host6(index: u8) -> std::net::Ipv6Addr {
    std::net::Ipv6Addr::new(0xfd00, 0x5e, index.into(), 0, 0, 0, 0, 1)
}

/// What a network offers through DHCP.
#[derive(Debug, Clone, Default)]
pub struct NetSpec {
    /// Raw dnsmasq options (`dhcp-option-force=...`), added to libvirt's.
    pub dnsmasq_options: Vec<String>,
    /// Also fd00:5e:N::/64 with DHCPv6.
    pub ipv6: bool,
    /// No DHCPv4 (the address stays, for the boot server).
    pub no_dhcp4: bool,
    /// dnsmasq's TFTP server serves this folder.
    pub tftp_root: Option<PathBuf>,
    /// Fixed DHCPv4 leases: (MAC, host number in the /24).
    pub hosts: Vec<(String, u8)>,
    /// dnsmasq logs its DHCP and router advertisement traffic here.
    pub dnsmasq_log: Option<PathBuf>,
}

/// Host programs and files the lab needs, with the Debian package of each.
pub const NEEDS: &[(&str, &str)] = &[
    ("/usr/sbin/libvirtd", "libvirt-daemon-system"),
    ("/usr/sbin/virtlogd", "libvirt-daemon-system"),
    ("/usr/bin/qemu-system-x86_64", "qemu-system-x86"),
    ("/usr/sbin/dnsmasq", "dnsmasq-base"),
    ("/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf"),
];

/// What ppc64le (petitboot) machines need on top of `NEEDS`; their images
/// are built from ppc64el packages (`dpkg --add-architecture ppc64el`).
pub const NEEDS_PPC64LE: &[(&str, &str)] = &[("/usr/bin/qemu-system-ppc64", "qemu-system-ppc")];

/// The boot files of the Ironic DHCP-path scenarios: iPXE (http-ipxe) and
/// Debian's network grub (http), as Ironic's docs name them.
pub const IPXE_SNPONLY: &str = "/usr/lib/ipxe/snponly.efi";
pub const GRUB_NETBOOT: &str = "/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed";
pub const NEEDS_IRONIC: &[(&str, &str)] = &[
    (IPXE_SNPONLY, "ipxe"),
    (GRUB_NETBOOT, "grub-efi-amd64-signed"),
    // Ironic's ipmi power and management, and its ipmitool-socat console.
    ("/usr/bin/ipmitool", "ipmitool"),
    ("/usr/bin/socat", "socat"),
    // Ironic's ISOs for the agent (its `mkisofs`, xorriso's emulation).
    ("/usr/bin/xorrisofs", "xorriso"),
    // The agent's ramdisk (vm-images/ipa-ramdisk.sh) and the whole-disk
    // image it writes (vm-images/instance-image.sh).
    ("/usr/bin/mmdebstrap", "mmdebstrap"),
    ("/usr/sbin/sfdisk", "fdisk"),
    ("/usr/sbin/mkfs.vfat", "dosfstools"),
    ("/usr/bin/qemu-img", "qemu-utils"),
];

/// What of `NEEDS_PPC64LE` is missing on this host.
pub fn missing_ppc64le() -> Vec<String> {
    absent(NEEDS_PPC64LE)
}

/// What is missing on this host (empty when the lab can run).
pub fn missing() -> Vec<String> {
    absent(NEEDS)
}

/// The entries of `needs` whose file is absent, with their package.
fn absent(needs: &[(&str, &str)]) -> Vec<String> {
    needs
        .iter()
        .filter(|(p, _)| !Path::new(p).exists())
        .map(|(p, pkg)| format!("{p} (Debian package {pkg})"))
        .collect()
}

/// Resolves on Ctrl-C or SIGTERM (whichever comes first), for the
/// runs that tear their lab down before leaving.
pub async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

/// Polls `cond` every 250 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if cond() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
