//! The access log and the change log, read from the real binary's
//! stderr at its default level: one line per request (client, account,
//! request line, status, time, the MessageId of a refusal), and each
//! change in a client's words with what caused it.

use std::process::Stdio;

use crate::common::{call_as, htpasswd, Spawned};

#[test]
fn every_request_and_change_is_a_line_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let pw = htpasswd(dir.path(), "admin", "password", 4);
    let log = dir.path().join("emulator.log");
    let (emu, _) = Spawned::start_with(
        &["--fake-systems", "1", "--auth-file", pw.to_str().unwrap()],
        &[("RUST_LOG", "info")],
        1,
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let systems = format!("{}/redfish/v1/Systems", emu.url);
    let user = Some("admin:password");
    assert_eq!(call_as("GET", &systems, None, None).0, 401);
    let (code, list) = call_as("GET", &systems, user, None);
    assert_eq!(code, 200);
    let sys = format!(
        "{}{}",
        emu.url,
        list["Members"][0]["@odata.id"].as_str().unwrap()
    );
    let patch = |body: &str| call_as("PATCH", &sys, user, Some(body)).0;
    assert_eq!(
        patch(r#"{"Boot":{"BootSourceOverrideTarget":"Nowhere"}}"#),
        400
    );
    assert_eq!(patch(r#"{"Boot":{"BootSourceOverrideTarget":"Pxe"}}"#), 200);
    let reset = format!("{sys}/Actions/ComputerSystem.Reset");
    let on = call_as("POST", &reset, user, Some(r#"{"ResetType":"On"}"#)).0;
    assert!(matches!(on, 200 | 204), "{on}");
    let path = sys.trim_start_matches(&emu.url).to_string();
    assert!(emu.stop().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let access: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("shoal_emulator::access"))
        .collect();
    let want = [
        "- \"GET /redfish/v1/Systems\" 401".to_string(),
        "admin \"GET /redfish/v1/Systems\" 200".to_string(),
        format!("admin \"PATCH {path}\" 400"),
        format!("admin \"PATCH {path}\" 200"),
        format!("admin \"POST {path}/Actions/ComputerSystem.Reset\" {on}"),
    ];
    for w in &want {
        assert!(
            access.iter().any(|l| l.contains(w.as_str())),
            "no line with {w:?} in:\n{text}"
        );
    }
    assert!(
        access
            .iter()
            .any(|l| l.contains("401") && l.contains("NoValidSession")),
        "{text}"
    );
    assert!(
        access
            .iter()
            .any(|l| l.contains(" 400 ") && l.contains("PropertyValueNotInList")),
        "{text}"
    );
    // The changes, in a client's words, with their cause.
    for w in [
        "boot override Pxe".to_string(),
        format!("power Off -> On (POST {path}/Actions/ComputerSystem.Reset by admin)"),
    ] {
        assert!(text.contains(&w), "no {w:?} in:\n{text}");
    }
    assert!(!text.contains("what: "), "no Rust debug syntax: {text}");
}
