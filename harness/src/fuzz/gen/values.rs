//! Hostile values: strings that break parsers and encoders, strings
//! longer than any property takes, numbers out of range, values of the
//! wrong JSON type, nesting deeper than a parser allows; and the helpers
//! that find and replace a property in a body.

use serde_json::{json, Map, Value};

use super::{Rng, MAX_STRING};

/// Strings that break parsers, encoders and backends.
pub(super) fn nasty_string(r: &mut Rng) -> String {
    match r.below(16) {
        0 => String::new(),
        1 => "\u{FFFE}".into(),
        2 => "a\u{FFFF}b\u{FFFE}".into(),
        3 => "nul\u{0}byte".into(),
        4 => "\u{202E}gnp.exe".into(),
        5 => "😀".repeat(1 + r.below(3000)),
        6 => "e\u{301}\u{301}\u{301}".repeat(50),
        7 => "%s%n%x{}${jndi:ldap://127.0.0.1/}".into(),
        8 => "../../../../etc/passwd".into(),
        9 => "<domain><![CDATA[x]]></domain>&amp;&#0;".into(),
        10 => "http://[::1".into(),
        11 => format!("http://127.0.0.1:1/{}", "a".repeat(100 + r.below(10_000))),
        12 => "file:///etc/shadow".into(),
        13 => "' OR '1'='1".into(),
        14 => "\t\r\n \u{0b}\u{85}\u{2028}".into(),
        _ => "x".repeat(1 + r.below(64)),
    }
}

/// A string longer than any property should take.
pub(super) fn huge_string(r: &mut Rng) -> String {
    let n = *r.pick(&[MAX_STRING + 1, 70_000, 300_000]);
    let head = *r.pick(&["http://127.0.0.1/", "", "\u{FFFE}"]);
    format!("{head}{}", "A".repeat(n))
}

pub(super) fn nasty_number(r: &mut Rng) -> Value {
    match r.below(9) {
        0 => json!(-1),
        1 => json!(0),
        2 => json!(1.5),
        3 => json!(1e308),
        4 => json!(-1e308),
        5 => json!(i64::MAX),
        6 => json!(i64::MIN),
        7 => json!(u64::MAX),
        _ => json!(r.below(1000) as i64 - 500),
    }
}

/// A value of a JSON type other than `v`'s.
pub(super) fn other_type(r: &mut Rng, v: &Value) -> Value {
    loop {
        let x = match r.below(6) {
            0 => Value::String(nasty_string(r)),
            1 => nasty_number(r),
            2 => Value::Bool(r.chance(50)),
            3 => json!([]),
            4 => json!({"x": 1}),
            _ => json!([v.clone()]),
        };
        let same = matches!(
            (&x, v),
            (Value::String(_), Value::String(_))
                | (Value::Number(_), Value::Number(_))
                | (Value::Bool(_), Value::Bool(_))
                | (Value::Array(_), Value::Array(_))
                | (Value::Object(_), Value::Object(_))
        );
        if !same {
            return x;
        }
    }
}

pub(super) fn deep_json(n: usize, object: bool) -> Vec<u8> {
    let (open, close) = if object { ("{\"a\":", "}") } else { ("[", "]") };
    let mut s = open.repeat(n);
    s.push('1');
    s.push_str(&close.repeat(n));
    s.into_bytes()
}

/// The property paths under `v` with a scalar value, and the value.
pub(super) fn leaves(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    let Value::Object(m) = v else { return };
    for (k, x) in m {
        if k.starts_with("@odata.") || k == "Links" || k == "Members" || k == "Actions" {
            continue;
        }
        prefix.push(k.clone());
        match x {
            Value::Object(_) if prefix.len() < 4 => leaves(x, prefix, out),
            Value::Object(_) | Value::Array(_) => {}
            _ => out.push((prefix.clone(), x.clone())),
        }
        prefix.pop();
    }
}

/// Sets the property at `path` in `body` to `v`, making (or replacing
/// with) objects on the way; an empty path sets nothing.
pub(super) fn set_path(body: &mut Map<String, Value>, path: &[String], v: Value) {
    match path {
        [] => {}
        [last] => {
            body.insert(last.clone(), v);
        }
        [first, rest @ ..] => {
            let next = body
                .entry(first.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !next.is_object() {
                *next = Value::Object(Map::new());
            }
            if let Value::Object(m) = next {
                set_path(m, rest, v);
            }
        }
    }
}

/// The AllowableValues the representation gives for the leaf at `path`.
pub(super) fn allowable(body: &Value, path: &[String]) -> Option<Vec<Value>> {
    let (last, parents) = path.split_last()?;
    let parent = parents.iter().try_fold(body, |c, p| c.get(p))?;
    parent
        .get(format!("{last}@Redfish.AllowableValues"))
        .and_then(Value::as_array)
        .cloned()
}
