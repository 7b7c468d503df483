//! Virtual media for libvirt domains: the image is downloaded to the cache
//! (`backend::download`: size limit, timeout, address policy), checked,
//! then attached as the domain's CD-ROM. Nothing about the domain changes
//! until the download has succeeded. On a remote host the image is then
//! uploaded into a volume of a storage pool there (`--libvirt-media-pool`,
//! as sushy-tools uploads into `SUSHY_EMULATOR_STORAGE_POOL`), named as
//! the cache file is, and the CD-ROM points at the volume's path.

use std::io::Read;
use std::path::{Path, PathBuf};

use virt::connect::Connect;
use virt::storage_pool::StoragePool;
use virt::storage_vol::StorageVol;
use virt::stream::Stream;

use super::xml::Element;
use crate::model::Arch;

pub use crate::backend::download::{cache_path, fetch, MediaOptions};

/// The volume an image of `domain` is uploaded into: the cache file's
/// name (a hash of the domain and the URL).
pub fn volume_name(opts: &MediaOptions, domain: &str, url: &str) -> String {
    cache_path(opts, domain, url)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("shoal-{domain}.img"))
}

/// The pool media volumes go into, or why there is none to use.
pub fn pool(conn: &Connect, name: &str, uri: &str) -> Result<StoragePool, String> {
    let pool = conn.lookup_storage_pool_by_name(name).map_err(|e| {
        format!(
            "virtual media on a domain of {uri} is uploaded into its storage pool '{name}' \
             (--libvirt-media-pool), which it does not have: {}",
            e.message()
        )
    })?;
    if !pool.is_active().unwrap_or(false) {
        return Err(format!(
            "virtual media on a domain of {uri} is uploaded into its storage pool '{name}' \
             (--libvirt-media-pool), which is not active"
        ));
    }
    Ok(pool)
}

/// Uploads `file` into the volume `name` of `pool` (replacing one of that
/// name); returns the volume's path on its host.
pub fn upload(
    conn: &Connect,
    pool: &StoragePool,
    name: &str,
    file: &Path,
) -> Result<PathBuf, String> {
    let fail =
        |what: &str, e: virt::error::Error| format!("{what} the volume {name}: {}", e.message());
    let size = std::fs::metadata(file)
        .map_err(|e| format!("{}: {e}", file.display()))?
        .len();
    if let Ok(old) = pool.lookup_storage_vol_by_name(name) {
        old.delete(0).map_err(|e| fail("deleting the old", e))?;
    }
    let xml = format!(
        "<volume><name>{name}</name><capacity unit='bytes'>{size}</capacity>\
         <target><format type='raw'/></target></volume>"
    );
    let vol = StorageVol::create_xml(pool, &xml, 0).map_err(|e| fail("creating", e))?;
    let sent = (|| -> Result<PathBuf, String> {
        let stream = Stream::new(conn, 0).map_err(|e| fail("streaming to", e))?;
        vol.upload(&stream, 0, size, 0)
            .map_err(|e| fail("uploading to", e))?;
        // An upload that fails midway is aborted, which ends the volume's
        // use on the host, so that it can be deleted.
        match send_file(&stream, file, name) {
            Ok(()) => stream.finish().map_err(|e| fail("finishing", e))?,
            Err(e) => {
                let _ = stream.abort();
                return Err(e);
            }
        }
        vol.path()
            .map(PathBuf::from)
            .map_err(|e| fail("locating", e))
    })();
    sent.inspect_err(|_| {
        let _ = vol.delete(0);
    })
}

/// Sends `file` down `stream`, whole.
fn send_file(stream: &Stream, file: &Path, name: &str) -> Result<(), String> {
    let mut f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if n == 0 {
            return Ok(());
        }
        let mut at = 0;
        while at < n {
            let k = stream
                .send(&buf[at..n])
                .map_err(|e| format!("sending to the volume {name}: {}", e.message()))?;
            if k <= 0 {
                return Err(format!("the stream to the volume {name} took nothing"));
            }
            at += k as usize;
        }
    }
}

/// The path of the volume `name` in `pool`, if it exists.
pub fn volume_path(pool: &StoragePool, name: &str) -> Option<PathBuf> {
    pool.lookup_storage_vol_by_name(name)
        .and_then(|v| v.path())
        .ok()
        .map(PathBuf::from)
}

/// Deletes the volume `name` of `pool`, if it exists.
pub fn delete_volume(pool: &StoragePool, name: &str) {
    if let Ok(v) = pool.lookup_storage_vol_by_name(name) {
        if let Err(e) = v.delete(0) {
            tracing::warn!(volume = name, error = %e.message(), "media volume not deleted");
        }
    }
}

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

/// Applies `disk` (from [`live_cdrom`]) to the running domain, forced, as
/// a BMC unplugs its virtual media whatever the host does: a guest holding
/// the tray locked (a ramdisk booted from the CD) would otherwise make
/// QEMU wait for it, and libvirt give up. A driver without the flag
/// (test://) takes it plain.
pub fn update_live(dom: &virt::domain::Domain, disk: &Element) -> Result<(), virt::error::Error> {
    let (xml, live) = (disk.to_xml(), virt::sys::VIR_DOMAIN_AFFECT_LIVE);
    let forced = live | virt::sys::VIR_DOMAIN_DEVICE_MODIFY_FORCE;
    match dom.update_device_flags(&xml, forced) {
        Err(e) if e.to_string().contains("unsupported flags") => {
            dom.update_device_flags(&xml, live).map(drop)
        }
        r => r.map(drop),
    }
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
