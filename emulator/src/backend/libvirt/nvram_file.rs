//! Reading and writing a domain's NVRAM file: raw (`.fd`) as it is, qcow2
//! (`<nvram format='qcow2'>`) converted through `qemu-img`. Writes replace
//! the file atomically and keep its owner and mode, since libvirt hands
//! NVRAM files to the QEMU user. A missing NVRAM folder is made as
//! libvirt's QEMU driver makes it.

use std::path::Path;
use std::process::Command;

fn qemu_img(args: &[&str]) -> std::io::Result<()> {
    let out = Command::new("qemu-img").args(args).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "qemu-img {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Makes the folder of new varstores when it is missing, as libvirt's QEMU
/// driver does when it starts (`qemuStateInitialize`: `g_mkdir_with_parents`
/// 0777 under the daemon's umask 022, then, privileged, `chown` to
/// qemu.conf's user and group, which it also gives its lib folder, the
/// parent): mode 0755, owner and group those of the parent. On a fresh
/// host `/var/lib/libvirt/qemu/nvram` is missing until then; libvirt makes
/// only the folder, so a missing parent is an error. A folder that cannot
/// be given its owner is removed again.
pub fn ensure_folder(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a folder",
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let parent = std::fs::metadata(dir.parent().unwrap_or(Path::new("/")))
        .map_err(|e| std::io::Error::new(e.kind(), format!("its parent: {e}")))?;
    match std::fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => {}
        // Made meanwhile, by libvirt or another domain's start.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    let owned = (|| -> std::io::Result<()> {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
        let m = std::fs::metadata(dir)?;
        if (m.uid(), m.gid()) != (parent.uid(), parent.gid()) {
            std::os::unix::fs::chown(dir, Some(parent.uid()), Some(parent.gid()))?;
        }
        Ok(())
    })();
    if let Err(e) = owned {
        let _ = std::fs::remove_dir(dir);
        return Err(std::io::Error::new(
            e.kind(),
            format!("cannot give it the owner of its parent: {e}"),
        ));
    }
    tracing::info!(folder = %dir.display(), uid = parent.uid(), gid = parent.gid(), "NVRAM folder created");
    Ok(())
}

/// The varstore bytes of `path` (raw, or converted from qcow2).
pub fn read(path: &Path, qcow2: bool) -> std::io::Result<Vec<u8>> {
    if !qcow2 {
        return std::fs::read(path);
    }
    if !path.exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} not found", path.display()),
        ));
    }
    let tmp = tempfile::NamedTempFile::new()?;
    qemu_img(&[
        "convert",
        "-f",
        "qcow2",
        "-O",
        "raw",
        &path.display().to_string(),
        &tmp.path().display().to_string(),
    ])?;
    std::fs::read(tmp.path())
}

/// Replaces `path` with `bytes` (converted to qcow2 when asked).
pub fn write(path: &Path, qcow2: bool, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let out = tempfile::NamedTempFile::new_in(dir)?;
    if qcow2 {
        let raw = tempfile::NamedTempFile::new()?;
        std::fs::write(raw.path(), bytes)?;
        qemu_img(&[
            "convert",
            "-f",
            "raw",
            "-O",
            "qcow2",
            &raw.path().display().to_string(),
            &out.path().display().to_string(),
        ])?;
    } else {
        std::fs::write(out.path(), bytes)?;
    }
    if let Ok(m) = std::fs::metadata(path) {
        std::os::unix::fs::chown(out.path(), Some(m.uid()), Some(m.gid()))?;
        std::fs::set_permissions(out.path(), m.permissions())?;
    }
    out.as_file().sync_all()?;
    out.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_made_like_libvirt_makes_it() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let root = tempfile::tempdir().unwrap();
        // The parent's owner, as libvirt's lib folder; mode regardless of umask.
        let parent = root.path().join("qemu");
        std::fs::create_dir(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o750)).unwrap();
        let dir = parent.join("nvram");
        ensure_folder(&dir).unwrap();
        let (m, p) = (
            std::fs::metadata(&dir).unwrap(),
            std::fs::metadata(&parent).unwrap(),
        );
        assert_eq!(m.mode() & 0o7777, 0o755);
        assert_eq!((m.uid(), m.gid()), (p.uid(), p.gid()));
        ensure_folder(&dir).unwrap();
        write(&dir.join("vm_VARS.fd"), false, b"vars").unwrap();
        assert_eq!(std::fs::read(dir.join("vm_VARS.fd")).unwrap(), b"vars");

        // No parent: not made, and the error says why.
        let e = ensure_folder(&root.path().join("absent/nvram")).unwrap_err();
        assert!(e.to_string().contains("parent"), "{e}");
        // A file in the way.
        std::fs::write(root.path().join("file"), b"").unwrap();
        assert!(ensure_folder(&root.path().join("file")).is_err());
    }

    #[test]
    fn qcow2_round_trips_through_qemu_img() {
        let template = Path::new("/usr/share/OVMF/OVMF_VARS_4M.fd");
        if !template.exists() || Command::new("qemu-img").arg("--version").output().is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs ovmf and qemu-utils"
            );
            eprintln!("SKIPPED: needs ovmf and qemu-img");
            return;
        }
        let raw = std::fs::read(template).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("vm_VARS.qcow2");
        write(&p, true, &raw).unwrap();
        assert_eq!(
            &std::fs::read(&p).unwrap()[..4],
            b"QFI\xfb",
            "written as qcow2"
        );
        assert_eq!(read(&p, true).unwrap(), raw);
        write(&p, false, &raw).unwrap();
        assert_eq!(read(&p, false).unwrap(), raw);
    }
}
