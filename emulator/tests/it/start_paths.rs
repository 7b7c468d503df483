//! Every way of starting the emulator (flags, `SHOAL_*` variables, a TOML
//! inventory with and without `--fake`, a sushy-tools configuration), each
//! configured with authentication: every protocol the service then serves
//! refuses a request without the configured credentials, no port opens
//! that was not asked for, and no credential works that was not given. A
//! setting that cannot be applied stops the start, naming it.
//! (The container's start path is checked by `ci/image test`.)

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::common::{free_udp_port, htpasswd, ipmitool_installed};

/// The Redfish account every case configures, and the IPMI one.
const REDFISH: &str = "root:Redf1sh-pw";
const IPMI: (&str, &str) = ("op", "1pmi-pw");
/// What the emulator once let into IPMI unasked (virtualbmc's default).
const BUILT_IN: (&str, &str) = ("admin", "password");

/// The emulator binary started with `args` and `env`, as a child whose
/// stdout lines (one per listener it announces) are read until `n` came.
struct Started {
    child: Child,
    lines: Vec<String>,
}

impl Started {
    fn new(args: &[&str], env: &[(&str, &str)], n: usize) -> Started {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"));
        cmd.args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn shoal-emulator");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        for _ in 0..n {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert!(!line.is_empty(), "the emulator stopped after {lines:?}");
            lines.push(line.trim().to_string());
        }
        // The rest of stdout (nothing, unless a line was not expected)
        // is drained so the child never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Started { child, lines }
    }

    /// The URL the line starting with `what` announces.
    fn url(&self, what: &str) -> String {
        let line = self
            .lines
            .iter()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what:?} line in {:?}", self.lines));
        line.rsplit(' ').next().unwrap().to_string()
    }

    /// The UDP ports this process has sockets on (its descriptors, found
    /// in the kernel's UDP tables): what an IPMI client could reach.
    fn udp_ports(&self) -> BTreeSet<u16> {
        let pid = self.child.id();
        let mut inodes = BTreeSet::new();
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
            let target = std::fs::read_link(fd.unwrap().path()).unwrap_or_default();
            let t = target.to_string_lossy();
            if let Some(i) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.insert(i.to_string());
            }
        }
        let mut ports = BTreeSet::new();
        for table in ["udp", "udp6"] {
            let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap();
            for row in text.lines().skip(1) {
                let cols: Vec<&str> = row.split_whitespace().collect();
                if cols.len() > 9 && inodes.contains(cols[9]) {
                    let port = cols[1].rsplit(':').next().unwrap();
                    ports.insert(u16::from_str_radix(port, 16).unwrap());
                }
            }
        }
        ports
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The emulator with `args` and `env` must not start; its stderr.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"));
    cmd.args(["--port", "0"]).args(args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "started with {args:?} {env:?}: {err}"
    );
    err
}

/// The HTTP status of a GET (`-k`: the service may be HTTPS).
fn status(url: &str, auth: Option<&str>, header: Option<&str>) -> u16 {
    let mut c = Command::new("curl");
    c.args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"]);
    if let Some(a) = auth {
        c.args(["-u", a]);
    }
    if let Some(h) = header {
        c.args(["-H", h]);
    }
    let out = c.arg(url).output().expect("curl");
    String::from_utf8_lossy(&out.stdout).parse().unwrap()
}

/// Redfish: the systems refused without credentials and with wrong ones,
/// served with the configured ones; `names` the systems expected.
fn redfish_guarded(base: &str, names: &[&str]) {
    let systems = format!("{base}/redfish/v1/Systems");
    assert_eq!(
        status(&systems, None, None),
        401,
        "{systems} without credentials"
    );
    assert_eq!(status(&systems, Some("root:wrong"), None), 401);
    assert_eq!(status(&systems, Some(BUILT_IN_REDFISH), None), 401);
    assert_eq!(status(&systems, Some(REDFISH), None), 200);
    let out = Command::new("curl")
        .args(["-sk", "-u", REDFISH, &systems])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut served = Vec::new();
    for m in list["Members"].as_array().unwrap() {
        let url = format!("{base}{}", m["@odata.id"].as_str().unwrap());
        let out = Command::new("curl")
            .args(["-sk", "-L", "-u", REDFISH, &url])
            .output()
            .unwrap();
        let sys: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        served.push(sys["Name"].as_str().unwrap_or_default().to_string());
    }
    served.sort();
    assert_eq!(served, names, "the configured inventory is served");
}
const BUILT_IN_REDFISH: &str = "admin:password";

/// Whether ipmitool (lanplus) logs in to 127.0.0.1:`port` as `user` and
/// reads the power state (a USER-level command, asked at that level:
/// ipmitool asks for ADMINISTRATOR by default).
fn ipmi_logs_in(port: u16, user: (&str, &str)) -> bool {
    Command::new("ipmitool")
        .args(["-I", "lanplus", "-H", "127.0.0.1", "-p", &port.to_string()])
        .args([
            "-U", user.0, "-P", user.1, "-L", "USER", "-N", "1", "-R", "1",
        ])
        .args(["chassis", "power", "status"])
        .output()
        .expect("run ipmitool")
        .status
        .success()
}

/// IPMI on `port`: only the configured account logs in.
fn ipmi_guarded(port: u16) {
    assert!(
        !ipmi_logs_in(port, BUILT_IN),
        "the built-in account is gone"
    );
    assert!(!ipmi_logs_in(port, (IPMI.0, "wrong")));
    assert!(ipmi_logs_in(port, IPMI), "the configured account logs in");
}

fn redfish_htpasswd(dir: &Path) -> String {
    let (user, pass) = REDFISH.split_once(':').unwrap();
    htpasswd(dir, user, pass, 4).display().to_string()
}

/// Flags: Redfish (Basic auth), the admin endpoint (bearer token) and IPMI
/// (its own account) each refuse what was not configured.
#[test]
fn flags_with_authentication_guard_every_protocol() {
    if !ipmitool_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let auth = redfish_htpasswd(dir.path());
    let port = free_udp_port();
    let user = format!("{}:{}:operator", IPMI.0, IPMI.1);
    let emu = Started::new(
        &[
            "--port",
            "0",
            "--fake-systems",
            "1",
            "--auth-file",
            &auth,
            "--admin-listen",
            "127.0.0.1:0",
            "--admin-token",
            "t0ken",
            "--ipmi-port",
            &port.to_string(),
            "--ipmi-user",
            &user,
        ],
        &[],
        3,
    );
    redfish_guarded(&emu.url("shoal-emulator listening"), &["node-0"]);
    let faults = format!("{}/shoal/v1/faults", emu.url("shoal-emulator admin"));
    assert_eq!(status(&faults, None, None), 401);
    assert_eq!(status(&faults, None, Some("Authorization: Bearer x")), 401);
    assert_eq!(
        status(&faults, None, Some("Authorization: Bearer t0ken")),
        200
    );
    assert_eq!(emu.udp_ports(), BTreeSet::from([port]));
    ipmi_guarded(port);
}

/// The same settings as `SHOAL_*` variables.
#[test]
fn environment_with_authentication_guards_every_protocol() {
    if !ipmitool_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let auth = redfish_htpasswd(dir.path());
    let port = free_udp_port().to_string();
    let user = format!("{}:{}", IPMI.0, IPMI.1);
    let emu = Started::new(
        &[],
        &[
            ("SHOAL_PORT", "0"),
            ("SHOAL_FAKE_SYSTEMS", "1"),
            ("SHOAL_AUTH_FILE", &auth),
            ("SHOAL_IPMI_PORT", &port),
            ("SHOAL_IPMI_USER", &user),
        ],
        2,
    );
    redfish_guarded(&emu.url("shoal-emulator listening"), &["node-0"]);
    ipmi_guarded(port.parse().unwrap());
    // An IPMI port without an account is refused, naming the setting.
    let err = refused(&["--fake-systems", "1"], &[("SHOAL_IPMI_PORT", &port)]);
    assert!(
        err.contains("--ipmi-port") && err.contains("needs an account"),
        "{err}"
    );
}

/// A TOML inventory with `[auth]` and `[ipmi]`, with and without `--fake`
/// (which once swapped the whole file for sushy-tools' default system):
/// its systems are served, its accounts alone get in.
#[test]
fn a_toml_inventory_with_authentication_is_applied_with_or_without_fake() {
    if !ipmitool_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let auth = redfish_htpasswd(dir.path());
    for fake in [false, true] {
        let port = free_udp_port();
        let cfg = dir.path().join(format!("inventory-{fake}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[auth]\nhtpasswd = {auth:?}\n\n[ipmi]\nport = {port}\n\n\
                 [[ipmi.users]]\nname = {:?}\npassword = {:?}\n\n\
                 [[systems]]\nname = \"rack1-node7\"\n",
                IPMI.0, IPMI.1
            ),
        )
        .unwrap();
        let mut args = vec!["--port", "0", "--config", cfg.to_str().unwrap()];
        if fake {
            args.push("--fake");
        }
        let emu = Started::new(&args, &[], 2);
        redfish_guarded(&emu.url("shoal-emulator listening"), &["rack1-node7"]);
        assert_eq!(emu.udp_ports(), BTreeSet::from([port]), "--fake {fake}");
        ipmi_guarded(port);
    }
    // [ipmi] asking for a port with no user is refused, naming the key.
    let cfg = dir.path().join("no-user.toml");
    std::fs::write(&cfg, "[ipmi]\nport = 6230\n\n[[systems]]\nname = \"a\"\n").unwrap();
    let err = refused(&["--config", cfg.to_str().unwrap()], &[]);
    assert!(
        err.contains("no-user.toml: ipmi.port") && err.contains("needs an account"),
        "{err}"
    );
}

/// A configuration file that cannot be read stops the start, naming it,
/// whatever else is on the command line.
#[test]
fn a_missing_configuration_file_stops_the_start() {
    for args in [
        &["--config", "/nonexistent/inventory.toml"][..],
        &["--fake", "--config", "/nonexistent/inventory.toml"],
        &["--fake", "--config", "/nonexistent/sushy.conf"],
        &["--sushy-config", "/nonexistent/sushy.conf"],
        &[
            "--auth-file",
            "/nonexistent/htpasswd",
            "--fake-systems",
            "1",
        ],
    ] {
        let err = refused(args, &[]);
        assert!(err.contains("/nonexistent/"), "{args:?}: {err}");
    }
    let err = refused(&[], &[("SHOAL_CONFIG", "/nonexistent/inventory.toml")]);
    assert!(err.contains("/nonexistent/inventory.toml"), "{err}");
}

/// A sushy-tools configuration with an htpasswd file and one system:
/// Redfish asks for the account, and no IPMI socket opens (sushy-tools
/// never served IPMI); asked for on top, IPMI takes the given account only.
#[test]
fn a_sushy_tools_configuration_opens_no_ipmi_unasked() {
    if !ipmitool_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let auth = redfish_htpasswd(dir.path());
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        format!(
            "SUSHY_EMULATOR_LISTEN_IP = u'127.0.0.1'\n\
             SUSHY_EMULATOR_AUTH_FILE = {auth:?}\n\
             SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': \
             '5b5f4e6c-1c1a-4a4e-9c61-0d5f0e0e0002', 'name': 'node-0'}}]\n"
        ),
    )
    .unwrap();
    let conf = conf.to_str().unwrap();
    let emu = Started::new(&["--port", "0", "--config", conf], &[], 1);
    redfish_guarded(&emu.url("shoal-emulator listening"), &["node-0"]);
    assert_eq!(emu.udp_ports(), BTreeSet::new(), "no IPMI socket");
    drop(emu);
    let emu = Started::new(&["--port", "0", "--sushy-config", conf, "--fake"], &[], 1);
    assert_eq!(
        emu.udp_ports(),
        BTreeSet::new(),
        "no IPMI socket with --fake"
    );
    drop(emu);
    let port = free_udp_port();
    let user = format!("{}:{}", IPMI.0, IPMI.1);
    let args = [
        "--port",
        "0",
        "--config",
        conf,
        "--ipmi-port",
        &port.to_string(),
    ];
    let err = refused(&args[2..], &[]);
    assert!(err.contains("needs an account"), "{err}");
    let emu = Started::new(&[&args[..], &["--ipmi-user", &user]].concat(), &[], 2);
    ipmi_guarded(port);
    drop(emu);
}

/// Without any setting for it, no UDP socket opens at all; IPMI asked of
/// a service with no BMC of one system is refused rather than dropped.
#[test]
fn ipmi_is_served_only_where_asked() {
    let emu = Started::new(&["--port", "0", "--fake-systems", "1"], &[], 1);
    assert_eq!(emu.udp_ports(), BTreeSet::new());
    drop(emu);
    let err = refused(&["--fake-systems", "2", "--ipmi-user", "op:pw"], &[]);
    assert!(
        err.contains("--ipmi-user") && err.contains("BMC of one system"),
        "{err}"
    );
    // `--ipmi-port 0` turns IPMI off, users or not.
    let emu = Started::new(
        &[
            "--port",
            "0",
            "--fake-systems",
            "1",
            "--ipmi-port",
            "0",
            "--ipmi-user",
            "op:pw",
        ],
        &[],
        1,
    );
    assert_eq!(emu.udp_ports(), BTreeSet::new());
}

/// A flag that would have no effect (another backend's, a token without
/// its listener) stops the start, naming it, rather than being dropped.
#[test]
fn a_flag_that_would_be_dropped_stops_the_start() {
    for (args, named) in [
        (
            &["--fake-systems", "1", "--libvirt-domain", "vm1"][..],
            "--libvirt-domain",
        ),
        (
            &["--fake-systems", "1", "--libvirt-media-pool", "p"],
            "--libvirt-media-pool",
        ),
        (
            &["--libvirt-uri", "test:///default", "--state-file", "/tmp/x"],
            "--state-file",
        ),
        (
            &["--fake-systems", "1", "--admin-token", "t0ken"],
            "--admin-listen",
        ),
    ] {
        let err = refused(args, &[]);
        assert!(err.contains(named), "{args:?}: {err}");
    }
}
