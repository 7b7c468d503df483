//! The sushy-tools configurations real suites run, each written here as
//! that suite writes it (its keys, values and idioms; the suites are named
//! on each test) and started as that suite starts sushy-emulator, then
//! asked what the suite asks next. No file is copied from a suite: each
//! is rebuilt from what the suite's script or template assigns.

use serde_json::Value;

use crate::common::{call_as as ask, certificate, htpasswd, Spawned};

/// What Ironic's redfish driver does to a node it deploys, up to the boot:
/// the system, a one-time PXE boot in UEFI mode, power on; each answered
/// as a BMC answers it.
fn ironic_asks(base: &str, system: &str, user: Option<&str>) {
    let sys = format!("{base}/redfish/v1/Systems/{system}");
    let (code, s) = ask("GET", &sys, user, None);
    assert_eq!(code, 200, "{s}");
    let (code, b) = ask(
        "PATCH",
        &sys,
        user,
        Some(
            r#"{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once","BootSourceOverrideMode":"UEFI"}}"#,
        ),
    );
    assert!(matches!(code, 200 | 204), "{code} {b}");
    let (_, s) = ask("GET", &sys, user, None);
    assert_eq!(s["Boot"]["BootSourceOverrideTarget"], "Pxe", "{s}");
    let reset = format!("{sys}/Actions/ComputerSystem.Reset");
    let (code, b) = ask("POST", &reset, user, Some(r#"{"ResetType":"On"}"#));
    assert!(matches!(code, 200 | 202 | 204), "{code} {b}");
    let (_, s) = ask("GET", &sys, user, None);
    assert!(
        matches!(s["PowerState"].as_str(), Some("On" | "PoweringOn")),
        "{s}"
    );
}

/// sushy-tools' own sample (`doc/source/admin/emulator.conf`, its master
/// as of March 2026: every key it documents, the Nova backend's newest
/// too), started with `--fake` as its docs start the fake driver.
#[test]
fn sushy_tools_master_sample_starts_on_the_fake_driver() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        r#"# The emulator's own sample, every key as it ships.
SUSHY_EMULATOR_LISTEN_IP = u''
SUSHY_EMULATOR_LISTEN_PORT = 8000
SUSHY_EMULATOR_SSL_CERT = None
SUSHY_EMULATOR_SSL_KEY = None
SUSHY_EMULATOR_AUTH_FILE = None
SUSHY_EMULATOR_OS_CLOUD = None
SUSHY_EMULATOR_OS_VMEDIA_IMAGE_FILE_UPLOAD = False
SUSHY_EMULATOR_OS_VMEDIA_BLANK_IMAGE = 'sushy-tools-blank-image'
SUSHY_EMULATOR_OS_VMEDIA_DELAY_EJECT = False
SUSHY_EMULATOR_OS_VMEDIA_DISK_FORMAT_OVERRIDE = None
SUSHY_EMULATOR_IRONIC_CLOUD = None
SUSHY_EMULATOR_LIBVIRT_URI = u'qemu:///system'
SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = False
SUSHY_EMULATOR_BOOT_LOADER_MAP = {
    'UEFI': {'x86_64': u'/usr/share/OVMF/OVMF_CODE.secboot.fd', 'aarch64': u'/usr/share/AAVMF/AAVMF_CODE.fd'},
    'Legacy': {'x86_64': None, 'aarch64': None}
}
SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM = '/usr/share/OVMF/OVMF_VARS.secboot.fd'
SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM = '/usr/share/OVMF/OVMF_VARS.fd'
SUSHY_EMULATOR_CHASSIS = [
    {u'Id': u'Chassis', u'Name': u'Chassis', u'UUID': u'48295861-2522-3561-6729-621118518810'}
]
SUSHY_EMULATOR_INDICATOR_LEDS = {
}
SUSHY_EMULATOR_VMEDIA_DEVICES = {
    u'Cd': {u'Name': 'Virtual CD', u'MediaTypes': [u'CD', u'DVD']},
    u'Floppy': {u'Name': u'Virtual Removable Media', u'MediaTypes': [u'Floppy', u'USBStick']}
}
SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False
SUSHY_EMULATOR_STORAGE_POOL = 'default'
SUSHY_EMULATOR_STORAGE = {
    "da69abcc-dae0-4913-9a7b-d344043097c0": [
        {"Id": "1", "Name": "Local Storage Controller",
         "StorageControllers": [{"MemberId": "0", "Name": "Contoso Integrated RAID", "SpeedGbps": 12}],
         "Drives": ["32ADF365C6C1B7BD"]}
    ]
}
SUSHY_EMULATOR_DRIVES = {
    ("da69abcc-dae0-4913-9a7b-d344043097c0", "1"): [
        {"Id": "32ADF365C6C1B7BD", "Name": "Drive Sample", "CapacityBytes": 899527000000, "Protocol": "SAS"}
    ]
}
SUSHY_EMULATOR_VOLUMES = {
    ('da69abcc-dae0-4913-9a7b-d344043097c0', '1'): [
        {"libvirtPoolName": "sushyPool", "libvirtVolName": "testVol", "Id": "1",
         "Name": "Sample Volume 1", "VolumeType": "Mirrored", "CapacityBytes": 23748}
    ]
}
SUSHY_EMULATOR_ALLOWED_INSTANCES = ["437XR1138R2", "1", "529QB9450R6"]
SUSHY_EMULATOR_DISABLE_POWER_OFF = False
"#,
    )
    .unwrap();
    let emu = Spawned::start(&["--fake", "--config", conf.to_str().unwrap()]);
    // ALLOWED_INSTANCES names none of the fake driver's systems (its one
    // `fake`), so, as sushy-tools, none is served; the sample's Chassis is.
    let (code, list) = ask(
        "GET",
        &format!("{}/redfish/v1/Systems", emu.url),
        None,
        None,
    );
    assert_eq!(
        (code, &list["Members@odata.count"]),
        (200, &Value::from(0)),
        "{list}"
    );
    let chassis = format!(
        "{}/redfish/v1/Chassis/48295861-2522-3561-6729-621118518810",
        emu.url
    );
    let (code, c) = ask("GET", &chassis, None, None);
    assert_eq!((code, c["Name"].as_str()), (200, Some("Chassis")), "{c}");
    assert!(emu.stop().success());
}

/// OpenStack Ironic's devstack plugin (`configure_redfish` in
/// devstack/lib/ironic): two keys in /etc/ironic/redfish/emulator.conf,
/// named by the SUSHY_EMULATOR_CONFIG variable (gunicorn's `--env`), not
/// by a flag; here on the fake driver.
#[test]
fn devstack_ironic_plugin_conf_through_its_variable() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        "SUSHY_EMULATOR_BOOT_LOADER_MAP = {\n    'UEFI': {\n        'x86_64': \
         '/var/lib/libvirt/images/OVMF_CODE_4M.fd'\n    },\n    'Legacy': {\n        \
         'x86_64': None\n    }\n}\nSUSHY_EMULATOR_FEATURE_SET = \"full\"\n",
    )
    .unwrap();
    let (emu, _) = Spawned::start_env(
        &["--fake"],
        &[("SUSHY_EMULATOR_CONFIG", conf.to_str().unwrap())],
        1,
    );
    ironic_asks(&emu.url, "27946b59-9e44-4fa7-8e91-f3527a1ef094", None);
    assert!(emu.stop().success());
}

/// metal3-dev-env's fake platform (`vm-setup/roles/virtbmc`, the FakeIPA
/// task): TLS, Basic auth, the fake driver with nodes that notify, and
/// metal3's own SUSHY_EMULATOR_FAKE_IPA; started as metal3's image starts
/// it (`--debug --config /root/sushy/conf.py`), on `-i localhost`.
#[test]
fn metal3_dev_env_fake_platform_conf() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let pw = htpasswd(dir.path(), "admin", "password", 4);
    let conf = dir.path().join("conf.py");
    std::fs::write(
        &conf,
        format!(
            "SUSHY_EMULATOR_LIBVIRT_URI = \"qemu:///system\"\n\
             SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = False\n\
             SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False\n\
             SUSHY_EMULATOR_AUTH_FILE = {pw:?}\n\
             SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_FAKE_IPA = True\n\
             SUSHY_EMULATOR_SSL_KEY = {key:?}\n\
             SUSHY_EMULATOR_SSL_CERT = {cert:?}\n\
             SUSHY_EMULATOR_STATE_DIR = {state:?}\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [\n\
             {{\n  'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef001',\n  \"name\": \"fake1\",\n  \
             'power_state': 'Off',\n  'external_notifier': True,\n  'nics': [\n    \
             {{'mac': '00:5c:52:31:3a:01', 'ip': '172.22.0.100'}},\n    \
             {{'mac': '00:5c:52:31:3b:01', 'ip': '172.22.0.110'}}\n  ]\n}},\n\
             {{\n  'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef002',\n  \"name\": \"fake2\",\n  \
             'power_state': 'Off',\n  'external_notifier': True,\n  'nics': [\n    \
             {{'mac': '00:5c:52:31:3a:02', 'ip': '172.22.0.100'}}\n  ]\n}}\n]\n",
            pw = pw.display().to_string(),
            key = key.display().to_string(),
            cert = cert.display().to_string(),
            state = dir.path().join("state").display().to_string(),
        ),
    )
    .unwrap();
    let emu = Spawned::start(&[
        "--debug",
        "--config",
        conf.to_str().unwrap(),
        "-i",
        "localhost",
    ]);
    assert!(emu.url.starts_with("https://127.0.0.1:"), "{}", emu.url);
    let user = Some("admin:password");
    let (code, list) = ask(
        "GET",
        &format!("{}/redfish/v1/Systems", emu.url),
        user,
        None,
    );
    assert_eq!(
        (code, &list["Members@odata.count"]),
        (200, &Value::from(2)),
        "{list}"
    );
    assert_eq!(
        ask(
            "GET",
            &format!("{}/redfish/v1/Systems", emu.url),
            None,
            None
        )
        .0,
        401
    );
    let (code, nic) = ask(
        "GET",
        &format!(
            "{}/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef001/EthernetInterfaces/00:5c:52:31:3b:01",
            emu.url
        ),
        user,
        None,
    );
    assert_eq!(
        (code, nic["MACAddress"].as_str()),
        (200, Some("00:5c:52:31:3b:01"))
    );
    ironic_asks(&emu.url, "27946b59-9e44-4fa7-8e91-f3527a1ef002", user);
    assert!(emu.stop().success());
}

/// The conf.py that metal3's scalability setups share between
/// sushy-emulator and sushy-fake-ipa (metal3-clusterapi-docs'
/// Scalability-with-Fake-Nodes, metal3-dev-env's fake-IPA script): an
/// `import collections`, a named tuple of the agent's address, the fake
/// agent's own keys, the notification URL, a port written as a string.
#[test]
fn metal3_scalability_conf_shared_with_the_fake_agent() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf.py");
    std::fs::write(
        &conf,
        format!(
            "import collections\n\n\
             Host = collections.namedtuple('Host', ['hostname', 'port'])\n\n\
             SUSHY_EMULATOR_LIBVIRT_URI = \"qemu+ssh://root@192.168.111.1/system?&keyfile=/root/ssh/id_rsa_virt_power&no_verify=1&no_tty=1\"\n\
             SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = False\n\
             SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False\n\
             SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_LISTEN_PORT = \"8001\"\n\
             SUSHY_EMULATOR_STATE_DIR = {state:?}\n\
             EXTERNAL_NOTIFICATION_URL = \"http://127.0.0.1:9\"\n\
             FAKE_IPA_API_URL = \"https://192.168.222.100:6385\"\n\
             FAKE_IPA_URL = \"http://192.168.222.1:9901\"\n\
             FAKE_IPA_INSPECTION_CALLBACK_URL = \"https://192.168.222.100:6385/v1/continue_inspection\"\n\
             FAKE_IPA_ADVERTISE_ADDRESS = Host(hostname=\"192.168.222.1\", port=\"9901\")\n\
             FAKE_IPA_ADVERTISE_ADDRESS_IP = \"192.168.222.1\"\n\
             FAKE_IPA_ADVERTISE_ADDRESS_PORT = \"9901\"\n\
             FAKE_IPA_CAFILE = \"/root/cert/ironic-ca.crt\"\n\
             SUSHY_FAKE_IPA_LISTEN_IP = \"192.168.222.1\"\n\
             SUSHY_FAKE_IPA_LISTEN_PORT = \"9901\"\n\
             SUSHY_EMULATOR_FAKE_IPA = True\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': '9f0b4a52-4f61-4d0f-9d8a-000000000001', \
             'name': 'fake-0', 'power_state': 'Off', 'external_notifier': False, \
             'nics': [{{'mac': '00:60:2f:31:81:01', 'ip': '192.168.0.100'}}]}}]\n",
            state = dir.path().join("state").display().to_string(),
        ),
    )
    .unwrap();
    let settings = shoal_emulator::sushy::load(&conf, false).unwrap();
    assert_eq!(settings.listen_port, Some(8001), "Flask takes int(port)");
    assert!(
        settings
            .notes
            .iter()
            .any(|n| n.contains("FAKE_IPA_ADVERTISE_ADDRESS") && n.contains("sushy-fake-ipa")),
        "{:?}",
        settings.notes
    );
    let emu = Spawned::start(&["--config", conf.to_str().unwrap()]);
    ironic_asks(&emu.url, "9f0b4a52-4f61-4d0f-9d8a-000000000001", None);
    assert!(emu.stop().success());
}

/// How the rest start it without a file of their own: baremetal-operator's
/// e2e (vbmctl: `--interface`, `--port`, `--storage-pool`,
/// `--libvirt-uri`), metal3's kamaji proof of concept (a file naming a
/// listen address in `u''` strings, through SUSHY_EMULATOR_CONFIG).
#[test]
fn command_lines_and_small_files_of_the_other_suites() {
    use clap::Parser;
    let cli = shoal_emulator::cli::Cli::try_parse_from([
        "sushy-emulator",
        "--interface",
        "192.168.222.1",
        "--port",
        "8000",
        "--storage-pool",
        "baremetal-e2e",
        "--libvirt-uri",
        "qemu:///system",
    ])
    .unwrap();
    assert_eq!(cli.libvirt_media_pool.as_deref(), Some("baremetal-e2e"));
    let kamaji = shoal_emulator::sushy::parse(
        "sushy-tools.conf",
        "SUSHY_EMULATOR_LISTEN_IP = u'192.168.222.1'\nSUSHY_EMULATOR_LISTEN_PORT = 8000\n\
         SUSHY_EMULATOR_LIBVIRT_URI = u'qemu:///system'\n",
        false,
    )
    .unwrap();
    assert_eq!(kamaji.listen_ip, Some("192.168.222.1".parse().unwrap()));
    assert!(kamaji.notes.is_empty(), "{:?}", kamaji.notes);
}

/// The sample's storage keys (`SUSHY_EMULATOR_STORAGE`, `_DRIVES`,
/// `_VOLUMES`) for a fake system of that UUID, which also says its own
/// memory, CPUs and disks: each served where sushy-tools serves it, with
/// the sample's Ids, names and sizes, and a volume Ironic's RAID interface
/// can delete.
#[test]
fn sample_storage_and_fake_hardware_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    let sys = "da69abcc-dae0-4913-9a7b-d344043097c0";
    std::fs::write(
        &conf,
        format!(
            r#"SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_STATE_DIR = {state:?}
SUSHY_EMULATOR_FAKE_SYSTEMS = [
    {{'uuid': '{sys}', 'name': 'fake1', 'power_state': 'Off',
     'nics': [{{'mac': '00:5c:52:31:3a:9c', 'ip': '172.22.130.100'}}]}},
    {{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'big', 'power_state': 'Off',
     'nics': [{{'mac': '00:5c:52:31:3a:9d'}}],
     'memory_mib': 65536, 'cpus': 16, 'disks': [{{'name': 'sda', 'capacity_gib': 480}}]}},
]
SUSHY_EMULATOR_STORAGE = {{
    "{sys}": [
        {{"Id": "1", "Name": "Local Storage Controller",
         "StorageControllers": [{{"MemberId": "0", "Name": "Contoso Integrated RAID", "SpeedGbps": 12}}],
         "Drives": ["32ADF365C6C1B7BD"]}}
    ]
}}
SUSHY_EMULATOR_DRIVES = {{
    ("{sys}", "1"): [
        {{"Id": "32ADF365C6C1B7BD", "Name": "Drive Sample", "CapacityBytes": 899527000000, "Protocol": "SAS"}}
    ]
}}
SUSHY_EMULATOR_VOLUMES = {{
    ('{sys}', '1'): [
        {{"libvirtPoolName": "sushyPool", "libvirtVolName": "testVol", "Id": "1",
         "Name": "Sample Volume 1", "VolumeType": "Mirrored", "CapacityBytes": 23748}},
        {{"libvirtPoolName": "sushyPool", "libvirtVolName": "testVol1", "Id": "2",
         "Name": "Sample Volume 2", "VolumeType": "StripedWithParity", "CapacityBytes": 48395}}
    ]
}}
"#,
            state = dir.path().join("state").display().to_string(),
        ),
    )
    .unwrap();
    let emu = Spawned::start(&["--config", conf.to_str().unwrap()]);
    let storage = format!("{}/redfish/v1/Systems/{sys}/Storage/1", emu.url);
    let (code, s) = ask("GET", &storage, None, None);
    assert_eq!(code, 200, "{s}");
    assert_eq!(s["Name"], "Local Storage Controller", "{s}");
    let ctl = &s["StorageControllers"][0];
    assert_eq!(
        (&ctl["MemberId"], &ctl["Name"], &ctl["SpeedGbps"]),
        (
            &Value::from("0"),
            &Value::from("Contoso Integrated RAID"),
            &Value::from(12)
        ),
        "{s}"
    );
    assert_eq!(
        s["Drives"][0]["@odata.id"],
        format!("/redfish/v1/Systems/{sys}/Storage/1/Drives/32ADF365C6C1B7BD")
    );
    let (code, d) = ask(
        "GET",
        &format!("{storage}/Drives/32ADF365C6C1B7BD"),
        None,
        None,
    );
    assert_eq!(code, 200, "{d}");
    assert_eq!(
        (&d["Name"], &d["CapacityBytes"], &d["Protocol"]),
        (
            &Value::from("Drive Sample"),
            &Value::from(899527000000u64),
            &Value::from("SAS")
        ),
        "{d}"
    );
    let (code, vols) = ask("GET", &format!("{storage}/Volumes"), None, None);
    assert_eq!(
        (code, &vols["Members@odata.count"]),
        (200, &Value::from(2)),
        "{vols}"
    );
    let (_, v) = ask("GET", &format!("{storage}/Volumes/2"), None, None);
    assert_eq!(
        (&v["Name"], &v["VolumeType"], &v["CapacityBytes"]),
        (
            &Value::from("Sample Volume 2"),
            &Value::from("StripedWithParity"),
            &Value::from(48395)
        ),
        "{v}"
    );
    // Ironic's RAID interface deletes what it finds before it creates.
    let (code, b) = ask("DELETE", &format!("{storage}/Volumes/1"), None, None);
    assert!(matches!(code, 200 | 202 | 204), "{code} {b}");
    let (_, vols) = ask("GET", &format!("{storage}/Volumes"), None, None);
    assert_eq!(vols["Members@odata.count"], 1, "{vols}");

    let big = format!(
        "{}/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094",
        emu.url
    );
    let (_, b) = ask("GET", &big, None, None);
    assert_eq!(b["MemorySummary"]["TotalSystemMemoryGiB"], 64.0, "{b}");
    assert_eq!(b["ProcessorSummary"]["LogicalProcessorCount"], 16, "{b}");
    let (code, d) = ask("GET", &format!("{big}/Storage/1/Drives/sda"), None, None);
    assert_eq!(
        (code, &d["CapacityBytes"]),
        (200, &Value::from(480u64 << 30)),
        "{d}"
    );
    assert!(emu.stop().success());
}

/// `SUSHY_EMULATOR_IGNORE_BOOT_DEVICE = True` (suites whose machines boot
/// the order in their NVRAM): a boot device request is checked and
/// answered, the machine keeps its own order, the boot mode still moves;
/// a target the machine does not offer is still refused.
#[test]
fn ignore_boot_device_answers_and_keeps_the_machines_order() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        "SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_IGNORE_BOOT_DEVICE = True\n",
    )
    .unwrap();
    let emu = Spawned::start(&["--config", conf.to_str().unwrap()]);
    let (_, list) = ask(
        "GET",
        &format!("{}/redfish/v1/Systems", emu.url),
        None,
        None,
    );
    let sys = format!(
        "{}{}",
        emu.url,
        list["Members"][0]["@odata.id"].as_str().unwrap()
    );
    let (_, before) = ask("GET", &sys, None, None);
    let (code, b) = ask(
        "PATCH",
        &sys,
        None,
        Some(
            r#"{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once","BootSourceOverrideMode":"Legacy"}}"#,
        ),
    );
    assert!(matches!(code, 200 | 204), "{code} {b}");
    let (_, after) = ask("GET", &sys, None, None);
    for k in ["BootSourceOverrideTarget", "BootSourceOverrideEnabled"] {
        assert_eq!(after["Boot"][k], before["Boot"][k], "{k}: {after}");
    }
    assert_eq!(after["Boot"]["BootSourceOverrideMode"], "Legacy", "{after}");
    let (code, b) = ask(
        "PATCH",
        &sys,
        None,
        Some(r#"{"Boot":{"BootSourceOverrideTarget":"Tape"}}"#),
    );
    assert_eq!(code, 400, "{b}");
    assert!(emu.stop().success());
}

/// `SUSHY_EMULATOR_VMEDIA_DEVICES` naming its own devices (here one USB
/// stick, as suites that boot from a removable image write it): served
/// under the configuration's Id, Name and MediaTypes; the slot no device
/// takes is not served; InsertMedia works on the configured device.
#[test]
fn configured_vmedia_devices_are_the_ones_served() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("emulator.conf");
    std::fs::write(
        &conf,
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n\
         SUSHY_EMULATOR_VMEDIA_DEVICES = {\n    \
             u'Usb': {u'Name': u'Virtual USB Stick', u'MediaTypes': [u'USBStick']},\n}\n",
    )
    .unwrap();
    let emu = Spawned::start(&["--config", conf.to_str().unwrap()]);
    let (_, list) = ask(
        "GET",
        &format!("{}/redfish/v1/Managers", emu.url),
        None,
        None,
    );
    let mgr = format!(
        "{}{}",
        emu.url,
        list["Members"][0]["@odata.id"].as_str().unwrap()
    );
    let (code, media) = ask("GET", &format!("{mgr}/VirtualMedia"), None, None);
    assert_eq!(code, 200, "{media}");
    let members: Vec<&str> = media["Members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["@odata.id"].as_str())
        .collect();
    assert_eq!(members.len(), 1, "{media}");
    assert!(members[0].ends_with("/VirtualMedia/Usb"), "{media}");
    let usb = format!("{mgr}/VirtualMedia/Usb");
    let (_, d) = ask("GET", &usb, None, None);
    assert_eq!(
        (&d["Name"], &d["MediaTypes"]),
        (
            &Value::from("Virtual USB Stick"),
            &serde_json::json!(["USBStick"])
        ),
        "{d}"
    );
    let (code, _) = ask("GET", &format!("{mgr}/VirtualMedia/Cd"), None, None);
    assert_eq!(code, 404);
    let (code, b) = ask(
        "POST",
        &format!("{usb}/Actions/VirtualMedia.InsertMedia"),
        None,
        Some(r#"{"Image":"http://127.0.0.1:9/stick.img","Inserted":true}"#),
    );
    assert!(matches!(code, 200 | 202 | 204), "{code} {b}");
    let (_, d) = ask("GET", &usb, None, None);
    assert_eq!(d["Image"], "http://127.0.0.1:9/stick.img", "{d}");
    assert!(emu.stop().success());
}
