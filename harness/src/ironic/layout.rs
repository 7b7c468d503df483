//! Where one Ironic keeps its state and what it serves (`Layout`, with
//! the agent's settings), the ironic.conf written from it, and the values
//! rendered against it (driver_info, instance_info, `deploy` arguments).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

/// Where one Ironic keeps its state, and what it serves.
pub struct Layout {
    /// `<case>/ironic`: config, database, logs, DHCP folders.
    pub dir: PathBuf,
    /// The case's boot folder: `[deploy] http_root` and `[pxe] tftp_root`.
    pub www: PathBuf,
    /// `[deploy] http_url`: the boot server on the machine's network.
    pub http_url: String,
    /// `webserver_verify_ca`: the CA Ironic checks an `https://` image
    /// server against (the run's test CA, for `[https]` scenarios).
    pub verify_ca: Option<PathBuf>,
    /// `[pxe] tftp_server`: the host's address on the machine's network.
    pub tftp_server: String,
    /// The API's port on the namespace's loopback.
    pub api_port: u16,
    /// Where socat serves a node's console (`ipmi_terminal_port`), on the
    /// namespace's loopback.
    pub console_port: u16,
    /// The agent (the `direct` deploy), when the case's node deploys
    /// through it.
    pub agent: Option<Agent>,
    /// Ironic 35 with HPE's `ilo5` hardware type enabled (its iLO power,
    /// ilo5 management and `ilo-virtual-media` boot, over proliantutils).
    pub ilo: bool,
    /// An htpasswd file (bcrypt): the API asks for HTTP Basic credentials
    /// (`auth_strategy = http_basic`, as Bifrost and metal3 run it).
    pub basic_auth: Option<PathBuf>,
    /// `[conductor] sync_power_state_interval` (Ironic's default, 120 s,
    /// when unset).
    pub power_sync_secs: Option<u64>,
}

/// What a case whose node deploys through ironic-python-agent sets.
pub struct Agent {
    /// `[service_catalog] endpoint_override`: the API as the machine
    /// reaches it on its network (`ipa-api-url` on the agent's command
    /// line).
    pub api_url: String,
    /// Automated cleaning (metadata erase only).
    pub cleaning: bool,
    /// `[conductor] deploy_callback_timeout` and `clean_callback_timeout`.
    pub callback_timeout: u64,
}

impl Layout {
    pub fn hostsdir(&self) -> PathBuf {
        self.dir.join("dhcp-hosts")
    }
    pub fn optsdir(&self) -> PathBuf {
        self.dir.join("dhcp-opts")
    }

    /// The DHCP provider's folders, which dnsmasq reads.
    pub fn create_dhcp_dirs(&self) -> Result<()> {
        for d in [self.hostsdir(), self.optsdir()] {
            std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
        }
        Ok(())
    }

    /// What the network's dnsmasq needs to read Ironic's DHCP folders and
    /// to tell iPXE's requests (option 175, user class iPXE) apart.
    pub fn dnsmasq_options(&self) -> Vec<String> {
        vec![
            format!("dhcp-hostsdir={}", self.hostsdir().display()),
            format!("dhcp-optsdir={}", self.optsdir().display()),
            "dhcp-match=set:ipxe,175".into(),
            "dhcp-userclass=set:ipxe6,iPXE".into(),
        ]
    }

    /// The grub configuration Ironic writes into the ISOs it builds for
    /// the agent (`[DEFAULT] grub_config_template`): its default names
    /// `linuxefi`, a command of distributions' patched grub only; the
    /// agent ramdisk's ESP (vm-images/ipa-ramdisk.sh) runs upstream grub.
    pub fn grub_template(&self) -> PathBuf {
        self.dir.join("grub.cfg.template")
    }

    /// ironic.conf.
    pub fn config(&self) -> String {
        self.service_config() + &self.boot_config()
    }

    /// ironic.conf up to `[deploy]`: the service itself, its hardware
    /// types and interfaces, API, database and conductor.
    fn service_config(&self) -> String {
        let d = self.dir.display();
        let verify = match &self.verify_ca {
            Some(ca) => format!(
                "# What Ironic downloads from https:// servers is checked against this CA.\nwebserver_verify_ca = {}\n",
                ca.display()
            ),
            None => String::new(),
        };
        let (deploy_ifaces, host_ip) = match &self.agent {
            Some(_) => (
                "ramdisk,direct",
                // The agent calls the API over the machine's network; the
                // namespace has no other.
                "0.0.0.0",
            ),
            None => ("ramdisk", "127.0.0.1"),
        };
        let (clean, callback) = match &self.agent {
            Some(a) => (a.cleaning, a.callback_timeout),
            None => (false, 1800),
        };
        let grub = self.grub_template();
        let (ilo_types, ilo_boot, ilo_power, ilo_mgmt) = match self.ilo {
            true => (",ilo5", ",ilo-virtual-media", ",ilo", ",ilo5"),
            false => ("", "", "", ""),
        };
        // iLO's own inspection (proliantutils' essential properties and
        // server capabilities).
        let ilo_inspect = if self.ilo { ",ilo" } else { "" };
        format!(
            "# Written by shoal-harness for one case: standalone Ironic, no auth, no RPC bus.
[DEFAULT]
{auth}
rpc_transport = none
host = shoal-ironic
debug = true
log_file = {d}/ironic.log
tempdir = {d}/tmp
enabled_hardware_types = redfish,ipmi,idrac{ilo_types}
enabled_boot_interfaces = redfish-https,redfish-virtual-media,idrac-redfish-virtual-media,http,http-ipxe,pxe,ipxe{ilo_boot}
enabled_deploy_interfaces = {deploy_ifaces}
default_deploy_interface = ramdisk
grub_config_template = {grub}
enabled_power_interfaces = redfish,ipmitool,idrac-redfish{ilo_power}
enabled_management_interfaces = redfish,ipmitool,idrac-redfish{ilo_mgmt}
enabled_inspect_interfaces = no-inspect,redfish,agent,idrac-redfish{ilo_inspect}
enabled_network_interfaces = noop
enabled_raid_interfaces = no-raid,redfish,idrac-redfish
enabled_vendor_interfaces = no-vendor,redfish
default_vendor_interface = no-vendor
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console,ipmitool-socat
enabled_firmware_interfaces = no-firmware,redfish
default_firmware_interface = no-firmware
{verify}
[api]
host_ip = {host_ip}
port = {port}
# The agent heartbeats at a third to a half of this: steps start sooner.
ramdisk_heartbeat_timeout = 60

[database]
connection = sqlite:///{d}/ironic.sqlite

[conductor]
automated_clean = {clean}
deploy_callback_timeout = {callback}
clean_callback_timeout = {callback}
# How often timeouts are checked (60 s by default).
check_provision_state_interval = 5
# The deploy ramdisk powers the machine off when it is done; Ironic is to
# record that, not to power it on again.
force_power_state_during_sync = false
{power_sync}

",
            grub = grub.display(),
            auth = match &self.basic_auth {
                Some(f) => format!(
                    "auth_strategy = http_basic\nhttp_basic_auth_user_file = {}",
                    f.display()
                ),
                None => "auth_strategy = noauth".into(),
            },
            power_sync = match self.power_sync_secs {
                Some(n) => format!("# How often the power states of all nodes are read.\nsync_power_state_interval = {n}"),
                None => String::new(),
            },
            port = self.api_port,
        )
    }

    /// ironic.conf from `[deploy]` on: where boot files are served from
    /// and written to, the console, IPMI, Redfish and DHCP settings, and
    /// the agent's sections.
    fn boot_config(&self) -> String {
        let d = self.dir.display();
        let www = self.www.display();
        let agent = match &self.agent {
            Some(a) => format!(
                "
[service_catalog]
# ipa-api-url: the API as the machine reaches it.
endpoint_override = {api}

[agent]
image_download_source = http
# What the agent logged, as a tarball per deploy and cleaning.
deploy_logs_collect = always
deploy_logs_storage_backend = local
deploy_logs_local_path = {d}/agent-logs
",
                api = a.api_url,
            ),
            None => String::new(),
        };
        // Ironic's iLO drivers keep what they make (and look for what
        // they clean up) on the boot server, not in Swift: there is none.
        let ilo_section = if self.ilo {
            "\n[ilo]\nuse_web_server_for_images = true\n"
        } else {
            ""
        };
        // The agent's kernel logs to the serial port, where the harness
        // reads it (booted through pxe or redfish interfaces alike).
        let agent_append = match &self.agent {
            Some(_) => "kernel_append_params = console=ttyS0,115200\n",
            None => "",
        };
        format!(
            "[deploy]
http_url = {http_url}
http_root = {www}
# Ironic's image caches, beside the case's files (never /var/lib/ironic).
iso_master_path = {d}/master-iso
# Cleaning erases partition tables and file system signatures only.
erase_devices_priority = 0
erase_devices_metadata_priority = 10

[pxe]
# The http interface writes its boot files under tftp_root but looks for
# them under http_root: one folder serves both. (An empty tftp_master_path,
# documented to switch the cache off, fails deploys with a TypeError in
# image_cache._free_disk_space_for in Ironic 39.0.0.)
tftp_root = {www}
tftp_master_path = {d}/master-tftp
instance_master_path = {d}/master-instance
images_path = {d}/images
tftp_server = {tftp}
{agent_append}
[console]
# socat listens here for a node's console (the ipmitool-socat interface).
socat_address = 127.0.0.1
terminal_pid_dir = {d}/console

[ipmi]
# ipmitool's pause between two commands to one BMC (5 s by default, for
# BMCs that drop commands that come too fast); this one does not.
min_command_interval = 1

[redfish]
# How often RAID jobs are polled, and failed ones looked for (60 s each by
# default: a minute of nothing per volume change).
raid_config_status_interval = 5
raid_config_fail_interval = 5
# Firmware updates (the redfish firmware interface), at a test's pace:
# tasks polled every 2 s rather than 60; two good reads of System, Manager,
# Chassis and NetworkAdapters 2 s apart rather than three 30 s apart;
# a BMC's new version looked for every 5 s; reboots wait up to 120 s.
firmware_update_status_interval = 2
firmware_update_fail_interval = 5
firmware_update_required_successes = 2
firmware_update_validation_interval = 2
firmware_update_resource_validation_timeout = 120
firmware_update_bmc_version_check_interval = 5
firmware_update_reboot_delay = 120
firmware_update_nic_starting_wait = 5
firmware_update_overall_timeout = 1200
{agent_append}
[dhcp]
dhcp_provider = dnsmasq

[dnsmasq]
dhcp_hostsdir = {d}/dhcp-hosts
dhcp_optsdir = {d}/dhcp-opts
dhcp_leasefile = {d}/dhcp-leases

[oslo_concurrency]
lock_path = {d}/locks
{ilo_section}{agent}",
            http_url = self.http_url,
            tftp = self.tftp_server,
        )
    }
}

/// Renders a driver_info or instance_info value: `{http}` is Ironic's
/// `[deploy] http_url`; `{sha256:NAME}` the SHA-256 (hex) of the served
/// file NAME, as an image's checksum is given to Ironic.
pub fn render(value: &str, layout: &Layout) -> Result<String> {
    let mut out = value.replace("{http}", &layout.http_url);
    const SHA: &str = "{sha256:";
    while let Some(start) = out.find(SHA) {
        let end = out[start..]
            .find('}')
            .map(|e| start + e)
            .ok_or_else(|| anyhow!("{value:?}: {SHA} without its closing brace"))?;
        let file = layout.www.join(&out[start + SHA.len()..end]);
        let bytes =
            std::fs::read(&file).with_context(|| format!("{value:?}: {}", file.display()))?;
        use sha2::Digest;
        out.replace_range(start..=end, &hex::encode(sha2::Sha256::digest(&bytes)));
    }
    Ok(out)
}

/// Renders every string inside `value` (a clean step's arguments).
pub fn render_json(value: &mut serde_json::Value, layout: &Layout) -> Result<()> {
    match value {
        serde_json::Value::String(s) => *s = render(s, layout)?,
        serde_json::Value::Array(a) => {
            for v in a {
                render_json(v, layout)?;
            }
        }
        serde_json::Value::Object(o) => {
            for v in o.values_mut() {
                render_json(v, layout)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `ironic_node.py deploy` for node `name` with `instance` (rendered).
pub fn deploy_args(
    name: &str,
    instance: &BTreeMap<String, String>,
    l: &Layout,
) -> Result<Vec<String>> {
    let mut args = vec!["deploy".to_string(), "--name".into(), name.to_string()];
    for (k, v) in instance {
        args.extend(["--instance".into(), format!("{k}={}", render(v, l)?)]);
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            dir: "/a/ironic".into(),
            www: "/a/www".into(),
            http_url: "http://198.18.3.1:8080".into(),
            verify_ca: None,
            tftp_server: "198.18.3.1".into(),
            api_port: 16003,
            console_port: 18003,
            agent: None,
            ilo: false,
            basic_auth: None,
            power_sync_secs: None,
        }
    }

    #[test]
    fn the_config_wires_dhcp_http_and_tftp_to_the_case() {
        let l = layout();
        let c = l.config();
        for want in [
            "port = 16003",
            "connection = sqlite:////a/ironic/ironic.sqlite",
            "http_url = http://198.18.3.1:8080",
            "http_root = /a/www",
            "tftp_root = /a/www",
            "dhcp_provider = dnsmasq",
            "dhcp_optsdir = /a/ironic/dhcp-opts",
            "automated_clean = false",
            "enabled_deploy_interfaces = ramdisk",
            "enabled_hardware_types = redfish,ipmi",
            "enabled_power_interfaces = redfish,ipmitool",
        ] {
            assert!(c.contains(want), "{want} missing from\n{c}");
        }
        let d = l.dnsmasq_options();
        assert!(d.contains(&"dhcp-hostsdir=/a/ironic/dhcp-hosts".to_string()));
        assert!(d.contains(&"dhcp-optsdir=/a/ironic/dhcp-opts".to_string()));
        assert_eq!(
            render("{http}/deploy.iso", &l).unwrap(),
            "http://198.18.3.1:8080/deploy.iso"
        );
        // Only the loopback without the agent, whose ramdisk is elsewhere.
        assert!(c.contains("host_ip = 127.0.0.1"), "{c}");
        assert!(!c.contains("endpoint_override"), "{c}");
    }

    #[test]
    fn the_agent_reaches_the_api_on_the_machines_network() {
        let mut l = layout();
        l.agent = Some(Agent {
            api_url: "http://198.18.3.1:16003".into(),
            cleaning: true,
            callback_timeout: 90,
        });
        let c = l.config();
        for want in [
            "enabled_deploy_interfaces = ramdisk,direct",
            "host_ip = 0.0.0.0",
            "endpoint_override = http://198.18.3.1:16003",
            "automated_clean = true",
            "deploy_callback_timeout = 90",
            "clean_callback_timeout = 90",
            "erase_devices_priority = 0",
            "image_download_source = http",
            "deploy_logs_local_path = /a/ironic/agent-logs",
            "grub_config_template = /a/ironic/grub.cfg.template",
        ] {
            assert!(c.contains(want), "{want} missing from\n{c}");
        }
        // Both interfaces that boot the agent's kernel give it the serial
        // console: [pxe] and [redfish].
        assert_eq!(
            c.matches("kernel_append_params = console=ttyS0,115200")
                .count(),
            2,
            "{c}"
        );
        // Each option once: oslo.config takes the last of a repeated one.
        let mut seen = std::collections::BTreeSet::new();
        let mut section = String::new();
        for line in c.lines() {
            if line.starts_with('[') {
                section = line.to_string();
            } else if let Some((k, _)) = line.split_once(" = ") {
                assert!(
                    seen.insert(format!("{section}{k}")),
                    "{section} {k} twice in\n{c}"
                );
            }
        }
    }

    #[test]
    fn the_ilo5_hardware_type_is_enabled_only_for_ironic_35() {
        let mut l = layout();
        assert!(!l.config().contains("ilo"), "Ironic 39 has no iLO types");
        l.ilo = true;
        let c = l.config();
        for want in [
            "enabled_hardware_types = redfish,ipmi,idrac,ilo5\n",
            "ipxe,ilo-virtual-media\n",
            "enabled_power_interfaces = redfish,ipmitool,idrac-redfish,ilo\n",
            "enabled_management_interfaces = redfish,ipmitool,idrac-redfish,ilo5\n",
            "enabled_inspect_interfaces = no-inspect,redfish,agent,idrac-redfish,ilo\n",
            "[ilo]\nuse_web_server_for_images = true\n",
        ] {
            assert!(c.contains(want), "{want:?} missing from\n{c}");
        }
    }

    #[test]
    fn an_image_checksum_is_the_served_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = layout();
        l.www = dir.path().to_path_buf();
        std::fs::write(dir.path().join("disk.raw"), b"abc").unwrap();
        assert_eq!(
            render("{sha256:disk.raw}", &l).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let e = render("{sha256:gone.raw}", &l).unwrap_err();
        assert!(format!("{e:#}").contains("gone.raw"), "{e:#}");
        assert!(render("{sha256:disk.raw", &l).is_err());
    }

    #[test]
    fn an_https_image_server_is_checked_against_the_run_ca() {
        let mut l = layout();
        assert!(!l.config().contains("webserver_verify_ca"));
        l.verify_ca = Some("/a/tls/run-ca.pem".into());
        let c = l.config();
        let at = c.find("webserver_verify_ca = /a/tls/run-ca.pem").unwrap();
        // It is a [DEFAULT] option: before the first other section.
        assert!(at < c.find("[api]").unwrap(), "{c}");
    }
}
