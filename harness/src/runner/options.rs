//! What a run is given (the command line's flags), which every stage of a
//! case reads.

use std::path::PathBuf;

/// The run's settings.
pub struct Options {
    pub jobs: usize,
    pub artifacts: PathBuf,
    pub emulator: PathBuf,
    pub python: Option<PathBuf>,
    /// The venv with Ironic (the `ironic` driver).
    pub ironic_venv: Option<PathBuf>,
    /// The venv with Ironic 35 (the `ilo5` hardware type).
    pub ironic35_venv: Option<PathBuf>,
    pub keep_passed: bool,
}

/// `run --driver-source`: each folder first on the PYTHONPATH of every
/// Python the run starts (the driver scripts, Ironic and its tools), in
/// the order given, before what PYTHONPATH held; a folder that is not
/// there stops the run, naming it.
pub fn use_driver_sources(sources: &[PathBuf]) -> anyhow::Result<()> {
    if sources.is_empty() {
        return Ok(());
    }
    let mut dirs = Vec::new();
    for s in sources {
        let d = std::path::absolute(s)?;
        anyhow::ensure!(
            d.is_dir(),
            "--driver-source {}: no such folder",
            s.display()
        );
        eprintln!(
            "shoal-harness: driver source {} (first on PYTHONPATH)",
            d.display()
        );
        dirs.push(d);
    }
    let joined = python_path(&dirs, std::env::var_os("PYTHONPATH"))?;
    // Sound: called before the run starts any thread or process.
    std::env::set_var("PYTHONPATH", joined);
    Ok(())
}

/// `dirs`, then `existing`, as one PYTHONPATH.
fn python_path(
    dirs: &[PathBuf],
    existing: Option<std::ffi::OsString>,
) -> anyhow::Result<std::ffi::OsString> {
    let rest = existing.iter().flat_map(std::env::split_paths);
    Ok(std::env::join_paths(dirs.iter().cloned().chain(rest))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_source_comes_first_and_python_imports_from_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shoal_probe.py"), "WHERE = 'checkout'\n").unwrap();
        let p = python_path(&[dir.path().to_path_buf()], Some("/opt/other".into())).unwrap();
        let s = p.to_string_lossy();
        assert!(
            s.starts_with(dir.path().to_str().unwrap()) && s.ends_with(":/opt/other"),
            "{s}"
        );
        let out = std::process::Command::new("python3")
            .args(["-c", "import shoal_probe; print(shoal_probe.WHERE)"])
            .env("PYTHONPATH", &p)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "checkout");
        assert!(use_driver_sources(&["/no/such/checkout".into()]).is_err());
    }
}
