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

mod diff;
mod words;

use std::collections::HashMap;
use std::future::Future;
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
use diff::differences;

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
pub(super) fn current_cause() -> Cause {
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
    /// A component runs new firmware (`before`: `None` where it ran the
    /// factory's).
    Firmware {
        component: crate::model::firmware::Component,
        before: Option<crate::model::firmware::Installed>,
        after: crate::model::firmware::Installed,
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
    /// A log of the system was cleared (ClearLog, IPMI Clear SEL).
    LogCleared {
        book: super::log::Book,
    },
    /// The system's BMC restarted (a Manager reset), for `reason`.
    BmcRestarted {
        reason: &'static str,
    },
    /// The machine took a power action (`reset`, from `before`): sent as
    /// the machine accepts it, ahead of the records of what it moved (its
    /// power, its boot), which may come later.
    Reset {
        reset: ResetType,
        before: PowerState,
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

/// The stream of one BMC's change records, and its log
/// ([`Log`](super::log::Log)), which keeps every record as it is made.
pub struct Changes {
    tx: broadcast::Sender<ChangeRecord>,
    pub log: super::log::Log,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            tx: broadcast::channel(CAPACITY).0,
            log: super::log::Log::default(),
        }
    }
}

impl Changes {
    /// The records from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ChangeRecord> {
        self.tx.subscribe()
    }

    /// Sends a record made elsewhere in the core (a log cleared), after
    /// the log keeps it.
    pub fn send(&self, record: ChangeRecord) {
        tracing::info!("{}: {} ({})", record.name, record.what, record.cause);
        self.log.keep(&record);
        // No subscriber is no error: nobody listens yet.
        let _ = self.tx.send(record);
    }

    fn announce(&self, before: &System, after: &System, cause: &Cause, power: bool) {
        let at = SystemTime::now();
        for what in differences(before, after, power) {
            self.send(ChangeRecord {
                system: after.id.clone(),
                name: after.name.clone(),
                what,
                cause: cause.clone(),
                at,
            });
        }
    }
}

/// The parts of a system its machine changes by itself: the power state,
/// the last boot, the boot override a boot consumes, the media a guest
/// ejects. Everything else moves only through a call, announced when the
/// call ends; so a read compares these, never the whole system.
#[derive(Debug, Clone, PartialEq)]
struct Machine {
    power: PowerState,
    last_boot: Option<BootRecord>,
    boot: BootOverride,
    cd: MediaState,
    floppy: MediaState,
}

impl Machine {
    fn of(sys: &System) -> Machine {
        let b = &sys.bmc;
        Machine {
            power: sys.power,
            last_boot: b.last_boot.clone(),
            boot: b.boot.clone(),
            cd: b.cd.clone(),
            floppy: b.floppy.clone(),
        }
    }

    /// Whether `sys` shows these parts (compared in place, not copied).
    fn shown_by(&self, sys: &System) -> bool {
        let b = &sys.bmc;
        self.power == sys.power
            && self.last_boot == b.last_boot
            && self.boot == b.boot
            && self.cd == b.cd
            && self.floppy == b.floppy
    }

    /// `now` as it was when these parts were seen.
    fn before(&self, now: &System) -> System {
        let mut was = now.clone();
        self.put_into(&mut was);
        was
    }

    /// Sets these parts of `sys`.
    fn put_into(&self, sys: &mut System) {
        sys.power = self.power;
        sys.bmc.last_boot = self.last_boot.clone();
        sys.bmc.boot = self.boot.clone();
        sys.bmc.cd = self.cd.clone();
        sys.bmc.floppy = self.floppy.clone();
    }
}

/// What was last seen of a system's machine, the system as the last
/// change left it (kept for systems that change, not for those only
/// read), how many changes began or ended since it was first seen, and
/// how many are under way.
#[derive(Default)]
struct Seen {
    machine: Option<Machine>,
    changed: Option<System>,
    generation: u64,
    in_flight: u32,
}

/// What an [`Announced`] backend keeps, shared with the background work
/// (media downloads) whose changes it announces when they end.
struct Tracker {
    changes: Arc<Changes>,
    seen: Mutex<HashMap<String, Seen>>,
}

impl Tracker {
    fn generation(&self, id: &str) -> u64 {
        lock(&self.seen).get(id).map_or(0, |s| s.generation)
    }

    /// A read of `now`, begun at `generation`: what its machine moved
    /// since it was last seen, by nobody's call, is the machine's doing.
    /// A read that a change overlapped tells nothing (it may show the
    /// change half made). The first read of a system is where its records
    /// start from.
    fn observed(&self, now: &System, generation: u64) {
        let mut seen = lock(&self.seen);
        let Some(entry) = seen.get_mut(&now.id) else {
            if generation == 0 {
                let machine = Some(Machine::of(now));
                seen.insert(
                    now.id.clone(),
                    Seen {
                        machine,
                        ..Seen::default()
                    },
                );
            }
            return;
        };
        if entry.generation != generation || entry.in_flight > 0 {
            return;
        }
        match &entry.machine {
            // Nearly every read: a few comparisons, nothing copied.
            Some(m) if m.shown_by(now) => {}
            Some(m) => {
                let before = m.before(now);
                entry.machine = Some(Machine::of(now));
                self.changes.announce(&before, now, &Cause::Machine, true);
            }
            None => entry.machine = Some(Machine::of(now)),
        }
    }

    /// A change of `id` begins: the system before it, as the last change
    /// left it with its machine as last seen, when both are known (else
    /// the caller reads it and calls [`Tracker::begun`]).
    fn begin(&self, id: &str) -> Option<System> {
        let mut seen = lock(&self.seen);
        let entry = seen.entry(id.to_string()).or_default();
        entry.generation += 1;
        entry.in_flight += 1;
        let (machine, mut sys) = (entry.machine.as_ref()?, entry.changed.take()?);
        machine.put_into(&mut sys);
        Some(sys)
    }

    /// The system before a change was read afresh: a machine that moved
    /// since it was last seen moved by itself.
    fn begun(&self, id: &str, before: &System) {
        let mut seen = lock(&self.seen);
        let Some(entry) = seen.get_mut(id) else {
            return;
        };
        if let Some(m) = entry.machine.take() {
            if !m.shown_by(before) {
                self.changes
                    .announce(&m.before(before), before, &Cause::Machine, true);
            }
        }
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
        entry.in_flight = entry.in_flight.saturating_sub(1);
        let Some(after) = after else {
            entry.machine = None;
            entry.changed = None;
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
        entry.machine = Some(Machine::of(after));
        entry.changed = Some(after.clone());
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
            }),
        }
    }

    /// The backend it wraps.
    pub fn inner(&self) -> &Arc<dyn Backend> {
        &self.inner
    }

    /// A change of `id` begins: the system before it (`None` when it
    /// cannot be read).
    async fn begin(&self, id: &str) -> Option<System> {
        if let Some(known) = self.tracker.begin(id) {
            return Some(known);
        }
        let before = self.inner.system(id).await.ok()?;
        self.tracker.begun(id, &before);
        Some(before)
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
        let generation = self.tracker.generation(id);
        let sys = self.inner.system(id).await?;
        self.tracker.observed(&sys, generation);
        Ok(sys)
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let cause = current_cause();
        let before = self.begin(id).await;
        let done = self.inner.reset(id, reset).await;
        if let (Ok(()), Some(b)) = (&done, &before) {
            self.tracker.changes.send(ChangeRecord {
                system: b.id.clone(),
                name: b.name.clone(),
                what: What::Reset {
                    reset,
                    before: b.power,
                },
                cause: cause.clone(),
                at: SystemTime::now(),
            });
        }
        read_back(&self.inner, &self.tracker, id, before, &cause, true).await;
        done
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        let cause = current_cause();
        let before = self.begin(id).await;
        let after = self.inner.apply(id, changes).await;
        match &after {
            Ok(a) => self.tracker.end(id, before, Some(a), &cause, false),
            // Refused: nothing changed, nothing to announce.
            Err(_) => self.tracker.end(id, None, before.as_ref(), &cause, false),
        }
        after
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        let cause = current_cause();
        let before = self.begin(id).await;
        let started = self.inner.insert_media(id, slot, img).await;
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
    use crate::bmc::log::Book;
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
    async fn changes_nobody_listens_to_are_logged_and_a_machines_own_told_at_the_next_look() {
        let (b, changes, id) = announced();
        // Nobody listens: the change goes through, and the log keeps it.
        b.apply(&id, lit()).await.unwrap();
        assert_eq!(changes.log.read(&id, Book::All, |r| r.entries.len()), 1);
        let mut rx = changes.subscribe();
        // The machine moves by itself (under the announced view).
        b.inner.reset(&id, ResetType::On).await.unwrap();
        let sys = b.system(&id).await.unwrap();
        assert_eq!(sys.power, PowerState::On);
        let r = rx.try_recv().unwrap();
        assert_eq!(r.cause, Cause::Machine);
        assert!(
            matches!(
                r.what,
                What::Power {
                    after: PowerState::On,
                    ..
                }
            ),
            "{r:?}"
        );
        let sel = changes.log.read(&id, Book::Sel, |r| r.entries.len());
        assert!(sel >= 1, "the power-on is in the SEL");
        // Read again: nothing new.
        while rx.try_recv().is_ok() {}
        b.system(&id).await.unwrap();
        assert!(rx.try_recv().is_err(), "told once");
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
        let before = match b.tracker.begin(&id) {
            Some(known) => Some(known),
            None => b.inner.system(&id).await.ok(),
        };
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
