//! Firmware updates on a replayed capture: SimpleUpdate runs as Shoal's
//! own (a task, the image checked), and the captured versions (the
//! system's `BiosVersion`, the FirmwareInventory entry that names the
//! BIOS) follow what the machine has installed.

use std::io::{BufRead, BufReader, Write};

use serde_json::{json, Value};

use crate::common::Spawned;
use crate::mockup::{base, call, put};

const SYS: &str = "/redfish/v1/Systems/System.Embedded.1";
const ENTRY: &str = "/redfish/v1/UpdateService/FirmwareInventory/Installed-159-1.0.0";

/// Serves `bytes` to every GET on loopback; the URL.
fn serve_image(bytes: Vec<u8>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/bios.img", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                bytes.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&bytes);
        }
    });
    url
}

/// A captured iDRAC: its system, its UpdateService (SimpleUpdate, its
/// `MultipartHttpPushUri`) and its BIOS's inventory entry.
fn capture(root: &std::path::Path) {
    let write = |rel: &str, v: Value| put(root, rel, "index.json", v.to_string());
    write(
        "",
        json!({"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"},
               "UpdateService": {"@odata.id": "/redfish/v1/UpdateService"}}),
    );
    write(
        "Systems",
        json!({"@odata.id": "/redfish/v1/Systems", "Members": [{"@odata.id": SYS}]}),
    );
    write(
        "Systems/System.Embedded.1",
        json!({"@odata.id": SYS, "PowerState": "Off", "BiosVersion": "1.0.0",
               "Actions": {"#ComputerSystem.Reset": {"target": format!("{SYS}/Actions/ComputerSystem.Reset")}}}),
    );
    write(
        "UpdateService",
        json!({"@odata.id": "/redfish/v1/UpdateService",
               "FirmwareInventory": {"@odata.id": "/redfish/v1/UpdateService/FirmwareInventory"},
               "MultipartHttpPushUri": "/redfish/v1/UpdateService/MultipartUpload",
               "Actions": {"#UpdateService.SimpleUpdate": {
                   "target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}}),
    );
    write(
        "UpdateService/FirmwareInventory",
        json!({"@odata.id": "/redfish/v1/UpdateService/FirmwareInventory",
               "Members": [{"@odata.id": ENTRY}]}),
    );
    write(
        "UpdateService/FirmwareInventory/Installed-159-1.0.0",
        json!({"@odata.id": ENTRY, "Id": "Installed-159-1.0.0", "Name": "BIOS", "Version": "1.0.0"}),
    );
}

/// Follows the task at `uri` to its end, starts the host (a BIOS image
/// takes effect then), and finds `version` where the capture shows the
/// BIOS's.
fn installed_at_next_start(b: &str, uri: &str, version: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut t = Value::Null;
    while std::time::Instant::now() < deadline {
        t = call("GET", &format!("{b}{uri}"), "", None).2;
        if t["TaskState"] == "Completed" || t["TaskState"] == "Exception" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(t["TaskState"], "Completed", "{t}");
    let (code, _, v) = call(
        "POST",
        &format!("{b}{SYS}/Actions/ComputerSystem.Reset"),
        "",
        Some(json!({"ResetType": "On"})),
    );
    assert_eq!(code, 204, "{v}");
    let sys = call("GET", &format!("{b}{SYS}"), "", None).2;
    assert_eq!(sys["BiosVersion"], version, "{sys}");
    let entry = call("GET", &format!("{b}{ENTRY}"), "", None).2;
    assert_eq!(entry["Version"], version, "{entry}");
}

#[test]
fn a_replayed_bios_update_shows_the_installed_version_where_the_capture_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    capture(dir.path());
    let image =
        shoal_harness::firmware::image("bios", "2.5.0", Some("2026-11-02"), b"bios payload");
    let url = serve_image(image);
    let emu = Spawned::start(&[
        "--mockup",
        dir.path().to_str().unwrap(),
        "--media-allow-net",
        "127.0.0.0/8",
    ]);
    let b = base(&emu);
    let simple = format!("{b}/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate");
    // Targets are the capture's own resources: a BIOS image is no BMC's.
    let manager = json!({"ImageURI": url, "Targets": ["/redfish/v1/Managers/iDRAC.Embedded.1"]});
    let (code, _, v) = call("POST", &simple, "", Some(manager));
    assert_eq!(code, 400, "not a captured resource: {v}");
    let entry = json!({"ImageURI": url, "Targets": [ENTRY]});
    let (code, _, task) = call("POST", &simple, "", Some(entry));
    assert_eq!(code, 202, "{task}");
    installed_at_next_start(&b, task["@odata.id"].as_str().unwrap(), "2.5.0");
    emu.stop();
}

/// An image pushed to the captured `MultipartHttpPushUri` (Dell's
/// `MultipartUpload`), as community.general's redfish_command sends it;
/// the URI still reads as captured.
#[test]
fn an_image_pushed_to_the_captured_multipart_uri_installs() {
    let dir = tempfile::tempdir().unwrap();
    capture(dir.path());
    let emu = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let b = base(&emu);
    let image = shoal_harness::firmware::image("bios", "3.1.0", None, b"bios payload");
    let boundary = "shoal-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n\
         Content-Type: application/json\r\n\r\n{{}}\r\n--{boundary}\r\n\
         Content-Disposition: form-data; name=\"UpdateFile\"; filename=\"bios.img\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&image);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent
        .post(&format!("{b}/redfish/v1/UpdateService/MultipartUpload"))
        .header(
            "Content-Type",
            &format!("multipart/form-data; boundary={boundary}"),
        )
        .send(&body[..])
        .unwrap();
    let code = resp.status().as_u16();
    let text = resp.into_body().read_to_string().unwrap();
    let task: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    assert_eq!(code, 202, "{text}");
    installed_at_next_start(&b, task["@odata.id"].as_str().unwrap(), "3.1.0");
    emu.stop();
}
