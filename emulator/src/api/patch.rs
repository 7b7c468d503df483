//! PATCH: the preamble every PATCH handler shares (`Patch`: the resource's
//! lock taken, the resource read and rendered under it, If-Match checked
//! against that rendering) and validation of a body against the current
//! representation and its writable properties (`validate_patch`).
//!
//! Invariants: If-Match and validation see the resource as it is under the
//! lock the write is made under; a PATCH is validated whole before anything
//! is applied, and every problem is reported at once; read-only vs unknown
//! is decided from the current representation.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;

use super::json::{check_if_match, shown, JsonObject};
use super::state::{AppState, SysId};
use crate::api::error::{ApiError, Msg};
use crate::model::System;
use crate::profile::Profile;

/// A PATCH past its preamble: the resource's lock is held (until this is
/// dropped), `target` and `current` were read under it, and If-Match was
/// checked against `current` with `profile`'s ETag policy.
pub struct Patch<T> {
    /// What the resource belongs to, as read under the lock (the system,
    /// the account).
    pub target: T,
    /// The profile whose ETag policy If-Match followed.
    pub profile: &'static Profile,
    /// The resource's representation under the lock.
    pub current: Value,
    _guard: OwnedMutexGuard<()>,
}

/// A PATCH to one of a system's resources, as extracted: the system's Id
/// (resolved as [`SysId`] resolves it, the system not read), the request's
/// headers (If-Match) and its body, a JSON object.
pub struct SysPatch {
    pub id: String,
    pub headers: HeaderMap,
    pub body: Map<String, Value>,
}

impl<S: Send + Sync> FromRequest<S> for SysPatch {
    type Rejection = ApiError;

    async fn from_request(req: Request, st: &S) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let SysId(id) = SysId::from_request_parts(&mut parts, st).await?;
        let headers = parts.headers.clone();
        let JsonObject(body) =
            JsonObject::from_request(Request::from_parts(parts, body), st).await?;
        Ok(SysPatch { id, headers, body })
    }
}

impl AppState {
    /// The preamble of a PATCH to a resource of a system: takes the
    /// system's lock and reads it (`AppState::locked`), renders the
    /// resource with `render` and checks the request's If-Match against
    /// that.
    pub async fn begin_patch(
        &self,
        req: &SysPatch,
        render: impl FnOnce(&System, &'static Profile) -> Value,
    ) -> Result<Patch<System>, ApiError> {
        let (sys, profile, guard) = self.locked(&req.id).await?.into_parts();
        let current = render(&sys, profile);
        Patch::checked(sys, profile, current, guard, &req.headers)
    }

    /// The preamble of a PATCH to a resource that is not a system's (an
    /// account, the AccountService): takes the lock `key`, then `read`
    /// gives what the resource is and its representation, and If-Match is
    /// checked against that with `profile`'s ETag policy.
    pub async fn begin_patch_keyed<T>(
        &self,
        key: &str,
        headers: &HeaderMap,
        profile: &'static Profile,
        read: impl FnOnce() -> Result<(T, Value), ApiError>,
    ) -> Result<Patch<T>, ApiError> {
        let guard = self.core.locks.lock(key).await;
        let (target, current) = read()?;
        Patch::checked(target, profile, current, guard, headers)
    }
}

impl<T> Patch<T> {
    fn checked(
        target: T,
        profile: &'static Profile,
        current: Value,
        guard: OwnedMutexGuard<()>,
        headers: &HeaderMap,
    ) -> Result<Self, ApiError> {
        check_if_match(headers, &current, profile)?;
        Ok(Patch {
            target,
            profile,
            current,
            _guard: guard,
        })
    }

    /// The same, once `body` is valid against the current representation
    /// and `fields` (`validate_patch`).
    pub fn validated(
        self,
        body: &Map<String, Value>,
        fields: &[Writable],
    ) -> Result<Self, ApiError> {
        validate_patch(body, &self.current, fields)?;
        Ok(self)
    }

    /// What is wrong with `body` against the current representation and
    /// `fields`, for a handler that checks more and reports it all at once.
    pub fn problems(&self, body: &Map<String, Value>, fields: &[Writable]) -> Vec<Msg> {
        patch_problems(body, &self.current, fields)
    }
}

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
    /// An array whose members are checked by the handler.
    Array,
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
    let errors = patch_problems(body, current, fields);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(errors))
    }
}

/// The problems `validate_patch` reports, in its order (none when valid).
fn patch_problems(body: &Map<String, Value>, current: &Value, fields: &[Writable]) -> Vec<Msg> {
    if body.is_empty() {
        return vec![Msg::new("EmptyJSON", &[])];
    }
    let mut errors = Vec::new();
    walk(body, Some(current), "", fields, &mut errors);
    errors
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
        Kind::Array if !v.is_array() => type_err(),
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
