//! The `[ironic]` section's schema: the node Ironic deploys (hardware
//! type, boot and deploy interfaces, instance_info, inspection, cleaning,
//! RAID, console) and what must come of it.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::Deserialize;

/// Ironic's boot interfaces the harness drives.
pub const IRONIC_BOOT_INTERFACES: &[&str] = &[
    "redfish-https",
    "redfish-virtual-media",
    "idrac-redfish-virtual-media",
    "ilo-virtual-media",
    "http",
    "http-ipxe",
    "pxe",
    "ipxe",
];

/// The Ironic hardware type of the node, and so the protocol Ironic
/// speaks to the BMC for power and boot devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IronicDriver {
    /// `redfish`: sushy, against the BMC's Redfish service.
    #[default]
    Redfish,
    /// `ipmi`: ipmitool (lanplus), against the BMC's IPMI listener.
    Ipmi,
    /// `idrac`: Dell's hardware type, sushy with its Dell extension
    /// (`idrac-redfish` power, management and inspection, and the
    /// `idrac-redfish-virtual-media` boot interface), against the Redfish
    /// service.
    Idrac,
    /// `ilo5`: HPE's hardware type (Ironic 35, the last with it), iLO
    /// power, ilo5 management and the `ilo-virtual-media` boot through
    /// proliantutils, against the BMC's Redfish over HTTPS.
    Ilo5,
}

impl IronicDriver {
    pub fn as_str(self) -> &'static str {
        match self {
            IronicDriver::Redfish => "redfish",
            IronicDriver::Ipmi => "ipmi",
            IronicDriver::Idrac => "idrac",
            IronicDriver::Ilo5 => "ilo5",
        }
    }

    /// Whether the case needs Ironic 35 (its iLO hardware type left in 36).
    pub fn ironic35(self) -> bool {
        self == IronicDriver::Ilo5
    }
}

/// How Ironic deploys the machine (the `ramdisk` deploy interface): the
/// node's boot interface and properties, its instance_info, and what must
/// come of it. Values may name `{http}`, Ironic's `[deploy] http_url` (the
/// boot server on the machine's network, serving the artifacts).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IronicNode {
    /// The hardware type (`redfish` unless said).
    #[serde(default)]
    pub driver: IronicDriver,
    /// The node's boot interface (`redfish-virtual-media`, `http-ipxe`, ...).
    pub boot_interface: String,
    /// instance_info: `boot_iso`, or `kernel` and `ramdisk`, and
    /// `ramdisk_kernel_arguments`.
    pub instance: BTreeMap<String, String>,
    /// Node properties (`capabilities = "boot_mode:bios"`, `cpu_arch`).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// The deploy (or, with clean steps, the manual cleaning) must fail,
    /// and Ironic's error (last_error, or the API's refusal) must contain
    /// this text.
    pub expect_error: Option<String>,
    /// Text Ironic's DHCP provider must have written into its options
    /// folder by the time the node is active (evidence for what DHCP
    /// offered).
    #[serde(default)]
    pub dhcp_opts_contain: Vec<String>,
    /// After the deploy and undeploy: the node switches to another boot
    /// interface and deploys again.
    pub switch: Option<IronicSwitch>,
    /// `ramdisk` (the default: the boot interface's ramdisk is the
    /// instance) or `direct`: ironic-python-agent boots, heartbeats, writes
    /// `instance.image_source` to the machine's disk, and the node boots
    /// its disk.
    #[serde(default)]
    pub deploy_interface: DeployInterface,
    /// driver_info beyond the BMC's: `deploy_kernel`, `deploy_ramdisk`,
    /// `bootloader` (the agent's ramdisk and the ESP image for the ISOs
    /// Ironic builds).
    #[serde(default)]
    pub driver_info: BTreeMap<String, String>,
    /// Automated cleaning on (the agent's `erase_devices_metadata` only):
    /// `provide` at enrollment and the undeploy both clean.
    #[serde(default)]
    pub cleaning: bool,
    /// After the deploy: `rebuild`, the agent writes the image again and
    /// the node boots it again.
    #[serde(default)]
    pub rebuild: bool,
    /// Ironic's `[conductor] deploy_callback_timeout` (seconds): how long
    /// it waits for the agent's heartbeat. Default 600.
    pub callback_timeout_secs: Option<u64>,
    /// Inspection while the node is manageable, through each of these
    /// inspect interfaces in turn (`redfish`: the BMC's inventory; `agent`:
    /// the agent boots and reports its own); what Ironic learnt must match
    /// the machine (CPUs, memory, disk size, MAC).
    #[serde(default)]
    pub inspect: Vec<String>,
    /// Manual cleaning while the node is manageable, before `provide`:
    /// these steps (`{ interface = "management", step = "known_good_state" }`,
    /// with `args` when the step takes some), which must all finish with
    /// the node manageable again.
    #[serde(default)]
    pub clean_steps: Vec<CleanStep>,
    /// After a `firmware.update` clean step (the node's firmware
    /// interface is then `redfish`): the versions Ironic must have recorded
    /// for its components afterwards (`GET /v1/nodes/{node}/firmware`),
    /// by component (`bios`, `bmc`; `nic` stands for every `nic:<id>`).
    #[serde(default)]
    pub firmware: BTreeMap<String, String>,
    /// The node's `target_raid_config` (`{ logical_disks = [{ size_gb =
    /// "MAX", raid_level = "0", is_root_volume = true }] }`), set before
    /// the clean steps, among which `raid` steps then run through the
    /// hardware type's Redfish RAID interface (`redfish`, `idrac-redfish`).
    /// Ironic's `raid_config` afterwards must hold the target's RAID
    /// levels when `create_configuration` ran last, no volume when
    /// `delete_configuration` did.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub target_raid_config: Option<toml::Table>,
    /// Once the node is available: an event subscription to this
    /// destination (rendered: `{http}/events`) is created, listed, read
    /// and deleted through Ironic's redfish vendor passthru, as metal3's
    /// BMCEventSubscription does (the redfish hardware type).
    pub subscribe: Option<String>,
    /// `false`: the agent is given an API address where nothing listens
    /// (its lookup fails; Ironic waits for a heartbeat that never comes).
    #[serde(default = "yes")]
    pub agent_reaches_api: bool,
    /// Lines the node's console must show, in order: the node gets
    /// Ironic's `ipmitool-socat` console interface (IPMI Serial-over-LAN
    /// through socat; allowed on redfish nodes too), enabled before the
    /// deploy, and the harness reads it from the TCP address Ironic gives.
    #[serde(default)]
    pub console: Vec<String>,
}

impl IronicNode {
    /// Whether a clean step updates firmware: the node's firmware
    /// interface is then `redfish`.
    pub fn updates_firmware(&self) -> bool {
        self.clean_steps.iter().any(|c| c.interface == "firmware")
    }

    /// `firmware.update` clean steps as Ironic 39 takes them (its
    /// `settings` schema), on a node that can run them, and the versions
    /// expected after them.
    pub fn validate_firmware(&self) -> Result<()> {
        for c in self
            .clean_steps
            .iter()
            .filter(|c| c.interface == "firmware")
        {
            if c.step != "update" {
                bail!("ironic.clean_steps: firmware.{} is not update (the redfish firmware interface's step)", c.step);
            }
            let settings = c.args.get("settings").and_then(|s| s.as_array());
            let Some(settings) = settings.filter(|a| !a.is_empty()) else {
                bail!("ironic.clean_steps: firmware.update takes args.settings, a list of {{ component, url[, wait] }}");
            };
            for (i, item) in settings.iter().enumerate() {
                let component = item.get("component").and_then(|v| v.as_str());
                if !component.is_some_and(|c| c == "bios" || c == "bmc" || c.starts_with("nic:")) {
                    bail!("ironic.clean_steps: firmware.update settings[{i}].component is \"bios\", \"bmc\" or \"nic:<id>\"");
                }
                if !item.get("url").is_some_and(|v| v.is_str()) {
                    bail!("ironic.clean_steps: firmware.update settings[{i}] needs a url (\"{{http}}/bios.fw\")");
                }
            }
        }
        if self.updates_firmware() {
            if !matches!(self.driver, IronicDriver::Redfish | IronicDriver::Idrac) {
                bail!("ironic.clean_steps: firmware.update runs through the redfish firmware interface (the redfish or idrac hardware type)");
            }
            if self.deploy_interface != DeployInterface::Direct {
                // requires_ramdisk=True: manual cleaning boots the agent.
                bail!("ironic.clean_steps: firmware.update as a clean step boots the agent; deploy_interface = \"direct\"");
            }
            if self.expect_error.is_some() && !self.firmware.is_empty() {
                bail!("ironic.firmware: a cleaning that must fail records no new version; leave it out");
            }
        } else if !self.firmware.is_empty() {
            bail!("ironic.firmware: the versions to expect after a firmware.update clean step; add one");
        }
        if let Some(k) = self
            .firmware
            .keys()
            .find(|k| !["bios", "bmc", "nic"].contains(&k.as_str()))
        {
            bail!("ironic.firmware: {k:?} is not bios, bmc or nic");
        }
        Ok(())
    }
}

/// One manual clean step, as Ironic's API takes it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CleanStep {
    /// The interface the step belongs to (`raid`, `bios`, `firmware`, ...).
    pub interface: String,
    /// The step's name (`create_configuration`, ...).
    pub step: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub args: toml::Table,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeployInterface {
    #[default]
    Ramdisk,
    Direct,
}

impl DeployInterface {
    pub fn as_str(self) -> &'static str {
        match self {
            DeployInterface::Ramdisk => "ramdisk",
            DeployInterface::Direct => "direct",
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IronicSwitch {
    /// The boot interface the node switches to.
    pub boot_interface: String,
    /// Its instance_info for the second deploy.
    pub instance: BTreeMap<String, String>,
    /// Serial lines the second deploy must show, in order.
    pub serial: Vec<String>,
    /// `METHOD /path` the boot server must answer during the second deploy.
    #[serde(default)]
    pub requests: Vec<String>,
}

fn yes() -> bool {
    true
}
