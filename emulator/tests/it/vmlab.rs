//! The real-VM tests' bench: the harness's lab (own network namespace,
//! libvirtd, isolated network, boot file server) with one network and one
//! boot folder, plus the checks the tests make on serial and HTTP logs.
//! When a test fails, the folder with the serial, HTTP and libvirtd logs and
//! the domain XML is kept and its path printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shoal_harness::lab::{self, Lab, Net, NetSpec};

pub use shoal_harness::images::grub_marker as marker_image;
pub use shoal_harness::lab::SYSTEM_URI;

/// Whether this host can run VMs: a loud skip on a developer's machine,
/// a failure in CI.
pub fn host_ready() -> bool {
    let missing = lab::missing();
    if missing.is_empty() {
        return true;
    }
    let why = format!("real-VM test needs: {} (run ci/test)", missing.join(", "));
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("SKIPPED: {why}");
    false
}

pub struct Bench {
    pub lab: Option<Lab>,
    dir: Option<tempfile::TempDir>,
    pub net: Net,
    pub www: PathBuf,
}

impl Bench {
    /// A lab with one plain-DHCP network and its boot server.
    pub fn start() -> Bench {
        let dir = tempfile::Builder::new()
            .prefix("shoal-lab-")
            .tempdir()
            .unwrap();
        let mut lab = Lab::start(dir.path()).expect("lab");
        let net = lab.network(1, &NetSpec::default()).expect("network");
        let www = dir.path().join("www");
        std::fs::create_dir_all(&www).unwrap();
        lab.file_server(&net, &www, &dir.path().join("http.log"), None)
            .expect("boot server");
        Bench {
            lab: Some(lab),
            dir: Some(dir),
            net,
            www,
        }
    }

    pub fn lab(&mut self) -> &mut Lab {
        self.lab.as_mut().expect("lab")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.as_ref().expect("folder").path().join(name)
    }

    pub fn read(&self, name: &str) -> String {
        String::from_utf8_lossy(&std::fs::read(self.path(name)).unwrap_or_default()).into_owned()
    }

    /// Publishes a file on the boot server as `name`; its URL.
    pub fn serve(&self, from: &Path, name: &str) -> String {
        std::fs::copy(from, self.www.join(name)).unwrap();
        format!("{}/{name}", self.net.boot_url())
    }

    pub fn define_uefi(&mut self, name: &str, mac: &str) -> String {
        let serial = self.path(&format!("{name}.serial"));
        let net = self.net.clone();
        self.lab()
            .define_uefi(&lab::Uefi {
                name,
                net: &net,
                mac,
                memory_mib: 1024,
                cpus: 1,
                serial: &serial,
                https_cacerts: None,
                disk: None,
            })
            .expect("domain")
    }

    /// Polls until `cond` holds; panics at the deadline.
    pub fn wait_for(&self, limit: Duration, what: &str, cond: impl Fn(&Bench) -> bool) -> Duration {
        lab::wait_until(limit, || cond(self))
            .unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
    }

    /// How many times the boot server answered `GET /name` with 200.
    pub fn gets(&self, name: &str) -> usize {
        let needle = format!("GET /{name} 200 ");
        self.read("http.log")
            .lines()
            .filter(|l| l.starts_with(&needle))
            .count()
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.lab.as_ref().is_some_and(|l| l.is_running(name))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        drop(self.lab.take());
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!("lab artifacts kept in {}", dir.keep().display());
            }
        }
    }
}
