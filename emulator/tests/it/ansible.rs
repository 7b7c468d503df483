//! Ansible against every vendor profile, in the venv that `ci/test`
//! builds: community.general's Redfish modules (`tests/ansible/redfish.yml`:
//! inventory in every category, power, a one-time boot, a BIOS setting
//! applied at the restart) on one BMC endpoint per profile, and Dell's own
//! collection (`tests/ansible/dell_scp.yml`: a Server Configuration Profile
//! imported from a local file, its BIOS component applied by the restart
//! the import makes) on the iDRAC 9 endpoint. What differs per vendor is
//! what an operator's playbook must say for it, passed as extra variables.

use std::path::Path;
use std::process::Command;

use crate::common::{certificate, venv_program, Spawned};

/// (system and endpoint name, profile, extra variables as JSON).
const PROFILES: &[(&str, &str, &str)] = &[
    ("generic", "generic", "{}"),
    ("idrac9", "idrac9", "{}"),
    (
        "idrac10",
        "idrac10",
        r#"{"vmedia_under": ["Systems"], "settle_retries": 6}"#,
    ),
    (
        "ilo5",
        "ilo5",
        r#"{"vmedia_under": ["Manager"], "settle_retries": 6}"#,
    ),
    (
        "ilo6",
        "ilo6",
        r#"{"vmedia_under": ["Manager"], "settle_retries": 6}"#,
    ),
    ("supermicro", "supermicro-x12", "{}"),
    // The XCC's logs are under the System: Ansible reads the Manager's.
    ("lenovo", "lenovo-xcc", r#"{"manager_logs": false}"#),
    (
        "ami",
        "ami-asrockrack",
        r#"{"boot_mode": "UEFI", "boot_refused": true}"#,
    ),
    // bmcweb's Manager log is the Journal, which has no ClearLog.
    ("openbmc", "openbmc", r#"{"manager_logs_clear": false}"#),
];

const BIOS_SCP: &str = r#"<SystemConfiguration Model="PowerEdge R750" ServiceTag="SHOAL01">
<Component FQDD="BIOS.Setup.1-1">
  <Attribute Name="ProcVirtualization">Disabled</Attribute>
  <Attribute Name="PowerOnDelaySeconds">15</Attribute>
</Component>
</SystemConfiguration>
"#;

/// Runs `playbook` against `hostport` with `extra` variables; its output
/// and whether it passed.
fn play(
    playbook: &Path,
    python: &Path,
    home: &Path,
    hostport: &str,
    extra: &[&str],
) -> (bool, String) {
    let mut cmd = Command::new(python.with_file_name("ansible-playbook"));
    cmd.args(["-i", "localhost,", "-c", "local"])
        .arg("-e")
        .arg(format!("ansible_python_interpreter={}", python.display()))
        .arg("-e")
        .arg(format!("baseuri={hostport}"));
    for e in extra {
        cmd.args(["-e", e]);
    }
    let out = cmd
        .arg(playbook)
        .env("HOME", home)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        .output()
        .expect("run ansible-playbook");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && text.contains(" failed=0 "), text)
}

#[test]
fn ansible_drives_every_vendor_profile() {
    let Some(python) = venv_program("python") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let mut cfg = String::new();
    for (name, profile, _) in PROFILES {
        cfg += &format!(
            "[[systems]]\nname = \"{name}\"\nprofile = \"{profile}\"\ndisks = [{{ name = \"sda\", capacity_gib = 100 }}]\n"
        );
    }
    for (name, _, _) in PROFILES {
        cfg += &format!("[[endpoints]]\nlisten = \"127.0.0.1:0\"\nsystems = [\"{name}\"]\n");
    }
    let path = dir.path().join("shoal.toml");
    std::fs::write(&path, cfg).unwrap();
    let scp = dir.path().join("scp");
    std::fs::create_dir(&scp).unwrap();
    std::fs::write(scp.join("bios.xml"), BIOS_SCP).unwrap();
    let (_emu, lines) = Spawned::start_lines(
        &[
            "--config",
            path.to_str().unwrap(),
            "--ssl-certificate",
            cert.to_str().unwrap(),
            "--ssl-key",
            key.to_str().unwrap(),
        ],
        1 + PROFILES.len(),
    );
    // "shoal-emulator endpoint NAME on https://127.0.0.1:PORT"
    let hostport = |name: &str| {
        let line = lines
            .iter()
            .find(|l| l.contains(&format!("endpoint {name} on ")))
            .unwrap_or_else(|| panic!("no endpoint {name} in {lines:?}"));
        line.rsplit("https://").next().unwrap().to_string()
    };
    let books = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ansible");
    let scp_dir = format!("scp_dir={}", scp.display());
    let runs: Vec<(String, Vec<String>, std::path::PathBuf)> = PROFILES
        .iter()
        .map(|(name, _, extra)| {
            (
                name.to_string(),
                vec![extra.to_string()],
                books.join("redfish.yml"),
            )
        })
        .chain(std::iter::once((
            "idrac9".to_string(),
            vec![scp_dir],
            books.join("dell_scp.yml"),
        )))
        .collect();
    // The Dell playbook runs after the Redfish one on the same iDRAC (one
    // playbook at a time per machine); the endpoints run side by side.
    let (dell, redfish): (Vec<_>, Vec<_>) = runs
        .into_iter()
        .partition(|(_, _, book)| book.ends_with("dell_scp.yml"));
    let mut failures = Vec::new();
    for batch in [redfish, dell] {
        let handles: Vec<_> = batch
            .into_iter()
            .map(|(name, extra, book)| {
                let (python, home, hp) = (python.clone(), dir.path().join(&name), hostport(&name));
                std::thread::spawn(move || {
                    std::fs::create_dir_all(home.join("tmp")).unwrap();
                    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
                    let (ok, out) = play(&book, &python, &home, &hp, &extra);
                    (name, book, ok, out)
                })
            })
            .collect();
        for h in handles {
            let (name, book, ok, out) = h.join().unwrap();
            let recap = out
                .lines()
                .find(|l| l.starts_with("localhost "))
                .unwrap_or("no recap")
                .to_string();
            println!(
                "{name} {}: {recap}",
                book.file_name().unwrap().to_string_lossy()
            );
            if !ok {
                failures.push(format!("{name} {}:\n{out}", book.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
