//! UEFI boot variables: `Boot####` load options, `BootOrder`, `BootNext`,
//! and the URI device path that makes OVMF's HttpBootDxe fetch a URL.
//!
//! An `EFI_LOAD_OPTION` is: u32 attributes (1 = active), u16 length of the
//! device path list, the UCS-2 NUL-terminated description, the device path
//! list, then optional data. A URI device path is one messaging node (type
//! 3, subtype 0x18, u16 length = 4 + URI bytes, the URI in ASCII) and the
//! end node `7f ff 04 00`. An empty URI node asks the firmware to take the
//! URL from DHCP (the HTTPClient offer).
//!
//! A URI node alone is a short-form device path: edk2's boot manager expands
//! it over every HTTP boot instance (each NIC's IPv4 one first, then its IPv6
//! one) and boots the first that loads. To boot one NIC over one IP version,
//! the option names that instance's full path instead, as the firmware's own
//! entries do: `PciRoot(0)/Pci(..)/../MAC(..)/IPv4()` or `IPv6()`, then the
//! URI node. The boot manager matches it against HttpBootDxe's instances
//! node for node, the IP and URI nodes by kind only (BmMatchHttpBootDevicePath
//! in UefiBootManagerLib), and HttpBootDxe then runs that instance with the
//! URI from the option (DHCP when it is empty).

use uuid::Uuid;

use super::{ucs2_encode, NvramError, Variable, Varstore};

/// `EFI_GLOBAL_VARIABLE`.
pub const EFI_GLOBAL_VARIABLE: Uuid = Uuid::from_u128(0x8be4df61_93ca_11d2_aa0d_00e098032b8c);
/// NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS.
pub const NV_BS_RT: u32 = 0x7;
pub const LOAD_OPTION_ACTIVE: u32 = 0x1;
/// How Shoal's own load option is recognised (and reused) in a varstore.
pub const SHOAL_DESCRIPTION: &str = "Shoal UEFI HTTP boot";

const END_NODE: [u8; 4] = [0x7f, 0xff, 0x04, 0x00];

/// A decoded load option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOption {
    pub attributes: u32,
    pub description: String,
    pub device_path: Vec<u8>,
    pub optional_data: Vec<u8>,
}

/// The device path of a single URI node (`uri` may be empty).
pub fn uri_device_path(uri: &str) -> Vec<u8> {
    let mut p = vec![0x03, 0x18];
    p.extend(((4 + uri.len()) as u16).to_le_bytes());
    p.extend(uri.as_bytes());
    p.extend(END_NODE);
    p
}

/// An IP version of the firmware's HTTP boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    V4,
    V6,
}

/// Where a NIC sits, as the firmware's device path names it: the PCI
/// device and function of each hop from the root bridge (`PciRoot(0x0)`)
/// down to the NIC, and its MAC address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicPath {
    pub pci: Vec<(u8, u8)>,
    pub mac: [u8; 6],
}

/// `EISA_PNP_ID(0x0A03)`: the PCI root bridge, as OVMF names it.
const PCI_ROOT_HID: u32 = 0x0a03_41d0;

/// The full device path of the HTTP boot instance of `nic` for `ip`, with
/// `uri` (empty: the URL comes from DHCP). The IP node is the one HttpBootDxe
/// puts on its own instance (all zero; IPv6: prefix length 64), as the IP
/// and URI nodes are matched by kind only.
pub fn nic_http_device_path(nic: &NicPath, ip: IpVersion, uri: &str) -> Vec<u8> {
    let mut p = vec![0x02, 0x01, 12, 0];
    p.extend(PCI_ROOT_HID.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    for &(device, function) in &nic.pci {
        p.extend([0x01, 0x01, 6, 0, function, device]);
    }
    // MAC(): 32 address bytes, then the interface type (1: Ethernet).
    p.extend([0x03, 0x0b, 37, 0]);
    p.extend(nic.mac);
    p.extend([0u8; 26]);
    p.push(1);
    match ip {
        // IPv4(): local, remote, ports, protocol, static flag, gateway, mask.
        IpVersion::V4 => {
            p.extend([0x03, 0x0c, 27, 0]);
            p.extend([0u8; 23]);
        }
        // IPv6(): local, remote, ports, protocol, origin, prefix, gateway.
        IpVersion::V6 => {
            p.extend([0x03, 0x0d, 60, 0]);
            p.extend([0u8; 16 + 16 + 2 + 2 + 2 + 1]);
            p.push(64);
            p.extend([0u8; 16]);
        }
    }
    p.extend(uri_device_path(uri));
    p
}

/// The nodes of a device path, `(type, subtype, body)`, up to and without
/// the end node; `None` when it is malformed or not ended.
fn nodes(mut p: &[u8]) -> Option<Vec<(u8, u8, &[u8])>> {
    let mut out = Vec::new();
    loop {
        let head = p.get(..4)?;
        let len = usize::from(u16::from_le_bytes([head[2], head[3]]));
        if len < 4 {
            return None;
        }
        let node = p.get(..len)?;
        if node == END_NODE {
            return (len == p.len()).then_some(out);
        }
        out.push((head[0], head[1], &node[4..]));
        p = &p[len..];
    }
}

/// The URI of a device path that ends in a URI node (a short-form URI
/// path, or an HTTP boot instance's full path), if it does.
pub fn device_path_uri(p: &[u8]) -> Option<String> {
    let nodes = nodes(p)?;
    match nodes.last()? {
        (0x03, 0x18, uri) => String::from_utf8(uri.to_vec()).ok(),
        _ => None,
    }
}

/// The IP version a device path's HTTP boot instance is restricted to:
/// `None` for a short-form URI path (every instance) or no HTTP path.
pub fn device_path_ip(p: &[u8]) -> Option<IpVersion> {
    nodes(p)?.iter().find_map(|n| match (n.0, n.1) {
        (0x03, 0x0c) => Some(IpVersion::V4),
        (0x03, 0x0d) => Some(IpVersion::V6),
        _ => None,
    })
}

impl LoadOption {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(self.attributes.to_le_bytes());
        b.extend((self.device_path.len() as u16).to_le_bytes());
        b.extend(ucs2_encode(&self.description));
        b.extend(&self.device_path);
        b.extend(&self.optional_data);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < 8 {
            return None;
        }
        let attributes = u32::from_le_bytes(b[..4].try_into().ok()?);
        let path_len = u16::from_le_bytes([b[4], b[5]]) as usize;
        let mut o = 6;
        let mut units = Vec::new();
        loop {
            let u = u16::from_le_bytes([*b.get(o)?, *b.get(o.checked_add(1)?)?]);
            o = o.checked_add(2)?;
            if u == 0 {
                break;
            }
            units.push(u);
        }
        let path_end = o.checked_add(path_len)?;
        Some(LoadOption {
            attributes,
            description: String::from_utf16(&units).ok()?,
            device_path: b.get(o..path_end)?.to_vec(),
            optional_data: b.get(path_end..)?.to_vec(),
        })
    }
}

fn global(name: &str, data: Vec<u8>) -> Variable {
    Variable {
        vendor: EFI_GLOBAL_VARIABLE,
        name: name.into(),
        attributes: NV_BS_RT,
        data,
    }
}

fn boot_name(n: u16) -> String {
    format!("Boot{n:04X}")
}

/// `BootOrder` as a list of option numbers.
pub fn boot_order(store: &Varstore) -> Vec<u16> {
    store
        .get(EFI_GLOBAL_VARIABLE, "BootOrder")
        .map(|v| {
            v.data
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        })
        .unwrap_or_default()
}

pub fn boot_next(store: &Varstore) -> Option<u16> {
    store
        .get(EFI_GLOBAL_VARIABLE, "BootNext")
        .filter(|v| v.data.len() == 2)
        .map(|v| u16::from_le_bytes([v.data[0], v.data[1]]))
}

/// All `Boot####` options, by number.
pub fn load_options(store: &Varstore) -> Vec<(u16, LoadOption)> {
    store
        .variables()
        .filter(|v| {
            v.vendor == EFI_GLOBAL_VARIABLE && v.name.len() == 8 && v.name.starts_with("Boot")
        })
        .filter_map(|v| {
            Some((
                u16::from_str_radix(&v.name[4..], 16).ok()?,
                LoadOption::decode(&v.data)?,
            ))
        })
        .collect()
}

/// The URI of load option `n`, when it is a single URI node.
pub fn option_uri(store: &Varstore, n: u16) -> Option<String> {
    let (_, opt) = load_options(store).into_iter().find(|(m, _)| *m == n)?;
    device_path_uri(&opt.device_path)
}

/// Shoal's option number: its existing entry, else the lowest free number.
fn shoal_slot(store: &Varstore) -> u16 {
    let opts = load_options(store);
    if let Some((n, _)) = opts
        .iter()
        .find(|(_, o)| o.description == SHOAL_DESCRIPTION)
    {
        return *n;
    }
    (0..=0xffff)
        .find(|n| !opts.iter().any(|(m, _)| m == n))
        .unwrap_or(0xffff)
}

/// How the HTTP boot option is made the next boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// `BootNext` only: the firmware clears it when it boots it.
    Once,
    /// First in `BootOrder`, for every boot.
    Continuous,
}

/// Writes Shoal's URI load option (empty `uri`: the URL comes from DHCP)
/// and makes it the next boot. Returns the option number.
pub fn set_http_boot(store: &mut Varstore, uri: &str, how: Persistence) -> Result<u16, NvramError> {
    set_http_boot_path(store, uri_device_path(uri), how)
}

/// [`set_http_boot`] with the option's device path given: a short-form URI
/// path ([`uri_device_path`]) or one instance's ([`nic_http_device_path`]).
pub fn set_http_boot_path(
    store: &mut Varstore,
    device_path: Vec<u8>,
    how: Persistence,
) -> Result<u16, NvramError> {
    let n = shoal_slot(store);
    let opt = LoadOption {
        attributes: LOAD_OPTION_ACTIVE,
        description: SHOAL_DESCRIPTION.into(),
        device_path,
        optional_data: Vec::new(),
    };
    store.set(global(&boot_name(n), opt.encode()))?;
    let mut order: Vec<u16> = boot_order(store).into_iter().filter(|&m| m != n).collect();
    match how {
        Persistence::Once => {
            store.set(global("BootNext", n.to_le_bytes().to_vec()))?;
        }
        Persistence::Continuous => {
            order.insert(0, n);
            if boot_next(store) == Some(n) {
                store.remove(EFI_GLOBAL_VARIABLE, "BootNext");
            }
        }
    }
    store.set(global(
        "BootOrder",
        order.iter().flat_map(|m| m.to_le_bytes()).collect(),
    ))?;
    Ok(n)
}

/// Removes Shoal's option and any `BootNext`/`BootOrder` reference to it.
pub fn clear_http_boot(store: &mut Varstore) -> Result<(), NvramError> {
    let Some((n, _)) = load_options(store)
        .into_iter()
        .find(|(_, o)| o.description == SHOAL_DESCRIPTION)
    else {
        return Ok(());
    };
    store.remove(EFI_GLOBAL_VARIABLE, &boot_name(n));
    if boot_next(store) == Some(n) {
        store.remove(EFI_GLOBAL_VARIABLE, "BootNext");
    }
    let order = boot_order(store);
    if order.contains(&n) {
        let kept: Vec<u8> = order
            .iter()
            .filter(|&&m| m != n)
            .flat_map(|m| m.to_le_bytes())
            .collect();
        store.set(global("BootOrder", kept))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvram::tests::blank_store;

    #[test]
    fn uri_device_path_round_trips() {
        let p = uri_device_path("http://192.0.2.1/boot.iso");
        assert_eq!(&p[..4], &[3, 0x18, 29, 0]);
        assert_eq!(
            device_path_uri(&p).as_deref(),
            Some("http://192.0.2.1/boot.iso")
        );
        assert_eq!(uri_device_path(""), vec![3, 0x18, 4, 0, 0x7f, 0xff, 4, 0]);
        assert_eq!(device_path_uri(&uri_device_path("")).as_deref(), Some(""));
    }

    /// OVMF's own "UEFI HTTPv4/HTTPv6 (MAC:5254005E1001)" entries, as Debian's
    /// OVMF 2022.11 wrote them into a lab domain's varstore (q35, the virtio
    /// NIC behind the root port at 00:01.0): PciRoot(0x0)/Pci(0x1,0x0)/
    /// Pci(0x0,0x0)/MAC(5254005E1001,0x1)/IPv4(..) or IPv6(..)/Uri().
    const OVMF_HTTPV4: &str = "02010c00d041030a00000000010106000001010106000000030b25005254005e\
        1001000000000000000000000000000000000000000000000000000001030c1b\
        000000000000000000000000000000000000000000000000031804007fff0400";
    const OVMF_HTTPV6: &str = "02010c00d041030a00000000010106000001010106000000030b25005254005e\
        1001000000000000000000000000000000000000000000000000000001030d3c\
        0000000000000000000000000000000000000000000000000000000000000000\
        00000000000000004000000000000000000000000000000000031804007fff04\
        00";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn nic_paths_are_the_firmware_s_own_instances() {
        let nic = NicPath {
            pci: vec![(1, 0), (0, 0)],
            mac: [0x52, 0x54, 0x00, 0x5e, 0x10, 0x01],
        };
        let p = nic_http_device_path(&nic, IpVersion::V6, "");
        let want = unhex(OVMF_HTTPV6);
        assert_eq!(p, want);
        assert_eq!(device_path_uri(&p).as_deref(), Some(""));
        assert_eq!(device_path_ip(&p), Some(IpVersion::V6));

        assert_eq!(
            nic_http_device_path(&nic, IpVersion::V4, ""),
            unhex(OVMF_HTTPV4)
        );
        let p4 = nic_http_device_path(&nic, IpVersion::V4, "http://h/a.efi");
        assert_eq!(device_path_uri(&p4).as_deref(), Some("http://h/a.efi"));
        assert_eq!(device_path_ip(&p4), Some(IpVersion::V4));
        assert_eq!(device_path_ip(&uri_device_path("")), None);
    }

    #[test]
    fn malformed_paths_have_no_uri() {
        let good = nic_http_device_path(
            &NicPath {
                pci: vec![(3, 0)],
                mac: [2; 6],
            },
            IpVersion::V4,
            "http://h/x",
        );
        for cut in 0..good.len() {
            assert_eq!(device_path_uri(&good[..cut]), None, "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(device_path_uri(&trailing), None);
        // A node claiming less than its own header stops the walk.
        assert_eq!(device_path_uri(&[3, 0x18, 2, 0, 0x7f, 0xff, 4, 0]), None);
        // A path whose last node is not a URI is no HTTP boot path.
        assert_eq!(device_path_uri(&[1, 1, 6, 0, 0, 2, 0x7f, 0xff, 4, 0]), None);
    }

    #[test]
    fn once_uses_boot_next_and_continuous_leads_boot_order() {
        let mut s = Varstore::parse(blank_store(8192)).unwrap();
        s.set(global(
            "Boot0000",
            LoadOption {
                attributes: 1,
                description: "disk".into(),
                device_path: END_NODE.to_vec(),
                optional_data: vec![],
            }
            .encode(),
        ))
        .unwrap();
        s.set(global("BootOrder", vec![0, 0])).unwrap();
        let n = set_http_boot(&mut s, "http://h/a.efi", Persistence::Once).unwrap();
        assert_eq!(n, 1);
        assert_eq!(boot_next(&s), Some(1));
        assert_eq!(boot_order(&s), vec![0]);
        let (_, opt) = load_options(&s).into_iter().find(|(m, _)| *m == 1).unwrap();
        assert_eq!(
            device_path_uri(&opt.device_path).as_deref(),
            Some("http://h/a.efi")
        );

        // The same slot is reused; Continuous moves it first and drops BootNext.
        assert_eq!(
            set_http_boot(&mut s, "", Persistence::Continuous).unwrap(),
            1
        );
        assert_eq!(boot_order(&s), vec![1, 0]);
        assert_eq!(boot_next(&s), None);

        clear_http_boot(&mut s).unwrap();
        assert_eq!(boot_order(&s), vec![0]);
        assert!(load_options(&s)
            .iter()
            .all(|(_, o)| o.description != SHOAL_DESCRIPTION));
        let reparsed = Varstore::parse(s.into_bytes()).unwrap();
        assert_eq!(boot_order(&reparsed), vec![0]);
    }
}
