//! Fault rules: the configuration (`FaultConfig`, its `Rule`s), parsed
//! from JSON or TOML and checked, and which requests a rule selects.
//!
//! Invariant: every number is bounded at parse time (latency ≤ 60 s, power
//! delay ≤ 10 min, ≤ 256 rules); errors name the key.

use serde::{Deserialize, Serialize};

const METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PATCH", "PUT", "DELETE", "IPMI", "EVENT", "UPDATE",
];
/// The method of a request to the host's in-band IPMI interface, whose
/// path is `/ipmi/in-band/NN/CC` (network function and command, two hex
/// digits each). A rule selects such requests only by naming the method:
/// a rule without methods selects every HTTP request, none of them.
pub const IPMI: &str = "IPMI";
/// The method of an event's push delivery, whose path is the
/// destination URL's. A rule with only this method is an event fault:
/// it drops, delays, duplicates or holds back deliveries, or empties
/// fields of what is sent; it selects by path alone.
pub const EVENT: &str = "EVENT";
/// The method of a firmware update, whose path is its image URL's (a
/// pushed image's: `/`). A rule with only this method is an update
/// fault: its task takes `latency_ms` longer, fails (`error_rate`, the
/// image not installed) or hangs in Running until the BMC restarts
/// (`stuck_rate`); it selects by system and path.
pub const UPDATE: &str = "UPDATE";
/// The fields of an event's records an event fault may send empty.
pub const EMPTY_FIELDS: &[&str] = &[
    "OriginOfCondition",
    "EventTimestamp",
    "EventId",
    "Message",
    "MessageArgs",
    "MessageId",
    "Severity",
    "Context",
];

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
    ("times", u32::MAX as u64),
];
/// The longest `message_id`.
const MAX_MESSAGE_ID: usize = 64;

/// One rule. A request matches when every given selector matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// System names; empty: every system (and the service root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<String>,
    /// HTTP methods, or `IPMI` for the host's in-band interface; empty:
    /// every HTTP method.
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
    /// The failure's status; default: 400 with a `message_id`, else the
    /// profile's busy error (iDRAC's SYS518, iLO's
    /// InvalidOperationForSystemState), else 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The failure's message: a Base registry message without arguments
    /// (`ResourceInUse`), or a vendor message Shoal knows (Dell's `LC068`,
    /// `RAC0679`, `SYS518`…), sent under the system's profile's registry
    /// prefix after the Base message the status implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The rule fails or drops at most this many requests, then is spent
    /// (no more latency either); default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    /// The share of matching requests whose connection is dropped with no
    /// answer.
    #[serde(default)]
    pub drop_rate: f64,
    /// Power actions of matching systems take effect this much later than
    /// they are accepted.
    #[serde(default)]
    pub power_delay_ms: u64,
    /// Event faults: the share of deliveries sent twice.
    #[serde(default)]
    pub duplicate_rate: f64,
    /// Event faults: the share of deliveries held back and sent after the
    /// next one (or a while later, when none comes).
    #[serde(default)]
    pub reorder_rate: f64,
    /// Event faults: fields of every record (of `EMPTY_FIELDS`) sent empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_fields: Vec<String>,
    /// Update faults: the share of updates whose task hangs in Running
    /// until the BMC restarts.
    #[serde(default)]
    pub stuck_rate: f64,
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
            check_event_rule(r).map_err(|(k, why)| format!("{}: {why}", key(k)))?;
            check_update_rule(r).map_err(|(k, why)| format!("{}: {why}", key(k)))?;
            for (name, rate) in [
                ("stuck_rate", r.stuck_rate),
                ("error_rate", r.error_rate),
                ("drop_rate", r.drop_rate),
                ("duplicate_rate", r.duplicate_rate),
                ("reorder_rate", r.reorder_rate),
            ] {
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
            if let Some(id) = &r.message_id {
                check_message_id(id).map_err(|e| format!("{}: {e}", key("message_id")))?;
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

/// An event fault (methods `["EVENT"]`) has only what applies to a
/// delivery; the event-only members are only on event faults.
fn check_event_rule(r: &Rule) -> Result<(), (&'static str, String)> {
    let event = r.methods.iter().any(|m| m == EVENT);
    if !event {
        for (k, set) in [
            ("duplicate_rate", r.duplicate_rate != 0.0),
            ("reorder_rate", r.reorder_rate != 0.0),
            ("empty_fields", !r.empty_fields.is_empty()),
        ] {
            if set {
                return Err((
                    k,
                    "applies to event deliveries only (methods = [\"EVENT\"])".into(),
                ));
            }
        }
        return Ok(());
    }
    if r.methods.len() > 1 {
        return Err((
            "methods",
            "\"EVENT\" stands alone (an event fault is no request fault)".into(),
        ));
    }
    for (k, set) in [
        ("systems", !r.systems.is_empty()),
        ("error_rate", r.error_rate != 0.0),
        ("status", r.status.is_some()),
        ("message_id", r.message_id.is_some()),
        ("power_delay_ms", r.power_delay_ms != 0),
    ] {
        if set {
            return Err((k, "is no event fault (an event fault selects destinations by path; it drops, delays, duplicates, reorders or empties fields)".into()));
        }
    }
    match r
        .empty_fields
        .iter()
        .find(|f| !EMPTY_FIELDS.contains(&f.as_str()))
    {
        Some(f) => Err((
            "empty_fields",
            format!("{f:?} is not one of {}", EMPTY_FIELDS.join(", ")),
        )),
        None => Ok(()),
    }
}

/// An update fault (methods `["UPDATE"]`) delays, fails or hangs
/// updates; `stuck_rate` is only on update faults.
fn check_update_rule(r: &Rule) -> Result<(), (&'static str, String)> {
    if !r.methods.iter().any(|m| m == UPDATE) {
        return match r.stuck_rate != 0.0 {
            true => Err((
                "stuck_rate",
                "applies to firmware updates only (methods = [\"UPDATE\"])".into(),
            )),
            false => Ok(()),
        };
    }
    if r.methods.len() > 1 {
        return Err((
            "methods",
            "\"UPDATE\" stands alone (an update fault is no request fault)".into(),
        ));
    }
    for (k, set) in [
        ("status", r.status.is_some()),
        ("message_id", r.message_id.is_some()),
        ("drop_rate", r.drop_rate != 0.0),
        ("power_delay_ms", r.power_delay_ms != 0),
    ] {
        if set {
            return Err((
                k,
                "is no update fault (an update fault delays, fails or hangs an update's task)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// A rule's `message_id` is one Shoal can send.
fn check_message_id(id: &str) -> Result<(), String> {
    if id.len() > MAX_MESSAGE_ID {
        return Err(format!("{} bytes, at most {MAX_MESSAGE_ID}", id.len()));
    }
    if let Some(m) = crate::registry::lookup(id) {
        return match m.args {
            0 => Ok(()),
            n => Err(format!(
                "{id:?} takes {n} argument(s); name a message without any"
            )),
        };
    }
    if crate::profile::dell::is_message(id) {
        return Ok(());
    }
    Err(format!(
        "{id:?} is neither a Base registry message nor a vendor message Shoal knows (Dell's: {})",
        crate::profile::dell::MESSAGES
            .iter()
            .map(|m| m.0)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Whether `path` matches `pattern`, `*` standing for any run of chars.
pub(super) fn glob(pattern: &str, path: &str) -> bool {
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
    pub(super) fn selects_systems(&self, systems: &[String]) -> bool {
        self.systems.is_empty() || self.systems.iter().any(|s| systems.contains(s))
    }

    pub(super) fn matches(&self, method: &str, path: &str, systems: &[String]) -> bool {
        let by_method = match self.methods.is_empty() {
            true => ![IPMI, EVENT, UPDATE].contains(&method),
            false => self.methods.iter().any(|m| m == method),
        };
        self.selects_systems(systems)
            && by_method
            && self.path.as_deref().is_none_or(|p| glob(p, path))
    }
}
