//! One assignment of a sushy-tools configuration being read: its value
//! as the Python type a key wants (string, truth value, dict, list), and
//! errors that name the file, the line and the key (with the path inside
//! the value).

use super::literal::{Assignment, Py};
use crate::config::ConfigError;

/// One value being read: its key and line, for errors.
pub(super) struct Key<'a> {
    pub(super) file: &'a str,
    pub(super) a: &'a Assignment,
}

impl<'a> Key<'a> {
    pub(super) fn err(
        &self,
        what: impl std::fmt::Display,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.to_string(),
            key: format!("line {}: {what}", self.a.line),
            message: message.into(),
        }
    }

    pub(super) fn wrong(&self, path: &str, want: &str, v: &Py) -> ConfigError {
        self.err(
            format!("{}{path}", self.a.name),
            format!("expected {want}, found {} ({v})", v.type_name()),
        )
    }

    pub(super) fn string(&self) -> Result<Option<&'a str>, ConfigError> {
        match &self.a.value {
            Py::None => Ok(None),
            Py::Str(s) => Ok(Some(s)),
            v => Err(self.wrong("", "a string or None", v)),
        }
    }

    /// A Python truth value, as sushy-tools tests it (`if value:`), from
    /// the types a configuration writes for one.
    pub(super) fn truth(&self) -> Result<bool, ConfigError> {
        match &self.a.value {
            Py::None => Ok(false),
            Py::Bool(b) => Ok(*b),
            Py::Int(i) => Ok(*i != 0),
            v => Err(self.wrong("", "True or False", v)),
        }
    }

    pub(super) fn dict(&self) -> Result<&'a [(Py, Py)], ConfigError> {
        match &self.a.value {
            Py::Dict(d) => Ok(d),
            Py::None => Ok(&[]),
            v => Err(self.wrong("", "a dict", v)),
        }
    }

    pub(super) fn list(&self) -> Result<&'a [Py], ConfigError> {
        match &self.a.value {
            Py::List(v) | Py::Tuple(v) | Py::Set(v) => Ok(v),
            Py::None => Ok(&[]),
            v => Err(self.wrong("", "a list", v)),
        }
    }
}
