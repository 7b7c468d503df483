//! A case's drive: what asks for the boot once the machine and its BMC are
//! up. Either a driver asks the BMC (`sushy`, `ironic-sequence`: the
//! scenario's `[boot]` as a `BootRequest`), or Ironic itself enrolls and
//! deploys the node (`ironic`), with the checks of what its DHCP provider
//! wrote; after a good deploy, the undeploy and the boot-interface switch
//! the scenario asks for.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::checks::{count, watch, Watch};
use super::prepare::Prepared;
use super::Options;
use crate::driver::BootRequest;
use crate::ironic::{Ironic, Layout};
use crate::scenario::{Driver, HttpBoot, IronicDriver, IronicNode, Method, Scenario};

/// What the drive left for the judgement.
pub(super) struct Drive {
    /// When the drive began (before Ironic starts, for the `ironic` driver).
    pub started: Instant,
    /// What the serial port showed (or the driver's failure).
    pub seen: Watch,
    /// Ironic's error, when the scenario expects it and it came.
    pub expected_error: Option<String>,
    pub problems: Vec<String>,
    /// The case's Ironic, kept running for the undeploy.
    pub ironic: Option<Ironic>,
}

/// Has the case's driver ask for the boot and watches the serial port.
pub(super) fn drive(
    opts: &Options,
    s: &Scenario,
    driver: Driver,
    case: &Prepared,
) -> Result<Drive> {
    let started = Instant::now();
    if let (Some(l), Some(node)) = (&case.layout, &s.ironic) {
        return ironic_deploy(opts, node, l, case, started);
    }
    let boot = s
        .boot
        .as_ref()
        .ok_or_else(|| anyhow!("scenario without [boot]"))?;
    let bmc_side = boot.method == Method::VirtualMedia || s.emulator.http_boot == HttpBoot::Vmedia;
    let uri = boot.uri.as_ref().map(|u| {
        if bmc_side {
            format!("{}/{u}", case.bmc_url)
        } else if s.https.is_some() {
            format!("{}/{u}", case.net.boot_url_tls())
        } else {
            format!("{}/{u}", case.net.boot_url())
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
        mailbox: boot.mailbox.clone(),
        lock_flags: boot.lock_flags,
        enroll: case.enroll.clone(),
    };
    case.bmc.boot(driver, &req)?;
    let p = &case.patterns;
    Ok(Drive {
        started,
        seen: watch(&case.serial, &p.serial, &p.failure, case.limit, started),
        expected_error: None,
        problems: Vec::new(),
        ironic: None,
    })
}

/// Starts the case's Ironic, enrolls the machine and deploys it; checks
/// what Ironic's DHCP provider wrote, as the scenario says it must.
fn ironic_deploy(
    opts: &Options,
    node: &IronicNode,
    l: &Layout,
    case: &Prepared,
    started: Instant,
) -> Result<Drive> {
    if let Some(pem) = &case.enroll {
        // The emulator listens in the lab's namespace, where Ironic is.
        let (bmc, pem) = (case.bmc.clone(), pem.clone());
        crate::netns::inside(&case.ns, move || bmc.enroll_ca(&pem))
            .context("enrolling the CA in the BMC's Boot.Certificates")?;
    }
    let svc = Ironic::start(&case.ns, opts.ironic_venv.as_deref(), l)?;
    let mut args = vec![
        "enroll".to_string(),
        "--name".into(),
        case.domain.clone(),
        "--bmc".into(),
        case.bmc.url.clone(),
        "--system".into(),
        case.bmc.system.clone(),
        "--mac".into(),
        case.mac.clone(),
        "--boot-interface".into(),
        node.boot_interface.clone(),
        "--driver".into(),
        node.driver.as_str().into(),
    ];
    if node.driver == IronicDriver::Ipmi || !node.console.is_empty() {
        // The emulator's IPMI listener shares its Redfish address.
        let host = url_host(&case.bmc.url)?;
        args.extend([
            "--ipmi-address".into(),
            host,
            "--ipmi-port".into(),
            case.ipmi_port.to_string(),
        ]);
    }
    if !node.console.is_empty() {
        args.extend(["--console-port".into(), l.console_port.to_string()]);
    }
    for (k, v) in &node.properties {
        args.extend(["--property".into(), format!("{k}={v}")]);
    }
    svc.node(&strs(&args), Duration::from_secs(300))?;
    let t = Instant::now();
    let deployed = svc.node(
        &strs(&deploy_args(&case.domain, &node.instance, l)),
        case.limit,
    );
    let mut problems = Vec::new();
    // The node's console, enabled at enrollment, is read once the node is
    // active: Ironic stops it during the deploy and starts it again at its
    // end (the instance's console, never the deploy's), before the
    // firmware prints its first line.
    let console_log = case.dir.join("console.log");
    let console = match (&deployed, node.console.is_empty()) {
        (Ok(_), false) => match svc.console(&case.domain, &console_log, case.limit * 2) {
            Ok(reader) => Some(reader),
            Err(e) => {
                problems.push(format!("the node's console: {e:#}"));
                None
            }
        },
        _ => None,
    };
    let written = read_all(&l.optsdir());
    for want in &node.dhcp_opts_contain {
        if !written.contains(want.as_str()) {
            problems.push(format!(
                "Ironic's DHCP options ({}) lack {want:?}",
                l.optsdir().display()
            ));
        }
    }
    let mut expected_error = None;
    let p = &case.patterns;
    let seen = match (deployed, &node.expect_error) {
        (Ok(_), None) => watch(&case.serial, &p.serial, &p.failure, case.limit, t),
        (Err(e), Some(want)) if format!("{e:#}").contains(want.as_str()) => {
            expected_error = Some(format!("{e:#}"));
            Watch::Seen(t.elapsed())
        }
        (Err(e), _) => Watch::Driver(format!("{e:#}")),
        (Ok(_), Some(want)) => Watch::Driver(format!(
            "the node became active, but this scenario expects Ironic to fail with {want:?}"
        )),
    };
    if let (Some(reader), Watch::Seen(_)) = (console, &seen) {
        // The console carries what the serial port showed, a moment later.
        let grace = Duration::from_secs(30);
        match watch(&console_log, &node.console, &[], grace, Instant::now()) {
            Watch::Seen(_) => {}
            _ => problems.push(format!(
                "the node's console ({}) did not show {:?} in order",
                console_log.display(),
                node.console
            )),
        }
        drop(reader);
    }
    Ok(Drive {
        started,
        seen,
        expected_error,
        problems,
        ironic: Some(svc),
    })
}

/// The host of a base URL (`https://127.0.0.1:40123` → `127.0.0.1`).
pub(super) fn url_host(url: &str) -> Result<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        bail!("no host in the emulator's URL {url:?}");
    }
    Ok(host.to_string())
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
fn deploy_args(name: &str, instance: &BTreeMap<String, String>, l: &Layout) -> Vec<String> {
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
pub(super) fn after_deploy(
    svc: &Ironic,
    node: &IronicNode,
    l: &Layout,
    case: &Prepared,
    problems: &mut Vec<String>,
) {
    let (domain, limit) = (case.domain.as_str(), case.limit);
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
    let log = case.dir.join("http.log");
    let before: Vec<usize> = sw.requests.iter().map(|r| count(&log, r)).collect();
    let t = Instant::now();
    if let Err(e) = svc.node(&strs(&deploy_args(domain, &sw.instance, l)), limit) {
        problems.push(format!("deploy through {}: {e:#}", sw.boot_interface));
        return;
    }
    // The serial log is opened without append (`append="off"`): the second boot's
    // log starts empty, so nothing of the first boot matches here.
    match watch(&case.serial, &sw.serial, &case.patterns.failure, limit, t) {
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

#[cfg(test)]
mod tests {
    use super::url_host;

    #[test]
    fn the_ipmi_host_is_the_redfish_urls() {
        assert_eq!(url_host("https://127.0.0.1:40123").unwrap(), "127.0.0.1");
        assert_eq!(
            url_host("http://[fd00::1]:8000/redfish").unwrap(),
            "fd00::1"
        );
        assert_eq!(url_host("http://bmc.example").unwrap(), "bmc.example");
        assert!(url_host("http://:80").is_err());
    }
}
