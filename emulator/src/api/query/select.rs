//! `$select`: the selected properties of a representation, with the
//! OData annotations that identify it.

use serde_json::{Map, Value};

/// Keeps the selected properties and the OData annotations a client needs
/// to identify the resource (`@odata.id`, `@odata.type`, `@odata.context`,
/// `@odata.etag`, which stays the whole resource's ETag).
pub fn select(v: &Value, paths: &[Vec<String>]) -> Value {
    let Some(obj) = v.as_object() else {
        return v.clone();
    };
    let mut out = Map::new();
    for k in ["@odata.context", "@odata.id", "@odata.type", "@odata.etag"] {
        if let Some(x) = obj.get(k) {
            out.insert(k.into(), x.clone());
        }
    }
    for p in paths {
        copy_path(obj, p, &mut out);
    }
    Value::Object(out)
}

fn copy_path(from: &Map<String, Value>, path: &[String], to: &mut Map<String, Value>) {
    let Some((head, rest)) = path.split_first() else {
        return;
    };
    let Some(v) = from.get(head) else {
        return;
    };
    if rest.is_empty() {
        to.insert(head.clone(), v.clone());
        return;
    }
    if let Some(inner) = v.as_object() {
        let slot = to
            .entry(head.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(slot) = slot.as_object_mut() {
            copy_path(inner, rest, slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn select_keeps_identity_and_paths() {
        let v = json!({
            "@odata.id": "/r", "@odata.type": "#R.v1_0_0.R", "@odata.etag": "\"e\"",
            "Name": "n", "Other": 1,
            "Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
        });
        let paths = vec![
            vec!["Name".into()],
            vec!["Boot".into(), "BootSourceOverrideTarget".into()],
        ];
        assert_eq!(
            select(&v, &paths),
            json!({
                "@odata.id": "/r", "@odata.type": "#R.v1_0_0.R", "@odata.etag": "\"e\"",
                "Name": "n", "Boot": {"BootSourceOverrideTarget": "Pxe"}
            })
        );
    }
}
