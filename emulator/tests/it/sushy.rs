//! Client compatibility with the real `sushy` library (the Redfish client
//! Ironic uses), in the venv that `ci/test` builds: sushy drives a spawned
//! emulator over HTTPS with session auth, and `compat.py` checks the
//! emulator's resulting state.

use std::process::Command;

use crate::common::{certificate, endpoint_emulator, htpasswd, venv_program, Spawned};

#[test]
fn sushy_drives_every_capability() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let pw = htpasswd(dir.path(), "admin", "sushy-pass", 4);
    let emu = Spawned::start(&[
        "--fake-systems",
        "2",
        "--ssl-certificate",
        cert.to_str().unwrap(),
        "--ssl-key",
        key.to_str().unwrap(),
        "--auth-file",
        pw.to_str().unwrap(),
        // compat.py receives events on loopback.
        "--event-allow-net",
        "127.0.0.0/8",
    ]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sushy/compat.py");
    let out = Command::new(python)
        .args([
            script,
            "--url",
            &emu.url,
            "--username",
            "admin",
            "--password",
            "sushy-pass",
            "--cacert",
            cert.to_str().unwrap(),
        ])
        .output()
        .expect("run compat.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "sushy compatibility failed:\n{stdout}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

/// Each vendor profile, driven by real sushy the way Ironic asks it to:
/// where sushy sends its Boot PATCH (System or settings object), which
/// quirk makes it refuse or fail, and what the emulator then holds. Each
/// runs on a BMC endpoint of its own, so with the vendor's fixed Ids
/// (`Systems/System.Embedded.1`, `Systems/1`, `Systems/Self`).
#[test]
fn sushy_meets_every_vendor_profile() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sushy/profiles.py");
    let mut failed = Vec::new();
    let profiles = shoal_emulator::profile::Profiles::default();
    for profile in profiles.names() {
        let (_emu, lines) = Spawned::start_lines(
            &[
                "--fake-systems",
                "1",
                "--profile",
                profile,
                "--endpoint-per-system",
                "127.0.3.1:0",
            ],
            2,
        );
        let url = lines[1].rsplit(' ').next().unwrap();
        let mut cmd = Command::new(&python);
        cmd.args([script, "--url", url, "--profile", profile]);
        if let Some(ids) = &profiles.get(profile).unwrap().ids {
            cmd.args(["--system-id", &ids.system]);
        }
        let out = cmd.output().expect("run profiles.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{stdout}");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        if !out.status.success() || !stdout.contains("1 passed, 0 failed") {
            failed.push(profile.to_string());
        }
    }
    assert!(failed.is_empty(), "sushy against {failed:?} failed");
}

/// Real sushy against injected faults on an iDRAC endpoint: it retries
/// SYS518 but not a plain 500, renews an expired session, waits out a BMC
/// reboot on GET and retries dropped connections.
#[test]
fn sushy_copes_with_injected_faults() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pw = htpasswd(dir.path(), "admin", "fault-pass", 4);
    let (_emu, lines) = Spawned::start_lines(
        &[
            "--fake-systems",
            "1",
            "--profile",
            "idrac9",
            "--endpoint-per-system",
            "127.0.5.1:0",
            "--auth-file",
            pw.to_str().unwrap(),
            "--admin-listen",
            "127.0.0.1:0",
            "--admin-token",
            "sushy-admin",
        ],
        3,
    );
    let url = |i: usize| lines[i].rsplit(' ').next().unwrap().to_string();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sushy/faults.py");
    let out = Command::new(&python)
        .args([
            script,
            "--url",
            &url(1),
            "--admin",
            &url(2),
            "--token",
            "sushy-admin",
            "--username",
            "admin",
            "--password",
            "fault-pass",
        ])
        .output()
        .expect("run faults.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{stdout}"
    );
}

/// Firmware updates the way Ironic's redfish firmware interface asks for
/// them: the real sushy's `simple_update` with the system (then the
/// Manager) as target and its TaskMonitor polled to the end; the versions
/// read back where Ironic reads them.
#[test]
fn sushy_updates_firmware_through_the_update_service() {
    use shoal_harness::firmware::artifact;
    let Some(python) = venv_program("python") else {
        return;
    };
    let base = crate::common::file_server(vec![
        ("/bios.fw", artifact("bios", "2.19.1")),
        ("/bmc.fw", artifact("bmc", "9.9.9")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let pw = htpasswd(dir.path(), "admin", "sushy-pass", 4);
    let quick = dir.path().join("profiles");
    std::fs::create_dir(&quick).unwrap();
    crate::common::quick_update_profile(
        &quick,
        "apply_secs = 0.5\nnew_secs = 0.3\nbmc_down_secs = 2\n",
        "",
    );
    let emu = Spawned::start(&[
        "--fake-systems",
        "1",
        "--auth-file",
        pw.to_str().unwrap(),
        "--profile-dir",
        quick.to_str().unwrap(),
        "--profile",
        "quick",
        "--media-allow-net",
        "127.0.0.0/8",
    ]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sushy/update.py");
    let out = Command::new(python)
        .args([
            script,
            "--url",
            &emu.url,
            "--bios-image",
            &format!("{base}/bios.fw"),
            "--bmc-image",
            &format!("{base}/bmc.fw"),
            "--username",
            "admin",
            "--password",
            "sushy-pass",
        ])
        .output()
        .expect("run update.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sushy's update failed:\n{stdout}");
    assert!(stdout.contains("update: passed"), "{stdout}");
}

/// The real sushy through Dell's and HPE's update behaviours, each on a
/// BMC endpoint of its own: iDRAC 9's Task answering New, then 404 once
/// staged with its job Scheduled and completed by the start (what Ironic's
/// check_scheduled_idrac_job reads); iLO 6's 200 answer, the update
/// followed in `Oem.Hpe.State`.
#[test]
fn sushy_follows_idrac_and_ilo_firmware_updates() {
    use shoal_harness::firmware::artifact;
    let Some(python) = venv_program("python") else {
        return;
    };
    let base = crate::common::file_server(vec![("/bios.fw", artifact("bios", "2.19.1"))]);
    for (profile, vendor, ip) in [
        ("idrac9", "idrac", "127.0.4.21"),
        ("ilo6", "ilo", "127.0.4.22"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let pw = htpasswd(dir.path(), "admin", "sushy-pass", 4);
        let (_emu, url) = endpoint_emulator(
            dir.path(),
            "fw",
            profile,
            &format!("{ip}:0"),
            &[
                "--ipmi-port",
                "0",
                "--auth-file",
                pw.to_str().unwrap(),
                "--media-allow-net",
                "127.0.0.0/8",
            ],
        );
        let url = url.as_str();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sushy/update.py");
        let out = Command::new(&python)
            .args([
                script,
                "--url",
                url,
                "--bios-image",
                &format!("{base}/bios.fw"),
                "--username",
                "admin",
                "--password",
                "sushy-pass",
                "--vendor",
                vendor,
            ])
            .output()
            .expect("run update.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{profile}: {stdout}");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success(),
            "sushy's {vendor} update failed:\n{stdout}"
        );
        assert!(stdout.contains("update: passed"), "{stdout}");
    }
}
