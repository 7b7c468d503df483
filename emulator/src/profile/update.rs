//! A profile's `[update]`: how its BMC's firmware updates behave (the
//! UpdateService, `api/update`).

use serde::Deserialize;

/// The UpdateService's behaviour.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Update {
    /// The network adapter's firmware out of the factory
    /// (`Controllers[].FirmwarePackageVersion`).
    #[serde(default = "nic_version")]
    pub nic_firmware_version: String,
    /// Seconds a task stays `New` before it starts (an iDRAC's update
    /// answers `New` first; Ironic 25.0 failed on it).
    #[serde(default)]
    pub new_secs: f64,
    /// Seconds the image takes to install once verified, PercentComplete
    /// moving through them.
    #[serde(default = "apply_secs")]
    pub apply_secs: f64,
    /// How much longer than `apply_secs` an update may take, as a fraction
    /// of it (0.5: up to half again): each update's share is fixed by its
    /// system and task, so a fleet updating at once finishes spread out,
    /// the same way each run.
    #[serde(default = "apply_spread")]
    pub apply_spread: f64,
    /// Seconds the BMC is away after it installed its own firmware;
    /// unset: as long as a Manager reset keeps it away.
    #[serde(default)]
    pub bmc_down_secs: Option<u64>,
    /// `TransferProtocol`s SimpleUpdate fetches with.
    #[serde(default = "protocols")]
    pub transfer_protocols: Vec<String>,
    /// `MultipartHttpPushUri` (bmcweb: `/redfish/v1/UpdateService/update-multipart`);
    /// empty: none.
    #[serde(default = "multipart_uri")]
    pub multipart_push_uri: String,
    /// `HttpPushUri`, where the image is the body (bmcweb's `/update`);
    /// empty (the default): none.
    #[serde(default)]
    pub http_push_uri: String,
    /// The HttpPushUri keeps an uploaded image (a multipart `file` part)
    /// as an `Available-…` inventory member that a SimpleUpdate's
    /// ImageURI then names (an iDRAC, whose HttpPushUri is the
    /// FirmwareInventory itself).
    #[serde(default)]
    pub http_push_stores: bool,
    /// The update is a Dell job (its Task's Id is the JID), and once its
    /// image is staged for the host's reset the Task is gone (404) while
    /// the job waits `Scheduled` in the job queue (needs `[dell]`).
    #[serde(default)]
    pub dell_job: bool,
    /// The Task answers `New` until an image for later is staged (an
    /// iDRAC: Ironic resets a host for its BIOS update only once the task
    /// is Starting or Running, and reads a 404 before any reset as the
    /// image staged, its job waiting); an image installed at once goes
    /// `Running` once verified.
    #[serde(default)]
    pub new_until_staged: bool,
    /// After a restart, the BMC's web server answers before its update
    /// service is ready: for this many seconds once it is back, a
    /// multipart push is refused with 400 and `not_ready`'s message
    /// (AMI MegaRAC's `AmiOem.1.0.BMCNotReadyForFirmwareUpdate`).
    #[serde(default)]
    pub not_ready_secs: u64,
    /// The vendor's message for such a refusal (after Base's
    /// ServiceTemporarilyUnavailable).
    pub not_ready: Option<super::VendorMessage>,
}

impl Default for Update {
    fn default() -> Self {
        Update {
            nic_firmware_version: nic_version(),
            new_secs: 0.0,
            apply_secs: apply_secs(),
            apply_spread: apply_spread(),
            bmc_down_secs: None,
            transfer_protocols: protocols(),
            multipart_push_uri: multipart_uri(),
            http_push_uri: String::new(),
            http_push_stores: false,
            dell_job: false,
            new_until_staged: false,
            not_ready_secs: 0,
            not_ready: None,
        }
    }
}

fn nic_version() -> String {
    "22.31.6".into()
}

fn apply_secs() -> f64 {
    3.0
}

fn apply_spread() -> f64 {
    0.5
}

fn multipart_uri() -> String {
    "/redfish/v1/UpdateService/upload".into()
}

fn protocols() -> Vec<String> {
    vec!["HTTP".into(), "HTTPS".into()]
}

impl Update {
    /// The neutral BMC's behaviour (its factory NIC version aside, which
    /// is identity, not a quirk).
    pub fn is_neutral(&self) -> bool {
        let neutral = Update {
            nic_firmware_version: self.nic_firmware_version.clone(),
            ..Update::default()
        };
        *self == neutral
    }

    /// `MultipartHttpPushUri`, where there is one.
    pub fn multipart_uri(&self) -> Option<&str> {
        Some(self.multipart_push_uri.as_str()).filter(|u| !u.is_empty())
    }

    /// `HttpPushUri`, where there is one.
    pub fn push_uri(&self) -> Option<&str> {
        Some(self.http_push_uri.as_str()).filter(|u| !u.is_empty())
    }

    /// Every value in range; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        for (key, v) in [("new_secs", self.new_secs), ("apply_secs", self.apply_secs)] {
            if !(0.0..=3600.0).contains(&v) {
                return Err(format!("update.{key}: {v} is not 0 to 3600 seconds"));
            }
        }
        if !(0.0..=4.0).contains(&self.apply_spread) {
            return Err(format!(
                "update.apply_spread: {} is not a fraction from 0 to 4",
                self.apply_spread
            ));
        }
        if self.bmc_down_secs.is_some_and(|s| s > 3600) {
            return Err("update.bmc_down_secs: more than 3600 seconds".into());
        }
        if self.not_ready_secs > 3600 {
            return Err("update.not_ready_secs: more than 3600 seconds".into());
        }
        if self.not_ready.is_some() && self.not_ready_secs == 0 {
            return Err(
                "update.not_ready: a refusal that never comes; set update.not_ready_secs".into(),
            );
        }
        if self.not_ready_secs > 0 && self.multipart_push_uri.is_empty() {
            return Err("update.not_ready_secs: refuses multipart pushes; the profile has no update.multipart_push_uri".into());
        }
        let v = &self.nic_firmware_version;
        if v.is_empty() || v.len() > crate::firmware::MAX_VERSION {
            return Err(format!(
                "update.nic_firmware_version: {v:?} must be 1 to {} characters",
                crate::firmware::MAX_VERSION
            ));
        }
        let push = [
            ("multipart_push_uri", &self.multipart_push_uri),
            ("http_push_uri", &self.http_push_uri),
        ];
        for (key, uri) in push {
            if uri.is_empty() {
                continue;
            }
            let segment = uri.strip_prefix("/redfish/v1/UpdateService/").unwrap_or("");
            let inventory =
                segment == "FirmwareInventory" && key == "http_push_uri" && self.http_push_stores;
            let taken = !inventory
                && ["FirmwareInventory", "SoftwareInventory", "Actions"].contains(&segment);
            if segment.is_empty() || segment.contains('/') || taken {
                return Err(format!(
                    "update.{key}: {uri:?} must be /redfish/v1/UpdateService/<one new segment>"
                ));
            }
        }
        if self.http_push_stores
            && self.http_push_uri != "/redfish/v1/UpdateService/FirmwareInventory"
        {
            return Err("update.http_push_stores: the HttpPushUri that keeps uploads is /redfish/v1/UpdateService/FirmwareInventory".into());
        }
        if !self.http_push_uri.is_empty() && self.multipart_push_uri == self.http_push_uri {
            return Err("update.http_push_uri: the same URI as multipart_push_uri".into());
        }
        if self.transfer_protocols.is_empty() {
            return Err("update.transfer_protocols: at least one of HTTP, HTTPS".into());
        }
        for p in &self.transfer_protocols {
            if p != "HTTP" && p != "HTTPS" {
                return Err(format!(
                    "update.transfer_protocols: {p:?} is not HTTP or HTTPS (the ones Shoal fetches with)"
                ));
            }
        }
        Ok(())
    }
}
