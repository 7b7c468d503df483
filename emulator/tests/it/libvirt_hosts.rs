//! One emulator in front of two hypervisors, each a libvirtd of its own in
//! a network namespace of its own (its state on private mounts, so it is
//! another host as far as libvirt can tell), reached over libvirt's remote
//! protocol across a point-to-point veth link.
//! - With libvirt's test driver (`test+tcp://`, each daemon serving its
//!   own node file): one daemon is killed, only its system answers 503,
//!   the other host's keeps working; started again, its system comes back
//!   without an emulator restart.
//! - With the QEMU driver (`qemu+tcp://`, each daemon with its own
//!   virtlogd): a real UEFI VM on each host boots a CD through the one BMC
//!   service (override `Cd` Once, Reset On): the first host's VM its own
//!   CD, the second's an image inserted as virtual media, which Shoal
//!   downloads and uploads into that host's storage pool. The first host
//!   has no pool, so virtual media there is refused naming it, and HTTP
//!   boot (Shoal writes the NVRAM option) is refused on both, naming the
//!   host.
//!
//! The times are printed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{call, required, Spawned};

/// A libvirtd "host": its namespace, its veth link and its daemon.
struct Host {
    ns: String,
    veth: String,
    addr: String,
    dir: PathBuf,
    daemon: Option<Child>,
    /// libvirt's QEMU driver (with a virtlogd of its own), not its test
    /// driver.
    qemu: bool,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Host {
    /// Host `n` (1, 2, ...) with one domain `hv<n>-vm` of UUID `uuid`.
    fn new(n: u8, uuid: &str, dir: &Path) -> Host {
        Self::make(n, uuid, dir, false)
    }

    /// Host `n` with libvirt's QEMU driver and no domain yet.
    fn qemu(n: u8, dir: &Path) -> Host {
        Self::make(n, "", dir, true)
    }

    fn make(n: u8, uuid: &str, dir: &Path, qemu: bool) -> Host {
        let tag = std::process::id() % 100_000;
        let (ns, veth, peer) = (
            format!("shoal-hv{n}-{tag}"),
            format!("shv{n}r{tag}"),
            format!("shv{n}p{tag}"),
        );
        let (near, addr) = (format!("10.231.{n}.1"), format!("10.231.{n}.2"));
        run(Command::new("ip").args(["netns", "add", &ns]));
        let host = Host {
            ns: ns.clone(),
            veth: veth.clone(),
            addr: addr.clone(),
            dir: dir.join(format!("hv{n}")),
            daemon: None,
            qemu,
        };
        run(Command::new("ip").args(["-n", &ns, "link", "set", "lo", "up"]));
        run(Command::new("ip").args(["link", "add", &veth, "type", "veth", "peer", "name", &peer]));
        run(Command::new("ip").args(["link", "set", &peer, "netns", &ns]));
        run(Command::new("ip").args(["addr", "add", &format!("{near}/30"), "dev", &veth]));
        run(Command::new("ip").args(["link", "set", &veth, "up"]));
        run(Command::new("ip").args([
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/30"),
            "dev",
            &peer,
        ]));
        run(Command::new("ip").args(["-n", &ns, "link", "set", &peer, "up"]));
        std::fs::create_dir_all(host.dir.join("run")).unwrap();
        std::fs::write(
            host.dir.join("node.xml"),
            format!(
                "<node>\n  <domain type='test'>\n    <name>hv{n}-vm</name>\n    \
                 <uuid>{uuid}</uuid>\n    <memory>1048576</memory>\n    <vcpu>1</vcpu>\n    \
                 <os><type>hvm</type></os>\n  </domain>\n</node>\n"
            ),
        )
        .unwrap();
        std::fs::write(
            host.dir.join("libvirtd.conf"),
            format!(
                "listen_tls = 0\nlisten_tcp = 1\nlisten_addr = \"{addr}\"\nauth_tcp = \"none\"\n\
                 unix_sock_dir = \"{run}\"\nlog_outputs = \"3:file:{log}\"\n",
                run = host.dir.join("run").display(),
                log = host.dir.join("libvirtd.log").display(),
            ),
        )
        .unwrap();
        host
    }

    /// The URI the emulator reaches this host's domains by.
    fn uri(&self) -> String {
        if self.qemu {
            return format!("qemu+tcp://{}/system", self.addr);
        }
        format!(
            "test+tcp://{}{}",
            self.addr,
            self.dir.join("node.xml").display()
        )
    }

    /// Starts the daemon, its libvirt state on private mounts, and waits
    /// until it accepts connections.
    fn start(&mut self) {
        let conf = self.dir.join("libvirtd.conf");
        let script = format!(
            // The mount points are made first: on a machine where no
            // libvirtd ever ran, /run/libvirt (and maybe the others) does
            // not exist yet, and no other test may be relied on to make it.
            "for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /etc/libvirt/qemu; do \
             mkdir -p $d && mount -t tmpfs shoal $d || exit 1; done && \
             {}exec /usr/sbin/libvirtd --listen -f {} -p {}",
            // The QEMU driver logs domains' consoles through virtlogd, at
            // its socket in this host's /run/libvirt.
            if self.qemu {
                format!(
                    "/usr/sbin/virtlogd -d -p {} && ",
                    self.virtlogd_pid().display()
                )
            } else {
                String::new()
            },
            conf.display(),
            self.dir.join("run/libvirtd.pid").display()
        );
        let out = std::fs::File::create(self.dir.join("daemon.out")).unwrap();
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "unshare",
                "-m",
                "--propagation",
                "private",
            ])
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start libvirtd");
        self.daemon = Some(child);
        let started = Instant::now();
        let target: std::net::SocketAddr = format!("{}:16509", self.addr).parse().unwrap();
        while std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "libvirtd in {} did not listen: {}",
                self.ns,
                std::fs::read_to_string(self.dir.join("daemon.out")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the daemon (as a crash would), by the pid this test started.
    fn kill(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Where this host's virtlogd (QEMU driver) writes its pid.
    fn virtlogd_pid(&self) -> PathBuf {
        self.dir.join("run/virtlogd.pid")
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if self.qemu && self.daemon.is_some() {
            // Its VMs outlive a killed daemon: stopped first, then the
            // daemon, then its virtlogd (started here, by its pidfile).
            let _ = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for d in $(virsh -q -c {u} list --name); do virsh -q -c {u} destroy $d; done",
                    u = self.uri()
                ))
                .status();
        }
        self.kill();
        if let Some(pid) = std::fs::read_to_string(self.virtlogd_pid())
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .status();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

fn status(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-D",
            "-",
            "-w",
            "%{http_code}",
            url,
        ])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = text
        .rsplit('\n')
        .next()
        .unwrap_or("")
        .trim()
        .parse()
        .unwrap_or(0);
    (code, text)
}

/// Polls `url` until it answers `want`; the time it took.
fn until(url: &str, want: u16, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (code, _) = status(url);
        if code == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{url} still answers {code}, not {want}, after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_vm_on_each_of_two_qemu_hosts_boots_through_one_bmc_service() {
    if !crate::vmlab::host_ready() {
        return;
    }
    const VM: [&str; 2] = [
        "5a0b0c0d-0000-4000-8000-00000000b001",
        "5a0b0c0d-0000-4000-8000-00000000b002",
    ];
    let dir = tempfile::tempdir().unwrap();
    // QEMU (as libvirt-qemu) opens the CD images here.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Hosts 3 and 4: their links' addresses differ from the test driver's
    // hosts (1 and 2), whose test may run at the same time.
    let mut hosts = [Host::qemu(3, dir.path()), Host::qemu(4, dir.path())];
    let mut serials = Vec::new();
    let mut served = Vec::new();
    for (i, h) in hosts.iter_mut().enumerate() {
        h.start();
        let n = i + 3;
        let iso = crate::vmlab::marker_image("iso", &format!("hv{n}-boot")).expect("marker ISO");
        // Host 3's VM has its CD in its definition; host 4's gets its
        // image as virtual media, into host 4's pool.
        let cd_xml = if n == 3 {
            let cd = dir.path().join(format!("hv{n}.iso"));
            std::fs::copy(&iso, &cd).unwrap();
            format!(
                r#"<disk type="file" device="cdrom"><driver name="qemu" type="raw"/><source file="{}"/><target dev="sda" bus="sata"/><readonly/></disk>"#,
                cd.display()
            )
        } else {
            served.push(("/hv4.iso", std::fs::read(&iso).unwrap()));
            let pool = dir.path().join("pool4");
            std::fs::create_dir(&pool).unwrap();
            std::fs::set_permissions(&pool, std::fs::Permissions::from_mode(0o755)).unwrap();
            let pool = pool.display().to_string();
            // Transient: the daemons share this machine's /etc/libvirt,
            // where a defined pool would outlive the test.
            run(Command::new("virsh")
                .args([
                    "-q",
                    "-c",
                    &h.uri(),
                    "pool-create-as",
                    "default",
                    "dir",
                    "--target",
                ])
                .arg(&pool));
            String::new()
        };
        let serial = dir.path().join(format!("hv{n}.serial"));
        let xml = dir.path().join(format!("hv{n}.xml"));
        std::fs::write(
            &xml,
            format!(
                r#"<domain type="qemu"><name>hv{n}-vm</name><uuid>{uuid}</uuid><memory unit="MiB">512</memory><vcpu>1</vcpu>
  <os><type arch="x86_64" machine="q35">hvm</type>
    <loader readonly="yes" secure="no" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    <nvram template="/usr/share/OVMF/OVMF_VARS_4M.fd">/var/lib/libvirt/qemu/nvram/hv{n}-vm_VARS.fd</nvram></os>
  <features><acpi/></features><on_poweroff>destroy</on_poweroff>
  <devices>
    {cd_xml}
    <serial type="pty"><log file="{serial}" append="off"/><target port="0"/></serial>
    <console type="pty"><target type="serial" port="0"/></console>
  </devices></domain>"#,
                uuid = VM[i],
                serial = serial.display(),
            ),
        )
        .unwrap();
        run(Command::new("virsh")
            .args(["-q", "-c", &h.uri(), "define"])
            .arg(&xml));
        serials.push(serial);
    }
    let images = crate::common::file_server(served);
    let emu = Spawned::start(&[
        "--libvirt-uri",
        &hosts[0].uri(),
        "--libvirt-uri",
        &hosts[1].uri(),
        // The image server is on this namespace's loopback.
        "--media-allow-net",
        "127.0.0.0/8",
    ]);
    let sys: Vec<String> = VM
        .iter()
        .map(|id| format!("{}/redfish/v1/Systems/{id}", emu.url))
        .collect();
    let insert = |s: &str, image: &str| {
        call(
            "POST",
            &format!("{s}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"),
            &format!(r#"{{"Image": "{image}"}}"#),
        )
    };
    // Host 3 has no storage pool: refused, naming it, nothing changed.
    let (code, body) = insert(&sys[0], &format!("{images}/hv4.iso"));
    assert_eq!(code, 400, "{body}");
    let text = body.to_string();
    assert!(
        text.contains("ActionNotSupported")
            && text.contains("'default'")
            && text.contains(&hosts[0].uri()),
        "{body}"
    );
    // Host 4's VM: downloaded, uploaded into its pool, a Task until then.
    let uploading = Instant::now();
    let (code, body) = insert(&sys[1], &format!("{images}/hv4.iso"));
    assert!(code == 202 || code == 204, "{code} {body}");
    let inserted = shoal_harness::lab::wait_until(Duration::from_secs(60), || {
        call("GET", &format!("{}/VirtualMedia/Cd", sys[1]), "").1["Inserted"] == true
    })
    .unwrap_or_else(|| panic!("host 4's virtual media never showed inserted"));
    let volumes = Command::new("virsh")
        .args(["-q", "-c", &hosts[1].uri(), "vol-list", "default"])
        .output()
        .unwrap();
    let volumes = String::from_utf8_lossy(&volumes.stdout).into_owned();
    assert_eq!(
        volumes.lines().count(),
        1,
        "one volume in host 4's pool: {volumes}"
    );
    let upload_secs = uploading.elapsed().max(inserted).as_secs_f64();
    let started = Instant::now();
    for s in &sys {
        let (code, body) = call(
            "PATCH",
            s,
            r#"{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}"#,
        );
        assert_eq!(code, 200, "{body}");
        let (code, body) = call(
            "POST",
            &format!("{s}/Actions/ComputerSystem.Reset"),
            r#"{"ResetType": "On"}"#,
        );
        assert!(code == 204 || code == 200, "{code} {body}");
        // The marker image powers its machine off once it has printed, so
        // the power state is read while OVMF is still starting (seconds
        // under TCG), and read again after the marker.
        let (_, body) = call("GET", s, "");
        assert_eq!(body["PowerState"], "On", "{body}");
    }
    let mut times = Vec::new();
    for (i, serial) in serials.iter().enumerate() {
        let marker = format!("SHOAL-MARKER hv{}-boot", i + 3);
        let took = shoal_harness::lab::wait_until(Duration::from_secs(300), || {
            std::fs::read_to_string(serial).is_ok_and(|t| t.contains(&marker))
        })
        .unwrap_or_else(|| {
            panic!(
                "host {}'s VM did not print {marker}; serial: {}",
                i + 1,
                std::fs::read_to_string(serial).unwrap_or_default()
            )
        });
        times.push(started.elapsed().max(took));
    }
    for s in &sys {
        // The one-time override was spent by the start it applied to, and
        // the machine's own power-off shows.
        let (_, body) = call("GET", s, "");
        assert_eq!(
            body["Boot"]["BootSourceOverrideEnabled"], "Disabled",
            "{body}"
        );
        shoal_harness::lab::wait_until(Duration::from_secs(60), || {
            call("GET", s, "").1["PowerState"] == "Off"
        })
        .unwrap_or_else(|| panic!("{s} still not Off after its VM halted"));
    }
    // HTTP boot needs the NVRAM Shoal writes: refused on a remote host,
    // naming it, nothing changed.
    for (s, h) in sys.iter().zip(&hosts) {
        let (code, body) = call(
            "PATCH",
            s,
            r#"{"Boot": {"BootSourceOverrideTarget": "UefiHttp", "HttpBootUri": "http://192.0.2.1/x.efi"}}"#,
        );
        assert_eq!(code, 400, "{body}");
        assert!(body.to_string().contains(&h.uri()), "{body}");
    }
    // Ejected: the volume goes with it.
    let (code, body) = call(
        "POST",
        &format!("{}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia", sys[1]),
        "{}",
    );
    assert!(code == 204 || code == 200, "{code} {body}");
    let volumes = Command::new("virsh")
        .args(["-q", "-c", &hosts[1].uri(), "vol-list", "default"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&volumes.stdout).trim(), "");
    println!(
        "two QEMU hosts: host 4's virtual media downloaded and uploaded into its pool in \
         {upload_secs:.1} s; the first host's VM printed its marker {:.1} s after the BMC \
         was asked, the second's (from that volume) {:.1} s",
        times[0].as_secs_f64(),
        times[1].as_secs_f64()
    );
}

#[test]
fn one_emulator_over_two_libvirt_hosts_survives_one_host_going_away() {
    let Some(_) = required("/usr/sbin/libvirtd", "Debian's libvirt-daemon-system") else {
        return;
    };
    const VM1: &str = "5a0b0c0d-0000-4000-8000-00000000a001";
    const VM2: &str = "5a0b0c0d-0000-4000-8000-00000000a002";
    let dir = tempfile::tempdir().unwrap();
    let mut h1 = Host::new(1, VM1, dir.path());
    let mut h2 = Host::new(2, VM2, dir.path());
    h1.start();
    h2.start();
    let emu = Spawned::start(&["--libvirt-uri", &h1.uri(), "--libvirt-uri", &h2.uri()]);
    let (vm1, vm2) = (
        format!("{}/redfish/v1/Systems/{VM1}", emu.url),
        format!("{}/redfish/v1/Systems/{VM2}", emu.url),
    );
    let systems = format!("{}/redfish/v1/Systems", emu.url);
    assert_eq!(status(&vm1).0, 200);
    assert_eq!(status(&vm2).0, 200);

    h1.kill();
    let to_503 = until(&vm1, 503, Duration::from_secs(20));
    let (_, headers) = status(&vm1);
    assert!(
        headers.to_ascii_lowercase().contains("retry-after"),
        "{headers}"
    );
    // The other host's system is served, and quickly, while the first
    // host is away; the collection still lists both.
    let started = Instant::now();
    for _ in 0..10 {
        assert_eq!(status(&vm2).0, 200);
    }
    let ten_gets = started.elapsed();
    let (code, _) = status(&systems);
    assert_eq!(code, 200);

    h1.start();
    let back = until(&vm1, 200, Duration::from_secs(20));
    assert_eq!(status(&vm2).0, 200);
    println!(
        "two libvirt hosts: host 1's system answered 503 {:.2} s after its daemon was killed; \
         10 GETs of host 2's system meanwhile took {:.2} s; host 1's system was back {:.2} s \
         after its daemon listened again",
        to_503.as_secs_f64(),
        ten_gets.as_secs_f64(),
        back.as_secs_f64()
    );
}
