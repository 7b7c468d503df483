//! IPMI over LAN with real clients, unmodified: ipmitool (lanplus, cipher
//! suites 3 and 17), FreeIPMI and pyghmi, against a spawned emulator; each
//! answer is checked against what Redfish says of the same machine.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{free_udp_port, ipmitool_installed, required, venv_program, Spawned};

/// A UDP port free now on 127.0.0.1 below 32768: FreeIPMI's tools keep a
/// port in a signed 16-bit integer ("hostname invalid" above it).
fn free_low_udp_port() -> u16 {
    let start = 20000 + (std::process::id() % 10000) as u16;
    (start..32000)
        .chain(20000..start)
        .find(|p| std::net::UdpSocket::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free UDP port below 32768")
}

struct Bmc {
    emu: Spawned,
    port: u16,
}

impl Bmc {
    /// One fake system with its IPMI users.
    fn start() -> Bmc {
        Bmc::start_on(free_udp_port())
    }

    fn start_on(port: u16) -> Bmc {
        Bmc::start_with(port, &[])
    }

    /// The same with more arguments.
    fn start_with(port: u16, extra: &[&str]) -> Bmc {
        let port_arg = port.to_string();
        let mut args = vec![
            "--fake-systems",
            "1",
            "--ipmi-port",
            &port_arg,
            "--ipmi-user",
            "admin:Adm1n-pw",
            "--ipmi-user",
            "op:0per-pw:operator",
            "--ipmi-user",
            "ro:r3ad-pw:user",
        ];
        args.extend_from_slice(extra);
        let (emu, lines) = Spawned::start_lines(&args, 2);
        assert_eq!(
            lines[1],
            format!("shoal-emulator ipmi node-0 on udp://127.0.0.1:{port}")
        );
        Bmc { emu, port }
    }

    /// Powers the machine on over Redfish.
    fn power_on(&self) {
        let url = format!(
            "{}{}",
            self.emu.url,
            self.system()["@odata.id"].as_str().unwrap()
        );
        let reset = Command::new("curl")
            .args(["-sf", "-X", "POST", "-H", "Content-Type: application/json"])
            .args(["-d", r#"{"ResetType":"On"}"#])
            .arg(format!("{url}/Actions/ComputerSystem.Reset"))
            .status()
            .unwrap();
        assert!(reset.success());
    }

    fn system(&self) -> Value {
        let list = get(&format!("{}/redfish/v1/Systems", self.emu.url));
        get(&format!(
            "{}{}",
            self.emu.url,
            list["Members"][0]["@odata.id"].as_str().unwrap()
        ))
    }

    /// `ipmitool -I lanplus` as `user`, with cipher suite `suite` (None:
    /// ipmitool picks from Get Channel Cipher Suites).
    fn ipmitool(&self, user: (&str, &str), suite: Option<u8>, args: &[&str]) -> (bool, String) {
        let mut c = Command::new("ipmitool");
        c.args([
            "-I",
            "lanplus",
            "-H",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
        ])
        .args(["-U", user.0, "-P", user.1, "-N", "1", "-R", "3"]);
        if let Some(s) = suite {
            c.args(["-C", &s.to_string()]);
        }
        let out = c.args(args).output().expect("run ipmitool");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

fn get(url: &str) -> Value {
    let out = Command::new("curl").args(["-sf", url]).output().unwrap();
    assert!(out.status.success(), "GET {url}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn patch(url: &str, body: &str) {
    let out = Command::new("curl")
        .args([
            "-sf",
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
            url,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "PATCH {url} {body}");
}

const ADMIN: (&str, &str) = ("admin", "Adm1n-pw");

/// ipmitool's `chassis policy` and Redfish's `PowerRestorePolicy` are one
/// setting of the BMC: set on either side, read on both; a user without
/// operator rights cannot change it.
#[test]
fn the_power_restore_policy_is_one_setting_over_ipmi_and_redfish() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let run = |user, args: &[&str]| {
        let (ok, out) = bmc.ipmitool(user, None, args);
        assert!(ok, "ipmitool {args:?}: {out}");
        out
    };
    let policy = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("Power Restore Policy"))
            .and_then(|l| l.split(':').nth(1))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    assert_eq!(policy(&run(ADMIN, &["chassis", "status"])), "always-off");
    let list = run(ADMIN, &["chassis", "policy", "list"]);
    for p in ["always-on", "previous", "always-off"] {
        assert!(list.contains(p), "{list}");
    }
    run(ADMIN, &["chassis", "policy", "always-on"]);
    let url = format!(
        "{}{}",
        bmc.emu.url,
        bmc.system()["@odata.id"].as_str().unwrap()
    );
    assert_eq!(get(&url)["PowerRestorePolicy"], "AlwaysOn");
    patch(&url, r#"{"PowerRestorePolicy": "LastState"}"#);
    assert_eq!(policy(&run(ADMIN, &["chassis", "status"])), "previous");
    let (ok, out) = bmc.ipmitool(
        ("ro", "r3ad-pw"),
        None,
        &["chassis", "policy", "always-off"],
    );
    assert!(!ok, "{out}");
    assert_eq!(get(&url)["PowerRestorePolicy"], "LastState", "unchanged");
}

/// The Manager's NetworkProtocol says what this BMC serves: Redfish over
/// plain HTTP on the port it listens on, IPMI on the socket it bound.
#[test]
fn the_network_protocol_resource_names_the_ports_really_bound() {
    let bmc = Bmc::start();
    let mgr = bmc.system()["Links"]["ManagedBy"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let np = get(&format!("{}{mgr}/NetworkProtocol", bmc.emu.url));
    let http_port: u16 = bmc.emu.url.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        np["HTTP"],
        json!({"ProtocolEnabled": true, "Port": http_port}),
        "{np}"
    );
    assert_eq!(np["HTTPS"]["ProtocolEnabled"], false, "{np}");
    assert_eq!(
        np["IPMI"],
        json!({"ProtocolEnabled": true, "Port": bmc.port}),
        "{np}"
    );
    assert_eq!(np["SSH"]["ProtocolEnabled"], false, "{np}");
}

#[test]
fn ipmitool_drives_power_and_boot_over_both_cipher_suites() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    for suite in [Some(3), Some(17), None] {
        let run = |args: &[&str]| {
            let (ok, out) = bmc.ipmitool(ADMIN, suite, args);
            assert!(ok, "ipmitool -C {suite:?} {args:?}: {out}");
            out
        };
        run(&["power", "off"]);
        assert!(run(&["power", "status"]).contains("Chassis Power is off"));
        assert!(run(&["power", "on"]).contains("Up/On"));
        assert_eq!(bmc.system()["PowerState"], "On", "suite {suite:?}");
        assert!(run(&["chassis", "status"]).contains("System Power         : on"));
        run(&["chassis", "bootdev", "pxe", "options=efiboot"]);
        let boot = bmc.system()["Boot"].clone();
        assert_eq!(
            (
                &boot["BootSourceOverrideTarget"],
                &boot["BootSourceOverrideMode"],
                &boot["BootSourceOverrideEnabled"]
            ),
            (&"Pxe".into(), &"UEFI".into(), &"Once".into()),
            "{boot}"
        );
        let p5 = run(&["chassis", "bootparam", "get", "5"]);
        assert!(p5.contains("Boot parameter data: a004000000"), "{p5}");
    }
    // Redfish writes, IPMI reads.
    let url = format!(
        "{}{}",
        bmc.emu.url,
        bmc.system()["@odata.id"].as_str().unwrap()
    );
    patch(
        &url,
        r#"{"Boot":{"BootSourceOverrideTarget":"Hdd","BootSourceOverrideEnabled":"Continuous","BootSourceOverrideMode":"Legacy"}}"#,
    );
    let (_, p5) = bmc.ipmitool(ADMIN, None, &["chassis", "bootparam", "get", "5"]);
    assert!(p5.contains("Boot parameter data: c008000000"), "{p5}");
    assert!(p5.contains("Options apply to all future boots"), "{p5}");
    // Every power action reaches the machine.
    for (action, state) in [
        ("cycle", "On"),
        ("reset", "On"),
        ("diag", "On"),
        ("soft", "Off"),
        ("on", "On"),
        ("off", "Off"),
    ] {
        let (ok, out) = bmc.ipmitool(ADMIN, None, &["power", action]);
        assert!(ok, "power {action}: {out}");
        assert_eq!(bmc.system()["PowerState"], state, "after power {action}");
    }
    // An NMI to a machine that is off cannot be: a completion code.
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["power", "diag"]);
    assert!(!ok, "{out}");
}

#[test]
fn ipmitool_reads_the_bmc_inventory() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let run = |args: &[&str]| {
        let (ok, out) = bmc.ipmitool(ADMIN, None, args);
        assert!(ok, "ipmitool {args:?}: {out}");
        out
    };
    let uuid = bmc.system()["UUID"].as_str().unwrap().to_string();
    assert!(run(&["mc", "guid"]).contains(&format!("System GUID   : {uuid}")));
    let info = run(&["mc", "info"]);
    assert!(info.contains("IPMI Version              : 2.0"), "{info}");
    let lan = run(&["lan", "print", "1"]);
    assert!(lan.contains("IP Address              : 127.0.0.1"), "{lan}");
    assert!(lan.contains("RMCP+ Cipher Suites     : 2,3,16,17"), "{lan}");
    let users = run(&["user", "list", "1"]);
    for line in [
        "admin            true    true       true       ADMINISTRATOR",
        "op               true    true       true       OPERATOR",
        "ro               true    true       true       USER",
    ] {
        assert!(users.contains(line), "{line:?} in\n{users}");
    }
    assert!(run(&["sel", "info"]).contains("Entries          : 0"));
    run(&["sdr", "list"]);
    let fru = run(&["fru", "print"]);
    assert!(fru.contains("Product Manufacturer  : Shoal"), "{fru}");
    assert!(
        fru.contains(&format!(
            "Product Serial        : {}",
            uuid.replace('-', "")[..12].to_uppercase()
        )),
        "{fru}"
    );
}

#[test]
fn ipmi_users_get_their_privilege_and_no_more() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    // Wrong password, unknown user: no session.
    for user in [("admin", "nope"), ("nobody", "Adm1n-pw")] {
        let (ok, out) = bmc.ipmitool(user, None, &["power", "status"]);
        assert!(
            !ok && out.contains("Unable to establish IPMI v2 / RMCP+ session"),
            "{user:?}: {out}"
        );
    }
    // A USER asking for ADMINISTRATOR gets no session; at USER it reads
    // but cannot act.
    let ro = ("ro", "r3ad-pw");
    assert!(!bmc.ipmitool(ro, None, &["power", "status"]).0);
    let (ok, out) = bmc.ipmitool(ro, None, &["-L", "USER", "power", "status"]);
    assert!(ok, "{out}");
    let (ok, out) = bmc.ipmitool(ro, None, &["-L", "USER", "power", "on"]);
    assert!(!ok && out.contains("Insufficient privilege level"), "{out}");
    assert_eq!(bmc.system()["PowerState"], "Off");
    // An OPERATOR powers on.
    let (ok, out) = bmc.ipmitool(("op", "0per-pw"), None, &["-L", "OPERATOR", "power", "on"]);
    assert!(ok, "{out}");
    assert_eq!(bmc.system()["PowerState"], "On");
}

/// `ipmitool user ...` as a BMC's administrator does it: a new user is
/// named, given a password, a privilege limit and enabled, then logs in at
/// that limit and no higher; disabled, it cannot; an operator may not
/// manage users.
#[test]
fn an_administrator_manages_users_over_ipmi() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let admin = ("admin", "Adm1n-pw");
    let ok = |args: &[&str]| {
        let (ok, out) = bmc.ipmitool(admin, None, args);
        assert!(ok, "{args:?}: {out}");
        out
    };
    ok(&["user", "set", "name", "6", "newop"]);
    ok(&["user", "set", "password", "6", "N3w-pw"]);
    ok(&["user", "priv", "6", "3", "1"]);
    ok(&["channel", "setaccess", "1", "6", "ipmi=on", "privilege=3"]);
    ok(&["user", "enable", "6"]);
    let list = ok(&["user", "list", "1"]);
    let row = list
        .lines()
        .find(|l| l.starts_with("6 "))
        .unwrap_or_default();
    assert!(row.contains("newop") && row.contains("OPERATOR"), "{list}");
    assert!(ok(&["user", "test", "6", "16", "N3w-pw"]).contains("Success"));
    let newop = ("newop", "N3w-pw");
    let (yes, out) = bmc.ipmitool(newop, None, &["-L", "OPERATOR", "power", "on"]);
    assert!(yes, "{out}");
    assert_eq!(bmc.system()["PowerState"], "On");
    assert!(
        !bmc.ipmitool(newop, None, &["-L", "ADMINISTRATOR", "power", "status"])
            .0
    );
    // An operator cannot rename anyone.
    let (yes, out) = bmc.ipmitool(
        ("op", "0per-pw"),
        None,
        &["-L", "OPERATOR", "user", "set", "name", "6", "evil"],
    );
    assert!(!yes || out.contains("Insufficient privilege"), "{out}");
    assert!(ok(&["user", "list", "1"]).contains("newop"));
    // Disabled: no session.
    ok(&["user", "disable", "6"]);
    let (yes, out) = bmc.ipmitool(newop, None, &["-L", "OPERATOR", "power", "status"]);
    assert!(!yes && out.contains("Unable to establish"), "{out}");
}

/// The LAN channel's access settings as ipmitool and FreeIPMI's
/// ipmi-config read and set them: both sets shown, a non-volatile
/// privilege limit kept apart from the one in effect, the volatile one
/// capping the next logins, an access mode not served refused.
#[test]
fn channel_access_is_read_and_set_by_ipmitool_and_ipmi_config() {
    let Some(ipmi_config) = required("/usr/sbin/ipmi-config", "Debian package freeipmi-tools")
    else {
        return;
    };
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let admin = ("admin", "Adm1n-pw");
    let (ok, info) = bmc.ipmitool(admin, None, &["channel", "info", "1"]);
    assert!(ok, "{info}");
    assert!(info.contains("Volatile(active) Settings"), "{info}");
    assert!(info.contains("always available"), "{info}");
    let (ok, out) = bmc.ipmitool(admin, None, &["lan", "set", "1", "access", "off"]);
    assert!(!ok, "{out}");
    let host = format!("127.0.0.1:{}", bmc.port);
    let config = |args: &[&str]| {
        let out = Command::new(&ipmi_config)
            .args(["-h", &host, "-u", admin.0, "-p", admin.1, "-D", "LAN_2_0"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {text}{err}");
        text
    };
    let limit = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
    };
    let section = ["--checkout", "--section=Lan_Channel"];
    let before = config(&section);
    assert_eq!(
        limit(&before, "Volatile_Channel_Privilege_Limit").as_deref(),
        Some("Administrator"),
        "{before}"
    );
    assert!(before.contains("Always_Available"), "{before}");
    config(&[
        "--commit",
        "--key-pair=Lan_Channel:Non_Volatile_Channel_Privilege_Limit=Operator",
    ]);
    let after = config(&section);
    assert_eq!(
        limit(&after, "Non_Volatile_Channel_Privilege_Limit").as_deref(),
        Some("Operator"),
        "{after}"
    );
    assert_eq!(
        limit(&after, "Volatile_Channel_Privilege_Limit").as_deref(),
        Some("Administrator"),
        "{after}"
    );
    config(&[
        "--commit",
        "--key-pair=Lan_Channel:Volatile_Channel_Privilege_Limit=Operator",
    ]);
    assert!(!bmc.ipmitool(admin, None, &["power", "status"]).0);
    let (ok, out) = bmc.ipmitool(admin, None, &["-L", "OPERATOR", "power", "status"]);
    assert!(ok, "{out}");
}

#[test]
fn freeipmi_drives_the_same_bmc() {
    let Some(ipmipower) = required("/usr/sbin/ipmipower", "Debian package freeipmi-tools") else {
        return;
    };
    let bmc = Bmc::start();
    let host = format!("127.0.0.1:{}", bmc.port);
    let common = [
        "-h",
        host.as_str(),
        "-u",
        "admin",
        "-p",
        "Adm1n-pw",
        "-D",
        "LAN_2_0",
    ];
    let run = |prog: &std::path::Path, args: &[&str]| {
        let out = Command::new(prog).args(common).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{} {args:?}: {text}{}",
            prog.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    assert!(run(&ipmipower, &["--stat"]).contains(": off"));
    assert!(run(&ipmipower, &["--on"]).contains(": ok"));
    assert_eq!(bmc.system()["PowerState"], "On");
    let info = run(std::path::Path::new("/usr/sbin/bmc-info"), &[]);
    assert!(info.contains("IPMI Version          : 2.0"), "{info}");
    let status = run(
        std::path::Path::new("/usr/sbin/ipmi-chassis"),
        &["--get-chassis-status"],
    );
    assert!(
        status.contains("System Power                        : on"),
        "{status}"
    );
}

#[test]
fn pyghmi_drives_the_same_bmc() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let bmc = Bmc::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ipmi/pyghmi_compat.py");
    let out = Command::new(python)
        .args([
            script,
            "--host",
            "127.0.0.1",
            "--port",
            &bmc.port.to_string(),
        ])
        .args([
            "--user",
            "admin",
            "--password",
            "Adm1n-pw",
            "--redfish",
            &bmc.emu.url,
        ])
        .args(["--console-user", "op", "--console-password", "0per-pw"])
        .output()
        .expect("run pyghmi_compat.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "pyghmi compatibility failed:\n{stdout}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// A program's output, read by a thread into a buffer tests can wait on.
struct Output(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Output {
    fn of(mut from: impl std::io::Read + Send + 'static) -> Output {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let b = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = from.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                b.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Output(buf)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Waits until `want` was printed (10 s at most).
    fn wait_for(&self, want: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.text().contains(want) {
            assert!(
                std::time::Instant::now() < deadline,
                "{want:?} never came; the output:\n{}",
                self.text()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn ipmitool_sol_carries_the_console_both_ways() {
    use std::io::Write;
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    // ipmitool's SOL wants a terminal: script(1) gives it one.
    let (mut child, out, mut stdin) = on_terminal(&format!(
        "ipmitool -I lanplus -H 127.0.0.1 -p {} -U admin -P Adm1n-pw sol activate",
        bmc.port
    ));
    out.wait_for("SOL Session operational");
    // What the machine does shows on its console.
    bmc.power_on();
    out.wait_for("[shoal node-0] power on");
    out.wait_for("[shoal node-0] booting");
    // What is typed reaches the machine (whose console echoes it).
    stdin.write_all(b"typed-by-sol").unwrap();
    stdin.flush().unwrap();
    out.wait_for("typed-by-sol");
    // One SOL session a BMC: a second activation is refused.
    let (ok, second) = bmc.ipmitool(ADMIN, None, &["sol", "activate"]);
    assert!(
        !ok && second.contains("SOL payload already active on another session"),
        "{second}"
    );
    // ~. leaves, deactivating the payload.
    stdin.write_all(b"\r~.").unwrap();
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ipmitool stayed after ~.:\n{}",
            out.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{}", out.text());
    let (ok, active) = bmc.ipmitool(ADMIN, None, &["raw", "0x06", "0x4a", "0x01"]);
    assert!(
        ok && active.trim() == "01 00 00",
        "activation status after ~.: {active}"
    );
}

/// `cmd` under script(1), which gives it the terminal console clients
/// want: the child, its output as it comes, its input.
fn on_terminal(cmd: &str) -> (std::process::Child, Output, std::process::ChildStdin) {
    let mut child = Command::new("script")
        .args(["-qfec", cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    let out = Output::of(child.stdout.take().unwrap());
    let stdin = child.stdin.take().unwrap();
    (child, out, stdin)
}

/// FreeIPMI's SOL client, an implementation apart from ipmitool's: it
/// asks which payloads the channel carries (Get Channel Payload Support),
/// activates SOL, shows the machine's console and leaves with `&.`.
#[test]
fn ipmiconsole_carries_the_console() {
    use std::io::Write;
    let Some(ipmiconsole) = required("/usr/sbin/ipmiconsole", "Debian package freeipmi-tools")
    else {
        return;
    };
    let bmc = Bmc::start_on(free_low_udp_port());
    // ipmiconsole wants a terminal: script(1) gives it one.
    let (mut child, out, mut stdin) = on_terminal(&format!(
        "{} -h 127.0.0.1:{} -u admin -p Adm1n-pw",
        ipmiconsole.display(),
        bmc.port
    ));
    out.wait_for("[SOL established]");
    bmc.power_on();
    out.wait_for("[shoal node-0] power on");
    stdin.write_all(b"typed-by-freeipmi").unwrap();
    stdin.flush().unwrap();
    out.wait_for("typed-by-freeipmi");
    stdin.write_all(b"\r&.").unwrap();
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "ipmiconsole stayed after &.:\n{}",
            out.text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (ok, active) = bmc.ipmitool(ADMIN, None, &["raw", "0x06", "0x4a", "0x01"]);
    assert!(
        ok && active.trim() == "01 00 00",
        "activation status after &.: {active}"
    );
}

/// QEMU's side of the in-band link (OpenIPMI's VM protocol, as
/// `ipmi-bmc-extern` speaks it), written here from the protocol: escaped
/// frames, 0xA0 ending a message and 0xA1 a control command.
struct Host {
    stream: std::os::unix::net::UnixStream,
    next_id: u8,
}

impl Host {
    fn connect(path: &std::path::Path) -> Host {
        let stream = std::os::unix::net::UnixStream::connect(path).expect("connect");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut h = Host { stream, next_id: 0 };
        // QEMU's greeting: protocol version 1, then its capabilities.
        h.write(&[0xff, 0x01, 0xa1, 0x08, 0x1f, 0xa1]);
        h
    }

    fn write(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stream.write_all(bytes).unwrap();
    }

    fn escaped(bytes: &[u8], end: u8) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in bytes {
            if matches!(b, 0xa0 | 0xa1 | 0xaa) {
                out.extend([0xaa, b | 0x10]);
            } else {
                out.push(b);
            }
        }
        out.push(end);
        out
    }

    /// One request; its completion code and data.
    fn call(&mut self, netfn: u8, cmd: u8, data: &[u8]) -> (u8, Vec<u8>) {
        use std::io::Read;
        self.next_id = self.next_id.wrapping_add(1);
        let mut msg = vec![self.next_id, netfn << 2, cmd];
        msg.extend_from_slice(data);
        let sum = msg.iter().fold(0u8, |s, b| s.wrapping_add(*b));
        msg.push(sum.wrapping_neg());
        self.write(&Self::escaped(&msg, 0xa0));
        let mut frame = Vec::new();
        let mut escape = false;
        loop {
            let mut b = [0u8];
            self.stream.read_exact(&mut b).expect("an answer");
            match b[0] {
                0xa0 => break,
                0xaa => escape = true,
                x if escape => {
                    frame.push(x & !0x10);
                    escape = false;
                }
                x => frame.push(x),
            }
        }
        let sum = frame.iter().fold(0u8, |s, b| s.wrapping_add(*b));
        assert_eq!(sum, 0, "checksum of {frame:x?}");
        assert_eq!(frame[0], self.next_id, "the answer names the request");
        assert_eq!(frame[1], (netfn | 1) << 2, "response NetFn");
        assert_eq!(frame[2], cmd);
        (frame[3], frame[4..frame.len() - 1].to_vec())
    }
}

/// In-band IPMI over the socket QEMU's ipmi-bmc-extern connects to: the
/// host reads its GUID, the boot flags Redfish set and the power state,
/// and its own Chassis Control reaches the machine; garbage and bad
/// checksums are dropped and the link goes on.
#[test]
fn the_host_reaches_its_bmc_in_band() {
    let dir = tempfile::tempdir().unwrap();
    let (emu, lines) = Spawned::start_lines(
        &[
            "--fake-systems",
            "1",
            // A profile whose System Id is not the UUID.
            "--profile",
            "idrac9",
            "--ipmi-port",
            "0",
            "--ipmi-in-band-dir",
            dir.path().to_str().unwrap(),
        ],
        2,
    );
    let list = get(&format!("{}/redfish/v1/Systems", emu.url));
    let sys_url = format!(
        "{}{}",
        emu.url,
        list["Members"][0]["@odata.id"].as_str().unwrap()
    );
    let sys = get(&sys_url);
    let uuid = uuid::Uuid::parse_str(sys["UUID"].as_str().unwrap()).unwrap();
    // Named after the machine's UUID, whatever Id a profile shows.
    let path = dir.path().join(format!("{}.sock", uuid.hyphenated()));
    assert_eq!(
        lines[1],
        format!(
            "shoal-emulator ipmi-in-band node-0 on unix:{}",
            path.display()
        )
    );
    patch(
        &sys_url,
        r#"{"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous", "BootSourceOverrideMode": "UEFI"}}"#,
    );
    let mut host = Host::connect(&path);
    // Noise first: a frame with a bad checksum, a stray escape, a
    // response-type message, an empty frame. None gets an answer.
    host.write(&[
        0x01, 0x18, 0x01, 0x00, 0xa0, 0xaa, 0xa0, 0x02, 0x1c, 0x01, 0xe1, 0xa0, 0xa0,
    ]);
    // The system interface's own commands, as Linux's ipmi_si sends them.
    assert_eq!(host.call(0x06, 0x2f, &[]), (0, vec![0x08]));
    assert_eq!(host.call(0x06, 0x31, &[]).0, 0);
    let (cc, device) = host.call(0x06, 0x01, &[]);
    assert_eq!((cc, device.len()), (0, 15), "{device:x?}");
    // Get System GUID: the Redfish UUID in SMBIOS byte order.
    let (cc, guid) = host.call(0x06, 0x37, &[]);
    assert_eq!((cc, guid), (0, uuid.to_bytes_le().to_vec()));
    // Boot flags: valid, persistent, EFI; PXE.
    let (cc, flags) = host.call(0x00, 0x09, &[5, 0, 0]);
    assert_eq!(cc, 0);
    assert_eq!(&flags[..4], &[0x01, 0x05, 0xe0, 0x04], "{flags:x?}");
    // Power, as the host's BMC sees it: up, then the host powers itself
    // off through its BMC.
    assert_eq!(host.call(0x00, 0x02, &[0x01]).0, 0);
    assert_eq!(get(&sys_url)["PowerState"], "On");
    let (cc, status) = host.call(0x00, 0x01, &[]);
    assert_eq!((cc, status[0] & 1), (0, 1), "on");
    assert_eq!(host.call(0x00, 0x02, &[0x00]).0, 0);
    assert_eq!(get(&sys_url)["PowerState"], "Off");
    // A second connection (the host restarted) replaces the first.
    let mut again = Host::connect(&path);
    let (cc, status) = again.call(0x00, 0x01, &[]);
    assert_eq!((cc, status[0] & 1), (0, 0), "off");
    drop(emu);
}

/// `--ipmi-boot-mailbox`: the boot initiator mailbox (boot option
/// parameter 7) holds the text from the start, as OpenPOWER's petitboot
/// reads it; one that does not fit stops the emulator, naming the flag.
#[test]
fn the_boot_mailbox_is_served_from_the_start() {
    if !ipmitool_installed() {
        return;
    }
    let text = "petitboot,bootdevs=network disk";
    let bmc = Bmc::start_with(free_udp_port(), &["--ipmi-boot-mailbox", text]);
    let mut data = Vec::new();
    for block in 0..3 {
        let (ok, out) = bmc.ipmitool(
            ADMIN,
            None,
            &["raw", "0x00", "0x09", "0x07", &block.to_string(), "0x00"],
        );
        assert!(ok, "{out}");
        let bytes: Vec<u8> = out
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect();
        assert_eq!(bytes[..3], [0x01, 0x07, block as u8], "{out}");
        data.extend_from_slice(&bytes[3..]);
    }
    assert_eq!(data[..3], [0x02, 0x00, 0x00]);
    assert_eq!(&data[3..3 + text.len() + 1], format!("{text}\0").as_bytes());
    let long = "x".repeat(300);
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args([
            "--port",
            "0",
            "--ipmi-port",
            "0",
            "--ipmi-boot-mailbox",
            &long,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--ipmi-boot-mailbox"), "{err}");
}

mod hardening;
mod sel;
