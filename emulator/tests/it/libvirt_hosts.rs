//! One emulator in front of two hypervisors, each a libvirtd of its own in
//! a network namespace of its own (its state on private mounts, so it is
//! another host as far as libvirt can tell), reached over libvirt's remote
//! protocol (`test+tcp://`, each daemon serving libvirt's test driver
//! from its own node file) across a point-to-point veth link. One daemon
//! is killed: only its system answers 503, the other host's keeps
//! working; started again, its system comes back without an emulator
//! restart. The times are printed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{required, Spawned};

/// A libvirtd "host": its namespace, its veth link and its daemon.
struct Host {
    ns: String,
    veth: String,
    addr: String,
    dir: PathBuf,
    daemon: Option<Child>,
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
            "mount -t tmpfs shoal /run/libvirt && mount -t tmpfs shoal /var/lib/libvirt && \
             mount -t tmpfs shoal /var/cache/libvirt && mount -t tmpfs shoal /etc/libvirt/qemu && \
             exec /usr/sbin/libvirtd --listen -f {} -p {}",
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
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
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
