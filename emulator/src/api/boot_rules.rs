//! What a System PATCH may change and how: the Boot targets and modes a
//! machine offers under its profile, the writable properties and their
//! string rules, a profile's demands on any Boot PATCH, the boot request
//! and settings a validated PATCH asks for, and the core's boot refusals
//! as Redfish errors.

use serde_json::{Map, Value};

use super::input::{self, Rule};
use super::patch::{validate_patch, writable, Kind, Writable};
use crate::api::error::{ApiError, Msg};
use crate::bmc::{offered_targets, BootRefused, BootRequest};
use crate::model::{
    BootMode, BootTarget, IndicatorLed, OverrideEnabled, PowerRestorePolicy, System, SystemSettings,
};
use crate::profile::{HttpBootUri, Profile};

/// Boot targets offered for this system under its profile (the core's
/// list, as Redfish spells them).
pub fn allowed_targets(sys: &System, profile: &Profile) -> Vec<&'static str> {
    offered_targets(sys, profile)
        .into_iter()
        .map(BootTarget::as_str)
        .collect()
}

pub(super) fn allowed_modes(sys: &System) -> Vec<&'static str> {
    if sys.arch.has_uefi() {
        vec!["UEFI", "Legacy"]
    } else {
        vec!["Legacy"]
    }
}

pub(super) fn writables(sys: &System, profile: &Profile) -> Vec<Writable> {
    let mut w = vec![
        writable(
            "Boot/BootSourceOverrideTarget",
            Kind::Enum(allowed_targets(sys, profile)),
        ),
        writable(
            "Boot/BootSourceOverrideEnabled",
            Kind::Enum(profile.enabled_values()),
        ),
        writable(
            "Boot/BootSourceOverrideMode",
            Kind::Enum(allowed_modes(sys)),
        ),
        writable("Boot/UefiTargetBootSourceOverride", Kind::NullableStr),
        writable(
            "IndicatorLED",
            Kind::Enum(IndicatorLed::ALL.iter().map(|e| e.as_str()).collect()),
        ),
        writable("LocationIndicatorActive", Kind::Bool),
        writable("AssetTag", Kind::Str),
        writable(
            "PowerRestorePolicy",
            Kind::Enum(PowerRestorePolicy::ALL.iter().map(|e| e.as_str()).collect()),
        ),
    ];
    if sys.arch.has_uefi() && profile.boot.http_boot_uri == HttpBootUri::Writable {
        w.push(writable("Boot/HttpBootUri", Kind::NullableStr));
    }
    w
}

/// What a profile demands of any Boot PATCH (wherever it is sent): a
/// refused HttpBootUri gets the vendor's message too; Mode or Enabled
/// may be required.
pub(super) fn boot_patch_rules(
    checked: Result<(), ApiError>,
    boot: Option<&Map<String, Value>>,
    profile: &'static Profile,
) -> Result<(), ApiError> {
    let vendor = profile.boot.http_boot_uri_refusal.as_ref();
    let checked = match (checked, vendor) {
        (Err(ApiError::BadRequest(mut msgs)), Some(m))
            if boot.is_some_and(|b| b.contains_key("HttpBootUri")) =>
        {
            msgs.push(Msg::vendor(m, "").about("Boot/HttpBootUri"));
            Err(ApiError::BadRequest(msgs))
        }
        (r, _) => r,
    };
    checked?;
    let Some(boot) = boot else { return Ok(()) };
    let mut missing = Vec::new();
    for (required, field) in [
        (profile.boot.mode_required, "BootSourceOverrideMode"),
        (profile.boot.enabled_required, "BootSourceOverrideEnabled"),
    ] {
        if required && !boot.contains_key(field) {
            let path = format!("Boot/{field}");
            missing.push(Msg::new("PropertyMissing", &[&path]).about(&path));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(missing))
    }
}

/// The strings a System PATCH can set, with their rules (`input`).
const STRINGS: &[(&str, Rule)] = &[
    ("Boot/HttpBootUri", Rule::BOOT_URI),
    (
        "Boot/UefiTargetBootSourceOverride",
        Rule::Text {
            max: input::URI_MAX,
        },
    ),
    ("AssetTag", Rule::Text { max: ASSET_TAG_MAX }),
];

/// The longest AssetTag, as the BIOS's own `AssetTagBios`.
const ASSET_TAG_MAX: usize = 64;

/// `validate_patch`, then the rules of the strings among `fields`, every
/// problem reported at once.
pub(super) fn checked_patch(
    body: &Map<String, Value>,
    current: &Value,
    fields: &[Writable],
) -> Result<(), ApiError> {
    let mut msgs = match validate_patch(body, current, fields) {
        Ok(()) => Vec::new(),
        Err(ApiError::BadRequest(m)) => m,
        Err(e) => return Err(e),
    };
    for (path, rule) in STRINGS {
        if !fields.iter().any(|f| f.path == *path) {
            continue;
        }
        if let Some(s) = pointer(body, path).and_then(Value::as_str) {
            if let Err(m) = input::property(path, s, *rule) {
                msgs.push(m);
            }
        }
    }
    if msgs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(msgs))
    }
}

/// The member at `path` (`Boot/HttpBootUri`) of a body.
fn pointer<'a>(body: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let (parent, key) = match path.rsplit_once('/') {
        Some((p, k)) => (body.get(p).and_then(Value::as_object)?, k),
        None => (body, path),
    };
    parent.get(key)
}

/// What the Boot object of a (validated) PATCH asks of the override.
pub(super) fn boot_request(boot: &Map<String, Value>) -> BootRequest {
    let s = |k: &str| boot.get(k).and_then(Value::as_str);
    // Strings checked by `checked_patch`: a string or null.
    let nullable = |k: &str| boot.get(k).map(|v| v.as_str().map(str::to_string));
    BootRequest {
        target: s("BootSourceOverrideTarget").and_then(BootTarget::parse),
        enabled: s("BootSourceOverrideEnabled").and_then(OverrideEnabled::parse),
        mode: s("BootSourceOverrideMode").and_then(BootMode::parse),
        http_boot_uri: nullable("HttpBootUri"),
        uefi_target: nullable("UefiTargetBootSourceOverride"),
        pxe_means_network: false,
    }
}

/// A boot request the core refused, as this BMC words it: the host in
/// POST is 400 ResourceInUse with the vendor's message; a value not
/// offered is not in the property's list; a UEFI-only target in Legacy
/// mode conflicts with the mode.
pub(crate) fn boot_refused(e: BootRefused, profile: &'static Profile) -> ApiError {
    const TARGET: &str = "Boot/BootSourceOverrideTarget";
    let not_in_list = |value: &str, path: &str| {
        ApiError::bad(Msg::new("PropertyValueNotInList", &[value, path]).about(path))
    };
    match e {
        BootRefused::InPost => {
            let mut msgs = vec![Msg::new("ResourceInUse", &[])];
            msgs.extend(
                profile
                    .power
                    .post_refusal
                    .iter()
                    .map(|m| Msg::vendor(m, "")),
            );
            ApiError::Status(axum::http::StatusCode::BAD_REQUEST, msgs)
        }
        BootRefused::TargetNotOffered(t) => not_in_list(t.as_str(), TARGET),
        BootRefused::ContinuousNotOffered => {
            not_in_list("Continuous", "Boot/BootSourceOverrideEnabled")
        }
        BootRefused::ModeNotOffered(m) => not_in_list(m.as_str(), "Boot/BootSourceOverrideMode"),
        BootRefused::NeedsUefi(_) => ApiError::bad(
            Msg::new(
                "PropertyValueConflict",
                &[TARGET, "Boot/BootSourceOverrideMode"],
            )
            .about(TARGET),
        ),
        BootRefused::Backend(e) => e.into(),
    }
}

/// The indicator LED a valid PATCH body asks for, whichever property names
/// it: `IndicatorLED`, or `LocationIndicatorActive` (blinking when active,
/// as BMCs show it). Both, disagreeing, are refused.
pub(super) fn indicator_asked(body: &Map<String, Value>) -> Result<Option<IndicatorLed>, ApiError> {
    let led = body
        .get("IndicatorLED")
        .and_then(Value::as_str)
        .and_then(IndicatorLed::parse);
    let active = body.get("LocationIndicatorActive").and_then(Value::as_bool);
    let indicator = match (led, active) {
        (Some(l), Some(a)) if (l != IndicatorLed::Off) != a => {
            return Err(ApiError::bad(
                Msg::new(
                    "PropertyValueConflict",
                    &["LocationIndicatorActive", "IndicatorLED"],
                )
                .about("LocationIndicatorActive"),
            ))
        }
        (Some(l), _) => Some(l),
        (None, Some(true)) => Some(IndicatorLed::Blinking),
        (None, Some(false)) => Some(IndicatorLed::Off),
        (None, None) => None,
    };
    Ok(indicator)
}

pub(super) fn merged_settings(body: &Map<String, Value>) -> Result<SystemSettings, ApiError> {
    Ok(SystemSettings {
        indicator: indicator_asked(body)?,
        asset_tag: body
            .get("AssetTag")
            .and_then(Value::as_str)
            .map(str::to_string),
        power_restore: body
            .get("PowerRestorePolicy")
            .and_then(Value::as_str)
            .and_then(PowerRestorePolicy::parse),
    })
}
