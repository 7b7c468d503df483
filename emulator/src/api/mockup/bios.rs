//! The BIOS of a replayed capture's systems: the captured `Bios` resource
//! with the machine's current attributes, its settings object with what
//! is staged (the whole next-start set where the capture shows it so,
//! else only the staged ones), a PATCH of the settings object checked
//! against the captured attribute registry (or, where the capture holds
//! none, against the captured attributes' own types) and staged for the
//! next start, and `Bios.ResetBios` at its captured target staging the
//! registry's defaults.
//!
//! The machine's BIOS is the capture's: when a machine first stands
//! behind a captured system its attributes become the captured ones
//! (`seed`), those the capture shows staged stay staged.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Map, Value};

use super::untagged;
use crate::api::error::{ApiError, Msg};
use crate::api::input;
use crate::api::json;
use crate::api::AppState;
use crate::mockup::Mockup;
use crate::model::{Change, System};

const RESET_BIOS: &str = "#Bios.ResetBios";
const APPLY_TIME: &str = "@Redfish.SettingsApplyTime";
/// The apply times of the Settings schema, where the capture lists none.
const APPLY_TIMES: [&str; 4] = [
    "Immediate",
    "OnReset",
    "AtMaintenanceWindowStart",
    "InMaintenanceWindowOnReset",
];

/// A captured system's BIOS.
#[derive(Debug, Clone)]
pub struct CapturedBios {
    /// The captured system's URI.
    pub system: String,
    /// The `Bios` resource's URI.
    pub uri: String,
    /// Its settings object's URI, if it has one.
    pub settings: Option<String>,
    /// Its `Bios.ResetBios` target, if it has one.
    pub reset: Option<String>,
    /// The captured attribute registry's rules, by attribute name.
    rules: BTreeMap<String, Rule>,
    /// The settings object shows the whole set the next start will have
    /// (its attributes are the `Bios` resource's), not only what is staged.
    whole_set: bool,
    /// The apply times a PATCH may name.
    apply_times: Vec<String>,
}

/// What a registry entry allows an attribute to be set to.
#[derive(Debug, Clone, PartialEq)]
enum Rule {
    Enum(Vec<String>),
    Int {
        min: Option<i64>,
        max: Option<i64>,
    },
    Str {
        min: usize,
        max: Option<usize>,
    },
    Bool,
    /// A number of another kind the capture shows.
    Number,
    ReadOnly,
}

impl Rule {
    /// The rule of a registry entry (`RegistryEntries.Attributes[]`).
    fn of_entry(e: &Value) -> Option<Rule> {
        if e.get("ReadOnly") == Some(&Value::Bool(true)) {
            return Some(Rule::ReadOnly);
        }
        let int = |k: &str| e.get(k).and_then(Value::as_i64);
        Some(match e.get("Type")?.as_str()? {
            "Enumeration" => Rule::Enum(
                e.get("Value")?
                    .as_array()?
                    .iter()
                    .filter_map(|v| Some(v.get("ValueName")?.as_str()?.to_string()))
                    .collect(),
            ),
            "Integer" => Rule::Int {
                min: int("LowerBound"),
                max: int("UpperBound"),
            },
            "String" | "Password" => Rule::Str {
                min: int("MinLength").unwrap_or(0).max(0) as usize,
                max: int("MaxLength").map(|m| m.max(0) as usize),
            },
            "Boolean" => Rule::Bool,
            _ => return None,
        })
    }

    /// The rule a captured value implies where no registry entry says:
    /// a value of the same type.
    fn of_value(v: &Value) -> Option<Rule> {
        Some(match v {
            Value::String(_) => Rule::Str { min: 0, max: None },
            Value::Bool(_) => Rule::Bool,
            Value::Number(n) if n.is_i64() || n.is_u64() => Rule::Int {
                min: None,
                max: None,
            },
            Value::Number(_) => Rule::Number,
            _ => return None,
        })
    }

    /// Checks `value` for the attribute at `path`.
    fn check(&self, value: &Value, path: &str) -> Result<(), Msg> {
        let shown = input::echo(&json::shown(value));
        let type_err = || Msg::new("PropertyValueTypeError", &[&shown, path]).about(path);
        match self {
            Rule::ReadOnly => return Err(Msg::new("PropertyNotWritable", &[path]).about(path)),
            Rule::Enum(values) => {
                let s = value.as_str().ok_or_else(type_err)?;
                if !values.iter().any(|v| v == s) {
                    return Err(Msg::new("PropertyValueNotInList", &[&shown, path]).about(path));
                }
            }
            Rule::Int { min, max } => {
                let i = value.as_i64().ok_or_else(type_err)?;
                if min.is_some_and(|m| i < m) || max.is_some_and(|m| i > m) {
                    return Err(Msg::new("PropertyValueOutOfRange", &[&shown, path]).about(path));
                }
            }
            Rule::Str { min, max } => {
                let n = value.as_str().ok_or_else(type_err)?.chars().count();
                if n < *min || max.is_some_and(|m| n > m) {
                    return Err(Msg::new("PropertyValueFormatError", &[&shown, path]).about(path));
                }
            }
            Rule::Bool => {
                value.as_bool().ok_or_else(type_err)?;
            }
            Rule::Number => {
                value.as_f64().ok_or_else(type_err)?;
            }
        }
        Ok(())
    }
}

/// The captured attributes of the resource at `uri`.
fn attributes(capture: &Mockup, uri: &str) -> Option<Map<String, Value>> {
    capture.json(uri)?.get("Attributes")?.as_object().cloned()
}

/// The captured attribute registry named `name`: the document the
/// registry file's `Location` points to, else any captured registry
/// whose `Id` is that name.
fn registry<'a>(capture: &'a Mockup, name: &str) -> Option<&'a Value> {
    let located = capture
        .json(&format!("/redfish/v1/Registries/{name}"))
        .and_then(|f| f.get("Location")?.as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|l| Some(capture.canonical(l.get("Uri")?.as_str()?)))
        .find_map(|u| {
            capture
                .json(&u)
                .filter(|d| d.get("RegistryEntries").is_some())
        });
    located.or_else(|| {
        capture.resources.keys().find_map(|u| {
            let d = capture.json(u)?;
            (d.get("RegistryEntries").is_some()
                && d.get("Id").and_then(Value::as_str) == Some(name))
            .then_some(d)
        })
    })
}

/// The entries of the attribute registry a captured `Bios` names, if
/// the capture holds it.
fn entries(capture: &Mockup, bios: &Value) -> Vec<Value> {
    bios.get("AttributeRegistry")
        .and_then(Value::as_str)
        .and_then(|n| registry(capture, n))
        .and_then(|r| {
            r.pointer("/RegistryEntries/Attributes")?
                .as_array()
                .cloned()
        })
        .unwrap_or_default()
}

impl CapturedBios {
    /// The BIOS of each captured system that links one.
    pub fn of(capture: &Mockup) -> Vec<CapturedBios> {
        capture
            .systems
            .iter()
            .filter_map(|system| {
                let s = capture.json(system)?;
                let uri = capture.canonical(s.pointer("/Bios/@odata.id")?.as_str()?);
                let bios = capture.json(&uri)?;
                bios.get("Attributes")?.as_object()?;
                let settings = bios
                    .pointer("/@Redfish.Settings/SettingsObject/@odata.id")
                    .and_then(Value::as_str)
                    .map(|u| capture.canonical(u));
                let reset = bios
                    .pointer(&format!(
                        "/Actions/{}/target",
                        RESET_BIOS.replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .map(|u| capture.canonical(u));
                let rules = entries(capture, bios)
                    .iter()
                    .filter_map(|e| {
                        let name = e.get("AttributeName")?.as_str()?.to_string();
                        Some((name, Rule::of_entry(e)?))
                    })
                    .collect();
                let current = attributes(capture, &uri).unwrap_or_default();
                let whole_set = settings
                    .as_deref()
                    .and_then(|u| attributes(capture, u))
                    .is_some_and(|a| !a.is_empty() && a.keys().eq(current.keys()));
                let apply_times = bios
                    .pointer("/@Redfish.Settings/SupportedApplyTimes")
                    .and_then(Value::as_array)
                    .map(|l| {
                        l.iter()
                            .filter_map(|t| Some(t.as_str()?.to_string()))
                            .collect()
                    })
                    .unwrap_or_else(|| APPLY_TIMES.iter().map(|t| t.to_string()).collect());
                Some(CapturedBios {
                    system: system.clone(),
                    uri,
                    settings,
                    reset,
                    rules,
                    whole_set,
                    apply_times,
                })
            })
            .collect()
    }

    /// The BIOS the capture shows: its current attributes, and those its
    /// settings object shows staged.
    pub fn captured_state(
        &self,
        capture: &Mockup,
    ) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
        let current = attributes(capture, &self.uri).unwrap_or_default();
        let staged = self
            .settings
            .as_deref()
            .and_then(|u| attributes(capture, u))
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, v)| !self.whole_set || current.get(k) != Some(v))
            .collect();
        (current.into_iter().collect(), staged)
    }

    /// The captured `Bios` resource with the machine's attributes, in the
    /// capture's order.
    pub fn grafted(&self, captured: &Value, sys: &System) -> Value {
        let mut v = captured.clone();
        if let Some(Value::Object(attrs)) = v.get_mut("Attributes") {
            let current = &sys.bmc.bios.current;
            for (k, val) in attrs.iter_mut() {
                if let Some(live) = current.get(k) {
                    *val = live.clone();
                }
            }
            for (k, live) in current {
                if !attrs.contains_key(k) {
                    attrs.insert(k.clone(), live.clone());
                }
            }
        }
        v
    }

    /// The captured settings object with what is staged: the whole
    /// next-start set, or only the staged attributes, as the capture
    /// showed it.
    pub fn settings_grafted(&self, captured: &Value, sys: &System) -> Value {
        let bios = &sys.bmc.bios;
        let mut v = captured.clone();
        if let Some(Value::Object(attrs)) = v.get_mut("Attributes") {
            if self.whole_set {
                for (k, val) in attrs.iter_mut() {
                    if let Some(live) = bios.pending.get(k).or_else(|| bios.current.get(k)) {
                        *val = live.clone();
                    }
                }
            } else {
                *attrs = bios
                    .pending
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
            }
        }
        v
    }

    /// What is wrong with setting `name` to `value`: the registry's rule,
    /// else the type of the value the machine has.
    fn check(&self, sys: &System, name: &str, value: &Value) -> Result<(), Msg> {
        let path = format!("Attributes/{}", input::echo(name));
        let rule = self
            .rules
            .get(name)
            .cloned()
            .or_else(|| sys.bmc.bios.current.get(name).and_then(Rule::of_value));
        match rule {
            Some(r) => r.check(value, &path),
            None if sys.bmc.bios.current.get(name) == Some(&Value::Null) => Ok(()),
            None => Err(Msg::new("PropertyUnknown", &[&path]).about(&path)),
        }
    }

    /// The attributes `Bios.ResetBios` stages: each registry entry's
    /// `DefaultValue`, else (no registry) the captured attributes, taken
    /// as the machine's factory set.
    fn defaults(&self, capture: &Mockup) -> BTreeMap<String, Value> {
        let from_registry: BTreeMap<String, Value> = self
            .registry_defaults(capture)
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        if !from_registry.is_empty() {
            return from_registry;
        }
        self.captured_state(capture).0
    }

    fn registry_defaults(&self, capture: &Mockup) -> Vec<(String, Value)> {
        let Some(bios) = capture.json(&self.uri) else {
            return Vec::new();
        };
        entries(capture, bios)
            .iter()
            .filter(|e| e.get("ReadOnly") != Some(&Value::Bool(true)))
            .filter_map(|e| {
                Some((
                    e.get("AttributeName")?.as_str()?.to_string(),
                    e.get("DefaultValue")?.clone(),
                ))
            })
            .collect()
    }
}

/// Gives each machine behind a captured system the capture's BIOS, once:
/// a machine whose BIOS is still Shoal's factory set (never replayed,
/// never set) takes it; one set before keeps its own.
pub async fn seed(st: &AppState, capture: &Mockup, systems: &BTreeMap<String, String>) {
    for b in CapturedBios::of(capture) {
        let Some(id) = systems.get(&b.system) else {
            continue;
        };
        let Ok(sys) = st.core.backend.system(id).await else {
            continue;
        };
        let bios = &sys.bmc.bios;
        if bios.current != crate::bios::defaults() || !bios.pending.is_empty() {
            continue;
        }
        let (current, pending) = b.captured_state(capture);
        let change = Change::BiosReplaced { current, pending };
        if let Err(e) = st.core.backend.apply(id, vec![change]).await {
            tracing::warn!(system = %sys.name, error = %e, "the captured BIOS is not the machine's");
        }
    }
}

/// A PATCH of a captured settings object: `Attributes` checked whole,
/// staged for the next start.
pub(super) async fn patch(
    st: &AppState,
    b: &CapturedBios,
    machine: &str,
    headers: &HeaderMap,
    body: &Map<String, Value>,
    capture: &Mockup,
) -> Result<Response, ApiError> {
    let locked = st.locked(machine).await?;
    let (sys, profile) = (&locked.sys, locked.profile);
    if let Some(c) = b.settings.as_deref().and_then(|u| capture.json(u)) {
        json::check_if_match(headers, &untagged(b.settings_grafted(c, sys)), profile)?;
    }
    let mut errors = Vec::new();
    for (k, v) in body {
        match k.as_str() {
            "Attributes" if !v.is_object() => {
                let shown = input::echo(&json::shown(v));
                errors.push(Msg::new("PropertyValueTypeError", &[&shown, k]).about(k));
            }
            "Attributes" => {}
            APPLY_TIME => errors.extend(check_apply_time(v, &b.apply_times)),
            "@odata.type" | "@odata.id" | "@odata.etag" => {}
            other => {
                let p = input::echo(other);
                errors.push(Msg::new("PropertyUnknown", &[&p]).about(&p));
            }
        }
    }
    let attrs = body
        .get("Attributes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    errors.extend(attrs.iter().filter_map(|(k, v)| b.check(sys, k, v).err()));
    if !errors.is_empty() {
        return Err(ApiError::BadRequest(errors));
    }
    if attrs.is_empty() {
        return Ok(json::no_content());
    }
    let mut pending = sys.bmc.bios.pending.clone();
    pending.extend(attrs);
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::BiosPending(pending)])
        .await?;
    drop(locked);
    tracing::info!(system = %sys.name, pending = ?sys.bmc.bios.pending, "replayed BIOS settings staged");
    Ok(json::no_content())
}

fn check_apply_time(v: &Value, supported: &[String]) -> Vec<Msg> {
    let path = format!("{APPLY_TIME}/ApplyTime");
    match v.get("ApplyTime") {
        Some(Value::String(t)) if supported.iter().any(|s| s == t) => Vec::new(),
        Some(Value::String(t)) => {
            vec![Msg::new("PropertyValueNotInList", &[&input::echo(t), &path]).about(&path)]
        }
        Some(other) => {
            let shown = input::echo(&json::shown(other));
            vec![Msg::new("PropertyValueTypeError", &[&shown, &path]).about(&path)]
        }
        None => vec![Msg::new("PropertyMissing", &[&path]).about(&path)],
    }
}

/// `Bios.ResetBios` at its captured target: the defaults staged.
pub(super) async fn reset(
    st: &AppState,
    b: &CapturedBios,
    machine: &str,
    body: &Map<String, Value>,
    capture: &Mockup,
) -> Result<Response, ApiError> {
    let known = action_parameters(capture, &b.uri);
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    json::action_known(body, &known, RESET_BIOS)?;
    let locked = st.locked(machine).await?;
    st.core
        .backend
        .apply(
            &locked.sys.id,
            vec![Change::BiosPending(b.defaults(capture))],
        )
        .await?;
    Ok(json::no_content())
}

/// The parameters the captured `Bios.ResetBios` shows: those with
/// `@Redfish.AllowableValues`, and its ActionInfo's.
fn action_parameters(capture: &Mockup, bios: &str) -> Vec<String> {
    let Some(action) = capture
        .json(bios)
        .and_then(|b| b.get("Actions")?.get(RESET_BIOS).cloned())
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = action
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(|k| k.strip_suffix("@Redfish.AllowableValues"))
        .map(str::to_string)
        .collect();
    if let Some(info) = action
        .get("@Redfish.ActionInfo")
        .and_then(Value::as_str)
        .and_then(|i| capture.json(i))
    {
        names.extend(
            info.get("Parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| Some(p.get("Name")?.as_str()?.to_string())),
        );
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registry_entries_are_rules() {
        let e = json!({"AttributeName": "A", "Type": "Enumeration",
            "Value": [{"ValueName": "On"}, {"ValueName": "Off"}]});
        let r = Rule::of_entry(&e).unwrap();
        assert!(r.check(&json!("On"), "Attributes/A").is_ok());
        let err = r.check(&json!("Maybe"), "Attributes/A").unwrap_err();
        assert_eq!(err.id, "PropertyValueNotInList");
        assert_eq!(
            r.check(&json!(1), "Attributes/A").unwrap_err().id,
            "PropertyValueTypeError"
        );
        let int = Rule::of_entry(&json!({"Type": "Integer", "LowerBound": 0, "UpperBound": 8}));
        let int = int.unwrap();
        assert!(int.check(&json!(8), "p").is_ok());
        assert_eq!(
            int.check(&json!(9), "p").unwrap_err().id,
            "PropertyValueOutOfRange"
        );
        let s = Rule::of_entry(&json!({"Type": "String", "MaxLength": 3})).unwrap();
        assert_eq!(
            s.check(&json!("abcd"), "p").unwrap_err().id,
            "PropertyValueFormatError"
        );
        let ro = Rule::of_entry(&json!({"Type": "String", "ReadOnly": true})).unwrap();
        assert_eq!(
            ro.check(&json!("x"), "p").unwrap_err().id,
            "PropertyNotWritable"
        );
        assert_eq!(Rule::of_value(&json!(true)), Some(Rule::Bool));
        assert_eq!(Rule::of_value(&json!(1.5)), Some(Rule::Number));
    }
}
