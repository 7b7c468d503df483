//! Shoal's varstore reader/writer against Debian's real OVMF varstores,
//! with virt-firmware's `virt-fw-vars` as the independent oracle.

use std::process::Command;

use shoal_emulator::nvram::boot::{self, Persistence};
use shoal_emulator::nvram::Varstore;

use crate::common::{required, venv_program};

const TEMPLATES: &[&str] = &[
    "/usr/share/OVMF/OVMF_VARS_4M.fd",
    "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
    "/usr/share/OVMF/OVMF_VARS.fd",
];

fn template(path: &str) -> Option<Vec<u8>> {
    required(path, "Debian package ovmf").map(|p| std::fs::read(p).unwrap())
}

fn oracle_print(vars: &std::path::Path) -> String {
    let prog = venv_program("virt-fw-vars").expect("virt-fw-vars");
    let out = Command::new(prog)
        .args(["-i", vars.to_str().unwrap(), "--print", "--verbose"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "virt-fw-vars: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn real_templates_round_trip_byte_for_byte() {
    for t in TEMPLATES {
        let Some(bytes) = template(t) else { return };
        let store = Varstore::parse(bytes.clone()).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(store.into_bytes(), bytes, "{t}");
    }
}

/// Shoal and virt-fw-vars see the same variables, with the same sizes, in
/// the Secure Boot template (which holds PK, KEK, db and dbx).
#[test]
fn variables_and_sizes_agree_with_virt_fw_vars() {
    let path = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";
    let Some(bytes) = template(path) else { return };
    let store = Varstore::parse(bytes).unwrap();
    let mut ours: Vec<String> = store
        .variables()
        .map(|v| format!("name={} size={}", v.name, v.data.len()))
        .collect();
    let mut theirs: Vec<String> = oracle_print(std::path::Path::new(path))
        .lines()
        .filter(|l| l.starts_with("name="))
        .map(|l| {
            // Names may hold spaces ("Attempt 1"): the name ends at " guid=".
            let name = &l[..l.find(" guid=").unwrap()];
            let size = l
                .split_whitespace()
                .find(|w| w.starts_with("size="))
                .unwrap();
            format!("{name} {size}")
        })
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
    for k in ["PK", "KEK", "db", "dbx"] {
        assert!(
            ours.iter().any(|v| v.starts_with(&format!("name={k} "))),
            "{k} missing"
        );
    }
}

/// What Shoal writes, virt-fw-vars reads back as the same boot entry.
#[test]
fn shoal_written_uri_boot_entry_decodes_identically_in_virt_fw_vars() {
    let Some(bytes) = template(TEMPLATES[0]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (uri, how, shown) in [
        (
            "http://192.0.2.1/boot.iso",
            Persistence::Once,
            "devpath=URI(http://192.0.2.1/boot.iso)",
        ),
        ("", Persistence::Continuous, "devpath=URI()"),
    ] {
        let mut store = Varstore::parse(bytes.clone()).unwrap();
        let n = boot::set_http_boot(&mut store, uri, how).unwrap();
        let path = dir.path().join("vars.fd");
        std::fs::write(&path, store.as_bytes()).unwrap();
        let printed = oracle_print(&path);
        assert!(printed.contains(&format!("name=Boot{n:04X}")), "{printed}");
        assert!(
            printed.contains(&format!("title=\"{}\"", boot::SHOAL_DESCRIPTION)),
            "{printed}"
        );
        assert!(printed.contains(shown), "{printed}");
        let order = printed
            .split("name=BootOrder")
            .nth(1)
            .and_then(|s| s.lines().nth(1))
            .unwrap_or("");
        let next = printed
            .split("name=BootNext")
            .nth(1)
            .and_then(|s| s.lines().nth(1))
            .unwrap_or("");
        match how {
            Persistence::Once => assert!(
                next.contains(&format!("{n:04x}")),
                "BootNext: {next:?}\n{printed}"
            ),
            Persistence::Continuous => {
                assert!(
                    order
                        .trim_start()
                        .starts_with(&format!("boot order: {n:04x}")),
                    "BootOrder: {order:?}"
                );
                assert!(next.is_empty(), "no BootNext for Continuous");
            }
        }
    }
}

/// What virt-fw-vars writes, Shoal reads as a URI load option plus BootNext.
#[test]
fn virt_fw_vars_written_entry_decodes_in_shoal() {
    let Some(_) = template(TEMPLATES[0]) else {
        return;
    };
    let prog = venv_program("virt-fw-vars").expect("virt-fw-vars");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("vars.fd");
    let st = Command::new(prog)
        .args([
            "-i",
            TEMPLATES[0],
            "-o",
            out.to_str().unwrap(),
            "--set-boot-uri",
            "http://192.0.2.7/x.efi",
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let store = Varstore::parse(std::fs::read(&out).unwrap()).unwrap();
    let next = boot::boot_next(&store).expect("BootNext");
    let (_, opt) = boot::load_options(&store)
        .into_iter()
        .find(|(n, _)| *n == next)
        .expect("Boot#### for BootNext");
    assert_eq!(
        boot::device_path_uri(&opt.device_path).as_deref(),
        Some("http://192.0.2.7/x.efi")
    );
    assert_eq!(opt.attributes & boot::LOAD_OPTION_ACTIVE, 1);
}

/// A load option naming one NIC's HTTP boot instance (what
/// `PrebootNetworkEnvPolicy` IPv4/IPv6 writes) decodes in virt-fw-vars node
/// by node, PCI hops and all, with its URI.
#[test]
fn shoal_written_nic_instance_path_decodes_in_virt_fw_vars() {
    let Some(bytes) = template(TEMPLATES[0]) else {
        return;
    };
    let nic = boot::NicPath {
        pci: vec![(2, 1), (0, 0)],
        mac: [0x52, 0x54, 0x00, 0x5e, 0x10, 0x01],
    };
    let dir = tempfile::tempdir().unwrap();
    for (ip, uri, shown) in [
        (
            boot::IpVersion::V6,
            "",
            "devpath=PciRoot()/PCI(dev=02:1)/PCI(dev=00:0)/MAC()/IPv6()/URI()",
        ),
        (
            boot::IpVersion::V4,
            "http://192.0.2.1/a.efi",
            "devpath=PciRoot()/PCI(dev=02:1)/PCI(dev=00:0)/MAC()/IPv4()/URI(http://192.0.2.1/a.efi)",
        ),
    ] {
        let mut store = Varstore::parse(bytes.clone()).unwrap();
        let path = boot::nic_http_device_path(&nic, ip, uri);
        let n = boot::set_http_boot_path(&mut store, path, Persistence::Once).unwrap();
        let file = dir.path().join("vars.fd");
        std::fs::write(&file, store.as_bytes()).unwrap();
        let printed = oracle_print(&file);
        let entry = printed
            .split(&format!("name=Boot{n:04X}"))
            .nth(1)
            .unwrap_or_else(|| panic!("no Boot{n:04X}\n{printed}"));
        assert!(entry.contains(shown), "{shown}\n{entry}");
        let reread = Varstore::parse(std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(boot::option_uri(&reread, n).as_deref(), Some(uri));
    }
}

/// The trusted CAs Shoal writes (`TlsCaCertificate`), virt-fw-vars reads as
/// X.509 signature lists of the same certificates, under edk2's TLS CA GUID.
#[test]
fn tls_ca_certificates_read_back_in_virt_fw_vars() {
    use shoal_emulator::nvram::tls;
    let path = "/usr/share/OVMF/OVMF_VARS_4M.fd";
    let Some(bytes) = template(path) else { return };
    let mut store = Varstore::parse(bytes).unwrap();
    let pems = [
        crate::api_boot_certs::cert_pem("Shoal CA One", true),
        crate::api_boot_certs::cert_pem("Shoal CA Two", true),
    ];
    let ders: Vec<Vec<u8>> = pems
        .iter()
        .map(|p| shoal_emulator::certs::parse_pem(p).unwrap())
        .collect();
    let refs: Vec<&[u8]> = ders.iter().map(Vec::as_slice).collect();
    tls::set_ca_certificates(&mut store, &refs).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("vars.fd");
    std::fs::write(&out, store.as_bytes()).unwrap();
    let printed = oracle_print(&out);
    let var = printed
        .split("\n\n")
        .find(|b| b.contains("name=TlsCaCertificate"))
        .unwrap_or_else(|| panic!("no TlsCaCertificate in:\n{printed}"));
    assert!(var.contains("EfiTlsCaCertificate"), "{var}");
    assert_eq!(var.matches("EfiCertX509 count=1").count(), 2, "{var}");
    assert!(
        var.contains("CN=Shoal CA One") && var.contains("CN=Shoal CA Two"),
        "{var}"
    );
    let stored = store.get(tls::TLS_CA_VENDOR, tls::NAME).unwrap();
    assert_eq!(stored.attributes, tls::NV_BS);
    assert_eq!(tls::certificates(&stored.data), Some(ders));

    // None enrolled: the variable goes.
    tls::set_ca_certificates(&mut store, &[]).unwrap();
    std::fs::write(&out, store.as_bytes()).unwrap();
    assert!(!oracle_print(&out).contains("TlsCaCertificate"));
}

/// The harness's fw_cfg `etc/edk2/https/cacerts` and the BMC's
/// `TlsCaCertificate` are one format: each reads the other's lists.
#[test]
fn the_fw_cfg_cacerts_file_and_the_variable_share_one_format() {
    use shoal_emulator::nvram::tls;
    let ca = shoal_harness::tls::Ca::new("fw_cfg CA").unwrap();
    let file = shoal_harness::tls::edk2_cacerts(&[&ca.cert, &ca.cert]).unwrap();
    let der = ca.cert.to_der().unwrap();
    assert_eq!(
        tls::certificates(&file),
        Some(vec![der.clone(), der.clone()])
    );
    assert_eq!(
        file.len(),
        tls::signature_lists([der.as_slice(), der.as_slice()]).len()
    );
}
