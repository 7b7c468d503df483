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
    // A DL360 with three drives (RAID 1 over two of them), on an endpoint
    // of its own: the certificate names 127.0.0.1.
    let cfg = dir.path().join("shoal.toml");
    std::fs::write(
        &cfg,
        r#"
[[systems]]
name = "dl360"
profile = "ilo5"
disks = [
  { name = "sda", capacity_gib = 480 },
  { name = "sdb", capacity_gib = 480 },
  { name = "sdc", capacity_gib = 960 },
]
[[endpoints]]
listen = "127.0.0.1:0"
systems = ["dl360"]
"#,
    )
    .unwrap();
    let (_emu, lines) = Spawned::start_lines(
        &[
            "--config",
            cfg.to_str().unwrap(),
            // No IPMI listener there to share with other tests.
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
    assert!(stdout.contains("10 passed, 0 failed"), "{stdout}");
}
