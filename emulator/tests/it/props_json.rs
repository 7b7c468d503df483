//! Property tests of PATCH validation (`api::patch::validate_patch`): any
//! JSON body is accepted or refused whole, never panics, and what it
//! accepts only names writable properties with values of their kind.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use shoal_emulator::api::json::shown;
use shoal_emulator::api::patch::{validate_patch, writable, Kind, Writable};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<u64>().prop_map(|n| json!(n)),
        "\\PC{0,12}".prop_map(Value::String),
        Just(Value::String("\u{FFFE}".into())),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Boot".to_string()),
        Just("BootSourceOverrideTarget".to_string()),
        Just("HttpBootUri".to_string()),
        Just("AssetTag".to_string()),
        Just("Count".to_string()),
        Just("Enabled".to_string()),
        Just("@odata.etag".to_string()),
        Just("@Redfish.SettingsApplyTime".to_string()),
        "[A-Za-z@.]{1,8}",
    ]
}

fn fields() -> Vec<Writable> {
    vec![
        writable(
            "Boot/BootSourceOverrideTarget",
            Kind::Enum(vec!["None", "Pxe", "UefiHttp"]),
        ),
        writable("Boot/HttpBootUri", Kind::NullableStr),
        writable("AssetTag", Kind::Str),
        writable("Enabled", Kind::Bool),
        writable("Count", Kind::Int { min: 0, max: 10 }),
        writable("Attributes", Kind::Object),
        writable("Servers", Kind::Array),
    ]
}

fn current() -> Value {
    json!({"Id": "1", "AssetTag": "", "Enabled": true, "Count": 1,
           "Boot": {"BootSourceOverrideTarget": "None", "HttpBootUri": null, "Mode": "UEFI"},
           "Attributes": {}, "Servers": []})
}

/// Whether `v` is a value of `kind`.
fn of_kind(kind: &Kind, v: &Value) -> bool {
    match kind {
        Kind::Enum(vs) => v.as_str().is_some_and(|s| vs.contains(&s)),
        Kind::Str => v.is_string(),
        Kind::NullableStr => v.is_string() || v.is_null(),
        Kind::Bool => v.is_boolean(),
        Kind::Int { min, max } => v.as_i64().is_some_and(|i| (*min..=*max).contains(&i)),
        Kind::Object => v.is_object(),
        Kind::Array => v.is_array(),
    }
}

/// Whether an accepted `body` (under `prefix`) only names writable paths
/// with values of their kind.
fn only_writable(body: &Map<String, Value>, prefix: &str, fields: &[Writable]) -> bool {
    body.iter().all(|(k, v)| {
        if k.starts_with("@odata.") {
            return true;
        }
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}/{k}")
        };
        match fields.iter().find(|f| f.path == path) {
            Some(f) => of_kind(&f.kind, v),
            None => v
                .as_object()
                .is_some_and(|m| only_writable(m, &path, fields)),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_patch_is_accepted_only_when_all_of_it_is_writable(
        body in prop::collection::btree_map(key(), json_value(), 0..5)
    ) {
        let body: Map<String, Value> = body.into_iter().collect();
        let fields = fields();
        match validate_patch(&body, &current(), &fields) {
            Ok(()) => prop_assert!(
                !body.is_empty() && only_writable(&body, "", &fields),
                "accepted {}", Value::Object(body.clone())
            ),
            Err(e) => {
                // Refused bodies are refused with a Redfish error.
                let _ = e.to_string();
            }
        }
    }

    #[test]
    fn valid_values_of_each_kind_are_accepted(n in 0i64..=10, s in "\\PC{0,20}", b in any::<bool>()) {
        let body = json!({"Count": n, "AssetTag": s, "Enabled": b,
                          "Boot": {"HttpBootUri": null, "BootSourceOverrideTarget": "Pxe"}});
        let body = body.as_object().unwrap().clone();
        prop_assert!(validate_patch(&body, &current(), &fields()).is_ok());
    }

    #[test]
    fn out_of_range_integers_are_refused(n in prop_oneof![i64::MIN..0, 11..i64::MAX]) {
        let body = json!({"Count": n}).as_object().unwrap().clone();
        prop_assert!(validate_patch(&body, &current(), &fields()).is_err());
    }

    #[test]
    fn any_value_is_shown(v in json_value()) {
        let _ = shown(&v);
    }
}
