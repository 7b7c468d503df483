//! Scenario files (`scenarios/*.toml`): data, not code. Parsed strictly;
//! every error names the file and the key.
//!
//! A scenario describes one machine, its network's DHCP profile, the boot
//! artifacts, what the driver asks of the BMC, and what must be seen: serial
//! markers in order, requests the boot servers answered, the Redfish state
//! afterwards, and optionally a second start (`[then]`). Serial patterns in
//! `expect.failure` mean the boot failed; with `expect = "fail"` the
//! scenario passes only if such a failure is seen (not on a timeout).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    /// The real sushy library, as Ironic uses it.
    Sushy,
    /// Ironic's redfish-https / redfish-virtual-media request sequence in Rust.
    IronicSequence,
    /// OpenStack Ironic itself, standalone, through its API (`[ironic]`).
    Ironic,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::Sushy => "sushy",
            Driver::IronicSequence => "ironic-sequence",
            Driver::Ironic => "ironic",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Image {
    /// A grub EFI application printing `SHOAL-MARKER <marker>`.
    GrubMarkerEfi,
    /// The same as a bootable ISO.
    GrubMarkerIso,
    /// A Linux ramdisk ISO that reports its command line and boot path and
    /// sends a heartbeat (vm-images/deploy-ramdisk.sh).
    DeployRamdisk,
    /// That ramdisk's kernel alone (for network boot).
    DeployKernel,
    /// That ramdisk's initramfs alone.
    DeployInitrd,
    /// iPXE's EFI build that drives the firmware's NIC (Debian's ipxe
    /// package, /usr/lib/ipxe/snponly.efi).
    IpxeSnponly,
    /// Debian's signed network grub (grub-efi-amd64-signed,
    /// grubnetx64.efi.signed), the bootloader Ironic's docs name for its
    /// `http` and `pxe` interfaces on UEFI.
    GrubNetbootEfi,
    /// Debian's ppc64el kernel (vm-images/ppc64le-netboot.sh kernel).
    Ppc64leKernel,
    /// The ppc64le payload initramfs: marker, command line, heartbeat.
    Ppc64lePayload,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    UefiHttp,
    VirtualMedia,
    /// The driver only powers the machine on (its firmware decides).
    PowerOn,
    /// The driver asks for a network boot (`Pxe`), then powers on.
    Pxe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HttpBoot {
    Firmware,
    Vmedia,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(skip)]
    pub name: String,
    pub description: String,
    #[serde(default = "default_drivers")]
    pub drivers: Vec<Driver>,
    #[serde(default = "default_outcome")]
    pub expect: Outcome,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub emulator: Emulator,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// What the driver asks of the BMC; absent for Ironic, which decides.
    pub boot: Option<Boot>,
    /// The Ironic node: boot interface, instance_info, expectations.
    pub ironic: Option<IronicNode>,
    /// What the DHCP server and the boot servers offer a petitboot machine.
    pub petitboot: Option<Petitboot>,
    #[serde(rename = "checks")]
    pub checks: Checks,
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(default = "x86")]
    pub arch: String,
    #[serde(default = "uefi")]
    pub firmware: String,
    #[serde(default = "mem")]
    pub memory_mib: u64,
    /// A disk with an installed OS of this name (petitboot machines: its
    /// first sector reads `SHOAL-DISK-OS <name>`).
    pub disk_os: Option<String>,
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

impl Default for Machine {
    fn default() -> Self {
        Machine {
            arch: x86(),
            firmware: uefi(),
            memory_mib: mem(),
            disk_os: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emulator {
    #[serde(default = "firmware_mapping")]
    pub http_boot: HttpBoot,
    /// The BMC profile (`--profile`): `idrac9`, `ilo5`, ...
    pub profile: Option<String>,
}

fn firmware_mapping() -> HttpBoot {
    HttpBoot::Firmware
}

impl Default for Emulator {
    fn default() -> Self {
        Emulator {
            http_boot: HttpBoot::Firmware,
            profile: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
#[derive(Debug, Clone, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub name: String,
    pub image: Image,
    /// The marker text of the grub images.
    pub marker: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    pub method: Method,
    /// An artifact name, or a name that is not served (a 404). Absent with
    /// uefi-http: `HttpBootUri: null`, the URL comes from DHCP.
    pub uri: Option<String>,
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
}

fn once() -> Enabled {
    Enabled::Once
}

#[derive(Debug, Clone, Default, Deserialize)]
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
    /// `METHOD /path` the BMC-side server must have answered.
    #[serde(default)]
    pub bmc_requests: Vec<String>,
    /// Text every heartbeat the machine sent must contain.
    #[serde(default)]
    pub heartbeat: Vec<String>,
    /// Redfish System properties by path (`Boot/BootSourceOverrideEnabled`).
    #[serde(default)]
    pub redfish: BTreeMap<String, String>,
}

/// A second start after the first boot ended, and what it must (not) do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Then {
    #[serde(default)]
    pub serial: Vec<String>,
    #[serde(default)]
    pub requests_absent: Vec<String>,
}

/// Ironic's boot interfaces the harness drives.
pub const IRONIC_BOOT_INTERFACES: &[&str] = &[
    "redfish-https",
    "redfish-virtual-media",
    "http",
    "http-ipxe",
    "pxe",
];

/// How Ironic deploys the machine (the `ramdisk` deploy interface): the
/// node's boot interface and properties, its instance_info, and what must
/// come of it. Values may name `{http}`, Ironic's `[deploy] http_url` (the
/// boot server on the machine's network, serving the artifacts).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IronicNode {
    pub boot_interface: String,
    /// instance_info: `boot_iso`, or `kernel` and `ramdisk`, and
    /// `ramdisk_kernel_arguments`.
    pub instance: BTreeMap<String, String>,
    /// Node properties (`capabilities = "boot_mode:bios"`, `cpu_arch`).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    /// The deploy must fail, and Ironic's error (last_error, or the API's
    /// refusal) must contain this text.
    pub expect_error: Option<String>,
    /// Text Ironic's DHCP provider must have written into its options
    /// folder by the time the node is active (evidence for what DHCP
    /// offered).
    #[serde(default)]
    pub dhcp_opts_contain: Vec<String>,
    /// After the deploy and undeploy: the node switches to another boot
    /// interface and deploys again.
    pub switch: Option<IronicSwitch>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IronicSwitch {
    pub boot_interface: String,
    pub instance: BTreeMap<String, String>,
    /// Serial lines the second deploy must show, in order.
    pub serial: Vec<String>,
    /// `METHOD /path` the boot server must answer during the second deploy.
    #[serde(default)]
    pub requests: Vec<String>,
}

impl Scenario {
    pub fn load(path: &Path) -> Result<Scenario> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        let mut s: Scenario = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
        s.name = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        s.validate()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(s)
    }

    /// An OpenPOWER machine booting through petitboot.
    pub fn petitboot(&self) -> bool {
        self.machine.firmware == "petitboot"
    }

    fn validate(&self) -> Result<()> {
        match (self.machine.arch.as_str(), self.machine.firmware.as_str()) {
            ("x86_64", "uefi") | ("ppc64le", "petitboot") => {}
            ("x86_64" | "ppc64le", f) => bail!(
                "machine.firmware: {f:?} does not go with machine.arch {:?} (x86_64: \"uefi\"; ppc64le: \"petitboot\")",
                self.machine.arch
            ),
            (a, _) => bail!("machine.arch: {a:?} is not one of \"x86_64\", \"ppc64le\""),
        }
        let ironic = self.drivers.contains(&Driver::Ironic);
        if ironic {
            self.validate_ironic()?;
        } else if self.boot.is_none() {
            bail!("boot: missing (what the driver asks of the BMC)");
        } else if self.ironic.is_some() {
            bail!("ironic: an [ironic] section goes with drivers = [\"ironic\"]");
        }
        if self.petitboot() != self.petitboot.is_some() && !ironic {
            bail!("petitboot: a [petitboot] section goes with machine.firmware = \"petitboot\", and only there");
        }
        let method = self.boot.as_ref().map(|b| b.method);
        if self.petitboot() && !ironic {
            if !matches!(method, Some(Method::PowerOn | Method::Pxe)) {
                bail!("boot.method: petitboot machines take \"power-on\" or \"pxe\"");
            }
            if self.network.dhcp != Dhcp::Petitboot {
                bail!("network.dhcp: petitboot machines take \"petitboot\"");
            }
            if let Some(p) = &self.petitboot {
                if self.network.ipv6_only {
                    if p.bootfile_url.is_none() || p.option_209.is_some() || p.option_210.is_some()
                    {
                        bail!("petitboot.bootfile_url: an IPv6-only network offers the configuration through option 59 (bootfile_url), not 209/210");
                    }
                    if p.protocol != Protocol::Http {
                        bail!(
                            "petitboot.protocol: IPv6-only networks serve petitboot over \"http\""
                        );
                    }
                } else if p.bootfile_url.is_some() {
                    bail!("petitboot.bootfile_url: option 59 is DHCPv6's; it needs network.ipv6_only = true");
                }
            }
        } else if matches!(method, Some(Method::PowerOn)) || self.network.dhcp == Dhcp::Petitboot {
            bail!("boot.method / network.dhcp: \"power-on\" and \"petitboot\" are for petitboot machines");
        }
        if self.drivers.is_empty() {
            bail!("drivers: at least one driver");
        }
        let known = |n: &str| self.artifacts.iter().any(|a| a.name == n);
        for (i, a) in self.artifacts.iter().enumerate() {
            if a.name.contains('/') || a.name.is_empty() {
                bail!("artifacts[{i}].name: {:?} is not a plain file name", a.name);
            }
            let grub = matches!(a.image, Image::GrubMarkerEfi | Image::GrubMarkerIso);
            if grub != a.marker.is_some() {
                bail!("artifacts[{i}].marker: grub marker images need one, other images take none");
            }
        }
        if let Some(b) = &self.network.bootfile {
            if !known(b) {
                bail!("network.bootfile: {b:?} is not one of the artifacts");
            }
            if self.network.dhcp == Dhcp::Plain {
                bail!("network.bootfile: needs network.dhcp = \"httpclient\" or \"httpclient-without-vendor-class\"");
            }
        }
        if let Some(b) = &self.boot {
            if !b.bios.is_empty() && b.method != Method::UefiHttp {
                bail!("boot.bios: BIOS attributes carry an HTTP boot URI; they go with boot.method = \"uefi-http\"");
            }
            if b.method == Method::VirtualMedia && b.uri.is_none() {
                bail!("boot.uri: virtual-media needs an image");
            }
        }
        if let Some(p) = &self.emulator.profile {
            if p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                bail!("emulator.profile: {p:?} is not a profile name");
            }
        }
        let expect_error = self
            .ironic
            .as_ref()
            .is_some_and(|i| i.expect_error.is_some());
        if self.checks.serial.is_empty() && self.checks.failure.is_empty() && !expect_error {
            bail!("checks: give serial markers to wait for, or failure patterns");
        }
        if self.expect == Outcome::Fail && self.checks.failure.is_empty() {
            bail!("checks.failure: a scenario expected to fail must say how the failure shows");
        }
        Ok(())
    }

    /// The rules of scenarios that Ironic drives.
    fn validate_ironic(&self) -> Result<()> {
        if self.drivers != [Driver::Ironic] {
            bail!("drivers: \"ironic\" runs alone (its scenarios describe an Ironic node, not a request sequence)");
        }
        let Some(node) = &self.ironic else {
            bail!("ironic: the \"ironic\" driver needs an [ironic] section");
        };
        if self.boot.is_some() {
            bail!("boot: Ironic decides how the machine boots; give [ironic] instead of [boot]");
        }
        if self.petitboot.is_some() || self.then.is_some() {
            bail!("petitboot / then: Ironic writes the boot configuration and starts the machine itself");
        }
        if self.network.dhcp != Dhcp::Plain || self.network.bootfile.is_some() {
            bail!("network.dhcp: Ironic writes its own DHCP options (its dnsmasq provider); leave it \"plain\"");
        }
        if !self.checks.redfish.is_empty() {
            bail!("checks.redfish: with Ironic, the node's state is the check");
        }
        if !self.checks.bmc_requests.is_empty() {
            bail!("checks.bmc_requests: Ironic hands the BMC its http_url; check checks.requests");
        }
        if node.expect_error.is_some() && self.expect == Outcome::Fail {
            bail!("expect: an Ironic error is expected with ironic.expect_error alone (expect = \"fail\" is for boots that fail)");
        }
        let iface = |key: &str, name: &str| -> Result<()> {
            if !IRONIC_BOOT_INTERFACES.contains(&name) {
                bail!("{key}: {name:?} is not one of {IRONIC_BOOT_INTERFACES:?}");
            }
            Ok(())
        };
        iface("ironic.boot_interface", &node.boot_interface)?;
        let instance = |key: &str, i: &BTreeMap<String, String>| -> Result<()> {
            if !(i.contains_key("boot_iso")
                || i.contains_key("kernel") && i.contains_key("ramdisk"))
            {
                bail!("{key}: the ramdisk deploy needs boot_iso, or kernel and ramdisk");
            }
            Ok(())
        };
        instance("ironic.instance", &node.instance)?;
        if let Some(sw) = &node.switch {
            iface("ironic.switch.boot_interface", &sw.boot_interface)?;
            instance("ironic.switch.instance", &sw.instance)?;
            if node.expect_error.is_some() {
                bail!("ironic.switch: a node whose deploy must fail has nothing to switch");
            }
            if sw.serial.is_empty() {
                bail!("ironic.switch.serial: say what the second deploy must show");
            }
        }
        Ok(())
    }

    /// All scenarios in `dir`, sorted by name.
    pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("read {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        paths.iter().map(|p| Scenario::load(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        Scenario::load(&p)
    }

    const OK: &str = r#"
description = "x"
[[artifacts]]
name = "m.efi"
image = "grub-marker-efi"
marker = "m"
[boot]
method = "uefi-http"
uri = "m.efi"
[checks]
serial = ["SHOAL-MARKER m"]
"#;

    #[test]
    fn a_minimal_scenario_gets_defaults() {
        let s = parse(OK).unwrap();
        assert_eq!(
            (
                s.drivers.clone(),
                s.expect,
                s.boot.unwrap().enabled,
                s.timeout_secs
            ),
            (vec![Driver::Sushy], Outcome::Pass, Enabled::Once, 120)
        );
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let e = parse(&OK.replace("[boot]", "colour = 1\n[boot]"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml") && e.contains("colour"), "{e}");
        let e = parse(&OK.replace("uefi-http", "carrier-pigeon"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml") && e.contains("carrier-pigeon"), "{e}");
        let e = parse(&format!(
            "{OK}\n[network]\ndhcp = \"httpclient\"\nbootfile = \"nope.efi\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("network.bootfile"), "{e}");
        let e = parse(&OK.replace(
            "description = \"x\"",
            "description = \"x\"\nexpect = \"fail\"",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("checks.failure"), "{e}");
        let e = parse(&OK.replace(
            "method = \"uefi-http\"",
            "method = \"virtual-media\"\nbios = { UrlBootFile = \"{uri}\" }",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("boot.bios"), "{e}");
        let e = parse(&format!("{OK}\n[emulator]\nprofile = \"../x\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("emulator.profile"), "{e}");
    }

    #[test]
    fn petitboot_machines_are_checked_as_a_whole() {
        let pb = "[machine]\narch = \"ppc64le\"\nfirmware = \"petitboot\"\n[network]\ndhcp = \"petitboot\"\n\
                  [petitboot]\nprotocol = \"tftp\"\nconfig_path = \"c\"\nconfig = \"x\"\n\
                  [boot]\nmethod = \"power-on\"\n[checks]\nserial = [\"m\"]\n";
        let s = parse(&format!("description = \"x\"\n{pb}")).unwrap();
        assert!(s.petitboot());
        let e = |text: String| parse(&text).unwrap_err().to_string();
        let no_section = pb.replace(
            "[petitboot]\nprotocol = \"tftp\"\nconfig_path = \"c\"\nconfig = \"x\"\n",
            "",
        );
        assert!(e(format!("description = \"x\"\n{no_section}")).contains("[petitboot]"));
        let uefi = pb
            .replace("uefi", "x")
            .replace("firmware = \"petitboot\"", "firmware = \"uefi\"");
        assert!(e(format!("description = \"x\"\n{uefi}")).contains("machine.firmware"));
        let http = pb.replace("power-on", "uefi-http");
        assert!(e(format!("description = \"x\"\n{http}")).contains("boot.method"));
        let arm = pb.replace("ppc64le", "riscv64");
        assert!(e(format!("description = \"x\"\n{arm}")).contains("machine.arch"));
        // And a UEFI machine cannot take the petitboot DHCP profile.
        assert!(e(format!("{OK}\n[network]\ndhcp = \"petitboot\"\n")).contains("network.dhcp"));
        // Option 59 goes with IPv6-only networks, over http, and 209/210 not.
        let v6 = pb
            .replace(
                "dhcp = \"petitboot\"",
                "dhcp = \"petitboot\"\nipv6_only = true",
            )
            .replace(
                "protocol = \"tftp\"",
                "protocol = \"http\"\nbootfile_url = \"{base}/c\"",
            );
        assert!(parse(&format!("description = \"x\"\n{v6}")).is_ok());
        let v6_tftp = v6.replace("\"http\"", "\"tftp\"");
        assert!(e(format!("description = \"x\"\n{v6_tftp}")).contains("petitboot.protocol"));
        let v6_209 = v6.replace("config = ", "option_209 = \"c\"\nconfig = ");
        assert!(e(format!("description = \"x\"\n{v6_209}")).contains("petitboot.bootfile_url"));
        let v4_59 = v6.replace("ipv6_only = true", "");
        assert!(e(format!("description = \"x\"\n{v4_59}")).contains("petitboot.bootfile_url"));
    }

    #[test]
    fn ironic_scenarios_describe_a_node_not_a_request() {
        const IRONIC: &str = r#"
description = "x"
drivers = ["ironic"]
[[artifacts]]
name = "d.iso"
image = "deploy-ramdisk"
[ironic]
boot_interface = "redfish-https"
instance = { boot_iso = "{http}/d.iso" }
[checks]
serial = ["SHOAL-MARKER deploy-ramdisk"]
"#;
        let s = parse(IRONIC).unwrap();
        assert!(s.boot.is_none());
        assert_eq!(s.ironic.unwrap().boot_interface, "redfish-https");
        let e = |text: String| parse(&text).unwrap_err().to_string();
        assert!(e(IRONIC.replace("redfish-https", "ipmitool")).contains("ironic.boot_interface"));
        assert!(e(IRONIC.replace("boot_iso", "image")).contains("ironic.instance"));
        assert!(e(IRONIC.replace("[\"ironic\"]", "[\"ironic\", \"sushy\"]")).contains("drivers"));
        assert!(e(format!("{IRONIC}\n[boot]\nmethod = \"pxe\"\n")).contains("boot:"));
        assert!(e(IRONIC.replace("[ironic]\nboot_interface = \"redfish-https\"\ninstance = { boot_iso = \"{http}/d.iso\" }\n", "")).contains("[ironic]"));
        let redfish = IRONIC.replace(
            "[checks]",
            "[checks]\nredfish = { \"Boot/BootSourceOverrideEnabled\" = \"Once\" }",
        );
        assert!(e(redfish).contains("checks.redfish"));
        let bmc = IRONIC.replace("[checks]", "[checks]\nbmc_requests = [\"GET /d.iso\"]");
        assert!(e(bmc).contains("checks.bmc_requests"));
        // An expected error needs no serial markers; a switch needs some.
        let failing = IRONIC
            .replace("serial = [\"SHOAL-MARKER deploy-ramdisk\"]", "")
            .replace("[checks]", "expect_error = \"HTTP 500\"\n[checks]");
        assert!(parse(&failing).is_ok());
        let both = failing.replace("drivers = ", "expect = \"fail\"\ndrivers = ");
        assert!(e(both).contains("expect:"));
        let switch = IRONIC.replace("[checks]", "[ironic.switch]\nboot_interface = \"http\"\ninstance = { kernel = \"k\", ramdisk = \"r\" }\nserial = []\n[checks]");
        assert!(e(switch).contains("ironic.switch.serial"));
        // And the other drivers still need [boot], and take no [ironic].
        assert!(
            e(OK.replace("[boot]\nmethod = \"uefi-http\"\nuri = \"m.efi\"\n", ""))
                .contains("boot: missing")
        );
        let stray = format!(
            "{OK}\n[ironic]\nboot_interface = \"pxe\"\ninstance = {{ boot_iso = \"x\" }}\n"
        );
        assert!(e(stray).contains("ironic:"));
    }

    #[test]
    fn the_shipped_scenarios_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let all = Scenario::load_dir(&dir).unwrap();
        assert!(all.len() >= 6, "{} scenarios", all.len());
    }
}
