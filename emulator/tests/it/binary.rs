//! The real binary: HTTP and HTTPS (TLS 1.2 and 1.3), Basic auth and
//! sessions, the state file across a restart, config errors at start-up.
//! curl is the client, as an operator would use it.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{certificate, htpasswd, Spawned};

/// Runs curl; returns (status, headers text, body JSON or Null).
fn curl(args: &[&str]) -> (u16, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("h");
    let out = Command::new("curl")
        .args(["-sS", "-k", "-o", "-", "-D"])
        .arg(&headers)
        .args(["-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl must be installed (ci/test installs it)");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    let h = std::fs::read_to_string(headers).unwrap_or_default();
    (
        code.parse().unwrap(),
        h,
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// Starts the binary with config file `cfg`, which must stop it; its
/// stderr.
fn start_fails(cfg: &std::path::Path) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "started with {}", cfg.display());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

#[test]
fn http_serves_the_requested_number_of_systems() {
    let emu = Spawned::start(&["--fake-systems", "3"]);
    let (code, _, body) = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]);
    assert_eq!(code, 200);
    assert_eq!(body["Members@odata.count"], 3);
}

#[test]
fn https_with_basic_auth_and_sessions_over_tls12_and_tls13() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let pw = htpasswd(dir.path(), "admin", "s3cret-pw", 4);
    let emu = Spawned::start(&[
        "--ssl-certificate",
        cert.to_str().unwrap(),
        "--ssl-key",
        key.to_str().unwrap(),
        "--auth-file",
        pw.to_str().unwrap(),
    ]);
    assert!(emu.url.starts_with("https://"));
    let systems = format!("{}/redfish/v1/Systems", emu.url);
    for tls in [
        ["--tlsv1.2", "--tls-max", "1.2"],
        ["--tlsv1.3", "--tls-max", "1.3"],
    ] {
        let (code, _, _) = curl(&[tls[0], tls[1], tls[2], "-u", "admin:s3cret-pw", &systems]);
        assert_eq!(code, 200, "{tls:?}");
    }
    assert_eq!(curl(&[&systems]).0, 401);
    assert_eq!(curl(&["-u", "admin:wrong", &systems]).0, 401);
    assert_eq!(curl(&[&format!("{}/redfish/v1/", emu.url)]).0, 200);

    let (code, h, _) = curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"UserName":"admin","Password":"s3cret-pw"}"#,
        &format!("{}/redfish/v1/SessionService/Sessions", emu.url),
    ]);
    assert_eq!(code, 201);
    let token = header(&h, "X-Auth-Token").expect("token");
    let location = header(&h, "Location").expect("location");
    let auth = format!("X-Auth-Token: {token}");
    assert_eq!(curl(&["-H", &auth, &systems]).0, 200);
    assert_eq!(
        curl(&[
            "-X",
            "DELETE",
            "-H",
            &auth,
            &format!("{}{location}", emu.url)
        ])
        .0,
        204
    );
    assert_eq!(curl(&["-H", &auth, &systems]).0, 401);
}

/// A state file that cannot be written stops the start, naming it (not a
/// log line at the first change, nor an error at exit).
#[test]
fn a_state_file_that_cannot_be_written_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // A folder where the file's folder should be.
    let blocker = dir.path().join("not-a-folder");
    std::fs::write(&blocker, "").unwrap();
    let state = blocker.join("state.json");
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args([
            "--port",
            "0",
            "--fake-systems",
            "1",
            "--state-file",
            state.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "nothing announced: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(state.to_str().unwrap()), "{err}");
}

#[test]
fn state_file_keeps_the_fake_state_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let args = ["--state-file", state.to_str().unwrap()];
    let emu = Spawned::start(&args);
    let (_, _, list) = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]);
    let sys = list["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let body = r#"{"Boot":{"BootSourceOverrideTarget":"UefiHttp","BootSourceOverrideEnabled":"Continuous","HttpBootUri":"http://192.0.2.1/x.efi"}}"#;
    let (code, _, _) = curl(&[
        "-X",
        "PATCH",
        "-H",
        "Content-Type: application/json",
        "-d",
        body,
        &format!("{}{sys}", emu.url),
    ]);
    assert_eq!(code, 200);
    assert!(emu.stop().success());
    let emu = Spawned::start(&args);
    let (_, _, s) = curl(&[&format!("{}{sys}", emu.url)]);
    assert_eq!(s["Boot"]["HttpBootUri"], "http://192.0.2.1/x.efi");
    assert_eq!(s["Boot"]["BootSourceOverrideEnabled"], "Continuous");
}

#[test]
fn bad_config_fails_at_start_up_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("inventory.toml");
    std::fs::write(&cfg, "[[systems]]\nname = \"a\"\narch = \"sparc\"\n").unwrap();
    let err = start_fails(&cfg);
    assert!(
        err.contains("inventory.toml") && err.contains("systems[0].arch") && err.contains("x86_64"),
        "{err}"
    );
}

#[test]
fn config_file_inventory_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("inventory.toml");
    std::fs::write(
        &cfg,
        "feature_set = \"vmedia\"\n[[systems]]\nname = \"web-1\"\nuuid = \"4f5a3c2e-0000-4000-8000-000000000001\"\nmacs = [\"52:54:00:12:34:56\"]\nmemory_mib = 2048\n",
    )
    .unwrap();
    let emu = Spawned::start(&["--config", cfg.to_str().unwrap()]);
    let (code, _, s) = curl(&[&format!(
        "{}/redfish/v1/Systems/4f5a3c2e-0000-4000-8000-000000000001",
        emu.url
    )]);
    assert_eq!(code, 200);
    assert_eq!(s["Name"], "web-1");
    assert_eq!(s["MemorySummary"]["TotalSystemMemoryGiB"], 2.0);
    assert!(s.get("Bios").is_none(), "vmedia feature set has no BIOS");
}

/// A rack of BMCs in one process: two systems with endpoints of their own
/// (each on its own loopback address, with its own service root, sessions
/// and the profile's fixed Ids), the third on the main service root.
#[test]
fn endpoints_of_their_own_are_separate_bmcs() {
    let dir = tempfile::tempdir().unwrap();
    let pw = htpasswd(dir.path(), "admin", "rack-pw", 4);
    let cfg = dir.path().join("rack.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[auth]
htpasswd = "{}"
[[systems]]
name = "dell"
profile = "idrac10"
[[systems]]
name = "hpe"
profile = "ilo5"
[[systems]]
name = "plain"
[[endpoints]]
listen = "127.0.1.1:0"
systems = ["dell"]
[[endpoints]]
listen = "127.0.1.2:0"
systems = ["hpe"]
"#,
            pw.display()
        ),
    )
    .unwrap();
    let (emu, lines) = Spawned::start_lines(&["--config", cfg.to_str().unwrap()], 3);
    let url_of = |line: &str| line.rsplit(' ').next().unwrap().to_string();
    assert!(
        lines[1].starts_with("shoal-emulator endpoint dell on http://127.0.1.1:"),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("shoal-emulator endpoint hpe on http://127.0.1.2:"),
        "{lines:?}"
    );
    let (dell, hpe) = (url_of(&lines[1]), url_of(&lines[2]));
    let get = |base: &str, path: &str| curl(&["-u", "admin:rack-pw", &format!("{base}{path}")]);

    // Each service root shows only its own systems.
    let (_, _, main) = get(&emu.url, "/redfish/v1/Systems");
    assert_eq!(main["Members@odata.count"], 1);
    let (_, _, d) = get(&dell, "/redfish/v1/Systems");
    assert_eq!(
        d["Members"][0]["@odata.id"],
        "/redfish/v1/Systems/System.Embedded.1"
    );
    let (code, _, sys) = get(&dell, "/redfish/v1/Systems/System.Embedded.1");
    assert_eq!(code, 200);
    assert_eq!(sys["Name"], "dell");
    assert_eq!(
        sys["Links"]["ManagedBy"][0]["@odata.id"],
        "/redfish/v1/Managers/iDRAC.Embedded.1"
    );
    let (code, _, mgr) = get(&dell, "/redfish/v1/Managers/iDRAC.Embedded.1");
    assert_eq!(code, 200, "{mgr}");
    assert_eq!(mgr["Id"], "iDRAC.Embedded.1");
    // iDRAC 10: the virtual media are the System's, 1 and 2.
    let (code, _, vm) = get(&dell, "/redfish/v1/Systems/System.Embedded.1/VirtualMedia");
    assert_eq!(code, 200);
    assert_eq!(
        vm["Members"][0]["@odata.id"],
        "/redfish/v1/Systems/System.Embedded.1/VirtualMedia/1"
    );
    assert_eq!(
        get(&dell, "/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia").0,
        404
    );
    assert_eq!(get(&dell, "/redfish/v1/Managers/System.Embedded.1").0, 404);
    let (_, _, h) = get(&hpe, "/redfish/v1/Systems/1");
    assert_eq!(
        (h["Name"].as_str(), h["Manufacturer"].as_str()),
        (Some("hpe"), Some("HPE"))
    );
    // The dell system is nowhere else.
    assert_eq!(get(&hpe, "/redfish/v1/Systems/System.Embedded.1").0, 404);
    // Each service root names its BMC's vendor (what Ironic keys its
    // vendor quirks on); the main one serves a generic system.
    let vendor = |base: &str| get(base, "/redfish/v1/").2["Vendor"].clone();
    assert_eq!(
        (vendor(&dell), vendor(&hpe), vendor(&emu.url)),
        (json!("Dell"), json!("HPE"), json!("Shoal"))
    );

    // Sessions are the endpoint's own.
    let (code, headers, _) = curl(&[
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"UserName":"admin","Password":"rack-pw"}"#,
        &format!("{dell}/redfish/v1/SessionService/Sessions"),
    ]);
    assert_eq!(code, 201);
    let token = header(&headers, "X-Auth-Token").unwrap();
    let with_token = |base: &str| {
        curl(&[
            "-H",
            &format!("X-Auth-Token: {token}"),
            &format!("{base}/redfish/v1/Systems"),
        ])
        .0
    };
    assert_eq!(with_token(&dell), 200);
    assert_eq!(with_token(&hpe), 401);
    assert_eq!(with_token(&emu.url), 401);
    // A change through the endpoint reaches its machine.
    let (code, _, _) = curl(&[
        "-u",
        "admin:rack-pw",
        "-X",
        "PATCH",
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"AssetTag":"rack-1"}"#,
        &format!("{dell}/redfish/v1/Systems/System.Embedded.1"),
    ]);
    assert_eq!(code, 200);
    assert_eq!(
        get(&dell, "/redfish/v1/Systems/System.Embedded.1").2["AssetTag"],
        "rack-1"
    );
}

#[test]
fn endpoint_per_system_counts_up_the_loopback_addresses() {
    let (emu, lines) = Spawned::start_lines(
        &[
            "--fake-systems",
            "3",
            "--profile",
            "ami-asrockrack",
            "--endpoint-per-system",
            "127.0.2.1:0",
        ],
        4,
    );
    for (i, line) in lines[1..].iter().enumerate() {
        let url = line.rsplit(' ').next().unwrap();
        assert!(
            url.starts_with(&format!("http://127.0.2.{}:", i + 1)),
            "{lines:?}"
        );
        let (code, _, s) = curl(&[&format!("{url}/redfish/v1/Systems/Self")]);
        assert_eq!(code, 200);
        assert_eq!(s["Name"], format!("node-{i}"));
    }
    let (_, _, main) = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]);
    assert_eq!(main["Members@odata.count"], 0);
}

#[test]
fn endpoint_mistakes_stop_the_start_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(
        &cfg,
        "[[systems]]\nname = \"a\"\n[[endpoints]]\nlisten = \"127.0.1.9:0\"\nsystems = [\"b\"]\n",
    )
    .unwrap();
    let err = start_fails(&cfg);
    assert!(
        err.contains("endpoints[0].systems[0]") && err.contains("\"b\""),
        "{err}"
    );
}

/// Every listener is bound before any is announced: an admin address
/// that cannot be had stops the start with nothing said on stdout, so a
/// reader never sees a service that then goes away.
#[test]
fn an_admin_address_in_use_stops_the_start_before_anything_is_announced() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = busy.local_addr().unwrap().to_string();
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--fake-systems", "1", "--port", "0"])
        .args(["--admin-listen", &at, "--admin-token", "adm-tok"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("--admin-listen: cannot listen on {at}")),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{err}");
}

/// The admin endpoint drives fault injection at runtime: errors with the
/// vendor's busy body, dropped connections, a BMC reboot, latency and slow
/// power transitions; it has its own token and checks what it is given.
#[test]
fn the_admin_endpoint_injects_faults() {
    let (emu, lines) = Spawned::start_lines(
        &[
            "--fake-systems",
            "2",
            "--profile",
            "idrac9",
            "--admin-listen",
            "127.0.0.1:0",
            "--admin-token",
            "adm-tok",
        ],
        2,
    );
    let admin = lines[1].rsplit(' ').next().unwrap().to_string();
    assert!(
        lines[1].starts_with("shoal-emulator admin on http://127.0.0.1:"),
        "{lines:?}"
    );
    let faults = format!("{admin}/shoal/v1/faults");
    let put = |body: &str| {
        curl(&[
            "-X",
            "PUT",
            "-H",
            "Authorization: Bearer adm-tok",
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
            &faults,
        ])
    };
    // Its own auth; bad rules are refused naming the key.
    assert_eq!(curl(&[&faults]).0, 401);
    assert_eq!(curl(&["-H", "Authorization: Bearer wrong", &faults]).0, 401);
    let (code, _, e) = put(r#"{"rules": [{"error_rate": 2}]}"#);
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("rules[0].error_rate"),
        "{e}"
    );

    let systems = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]).2;
    let sys = |i: usize| {
        format!(
            "{}{}",
            emu.url,
            systems["Members"][i]["@odata.id"].as_str().unwrap()
        )
    };
    let patch = |url: &str| {
        curl(&[
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"AssetTag":"x"}"#,
            url,
        ])
    };
    // Every PATCH of node-0 fails as a busy iDRAC does; node-1 is untouched.
    let (code, _, _) = put(
        r#"{"seed": 1, "rules": [{"systems": ["node-0"], "methods": ["PATCH"], "error_rate": 1.0}]}"#,
    );
    assert_eq!(code, 200);
    let (code, _, body) = patch(&sys(0));
    assert_eq!(code, 503);
    let ids: Vec<&str> = body["error"]["@Message.ExtendedInfo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["MessageId"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"IDRAC.2.8.SYS518"), "{ids:?}");
    assert_eq!(patch(&sys(1)).0, 200);
    assert_eq!(curl(&[&sys(0)]).0, 200, "GETs pass");

    // Dropped connections: no answer at all.
    put(r#"{"rules": [{"path": "/redfish/v1/Systems", "drop_rate": 1.0}]}"#);
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            &format!("{}/redfish/v1/Systems", emu.url),
        ])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "curl got an answer from a dropped connection"
    );
    assert_eq!(curl(&[&format!("{}/redfish/v1", emu.url)]).0, 200);

    // Latency is added.
    put(r#"{"rules": [{"latency_ms": 400}]}"#);
    let t = std::time::Instant::now();
    assert_eq!(curl(&[&format!("{}/redfish/v1", emu.url)]).0, 200);
    assert!(t.elapsed() >= std::time::Duration::from_millis(400));

    // A slow power transition: accepted at once, carried out later.
    put(r#"{"rules": [{"systems": ["node-1"], "power_delay_ms": 1500}]}"#);
    let (code, _, _) = curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"ResetType":"On"}"#,
        &format!("{}/Actions/ComputerSystem.Reset", sys(1)),
    ]);
    assert_eq!(code, 204);
    assert_eq!(curl(&[&sys(1)]).2["PowerState"], "Off");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while curl(&[&sys(1)]).2["PowerState"] != "On" {
        assert!(
            std::time::Instant::now() < deadline,
            "the delayed power-on never came"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // A BMC reboot: 503 with Retry-After, then back.
    let (code, _, _) = curl(&[
        "-X",
        "DELETE",
        "-H",
        "Authorization: Bearer adm-tok",
        &faults,
    ]);
    assert_eq!(code, 200);
    let (code, _, state) = curl(&[
        "-X",
        "POST",
        "-H",
        "Authorization: Bearer adm-tok",
        "-d",
        r#"{"seconds": 2}"#,
        &format!("{faults}/reboot"),
    ]);
    assert_eq!(code, 200, "{state}");
    let (code, headers, _) = curl(&[&format!("{}/redfish/v1", emu.url)]);
    assert_eq!(code, 503);
    assert!(header(&headers, "Retry-After").is_some());
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(curl(&[&format!("{}/redfish/v1", emu.url)]).0, 200);
}

#[test]
fn faults_in_the_config_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("f.toml");
    std::fs::write(
        &cfg,
        "[faults]\nseed = 3\n[[faults.rules]]\ndrop_rate = 1.5\n",
    )
    .unwrap();
    let err = start_fails(&cfg);
    assert!(err.contains("faults.rules[0].drop_rate"), "{err}");
}

/// Started as sushy-emulator is, from a sushy-tools configuration (here
/// metal3-dev-env's shape: TLS, bcrypt Basic auth, fake systems): the
/// systems at the paths sushy-tools serves them (UUIDs, a name redirected
/// to the UUID, the Manager under the system's UUID, the `Cd` device, the
/// NIC by MAC), and their state kept in the configuration's state folder
/// across a restart, as sushy-tools keeps it.
#[test]
fn a_sushy_tools_configuration_is_served_at_sushy_tools_paths() {
    const UUID: &str = "5b5f4e6c-1c1a-4a4e-9c61-0d5f0e0e0001";
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let pw = htpasswd(dir.path(), "admin", "password", 4);
    let conf = dir.path().join("conf.py");
    std::fs::write(
        &conf,
        format!(
            "# sushy-tools configuration\n\
             SUSHY_EMULATOR_LISTEN_IP = u'127.0.0.1'\n\
             SUSHY_EMULATOR_SSL_CERT = {cert:?}\n\
             SUSHY_EMULATOR_SSL_KEY = {key:?}\n\
             SUSHY_EMULATOR_AUTH_FILE = {pw:?}\n\
             SUSHY_EMULATOR_STATE_DIR = {state:?}\n\
             SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{\n\
             \x20   'uuid': '{UUID}', 'name': 'node-0', 'power_state': 'Off',\n\
             \x20   'nics': [{{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.0.100'}}],\n\
             }}]\n",
            cert = cert.display().to_string(),
            key = key.display().to_string(),
            pw = pw.display().to_string(),
            state = dir.path().join("state").display().to_string(),
        ),
    )
    .unwrap();
    let args = ["--config", conf.to_str().unwrap()];
    let emu = Spawned::start(&args);
    assert!(emu.url.starts_with("https://"), "{}", emu.url);
    let get =
        |emu: &Spawned, path: &str| curl(&["-u", "admin:password", &format!("{}{path}", emu.url)]);
    let (code, _, list) = get(&emu, "/redfish/v1/Systems");
    assert_eq!(code, 200);
    assert_eq!(
        list["Members"],
        json!([{"@odata.id": format!("/redfish/v1/Systems/{UUID}")}])
    );
    assert_eq!(curl(&[&format!("{}/redfish/v1/Systems", emu.url)]).0, 401);
    let (code, h, _) = get(&emu, "/redfish/v1/Systems/node-0");
    assert!(matches!(code, 301 | 307 | 308), "{code}");
    assert_eq!(
        header(&h, "location").as_deref(),
        Some(format!("/redfish/v1/Systems/{UUID}").as_str())
    );
    for path in [
        format!("/redfish/v1/Managers/{UUID}"),
        format!("/redfish/v1/Systems/{UUID}/VirtualMedia/Cd"),
        format!("/redfish/v1/Systems/{UUID}/EthernetInterfaces/00:5c:52:31:3a:9c"),
    ] {
        assert_eq!(get(&emu, &path).0, 200, "{path}");
    }
    let (code, _, _) = curl(&[
        "-u",
        "admin:password",
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"ResetType":"On"}"#,
        &format!(
            "{}/redfish/v1/Systems/{UUID}/Actions/ComputerSystem.Reset",
            emu.url
        ),
    ]);
    assert_eq!(code, 204);
    assert!(emu.stop().success());
    let emu = Spawned::start(&args);
    let (_, _, sys) = get(&emu, &format!("/redfish/v1/Systems/{UUID}"));
    assert_eq!(sys["PowerState"], "On", "kept in SUSHY_EMULATOR_STATE_DIR");
}

/// A sushy-tools configuration with code in it does not start, and says
/// which line.
#[test]
fn a_sushy_tools_configuration_with_code_fails_at_start_up_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        "SUSHY_EMULATOR_LISTEN_PORT = 8000\nimport os\nSUSHY_EMULATOR_LIBVIRT_URI = os.environ['X']\n",
    )
    .unwrap();
    let err = start_fails(&conf);
    assert!(
        err.contains("emulator.conf: line 2: `import os` is code"),
        "{err}"
    );
}
