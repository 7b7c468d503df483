//! A BMC's job queue: the configuration jobs it runs or holds for its
//! host's next start, and whether the service that runs them is ready,
//! which it is not for a while after the BMC resets. The Redfish
//! front-end shows them (Dell's Lifecycle Controller: `Managers/{id}/Jobs`,
//! `DellJobService.DeleteJobQueue`, `GetRemoteServicesAPIStatus`, and the
//! jobs' Tasks).
//!
//! Bounds: the newest [`KEEP`] jobs are kept, finished or not; a job Id
//! is never given twice in a process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use super::lock;

/// Jobs kept per service, the oldest dropped first.
pub const KEEP: usize = 64;

/// A job's state (the words are Dell's `JobState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Scheduled,
    Running,
    Completed,
    CompletedWithErrors,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Scheduled => "Scheduled",
            JobState::Running => "Running",
            JobState::Completed => "Completed",
            JobState::CompletedWithErrors => "CompletedWithErrors",
            JobState::Failed => "Failed",
        }
    }

    pub fn finished(self) -> bool {
        !matches!(self, JobState::Scheduled | JobState::Running)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// `JID_` and twelve digits.
    pub id: String,
    /// The backend Id of the system whose iDRAC runs it.
    pub system: String,
    pub name: &'static str,
    pub job_type: &'static str,
    pub state: JobState,
    /// The Dell message of its outcome (`SYS053`), and its text.
    pub message_id: &'static str,
    pub message: String,
    pub start: SystemTime,
    pub end: Option<SystemTime>,
}

/// A BMC's job queue and whether its job service is ready.
pub struct Jobs {
    jobs: Mutex<Vec<Job>>,
    /// Job Ids count up from the service's start time.
    next: AtomicU64,
    /// The job service is not ready until then (a BMC reset).
    not_ready_until: Mutex<Option<Instant>>,
}

impl Default for Jobs {
    fn default() -> Self {
        let ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        Jobs {
            jobs: Mutex::default(),
            next: AtomicU64::new(ms / 10 % 1_000_000_000_000),
            not_ready_until: Mutex::default(),
        }
    }
}

impl Jobs {
    /// Queues a new job in `state` and returns it.
    pub fn create(
        &self,
        system: &str,
        name: &'static str,
        job_type: &'static str,
        state: JobState,
    ) -> Job {
        let n = self.next.fetch_add(1, Ordering::Relaxed) % 1_000_000_000_000;
        let job = Job {
            id: format!("JID_{n:012}"),
            system: system.to_string(),
            name,
            job_type,
            state,
            message_id: "JCP000",
            message: "New job created.".into(),
            start: SystemTime::now(),
            end: None,
        };
        let mut jobs = lock(&self.jobs);
        jobs.push(job.clone());
        let extra = jobs.len().saturating_sub(KEEP);
        jobs.drain(..extra);
        job
    }

    /// Moves a job on; a finished job gets its end time.
    pub fn update(&self, id: &str, state: JobState, message_id: &'static str, message: &str) {
        if let Some(j) = lock(&self.jobs).iter_mut().find(|j| j.id == id) {
            j.state = state;
            j.message_id = message_id;
            j.message = message.to_string();
            if state.finished() {
                j.end = Some(SystemTime::now());
            }
        }
    }

    pub fn get(&self, id: &str) -> Option<Job> {
        lock(&self.jobs).iter().find(|j| j.id == id).cloned()
    }

    /// The jobs of one system, oldest first.
    pub fn of(&self, system: &str) -> Vec<Job> {
        lock(&self.jobs)
            .iter()
            .filter(|j| j.system == system)
            .cloned()
            .collect()
    }

    /// Every job, oldest first.
    pub fn all(&self) -> Vec<Job> {
        lock(&self.jobs).clone()
    }

    /// Deletes one job of `system`; the job, if it was there.
    pub fn delete(&self, system: &str, id: &str) -> Option<Job> {
        let mut jobs = lock(&self.jobs);
        let i = jobs.iter().position(|j| j.system == system && j.id == id)?;
        Some(jobs.remove(i))
    }

    /// Clears the queue of `system` (`JID_CLEARALL`); the jobs that went.
    pub fn clear(&self, system: &str) -> Vec<Job> {
        let mut jobs = lock(&self.jobs);
        let (gone, kept) = std::mem::take(&mut *jobs)
            .into_iter()
            .partition(|j| j.system == system);
        *jobs = kept;
        gone
    }

    /// Whether a job of `system` of this type has not finished.
    pub fn busy(&self, system: &str, job_type: &str) -> bool {
        lock(&self.jobs)
            .iter()
            .any(|j| j.system == system && j.job_type == job_type && !j.state.finished())
    }

    /// The job service is not ready for `d` from now.
    pub fn not_ready_for(&self, d: Duration) {
        *lock(&self.not_ready_until) = Some(Instant::now() + d);
    }

    pub fn ready(&self) -> bool {
        lock(&self.not_ready_until).is_none_or(|t| Instant::now() >= t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_dell_job_ids_and_the_queue_is_bounded() {
        let lc = Jobs::default();
        let ids: Vec<String> = (0..KEEP + 10)
            .map(|_| {
                lc.create(
                    "s",
                    "Import Configuration",
                    "ImportConfiguration",
                    JobState::Running,
                )
                .id
            })
            .collect();
        for id in &ids {
            assert!(
                id.len() == 16
                    && id.starts_with("JID_")
                    && id[4..].bytes().all(|b| b.is_ascii_digit()),
                "{id}"
            );
        }
        let mut sorted = ids.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        assert_eq!(lc.all().len(), KEEP);
        assert!(lc.get(&ids[0]).is_none(), "the oldest went first");
    }

    #[test]
    fn jobs_finish_delete_and_clear_per_system() {
        let lc = Jobs::default();
        let a = lc.create("a", "n", "ImportConfiguration", JobState::Running);
        let b = lc.create("b", "n", "ImportConfiguration", JobState::Running);
        assert!(lc.busy("a", "ImportConfiguration"));
        lc.update(&a.id, JobState::Completed, "SYS053", "done");
        let done = lc.get(&a.id).unwrap();
        assert!(done.end.is_some() && !lc.busy("a", "ImportConfiguration"));
        assert!(lc.delete("a", &b.id).is_none(), "another system's job");
        assert_eq!(lc.clear("a").len(), 1);
        assert_eq!(lc.of("b").len(), 1);
        assert!(lc.ready());
        lc.not_ready_for(Duration::from_secs(60));
        assert!(!lc.ready());
    }
}
