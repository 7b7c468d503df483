//! A confined lab for real-VM tests: a network namespace of its own with a
//! libvirtd and virtlogd inside, an isolated libvirt network (no forward,
//! DHCP on 198.18.0.0/24), a boot file server bound inside the namespace,
//! and UEFI domains whose serial port goes to a file. Everything started
//! here is stopped on drop (domains destroyed, network removed, daemons
//! killed by pid, namespace deleted). When the test failed, the folder
//! with the serial, HTTP, libvirtd logs and domain XML is kept and its path
//! printed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use virt::connect::Connect;

use crate::common::required;

pub const HOST: &str = "198.18.0.1";
pub const PORT: u16 = 8080;
pub const SYSTEM_URI: &str = "qemu:///system";

pub struct Lab {
    pub ns: String,
    pub dir: Option<tempfile::TempDir>,
    pub www: PathBuf,
    daemons: Vec<Child>,
    conn: Option<Connect>,
    network: String,
    domains: Vec<String>,
}

/// Everything the lab needs from the host; `None` (after a loud skip) or a
/// panic in CI when something is missing.
pub fn host_ready() -> bool {
    [
        ("/usr/sbin/libvirtd", "libvirt-daemon-system"),
        ("/usr/sbin/virtlogd", "libvirt-daemon-system"),
        ("/usr/bin/qemu-system-x86_64", "qemu-system-x86"),
        ("/usr/sbin/dnsmasq", "dnsmasq-base"),
        ("/usr/share/OVMF/OVMF_CODE_4M.fd", "ovmf"),
        ("/usr/bin/grub-mkstandalone", "grub-efi-amd64-bin"),
        ("/usr/bin/grub-mkrescue", "grub-common"),
        ("/usr/bin/xorriso", "xorriso"),
    ]
    .iter()
    .all(|(p, pkg)| required(*p, &format!("Debian package {pkg}")).is_some())
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A boot artifact from `vm-images/grub-marker.sh`, cached by the hash of
/// the recipe and its arguments under `$SHOAL_CACHE/images`.
pub fn marker_image(kind: &str, marker: &str) -> PathBuf {
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vm-images/grub-marker.sh");
    let mut h = Sha256::new();
    h.update(std::fs::read(&recipe).unwrap());
    h.update(kind.as_bytes());
    h.update(marker.as_bytes());
    let key = hex::encode(&h.finalize()[..8]);
    let cache =
        PathBuf::from(std::env::var("SHOAL_CACHE").unwrap_or_else(|_| "/var/cache/shoal".into()));
    let out = cache
        .join("images")
        .join(key)
        .join(format!("marker.{kind}"));
    if !out.exists() {
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        eprintln!("building {} ({kind}, marker {marker})", out.display());
        run(Command::new("bash")
            .arg(&recipe)
            .arg(kind)
            .arg(&out)
            .arg(marker));
    }
    out
}

impl Lab {
    pub fn start() -> Lab {
        assert!(
            !Path::new("/run/libvirt/libvirt-sock").exists()
                || Connect::open(Some(SYSTEM_URI)).is_err(),
            "a libvirtd already serves {SYSTEM_URI}; the lab needs its own (stop the other one)"
        );
        let dir = tempfile::Builder::new()
            .prefix("shoal-lab-")
            .tempdir()
            .unwrap();
        let tag = format!("{}", std::process::id() % 100_000);
        let ns = format!("shoal-lab-{tag}");
        run(Command::new("ip").args(["netns", "add", &ns]));
        run(Command::new("ip").args(["netns", "exec", &ns, "ip", "link", "set", "lo", "up"]));
        let mut lab = Lab {
            ns: ns.clone(),
            www: dir.path().join("www"),
            dir: Some(dir),
            daemons: Vec::new(),
            conn: None,
            network: format!("shoal-lab-{tag}"),
            domains: Vec::new(),
        };
        std::fs::create_dir_all(&lab.www).unwrap();
        for (daemon, log) in [
            ("/usr/sbin/virtlogd", "virtlogd.log"),
            ("/usr/sbin/libvirtd", "libvirtd.log"),
        ] {
            let log = std::fs::File::create(lab.path(log)).unwrap();
            let child = Command::new("ip")
                .args(["netns", "exec", &ns, daemon])
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            lab.daemons.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        lab.conn = loop {
            if let Ok(c) = Connect::open(Some(SYSTEM_URI)) {
                break Some(c);
            }
            assert!(
                Instant::now() < deadline,
                "libvirtd did not come up; see {}",
                lab.path("libvirtd.log").display()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let bridge = format!("shoalbr{}", tag.chars().rev().take(5).collect::<String>());
        let net = format!(
            "<network><name>{}</name><bridge name='{bridge}' stp='off'/><ip address='{HOST}' netmask='255.255.255.0'><dhcp><range start='198.18.0.100' end='198.18.0.200'/></dhcp></ip></network>",
            lab.network
        );
        lab.conn()
            .create_network_xml(&net)
            .expect("isolated network");
        // The boot file server, bound inside the namespace only.
        let log = std::fs::File::create(lab.path("http.log")).unwrap();
        let http = Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns,
                "python3",
                "-u",
                "-m",
                "http.server",
                "--bind",
                HOST,
                &PORT.to_string(),
                "-d",
            ])
            .arg(&lab.www)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        lab.daemons.push(http);
        lab.wait_for(Duration::from_secs(10), "the boot file server", |l| {
            l.read("http.log").contains("Serving HTTP")
        });
        lab
    }

    pub fn conn(&self) -> &Connect {
        self.conn.as_ref().expect("connected")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.as_ref().expect("lab folder").path().join(name)
    }

    pub fn read(&self, name: &str) -> String {
        String::from_utf8_lossy(&std::fs::read(self.path(name)).unwrap_or_default()).into_owned()
    }

    /// Publishes a file on the boot server as `name`.
    pub fn serve(&self, from: &Path, name: &str) -> String {
        std::fs::copy(from, self.www.join(name)).unwrap();
        format!("http://{HOST}:{PORT}/{name}")
    }

    /// Defines a UEFI x86_64 domain (OVMF, 1 GiB, one NIC on the lab
    /// network without option ROM) whose serial port writes `<name>.serial`.
    pub fn define_uefi(&mut self, name: &str, mac: &str) -> String {
        let serial = self.path(&format!("{name}.serial"));
        let xml = format!(
            r#"<domain type="qemu"><name>{name}</name><memory unit="MiB">1024</memory><vcpu>1</vcpu>
  <os><type arch="x86_64" machine="q35">hvm</type>
    <loader readonly="yes" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    <nvram template="/usr/share/OVMF/OVMF_VARS_4M.fd">/var/lib/libvirt/qemu/nvram/{name}_VARS.fd</nvram></os>
  <features><acpi/></features><on_poweroff>destroy</on_poweroff>
  <devices>
    <interface type="network"><source network="{net}"/><model type="virtio"/><rom enabled="no"/><mac address="{mac}"/></interface>
    <serial type="file"><source path="{serial}"/><target port="0"/></serial>
    <console type="file"><source path="{serial}"/><target type="serial" port="0"/></console>
  </devices></domain>"#,
            net = self.network,
            serial = serial.display()
        );
        std::fs::write(self.path(&format!("{name}.xml")), &xml).unwrap();
        let d = self.conn().define_domain_xml(&xml).expect("define domain");
        self.domains.push(name.to_string());
        d.uuid_string().unwrap()
    }

    /// Polls until `cond` holds; panics with the artifact path at the deadline.
    pub fn wait_for(&self, limit: Duration, what: &str, cond: impl Fn(&Lab) -> bool) -> Duration {
        let start = Instant::now();
        while !cond(self) {
            assert!(
                start.elapsed() < limit,
                "timed out after {limit:?} waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        start.elapsed()
    }

    /// How many times the boot server answered `GET /name`.
    pub fn gets(&self, name: &str) -> usize {
        self.read("http.log")
            .matches(&format!("\"GET /{name} HTTP"))
            .count()
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.conn()
            .lookup_domain_by_name(name)
            .and_then(|d| d.is_active())
            .unwrap_or(false)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(c) = &self.conn {
            for name in &self.domains {
                if let Ok(d) = c.lookup_domain_by_name(name) {
                    let _ = d.destroy();
                    let _ = d.undefine_flags(virt::sys::VIR_DOMAIN_UNDEFINE_NVRAM);
                }
            }
            if let Ok(n) = c.lookup_network_by_name(&self.network) {
                let _ = n.destroy();
            }
        }
        drop(self.conn.take());
        for d in self.daemons.iter_mut().rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!("lab artifacts kept in {}", dir.keep().display());
            }
        }
    }
}
