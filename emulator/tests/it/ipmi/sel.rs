//! The SEL with the real clients: ipmitool (`sel info`, `sel elist`,
//! `sel clear`), FreeIPMI's `ipmi-sel` and pyghmi's `get_event_log` read
//! the same records of what the machine did, named by the SDR's sensors.

use super::*;

/// `ipmi-sel` (FreeIPMI) as the administrator, with `args`.
fn ipmi_sel(bmc: &Bmc, args: &[&str]) -> String {
    let prog = required("/usr/sbin/ipmi-sel", "Debian package freeipmi-tools").expect("ipmi-sel");
    let host = format!("127.0.0.1:{}", bmc.port);
    let out = Command::new(prog)
        .args(["-h", &host, "-u", ADMIN.0, "-p", ADMIN.1, "-D", "LAN_2_0"])
        .args(["--quiet-cache", "--sdr-cache-recreate"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "ipmi-sel {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The records `ipmi-sel` printed (its table's rows, not the header).
fn rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains('|') && !l.starts_with("ID"))
        .collect()
}

/// pyghmi's event log: one line per entry, "id|sensor|event".
fn pyghmi_log(bmc: &Bmc, python: &std::path::Path) -> Vec<String> {
    let script = r#"
import sys
from pyghmi.ipmi import command
c = command.Command(bmc='127.0.0.1', port=int(sys.argv[1]), userid='admin', password='Adm1n-pw')
for e in c.get_event_log():
    print('%s|%s|%s' % (e.get('record_id'), e.get('component'), e.get('event')))
"#;
    let out = Command::new(python)
        .args(["-c", script, &bmc.port.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "pyghmi: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().map(str::to_string).collect()
}

#[test]
fn ipmitool_freeipmi_and_pyghmi_read_and_clear_the_same_sel() {
    if !ipmitool_installed() {
        return;
    }
    let Some(python) = venv_program("python") else {
        return;
    };
    let bmc = Bmc::start();
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["sel", "list"]);
    assert!(ok && out.contains("SEL has no entries"), "{out}");
    let empty = ipmi_sel(&bmc, &[]);
    assert!(rows(&empty).is_empty(), "{empty}");
    // Power on over Redfish, off over IPMI: both are the SEL's.
    bmc.power_on();
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["chassis", "power", "off"]);
    assert!(ok, "{out}");
    let (ok, info) = bmc.ipmitool(ADMIN, None, &["sel", "info"]);
    assert!(ok, "{info}");
    assert!(info.contains("Entries          : 3"), "{info}");
    assert!(info.contains("Reserve"), "{info}");
    let (ok, list) = bmc.ipmitool(ADMIN, None, &["sel", "elist"]);
    assert!(ok, "{list}");
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 3, "{list}");
    assert!(
        lines[0].contains("ACPI State") && lines[0].contains("S0/G0: working"),
        "{list}"
    );
    assert!(
        lines[1].contains("System Boot") && lines[1].contains("Initiated by power up"),
        "{list}"
    );
    assert!(lines[2].contains("S5/G2: soft-off"), "{list}");
    // Redfish's SEL holds the same records, under the same Ids.
    let sys = bmc.system();
    let entries = get(&format!(
        "{}{}/LogServices/Sel/Entries",
        bmc.emu.url,
        sys["@odata.id"].as_str().unwrap()
    ));
    let ids: Vec<&str> = entries["Members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3"], "{entries}");
    assert_eq!(
        entries["Members"][2]["SensorType"],
        "System ACPI PowerState"
    );
    // FreeIPMI reserves first and names the same sensors.
    let fi = ipmi_sel(&bmc, &[]);
    let rows = rows(&fi);
    assert_eq!(rows.len(), 3, "{fi}");
    assert!(
        rows[0].contains("ACPI State") && rows[0].contains("S0/G0"),
        "{fi}"
    );
    assert!(rows[2].contains("S5/G2"), "{fi}");
    // pyghmi reads the SDR, then the records with reservation 0.
    let py = pyghmi_log(&bmc, &python);
    assert_eq!(py.len(), 3, "{py:?}");
    assert!(py[0].starts_with("1|ACPI State|"), "{py:?}");
    assert!(py[1].starts_with("2|System Boot|"), "{py:?}");
    // ipmitool clears it: one record left, the clearing.
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["sel", "clear"]);
    assert!(ok, "{out}");
    let (ok, list) = bmc.ipmitool(ADMIN, None, &["sel", "elist"]);
    assert!(ok, "{list}");
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.contains("Log area reset/cleared"), "{list}");
    // FreeIPMI clears it too (as an operator may not: a user).
    let (ok, out) = bmc.ipmitool(("ro", "r3ad-pw"), None, &["sel", "clear"]);
    assert!(!ok || !out.contains("Clearing SEL"), "{out}");
    ipmi_sel(&bmc, &["--clear"]);
    let fi = ipmi_sel(&bmc, &[]);
    assert!(
        fi.contains("Log Area Reset/Cleared") || fi.contains("Log area reset/cleared"),
        "{fi}"
    );
}
