//! `shoal-harness validate [DIR]`: every scenario file of a folder
//! checked without booting anything — the schema and the combinations of
//! keys (`Scenario::load`, the runner's own loader), a capture it replays,
//! and the BMC profile it names against the emulator's built-in ones
//! (`emulator/profiles/` of this checkout). One line per file, every
//! error at once (a run stops at the first), a summary, and failure when
//! any file is wrong.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::scenario::Scenario;

/// The built-in profile names, from the checkout's `emulator/profiles/`
/// beside `dir` or beside this crate; `None` when neither is there.
fn profiles(dir: &Path) -> Option<(PathBuf, Vec<String>)> {
    let near = dir.join("../emulator/profiles");
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../emulator/profiles");
    let folder = [near, here].into_iter().find(|p| p.is_dir())?;
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    Some((folder, names))
}

/// Each file checked, with its errors (none: the file is valid).
pub type Checked = Vec<(PathBuf, Vec<String>)>;

/// The errors of each file of `dir`, and the profiles folder the names
/// were checked against (`None`: not checked).
pub fn check(dir: &Path) -> anyhow::Result<(Checked, Option<PathBuf>)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let known = profiles(dir);
    let mut out = Vec::new();
    for p in paths {
        let mut errors = Vec::new();
        match Scenario::load(&p) {
            Err(e) => errors.push(format!("{e:#}")),
            Ok(s) => {
                if let (Some(name), Some((_, names))) = (&s.emulator.profile, &known) {
                    if !names.contains(name) {
                        errors.push(format!(
                            "{}: emulator.profile: {name:?} is not a built-in profile (one of: {})",
                            p.display(),
                            names.join(", ")
                        ));
                    }
                }
            }
        }
        out.push((p, errors));
    }
    Ok((out, known.map(|(f, _)| f)))
}

/// Prints the check of `dir`; failure when a file is wrong.
pub fn run(dir: &Path, reference: bool) -> anyhow::Result<ExitCode> {
    if reference {
        print!("{}", crate::scenario::reference::markdown());
        return Ok(ExitCode::SUCCESS);
    }
    let (files, profiles) = check(dir)?;
    if profiles.is_none() {
        println!("note: no emulator/profiles folder found; profile names not checked");
    }
    let bad = files.iter().filter(|(_, e)| !e.is_empty()).count();
    for (p, errors) in &files {
        if errors.is_empty() {
            println!("ok       {}", p.display());
        }
        for e in errors {
            println!("INVALID  {e}");
        }
    }
    println!(
        "{} scenario file(s) in {}: {} valid, {bad} invalid",
        files.len(),
        dir.display(),
        files.len() - bad
    );
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_checked_and_each_error_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let good = std::fs::read_to_string(repo.join("bmc-uefihttp-efi.toml")).unwrap();
        std::fs::write(dir.path().join("a-good.toml"), &good).unwrap();
        std::fs::write(dir.path().join("b-broken.toml"), "[machine\n").unwrap();
        let unknown = format!("{good}\n[emulator]\nprofile = \"idrac99\"\n");
        std::fs::write(dir.path().join("c-profile.toml"), unknown).unwrap();
        let (files, profiles) = check(dir.path()).unwrap();
        assert!(profiles.is_some());
        let errs: Vec<usize> = files.iter().map(|(_, e)| e.len()).collect();
        assert_eq!(errs, [0, 1, 1], "{files:?}");
        assert!(files[1].1[0].contains("b-broken.toml"), "{files:?}");
        assert!(
            files[2].1[0].contains("\"idrac99\" is not a built-in profile"),
            "{files:?}"
        );
        // The repository's own scenarios are all valid.
        let (all, _) = check(&repo).unwrap();
        let bad: Vec<_> = all.iter().filter(|(_, e)| !e.is_empty()).collect();
        assert!(bad.is_empty(), "{bad:?}");
    }
}
