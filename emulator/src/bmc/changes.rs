//! The change stream: every change the BMC accepts, and every change of
//! its machines it observes, leaves as one typed [`ChangeRecord`]
//! (system, what changed with its before and after, cause, time) on a
//! bounded broadcast channel ([`Changes`]).
//!
//! Records are made in one place, [`Announced`]: the backend view of a
//! [`Core`](super::Core) wrapped so that every `apply`, `reset` and media
//! insert is compared before and after, whoever called it. The cause is
//! what the caller's task runs under ([`with_cause`]: the Redfish request,
//! the IPMI command, a BMC job); a difference found on a read that no
//! call made is the machine's own (a guest that powered itself off, a
//! power transition that ended).
//!
//! Invariants: a refused change leaves no record; a slow subscriber loses
//! the oldest records (it is told how many), never blocks the BMC.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use tokio::sync::broadcast;

use super::lock;
use crate::backend::{Backend, Completion, Result, SerialConsole};
use crate::model::{
    BiosState, BootOverride, BootRecord, Change, IndicatorLed, MediaImage, MediaSlot, MediaState,
    PowerRestorePolicy, PowerState, ResetType, SecureBoot, System, SystemRef,
};

/// Records a subscriber may fall behind by before it loses the oldest.
pub const CAPACITY: usize = 1024;

/// Who or what made a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A Redfish request: its method, path and account (if any).
    Redfish {
        method: String,
        path: String,
        user: Option<String>,
    },
    /// An IPMI command (`netfn`/`cmd`) from a session's user, or from
    /// the host's own in-band interface (no user).
    Ipmi {
        netfn: u8,
        cmd: u8,
        user: Option<String>,
    },
    /// Work the BMC runs on its own: a job (`Dell SCP import`), a timer
    /// (`IPMI boot flags valid`), a watchdog.
    Bmc(String),
    /// An injected fault (`power delay`).
    Fault(String),
    /// Nothing the BMC did: the machine changed by itself (its guest
    /// powered it off, a power transition ended).
    Machine,
}

tokio::task_local! {
    static CAUSE: Cause;
}

/// Runs `fut` with every change it makes caused by `cause`.
pub async fn with_cause<F: Future>(cause: Cause, fut: F) -> F::Output {
    CAUSE.scope(cause, fut).await
}

/// The cause of the changes the current task makes: what it runs under,
/// else the BMC itself.
fn current_cause() -> Cause {
    CAUSE
        .try_with(Cause::clone)
        .unwrap_or_else(|_| Cause::Bmc("unattributed".into()))
}

/// What changed, with its value before and after.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    Power {
        before: PowerState,
        after: PowerState,
    },
    Boot {
        before: BootOverride,
        after: BootOverride,
    },
    Media {
        slot: MediaSlot,
        before: MediaState,
        after: MediaState,
    },
    Bios {
        before: BiosState,
        after: BiosState,
    },
    SecureBoot {
        before: SecureBoot,
        after: SecureBoot,
    },
    Indicator {
        before: IndicatorLed,
        after: IndicatorLed,
    },
    AssetTag {
        before: String,
        after: String,
    },
    PowerRestore {
        before: PowerRestorePolicy,
        after: PowerRestorePolicy,
    },
    /// The machine started: what it booted.
    Booted {
        record: BootRecord,
    },
    /// Another part of the BMC's state (volumes, HTTPS boot CAs, NTP, the
    /// service identification, media certificate checking), by name.
    Other {
        part: &'static str,
    },
}

/// One change of one system.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    /// The system's Id in the backend (whatever Id an endpoint shows).
    pub system: String,
    pub name: String,
    pub what: What,
    pub cause: Cause,
    pub at: SystemTime,
}

/// The stream of one BMC's change records.
pub struct Changes {
    tx: broadcast::Sender<ChangeRecord>,
    /// Live subscriptions: read on every backend call, so an atomic
    /// rather than the channel's own count (behind its mutex).
    subscribers: Arc<AtomicUsize>,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            tx: broadcast::channel(CAPACITY).0,
            subscribers: Arc::default(),
        }
    }
}

/// A subscriber's end of the stream: the records from its subscription
/// on (a `broadcast::Receiver`, which it dereferences to).
pub struct Subscription {
    rx: broadcast::Receiver<ChangeRecord>,
    subscribers: Arc<AtomicUsize>,
}

impl std::ops::Deref for Subscription {
    type Target = broadcast::Receiver<ChangeRecord>;

    fn deref(&self) -> &Self::Target {
        &self.rx
    }
}

impl std::ops::DerefMut for Subscription {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.rx
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Changes {
    /// The records from now on.
    pub fn subscribe(&self) -> Subscription {
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        Subscription {
            rx: self.tx.subscribe(),
            subscribers: self.subscribers.clone(),
        }
    }

    /// Whether anyone subscribes.
    fn subscribed(&self) -> bool {
        self.subscribers.load(Ordering::Relaxed) > 0
    }

    fn announce(&self, before: &System, after: &System, cause: &Cause, power: bool) {
        let at = SystemTime::now();
        for what in differences(before, after, power) {
            tracing::debug!(system = %after.name, ?what, ?cause, "change");
            // No subscriber is no error: nobody listens yet.
            let _ = self.tx.send(ChangeRecord {
                system: after.id.clone(),
                name: after.name.clone(),
                what,
                cause: cause.clone(),
                at,
            });
        }
    }
}

/// What differs from `before` to `after`; the power state only with
/// `power` (a change of the BMC's state never moves it: a power state
/// that moved meanwhile is the machine's own doing).
fn differences(before: &System, after: &System, power: bool) -> Vec<What> {
    let (b, a) = (&before.bmc, &after.bmc);
    let mut out = Vec::new();
    if power && before.power != after.power {
        out.push(What::Power {
            before: before.power,
            after: after.power,
        });
    }
    if b.last_boot != a.last_boot {
        if let Some(record) = &a.last_boot {
            out.push(What::Booted {
                record: record.clone(),
            });
        }
    }
    if b.boot != a.boot {
        out.push(What::Boot {
            before: b.boot.clone(),
            after: a.boot.clone(),
        });
    }
    for (slot, x, y) in [
        (MediaSlot::Cd, &b.cd, &a.cd),
        (MediaSlot::Floppy, &b.floppy, &a.floppy),
    ] {
        if x != y {
            out.push(What::Media {
                slot,
                before: x.clone(),
                after: y.clone(),
            });
        }
    }
    if b.bios != a.bios {
        out.push(What::Bios {
            before: b.bios.clone(),
            after: a.bios.clone(),
        });
    }
    if b.secure_boot != a.secure_boot {
        out.push(What::SecureBoot {
            before: b.secure_boot.clone(),
            after: a.secure_boot.clone(),
        });
    }
    if b.indicator != a.indicator {
        out.push(What::Indicator {
            before: b.indicator,
            after: a.indicator,
        });
    }
    if b.asset_tag != a.asset_tag {
        out.push(What::AssetTag {
            before: b.asset_tag.clone(),
            after: a.asset_tag.clone(),
        });
    }
    if b.power_restore != a.power_restore {
        out.push(What::PowerRestore {
            before: b.power_restore,
            after: a.power_restore,
        });
    }
    let others: [(&'static str, bool); 6] = [
        ("storage", b.storage != a.storage),
        ("boot_certs", b.boot_certs != a.boot_certs),
        ("ntp", b.ntp != a.ntp),
        (
            "service_identification",
            b.service_identification != a.service_identification,
        ),
        ("cd_tls", b.cd_tls != a.cd_tls),
        ("floppy_tls", b.floppy_tls != a.floppy_tls),
    ];
    out.extend(
        others
            .into_iter()
            .filter(|(_, differs)| *differs)
            .map(|(part, _)| What::Other { part }),
    );
    out
}

/// The last snapshot of a system, how many changes began or ended since
/// it was first seen, and how many are under way.
#[derive(Default)]
struct Seen {
    last: Option<System>,
    generation: u64,
    in_flight: u32,
}

/// What an [`Announced`] backend keeps, shared with the background work
/// (media downloads) whose changes it announces when they end.
struct Tracker {
    changes: Arc<Changes>,
    seen: Mutex<HashMap<String, Seen>>,
    /// Whether `seen` holds snapshots (someone listened since it was last
    /// emptied).
    tracking: AtomicBool,
}

impl Tracker {
    /// Whether anyone takes the records: a subscriber, or the log at
    /// debug level. While nobody does, nothing is compared or kept (a
    /// change costs no extra read), and what was kept is dropped: when
    /// someone listens again, records start from what is seen then,
    /// never from a snapshot that missed changes meanwhile.
    fn listening(&self) -> bool {
        let on = self.changes.subscribed() || tracing::enabled!(tracing::Level::DEBUG);
        // Loaded before written: the read path of a service nobody
        // listens to stores nothing to the shared line.
        let was = self.tracking.load(Ordering::Relaxed);
        if on && !was {
            self.tracking.store(true, Ordering::Relaxed);
        } else if !on && was && self.tracking.swap(false, Ordering::Relaxed) {
            lock(&self.seen).clear();
        }
        on
    }

    fn generation(&self, id: &str) -> u64 {
        lock(&self.seen).get(id).map_or(0, |s| s.generation)
    }

    /// A read of `now`, begun at `generation`: what moved since the last
    /// snapshot by nobody's call is the machine's. A read that a change
    /// overlapped tells nothing (it may show the change half announced).
    fn observed(&self, now: &System, generation: u64) {
        let mut seen = lock(&self.seen);
        let entry = seen.entry(now.id.clone()).or_default();
        if entry.generation != generation || entry.in_flight > 0 {
            return;
        }
        // A read that finds what was seen (nearly every read) costs a
        // comparison, not a copy.
        if entry.last.as_ref() == Some(now) {
            return;
        }
        if let Some(last) = entry.last.replace(now.clone()) {
            self.changes.announce(&last, now, &Cause::Machine, true);
        }
    }

    /// A change of `id` begins: its snapshot before (the last seen).
    fn begin(&self, id: &str) -> Option<System> {
        let mut seen = lock(&self.seen);
        let entry = seen.entry(id.to_string()).or_default();
        entry.generation += 1;
        entry.in_flight += 1;
        entry.last.clone()
    }

    /// The change ended with `after` (`None`: failed or unknown). With
    /// `power` the call moves the power state; else a power state that
    /// moved meanwhile is the machine's own.
    fn end(
        &self,
        id: &str,
        before: Option<System>,
        after: Option<&System>,
        cause: &Cause,
        power: bool,
    ) {
        let mut seen = lock(&self.seen);
        let entry = seen.entry(id.to_string()).or_default();
        entry.generation += 1;
        // Saturating: what was kept may have been dropped meanwhile.
        entry.in_flight = entry.in_flight.saturating_sub(1);
        let Some(after) = after else {
            entry.last = None;
            return;
        };
        if let Some(before) = before {
            if !power && before.power != after.power {
                let mut moved = before.clone();
                moved.power = after.power;
                self.changes
                    .announce(&before, &moved, &Cause::Machine, true);
            }
            self.changes.announce(&before, after, cause, power);
        }
        entry.last = Some(after.clone());
    }
}

/// A backend whose every change is announced (see the module's
/// documentation).
pub struct Announced {
    inner: Arc<dyn Backend>,
    tracker: Arc<Tracker>,
}

impl Announced {
    pub fn new(inner: Arc<dyn Backend>, changes: Arc<Changes>) -> Self {
        Announced {
            inner,
            tracker: Arc::new(Tracker {
                changes,
                seen: Mutex::default(),
                tracking: AtomicBool::new(false),
            }),
        }
    }

    /// The backend it wraps.
    pub fn inner(&self) -> &Arc<dyn Backend> {
        &self.inner
    }

    /// A change of `id` begins: `None` while nobody listens (nothing is
    /// tracked), else the snapshot before it (read when none was seen;
    /// `None` inside when it cannot be read).
    async fn begin(&self, id: &str) -> Option<Option<System>> {
        if !self.tracker.listening() {
            return None;
        }
        Some(match self.tracker.begin(id) {
            Some(s) => Some(s),
            None => self.inner.system(id).await.ok(),
        })
    }
}

/// Ends a change whose result is read back from `inner`.
async fn read_back(
    inner: &Arc<dyn Backend>,
    tracker: &Tracker,
    id: &str,
    before: Option<System>,
    cause: &Cause,
    power: bool,
) {
    let after = inner.system(id).await.ok();
    tracker.end(id, before, after.as_ref(), cause, power);
}

#[async_trait]
impl Backend for Announced {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn systems(&self) -> Result<Vec<SystemRef>> {
        self.inner.systems().await
    }

    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>> {
        self.inner.find(id_or_name).await
    }

    async fn system(&self, id: &str) -> Result<System> {
        if !self.tracker.listening() {
            return self.inner.system(id).await;
        }
        let generation = self.tracker.generation(id);
        let sys = self.inner.system(id).await?;
        self.tracker.observed(&sys, generation);
        Ok(sys)
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let cause = current_cause();
        let tracked = self.begin(id).await;
        let done = self.inner.reset(id, reset).await;
        if let Some(before) = tracked {
            read_back(&self.inner, &self.tracker, id, before, &cause, true).await;
        }
        done
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        let cause = current_cause();
        let tracked = self.begin(id).await;
        let after = self.inner.apply(id, changes).await;
        if let Some(before) = tracked {
            match &after {
                Ok(a) => self.tracker.end(id, before, Some(a), &cause, false),
                // Refused: nothing changed, nothing to announce.
                Err(_) => self.tracker.end(id, None, before.as_ref(), &cause, false),
            }
        }
        after
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        let cause = current_cause();
        let tracked = self.begin(id).await;
        let started = self.inner.insert_media(id, slot, img).await;
        let Some(before) = tracked else {
            return started;
        };
        match started {
            Ok(Completion::Running(work)) => {
                // The device changes when the download ends, in the task
                // that waits for it: announced then, with this cause.
                let (inner, tracker) = (self.inner.clone(), self.tracker.clone());
                let id = id.to_string();
                Ok(Completion::Running(Box::pin(async move {
                    let done = work.await;
                    read_back(&inner, &tracker, &id, before, &cause, false).await;
                    done
                })))
            }
            other => {
                read_back(&self.inner, &self.tracker, id, before, &cause, false).await;
                other
            }
        }
    }

    fn manages_volumes(&self) -> bool {
        self.inner.manages_volumes()
    }

    async fn console(&self, id: &str) -> Result<SerialConsole> {
        self.inner.console(id).await
    }

    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fake::FakeBackend;
    use crate::backend::machines::fake_systems;
    use crate::model::{IndicatorLed, SystemSettings};

    fn announced() -> (Announced, Arc<Changes>, String) {
        let systems = fake_systems(1);
        let id = systems[0].id.clone();
        let fake: Arc<dyn Backend> =
            Arc::new(FakeBackend::new(systems, Default::default()).unwrap());
        let changes = Arc::new(Changes::default());
        (Announced::new(fake.clone(), changes.clone()), changes, id)
    }

    fn lit() -> Vec<Change> {
        vec![Change::Settings(SystemSettings {
            indicator: Some(IndicatorLed::Lit),
            ..Default::default()
        })]
    }

    #[tokio::test]
    async fn unheard_changes_are_neither_kept_nor_told_later_as_the_machines() {
        let (b, changes, id) = announced();
        // Nobody listens: the change goes through, nothing is kept.
        b.apply(&id, lit()).await.unwrap();
        assert!(lock(&b.tracker.seen).is_empty());
        let mut rx = changes.subscribe();
        // The first look after subscribing is where records start from.
        b.system(&id).await.unwrap();
        assert!(
            rx.try_recv().is_err(),
            "the earlier change is not the machine's"
        );
        let off = vec![Change::Settings(SystemSettings {
            indicator: Some(IndicatorLed::Off),
            ..Default::default()
        })];
        with_cause(Cause::Bmc("test".into()), b.apply(&id, off))
            .await
            .unwrap();
        let r = rx.try_recv().unwrap();
        assert_eq!(r.cause, Cause::Bmc("test".into()));
        assert_eq!(
            r.what,
            What::Indicator {
                before: IndicatorLed::Lit,
                after: IndicatorLed::Off
            }
        );
        assert!(rx.try_recv().is_err(), "one record per change");
    }

    #[tokio::test]
    async fn a_read_that_a_change_overlaps_announces_nothing() {
        let (b, changes, id) = announced();
        let mut rx = changes.subscribe();
        // A read begun before a change, ending after it with the old state.
        let stale = b.system(&id).await.unwrap();
        let generation = b.tracker.generation(&id);
        let new = b.apply(&id, lit()).await.unwrap();
        assert!(matches!(
            rx.try_recv().unwrap().what,
            What::Indicator { .. }
        ));
        b.tracker.observed(&stale, generation);
        assert!(
            rx.try_recv().is_err(),
            "the stale read is not a change back"
        );
        // A read while a change is under way, seeing it already.
        let off = SystemSettings {
            indicator: Some(IndicatorLed::Off),
            ..Default::default()
        };
        let before = b.tracker.begin(&id);
        let after = b
            .inner
            .apply(&id, vec![Change::Settings(off)])
            .await
            .unwrap();
        b.tracker.observed(&after, b.tracker.generation(&id));
        assert!(rx.try_recv().is_err(), "not the machine's doing");
        b.tracker
            .end(&id, before, Some(&after), &Cause::Bmc("t".into()), false);
        let r = rx.try_recv().unwrap();
        assert_eq!(r.cause, Cause::Bmc("t".into()));
        assert!(rx.try_recv().is_err(), "told once");
        assert_ne!(new, after);
    }
}
