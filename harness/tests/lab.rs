//! `shoal-harness lab up|status|down` on this host's real lab: one machine
//! with its BMC comes up, its BMC answers only with the lab's account (on
//! the host and on the lab network), powers the machine on, the inventory
//! names it, and `down` leaves no namespace, daemon or state behind.

use std::path::Path;
use std::process::Command;

fn harness(args: &[&str], dir: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shoal-harness"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .expect("run shoal-harness");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn get(url: &str, auth: Option<&str>) -> (u16, serde_json::Value) {
    let mut req = ureq::get(url).config().http_status_as_error(false).build();
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let resp = req.call().expect("the BMC answers");
    let code = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap_or_default();
    (code, serde_json::from_str(&text).unwrap_or_default())
}

#[test]
fn lab_up_serves_bmcs_and_inventory_then_down_stops_everything() {
    let missing = shoal_harness::lab::missing();
    if !missing.is_empty() {
        let why = format!("this host cannot run the lab: {}", missing.join(", "));
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("SKIPPED: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let (ok, text) = harness(
        &["lab", "up", "--machines", "1", "--port", &port],
        dir.path(),
    );
    assert!(ok, "{text}");
    let s = shoal_harness::lab::read_state(dir.path())
        .unwrap()
        .expect("lab.json");
    let m = &s.machines[0];
    let sys = format!("{}/redfish/v1/Systems/{}", s.redfish, m.system_id);
    assert_eq!(get(&sys, None).0, 401, "no account, no answer");
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:{}", s.username, s.password)
        )
    );
    let (code, body) = get(&sys, Some(&auth));
    assert_eq!(
        (code, body["PowerState"].as_str()),
        (200, Some("Off")),
        "{body}"
    );
    let nodes: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("ironic-nodes.json")).unwrap())
            .unwrap();
    assert_eq!(
        nodes["nodes"][0]["driver_info"]["redfish_system_id"],
        format!("/redfish/v1/Systems/{}", m.system_id)
    );
    let resp = ureq::post(&format!("{sys}/Actions/ComputerSystem.Reset"))
        .header("Authorization", &auth)
        .header("Content-Type", "application/json")
        .send(r#"{"ResetType": "On"}"#)
        .expect("Reset");
    assert_eq!(resp.status().as_u16(), 204);
    let (ok, text) = harness(&["lab", "status"], dir.path());
    assert!(ok && text.contains("   On "), "{text}");
    // The same BMC on the lab network, for tools run in the namespace.
    let (in_lab, a) = (
        format!("{}/redfish/v1/Systems/{}", s.redfish_in_lab, m.system_id),
        auth.clone(),
    );
    let power =
        shoal_harness::netns::inside(&s.namespace, move || Ok(get(&in_lab, Some(&a)))).unwrap();
    assert_eq!(power.1["PowerState"], "On", "{:?}", power);

    let (ok, text) = harness(&["lab", "down"], dir.path());
    assert!(ok, "{text}");
    assert!(shoal_harness::lab::read_state(dir.path())
        .unwrap()
        .is_none());
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&s.namespace));
    assert!(
        !Path::new(&format!("/proc/{}/cmdline", s.pid)).exists()
            || std::fs::read(format!("/proc/{}/cmdline", s.pid))
                .unwrap()
                .is_empty()
    );
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "the BMC is gone"
    );
}
