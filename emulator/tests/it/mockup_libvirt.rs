//! A replayed capture over libvirt (`--mockup` with `--libvirt-domain`,
//! on libvirt's test driver): the committed capture of an iDRAC 9
//! (`scenarios/captures/idrac9`) loads, its System.Embedded.1 is the
//! domain named for it, its captured NIC shows the domain's MAC, power
//! at the captured Reset target reaches that domain, a Boot override is decided on the profile derived from the
//! capture, and a capture whose systems the domains named do not pair
//! up with stops the start, saying so.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{call, Spawned};

/// The capture the `ironic-replay-idrac9-vmedia` scenario replays.
fn idrac9() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/captures/idrac9")
}

#[test]
fn a_captured_idrac_replays_over_a_libvirt_domain() {
    let capture = idrac9();
    let emu = Spawned::start(&[
        "--libvirt-uri",
        "test:///default",
        "--libvirt-domain",
        "test",
        "--mockup",
        capture.to_str().unwrap(),
    ]);
    let base = emu
        .url
        .trim_end_matches('/')
        .trim_end_matches("/redfish/v1");
    let sys = format!("{base}/redfish/v1/Systems/System.Embedded.1");
    // The captured body, with the domain's live state (the test driver's
    // domain "test" runs; each connection to test:///default has a state
    // of its own, so the emulator's answers are the domain's).
    let (code, body) = call("GET", &sys, "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["Id"], "System.Embedded.1");
    assert_eq!(body["PowerState"], "On", "{body}");
    assert_eq!(body["Model"], "PowerEdge R650", "the captured Model");
    // The captured NIC shows the domain's MAC: what inspection makes a
    // port of is the NIC the machine boots with.
    let nic = format!("{sys}/EthernetInterfaces/NIC.Integrated.1-1-1");
    let (code, body) = call("GET", &nic, "");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["MACAddress"], "aa:bb:cc:dd:ee:ff", "{body}");
    assert_eq!(body["Id"], "NIC.Integrated.1-1-1", "the rest as captured");
    // Power at the captured target reaches the domain.
    let reset = format!("{sys}/Actions/ComputerSystem.Reset");
    let (code, body) = call("POST", &reset, r#"{"ResetType": "ForceOff"}"#);
    assert!(code == 200 || code == 204, "{code} {body}");
    assert_eq!(call("GET", &sys, "").1["PowerState"], "Off");
    // A value the capture does not list is refused with the registry's
    // MessageId, nothing changed.
    let (code, body) = call("POST", &reset, r#"{"ResetType": "Suspend"}"#);
    assert_eq!(code, 400, "{body}");
    assert!(
        body.to_string().contains("ActionParameterValueNotInList"),
        "{body}"
    );
    let (code, body) = call("POST", &reset, r#"{"ResetType": "On"}"#);
    assert!(code == 200 || code == 204, "{code} {body}");
    assert_eq!(call("GET", &sys, "").1["PowerState"], "On");
    // The boot override, decided on the derived profile: what the
    // capture lists is taken (and shows), what it does not is refused.
    let (code, body) = call(
        "PATCH",
        &sys,
        r#"{"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}"#,
    );
    assert!(code == 200 || code == 204, "{code} {body}");
    let boot = call("GET", &sys, "").1["Boot"].clone();
    assert_eq!(boot["BootSourceOverrideTarget"], "Cd", "{boot}");
    assert_eq!(boot["BootSourceOverrideEnabled"], "Once", "{boot}");
    let (code, body) = call(
        "PATCH",
        &sys,
        r#"{"Boot": {"BootSourceOverrideTarget": "UsbCd"}}"#,
    );
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        call("GET", &sys, "").1["Boot"]["BootSourceOverrideTarget"],
        "Cd",
        "nothing half-applied"
    );
    emu.stop();
}

#[test]
fn a_capture_and_the_domains_named_must_pair_up() {
    let capture = idrac9();
    let out = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
        .args(["--port", "0", "--libvirt-uri", "test:///default"])
        .arg("--mockup")
        .arg(&capture)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--mockup on libvirt: the capture has 1 system(s) and 0 --libvirt-domain given"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing listened");
}
