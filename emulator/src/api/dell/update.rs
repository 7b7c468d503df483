//! An iDRAC's firmware update as a job of its queue (`[update]
//! dell_job`): the update's Task has the job's Id (a JID), and once the
//! image is staged for the host's reset the Task is gone (404) while the
//! job waits `Scheduled` (JCP001) in the Lifecycle Controller's queue
//! until a start installs the image (PR19). Ironic's redfish firmware
//! interface, seeing the 404, looks for that job and reboots the host
//! (its fix-dell-silent-failure and fix-bios-update-silent-fail notes).

use super::jobs::{complete, create, moved, until_applied};
use super::{Job, JobState};
use crate::api::AppState;
use crate::firmware::Component;
use crate::model::System;

/// The job type Dell shows for a firmware update.
pub const FIRMWARE_JOB: &str = "FirmwareUpdate";

/// How an update ended, for its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Installed now.
    Installed,
    /// Staged for the host's next start.
    Staged(Component),
    /// Staged for another moment (StartUpdate, the BMC's restart).
    Waiting,
    /// The image failed its check.
    Refused,
    /// The image never arrived: no job was ever due.
    NotFetched,
}

/// The JID of a new update of `sys`, where its profile makes updates
/// Dell jobs.
pub(in crate::api) fn update_started(st: &AppState, sys: &System) -> Option<String> {
    if !st.profile(sys).update.dell_job {
        return None;
    }
    Some(create(st, sys, "Firmware Update", FIRMWARE_JOB, JobState::Running).id)
}

/// The update `jid` of `sys` ended so.
pub(in crate::api) fn update_ended(st: &AppState, sys: &System, jid: &str, outcome: Outcome) {
    match outcome {
        Outcome::Installed | Outcome::Waiting => complete(st, jid, "PR19"),
        Outcome::Refused => moved(st, jid, JobState::Failed, "RED007"),
        Outcome::NotFetched => {
            st.jobs.delete(&sys.id, jid);
        }
        Outcome::Staged(c) => {
            moved(st, jid, JobState::Scheduled, "JCP001");
            tracing::info!(system = %sys.name, job = %jid, component = %c, "firmware job scheduled: its Task is gone, the host's next start installs it");
            let (st, id, jid) = (st.clone(), sys.id.clone(), jid.to_string());
            tokio::spawn(async move {
                let installed = |s: &System| {
                    s.bmc
                        .firmware
                        .staged
                        .get(&c)
                        .is_none_or(|staged| staged.task != jid)
                };
                if until_applied(&st, &id, &jid, installed).await {
                    tracing::info!(job = %jid, "firmware job completed: installed at the host's start");
                    complete(&st, &jid, "PR19");
                }
            });
        }
    }
}

/// Whether job `j`'s Task is gone: an update's once its image waits for
/// the host's reset.
pub(in crate::api) fn task_gone(j: &Job) -> bool {
    j.job_type == FIRMWARE_JOB && j.state == JobState::Scheduled
}
