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

#[test]
fn a_replayed_bios_update_shows_the_installed_version_where_the_capture_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, v: Value| put(dir.path(), rel, "index.json", v.to_string());
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
    let (code, _, task) = call(
        "POST",
        &format!("{b}/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"),
        "",
        Some(json!({"ImageURI": url})),
    );
    assert_eq!(code, 202, "{task}");
    let uri = task["@odata.id"].as_str().unwrap().to_string();
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
    // A BIOS image takes effect when the host next starts.
    let (code, _, v) = call(
        "POST",
        &format!("{b}{SYS}/Actions/ComputerSystem.Reset"),
        "",
        Some(json!({"ResetType": "On"})),
    );
    assert_eq!(code, 204, "{v}");
    let sys = call("GET", &format!("{b}{SYS}"), "", None).2;
    assert_eq!(sys["BiosVersion"], "2.5.0", "{sys}");
    let entry = call("GET", &format!("{b}{ENTRY}"), "", None).2;
    assert_eq!(entry["Version"], "2.5.0", "{entry}");
    emu.stop();
}
