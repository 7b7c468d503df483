//! The real binary: HTTP and HTTPS (TLS 1.2 and 1.3), Basic auth and
//! sessions, the state file across a restart, config errors at start-up.
//! curl is the client, as an operator would use it.

use std::process::Command;

use serde_json::Value;

use crate::common::{certificate, htpasswd, Spawned};

/// Runs curl; returns (status, headers text, body JSON or Null).
fn curl(args: &[&str]) -> (u16, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let headers = dir.path().join("h");
    let out = Command::new("curl")
        .args(["-sS", "-k", "-o", "-", "-D"])
        .arg(&headers)
        .args(["-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl must be installed (ci/test installs it)");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    let h = std::fs::read_to_string(headers).unwrap_or_default();
    (
        code.parse().unwrap(),
        h,
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

#[test]
fn http_serves_the_requested_number_of_systems() {
    let emu = Spawned::start(&["--fake-systems", "3"]);
    let (code, _, body) = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]);
    assert_eq!(code, 200);
    assert_eq!(body["Members@odata.count"], 3);
}

#[test]
fn https_with_basic_auth_and_sessions_over_tls12_and_tls13() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let pw = htpasswd(dir.path(), "admin", "s3cret-pw", 4);
    let emu = Spawned::start(&[
        "--ssl-certificate",
        cert.to_str().unwrap(),
        "--ssl-key",
        key.to_str().unwrap(),
        "--auth-file",
        pw.to_str().unwrap(),
    ]);
    assert!(emu.url.starts_with("https://"));
    let systems = format!("{}/redfish/v1/Systems", emu.url);
    for tls in [
        ["--tlsv1.2", "--tls-max", "1.2"],
        ["--tlsv1.3", "--tls-max", "1.3"],
    ] {
        let (code, _, _) = curl(&[tls[0], tls[1], tls[2], "-u", "admin:s3cret-pw", &systems]);
        assert_eq!(code, 200, "{tls:?}");
    }
    assert_eq!(curl(&[&systems]).0, 401);
    assert_eq!(curl(&["-u", "admin:wrong", &systems]).0, 401);
    assert_eq!(curl(&[&format!("{}/redfish/v1/", emu.url)]).0, 200);

    let (code, h, _) = curl(&[
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"UserName":"admin","Password":"s3cret-pw"}"#,
        &format!("{}/redfish/v1/SessionService/Sessions", emu.url),
    ]);
    assert_eq!(code, 201);
    let token = header(&h, "X-Auth-Token").expect("token");
    let location = header(&h, "Location").expect("location");
    let auth = format!("X-Auth-Token: {token}");
    assert_eq!(curl(&["-H", &auth, &systems]).0, 200);
    assert_eq!(
        curl(&[
            "-X",
            "DELETE",
            "-H",
            &auth,
            &format!("{}{location}", emu.url)
        ])
        .0,
        204
    );
    assert_eq!(curl(&["-H", &auth, &systems]).0, 401);
}

#[test]
fn state_file_keeps_the_fake_state_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let args = ["--state-file", state.to_str().unwrap()];
    let emu = Spawned::start(&args);
    let (_, _, list) = curl(&[&format!("{}/redfish/v1/Systems", emu.url)]);
    let sys = list["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    let body = r#"{"Boot":{"BootSourceOverrideTarget":"UefiHttp","BootSourceOverrideEnabled":"Continuous","HttpBootUri":"http://192.0.2.1/x.efi"}}"#;
    let (code, _, _) = curl(&[
        "-X",
        "PATCH",
        "-H",
        "Content-Type: application/json",
        "-d",
        body,
        &format!("{}{sys}", emu.url),
    ]);
    assert_eq!(code, 200);
    assert!(emu.stop().success());
    let emu = Spawned::start(&args);
    let (_, _, s) = curl(&[&format!("{}{sys}", emu.url)]);
    assert_eq!(s["Boot"]["HttpBootUri"], "http://192.0.2.1/x.efi");
    assert_eq!(s["Boot"]["BootSourceOverrideEnabled"], "Continuous");
}

#[test]
fn bad_config_fails_at_start_up_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("inventory.toml");
    std::fs::write(&cfg, "[[systems]]\nname = \"a\"\narch = \"sparc\"\n").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("inventory.toml") && err.contains("systems[0].arch") && err.contains("x86_64"),
        "{err}"
    );
}

#[test]
fn config_file_inventory_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("inventory.toml");
    std::fs::write(
        &cfg,
        "feature_set = \"vmedia\"\n[[systems]]\nname = \"web-1\"\nuuid = \"4f5a3c2e-0000-4000-8000-000000000001\"\nmacs = [\"52:54:00:12:34:56\"]\nmemory_mib = 2048\n",
    )
    .unwrap();
    let emu = Spawned::start(&["--config", cfg.to_str().unwrap()]);
    let (code, _, s) = curl(&[&format!(
        "{}/redfish/v1/Systems/4f5a3c2e-0000-4000-8000-000000000001",
        emu.url
    )]);
    assert_eq!(code, 200);
    assert_eq!(s["Name"], "web-1");
    assert_eq!(s["MemorySummary"]["TotalSystemMemoryGiB"], 2.0);
    assert!(s.get("Bios").is_none(), "vmedia feature set has no BIOS");
}
