//! The ppc64le netboot image on real machines (QEMU, TCG): pseries, and
//! powernv9 (OPAL firmware, skiboot, with a PCIe e1000e NIC). It takes DHCP,
//! finds its pxelinux configuration by the MAC probe over TFTP, and kexecs
//! the payload kernel with the label's arguments and BOOTIF.
//!
//! QEMU's own user-mode network serves DHCP and TFTP here (it sends no
//! options 209/210; those run in the harness's scenarios), inside a network
//! namespace made for the test with nothing but loopback in it, so no
//! packet can leave the machine.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shoal_harness::images;

const MAC: &str = "52:54:00:5e:0c:01";

/// A host capability the test needs: missing, a loud skip on a developer's
/// machine and a failure in CI (`CI` set), as in the emulator's tests.
fn required(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{why}");
    }
    eprintln!("SKIPPED: {why}");
    false
}

/// A network namespace with only loopback, deleted on drop.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        let name = format!("shoal-ppc-{}", std::process::id());
        let ip = |args: &[&str]| {
            let ok = Command::new("ip").args(args).status().map(|s| s.success());
            assert!(matches!(ok, Ok(true)), "ip {}", args.join(" "));
        };
        ip(&["netns", "add", &name]);
        ip(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .status();
    }
}

fn build(kind: &str, name: &str) -> PathBuf {
    images::build("ppc64le-netboot.sh", &[kind], name)
        .unwrap_or_else(|e| panic!("building the ppc64le {kind}: {e:#}"))
}

#[test]
fn petitboot_discovery_kexecs_the_payload_on_pseries() {
    netboot(&["-M", "pseries", "-nodefaults"], "spapr-vlan", "pseries");
}

#[test]
fn petitboot_discovery_kexecs_the_payload_on_powernv9() {
    // powernv's PCIe host bridges are defaults: no -nodefaults here.
    netboot(&["-M", "powernv9"], "e1000e", "powernv9");
}

/// Boots the netboot image on `machine` with a `nic` on QEMU's user-mode
/// network and checks the discovery and the payload on the serial port.
fn netboot(machine: &[&str], nic: &str, what: &str) {
    let qemu = Path::new("/usr/bin/qemu-system-ppc64");
    if !required(
        qemu.exists(),
        "qemu-system-ppc64 is missing (qemu-system-ppc from bookworm-backports; run ci/test)",
    ) || !required(
        // SAFETY: geteuid(2) takes nothing, touches no memory, cannot fail.
        unsafe { libc::geteuid() } == 0,
        "the ppc64le netboot test runs QEMU in a network namespace of its own: run it as root",
    ) {
        return;
    }
    let kernel = build("kernel", "vmlinux");
    let netboot = build("netboot", "netboot.cpio.gz");
    let payload = build("payload", "payload.cpio.gz");

    // The TFTP root, laid out as Ironic's pxe interface does for a node.
    let tmp = tempfile::tempdir().unwrap();
    let tftp = tmp.path().join("tftp");
    std::fs::create_dir_all(tftp.join("pxelinux.cfg")).unwrap();
    std::fs::create_dir_all(tftp.join("node-1")).unwrap();
    std::fs::copy(&kernel, tftp.join("node-1/deploy_kernel")).unwrap();
    std::fs::copy(&payload, tftp.join("node-1/deploy_ramdisk")).unwrap();
    std::fs::write(
        tftp.join(format!("pxelinux.cfg/01-{}", MAC.replace(':', "-"))),
        "default deploy\n\nlabel deploy\nkernel node-1/deploy_kernel\nappend initrd=node-1/deploy_ramdisk console=hvc0 shoal.deploy=1\nipappend 2\n",
    )
    .unwrap();
    // A default config that would boot something else: the MAC file wins.
    std::fs::write(
        tftp.join("pxelinux.cfg/default"),
        "default x\nlabel x\nkernel nothing\n",
    )
    .unwrap();

    let ns = Netns::new();
    let serial = tmp.path().join("serial.log");
    let started = Instant::now();
    let mut child = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(qemu)
        .args(machine)
        .args(["-accel", "tcg", "-m", "2048", "-nographic"])
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .args(["-monitor", "none", "-kernel"])
        .arg(&kernel)
        .arg("-initrd")
        .arg(&netboot)
        .args(["-append", images::PPC64LE_NETBOOT_CMDLINE, "-netdev"])
        .arg(format!("user,id=n0,tftp={}", tftp.display()))
        .args(["-device", &format!("{nic},netdev=n0,mac={MAC}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting qemu-system-ppc64");
    // The payload powers the machine off, which ends QEMU.
    let deadline = started + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let log = String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
    let elapsed = started.elapsed();
    let keep =
        std::env::temp_dir().join(format!("shoal-ppc64le-netboot-{}.log", std::process::id()));
    let context = || {
        let _ = std::fs::write(&keep, &log);
        format!(
            "after {elapsed:?} ({status:?}); serial log kept in {}; qemu: {stderr}",
            keep.display()
        )
    };
    let mac_dashes = MAC.replace(':', "-");
    let expected = [
        "SHOAL-NETBOOT".to_string(),
        "petitboot: DHCP lease 10.0.2.15".to_string(),
        format!("petitboot: config found: tftp://10.0.2.2/pxelinux.cfg/01-{mac_dashes}"),
        "petitboot: default label deploy".to_string(),
        "petitboot: kernel tftp://10.0.2.2/node-1/deploy_kernel".to_string(),
        "petitboot: initrd tftp://10.0.2.2/node-1/deploy_ramdisk".to_string(),
        // The memory set aside by the command line's crashkernel=.
        "petitboot: kexec window 0x10000000-0x17ffffff".to_string(),
        "petitboot: kexec -e".to_string(),
        "SHOAL-MARKER ppc64le-payload".to_string(),
        format!(
            "SHOAL-CMDLINE initrd=node-1/deploy_ramdisk console=hvc0 shoal.deploy=1 BOOTIF=01-{mac_dashes}"
        ),
    ];
    let mut at = 0;
    for want in &expected {
        match log[at..].find(want.as_str()) {
            Some(i) => at += i + want.len(),
            None => panic!(
                "{want:?} not found (in order) on the serial port, {}",
                context()
            ),
        }
    }
    assert!(
        !log.contains("config found: tftp://10.0.2.2/pxelinux.cfg/default"),
        "the MAC file must win over default, {}",
        context()
    );
    eprintln!("{what}: netboot to payload marker in {elapsed:.1?}");
}
