//! The access log and the change log, read from the real binary's
//! stderr at its default level: one line per request (client, account,
//! request line, status, time, the MessageId of a refusal), and each
//! change in a client's words with what caused it.

use std::process::{Command, Stdio};

use crate::common::{htpasswd, Spawned};

fn curl(args: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

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
    let auth = ["-u", "admin:password"];
    assert_eq!(curl(&[&systems]), 401);
    assert_eq!(curl(&[&auth[..], &[systems.as_str()]].concat()), 200);
    let out = Command::new("curl")
        .args(["-s", "-u", "admin:password", &systems])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sys = format!(
        "{}{}",
        emu.url,
        list["Members"][0]["@odata.id"].as_str().unwrap()
    );
    let patch = |body: &str| {
        curl(
            &[
                &auth[..],
                &[
                    "-X",
                    "PATCH",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    body,
                    sys.as_str(),
                ],
            ]
            .concat(),
        )
    };
    assert_eq!(
        patch(r#"{"Boot":{"BootSourceOverrideTarget":"Nowhere"}}"#),
        400
    );
    assert_eq!(patch(r#"{"Boot":{"BootSourceOverrideTarget":"Pxe"}}"#), 200);
    let reset = format!("{sys}/Actions/ComputerSystem.Reset");
    let on = curl(
        &[
            &auth[..],
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-d",
                r#"{"ResetType":"On"}"#,
                reset.as_str(),
            ],
        ]
        .concat(),
    );
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
