//! HPE's iLOrest (the venv `ci/test` builds) updating an iLO 6 endpoint's
//! firmware with its own commands, over HTTPS with a session: `login`
//! (its generation probe, the schema and registry collections, the
//! crawl), `firmwareupdate` (SimpleUpdate, then `Oem.Hpe.State` polled to
//! Complete), `uploadcomp` and `listcomp` (the ComponentRepository),
//! `taskqueue` (an ApplyUpdate waiting for the server's start, a Wait
//! behind it), `reboot` (iLO's action body), `deletecomp`, `logout`.

use std::path::Path;
use std::process::Command;

use crate::common::{certificate, endpoint_emulator, htpasswd, venv_program};

/// Runs `ilorest --nologo ARGS` with its cache under `home`; stdout.
fn ilorest(program: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .arg("--nologo")
        .args(args)
        .env("HOME", home)
        .current_dir(home)
        .output()
        .expect("run ilorest");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("$ ilorest {}\n{stdout}{stderr}", args.join(" "));
    assert!(
        out.status.success(),
        "ilorest {args:?} failed:\n{stdout}{stderr}"
    );
    stdout
}

#[test]
fn ilorest_updates_an_ilo_through_its_firmware_commands() {
    let Some(program) = venv_program("ilorest") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bios = shoal_harness::firmware::artifact("bios", "1.99 2026-11-02");
    let nic = shoal_harness::firmware::artifact("nic", "23.1.1");
    let base = crate::common::file_server(vec![("/U54_1.99.bin", bios)]);
    std::fs::write(dir.path().join("nic.bin"), nic).unwrap();
    let pw = htpasswd(dir.path(), "admin", "ilo-pass", 4);
    let (cert, key) = certificate(dir.path());
    let (_emu, url) = endpoint_emulator(
        dir.path(),
        "dl380",
        "ilo6",
        "127.0.4.41:0",
        &[
            "--ipmi-port",
            "0",
            "--auth-file",
            pw.to_str().unwrap(),
            "--ssl-certificate",
            cert.to_str().unwrap(),
            "--ssl-key",
            key.to_str().unwrap(),
            "--media-allow-net",
            "127.0.0.0/8",
        ],
    );
    let url = url.as_str();
    let home = dir.path();
    let run = |args: &[&str]| ilorest(&program, home, args);
    assert!(
        run(&["login", url, "-u", "admin", "-p", "ilo-pass"]).contains("Discovering data...Done")
    );
    let out = run(&["firmwareupdate", &format!("{base}/U54_1.99.bin")]);
    assert!(out.contains("Firmware update has completed"), "{out}");
    let out = run(&["uploadcomp", "--component", "nic.bin", "--forceupload"]);
    assert!(out.contains("uploading successfully"), "{out}");
    let out = run(&["listcomp"]);
    assert!(
        out.contains("Version: 23.1.1") && out.contains("/fwrepo/nic.bin"),
        "{out}"
    );
    run(&["taskqueue", "create", "nic.bin"]);
    run(&["taskqueue", "create", "1"]);
    let out = run(&["taskqueue"]);
    assert!(
        out.contains("State:Pending"),
        "waiting for the server's start: {out}"
    );
    // The ROM image and the NIC's wait for the start.
    run(&["reboot", "ForceRestart"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = run(&["taskqueue"]);
        if !out.contains("Pending") && !out.contains("InProgress") {
            assert_eq!(out.matches("State:Complete").count(), 2, "{out}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the queue never ran: {out}"
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let out = run(&["rawget", "/redfish/v1/Systems/1/"]);
    assert!(out.contains("\"BiosVersion\":\"1.99\""), "{out}");
    let out = run(&["rawget", "/redfish/v1/Chassis/1/NetworkAdapters/1/"]);
    assert!(out.contains("23.1.1"), "{out}");
    run(&["taskqueue", "--cleanqueue"]);
    assert!(run(&["deletecomp", "nic.bin"]).contains("deleted successfully"));
    assert!(run(&["listcomp"]).to_lowercase().contains("no component"));
    run(&["logout"]);
}
