//! A failed case that stopped in the guest platform, not in anything Shoal
//! or the scenario does, is named as such: the one known hang (the guest
//! kernel stopped in kexec's switchover, before purgatory: its copy
//! overwrote the running task, which then faulted; the netboot image's
//! kexec window rules it out, ARCHITECTURE.md). The case still fails: a
//! hang is a bug to find, never a run to repeat.

use super::report::CaseResult;

/// Why a failed case stopped in the guest platform rather than in
/// anything Shoal or the scenario does: the guest kernel hung in kexec's
/// switchover (before purgatory ran).
pub(super) fn platform_stop(r: &CaseResult) -> Option<&'static str> {
    if r.passed {
        return None;
    }
    let serial = std::fs::read(r.artifacts.as_ref()?.join("serial.log")).ok()?;
    let text = String::from_utf8_lossy(&serial);
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    last.contains("kexec: Starting switchover sequence")
        .then_some(
            "hung in the guest kernel's kexec switchover, before purgatory (did the netboot log a kexec window?)",
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Driver;
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
