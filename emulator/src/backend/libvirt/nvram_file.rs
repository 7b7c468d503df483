//! Reading and writing a domain's NVRAM file: raw (`.fd`) as it is, qcow2
//! (`<nvram format='qcow2'>`) converted through `qemu-img`. Writes replace
//! the file atomically and keep its owner and mode, since libvirt hands
//! NVRAM files to the QEMU user.

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
