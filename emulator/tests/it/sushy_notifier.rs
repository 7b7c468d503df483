//! sushy-tools' external notifier, Shoal's against sushy-tools 2.2.0's
//! own: one receiver (a loopback HTTP server that records every request
//! and answers 204, as metal3's fake agent does) is the
//! EXTERNAL_NOTIFICATION_URL of the same configuration served by each;
//! the same sequence of actions is taken on each (a boot device, power
//! on, a restart, a power off, each waited out until the System shows
//! it); the PUTs each sends must be the same, `apply_time` aside (sushy-
//! tools picks it at random).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{call_as, Spawned};
use crate::sushy_dropin::sushy_emulator;

/// One request a receiver got: method, path, Content-Type, body.
type Got = (String, String, String, Value);

/// A receiver on 127.0.0.1 that keeps what it is sent.
fn receiver() -> (SocketAddr, Arc<Mutex<Vec<Got>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || serve(conn, &keep));
        }
    });
    (addr, got)
}

/// Requests on one kept-alive connection, until it closes.
fn serve(conn: TcpStream, keep: &Mutex<Vec<Got>>) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let (method, path) = (
            words.next().unwrap_or("").to_string(),
            words.next().unwrap_or("").to_string(),
        );
        let (mut len, mut ctype) = (0usize, String::new());
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap_or(0),
                    "content-type" => ctype = v.trim().to_ascii_lowercase(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
        keep.lock().unwrap().push((method, path, ctype, body));
        if out.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").is_err() {
            return;
        }
    }
}

const UUID: &str = "4a1b2c3d-0000-4000-8000-00000000a001";

/// The sequence, on the service at `base`; each power action waited out
/// (sushy-tools applies it 1–11 s later, seen on a GET).
fn act(base: &str) {
    let sys = format!("{base}/redfish/v1/Systems/{UUID}");
    let (code, b) = call_as(
        "PATCH",
        &sys,
        None,
        Some(r#"{"Boot":{"BootSourceOverrideTarget":"Pxe"}}"#),
    );
    assert!(matches!(code, 200 | 204), "{code} {b}");
    for (reset, shows) in [("On", "On"), ("ForceRestart", "On"), ("ForceOff", "Off")] {
        let body = format!(r#"{{"ResetType":"{reset}"}}"#);
        let (code, b) = call_as(
            "POST",
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            None,
            Some(&body),
        );
        assert!(matches!(code, 200 | 204), "{reset}: {code} {b}");
        let started = Instant::now();
        // sushy-tools shows a restarting system Off until its pending
        // state takes effect, which a GET after its time brings about.
        std::thread::sleep(Duration::from_millis(300));
        loop {
            let (_, s) = call_as("GET", &sys, None, None);
            if s["PowerState"] == shows {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "{reset}: {s}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// What a receiver got, `apply_time` made a placeholder.
fn normalized(got: &Mutex<Vec<Got>>) -> Vec<Got> {
    let mut v = got.lock().unwrap().clone();
    for (_, _, _, body) in &mut v {
        if let Some(t) = body.pointer_mut("/pending_power/apply_time") {
            assert!(t.is_u64(), "apply_time is whole seconds: {t}");
            *t = json!("T");
        }
    }
    v
}

/// The configuration both tests serve: two fake systems, the first
/// notifying `url`, state kept in `dir/state`.
fn conf(dir: &std::path::Path, url: SocketAddr, state: &str) -> String {
    format!(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n\
         SUSHY_EMULATOR_STATE_DIR = {:?}\n\
         EXTERNAL_NOTIFICATION_URL = 'http://{url}/'\n\
         SUSHY_EMULATOR_FAKE_SYSTEMS = [\n\
         \x20 {{'uuid': '{UUID}', 'name': 'fake-a', 'power_state': 'Off', 'external_notifier': True,\n\
         \x20  'nics': [{{'mac': '00:5c:52:31:3a:a1', 'ip': '172.22.0.101'}}]}},\n\
         \x20 {{'uuid': '4a1b2c3d-0000-4000-8000-00000000a002', 'name': 'fake-b', 'power_state': 'Off',\n\
         \x20  'nics': [{{'mac': '00:5c:52:31:3a:a2'}}]}},\n\
         ]\n",
        dir.join(state).display().to_string()
    )
}

#[test]
fn the_notifier_puts_what_sushy_tools_puts() {
    let dir = tempfile::tempdir().unwrap();
    let (theirs_at, theirs) = receiver();
    let (ours_at, ours) = receiver();
    let sushy_conf = dir.path().join("sushy.py");
    std::fs::write(&sushy_conf, conf(dir.path(), theirs_at, "sushy-state")).unwrap();
    let shoal_conf = dir.path().join("shoal.py");
    std::fs::write(&shoal_conf, conf(dir.path(), ours_at, "shoal-state")).unwrap();

    let Some((_sushy, sushy_addr)) = sushy_emulator(&sushy_conf, dir.path()) else {
        return;
    };
    act(&format!("http://{sushy_addr}"));
    let shoal = Spawned::start(&["--config", shoal_conf.to_str().unwrap()]);
    act(&shoal.url);
    // Shoal's PUTs leave after the change: a moment for the last one.
    let started = Instant::now();
    while ours.lock().unwrap().len() < theirs.lock().unwrap().len()
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (theirs, ours) = (normalized(&theirs), normalized(&ours));
    assert_eq!(
        theirs.len(),
        7,
        "sushy-tools: a boot device, then each action's pending and done: {theirs:#?}"
    );
    assert!(
        theirs
            .iter()
            .all(|(m, p, t, _)| m == "PUT" && p == "/" && t == "application/json"),
        "{theirs:#?}"
    );
    assert_eq!(ours, theirs);
    assert!(shoal.stop().success());
}

/// With a BMC per system (`--endpoint-per-system`, metal3's scale setups
/// give each fake node its own address), the notifying system's changes
/// are on its endpoint's BMC: the same sequence PUTs the same documents
/// as on the one service.
#[test]
fn the_notifier_follows_systems_on_endpoints_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (one_at, one) = receiver();
    let (each_at, each) = receiver();
    let (one_conf, each_conf) = (dir.path().join("one.py"), dir.path().join("each.py"));
    std::fs::write(&one_conf, conf(dir.path(), one_at, "one")).unwrap();
    std::fs::write(&each_conf, conf(dir.path(), each_at, "each")).unwrap();
    let shoal = Spawned::start(&["--config", one_conf.to_str().unwrap()]);
    act(&shoal.url);
    let (per_system, lines) = Spawned::start_lines(
        &[
            "--config",
            each_conf.to_str().unwrap(),
            "--endpoint-per-system",
            "127.0.0.1:0",
        ],
        3,
    );
    let endpoint = lines
        .iter()
        .find(|l| l.contains(" fake-a "))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no endpoint of fake-a in {lines:?}"));
    act(endpoint);
    let started = Instant::now();
    while (one.lock().unwrap().len() < 7 || each.lock().unwrap().len() < 7)
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (one, each) = (normalized(&one), normalized(&each));
    assert_eq!(one.len(), 7, "{one:#?}");
    assert_eq!(each, one);
    assert!(shoal.stop().success());
    assert!(per_system.stop().success());
}
