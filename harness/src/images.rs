//! Boot artifacts built from the recipes in `vm-images/`, cached under
//! `$SHOAL_CACHE/images/<hash>/` where the hash covers the recipe and its
//! arguments: a changed recipe builds anew, an unchanged one is reused.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

/// The command line the ppc64le netboot image's kernel boots with (the
/// console, the boot's messages, and the kexec window: 128 MiB at 256 MiB
/// set aside, where `pb-discover` loads the next kernel, so that kexec's
/// copy cannot overwrite the running task; `vm-images/petitboot/pb-discover`
/// says why). 256-384 MiB is free at boot on pseries (SLOF loads the kernel
/// at 4 MiB, the initramfs after it) and on powernv (QEMU loads them at
/// 512 and 640 MiB), and below the 768 MiB kexec-tools loads under.
pub const PPC64LE_NETBOOT_CMDLINE: &str = "console=hvc0 loglevel=6 crashkernel=128M@256M";

pub fn cache_root() -> PathBuf {
    PathBuf::from(std::env::var("SHOAL_CACHE").unwrap_or_else(|_| "/var/cache/shoal".into()))
        .join("images")
}

/// The recipes folder of this checkout.
pub fn recipes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vm-images")
}

/// Builds (or reuses) `recipe` with `args`, producing file `out_name`. The
/// cache key also covers what recipes share: every file of the recipes
/// folder that is not itself a recipe (`lib.sh`, `petitboot/`, ...).
pub fn build(recipe: &str, args: &[&str], out_name: &str) -> Result<PathBuf> {
    build_in(&cache_root(), &recipes().join(recipe), args, out_name)
}

/// `build` with the cache folder and the recipe's path given. The recipe is
/// run as `bash SCRIPT ARG0 OUT ARG1…`.
fn build_in(cache: &Path, script: &Path, args: &[&str], out_name: &str) -> Result<PathBuf> {
    let recipe = script.file_name().unwrap_or_default().to_string_lossy();
    let text = std::fs::read(script).with_context(|| format!("recipe {}", script.display()))?;
    let mut h = Sha256::new();
    h.update(&text);
    if let Some(folder) = script.parent() {
        for (rel, bytes) in shared_files(folder)? {
            h.update([0]);
            h.update(rel.as_bytes());
            h.update([0]);
            h.update(&bytes);
        }
    }
    for a in args {
        h.update([0]);
        h.update(a.as_bytes());
    }
    let dir = cache.join(hex::encode(&h.finalize()[..8]));
    let out = dir.join(out_name);
    if out.exists() {
        return Ok(out);
    }
    std::fs::create_dir_all(&dir)?;
    // Cases running in parallel often need the same image: the first one
    // builds it under an exclusive lock, the others wait and reuse it.
    let lock = std::fs::File::create(dir.join(".lock"))?;
    lock_exclusive(&lock).with_context(|| format!("locking {}", dir.display()))?;
    if out.exists() {
        return Ok(out);
    }
    eprintln!(
        "  building image {recipe} {} -> {}",
        args.join(" "),
        out.display()
    );
    // The recipe writes beside the result and the rename publishes it, so
    // an interrupted build never leaves a file that looks finished.
    let partial = dir.join(format!(".{out_name}.partial"));
    remove_any(&partial);
    let status = Command::new("bash")
        .arg(script)
        .args(args.iter().take(1))
        .arg(&partial)
        .args(args.iter().skip(1))
        .status()?;
    if !status.success() || !partial.exists() {
        remove_any(&partial);
        bail!("recipe {recipe} failed ({status})");
    }
    std::fs::rename(&partial, &out)?;
    Ok(out)
}

/// Removes a file or a folder (a recipe's output may be either), if any.
fn remove_any(p: &Path) {
    if p.is_dir() {
        let _ = std::fs::remove_dir_all(p);
    } else {
        let _ = std::fs::remove_file(p);
    }
}

/// The files under `folder` that recipes share, by relative path, sorted:
/// all but the top-level recipes (`*.sh` other than `lib.sh`).
fn shared_files(folder: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}{name}");
            if e.file_type()?.is_dir() {
                walk(&e.path(), &format!("{path}/"), out)?;
            } else if !(rel.is_empty() && name.ends_with(".sh") && name != "lib.sh") {
                out.push((path, std::fs::read(e.path())?));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(folder, "", &mut out).with_context(|| format!("reading {}", folder.display()))?;
    out.sort();
    Ok(out)
}

/// Blocks until this process holds `file`'s exclusive flock; closing the
/// file releases it.
fn lock_exclusive(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock(2) takes a descriptor and a flag and touches no
        // memory of this process; the descriptor is `file`'s, open for the
        // whole call because `file` is borrowed across it.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The ironic-python-agent release the agent ramdisk carries: the newest on
/// PyPI beside Ironic 39.0.0 (ci/requirements-ironic.txt); the agent
/// scenarios (lookup, heartbeats, deploy, clean and inspection steps) are
/// what shows that the two speak the same API.
pub const IPA_VERSION: &str = "13.0.0";

/// The agent ramdisk's folder (vm-images/ipa-ramdisk.sh): `vmlinuz`,
/// `initrd`, `esp.img`, `ipa.iso`, `manifest`.
pub fn ipa_ramdisk() -> Result<PathBuf> {
    build("ipa-ramdisk.sh", &["bundle", IPA_VERSION], "ipa")
}

/// A whole-disk instance image (`raw` or `qcow2`) whose loader prints
/// `SHOAL-MARKER <marker>` (vm-images/instance-image.sh).
pub fn instance_image(kind: &str, marker: &str) -> Result<PathBuf> {
    build(
        "instance-image.sh",
        &[kind, marker],
        &format!("instance.{kind}"),
    )
}

/// The grub marker image (`efi` or `iso`) that prints `SHOAL-MARKER <marker>`.
pub fn grub_marker(kind: &str, marker: &str) -> Result<PathBuf> {
    build("grub-marker.sh", &[kind, marker], &format!("marker.{kind}"))
}

/// The SHA-256 (hex) of a file, read in pieces.
fn sha256_of(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("read {}", path.display()))?;
    Ok(hex::encode(h.finalize()))
}

/// Whether `path` has the SHA-256 `want` (any case), else an error that
/// gives both.
fn verify(path: &Path, want: &str) -> Result<()> {
    let got = sha256_of(path)?;
    if !got.eq_ignore_ascii_case(want) {
        bail!(
            "{}: SHA-256 {got}, the scenario says {want}",
            path.display()
        );
    }
    Ok(())
}

/// A user's own boot file, checked: a `file` as it is, a `url` downloaded
/// once into `images/own/<sha256>/` (a partial download never left
/// there). Its SHA-256 is checked when given (a download always has one).
pub fn own(file: Option<&Path>, url: Option<&str>, sha256: Option<&str>) -> Result<PathBuf> {
    if let Some(f) = file {
        if let Some(want) = sha256 {
            verify(f, want)?;
        }
        return Ok(f.to_path_buf());
    }
    let (Some(url), Some(want)) = (url, sha256) else {
        bail!("an artifact of your own needs a file, or a url and its sha256");
    };
    let leaf = url
        .split(['?', '#'])
        .next()
        .and_then(|u| u.rsplit('/').next())
        .filter(|l| !l.is_empty() && *l != "." && *l != "..")
        .unwrap_or("download");
    let dir = cache_root().join("own").join(want.to_ascii_lowercase());
    let out = dir.join(leaf);
    if out.is_file() {
        return Ok(out);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let part = tempfile::NamedTempFile::new_in(&dir)?;
    let resp = ureq::get(url)
        .call()
        .with_context(|| format!("download {url}"))?;
    let mut body = resp.into_body().into_reader();
    std::io::copy(&mut body, &mut part.as_file()).with_context(|| format!("download {url}"))?;
    verify(part.path(), want).with_context(|| format!("download {url}"))?;
    part.persist(&out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_builds_of_one_image_run_the_recipe_once() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("recipes")).unwrap();
        let script = tmp.path().join("recipes/slow.sh");
        let runs = tmp.path().join("runs");
        std::fs::write(
            &script,
            format!(
                "echo run >>{runs}\nprintf part >\"$2\"\nsleep 0.3\nprintf '%s' \"$1-$3\" >>\"$2\"\n",
                runs = runs.display()
            ),
        )
        .unwrap();
        let cache = tmp.path().join("cache");
        let outs: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| build_in(&cache, &script, &["a", "b"], "img").unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(outs.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(std::fs::read_to_string(&outs[0]).unwrap(), "parta-b");
        assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
        // Another argument is another image.
        let other = build_in(&cache, &script, &["a", "c"], "img").unwrap();
        assert_ne!(other, outs[0]);
    }

    #[test]
    fn shared_files_are_part_of_the_key_and_other_recipes_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("recipes");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let script = dir.join("r.sh");
        std::fs::write(&script, "cat \"$(dirname \"$0\")/data/x\" >\"$2\"\n").unwrap();
        std::fs::write(dir.join("data/x"), "one").unwrap();
        std::fs::write(dir.join("other.sh"), "# another recipe").unwrap();
        let cache = tmp.path().join("cache");
        let first = build_in(&cache, &script, &["a"], "out").unwrap();
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "one");
        // Another recipe changes: same image.
        std::fs::write(dir.join("other.sh"), "# changed").unwrap();
        assert_eq!(build_in(&cache, &script, &["a"], "out").unwrap(), first);
        // What the recipe uses changes: a new image with the new content.
        std::fs::write(dir.join("data/x"), "two").unwrap();
        let second = build_in(&cache, &script, &["a"], "out").unwrap();
        assert_ne!(second, first);
        assert_eq!(std::fs::read_to_string(&second).unwrap(), "two");
    }

    #[test]
    fn a_failed_recipe_leaves_nothing_that_looks_built() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("recipes")).unwrap();
        let script = tmp.path().join("recipes/fail.sh");
        std::fs::write(&script, "printf half >\"$2\"\nexit 3\n").unwrap();
        let cache = tmp.path().join("cache");
        let err = build_in(&cache, &script, &["x"], "img").unwrap_err();
        assert!(err.to_string().contains("fail.sh failed"), "{err}");
        let dir = std::fs::read_dir(&cache)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![".lock".to_string()]);
    }
}
