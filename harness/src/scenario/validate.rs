//! Loading a scenario file and the checks the schema alone cannot make:
//! keys that go together (machine and firmware, petitboot and its
//! artifacts, a driver and the sections it needs). Every error names the
//! file and the key.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{
    DeployInterface, Dhcp, Driver, HttpBoot, IronicDriver, IronicNode, Method, Outcome, Platform,
    Protocol, Scenario, IRONIC_BOOT_INTERFACES,
};

/// The tags a scenario may carry: `full`, run by `ci/test --full` only.
pub const SCENARIO_TAGS: &[&str] = &["full"];

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
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut own = s.artifacts.iter_mut().enumerate();
        own.try_for_each(|(i, a)| a.check(i, folder))
            .and_then(|()| s.validate())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        super::mockup::resolve(&mut s.emulator, path)
            .map_err(|e| anyhow::anyhow!("{}: emulator.mockup: {e}", path.display()))?;
        Ok(s)
    }

    /// An OpenPOWER machine booting through petitboot.
    pub fn petitboot(&self) -> bool {
        self.machine.firmware == "petitboot"
    }

    /// Whether the BMC serves the machine's in-band IPMI: when the
    /// scenario asks (x86_64), and always on powernv (OPAL's BT
    /// interface; its petitboot reads the boot flags there).
    pub fn in_band_ipmi(&self) -> bool {
        self.emulator.ipmi_in_band || self.machine.platform == Platform::Powernv
    }

    fn validate(&self) -> Result<()> {
        self.validate_machine()?;
        let ironic = self.drivers.contains(&Driver::Ironic);
        if ironic {
            self.validate_ironic()?;
        } else if self.boot.is_none() {
            bail!("boot: missing (what the driver asks of the BMC)");
        } else if self.ironic.is_some() {
            bail!("ironic: an [ironic] section goes with drivers = [\"ironic\"]");
        }
        self.validate_petitboot(ironic)?;
        self.validate_drivers()?;
        self.validate_artifacts()?;
        self.validate_boot()?;
        self.validate_https()?;
        self.validate_emulator()?;
        self.validate_events()?;
        self.validate_checks()
    }

    /// `[machine]`: architecture and firmware, disks, platform, in-band IPMI.
    fn validate_machine(&self) -> Result<()> {
        match (self.machine.arch.as_str(), self.machine.firmware.as_str()) {
            ("x86_64", "uefi") | ("ppc64le", "petitboot") => {}
            ("x86_64" | "ppc64le", f) => bail!(
                "machine.firmware: {f:?} does not go with machine.arch {:?} (x86_64: \"uefi\"; ppc64le: \"petitboot\")",
                self.machine.arch
            ),
            (a, _) => bail!("machine.arch: {a:?} is not one of \"x86_64\", \"ppc64le\""),
        }
        if self.machine.disk_gib.is_some() && self.machine.arch != "x86_64" {
            bail!(
                "machine.disk_gib: an x86_64 machine's blank disk (ppc64le machines take disk_os)"
            );
        }
        match (self.machine.disk_gib, self.machine.cpus) {
            (Some(0), _) => bail!("machine.disk_gib: a disk of 0 GiB"),
            (_, c) if !(1..=4).contains(&c) => bail!("machine.cpus: {c}, not 1 to 4"),
            _ => {}
        }
        if self.machine.platform == Platform::Powernv && self.machine.arch != "ppc64le" {
            bail!("machine.platform: \"powernv\" is a ppc64le machine");
        }
        if self.emulator.ipmi_in_band && self.machine.arch != "x86_64" {
            bail!(
                "emulator.ipmi_in_band: ppc64le machines have it by their platform (powernv: always; pseries: no IPMI interface)"
            );
        }
        Ok(())
    }

    /// `[petitboot]` and the boot methods and DHCP of petitboot machines
    /// (not for Ironic's, whose boot Ironic decides).
    fn validate_petitboot(&self, ironic: bool) -> Result<()> {
        if self.petitboot() != self.petitboot.is_some() && !ironic {
            bail!("petitboot: a [petitboot] section goes with machine.firmware = \"petitboot\", and only there");
        }
        let method = self.boot.as_ref().map(|b| b.method);
        if self.petitboot() && !ironic {
            if !matches!(method, Some(Method::PowerOn | Method::Pxe | Method::Disk)) {
                bail!("boot.method: petitboot machines take \"power-on\", \"pxe\" or \"disk\"");
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
        Ok(())
    }

    /// `drivers` and `tags`: what each driver needs of the emulator.
    fn validate_drivers(&self) -> Result<()> {
        if self.drivers.contains(&Driver::Proliantutils)
            && !matches!(self.emulator.profile.as_deref(), Some("ilo5" | "ilo6"))
        {
            bail!(
                "drivers: \"proliantutils\" drives an iLO: emulator.profile = \"ilo5\" or \"ilo6\""
            );
        }
        if self.drivers.contains(&Driver::Proliantutils)
            && self.emulator.system_id.as_deref() != Some("1")
        {
            bail!("drivers: \"proliantutils\" asks for Systems/1: emulator.system_id = \"1\" (the iLO's own endpoint)");
        }
        if self.drivers.is_empty() {
            bail!("drivers: at least one driver");
        }
        for (i, t) in self.tags.iter().enumerate() {
            if !SCENARIO_TAGS.contains(&t.as_str()) {
                bail!("tags[{i}]: {t:?} is not one of {SCENARIO_TAGS:?}");
            }
        }
        Ok(())
    }

    /// `[[artifacts]]` and the DHCP bootfile that names one.
    fn validate_artifacts(&self) -> Result<()> {
        let known = |n: &str| self.artifacts.iter().any(|a| a.name == n);
        if let Some(b) = &self.network.bootfile {
            if !known(b) {
                bail!("network.bootfile: {b:?} is not one of the artifacts");
            }
            if self.network.dhcp == Dhcp::Plain {
                bail!("network.bootfile: needs network.dhcp = \"httpclient\" or \"httpclient-without-vendor-class\"");
            }
        }
        Ok(())
    }

    /// `[boot]`: what each driver can ask of the BMC.
    fn validate_boot(&self) -> Result<()> {
        if let Some(b) = &self.boot {
            let ipmi = self.drivers.iter().all(|d| d.ipmi());
            if (b.mailbox.is_some() || b.lock_flags) && !ipmi {
                bail!("boot.mailbox / boot.lock_flags: IPMI boot options; they go with drivers \"ipmitool\" and \"pyghmi\" only");
            }
            if let Some(Err(e)) = b.mailbox.as_deref().map(shoal_ipmi::boot::mailbox_blocks) {
                bail!("boot.mailbox: {e}");
            }
            if self.drivers.iter().any(|d| d.ipmi())
                && !matches!(b.method, Method::Pxe | Method::Disk | Method::PowerOn)
            {
                bail!("boot.method: IPMI drivers ask for \"pxe\", \"disk\" or \"power-on\"");
            }
            if self.drivers.contains(&Driver::Proliantutils)
                && !matches!(
                    b.method,
                    Method::VirtualMedia | Method::UefiHttp | Method::PowerOn
                )
            {
                bail!("boot.method: the proliantutils driver boots \"virtual-media\" or \"uefi-http\", or only powers on");
            }
            if b.method == Method::Disk && !self.petitboot() {
                bail!("boot.method: \"disk\" is for petitboot machines here");
            }
            if !b.bios.is_empty() && b.method != Method::UefiHttp {
                bail!("boot.bios: BIOS attributes carry an HTTP boot URI; they go with boot.method = \"uefi-http\"");
            }
            if b.method == Method::VirtualMedia && b.uri.is_none() {
                bail!("boot.uri: virtual-media needs an image");
            }
            if let Some(f) = &b.firmware_update {
                if !self
                    .artifacts
                    .iter()
                    .any(|a| a.name == *f && a.is_firmware())
                {
                    bail!("boot.firmware_update: {f:?} is not a firmware-* artifact");
                }
                if self.drivers != [Driver::Sushy] {
                    bail!("boot.firmware_update: the sushy driver updates the firmware; it goes with drivers = [\"sushy\"]");
                }
            }
            if b.eject_after_heartbeat
                && (b.method != Method::VirtualMedia || self.drivers != [Driver::Sushy])
            {
                bail!("boot.eject_after_heartbeat: the sushy driver ejects the CD it inserted; it goes with boot.method = \"virtual-media\" and drivers = [\"sushy\"]");
            }
        }
        if self.machine.waits_for_eject
            && !self.boot.as_ref().is_some_and(|b| b.eject_after_heartbeat)
        {
            bail!("machine.waits_for_eject: the machine would wait for ever; give boot.eject_after_heartbeat");
        }
        Ok(())
    }

    /// `[events]`: subscribers beside the file server `checks.events`
    /// reads, each with something to check.
    fn validate_events(&self) -> Result<()> {
        let Some(e) = &self.events else { return Ok(()) };
        if self.checks.events.is_empty() {
            bail!("events: its receivers are checked against checks.events; give those");
        }
        if e.retry_interval_secs == Some(0) {
            bail!("events.retry_interval_secs: at least 1");
        }
        if e.late_receiver_secs
            .is_some_and(|s| !(1..=self.timeout_secs / 2).contains(&s))
        {
            bail!(
                "events.late_receiver_secs: 1 to half of timeout_secs ({} s)",
                self.timeout_secs / 2
            );
        }
        if e.sse_filter.is_some() == e.sse_events.is_empty() {
            bail!("events.sse_filter / events.sse_events: an SSE stream's filter goes with what it must carry");
        }
        if e.sse_filter.as_deref().is_some_and(|f| f.trim().is_empty()) {
            bail!("events.sse_filter: empty (a stream without a filter carries everything)");
        }
        if let Some(w) = e
            .sse_events
            .iter()
            .find(|w| w.trim().is_empty() || w.starts_with(' '))
        {
            bail!("events.sse_events: {w:?} is not `Key` or `Key origin`");
        }
        Ok(())
    }

    /// `[https]`: a UEFI machine, a Redfish driver, a URI to name.
    fn validate_https(&self) -> Result<()> {
        if self.https.is_some() {
            if self.machine.arch != "x86_64" || self.machine.firmware != "uefi" {
                bail!("https: HTTPS boot is UEFI's (machine.arch = \"x86_64\", machine.firmware = \"uefi\")");
            }
            if self.drivers.iter().any(|d| d.ipmi())
                || self
                    .ironic
                    .as_ref()
                    .is_some_and(|n| n.driver == IronicDriver::Ipmi)
            {
                bail!("https: the CA is enrolled over Redfish; IPMI drivers cannot");
            }
            let dhcp_url = self.network.bootfile.is_some();
            let bmc_url = self
                .boot
                .as_ref()
                .is_some_and(|b| b.method == Method::UefiHttp && b.uri.is_some());
            if !dhcp_url && !bmc_url && self.ironic.is_none() {
                bail!("https: needs a boot URI (boot.method = \"uefi-http\" with boot.uri) or a DHCP bootfile (network.bootfile)");
            }
            if self.emulator.http_boot == HttpBoot::Vmedia {
                bail!("https: the vmedia mapping boots a CD the BMC fetched, not the firmware's HTTPS");
            }
        } else if !self.checks.https_requests.is_empty()
            || !self.checks.https_requests_absent.is_empty()
        {
            bail!("checks.https_requests: there is no HTTPS server without an [https] section");
        }
        Ok(())
    }

    /// `[emulator]`: the profile's and the System Id's names.
    fn validate_emulator(&self) -> Result<()> {
        if let Some(p) = &self.emulator.profile {
            if p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                bail!("emulator.profile: {p:?} is not a profile name");
            }
        }
        if let Some(id) = &self.emulator.system_id {
            if self.emulator.profile.is_none() {
                bail!("emulator.system_id: the Id comes from a profile's fixed Ids; give emulator.profile");
            }
            if id.is_empty()
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            {
                bail!("emulator.system_id: {id:?} is not a resource Id");
            }
        }
        Ok(())
    }

    /// `[checks]`: something to wait for, and how a failure shows.
    fn validate_checks(&self) -> Result<()> {
        if !self.checks.events.is_empty() && self.ironic.is_some() {
            bail!("checks.events: the BMC pushes to its file server, which Ironic's scenarios have not (Ironic hands the BMC its http_url)");
        }
        if let Some(e) = self
            .checks
            .events
            .iter()
            .find(|e| e.trim().is_empty() || e.starts_with(' '))
        {
            bail!("checks.events: {e:?} is not `Key` or `Key origin`");
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
        if !self.checks.redfish.is_empty() && node.deploy_interface != DeployInterface::Direct {
            bail!("checks.redfish: with Ironic's ramdisk deploy, the node's state is the check (the direct deploy may check the boot override the deploy left)");
        }
        if !self.checks.bmc_requests.is_empty() {
            bail!("checks.bmc_requests: Ironic hands the BMC its http_url; check checks.requests");
        }
        if node.expect_error.is_some() && self.expect == Outcome::Fail {
            bail!("expect: an Ironic error is expected with ironic.expect_error alone (expect = \"fail\" is for boots that fail)");
        }
        self.validate_ironic_boot(node)?;
        self.validate_ironic_deploy(node)?;
        validate_ironic_inspection(node)?;
        self.validate_ironic_raid(node)?;
        node.validate_firmware()?;
        if !node.inspect.is_empty() && self.machine.disk_gib.is_none() {
            bail!("ironic.inspect: inspection compares the disk Ironic found with machine.disk_gib; give one");
        }
        if node.rebuild && node.expect_error.is_some() {
            bail!("ironic.rebuild: a node whose deploy must fail has nothing to rebuild");
        }
        if node.subscribe.is_some() && node.driver != IronicDriver::Redfish {
            bail!("ironic.subscribe: event subscriptions go through the redfish hardware type's vendor passthru (ironic.driver = \"redfish\")");
        }
        if let Some(sw) = &node.switch {
            known_boot_interface("ironic.switch.boot_interface", &sw.boot_interface)?;
            redfish_type_only(node, "ironic.switch.boot_interface", &sw.boot_interface)?;
            instance_info(
                node.deploy_interface == DeployInterface::Direct,
                "ironic.switch.instance",
                &sw.instance,
            )?;
            if node.expect_error.is_some() {
                bail!("ironic.switch: a node whose deploy must fail has nothing to switch");
            }
            if sw.serial.is_empty() {
                bail!("ironic.switch.serial: say what the second deploy must show");
            }
        }
        Ok(())
    }

    /// The node's hardware type and boot interface, and the endpoint of its
    /// own that Dell's and HPE's types need.
    fn validate_ironic_boot(&self, node: &IronicNode) -> Result<()> {
        known_boot_interface("ironic.boot_interface", &node.boot_interface)?;
        redfish_type_only(node, "ironic.boot_interface", &node.boot_interface)?;
        let idrac = node.driver == IronicDriver::Idrac;
        let ilo = node.driver == IronicDriver::Ilo5;
        if ilo != (node.boot_interface == "ilo-virtual-media") {
            bail!("ironic.boot_interface: the ilo5 hardware type boots through \"ilo-virtual-media\" (Ironic's iLO virtual media boot), which no other type has");
        }
        if ilo && self.emulator.system_id.is_none() {
            bail!("emulator.system_id: the ilo5 hardware type talks to one iLO on an HTTPS endpoint of its own; give the System's Id there (\"1\")");
        }
        match node.boot_interface.as_str() {
            "idrac-redfish-virtual-media" if !idrac => bail!(
                "ironic.boot_interface: \"idrac-redfish-virtual-media\" needs the idrac hardware type (ironic.driver = \"idrac\")"
            ),
            // The idrac type takes Dell's virtual media boot in its place.
            "redfish-virtual-media" if idrac => bail!(
                "ironic.boot_interface: the idrac hardware type boots virtual media through \"idrac-redfish-virtual-media\""
            ),
            _ => {}
        }
        if idrac && self.emulator.system_id.is_none() {
            bail!("emulator.system_id: the idrac hardware type talks to one iDRAC on an endpoint of its own (Dell's API needs its fixed Ids); give the System's Id there (\"System.Embedded.1\")");
        }
        Ok(())
    }

    /// The deploy interface: what the ramdisk and the direct (agent) deploy
    /// each need, and the options only the agent has.
    fn validate_ironic_deploy(&self, node: &IronicNode) -> Result<()> {
        let direct = node.deploy_interface == DeployInterface::Direct;
        instance_info(direct, "ironic.instance", &node.instance)?;
        if direct {
            for k in ["deploy_kernel", "deploy_ramdisk"] {
                if !node.driver_info.contains_key(k) {
                    bail!("ironic.driver_info: the direct deploy boots the agent: give {k}");
                }
            }
            match self.machine.disk_gib {
                Some(g) if g >= 4 => {}
                // ironic-python-agent takes no disk under 4 GiB as the root
                // device (hardware.guess_root_disk).
                _ => bail!(
                    "machine.disk_gib: the agent writes to a disk of at least 4 GiB; give one"
                ),
            }
            if node.switch.is_some() {
                bail!("ironic.switch: switching boot interfaces is a ramdisk-deploy check");
            }
        } else {
            if node.cleaning
                || node.rebuild
                || node.callback_timeout_secs.is_some()
                || !node.agent_reaches_api
            {
                bail!("ironic.cleaning / rebuild / callback_timeout_secs / agent_reaches_api: these need the agent (deploy_interface = \"direct\")");
            }
        }
        if !node.agent_reaches_api && node.expect_error.is_none() {
            bail!("ironic.agent_reaches_api: an agent that cannot reach Ironic fails the deploy; give ironic.expect_error");
        }
        Ok(())
    }

    /// RAID: raid clean steps and `target_raid_config` go together, on a
    /// type with a Redfish RAID interface and a machine with a disk.
    fn validate_ironic_raid(&self, node: &IronicNode) -> Result<()> {
        let raid_steps = node.clean_steps.iter().filter(|c| c.interface == "raid");
        if let Some(step) = raid_steps.clone().find(|c| {
            !matches!(
                c.step.as_str(),
                "create_configuration" | "delete_configuration"
            )
        }) {
            bail!(
                "ironic.clean_steps: raid.{} is not create_configuration or delete_configuration",
                step.step
            );
        }
        match (&node.target_raid_config, raid_steps.count()) {
            (Some(_), 0) => bail!("ironic.target_raid_config: add a raid clean step (create_configuration, delete_configuration) that uses it"),
            (None, n) if n > 0 => bail!("ironic.clean_steps: raid steps need ironic.target_raid_config"),
            (Some(t), _) => {
                if !matches!(node.driver, IronicDriver::Redfish | IronicDriver::Idrac) {
                    bail!("ironic.target_raid_config: RAID runs through the redfish or idrac hardware type's Redfish RAID interface");
                }
                let disks = t.get("logical_disks").and_then(|l| l.as_array());
                if disks.is_none_or(|a| a.is_empty()) {
                    bail!("ironic.target_raid_config.logical_disks: give at least one logical disk");
                }
                if self.machine.disk_gib.is_none() {
                    bail!("ironic.target_raid_config: volumes are made of the machine's drives; give machine.disk_gib");
                }
            }
            (None, _) => {}
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

/// Each inspect interface the node names, against its hardware type and
/// deploy interface.
fn validate_ironic_inspection(node: &IronicNode) -> Result<()> {
    for (i, how) in node.inspect.iter().enumerate() {
        match how.as_str() {
            "redfish" if node.driver == IronicDriver::Ipmi => {
                bail!("ironic.inspect[{i}]: redfish inspection needs the redfish hardware type")
            }
            "agent" if node.deploy_interface != DeployInterface::Direct => {
                bail!("ironic.inspect[{i}]: agent inspection boots the agent (deploy_interface = \"direct\")")
            }
            "idrac-redfish" if node.driver != IronicDriver::Idrac => {
                bail!("ironic.inspect[{i}]: idrac-redfish inspection needs the idrac hardware type")
            }
            "ilo" if node.driver != IronicDriver::Ilo5 => {
                bail!("ironic.inspect[{i}]: ilo inspection needs the ilo5 hardware type")
            }
            "redfish" if node.driver == IronicDriver::Ilo5 => {
                bail!("ironic.inspect[{i}]: the ilo5 hardware type inspects through \"ilo\"")
            }
            "redfish" | "agent" | "idrac-redfish" | "ilo" => {}
            other => bail!(
                "ironic.inspect[{i}]: {other:?} is not \"redfish\", \"agent\" or \"idrac-redfish\""
            ),
        }
    }
    Ok(())
}

/// A boot interface the harness drives.
fn known_boot_interface(key: &str, name: &str) -> Result<()> {
    if !IRONIC_BOOT_INTERFACES.contains(&name) {
        bail!("{key}: {name:?} is not one of {IRONIC_BOOT_INTERFACES:?}");
    }
    Ok(())
}

/// The `redfish-*` boot interfaces need the redfish hardware type.
fn redfish_type_only(node: &IronicNode, key: &str, name: &str) -> Result<()> {
    if node.driver == IronicDriver::Ipmi && name.starts_with("redfish-") {
        bail!("{key}: {name:?} needs the redfish hardware type (ironic.driver = \"redfish\")");
    }
    Ok(())
}

/// The instance_info a deploy needs: the direct deploy an image and its
/// checksum, the ramdisk deploy an ISO or a kernel and ramdisk.
fn instance_info(direct: bool, key: &str, i: &BTreeMap<String, String>) -> Result<()> {
    if direct {
        if !i.contains_key("image_source") {
            bail!("{key}: the direct deploy needs image_source (the image the agent writes)");
        }
        if !["image_checksum", "image_os_hash_value"]
            .iter()
            .any(|k| i.contains_key(*k))
        {
            bail!("{key}: Ironic needs the image's checksum (image_checksum or image_os_hash_algo and image_os_hash_value)");
        }
    } else if !(i.contains_key("boot_iso") || i.contains_key("kernel") && i.contains_key("ramdisk"))
    {
        bail!("{key}: the ramdisk deploy needs boot_iso, or kernel and ramdisk");
    }
    Ok(())
}
