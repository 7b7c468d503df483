//! The scenario format's reference page (`docs/scenario-reference.md`),
//! made from the schema the loader deserializes with (the types of this
//! module, their serde attributes and doc comments, through `schemars`):
//! every key, its type, its default or that it is required, what it
//! means, and every value a choice takes. A test compares the page with
//! what this makes, so the page cannot go stale.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::Scenario;

/// The page, as `shoal-harness validate --reference` prints it.
pub fn markdown() -> String {
    let schema = serde_json::to_value(schemars::schema_for!(Scenario)).unwrap_or_default();
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    let mut out = String::from(
        "# Scenario files: every key\n\n\
         Made from the schema `shoal-harness` loads scenarios with \
         (`shoal-harness validate --reference`; the suite fails when this \
         page and the schema differ). How keys combine is checked at load \
         too: `shoal-harness validate` says what a file gets wrong. The \
         guide is [scenarios.md](scenarios.md).\n\n\
         ## The file\n\n",
    );
    table(&mut out, &schema, &defs);
    // Each section once, in the order the file's keys reach them.
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    reach(&schema, "", &defs, &mut seen, &mut order);
    for (name, at) in &order {
        let def = &defs[name.as_str()];
        if def.get("properties").is_some() {
            out.push_str(&format!("## `{at}`\n\n"));
            if let Some(d) = def["description"].as_str() {
                out.push_str(&format!("{}\n\n", one_line(d)));
            }
            table(&mut out, def, &defs);
        }
    }
    out.push_str("## Values\n\n");
    for (name, at) in &order {
        let def = &defs[name.as_str()];
        if def.get("properties").is_none() {
            out.push_str(&format!("### {name}\n\nThe values of `{at}`:\n\n"));
            for (value, what) in choices(def) {
                match what {
                    Some(w) => out.push_str(&format!("- `{value}`: {}\n", one_line(&w))),
                    None => out.push_str(&format!("- `{value}`\n")),
                }
            }
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The definitions `schema`'s properties name, depth first, each with the
/// first key path that reaches it (`machine`, `[[artifacts]]`, ...).
fn reach(
    schema: &Value,
    prefix: &str,
    defs: &Map<String, Value>,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<(String, String)>,
) {
    let Some(props) = schema["properties"].as_object() else {
        return;
    };
    for (key, p) in props {
        let path = match prefix {
            "" => key.clone(),
            _ => format!("{prefix}.{key}"),
        };
        let (name, list) = match referenced(p) {
            Some(r) => r,
            None => continue,
        };
        if seen.insert(name.clone()) {
            let def = &defs[name.as_str()];
            let at = match (list, def.get("properties").is_some()) {
                (true, true) => format!("[[{path}]]"),
                (false, true) => format!("[{path}]"),
                (true, false) => format!("{path}[]"),
                (false, false) => path.clone(),
            };
            order.push((name.clone(), at));
            reach(def, &path, defs, seen, order);
        }
    }
}

/// The definition a property names (directly, as an optional value, or
/// as its items), and whether it is a list of them.
fn referenced(p: &Value) -> Option<(String, bool)> {
    let name = |v: &Value| {
        v["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .map(str::to_string)
    };
    if let Some(n) = name(p) {
        return Some((n, false));
    }
    if let Some(any) = p["anyOf"].as_array() {
        return any.iter().find_map(name).map(|n| (n, false));
    }
    name(&p["items"]).map(|n| (n, true))
}

/// A table of the keys of `schema` (an object).
fn table(out: &mut String, schema: &Value, defs: &Map<String, Value>) {
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("| key | type | default | what |\n|---|---|---|---|\n");
    for (key, p) in schema["properties"].as_object().into_iter().flatten() {
        let default = if required.contains(key.as_str()) {
            "required".to_string()
        } else {
            match &p["default"] {
                Value::Null => String::new(),
                v => format!("`{}`", v.to_string().replace('|', "\\|")),
            }
        };
        let what = p["description"].as_str().map(one_line).unwrap_or_default();
        out.push_str(&format!(
            "| `{key}` | {} | {default} | {} |\n",
            type_of(p, defs),
            what.replace('|', "\\|")
        ));
    }
    out.push('\n');
}

/// A property's type in words, a definition by its name.
fn type_of(p: &Value, defs: &Map<String, Value>) -> String {
    if let Some((name, list)) = referenced(p) {
        let kind = match defs[name.as_str()].get("properties") {
            Some(_) => "table",
            None => "one of",
        };
        return match list {
            true => format!("list of {name} ({kind})"),
            false => format!("{name} ({kind})"),
        };
    }
    let ty = match &p["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    match ty.as_str() {
        "array" => format!("list of {}", type_of(&p["items"], defs)),
        "object" => format!(
            "table of {}",
            type_of(&p["additionalProperties"], defs).replace("any", "values")
        ),
        "integer" => "integer".into(),
        "" => "any".into(),
        t => t.into(),
    }
}

/// A choice's values, each with its doc comment where it has one.
fn choices(def: &Value) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for v in def["enum"].as_array().into_iter().flatten() {
        out.push((v.as_str().unwrap_or_default().to_string(), None));
    }
    for o in def["oneOf"].as_array().into_iter().flatten() {
        let what = o["description"].as_str().map(str::to_string);
        if let Some(c) = o["const"].as_str() {
            out.push((c.to_string(), what));
        } else {
            for v in o["enum"].as_array().into_iter().flatten() {
                out.push((v.as_str().unwrap_or_default().to_string(), what.clone()));
            }
        }
    }
    out
}

/// A doc comment on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
