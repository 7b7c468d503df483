//! A capture packed as `.tar.gz` (as NVIDIA's bmc-mock keeps them): read
//! into memory, never unpacked onto disk, bounded, and refused whole when
//! an entry would leave its folder (an absolute path, `..`, a link).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::{wanted, Files, MockupError, MAX_BYTES, MAX_FILES};

pub(super) fn read(path: &Path) -> Result<Files, MockupError> {
    let name = path.to_string_lossy();
    if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
        return Err(MockupError::Bad {
            file: path.into(),
            why: "neither a folder nor a .tar.gz / .tgz archive".into(),
        });
    }
    let file =
        std::fs::File::open(path).map_err(|e| MockupError::Io(path.into(), e.to_string()))?;
    let bad = |why: String| MockupError::Bad {
        file: path.into(),
        why,
    };
    // The decompressed stream is bounded too: a small archive may unpack
    // to a great deal.
    let gz = flate2::read::GzDecoder::new(file).take(MAX_BYTES * 2);
    let mut tar = tar::Archive::new(gz);
    let mut files = Files::new();
    let mut bytes = 0u64;
    let entries = tar
        .entries()
        .map_err(|e| bad(format!("not a tar.gz: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("damaged archive: {e}")))?;
        let rel: PathBuf = entry
            .path()
            .map_err(|e| bad(format!("an entry's name: {e}")))?
            .into_owned();
        let entry_name = || rel.display().to_string();
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(bad(format!(
                "the entry {} leaves the archive's folder",
                entry_name()
            )));
        }
        let kind = entry.header().entry_type();
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(bad(format!(
                "the entry {} is a link (a capture holds plain files)",
                entry_name()
            )));
        }
        if !kind.is_file() {
            continue;
        }
        let known = rel.file_name().and_then(|n| n.to_str()).is_some_and(wanted);
        if !known {
            continue;
        }
        if files.len() >= MAX_FILES {
            return Err(MockupError::TooLarge(
                path.into(),
                format!("{MAX_FILES} files"),
            ));
        }
        let size = entry.header().size().unwrap_or(u64::MAX);
        bytes = bytes.saturating_add(size);
        if bytes > MAX_BYTES {
            return Err(MockupError::TooLarge(
                path.into(),
                format!("{MAX_BYTES} bytes"),
            ));
        }
        let mut data = Vec::with_capacity(size.min(1 << 20) as usize);
        entry
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("the entry {}: {e}", entry_name())))?;
        let rel: PathBuf = rel
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect();
        files.insert(rel, data);
    }
    Ok(files)
}
