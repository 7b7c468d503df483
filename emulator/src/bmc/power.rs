//! Power actions as every front-end carries them out (a Redfish Reset,
//! HPE's power button, IPMI Chassis Control, the IPMI watchdog): the
//! service's refusal of power-offs, the profile's busy window, an
//! injected slow transition, the system's lock, background work waited
//! for and woken, the clock of the last action.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::changes::{with_cause, Cause};
use super::{lock, media_work_of, Core};
use crate::backend::BackendError;
use crate::model::{ResetType, System};

/// How long a start waits for a virtual media download under way.
const INSERT_WAIT: Duration = Duration::from_secs(600);

/// When each system last had a power action, and whether it started it.
#[derive(Default)]
pub struct PowerClock(Mutex<HashMap<String, (Instant, bool)>>);

impl PowerClock {
    fn record(&self, id: &str, started: bool) {
        lock(&self.0).insert(id.to_string(), (Instant::now(), started));
    }

    /// The last action, if it was less than `secs` ago (and, with
    /// `started`, a start).
    pub fn within(&self, id: &str, secs: u64, started: bool) -> bool {
        secs > 0
            && lock(&self.0)
                .get(id)
                .is_some_and(|(at, s)| (!started || *s) && at.elapsed().as_secs() < secs)
    }
}

/// Why a power action was not taken.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// Within the profile's busy window after the last one.
    #[error("busy with the last power action")]
    Busy,
    /// A power-off while this service refuses them
    /// (`Core::power_off_disabled`).
    #[error("power-off actions are disabled on this service")]
    PowerOffDisabled,
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl Core {
    /// Carries out `reset` on `sys` (see the module's documentation).
    pub async fn power_action(&self, sys: &System, reset: ResetType) -> Result<(), PowerError> {
        if self.power_off_disabled
            && matches!(reset, ResetType::ForceOff | ResetType::GracefulShutdown)
        {
            return Err(PowerError::PowerOffDisabled);
        }
        let profile = self.profile(sys);
        if self
            .power_clock
            .within(&sys.id, profile.power.busy_secs, false)
        {
            return Err(PowerError::Busy);
        }
        let started = reset.starts(sys.power);
        if started {
            // A virtual medium is there for the firmware from the moment
            // its insert is accepted, as a BMC's is (it streams the image
            // as the host reads it): a start waits for the download that
            // stands for that here.
            if !self.work.settled(&media_work_of(sys), INSERT_WAIT).await {
                tracing::warn!(system = %sys.name, "starting while a virtual media insert is still downloading");
            }
        }
        // A slow power transition (an injected fault): accepted now, carried
        // out later, as a BMC whose host takes its time.
        let delay = self.faults.power_delay(std::slice::from_ref(&sys.name));
        if !delay.is_zero() {
            self.power_clock.record(&sys.id, started);
            tracing::info!(system = %sys.name, %reset, ?delay, "reset accepted; takes effect later (fault)");
            let core = self.clone();
            let (id, name) = (sys.id.clone(), sys.name.clone());
            let slow = async move {
                tokio::time::sleep(delay).await;
                let _guard = core.locks.lock(&id).await;
                match core.backend.reset(&id, reset).await {
                    Ok(()) => core.work.reset_seen(),
                    Err(e) => {
                        tracing::warn!(system = %name, %reset, error = %e, "delayed reset failed")
                    }
                }
            };
            tokio::spawn(with_cause(Cause::Fault("power delay".into()), slow));
            return Ok(());
        }
        let _guard = self.locks.lock(&sys.id).await;
        self.backend.reset(&sys.id, reset).await?;
        // Work staged for the next start (volume changes) looks again.
        self.work.reset_seen();
        self.power_clock.record(&sys.id, started);
        tracing::debug!(system = %sys.name, %reset, "reset");
        Ok(())
    }
}
