//! The BMC itself, whatever protocol asks: what it decides about its
//! machines and where every change it accepts is announced.
//!
//! A [`Core`] is one endpoint's BMC: its backend view, the per-system
//! locks, the behaviour profiles, the injected faults, the clock of power
//! actions. Both front-ends hold one, the Redfish service
//! (`api::AppState`) and the IPMI side (`ipmi::Bmc`), and call it for
//! every decision that is not about their wire format:
//! - `power`: a power action ([`Core::power_action`]) and why one is
//!   refused ([`PowerError`]);
//! - `boot`: a boot override request ([`Core::set_boot`]) and why one is
//!   refused ([`BootRefused`]), the one rule set of every route;
//! - `changes`: the change stream, one record for every change accepted
//!   or observed, whoever made it ([`Core::changes`]);
//! - `log`: the logs kept from that stream (the SEL, every change), and
//!   their clearing ([`Core::clear_log`]).
//!
//! Each front-end maps the core's refusals once, to its own errors
//! (Redfish messages, IPMI completion codes).
//!
//! Invariants: every read-check-write of a system holds that system's
//! lock ([`SystemLocks`]); the core never imports a front-end (`api`,
//! `ipmi`), the server or the configuration.

mod boot;
pub mod changes;
pub mod firmware;
pub mod jobs;
pub mod log;
mod power;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::sync::lock;
pub use boot::{offered_targets, BootRefused, BootRequest};
pub use power::{PowerClock, PowerError};

use crate::backend::{Backend, BackendError};
use crate::faults::Faults;
use crate::model::{Change, System};
use crate::profile::{self, Profile, Profiles};

/// Per-resource async locks serialising read-check-write sequences, keyed
/// by system Id (accounts use `account:ID`). Only locks someone holds or
/// waits for stay in the map: each new key first drops the others.
#[derive(Default)]
pub struct SystemLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl SystemLocks {
    pub async fn lock(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let m = {
            let mut map = lock(&self.0);
            match map.get(id) {
                Some(m) => m.clone(),
                None => {
                    // A holder or waiter has a clone of its own; only the
                    // map's is left of a lock nobody wants (and no one can
                    // reach it but through the map, under this mutex).
                    map.retain(|_, m| Arc::strong_count(m) > 1);
                    map.entry(id.to_string()).or_default().clone()
                }
            }
        };
        m.lock_owned().await
    }

    /// How many locks the map keeps.
    pub fn len(&self) -> usize {
        lock(&self.0).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A future borrowing what it was made from.
pub type Borrowed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The background work of a BMC (virtual media downloads, volume changes
/// staged for the next start) as a power action sees it: a start waits
/// for a download under way, and a reset wakes what waits for one. The
/// Redfish task store is the one implementation.
pub trait Work: Send + Sync {
    /// Waits until no work on a key starting with `prefix` runs, `limit`
    /// at most; `false` when some still does.
    fn settled<'a>(&'a self, prefix: &'a str, limit: Duration) -> Borrowed<'a, bool>;

    /// A reset was carried out: staged work looks at its machine again.
    fn reset_seen(&self);
}

/// No background work (a core without a task store: tests, tools).
struct NoWork;

impl Work for NoWork {
    fn settled<'a>(&'a self, _: &'a str, _: Duration) -> Borrowed<'a, bool> {
        Box::pin(async { true })
    }

    fn reset_seen(&self) {}
}

/// The key prefix of the virtual media downloads of `sys`: a start waits
/// for them (the task store keys each slot's insert under it).
pub fn media_work_of(sys: &System) -> String {
    format!("vmedia:{}:", sys.id)
}

/// One endpoint's BMC (see the module's documentation). Cheap to clone.
#[derive(Clone)]
pub struct Core {
    /// The endpoint's view of the machines, every change through it
    /// announced on `changes` ([`changes::Announced`]).
    pub backend: Arc<dyn Backend>,
    /// The same view, unannounced: what other views are made over.
    machines: Arc<dyn Backend>,
    /// Every change of the endpoint's machines, as records.
    pub changes: Arc<changes::Changes>,
    pub locks: Arc<SystemLocks>,
    /// The behaviour profiles systems may name.
    pub profiles: Arc<Profiles>,
    /// The process's injected faults.
    pub faults: Arc<Faults>,
    /// On an endpoint of its own: the names of its systems (what a fault
    /// aimed at them hits, service root included).
    pub endpoint_systems: Option<Arc<Vec<String>>>,
    /// The last power action of each system, for profiles whose BMC is
    /// busy or whose host is in POST for a while after one.
    pub power_clock: Arc<PowerClock>,
    /// Power-off actions are refused (sushy-tools'
    /// `SUSHY_EMULATOR_DISABLE_POWER_OFF`, `--disable-power-off`).
    pub power_off_disabled: bool,
    /// Boot device requests are checked and answered, and the machine
    /// keeps booting its own order (sushy-tools'
    /// `SUSHY_EMULATOR_IGNORE_BOOT_DEVICE`); the boot mode still changes.
    pub boot_device_ignored: bool,
    /// The background work power actions wait for and wake.
    pub work: Arc<dyn Work>,
    /// How many times each system's BMC restarted, and a wake-up for
    /// work that waits for one ([`Core::bmc_restart`]).
    restarts: Arc<Restarts>,
}

/// BMC restarts per system, with a wake-up at each.
#[derive(Default)]
struct Restarts {
    counts: Mutex<HashMap<String, u64>>,
    wake: tokio::sync::Notify,
}

impl Core {
    /// The BMC of `backend`'s machines, with the built-in profiles, no
    /// faults and no background work.
    pub fn new(backend: Arc<dyn Backend>) -> Core {
        let changes = Arc::new(changes::Changes::default());
        Core {
            backend: Arc::new(changes::Announced::new(backend.clone(), changes.clone())),
            machines: backend,
            changes,
            locks: Arc::default(),
            profiles: Arc::default(),
            faults: Arc::default(),
            endpoint_systems: None,
            power_clock: Arc::default(),
            power_off_disabled: false,
            boot_device_ignored: false,
            work: Arc::new(NoWork),
            restarts: Arc::default(),
        }
    }

    /// The same core, its power actions waiting for and waking `work`.
    pub fn with_work(mut self, work: Arc<dyn Work>) -> Core {
        self.work = work;
        self
    }

    /// The machines this core sees, unannounced: for views over them
    /// that a core of their own announces.
    pub fn machines(&self) -> &Arc<dyn Backend> {
        &self.machines
    }

    /// This core over `view` instead (the same change stream).
    pub fn set_view(&mut self, view: Arc<dyn Backend>) {
        self.backend = Arc::new(changes::Announced::new(view.clone(), self.changes.clone()));
        self.machines = view;
    }

    /// The profile of `sys`. Inventories are checked against the
    /// profiles at start-up; a name only a state file from elsewhere
    /// could bring falls back to the generic one.
    pub fn profile(&self, sys: &System) -> &'static Profile {
        self.profiles
            .get(&sys.profile)
            .unwrap_or_else(|_| profile::generic())
    }

    /// Clears `book` of `sys` (ClearLog, IPMI Clear SEL): it empties and
    /// keeps one entry, the clearing, which the change stream announces
    /// with the cause the caller runs under.
    pub fn clear_log(&self, sys: &System, book: log::Book) {
        self.changes.log.clear(&sys.id, book);
        self.changes.send(changes::ChangeRecord {
            system: sys.id.clone(),
            name: sys.name.clone(),
            what: changes::What::LogCleared { book },
            cause: changes::current_cause(),
            at: std::time::SystemTime::now(),
        });
    }

    /// The BMC of `sys` restarts (`reason`: `user initiated`): its log
    /// keeps it (an iDRAC's Lifecycle log says RAC0182, which tools read
    /// for the last BMC reboot), and it comes back running the firmware
    /// staged for its restart, if any.
    pub async fn bmc_restarted(&self, sys: &System, reason: &'static str) {
        *lock(&self.restarts.counts)
            .entry(sys.id.clone())
            .or_default() += 1;
        self.restarts.wake.notify_waiters();
        self.changes.send(changes::ChangeRecord {
            system: sys.id.clone(),
            name: sys.name.clone(),
            what: changes::What::BmcRestarted { reason },
            cause: changes::current_cause(),
            at: std::time::SystemTime::now(),
        });
        let Ok(locked) = self.locked(&sys.id).await else {
            return;
        };
        let staged = locked
            .sys
            .bmc
            .firmware
            .staged
            .get(&crate::firmware::Component::Bmc);
        if staged.is_some_and(|s| s.apply == crate::model::firmware::ApplyAt::OnReset) {
            let change = Change::Firmware(crate::model::firmware::FirmwareChange::BmcRestarted);
            if let Err(e) = self.backend.apply(&sys.id, vec![change]).await {
                tracing::warn!(system = %sys.name, error = %e, "BMC firmware not installed at restart");
            }
        }
    }

    /// Waits until the BMC of system `id` restarts (work its restart
    /// ends, as a task it never finishes).
    pub async fn bmc_restart(&self, id: &str) {
        let count = || lock(&self.restarts.counts).get(id).copied().unwrap_or(0);
        let before = count();
        loop {
            let woken = self.restarts.wake.notified();
            if count() != before {
                return;
            }
            woken.await;
        }
    }

    /// Takes the system's lock and reads it, for a read-check-write.
    pub async fn locked(&self, id: &str) -> Result<Locked, BackendError> {
        let guard = self.locks.lock(id).await;
        let sys = self.backend.system(id).await?;
        let profile = self.profile(&sys);
        Ok(Locked {
            sys,
            profile,
            _guard: guard,
        })
    }
}

/// A system read under its lock; the lock is held until this is dropped.
pub struct Locked {
    pub sys: System,
    pub profile: &'static Profile,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Locked {
    /// The system, its profile and the lock, to hold the lock longer
    /// than the system read under it.
    pub fn into_parts(self) -> (System, &'static Profile, tokio::sync::OwnedMutexGuard<()>) {
        (self.sys, self.profile, self._guard)
    }
}
