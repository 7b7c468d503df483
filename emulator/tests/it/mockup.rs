//! Capture and replay on the real binaries: `shoal-harness capture` of
//! every built-in vendor profile, replayed by `shoal-emulator --mockup`
//! and captured again, shows no difference but ETags, dates and times;
//! a replayed capture takes power and boot through its own targets (and
//! its AllowableValues), with session logins, from raw requests, sushy
//! and Ironic's request sequence; a bad capture stops the start naming
//! its file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use shoal_harness::capture::{self, Auth, Options};
use shoal_harness::driver::{Bmc, BootRequest};
use shoal_harness::scenario::{Driver, Enabled, Method};

use crate::common::{
    curl_json, endpoint_emulator, first_system_id, htpasswd, venv_program, Spawned,
};

fn options(base: &str, dir: &Path, user: Option<(&str, &str)>) -> Options {
    Options {
        auth: if user.is_some() {
            Auth::Session
        } else {
            Auth::None
        },
        user: user.map(|u| u.0.to_string()),
        password: user.map(|u| u.1.to_string()),
        rate: 0.0,
        description: "test".into(),
        quiet: true,
        ..Options::new(base, dir)
    }
}

/// `http://host:port` of a spawned emulator.
pub(crate) fn base(emu: &Spawned) -> String {
    emu.url
        .trim_end_matches('/')
        .trim_end_matches("/redfish/v1")
        .to_string()
}

/// Every file of a capture, by path below it.
fn files(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, p);
            }
        }
    }
    out
}

/// What two captures differ in, beyond ETags, dates, response times and
/// the README.
fn differences(a: &Path, b: &Path) -> Vec<String> {
    let (fa, fb) = (files(a), files(b));
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    for k in keys {
        if k == "README" || k.ends_with("time.json") {
            continue;
        }
        let (Some(pa), Some(pb)) = (fa.get(k), fb.get(k)) else {
            out.push(format!("only in one: {k}"));
            continue;
        };
        let (ta, tb) = (std::fs::read(pa).unwrap(), std::fs::read(pb).unwrap());
        if !k.ends_with(".json") {
            if ta != tb {
                out.push(format!("differs: {k}"));
            }
            continue;
        }
        let clean = |bytes: &[u8]| -> Value {
            let mut v: Value = serde_json::from_slice(bytes).unwrap();
            if k.ends_with("headers.json") {
                let h = v["GET"].as_object_mut().unwrap();
                h.remove("date");
                h.remove("etag");
            } else if let Some(m) = v.as_object_mut() {
                m.remove("@odata.etag");
            }
            v
        };
        let (va, vb) = (clean(&ta), clean(&tb));
        if va != vb {
            out.push(format!("differs: {k}\n  captured: {va}\n  replayed: {vb}"));
        }
    }
    out
}

#[test]
fn every_builtin_profile_round_trips_through_capture_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = shoal_emulator::profile::Profiles::default();
    for profile in profiles.names() {
        let first = dir.path().join(format!("{profile}-bmc"));
        let emu = Spawned::start(&["--profile", profile, "--fake-systems", "1"]);
        let s = capture::capture(&options(&base(&emu), &first, None)).unwrap();
        drop(emu);
        assert!(s.resources > 50, "{profile}: {s:?}");
        assert!(s.errors.is_empty(), "{profile}: {:?}", s.errors);
        let replay = Spawned::start(&["--mockup", first.to_str().unwrap()]);
        let second = dir.path().join(format!("{profile}-replay"));
        let s2 = capture::capture(&options(&base(&replay), &second, None)).unwrap();
        assert_eq!(s2.resources, s.resources, "{profile}");
        let diff = differences(&first, &second);
        assert!(diff.is_empty(), "{profile}: {}", diff.join("\n"));
    }
}

/// A request with the session's token; (status, headers' ETag, body).
pub(crate) fn call(
    method: &str,
    url: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = match body {
        Some(b) => agent
            .run(
                ureq::http::Request::builder()
                    .method(method)
                    .uri(url)
                    .header("X-Auth-Token", token)
                    .header("Content-Type", "application/json")
                    .body(b.to_string())
                    .unwrap(),
            )
            .unwrap(),
        None => agent
            .run(
                ureq::http::Request::builder()
                    .method(method)
                    .uri(url)
                    .header("X-Auth-Token", token)
                    .body(())
                    .unwrap(),
            )
            .unwrap(),
    };
    let status = resp.status().as_u16();
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.into_body().read_to_string().unwrap_or_default();
    (
        status,
        etag,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

fn login(base: &str, user: &str, pass: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent
        .post(&format!("{base}/redfish/v1/SessionService/Sessions"))
        .header("Content-Type", "application/json")
        .send(json!({"UserName": user, "Password": pass}).to_string())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    resp.headers()["x-auth-token"].to_str().unwrap().to_string()
}

/// Edits the captured system's Boot and Reset offers, as a capture of a
/// BMC that lists less than Shoal's profiles do.
fn narrow(capture: &Path, system: &str) {
    let file = capture.join(&system[1..]).join("index.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"] =
        json!(["None", "Pxe", "Hdd", "Cd"]);
    v["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"] =
        json!(["On", "ForceOff", "ForceRestart"]);
    std::fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_replayed_capture_takes_power_and_boot_through_its_own_targets() {
    let dir = tempfile::tempdir().unwrap();
    let pw = htpasswd(dir.path(), "admin", "replay-pass", 4);
    let cap = dir.path().join("idrac");
    // An endpoint of its own: the iDRAC's own Ids (System.Embedded.1).
    let (bmc, url) = endpoint_emulator(
        dir.path(),
        "r650",
        "idrac9",
        "127.0.4.53:0",
        &["--auth-file", pw.to_str().unwrap()],
    );
    let url = url.trim_end_matches("/redfish/v1/");
    let s = capture::capture(&options(url, &cap, Some(("admin", "replay-pass")))).unwrap();
    drop(bmc);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let sys = "/redfish/v1/Systems/System.Embedded.1";
    narrow(&cap, sys);

    let replay = Spawned::start(&[
        "--mockup",
        cap.to_str().unwrap(),
        "--auth-file",
        pw.to_str().unwrap(),
    ]);
    let base = base(&replay);
    let (status, _, _) = call("GET", &format!("{base}{sys}"), "nope", None);
    assert_eq!(status, 401, "credentials are still asked for");
    let token = login(&base, "admin", "replay-pass");
    let at = |p: &str| format!("{base}{p}");
    let (status, etag, v) = call("GET", &at(sys), &token, None);
    assert_eq!(status, 200);
    assert_eq!(v["Id"], "System.Embedded.1");
    assert_eq!(v["PowerState"], "Off");
    let target = v["Actions"]["#ComputerSystem.Reset"]["target"]
        .as_str()
        .unwrap()
        .to_string();

    // Power through the captured target, with the captured values only.
    let (status, _, _) = call(
        "POST",
        &at(&target),
        &token,
        Some(json!({"ResetType": "On"})),
    );
    assert_eq!(status, 204);
    let (_, etag_on, v) = call("GET", &at(sys), &token, None);
    assert_eq!(v["PowerState"], "On");
    assert_ne!(etag, etag_on, "the ETag follows the live state");
    let (status, _, e) = call(
        "POST",
        &at(&target),
        &token,
        Some(json!({"ResetType": "GracefulShutdown"})),
    );
    assert_eq!(status, 400, "{e}");
    assert_eq!(
        e["error"]["@Message.ExtendedInfo"][0]["MessageId"],
        "Base.1.19.ActionParameterValueNotInList"
    );

    // The boot override against the captured AllowableValues.
    let patch =
        json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}});
    let (status, _, _) = call("PATCH", &at(sys), &token, Some(patch));
    assert_eq!(status, 204);
    let (_, _, v) = call("GET", &at(sys), &token, None);
    assert_eq!(v["Boot"]["BootSourceOverrideTarget"], "Pxe");
    assert_eq!(v["Boot"]["BootSourceOverrideEnabled"], "Once");
    let (status, _, e) = call(
        "PATCH",
        &at(sys),
        &token,
        Some(json!({"Boot": {"BootSourceOverrideTarget": "Usb"}})),
    );
    assert_eq!(status, 400, "not offered by the capture: {e}");
    let (status, _, _) = call("PATCH", &at(sys), &token, Some(json!({"AssetTag": "x"})));
    assert_eq!(status, 400, "only what the replay can change is writable");
    let stale = ureq::http::Request::builder()
        .method("PATCH")
        .uri(at(sys))
        .header("X-Auth-Token", &token)
        .header("If-Match", etag.unwrap())
        .header("Content-Type", "application/json")
        .body(json!({"Boot": {"BootSourceOverrideTarget": "Hdd"}}).to_string())
        .unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    assert_eq!(agent.run(stale).unwrap().status().as_u16(), 412);

    // Virtual media through the captured device's own actions.
    let cd = find_media(&cap, "CD").expect("the iDRAC capture has a virtual CD");
    let (_, _, dev) = call("GET", &at(&cd), &token, None);
    assert_eq!(dev["Inserted"], false, "{dev}");
    let insert = dev["Actions"]["#VirtualMedia.InsertMedia"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let eject = dev["Actions"]["#VirtualMedia.EjectMedia"]["target"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _, e) = call(
        "POST",
        &at(&insert),
        &token,
        Some(json!({"Image": "not a url"})),
    );
    assert_eq!(status, 400, "{e}");
    let image = "http://192.0.2.10/images/deploy.iso";
    let (status, _, e) = call(
        "POST",
        &at(&insert),
        &token,
        Some(json!({"Image": image, "Inserted": true, "WriteProtected": true})),
    );
    assert_eq!(status, 204, "{e}");
    let (_, _, dev) = call("GET", &at(&cd), &token, None);
    assert_eq!(dev["Inserted"], true, "{dev}");
    assert_eq!(dev["Image"], image);
    assert_eq!(dev["ImageName"], "deploy.iso");
    let (status, _, _) = call("POST", &at(&insert), &token, Some(json!({"Image": image})));
    assert_eq!(status, 409, "a second insert while one is in");
    // No body at all, as many clients send EjectMedia.
    let (status, _, e) = call("POST", &at(&eject), &token, None);
    assert_eq!(status, 204, "{e}");
    let (_, _, dev) = call("GET", &at(&cd), &token, None);
    assert_eq!(dev["Inserted"], false, "{dev}");
    assert_eq!(dev["Image"], Value::Null);

    // What a capture cannot show is refused; what it never held is 404.
    let (status, _, _) = call("DELETE", &at("/redfish/v1/Chassis"), &token, None);
    assert_eq!(status, 405);
    let (status, _, _) = call("GET", &at("/redfish/v1/NotCaptured"), &token, None);
    assert_eq!(status, 404);
}

/// sushy and Ironic's request sequence drive a replayed capture as they
/// drive the BMC it was taken from.
#[test]
fn sushy_and_ironics_sequence_drive_a_replayed_capture() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for profile in [
        "idrac9",
        "ilo6",
        "openbmc",
        "supermicro-x12",
        "lenovo-xcc",
        "ami-asrockrack",
    ] {
        let cap = dir.path().join(profile);
        let emu = Spawned::start(&["--profile", profile, "--fake-systems", "1"]);
        capture::capture(&options(&base(&emu), &cap, None)).unwrap();
        drop(emu);
        let replay = Spawned::start(&["--mockup", cap.to_str().unwrap()]);
        let id = first_system_id(&replay.url);
        let bmc = Bmc {
            url: replay.url.clone(),
            system: id.clone(),
            python: Some(python.clone()),
            ipmi: None,
        };
        // Continuous: the override outlives the start it causes.
        let req = BootRequest {
            method: Method::Pxe,
            uri: None,
            enabled: Enabled::Continuous,
            bios: Vec::new(),
            with_mode: false,
            mailbox: None,
            lock_flags: false,
            enroll: None,
            eject_after: None,
            firmware_update: None,
        };
        bmc.boot(Driver::Sushy, &req)
            .unwrap_or_else(|e| panic!("{profile}: sushy: {e:#}"));
        assert_eq!(bmc.property("PowerState").unwrap(), "On", "{profile}");
        assert_eq!(
            bmc.property("Boot/BootSourceOverrideTarget").unwrap(),
            "Pxe",
            "{profile}"
        );
        bmc.boot(Driver::IronicSequence, &req)
            .unwrap_or_else(|e| panic!("{profile}: Ironic's sequence: {e:#}"));
        assert_eq!(bmc.property("PowerState").unwrap(), "On", "{profile}");
        // Virtual media as Ironic's redfish-virtual-media boot asks sushy:
        // the CD inserted at the capture's own device.
        let vm = BootRequest {
            method: Method::VirtualMedia,
            uri: Some("http://192.0.2.10/deploy.iso".into()),
            ..req.clone()
        };
        bmc.boot(Driver::Sushy, &vm)
            .unwrap_or_else(|e| panic!("{profile}: sushy virtual media: {e:#}"));
        // (The one-time Cd override is spent by the start sushy asks.)
        let cd = find_media(&cap, "CD").unwrap_or_else(|| panic!("{profile}: no CD captured"));
        let dev = curl_json(&format!("{}{cd}", base(&replay)));
        assert_eq!(
            dev["Image"], "http://192.0.2.10/deploy.iso",
            "{profile}: {dev}"
        );
    }
}

/// The URI of the first captured VirtualMedia device whose MediaTypes
/// hold `kind`.
fn find_media(cap: &Path, kind: &str) -> Option<String> {
    files(cap)
        .into_iter()
        .filter(|(k, _)| k.ends_with("index.json"))
        .filter_map(|(_, p)| serde_json::from_slice::<Value>(&std::fs::read(p).ok()?).ok())
        .find(|v| {
            v["@odata.type"]
                .as_str()
                .is_some_and(|t| t.starts_with("#VirtualMedia.") && !t.contains("Collection"))
                && v["MediaTypes"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|m| m == kind))
        })
        .and_then(|v| v["@odata.id"].as_str().map(str::to_string))
}

/// DMTF's short form without headers.json: the service root at the top,
/// the standard headers added, the system live.
#[test]
fn a_short_form_mockup_without_headers_replays_with_redfish_headers() {
    let dir = tempfile::tempdir().unwrap();
    let put = |rel: &str, v: Value| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v.to_string()).unwrap();
    };
    put(
        "index.json",
        json!({"@odata.id": "/redfish/v1/", "Systems": {"@odata.id": "/redfish/v1/Systems"}}),
    );
    put(
        "Systems/index.json",
        json!({"@odata.id": "/redfish/v1/Systems",
               "Members": [{"@odata.id": "/redfish/v1/Systems/437XR1138R2"}]}),
    );
    put(
        "Systems/437XR1138R2/index.json",
        json!({"@odata.id": "/redfish/v1/Systems/437XR1138R2", "Id": "437XR1138R2",
               "PowerState": "On",
               "Actions": {"#ComputerSystem.Reset": {
                   "target": "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset"}}}),
    );
    let replay = Spawned::start(&["--mockup", dir.path().to_str().unwrap()]);
    let out = Command::new("curl")
        .args([
            "-sS",
            "-i",
            &format!("{}/redfish/v1/Systems/437XR1138R2", base(&replay)),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(text.contains("odata-version: 4.0"), "{text}");
    assert!(text.contains("allow: get, head, patch"), "{text}");
    assert!(
        text.contains("\"powerstate\":\"off\""),
        "the machine's, not the capture's: {text}"
    );
    // The protocol layer serves a replay as any resource: $expand, $select.
    let expanded = curl_json(&format!("{}/redfish/v1/Systems?$expand=.", base(&replay)));
    assert_eq!(expanded["Members"][0]["Id"], "437XR1138R2", "{expanded}");
    let selected = curl_json(&format!(
        "{}/redfish/v1/Systems/437XR1138R2?$select=PowerState",
        base(&replay)
    ));
    assert_eq!(selected["PowerState"], "Off", "{selected}");
    assert!(selected.get("Actions").is_none(), "{selected}");
}

#[test]
fn a_bad_capture_stops_the_start_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join("redfish/v1/Systems")).unwrap();
    std::fs::write(
        bad.join("redfish/v1/index.json"),
        r#"{"Systems": {"@odata.id": "/redfish/v1/Systems"}}"#,
    )
    .unwrap();
    std::fs::write(bad.join("redfish/v1/Systems/index.json"), "{\"Members\": [").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--mockup", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--mockup: ") && err.contains("redfish/v1/Systems/index.json: not JSON"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing listened");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a capture").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--mockup", empty.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is not a capture"), "{err}");
}

/// Each built-in profile against a capture of itself (on an endpoint of
/// its own, with its fixed Ids): `profile-diff` finds nothing, and the
/// profile `profile-from-capture` writes loads and agrees with the
/// capture too.
#[test]
fn each_builtin_profile_agrees_with_its_own_capture() {
    use shoal_harness::capture::profile;
    let dir = tempfile::tempdir().unwrap();
    let profiles = shoal_emulator::profile::Profiles::default();
    let mut problems = Vec::new();
    for (i, name) in profiles.names().into_iter().enumerate() {
        let listen = format!("127.0.5.{}:0", i + 1);
        let (emu, url) = endpoint_emulator(dir.path(), "m", name, &listen, &[]);
        let url = url.trim_end_matches("/redfish/v1/");
        let cap = dir.path().join(name);
        capture::capture(&options(url, &cap, None)).unwrap();
        drop(emu);
        let file = format!("{}/profiles/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&file).unwrap();
        for d in profile::diff(&text, &cap).unwrap() {
            problems.push(format!("{name}: {d}"));
        }
        let derived = profile::from_capture(&cap, &format!("{name}-captured")).unwrap();
        if let Err(e) = shoal_emulator::profile::Profile::parse(&derived) {
            problems.push(format!(
                "{name}: the derived profile does not load: {e}\n{derived}"
            ));
        }
        for d in profile::diff(&derived, &cap).unwrap() {
            problems.push(format!("{name} (derived): {d}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Another vendor's capture: the Ids, the settings object, the names.
    let idrac = std::fs::read_to_string(format!(
        "{}/profiles/idrac9.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let lines = profile::diff(&idrac, &dir.path().join("lenovo-xcc")).unwrap();
    for key in [
        "ids.system",
        "manufacturer",
        "boot.settings.path",
        "vmedia.insert_by_patch",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{key}: "))),
            "{key} not told: {lines:?}"
        );
    }
}

/// `[[endpoints]] mockup = "DIR"`: one endpoint replays a capture over its
/// system while the main root serves the rest as Shoal; a bad capture
/// there stops the start naming the entry and the file.
#[test]
fn an_endpoint_of_its_own_replays_its_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("ilo");
    let (bmc, url) = endpoint_emulator(dir.path(), "dl380", "ilo6", "127.0.4.54:0", &[]);
    capture::capture(&options(url.trim_end_matches("/redfish/v1/"), &cap, None)).unwrap();
    drop(bmc);
    let cfg = dir.path().join("replay.toml");
    let write = |mockup: &Path| {
        std::fs::write(
            &cfg,
            format!(
                "[[systems]]\nname = \"x\"\n[[systems]]\nname = \"y\"\n\
                 [[endpoints]]\nlisten = \"127.0.4.55:0\"\nsystems = [\"x\"]\nmockup = \"{}\"\n",
                mockup.display()
            ),
        )
        .unwrap();
    };
    write(&cap);
    let (emu, lines) = Spawned::start_lines(&["--config", cfg.to_str().unwrap()], 2);
    let endpoint = lines[1]
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches("/redfish/v1/");
    let sys = curl_json(&format!("{endpoint}/redfish/v1/Systems/1"));
    assert_eq!(sys["Model"], "ProLiant DL380 Gen11", "{sys}");
    assert_eq!(sys["PowerState"], "Off");
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .args([
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"ResetType": "On"}"#,
        ])
        .arg(format!(
            "{endpoint}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "204");
    let sys = curl_json(&format!("{endpoint}/redfish/v1/Systems/1"));
    assert_eq!(sys["PowerState"], "On");
    // The main root serves the other system as Shoal does.
    let main = curl_json(&format!("{}/redfish/v1/Systems", base(&emu)));
    assert_eq!(main["Members@odata.count"], 1, "{main}");
    drop(emu);

    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    write(&broken);
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("endpoints[0].mockup: ") && err.contains("is not a capture"),
        "{err}"
    );
}

/// Every string value in a capture's JSON files, and its folder names.
fn strings(dir: &Path) -> std::collections::BTreeSet<String> {
    fn walk(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::String(s) => {
                out.insert(s.clone());
            }
            Value::Array(a) => a.iter().for_each(|i| walk(i, out)),
            Value::Object(m) => m.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for (rel, p) in files(dir) {
        out.extend(rel.split('/').map(str::to_string));
        if rel.ends_with(".json") {
            walk(
                &serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap(),
                &mut out,
            );
        }
    }
    out
}

/// `--redact` on a real service: no serial number, UUID or MAC address
/// of the plain capture is left anywhere (bodies, headers, folder
/// names), and the redacted capture still loads and replays, its links
/// whole.
#[test]
fn a_redacted_capture_keeps_nothing_identifying_and_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (bmc, url) = endpoint_emulator(dir.path(), "r650", "idrac9", "127.0.4.56:0", &[]);
    let url = url.trim_end_matches("/redfish/v1/").to_string();
    let plain = dir.path().join("plain");
    capture::capture(&options(&url, &plain, None)).unwrap();
    let redacted = dir.path().join("redacted");
    let mut opts = options(&url, &redacted, None);
    opts.redact = true;
    capture::capture(&opts).unwrap();
    drop(bmc);
    let mut secrets = Vec::new();
    for (_, p) in files(&plain) {
        if !p.ends_with("index.json") {
            continue;
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        for key in ["SerialNumber", "UUID", "MACAddress", "PermanentMACAddress"] {
            if let Some(s) = v[key].as_str().filter(|s| s.len() >= 5) {
                secrets.push(s.to_string());
            }
        }
    }
    assert!(secrets.len() >= 3, "{secrets:?}");
    let left = strings(&redacted);
    for s in &secrets {
        assert!(!left.iter().any(|l| l.contains(s.as_str())), "{s} left");
    }
    let text: String = files(&redacted)
        .into_values()
        .filter(|p| p.ends_with("headers.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for s in &secrets {
        assert!(!text.contains(s.as_str()), "{s} left in headers");
    }
    let readme = std::fs::read_to_string(redacted.join("README")).unwrap();
    assert!(readme.contains("Service: (redacted)"), "{readme}");
    // Still whole: it loads (members resolve) and replays.
    let replay = Spawned::start(&["--mockup", redacted.to_str().unwrap()]);
    let id = first_system_id(&replay.url);
    let sys = curl_json(&format!("{}/redfish/v1/Systems/{id}", base(&replay)));
    assert!(
        sys["SerialNumber"].as_str().unwrap().starts_with("SN"),
        "{sys}"
    );
    assert_eq!(sys["PowerState"], "Off");
}

/// Writes `text` as file `name` of the capture folder `rel` below `root`
/// (DMTF's short form: the folders are below `/redfish/v1`).
pub(crate) fn put(root: &Path, rel: &str, name: &str, text: String) {
    let p = root.join(rel);
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join(name), text).unwrap();
}

/// A capture whose Reset lists its own names for standard resets (DMTF's
/// composition mockup: `PowerOn`, `PowerOffNonGraceful`): the system
/// powers on and off by those names and by the standard ones they stand
/// for; a reset it does not offer under any name is refused.
#[test]
fn a_captured_reset_under_its_own_names_powers_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, v: Value| put(root, rel, "index.json", v.to_string());
    write(
        "",
        json!({"@odata.id": "/redfish/v1", "Id": "RootService",
               "Systems": {"@odata.id": "/redfish/v1/Systems"}}),
    );
    write(
        "Systems",
        json!({"@odata.id": "/redfish/v1/Systems",
               "Members": [{"@odata.id": "/redfish/v1/Systems/Blade-1"}]}),
    );
    let target = "/redfish/v1/Systems/Blade-1/Actions/ComputerSystem.Reset";
    write(
        "Systems/Blade-1",
        json!({"@odata.id": "/redfish/v1/Systems/Blade-1", "Id": "Blade-1", "PowerState": "Off",
               "Actions": {"#ComputerSystem.Reset": {"target": target,
                   "ResetType@Redfish.AllowableValues": ["PowerOn", "PowerOffNonGraceful", "PowerCycle"]}}}),
    );
    let emu = Spawned::start(&["--mockup", root.to_str().unwrap()]);
    let b = base(&emu);
    let sys = format!("{b}/redfish/v1/Systems/Blade-1");
    let power = || call("GET", &sys, "", None).2["PowerState"].clone();
    let reset = |t: &str| {
        call(
            "POST",
            &format!("{b}{target}"),
            "",
            Some(json!({"ResetType": t})),
        )
    };
    for (asked, state) in [
        ("PowerOn", "On"),
        ("PowerOffNonGraceful", "Off"),
        ("On", "On"),
        ("ForceOff", "Off"),
    ] {
        let (code, _, body) = reset(asked);
        assert!(code == 200 || code == 204, "{asked}: {code} {body}");
        assert_eq!(power(), state, "after {asked}");
    }
    let (code, _, body) = reset("GracefulShutdown");
    assert_eq!(code, 400, "{body}");
    assert!(
        body.to_string().contains("ActionParameterValueNotInList"),
        "{body}"
    );
    assert_eq!(power(), "Off", "nothing done");
    emu.stop();
}

/// What a replay refuses is worded as the captured service words its
/// errors: an iLO's envelope (`iLO.0.10.ExtendedInfo`) and its Base
/// registry version, as the error it answered to a captured GET shows.
#[test]
fn a_replays_refusals_follow_the_captured_services_wording() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, name: &str, text: String| put(root, rel, name, text);
    write(
        "",
        "index.json",
        json!({"@odata.id": "/redfish/v1/", "Id": "RootService",
               "Systems": {"@odata.id": "/redfish/v1/Systems/"}})
        .to_string(),
    );
    write(
        "Systems",
        "index.json",
        json!({"@odata.id": "/redfish/v1/Systems/", "Members": []}).to_string(),
    );
    write(
        "Systems/1/Oem",
        "error.txt",
        format!(
            "HTTP 404\nContent-Type: application/json\n\n{}",
            json!({"error": {"code": "iLO.0.10.ExtendedInfo",
                "message": "See @Message.ExtendedInfo for more information.",
                "@Message.ExtendedInfo": [{"MessageId": "Base.1.4.ResourceMissingAtURI"}]}})
        ),
    );
    let emu = Spawned::start(&["--mockup", root.to_str().unwrap()]);
    let b = base(&emu);
    for (method, uri, status, key) in [
        ("PATCH", "/redfish/v1/", 405, "OperationNotAllowed"),
        ("GET", "/redfish/v1/Nothing", 404, "ResourceMissingAtURI"),
    ] {
        let body = (method == "PATCH").then(|| json!({"Name": "x"}));
        let (code, _, v) = call(method, &format!("{b}{uri}"), "", body);
        assert_eq!(code, status, "{method} {uri}: {v}");
        assert_eq!(v["error"]["code"], "iLO.0.10.ExtendedInfo", "{v}");
        assert_eq!(
            v["error"]["@Message.ExtendedInfo"][0]["MessageId"],
            format!("Base.1.4.{key}"),
            "{v}"
        );
    }
    // The captured error itself is served as captured.
    let (code, _, v) = call("GET", &format!("{b}/redfish/v1/Systems/1/Oem"), "", None);
    assert_eq!(code, 404);
    assert_eq!(
        v["error"]["@Message.ExtendedInfo"][0]["MessageId"],
        "Base.1.4.ResourceMissingAtURI"
    );
    emu.stop();
}

/// A session the capture holds (the capturer's own) is served as
/// captured, as DMTF's Mockup-Server serves it; sessions opened on the
/// replay are Shoal's live ones at the same collection.
#[test]
fn a_captured_session_is_served_beside_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let write = |rel: &str, v: Value| put(root, rel, "index.json", v.to_string());
    write(
        "",
        json!({"@odata.id": "/redfish/v1/", "Id": "RootService",
               "Systems": {"@odata.id": "/redfish/v1/Systems"},
               "SessionService": {"@odata.id": "/redfish/v1/SessionService"}}),
    );
    write(
        "Systems",
        json!({"@odata.id": "/redfish/v1/Systems", "Members": []}),
    );
    write(
        "SessionService/Sessions/CAPTURED1",
        json!({"@odata.id": "/redfish/v1/SessionService/Sessions/CAPTURED1",
               "Id": "CAPTURED1", "UserName": "capturer"}),
    );
    let emu = Spawned::start(&["--mockup", root.to_str().unwrap()]);
    let b = base(&emu);
    let sessions = format!("{b}/redfish/v1/SessionService/Sessions");
    let (code, _, v) = call("GET", &format!("{sessions}/CAPTURED1"), "", None);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["UserName"], "capturer");
    let (code, _, v) = call(
        "POST",
        &sessions,
        "",
        Some(json!({"UserName": "u", "Password": "p"})),
    );
    assert_eq!(code, 201, "{v}");
    let live = v["@odata.id"].as_str().unwrap().to_string();
    let (code, _, v) = call("GET", &format!("{b}{live}"), "", None);
    assert_eq!((code, v["UserName"].clone()), (200, json!("u")), "{v}");
    let (code, _, _) = call("GET", &format!("{sessions}/NOPE"), "", None);
    assert_eq!(code, 404);
    emu.stop();
}
