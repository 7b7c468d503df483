//! The libvirt backend on libvirt's `test:///default` driver: domains as
//! systems, power, device boot order with Once/Continuous, state kept in
//! the domain's metadata, and UefiHttp written into a UEFI domain's NVRAM.
//!
//! `test:///default` is one shared instance per process while a connection
//! to it is open, so each test keeps its own connection (`Hv`) for the
//! checks and defines its own domains.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};
use shoal_emulator::backend::libvirt::media::MediaOptions;
use shoal_emulator::backend::libvirt::{LibvirtBackend, LibvirtOptions};
use shoal_emulator::backend::options::HttpBootMapping;
use shoal_emulator::netpolicy::AddressPolicy;
use shoal_emulator::nvram::{boot as efiboot, Varstore};
use virt::connect::Connect;

use crate::common::{fake_iso, file_server, required, Api};

/// One cache folder per test process, removed when it ends.
fn media_cache() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .to_path_buf()
}

const URI: &str = "test:///default";

struct Hv(Connect);

impl Hv {
    fn open() -> Self {
        Hv(Connect::open(Some(URI)).expect("test:///default"))
    }

    fn define(&self, xml: &str) -> String {
        let d = self.0.define_domain_xml(xml).expect("define");
        d.uuid_string().unwrap()
    }

    fn xml(&self, id: &str, inactive: bool) -> String {
        let d = self.0.lookup_domain_by_uuid_string(id).unwrap();
        d.xml_desc(if inactive {
            virt::sys::VIR_DOMAIN_XML_INACTIVE
        } else {
            0
        })
        .unwrap()
    }

    /// The device element that carries `<boot order='1'/>`.
    fn first_boot(&self, id: &str, inactive: bool) -> String {
        let x = shoal_emulator::backend::libvirt::xml::parse(&self.xml(id, inactive)).unwrap();
        format!(
            "{:?}",
            shoal_emulator::backend::libvirt::domain::first_boot_device(&x)
        )
    }
}

/// One folder per test process for the varstores of domains switched to
/// UEFI (libvirt's test driver has no NVRAM folder of its own); made by
/// the backend at the first such start.
fn nvram_folder() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .join("nvram")
}

fn api(allow: &[&str]) -> Api {
    Api::on(Arc::new(
        LibvirtBackend::connect(options(allow)).expect("backend"),
    ))
}

fn options(allow: &[&str]) -> LibvirtOptions {
    LibvirtOptions {
        media_pool: "default".into(),
        profile: "generic".into(),
        domain_profiles: Vec::new(),
        uris: vec![URI.into()],
        allow: allow.iter().map(|s| s.to_string()).collect(),
        http_boot: HttpBootMapping::Firmware,
        graceful_timeout: Duration::from_secs(2),
        media: MediaOptions {
            cache: media_cache(),
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            insecure: false,
            // The tests' image servers listen on loopback.
            addresses: AddressPolicy {
                allow: vec!["127.0.0.0/8".parse().unwrap()],
                ..Default::default()
            },
        },
        nvram_dir: Some(nvram_folder()),
        ipmi_in_band_dir: None,
        loaders: None,
    }
}

fn legacy_domain(name: &str) -> String {
    format!(
        r#"<domain type="test"><name>{name}</name><memory unit="MiB">512</memory><vcpu>1</vcpu>
  <os><type arch="x86_64">hvm</type><boot dev="hd"/></os>
  <devices>
    <disk type="file" device="disk"><source file="/guest/{name}.img"/><target dev="vda" bus="virtio"/></disk>
    <disk type="file" device="cdrom"><target dev="sda" bus="sata"/><readonly/></disk>
    <interface type="network"><mac address="52:54:00:10:00:01"/><source network="default"/></interface>
  </devices></domain>"#
    )
}

/// Serial-over-LAN takes a domain's console through libvirt's console
/// stream, which serves pty consoles only: a domain without one has no
/// console to give, and says so instead of waiting on a silent line.
#[tokio::test(flavor = "multi_thread")]
async fn only_a_pty_console_is_offered_to_serial_over_lan() {
    use shoal_emulator::backend::{Backend, BackendError, Unsupported};
    let hv = Hv::open();
    let plain = hv.define(&legacy_domain("console-none"));
    let file = hv.define(&legacy_domain("console-file").replace(
        "</devices>",
        r#"<serial type="file"><source path="/tmp/console-file.log"/><target port="0"/></serial></devices>"#,
    ));
    let pty = hv.define(&legacy_domain("console-pty").replace(
        "</devices>",
        r#"<serial type="pty"><target port="0"/></serial></devices>"#,
    ));
    let backend = LibvirtBackend::connect(options(&[])).expect("backend");
    for id in [&plain, &file] {
        match backend.console(id).await {
            Err(BackendError::Unsupported(Unsupported::Console)) => {}
            Err(e) => panic!("{id}: {e}"),
            Ok(_) => panic!("{id}: a console without a pty"),
        }
    }
    let console = backend.console(&pty).await.expect("a pty console");
    assert!(!console.input.is_closed());
    assert!(matches!(
        backend
            .console("00000000-0000-4000-8000-00000000dead")
            .await,
        Err(BackendError::NotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn domains_are_systems_with_real_power() {
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("power-vm"));
    let api = api(&["power-vm"]);
    let list = api.get("/redfish/v1/Systems").await.body;
    assert_eq!(
        list["Members@odata.count"], 1,
        "the allow-list hides the driver's own domain"
    );
    let sys = format!("/redfish/v1/Systems/{id}");
    let s = api.get(&sys).await.body;
    assert_eq!(
        (s["Name"].clone(), s["PowerState"].clone()),
        (json!("power-vm"), json!("Off"))
    );
    assert_eq!(s["MemorySummary"]["TotalSystemMemoryGiB"], 0.5);
    assert_eq!(
        api.get("/redfish/v1/Systems/power-vm")
            .await
            .header("location"),
        Some(sys.clone())
    );
    let allowed = s["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        !allowed.contains(&json!("UefiHttp")),
        "a BIOS domain offers no UefiHttp"
    );

    api.reset(&sys, "On").await;
    assert!(hv
        .0
        .lookup_domain_by_uuid_string(&id)
        .unwrap()
        .is_active()
        .unwrap());
    assert_eq!(api.get(&sys).await.body["PowerState"], "On");
    api.reset(&sys, "ForceOff").await;
    assert!(!hv
        .0
        .lookup_domain_by_uuid_string(&id)
        .unwrap()
        .is_active()
        .unwrap());
    api.reset(&sys, "PowerCycle").await;
    assert_eq!(api.get(&sys).await.body["PowerState"], "On");
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "Bogus"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

/// What one Boot PATCH costs in libvirt calls: the Id resolved by one
/// lookup (no listing), the definition read under the lock and again by
/// the change (parsed only if it changed since), one define, no re-read.
/// A guest that powers itself off (here: the domain shut down behind
/// the BMC's back) is on the BMC's change stream as the machine's doing,
/// once, when the BMC next looks at it.
#[tokio::test(flavor = "multi_thread")]
async fn a_guest_that_powers_itself_off_is_recorded_as_the_machines_doing() {
    use shoal_emulator::bmc::changes::{Cause, What};
    use shoal_emulator::model::PowerState;
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("self-off-vm"));
    let api = api(&["self-off-vm"]);
    let sys = format!("/redfish/v1/Systems/{id}");
    api.reset(&sys, "On").await;
    // Listening from here: the BMC sees the machine on.
    let mut rx = api.state.core.changes.subscribe();
    assert_eq!(api.get(&sys).await.body["PowerState"], "On");
    hv.0.lookup_domain_by_uuid_string(&id)
        .unwrap()
        .shutdown()
        .expect("the guest shuts down");
    assert_eq!(api.get(&sys).await.body["PowerState"], "Off");
    let r = rx.try_recv().expect("a record");
    assert_eq!(r.cause, Cause::Machine);
    assert_eq!(
        r.what,
        What::Power {
            before: PowerState::On,
            after: PowerState::Off
        }
    );
    api.get(&sys).await;
    assert!(rx.try_recv().is_err(), "recorded once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_boot_patch_parses_the_definition_at_most_once_and_defines_once() {
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("cost-vm"));
    for other in ["cost-other-1", "cost-other-2"] {
        hv.define(&legacy_domain(other));
    }
    let backend = Arc::new(LibvirtBackend::connect(options(&[])).expect("backend"));
    let api = Api::on(backend.clone());
    let sys = format!("/redfish/v1/Systems/{id}");
    assert_eq!(api.get(&sys).await.status, StatusCode::OK);
    // The first change of a system reads it once more (the BMC's log
    // compares what it was with what it becomes); later ones start from
    // what the last one left.
    let first = backend.calls();
    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(backend.calls().reads - first.reads, 3);
    api.get(&sys).await;
    let before = backend.calls();
    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert_eq!(r.body["Boot"]["BootSourceOverrideTarget"], "Pxe");
    let after = backend.calls();
    let cost = |f: fn(&shoal_emulator::backend::libvirt::Calls) -> u64| f(&after) - f(&before);
    assert_eq!(cost(|c| c.defines), 1, "{before:?} -> {after:?}");
    assert_eq!(cost(|c| c.parses), 0, "unchanged text is not parsed again");
    assert_eq!(cost(|c| c.reads), 2, "under the lock, then by the change");
    assert_eq!(cost(|c| c.lookups), 3, "find, the locked read, the change");
    eprintln!("one Boot PATCH: {before:?} -> {after:?}");
    // The next read sees the new definition: parsed once, then reused.
    let mark = backend.calls();
    api.get(&sys).await;
    api.get(&sys).await;
    assert_eq!(backend.calls().parses - mark.parses, 1);
}

/// Ids are found by lookups, never by listing: a hyphenated UUID (any
/// case) or a name; a name that looks like a UUID is still a name; other
/// spellings of a UUID name nothing (404, not an error of libvirt's).
#[tokio::test(flavor = "multi_thread")]
async fn systems_are_found_by_uuid_or_name_and_nothing_else() {
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("find-vm"));
    let odd_name = "0badc0de-0000-4000-8000-00000000f1d0";
    let odd = hv.define(&legacy_domain(odd_name));
    let api = api(&["find-vm", odd_name]);
    let sys = format!("/redfish/v1/Systems/{id}");
    assert_eq!(api.get(&sys).await.status, StatusCode::OK);
    let upper = format!("/redfish/v1/Systems/{}", id.to_uppercase());
    assert_eq!(api.get(&upper).await.header("location"), Some(sys.clone()));
    assert_eq!(
        api.get("/redfish/v1/Systems/find-vm")
            .await
            .header("location"),
        Some(sys.clone())
    );
    assert_eq!(
        api.get(&format!("/redfish/v1/Systems/{odd_name}"))
            .await
            .header("location"),
        Some(format!("/redfish/v1/Systems/{odd}")),
        "a domain named like a UUID is found by its name"
    );
    for other in [
        format!("%7B{id}%7D"),
        format!("urn:uuid:{id}"),
        id.replace('-', ""),
        "nope".to_string(),
    ] {
        let r = api.get(&format!("/redfish/v1/Systems/{other}")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{other}: {r}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pxe_once_applies_to_one_start_and_continuous_stays() {
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("boot-vm"));
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let r = api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "On").await;
    assert_eq!(
        hv.first_boot(&id, false),
        "Some(Pxe)",
        "the running instance boots the NIC"
    );
    assert_eq!(
        hv.first_boot(&id, true),
        "Some(Hdd)",
        "the next start boots the disk"
    );
    let b = api.get(&sys).await.body["Boot"].clone();
    assert_eq!(
        (
            b["BootSourceOverrideEnabled"].clone(),
            b["BootSourceOverrideTarget"].clone()
        ),
        (json!("Disabled"), json!("None"))
    );

    api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Continuous"}})).await;
    api.reset(&sys, "ForceRestart").await;
    assert_eq!(hv.first_boot(&id, false), "Some(Cd)");
    assert_eq!(hv.first_boot(&id, true), "Some(Cd)");
    assert_eq!(
        api.get(&sys).await.body["Boot"]["BootSourceOverrideEnabled"],
        "Continuous"
    );
    assert!(!hv.xml(&id, true).contains("<loader"));
}

/// An OpenPOWER machine: a ppc64le pseries domain whose firmware is a
/// petitboot image booted directly. Power architecture, no UEFI, and the
/// BMC's override reaches petitboot on its command line for one start.
#[tokio::test(flavor = "multi_thread")]
async fn petitboot_machines_get_the_override_on_their_command_line() {
    let hv = Hv::open();
    let id = hv.define(
        r#"<domain type="test"><name>power9-vm</name><memory unit="MiB">1024</memory><vcpu>1</vcpu>
  <os><type arch="ppc64le" machine="pseries">hvm</type><kernel>/fw/vmlinux</kernel><initrd>/fw/netboot.cpio.gz</initrd><cmdline>console=hvc0 quiet</cmdline></os>
  <devices>
    <disk type="file" device="disk"><source file="/guest/power9.img"/><target dev="vda" bus="virtio"/></disk>
    <interface type="network"><mac address="52:54:00:10:00:09"/><source network="default"/></interface>
  </devices></domain>"#,
    );
    let api = api(&["power9-vm"]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let s = api.get(&sys).await.body;
    let allowed = s["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"].clone();
    assert!(
        allowed.as_array().unwrap().contains(&json!("Pxe")),
        "{allowed}"
    );
    assert!(
        !allowed.as_array().unwrap().contains(&json!("UefiHttp")),
        "{allowed}"
    );
    assert_eq!(s["Boot"]["BootSourceOverrideMode"], "Legacy");
    let cpu = api.get(&format!("{sys}/Processors/CPU0")).await.body;
    assert_eq!(cpu["ProcessorArchitecture"], "Power", "{cpu}");
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{r}");

    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "On").await;
    let running = hv.xml(&id, false);
    assert!(
        running.contains("<cmdline>console=hvc0 quiet shoal.bootdev=network</cmdline>"),
        "{running}"
    );
    let next = hv.xml(&id, true);
    assert!(
        next.contains("<cmdline>console=hvc0 quiet</cmdline>"),
        "Once: {next}"
    );

    api.reset(&sys, "ForceOff").await;
    api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Continuous"}}))
        .await;
    api.reset(&sys, "On").await;
    assert!(
        hv.xml(&id, true).contains("shoal.bootdev=disk"),
        "Continuous stays"
    );
}

/// sushy-tools' `SUSHY_EMULATOR_BOOT_LOADER_MAP` (here its sample's 2 MiB
/// Secure Boot build, which no descriptor of Debian's names): a domain
/// switched to UEFI runs the map's code, with the templates of its own
/// size shipped beside it, keys enrolled once Secure Boot is on.
#[tokio::test(flavor = "multi_thread")]
async fn a_loader_map_names_the_uefi_code() {
    let Some(code) = required(
        "/usr/share/OVMF/OVMF_CODE.secboot.fd",
        "Debian package ovmf",
    ) else {
        return;
    };
    let code = code.display().to_string();
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("map-vm").replace(
        r#"<type arch="x86_64">"#,
        r#"<type arch="x86_64" machine="q35">"#,
    ));
    let host = tempfile::tempdir().unwrap();
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(LibvirtOptions {
            nvram_dir: Some(host.path().join("nvram")),
            loaders: Some(shoal_emulator::backend::options::LoaderMap {
                uefi_code: vec![("x86_64".into(), code.clone())],
                secure_boot_vars: None,
                plain_vars: None,
            }),
            ..options(&[])
        })
        .unwrap(),
    ));
    let sys = format!("/redfish/v1/Systems/{id}");
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "UEFI"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "On").await;
    let xml = hv.xml(&id, true);
    assert!(
        xml.contains(&format!("secure='no' type='pflash'>{code}</loader>")),
        "{xml}"
    );
    assert!(
        xml.contains("template='/usr/share/OVMF/OVMF_VARS.fd'"),
        "{xml}"
    );
    assert!(xml.contains("<smm state='on'/>"), "{xml}");
    let r = api
        .patch(
            &format!("{sys}/SecureBoot"),
            json!({"SecureBootEnable": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "ForceRestart").await;
    let xml = hv.xml(&id, true);
    assert!(
        xml.contains(&format!("secure='yes' type='pflash'>{code}</loader>")),
        "{xml}"
    );
    assert!(
        xml.contains("template='/usr/share/OVMF/OVMF_VARS.ms.fd'"),
        "{xml}"
    );
    api.reset(&sys, "ForceOff").await;
}

/// BootSourceOverrideMode and SecureBootEnable switch the firmware, chosen
/// from QEMU's firmware descriptors, when the machine next starts.
#[tokio::test(flavor = "multi_thread")]
async fn boot_mode_and_secure_boot_select_the_firmware() {
    let Some(_) = required(
        "/usr/share/qemu/firmware/60-edk2-x86_64.json",
        "Debian package ovmf",
    ) else {
        return;
    };
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("fw-vm").replace(
        r#"<type arch="x86_64">"#,
        r#"<type arch="x86_64" machine="q35">"#,
    ));
    // A fresh host: libvirt's NVRAM folder does not exist yet.
    let host = tempfile::tempdir().unwrap();
    let folder = host.path().join("nvram");
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(LibvirtOptions {
            media_pool: "default".into(),
            nvram_dir: Some(folder.clone()),
            ipmi_in_band_dir: None,
            ..options(&[])
        })
        .unwrap(),
    ));
    let sys = format!("/redfish/v1/Systems/{id}");
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "UEFI"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert!(
        r.body["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
            .as_array()
            .unwrap()
            .contains(&json!("UefiHttp"))
    );
    assert!(
        !hv.xml(&id, true).contains("<loader"),
        "applied at power-on, not before"
    );
    api.reset(&sys, "On").await;
    let xml = hv.xml(&id, true);
    assert!(
        xml.contains("secure='no' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader>"),
        "{xml}"
    );
    assert!(
        xml.contains("template='/usr/share/OVMF/OVMF_VARS_4M.fd'"),
        "{xml}"
    );
    // The folder is made as libvirt makes it: 0755, its parent's owner.
    let varstore = folder.join("fw-vm_VARS.fd");
    assert!(
        xml.contains(&format!(">{}</nvram>", varstore.display())),
        "{xml}"
    );
    assert!(Varstore::parse(std::fs::read(&varstore).unwrap()).is_ok());
    {
        use std::os::unix::fs::MetadataExt;
        let (m, p) = (
            std::fs::metadata(&folder).unwrap(),
            std::fs::metadata(host.path()).unwrap(),
        );
        assert_eq!(m.mode() & 0o7777, 0o755);
        assert_eq!((m.uid(), m.gid()), (p.uid(), p.gid()));
    }

    // Secure Boot with the enrolled keys: the secboot build, the MS-keys varstore, SMM.
    let r = api
        .patch(
            &format!("{sys}/SecureBoot"),
            json!({"SecureBootEnable": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "ForceRestart").await;
    let xml = hv.xml(&id, true);
    assert!(
        xml.contains("secure='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.ms.fd</loader>"),
        "{xml}"
    );
    assert!(
        xml.contains("OVMF_VARS_4M.ms.fd") && xml.contains("<smm state='on'/>"),
        "{xml}"
    );
    assert_eq!(
        api.get(&format!("{sys}/SecureBoot")).await.body["SecureBootCurrentBoot"],
        "Enabled"
    );

    // Back to legacy BIOS: no loader, no NVRAM; UefiHttp is gone.
    api.reset(&sys, "ForceOff").await;
    api.patch(
        &format!("{sys}/SecureBoot"),
        json!({"SecureBootEnable": false}),
    )
    .await;
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "Legacy"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    api.reset(&sys, "On").await;
    let xml = hv.xml(&id, true);
    assert!(!xml.contains("<loader") && !xml.contains("<nvram"), "{xml}");
}

/// Where the NVRAM folder cannot be made (here its parent is missing), the
/// start is refused, the domain is left as it was, and the log says which
/// folder.
#[tokio::test(flavor = "multi_thread")]
async fn a_folder_that_cannot_be_made_refuses_the_start_and_names_it() {
    let Some(_) = required(
        "/usr/share/qemu/firmware/60-edk2-x86_64.json",
        "Debian package ovmf",
    ) else {
        return;
    };
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("nofolder-vm").replace(
        r#"<type arch="x86_64">"#,
        r#"<type arch="x86_64" machine="q35">"#,
    ));
    let host = tempfile::tempdir().unwrap();
    let folder = host.path().join("absent").join("nvram");
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(LibvirtOptions {
            media_pool: "default".into(),
            nvram_dir: Some(folder.clone()),
            ipmi_in_band_dir: None,
            ..options(&[])
        })
        .unwrap(),
    ));
    let sys = format!("/redfish/v1/Systems/{id}");
    let r = api
        .patch(&sys, json!({"Boot": {"BootSourceOverrideMode": "UEFI"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let before = hv.xml(&id, true);
    let r = api
        .post(
            &format!("{sys}/Actions/ComputerSystem.Reset"),
            json!({"ResetType": "On"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{r}");
    let folder = folder.display().to_string();
    assert!(
        r.log
            .iter()
            .any(|l| l.contains(&folder) && l.contains("NVRAM folder")),
        "the log names the folder: {r}"
    );
    assert!(
        !r.body.to_string().contains(&folder),
        "500s are not explained: {r}"
    );
    assert_eq!(hv.xml(&id, true), before, "the definition is unchanged");
    assert_eq!(api.get(&sys).await.body["PowerState"], "Off");
}

#[tokio::test(flavor = "multi_thread")]
async fn state_lives_in_the_domain_and_survives_a_new_emulator() {
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("state-vm"));
    let sys = format!("/redfish/v1/Systems/{id}");
    {
        let api = api(&[]);
        api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}, "AssetTag": "rack-7"})).await;
        let settings = format!("{sys}/Bios/Settings");
        assert_eq!(
            api.patch(
                &settings,
                json!({"Attributes": {"ProcTurboMode": "Disabled"}})
            )
            .await
            .status,
            StatusCode::OK
        );
    }
    assert!(hv.xml(&id, true).contains("https://shoal.dev/libvirt/1"));
    let api = api(&[]);
    let s = api.get(&sys).await.body;
    assert_eq!(
        (
            s["AssetTag"].clone(),
            s["Boot"]["BootSourceOverrideTarget"].clone()
        ),
        (json!("rack-7"), json!("Pxe"))
    );
    assert_eq!(
        api.get(&format!("{sys}/Bios/Settings")).await.body["Attributes"]["ProcTurboMode"],
        "Disabled"
    );
    api.reset(&sys, "On").await;
    assert_eq!(
        api.get(&format!("{sys}/Bios")).await.body["Attributes"]["ProcTurboMode"],
        "Disabled"
    );
}

/// A UEFI (OVMF) domain whose varstore is `nvram`, created from `template`
/// at the first start; `format` is `raw` or `qcow2`.
fn uefi_domain(
    name: &str,
    template: &std::path::Path,
    nvram: &std::path::Path,
    format: &str,
) -> String {
    format!(
        r#"<domain type="test"><name>{name}</name><memory unit="MiB">1024</memory><vcpu>1</vcpu>
  <os><type arch="x86_64" machine="q35">hvm</type>
    <loader readonly="yes" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    <nvram template="{}" format="{format}">{}</nvram></os>
  <devices><disk type="file" device="disk"><source file="/guest/{name}.img"/><target dev="vda" bus="virtio"/></disk>
    <interface type="network"><mac address="52:54:00:10:00:02"/><source network="default"/></interface></devices></domain>"#,
        template.display(),
        nvram.display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn uefi_http_writes_the_uri_boot_option_into_nvram() {
    let Some(template) = required("/usr/share/OVMF/OVMF_VARS_4M.fd", "Debian package ovmf") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nvram = dir.path().join("uefi-vm_VARS.fd");
    let hv = Hv::open();
    let id = hv.define(&uefi_domain("uefi-vm", &template, &nvram, "raw"));
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let s = api.get(&sys).await.body;
    assert!(
        s["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
            .as_array()
            .unwrap()
            .contains(&json!("UefiHttp"))
    );
    assert_eq!(s["Boot"]["BootSourceOverrideMode"], "UEFI");

    let uri = "http://198.18.0.1:8080/boot.iso";
    let r = api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": uri}})).await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    assert!(!nvram.exists(), "NVRAM is only written at power-on");
    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    let next = efiboot::boot_next(&store).expect("BootNext");
    assert_eq!(efiboot::option_uri(&store, next).as_deref(), Some(uri));
    assert_eq!(
        api.get(&sys).await.body["Boot"]["BootSourceOverrideEnabled"],
        "Disabled",
        "Once consumed"
    );

    // Continuous with a null URI: the empty URI node leads BootOrder.
    api.reset(&sys, "ForceOff").await;
    api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Continuous", "HttpBootUri": null}})).await;
    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    let first = efiboot::boot_order(&store)[0];
    let (_, opt) = efiboot::load_options(&store)
        .into_iter()
        .find(|(n, _)| *n == first)
        .unwrap();
    assert_eq!(
        efiboot::device_path_uri(&opt.device_path).as_deref(),
        Some("")
    );

    // Back to the disk: Shoal's option is removed.
    api.reset(&sys, "ForceOff").await;
    api.patch(
        &sys,
        json!({"Boot": {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"}}),
    )
    .await;
    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    assert!(efiboot::load_options(&store)
        .iter()
        .all(|(_, o)| o.description != efiboot::SHOAL_DESCRIPTION));
}

/// Dell's BIOS one-time boot on a real definition: the HTTP device's URI
/// reaches the firmware as a BootNext option, a PXE device leads the
/// running instance's boot order while the definition keeps the disk, and
/// each start spends the one-time mode.
#[tokio::test(flavor = "multi_thread")]
async fn the_bios_one_time_device_reaches_the_firmware_for_one_start() {
    let Some(template) = required("/usr/share/OVMF/OVMF_VARS_4M.fd", "Debian package ovmf") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nvram = dir.path().join("once-vm_VARS.fd");
    let hv = Hv::open();
    let id = hv.define(&uefi_domain("once-vm", &template, &nvram, "raw"));
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let uri = "http://198.18.0.1:8080/once.efi";
    let settings = format!("{sys}/Bios/Settings");
    let stage = |attrs: Value| api.patch(&settings, json!({ "Attributes": attrs }));
    let r = stage(json!({
        "OneTimeBootMode": "OneTimeUefiBootSeq",
        "OneTimeUefiBootSeqDev": "NIC.HttpDevice.1-1",
        "HttpDev1EnDis": "Enabled",
        "HttpDev1Uri": uri,
    }))
    .await;
    assert!(r.status.is_success(), "{r}");
    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    let next = efiboot::boot_next(&store).expect("BootNext");
    assert_eq!(efiboot::option_uri(&store, next).as_deref(), Some(uri));
    let attrs = api.get(&format!("{sys}/Bios")).await.body["Attributes"].clone();
    assert_eq!(attrs["OneTimeBootMode"], "Disabled", "spent");

    api.reset(&sys, "ForceOff").await;
    let r = stage(json!({
        "OneTimeBootMode": "OneTimeUefiBootSeq",
        "OneTimeUefiBootSeqDev": "NIC.PxeDevice.1-1",
    }))
    .await;
    assert!(r.status.is_success(), "{r}");
    api.reset(&sys, "On").await;
    assert_eq!(hv.first_boot(&id, false), "Some(Pxe)", "this start");
    assert_eq!(hv.first_boot(&id, true), "Some(Hdd)", "the next one");
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    assert!(efiboot::load_options(&store)
        .iter()
        .all(|(_, o)| o.description != efiboot::SHOAL_DESCRIPTION));
}

/// The file the domain's (inactive) CD-ROM points at.
fn cd_source(hv: &Hv, id: &str) -> Option<std::path::PathBuf> {
    let x = shoal_emulator::backend::libvirt::xml::parse(&hv.xml(id, true)).unwrap();
    let file = x
        .child("devices")?
        .elements()
        .find(|e| e.name == "disk" && e.attr("device") == Some("cdrom"))?
        .child("source")?
        .attr("file")
        .map(std::path::PathBuf::from);
    file
}

/// InsertMedia of `image`, then the task's final answer.
async fn insert(api: &Api, manager_id: &str, image: &str) -> crate::common::Reply {
    let cd = format!("/redfish/v1/Managers/{manager_id}/VirtualMedia/Cd");
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({ "Image": image }),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
    // The download may fail before the monitor is first read: the task's
    // log lines are those since the POST.
    api.finish(&r, Duration::from_secs(30)).await
}

/// A path, the status, extra headers and the body it answers with.
type Route = (String, u16, Vec<(String, String)>, Vec<u8>);

/// A loopback HTTP server answering each path with a fixed response
/// (status, extra headers, body); every request line is recorded.
fn http_server(bind: &str, routes: Vec<Route>) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind(bind).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&req).to_string();
            let line = text.lines().next().unwrap_or("").to_string();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            log.lock().unwrap().push(text);
            let (status, headers, body) = routes
                .iter()
                .find(|(p, ..)| *p == path)
                .map(|(_, st, h, b)| (*st, h.clone(), b.clone()))
                .unwrap_or((404, vec![], vec![]));
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = s
                .write_all(head.as_bytes())
                .and_then(|_| s.write_all(&body));
        }
    });
    (url, seen)
}

/// By default the BMC fetches nothing from its own host or link-local
/// addresses, and every way a fetch fails gives the same answer: a
/// refused port, a policy refusal and an unreachable address cannot be
/// told apart.
#[tokio::test(flavor = "multi_thread")]
async fn insert_media_refuses_loopback_and_link_local_and_answers_alike() {
    let (server, seen) = http_server(
        "127.0.0.1:0",
        vec![("/deploy.iso".into(), 200, vec![], fake_iso(100_000))],
    );
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("policy-vm"));
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(LibvirtOptions {
            media_pool: "default".into(),
            media: MediaOptions {
                addresses: AddressPolicy::default(),
                ..options(&[]).media
            },
            ..options(&[])
        })
        .unwrap(),
    ));
    let port = server.rsplit(':').next().unwrap().to_string();
    let before = hv.xml(&id, true);
    for image in [
        format!("{server}/deploy.iso"),
        format!("http://[::1]:{port}/deploy.iso"),
        format!("http://localhost:{port}/deploy.iso"),
        format!("http://[::ffff:127.0.0.1]:{port}/deploy.iso"),
        "http://169.254.169.254/latest/meta-data".into(),
        "http://[fe80::1]/x.iso".into(),
        "http://0.0.0.0/x.iso".into(),
    ] {
        let done = insert(&api, &id, &image).await;
        assert_eq!(done.status, StatusCode::BAD_REQUEST, "{image}: {done}");
        assert_eq!(
            done.message_ids(),
            ["CouldNotEstablishConnection"],
            "{image}"
        );
        assert!(
            done.log.iter().any(|l| l.contains("address policy")),
            "the log says why: {done}"
        );
    }
    assert!(seen.lock().unwrap().is_empty(), "nothing was fetched");
    assert_eq!(hv.xml(&id, true), before);

    // Allowed, a closed port answers just as the policy does.
    let open = api_allowing(&["127.0.0.1/32"]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/x.iso", closed.local_addr().unwrap());
    drop(closed);
    let refused = insert(&open, &id, &closed_url).await;
    let by_policy = insert(&api, &id, &closed_url).await;
    assert_eq!(refused.status, by_policy.status);
    assert_eq!(refused.body, by_policy.body, "refused and policy alike");
    assert!(
        refused.log.iter().any(|l| l.contains("refused")),
        "{refused}"
    );
    // And the allowed server does deliver.
    assert_eq!(
        insert(&open, &id, &format!("{server}/deploy.iso"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

fn api_allowing(nets: &[&str]) -> Api {
    let mut o = options(&[]);
    o.media.addresses.allow = nets.iter().map(|n| n.parse().unwrap()).collect();
    Api::on(Arc::new(LibvirtBackend::connect(o).unwrap()))
}

/// Redirects are followed by hand and each hop is checked again: an
/// allowed server cannot bounce the BMC onto a refused address, and
/// credentials go only to the first URL's origin.
#[tokio::test(flavor = "multi_thread")]
async fn insert_media_checks_every_redirect_hop() {
    let (inner, inner_seen) = http_server(
        "127.0.0.1:0",
        vec![("/secret.iso".into(), 200, vec![], fake_iso(100_000))],
    );
    let (outer, outer_seen) = http_server(
        "127.0.0.2:0",
        vec![
            (
                "/bounce.iso".into(),
                302,
                vec![("Location".into(), format!("{inner}/secret.iso"))],
                vec![],
            ),
            (
                "/moved.iso".into(),
                301,
                vec![("Location".into(), "/real.iso".into())],
                vec![],
            ),
            ("/real.iso".into(), 200, vec![], fake_iso(100_000)),
            (
                "/loop.iso".into(),
                302,
                vec![("Location".into(), "loop.iso".into())],
                vec![],
            ),
        ],
    );
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("redirect-vm"));
    let api = api_allowing(&["127.0.0.2/32"]);

    let done = insert(&api, &id, &format!("{outer}/bounce.iso")).await;
    assert_eq!(
        done.message_ids(),
        ["CouldNotEstablishConnection"],
        "{done}"
    );
    assert!(
        inner_seen.lock().unwrap().is_empty(),
        "the refused hop was never contacted"
    );

    let done = insert(&api, &id, &format!("{outer}/loop.iso")).await;
    assert_eq!(
        done.message_ids(),
        ["CouldNotEstablishConnection"],
        "{done}"
    );

    let cd = format!("/redfish/v1/Managers/{id}/VirtualMedia/Cd");
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": format!("{outer}/moved.iso"), "UserName": "u", "Password": "p"}),
        )
        .await;
    let done = api
        .finish_task(&r.header("location").unwrap(), Duration::from_secs(30))
        .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT, "{done}");
    let seen = outer_seen.lock().unwrap();
    let hops: Vec<&String> = seen
        .iter()
        .filter(|r| r.contains("moved.iso") || r.contains("real.iso"))
        .collect();
    assert_eq!(hops.len(), 2, "{seen:?}");
    assert!(
        hops.iter()
            .all(|r| r.contains("Authorization: Basic") || r.contains("authorization: Basic")),
        "same origin keeps the credentials: {hops:?}"
    );
}

/// Two domains with the same image each have their own cached file: one
/// domain's eject does not pull the image from under the other.
#[tokio::test(flavor = "multi_thread")]
async fn ejecting_one_domain_leaves_another_domains_image() {
    let server = file_server(vec![("/shared.iso", fake_iso(150_000))]);
    let hv = Hv::open();
    let a = hv.define(&legacy_domain("share-a-vm"));
    let b = hv.define(&legacy_domain("share-b-vm"));
    let api = api(&[]);
    let url = format!("{server}/shared.iso");
    for id in [&a, &b] {
        let done = insert(&api, id, &url).await;
        assert_eq!(done.status, StatusCode::NO_CONTENT, "{done}");
    }
    let (file_a, file_b) = (cd_source(&hv, &a).unwrap(), cd_source(&hv, &b).unwrap());
    let r = api
        .post(
            &format!("/redfish/v1/Managers/{a}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert!(!file_a.exists(), "A's image is gone");
    assert!(file_b.exists(), "B still has its image");
    assert_eq!(std::fs::read(&file_b).unwrap().len(), 150_000);
    assert_eq!(cd_source(&hv, &b), Some(file_b.clone()));
    let r = api
        .post(
            &format!("/redfish/v1/Managers/{b}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert!(!file_b.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn insert_media_downloads_checks_and_attaches_the_cd() {
    let server = file_server(vec![
        ("/deploy.iso", fake_iso(200_000)),
        ("/not-an.iso", vec![7u8; 100_000]),
        ("/huge.iso", fake_iso(2 << 20)),
    ]);
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("media-vm"));
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let cd = format!("/redfish/v1/Managers/{id}/VirtualMedia/Cd");
    let insert = format!("{cd}/Actions/VirtualMedia.InsertMedia");

    // Refusals: no ISO, 404, too large. Each leaves the domain as it was.
    let before = hv.xml(&id, true);
    for (path, id_want) in [
        ("/not-an.iso", "ActionParameterValueFormatError"),
        ("/missing.iso", "ResourceMissingAtURI"),
        ("/huge.iso", "PayloadTooLarge"),
    ] {
        let r = api
            .post(&insert, json!({"Image": format!("{server}{path}")}))
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{r}");
        let done = api
            .finish_task(&r.header("location").unwrap(), Duration::from_secs(20))
            .await;
        assert_eq!(done.status, StatusCode::BAD_REQUEST, "{path}: {done}");
        assert_eq!(done.message_ids(), [id_want], "{path}");
        assert_eq!(hv.xml(&id, true), before, "{path} changed the domain");
    }

    let url = format!("{server}/deploy.iso");
    let r = api
        .post(
            &insert,
            json!({"Image": url, "Inserted": true, "WriteProtected": true}),
        )
        .await;
    let done = api
        .finish_task(&r.header("location").unwrap(), Duration::from_secs(20))
        .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT, "{done}");
    let m = api.get(&cd).await.body;
    assert_eq!(
        (m["Inserted"].clone(), m["Image"].clone()),
        (json!(true), json!(url))
    );
    let cached = cd_source(&hv, &id).expect("the CD-ROM has a source");
    assert!(cached.starts_with(media_cache()), "{}", cached.display());
    assert_eq!(std::fs::read(&cached).unwrap().len(), 200_000);

    // Cd Once boots the CD-ROM first, once.
    api.patch(
        &sys,
        json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}}),
    )
    .await;
    api.reset(&sys, "On").await;
    assert_eq!(hv.first_boot(&id, false), "Some(Cd)");

    let r = api
        .post(&format!("{cd}/Actions/VirtualMedia.EjectMedia"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    assert_eq!(api.get(&cd).await.body["Inserted"], json!(false));
    assert!(
        !cached.exists(),
        "the ejected image is removed from the cache"
    );
    assert!(!hv.xml(&id, true).contains(&cached.display().to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn qcow2_nvram_is_edited_through_qemu_img() {
    let Some(template) = required("/usr/share/OVMF/OVMF_VARS_4M.fd", "Debian package ovmf") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nvram = dir.path().join("q_VARS.qcow2");
    let hv = Hv::open();
    let id = hv.define(&uefi_domain("qcow2-vm", &template, &nvram, "qcow2"));
    if !hv.xml(&id, true).contains("format='qcow2'") {
        eprintln!("SKIPPED: this libvirt's test driver drops <nvram format>");
        return;
    }
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let uri = "http://198.18.0.1:8080/q.efi";
    api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": "Once", "HttpBootUri": uri}})).await;
    api.reset(&sys, "On").await;
    assert_eq!(
        &std::fs::read(&nvram).unwrap()[..4],
        b"QFI\xfb",
        "still qcow2"
    );
    let raw = dir.path().join("raw.fd");
    let st = std::process::Command::new("qemu-img")
        .args(["convert", "-f", "qcow2", "-O", "raw"])
        .arg(&nvram)
        .arg(&raw)
        .status()
        .unwrap();
    assert!(st.success());
    let store = Varstore::parse(std::fs::read(&raw).unwrap()).unwrap();
    let next = efiboot::boot_next(&store).expect("BootNext");
    assert_eq!(efiboot::option_uri(&store, next).as_deref(), Some(uri));
}

/// The CAs enrolled through `Boot.Certificates` become the firmware's
/// `TlsCaCertificate` at the next start (not before); none enrolled, the
/// next start removes it.
#[tokio::test(flavor = "multi_thread")]
async fn boot_certificates_reach_the_firmware_at_the_next_start() {
    use shoal_emulator::nvram::tls;
    let Some(template) = required("/usr/share/OVMF/OVMF_VARS_4M.fd", "Debian package ovmf") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nvram = dir.path().join("tls-vm_VARS.fd");
    let hv = Hv::open();
    let id = hv.define(&uefi_domain("tls-vm", &template, &nvram, "raw"));
    let api = api(&[]);
    let sys = format!("/redfish/v1/Systems/{id}");
    let coll = format!("{sys}/Boot/Certificates");
    let pem = crate::api_boot_certs::cert_pem("Shoal HTTPS CA", true);
    let r = api
        .post(
            &coll,
            json!({"CertificateString": pem, "CertificateType": "PEM"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{r}");
    assert!(!nvram.exists(), "NVRAM is only written at power-on");
    // The set is kept in the domain's metadata: a new emulator sees it.
    let again = crate::libvirt::api(&[]);
    assert_eq!(again.get(&coll).await.body["Members@odata.count"], 1);

    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    let var = store
        .get(tls::TLS_CA_VENDOR, tls::NAME)
        .expect("TlsCaCertificate");
    let der = shoal_emulator::certs::parse_pem(&pem).unwrap();
    assert_eq!(tls::certificates(&var.data), Some(vec![der]));
    assert_eq!(var.attributes, tls::NV_BS);

    let r = api
        .req(axum::http::Method::DELETE, &format!("{coll}/1"), None, &[])
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{r}");
    api.reset(&sys, "ForceOff").await;
    api.reset(&sys, "On").await;
    let store = Varstore::parse(std::fs::read(&nvram).unwrap()).unwrap();
    assert!(store.get(tls::TLS_CA_VENDOR, tls::NAME).is_none());
}

/// The ids of a collection's members (the last segment of each link).
fn member_ids(v: &serde_json::Value) -> Vec<String> {
    v["Members"]
        .as_array()
        .expect("a collection")
        .iter()
        .filter_map(|m| m["@odata.id"].as_str()?.rsplit('/').next())
        .map(str::to_string)
        .collect()
}

/// RAID volumes on a domain: the controller starts in JBOD over the
/// domain's disks, deleting every volume and staging a RAID1 for the next
/// start last across emulators (the metadata tells "all deleted" from
/// "never configured"), and a change of the domain's disks starts over.
#[tokio::test(flavor = "multi_thread")]
async fn volumes_live_in_the_domain_until_its_disks_change() {
    let hv = Hv::open();
    let dir = tempfile::tempdir().unwrap();
    let disk = |n: &str| {
        let p = dir.path().join(format!("{n}.img"));
        std::fs::File::create(&p)
            .unwrap()
            .set_len(10 << 30)
            .unwrap();
        format!(
            r#"<disk type="file" device="disk"><driver name="qemu" type="raw"/><source file="{}"/><target dev="{n}" bus="virtio"/></disk>"#,
            p.display()
        )
    };
    let (vda, vdb) = (disk("vda"), disk("vdb"));
    let id = hv.define(&format!(
        r#"<domain type="test"><name>raid-vm</name><memory unit="MiB">512</memory><vcpu>1</vcpu>
  <os><type arch="x86_64">hvm</type></os>
  <devices>{vda}{vdb}</devices></domain>"#
    ));
    let sys = format!("/redfish/v1/Systems/{id}");
    let vols = format!("{sys}/Storage/1/Volumes");
    {
        let api = api(&[]);
        assert_eq!(member_ids(&api.get(&vols).await.body), ["vda", "vdb"]);
        for v in ["vda", "vdb"] {
            let r = api
                .req(
                    axum::http::Method::DELETE,
                    &format!("{vols}/{v}"),
                    None,
                    &[],
                )
                .await;
            assert!(r.status.is_success(), "DELETE {v}: {} {}", r.status, r.body);
        }
    }
    let second = api(&[]);
    assert!(
        member_ids(&second.get(&vols).await.body).is_empty(),
        "the deletes outlive the emulator"
    );
    let drives: Vec<_> = ["vda", "vdb"]
        .iter()
        .map(|d| json!({"@odata.id": format!("{sys}/Storage/1/Drives/{d}")}))
        .collect();
    let r = second
        .post(
            &vols,
            json!({"RAIDType": "RAID1", "Links": {"Drives": drives},
                   "@Redfish.OperationApplyTime": "OnReset"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert!(member_ids(&second.get(&vols).await.body).is_empty());
    second.reset(&sys, "On").await;
    let api = api(&[]);
    let v = api.get(&vols).await.body;
    assert_eq!(member_ids(&v), ["Volume0"]);
    let v0 = api.get(&format!("{vols}/Volume0")).await.body;
    assert_eq!(
        (v0["RAIDType"].clone(), v0["CapacityBytes"].clone()),
        (json!("RAID1"), json!(10u64 << 30))
    );
    // A third disk in the definition: the controller meets new drives.
    api.reset(&sys, "ForceOff").await;
    let xml = hv
        .xml(&id, true)
        .replacen("</devices>", &format!("{}</devices>", disk("vdc")), 1);
    hv.define(&xml);
    assert_eq!(
        member_ids(&api.get(&vols).await.body),
        ["vda", "vdb", "vdc"]
    );
}

/// One emulator in front of two hosts, the first of which does not answer
/// (a libvirtd URI where nothing listens): it starts, and the other host's
/// domains are listed and served.
#[tokio::test]
async fn a_host_that_does_not_answer_leaves_the_other_hosts_served() {
    let mut o = options(&[]);
    o.uris = vec!["qemu+tcp://127.0.0.1:1/system".into(), URI.into()];
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(o).expect("one host answers"),
    ));
    let r = api.get("/redfish/v1/Systems").await;
    assert_eq!(r.status, StatusCode::OK, "{r}");
    let first = r.body["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..3 {
        let r = api.get(&first).await;
        assert_eq!(r.status, StatusCode::OK, "{r}");
    }
}

/// A BIOS an update installed is what the guest reads: the domain's
/// SMBIOS type 0 (`<sysinfo type='smbios'><bios>`, handed to the
/// firmware with `<smbios mode='sysinfo'/>`) carries its version and
/// date, at once when installed now, at the start that installs it when
/// staged for the reset.
#[tokio::test(flavor = "multi_thread")]
async fn an_installed_bios_is_in_the_domains_smbios() {
    use shoal_emulator::firmware::{Component, Image};
    use shoal_emulator::model::firmware::ApplyAt;
    let hv = Hv::open();
    let id = hv.define(&legacy_domain("smbios-vm"));
    let api = api(&["smbios-vm"]);
    let image = |v: &str| Image {
        component: Component::Bios,
        version: v.into(),
        release_date: Some("2026-11-02".into()),
    };
    let core = &api.state.core;
    core.install_firmware(&id, &image("2.19.1"), None, None, "1")
        .await
        .unwrap();
    let xml = hv.xml(&id, true);
    assert!(
        xml.contains("<entry name='version'>2.19.1</entry>"),
        "{xml}"
    );
    assert!(
        xml.contains("<entry name='date'>11/02/2026</entry>"),
        "{xml}"
    );
    assert!(xml.contains("<smbios mode='sysinfo'/>"), "{xml}");
    core.install_firmware(&id, &image("3.0"), None, Some(ApplyAt::OnReset), "2")
        .await
        .unwrap();
    assert!(!hv.xml(&id, true).contains("3.0</entry>"), "staged only");
    let sys = format!("/redfish/v1/Systems/{id}");
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "2.19.1");
    api.reset(&sys, "On").await;
    for inactive in [false, true] {
        let xml = hv.xml(&id, inactive);
        assert!(xml.contains("<entry name='version'>3.0</entry>"), "{xml}");
    }
    assert_eq!(api.get(&sys).await.body["BiosVersion"], "3.0");
    api.reset(&sys, "ForceOff").await;
}

/// Domains named in `domain_profiles` (by name or UUID; a replayed
/// capture's systems) run on their own profile, the others on the
/// default one.
#[tokio::test(flavor = "multi_thread")]
async fn a_domain_named_for_a_profile_runs_on_it() {
    use shoal_emulator::backend::Backend;
    let hv = Hv::open();
    let by_name = hv.define(&legacy_domain("profiled-a"));
    let by_uuid = hv.define(&legacy_domain("profiled-b"));
    let other = hv.define(&legacy_domain("profiled-c"));
    let b = LibvirtBackend::connect(LibvirtOptions {
        domain_profiles: vec![
            ("profiled-a".into(), "idrac9".into()),
            (by_uuid.to_uppercase(), "ilo5".into()),
        ],
        ..options(&["profiled-a", "profiled-b", "profiled-c"])
    })
    .unwrap();
    for (id, profile) in [(by_name, "idrac9"), (by_uuid, "ilo5"), (other, "generic")] {
        assert_eq!(b.system(&id).await.unwrap().profile, profile, "{id}");
    }
}
