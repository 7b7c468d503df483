//! Boot artifacts built from the recipes in `vm-images/`, cached under
//! `$SHOAL_CACHE/images/<hash>/` where the hash covers the recipe and its
//! arguments: a changed recipe builds anew, an unchanged one is reused.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

pub fn cache_root() -> PathBuf {
    PathBuf::from(std::env::var("SHOAL_CACHE").unwrap_or_else(|_| "/var/cache/shoal".into()))
        .join("images")
}

/// The recipes folder of this checkout.
pub fn recipes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vm-images")
}

/// Builds (or reuses) `recipe` with `args`, producing file `out_name`.
pub fn build(recipe: &str, args: &[&str], out_name: &str) -> Result<PathBuf> {
    let script = recipes().join(recipe);
    let text = std::fs::read(&script).with_context(|| format!("recipe {}", script.display()))?;
    let mut h = Sha256::new();
    h.update(&text);
    for a in args {
        h.update([0]);
        h.update(a.as_bytes());
    }
    let dir = cache_root().join(hex::encode(&h.finalize()[..8]));
    let out = dir.join(out_name);
    if out.exists() {
        return Ok(out);
    }
    std::fs::create_dir_all(&dir)?;
    eprintln!(
        "  building image {recipe} {} -> {}",
        args.join(" "),
        out.display()
    );
    let status = Command::new("bash")
        .arg(&script)
        .args(args.iter().take(1))
        .arg(&out)
        .args(args.iter().skip(1))
        .status()?;
    if !status.success() || !out.exists() {
        bail!("recipe {recipe} failed ({status})");
    }
    Ok(out)
}

/// The grub marker image (`efi` or `iso`) that prints `SHOAL-MARKER <marker>`.
pub fn grub_marker(kind: &str, marker: &str) -> Result<PathBuf> {
    build("grub-marker.sh", &[kind, marker], &format!("marker.{kind}"))
}
