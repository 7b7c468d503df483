//! A capture read for what a behaviour profile says: `profile-from-capture`
//! writes a starting profile (TOML, `emulator/profiles/`'s format, each
//! quirk cited to the capture's file), and `profile-diff` lists where a
//! profile and a capture disagree, so a built-in profile can be checked
//! against a real BMC and its quirks cited to it.
//!
//! What is read (`Facts`): the names (root `Vendor`, the System's
//! `Manufacturer`, `Model`, `BiosVersion`, the Manager's
//! `FirmwareVersion`), the first System, Manager and Chassis Ids, the
//! ETag style (the System's `ETag` header, else `@odata.etag`), where the
//! Boot AllowableValues are (System or settings object), the boot targets
//! offered (what a Shoal machine can boot and the capture does not list is
//! hidden), Continuous, `HttpBootUri`, the settings object's path, and the
//! virtual CD (`UsbCd`, an InsertMedia action or insert by PATCH).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// What a Shoal machine can boot (x86-64, UEFI): the targets a profile
/// may hide.
const MACHINE_TARGETS: [&str; 9] = [
    "Pxe",
    "Cd",
    "Usb",
    "Hdd",
    "BiosSetup",
    "Floppy",
    "UefiShell",
    "UefiTarget",
    "UefiHttp",
];

/// A capture on disk, read by URI.
struct Capture {
    dir: PathBuf,
    /// Folders are below `/redfish/v1` (DMTF's short form).
    short: bool,
}

impl Capture {
    fn open(dir: &Path) -> Result<Capture> {
        if dir.join("redfish/v1/index.json").is_file() {
            Ok(Capture {
                dir: dir.into(),
                short: false,
            })
        } else if dir.join("index.json").is_file() {
            Ok(Capture {
                dir: dir.into(),
                short: true,
            })
        } else {
            bail!(
                "{} is not a capture: no redfish/v1/index.json nor a service root index.json",
                dir.display()
            )
        }
    }

    /// The folder of `uri`.
    fn folder(&self, uri: &str) -> PathBuf {
        let path = uri.split(['?', '#']).next().unwrap_or(uri);
        let path = path.trim_end_matches('/').trim_start_matches('/');
        let rel = match (self.short, path.strip_prefix("redfish/v1")) {
            (true, Some(rest)) => rest.trim_start_matches('/').to_string(),
            _ => path.to_string(),
        };
        self.dir.join(rel)
    }

    /// The file `uri` is read from, for citations.
    fn file(&self, uri: &str) -> String {
        let f = self.folder(uri).join("index.json");
        f.strip_prefix(&self.dir)
            .unwrap_or(&f)
            .display()
            .to_string()
    }

    fn json(&self, uri: &str) -> Option<Value> {
        let text = std::fs::read(self.folder(uri).join("index.json")).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn headers(&self, uri: &str) -> Option<Value> {
        let text = std::fs::read(self.folder(uri).join("headers.json")).ok()?;
        serde_json::from_slice::<Value>(&text)
            .ok()?
            .get("GET")
            .cloned()
    }

    /// The first member of the root's `collection`: (URI, its body).
    fn first(&self, root: &Value, collection: &str) -> Option<(String, Value)> {
        let c = root.get(collection)?.get("@odata.id")?.as_str()?;
        let m = self.json(c)?;
        let uri = m
            .get("Members")?
            .get(0)?
            .get("@odata.id")?
            .as_str()?
            .to_string();
        let body = self.json(&uri)?;
        Some((uri, body))
    }
}

fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn last_segment(uri: &str) -> String {
    uri.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string()
}

/// One fact: the profile key, its value as TOML, and the file showing it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub key: &'static str,
    pub value: toml::Value,
    pub file: String,
}

/// What a capture says of the profile keys it shows, in profile order.
pub fn facts(dir: &Path) -> Result<Vec<Fact>> {
    let cap = Capture::open(dir)?;
    let root = cap
        .json("/redfish/v1")
        .context("the service root does not parse")?;
    let (sys_uri, sys) = cap
        .first(&root, "Systems")
        .context("the capture has no ComputerSystem")?;
    let manager = cap.first(&root, "Managers");
    let chassis = cap.first(&root, "Chassis");
    let sys_file = cap.file(&sys_uri);
    let mut out = Vec::new();
    let mut fact = |key: &'static str, value: toml::Value, file: &str| {
        out.push(Fact {
            key,
            value,
            file: file.to_string(),
        })
    };
    let root_file = cap.file("/redfish/v1");
    if let Some(v) = text(&root, "Vendor") {
        fact("vendor", v.into(), &root_file);
    }
    for (key, prop) in [
        ("manufacturer", "Manufacturer"),
        ("model", "Model"),
        ("bios_version", "BiosVersion"),
    ] {
        if let Some(v) = text(&sys, prop) {
            fact(key, v.into(), &sys_file);
        }
    }
    if let Some((uri, m)) = &manager {
        if let Some(v) = text(m, "FirmwareVersion") {
            fact("bmc_firmware_version", v.into(), &cap.file(uri));
        }
    }
    fact("ids.system", last_segment(&sys_uri).into(), &sys_file);
    if let Some((uri, _)) = &manager {
        fact("ids.manager", last_segment(uri).into(), &cap.file(uri));
    }
    if let Some((uri, _)) = &chassis {
        fact("ids.chassis", last_segment(uri).into(), &cap.file(uri));
    }
    let etag = cap
        .headers(&sys_uri)
        .and_then(|h| {
            h.as_object()?
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("etag"))
                .and_then(|(_, v)| v.as_str().map(str::to_string))
        })
        .or_else(|| text(&sys, "@odata.etag"));
    let style = match etag {
        Some(t) if t.starts_with("W/") => "weak",
        Some(_) => "strong",
        None => "none",
    };
    fact("etag.style", style.into(), &sys_file);
    boot_facts(&cap, &sys_uri, &sys, &mut fact);
    media_facts(&cap, &root, &sys, &mut fact);
    Ok(out)
}

fn boot_facts(
    cap: &Capture,
    sys_uri: &str,
    sys: &Value,
    fact: &mut impl FnMut(&'static str, toml::Value, &str),
) {
    let sys_file = cap.file(sys_uri);
    let settings = sys
        .pointer("/@Redfish.Settings/SettingsObject/@odata.id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let boot = sys.get("Boot").cloned().unwrap_or(Value::Null);
    let settings_boot = settings
        .as_deref()
        .and_then(|s| cap.json(s))
        .and_then(|s| s.get("Boot").cloned());
    let listed = |b: &Value, p: &str| -> Option<Vec<String>> {
        let l = b.get(format!("{p}@Redfish.AllowableValues"))?.as_array()?;
        Some(
            l.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        )
    };
    let (where_, from) = if listed(&boot, "BootSourceOverrideTarget").is_some() {
        ("system", Some(boot.clone()))
    } else if let Some(sb) = settings_boot
        .as_ref()
        .filter(|sb| listed(sb, "BootSourceOverrideTarget").is_some())
    {
        ("settings", Some(sb.clone()))
    } else {
        ("absent", None)
    };
    fact("boot.allowable_values", where_.into(), &sys_file);
    if let Some(s) = &settings {
        if s.trim_end_matches('/')
            .starts_with(sys_uri.trim_end_matches('/'))
        {
            fact("boot.settings.path", last_segment(s).into(), &cap.file(s));
        }
    }
    if let Some(b) = &from {
        if let Some(enabled) = listed(b, "BootSourceOverrideEnabled") {
            fact(
                "boot.continuous",
                enabled.iter().any(|e| e == "Continuous").into(),
                &sys_file,
            );
        }
        if let Some(targets) = listed(b, "BootSourceOverrideTarget") {
            let hidden: Vec<toml::Value> = MACHINE_TARGETS
                .iter()
                .filter(|t| !targets.iter().any(|l| l == *t))
                .map(|t| toml::Value::from(*t))
                .collect();
            fact("boot.hidden_targets", toml::Value::Array(hidden), &sys_file);
            fact(
                "vmedia.usb_cd",
                targets.iter().any(|t| t == "UsbCd").into(),
                &sys_file,
            );
        }
    }
    let http = if boot.get("HttpBootUri").is_some() {
        "writable"
    } else {
        "absent"
    };
    fact("boot.http_boot_uri", http.into(), &sys_file);
}

fn media_facts(
    cap: &Capture,
    root: &Value,
    sys: &Value,
    fact: &mut impl FnMut(&'static str, toml::Value, &str),
) {
    // The virtual CD: the System's VirtualMedia, else the first Manager's.
    let collections = [
        sys.pointer("/VirtualMedia/@odata.id")
            .and_then(Value::as_str)
            .map(str::to_string),
        cap.first(root, "Managers").and_then(|(_, m)| {
            m.pointer("/VirtualMedia/@odata.id")
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
    ];
    for c in collections.into_iter().flatten() {
        let Some(coll) = cap.json(&c) else { continue };
        let devices = coll
            .get("Members")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("@odata.id").and_then(Value::as_str))
            .filter_map(|u| Some((u.to_string(), cap.json(u)?)));
        for (uri, dev) in devices {
            let cd = dev
                .get("MediaTypes")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|m| m == "CD" || m == "DVD"));
            if cd {
                let action = dev.pointer("/Actions/#VirtualMedia.InsertMedia").is_some();
                fact("vmedia.insert_by_patch", (!action).into(), &cap.file(&uri));
                return;
            }
        }
    }
}

/// The neutral BMC's value of `key` (what a profile means by leaving it
/// out), where it has one.
fn neutral(key: &str) -> Option<toml::Value> {
    Some(match key {
        "vendor" => "Shoal".into(),
        "etag.style" => "strong".into(),
        "boot.allowable_values" => "system".into(),
        "boot.continuous" => true.into(),
        "boot.http_boot_uri" => "writable".into(),
        "boot.hidden_targets" => toml::Value::Array(Vec::new()),
        "vmedia.usb_cd" | "vmedia.insert_by_patch" => false.into(),
        _ => return None,
    })
}

/// `key` (dotted) in a parsed profile.
fn lookup<'a>(profile: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(profile, |v, k| v.get(k))
}

/// Where the profile in `profile_text` and the capture in `dir` disagree,
/// a line each; empty when they agree on every key the capture shows.
pub fn diff(profile_text: &str, dir: &Path) -> Result<Vec<String>> {
    let profile: toml::Value =
        toml::from_str(profile_text).context("the profile does not parse")?;
    let mut out = Vec::new();
    for f in facts(dir)? {
        let uuid = f
            .value
            .as_str()
            .is_some_and(|v| v.len() == 36 && v.matches('-').count() == 4);
        if f.key.starts_with("ids.") && profile.get("ids").is_none() && uuid {
            // Without fixed Ids, Shoal's are the machine's UUID.
            continue;
        }
        let said = lookup(&profile, f.key).cloned().or_else(|| neutral(f.key));
        let mut same = said.as_ref() == Some(&f.value);
        if f.key == "boot.http_boot_uri" && f.value.as_str() == Some("writable") {
            // GETs show the property, not whether a PATCH of it is taken.
            same |= said.as_ref().and_then(toml::Value::as_str) == Some("read-only");
        }
        if let (Some(toml::Value::Array(a)), toml::Value::Array(b)) = (&said, &f.value) {
            let norm = |v: &Vec<toml::Value>| {
                let mut s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                s.sort();
                s
            };
            same = norm(a) == norm(b);
        }
        match said {
            _ if same => {}
            None => out.push(format!(
                "{}: the capture shows {} ({}); the profile does not say",
                f.key, f.value, f.file
            )),
            Some(p) => out.push(format!(
                "{}: the capture shows {} ({}); the profile has {p}",
                f.key, f.value, f.file
            )),
        }
    }
    Ok(out)
}

/// Puts `v` at the dotted `path` of `doc`, making the tables on the way.
fn insert_at(doc: &mut toml::map::Map<String, toml::Value>, path: &[&str], v: toml::Value) {
    match path {
        [] => {}
        [last] => {
            doc.insert(last.to_string(), v);
        }
        [first, rest @ ..] => {
            let slot = doc
                .entry(first.to_string())
                .or_insert_with(|| toml::Value::Table(toml::map::Map::new()));
            if let Some(t) = slot.as_table_mut() {
                insert_at(t, rest, v);
            }
        }
    }
}

/// A starting profile named `name` from the capture in `dir`: what it
/// shows, each key that differs from the neutral BMC's cited to its file.
pub fn from_capture(dir: &Path, name: &str) -> Result<String> {
    let facts = facts(dir)?;
    let mut tables: BTreeMap<String, Vec<(String, toml::Value)>> = BTreeMap::new();
    let mut top = vec![
        ("name".to_string(), toml::Value::from(name)),
        (
            "description".to_string(),
            format!("derived from the capture {}", dir.display()).into(),
        ),
    ];
    let mut quirks: Vec<(&str, &str)> = Vec::new();
    for f in &facts {
        match f.key.rsplit_once('.') {
            None => top.push((f.key.to_string(), f.value.clone())),
            Some((table, k)) => tables
                .entry(table.to_string())
                .or_default()
                .push((k.to_string(), f.value.clone())),
        }
        let quirk = match f.key {
            "ids.system" | "ids.manager" | "ids.chassis" => "ids",
            "boot.settings.path" => "boot.settings",
            k => k,
        };
        // Names are not quirks; what differs from the neutral BMC is.
        let differs = f.key.contains('.')
            && (neutral(f.key).is_some_and(|n| n != f.value)
                || quirk == "ids"
                || quirk == "boot.settings");
        if differs && !quirks.iter().any(|(q, _)| *q == quirk) {
            quirks.push((quirk, &f.file));
        }
    }
    for required in [
        "manufacturer",
        "model",
        "bios_version",
        "bmc_firmware_version",
    ] {
        if !top.iter().any(|(k, _)| k == required) {
            top.push((required.to_string(), "unknown".into()));
        }
    }
    let mut doc = toml::map::Map::new();
    for (k, v) in top {
        doc.insert(k, v);
    }
    for (table, entries) in tables {
        for (k, v) in entries {
            let path: Vec<&str> = table.split('.').chain([k.as_str()]).collect();
            insert_at(&mut doc, &path, v);
        }
    }
    let sources: Vec<toml::Value> = quirks
        .into_iter()
        .map(|(q, file)| {
            let mut s = toml::map::Map::new();
            s.insert("quirks".into(), toml::Value::Array(vec![q.into()]));
            s.insert(
                "reference".into(),
                format!("capture {}: {file}", dir.display()).into(),
            );
            s.insert("shows".into(), format!("the captured BMC's {q}").into());
            toml::Value::Table(s)
        })
        .collect();
    if !sources.is_empty() {
        doc.insert("sources".into(), toml::Value::Array(sources));
    }
    Ok(toml::to_string(&toml::Value::Table(doc))?)
}
