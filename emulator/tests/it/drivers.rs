//! The harness's drivers on the real binary: `ironic-sequence` (Ironic's
//! redfish-https request sequence) against vendor profiles, where the
//! sequence goes through and the condition it hits where a BMC gives no
//! boot AllowableValues; `ipmitool` and `pyghmi` (the OpenPOWER
//! scenarios' drivers) over lanplus, checked through Redfish and the
//! mailbox read back.

use shoal_harness::driver::{Bmc, BootRequest};
use shoal_harness::scenario::{Driver, Enabled, Method};

use crate::common::{curl_json, first_system_id, required, venv_program, Spawned};

fn boot_with(profile: &str, bios: &[(&str, &str)]) -> anyhow::Result<serde_json::Value> {
    let emu = Spawned::start(&["--fake-systems", "1", "--profile", profile]);
    let id = first_system_id(&emu.url);
    let bmc = Bmc {
        url: emu.url.clone(),
        system: id.clone(),
        python: None,
        ipmi: None,
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
            mailbox: None,
            lock_flags: false,
            // As before an HTTPS boot: the CA goes in first.
            enroll: Some(crate::api_boot_certs::cert_pem("Driver CA", true)),
            eject_after: None,
            firmware_update: None,
        },
    )?;
    let sys = curl_json(&format!("{}/redfish/v1/Systems/{id}", emu.url));
    // The CA is where this BMC keeps it: Boot.Certificates, or HPE's BIOS
    // TLS configuration (applied by the start).
    match sys["Boot"]["Certificates"]["@odata.id"].as_str() {
        Some(certs) => {
            let certs = curl_json(&format!("{}{certs}", emu.url));
            assert_eq!(certs["Members@odata.count"], 1, "{profile}: {certs}");
        }
        None => {
            let bios = sys["Bios"]["@odata.id"].as_str().unwrap();
            let bios = curl_json(&format!("{}{bios}", emu.url));
            let tls = bios["Oem"]["Hpe"]["Links"]["TlsConfig"]["@odata.id"]
                .as_str()
                .unwrap_or_else(|| panic!("{profile}: no route for the CA"));
            let tls = curl_json(&format!("{}{tls}", emu.url));
            assert_eq!(tls["TlsCaCertificateCount"], 1, "{profile}: {tls}");
        }
    }
    Ok(sys)
}

#[test]
fn ironic_sequence_boots_where_allowable_values_are_found() {
    // iDRAC 10: the AllowableValues from its settings object, the URI
    // through the BIOS attributes (it has no HttpBootUri), its TLS mode
    // one-way before it takes the CA. iLO 6: the URI in UrlBootFile, the
    // CA in its BIOS TLS settings.
    let dell = [
        ("HttpDev1EnDis", "Enabled"),
        ("HttpDev1Uri", "https://192.0.2.1/boot.iso"),
        ("HttpDev1TlsMode", "OneWay"),
    ];
    let hpe = [("UrlBootFile", "https://192.0.2.1/boot.iso")];
    for (profile, bios) in [
        ("generic", &[][..]),
        ("idrac10", &dell[..]),
        ("ilo6", &hpe[..]),
    ] {
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

/// The IPMI drivers: boot device, persistence, the mailbox and the lock
/// land as the OpenPOWER host reads them; the machine is powered on.
#[test]
fn ipmi_drivers_set_the_flags_and_mailbox_then_power_on() {
    if required(std::path::PathBuf::from("/usr/bin/ipmitool"), "ipmitool").is_none() {
        return;
    }
    let Some(python) = venv_program("python") else {
        return;
    };
    for (driver, method, enabled) in [
        // Persistent: a start on the fake backend consumes a one-time
        // override, and the flags are to be read after it.
        (Driver::Ipmitool, Method::Pxe, Enabled::Continuous),
        (Driver::Pyghmi, Method::Disk, Enabled::Continuous),
    ] {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let emu = Spawned::start(&[
            "--fake-systems",
            "1",
            "--ipmi-port",
            &port.to_string(),
            "--ipmi-user",
            "admin:password",
        ]);
        let members = curl_json(&format!("{}/redfish/v1/Systems", emu.url));
        let path = members["Members"][0]["@odata.id"]
            .as_str()
            .unwrap()
            .to_string();
        let bmc = Bmc {
            url: emu.url.clone(),
            system: path.rsplit('/').next().unwrap().to_string(),
            python: Some(python.clone()),
            ipmi: Some(("127.0.0.1".into(), port)),
        };
        let mailbox = "petitboot,bootdevs=network disk";
        bmc.boot(
            driver,
            &BootRequest {
                method,
                uri: None,
                enabled,
                bios: Default::default(),
                with_mode: false,
                mailbox: Some(mailbox.into()),
                lock_flags: true,
                enroll: None,
                eject_after: None,
                firmware_update: None,
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e:#}", driver.name()));
        let sys = curl_json(&format!("{}{path}", emu.url));
        let want = match method {
            Method::Pxe => "Pxe",
            _ => "Hdd",
        };
        assert_eq!(sys["PowerState"], "On", "{}", driver.name());
        assert_eq!(sys["Boot"]["BootSourceOverrideTarget"], want);
        assert_eq!(sys["Boot"]["BootSourceOverrideEnabled"], enabled.as_str());
        // Read back as petitboot does: parameter 5 locked (bit 7), the
        // mailbox's blocks.
        let raw = |args: &[&str]| {
            let out = std::process::Command::new("ipmitool")
                .args(["-I", "lanplus", "-H", "127.0.0.1", "-p", &port.to_string()])
                .args(["-U", "admin", "-P", "password", "raw"])
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect::<Vec<u8>>()
        };
        assert_eq!(raw(&["0x00", "0x09", "0x05", "0x00", "0x00"])[1], 0x85);
        let mut text = Vec::new();
        for block in 0..3u8 {
            let got = raw(&["0x00", "0x09", "0x07", &block.to_string(), "0x00"]);
            assert_eq!(got[..3], [0x01, 0x07, block]);
            text.extend_from_slice(&got[3..]);
        }
        assert_eq!(text[..3], [0x02, 0x00, 0x00]);
        let end = text.iter().skip(3).position(|b| *b == 0).unwrap() + 3;
        assert_eq!(std::str::from_utf8(&text[3..end]).unwrap(), mailbox);
    }
}
