//! The BMC watchdog timer (IPMI v2.0 section 27): Set Watchdog Timer
//! (App 0x24), Get Watchdog Timer (0x25) and Reset Watchdog Timer (0x22).
//!
//! Firmware arms it while it starts (OpenPOWER's skiboot sets a
//! 60-second hard reset and resets it every 30 s, then hands the kernel a
//! 10-second timer with no action), an OS watchdog daemon keeps it fed.
//! When a running countdown reaches zero the timer stops, the timer use's
//! expiration flag is set and the timeout action is carried out on the
//! machine as a Redfish Reset would be: hard reset, power down or power
//! cycle (none on a machine that is off). A Chassis Control power down,
//! cycle or reset stops it. The countdown is kept as a deadline, so Get
//! reports the present count without a ticking task; the BMC's one-second
//! timer tick notices the expiry.

use std::time::{Duration, Instant};

use super::commands::{cc, err, ok, Reply};
use super::Bmc;
use crate::model::ResetType;

/// The countdown's unit: 100 ms.
const TICK: Duration = Duration::from_millis(100);

/// The timer as the last Set left it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Watchdog {
    /// Timer use (bits 2:0) and "don't log" (bit 7), as set.
    use_byte: u8,
    /// Pre-timeout interrupt (bits 6:4) and timeout action (bits 2:0).
    actions: u8,
    /// Pre-timeout interval, seconds.
    pretimeout: u8,
    /// Timer use expiration flags (bits 1-5, one per use).
    expired: u8,
    /// The initial countdown in 100 ms units; `None` until a Set.
    initial: Option<u16>,
    /// When a running countdown reaches zero.
    deadline: Option<Instant>,
}

impl Watchdog {
    /// The present countdown value, in 100 ms units.
    fn present(&self, now: Instant) -> u16 {
        match self.deadline {
            Some(d) => {
                let left = d.saturating_duration_since(now);
                // Rounded up: a timer with time left never reads zero.
                left.as_millis().div_ceil(TICK.as_millis()) as u16
            }
            None => self.initial.unwrap_or(0),
        }
    }

    /// Stops a running countdown (a power down or reset of the machine).
    pub(super) fn stop(&mut self) {
        self.deadline = None;
    }

    /// Whether the countdown ran out by `now`; if so the timer stops, the
    /// use's expiration flag is set and the action to carry out returned
    /// (`None` for "no action").
    fn expire(&mut self, now: Instant) -> Option<Option<ResetType>> {
        let d = self.deadline?;
        if now < d {
            return None;
        }
        self.deadline = None;
        self.expired |= 1 << (self.use_byte & 0x07);
        Some(match self.actions & 0x07 {
            1 => Some(ResetType::ForceRestart),
            2 => Some(ResetType::ForceOff),
            3 => Some(ResetType::PowerCycle),
            _ => None,
        })
    }
}

/// Set Watchdog Timer: timer use, actions, pre-timeout, flags to clear,
/// initial countdown (LS byte first).
pub(super) fn set(bmc: &Bmc, data: &[u8], now: Instant) -> Reply {
    let &[use_byte, actions, pretimeout, clear, lsb, msb] = data else {
        return err(cc::BAD_LENGTH);
    };
    let initial = u16::from_le_bytes([lsb, msb]);
    // Reserved uses and actions, a pre-timeout interval not shorter than
    // the countdown.
    let valid_use = matches!(use_byte & 0x07, 1..=5) && use_byte & 0x38 == 0;
    let valid_action = actions & 0x07 <= 3 && matches!((actions >> 4) & 0x07, 0..=3);
    if !valid_use || !valid_action || actions & 0x88 != 0 || clear & 0xc1 != 0 {
        return err(cc::INVALID_FIELD);
    }
    if pretimeout != 0 && u32::from(pretimeout) * 10 >= u32::from(initial) {
        return err(cc::INVALID_FIELD);
    }
    let mut c = bmc.chassis();
    let w = &mut c.watchdog;
    let running = w.deadline.is_some();
    w.use_byte = use_byte & 0x87;
    w.actions = actions;
    w.pretimeout = pretimeout;
    w.expired &= !clear;
    w.initial = Some(initial);
    // "Don't stop" (bit 6): a running timer goes on from the new count; a
    // stopped one stays stopped. Without it the timer stops.
    w.deadline = (use_byte & 0x40 != 0 && running).then(|| now + TICK * u32::from(initial));
    ok(Vec::new())
}

/// Reset Watchdog Timer: starts (or restarts) the countdown from the
/// initial value; a timer never set cannot start (0x80).
pub(super) fn reset(bmc: &Bmc, data: &[u8], now: Instant) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    let mut c = bmc.chassis();
    let w = &mut c.watchdog;
    let Some(initial) = w.initial else {
        return err(0x80);
    };
    w.deadline = Some(now + TICK * u32::from(initial));
    ok(Vec::new())
}

/// Get Watchdog Timer: use (bit 6: running), actions, pre-timeout,
/// expiration flags, initial and present countdown.
pub(super) fn get(bmc: &Bmc, data: &[u8], now: Instant) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    let c = bmc.chassis();
    let w = &c.watchdog;
    let running = if w.deadline.is_some() { 0x40 } else { 0 };
    let [il, im] = w.initial.unwrap_or(0).to_le_bytes();
    let [pl, pm] = w.present(now).to_le_bytes();
    ok(vec![
        w.use_byte | running,
        w.actions,
        w.pretimeout,
        w.expired,
        il,
        im,
        pl,
        pm,
    ])
}

/// The timer tick: a countdown that ran out stops and its action is
/// carried out, as a Redfish Reset of the machine.
pub(super) async fn tick(bmc: &Bmc, now: Instant) {
    let Some(action) = bmc.chassis().watchdog.expire(now) else {
        return;
    };
    let Some(reset) = action else {
        tracing::info!(system = %bmc.system_id, "IPMI watchdog expired (no action)");
        return;
    };
    tracing::warn!(system = %bmc.system_id, action = %reset, "IPMI watchdog expired");
    let sys = match bmc.system().await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(system = %bmc.system_id, error = %e, "watchdog action: no system");
            return;
        }
    };
    // A machine that is off has nothing to reset, and a power cycle of
    // it does nothing, as Chassis Control's does not.
    if sys.power == crate::model::PowerState::Off {
        tracing::info!(system = %bmc.system_id, "IPMI watchdog expired with the machine off: no action");
        return;
    }
    if let Err(e) = bmc.core.power_action(&sys, reset).await {
        tracing::warn!(system = %bmc.system_id, error = ?e, "watchdog action failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed(actions: u8, initial: u16, now: Instant) -> Watchdog {
        Watchdog {
            use_byte: 0x04,
            actions,
            initial: Some(initial),
            deadline: Some(now + TICK * u32::from(initial)),
            ..Watchdog::default()
        }
    }

    #[test]
    fn a_running_countdown_reads_down_and_expires_once_with_its_action() {
        let t0 = Instant::now();
        let mut w = armed(0x01, 600, t0);
        assert_eq!(w.present(t0), 600);
        assert_eq!(w.present(t0 + Duration::from_millis(15_050)), 450);
        assert_eq!(w.expire(t0 + Duration::from_secs(59)), None);
        assert_eq!(
            w.expire(t0 + Duration::from_secs(60)),
            Some(Some(ResetType::ForceRestart))
        );
        // Stopped, flagged for use 4 (OS load), not expiring again.
        assert_eq!(w.deadline, None);
        assert_eq!(w.expired, 1 << 4);
        assert_eq!(w.expire(t0 + Duration::from_secs(120)), None);
        assert_eq!(w.present(t0 + Duration::from_secs(120)), 600);
    }

    #[test]
    fn the_actions_map_to_resets() {
        let t0 = Instant::now();
        let at = t0 + Duration::from_secs(1);
        assert_eq!(armed(0x00, 1, t0).expire(at), Some(None));
        assert_eq!(
            armed(0x02, 1, t0).expire(at),
            Some(Some(ResetType::ForceOff))
        );
        assert_eq!(
            armed(0x03, 1, t0).expire(at),
            Some(Some(ResetType::PowerCycle))
        );
        assert_eq!(Watchdog::default().expire(at), None);
    }
}
