//! One endpoint's EventService: its settings, its subscriptions (push
//! and SSE), the events it has published (a bounded buffer SSE clients
//! resume from), and the pump that turns the core's change stream into
//! events while anyone subscribes.
//!
//! Invariants: publishing never waits (each push subscription has its
//! own bounded queue and delivery task; a full queue drops and counts);
//! while nobody subscribes the change stream is not listened to, so the
//! BMC does no work for events; machine-made changes (a guest powering
//! itself off) are found by reading the machines every [`WATCH`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};

use super::destination::Spec;
use super::record::{Event, Place, Record, Shape};
use super::vendor::records_for;
use super::EventOptions;
use crate::api::AppState;
use crate::sync::{lock, read, write};

/// Events an SSE client may resume from (`Last-Event-ID`).
pub const BUFFER: usize = 200;
/// Events a push subscription's queue holds before it drops.
pub const QUEUE: usize = 256;
/// How often the machines are read for changes they made themselves.
pub const WATCH: Duration = Duration::from_secs(1);

/// The settings a client changes (`PATCH /EventService`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    pub retry_attempts: u32,
    pub retry_interval: u32,
}

/// The receiving end of a push subscription's queue.
pub type Queue = mpsc::Receiver<Arc<Event>>;

/// One subscription, push or SSE.
pub struct Sub {
    pub id: String,
    pub spec: RwLock<Spec>,
    /// Suspended by its retry policy or a client (push only).
    pub suspended: AtomicBool,
    /// Wakes a suspended delivery task (resumed) or ends it (deleted).
    pub wake: watch::Sender<u64>,
    /// Set when the subscription is deleted: its task or stream ends.
    pub closed: AtomicBool,
    /// Events dropped because its queue was full.
    pub dropped: AtomicU64,
    queue: Option<mpsc::Sender<Arc<Event>>>,
}

impl Sub {
    /// Wakes whatever waits on this subscription.
    pub fn nudge(&self) {
        self.wake.send_modify(|n| *n += 1);
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// Why a subscription was not created.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The profile's limit (of all, or of SSE streams) is reached.
    Limit,
}

/// One endpoint's EventService (see the module's documentation).
pub struct Events {
    pub options: EventOptions,
    pub profile: crate::profile::Events,
    settings: Mutex<Settings>,
    subs: Mutex<BTreeMap<u64, Arc<Sub>>>,
    next_sub: AtomicU64,
    next_event: AtomicU64,
    buffer: Mutex<VecDeque<Arc<Event>>>,
    /// Every published event, for the SSE streams.
    pub sse: broadcast::Sender<Arc<Event>>,
    /// Whether the pump runs.
    pump: Mutex<bool>,
}

impl Default for Events {
    fn default() -> Self {
        Events::new(EventOptions::default(), &crate::profile::Events::default())
    }
}

impl Events {
    pub fn new(options: EventOptions, profile: &crate::profile::Events) -> Events {
        Events {
            options,
            profile: profile.clone(),
            settings: Mutex::new(Settings {
                enabled: profile.enabled,
                retry_attempts: profile.retry_attempts,
                retry_interval: profile.retry_interval_seconds,
            }),
            subs: Mutex::default(),
            next_sub: AtomicU64::new(1),
            next_event: AtomicU64::new(1),
            buffer: Mutex::default(),
            sse: broadcast::channel(QUEUE).0,
            pump: Mutex::new(false),
        }
    }

    pub fn settings(&self) -> Settings {
        *lock(&self.settings)
    }

    /// Applies new settings; turning the service off ends the SSE
    /// streams (they look at it).
    pub fn set_settings(&self, s: Settings) {
        *lock(&self.settings) = s;
        if !s.enabled {
            for sub in lock(&self.subs).values() {
                sub.nudge();
            }
        }
    }

    pub fn shape(&self) -> Shape<'_> {
        Shape::of(&self.profile)
    }

    /// Whether a subscription wants its events' origins expanded.
    pub fn wants_origins(&self) -> bool {
        lock(&self.subs)
            .values()
            .any(|s| read(&s.spec).include_origin)
    }

    /// The subscriptions, in Id order.
    pub fn subs(&self) -> Vec<Arc<Sub>> {
        lock(&self.subs).values().cloned().collect()
    }

    pub fn sub(&self, id: &str) -> Option<Arc<Sub>> {
        let n: u64 = id.parse().ok()?;
        lock(&self.subs).get(&n).filter(|s| s.id == id).cloned()
    }

    /// Adds a subscription within the profile's limits; a push one gets
    /// its queue (whose other end is returned, for its delivery task).
    pub fn add(&self, spec: Spec) -> Result<(Arc<Sub>, Option<Queue>), Refused> {
        let mut subs = lock(&self.subs);
        let sse = subs.values().filter(|s| read(&s.spec).sse).count();
        let limits = &self.profile;
        if subs.len() >= limits.max_subscriptions || spec.sse && sse >= limits.max_sse {
            return Err(Refused::Limit);
        }
        let (queue, rx) = if spec.sse {
            (None, None)
        } else {
            let (tx, rx) = mpsc::channel(QUEUE);
            (Some(tx), Some(rx))
        };
        let n = self.next_sub.fetch_add(1, Ordering::Relaxed);
        let sub = Arc::new(Sub {
            id: n.to_string(),
            spec: RwLock::new(spec),
            suspended: AtomicBool::new(false),
            wake: watch::channel(0).0,
            closed: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            queue,
        });
        subs.insert(n, sub.clone());
        Ok((sub, rx))
    }

    /// Deletes a subscription: its task or stream ends. `false` when it
    /// was gone already.
    pub fn remove(&self, id: &str) -> bool {
        let Ok(n) = id.parse::<u64>() else {
            return false;
        };
        let Some(sub) = lock(&self.subs).remove(&n) else {
            return false;
        };
        sub.closed.store(true, Ordering::Relaxed);
        sub.nudge();
        true
    }

    /// The BMC restarted: its SSE streams end (their connections went
    /// with it), its push subscriptions stay, as iDRAC and bmcweb keep
    /// them in persistent storage, unless the profile says a restart
    /// loses them; the buffer a stream resumes from starts afresh.
    pub fn restarted(&self) {
        let keep = self.profile.subscriptions_survive_reset;
        let gone: Vec<String> = lock(&self.subs)
            .values()
            .filter(|s| read(&s.spec).sse || !keep)
            .map(|s| s.id.clone())
            .collect();
        for id in &gone {
            self.remove(id);
        }
        lock(&self.buffer).clear();
        tracing::info!(ended = gone.len(), "BMC restarted: subscriptions ended");
    }

    /// Publishes records as one event (nothing while the service is
    /// off): into the buffer, to the SSE streams, and into the queue of
    /// every push subscription that takes any of them.
    pub fn publish(&self, records: Vec<Record>) {
        if records.is_empty() || !self.settings().enabled {
            return;
        }
        let ev = Arc::new(Event {
            id: self.next_event.fetch_add(1, Ordering::Relaxed),
            records,
        });
        {
            let mut b = lock(&self.buffer);
            if b.len() == BUFFER {
                b.pop_front();
            }
            b.push_back(ev.clone());
        }
        // No SSE stream is no error.
        let _ = self.sse.send(ev.clone());
        for sub in lock(&self.subs).values() {
            let Some(q) = &sub.queue else { continue };
            let takes = {
                let spec = read(&sub.spec);
                ev.records.iter().any(|r| spec.takes(r))
            };
            if !takes {
                continue;
            }
            if q.try_send(ev.clone()).is_err() {
                let n = sub.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(subscription = %sub.id, dropped = n, "event queue full: event dropped");
            }
        }
    }

    /// Publishes what happened to a resource of the service's own (an
    /// account, a session, a service's settings) as one event.
    pub fn resource(&self, happened: super::record::Happened, uri: String, kind: &'static str) {
        self.publish(vec![Record::resource(happened, uri, kind)]);
    }

    /// Publishes a task's state as one TaskEvent (see [`Record::task`]).
    pub fn task(&self, key: &'static str, id: &str, uri: String) {
        self.publish(vec![Record::task(key, id, uri)]);
    }

    /// A task's TaskProgressChanged.
    pub fn task_progress(&self, id: &str, percent: u8, uri: String) {
        self.publish(vec![Record::task_progress(id, percent, uri)]);
    }

    /// A new event Id, for an event sent to one destination only (a test
    /// event is published; a heartbeat is not).
    pub fn next_id(&self) -> u64 {
        self.next_event.fetch_add(1, Ordering::Relaxed)
    }

    /// The buffered events after `last` (an SSE client's Last-Event-ID),
    /// and whether some after it are no longer buffered.
    pub fn since(&self, last: u64) -> (Vec<Arc<Event>>, bool) {
        let b = lock(&self.buffer);
        let lost = b.front().is_some_and(|first| first.id > last + 1)
            || b.is_empty() && self.next_event.load(Ordering::Relaxed) > last + 1;
        (b.iter().filter(|e| e.id > last).cloned().collect(), lost)
    }

    /// Starts the pump unless it runs (called when a subscription is
    /// added).
    pub fn ensure_pump(&self, st: &AppState) {
        let mut running = lock(&self.pump);
        if !*running {
            *running = true;
            // Subscribed now, not when the task first runs: a change
            // right after the subscription was made is not missed.
            tokio::spawn(pump(st.clone(), st.core.changes.subscribe()));
        }
    }

    /// Whether the pump may stop: nobody subscribes. Decided under the
    /// lock `ensure_pump` takes, so a subscription added meanwhile finds
    /// it stopped and starts another.
    fn pump_may_stop(&self) -> bool {
        let mut running = lock(&self.pump);
        if lock(&self.subs).is_empty() {
            *running = false;
            true
        } else {
            false
        }
    }
}

/// Turns the core's change records into events while anyone subscribes,
/// and reads the machines every [`WATCH`] so that what they do by
/// themselves is seen.
async fn pump(
    st: AppState,
    mut rx: tokio::sync::broadcast::Receiver<crate::bmc::changes::ChangeRecord>,
) {
    let events = st.events.clone();
    let mut places: HashMap<String, Place> = HashMap::new();
    let mut tick = tokio::time::interval(WATCH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tracing::debug!("event pump started");
    loop {
        tokio::select! {
            r = rx.recv() => match r {
                Ok(change) => {
                    let place = match places.get(&change.system) {
                        Some(p) => p.clone(),
                        None => match place_of(&st, &change.system).await {
                            Some(p) => places.entry(change.system.clone()).or_insert(p).clone(),
                            None => continue,
                        },
                    };
                    let mut records = records_for(&change, &place, st.root_profile);
                    if events.wants_origins() {
                        expand_origins(&st, &mut records).await;
                    }
                    events.publish(records);
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(lost = n, "event pump fell behind the change stream");
                    events.publish(vec![Record::base("EventBufferExceeded", None, "EventDestination")]);
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = tick.tick() => {
                if events.pump_may_stop() {
                    break;
                }
                watch_machines(&st).await;
            }
        }
    }
    tracing::debug!("event pump stopped");
}

/// Renders each record's origin as a GET would (for subscriptions with
/// `IncludeOriginOfCondition`); one that does not render stays a link.
async fn expand_origins(st: &AppState, records: &mut [Record]) {
    for r in records {
        if let Some(uri) = &r.origin {
            r.origin_body = crate::api::render(st, uri).await.map(Arc::new);
        }
    }
}

/// Reads every machine once: what changed since the last read and no
/// call made is announced as the machine's.
async fn watch_machines(st: &AppState) {
    let Ok(refs) = st.core.backend.systems().await else {
        return;
    };
    for r in refs {
        // A machine that cannot be read now is read next time.
        let _ = st.core.backend.system(&r.id).await;
    }
}

/// Where the resources of system `id` are on this endpoint.
async fn place_of(st: &AppState, id: &str) -> Option<Place> {
    let sys = st.core.backend.system(id).await.ok()?;
    Some(place(st, &sys))
}

/// Where the resources of `sys` are on this endpoint.
pub fn place(st: &AppState, sys: &crate::model::System) -> Place {
    if let Some(at) = st.replay.as_ref().and_then(|r| r.place(&sys.id)) {
        return at;
    }
    let system = format!("/redfish/v1/Systems/{}", sys.id);
    let manager = format!("/redfish/v1/Managers/{}", st.manager_id(sys));
    let vm = &st.profile(sys).vmedia;
    let media = if !st.features.vmedia() {
        None
    } else if let Some(ids) = vm.ids(false) {
        Some((format!("{manager}/VirtualMedia"), ids))
    } else {
        vm.ids(true)
            .map(|ids| (format!("{system}/VirtualMedia"), ids))
    };
    Place {
        system,
        manager,
        media,
    }
}

/// Changes a subscription's spec (a PATCH, checked whole already).
pub fn set_spec(sub: &Sub, spec: Spec) {
    *write(&sub.spec) = spec;
    sub.nudge();
}
