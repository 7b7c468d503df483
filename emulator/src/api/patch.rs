//! PATCH: validation of a body against the resource's current
//! representation and its writable properties (`validate_patch`).
//!
//! Invariants: a PATCH is validated whole before anything is applied, and
//! every problem is reported at once; read-only vs unknown is decided from
//! the current representation.

use serde_json::{Map, Value};

use super::json::shown;
use crate::error::{ApiError, Msg};

/// The kind of value a writable property takes.
#[derive(Debug, Clone)]
pub enum Kind {
    Enum(Vec<&'static str>),
    Str,
    NullableStr,
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// An object whose members are checked by the handler (e.g. BIOS Attributes).
    Object,
}

/// A writable property, by its path (`Boot/HttpBootUri`).
#[derive(Debug, Clone)]
pub struct Writable {
    pub path: &'static str,
    pub kind: Kind,
}

pub fn writable(path: &'static str, kind: Kind) -> Writable {
    Writable { path, kind }
}

/// Validates a PATCH body against the resource's current representation and
/// its writable properties. All problems are reported at once; nothing is
/// applied by the caller unless this returns Ok.
pub fn validate_patch(
    body: &Map<String, Value>,
    current: &Value,
    fields: &[Writable],
) -> Result<(), ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad(Msg::new("EmptyJSON", &[])));
    }
    let mut errors = Vec::new();
    walk(body, Some(current), "", fields, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(errors))
    }
}

fn walk(
    body: &Map<String, Value>,
    current: Option<&Value>,
    prefix: &str,
    fields: &[Writable],
    errors: &mut Vec<Msg>,
) {
    for (k, v) in body {
        if k.starts_with("@odata.") {
            continue;
        }
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}/{k}")
        };
        let cur = current.and_then(|c| c.get(k));
        if let Some(f) = fields.iter().find(|f| f.path == path) {
            if let Some(m) = check_kind(&f.kind, v, &path) {
                errors.push(m);
            }
            continue;
        }
        let nested = fields
            .iter()
            .any(|f| f.path.starts_with(&path) && f.path[path.len()..].starts_with('/'));
        match v {
            Value::Object(inner) if nested => walk(inner, cur, &path, fields, errors),
            _ if cur.is_some() || k.contains('@') => {
                errors.push(Msg::new("PropertyNotWritable", &[&path]).about(&path))
            }
            _ => errors.push(Msg::new("PropertyUnknown", &[&path]).about(&path)),
        }
    }
}

fn check_kind(kind: &Kind, v: &Value, path: &str) -> Option<Msg> {
    let type_err = || Some(Msg::new("PropertyValueTypeError", &[&shown(v), path]).about(path));
    match kind {
        Kind::Enum(values) => match v.as_str() {
            None => type_err(),
            Some(s) if !values.contains(&s) => {
                Some(Msg::new("PropertyValueNotInList", &[s, path]).about(path))
            }
            Some(_) => None,
        },
        Kind::Str if !v.is_string() => type_err(),
        Kind::NullableStr if !(v.is_string() || v.is_null()) => type_err(),
        Kind::Bool if !v.is_boolean() => type_err(),
        Kind::Int { min, max } => match v.as_i64() {
            None => type_err(),
            Some(i) if i < *min || i > *max => {
                Some(Msg::new("PropertyValueOutOfRange", &[&shown(v), path]).about(path))
            }
            Some(_) => None,
        },
        Kind::Object if !v.is_object() => type_err(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Vec<Writable> {
        vec![
            writable(
                "Boot/BootSourceOverrideTarget",
                Kind::Enum(vec!["None", "Pxe"]),
            ),
            writable("Boot/HttpBootUri", Kind::NullableStr),
            writable("AssetTag", Kind::Str),
        ]
    }

    fn ids(r: Result<(), ApiError>) -> Vec<&'static str> {
        match r {
            Err(ApiError::BadRequest(m)) => m.iter().map(|m| m.id).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn patch_errors_are_classified() {
        let cur = json!({"Id": "x", "Boot": {"BootSourceOverrideTarget": "None", "HttpBootUri": null}, "AssetTag": ""});
        let b = |v: Value| v.as_object().unwrap().clone();
        assert!(
            validate_patch(&b(json!({"Boot": {"HttpBootUri": null}})), &cur, &fields()).is_ok()
        );
        assert_eq!(
            ids(validate_patch(&b(json!({"Id": "y"})), &cur, &fields())),
            ["PropertyNotWritable"]
        );
        assert_eq!(
            ids(validate_patch(&b(json!({"Colour": 1})), &cur, &fields())),
            ["PropertyUnknown"]
        );
        assert_eq!(
            ids(validate_patch(
                &b(json!({"Boot": {"BootSourceOverrideTarget": "Bogus"}})),
                &cur,
                &fields()
            )),
            ["PropertyValueNotInList"]
        );
        assert_eq!(
            ids(validate_patch(
                &b(json!({"Boot": {"HttpBootUri": 5}})),
                &cur,
                &fields()
            )),
            ["PropertyValueTypeError"]
        );
        assert_eq!(
            ids(validate_patch(&b(json!({"Boot": 5})), &cur, &fields())),
            ["PropertyNotWritable"]
        );
        assert_eq!(
            ids(validate_patch(
                &b(json!({"AssetTag": 1, "Nope": 2})),
                &cur,
                &fields()
            )),
            ["PropertyValueTypeError", "PropertyUnknown"]
        );
        assert_eq!(
            ids(validate_patch(&Map::new(), &cur, &fields())),
            ["EmptyJSON"]
        );
    }
}
