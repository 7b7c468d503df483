//! Validation of a profile file: `Profile::parse` reads the TOML and
//! checks every key (errors name it), and the quirks a profile has
//! (`QUIRKS`) are each covered by a `[[sources]]` entry.

use super::{AllowableValues, EtagStyle, HttpBootUri, Profile, INSERT_PARAMS};
use crate::model::BootTarget;

/// The profile keys that are quirks (behaviour other than the neutral
/// BMC's). Identity strings and `Oem` blocks are not quirks.
pub const QUIRKS: &[&str] = &[
    "ids",
    "etag.style",
    "etag.if_match_required",
    "etag.strict_if_match",
    "boot.allowable_values",
    "boot.settings",
    "boot.settings.refused_on_system",
    "boot.continuous",
    "boot.mode_required",
    "boot.enabled_required",
    "boot.http_boot_uri",
    "boot.http_boot_uri_refusal",
    "boot.hidden_targets",
    "power.post_secs",
    "power.post_refusal",
    "power.busy_secs",
    "power.busy_refusal",
    "power.busy_base",
    "vmedia.usb_cd",
    "vmedia.insert_refuses",
    "vmedia.insert_requires",
    "vmedia.eject_needs_body",
    "vmedia.insert_by_patch",
    "vmedia.system_ids",
    "vmedia.manager_ids",
    "vmedia.system_media_types",
    "errors.busy",
    "https_boot.hpe_tlsconfig",
    "https_boot.needs_bios",
    "dell",
    "inventory.nic_ids",
    "inventory.service_tag",
    "inventory.storage_ids",
    "hpe",
    "events",
    "logs",
    "update",
];
/// Boot fields a settings object may carry.
const BOOT_FIELDS: &[&str] = &[
    "BootSourceOverrideTarget",
    "BootSourceOverrideEnabled",
    "BootSourceOverrideMode",
    "HttpBootUri",
    "UefiTargetBootSourceOverride",
];

impl Profile {
    /// Parses and checks a profile file's text; errors name the key.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let p: Profile = toml::from_str(text).map_err(|e| e.to_string())?;
        p.check()?;
        Ok(p)
    }

    /// Every key's value, section by section (the first problem is the
    /// one reported), then the sources of its quirks.
    fn check(&self) -> Result<(), String> {
        self.check_names()?;
        self.check_boot()?;
        self.check_insert_params()?;
        if let Some(b) = &self.errors.busy {
            if !(400..=599).contains(&b.status) {
                return Err(format!(
                    "errors.busy.status: {} is not an HTTP error status (400-599)",
                    b.status
                ));
            }
        }
        self.check_https_boot()?;
        self.check_events()?;
        self.check_vmedia_devices()?;
        self.check_dell()?;
        self.update.check()?;
        if self.update.dell_job && self.dell.is_none() {
            return Err("update.dell_job: needs the [dell] section (its job queue)".into());
        }
        self.check_sources()
    }

    /// `name` and the fixed `[ids]`: usable in a URL.
    fn check_names(&self) -> Result<(), String> {
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "name: {:?} must be letters, digits, '-' or '_'",
                self.name
            ));
        }
        if let Some(ids) = &self.ids {
            for (key, v) in [
                ("ids.system", &ids.system),
                ("ids.manager", &ids.manager),
                ("ids.chassis", &ids.chassis),
            ] {
                if v.is_empty()
                    || !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
                {
                    return Err(format!("{key}: {v:?} is not a usable resource Id"));
                }
            }
        }
        Ok(())
    }

    /// `[boot]`: hidden targets, the settings object (its path and fields)
    /// and an HttpBootUri it may carry.
    fn check_boot(&self) -> Result<(), String> {
        for (i, t) in self.boot.hidden_targets.iter().enumerate() {
            if BootTarget::parse(t).is_none() {
                return Err(format!(
                    "boot.hidden_targets[{i}]: {t:?} is not a BootSourceOverrideTarget"
                ));
            }
        }
        match &self.boot.settings {
            Some(s) => {
                if s.path.is_empty()
                    || !s
                        .path
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.')
                {
                    return Err(format!(
                        "boot.settings.path: {:?} must be one path segment",
                        s.path
                    ));
                }
                for (i, f) in s.fields.iter().enumerate() {
                    if !BOOT_FIELDS.contains(&f.as_str()) {
                        return Err(format!(
                            "boot.settings.fields[{i}]: {f:?} is not one of {}",
                            BOOT_FIELDS.join(", ")
                        ));
                    }
                }
            }
            None if self.boot.allowable_values == AllowableValues::Settings => {
                return Err(
                    "boot.allowable_values: \"settings\" needs a [boot.settings] object".into(),
                );
            }
            None => {}
        }
        if self.boot.http_boot_uri != HttpBootUri::Writable && self.in_settings("HttpBootUri") {
            return Err(
                "boot.settings.fields: HttpBootUri is listed but boot.http_boot_uri is not \"writable\""
                    .into(),
            );
        }
        Ok(())
    }

    /// `vmedia.insert_refuses` and `insert_requires`: InsertMedia's
    /// parameters.
    fn check_insert_params(&self) -> Result<(), String> {
        for (key, list) in [
            ("vmedia.insert_refuses", &self.vmedia.insert_refuses),
            ("vmedia.insert_requires", &self.vmedia.insert_requires),
        ] {
            for (i, p) in list.iter().enumerate() {
                if !INSERT_PARAMS.contains(&p.as_str()) {
                    return Err(format!(
                        "{key}[{i}]: {p:?} is not one of {}",
                        INSERT_PARAMS.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// `[https_boot]`: iLO's TLS config path and the BIOS values HTTPS
    /// boot needs.
    fn check_https_boot(&self) -> Result<(), String> {
        if let Some(p) = &self.https_boot.hpe_tlsconfig {
            if !super::HPE_TLSCONFIG_PATHS.contains(&p.as_str()) {
                return Err(format!(
                    "https_boot.hpe_tlsconfig: {p:?} is not one of {:?}",
                    super::HPE_TLSCONFIG_PATHS
                ));
            }
        }
        for (name, value) in &self.https_boot.needs_bios {
            let known = crate::bios::lookup(name).is_some_and(|a| match a.kind {
                crate::bios::AttrKind::Enum(values) => values.contains(&value.as_str()),
                _ => false,
            });
            if !known {
                return Err(format!(
                    "https_boot.needs_bios.{name}: {value:?} is not a value of an enumerated BIOS attribute"
                ));
            }
        }
        Ok(())
    }

    /// The virtual media devices: their Ids under the System or the Manager
    /// (somewhere), and the System's media types.
    fn check_vmedia_devices(&self) -> Result<(), String> {
        for (key, ids) in [
            ("vmedia.system_ids", &self.vmedia.system_ids),
            ("vmedia.manager_ids", &self.vmedia.manager_ids),
        ] {
            let usable = |v: &String| {
                !v.is_empty()
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            };
            if !(ids.is_empty() || ids.len() == 2 && ids[0] != ids[1] && ids.iter().all(usable)) {
                return Err(format!(
                    "{key}: {ids:?} must be empty or two different resource Ids (the CD's, then the removable device's)"
                ));
            }
        }
        if self.vmedia.system_ids.is_empty() && self.vmedia.manager_ids.is_empty() {
            return Err("vmedia: the devices must be under the System or the Manager (system_ids, manager_ids)".into());
        }
        for t in &self.vmedia.system_media_types {
            if !["CD", "DVD", "Floppy", "USBStick"].contains(&t.as_str()) {
                return Err(format!(
                    "vmedia.system_media_types: {t:?} is not CD, DVD, Floppy or USBStick"
                ));
            }
        }
        Ok(())
    }

    /// `[dell]`: the import action, the registry prefix, the delays, and
    /// the fixed Ids the Lifecycle Controller API needs.
    fn check_dell(&self) -> Result<(), String> {
        if let Some(d) = &self.dell {
            let name = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            };
            if !name(&d.import_action) || !d.import_action.ends_with(".ImportSystemConfiguration") {
                return Err(format!(
                    "dell.import_action: {:?} is not an action name ending in .ImportSystemConfiguration",
                    d.import_action
                ));
            }
            let parts: Vec<&str> = d.registry.split('.').collect();
            if parts.len() != 3
                || parts[0].is_empty()
                || !parts[1..]
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            {
                return Err(format!(
                    "dell.registry: {:?} is not a registry prefix like \"IDRAC.2.8\"",
                    d.registry
                ));
            }
            for (key, v, max) in [
                ("dell.import_secs", d.import_secs, 600),
                ("dell.reset_down_secs", d.reset_down_secs, 600),
                ("dell.lc_settle_secs", d.lc_settle_secs, 600),
            ] {
                if v > max {
                    return Err(format!("{key}: {v} is more than {max}"));
                }
            }
            if self.ids.is_none() {
                return Err(
                    "dell: the Lifecycle Controller API needs the BMC's fixed [ids] (one iDRAC, one server)"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// The EventService's settings: an SSE URI under the service, limits
    /// that admit a subscription, an EventType of the schema's.
    fn check_events(&self) -> Result<(), String> {
        let e = &self.events;
        if !e.sse_uri.starts_with("/redfish/v1/") || e.sse_uri.contains(['?', '#', ' ']) {
            return Err(format!(
                "events.sse_uri: {:?} is not a path under /redfish/v1/",
                e.sse_uri
            ));
        }
        if e.max_subscriptions == 0 || e.max_sse > e.max_subscriptions {
            return Err(format!(
                "events.max_subscriptions/max_sse: {} and {} (at least one subscription, and no more SSE streams than subscriptions)",
                e.max_subscriptions, e.max_sse
            ));
        }
        if !(1..=86_400).contains(&e.retry_interval_seconds) || e.retry_attempts > 100 {
            return Err(format!(
                "events.retry_interval_seconds/retry_attempts: {} and {} (1 to 86400 seconds, at most 100 retries)",
                e.retry_interval_seconds, e.retry_attempts
            ));
        }
        const TYPES: [&str; 6] = [
            "StatusChange",
            "ResourceUpdated",
            "ResourceAdded",
            "ResourceRemoved",
            "Alert",
            "Other",
        ];
        if let Some(t) = e.event_type.iter().find(|t| !TYPES.contains(&t.as_str())) {
            return Err(format!(
                "events.event_type: {t:?} is not one of {}",
                TYPES.join(", ")
            ));
        }
        for (key, m) in e.messages.all() {
            if let Some(t) = m.event_type.iter().find(|t| !TYPES.contains(&t.as_str())) {
                return Err(format!(
                    "events.messages.{key}.event_type: {t:?} is not one of {}",
                    TYPES.join(", ")
                ));
            }
        }
        e.messages.check()
    }

    /// The quirks this profile has (keys of [`QUIRKS`]), in that order.
    pub fn quirks(&self) -> Vec<&'static str> {
        let (e, b, p, v) = (&self.etag, &self.boot, &self.power, &self.vmedia);
        let set = [
            self.ids.is_some(),
            e.style != EtagStyle::Strong,
            e.if_match_required,
            e.strict_if_match,
            b.allowable_values != AllowableValues::System,
            b.settings.is_some(),
            b.settings
                .as_ref()
                .is_some_and(|s| s.refused_on_system.is_some()),
            !b.continuous,
            b.mode_required,
            b.enabled_required,
            b.http_boot_uri != HttpBootUri::Writable,
            b.http_boot_uri_refusal.is_some(),
            !b.hidden_targets.is_empty(),
            p.post_secs > 0,
            p.post_refusal.is_some(),
            p.busy_secs > 0,
            p.busy_refusal.is_some(),
            p.busy_base != super::BusyBase::ResourceInUse,
            v.usb_cd,
            !v.insert_refuses.is_empty(),
            !v.insert_requires.is_empty(),
            v.eject_needs_body,
            v.insert_by_patch,
            v.system_ids != super::VirtualMedia::default().system_ids,
            v.manager_ids != super::VirtualMedia::default().manager_ids,
            !v.system_media_types.is_empty(),
            self.errors.busy.is_some(),
            self.https_boot.hpe_tlsconfig.is_some(),
            !self.https_boot.needs_bios.is_empty(),
            self.dell.is_some(),
            self.inventory.nic_ids != super::NicIds::Mac,
            self.inventory.service_tag,
            self.inventory.storage_ids != super::StorageIds::Plain,
            self.hpe.is_some(),
            self.events != super::Events::default(),
            self.logs != super::logs::Logs::default(),
            !self.update.is_neutral(),
        ];
        QUIRKS
            .iter()
            .zip(set)
            .filter(|(_, on)| *on)
            .map(|(q, _)| *q)
            .collect()
    }

    /// The quirks marked synthetic (no public source shows the vendor
    /// doing them).
    pub fn synthetic_quirks(&self) -> Vec<&str> {
        self.sources
            .iter()
            .filter(|s| s.synthetic)
            .flat_map(|s| s.quirks.iter().map(String::as_str))
            .collect()
    }

    /// Every quirk is covered by a `[[sources]]` entry: a reference, or
    /// `synthetic = true`; every entry names quirks the profile has.
    fn check_sources(&self) -> Result<(), String> {
        let have = self.quirks();
        for (i, s) in self.sources.iter().enumerate() {
            if s.quirks.is_empty() {
                return Err(format!("sources[{i}].quirks: names no quirk"));
            }
            for (j, q) in s.quirks.iter().enumerate() {
                if !QUIRKS.contains(&q.as_str()) {
                    return Err(format!(
                        "sources[{i}].quirks[{j}]: {q:?} is not one of {}",
                        QUIRKS.join(", ")
                    ));
                }
                if !have.contains(&q.as_str()) {
                    return Err(format!(
                        "sources[{i}].quirks[{j}]: {q:?} is cited but the profile does not set it"
                    ));
                }
            }
            if !s.synthetic && s.reference.trim().is_empty() {
                return Err(format!(
                    "sources[{i}].reference: a public source (URL or repository and path), \
                     or synthetic = true"
                ));
            }
            if s.shows.trim().is_empty() {
                return Err(format!(
                    "sources[{i}].shows: one line on what the source shows"
                ));
            }
        }
        for q in have {
            if !self.sources.iter().any(|s| s.quirks.iter().any(|c| c == q)) {
                return Err(format!(
                    "{q}: this quirk cites no source; add a [[sources]] entry with \
                     quirks = [\"{q}\"] and a reference, or synthetic = true"
                ));
            }
        }
        Ok(())
    }
}
