//! The scenario schema and its checks, on small files and on every
//! shipped scenario.

use super::*;
use anyhow::Result;
use std::path::Path;

fn parse(text: &str) -> Result<Scenario> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, text).unwrap();
    Scenario::load(&p)
}

const OK: &str = r#"
description = "x"
[[artifacts]]
name = "m.efi"
image = "grub-marker-efi"
marker = "m"
[boot]
method = "uefi-http"
uri = "m.efi"
[checks]
serial = ["SHOAL-MARKER m"]
"#;

#[test]
fn a_minimal_scenario_gets_defaults() {
    let s = parse(OK).unwrap();
    assert_eq!(
        (
            s.drivers.clone(),
            s.expect,
            s.boot.unwrap().enabled,
            s.timeout_secs
        ),
        (vec![Driver::Sushy], Outcome::Pass, Enabled::Once, 120)
    );
}

#[test]
fn errors_name_the_file_and_key() {
    let e = parse(&OK.replace("[boot]", "colour = 1\n[boot]"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.toml") && e.contains("colour"), "{e}");
    let e = parse(&OK.replace("uefi-http", "carrier-pigeon"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.toml") && e.contains("carrier-pigeon"), "{e}");
    let e = parse(&format!(
        "{OK}\n[network]\ndhcp = \"httpclient\"\nbootfile = \"nope.efi\"\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("network.bootfile"), "{e}");
    let e = parse(&OK.replace(
        "description = \"x\"",
        "description = \"x\"\nexpect = \"fail\"",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("checks.failure"), "{e}");
    let e = parse(&OK.replace(
        "method = \"uefi-http\"",
        "method = \"virtual-media\"\nbios = { UrlBootFile = \"{uri}\" }",
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("boot.bios"), "{e}");
    let e = parse(&format!("{OK}\n[emulator]\nprofile = \"../x\"\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("emulator.profile"), "{e}");
}

#[test]
fn petitboot_machines_are_checked_as_a_whole() {
    let pb = "[machine]\narch = \"ppc64le\"\nfirmware = \"petitboot\"\n[network]\ndhcp = \"petitboot\"\n\
              [petitboot]\nprotocol = \"tftp\"\nconfig_path = \"c\"\nconfig = \"x\"\n\
              [boot]\nmethod = \"power-on\"\n[checks]\nserial = [\"m\"]\n";
    let s = parse(&format!("description = \"x\"\n{pb}")).unwrap();
    assert!(s.petitboot());
    let e = |text: String| parse(&text).unwrap_err().to_string();
    let no_section = pb.replace(
        "[petitboot]\nprotocol = \"tftp\"\nconfig_path = \"c\"\nconfig = \"x\"\n",
        "",
    );
    assert!(e(format!("description = \"x\"\n{no_section}")).contains("[petitboot]"));
    let uefi = pb
        .replace("uefi", "x")
        .replace("firmware = \"petitboot\"", "firmware = \"uefi\"");
    assert!(e(format!("description = \"x\"\n{uefi}")).contains("machine.firmware"));
    let http = pb.replace("power-on", "uefi-http");
    assert!(e(format!("description = \"x\"\n{http}")).contains("boot.method"));
    let arm = pb.replace("ppc64le", "riscv64");
    assert!(e(format!("description = \"x\"\n{arm}")).contains("machine.arch"));
    // A blank disk is an x86_64 machine's (ppc64le ones take disk_os).
    let disk = pb.replace(
        "firmware = \"petitboot\"\n",
        "firmware = \"petitboot\"\ndisk_gib = 5\n",
    );
    assert!(e(format!("description = \"x\"\n{disk}")).contains("machine.disk_gib"));
    // In-band IPMI is a KCS interface of an x86_64 machine here.
    let inband = format!("description = \"x\"\n{pb}[emulator]\nipmi_in_band = true\n");
    assert!(e(inband).contains("emulator.ipmi_in_band"));
    // And a UEFI machine cannot take the petitboot DHCP profile.
    assert!(e(format!("{OK}\n[network]\ndhcp = \"petitboot\"\n")).contains("network.dhcp"));
    // Option 59 goes with IPv6-only networks, over http, and 209/210 not.
    let v6 = pb
        .replace(
            "dhcp = \"petitboot\"",
            "dhcp = \"petitboot\"\nipv6_only = true",
        )
        .replace(
            "protocol = \"tftp\"",
            "protocol = \"http\"\nbootfile_url = \"{base}/c\"",
        );
    assert!(parse(&format!("description = \"x\"\n{v6}")).is_ok());
    let v6_tftp = v6.replace("\"http\"", "\"tftp\"");
    assert!(e(format!("description = \"x\"\n{v6_tftp}")).contains("petitboot.protocol"));
    let v6_209 = v6.replace("config = ", "option_209 = \"c\"\nconfig = ");
    assert!(e(format!("description = \"x\"\n{v6_209}")).contains("petitboot.bootfile_url"));
    let v4_59 = v6.replace("ipv6_only = true", "");
    assert!(e(format!("description = \"x\"\n{v4_59}")).contains("petitboot.bootfile_url"));
}

#[test]
fn openpower_machines_and_ipmi_drivers_are_checked() {
    let pb = "[machine]\narch = \"ppc64le\"\nfirmware = \"petitboot\"\nplatform = \"powernv\"\n\
              [network]\ndhcp = \"petitboot\"\n\
              [petitboot]\nprotocol = \"tftp\"\nconfig_path = \"c\"\nconfig = \"x\"\n\
              [boot]\nmethod = \"disk\"\nenabled = \"Continuous\"\nlock_flags = true\nmailbox = \"petitboot,bootdevs=network\"\n\
              [checks]\nserial = [\"m\"]\n";
    let ok = format!("description = \"x\"\ndrivers = [\"ipmitool\", \"pyghmi\"]\n{pb}");
    let s = parse(&ok).unwrap();
    assert_eq!(s.machine.platform, Platform::Powernv);
    assert!(s.in_band_ipmi(), "powernv always has its in-band BMC");
    assert!(s.drivers.iter().all(|d| d.ipmi()));
    let e = |text: String| parse(&text).unwrap_err().to_string();
    // IPMI-only options with a Redfish driver.
    assert!(e(ok.replace("\"ipmitool\", \"pyghmi\"", "\"sushy\"")).contains("boot.mailbox"));
    // powernv is a ppc64le platform.
    let x86 = format!("{OK}\n[machine]\nplatform = \"powernv\"\n");
    assert!(e(x86).contains("machine.platform"));
    // Disk is a petitboot machine's method here; IPMI drivers have no
    // UefiHttp.
    assert!(e(OK.replace("uefi-http", "disk")).contains("boot.method"));
    assert!(e(format!("drivers = [\"pyghmi\"]\n{OK}")).contains("boot.method"));
    // A mailbox longer than its 16 blocks.
    let long = ok.replace("petitboot,bootdevs=network", &"n".repeat(254));
    assert!(e(long).contains("boot.mailbox"));
}

#[test]
fn the_proliantutils_driver_needs_an_ilo_of_its_own_and_a_vmedia_boot() {
    let ok = "description = \"x\"\ndrivers = [\"proliantutils\"]\n\
              [emulator]\nprofile = \"ilo5\"\nsystem_id = \"1\"\n\
              [boot]\nmethod = \"virtual-media\"\nuri = \"d.iso\"\n\
              [checks]\nserial = [\"m\"]\n";
    let s = parse(ok).unwrap();
    assert_eq!(s.drivers, [Driver::Proliantutils]);
    let e = |text: String| parse(&text).unwrap_err().to_string();
    assert!(e(ok.replace("ilo5", "idrac9")).contains("emulator.profile"));
    assert!(e(ok.replace("system_id = \"1\"\n", "")).contains("system_id"));
    assert!(e(ok.replace("virtual-media", "pxe")).contains("boot.method"));
}

#[test]
fn the_agents_deploy_needs_its_ramdisk_an_image_and_a_disk() {
    const DIRECT: &str = r#"
description = "x"
drivers = ["ironic"]
[machine]
memory_mib = 2048
disk_gib = 5
[[artifacts]]
name = "i.qcow2"
image = "instance-qcow2"
marker = "m"
[ironic]
boot_interface = "redfish-virtual-media"
deploy_interface = "direct"
driver_info = { deploy_kernel = "{http}/k", deploy_ramdisk = "{http}/r" }
instance = { image_source = "{http}/i.qcow2", image_checksum = "{sha256:i.qcow2}" }
[checks]
serial = ["SHOAL-MARKER m"]
redfish = { "Boot/BootSourceOverrideTarget" = "Hdd" }
"#;
    let s = parse(DIRECT).unwrap();
    assert_eq!(s.machine.cpus, 1, "one vCPU unless asked");
    let two = parse(&DIRECT.replace("memory_mib = 2048", "memory_mib = 2048\ncpus = 2")).unwrap();
    assert_eq!(two.machine.cpus, 2);
    let many = parse(&DIRECT.replace("memory_mib = 2048", "memory_mib = 2048\ncpus = 9"));
    assert!(many.unwrap_err().to_string().contains("machine.cpus"));
    let node = s.ironic.unwrap();
    assert_eq!(node.deploy_interface, super::DeployInterface::Direct);
    assert!(node.agent_reaches_api && !node.cleaning && !node.rebuild);
    assert_eq!(s.machine.disk_gib, Some(5));
    let e = |text: String| parse(&text).unwrap_err().to_string();
    assert!(e(DIRECT.replace("image_source", "boot_iso")).contains("image_source"));
    assert!(e(DIRECT.replace("image_checksum", "image_size")).contains("checksum"));
    assert!(e(DIRECT.replace("deploy_ramdisk", "rescue_ramdisk")).contains("deploy_ramdisk"));
    // The agent takes no disk under 4 GiB as its root device.
    assert!(e(DIRECT.replace("disk_gib = 5", "disk_gib = 3")).contains("machine.disk_gib"));
    assert!(e(DIRECT.replace("disk_gib = 5\n", "")).contains("machine.disk_gib"));
    assert!(e(DIRECT.replace("disk_gib = 5", "disk_gib = 0")).contains("0 GiB"));
    // The instance image needs its marker.
    assert!(e(DIRECT.replace("marker = \"m\"\n", "")).contains("marker"));
    // An unreachable API fails the deploy: the scenario must expect it.
    let lost = DIRECT.replace("[ironic]\n", "[ironic]\nagent_reaches_api = false\n");
    assert!(e(lost.clone()).contains("expect_error"));
    assert!(parse(&lost.replace("[checks]", "expect_error = \"Timeout\"\n[checks]")).is_ok());
    // The agent's options are the direct deploy's only.
    let ramdisk = DIRECT
        .replace("deploy_interface = \"direct\"\n", "")
        .replace(
            "instance = { image_source = \"{http}/i.qcow2\", image_checksum = \"{sha256:i.qcow2}\" }",
            "instance = { boot_iso = \"{http}/d.iso\" }",
        )
        .replace("redfish = { \"Boot/BootSourceOverrideTarget\" = \"Hdd\" }\n", "");
    assert!(parse(&ramdisk).is_ok());
    for opt in [
        "cleaning = true",
        "rebuild = true",
        "callback_timeout_secs = 60",
    ] {
        let text = ramdisk.replace("[ironic]\n", &format!("[ironic]\n{opt}\n"));
        assert!(e(text).contains("need the agent"), "{opt}");
    }
    // A deploy that must fail has nothing to rebuild.
    let both = DIRECT.replace(
        "[ironic]\n",
        "[ironic]\nrebuild = true\nexpect_error = \"x\"\n",
    );
    assert!(e(both).contains("ironic.rebuild"));
}

#[test]
fn ironic_scenarios_describe_a_node_not_a_request() {
    const IRONIC: &str = r#"
description = "x"
drivers = ["ironic"]
[[artifacts]]
name = "d.iso"
image = "deploy-ramdisk"
[ironic]
boot_interface = "redfish-https"
instance = { boot_iso = "{http}/d.iso" }
[checks]
serial = ["SHOAL-MARKER deploy-ramdisk"]
"#;
    let s = parse(IRONIC).unwrap();
    assert!(s.boot.is_none());
    let node = s.ironic.unwrap();
    assert_eq!(node.boot_interface, "redfish-https");
    assert_eq!(node.driver, super::IronicDriver::Redfish);
    let e = |text: String| parse(&text).unwrap_err().to_string();
    // An ipmi node boots through Ironic's own interfaces, not Redfish's.
    let ipmi = IRONIC.replace("[ironic]\n", "[ironic]\ndriver = \"ipmi\"\n");
    assert!(e(ipmi.clone()).contains("needs the redfish hardware type"));
    let ipxe = parse(&ipmi.replace("redfish-https", "ipxe")).unwrap();
    assert_eq!(ipxe.ironic.unwrap().driver, super::IronicDriver::Ipmi);
    assert!(e(IRONIC.replace("[ironic]\n", "[ironic]\ndriver = \"snmp\"\n")).contains("snmp"));
    assert!(e(IRONIC.replace("redfish-https", "ipmitool")).contains("ironic.boot_interface"));
    assert!(e(IRONIC.replace("boot_iso", "image")).contains("ironic.instance"));
    assert!(e(IRONIC.replace("[\"ironic\"]", "[\"ironic\", \"sushy\"]")).contains("drivers"));
    assert!(e(format!("{IRONIC}\n[boot]\nmethod = \"pxe\"\n")).contains("boot:"));
    assert!(e(IRONIC.replace("[ironic]\nboot_interface = \"redfish-https\"\ninstance = { boot_iso = \"{http}/d.iso\" }\n", "")).contains("[ironic]"));
    let redfish = IRONIC.replace(
        "[checks]",
        "[checks]\nredfish = { \"Boot/BootSourceOverrideEnabled\" = \"Once\" }",
    );
    assert!(e(redfish).contains("checks.redfish"));
    let bmc = IRONIC.replace("[checks]", "[checks]\nbmc_requests = [\"GET /d.iso\"]");
    assert!(e(bmc).contains("checks.bmc_requests"));
    // An expected error needs no serial markers; a switch needs some.
    let failing = IRONIC
        .replace("serial = [\"SHOAL-MARKER deploy-ramdisk\"]", "")
        .replace("[checks]", "expect_error = \"HTTP 500\"\n[checks]");
    assert!(parse(&failing).is_ok());
    let both = failing.replace("drivers = ", "expect = \"fail\"\ndrivers = ");
    assert!(e(both).contains("expect:"));
    let switch = IRONIC.replace("[checks]", "[ironic.switch]\nboot_interface = \"http\"\ninstance = { kernel = \"k\", ramdisk = \"r\" }\nserial = []\n[checks]");
    assert!(e(switch).contains("ironic.switch.serial"));
    // And the other drivers still need [boot], and take no [ironic].
    assert!(
        e(OK.replace("[boot]\nmethod = \"uefi-http\"\nuri = \"m.efi\"\n", ""))
            .contains("boot: missing")
    );
    let stray =
        format!("{OK}\n[ironic]\nboot_interface = \"pxe\"\ninstance = {{ boot_iso = \"x\" }}\n");
    assert!(e(stray).contains("ironic:"));
}

/// RAID clean steps and the target configuration come together, on a
/// machine with a drive, through a hardware type with a Redfish RAID
/// interface.
#[test]
fn raid_steps_need_a_target_a_drive_and_a_redfish_raid_interface() {
    const RAID: &str = r#"
description = "x"
drivers = ["ironic"]
[machine]
disk_gib = 5
[[artifacts]]
name = "d.iso"
image = "deploy-ramdisk"
[ironic]
boot_interface = "redfish-virtual-media"
instance = { boot_iso = "{http}/d.iso" }
clean_steps = [{ interface = "raid", step = "create_configuration" }]
target_raid_config = { logical_disks = [{ size_gb = "MAX", raid_level = "0" }] }
[checks]
serial = ["SHOAL-MARKER deploy-ramdisk"]
"#;
    let s = parse(RAID).unwrap();
    assert!(s.ironic.unwrap().target_raid_config.is_some());
    let e = |text: String| parse(&text).unwrap_err().to_string();
    let no_target = RAID.replace(
        "target_raid_config = { logical_disks = [{ size_gb = \"MAX\", raid_level = \"0\" }] }\n",
        "",
    );
    assert!(e(no_target).contains("need ironic.target_raid_config"));
    let no_step = RAID.replace(
        "clean_steps = [{ interface = \"raid\", step = \"create_configuration\" }]\n",
        "",
    );
    assert!(e(no_step).contains("add a raid clean step"));
    assert!(
        e(RAID.replace("\"create_configuration\"", "\"apply_configuration\""))
            .contains("raid.apply_configuration")
    );
    assert!(e(RAID.replace("[machine]\ndisk_gib = 5\n", "")).contains("machine.disk_gib"));
    assert!(e(RAID.replace(
        "logical_disks = [{ size_gb = \"MAX\", raid_level = \"0\" }]",
        "logical_disks = []"
    ))
    .contains("logical_disks"));
    let ipmi = RAID
        .replace("[ironic]\n", "[ironic]\ndriver = \"ipmi\"\n")
        .replace("redfish-virtual-media", "ipxe");
    assert!(e(ipmi).contains("redfish or idrac hardware type"));
}

#[test]
fn the_shipped_scenarios_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let all = Scenario::load_dir(&dir).unwrap();
    assert!(all.len() >= 6, "{} scenarios", all.len());
}

/// `[events]` and the eject: each subscriber comes with what it is
/// checked against, the machine never waits for an eject nobody makes.
#[test]
fn event_receivers_and_the_eject_are_checked() {
    let e = |t: String| parse(&t).unwrap_err().to_string();
    let vmedia = OK
        .replace("uefi-http", "virtual-media")
        .replace("[checks]", "eject_after_heartbeat = true\n[checks]");
    parse(&vmedia).unwrap();
    let waits = format!("{vmedia}\n[machine]\nwaits_for_eject = true\n");
    parse(&waits).unwrap();
    assert!(
        e(format!("{OK}\n[machine]\nwaits_for_eject = true\n")).contains("machine.waits_for_eject")
    );
    let http = OK.replace("[checks]", "eject_after_heartbeat = true\n[checks]");
    assert!(e(http).contains("boot.eject_after_heartbeat"));
    assert!(
        e(format!("drivers = [\"ironic-sequence\"]\n{vmedia}")).contains("eject_after_heartbeat")
    );
    let events = "events = [\"ResourcePoweredOn\"]\n";
    let with = |section: &str, checks: &str| {
        format!(
            "{}\n[events]\n{section}\n",
            OK.replace("[checks]\n", &format!("[checks]\n{checks}"))
        )
    };
    parse(&with(
        "late_receiver_secs = 20\ndead_receiver = true",
        events,
    ))
    .unwrap();
    assert!(e(with("dead_receiver = true", "")).contains("checks.events"));
    assert!(e(with("late_receiver_secs = 61", events)).contains("events.late_receiver_secs"));
    assert!(e(with("retry_interval_secs = 0", events)).contains("events.retry_interval_secs"));
    assert!(e(with("sse_filter = \"EventType eq 'Alert'\"", events)).contains("events.sse_filter"));
    assert!(e(with("sse_events = [\"ResourcePoweredOn\"]", events)).contains("events.sse_events"));
    let sse = "sse_filter = \"EventType eq 'Alert'\"\nsse_events = [\" x\"]";
    assert!(e(with(sse, events)).contains("events.sse_events"));
}

/// `boot.firmware_update` names a firmware artifact, for the sushy
/// driver; a firmware artifact carries its version as its marker.
#[test]
fn a_firmware_update_names_a_firmware_artifact_for_sushy() {
    let e = |t: String| parse(&t).unwrap_err().to_string();
    let fw = "[[artifacts]]\nname = \"bios.fw\"\nimage = \"firmware-bios\"\nmarker = \"2.0 2026-11-02\"\n";
    let with = |name: &str| {
        format!("drivers = [\"sushy\"]\n{OK}")
            .replace("[boot]", &format!("{fw}[boot]"))
            .replace(
                "[checks]",
                &format!("firmware_update = \"{name}\"\n[checks]"),
            )
    };
    parse(&with("bios.fw")).unwrap();
    assert!(e(with("m.efi")).contains("boot.firmware_update"));
    assert!(
        e(with("bios.fw").replace("[\"sushy\"]", "[\"ironic-sequence\"]"))
            .contains("boot.firmware_update")
    );
    let unmarked = OK
        .replace("[boot]", &format!("{fw}[boot]"))
        .replace("marker = \"2.0 2026-11-02\"\n", "");
    assert!(e(unmarked).contains("marker"));
}

/// firmware.update clean steps take Ironic's `settings` (bios, bmc,
/// nic:<id>, each with a url), boot the agent (direct deploy), and go with
/// the versions to expect; those name known components.
#[test]
fn firmware_steps_take_ironics_settings_and_boot_the_agent() {
    const FW: &str = r#"
description = "x"
drivers = ["ironic"]
[machine]
disk_gib = 5
[[artifacts]]
name = "k"
image = "ipa-kernel"
[[artifacts]]
name = "i"
image = "ipa-initrd"
[[artifacts]]
name = "q"
image = "instance-qcow2"
marker = "m"
[ironic]
boot_interface = "redfish-virtual-media"
deploy_interface = "direct"
driver_info = { deploy_kernel = "{http}/k", deploy_ramdisk = "{http}/i" }
instance = { image_source = "{http}/q", image_os_hash_algo = "sha256", image_os_hash_value = "{sha256:q}" }
clean_steps = [{ interface = "firmware", step = "update", args = { settings = [{ component = "bios", url = "{http}/b" }, { component = "nic:1", url = "{http}/n" }] } }]
firmware = { bios = "2.0", nic = "3.0" }
[checks]
serial = ["SHOAL-MARKER m"]
"#;
    let s = parse(FW).unwrap();
    let node = s.ironic.unwrap();
    assert!(node.updates_firmware());
    assert_eq!(node.firmware["nic"], "3.0");
    let e = |text: String| parse(&text).unwrap_err().to_string();
    assert!(e(FW.replace("\"bios\", url", "\"cpld\", url")).contains("settings[0].component"));
    assert!(e(FW.replace("url = \"{http}/n\"", "wait = 5")).contains("settings[1] needs a url"));
    assert!(e(FW.replace("step = \"update\"", "step = \"flash\"")).contains("firmware.flash"));
    assert!(e(FW.replace("args = { settings = [", "args = { other = [")).contains("args.settings"));
    assert!(e(FW.replace("nic = \"3.0\"", "cpld = \"3.0\"")).contains("\"cpld\""));
    let failing = FW.replace(
        "firmware = {",
        "expect_error = \"Firmware update failed\"\nfirmware = {",
    );
    assert!(e(failing).contains("records no new version"));
    let no_step = FW.replace(
        &FW[FW.find("clean_steps").unwrap()..FW.find("firmware = {").unwrap()],
        "",
    );
    assert!(e(no_step).contains("add one"));
    let ramdisk = FW
        .replace("deploy_interface = \"direct\"\n", "")
        .replace(
            "instance = { image_source = \"{http}/q\", image_os_hash_algo = \"sha256\", image_os_hash_value = \"{sha256:q}\" }",
            "instance = { boot_iso = \"{http}/q\" }",
        );
    assert!(
        e(ramdisk).contains("boots the agent"),
        "{}",
        e(FW.replace("deploy_interface = \"direct\"\n", ""))
    );
}

#[test]
fn a_replayed_capture_is_the_bmc_and_names_its_system() {
    let dir = tempfile::tempdir().unwrap();
    let systems = dir.path().join("cap/redfish/v1/Systems");
    std::fs::create_dir_all(&systems).unwrap();
    let members = |ids: &[&str]| {
        let list: Vec<String> = ids
            .iter()
            .map(|i| format!("{{\"@odata.id\": \"/redfish/v1/Systems/{i}/\"}}"))
            .collect();
        std::fs::write(
            systems.join("index.json"),
            format!("{{\"Members\": [{}]}}", list.join(",")),
        )
        .unwrap();
    };
    let scenario = dir.path().join("s.toml");
    let load = |extra: &str| {
        std::fs::write(
            &scenario,
            OK.replace(
                "description = \"x\"",
                &format!("description = \"x\"\n[emulator]\nmockup = \"cap\"\n{extra}"),
            ),
        )
        .unwrap();
        Scenario::load(&scenario)
    };
    // The Id is the captured member's (a trailing slash as iLO writes it),
    // the folder is the scenario's own.
    members(&["1"]);
    let s = load("").unwrap();
    assert_eq!(s.emulator.mockup_system.as_deref(), Some("1"));
    assert_eq!(s.emulator.mockup, Some(dir.path().join("cap")));
    let err = |extra: &str| load(extra).unwrap_err().to_string();
    assert!(err("profile = \"idrac9\"").contains("emulator.mockup: the capture is the BMC"));
    members(&["1", "2"]);
    let e = err("");
    assert!(
        e.contains("emulator.mockup") && e.contains("this capture has 2"),
        "{e}"
    );
    std::fs::remove_dir_all(dir.path().join("cap")).unwrap();
    assert!(err("").contains("no capture there"));
    // The shipped capture of an iDRAC 9.
    let shipped = Scenario::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/ironic-replay-idrac9-vmedia.toml"
    )))
    .unwrap();
    assert_eq!(
        shipped.emulator.mockup_system.as_deref(),
        Some("System.Embedded.1")
    );
}

/// A boot file of the user's own: a path (from the scenario's folder) or a
/// URL with its SHA-256, never both, never with a marker.
#[test]
fn artifacts_of_your_own_are_a_file_or_a_url_with_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("images")).unwrap();
    std::fs::write(dir.path().join("images/my.efi"), b"MZ").unwrap();
    let load = |artifact: &str| {
        let p = dir.path().join("s.toml");
        let text = OK.replace("image = \"grub-marker-efi\"\nmarker = \"m\"", artifact);
        std::fs::write(&p, text).unwrap();
        Scenario::load(&p).map_err(|e| e.to_string())
    };
    let s = load("file = \"images/my.efi\"").unwrap();
    assert_eq!(
        s.artifacts[0].source(),
        Source::File(&dir.path().join("images/my.efi"))
    );
    let sha = "a".repeat(64);
    let s = load(&format!(
        "url = \"https://example.org/my.efi\"\nsha256 = \"{sha}\""
    ))
    .unwrap();
    assert_eq!(
        s.artifacts[0].source(),
        Source::Url("https://example.org/my.efi")
    );
    for (artifact, words) in [
        ("file = \"images/none.efi\"", "artifacts[0].file: "),
        (
            "url = \"https://example.org/my.efi\"",
            "artifacts[0].sha256: a downloaded file",
        ),
        (
            "url = \"ftp://example.org/my.efi\"\nsha256 = \"x\"",
            "artifacts[0].sha256: \"x\" is not",
        ),
        (
            &format!("url = \"ftp://h/x\"\nsha256 = \"{sha}\""),
            "artifacts[0].url: \"ftp://h/x\"",
        ),
        (
            "file = \"images/my.efi\"\nimage = \"deploy-ramdisk\"",
            "give one of image",
        ),
        ("", "give one of image"),
        (
            "file = \"images/my.efi\"\nmarker = \"m\"",
            "artifacts[0].marker",
        ),
    ] {
        let e = load(artifact).unwrap_err();
        assert!(e.contains(words), "{artifact}: {e}");
    }
}

/// The reference page is what the schema says today.
#[test]
fn the_reference_page_is_the_schemas() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenario-reference.md");
    let page = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        page == reference::markdown(),
        "docs/scenario-reference.md differs from the schema; write it anew: \
         shoal-harness validate --reference > docs/scenario-reference.md"
    );
    for key in [
        "`timeout_secs`",
        "`[machine]`",
        "`[[artifacts]]`",
        "`sha256`",
        "grub-marker-efi",
    ] {
        assert!(page.contains(key), "{key}");
    }
}
