//! Behaviour profiles: BMC quirks as data.
//!
//! A profile is a TOML file (the built-in ones are `emulator/profiles/*.toml`,
//! compiled in; `--profile-dir` adds a user's) read into [`Profile`], whose
//! fields are the hooks handlers ask: identity strings and OEM blocks, the
//! ETag style and If-Match policy, and how the Boot object behaves (where its
//! AllowableValues are, a settings object and which Boot fields go there,
//! Continuous refused, Mode or Enabled required, HttpBootUri absent). Handlers
//! never test a vendor name. Each quirk cites where it comes from
//! (`[[sources]]`: a public source naming the vendor, or `synthetic = true`);
//! the loader refuses a quirk without either.
//!
//! Profiles are loaded once at start-up and live for the whole process
//! (`&'static`), so a system's profile is a plain reference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize;

use crate::model::{BootTarget, OverrideEnabled};

/// How a BMC emits and compares ETags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EtagStyle {
    /// `ETag: "abc"`, compared strongly or weakly as the client asks.
    #[default]
    Strong,
    /// `ETag: W/"abc"`.
    Weak,
    /// No ETag at all; If-Match is ignored.
    None,
}

/// Where the Boot object's `@Redfish.AllowableValues` annotations are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AllowableValues {
    /// On the System, as the schema has it.
    #[default]
    System,
    /// Only in the Boot object of the settings object.
    Settings,
    /// Nowhere.
    Absent,
}

/// How the BMC treats `Boot.HttpBootUri` (UEFI systems).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum HttpBootUri {
    /// Shown and writable.
    #[default]
    Writable,
    /// Shown, but a PATCH of it is refused.
    ReadOnly,
    /// Not shown; a PATCH of it is refused as unknown. The URI then goes
    /// through the firmware's own BIOS attributes.
    Absent,
}

/// A message of the vendor's own registry, sent after the Base message
/// that says the same, as the vendor's firmware words it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorMessage {
    /// The full `MessageId` (`IDRAC.2.9.SYS518`).
    pub id: String,
    pub message: String,
    #[serde(default = "critical")]
    pub severity: String,
    #[serde(default = "no_resolution")]
    pub resolution: String,
}

fn critical() -> String {
    "Critical".into()
}

fn no_resolution() -> String {
    "None.".into()
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Etag {
    #[serde(default)]
    pub style: EtagStyle,
    /// PATCH without If-Match is refused with 428.
    #[serde(default)]
    pub if_match_required: bool,
    /// If-Match is compared strongly (RFC 9110): a weak tag, even the one
    /// the BMC sent, gets 412 (sushy then retries with the strong form).
    #[serde(default)]
    pub strict_if_match: bool,
}

/// A settings object (`@Redfish.Settings`) for the System's Boot fields.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsObject {
    /// The path under the System (`Settings`, `Pending`, `SD`).
    pub path: String,
    /// Boot fields the settings object shows and takes; a PATCH of any
    /// other Boot field there is refused.
    #[serde(default)]
    pub fields: Vec<String>,
    /// When set, a PATCH of one of `fields` on the System itself is refused
    /// with this message (the firmware wants them in the settings object).
    pub refused_on_system: Option<VendorMessage>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    #[serde(default)]
    pub allowable_values: AllowableValues,
    pub settings: Option<SettingsObject>,
    /// `BootSourceOverrideEnabled: Continuous` is offered and taken.
    #[serde(default = "yes")]
    pub continuous: bool,
    /// Every Boot PATCH must carry `BootSourceOverrideMode`.
    #[serde(default)]
    pub mode_required: bool,
    /// Every Boot PATCH must carry `BootSourceOverrideEnabled`.
    #[serde(default)]
    pub enabled_required: bool,
    #[serde(default)]
    pub http_boot_uri: HttpBootUri,
    /// Sent after the Base message when a PATCH of HttpBootUri is refused.
    pub http_boot_uri_refusal: Option<VendorMessage>,
    /// Targets the BMC hides even when the machine could boot them.
    #[serde(default)]
    pub hidden_targets: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Default for Boot {
    fn default() -> Self {
        Boot {
            allowable_values: AllowableValues::System,
            settings: None,
            continuous: true,
            mode_required: false,
            enabled_required: false,
            http_boot_uri: HttpBootUri::Writable,
            http_boot_uri_refusal: None,
            hidden_targets: Vec::new(),
        }
    }
}

/// Transient states after power actions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Power {
    /// After a power-on the host is in POST this long, and a Boot PATCH is
    /// refused (400) meanwhile, with `post_refusal` after the Base message
    /// (iLO).
    #[serde(default)]
    pub post_secs: u64,
    pub post_refusal: Option<VendorMessage>,
    /// After a power action the BMC refuses another this long with a 409
    /// (and `busy_refusal`, when the vendor's message is known) (iDRAC 10).
    #[serde(default)]
    pub busy_secs: u64,
    pub busy_refusal: Option<VendorMessage>,
}

/// InsertMedia's parameters besides `Image` (what a profile may refuse or
/// require, and what a PATCH of a VirtualMedia resource may set).
pub const INSERT_PARAMS: &[&str] = &[
    "Inserted",
    "WriteProtected",
    "TransferProtocolType",
    "TransferMethod",
    "UserName",
    "Password",
];

/// Virtual media quirks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct VirtualMedia {
    /// `UsbCd` is offered as a boot target and boots the virtual CD
    /// (Supermicro).
    #[serde(default)]
    pub usb_cd: bool,
    /// InsertMedia parameters refused when present (Supermicro refuses
    /// `Inserted` and `WriteProtected`).
    #[serde(default)]
    pub insert_refuses: Vec<String>,
    /// InsertMedia parameters required (NVIDIA DGX: `UserName`,
    /// `Password`).
    #[serde(default)]
    pub insert_requires: Vec<String>,
    /// EjectMedia without a JSON body is refused (iLO wants `{}`).
    #[serde(default)]
    pub eject_needs_body: bool,
    /// No Insert/Eject actions: media is inserted and ejected by a PATCH of
    /// the VirtualMedia resource (Lenovo).
    #[serde(default)]
    pub insert_by_patch: bool,
}

/// How the vendor's BMC says it is busy: the error an injected failure
/// carries (`faults.rs`), and which clients know to retry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Busy {
    pub status: u16,
    #[serde(flatten)]
    pub message: VendorMessage,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Errors {
    pub busy: Option<Busy>,
}

/// `Oem` blocks, as the vendor's firmware shows them.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Oem {
    pub system: Option<toml::Table>,
    pub manager: Option<toml::Table>,
}

/// The fixed resource Ids of the vendor's BMC, used where a system has an
/// endpoint of its own (`System.Embedded.1`, `iDRAC.Embedded.1`; `1`;
/// `Self`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    pub system: String,
    pub manager: String,
    pub chassis: String,
}

/// Where the quirks of a profile come from: a public source that names the
/// vendor (a code line in a client that special-cases it, a vendor document,
/// a bug report), or a mark that they are Shoal's own invention.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The quirks this entry covers, as profile keys (`etag.style`,
    /// `boot.hidden_targets`, ...; see [`QUIRKS`]).
    pub quirks: Vec<String>,
    /// A URL or repository + path (+ commit) that shows the behaviour.
    #[serde(default)]
    pub reference: String,
    /// One line on what the reference shows (or, when synthetic, why the
    /// quirk is there).
    #[serde(alias = "behaviour")]
    pub shows: String,
    /// No public source shows this vendor doing it: Shoal made it up (to
    /// exercise a client path), and says so.
    #[serde(default)]
    pub synthetic: bool,
}

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
    "vmedia.usb_cd",
    "vmedia.insert_refuses",
    "vmedia.insert_requires",
    "vmedia.eject_needs_body",
    "vmedia.insert_by_patch",
    "errors.busy",
];

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// `ServiceRoot.Vendor`: what clients key vendor quirks on (Ironic's
    /// `detect_vendor` reads it before the System's Manufacturer).
    #[serde(default = "default_vendor")]
    pub vendor: String,
    pub manufacturer: String,
    pub model: String,
    pub bios_version: String,
    pub bmc_firmware_version: String,
    /// Resource Ids on an endpoint of its own; without them, the UUID.
    pub ids: Option<Ids>,
    #[serde(default)]
    pub etag: Etag,
    #[serde(default)]
    pub boot: Boot,
    #[serde(default)]
    pub power: Power,
    #[serde(default)]
    pub vmedia: VirtualMedia,
    #[serde(default)]
    pub errors: Errors,
    #[serde(default)]
    pub oem: Oem,
    #[serde(default)]
    pub sources: Vec<Source>,
}

fn default_vendor() -> String {
    "Shoal".into()
}

/// Boot fields a settings object may carry.
const BOOT_FIELDS: &[&str] = &[
    "BootSourceOverrideTarget",
    "BootSourceOverrideEnabled",
    "BootSourceOverrideMode",
    "HttpBootUri",
    "UefiTargetBootSourceOverride",
];

impl Profile {
    pub fn offers(&self, target: BootTarget) -> bool {
        !self
            .boot
            .hidden_targets
            .iter()
            .any(|t| t == target.as_str())
    }

    /// The override frequencies this BMC offers.
    pub fn enabled_values(&self) -> Vec<&'static str> {
        OverrideEnabled::ALL
            .iter()
            .filter(|e| self.boot.continuous || **e != OverrideEnabled::Continuous)
            .map(|e| e.as_str())
            .collect()
    }

    /// The settings object's path under the System, if there is one.
    pub fn settings_path(&self) -> Option<&str> {
        self.boot.settings.as_ref().map(|s| s.path.as_str())
    }

    /// Whether `field` (a Boot property) belongs to the settings object.
    pub fn in_settings(&self, field: &str) -> bool {
        self.boot
            .settings
            .as_ref()
            .is_some_and(|s| s.fields.iter().any(|f| f == field))
    }

    /// Parses and checks a profile file's text; errors name the key.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let p: Profile = toml::from_str(text).map_err(|e| e.to_string())?;
        p.check()?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
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
        if let Some(b) = &self.errors.busy {
            if !(400..=599).contains(&b.status) {
                return Err(format!(
                    "errors.busy.status: {} is not an HTTP error status (400-599)",
                    b.status
                ));
            }
        }
        self.check_sources()
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
            v.usb_cd,
            !v.insert_refuses.is_empty(),
            !v.insert_requires.is_empty(),
            v.eject_needs_body,
            v.insert_by_patch,
            self.errors.busy.is_some(),
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

/// The built-in profiles, in `emulator/profiles/`.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("generic.toml", include_str!("../profiles/generic.toml")),
    ("openbmc.toml", include_str!("../profiles/openbmc.toml")),
    ("idrac9.toml", include_str!("../profiles/idrac9.toml")),
    ("idrac10.toml", include_str!("../profiles/idrac10.toml")),
    ("ilo5.toml", include_str!("../profiles/ilo5.toml")),
    ("ilo6.toml", include_str!("../profiles/ilo6.toml")),
    (
        "supermicro-x12.toml",
        include_str!("../profiles/supermicro-x12.toml"),
    ),
    (
        "ami-asrockrack.toml",
        include_str!("../profiles/ami-asrockrack.toml"),
    ),
    (
        "lenovo-xcc.toml",
        include_str!("../profiles/lenovo-xcc.toml"),
    ),
    (
        "no-allowable-values.toml",
        include_str!("../profiles/no-allowable-values.toml"),
    ),
    (
        "synthetic-strict-etag.toml",
        include_str!("../profiles/synthetic-strict-etag.toml"),
    ),
];

static BUILTIN: LazyLock<Vec<&'static Profile>> = LazyLock::new(|| {
    BUILTIN_FILES
        .iter()
        .map(|(file, text)| {
            let p = Profile::parse(text)
                .unwrap_or_else(|e| panic!("built-in profile {file} is invalid: {e}"));
            &*Box::leak(Box::new(p))
        })
        .collect()
});

/// The neutral profile.
pub fn generic() -> &'static Profile {
    BUILTIN[0]
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: {why}")]
    File { path: PathBuf, why: String },
    #[error("unknown profile {0:?}; known: {1}")]
    Unknown(String, String),
}

/// The profiles a service knows: the built-in ones and a user's.
#[derive(Debug, Clone)]
pub struct Profiles(BTreeMap<String, &'static Profile>);

impl Default for Profiles {
    fn default() -> Self {
        Profiles(BUILTIN.iter().map(|p| (p.name.clone(), *p)).collect())
    }
}

impl Profiles {
    /// The built-in profiles plus every `*.toml` in `dir` (a user profile
    /// replaces a built-in one of the same name).
    pub fn load(dir: Option<&Path>) -> Result<Profiles, ProfileError> {
        let mut all = Profiles::default();
        let Some(dir) = dir else { return Ok(all) };
        let err = |path: &Path, why: String| ProfileError::File {
            path: path.to_path_buf(),
            why,
        };
        let entries = std::fs::read_dir(dir).map_err(|e| err(dir, e.to_string()))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|e| err(&path, e.to_string()))?;
            let p = Profile::parse(&text).map_err(|why| err(&path, why))?;
            all.0.insert(p.name.clone(), Box::leak(Box::new(p)));
        }
        Ok(all)
    }

    pub fn get(&self, name: &str) -> Result<&'static Profile, ProfileError> {
        self.0
            .get(name)
            .copied()
            .ok_or_else(|| ProfileError::Unknown(name.to_string(), self.names().join(", ")))
    }

    pub fn names(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_loads_and_the_issue_list_is_shipped() {
        let all = Profiles::default();
        for name in [
            "generic",
            "openbmc",
            "idrac9",
            "idrac10",
            "ilo5",
            "ilo6",
            "supermicro-x12",
            "ami-asrockrack",
            "lenovo-xcc",
            "no-allowable-values",
            "synthetic-strict-etag",
        ] {
            let p = all.get(name).unwrap();
            assert_eq!(p.name, name);
        }
        assert_eq!(generic().name, "generic");
        assert_eq!(generic().etag.style, EtagStyle::Strong);
    }

    #[test]
    fn bad_profiles_are_refused_naming_the_key() {
        let base = "name = \"x\"\ndescription = \"d\"\nmanufacturer = \"m\"\nmodel = \"m\"\n\
                    bios_version = \"1\"\nbmc_firmware_version = \"1\"\n";
        assert!(Profile::parse(base).is_ok(), "no quirks, no sources needed");
        let e =
            Profile::parse(&format!("{base}[boot]\nhidden_targets = [\"Floppyy\"]\n")).unwrap_err();
        assert!(e.contains("boot.hidden_targets[0]"), "{e}");
        let e = Profile::parse(&format!("{base}[boot]\nallowable_values = \"settings\"\n"))
            .unwrap_err();
        assert!(e.contains("boot.allowable_values"), "{e}");
        let e = Profile::parse(&format!(
            "{base}[boot.settings]\npath = \"a/b\"\nfields = []\n"
        ))
        .unwrap_err();
        assert!(e.contains("boot.settings.path"), "{e}");
        let e = Profile::parse(&format!(
            "{base}[boot.settings]\npath = \"SD\"\nfields = [\"Colour\"]\n"
        ))
        .unwrap_err();
        assert!(e.contains("boot.settings.fields[0]"), "{e}");
        let e = Profile::parse(&format!("{base}[etag]\nstyle = \"fuzzy\"\n")).unwrap_err();
        assert!(e.contains("fuzzy"), "{e}");
        let e = Profile::parse(&format!("{base}colour = 1\n")).unwrap_err();
        assert!(e.contains("colour"), "{e}");
    }

    const BASE: &str = "name = \"x\"\ndescription = \"d\"\nmanufacturer = \"m\"\nmodel = \"m\"\n\
                        bios_version = \"1\"\nbmc_firmware_version = \"1\"\n";

    #[test]
    fn every_quirk_needs_a_citation_or_a_synthetic_mark() {
        // A quirk without any source.
        let quirk = "[etag]\nstrict_if_match = true\n";
        let e = Profile::parse(&format!("{BASE}{quirk}")).unwrap_err();
        assert!(
            e.contains("etag.strict_if_match") && e.contains("synthetic"),
            "{e}"
        );
        // A source for another quirk does not cover it.
        let other = "[boot]\ncontinuous = false\n\
                     [[sources]]\nquirks = [\"boot.continuous\"]\nreference = \"r\"\nshows = \"s\"\n";
        let e = Profile::parse(&format!("{BASE}{quirk}{other}")).unwrap_err();
        assert!(e.contains("etag.strict_if_match"), "{e}");
        // A source without a reference that is not marked synthetic.
        let bare = "[[sources]]\nquirks = [\"etag.strict_if_match\"]\nshows = \"s\"\n";
        let e = Profile::parse(&format!("{BASE}{quirk}{bare}")).unwrap_err();
        assert!(e.contains("sources[0].reference"), "{e}");
        // Either is enough.
        let p = Profile::parse(&format!("{BASE}{quirk}{bare}synthetic = true\n")).unwrap();
        assert_eq!(p.synthetic_quirks(), ["etag.strict_if_match"]);
        let cited = bare.replace("shows", "reference = \"https://example.org/x\"\nshows");
        let p = Profile::parse(&format!("{BASE}{quirk}{cited}")).unwrap();
        assert!(p.synthetic_quirks().is_empty());
        // A citation of a quirk the profile does not have, or of no key.
        let e = Profile::parse(&format!("{BASE}{cited}")).unwrap_err();
        assert!(e.contains("sources[0].quirks[0]"), "{e}");
        let e = Profile::parse(&format!(
            "{BASE}{quirk}{}",
            cited.replace("etag.strict_if_match", "etag.colour")
        ))
        .unwrap_err();
        assert!(
            e.contains("sources[0].quirks[0]") && e.contains("colour"),
            "{e}"
        );
    }

    #[test]
    fn builtin_quirks_are_cited_and_strict_if_match_is_only_synthetic() {
        for p in BUILTIN.iter() {
            for q in p.quirks() {
                let cited = p.sources.iter().any(|s| s.quirks.iter().any(|c| c == q));
                assert!(cited, "{}: {q}", p.name);
            }
            if p.etag.strict_if_match {
                assert!(
                    p.synthetic_quirks().contains(&"etag.strict_if_match"),
                    "{}: strict If-Match is cited by no vendor",
                    p.name
                );
            }
        }
        let all = Profiles::default();
        assert!(!all.get("ilo6").unwrap().etag.strict_if_match);
        assert!(!all.get("ilo5").unwrap().etag.strict_if_match);
        assert!(
            all.get("synthetic-strict-etag")
                .unwrap()
                .etag
                .strict_if_match
        );
    }

    #[test]
    fn a_profile_dir_adds_and_replaces_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mine = include_str!("../profiles/generic.toml")
            .replace("name = \"generic\"", "name = \"mine\"");
        std::fs::write(
            dir.path().join("mine.toml"),
            // `behaviour` is the older spelling of `shows`.
            format!(
                "{}\n[[sources]]\nquirks = [\"etag.if_match_required\"]\nbehaviour = \"b\"\nreference = \"r\"\n",
                mine.replace("if_match_required = false", "if_match_required = true")
            ),
        )
        .unwrap();
        let all = Profiles::load(Some(dir.path())).unwrap();
        assert_eq!(
            all.get("mine").unwrap().manufacturer,
            generic().manufacturer
        );
        assert!(all.get("idrac10").is_ok());
        std::fs::write(dir.path().join("bad.toml"), "name = 1\n").unwrap();
        let e = Profiles::load(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("bad.toml"), "{e}");
        let e = all.get("nope").unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("idrac10"), "{e}");
    }
}
