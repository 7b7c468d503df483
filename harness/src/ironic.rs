//! OpenStack Ironic, standalone, for the `ironic` driver: one service per
//! case inside the lab's namespace (the single-process `ironic` command,
//! no authentication, no RPC bus, SQLite made by `ironic-dbsync`), the
//! `redfish` or `ipmi` hardware type (sushy against the BMC's Redfish,
//! ipmitool against its IPMI) with the `ramdisk` deploy interface, its dnsmasq
//! DHCP provider writing into folders that the case network's dnsmasq
//! reads, and `[deploy] http_root` (also `[pxe] tftp_root`) the case's
//! boot folder, served on the machine's network; the BMC, in the same
//! namespace, fetches virtual media from there too. The node is driven through the API by
//! `drivers/ironic_node.py` (python-ironicclient), also inside the
//! namespace; every response it acts on goes to `ironic-api.jsonl`.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

/// The venv's Python, from `--ironic-venv` or `$SHOAL_IRONIC_VENV`.
pub fn python(venv: Option<&Path>) -> Result<PathBuf> {
    let venv = venv.ok_or_else(|| {
        anyhow!("the ironic driver needs the Ironic venv (--ironic-venv or SHOAL_IRONIC_VENV; ci/test builds it)")
    })?;
    let py = venv.join("bin/python");
    if !py.exists() || !venv.join("bin/ironic").exists() {
        bail!(
            "{} is not an Ironic venv (no bin/ironic); ci/test --only venv builds one",
            venv.display()
        );
    }
    Ok(py)
}

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
        let d = self.dir.display();
        let www = self.www.display();
        let verify = match &self.verify_ca {
            Some(ca) => format!(
                "# What Ironic downloads from https:// servers is checked against this CA.\nwebserver_verify_ca = {}\n",
                ca.display()
            ),
            None => String::new(),
        };
        let (deploy_ifaces, host_ip, agent) = match &self.agent {
            Some(a) => (
                "ramdisk,direct",
                // The agent calls the API over the machine's network; the
                // namespace has no other.
                "0.0.0.0",
                format!(
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
            ),
            None => ("ramdisk", "127.0.0.1", String::new()),
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
enabled_vendor_interfaces = no-vendor
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console,ipmitool-socat
enabled_firmware_interfaces = no-firmware
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

[deploy]
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
            http_url = self.http_url,
            tftp = self.tftp_server,
        )
    }
}

/// Puts the database in write-ahead-log mode, which SQLite keeps in the
/// file. Ironic means to (`ironic.db.sqlalchemy` issues the PRAGMA as each
/// connection opens, so that the API reads while the conductor writes), but
/// its listener is registered on the `ConnectionEvents` class, which
/// SQLAlchemy 2.1 never calls: the database stays in rollback-journal
/// mode, where a writer locks out every reader, and a fleet of 1,000 nodes
/// logged over 30,000 "database is locked" errors.
fn wal(python: &Path, db: &Path) -> Result<()> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sqlite3, sys; \
             print(sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=WAL').fetchone()[0])",
        ])
        .arg(db)
        .output()
        .context("setting Ironic's database to WAL mode")?;
    let mode = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || mode.trim() != "wal" {
        bail!(
            "Ironic's database {} did not take WAL mode: {}{}",
            db.display(),
            mode.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `[DEFAULT] grub_config_template` (see `Layout::grub_template`): Ironic's
/// own, with upstream grub's `linux` and `initrd`, the serial console, no
/// wait, and first the search for the medium that holds the kernel (the
/// ESP's grub reads this file from the ISO with its own memory disk as
/// the root).
const GRUB_TEMPLATE: &str = "search --no-floppy --file --set=root {{ linux }}
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_output serial console
menuentry \"boot_partition\" {
linux {{ linux }} {{ kernel_params }} --
initrd {{ initrd }}
}
";

/// Whether `GET /v1` on the API's port inside `ns` answers 200.
fn api_answers(ns: &str, port: u16) -> bool {
    use std::io::{Read, Write};
    crate::netns::inside(ns, move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"GET /v1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head)?;
        Ok(head.ends_with(b"200"))
    })
    .unwrap_or(false)
}

/// The process groups of the Ironic services running now, for
/// `stop_all` (a run interrupted by a signal leaves without dropping them).
static RUNNING: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Stops every Ironic this process started and has not stopped yet (their
/// process groups: TERM, then KILL).
pub fn stop_all() {
    let groups = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|p| p.into_inner()));
    for g in &groups {
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory. Each group is one `Ironic::start` made
        // (`process_group(0)`: its id is the leader's pid) and whose leader
        // is not reaped yet (only the drop, which first takes it out of
        // RUNNING, waits for it), so the id still names that group.
        unsafe { libc::kill(-g, libc::SIGTERM) };
    }
    std::thread::sleep(Duration::from_secs(2));
    for g in &groups {
        // SAFETY: kill(2) touches no memory; the leaders are still not
        // reaped (nothing here waits for them), so the ids are still these
        // groups'.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
}

/// A running Ironic; stopped (its process group, which it started) on drop.
pub struct Ironic {
    child: Child,
    pub api: String,
    python: PathBuf,
    ns: String,
    dir: PathBuf,
}

impl Ironic {
    /// Writes the config, creates the database, starts the service in
    /// namespace `ns` and waits until its API answers.
    pub fn start(ns: &str, venv: Option<&Path>, layout: &Layout) -> Result<Ironic> {
        let python = python(venv)?;
        // The venv's bin/, where python() found `ironic` beside python.
        let bin = python.parent().unwrap_or(Path::new("/")).to_path_buf();
        let dir = &layout.dir;
        layout.create_dhcp_dirs()?;
        for d in [dir.join("locks"), dir.join("tmp")] {
            std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
        }
        std::fs::write(dir.join("dhcp-leases"), "")?;
        let conf = dir.join("ironic.conf");
        std::fs::write(&conf, layout.config())?;
        std::fs::write(layout.grub_template(), GRUB_TEMPLATE)?;
        // Ironic builds ISOs with `mkisofs`, a name Debian gives no
        // package; xorriso's mkisofs emulation answers to it.
        let shims = dir.join("bin");
        std::fs::create_dir_all(&shims)?;
        let mkisofs = shims.join("mkisofs");
        if !mkisofs.exists() {
            std::os::unix::fs::symlink("/usr/bin/xorrisofs", &mkisofs)?;
        }
        let path = format!(
            "{}:{}",
            shims.display(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into())
        );
        let out = Command::new(bin.join("ironic-dbsync"))
            .arg("--config-file")
            .arg(&conf)
            .arg("create_schema")
            .output()
            .context("running ironic-dbsync")?;
        std::fs::write(
            dir.join("dbsync.log"),
            [&out.stdout[..], &out.stderr].concat(),
        )?;
        if !out.status.success() {
            bail!(
                "ironic-dbsync create_schema failed; see {}",
                dir.join("dbsync.log").display()
            );
        }
        wal(&python, &dir.join("ironic.sqlite"))?;
        let log = std::fs::File::create(dir.join("ironic-stdout.log"))?;
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(bin.join("ironic"))
            .arg("--config-file")
            .arg(&conf)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: the service forks its workers, and
            // all of them are stopped together.
            .process_group(0)
            .spawn()
            .context("starting ironic")?;
        RUNNING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(child.id() as i32);
        let mut ironic = Ironic {
            child,
            api: format!("http://127.0.0.1:{}", layout.api_port),
            python,
            ns: ns.to_string(),
            dir: dir.clone(),
        };
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = ironic.child.try_wait() {
                bail!(
                    "ironic exited ({status}) while starting; see {} and {}",
                    dir.join("ironic.log").display(),
                    dir.join("ironic-stdout.log").display()
                );
            }
            // With credentials required, the public `/v1` says the API is
            // up (ironic_node.py talks without credentials).
            let up = match layout.basic_auth {
                Some(_) => api_answers(ns, layout.api_port),
                None => ironic.node(&["wait-api"], Duration::from_secs(30)).is_ok(),
            };
            if up {
                break;
            }
            if layout.basic_auth.is_some() {
                std::thread::sleep(Duration::from_millis(250));
            }
            if start.elapsed() > Duration::from_secs(90) {
                bail!(
                    "Ironic's API did not answer within 90 s; see {}",
                    dir.join("ironic.log").display()
                );
            }
        }
        Ok(ironic)
    }

    /// `ironic_node.py` inside the namespace, against this Ironic, with
    /// its deadline and API log; the action and its arguments follow.
    fn script(&self, limit: Duration) -> Command {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers/ironic_node.py");
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns])
            .arg(&self.python)
            .arg(script)
            .args(["--api", &self.api, "--timeout"])
            .arg(limit.as_secs().to_string())
            .arg("--log")
            .arg(self.dir.join("ironic-api.jsonl"));
        c
    }

    /// Runs `ironic_node.py ARGS` inside the namespace; its output lines
    /// go to `driver.log`. Returns stdout; an error carries Ironic's error
    /// (the `IRONIC-ERROR` line) when there is one.
    pub fn node<S: AsRef<str>>(&self, args: &[S], limit: Duration) -> Result<String> {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let out = self
            .script(limit)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .context("running drivers/ironic_node.py")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if args.first() != Some(&"wait-api") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join("driver.log"))?;
            writeln!(f, "$ ironic_node.py {}\n{stdout}{stderr}", args.join(" "))?;
        }
        if !out.status.success() {
            let err = stdout
                .lines()
                .find_map(|l| l.strip_prefix("IRONIC-ERROR "))
                .map(str::to_string);
            // Ironic's words first; the script's account (state, deadline)
            // stays in driver.log.
            return Err(match err {
                Some(e) => anyhow!("Ironic: {e}"),
                None => anyhow!("ironic_node.py {}: {}", args.join(" "), stderr.trim()),
            });
        }
        Ok(stdout)
    }
}

/// A running `ironic_node.py console`: the node's console copied into a
/// file; stopped (by its pid) when dropped.
pub struct ConsoleReader(Child);

impl Drop for ConsoleReader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Ironic {
    /// Copies what node `name`'s console (enabled at enrollment) shows
    /// into `out` (for at most `limit`), from when this returns.
    pub fn console(&self, name: &str, out: &Path, limit: Duration) -> Result<ConsoleReader> {
        use std::io::BufRead;
        let err = std::fs::File::create(self.dir.join("console-reader.log"))?;
        let mut child = self
            .script(limit)
            .args(["console", "--name", name, "--out"])
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .context("running drivers/ironic_node.py console")?;
        let stdout = child.stdout.take().context("the reader's stdout")?;
        let reader = ConsoleReader(child);
        // The script connects within its own deadlines (60 s, 30 s), or
        // exits: either way this line read ends.
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        if !line.starts_with("IRONIC-CONSOLE ") {
            bail!(
                "the node's console did not open: {}; see {}",
                line.trim(),
                self.dir.join("console-reader.log").display()
            );
        }
        Ok(reader)
    }
}

impl Drop for Ironic {
    fn drop(&mut self) {
        // SIGTERM to the group first: the service stops its workers.
        let pgid = self.child.id() as i32;
        RUNNING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|g| *g != pgid);
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory. `pgid` is the group `start` made with the child
        // as its leader (`process_group(0)`), and the child is not reaped
        // yet (`wait` comes below), so the id cannot have been reused.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut exited = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever of the group is left. Once the leader is reaped, the
        // group id is still ours only while a member lives (kill 0 says).
        // SAFETY: kill(2) touches no memory. If the leader is not reaped,
        // the id is still ours (as above); once it is, signal 0 first
        // checks that a member of the group lives, which keeps the id from
        // being reused, before the KILL goes to it.
        unsafe {
            if !exited || libc::kill(-pgid, 0) == 0 {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
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

    #[test]
    fn without_a_venv_the_driver_says_how_to_get_one() {
        let e = python(None).unwrap_err().to_string();
        assert!(e.contains("SHOAL_IRONIC_VENV"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = python(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("not an Ironic venv"), "{e}");
    }
}
