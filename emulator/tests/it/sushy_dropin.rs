//! Shoal as a drop-in for sushy-tools 2.2.0 itself (from the bench venv,
//! which `ci/test` builds): one sushy-tools configuration, served by
//! `sushy-emulator` and by `shoal-emulator --config`, both crawled from
//! `/redfish/v1` by `@odata.id`. Every path sushy-tools serves that Shoal
//! does not is listed here with the reason, so the list cannot grow (or
//! shrink) unnoticed.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shoal_harness::fuzz::crawl::crawl;
use shoal_harness::fuzz::http::{Client, Req};

use crate::common::{required, Spawned};

const A: &str = "7d2a0c6e-3b1f-4c5e-9a0d-2f6b8e4c1a01";
const B: &str = "7d2a0c6e-3b1f-4c5e-9a0d-2f6b8e4c1a02";

/// What sushy-tools serves for the fake systems and Shoal does not, and
/// why (`{A}` and `{B}` are the systems' UUIDs).
const ONLY_SUSHY_TOOLS: &[(&str, &str)] = &[(
    "/redfish/v1/Registries/Messages",
    "sushy-tools' registry file: Shoal serves the Base registry it uses \
         under its DMTF Id",
)];

/// The same for the libvirt test driver's domain (`{test}`).
#[cfg(feature = "libvirt")]
const ONLY_SUSHY_TOOLS_LIBVIRT: &[(&str, &str)] = &[
    ("/redfish/v1/Registries/Messages", "as above"),
    (
        "/redfish/v1/Systems/{test}/BIOS",
        "sushy-tools spells the BIOS resource `BIOS`; Shoal serves it at \
         `Bios`, where the System's link points (as on real BMCs)",
    ),
    ("/redfish/v1/Systems/{test}/BIOS/Settings", "the same"),
    (
        "/redfish/v1/Systems/{test}/Processors/CPU1",
        "sushy-tools lists a Processor per vCPU; Shoal one socket with the \
         domain's vCPUs as its cores",
    ),
];

pub(crate) struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn paths(addr: SocketAddr) -> BTreeSet<String> {
    let mut client = Client::new(addr, Duration::from_secs(20));
    crawl(&mut client, None)
        .resources
        .into_iter()
        .map(|r| r.path.trim_end_matches('/').to_string())
        .collect()
}

fn status(addr: SocketAddr, path: &str) -> u16 {
    let mut client = Client::new(addr, Duration::from_secs(20));
    client.send(&Req::new("GET", path)).map_or(0, |r| r.status)
}

/// sushy-tools 2.2.0's `sushy-emulator` (the bench venv's) serving
/// `conf` on a free loopback port, its log in `dir`; `None` (a failure
/// under CI) when the venv is missing.
pub(crate) fn sushy_emulator(
    conf: &std::path::Path,
    dir: &std::path::Path,
) -> Option<(Killed, SocketAddr)> {
    let Some(venv) = std::env::var_os("SHOAL_BENCH_VENV") else {
        // Reported as missing (a failure under CI) by `required`.
        let _ = required(
            "/nonexistent/sushy-emulator",
            "the bench venv, SHOAL_BENCH_VENV",
        );
        return None;
    };
    let program = required(
        std::path::Path::new(&venv).join("bin/sushy-emulator"),
        "the bench venv, SHOAL_BENCH_VENV",
    )?;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log_path = dir.join("sushy-emulator.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let sushy = Killed(
        Command::new(&program)
            .arg("--config")
            .arg(conf)
            .args(["-p", &port.to_string()])
            .env_remove("SUSHY_EMULATOR_CONFIG")
            .env_remove("SUSHY_EMULATOR_LIBVIRT_URI")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sushy-emulator"),
    );
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let started = Instant::now();
    while status(addr, "/redfish/v1/") != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "sushy-emulator did not answer: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some((sushy, addr))
}

/// Serves `conf` with sushy-emulator and Shoal; the paths sushy-tools
/// serves that Shoal does not (UUIDs named by `names`).
fn only_sushy_tools(conf_text: &str, names: &[(&str, &str)]) -> Option<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf.py");
    std::fs::write(
        &conf,
        format!(
            "SUSHY_EMULATOR_STATE_DIR = {:?}\n{conf_text}",
            dir.path().join("state").display().to_string()
        ),
    )
    .unwrap();
    let (_sushy, sushy_addr) = sushy_emulator(&conf, dir.path())?;
    let shoal = Spawned::start(&["--config", conf.to_str().unwrap()]);
    let shoal_addr: SocketAddr = shoal.url.trim_start_matches("http://").parse().unwrap();

    let theirs = paths(sushy_addr);
    let ours = paths(shoal_addr);
    assert!(theirs.len() > 10, "sushy-tools served {theirs:?}");
    let name = |p: &str| {
        names
            .iter()
            .fold(p.to_string(), |p, (uuid, n)| p.replace(uuid, n))
    };
    // Served by Shoal although not linked from where sushy-tools links it
    // counts as served.
    let missing: Vec<String> = theirs
        .difference(&ours)
        .filter(|p| status(shoal_addr, p) != 200)
        .map(|p| name(p))
        .collect();
    let only_ours: Vec<String> = ours.difference(&theirs).map(|p| name(p)).collect();
    println!(
        "sushy-tools serves {} paths, Shoal {}",
        theirs.len(),
        ours.len()
    );
    println!("only sushy-tools: {missing:#?}");
    println!("only Shoal: {only_ours:#?}");
    Some(missing)
}

fn expected(list: &[(&str, &str)]) -> Vec<String> {
    list.iter().map(|(p, _)| p.to_string()).collect()
}

#[test]
fn shoal_serves_the_paths_sushy_tools_serves_for_the_same_fake_systems() {
    let conf = format!(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n\
         SUSHY_EMULATOR_FAKE_SYSTEMS = [\n\
         \x20 {{'uuid': '{A}', 'name': 'node-a', 'power_state': 'Off',\n\
         \x20  'nics': [{{'mac': '52:54:00:aa:00:01', 'ip': '192.0.2.11'}}]}},\n\
         \x20 {{'uuid': '{B}', 'name': 'node-b', 'power_state': 'On',\n\
         \x20  'nics': [{{'mac': '52:54:00:aa:00:02', 'ip': '192.0.2.12'}},\n\
         \x20           {{'mac': '52:54:00:bb:00:02', 'ip': '192.0.2.13'}}]}},\n\
         ]\n"
    );
    let Some(missing) = only_sushy_tools(&conf, &[(A, "{A}"), (B, "{B}")]) else {
        return;
    };
    assert_eq!(
        missing,
        expected(ONLY_SUSHY_TOOLS),
        "paths only sushy-tools serves"
    );
}

/// The same on libvirt's test driver (its `test` domain, the same UUID in
/// both processes): sushy-tools' libvirt driver against Shoal's.
#[cfg(feature = "libvirt")]
#[test]
fn shoal_serves_the_paths_sushy_tools_serves_for_the_same_libvirt_domains() {
    const TEST_DOMAIN: &str = "6695eb01-f6a4-8304-79aa-97f2502e193f";
    let Some(missing) = only_sushy_tools(
        "SUSHY_EMULATOR_LIBVIRT_URI = 'test:///default'\n",
        &[(TEST_DOMAIN, "{test}")],
    ) else {
        return;
    };
    assert_eq!(
        missing,
        expected(ONLY_SUSHY_TOOLS_LIBVIRT),
        "paths only sushy-tools serves"
    );
}
