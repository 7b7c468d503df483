//! What a captured ComputerSystem offers, as the behaviour profile the
//! core decides with: the boot targets and frequencies its
//! `@Redfish.AllowableValues` list, whether it shows `HttpBootUri`, its
//! names and BIOS version. The rest is the generic profile's.

use serde_json::Value;

use crate::model::{BootTarget, OverrideEnabled};
use crate::profile::{generic, HttpBootUri, Profile};

fn allowable<'a>(boot: &'a Value, property: &str) -> Option<Vec<&'a str>> {
    let list = boot.get(format!("{property}@Redfish.AllowableValues"))?;
    Some(list.as_array()?.iter().filter_map(Value::as_str).collect())
}

/// The profile named `name` for the captured system `system` of a service
/// whose root is `root` and UpdateService `update` (its push URIs are the
/// ones a replay takes images at: none where it shows none).
pub fn derived_profile(
    name: &str,
    root: &Value,
    system: &Value,
    update: Option<&Value>,
) -> Profile {
    let mut p = generic().clone();
    p.name = name.to_string();
    p.description = format!(
        "derived from the captured system {}",
        system
            .get("@odata.id")
            .and_then(Value::as_str)
            .unwrap_or("?")
    );
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(v) = text(root, "Vendor").or_else(|| text(system, "Manufacturer")) {
        p.vendor = v;
    }
    if let Some(m) = text(system, "Manufacturer") {
        p.manufacturer = m;
    }
    if let Some(m) = text(system, "Model") {
        p.model = m;
    }
    if let Some(b) = text(system, "BiosVersion") {
        p.bios_version = b;
    }
    let boot = system.get("Boot").cloned().unwrap_or(Value::Null);
    if let Some(targets) = allowable(&boot, "BootSourceOverrideTarget") {
        // Supermicro's virtual CD is a USB CD (`UsbCd`, where sushy sends it).
        p.vmedia.usb_cd = targets.contains(&BootTarget::UsbCd.as_str());
        p.boot.hidden_targets = BootTarget::ALL
            .iter()
            .filter(|t| !targets.contains(&t.as_str()))
            .map(|t| t.as_str().to_string())
            .collect();
    }
    if let Some(enabled) = allowable(&boot, "BootSourceOverrideEnabled") {
        p.boot.continuous = enabled.contains(&OverrideEnabled::Continuous.as_str());
    }
    let push = |k: &str| {
        update
            .and_then(|u| u.get(k))
            .and_then(Value::as_str)
            .map(|u| crate::mockup::key(u).to_string())
            .unwrap_or_default()
    };
    p.update.multipart_push_uri = push("MultipartHttpPushUri");
    p.update.http_push_uri = push("HttpPushUri");
    p.boot.http_boot_uri = if boot.get("HttpBootUri").is_some() {
        HttpBootUri::Writable
    } else {
        HttpBootUri::Absent
    };
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_captured_systems_allowable_values_are_what_it_offers() {
        let root = json!({"Vendor": "Dell"});
        let sys = json!({
            "@odata.id": "/redfish/v1/Systems/System.Embedded.1",
            "Manufacturer": "Dell Inc.", "Model": "PowerEdge R650", "BiosVersion": "1.5.4",
            "Boot": {
                "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe", "Cd", "Hdd", "UefiHttp", "UsbCd"],
                "BootSourceOverrideEnabled@Redfish.AllowableValues": ["Once", "Disabled"],
            }
        });
        let update = json!({"MultipartHttpPushUri": "/redfish/v1/UpdateService/MultipartUpload/"});
        let p = derived_profile("capture-1", &root, &sys, Some(&update));
        assert_eq!(
            p.update.multipart_uri(),
            Some("/redfish/v1/UpdateService/MultipartUpload")
        );
        assert_eq!(p.update.push_uri(), None);
        assert_eq!(p.vendor, "Dell");
        assert_eq!(p.model, "PowerEdge R650");
        assert_eq!(p.bios_version, "1.5.4");
        assert!(p.offers(BootTarget::UefiHttp));
        assert!(p.offers(BootTarget::Pxe));
        assert!(!p.offers(BootTarget::Usb));
        assert!(!p.offers(BootTarget::BiosSetup));
        assert!(!p.boot.continuous);
        assert!(p.vmedia.usb_cd && p.offers(BootTarget::UsbCd));
        assert_eq!(p.boot.http_boot_uri, HttpBootUri::Absent);
        // Nothing listed: nothing hidden.
        let open = derived_profile("c", &root, &json!({"Boot": {"HttpBootUri": null}}), None);
        assert!(open.offers(BootTarget::Usb));
        assert!(open.boot.continuous);
        assert!(!open.vmedia.usb_cd);
        assert_eq!(open.boot.http_boot_uri, HttpBootUri::Writable);
    }
}
