//! The BIOS attribute table (`crate::bios`) as Redfish shows it: the
//! attribute registry document, and the check of one attribute a client
//! sets, with its Base registry messages.

use serde_json::{json, Value};

use super::input::{self, Rule};
use crate::api::error::Msg;
use crate::bios::{AttrKind, ATTRIBUTES};

/// Id of the attribute registry that describes [`ATTRIBUTES`].
pub const REGISTRY: &str = "BiosAttributeRegistry.v1_0_0";

/// The attribute registry document (`AttributeRegistry` schema) for
/// [`ATTRIBUTES`], so clients can discover types, bounds and values.
pub fn registry_document(uri: &str) -> Value {
    let attrs: Vec<Value> = ATTRIBUTES
        .iter()
        .map(|a| {
            let mut v = json!({
                "AttributeName": a.name,
                "DisplayName": a.name,
                "ReadOnly": false,
            });
            // An empty default is left out, as the schema asks of services.
            let default = a.default.to_json();
            if default != json!("") {
                v["DefaultValue"] = default;
            }
            match a.kind {
                AttrKind::Enum(values) => {
                    v["Type"] = json!("Enumeration");
                    v["Value"] = values
                        .iter()
                        .map(|x| json!({"ValueName": x, "ValueDisplayName": x}))
                        .collect();
                }
                AttrKind::Bool => v["Type"] = json!("Boolean"),
                AttrKind::Int { min, max } => {
                    v["Type"] = json!("Integer");
                    v["LowerBound"] = json!(min);
                    v["UpperBound"] = json!(max);
                }
                AttrKind::Str { max_len } | AttrKind::Uri { max_len } => {
                    v["Type"] = json!("String");
                    v["MaxLength"] = json!(max_len);
                }
            }
            v
        })
        .collect();
    json!({
        "@odata.type": "#AttributeRegistry.v1_3_6.AttributeRegistry",
        "@odata.id": uri,
        "Id": REGISTRY,
        "Name": "BIOS Attribute Registry",
        "Language": "en",
        "OwningEntity": "Shoal",
        "RegistryVersion": "1.0.0",
        "SupportedSystems": [{ "ProductName": "Shoal Virtual Machine", "SystemId": "shoal", "FirmwareVersion": "1.0.0" }],
        "RegistryEntries": { "Attributes": attrs },
    })
}

/// Checks one attribute assignment; the error names `Attributes/<name>`.
pub fn validate(name: &str, value: &Value) -> Result<(), Msg> {
    let path = format!("Attributes/{}", input::echo(name));
    if super::bios::MACHINE_ATTRIBUTES.contains(&name) {
        // What the machine is, not a setting: its boot mode is changed
        // with BootSourceOverrideMode.
        return Err(Msg::new("PropertyNotWritable", &[&path]).about(&path));
    }
    let Some(def) = crate::bios::lookup(name) else {
        return Err(Msg::new("PropertyUnknown", &[&path]).about(&path));
    };
    let shown = input::echo(&super::json::shown(value));
    let type_err = || Msg::new("PropertyValueTypeError", &[&shown, &path]).about(&path);
    match def.kind {
        AttrKind::Enum(values) => {
            let s = value.as_str().ok_or_else(type_err)?;
            if !values.contains(&s) {
                return Err(Msg::new("PropertyValueNotInList", &[s, &path]).about(&path));
            }
        }
        AttrKind::Bool => {
            value.as_bool().ok_or_else(type_err)?;
        }
        AttrKind::Int { min, max } => {
            let i = value.as_i64().ok_or_else(type_err)?;
            if i < min || i > max {
                return Err(Msg::new("PropertyValueOutOfRange", &[&shown, &path]).about(&path));
            }
        }
        AttrKind::Str { max_len } => {
            let s = value.as_str().ok_or_else(type_err)?;
            input::property(&path, s, Rule::Text { max: max_len })?;
        }
        AttrKind::Uri { max_len } => {
            let s = value.as_str().ok_or_else(type_err)?;
            if !s.is_empty() {
                input::property(&path, s, Rule::BootUri { max: max_len })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        for (k, v) in crate::bios::defaults() {
            validate(&k, &v).unwrap();
        }
    }

    #[test]
    fn bad_values_name_the_attribute() {
        assert_eq!(
            validate("Nope", &json!(1)).unwrap_err().id,
            "PropertyUnknown"
        );
        assert_eq!(
            validate("ProcTurboMode", &json!("Max")).unwrap_err().id,
            "PropertyValueNotInList"
        );
        assert_eq!(
            validate("ProcTurboMode", &json!(true)).unwrap_err().id,
            "PropertyValueTypeError"
        );
        assert_eq!(
            validate("PowerOnDelaySeconds", &json!(601)).unwrap_err().id,
            "PropertyValueOutOfRange"
        );
        assert_eq!(
            validate("QuietBoot", &json!("yes")).unwrap_err().args[1],
            "Attributes/QuietBoot"
        );
    }

    #[test]
    fn string_attributes_follow_the_input_rules() {
        let id = |name: &str, v: &str| validate(name, &json!(v)).err().map(|m| m.id);
        assert_eq!(id("HttpDev1Uri", "http://h/x.efi"), None);
        assert_eq!(id("HttpDev1Uri", ""), None, "empty: no URI");
        for bad in [
            "file:///x.efi",
            "http://h/é",
            "http://h/\u{FFFF}",
            "tftp://h/x",
        ] {
            assert_eq!(
                id("UrlBootFile", bad),
                Some("PropertyValueFormatError"),
                "{bad}"
            );
        }
        let long = format!("http://h/{}", "a".repeat(1024));
        assert_eq!(id("HttpDev1Uri", &long), Some("PropertyValueFormatError"));
        assert_eq!(id("AssetTagBios", "rack 7 é"), None);
        assert_eq!(
            id("AssetTagBios", "a\u{1}"),
            Some("PropertyValueFormatError")
        );
        assert_eq!(
            id("AssetTagBios", &"x".repeat(65)),
            Some("PropertyValueFormatError")
        );
    }
}
