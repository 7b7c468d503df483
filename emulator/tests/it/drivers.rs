//! The harness's `ironic-sequence` driver (Ironic's redfish-https request
//! sequence) against vendor profiles on the real binary: where the
//! sequence goes through, and the condition it hits where a BMC gives no
//! boot AllowableValues.

use shoal_harness::driver::{Bmc, BootRequest};
use shoal_harness::scenario::{Driver, Enabled, Method};

use crate::common::Spawned;

fn boot_with(profile: &str, bios: &[(&str, &str)]) -> anyhow::Result<serde_json::Value> {
    let emu = Spawned::start(&["--fake-systems", "1", "--profile", profile]);
    let agent = curl_json(&format!("{}/redfish/v1/Systems", emu.url));
    let id = agent["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let bmc = Bmc {
        url: emu.url.clone(),
        system: id.clone(),
        python: None,
    };
    bmc.boot(
        Driver::IronicSequence,
        &BootRequest {
            method: Method::UefiHttp,
            uri: Some("http://192.0.2.1/boot.iso".into()),
            enabled: Enabled::Once,
            bios: bios
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            with_mode: false,
        },
    )?;
    Ok(curl_json(&format!("{}/redfish/v1/Systems/{id}", emu.url)))
}

fn curl_json(url: &str) -> serde_json::Value {
    let out = std::process::Command::new("curl")
        .args(["-sS", url])
        .output()
        .expect("curl");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn ironic_sequence_boots_where_allowable_values_are_found() {
    // iDRAC 10: the AllowableValues from its settings object, the URI
    // through the BIOS attributes (it has no HttpBootUri).
    let dell = [
        ("HttpDev1EnDis", "Enabled"),
        ("HttpDev1Uri", "http://192.0.2.1/boot.iso"),
    ];
    for (profile, bios) in [("generic", &[][..]), ("idrac10", &dell[..])] {
        let sys = boot_with(profile, bios).unwrap_or_else(|e| panic!("{profile}: {e:#}"));
        // The machine was powered on with the override (the fake backend
        // starts at once and consumes Once).
        assert_eq!(sys["PowerState"], "On", "{profile}");
    }
}

#[test]
fn ironic_sequence_hits_missing_allowable_values() {
    let e = boot_with("no-allowable-values", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("BootSourceOverrideTarget@Redfish.AllowableValues") && e.contains("TypeError"),
        "{e}"
    );
}
