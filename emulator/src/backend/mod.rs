//! The one seam between the Redfish API and the machines.
//!
//! Handlers hold an `Arc<dyn Backend>` and never reach past it. A backend
//! stores and acts on domain types (`model`); it knows nothing of JSON.
//! Each call is atomic for its system; the API serialises read-check-write
//! sequences per system on top (see `api::state::SystemLocks`).

pub mod download;
pub mod fake;
#[cfg(feature = "libvirt")]
pub mod libvirt;
pub mod view;

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::error::Msg;
use crate::model::{
    BootOverride, MediaImage, MediaSlot, ResetKeysType, ResetType, System, SystemRef,
    SystemSettings,
};
use crate::storage::VolumeChange;

/// A boxed, sendable future.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("no system {0}")]
    NotFound(String),
    /// The machine's state does not allow this now (HTTP 409).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The request is well-formed but this machine cannot do it (HTTP 400).
    #[error("invalid request: {0:?}")]
    Invalid(Msg),
    /// The hypervisor cannot be reached right now (HTTP 503).
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    #[error("backend failure: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, BackendError>;

/// An operation that either finished or goes on in the background; the API
/// turns the latter into a Redfish Task with a task monitor.
pub enum Completion {
    Done,
    Running(BoxFuture<Result<()>>),
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Completion::Done => f.write_str("Done"),
            Completion::Running(_) => f.write_str("Running"),
        }
    }
}

#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// A short name for logs and the service root (`fake`, `libvirt`).
    fn kind(&self) -> &'static str;

    /// All systems, in a stable order.
    async fn systems(&self) -> Result<Vec<SystemRef>>;

    /// Resolves a system by Id or by name; `None` when neither matches.
    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>>;

    /// A consistent snapshot of one system.
    async fn system(&self, id: &str) -> Result<System>;

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()>;

    /// Applies a System PATCH (already validated and merged by the API) as
    /// one change: the new boot override, if any, and the other settings.
    async fn update_system(
        &self,
        id: &str,
        boot: Option<&BootOverride>,
        settings: &SystemSettings,
    ) -> Result<()>;

    async fn insert_media(
        &self,
        id: &str,
        slot: MediaSlot,
        image: MediaImage,
    ) -> Result<Completion>;

    async fn eject_media(&self, id: &str, slot: MediaSlot) -> Result<()>;

    /// Replaces the set of BIOS attributes staged for the next reset.
    async fn set_bios_pending(
        &self,
        id: &str,
        pending: BTreeMap<String, serde_json::Value>,
    ) -> Result<()>;

    /// Stages the factory defaults for the next reset.
    async fn reset_bios(&self, id: &str) -> Result<()>;

    async fn set_secure_boot(&self, id: &str, enable: bool) -> Result<()>;

    /// Whether the machines' storage controllers take RAID volume changes
    /// (the API offers POST/DELETE on volumes only then).
    fn manages_volumes(&self) -> bool {
        false
    }

    /// Creates or deletes a volume the API has checked (under the system's
    /// lock), now or, `staged`, at the next start.
    async fn change_volumes(&self, id: &str, change: VolumeChange, staged: bool) -> Result<()> {
        let _ = (id, change, staged);
        Err(BackendError::Invalid(Msg::new(
            "ActionNotSupported",
            &["Volume create/delete"],
        )))
    }

    async fn reset_secure_boot_keys(&self, id: &str, kind: ResetKeysType) -> Result<()>;

    /// Persists whatever the backend keeps in memory (called at shutdown).
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}
