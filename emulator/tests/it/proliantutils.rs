//! Client compatibility with HPE's proliantutils (IloClient's Redfish
//! path, the library behind Ironic's iLO drivers), in the venv that
//! `ci/test` builds: `tests/hpe/proliantutils_compat.py` drives an `ilo5`
//! endpoint of its own over HTTPS through every call Ironic's iLO drivers
//! and operators' tooling make, and checks what the BMC then says.

use std::process::Command;

use crate::common::{certificate, venv_program, Spawned};

#[test]
fn proliantutils_drives_the_ilo5_profile() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (_emu, lines) = Spawned::start_lines(
        &[
            "--fake-systems",
            "1",
            "--profile",
            "ilo5",
            // The certificate names 127.0.0.1; no IPMI listener there to
            // share with other tests.
            "--endpoint-per-system",
            "127.0.0.1:0",
            "--ipmi-port",
            "0",
            "--ssl-certificate",
            cert.to_str().unwrap(),
            "--ssl-key",
            key.to_str().unwrap(),
        ],
        2,
    );
    let url = lines[1].rsplit(' ').next().unwrap();
    let host = url.strip_prefix("https://").expect("an HTTPS endpoint");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/hpe/proliantutils_compat.py"
    );
    let out = Command::new(python)
        .args([script, "--host", host, "--cacert", cert.to_str().unwrap()])
        .output()
        .expect("run proliantutils_compat.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "proliantutils compatibility failed:\n{stdout}"
    );
    assert!(stdout.contains("9 passed, 0 failed"), "{stdout}");
}
