//! `shoal-harness lab up|status|down` on this host's real lab: one machine
//! with its BMC comes up, its BMC answers only with the lab's account (on
//! the host and on the lab network), the inventory names it, the machine
//! boots an ISO of the user's own from the lab's folder through the BMC's
//! virtual media, and `down` leaves no namespace, daemon or state behind.

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

/// `lab down` on drop.
struct Down(std::path::PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = harness(&["lab", "down"], &self.0);
    }
}

fn send(url: &str, auth: &str, method: &str, body: &str) -> u16 {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let req = match method {
        "PATCH" => agent.patch(url),
        _ => agent.post(url),
    };
    req.header("Authorization", auth)
        .header("Content-Type", "application/json")
        .send(body)
        .expect("the BMC answers")
        .status()
        .as_u16()
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
    // Whatever fails below, the lab goes.
    let _down = Down(dir.path().to_path_buf());
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
    // A boot file of the user's own, served from the lab's folder: the
    // BMC inserts it as its virtual CD and the machine boots it.
    let iso = shoal_harness::images::grub_marker("iso", "lab-own-iso").expect("marker ISO");
    std::fs::copy(&iso, Path::new(&s.served).join("mine.iso")).unwrap();
    let insert = format!(
        r#"{{"Image": "{}/mine.iso", "Inserted": true}}"#,
        s.media_server
    );
    let code = send(
        &format!("{sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"),
        &auth,
        "POST",
        &insert,
    );
    assert!(matches!(code, 202 | 204), "InsertMedia: {code}");
    let once =
        r#"{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}"#;
    assert_eq!(send(&sys, &auth, "PATCH", once), 200);
    let reset = r#"{"ResetType": "On"}"#;
    assert_eq!(
        send(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            &auth,
            "POST",
            reset
        ),
        204
    );
    let booted = shoal_harness::lab::wait_until(std::time::Duration::from_secs(180), || {
        std::fs::read_to_string(&m.serial).is_ok_and(|l| l.contains("SHOAL-MARKER lab-own-iso"))
    });
    assert!(
        booted.is_some(),
        "no marker on {}: {}",
        m.serial,
        std::fs::read_to_string(&m.serial).unwrap_or_default()
    );
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
