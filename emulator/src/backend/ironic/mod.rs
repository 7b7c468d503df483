//! Ironic's nodes as Redfish systems (sushy-emulator's `--ironic-cloud`):
//! each node of a standalone Ironic is a System whose machine is whatever
//! Ironic drives. What reaches the machine goes through Ironic's API —
//! power (`states/power`, `management/inject_nmi`), the boot device
//! (`management/boot_device`, `Once` or `Continuous` as `persistent`),
//! the boot mode and Secure Boot (`states/boot_mode`,
//! `states/secure_boot`, API 1.76) and virtual media (`vmedia`, 1.89).
//! What only a BMC keeps (the indicator, asset tag, NTP, service
//! identification) this BMC keeps, in memory. The rest (BIOS settings,
//! volumes, Secure Boot keys, boot certificates, an `HttpBootUri`) has no
//! Ironic call: refused with the reason, before anything is sent.
//!
//! Ironic's long operations run in its conductor after the API answered:
//! a change waits until the node's lock is released and fails with the
//! node's `last_error` if one was recorded (a power action does not wait:
//! the System shows `PoweringOn`/`PoweringOff` meanwhile, from the node's
//! `target_power_state`).

pub mod client;
pub mod cloud;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use uuid::Uuid;

use super::{Backend, BackendError, Completion, Result, Unsupported};
use crate::model::{
    Arch, BmcState, BootMode, BootOverride, BootTarget, Change, MediaImage, MediaSlot, MediaState,
    Nic, OverrideEnabled, PowerState, ResetType, SecureBoot, System, SystemRef,
};
use crate::sync::lock;
use client::Client;

/// How long a change waits for Ironic's conductor to finish it.
const SETTLE: Duration = Duration::from_secs(120);

/// Redfish boot targets and Ironic's boot devices.
const DEVICES: &[(BootTarget, &str)] = &[
    (BootTarget::Pxe, "pxe"),
    (BootTarget::Hdd, "disk"),
    (BootTarget::Cd, "cdrom"),
    (BootTarget::BiosSetup, "bios"),
    (BootTarget::Floppy, "floppy"),
    (BootTarget::UefiHttp, "uefihttp"),
];

fn device_of(t: BootTarget) -> Option<&'static str> {
    DEVICES.iter().find(|(b, _)| *b == t).map(|(_, d)| *d)
}

fn target_of(device: &str) -> BootTarget {
    DEVICES
        .iter()
        .find(|(_, d)| *d == device)
        .map_or(BootTarget::None, |(b, _)| *b)
}

fn vmedia_device(slot: MediaSlot) -> &'static str {
    match slot {
        MediaSlot::Cd => "cdrom",
        MediaSlot::Floppy => "floppy",
    }
}

/// Node identifiers Ironic accepts (a UUID or a name: RFC 3986's
/// unreserved characters); anything else names no node and is never sent.
fn plain(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 255
        && !id.bytes().all(|b| b == b'.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

fn refused(why: impl Into<String>) -> BackendError {
    Unsupported::Refused(why.into()).into()
}

/// The power state a node shows: where it is going while Ironic moves it.
fn power_of(node: &Value) -> PowerState {
    let on = node["power_state"].as_str() == Some("power on");
    match (on, node["target_power_state"].as_str()) {
        (false, Some(t)) if t.contains("power on") || t.contains("reboot") => {
            PowerState::PoweringOn
        }
        (true, Some(t)) if t.contains("off") => PowerState::PoweringOff,
        (true, _) => PowerState::On,
        (false, _) => PowerState::Off,
    }
}

fn mode_of(node: &Value) -> BootMode {
    match node["boot_mode"].as_str() {
        Some("bios") => BootMode::Legacy,
        _ => BootMode::Uefi,
    }
}

struct Inner {
    client: Client,
    profile: String,
    /// What this BMC keeps of each node (by UUID) beyond what Ironic holds.
    bmc: Mutex<HashMap<String, BmcState>>,
}

#[derive(Clone)]
pub struct IronicBackend {
    inner: Arc<Inner>,
}

impl IronicBackend {
    /// Connects to the cloud's Ironic (which must answer) and serves its
    /// nodes with `profile`.
    pub fn connect(cloud: &cloud::Cloud, profile: String) -> std::result::Result<Self, String> {
        let client = Client::connect(cloud)?;
        tracing::info!(
            endpoint = %cloud.endpoint,
            cloud = %cloud.name,
            api = %format!("{}.{}", client.version.0, client.version.1),
            "serving Ironic's nodes"
        );
        Ok(IronicBackend {
            inner: Arc::new(Inner {
                client,
                profile,
                bmc: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// One API call on the blocking pool.
    async fn call(&self, method: &'static str, path: String, body: Option<Value>) -> Result<Value> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || inner.client.call(method, &path, body.as_ref()))
            .await
            .map_err(|e| BackendError::Internal(format!("Ironic call: {e}")))?
    }

    fn node_fields(&self) -> &'static str {
        if self.inner.client.at_least(75) {
            "uuid,name,power_state,target_power_state,properties,boot_mode,secure_boot"
        } else {
            "uuid,name,power_state,target_power_state,properties"
        }
    }

    async fn node(&self, id: &str) -> Result<Value> {
        if !plain(id) {
            return Err(BackendError::NotFound(id.to_string()));
        }
        let path = format!("/v1/nodes/{id}?fields={}", self.node_fields());
        self.call("GET", path, None).await.map_err(|e| match e {
            BackendError::NotFound(_) => BackendError::NotFound(id.to_string()),
            e => e,
        })
    }

    /// Waits until Ironic's conductor is done with the node (its lock is
    /// released); the node's `last_error`, if it recorded one, is the error.
    async fn settle(&self, uuid: &str, what: &str) -> Result<()> {
        let started = Instant::now();
        loop {
            let n = self
                .call(
                    "GET",
                    format!("/v1/nodes/{uuid}?fields=reservation,last_error"),
                    None,
                )
                .await?;
            if n["reservation"].is_null() {
                return match n["last_error"].as_str() {
                    Some(e) if !e.is_empty() => Err(refused(format!("{what}: Ironic: {e}"))),
                    _ => Ok(()),
                };
            }
            if started.elapsed() > SETTLE {
                return Err(BackendError::Unavailable(format!(
                    "{what}: Ironic still holds node {uuid} after {} s",
                    SETTLE.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The node as a System: Ironic's facts over this BMC's own state.
    async fn load(&self, id: &str) -> Result<System> {
        let node = self.node(id).await?;
        let uuid = node["uuid"].as_str().unwrap_or_default().to_string();
        let boot = self
            .call(
                "GET",
                format!("/v1/nodes/{uuid}/management/boot_device"),
                None,
            )
            .await?;
        let ports = self
            .call(
                "GET",
                format!("/v1/ports?node_uuid={uuid}&fields=address"),
                None,
            )
            .await?;
        let props = &node["properties"];
        let number = |k: &str| match &props[k] {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        let mode = mode_of(&node);
        let secure = node["secure_boot"].as_bool().unwrap_or(false);
        let device = boot["boot_device"].as_str().unwrap_or_default();
        let target = target_of(device);
        let enabled = match (target, boot["persistent"].as_bool()) {
            (BootTarget::None, _) => OverrideEnabled::Disabled,
            (_, Some(true)) => OverrideEnabled::Continuous,
            _ => OverrideEnabled::Once,
        };
        let bmc = {
            let mut all = lock(&self.inner.bmc);
            let b = all.entry(uuid.clone()).or_insert_with(|| {
                BmcState::new(
                    mode,
                    SecureBoot {
                        enable: secure,
                        current_boot: secure,
                        keys_enrolled: true,
                    },
                )
            });
            b.boot = BootOverride {
                target,
                enabled,
                ..BootOverride::disabled(mode)
            };
            b.secure_boot.enable = secure;
            b.clone()
        };
        let mut nics: Vec<Nic> = ports["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["address"].as_str())
            .map(|mac| Nic {
                mac: mac.to_ascii_lowercase(),
            })
            .collect();
        nics.sort_by(|a, b| a.mac.cmp(&b.mac));
        let disks = match number("local_gb") {
            Some(gb) if gb > 0 => vec![crate::storage::Disk::new("disk0", gb << 30)],
            _ => Vec::new(),
        };
        Ok(System {
            id: uuid.clone(),
            name: node["name"].as_str().unwrap_or(&uuid).to_string(),
            uuid: Uuid::parse_str(&uuid).unwrap_or_default(),
            arch: props["cpu_arch"]
                .as_str()
                .and_then(Arch::parse)
                .unwrap_or(Arch::X86_64),
            memory_mib: number("memory_mb").unwrap_or(0),
            cpus: number("cpus").unwrap_or(0) as u32,
            disks,
            nics,
            power: power_of(&node),
            profile: self.inner.profile.clone(),
            bmc,
        })
    }

    fn needs(&self, minor: u32, what: &str) -> Result<()> {
        let c = &self.inner.client;
        if c.at_least(minor) {
            return Ok(());
        }
        Err(refused(format!(
            "{what}: this Ironic speaks API {}.{}, and that needs 1.{minor}",
            c.version.0, c.version.1
        )))
    }
}

/// What a change asks of Ironic, checked before anything is sent.
enum Step {
    BootMode(BootMode),
    Device {
        device: &'static str,
        persistent: bool,
    },
    SecureBoot(bool),
    Eject(MediaSlot),
}

#[async_trait]
impl Backend for IronicBackend {
    fn kind(&self) -> &'static str {
        "ironic"
    }

    async fn systems(&self) -> Result<Vec<SystemRef>> {
        let mut out = Vec::new();
        let mut path = "/v1/nodes?fields=uuid,name&limit=1000".to_string();
        loop {
            let page = self.call("GET", path.clone(), None).await?;
            let got = page["nodes"].as_array().map_or(0, Vec::len);
            for n in page["nodes"].as_array().into_iter().flatten() {
                let id = n["uuid"].as_str().unwrap_or_default().to_string();
                let name = n["name"].as_str().unwrap_or(&id).to_string();
                out.push(SystemRef { id, name });
            }
            // `next` is an absolute URL; only its path and query are ours
            // to follow, on the endpoint we were given. An empty page, or
            // one naming itself next, ends the listing rather than loop.
            match page["next"]
                .as_str()
                .and_then(|u| u.find("/v1/nodes").map(|i| &u[i..]))
            {
                Some(next) if got > 0 && next != path => path = next.to_string(),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>> {
        if !plain(id_or_name) {
            return Ok(None);
        }
        match self
            .call(
                "GET",
                format!("/v1/nodes/{id_or_name}?fields=uuid,name"),
                None,
            )
            .await
        {
            Ok(n) => {
                let id = n["uuid"].as_str().unwrap_or_default().to_string();
                let name = n["name"].as_str().unwrap_or(&id).to_string();
                Ok(Some(SystemRef { id, name }))
            }
            Err(BackendError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn system(&self, id: &str) -> Result<System> {
        self.load(id).await
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let node = self.node(id).await?;
        let uuid = node["uuid"].as_str().unwrap_or_default();
        let on = node["power_state"].as_str() == Some("power on");
        use ResetType as R;
        let target = match reset {
            R::On | R::ForceOn => "power on",
            R::ForceOff => "power off",
            R::GracefulShutdown => "soft power off",
            R::GracefulRestart => "soft rebooting",
            R::ForceRestart | R::PowerCycle => "rebooting",
            R::PushPowerButton if on => "soft power off",
            R::PushPowerButton => "power on",
            R::Nmi => {
                self.call(
                    "PUT",
                    format!("/v1/nodes/{uuid}/management/inject_nmi"),
                    Some(json!({})),
                )
                .await?;
                return Ok(());
            }
        };
        self.call(
            "PUT",
            format!("/v1/nodes/{uuid}/states/power"),
            Some(json!({ "target": target })),
        )
        .await?;
        Ok(())
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        let now = self.load(id).await?;
        if changes.is_empty() {
            return Ok(now);
        }
        let uuid = now.id.clone();
        // Every change checked first: what Ironic cannot be asked, nothing
        // is sent.
        let mut steps = Vec::new();
        let mut local = Vec::new();
        for c in changes {
            match c {
                Change::Boot(b) => {
                    if b.http_boot_uri.is_some() || b.uefi_target.is_some() {
                        return Err(refused(
                            "a boot URI or UEFI target: Ironic's boot device call carries neither",
                        ));
                    }
                    if b.mode != now.bmc.boot.mode {
                        self.needs(76, "changing the boot mode")?;
                        steps.push(Step::BootMode(b.mode));
                    }
                    if (b.target, b.enabled) != (now.bmc.boot.target, now.bmc.boot.enabled) {
                        if b.target == BootTarget::None || b.enabled == OverrideEnabled::Disabled {
                            return Err(refused(
                                "clearing the boot override: Ironic has no call for it (set \
                                 another device)",
                            ));
                        }
                        let device = device_of(b.target).ok_or_else(|| {
                            refused(format!(
                                "boot target {}: Ironic has no such boot device",
                                b.target
                            ))
                        })?;
                        steps.push(Step::Device {
                            device,
                            persistent: b.enabled == OverrideEnabled::Continuous,
                        });
                    }
                }
                Change::SecureBoot(on) => {
                    if on != now.bmc.secure_boot.enable {
                        self.needs(76, "changing Secure Boot")?;
                        steps.push(Step::SecureBoot(on));
                    }
                }
                Change::Media(slot, state) if state.image.is_none() => {
                    self.needs(89, "ejecting virtual media")?;
                    steps.push(Step::Eject(slot));
                    local.push(Change::Media(slot, state));
                }
                c @ (Change::Settings(_) | Change::Ntp(_) | Change::ServiceIdentification(_)) => {
                    local.push(c)
                }
                other => {
                    let what = match other {
                        Change::BiosPending(_)
                        | Change::BiosDefaults
                        | Change::BiosHold(_)
                        | Change::BiosReplaced { .. } => "BIOS settings",
                        Change::ResetKeys(_) => "Secure Boot keys",
                        Change::Volume { .. } => "volumes",
                        Change::BootCerts(_) => "HTTPS boot certificates",
                        Change::MediaTls(..) => "virtual media certificate checking",
                        _ => "this change",
                    };
                    return Err(refused(format!(
                        "{what}: the Ironic backend passes power, the boot device, boot mode, \
                         Secure Boot and virtual media to Ironic, and has no Ironic call for this"
                    )));
                }
            }
        }
        for (i, step) in steps.iter().enumerate() {
            if let Err(e) = self.send(&uuid, step).await {
                // Undo what went through, so the request applied nothing.
                for done in steps[..i].iter().rev() {
                    let undo = match done {
                        Step::BootMode(_) => Some(Step::BootMode(now.bmc.boot.mode)),
                        Step::SecureBoot(_) => Some(Step::SecureBoot(now.bmc.secure_boot.enable)),
                        Step::Device { .. } => {
                            device_of(now.bmc.boot.target).map(|device| Step::Device {
                                device,
                                persistent: now.bmc.boot.enabled == OverrideEnabled::Continuous,
                            })
                        }
                        Step::Eject(_) => None,
                    };
                    if let Some(u) = undo {
                        if let Err(ue) = self.send(&uuid, &u).await {
                            tracing::warn!(node = %uuid, error = %ue, "undoing a partial change failed");
                        }
                    }
                }
                return Err(e);
            }
        }
        if !local.is_empty() {
            let mut all = lock(&self.inner.bmc);
            if let Some(b) = all.get_mut(&uuid) {
                for c in local {
                    b.apply(c);
                }
            }
        }
        self.load(&uuid).await
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        self.needs(89, "inserting virtual media")?;
        if img.user_name.is_some() || img.password.is_some() {
            return Err(refused(
                "image credentials: Ironic's virtual media call carries none",
            ));
        }
        let node = self.node(id).await?;
        let uuid = node["uuid"].as_str().unwrap_or_default().to_string();
        self.call(
            "POST",
            format!("/v1/nodes/{uuid}/vmedia"),
            Some(json!({
                "device_type": vmedia_device(slot),
                "image_url": img.image,
                // The machine's BMC to fetch the image from where it is
                // (Ironic 39's RPC API drops this, and Ironic serves its
                // own copy).
                "image_download_source": "http",
            })),
        )
        .await?;
        let this = self.clone();
        Ok(Completion::Running(Box::pin(async move {
            this.settle(&uuid, "inserting virtual media").await?;
            let mut all = lock(&this.inner.bmc);
            if let Some(b) = all.get_mut(&uuid) {
                b.apply(Change::Media(slot, MediaState::from(&img)));
            }
            Ok(())
        })))
    }
}

impl IronicBackend {
    /// Sends one checked step and waits for Ironic to finish it.
    async fn send(&self, uuid: &str, step: &Step) -> Result<()> {
        let (method, path, body, what) = match step {
            Step::BootMode(m) => (
                "PUT",
                format!("/v1/nodes/{uuid}/states/boot_mode"),
                Some(json!({ "target": if *m == BootMode::Uefi { "uefi" } else { "bios" } })),
                "changing the boot mode",
            ),
            Step::Device { device, persistent } => (
                "PUT",
                format!("/v1/nodes/{uuid}/management/boot_device"),
                Some(json!({ "boot_device": device, "persistent": persistent })),
                "setting the boot device",
            ),
            Step::SecureBoot(on) => (
                "PUT",
                format!("/v1/nodes/{uuid}/states/secure_boot"),
                Some(json!({ "target": on })),
                "changing Secure Boot",
            ),
            Step::Eject(slot) => (
                "DELETE",
                format!(
                    "/v1/nodes/{uuid}/vmedia?device_types={}",
                    vmedia_device(*slot)
                ),
                None,
                "ejecting virtual media",
            ),
        };
        self.call(method, path, body).await.map_err(|e| match e {
            BackendError::Unsupported(Unsupported::Refused(why)) => {
                refused(format!("{what}: Ironic: {why}"))
            }
            e => e,
        })?;
        self.settle(uuid, what).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_follows_where_ironic_is_taking_the_node() {
        let p = |now: &str, target: Value| {
            power_of(&json!({"power_state": now, "target_power_state": target}))
        };
        assert_eq!(p("power off", Value::Null), PowerState::Off);
        assert_eq!(p("power on", Value::Null), PowerState::On);
        assert_eq!(p("power off", json!("power on")), PowerState::PoweringOn);
        assert_eq!(p("power off", json!("rebooting")), PowerState::PoweringOn);
        assert_eq!(p("power on", json!("power off")), PowerState::PoweringOff);
        assert_eq!(
            p("power on", json!("soft power off")),
            PowerState::PoweringOff
        );
        assert_eq!(power_of(&json!({"power_state": null})), PowerState::Off);
    }

    #[test]
    fn boot_devices_map_both_ways_and_unknown_ones_are_none() {
        for (t, d) in DEVICES {
            assert_eq!(device_of(*t), Some(*d));
            assert_eq!(target_of(d), *t);
        }
        assert_eq!(target_of("wanboot"), BootTarget::None);
        assert_eq!(device_of(BootTarget::Usb), None);
    }

    #[test]
    fn only_plain_identifiers_reach_ironic() {
        assert!(plain("4a5b6c7d-0000-4000-8000-000000000001"));
        assert!(plain("node-1.rack_2~x"));
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a?b",
            "a b",
            "..%2f",
            "a#b",
            &"x".repeat(256),
        ] {
            assert!(!plain(bad), "{bad}");
        }
    }
}
