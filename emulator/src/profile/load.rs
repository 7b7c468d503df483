//! Where profiles come from: the built-in ones (`emulator/profiles/*.toml`,
//! compiled in and checked on first use) and a `--profile-dir`'s, into
//! `Profiles`, the set a service knows.
//!
//! Invariant: profiles live for the process (`&'static`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::Profile;

/// The built-in profiles, in `emulator/profiles/`.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("generic.toml", include_str!("../../profiles/generic.toml")),
    ("openbmc.toml", include_str!("../../profiles/openbmc.toml")),
    ("idrac9.toml", include_str!("../../profiles/idrac9.toml")),
    ("idrac10.toml", include_str!("../../profiles/idrac10.toml")),
    ("ilo5.toml", include_str!("../../profiles/ilo5.toml")),
    ("ilo6.toml", include_str!("../../profiles/ilo6.toml")),
    (
        "supermicro-x12.toml",
        include_str!("../../profiles/supermicro-x12.toml"),
    ),
    (
        "ami-asrockrack.toml",
        include_str!("../../profiles/ami-asrockrack.toml"),
    ),
    (
        "lenovo-xcc.toml",
        include_str!("../../profiles/lenovo-xcc.toml"),
    ),
    (
        "no-allowable-values.toml",
        include_str!("../../profiles/no-allowable-values.toml"),
    ),
    (
        "sushy-tools.toml",
        include_str!("../../profiles/sushy-tools.toml"),
    ),
    (
        "synthetic-strict-etag.toml",
        include_str!("../../profiles/synthetic-strict-etag.toml"),
    ),
];

pub(super) static BUILTIN: LazyLock<Vec<&'static Profile>> = LazyLock::new(|| {
    BUILTIN_FILES
        .iter()
        .map(|(file, text)| {
            let p = Profile::parse(text)
                .unwrap_or_else(|e| panic!("built-in profile {file} is invalid: {e}"));
            &*Box::leak(Box::new(p))
        })
        .collect()
});

/// The neutral profile.
pub fn generic() -> &'static Profile {
    BUILTIN[0]
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: {why}")]
    File { path: PathBuf, why: String },
    #[error("unknown profile {0:?}; known: {1}")]
    Unknown(String, String),
}

/// The profiles a service knows: the built-in ones and a user's.
#[derive(Debug, Clone)]
pub struct Profiles(BTreeMap<String, &'static Profile>);

impl Default for Profiles {
    fn default() -> Self {
        Profiles(BUILTIN.iter().map(|p| (p.name.clone(), *p)).collect())
    }
}

impl Profiles {
    /// The built-in profiles plus every `*.toml` in `dir` (a user profile
    /// replaces a built-in one of the same name).
    pub fn load(dir: Option<&Path>) -> Result<Profiles, ProfileError> {
        let mut all = Profiles::default();
        let Some(dir) = dir else { return Ok(all) };
        let err = |path: &Path, why: String| ProfileError::File {
            path: path.to_path_buf(),
            why,
        };
        let entries = std::fs::read_dir(dir).map_err(|e| err(dir, e.to_string()))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| err(&path, e.to_string()))?;
            let p = Profile::parse(&text).map_err(|why| err(&path, why))?;
            all.0.insert(p.name.clone(), Box::leak(Box::new(p)));
        }
        Ok(all)
    }

    pub fn get(&self, name: &str) -> Result<&'static Profile, ProfileError> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| ProfileError::Unknown(name.to_string(), self.names().join(", ")))
    }

    /// Adds a profile made at start-up (one derived from a capture),
    /// replacing any of its name.
    pub fn insert(&mut self, p: Profile) -> &'static Profile {
        let p: &'static Profile = Box::leak(Box::new(p));
        self.0.insert(p.name.clone(), p);
        p
    }

    pub fn names(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
