//! The in-band IPMI device of a domain: QEMU's `ipmi-bmc-extern`
//! connected to the BMC's socket, with the host interface the machine's
//! kind has (KCS on x86_64, BT on powernv: with `-nodefaults`, which
//! libvirt always passes, powernv has no BT interface of its own, and
//! QEMU 10.0 segfaults when an external BMC connects without one).
//! libvirt has no element for any of this: the arguments go through the
//! domain's QEMU command-line passthrough (`<qemu:commandline>`), and
//! only Shoal's own arguments are ever added or removed there.

use std::path::Path;

use super::xml::{Element, Node};

const NS_ATTR: &str = "xmlns:qemu";
const NS: &str = "http://libvirt.org/schemas/domain/qemu/1.0";
const CMDLINE: &str = "qemu:commandline";
const ARG: &str = "qemu:arg";
const CHARDEV_ID: &str = "shoal-ipmi";
const BMC_ID: &str = "shoal-bmc";

/// The host interface device for this domain, or `None` where the
/// machine has none (pseries, other architectures).
fn interface(d: &Element) -> Option<String> {
    let os = d.at("os/type")?;
    let machine = os.attr("machine").unwrap_or_default();
    match os.attr("arch")? {
        "x86_64" | "i686" => Some(format!("isa-ipmi-kcs,bmc={BMC_ID}")),
        "ppc64" | "ppc64le" if machine.starts_with("powernv") => {
            Some(format!("isa-ipmi-bt,bmc={BMC_ID},irq=10"))
        }
        _ => None,
    }
}

/// Whether a `qemu:arg` value is one of Shoal's.
fn ours(value: &str) -> bool {
    value
        .split(',')
        .any(|kv| matches!(kv, "id=shoal-ipmi" | "id=shoal-bmc" | "bmc=shoal-bmc"))
}

/// Gives the domain the in-band device connected to `socket`, or with
/// `None` takes Shoal's away; the domain's own passthrough arguments stay.
/// `qemu` is the hypervisor's version as libvirt gives it (major *
/// 1,000,000 + minor * 1,000 + micro): QEMU 9.2 renamed the chardev's
/// `reconnect` (seconds) to `reconnect-ms`. Returns whether the device
/// is there now.
pub fn set(d: &mut Element, socket: Option<&Path>, qemu: u32) -> bool {
    remove(d);
    let (Some(socket), Some(iface)) = (socket, interface(d)) else {
        return false;
    };
    // QEMU's option syntax doubles a comma inside a value.
    let path = socket.display().to_string().replace(',', ",,");
    let args = [
        "-chardev".to_string(),
        match qemu >= 9_002_000 {
            true => format!("socket,id={CHARDEV_ID},path={path},reconnect-ms=1000"),
            false => format!("socket,id={CHARDEV_ID},path={path},reconnect=1"),
        },
        "-device".into(),
        format!("ipmi-bmc-extern,id={BMC_ID},chardev={CHARDEV_ID}"),
        "-device".into(),
        iface,
    ];
    d.set_attr(NS_ATTR, NS);
    let cmdline = d.child_or_insert(CMDLINE);
    for a in args {
        cmdline.push(Element::new(ARG).with_attr("value", &a));
    }
    true
}

/// Takes Shoal's arguments (each with the flag before it) out of the
/// passthrough, and the passthrough away when nothing else is in it.
fn remove(d: &mut Element) {
    let Some(cmdline) = d.child_mut(CMDLINE) else {
        return;
    };
    let args: Vec<Node> = std::mem::take(&mut cmdline.children);
    let mut kept: Vec<Node> = Vec::with_capacity(args.len());
    for n in args {
        let is_ours =
            matches!(&n, Node::Element(e) if e.name == ARG && e.attr("value").is_some_and(ours));
        if is_ours {
            // The flag (-chardev, -device) that introduced it goes too.
            let flag = kept.iter().rposition(|k| matches!(k, Node::Element(_)));
            if let Some(i) = flag {
                if matches!(&kept[i], Node::Element(e) if matches!(e.attr("value"), Some("-chardev" | "-device")))
                {
                    kept.truncate(i);
                }
            }
            continue;
        }
        kept.push(n);
    }
    cmdline.children = kept;
    if cmdline.elements().next().is_none() {
        d.remove_where(|e| e.name == CMDLINE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::libvirt::xml;

    fn domain(arch: &str, machine: &str, extra: &str) -> Element {
        xml::parse(&format!(
            r#"<domain type="qemu" {extra}><name>d</name><os><type arch="{arch}" machine="{machine}">hvm</type></os><devices/></domain>"#
        ))
        .unwrap()
    }

    fn args(d: &Element) -> Vec<String> {
        d.child(CMDLINE)
            .map(|c| {
                c.elements()
                    .filter_map(|e| e.attr("value").map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn x86_gets_kcs_powernv_bt_and_pseries_nothing() {
        let sock = Path::new("/run/shoal,ipmi/u.sock");
        let mut d = domain("x86_64", "q35", "");
        assert!(set(&mut d, Some(sock), 10_000_002));
        assert_eq!(d.attr(NS_ATTR), Some(NS));
        assert_eq!(
            args(&d),
            [
                "-chardev",
                "socket,id=shoal-ipmi,path=/run/shoal,,ipmi/u.sock,reconnect-ms=1000",
                "-device",
                "ipmi-bmc-extern,id=shoal-bmc,chardev=shoal-ipmi",
                "-device",
                "isa-ipmi-kcs,bmc=shoal-bmc"
            ]
        );
        let mut p = domain("ppc64le", "powernv9", "");
        assert!(set(&mut p, Some(sock), 8_002_002));
        assert_eq!(
            args(&p)[1],
            "socket,id=shoal-ipmi,path=/run/shoal,,ipmi/u.sock,reconnect=1"
        );
        assert_eq!(args(&p)[5], "isa-ipmi-bt,bmc=shoal-bmc,irq=10");
        let mut s = domain("ppc64le", "pseries", "");
        assert!(!set(&mut s, Some(sock), 10_000_002));
        assert!(s.child(CMDLINE).is_none());
    }

    #[test]
    fn setting_twice_or_removing_keeps_the_domains_own_arguments() {
        let own = r#"xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0""#;
        let mut d = domain("x86_64", "q35", own);
        let mut own_args = Element::new(CMDLINE);
        own_args.push(Element::new(ARG).with_attr("value", "-device"));
        own_args.push(Element::new(ARG).with_attr("value", "virtio-rng-pci"));
        d.push(own_args);
        let sock = Path::new("/s/a.sock");
        set(&mut d, Some(sock), 10_000_002);
        set(&mut d, Some(sock), 10_000_002);
        let a = args(&d);
        assert_eq!(a.len(), 8, "{a:?}");
        assert_eq!(&a[..2], ["-device", "virtio-rng-pci"]);
        assert!(!set(&mut d, None, 0));
        assert_eq!(args(&d), ["-device", "virtio-rng-pci"]);
        // Without any argument of the domain's own, nothing is left.
        let mut e = domain("x86_64", "q35", "");
        set(&mut e, Some(sock), 10_000_002);
        set(&mut e, None, 0);
        assert!(e.child(CMDLINE).is_none());
        let round = xml::parse(&d.to_xml()).unwrap();
        assert_eq!(args(&round), ["-device", "virtio-rng-pci"]);
    }
}
