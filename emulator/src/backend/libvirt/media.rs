//! Virtual media for libvirt domains: the image is downloaded to the cache
//! (`backend::download`: size limit, timeout, address policy), checked,
//! then attached as the domain's CD-ROM. Nothing about the domain changes
//! until the download has succeeded.

use std::path::Path;

use super::xml::Element;
use crate::model::Arch;

pub use crate::backend::download::{cache_path, fetch, MediaOptions};

fn is_cdrom(e: &Element) -> bool {
    e.name == "disk" && e.attr("device") == Some("cdrom")
}

/// Points the domain's CD-ROM at `path` (or empties it), adding a drive
/// when the domain has none. Returns the disk element for a live update.
pub fn set_cdrom(d: &mut Element, arch: Arch, path: Option<&Path>) -> Element {
    let devices = d.child_or_insert("devices");
    if !devices.elements().any(is_cdrom) {
        let used: Vec<String> = devices
            .elements()
            .filter_map(|e| {
                e.child("target")
                    .and_then(|t| t.attr("dev"))
                    .map(str::to_string)
            })
            .collect();
        let dev = ('a'..='z')
            .map(|c| format!("sd{c}"))
            .find(|n| !used.contains(n))
            .unwrap_or_else(|| "sdz".into());
        let bus = if arch == Arch::X86_64 { "sata" } else { "scsi" };
        let mut disk = Element::new("disk")
            .with_attr("type", "file")
            .with_attr("device", "cdrom");
        disk.push(
            Element::new("driver")
                .with_attr("name", "qemu")
                .with_attr("type", "raw"),
        );
        disk.push(
            Element::new("target")
                .with_attr("dev", &dev)
                .with_attr("bus", bus),
        );
        disk.push(Element::new("readonly"));
        devices.push(disk);
    }
    let disk = devices
        .elements_mut()
        .find(|e| is_cdrom(e))
        .expect("a CD-ROM exists");
    disk.set_attr("type", "file");
    disk.remove_where(|c| c.name == "source");
    if let Some(p) = path {
        disk.children.insert(
            0,
            super::xml::Node::Element(
                Element::new("source").with_attr("file", &p.display().to_string()),
            ),
        );
    }
    disk.clone()
}

/// The live CD-ROM element of a running domain, with its source set.
pub fn live_cdrom(live: &mut Element, path: Option<&Path>) -> Option<Element> {
    let disk = live
        .child_mut("devices")?
        .elements_mut()
        .find(|e| is_cdrom(e))?;
    disk.remove_where(|c| c.name == "source");
    if let Some(p) = path {
        disk.children.insert(
            0,
            super::xml::Node::Element(
                Element::new("source").with_attr("file", &p.display().to_string()),
            ),
        );
    }
    Some(disk.clone())
}

#[cfg(test)]
mod tests {
    use super::super::xml::parse;
    use super::*;

    #[test]
    fn a_cdrom_is_added_once_and_emptied_on_eject() {
        let mut d = parse(r#"<domain><devices><disk device="disk"><target dev="sda" bus="sata"/></disk></devices></domain>"#).unwrap();
        set_cdrom(&mut d, Arch::X86_64, Some(Path::new("/c/a.img")));
        let out = d.to_xml();
        assert!(out.contains(r#"<target dev="sdb" bus="sata"/>"#), "{out}");
        assert!(out.contains(r#"<source file="/c/a.img"/>"#), "{out}");
        set_cdrom(&mut d, Arch::X86_64, None);
        let out = d.to_xml();
        assert_eq!(out.matches("device=\"cdrom\"").count(), 1);
        assert!(!out.contains("<source"), "{out}");
    }
}
