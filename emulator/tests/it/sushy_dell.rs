//! Dell's RAID service driven by the real sushy Dell extension (the code
//! behind Ironic's `idrac-redfish` RAID interface), in the venv that
//! `ci/test` builds: `tests/dell/sushy_dell_raid.py` converts drives,
//! makes and deletes a RAID1, clears foreign configuration and switches
//! the PERC to HBA and back across resets, on an idrac9 endpoint of its
//! own over a machine with three drives.

use std::process::Command;

use crate::common::{venv_program, Spawned};

#[test]
fn sushys_dell_extension_drives_the_idrac_raid_service() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("shoal.toml");
    std::fs::write(
        &cfg,
        r#"
[[systems]]
name = "r750"
profile = "idrac9"
disks = [
  { name = "sda", capacity_gib = 480 },
  { name = "sdb", capacity_gib = 480 },
  { name = "sdc", capacity_gib = 960 },
]
[[endpoints]]
listen = "127.0.4.1:0"
systems = ["r750"]
"#,
    )
    .unwrap();
    let (_emu, lines) =
        Spawned::start_lines(&["--config", cfg.to_str().unwrap(), "--ipmi-port", "0"], 2);
    let url = lines[1].rsplit(' ').next().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/dell/sushy_dell_raid.py");
    let out = Command::new(python)
        .args([script, "--url", url])
        .output()
        .expect("run sushy_dell_raid.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sushy's Dell RAID failed:\n{stdout}");
    assert!(stdout.contains("6 passed, 0 failed"), "{stdout}");
}
