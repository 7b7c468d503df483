//! Runs scenarios end to end in one lab: per case (a scenario with one
//! driver) its own network, boot servers, domain and emulator process;
//! several cases in parallel (`--jobs`). Reports progress as it goes, a
//! summary table with time-to-marker, JUnit XML, and keeps the artifact
//! folder of every failed case (serial log, emulator log, HTTP logs, DHCP
//! log, domain XML).
//!
//! A case goes through [`prepare`] (images, network, machine, emulator),
//! [`drive`] (a driver asks the BMC, or Ironic deploys), [`checks`] (the
//! serial port and what the scenario asks to be seen), then [`report`]
//! (summary, JUnit, case times); [`platform`] names the one known platform
//! hang in a failure's detail (the case still fails).
//!
//! Beneath the stages: [`machine`] (boot files, the domain) and [`bmc`]
//! (the emulator) for `prepare`; [`inspection`] for the drive's Ironic
//! enrollment; [`after_deploy`] (Ironic's rebuild, undeploy and boot-
//! interface switch) for the judge; [`logs`] (the serial watch, request
//! counts) and [`options`] for all. A case's data flows one way, and so
//! do the imports: `Prepared` to the drive, `Drive` to the judge, and
//! nothing back; the modules of `runner` form no cycle.

mod access;
mod after_deploy;
mod bmc;
mod checks;
mod drive;
mod events;
mod inspection;
mod logs;
mod machine;
mod options;
mod platform;
mod prepare;
mod report;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use crate::lab::Lab;
use crate::lock;
use crate::scenario::{Driver, Scenario};
pub use machine::prebuild;
pub use options::{use_driver_sources, Options};
use platform::platform_stop;
use report::CaseTimes;
pub use report::{junit, summary, CaseResult};

/// Runs one case; `index` picks its network (198.18.index.0/24). Its
/// artifact folder is kept when it failed (or with `--keep-passed`).
fn run_case(
    lab: &Mutex<Lab>,
    opts: &Options,
    s: &Scenario,
    driver: Driver,
    index: u8,
) -> CaseResult {
    let dir = opts.artifacts.join(format!("{}-{}", s.name, driver.name()));
    let start = Instant::now();
    let verdict = prepare::prepare(lab, opts, s, driver, index, &dir).and_then(|case| {
        let verdict = drive::drive(opts, s, driver, &case)
            .and_then(|drive| checks::judge(lab, s, driver, &case, drive));
        // The machine ends with its case, while its BMC still runs: one
        // left running (a powernv host whose power-off request reaches a
        // BMC that is gone loops on it, a firmware waits at a prompt)
        // would take a core from the cases after it.
        if let Ok(mut l) = lab.lock() {
            l.stop_domain(&case.domain);
        }
        verdict
    });
    let (passed, detail, to_marker) = match verdict {
        Ok(v) => (v.passed, v.detail, v.to_marker),
        Err(e) => (false, format!("{e:#}"), None),
    };
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

/// The first folder from the root down to `path` that other users cannot
/// search (no `o+x`: Debian's /root, a 0700 home), if any. The case's VMs
/// and DHCP/TFTP server run as libvirt's users and read files below it.
fn closed_to_others(path: &std::path::Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|dir| {
            std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 == 0)
        })
        .map(PathBuf::from)
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
    let artifacts = std::fs::canonicalize(&opts.artifacts)?;
    if let Some(closed) = closed_to_others(&artifacts) {
        bail!(
            "the artifacts folder {} is inside {}, which other users cannot enter; \
             libvirt's QEMU (libvirt-qemu) and dnsmasq (dnsmasq) read each case's disks, \
             media and boot files there: put the checkout (or --artifacts) elsewhere, \
             e.g. under /srv or /var/tmp",
            artifacts.display(),
            closed.display()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let _guard = rt.enter();
    let lab = Arc::new(Mutex::new(Lab::start(&opts.artifacts.join("lab"))?));
    stop_on_signal(&rt, lab.clone());
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
                while let Some((i, s, d)) = queue.lock().ok().and_then(|mut q| q.next()) {
                    let r = run_numbered(&lab, opts, s, d, (i, total));
                    // Poisoned only by a panic in `push`: the results are whole.
                    lock(&results).push((i, r));
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

/// Case number `i` of `total`, with its progress lines; a failure that
/// stopped in the platform says so.
fn run_numbered(
    lab: &Mutex<Lab>,
    opts: &Options,
    s: &Scenario,
    d: Driver,
    (i, total): (usize, usize),
) -> CaseResult {
    eprintln!("[{}/{total}] {} ({}) ...", i + 1, s.name, d.name());
    let mut r = run_case(lab, opts, s, d, (i + 1) as u8);
    if let Some(why) = platform_stop(&r) {
        r.detail = format!("{} (the machine {why})", r.detail);
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
    r
}

/// Ctrl-C or SIGTERM: tear the lab down (VMs, networks, daemons,
/// namespace) before leaving, whatever the cases are doing.
fn stop_on_signal(rt: &tokio::runtime::Runtime, lab: Arc<Mutex<Lab>>) {
    rt.spawn(async move {
        crate::lab::interrupted().await;
        eprintln!("interrupted: stopping the lab");
        crate::ironic::stop_all();
        if let Ok(mut l) = lab.lock() {
            l.stop();
        }
        std::process::exit(130);
    });
}

#[cfg(test)]
mod tests {
    use super::closed_to_others;
    use std::os::unix::fs::PermissionsExt;

    /// A checkout in /root (0700 on Debian) was seen in a fresh root: every
    /// VM case failed on "Permission denied" from QEMU or dnsmasq.
    #[test]
    fn a_folder_others_cannot_enter_is_found_on_the_way() {
        let top = tempfile::tempdir().unwrap();
        let home = top.path().join("home");
        let inner = home.join("shoal/shoal-artifacts");
        std::fs::create_dir_all(&inner).unwrap();
        let set = |p: &std::path::Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(top.path(), 0o755);
        set(&home, 0o700);
        assert_eq!(closed_to_others(&inner), Some(home.clone()));
        set(&home, 0o751);
        assert_eq!(closed_to_others(&inner), None);
    }
}
