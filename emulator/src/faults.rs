//! Fault injection, for testing how drivers cope with a misbehaving BMC:
//! added latency, errors at a rate (with the vendor's error body), dropped
//! connections, slow power transitions, a BMC "reboot" (the service
//! unavailable for N seconds, its sessions lost) and sessions expired on
//! demand.
//!
//! Rules come from the config (`[faults]`) and from the admin endpoint at
//! runtime (`admin.rs`); they select requests by system name, method and
//! path. Every random decision draws from one generator seeded with the
//! rules' `seed`, so a run with the same requests in the same order makes
//! the same decisions. Without rules or outages a request pays one atomic
//! load.
//!
//! This module is the runtime (`Faults`: decisions, outages, the services'
//! session stores); the rules and their checks are in `rules`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::auth::AuthStore;
use crate::sync::lock;

mod rules;
#[cfg(test)]
mod tests;

pub use rules::{
    FaultConfig, Rule, EMPTY_FIELDS, EVENT, IPMI, MAX_LATENCY_MS, MAX_PATH, MAX_POWER_DELAY_MS,
    MAX_RULES, MAX_SYSTEMS, UPDATE,
};

/// A BMC reboot in progress.
#[derive(Debug, Clone)]
struct Outage {
    systems: Vec<String>,
    until: Instant,
}

/// The services' session stores, with the systems each serves, so that a
/// reboot or an expiry reaches the right BMC.
struct Service {
    systems: Vec<String>,
    auth: Arc<AuthStore>,
}

struct State {
    config: FaultConfig,
    /// How many requests each rule has failed or dropped (for `times`).
    fired: Vec<u32>,
    rng: StdRng,
    outages: Vec<Outage>,
}

/// What happens to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Pass,
    /// Fail with this status (or the default for the message, else the
    /// profile's busy error, when `None`) and this message.
    Fail {
        status: Option<u16>,
        message_id: Option<String>,
    },
    Drop,
    /// The BMC is rebooting: 503 for this many more seconds.
    Unavailable(u32),
}

/// What happens to one firmware update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdateFault {
    /// Added to the time the image takes to write.
    pub delay: Duration,
    /// The write fails; nothing is installed.
    pub fail: bool,
    /// The task hangs in Running until the BMC restarts.
    pub stuck: bool,
}

/// What happens to one event delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFault {
    pub delay: Duration,
    pub drop: bool,
    pub duplicate: bool,
    /// Held back and sent after the next delivery.
    pub reorder: bool,
    /// Record fields sent empty.
    pub empty: Vec<String>,
}

/// The process's faults, shared by every service.
pub struct Faults {
    active: AtomicBool,
    state: Mutex<State>,
    services: Mutex<Vec<Service>>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults::new(FaultConfig::default())
    }
}

impl Faults {
    /// Faults from a checked configuration.
    pub fn new(config: FaultConfig) -> Self {
        let f = Faults {
            active: AtomicBool::new(false),
            state: Mutex::new(State {
                rng: StdRng::seed_from_u64(config.seed),
                config: FaultConfig::default(),
                fired: Vec::new(),
                outages: Vec::new(),
            }),
            services: Mutex::new(Vec::new()),
        };
        f.replace(config);
        f
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Whether anything is injected at all (the fast path's one load).
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    fn refresh(&self, st: &mut State) {
        let now = Instant::now();
        st.outages.retain(|o| o.until > now);
        self.active.store(
            !st.config.rules.is_empty() || !st.outages.is_empty(),
            Ordering::Relaxed,
        );
    }

    /// Replaces the rules and restarts the generator from their seed.
    pub fn replace(&self, config: FaultConfig) {
        let mut st = self.lock();
        st.rng = StdRng::seed_from_u64(config.seed);
        st.fired = vec![0; config.rules.len()];
        st.config = config;
        self.refresh(&mut st);
    }

    /// No rules, no outages.
    pub fn clear(&self) {
        let mut st = self.lock();
        st.config.rules.clear();
        st.fired.clear();
        st.outages.clear();
        self.refresh(&mut st);
    }

    pub fn config(&self) -> FaultConfig {
        self.lock().config.clone()
    }

    /// How many requests each rule has failed or dropped, in rule order.
    pub fn fired(&self) -> Vec<u32> {
        self.lock().fired.clone()
    }

    /// Outages in progress: (systems, seconds left).
    pub fn outages(&self) -> Vec<(Vec<String>, u32)> {
        let mut st = self.lock();
        self.refresh(&mut st);
        let now = Instant::now();
        st.outages
            .iter()
            .map(|o| (o.systems.clone(), secs_left(o.until, now)))
            .collect()
    }

    /// Registers a service's session store and the systems it serves.
    pub fn register(&self, systems: Vec<String>, auth: Arc<AuthStore>) {
        lock(&self.services).push(Service { systems, auth });
    }

    /// Drops the sessions of the services that serve any of `systems`
    /// (all services when empty); returns how many were dropped.
    pub fn expire_sessions(&self, systems: &[String]) -> usize {
        let services = lock(&self.services);
        services
            .iter()
            .filter(|s| systems.is_empty() || s.systems.iter().any(|n| systems.contains(n)))
            .map(|s| s.auth.drop_all_sessions())
            .sum()
    }

    /// A BMC reboot: the BMCs of `systems` (all when empty) answer 503 for
    /// `secs` seconds and lose their sessions.
    pub fn reboot(&self, systems: Vec<String>, secs: u64) {
        self.expire_sessions(&systems);
        self.outage(systems, secs);
    }

    /// The BMCs of `systems` (all when empty) answer 503 for `secs`
    /// seconds (their sessions kept: a reset of one BMC of a service that
    /// serves many, whose sessions are the service's).
    pub fn outage(&self, systems: Vec<String>, secs: u64) {
        let mut st = self.lock();
        st.outages.push(Outage {
            systems,
            until: Instant::now() + Duration::from_secs(secs),
        });
        self.refresh(&mut st);
    }

    /// Whether the BMC of any of `systems` is away (rebooting, or without
    /// power): its IPMI over LAN is then silent too.
    pub fn away(&self, systems: &[String]) -> bool {
        if !self.active() {
            return false;
        }
        let mut st = self.lock();
        self.refresh(&mut st);
        st.outages
            .iter()
            .any(|o| o.systems.is_empty() || o.systems.iter().any(|s| systems.contains(s)))
    }

    /// Decides a request's fate: the latency to add first, then what
    /// happens. `systems` are the names the request concerns.
    pub fn decide(&self, method: &str, path: &str, systems: &[String]) -> (Duration, Decision) {
        let mut st = self.lock();
        self.refresh(&mut st);
        let now = Instant::now();
        let outage = st
            .outages
            .iter()
            .filter(|o| o.systems.is_empty() || o.systems.iter().any(|s| systems.contains(s)))
            .map(|o| o.until)
            .max();
        if let Some(until) = outage {
            return (Duration::ZERO, Decision::Unavailable(secs_left(until, now)));
        }
        let State {
            config, rng, fired, ..
        } = &mut *st;
        let mut latency = Duration::ZERO;
        let mut decision = Decision::Pass;
        for (r, fired) in config.rules.iter().zip(fired.iter_mut()) {
            if r.times.is_some_and(|n| *fired >= n) || !r.matches(method, path, systems) {
                continue;
            }
            latency = latency.saturating_add(Duration::from_millis(r.latency_ms));
            if decision != Decision::Pass {
                continue;
            }
            if r.drop_rate > 0.0 && rng.random::<f64>() < r.drop_rate {
                decision = Decision::Drop;
            } else if r.error_rate > 0.0 && rng.random::<f64>() < r.error_rate {
                decision = Decision::Fail {
                    status: r.status,
                    message_id: r.message_id.clone(),
                };
            } else {
                continue;
            }
            *fired += 1;
        }
        (latency, decision)
    }

    /// Runs `decide` on every rule of pseudo-method `method` selecting
    /// `path` and `systems` and not spent, with a draw from the seeded
    /// generator (`hit(rate)`); `decide` says whether the rule fired.
    fn each_rule<F>(&self, method: &str, path: &str, systems: &[String], mut decide: F)
    where
        F: FnMut(&Rule, &mut dyn FnMut(f64) -> bool) -> bool,
    {
        if !self.active() {
            return;
        }
        let mut st = self.lock();
        let State {
            config, rng, fired, ..
        } = &mut *st;
        for (r, fired) in config.rules.iter().zip(fired.iter_mut()) {
            if r.times.is_some_and(|n| *fired >= n) || !r.matches(method, path, systems) {
                continue;
            }
            let mut hit = |rate: f64| rate > 0.0 && rng.random::<f64>() < rate;
            if decide(r, &mut hit) {
                *fired += 1;
            }
        }
    }

    /// Decides an event delivery's fate (to a destination whose URL's
    /// path is `path`): the delay first, then dropped, or sent twice,
    /// held back, with fields emptied.
    pub fn decide_event(&self, path: &str) -> EventFault {
        let mut out = EventFault::default();
        self.each_rule(EVENT, path, &[], |r, hit| {
            out.delay = out
                .delay
                .saturating_add(Duration::from_millis(r.latency_ms));
            let (drop, duplicate, reorder) =
                (hit(r.drop_rate), hit(r.duplicate_rate), hit(r.reorder_rate));
            out.drop |= drop;
            out.duplicate |= duplicate;
            out.reorder |= reorder;
            out.empty.extend(r.empty_fields.iter().cloned());
            drop || duplicate || reorder || !r.empty_fields.is_empty()
        });
        out
    }

    /// Decides a firmware update's fate (of `system`, its image at a URL
    /// whose path is `path`): longer, failed, or stuck.
    pub fn decide_update(&self, system: &str, path: &str) -> UpdateFault {
        let mut out = UpdateFault::default();
        self.each_rule(UPDATE, path, &[system.to_string()], |r, hit| {
            out.delay = out
                .delay
                .saturating_add(Duration::from_millis(r.latency_ms));
            let (fail, stuck) = (hit(r.error_rate), hit(r.stuck_rate));
            out.fail |= fail;
            out.stuck |= stuck;
            fail || stuck
        });
        out
    }

    /// How much later than accepted a power action of these systems takes
    /// effect.
    pub fn power_delay(&self, systems: &[String]) -> Duration {
        let st = self.lock();
        let ms = st
            .config
            .rules
            .iter()
            .filter(|r| r.selects_systems(systems))
            .map(|r| r.power_delay_ms)
            .max()
            .unwrap_or(0);
        Duration::from_millis(ms)
    }
}

fn secs_left(until: Instant, now: Instant) -> u32 {
    let left = until.saturating_duration_since(now);
    (left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1) as u32
}
