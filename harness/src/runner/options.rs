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
