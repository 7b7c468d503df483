//! A second attempt at a case that stopped in the emulated platform, not
//! in anything Shoal or the scenario does: the one known hang (the guest
//! kernel stopped in kexec's switchover, before purgatory, under TCG) runs
//! the case once more on a spare network, keeping the first attempt's
//! artifacts and saying so in the result.

use std::sync::Mutex;

use super::prepare::domain_name;
use super::{run_case, CaseResult, Options};
use crate::lab::Lab;
use crate::scenario::{Driver, Scenario};

/// Network indexes for second attempts (cases use 1 to 250).
static SPARE_INDEX: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(251);

/// Why a failed case stopped in the emulated platform rather than in
/// anything Shoal or the scenario does: the guest kernel hung in kexec's
/// switchover (before purgatory ran), which QEMU's TCG pseries does now and
/// then.
pub(super) fn platform_stop(r: &CaseResult) -> Option<&'static str> {
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
pub(super) fn run_again(
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
