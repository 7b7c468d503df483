//! A case's drive: what asks for the boot once the machine and its BMC are
//! up. Either a driver asks the BMC (`sushy`, `ironic-sequence`: the
//! scenario's `[boot]` as a `BootRequest`), or Ironic itself enrolls and
//! deploys the node (`ironic`), with the checks of what its DHCP provider
//! wrote; after a good deploy, the undeploy and the boot-interface switch
//! the scenario asks for.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::bmc::url_host;
use super::events::Subscribers;
use super::inspection::inspected;
use super::logs::{watch, Watch};
use super::options::Options;
use super::prepare::Prepared;
use crate::driver::BootRequest;
use crate::ironic::{deploy_args, Ironic, Layout};
use crate::scenario::{Driver, HttpBoot, IronicDriver, IronicNode, Machine, Method, Scenario};

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
    /// The BMC's event subscribers (`checks.events`, `[events]`).
    pub subscribers: Option<Subscribers>,
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
        return ironic_deploy(opts, node, &s.machine, l, case, started);
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
        eject_after: boot
            .eject_after_heartbeat
            .then(|| case.dir.join("heartbeat.log")),
        // The BMC fetches it, as it fetches virtual media.
        firmware_update: boot
            .firmware_update
            .as_ref()
            .map(|f| format!("{}/{f}", case.bmc_url)),
    };
    let subscribers = super::events::subscribe(s, case)?;
    case.bmc.boot(driver, &req)?;
    let p = &case.patterns;
    Ok(Drive {
        started,
        seen: watch(&case.serial, &p.serial, &p.failure, case.limit, started),
        expected_error: None,
        problems: Vec::new(),
        ironic: None,
        subscribers,
    })
}

/// Starts the case's Ironic, enrolls the machine and deploys it; checks
/// what Ironic's DHCP provider wrote, as the scenario says it must.
fn ironic_deploy(
    opts: &Options,
    node: &IronicNode,
    machine: &Machine,
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
    let svc = Ironic::start(&case.ns, ironic_venv(opts, node)?, l)?;
    let args = enroll_args(node, l, case)?;
    let enrolled = match svc.node(&args, enroll_limit(node, case)) {
        Ok(e) => e,
        // A manual cleaning that must fail (a firmware update the BMC
        // fails): Ironic's error is the outcome; nothing is deployed.
        Err(e) if expected(node, &e) && !node.clean_steps.is_empty() => {
            return Ok(Drive {
                seen: Watch::Seen(started.elapsed()),
                expected_error: Some(format!("{e:#}")),
                started,
                problems: Vec::new(),
                ironic: Some(svc),
                subscribers: None,
            });
        }
        Err(e) => return Err(e),
    };
    let mut problems = inspected(&enrolled, node, machine, &case.mac);
    let t = Instant::now();
    let deployed = svc.node(&deploy_args(&case.domain, &node.instance, l)?, case.limit);
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
        (Err(e), Some(_)) if expected(node, &e) => {
            expected_error = Some(format!("{e:#}"));
            Watch::Seen(t.elapsed())
        }
        (Err(e), _) => Watch::Driver(format!("{e:#}")),
        (Ok(_), Some(want)) => Watch::Driver(format!(
            "the node became active, but this scenario expects Ironic to fail with {want:?}"
        )),
    };
    if let (Some(reader), Watch::Seen(_)) = (console, &seen) {
        console_shows(node, &console_log, &mut problems);
        drop(reader);
    }
    Ok(Drive {
        started,
        seen,
        expected_error,
        problems,
        ironic: Some(svc),
        subscribers: None,
    })
}

/// Whether `e` is the Ironic error the scenario expects.
fn expected(node: &IronicNode, e: &anyhow::Error) -> bool {
    node.expect_error
        .as_ref()
        .is_some_and(|want| format!("{e:#}").contains(want.as_str()))
}

/// The venv of the Ironic the node needs: Ironic 35 for the ilo5 type.
fn ironic_venv<'a>(opts: &'a Options, node: &IronicNode) -> Result<Option<&'a Path>> {
    Ok(match node.driver.ironic35() {
        true => Some(opts.ironic35_venv.as_deref().ok_or_else(|| {
            anyhow!("the {} hardware type needs Ironic 35 (--ironic35-venv or SHOAL_IRONIC35_VENV; ci/test builds it)", node.driver.as_str())
        })?),
        false => opts.ironic_venv.as_deref(),
    })
}

/// `ironic_node.py enroll` for the case's machine: the BMC (Redfish,
/// IPMI, iLO), the node's properties, interfaces, driver_info, inspection,
/// clean steps and RAID target.
fn enroll_args(node: &IronicNode, l: &Layout, case: &Prepared) -> Result<Vec<String>> {
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
    if node.driver == IronicDriver::Ilo5 {
        // proliantutils takes the iLO's address with its port; the BMC's
        // certificate is the run CA's.
        let host = case.bmc.url.strip_prefix("https://").ok_or_else(|| {
            anyhow!(
                "the ilo5 hardware type speaks HTTPS; the BMC is at {}",
                case.bmc.url
            )
        })?;
        let ca = std::fs::canonicalize(case.dir.join("bmc-tls").join("run-ca.pem"))?;
        args.extend([
            "--ilo-address".into(),
            host.trim_end_matches('/').to_string(),
            "--ilo-verify-ca".into(),
            ca.display().to_string(),
        ]);
    }
    for (k, v) in &node.properties {
        args.extend(["--property".into(), format!("{k}={v}")]);
    }
    args.extend([
        "--deploy-interface".into(),
        node.deploy_interface.as_str().into(),
    ]);
    for (k, v) in &node.driver_info {
        args.extend([
            "--driver-info".into(),
            format!("{k}={}", crate::ironic::render(v, l)?),
        ]);
    }
    for how in &node.inspect {
        args.extend(["--inspect".into(), how.clone()]);
    }
    for step in &node.clean_steps {
        let mut json = serde_json::to_value(step)?;
        crate::ironic::render_json(&mut json, l)?;
        args.extend(["--clean-step".into(), json.to_string()]);
    }
    if node.updates_firmware() {
        args.extend(["--firmware-interface".into(), "redfish".into()]);
    }
    for (component, version) in &node.firmware {
        args.extend(["--firmware-expect".into(), format!("{component}={version}")]);
    }
    if let Some(t) = &node.target_raid_config {
        let raid = match node.driver {
            crate::scenario::IronicDriver::Idrac => "idrac-redfish",
            _ => "redfish",
        };
        args.extend([
            "--raid-interface".into(),
            raid.into(),
            "--target-raid-config".into(),
            serde_json::to_string(t)?,
        ]);
    }
    if let Some(d) = &node.subscribe {
        args.extend(["--subscribe".into(), crate::ironic::render(d, l)?]);
    }
    Ok(args)
}

/// How long the enrollment may take.
fn enroll_limit(node: &IronicNode, case: &Prepared) -> Duration {
    // Cleaning at `provide` and agent inspection boot the agent: as long
    // as a deploy may take, each.
    let boots =
        u32::from(node.cleaning) + node.inspect.iter().filter(|i| *i == "agent").count() as u32;
    (match boots {
        0 => Duration::from_secs(300),
        n => case.limit * n,
    }) + case.limit * u32::from(!node.clean_steps.is_empty())
}

/// Whether the node's console (copied into `console_log`) showed the
/// scenario's lines in order, once the serial port did.
fn console_shows(node: &IronicNode, console_log: &Path, problems: &mut Vec<String>) {
    // The console carries what the serial port showed, a moment later.
    let grace = Duration::from_secs(30);
    match watch(console_log, &node.console, &[], grace, Instant::now()) {
        Watch::Seen(_) => {}
        _ => problems.push(format!(
            "the node's console ({}) did not show {:?} in order",
            console_log.display(),
            node.console
        )),
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
