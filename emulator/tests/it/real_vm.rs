//! Real VMs under TCG: the emulator's libvirt backend makes OVMF HTTP-boot
//! what `UefiHttp` + `HttpBootUri` name, through the URI load option Shoal
//! writes into the NVRAM. One lab (namespace, libvirtd, network, boot
//! server) runs the cases in turn; times from the Reset to the marker are
//! printed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use shoal_emulator::backend::libvirt::{LibvirtBackend, LibvirtOptions};
use shoal_emulator::backend::options::HttpBootMapping;

use crate::common::{file_server, venv_program, Api, Spawned};
use crate::vmlab::{host_ready, marker_image, Bench, SYSTEM_URI};

const BOOT_LIMIT: Duration = Duration::from_secs(120);

async fn http_boot(api: &Api, sys: &str, enabled: &str, uri: &str) {
    let r = api.patch(sys, json!({"Boot": {"BootSourceOverrideTarget": "UefiHttp", "BootSourceOverrideEnabled": enabled, "HttpBootUri": uri}})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn ovmf_http_boots_what_the_bmc_was_told() {
    if !host_ready() {
        return;
    }
    let efi = marker_image("efi", "efi-app").expect("marker EFI image");
    let iso = marker_image("iso", "iso-ramdisk").expect("marker ISO");
    let mut lab = Bench::start();
    let efi_url = lab.serve(&efi, "marker.efi");
    let iso_url = lab.serve(&iso, "marker.iso");
    let name = format!("shoal-vm-{}", std::process::id());
    let id = lab.define_uefi(&name, "52:54:00:5e:00:01");
    let serial = format!("{name}.serial");
    let opts = LibvirtOptions {
        media_pool: "default".into(),
        profile: "generic".into(),
        domain_profiles: Vec::new(),
        uris: vec![SYSTEM_URI.into()],
        allow: vec![name.clone()],
        http_boot: HttpBootMapping::Firmware,
        graceful_timeout: Duration::from_secs(10),
        media: shoal_emulator::backend::libvirt::media::MediaOptions {
            cache: lab.path("media"),
            max_bytes: 1 << 30,
            timeout: Duration::from_secs(60),
            insecure: false,
            // (e) serves the BMC's image on loopback.
            addresses: shoal_emulator::netpolicy::AddressPolicy {
                allow: vec!["127.0.0.0/8".parse().unwrap()],
                ..Default::default()
            },
        },
        nvram_dir: None,
        ipmi_in_band_dir: None,
        loaders: None,
    };
    let api = Api::on(Arc::new(
        LibvirtBackend::connect(opts.clone()).expect("libvirt backend"),
    ));
    let sys = format!("/redfish/v1/Systems/{id}");
    // libvirt starts the serial file afresh at every start.
    let marker = |lab: &Bench, m: &str| lab.read(&serial).contains(&format!("SHOAL-MARKER {m}"));

    // (a) An EFI application, Once, set and powered on by the real sushy
    // library against the emulator binary, as Ironic's redfish-https does.
    let python = venv_program("python").expect("the test venv");
    let emulator = Spawned::start(&[
        "--libvirt-uri",
        SYSTEM_URI,
        "--libvirt-domain",
        &name,
        "--media-cache",
        lab.path("media").to_str().unwrap(),
    ]);
    let t = Instant::now();
    let out = std::process::Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../harness/drivers/sushy_boot.py"
        ))
        .args([
            "--url",
            &emulator.url,
            "--system",
            &id,
            "uefi-http",
            "--enabled",
            "Once",
            "--uri",
            &efi_url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sushy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let boot: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        boot["BootSourceOverrideEnabled"], "Disabled",
        "Once consumed by the power-on: {boot}"
    );
    lab.wait_for(BOOT_LIMIT, "the EFI marker", |l| marker(l, "efi-app"));
    println!(
        "efi app: power-on to marker {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(
        lab.read(&serial).contains("Shoal UEFI HTTP boot"),
        "booted through Shoal's load option"
    );
    assert_eq!(lab.gets("marker.efi"), 1);
    lab.wait_for(
        Duration::from_secs(30),
        "grub's halt to power the VM off",
        |l| !l.is_running(&name),
    );
    let s = api.get(&sys).await.body;
    assert_eq!(
        (
            s["PowerState"].clone(),
            s["Boot"]["BootSourceOverrideEnabled"].clone()
        ),
        (json!("Off"), json!("Disabled"))
    );

    // (b) Once means once: the next start does not HTTP-boot the URI.
    api.reset(&sys, "On").await;
    lab.wait_for(
        Duration::from_secs(60),
        "the firmware to go past the boot manager",
        |l| l.read(&serial).matches(">>Start").count() > 0,
    );
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        lab.gets("marker.efi"),
        1,
        "a consumed Once override must not boot the URI again"
    );
    api.reset(&sys, "ForceOff").await;

    // (c) An ISO (RAM-disk CD), Continuous: every start boots it.
    http_boot(&api, &sys, "Continuous", &iso_url).await;
    for round in 1..=2 {
        let before = lab.gets("marker.iso");
        let t = Instant::now();
        api.reset(&sys, "On").await;
        lab.wait_for(BOOT_LIMIT, "the ISO marker", |l| marker(l, "iso-ramdisk"));
        println!(
            "iso, Continuous start {round}: power-on to marker {:.1} s",
            t.elapsed().as_secs_f64()
        );
        assert!(
            lab.gets("marker.iso") > before,
            "start {round} fetched the ISO"
        );
        lab.wait_for(Duration::from_secs(30), "power-off", |l| {
            !l.is_running(&name)
        });
    }
    assert_eq!(
        api.get(&sys).await.body["Boot"]["BootSourceOverrideEnabled"],
        "Continuous"
    );

    // (d) A URI that 404s: the firmware reports it, nothing boots.
    let missing = efi_url.replace("marker.efi", "missing.efi");
    http_boot(&api, &sys, "Once", &missing).await;
    let t = Instant::now();
    api.reset(&sys, "On").await;
    lab.wait_for(BOOT_LIMIT, "the firmware's HTTP error", |l| {
        l.read(&serial).contains("404 Not Found")
    });
    println!(
        "missing file: power-on to firmware error {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // The firmware prints the error at its HEAD's 404 and then still
    // sends the GET: the server's line for it may come after the message.
    lab.wait_for(
        Duration::from_secs(30),
        "the GET of the missing file",
        |l| l.read("http.log").contains("GET /missing.efi 404"),
    );
    assert!(
        !lab.read(&serial).contains("SHOAL-MARKER"),
        "nothing booted"
    );
    api.reset(&sys, "ForceOff").await;

    // (e) Virtual media: the BMC downloads the ISO (from its own network,
    // here loopback), attaches it as the CD-ROM, and Cd Once boots it.
    let bmc_side = file_server(vec![("/marker.iso", std::fs::read(&iso).unwrap())]);
    let bmc_iso = format!("{bmc_side}/marker.iso");
    let cd = format!("/redfish/v1/Managers/{id}/VirtualMedia/Cd");
    let r = api
        .post(
            &format!("{cd}/Actions/VirtualMedia.InsertMedia"),
            json!({"Image": bmc_iso}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = api
        .finish_task(&r.header("location").unwrap(), Duration::from_secs(60))
        .await;
    assert_eq!(done.status, StatusCode::NO_CONTENT, "{}", done.body);
    assert_eq!(api.get(&cd).await.body["Inserted"], json!(true));
    let r = api.patch(&sys, json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})).await;
    assert_eq!(r.status, StatusCode::OK);
    let fetched = lab.gets("marker.iso");
    let t = Instant::now();
    api.reset(&sys, "On").await;
    lab.wait_for(BOOT_LIMIT, "the ISO marker from the virtual CD", |l| {
        marker(l, "iso-ramdisk")
    });
    println!(
        "virtual media CD: power-on to marker {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(
        !lab.read(&serial).contains("Shoal UEFI HTTP boot"),
        "booted from the CD, not over HTTP"
    );
    assert_eq!(
        lab.gets("marker.iso"),
        fetched,
        "the firmware fetched nothing"
    );
    lab.wait_for(Duration::from_secs(30), "power-off", |l| {
        !l.is_running(&name)
    });
    let r = api
        .post(&format!("{cd}/Actions/VirtualMedia.EjectMedia"), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    // (f) The sushy-tools mapping of UefiHttp (--http-boot vmedia) boots the
    // same ISO from the CD-ROM.
    let vmedia = Api::on(Arc::new(
        LibvirtBackend::connect(LibvirtOptions {
            media_pool: "default".into(),
            profile: "generic".into(),
            http_boot: HttpBootMapping::Vmedia,
            ..opts.clone()
        })
        .unwrap(),
    ));
    http_boot(&vmedia, &sys, "Once", &bmc_iso).await;
    let t = Instant::now();
    vmedia.reset(&sys, "On").await;
    lab.wait_for(
        BOOT_LIMIT,
        "the ISO marker through the vmedia mapping",
        |l| marker(l, "iso-ramdisk"),
    );
    println!(
        "UefiHttp, vmedia mapping: power-on to marker {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(!lab.read(&serial).contains("Shoal UEFI HTTP boot"));
    assert_eq!(vmedia.get(&cd).await.body["Inserted"], json!(true));
    vmedia.reset(&sys, "ForceOff").await;

    // (g) Secure Boot on (the enrolled-keys firmware, chosen from QEMU's
    // descriptors): the firmware refuses the unsigned EFI application.
    let r = api
        .patch(
            &format!("{sys}/SecureBoot"),
            json!({"SecureBootEnable": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    http_boot(&api, &sys, "Once", &efi_url).await;
    let fetched = lab.gets("marker.efi");
    let t = Instant::now();
    api.reset(&sys, "On").await;
    lab.wait_for(
        BOOT_LIMIT,
        "the firmware to refuse the unsigned image",
        |l| {
            let s = l.read(&serial);
            s.contains("Access Denied") || s.contains("Security Violation")
        },
    );
    println!(
        "secure boot: power-on to refusal {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert!(lab.gets("marker.efi") > fetched, "the image was fetched");
    assert!(
        !marker(&lab, "efi-app"),
        "an unsigned image must not run under Secure Boot"
    );
    assert_eq!(
        api.get(&format!("{sys}/SecureBoot")).await.body["SecureBootCurrentBoot"],
        "Enabled"
    );
    api.reset(&sys, "ForceOff").await;
}
