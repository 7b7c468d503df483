//! A replayed capture's VirtualMedia devices beyond the machine's slots
//! (bmcweb's `Slot_0`…`Slot_N`) share them, the media showing on the
//! device that inserted it; a vendor's own insert target (iLO's
//! `HpeiLOVirtualMedia.InsertVirtualMedia`) inserts as the standard one;
//! a URI in another case finds the captured resource, as on an iLO; an
//! insert that runs as a task answers 202 with a monitor the replay serves.

use serde_json::{json, Value};

use crate::common::Spawned;
use crate::mockup::{base, call, put};

const VM: &str = "/redfish/v1/Managers/bmc/VirtualMedia";

fn device(id: &str, insert: bool, oem: bool) -> Value {
    let at = |a: &str| json!({"target": format!("{VM}/{id}/Actions/VirtualMedia.{a}")});
    let mut actions = json!({"#VirtualMedia.EjectMedia": at("EjectMedia")});
    if insert {
        actions["#VirtualMedia.InsertMedia"] = at("InsertMedia");
    }
    let mut v = json!({"@odata.id": format!("{VM}/{id}"), "@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia",
        "Id": id, "MediaTypes": ["CD", "USBStick"], "Image": null, "Inserted": false,
        "Actions": actions});
    if oem {
        v["Oem"] = json!({"Hpe": {"Actions": {
            "#HpeiLOVirtualMedia.InsertVirtualMedia": {"target": format!("{VM}/{id}/Actions/Oem/Hpe/HpeiLOVirtualMedia.InsertVirtualMedia")}}}});
    }
    v
}

/// A bmcweb-like capture: one system, its manager's four devices.
fn bmcweb(root: &std::path::Path) {
    let write = |rel: &str, v: Value| put(root, rel, "index.json", v.to_string());
    write(
        "",
        json!({"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"},
               "Managers": {"@odata.id": "/redfish/v1/Managers"}}),
    );
    write(
        "Systems",
        json!({"@odata.id": "/redfish/v1/Systems", "Members": [{"@odata.id": "/redfish/v1/Systems/system"}]}),
    );
    write(
        "Systems/system",
        json!({"@odata.id": "/redfish/v1/Systems/system", "PowerState": "Off",
               "Links": {"ManagedBy": [{"@odata.id": "/redfish/v1/Managers/bmc"}]},
               "Actions": {"#ComputerSystem.Reset": {"target": "/redfish/v1/Systems/system/Actions/ComputerSystem.Reset"}}}),
    );
    write(
        "Managers",
        json!({"@odata.id": "/redfish/v1/Managers", "Members": [{"@odata.id": "/redfish/v1/Managers/bmc"}]}),
    );
    write(
        "Managers/bmc",
        json!({"@odata.id": "/redfish/v1/Managers/bmc", "VirtualMedia": {"@odata.id": VM},
               "Links": {"ManagerForServers": [{"@odata.id": "/redfish/v1/Systems/system"}]}}),
    );
    let ids = ["Slot_0", "Slot_1", "Slot_2", "Slot_3"];
    write(
        "Managers/bmc/VirtualMedia",
        json!({"@odata.id": VM, "Members": ids.iter().map(|i| json!({"@odata.id": format!("{VM}/{i}")})).collect::<Vec<_>>()}),
    );
    // Slot_0 only ejects (bmcweb's proxy mode): it takes no slot first.
    write(
        "Managers/bmc/VirtualMedia/Slot_0",
        device("Slot_0", false, false),
    );
    write(
        "Managers/bmc/VirtualMedia/Slot_1",
        device("Slot_1", true, false),
    );
    write(
        "Managers/bmc/VirtualMedia/Slot_2",
        device("Slot_2", true, true),
    );
    write(
        "Managers/bmc/VirtualMedia/Slot_3",
        device("Slot_3", true, false),
    );
    write(
        "EventService",
        json!({"@odata.id": "/redfish/v1/EventService", "ServiceEnabled": true,
               "Subscriptions": {"@odata.id": "/redfish/v1/EventService/Subscriptions"}}),
    );
    write(
        "EventService/Subscriptions",
        json!({"@odata.id": "/redfish/v1/EventService/Subscriptions", "Members": []}),
    );
}

#[test]
fn devices_beyond_the_slots_share_them_and_vendor_targets_insert() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    bmcweb(root);
    let emu = Spawned::start(&["--mockup", root.to_str().unwrap()]);
    let b = base(&emu);
    let inserted = |id: &str| call("GET", &format!("{b}{VM}/{id}"), "", None).2["Inserted"].clone();
    let act = |id: &str, action: &str, body: Value| {
        call(
            "POST",
            &format!("{b}{VM}/{id}/Actions/{action}"),
            "",
            Some(body),
        )
    };
    let image = json!({"Image": "http://192.0.2.1/boot.iso"});

    // Slot_3 shares Slot_1's CD slot: the media shows where it went in.
    let (code, _, v) = act("Slot_3", "VirtualMedia.InsertMedia", image.clone());
    assert_eq!(code, 204, "{v}");
    assert_eq!(inserted("Slot_3"), true);
    assert_eq!(inserted("Slot_1"), false);
    assert_eq!(inserted("Slot_0"), false);
    let (code, _, v) = act("Slot_1", "VirtualMedia.InsertMedia", image.clone());
    assert_eq!(code, 409, "the machine's CD is taken: {v}");
    // Ejecting a device that shows empty leaves the other's media.
    let (code, _, _) = act("Slot_1", "VirtualMedia.EjectMedia", json!({}));
    assert_eq!(code, 204);
    assert_eq!(inserted("Slot_3"), true);
    let (code, _, _) = act("Slot_3", "VirtualMedia.EjectMedia", json!({}));
    assert_eq!(code, 204);
    assert_eq!(inserted("Slot_3"), false);

    // iLO's own insert at its own target, into the removable slot.
    let (code, _, v) = act(
        "Slot_2",
        "Oem/Hpe/HpeiLOVirtualMedia.InsertVirtualMedia",
        image,
    );
    assert_eq!(code, 204, "{v}");
    assert_eq!(inserted("Slot_2"), true);

    // Any case, as an iLO answers.
    let (code, _, v) = call(
        "GET",
        &format!("{b}/redfish/v1/managers/BMC/virtualmedia/slot_2/"),
        "",
        None,
    );
    assert_eq!(code, 200);
    assert_eq!(v["Inserted"], true);
    emu.stop();
}

#[test]
fn an_insert_that_runs_as_a_task_is_followed_on_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    bmcweb(dir.path());
    let emu = Spawned::start(&[
        "--mockup",
        dir.path().to_str().unwrap(),
        "--media-delay-ms",
        "300",
    ]);
    let b = base(&emu);
    let (code, _, task) = call(
        "POST",
        &format!("{b}{VM}/Slot_1/Actions/VirtualMedia.InsertMedia"),
        "",
        Some(json!({"Image": "http://192.0.2.1/boot.iso"})),
    );
    assert_eq!(code, 202, "{task}");
    let monitor = task["TaskMonitor"].as_str().unwrap().to_string();
    let uri = task["@odata.id"].as_str().unwrap().to_string();
    let mut state = Value::Null;
    for _ in 0..100 {
        let (code, _, t) = call("GET", &format!("{b}{uri}"), "", None);
        assert_eq!(code, 200, "{uri}: {t}");
        state = t["TaskState"].clone();
        if state == "Completed" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(state, "Completed");
    let (code, _, _) = call("GET", &format!("{b}{monitor}"), "", None);
    assert!(code == 200 || code == 204 || code == 202, "monitor: {code}");
    let (_, _, dev) = call("GET", &format!("{b}{VM}/Slot_1"), "", None);
    assert_eq!(dev["Inserted"], true);
    emu.stop();
}

/// `Manager.Reset` at the captured manager's target, with its captured
/// values: the replayed BMC goes away (its address refuses connections)
/// as a real one restarting; a value it does not list is refused.
#[test]
fn a_replayed_manager_resets_at_its_captured_target() {
    let dir = tempfile::tempdir().unwrap();
    bmcweb(dir.path());
    let file = dir.path().join("Managers/bmc/index.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    m["Actions"] = json!({"#Manager.Reset": {
        "target": "/redfish/v1/Managers/bmc/Actions/Manager.Reset",
        "ResetType@Redfish.AllowableValues": ["GracefulRestart"]}});
    std::fs::write(&file, m.to_string()).unwrap();
    let emu = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let b = base(&emu);
    let target = format!("{b}/redfish/v1/Managers/bmc/Actions/Manager.Reset");
    let (code, _, v) = call(
        "POST",
        &target,
        "",
        Some(json!({"ResetType": "ForceRestart"})),
    );
    assert_eq!(code, 400, "{v}");
    assert!(
        v.to_string().contains("ActionParameterValueNotInList"),
        "{v}"
    );
    let (code, _, v) = call(
        "POST",
        &target,
        "",
        Some(json!({"ResetType": "GracefulRestart"})),
    );
    assert_eq!(code, 204, "{v}");
    let addr = b.trim_start_matches("http://").to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut away = false;
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(&addr).is_err() {
            away = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(away, "the BMC never went away");
    emu.stop();
}

/// A subscription on a replayed capture (at its URI in any case) gets the
/// machine's changes, naming the captured system.
#[test]
fn a_replays_subscriber_hears_of_the_captured_systems_changes() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    bmcweb(dir.path());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dest = format!("http://{}/events", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                continue;
            }
            let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
        }
    });
    let emu = Spawned::start(&[
        "--mockup",
        dir.path().to_str().unwrap(),
        "--event-allow-net",
        "127.0.0.0/8",
    ]);
    let b = base(&emu);
    let (code, _, v) = call(
        "POST",
        &format!("{b}/redfish/v1/eventservice/subscriptions/"),
        "",
        Some(json!({"Destination": dest, "Protocol": "Redfish"})),
    );
    assert_eq!(code, 201, "{v}");
    let (code, _, v) = call(
        "POST",
        &format!("{b}/redfish/v1/Systems/system/Actions/ComputerSystem.Reset"),
        "",
        Some(json!({"ResetType": "On"})),
    );
    assert_eq!(code, 204, "{v}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut origins = Vec::new();
    let heard = |o: &Vec<String>| o.iter().any(|o| o.contains("/redfish/v1/Systems/system"));
    while std::time::Instant::now() < deadline && !heard(&origins) {
        let Ok(ev) = rx.recv_timeout(std::time::Duration::from_millis(200)) else {
            continue;
        };
        for e in ev["Events"].as_array().into_iter().flatten() {
            origins.push(e["OriginOfCondition"].to_string());
        }
    }
    assert!(heard(&origins), "{origins:?}");
    emu.stop();
}

/// The fake machine behind a captured system has its captured MACs, and
/// the captured interface shows the machine's in the capture's case.
#[test]
fn the_machine_behind_a_captured_system_has_its_macs() {
    let dir = tempfile::tempdir().unwrap();
    bmcweb(dir.path());
    let file = dir.path().join("Systems/system/index.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let ifaces = "/redfish/v1/Systems/system/EthernetInterfaces";
    s["EthernetInterfaces"] = json!({"@odata.id": ifaces});
    std::fs::write(&file, s.to_string()).unwrap();
    put(
        dir.path(),
        "Systems/system/EthernetInterfaces",
        "index.json",
        json!({"@odata.id": ifaces, "Members": [{"@odata.id": format!("{ifaces}/eth0")}]})
            .to_string(),
    );
    put(
        dir.path(),
        "Systems/system/EthernetInterfaces/eth0",
        "index.json",
        json!({"@odata.id": format!("{ifaces}/eth0"), "MACAddress": "B0:7B:25:AA:00:01"})
            .to_string(),
    );
    let emu = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let b = base(&emu);
    let (_, _, nic) = call("GET", &format!("{b}{ifaces}/eth0"), "", None);
    assert_eq!(nic["MACAddress"], "B0:7B:25:AA:00:01");
    emu.stop();
}
