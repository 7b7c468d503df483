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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::auth::AuthStore;

const METHODS: &[&str] = &["GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"];

/// Bounds of a fault configuration: whatever a client sends, a request
/// waits at most `MAX_RULES * MAX_LATENCY_MS` and no duration overflows.
pub const MAX_RULES: usize = 256;
/// The longest latency a rule adds (ms).
pub const MAX_LATENCY_MS: u64 = 60_000;
/// The longest delay of a power action (ms).
pub const MAX_POWER_DELAY_MS: u64 = 600_000;
/// The most systems one rule names.
pub const MAX_SYSTEMS: usize = 4096;
/// The longest path pattern (bytes).
pub const MAX_PATH: usize = 1024;
/// The members of a rule that are whole numbers, with their type's bound.
const WHOLE: &[(&str, u64)] = &[
    ("latency_ms", u64::MAX),
    ("power_delay_ms", u64::MAX),
    ("status", u16::MAX as u64),
];

/// One rule. A request matches when every given selector matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// System names; empty: every system (and the service root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<String>,
    /// HTTP methods; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// A path pattern; `*` stands for any run of characters
    /// (`/redfish/v1/Systems/*/Actions/*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Added to every matching request.
    #[serde(default)]
    pub latency_ms: u64,
    /// The share of matching requests that fail with `status`.
    #[serde(default)]
    pub error_rate: f64,
    /// The failure's status; default: the profile's busy error (iDRAC's
    /// SYS518, iLO's InvalidOperationForSystemState), else 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The share of matching requests whose connection is dropped with no
    /// answer.
    #[serde(default)]
    pub drop_rate: f64,
    /// Power actions of matching systems take effect this much later than
    /// they are accepted.
    #[serde(default)]
    pub power_delay_ms: u64,
}

/// What `[faults]` and the admin endpoint's `PUT` carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultConfig {
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub rules: Vec<Rule>,
}

impl FaultConfig {
    /// Reads the admin endpoint's JSON (`{"seed": N, "rules": [...]}`) and
    /// checks it; every error names its key (`rules[2].latency_ms`).
    pub fn from_json(bytes: &[u8]) -> Result<FaultConfig, String> {
        let text = if bytes.is_empty() { b"{}" } else { bytes };
        let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        let obj = v.as_object().ok_or("the body must be a JSON object")?;
        if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "seed" | "rules")) {
            return Err(format!("{k}: unknown key (expected seed, rules)"));
        }
        let seed = match obj.get("seed") {
            None => 0,
            Some(s) => s
                .as_u64()
                .ok_or_else(|| format!("seed: {s} is not a whole number from 0 to {}", u64::MAX))?,
        };
        let rules = match obj.get("rules") {
            None => Vec::new(),
            Some(serde_json::Value::Array(a)) if a.len() > MAX_RULES => {
                return Err(format!("rules: {} rules, at most {MAX_RULES}", a.len()))
            }
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    for (k, v) in r.as_object().into_iter().flatten() {
                        let Some((_, max)) = WHOLE.iter().find(|(w, _)| w == k) else {
                            continue;
                        };
                        if v.as_u64().is_none_or(|n| n > *max) {
                            return Err(format!(
                                "rules[{i}].{k}: {v} is not a whole number from 0 to {max}"
                            ));
                        }
                    }
                    serde_json::from_value(r.clone()).map_err(|e| format!("rules[{i}]: {e}"))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(format!("rules: {other} is not an array")),
        };
        let cfg = FaultConfig { seed, rules };
        cfg.check()?;
        Ok(cfg)
    }

    /// Checks every rule; the error names the key (`rules[1].error_rate`).
    pub fn check(&self) -> Result<(), String> {
        if self.rules.len() > MAX_RULES {
            return Err(format!(
                "rules: {} rules, at most {MAX_RULES}",
                self.rules.len()
            ));
        }
        for (i, r) in self.rules.iter().enumerate() {
            let key = |k: &str| format!("rules[{i}].{k}");
            for (name, ms, max) in [
                ("latency_ms", r.latency_ms, MAX_LATENCY_MS),
                ("power_delay_ms", r.power_delay_ms, MAX_POWER_DELAY_MS),
            ] {
                if ms > max {
                    return Err(format!("{}: {ms} is more than {max}", key(name)));
                }
            }
            if r.systems.len() > MAX_SYSTEMS {
                return Err(format!(
                    "{}: {} names, at most {MAX_SYSTEMS}",
                    key("systems"),
                    r.systems.len()
                ));
            }
            if r.methods.len() > METHODS.len() {
                return Err(format!(
                    "{}: {} methods, at most {}",
                    key("methods"),
                    r.methods.len(),
                    METHODS.len()
                ));
            }
            for (name, rate) in [("error_rate", r.error_rate), ("drop_rate", r.drop_rate)] {
                if !(0.0..=1.0).contains(&rate) {
                    return Err(format!("{}: {rate} is not between 0 and 1", key(name)));
                }
            }
            if let Some(s) = r.status {
                if !(400..=599).contains(&s) {
                    return Err(format!(
                        "{}: {s} is not an HTTP error status (400-599)",
                        key("status")
                    ));
                }
            }
            for (j, m) in r.methods.iter().enumerate() {
                if !METHODS.contains(&m.as_str()) {
                    return Err(format!(
                        "{}: {m:?} is not one of {}",
                        key(&format!("methods[{j}]")),
                        METHODS.join(", ")
                    ));
                }
            }
            if let Some(p) = &r.path {
                if !p.starts_with('/') {
                    return Err(format!("{}: {p:?} must start with '/'", key("path")));
                }
                if p.len() > MAX_PATH {
                    return Err(format!(
                        "{}: {} bytes, at most {MAX_PATH}",
                        key("path"),
                        p.len()
                    ));
                }
            }
        }
        Ok(())
    }
}

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
    rng: StdRng,
    outages: Vec<Outage>,
}

/// What happens to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Pass,
    /// Fail with this status, or the profile's busy error when `None`.
    Fail(Option<u16>),
    Drop,
    /// The BMC is rebooting: 503 for this many more seconds.
    Unavailable(u32),
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

/// Whether `path` matches `pattern`, `*` standing for any run of chars.
fn glob(pattern: &str, path: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

impl Rule {
    fn selects_systems(&self, systems: &[String]) -> bool {
        self.systems.is_empty() || self.systems.iter().any(|s| systems.contains(s))
    }

    fn matches(&self, method: &str, path: &str, systems: &[String]) -> bool {
        self.selects_systems(systems)
            && (self.methods.is_empty() || self.methods.iter().any(|m| m == method))
            && self.path.as_deref().is_none_or(|p| glob(p, path))
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
                outages: Vec::new(),
            }),
            services: Mutex::new(Vec::new()),
        };
        f.replace(config);
        f
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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
        st.config = config;
        self.refresh(&mut st);
    }

    /// No rules, no outages.
    pub fn clear(&self) {
        let mut st = self.lock();
        st.config.rules.clear();
        st.outages.clear();
        self.refresh(&mut st);
    }

    pub fn config(&self) -> FaultConfig {
        self.lock().config.clone()
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
        self.services
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Service { systems, auth });
    }

    /// Drops the sessions of the services that serve any of `systems`
    /// (all services when empty); returns how many were dropped.
    pub fn expire_sessions(&self, systems: &[String]) -> usize {
        let services = self.services.lock().unwrap_or_else(|p| p.into_inner());
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
        let mut st = self.lock();
        st.outages.push(Outage {
            systems,
            until: Instant::now() + Duration::from_secs(secs),
        });
        self.refresh(&mut st);
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
        let State { config, rng, .. } = &mut *st;
        let mut latency = Duration::ZERO;
        let mut decision = Decision::Pass;
        for r in config
            .rules
            .iter()
            .filter(|r| r.matches(method, path, systems))
        {
            latency = latency.saturating_add(Duration::from_millis(r.latency_ms));
            if decision != Decision::Pass {
                continue;
            }
            if r.drop_rate > 0.0 && rng.random::<f64>() < r.drop_rate {
                decision = Decision::Drop;
            } else if r.error_rate > 0.0 && rng.random::<f64>() < r.error_rate {
                decision = Decision::Fail(r.status);
            }
        }
        (latency, decision)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Rule {
        Rule {
            systems: Vec::new(),
            methods: Vec::new(),
            path: None,
            latency_ms: 0,
            error_rate: 0.0,
            status: None,
            drop_rate: 0.0,
            power_delay_ms: 0,
        }
    }

    #[test]
    fn paths_match_with_stars() {
        assert!(glob("/redfish/v1/Systems/*", "/redfish/v1/Systems/abc"));
        assert!(glob(
            "/redfish/v1/Systems/*/Actions/*",
            "/redfish/v1/Systems/x/Actions/ComputerSystem.Reset"
        ));
        assert!(!glob(
            "/redfish/v1/Systems/*/Actions/*",
            "/redfish/v1/Systems/x"
        ));
        assert!(glob("/redfish/v1", "/redfish/v1"));
        assert!(!glob("/redfish/v1", "/redfish/v1/Systems"));
        assert!(glob("*", "/anything"));
    }

    #[test]
    fn the_same_seed_makes_the_same_decisions() {
        let cfg = FaultConfig {
            seed: 7,
            rules: vec![Rule {
                error_rate: 0.5,
                ..rule()
            }],
        };
        let run = || {
            let f = Faults::new(cfg.clone());
            (0..200)
                .map(|_| f.decide("GET", "/redfish/v1", &[]).1 != Decision::Pass)
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let failed = a.iter().filter(|x| **x).count();
        assert!((70..130).contains(&failed), "{failed} of 200 at rate 0.5");
        let other = Faults::new(FaultConfig {
            seed: 8,
            ..cfg.clone()
        });
        let b: Vec<bool> = (0..200)
            .map(|_| other.decide("GET", "/redfish/v1", &[]).1 != Decision::Pass)
            .collect();
        assert_ne!(a, b, "another seed, other decisions");
    }

    #[test]
    fn rules_select_by_system_method_and_path_and_latencies_add_up() {
        let f = Faults::new(FaultConfig {
            seed: 0,
            rules: vec![
                Rule {
                    systems: vec!["node-1".into()],
                    methods: vec!["PATCH".into()],
                    path: Some("/redfish/v1/Systems/*".into()),
                    error_rate: 1.0,
                    status: Some(503),
                    latency_ms: 5,
                    ..rule()
                },
                Rule {
                    latency_ms: 7,
                    ..rule()
                },
            ],
        });
        let n1 = ["node-1".to_string()];
        let (lat, d) = f.decide("PATCH", "/redfish/v1/Systems/a", &n1);
        assert_eq!(
            (lat, d),
            (Duration::from_millis(12), Decision::Fail(Some(503)))
        );
        assert_eq!(
            f.decide("GET", "/redfish/v1/Systems/a", &n1).1,
            Decision::Pass
        );
        assert_eq!(
            f.decide("PATCH", "/redfish/v1/Systems/a", &["node-2".to_string()]),
            (Duration::from_millis(7), Decision::Pass)
        );
        f.clear();
        assert!(!f.active());
    }

    #[test]
    fn a_reboot_makes_the_bmc_unavailable_then_ends() {
        let f = Faults::default();
        assert!(!f.active());
        f.reboot(vec!["node-0".into()], 30);
        assert!(f.active());
        match f.decide("GET", "/redfish/v1", &["node-0".to_string()]).1 {
            Decision::Unavailable(s) => assert!((29..=30).contains(&s), "{s}"),
            d => panic!("{d:?}"),
        }
        assert_eq!(
            f.decide("GET", "/redfish/v1", &["node-1".to_string()]).1,
            Decision::Pass
        );
        f.reboot(Vec::new(), 0);
        assert_eq!(f.outages().len(), 1, "a zero-second reboot is over at once");
    }

    #[test]
    fn bad_rules_name_their_key() {
        let bad = |r: Rule| {
            FaultConfig {
                seed: 0,
                rules: vec![rule(), r],
            }
            .check()
            .unwrap_err()
        };
        assert!(bad(Rule {
            error_rate: 1.5,
            ..rule()
        })
        .contains("rules[1].error_rate"));
        assert!(bad(Rule {
            drop_rate: -0.1,
            ..rule()
        })
        .contains("rules[1].drop_rate"));
        assert!(bad(Rule {
            status: Some(200),
            ..rule()
        })
        .contains("rules[1].status"));
        assert!(bad(Rule {
            methods: vec!["FETCH".into()],
            ..rule()
        })
        .contains("rules[1].methods[0]"));
        assert!(bad(Rule {
            path: Some("Systems".into()),
            ..rule()
        })
        .contains("rules[1].path"));
        assert!(bad(Rule {
            latency_ms: MAX_LATENCY_MS + 1,
            ..rule()
        })
        .contains("rules[1].latency_ms"));
        assert!(bad(Rule {
            power_delay_ms: u64::MAX,
            ..rule()
        })
        .contains("rules[1].power_delay_ms"));
        assert!(bad(Rule {
            path: Some(format!("/{}", "a".repeat(MAX_PATH))),
            ..rule()
        })
        .contains("rules[1].path"));
        let many = FaultConfig {
            seed: 0,
            rules: vec![rule(); MAX_RULES + 1],
        };
        assert!(many.check().unwrap_err().starts_with("rules:"));
    }

    #[test]
    fn json_errors_name_their_key() {
        let err = |s: &str| FaultConfig::from_json(s.as_bytes()).unwrap_err();
        assert!(err(r#"{"rules":[{},{"latency_ms":18446744073709551615}]}"#)
            .starts_with("rules[1].latency_ms:"));
        assert!(err(r#"{"rules":[{"latency_ms":1e30}]}"#).starts_with("rules[0].latency_ms:"));
        assert!(err(r#"{"rules":[{"latency_ms":-1}]}"#).starts_with("rules[0].latency_ms:"));
        assert!(err(r#"{"rules":[{"status":"503"}]}"#).starts_with("rules[0].status:"));
        assert!(err(r#"{"rules":[{"status":70000}]}"#).starts_with("rules[0].status:"));
        assert!(err(r#"{"rules":[{"error_rate":2}]}"#).starts_with("rules[0].error_rate:"));
        assert!(err(r#"{"rules":[{"bogus":1}]}"#).starts_with("rules[0]:"));
        assert!(err(r#"{"seed":-3}"#).starts_with("seed:"));
        assert!(err(r#"{"rule":[]}"#).starts_with("rule:"));
        assert!(err("[]").contains("object"));
        let ok = FaultConfig::from_json(br#"{"seed":3,"rules":[{"latency_ms":60000}]}"#).unwrap();
        assert_eq!((ok.seed, ok.rules[0].latency_ms), (3, 60_000));
        assert_eq!(FaultConfig::from_json(b"").unwrap(), FaultConfig::default());
    }
}
