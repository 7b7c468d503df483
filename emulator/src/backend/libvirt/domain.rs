//! What Shoal reads from and writes to a libvirt domain definition: the
//! machine's facts, Shoal's own state in `<metadata>`, and device boot
//! order. Pure functions over the element tree, tested without libvirt.

use std::path::Path;

use uuid::Uuid;

use super::xml::{Element, Node};
use crate::model::{Arch, BmcState, BootMode, BootTarget, Nic, SecureBoot};
use crate::storage::Disk;

/// Namespace of Shoal's element in `<metadata>`.
pub const NS: &str = "https://shoal.dev/libvirt/1";
const STATE_TAG: &str = "shoal:state";

/// The machine as its domain XML describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub name: String,
    pub uuid: Uuid,
    pub arch: Arch,
    pub uefi: bool,
    pub memory_mib: u64,
    pub cpus: u32,
    pub nics: Vec<Nic>,
    pub disks: Vec<Disk>,
    /// The per-domain varstore file (`<os><nvram>`), for UEFI domains.
    pub nvram: Option<String>,
    /// The varstore template (`<nvram template=...>`), if the XML names one.
    pub nvram_template: Option<String>,
    /// The NVRAM file is qcow2 (`<nvram format='qcow2'>`) rather than raw.
    pub nvram_qcow2: bool,
    /// The machine type (`q35`, `pc-q35-10.0`, `pseries`, ...).
    pub machine: String,
    /// The loader is a Secure Boot build (`<loader secure='yes'>`).
    pub secure_loader: bool,
}

/// The BMC state of a domain Shoal has not seen before: what its
/// definition already is (firmware mode, Secure Boot), nothing overridden.
/// `enrolled` tells whether its varstore template carries Secure Boot keys.
pub fn fresh_state(f: &Facts, enrolled: bool) -> BmcState {
    let mode = if f.uefi {
        BootMode::Uefi
    } else {
        BootMode::Legacy
    };
    BmcState::new(
        mode,
        SecureBoot {
            enable: f.secure_loader,
            current_boot: false,
            keys_enrolled: !f.secure_loader || enrolled,
        },
    )
}

fn memory_mib(e: Option<&Element>) -> u64 {
    let Some(e) = e else { return 0 };
    let n: u64 = e.text().trim().parse().unwrap_or(0);
    match e.attr("unit").unwrap_or("KiB") {
        "b" | "bytes" => n >> 20,
        "KB" => n * 1000 / (1 << 20),
        "k" | "KiB" => n >> 10,
        "MB" => n * 1_000_000 / (1 << 20),
        "M" | "MiB" => n,
        "GB" => n * 1_000_000_000 / (1 << 20),
        "G" | "GiB" => n << 10,
        _ => n >> 10,
    }
}

pub fn facts(d: &Element) -> Result<Facts, String> {
    let name = d.at("name").map(|e| e.text()).ok_or("no <name>")?;
    let uuid = d.at("uuid").map(|e| e.text()).ok_or("no <uuid>")?;
    let uuid = Uuid::parse_str(uuid.trim()).map_err(|e| format!("bad <uuid>: {e}"))?;
    let os = d.child("os");
    let arch = match os
        .and_then(|o| o.child("type"))
        .and_then(|t| t.attr("arch"))
    {
        Some("ppc64le") | Some("ppc64") => Arch::Ppc64le,
        Some("aarch64") => Arch::Aarch64,
        _ => Arch::X86_64,
    };
    let loader = os.and_then(|o| o.child("loader"));
    let uefi = arch.has_uefi()
        && (os.and_then(|o| o.attr("firmware")) == Some("efi")
            || loader.is_some_and(|l| l.attr("type") == Some("pflash")));
    let nvram_el = os.and_then(|o| o.child("nvram"));
    let devices = d.child("devices");
    let nics = devices
        .into_iter()
        .flat_map(|ds| ds.elements().filter(|e| e.name == "interface"))
        .filter_map(|i| {
            i.child("mac").and_then(|m| m.attr("address")).map(|a| Nic {
                mac: a.to_ascii_lowercase(),
            })
        })
        .collect();
    let disks = devices
        .into_iter()
        .flat_map(|ds| {
            ds.elements()
                .filter(|e| e.name == "disk" && e.attr("device").unwrap_or("disk") == "disk")
        })
        .filter_map(|disk| {
            let dev = disk.child("target")?.attr("dev")?.to_string();
            let format = disk.child("driver").and_then(|d| d.attr("type"));
            let size = disk
                .child("source")
                .and_then(|s| s.attr("file"))
                .and_then(|f| disk_capacity(Path::new(f), format));
            Some(Disk::new(dev, size.unwrap_or(0)))
        })
        .collect();
    Ok(Facts {
        name,
        uuid,
        arch,
        uefi,
        memory_mib: memory_mib(d.child("memory")),
        cpus: d
            .child("vcpu")
            .and_then(|v| v.text().trim().parse().ok())
            .unwrap_or(1),
        nics,
        disks,
        nvram: nvram_el
            .map(|n| n.text().trim().to_string())
            .filter(|p| !p.is_empty()),
        nvram_template: nvram_el
            .and_then(|n| n.attr("template"))
            .map(str::to_string),
        nvram_qcow2: nvram_el.and_then(|n| n.attr("format")) == Some("qcow2"),
        machine: os
            .and_then(|o| o.child("type"))
            .and_then(|t| t.attr("machine"))
            .unwrap_or("pc")
            .to_string(),
        secure_loader: loader.is_some_and(|l| l.attr("secure") == Some("yes")),
    })
}

/// Shoal's state stored in the domain, if any (a damaged one counts as none).
pub fn read_state(d: &Element) -> Option<BmcState> {
    let el = d
        .child("metadata")?
        .elements()
        .find(|e| e.name == STATE_TAG || e.attr("xmlns:shoal") == Some(NS))?;
    serde_json::from_str(&el.text()).ok()
}

/// Stores Shoal's state in `<metadata>`, replacing an older copy.
pub fn write_state(d: &mut Element, s: &BmcState) {
    let json = serde_json::to_string(s).expect("state serialises");
    let md = d.child_or_insert("metadata");
    md.remove_where(|e| e.name == STATE_TAG);
    md.push(
        Element::new(STATE_TAG)
            .with_attr("xmlns:shoal", NS)
            .with_text(&json),
    );
    if let Some(bios) = s.firmware.installed.get(&crate::firmware::Component::Bios) {
        set_bios_smbios(d, bios);
    }
}

/// The BIOS an update installed, as the guest reads it (SMBIOS type 0,
/// `dmidecode -t bios`, `/sys/class/dmi/id/bios_version`): the domain's
/// `<sysinfo type='smbios'><bios>` version and date, which QEMU hands the
/// firmware, from the next start. Other sysinfo the domain has is kept.
pub fn set_bios_smbios(d: &mut Element, bios: &crate::model::firmware::Installed) {
    let smbios = |e: &Element| e.name == "sysinfo" && e.attr("type") == Some("smbios");
    if !d.elements().any(smbios) {
        d.push(Element::new("sysinfo").with_attr("type", "smbios"));
    }
    let Some(sysinfo) = d.elements_mut().find(|e| smbios(e)) else {
        return;
    };
    let b = sysinfo.child_or_insert("bios");
    b.remove_where(|e| matches!(e.attr("name"), Some("version" | "date")));
    b.push(
        Element::new("entry")
            .with_attr("name", "version")
            .with_text(&bios.version),
    );
    // SMBIOS dates are MM/DD/YYYY.
    let date = bios.release_date.as_deref().and_then(|d| {
        let (y, m, day) = (d.get(0..4)?, d.get(5..7)?, d.get(8..10)?);
        Some(format!("{m}/{day}/{y}"))
    });
    if let Some(us) = date {
        b.push(
            Element::new("entry")
                .with_attr("name", "date")
                .with_text(&us),
        );
    }
    let os = d.child_or_insert("os");
    os.remove_where(|e| e.name == "smbios");
    os.push(Element::new("smbios").with_attr("mode", "sysinfo"));
}

/// The class of device a boot target means in the domain XML.
fn class_of(e: &Element) -> Option<BootTarget> {
    match (e.name.as_str(), e.attr("device").unwrap_or("disk")) {
        ("disk", "disk") => Some(BootTarget::Hdd),
        ("disk", "cdrom") => Some(BootTarget::Cd),
        ("disk", "floppy") => Some(BootTarget::Floppy),
        ("interface", _) => Some(BootTarget::Pxe),
        _ => None,
    }
}

/// Rewrites device boot order: devices of `first`'s class lead, then disks,
/// CD-ROMs, floppies and NICs in document order. `<os><boot dev>` entries,
/// which libvirt does not allow beside per-device order, are removed.
pub fn set_boot_order(d: &mut Element, first: Option<BootTarget>) {
    if let Some(os) = d.child_mut("os") {
        os.remove_where(|e| e.name == "boot");
    }
    let Some(devices) = d.child_mut("devices") else {
        return;
    };
    let rank = |t: BootTarget| -> usize {
        let base = [
            BootTarget::Hdd,
            BootTarget::Cd,
            BootTarget::Floppy,
            BootTarget::Pxe,
        ]
        .iter()
        .position(|x| *x == t)
        .unwrap_or(9)
            + 1;
        if Some(t) == first {
            0
        } else {
            base
        }
    };
    let mut order: Vec<(usize, usize)> = devices
        .children
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n {
            Node::Element(e) => class_of(e).map(|c| (rank(c), i)),
            Node::Raw(_) => None,
        })
        .collect();
    order.sort();
    for (n, (_, i)) in order.into_iter().enumerate() {
        if let Node::Element(e) = &mut devices.children[i] {
            e.remove_where(|c| c.name == "boot");
            e.push(Element::new("boot").with_attr("order", &(n + 1).to_string()));
        }
    }
}

/// The device class booted first according to the XML, if any.
pub fn first_boot_device(d: &Element) -> Option<BootTarget> {
    d.child("devices")?
        .elements()
        .filter_map(|e| {
            Some((
                e.child("boot")?.attr("order")?.parse::<u32>().ok()?,
                class_of(e)?,
            ))
        })
        .min_by_key(|(o, _)| *o)
        .map(|(_, c)| c)
}

/// A number of a libvirt `<address>` attribute (`0x1f` or `31`).
fn address_number(e: &Element, k: &str) -> Option<u32> {
    let v = e.attr(k)?;
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// The firmware's path to the domain's first NIC (for an HTTP boot option
/// naming its instance): the PCI device and function of every bridge from
/// the root bus down, then the NIC's, and its MAC. `None` when the XML
/// does not say (no PCI address yet) or the NIC is not under PCI domain 0's
/// root bus (an expander bus is a root of its own).
pub fn nic_path(d: &Element) -> Option<crate::nvram::boot::NicPath> {
    let devices = d.child("devices")?;
    let nic = devices.elements().find(|e| e.name == "interface")?;
    let mac: Vec<u8> = nic
        .child("mac")?
        .attr("address")?
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).ok())
        .collect::<Option<_>>()?;
    let pci_address = |e: &Element| -> Option<(u32, u8, u8)> {
        let a = e
            .child("address")
            .filter(|a| a.attr("type") == Some("pci"))?;
        if address_number(a, "domain").unwrap_or(0) != 0 {
            return None;
        }
        Some((
            address_number(a, "bus")?,
            u8::try_from(address_number(a, "slot")?).ok()?,
            u8::try_from(address_number(a, "function").unwrap_or(0)).ok()?,
        ))
    };
    let mut pci = Vec::new();
    let (mut bus, slot, function) = pci_address(nic)?;
    pci.push((slot, function));
    // Each bus is a controller whose index is its number, itself at an
    // address on its parent bus; bus 0 is the root.
    while bus != 0 {
        if pci.len() > 32 {
            return None;
        }
        let ctl = devices.elements().find(|e| {
            e.name == "controller"
                && e.attr("type") == Some("pci")
                && e.attr("index").and_then(|i| i.parse::<u32>().ok()) == Some(bus)
        })?;
        if matches!(
            ctl.attr("model"),
            Some("pci-root" | "pcie-root" | "pci-expander-bus" | "pcie-expander-bus")
        ) {
            return None;
        }
        let (parent, slot, function) = pci_address(ctl)?;
        pci.push((slot, function));
        bus = parent;
    }
    pci.reverse();
    Some(crate::nvram::boot::NicPath {
        pci,
        mac: mac.try_into().ok()?,
    })
}

/// The size a disk file gives its machine: a qcow2 image's virtual size
/// (its header's, big-endian at byte 24; the file holds only what was
/// written), else the file's length (a raw image, sparse or not).
fn disk_capacity(path: &Path, format: Option<&str>) -> Option<u64> {
    if format == Some("qcow2") {
        use std::io::Read;
        let mut header = [0u8; 32];
        std::fs::File::open(path)
            .ok()?
            .read_exact(&mut header)
            .ok()?;
        if &header[..4] != b"QFI\xfb" {
            return None;
        }
        return Some(u64::from_be_bytes(header[24..32].try_into().ok()?));
    }
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// The kernel command-line word by which a petitboot machine learns the
/// BMC's boot device override for one start (as OpenPOWER's petitboot reads
/// the IPMI boot flags its BMC sets): `shoal.bootdev=network|disk|cdrom`.
pub const BOOTDEV: &str = "shoal.bootdev=";

/// Whether the domain's firmware is a petitboot image booted directly (an
/// OpenPOWER machine: ppc64le, `<os><kernel>`). Its boot override goes to
/// petitboot on the command line, not into device boot order alone.
pub fn petitboot_firmware(d: &Element) -> bool {
    let arch = d.at("os/type").and_then(|t| t.attr("arch"));
    matches!(arch, Some("ppc64le" | "ppc64")) && d.at("os/kernel").is_some()
}

/// Sets (or, with `None`, removes) the `shoal.bootdev=` word of the
/// domain's `<os><cmdline>`, keeping every other word.
pub fn set_petitboot_bootdev(d: &mut Element, target: Option<BootTarget>) {
    let Some(os) = d.child_mut("os") else {
        return;
    };
    let old = os.child("cmdline").map(Element::text).unwrap_or_default();
    let mut words: Vec<String> = old
        .split_whitespace()
        .filter(|w| !w.starts_with(BOOTDEV))
        .map(str::to_string)
        .collect();
    let dev = match target {
        Some(BootTarget::Pxe) => Some("network"),
        Some(BootTarget::Hdd) => Some("disk"),
        Some(BootTarget::Cd) => Some("cdrom"),
        _ => None,
    };
    if let Some(dev) = dev {
        words.push(format!("{BOOTDEV}{dev}"));
    }
    os.remove_where(|e| e.name == "cmdline");
    if !words.is_empty() {
        os.push(Element::new("cmdline").with_text(&words.join(" ")));
    }
}

#[cfg(test)]
mod tests {
    use super::super::xml::parse;
    use super::*;

    #[test]
    fn a_qcow2_disk_is_as_large_as_its_header_says() {
        let dir = tempfile::tempdir().unwrap();
        let qcow2 = dir.path().join("d.qcow2");
        // A qcow2 v3 header's start: magic, version, backing file offset
        // and size, then the virtual size: 5 GiB in a file of 32 bytes.
        let mut h = b"QFI\xfb\0\0\0\x03".to_vec();
        h.extend([0u8; 16]);
        h.extend((5u64 << 30).to_be_bytes());
        std::fs::write(&qcow2, &h).unwrap();
        assert_eq!(disk_capacity(&qcow2, Some("qcow2")), Some(5 << 30));
        // Read as raw, it is its length; a qcow2 that is not one is unknown.
        assert_eq!(disk_capacity(&qcow2, Some("raw")), Some(32));
        assert_eq!(disk_capacity(&qcow2, None), Some(32));
        let raw = dir.path().join("d.raw");
        std::fs::write(&raw, vec![0u8; 4096]).unwrap();
        assert_eq!(disk_capacity(&raw, Some("qcow2")), None);
        assert_eq!(disk_capacity(&dir.path().join("gone"), None), None);
    }

    const XML: &str = r#"<domain type="qemu">
  <name>vm1</name><uuid>6a1f0c2e-8b4d-4e1a-9c3b-2f5d7e9a1b3c</uuid>
  <memory unit="KiB">1048576</memory><vcpu>2</vcpu>
  <os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><nvram template="/usr/share/OVMF/OVMF_VARS_4M.fd">/var/lib/libvirt/qemu/nvram/vm1_VARS.fd</nvram><boot dev="hd"/></os>
  <devices>
    <disk type="file" device="disk"><target dev="vda" bus="virtio"/></disk>
    <disk type="file" device="cdrom"><target dev="sda" bus="sata"/></disk>
    <interface type="network"><mac address="52:54:00:AB:CD:01"/><source network="n"/></interface>
  </devices>
</domain>"#;

    #[test]
    fn facts_are_read() {
        let f = facts(&parse(XML).unwrap()).unwrap();
        assert_eq!(
            (f.name.as_str(), f.memory_mib, f.cpus, f.uefi, f.arch),
            ("vm1", 1024, 2, true, Arch::X86_64)
        );
        assert_eq!(f.nics[0].mac, "52:54:00:ab:cd:01");
        assert_eq!(f.disks[0].name, "vda");
        assert_eq!(
            f.nvram.as_deref(),
            Some("/var/lib/libvirt/qemu/nvram/vm1_VARS.fd")
        );
        assert_eq!(
            f.nvram_template.as_deref(),
            Some("/usr/share/OVMF/OVMF_VARS_4M.fd")
        );
    }

    #[test]
    fn the_nic_path_follows_its_bridges_to_the_root() {
        // As libvirt 11 lays out a lab's q35 domain (root ports at 00:01.x;
        // OVMF names that NIC PciRoot(0x0)/Pci(0x1,0x0)/Pci(0x0,0x0)), with
        // the first NIC moved behind the second port.
        let q35 = r#"<domain><devices>
  <controller type="pci" index="0" model="pcie-root"/>
  <controller type="pci" index="1" model="pcie-root-port"><target chassis="1" port="0x10"/><address type="pci" domain="0x0000" bus="0x00" slot="0x01" function="0x0" multifunction="on"/></controller>
  <controller type="pci" index="2" model="pcie-root-port"><target chassis="2" port="0x11"/><address type="pci" domain="0x0000" bus="0x00" slot="0x01" function="0x1"/></controller>
  <interface type="network"><mac address="52:54:00:5E:12:01"/><source network="n"/><model type="virtio"/><address type="pci" domain="0x0000" bus="0x02" slot="0x00" function="0x0"/></interface>
  <interface type="network"><mac address="52:54:00:5e:12:02"/><address type="pci" domain="0x0000" bus="0x01" slot="0x00" function="0x0"/></interface>
</devices></domain>"#;
        let p = nic_path(&parse(q35).unwrap()).unwrap();
        assert_eq!(p.pci, vec![(1, 1), (0, 0)]);
        assert_eq!(p.mac, [0x52, 0x54, 0x00, 0x5e, 0x12, 0x01]);
        // i440fx: on the root bus itself; decimal numbers are numbers too.
        let pc = r#"<domain><devices><interface type="network"><mac address="52:54:00:00:00:07"/><address type="pci" domain="0" bus="0" slot="3" function="0"/></interface></devices></domain>"#;
        assert_eq!(nic_path(&parse(pc).unwrap()).unwrap().pci, vec![(3, 0)]);
        // No address yet, an expander bus, a missing controller: unknown.
        for xml in [
            XML.to_string(),
            q35.replace(
                r#"model="pcie-root-port"><target chassis="2""#,
                r#"model="pcie-expander-bus"><target chassis="2""#,
            ),
            q35.replace(r#"index="2""#, r#"index="5""#),
        ] {
            assert_eq!(nic_path(&parse(&xml).unwrap()), None, "{xml}");
        }
    }

    #[test]
    fn state_survives_in_metadata() {
        let mut d = parse(XML).unwrap();
        assert_eq!(read_state(&d), None);
        let f = facts(&d).unwrap();
        let mut s = fresh_state(&f, false);
        s.boot.http_boot_uri = Some("http://h/x?a=1&b=<2>".into());
        write_state(&mut d, &s);
        write_state(&mut d, &s);
        let again = parse(&d.to_xml()).unwrap();
        assert_eq!(read_state(&again), Some(s));
        assert_eq!(again.child("metadata").unwrap().elements().count(), 1);
    }

    #[test]
    fn petitboot_learns_the_override_on_its_command_line() {
        let xml = r#"<domain><os><type arch="ppc64le" machine="pseries">hvm</type><kernel>/k</kernel><initrd>/i</initrd><cmdline>console=hvc0 quiet</cmdline></os><devices/></domain>"#;
        let mut d = parse(xml).unwrap();
        assert!(petitboot_firmware(&d));
        assert!(!petitboot_firmware(&parse(XML).unwrap()));
        set_petitboot_bootdev(&mut d, Some(BootTarget::Pxe));
        assert_eq!(
            d.at("os/cmdline").unwrap().text(),
            "console=hvc0 quiet shoal.bootdev=network"
        );
        set_petitboot_bootdev(&mut d, Some(BootTarget::Hdd));
        assert_eq!(
            d.at("os/cmdline").unwrap().text(),
            "console=hvc0 quiet shoal.bootdev=disk"
        );
        set_petitboot_bootdev(&mut d, None);
        assert_eq!(d.at("os/cmdline").unwrap().text(), "console=hvc0 quiet");
        let mut bare = parse(
            r#"<domain><os><type arch="ppc64le">hvm</type><kernel>/k</kernel></os></domain>"#,
        )
        .unwrap();
        set_petitboot_bootdev(&mut bare, Some(BootTarget::Cd));
        assert_eq!(bare.at("os/cmdline").unwrap().text(), "shoal.bootdev=cdrom");
        set_petitboot_bootdev(&mut bare, None);
        assert!(bare.at("os/cmdline").is_none());
    }

    #[test]
    fn boot_order_puts_the_target_first() {
        let mut d = parse(XML).unwrap();
        set_boot_order(&mut d, Some(BootTarget::Pxe));
        assert_eq!(first_boot_device(&d), Some(BootTarget::Pxe));
        assert!(d.at("os/boot").is_none());
        set_boot_order(&mut d, Some(BootTarget::Cd));
        assert_eq!(first_boot_device(&d), Some(BootTarget::Cd));
        set_boot_order(&mut d, None);
        assert_eq!(first_boot_device(&d), Some(BootTarget::Hdd));
        let out = d.to_xml();
        assert_eq!(out.matches("<boot order=").count(), 3, "{out}");
    }
}
