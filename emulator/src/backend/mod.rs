//! The one seam between the Redfish API and the machines.
//!
//! Handlers hold an `Arc<dyn Backend>` and never reach past it. A backend
//! stores and acts on domain types (`model`); it knows nothing of JSON.
//! Each call is atomic for its system; the API serialises read-check-write
//! sequences per system on top (see `bmc::SystemLocks`).

pub mod download;
pub mod fake;
pub mod ironic;
#[cfg(feature = "libvirt")]
pub mod libvirt;
pub mod machines;
pub mod options;
pub mod view;

use async_trait::async_trait;

use crate::model::{
    BootMode, Change, MediaImage, MediaSlot, ResetType, System, SystemRef, TransferProtocol,
};

/// A boxed, sendable future.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// What went wrong, in the machines' terms; the API alone maps each to a
/// Redfish status and message (`api::error`).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("no system {0}")]
    NotFound(String),
    /// The machine's state does not allow this now (HTTP 409).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Well-formed, but this machine cannot do it (HTTP 400).
    #[error("not supported: {0}")]
    Unsupported(#[from] Unsupported),
    /// InsertMedia's image did not arrive, or is not fit for the device.
    #[error("virtual media: {0}")]
    Media(#[from] MediaError),
    /// The hypervisor cannot be reached right now (HTTP 503).
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    #[error("backend failure: {0}")]
    Internal(String),
}

/// A request this machine cannot honour, whatever its state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// The firmware cannot run in this mode (no UEFI firmware for the
    /// machine, or Legacy BIOS on an architecture without one).
    #[error("boot mode {0}")]
    BootMode(BootMode),
    /// The machine has no such virtual media device to insert into.
    #[error("{0} virtual media insert")]
    Insert(MediaSlot),
    /// ... or to eject from.
    #[error("{0} virtual media eject")]
    Eject(MediaSlot),
    #[error("a serial console")]
    Console,
    /// What the machine's controller refused, in its words (the Ironic
    /// backend: what Ironic or its driver cannot do for this node).
    #[error("{0}")]
    Refused(String),
}

/// Why InsertMedia's image is not in the device. Whatever keeps an image
/// from arriving (refused by the address policy, no such host, connection
/// refused, timeout, TLS) is one answer, `Unreachable`: which it was would
/// map the network; the cause is logged where it happens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaError {
    #[error("transfer protocol {0} is not supported")]
    Protocol(TransferProtocol),
    /// Not an http(s) URL, or not an image the device can take (a CD must
    /// be ISO 9660).
    #[error("{0} is not an image for this device")]
    BadImage(String),
    #[error("{0} cannot be reached")]
    Unreachable(String),
    #[error("{url}: the server refused the credentials ({status})")]
    Unauthorized { url: String, status: u16 },
    #[error("{0}: the server has no such image")]
    Missing(String),
    #[error("the image exceeds the size limit")]
    TooLarge,
}

pub type Result<T> = std::result::Result<T, BackendError>;

/// A machine's serial console, as a BMC's Serial-over-LAN carries it.
pub struct SerialConsole {
    /// What the machine prints from now on.
    pub output: tokio::sync::broadcast::Receiver<bytes::Bytes>,
    /// What is typed at it.
    pub input: tokio::sync::mpsc::Sender<bytes::Bytes>,
}

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

/// Every way a front-end reaches machines: listing and finding them,
/// reading one, its power, the changes of its BMC state, and the virtual
/// media insert (the one change that fetches before it applies).
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

    /// Applies changes of the BMC state as one: every one the machine can
    /// take, or none (the first it cannot is the error). Returns the system
    /// as it is afterwards; no changes write nothing.
    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System>;

    /// Fetches an InsertMedia image (where the backend fetches) and puts it
    /// in the device: done, or a future the API turns into a Task.
    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion>;

    /// Whether the machines' storage controllers take volume changes
    /// ([`Change::Volume`]; the API offers POST/DELETE on volumes only then).
    fn manages_volumes(&self) -> bool {
        false
    }

    /// The machine's serial console (`Unsupported::Console` where the
    /// backend has none to give).
    async fn console(&self, id: &str) -> Result<SerialConsole> {
        let _ = id;
        Err(Unsupported::Console.into())
    }

    /// Persists whatever the backend keeps in memory (called at shutdown).
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}
