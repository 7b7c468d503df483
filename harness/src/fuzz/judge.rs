//! The invariants' judgements that need no service: a MessageId's shape
//! against the served registries, whether a 4xx body is a Redfish error,
//! and a resource compared before and after a refused write (volatile
//! properties left out).

use std::collections::BTreeSet;

use serde_json::Value;

use super::http::Resp;

/// The MessageId shapes DSP0266 gives: `Registry.Major.Minor[.Errata].Name`.
pub(super) fn message_id_ok(id: &str, registries: &BTreeSet<String>) -> bool {
    let parts: Vec<&str> = id.split('.').collect();
    let n = parts.len();
    (4..=5).contains(&n)
        && registries.contains(parts[0])
        && parts[1..n - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !parts[n - 1].is_empty()
        && parts[n - 1].bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Why a 4xx body is not a Redfish error, if it is not.
pub(super) fn error_body_problem(resp: &Resp, registries: &BTreeSet<String>) -> Option<String> {
    let Some(v) = resp.json() else {
        return Some(format!(
            "not JSON ({} bytes, Content-Type {:?})",
            resp.body.len(),
            resp.header("content-type")
        ));
    };
    let Some(e) = v.get("error") else {
        return Some("no \"error\" object".into());
    };
    if !e.get("code").is_some_and(Value::is_string)
        || !e.get("message").is_some_and(Value::is_string)
    {
        return Some("error without code and message".into());
    }
    let Some(info) = e.get("@Message.ExtendedInfo").and_then(Value::as_array) else {
        return Some("no @Message.ExtendedInfo array".into());
    };
    if info.is_empty() {
        return Some("an empty @Message.ExtendedInfo".into());
    }
    for m in info {
        match m.get("MessageId").and_then(Value::as_str) {
            Some(id) if message_id_ok(id, registries) => {}
            other => {
                return Some(format!(
                    "MessageId {other:?} is not Registry.Major.Minor.Name of a served registry"
                ))
            }
        }
    }
    None
}

/// `v` without the properties named in `volatile`, anywhere.
pub(super) fn stable(v: &Value, volatile: &[String]) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !volatile.iter().any(|x| x == *k))
                .map(|(k, x)| (k.clone(), stable(x, volatile)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| stable(x, volatile)).collect()),
        _ => v.clone(),
    }
}

/// The names of the properties whose values differ between `a` and `b`.
pub(super) fn changed_keys(a: &Value, b: &Value, out: &mut Vec<String>) {
    if let (Value::Object(x), Value::Object(y)) = (a, b) {
        for (k, va) in x {
            match y.get(k) {
                Some(vb) if vb.is_object() => changed_keys(va, vb, out),
                Some(vb) if vb == va => {}
                _ => out.push(k.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::VOLATILE;
    use serde_json::json;

    #[test]
    fn message_ids_are_checked_against_served_registries() {
        let regs = ["Base".to_string()].into_iter().collect();
        assert!(message_id_ok("Base.1.18.PropertyUnknown", &regs));
        assert!(message_id_ok("Base.1.18.1.PropertyUnknown", &regs));
        assert!(!message_id_ok("Base.PropertyUnknown", &regs));
        assert!(!message_id_ok("IDRAC.2.9.SYS403", &regs));
        assert!(!message_id_ok("Base.1.x.Name", &regs));
    }

    #[test]
    fn error_bodies_are_judged() {
        let regs = ["Base".to_string()].into_iter().collect();
        let resp = |b: Value| Resp {
            status: 400,
            headers: vec![],
            body: serde_json::to_vec(&b).unwrap(),
        };
        let good = json!({"error": {"code": "Base.1.18.GeneralError", "message": "m",
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.18.MalformedJSON"}]}});
        assert_eq!(error_body_problem(&resp(good), &regs), None);
        let bad = json!({"error": {"code": "c", "message": "m", "@Message.ExtendedInfo": []}});
        assert!(error_body_problem(&resp(bad), &regs).is_some());
        let text = Resp {
            status: 405,
            headers: vec![],
            body: b"Method Not Allowed".to_vec(),
        };
        assert!(error_body_problem(&text, &regs)
            .unwrap()
            .starts_with("not JSON"));
    }

    #[test]
    fn volatile_properties_are_ignored_and_changes_named() {
        let a = json!({"@odata.etag": "1", "Boot": {"T": "None", "DateTime": "x"}, "P": "On"});
        let b = json!({"@odata.etag": "2", "Boot": {"T": "Pxe", "DateTime": "y"}, "P": "On"});
        let vol: Vec<String> = VOLATILE.iter().map(|s| s.to_string()).collect();
        assert_ne!(stable(&a, &vol), stable(&b, &vol));
        let mut k = Vec::new();
        changed_keys(&stable(&a, &vol), &stable(&b, &vol), &mut k);
        assert_eq!(k, ["T"]);
        let c = json!({"@odata.etag": "3", "Boot": {"T": "None", "DateTime": "z"}, "P": "On"});
        assert_eq!(stable(&a, &vol), stable(&c, &vol));
    }
}
