//! `--ironic-cloud` against the real Ironic (the venv `ci/test` builds,
//! `SHOAL_IRONIC_VENV`), with nothing mocked: a Shoal with one fake system
//! (the machine's BMC) is enrolled in a standalone Ironic with the redfish
//! hardware type and managed; a second Shoal serves Ironic's nodes
//! (`--ironic-cloud lab`, found through `OS_CLIENT_CONFIG_FILE`). What a
//! Redfish client asks of the second must go through Ironic and its
//! redfish driver and arrive at the first: power, the boot device, the
//! boot mode, virtual media in and out. What Ironic has no call for is
//! refused and reaches nothing; Ironic gone is a 503.
//! Everything runs in a network namespace of its own, on its loopback.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shoal_harness::ironic::{Ironic, Layout};

use crate::common::required;

const MAC: &str = "52:54:00:1c:0f:01";
/// Ironic's account (`auth_strategy = http_basic`).
const USER: &str = "ironic";
const PASS: &str = "s3cret-ironic";

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        shoal_harness::netns::delete(&self.0);
    }
}

/// An emulator inside the namespace; killed on drop.
struct Emu {
    child: Child,
    url: String,
}

impl Drop for Emu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn emulator(ns: &str, args: &[&str], env: &[(&str, &str)]) -> Emu {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["-i", "127.0.0.1", "--port", "0", "--ipmi-port", "0"])
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn shoal-emulator");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
    assert!(url.starts_with("http"), "banner: {line:?}");
    Emu { child, url }
}

/// One HTTP request from inside the namespace: status and JSON body.
fn http(ns: &str, method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let (method, url) = (method.to_string(), url.to_string());
    shoal_harness::netns::inside(ns, move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let req = ureq::http::Request::builder()
            .method(method.as_str())
            .uri(&url)
            .header("X-OpenStack-Ironic-API-Version", "1.89")
            // Ironic's credentials (its API asks for them); the
            // emulators, without accounts, ignore them.
            .header(
                "Authorization",
                format!("Basic {}", b64(&format!("{USER}:{PASS}"))),
            )
            .header("Content-Type", "application/json");
        let resp = match body {
            Some(b) => agent.run(req.body(serde_json::to_vec(&b)?)?),
            None => agent.run(req.body(())?),
        };
        let mut resp = resp?;
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string()?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    })
    .unwrap()
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
    started.elapsed()
}

#[test]
fn ironic_nodes_are_systems_and_what_is_asked_of_them_reaches_the_machine() {
    let Some(venv) = std::env::var_os("SHOAL_IRONIC_VENV")
        .map(std::path::PathBuf::from)
        .and_then(|v| required(v.join("bin/ironic"), "the Ironic venv, SHOAL_IRONIC_VENV"))
        .and_then(|p| p.parent()?.parent().map(|v| v.to_path_buf()))
    else {
        return;
    };
    let ns = Ns(format!("shoal-irb-{}", std::process::id()));
    shoal_harness::netns::create(&ns.0).unwrap();
    let dir = tempfile::tempdir().unwrap();

    // The machine and its BMC.
    let bmc = emulator(&ns.0, &["--fake-systems", "1"], &[]);
    let (_, systems) = http(
        &ns.0,
        "GET",
        &format!("{}/redfish/v1/Systems", bmc.url),
        None,
    );
    let machine = format!(
        "{}{}",
        bmc.url,
        systems["Members"][0]["@odata.id"].as_str().unwrap()
    );

    // The standalone Ironic, the machine enrolled and managed.
    let layout = Layout {
        dir: dir.path().join("ironic"),
        www: dir.path().join("www"),
        http_url: "http://127.0.0.1:9".into(),
        verify_ca: None,
        tftp_server: "127.0.0.1".into(),
        api_port: 16390,
        console_port: 16391,
        agent: None,
        ilo: false,
        basic_auth: Some(crate::common::htpasswd(dir.path(), USER, PASS, 4)),
        power_sync_secs: None,
    };
    std::fs::create_dir_all(&layout.www).unwrap();
    let ironic = Ironic::start(&ns.0, Some(&venv), &layout).unwrap();
    let api = ironic.api.trim_end_matches('/').to_string();
    let (status, node) = http(
        &ns.0,
        "POST",
        &format!("{api}/v1/nodes"),
        Some(json!({
            "name": "rack1-node7",
            "driver": "redfish",
            "boot_interface": "redfish-virtual-media",
            "driver_info": {"redfish_address": bmc.url, "redfish_username": "admin",
                            "redfish_password": "password"},
            "properties": {"cpu_arch": "x86_64", "memory_mb": 6144, "cpus": 3, "local_gb": 40},
        })),
    );
    assert_eq!(status, 201, "{node}");
    let uuid = node["uuid"].as_str().unwrap().to_string();
    let (status, port) = http(
        &ns.0,
        "POST",
        &format!("{api}/v1/ports"),
        Some(json!({"node_uuid": uuid, "address": MAC})),
    );
    assert_eq!(status, 201, "{port}");
    let (status, _) = http(
        &ns.0,
        "PUT",
        &format!("{api}/v1/nodes/{uuid}/states/provision"),
        Some(json!({"target": "manage"})),
    );
    assert_eq!(status, 202);
    wait_for("the node manageable", Duration::from_secs(90), || {
        http(&ns.0, "GET", &format!("{api}/v1/nodes/{uuid}"), None).1["provision_state"]
            == "manageable"
    });

    // The BMC in front of Ironic.
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(
        &clouds,
        format!(
            "clouds:\n  lab:\n    auth_type: http_basic\n    baremetal_endpoint_override: {api}\n    \
             auth: {{username: {USER}, password: {PASS}}}\n  \
             wrong:\n    auth_type: http_basic\n    baremetal_endpoint_override: {api}\n    \
             auth: {{username: {USER}, password: not-it}}\n"
        ),
    )
    .unwrap();
    let front = emulator(
        &ns.0,
        &["--ironic-cloud", "lab"],
        &[("OS_CLIENT_CONFIG_FILE", clouds.to_str().unwrap())],
    );
    // The wrong password: the start stops, saying so.
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--ironic-cloud", "wrong"])
        .env("OS_CLIENT_CONFIG_FILE", &clouds)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("refused the credentials"),
        "{err}"
    );
    let get = |url: &str| http(&ns.0, "GET", url, None);
    let (status, coll) = get(&format!("{}/redfish/v1/Systems", front.url));
    assert_eq!(status, 200, "{coll}");
    assert_eq!(coll["Members@odata.count"], 1, "{coll}");
    let sys = format!("{}/redfish/v1/Systems/{uuid}", front.url);
    assert_eq!(
        coll["Members"][0]["@odata.id"],
        format!("/redfish/v1/Systems/{uuid}")
    );
    let (status, s) = get(&sys);
    assert_eq!(status, 200, "{s}");
    assert_eq!(s["Name"], "rack1-node7");
    assert_eq!(s["UUID"], uuid);
    assert_eq!(s["PowerState"], "Off");
    assert_eq!(
        s["MemorySummary"]["TotalSystemMemoryGiB"].as_f64(),
        Some(6.0)
    );
    assert_eq!(s["ProcessorSummary"]["LogicalProcessorCount"], 3);
    // By name too, as sushy-tools finds nodes.
    assert_eq!(
        get(&format!("{}/redfish/v1/Systems/rack1-node7", front.url)).0,
        200
    );
    let (_, nics) = get(&format!("{sys}/EthernetInterfaces?$expand=.($levels=1)"));
    assert_eq!(nics["Members"][0]["MACAddress"], MAC, "{nics}");

    // Power: On through Ironic reaches the machine.
    let (status, body) = http(
        &ns.0,
        "POST",
        &format!("{sys}/Actions/ComputerSystem.Reset"),
        Some(json!({"ResetType": "On"})),
    );
    assert!(status == 204 || status == 200, "{status} {body}");
    let took = wait_for("the machine On", Duration::from_secs(60), || {
        get(&machine).1["PowerState"] == "On"
    });
    wait_for("the front On", Duration::from_secs(30), || {
        get(&sys).1["PowerState"] == "On"
    });
    eprintln!("Reset On through Ironic reached the machine in {took:?}");

    // The boot device, persistent, and the boot mode.
    let (status, body) = http(
        &ns.0,
        "PATCH",
        &sys,
        Some(json!({"Boot": {"BootSourceOverrideTarget": "Cd",
                             "BootSourceOverrideEnabled": "Continuous"}})),
    );
    assert_eq!(status, 200, "{body}");
    let (_, m) = get(&machine);
    assert_eq!(m["Boot"]["BootSourceOverrideTarget"], "Cd", "{m}");
    assert_eq!(m["Boot"]["BootSourceOverrideEnabled"], "Continuous");
    assert_eq!(body["Boot"]["BootSourceOverrideTarget"], "Cd", "{body}");
    let (status, body) = http(
        &ns.0,
        "PATCH",
        &sys,
        Some(json!({"Boot": {"BootSourceOverrideMode": "Legacy"}})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(get(&machine).1["Boot"]["BootSourceOverrideMode"], "Legacy");
    assert_eq!(get(&sys).1["Boot"]["BootSourceOverrideMode"], "Legacy");
    let (_, n) = http(&ns.0, "GET", &format!("{api}/v1/nodes/{uuid}"), None);
    assert_eq!(n["boot_mode"], "bios");

    // Virtual media in (a Task until Ironic's conductor is done), then
    // out. First an image Ironic cannot reach: the Task fails with
    // Ironic's words and the machine's CD stays empty.
    let files = crate::common::file_server_on(
        shoal_harness::netns::bind_in(&ns.0, "127.0.0.1:0".parse().unwrap()).unwrap(),
        vec![("/boot.iso", crate::common::fake_iso(64 << 10))],
    );
    let insert = |image: &str| {
        let (status, body) = http(
            &ns.0,
            "POST",
            &format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"),
            Some(json!({"Image": image, "Inserted": true})),
        );
        assert_eq!(status, 202, "{body}");
        let task = format!("{}{}", front.url, body["@odata.id"].as_str().unwrap());
        let mut last = Value::Null;
        wait_for("the InsertMedia task", Duration::from_secs(90), || {
            last = get(&task).1;
            last["TaskState"] != "Running" && last["TaskState"] != "New"
        });
        last
    };
    let task = insert(&format!("{files}/missing.iso"));
    assert_eq!(task["TaskState"], "Exception", "{task}");
    assert!(task.to_string().contains("Ironic"), "{task}");
    let image = format!("{files}/boot.iso");
    let image = image.as_str();
    let task = insert(image);
    assert_eq!(task["TaskState"], "Completed", "{task}");
    let cd = |system: &str| get(&format!("{system}/VirtualMedia/Cd")).1;
    // Ironic publishes the image on its own web server and inserts that
    // (its RPC API drops `image_download_source`): the machine's CD holds
    // Ironic's copy, the front's what the client asked for.
    let machine_cd = || {
        let v = cd(&machine);
        (v["Inserted"] == true).then_some(v)
    };
    assert!(
        machine_cd().is_some(),
        "the machine's CD is empty: {}",
        get(&format!("{machine}/VirtualMedia?$expand=.($levels=1)")).1
    );
    assert_eq!(cd(&sys)["Image"], image);
    let (status, body) = http(
        &ns.0,
        "POST",
        &format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"),
        Some(json!({})),
    );
    assert!(status == 204 || status == 200, "{status} {body}");
    assert!(machine_cd().is_none(), "the machine's CD is still in");
    assert_ne!(cd(&sys)["Image"], image);

    // What Ironic has no call for: refused, nothing sent.
    let (status, body) = http(
        &ns.0,
        "PATCH",
        &format!("{sys}/Bios/Settings"),
        Some(json!({"Attributes": {"NumLock": "Off"}})),
    );
    assert_eq!(status, 400, "{body}");
    let ids: Vec<&str> = body["error"]["@Message.ExtendedInfo"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["MessageId"].as_str())
        .collect();
    assert!(
        ids.iter().any(|i| i.ends_with(".ActionNotSupported")),
        "{body}"
    );
    let (status, body) = http(
        &ns.0,
        "PATCH",
        &sys,
        Some(json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp",
                             "HttpBootUri": "http://127.0.0.1:9/x.efi"}})),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(get(&machine).1["Boot"]["BootSourceOverrideTarget"], "Cd");
    for bad in ["nope", "..", "a%2Fb"] {
        assert_eq!(
            get(&format!("{}/redfish/v1/Systems/{bad}", front.url)).0,
            404,
            "{bad}"
        );
    }

    // Ironic gone: the front answers 503, and stays up.
    drop(ironic);
    let (status, body) = get(&sys);
    assert_eq!(status, 503, "{body}");
    assert_eq!(get(&format!("{}/redfish/v1", front.url)).0, 200);
}

/// Start-up: no such cloud, a Keystone cloud, an Ironic that does not
/// answer, and --ironic-cloud with libvirt: each refused, naming why.
#[test]
fn a_cloud_that_cannot_be_served_stops_the_start_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = free.local_addr().unwrap();
    drop(free);
    std::fs::write(
        &clouds,
        format!(
            "clouds:\n  gone:\n    auth_type: none\n    baremetal_endpoint_override: http://{dead}\n  \
             keystone:\n    auth_type: password\n    auth: {{auth_url: 'http://{dead}/identity'}}\n"
        ),
    )
    .unwrap();
    let fails = |args: &[&str]| {
        let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
            .args(["--port", "0"])
            .args(args)
            .env("OS_CLIENT_CONFIG_FILE", &clouds)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "started with {args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = fails(&["--ironic-cloud", "nope"]);
    assert!(
        e.contains("clouds.nope: no such cloud (the file has: gone, keystone)"),
        "{e}"
    );
    let e = fails(&["--ironic-cloud", "keystone"]);
    assert!(
        e.contains("clouds.keystone.auth_type: \"password\" is Keystone"),
        "{e}"
    );
    let e = fails(&["--ironic-cloud", "gone"]);
    assert!(
        e.contains(&format!(
            "Ironic at http://{dead} (cloud gone) does not answer"
        )),
        "{e}"
    );
    let e = fails(&["--ironic-cloud", "gone", "--fake-systems", "2"]);
    assert!(
        e.contains("cannot be used with") || e.contains("cannot be combined"),
        "{e}"
    );
    // A sushy-tools configuration names the cloud the same way.
    let conf = dir.path().join("emulator.conf");
    std::fs::write(&conf, "SUSHY_EMULATOR_IRONIC_CLOUD = 'nope'\n").unwrap();
    let e = fails(&["--config", conf.to_str().unwrap()]);
    assert!(e.contains("clouds.nope: no such cloud"), "{e}");
}
