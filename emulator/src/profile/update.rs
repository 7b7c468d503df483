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
    /// Seconds the BMC is away after it installed its own firmware;
    /// unset: as long as a Manager reset keeps it away.
    #[serde(default)]
    pub bmc_down_secs: Option<u64>,
    /// `TransferProtocol`s SimpleUpdate fetches with.
    #[serde(default = "protocols")]
    pub transfer_protocols: Vec<String>,
}

impl Default for Update {
    fn default() -> Self {
        Update {
            nic_firmware_version: nic_version(),
            new_secs: 0.0,
            apply_secs: apply_secs(),
            bmc_down_secs: None,
            transfer_protocols: protocols(),
        }
    }
}

fn nic_version() -> String {
    "22.31.6".into()
}

fn apply_secs() -> f64 {
    3.0
}

fn protocols() -> Vec<String> {
    vec!["HTTP".into(), "HTTPS".into()]
}

impl Update {
    /// Every value in range; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        for (key, v) in [("new_secs", self.new_secs), ("apply_secs", self.apply_secs)] {
            if !(0.0..=3600.0).contains(&v) {
                return Err(format!("update.{key}: {v} is not 0 to 3600 seconds"));
            }
        }
        if self.bmc_down_secs.is_some_and(|s| s > 3600) {
            return Err("update.bmc_down_secs: more than 3600 seconds".into());
        }
        let v = &self.nic_firmware_version;
        if v.is_empty() || v.len() > crate::firmware::MAX_VERSION {
            return Err(format!(
                "update.nic_firmware_version: {v:?} must be 1 to {} characters",
                crate::firmware::MAX_VERSION
            ));
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
