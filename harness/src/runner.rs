//! Runs scenarios end to end in one lab: per case (a scenario with one
//! driver) its own network, boot servers, domain and emulator process;
//! several cases in parallel (`--jobs`). Reports progress as it goes, a
//! summary table with time-to-marker, JUnit XML, and keeps the artifact
//! folder of every failed case (serial log, emulator log, HTTP logs, DHCP
//! log, domain XML).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use crate::driver::{Bmc, BootRequest};
use crate::emulator::EmulatorProcess;
use crate::lab::{wait_until, Lab, Net, NetSpec};
use crate::scenario::{Dhcp, Driver, HttpBoot, Image, Method, Outcome, Protocol, Scenario};

pub struct Options {
    pub jobs: usize,
    pub artifacts: PathBuf,
    pub emulator: PathBuf,
    pub python: Option<PathBuf>,
    /// The venv with Ironic (the `ironic` driver).
    pub ironic_venv: Option<PathBuf>,
    pub keep_passed: bool,
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub scenario: String,
    pub driver: Driver,
    pub passed: bool,
    pub detail: String,
    pub elapsed: Duration,
    /// From the power-on request to the last expected serial line.
    pub to_marker: Option<Duration>,
    pub artifacts: Option<PathBuf>,
}

/// What the serial port showed.
enum Watch {
    /// Every expected line, in order; when the last appeared.
    Seen(Duration),
    /// A failure pattern appeared.
    Failed(String),
    TimedOut(String),
    /// The driver failed before the machine booted (Ironic's error).
    Driver(String),
}

fn watch(
    serial: &Path,
    expected: &[String],
    failure: &[String],
    limit: Duration,
    start: Instant,
) -> Watch {
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(serial).unwrap_or_default()).into_owned();
        let mut rest = text.as_str();
        let mut found = 0;
        for e in expected {
            match rest.find(e.as_str()) {
                Some(i) => {
                    rest = &rest[i + e.len()..];
                    found += 1;
                }
                None => break,
            }
        }
        if found == expected.len() && !expected.is_empty() {
            return Watch::Seen(start.elapsed());
        }
        if let Some(f) = failure.iter().find(|f| text.contains(f.as_str())) {
            return Watch::Failed(f.clone());
        }
        if start.elapsed() > limit {
            let missing = expected.get(found).cloned().unwrap_or_default();
            return Watch::TimedOut(format!(
                "after {limit:?}, still waiting for {missing:?} on the serial port"
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// How many requests the log shows of `request` (`METHOD /path`); a
/// trailing `*` matches any rest of the path (`GET /redfish/boot-*`, where
/// Ironic names the file after the node).
fn count(log: &Path, request: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let needle = match request.strip_suffix('*') {
        Some(prefix) => prefix.to_string(),
        None => format!("{request} "),
    };
    text.lines().filter(|l| l.starts_with(&needle)).count()
}

fn start_emulator(
    opts: &Options,
    domain: &str,
    emulator: &crate::scenario::Emulator,
    dir: &Path,
    ns: Option<&str>,
) -> Result<EmulatorProcess> {
    let http_boot = emulator.http_boot;
    // Inside the lab's namespace (for Ironic there) it listens on the
    // namespace's loopback.
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(&opts.emulator);
            c
        }
        None => Command::new(&opts.emulator),
    };
    if let Some(p) = &emulator.profile {
        cmd.args(["--profile", p]);
    }
    cmd.args([
        "--libvirt-uri",
        crate::lab::SYSTEM_URI,
        "--libvirt-domain",
        domain,
        "--port",
        "0",
    ])
    .args([
        "--http-boot",
        match http_boot {
            HttpBoot::Firmware => "firmware",
            HttpBoot::Vmedia => "vmedia",
        },
    ])
    .arg("--media-cache")
    .arg(dir.join("media"))
    // What the BMC downloads is served on the host's loopback
    // (`Lab::bmc_file_server`), which the emulator refuses by default.
    .args(["--media-allow-net", "127.0.0.0/8"])
    .env("RUST_LOG", "info");
    EmulatorProcess::spawn(cmd, &dir.join("emulator.log"))
}

fn net_spec(s: &Scenario, net_host: std::net::Ipv4Addr) -> NetSpec {
    let url = |f: &str| format!("http://{net_host}:{}/{f}", crate::lab::BOOT_PORT);
    let mut o = Vec::new();
    if s.network.ipv6_only {
        // DHCPv6: the bootfile URL (option 59) and the HTTPClient vendor
        // class (option 16). OVMF takes an ADVERTISE as an HTTP offer only
        // when option 16 has "HTTPClient" at offset 6, after the 4-byte
        // enterprise number and the 2-byte length of the first class item
        // (HttpBootDxe, HttpBootParseDhcp6Packet); it does not check the
        // enterprise number. dnsmasq writes an option6:16 value as a list of
        // items, each behind a 2-byte length, and has no way to write the
        // raw enterprise number: the two-byte item "EN" stands in for it
        // (a captured ADVERTISE showed a hex value sent as one text item).
        let index = net_host.octets()[2];
        if let (Dhcp::Httpclient, Some(f)) = (s.network.dhcp, &s.network.bootfile) {
            o.push(format!(
                "dhcp-option=option6:bootfile-url,http://[{}]:{}/{f}",
                crate::lab::host6(index),
                crate::lab::BOOT_PORT
            ));
            o.push("dhcp-option-force=option6:16,EN,HTTPClient".into());
        }
        return NetSpec {
            dnsmasq_options: o,
            ipv6: true,
            no_dhcp4: true,
            ..NetSpec::default()
        };
    }
    match (s.network.dhcp, &s.network.bootfile) {
        (Dhcp::Httpclient, Some(f)) => {
            o.push("dhcp-vendorclass=set:efihttp,HTTPClient".to_string());
            o.push("dhcp-option-force=tag:efihttp,60,HTTPClient".to_string());
            o.push(format!("dhcp-boot=tag:efihttp,{}", url(f)));
        }
        (Dhcp::HttpclientWithoutVendorClass, Some(f)) => {
            o.push("dhcp-vendorclass=set:efihttp,HTTPClient".to_string());
            o.push(format!("dhcp-boot=tag:efihttp,{}", url(f)));
        }
        _ => {}
    }
    NetSpec {
        dnsmasq_options: o,
        ..NetSpec::default()
    }
}

/// A boot file a Debian package installs.
fn packaged(path: &str, package: &str) -> Result<PathBuf> {
    let p = PathBuf::from(path);
    if !p.exists() {
        bail!("{path} is missing (Debian package {package}; ci/test installs it)");
    }
    Ok(p)
}

/// The host number of a petitboot machine's fixed address in its /24.
const PETITBOOT_HOST: u8 = 50;

/// A ppc64le image from vm-images/ppc64le-netboot.sh.
fn ppc64le(kind: &str, name: &str) -> Result<std::path::PathBuf> {
    crate::images::build("ppc64le-netboot.sh", &[kind], name)
}

/// A stable UUID for a domain name, so that templates can name the machine
/// before it is defined.
fn domain_uuid(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = hex::encode(&Sha256::digest(name.as_bytes())[..16]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Runs one case; `index` picks its network (198.18.index.0/24).
fn run_case(
    lab: &Mutex<Lab>,
    opts: &Options,
    s: &Scenario,
    driver: Driver,
    index: u8,
) -> CaseResult {
    let dir = opts.artifacts.join(format!("{}-{}", s.name, driver.name()));
    let start = Instant::now();
    let outcome = (|| -> Result<(bool, String, Option<Duration>)> {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("www"))?;
        // Images first: building them needs no lab.
        for a in &s.artifacts {
            let marker = a.marker.as_deref().unwrap_or_default();
            let built = match a.image {
                Image::GrubMarkerEfi => crate::images::grub_marker("efi", marker)?,
                Image::GrubMarkerIso => crate::images::grub_marker("iso", marker)?,
                Image::DeployRamdisk => {
                    crate::images::build("deploy-ramdisk.sh", &["iso"], "deploy.iso")?
                }
                Image::DeployKernel => {
                    crate::images::build("deploy-ramdisk.sh", &["kernel"], "vmlinuz")?
                }
                Image::DeployInitrd => {
                    crate::images::build("deploy-ramdisk.sh", &["initrd"], "initrd.gz")?
                }
                Image::IpxeSnponly => packaged(crate::lab::IPXE_SNPONLY, "ipxe")?,
                Image::GrubNetbootEfi => {
                    packaged(crate::lab::GRUB_NETBOOT, "grub-efi-amd64-signed")?
                }
                Image::Ppc64leKernel => ppc64le("kernel", "vmlinux")?,
                Image::Ppc64lePayload => ppc64le("payload", "payload.cpio.gz")?,
            };
            std::fs::copy(&built, dir.join("www").join(&a.name))?;
        }
        let host = std::net::Ipv4Addr::new(198, 18, index, 1);
        let domain = domain_name(index, &s.name);
        let serial = dir.join("serial.log");
        let mac = format!("52:54:00:5e:{index:02x}:01");
        let uuid = domain_uuid(&domain);
        let mut spec = net_spec(s, host);
        spec.dnsmasq_log = Some(std::fs::canonicalize(&dir)?.join("dnsmasq.log"));
        let ironic = driver == Driver::Ironic;
        let layout = ironic
            .then(|| -> Result<crate::ironic::Layout> {
                let case = std::fs::canonicalize(&dir)?;
                // On an IPv6-only network Ironic's URLs name the host's
                // IPv6 address.
                let (server, authority) = if s.network.ipv6_only {
                    let v6 = crate::lab::host6(index);
                    (v6.to_string(), format!("[{v6}]"))
                } else {
                    (host.to_string(), host.to_string())
                };
                Ok(crate::ironic::Layout {
                    dir: case.join("ironic"),
                    www: case.join("www"),
                    http_url: format!("http://{authority}:{}", crate::lab::BOOT_PORT),
                    tftp_server: server,
                    api_port: 16000 + u16::from(index),
                })
            })
            .transpose()?;
        if let Some(l) = &layout {
            // The network's dnsmasq watches these folders from its start.
            l.create_dhcp_dirs()?;
            spec.dnsmasq_options.extend(l.dnsmasq_options());
            spec.tftp_root = Some(l.www.clone());
        }
        let mut serial_checks = s.checks.serial.clone();
        let mut request_checks = s.checks.requests.clone();
        let mut failure_checks = s.checks.failure.clone();
        let mut then_checks = s.then.clone();
        if let Some(p) = &s.petitboot {
            // The machine gets a fixed address, so that the configuration
            // can be named after it (the pxelinux IP probe).
            let target = crate::petitboot::Target {
                uuid: &uuid,
                mac: &mac,
                ip: std::net::Ipv4Addr::new(198, 18, index, PETITBOOT_HOST),
                server: if s.network.ipv6_only {
                    crate::lab::host6(index).into()
                } else {
                    host.into()
                },
            };
            let www = std::fs::canonicalize(dir.join("www"))?;
            let names: Vec<&str> = s.artifacts.iter().map(|a| a.name.as_str()).collect();
            spec.dnsmasq_options
                .extend(crate::petitboot::prepare(p, &target, &www, &names)?);
            for c in serial_checks
                .iter_mut()
                .chain(request_checks.iter_mut())
                .chain(failure_checks.iter_mut())
                .chain(
                    then_checks
                        .iter_mut()
                        .flat_map(|t| t.serial.iter_mut().chain(t.requests_absent.iter_mut())),
                )
            {
                *c = crate::petitboot::render(c, p, &target)?;
            }
            spec.hosts.push((mac.clone(), PETITBOOT_HOST));
            if p.protocol == Protocol::Tftp {
                spec.tftp_root = Some(www);
            }
        }
        let (net, bmc_url): (Net, String) = {
            let mut lab = lab.lock().map_err(|_| anyhow!("lab lock"))?;
            let net = lab.network(index, &spec)?;
            lab.file_server(&net, &dir.join("www"), &dir.join("http.log"))?;
            // What the BMC itself downloads; Ironic hands it http_url instead.
            let bmc_url = match ironic {
                true => String::new(),
                false => lab.bmc_file_server(&dir.join("www"), &dir.join("bmc-http.log"))?,
            };
            if s.petitboot() {
                let gone = crate::lab::missing_ppc64le();
                if !gone.is_empty() {
                    bail!(
                        "this host cannot run ppc64le machines; missing: {}",
                        gone.join(", ")
                    );
                }
                let kernel = ppc64le("kernel", "vmlinux")?;
                let netboot = ppc64le("netboot", "netboot.cpio.gz")?;
                let disk = match &s.machine.disk_os {
                    Some(os) => {
                        // An installed OS, as far as petitboot can tell.
                        let mut bytes = format!("SHOAL-DISK-OS {os}\n").into_bytes();
                        bytes.resize(1 << 20, 0);
                        let p = std::fs::canonicalize(&dir)?.join("disk.img");
                        std::fs::write(&p, bytes)?;
                        Some(p)
                    }
                    None => None,
                };
                lab.define_pseries(
                    &domain,
                    &uuid,
                    &net,
                    &mac,
                    s.machine.memory_mib,
                    &serial,
                    &kernel,
                    &netboot,
                    disk.as_deref(),
                )?;
            } else {
                lab.define_uefi(&domain, &net, &mac, s.machine.memory_mib, &serial)?;
            }
            (net, bmc_url)
        };
        let id = lab
            .lock()
            .map_err(|_| anyhow!("lab lock"))?
            .conn()
            .lookup_domain_by_name(&domain)?
            .uuid_string()?;
        let ns = lab.lock().map_err(|_| anyhow!("lab lock"))?.ns.clone();
        let emu = start_emulator(opts, &domain, &s.emulator, &dir, ironic.then_some(&ns))?;
        let limit = Duration::from_secs(s.timeout_secs);
        let mut ironic_service = None;
        let mut expected_error = None;
        let mut dhcp_problems = Vec::new();
        let t = Instant::now();
        let seen = if let (Some(l), Some(node)) = (&layout, &s.ironic) {
            let svc = crate::ironic::Ironic::start(&ns, opts.ironic_venv.as_deref(), l)?;
            let mut args = vec![
                "enroll".to_string(),
                "--name".into(),
                domain.clone(),
                "--bmc".into(),
                emu.url.clone(),
                "--system".into(),
                id.clone(),
                "--mac".into(),
                mac.clone(),
                "--boot-interface".into(),
                node.boot_interface.clone(),
            ];
            for (k, v) in &node.properties {
                args.extend(["--property".into(), format!("{k}={v}")]);
            }
            svc.node(&strs(&args), Duration::from_secs(300))?;
            let t = Instant::now();
            let deployed = svc.node(&strs(&deploy_args(&domain, &node.instance, l)), limit);
            // What Ironic's DHCP provider wrote, as the scenario says it must.
            let opts = read_all(&l.optsdir());
            for want in &node.dhcp_opts_contain {
                if !opts.contains(want.as_str()) {
                    dhcp_problems.push(format!(
                        "Ironic's DHCP options ({}) lack {want:?}",
                        l.optsdir().display()
                    ));
                }
            }
            let seen = match (deployed, &node.expect_error) {
                (Ok(_), None) => watch(&serial, &serial_checks, &failure_checks, limit, t),
                (Err(e), Some(want)) if format!("{e:#}").contains(want.as_str()) => {
                    expected_error = Some(format!("{e:#}"));
                    Watch::Seen(t.elapsed())
                }
                (Err(e), _) => Watch::Driver(format!("{e:#}")),
                (Ok(_), Some(want)) => Watch::Driver(format!(
                    "the node became active, but this scenario expects Ironic to fail with {want:?}"
                )),
            };
            ironic_service = Some(svc);
            seen
        } else {
            let boot = s
                .boot
                .as_ref()
                .ok_or_else(|| anyhow!("scenario without [boot]"))?;
            let bmc = Bmc {
                url: emu.url.clone(),
                system: id.clone(),
                python: opts.python.clone(),
            };
            let bmc_side =
                boot.method == Method::VirtualMedia || s.emulator.http_boot == HttpBoot::Vmedia;
            let uri = boot.uri.as_ref().map(|u| {
                if bmc_side {
                    format!("{bmc_url}/{u}")
                } else {
                    format!("{}/{u}", net.boot_url())
                }
            });
            let bios = boot
                .bios
                .iter()
                .map(|(k, v)| (k.clone(), v.replace("{uri}", uri.as_deref().unwrap_or(""))))
                .collect();
            let req = BootRequest {
                method: boot.method,
                uri,
                enabled: boot.enabled,
                bios,
                with_mode: boot.with_mode,
            };
            bmc.boot(driver, &req)?;
            watch(&serial, &serial_checks, &failure_checks, limit, t)
        };
        let bmc = Bmc {
            url: emu.url.clone(),
            system: id,
            python: opts.python.clone(),
        };
        let mut problems = dhcp_problems;
        let to_marker = match (&seen, s.expect) {
            (Watch::Seen(d), Outcome::Pass) => Some(*d),
            (Watch::Seen(_), Outcome::Fail) => {
                problems
                    .push("the boot succeeded, but this scenario expects it to fail".to_string());
                None
            }
            (Watch::Failed(f), Outcome::Pass) => {
                problems.push(format!("the firmware reported {f:?}"));
                None
            }
            (Watch::Failed(_), Outcome::Fail) => Some(t.elapsed()),
            (Watch::TimedOut(why) | Watch::Driver(why), _) => {
                problems.push(why.clone());
                None
            }
        };
        // When Ironic failed before the machine booted, that is the news.
        let booted = !matches!(seen, Watch::Driver(_)) && expected_error.is_none();
        for r in request_checks.iter().filter(|_| booted) {
            if count(&dir.join("http.log"), r) == 0 {
                problems.push(format!("the boot server never answered {r:?}"));
            }
        }
        for r in s.checks.bmc_requests.iter().filter(|_| booted) {
            if count(&dir.join("bmc-http.log"), r) == 0 {
                problems.push(format!("the BMC never fetched {r:?}"));
            }
        }
        if booted && !s.checks.heartbeat.is_empty() {
            let beats = std::fs::read_to_string(dir.join("heartbeat.log")).unwrap_or_default();
            if beats.trim().is_empty() {
                problems.push("the machine sent no heartbeat".into());
            }
            for line in beats.lines().filter(|l| !l.is_empty()) {
                for want in &s.checks.heartbeat {
                    if !line.contains(want.as_str()) {
                        problems.push(format!("heartbeat {line:?} lacks {want:?}"));
                    }
                }
            }
        }
        if problems.is_empty() {
            for (path, want) in &s.checks.redfish {
                let got = bmc.property(path)?;
                if &got != want {
                    problems.push(format!("Redfish {path} is {got:?}, expected {want:?}"));
                }
            }
        }
        if let (Some(then), true) = (&then_checks, problems.is_empty()) {
            let running = |d: &str| lab.lock().map(|l| l.is_running(d)).unwrap_or(false);
            if wait_until(Duration::from_secs(30), || !running(&domain)).is_none() {
                problems.push("the machine did not power off after its boot".into());
            } else {
                let before: Vec<usize> = then
                    .requests_absent
                    .iter()
                    .map(|r| count(&dir.join("http.log"), r))
                    .collect();
                let t2 = Instant::now();
                bmc.power_on(driver)?;
                match watch(&serial, &then.serial, &[], limit, t2) {
                    Watch::Seen(_) => {}
                    Watch::Failed(f) | Watch::TimedOut(f) | Watch::Driver(f) => {
                        problems.push(format!("second start: {f}"))
                    }
                }
                for (r, b) in then.requests_absent.iter().zip(before) {
                    if count(&dir.join("http.log"), r) > b {
                        problems.push(format!(
                            "second start: the boot server answered {r:?} again"
                        ));
                    }
                }
            }
        }
        if let (Some(svc), Some(node), Some(l)) = (&ironic_service, &s.ironic, &layout) {
            if problems.is_empty() && node.expect_error.is_none() {
                ironic_after_deploy(
                    svc,
                    node,
                    l,
                    &domain,
                    &dir,
                    &serial,
                    &failure_checks,
                    limit,
                    &mut problems,
                );
            }
        }
        if let Some(xml) = lab.lock().ok().and_then(|l| l.domain_xml(&domain)) {
            let _ = std::fs::write(dir.join("domain.xml"), xml);
        }
        let ok = problems.is_empty();
        let detail = if ok {
            match seen {
                _ if expected_error.is_some() => {
                    format!("failed as expected: {}", expected_error.unwrap_or_default())
                }
                Watch::Failed(f) => format!("failed as expected: {f:?}"),
                _ => "booted as expected".into(),
            }
        } else {
            problems.join("; ")
        };
        Ok((ok, detail, to_marker))
    })();
    let (passed, detail, to_marker) = outcome.unwrap_or_else(|e| (false, format!("{e:#}"), None));
    let artifacts = if passed && !opts.keep_passed {
        let _ = std::fs::remove_dir_all(&dir);
        None
    } else {
        Some(dir)
    };
    CaseResult {
        scenario: s.name.clone(),
        driver,
        passed,
        detail,
        elapsed: start.elapsed(),
        to_marker,
        artifacts,
    }
}

/// The text of every file in `dir`, in name order (empty when none).
fn read_all(dir: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `ironic_node.py deploy` for node `name` with `instance` (rendered).
fn deploy_args(
    name: &str,
    instance: &std::collections::BTreeMap<String, String>,
    l: &crate::ironic::Layout,
) -> Vec<String> {
    let mut args = vec!["deploy".to_string(), "--name".into(), name.to_string()];
    for (k, v) in instance {
        args.extend([
            "--instance".into(),
            format!("{k}={}", crate::ironic::render(v, l)),
        ]);
    }
    args
}

/// After a deploy that booted as expected: undeploy (back to
/// `available`), then the switch to another boot interface and its deploy
/// when the scenario asks for one.
#[allow(clippy::too_many_arguments)]
fn ironic_after_deploy(
    svc: &crate::ironic::Ironic,
    node: &crate::scenario::IronicNode,
    l: &crate::ironic::Layout,
    domain: &str,
    dir: &Path,
    serial: &Path,
    failure: &[String],
    limit: Duration,
    problems: &mut Vec<String>,
) {
    let undeploy = ["undeploy", "--name", domain];
    if let Err(e) = svc.node(&undeploy, limit) {
        problems.push(format!("undeploy: {e:#}"));
        return;
    }
    let Some(sw) = &node.switch else { return };
    let set = [
        "set-boot-interface",
        "--name",
        domain,
        "--boot-interface",
        sw.boot_interface.as_str(),
    ];
    if let Err(e) = svc.node(&set, limit) {
        problems.push(format!("switching to {}: {e:#}", sw.boot_interface));
        return;
    }
    let log = dir.join("http.log");
    let before: Vec<usize> = sw.requests.iter().map(|r| count(&log, r)).collect();
    let t = Instant::now();
    if let Err(e) = svc.node(&strs(&deploy_args(domain, &sw.instance, l)), limit) {
        problems.push(format!("deploy through {}: {e:#}", sw.boot_interface));
        return;
    }
    // libvirt opens a file serial port without append: the second boot's
    // log starts empty, so nothing of the first boot matches here.
    match watch(serial, &sw.serial, failure, limit, t) {
        Watch::Seen(_) => {}
        Watch::Failed(f) => problems.push(format!(
            "deploy through {}: the machine reported {f:?}",
            sw.boot_interface
        )),
        Watch::TimedOut(f) | Watch::Driver(f) => {
            problems.push(format!("deploy through {}: {f}", sw.boot_interface))
        }
    }
    for (r, b) in sw.requests.iter().zip(before) {
        if count(&log, r) <= b {
            problems.push(format!(
                "deploy through {}: the boot server never answered {r:?}",
                sw.boot_interface
            ));
        }
    }
    if problems.is_empty() {
        if let Err(e) = svc.node(&undeploy, limit) {
            problems.push(format!("second undeploy: {e:#}"));
        }
    }
}

/// The libvirt domain of case number `index` of scenario `name`.
fn domain_name(index: u8, name: &str) -> String {
    format!("shoal-{index}-{name}")
}

/// Network indexes for second attempts (cases use 1 to 250).
static SPARE_INDEX: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(251);

/// Why a failed case stopped in the emulated platform rather than in
/// anything Shoal or the scenario does: the guest kernel hung in kexec's
/// switchover (before purgatory ran), which QEMU's TCG pseries does now and
/// then.
fn platform_stop(r: &CaseResult) -> Option<&'static str> {
    if r.passed {
        return None;
    }
    let serial = std::fs::read(r.artifacts.as_ref()?.join("serial.log")).ok()?;
    let text = String::from_utf8_lossy(&serial);
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    last.contains("kexec: Starting switchover sequence")
        .then_some(
            "hung in the guest kernel's kexec switchover, before purgatory (a QEMU TCG hang)",
        )
}

/// Runs a case once more on a spare network, keeping the first attempt's
/// artifacts beside; the result says both.
fn run_again(
    lab: &Mutex<Lab>,
    opts: &Options,
    s: &Scenario,
    d: Driver,
    first_index: u8,
    first: CaseResult,
    why: &str,
) -> CaseResult {
    let index = SPARE_INDEX.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let Some(dir) = first.artifacts.clone().filter(|_| index >= 251) else {
        return first;
    };
    // The hung machine goes first: it holds its serial log open.
    if let Ok(l) = lab.lock() {
        l.power_off(&domain_name(first_index, &s.name));
    }
    let kept = dir.with_file_name(format!("{}-{}-first-attempt", s.name, d.name()));
    let _ = std::fs::remove_dir_all(&kept);
    if std::fs::rename(&dir, &kept).is_err() {
        return first;
    }
    eprintln!(
        "{} ({}): the first attempt {why}; running it once more (artifacts of the first: {})",
        s.name,
        d.name(),
        kept.display()
    );
    let mut again = run_case(lab, opts, s, d, index);
    again.detail = format!(
        "{} (second attempt; the first {why}: {})",
        again.detail,
        kept.display()
    );
    again.elapsed += first.elapsed;
    again
}

/// Runs every (scenario, driver) case; returns the results in case order.
pub fn run(scenarios: &[Scenario], opts: &Options) -> Result<Vec<CaseResult>> {
    let cases: Vec<(usize, &Scenario, Driver)> = scenarios
        .iter()
        .flat_map(|s| s.drivers.iter().map(move |d| (s, *d)))
        .enumerate()
        .map(|(i, (s, d))| (i, s, d))
        .collect();
    if cases.len() > 250 {
        bail!(
            "{} cases: at most 250 per run (one /24 network each)",
            cases.len()
        );
    }
    std::fs::create_dir_all(&opts.artifacts)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let _guard = rt.enter();
    let lab = Arc::new(Mutex::new(Lab::start(&opts.artifacts.join("lab"))?));
    // Ctrl-C or SIGTERM: tear the lab down (VMs, networks, daemons,
    // namespace) before leaving, whatever the cases are doing.
    let on_signal = lab.clone();
    rt.spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
        }
        eprintln!("interrupted: stopping the lab");
        crate::ironic::stop_all();
        if let Ok(mut l) = on_signal.lock() {
            l.stop();
        }
        std::process::exit(130);
    });
    let total = cases.len();
    // The slow cases start first, so that the run does not end with one job
    // working through a long case alone: slow as the last run on this
    // machine measured, else as a long timeout suggests. Cases keep their
    // numbers, and the summary their order.
    let times = CaseTimes::load();
    let mut cases = cases;
    cases.sort_by_key(|(_, s, d)| {
        std::cmp::Reverse(
            times
                .expected(&s.name, *d)
                .unwrap_or(s.timeout_secs as f64 / 2.0) as u64,
        )
    });
    let queue = Arc::new(Mutex::new(cases.into_iter()));
    let results = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            let (queue, results, lab, handle) = (
                queue.clone(),
                results.clone(),
                lab.clone(),
                rt.handle().clone(),
            );
            scope.spawn(move || {
                let _g = handle.enter();
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some((i, s, d)) = next else { break };
                    eprintln!("[{}/{total}] {} ({}) ...", i + 1, s.name, d.name());
                    let mut r = run_case(&lab, opts, s, d, (i + 1) as u8);
                    if let Some(why) = platform_stop(&r) {
                        r = run_again(&lab, opts, s, d, (i + 1) as u8, r, why);
                    }
                    eprintln!(
                        "[{}/{total}] {} ({}) {} in {:.1} s: {}{}",
                        i + 1,
                        s.name,
                        d.name(),
                        if r.passed { "PASS" } else { "FAIL" },
                        r.elapsed.as_secs_f64(),
                        r.detail,
                        r.artifacts
                            .as_ref()
                            .filter(|_| !r.passed)
                            .map(|p| format!(" (artifacts: {})", p.display()))
                            .unwrap_or_default()
                    );
                    results.lock().expect("results").push((i, r));
                }
            });
        }
    });
    drop(lab);
    let mut results = Arc::try_unwrap(results)
        .map_err(|_| anyhow!("results still shared"))?
        .into_inner()
        .map_err(|_| anyhow!("results lock"))?;
    results.sort_by_key(|(i, _)| *i);
    let results: Vec<CaseResult> = results.into_iter().map(|(_, r)| r).collect();
    times.save(&results);
    Ok(results)
}

/// How long each case took when it last ran on this machine, kept beside
/// the image cache (`$SHOAL_CACHE/case-times.tsv`: scenario, driver,
/// seconds). Only for ordering: a missing or unreadable file changes
/// nothing but the order.
struct CaseTimes(std::collections::BTreeMap<(String, String), f64>);

impl CaseTimes {
    fn path() -> PathBuf {
        crate::images::cache_root().with_file_name("case-times.tsv")
    }

    fn load() -> CaseTimes {
        let text = std::fs::read_to_string(Self::path()).unwrap_or_default();
        CaseTimes(
            text.lines()
                .filter_map(|l| {
                    let mut f = l.split('\t');
                    let (s, d, t) = (f.next()?, f.next()?, f.next()?.parse().ok()?);
                    Some(((s.to_string(), d.to_string()), t))
                })
                .collect(),
        )
    }

    fn expected(&self, scenario: &str, driver: Driver) -> Option<f64> {
        self.0
            .get(&(scenario.to_string(), driver.name().to_string()))
            .copied()
    }

    fn save(mut self, results: &[CaseResult]) {
        for r in results {
            self.0.insert(
                (r.scenario.clone(), r.driver.name().to_string()),
                r.elapsed.as_secs_f64(),
            );
        }
        let text: String = self
            .0
            .iter()
            .map(|((s, d), t)| format!("{s}\t{d}\t{t:.1}\n"))
            .collect();
        let path = Self::path();
        let _ = std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")));
        let _ = std::fs::write(path, text);
    }
}

/// The readable summary, ending with the `N passed, M failed` line.
pub fn summary(results: &[CaseResult]) -> String {
    let mut out = format!(
        "{:<42} {:<16} {:<6} {:>8} {:>10}\n",
        "scenario", "driver", "result", "total", "to marker"
    );
    for r in results {
        out.push_str(&format!(
            "{:<42} {:<16} {:<6} {:>7.1}s {:>10}\n",
            r.scenario,
            r.driver.name(),
            if r.passed { "PASS" } else { "FAIL" },
            r.elapsed.as_secs_f64(),
            r.to_marker
                .map(|d| format!("{:.1}s", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into())
        ));
    }
    let passed = results.iter().filter(|r| r.passed).count();
    out.push_str(&format!(
        "{} passed, {} failed\n",
        passed,
        results.len() - passed
    ));
    out
}

/// JUnit XML for CI systems.
pub fn junit(results: &[CaseResult]) -> String {
    crate::junit::Suite {
        name: "shoal-harness",
        time: Some(results.iter().map(|r| r.elapsed.as_secs_f64()).sum()),
        cases: results
            .iter()
            .map(|r| crate::junit::Case {
                classname: format!("scenarios.{}", r.scenario),
                name: r.driver.name().to_string(),
                time: r.elapsed.as_secs_f64(),
                failure: (!r.passed).then(|| {
                    let art = r
                        .artifacts
                        .as_ref()
                        .map(|p| format!(" (artifacts: {})", p.display()))
                        .unwrap_or_default();
                    crate::junit::Failure {
                        message: format!("{}{art}", r.detail),
                        text: None,
                    }
                }),
            })
            .collect(),
    }
    .to_xml()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_hang_in_the_kexec_switchover_counts_as_the_platform_s() {
        let dir = tempfile::tempdir().unwrap();
        let result = |passed: bool| CaseResult {
            scenario: "s".into(),
            driver: Driver::Sushy,
            passed,
            detail: String::new(),
            elapsed: Duration::ZERO,
            to_marker: None,
            artifacts: Some(dir.path().to_path_buf()),
        };
        let serial = dir.path().join("serial.log");
        std::fs::write(&serial, "petitboot: kexec -e\n[ 11.4] kexec_core: Starting new kernel\n[ 11.5] kexec: Starting switchover sequence.\n\n").unwrap();
        assert!(platform_stop(&result(false)).is_some());
        assert!(platform_stop(&result(true)).is_none(), "a pass is a pass");
        std::fs::write(&serial, "[ 11.5] kexec: Starting switchover sequence.\nI'm in purgatory\n[ 0.0] Linux version\n").unwrap();
        assert!(
            platform_stop(&result(false)).is_none(),
            "purgatory ran: not that hang"
        );
        std::fs::write(&serial, "petitboot: download failed: x\n").unwrap();
        assert!(platform_stop(&result(false)).is_none());
    }

    #[test]
    fn case_times_are_kept_per_scenario_and_driver() {
        // nextest runs each test in a process of its own: the variable is ours.
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("SHOAL_CACHE", dir.path());
        assert_eq!(CaseTimes::load().expected("a", Driver::Sushy), None);
        let mut slow = r("a", true);
        slow.elapsed = Duration::from_millis(81_240);
        CaseTimes::load().save(&[slow, r("b", false)]);
        let t = CaseTimes::load();
        assert_eq!(t.expected("a", Driver::Sushy), Some(81.2));
        assert_eq!(t.expected("a", Driver::IronicSequence), None);
        assert!(t.expected("b", Driver::Sushy).is_some());
        assert!(dir.path().join("case-times.tsv").exists());
    }

    fn r(name: &str, passed: bool) -> CaseResult {
        CaseResult {
            scenario: name.into(),
            driver: Driver::Sushy,
            passed,
            detail: "the firmware reported \"404 <Not Found>\"".into(),
            elapsed: Duration::from_millis(1500),
            to_marker: passed.then_some(Duration::from_secs(1)),
            artifacts: (!passed).then(|| PathBuf::from("/tmp/a")),
        }
    }

    #[test]
    fn reports() {
        let rs = [r("a", true), r("b", false)];
        let s = summary(&rs);
        assert!(s.ends_with("1 passed, 1 failed\n"), "{s}");
        let j = junit(&rs);
        assert!(j.contains("tests=\"2\" failures=\"1\""));
        assert!(
            j.contains("&quot;404 &lt;Not Found&gt;&quot; (artifacts: /tmp/a)"),
            "{j}"
        );
    }

    #[test]
    fn request_checks_match_whole_paths_or_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("http.log");
        std::fs::write(
            &log,
            "GET /redfish/boot-3f2a.iso 200 1024\nGET /deploy.iso 200 9\n",
        )
        .unwrap();
        assert_eq!(count(&log, "GET /deploy.iso"), 1);
        assert_eq!(count(&log, "GET /deploy"), 0, "a path is matched whole");
        assert_eq!(count(&log, "GET /redfish/boot-*"), 1);
        assert_eq!(count(&log, "HEAD /redfish/boot-*"), 0);
    }

    #[test]
    fn watch_finds_lines_in_order_and_failures() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("serial");
        std::fs::write(&p, "b then a then c").unwrap();
        let exp = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches!(
            watch(&p, &exp(&["a", "c"]), &[], Duration::ZERO, Instant::now()),
            Watch::Seen(_)
        ));
        assert!(matches!(
            watch(&p, &exp(&["c", "a"]), &[], Duration::ZERO, Instant::now()),
            Watch::TimedOut(_)
        ));
        assert!(matches!(
            watch(
                &p,
                &exp(&["z"]),
                &exp(&["then"]),
                Duration::ZERO,
                Instant::now()
            ),
            Watch::Failed(_)
        ));
    }
}
