//! Scenario files (`scenarios/*.toml`): data, not code. Parsed strictly;
//! every error names the file and the key.
//!
//! A scenario describes one machine, its network's DHCP profile, the boot
//! artifacts, what the driver asks of the BMC, and what must be seen: serial
//! markers in order, requests the boot servers answered, the Redfish state
//! afterwards, and optionally a second start (`[then]`). Serial patterns in
//! `expect.failure` mean the boot failed; with `expect = "fail"` the
//! scenario passes only if such a failure is seen (not on a timeout).
//!
//! This module is the schema (`ironic` the `[ironic]` section's); `validate`
//! loads a file and checks combinations of keys.

mod artifact;
mod ironic;
mod mockup;
pub mod reference;
mod validate;

pub use artifact::{Artifact, Image, Source};
pub use ironic::{
    CleanStep, DeployInterface, IronicDriver, IronicNode, IronicSwitch, IRONIC_BOOT_INTERFACES,
};

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    /// The real sushy library, as Ironic uses it.
    Sushy,
    /// Ironic's redfish-https / redfish-virtual-media request sequence in Rust.
    IronicSequence,
    /// OpenStack Ironic itself, standalone, through its API (`[ironic]`).
    Ironic,
    /// ipmitool over lanplus (RMCP+), as operators and Ironic's ipmitool
    /// interfaces drive a BMC: `chassis bootdev`, `chassis power on`.
    Ipmitool,
    /// pyghmi, the Python IPMI library behind Ironic's `ipminative`
    /// (petitboot specification's driver): `set_bootdev`, `set_power`.
    Pyghmi,
    /// proliantutils, HPE's library behind Ironic's iLO drivers
    /// (`IloClient`, its Redfish path), against an iLO profile over HTTPS:
    /// iLO's virtual media, `BootOnNextServerReset`, the power button and
    /// the POST state.
    Proliantutils,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::Sushy => "sushy",
            Driver::IronicSequence => "ironic-sequence",
            Driver::Ironic => "ironic",
            Driver::Ipmitool => "ipmitool",
            Driver::Pyghmi => "pyghmi",
            Driver::Proliantutils => "proliantutils",
        }
    }

    /// Whether it talks IPMI over LAN to the BMC.
    pub fn ipmi(self) -> bool {
        matches!(self, Driver::Ipmitool | Driver::Pyghmi)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Dhcp {
    /// Addresses only.
    Plain,
    /// Options 209/210 and the TFTP server from `[petitboot]`.
    Petitboot,
    /// Answers the HTTPClient vendor class with option 60 and a bootfile URL.
    Httpclient,
    /// A bootfile URL but no option 60: the firmware must ignore the offer.
    HttpclientWithoutVendorClass,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    UefiHttp,
    VirtualMedia,
    /// The driver only powers the machine on (its firmware decides).
    PowerOn,
    /// The driver asks for a network boot (`Pxe`), then powers on.
    Pxe,
    /// The driver asks for a boot from disk (`Hdd`), then powers on.
    Disk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum Enabled {
    Once,
    Continuous,
}

impl Enabled {
    pub fn as_str(self) -> &'static str {
        match self {
            Enabled::Once => "Once",
            Enabled::Continuous => "Continuous",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HttpBoot {
    Firmware,
    Vmedia,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(skip)]
    pub name: String,
    /// What the scenario shows, for its report.
    pub description: String,
    /// The clients that drive the BMC, each a case of its own (`sushy`
    /// unless said).
    #[serde(default = "default_drivers")]
    pub drivers: Vec<Driver>,
    /// Whether the boot must succeed or fail (`pass` unless said).
    #[serde(default = "default_outcome")]
    pub expect: Outcome,
    /// How long a case may take, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// The machine behind the BMC.
    #[serde(default)]
    pub machine: Machine,
    /// The BMC: shoal-emulator's flags for this case.
    #[serde(default)]
    pub emulator: Emulator,
    /// The machine's network: what its DHCP offers.
    #[serde(default)]
    pub network: Network,
    /// The files the case serves by name: Shoal's built images or your own.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// Labels that select runs: `full` is a scenario only `ci/test --full`
    /// runs (the default run keeps one real boot per boot path).
    #[serde(default)]
    pub tags: Vec<String>,
    /// What the driver asks of the BMC; absent for Ironic, which decides.
    pub boot: Option<Boot>,
    /// The Ironic node: boot interface, instance_info, expectations.
    pub ironic: Option<IronicNode>,
    /// What the DHCP server and the boot servers offer a petitboot machine.
    pub petitboot: Option<Petitboot>,
    /// The boot server also serves HTTPS, and the boot URI (or DHCP's
    /// bootfile URL) names it.
    pub https: Option<Https>,
    /// Subscribers besides the BMC's file server (`checks.events`): a
    /// receiver down for a while, one never up, an SSE stream.
    pub events: Option<EventSetup>,
    /// What must be seen for the case to pass.
    #[serde(rename = "checks")]
    pub checks: Checks,
    /// A second start after the first boot ended.
    pub then: Option<Then>,
}

fn default_drivers() -> Vec<Driver> {
    vec![Driver::Sushy]
}
fn default_outcome() -> Outcome {
    Outcome::Pass
}
fn default_timeout() -> u64 {
    120
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// `x86_64` or `ppc64le`.
    #[serde(default = "x86")]
    pub arch: String,
    /// `uefi` (OVMF, x86_64) or `petitboot` (ppc64le).
    #[serde(default = "uefi")]
    pub firmware: String,
    /// Its memory in MiB.
    #[serde(default = "mem")]
    pub memory_mib: u64,
    /// Its vCPUs (1 to 4; more would only slow TCG on a small host).
    #[serde(default = "one_cpu")]
    pub cpus: u32,
    /// A disk with an installed OS of this name (petitboot machines: its
    /// first sector reads `SHOAL-DISK-OS <name>`).
    pub disk_os: Option<String>,
    /// x86_64 only: a blank disk of this many GiB (sparse qcow2, virtio),
    /// for the agent to write an instance to. Its serial log then keeps
    /// every start (the agent's boot and the instance's), not only the last.
    pub disk_gib: Option<u64>,
    /// The deploy ramdisk stays up once it has booted and heartbeated (it
    /// finds `stay-on` on the boot server), as a real host does, instead
    /// of powering itself off: only the BMC turns it off.
    #[serde(default)]
    pub stays_on: bool,
    /// The deploy ramdisk, booted from a CD, powers itself off only once
    /// its CD drive holds no medium (it finds `wait-eject` on the boot
    /// server): the host of a driver that ejects the deploy image after
    /// the agent's heartbeat (`boot.eject_after_heartbeat`).
    #[serde(default)]
    pub waits_for_eject: bool,
    /// ppc64le only: `pseries` (PAPR guest, the default: what most ppc64le
    /// CI has) or `powernv` (an OpenPOWER machine: POWER9 with skiboot as
    /// its OPAL firmware, its BMC on in-band IPMI over a BT interface).
    #[serde(default)]
    pub platform: Platform,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    #[default]
    Pseries,
    Powernv,
}

fn x86() -> String {
    "x86_64".into()
}
fn uefi() -> String {
    "uefi".into()
}
fn mem() -> u64 {
    1024
}
const fn one_cpu() -> u32 {
    1
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            arch: x86(),
            firmware: uefi(),
            memory_mib: mem(),
            cpus: one_cpu(),
            disk_os: None,
            stays_on: false,
            waits_for_eject: false,
            disk_gib: None,
            platform: Platform::Pseries,
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Emulator {
    /// How the BMC carries out `UefiHttp` (`--http-boot`; `firmware`
    /// unless said).
    #[serde(default = "firmware_mapping")]
    pub http_boot: HttpBoot,
    /// The BMC profile (`--profile`): `idrac9`, `ilo5`, ...
    pub profile: Option<String>,
    /// In-band IPMI: the emulator serves the machine's side
    /// (`--ipmi-in-band-dir`) and gives its domain QEMU's KCS device.
    #[serde(default)]
    pub ipmi_in_band: bool,
    /// Fault rules the emulator starts with (its `[faults]` rules, as in
    /// its config file: a BMC that drops, delays or fails requests, over
    /// HTTP or, with `methods = ["IPMI"]`, on the host's in-band IPMI).
    #[serde(default)]
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub faults: Vec<toml::Table>,
    /// The machine's BMC on an endpoint of its own
    /// (`--endpoint-per-system`), one BMC for one server as the vendor's
    /// is: its profile's fixed Ids apply (and what needs them, Dell's
    /// Lifecycle Controller API), and this is its System's Id there
    /// (`System.Embedded.1`).
    pub system_id: Option<String>,
    /// A capture of a BMC (a folder in Redfish-Mockup-Creator's layout,
    /// relative to the scenario file) replayed over the machine
    /// (`--mockup`): its one system's Id, action targets and offered
    /// values are the BMC's, and its profile is derived from it.
    pub mockup: Option<std::path::PathBuf>,
    /// The captured system's Id (read from the capture at load).
    #[serde(skip)]
    pub mockup_system: Option<String>,
}

fn firmware_mapping() -> HttpBoot {
    HttpBoot::Firmware
}

impl Default for Emulator {
    fn default() -> Self {
        Emulator {
            http_boot: HttpBoot::Firmware,
            profile: None,
            ipmi_in_band: false,
            faults: Vec::new(),
            system_id: None,
            mockup: None,
            mockup_system: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// The DHCP profile (`plain` unless said).
    #[serde(default = "plain")]
    pub dhcp: Dhcp,
    /// Artifact offered as the DHCP bootfile URL.
    pub bootfile: Option<String>,
    /// DHCPv6 on fd00:5e:N::/64 (bootfile-url, option 59) and no DHCPv4.
    #[serde(default)]
    pub ipv6_only: bool,
}

fn plain() -> Dhcp {
    Dhcp::Plain
}

impl Default for Network {
    fn default() -> Self {
        Network {
            dhcp: Dhcp::Plain,
            bootfile: None,
            ipv6_only: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Http,
    Tftp,
}

/// Templates, rendered per case (also in the case's `checks.serial`,
/// `checks.failure` and `checks.requests`): `{uuid}` (the machine's), `{mac}` (lower
/// case with dashes), `{ip}`, `{iphex}` or `{iphex:N}` (the first N
/// upper-case hex digits of the IPv4 address), `{server}` (the boot
/// server's address) and `{base}` (`http://server:port` or `tftp://server`,
/// after `protocol`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Petitboot {
    /// Where the artifacts and the configuration are served.
    pub protocol: Protocol,
    /// DHCP option 209 (pxeconffile).
    pub option_209: Option<String>,
    /// DHCP option 210 (pxepathprefix).
    pub option_210: Option<String>,
    /// DHCPv6 option 59 (bootfile-url), on `network.ipv6_only` networks,
    /// where it takes the place of 209 and 210.
    pub bootfile_url: Option<String>,
    /// Where the configuration is written, relative to the served folder.
    pub config_path: String,
    /// A folder (relative to the served one) that gets a copy of every
    /// artifact, as Ironic lays out `<uuid>/deploy_kernel`.
    pub files_dir: Option<String>,
    /// The pxelinux-style configuration.
    pub config: String,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    /// What the driver asks for.
    pub method: Method,
    /// An artifact name, or a name that is not served (a 404). Absent with
    /// uefi-http: `HttpBootUri: null`, the URL comes from DHCP.
    pub uri: Option<String>,
    /// `BootSourceOverrideEnabled` (`Once` unless said).
    #[serde(default = "once")]
    pub enabled: Enabled,
    /// BIOS attributes the driver stages (`Bios/Settings`) before the boot
    /// override, `{uri}` standing for the boot URI: the vendor route where
    /// the BMC has no writable HttpBootUri (`HttpDev1Uri` for iDRAC,
    /// `UrlBootFile` for iLO). The override then carries no HttpBootUri.
    #[serde(default)]
    pub bios: std::collections::BTreeMap<String, String>,
    /// The override also carries BootSourceOverrideMode (some BMCs demand
    /// it in every Boot PATCH).
    #[serde(default)]
    pub with_mode: bool,
    /// IPMI drivers: text written to the boot initiator mailbox (boot
    /// option parameter 7: IANA 02 00 00, then this, in 16-byte blocks)
    /// before the boot request, as `petitboot,bootdevs=network disk`.
    pub mailbox: Option<String>,
    /// IPMI drivers: after the boot request, leave boot option parameter 0
    /// at "set in progress", so the flags read as locked.
    #[serde(default)]
    pub lock_flags: bool,
    /// Virtual media, sushy: once the machine has heartbeated, the driver
    /// ejects the virtual CD, as Ironic does when its agent is done.
    #[serde(default)]
    pub eject_after_heartbeat: bool,
    /// sushy: before the boot, the driver updates the firmware with this
    /// artifact (a `firmware-*` image) through the UpdateService's
    /// SimpleUpdate, as Ironic's redfish firmware interface does, and
    /// follows the task to its end; a BIOS image is staged for the reset,
    /// so the boot's power-on installs it.
    pub firmware_update: Option<String>,
}

fn once() -> Enabled {
    Enabled::Once
}

/// HTTPS boot: the boot server's certificate and what the driver enrolls
/// in the BMC's `Boot.Certificates` before it asks for the boot.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Https {
    /// The boot server's certificate (a good one unless said).
    #[serde(default)]
    pub certificate: ServerCertificate,
    /// Which CA the driver enrolls in the BMC first.
    #[serde(default)]
    pub enroll: Enroll,
    /// A CA also given to the firmware as the fw_cfg file
    /// `etc/edk2/https/cacerts` (none by default).
    pub fw_cfg: Option<Enroll>,
}

/// The boot server's certificate, always from the run's test CA.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServerCertificate {
    /// For the server's addresses (IP SANs), valid now.
    #[default]
    Valid,
    /// For another address (192.0.2.1) only.
    WrongHost,
    /// Its validity ended yesterday.
    Expired,
    /// Signed by an intermediate CA under the run's CA; the server sends
    /// the intermediate along.
    ViaIntermediate,
}

/// The CA the driver enrolls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Enroll {
    /// The run's CA, which signed the server's certificate.
    #[default]
    RunCa,
    /// Another CA, which signed nothing the server shows.
    OtherCa,
    /// The run's intermediate CA alone (not the root above it).
    Intermediate,
    /// None: the firmware trusts no CA.
    None,
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// Serial lines that must appear, in this order.
    #[serde(default)]
    pub serial: Vec<String>,
    /// Serial text that means the boot failed.
    #[serde(default)]
    pub failure: Vec<String>,
    /// `METHOD /path` the boot server (machine side) must have answered.
    #[serde(default)]
    pub requests: Vec<String>,
    /// Lines the boot server's HTTPS log must show (`GET /f`, or
    /// `TLS-HANDSHAKE-FAILED` for a refused handshake).
    #[serde(default)]
    pub https_requests: Vec<String>,
    /// Lines the HTTPS log must not show.
    #[serde(default)]
    pub https_requests_absent: Vec<String>,
    /// Text the emulator's log must show (what the BMC did, as it logs
    /// it: `SCP import`).
    #[serde(default)]
    pub emulator_log: Vec<String>,
    /// `METHOD /path` the BMC-side server must have answered.
    #[serde(default)]
    pub bmc_requests: Vec<String>,
    /// Text every heartbeat the machine sent must contain.
    #[serde(default)]
    pub heartbeat: Vec<String>,
    /// Events the BMC must push, in this order (others may come between):
    /// `Key` (a MessageId's last part, `ResourcePoweredOn`) or `Key
    /// origin` (text its OriginOfCondition contains, `VirtualMedia/Cd`).
    /// The runner subscribes the BMC's file server (`POST /events`)
    /// before the driver starts.
    #[serde(default)]
    pub events: Vec<String>,
    /// Redfish System properties by path (`Boot/BootSourceOverrideEnabled`),
    /// or another resource's (`/redfish/v1/Systems/{system}/VirtualMedia/Cd#Inserted`,
    /// `{system}` the System's Id; a number steps into an array:
    /// `…/LogServices/Sel/Entries#Members/0/MessageId`),
    /// read once the serial lines are seen (for up to 30 s until they
    /// match: a power change the machine asked for takes a moment).
    #[serde(default)]
    pub redfish: BTreeMap<String, String>,
}

/// `[events]`: what the runner sets on the BMC's EventService and
/// subscribes before the driver starts, beside the file server that
/// `checks.events` reads; each subscriber is checked as it says.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventSetup {
    /// `DeliveryRetryIntervalSeconds`, PATCHed first (as an operator
    /// shortens a profile's 30 s).
    pub retry_interval_secs: Option<u32>,
    /// `DeliveryRetryAttempts`, PATCHed first.
    pub retry_attempts: Option<u32>,
    /// A receiver that comes up only this many seconds after the driver
    /// starts, subscribed with `RetryForever`: the BMC's deliveries to it
    /// fail meanwhile (its log shows them), and once it is up it must get
    /// `checks.events`, in order.
    pub late_receiver_secs: Option<u64>,
    /// A receiver that never comes up, subscribed with
    /// `TerminateAfterRetries`: after its retries the subscription must be
    /// gone, and the file server told (`SubscriptionTerminated`, its URI).
    #[serde(default)]
    pub dead_receiver: bool,
    /// An SSE stream opened with this `$filter` before the driver starts.
    pub sse_filter: Option<String>,
    /// What that stream must carry: exactly these records, in order
    /// (`Key` or `Key origin`, as `checks.events`), nothing else.
    #[serde(default)]
    pub sse_events: Vec<String>,
}

/// A second start after the first boot ended, and what it must (not) do.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Then {
    /// Serial lines the second start must show, in order.
    #[serde(default)]
    pub serial: Vec<String>,
    /// `METHOD /path` the boot server must not see during it.
    #[serde(default)]
    pub requests_absent: Vec<String>,
}

#[cfg(test)]
mod tests;
