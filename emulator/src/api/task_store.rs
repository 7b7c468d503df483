//! Long-running operations as Redfish Tasks.
//!
//! A backend operation that returns `Completion::Running` is spawned here;
//! the API answers 202 with a task monitor URL, and the task's state moves
//! Running → Completed or Exception when the future ends.
//!
//! Bounds: at most [`MAX_LIVE`] tasks run at once, and one per *key* (a
//! virtual media slot, a volume): a client [`Tasks::claim`]s the key
//! before it changes anything, so a refusal leaves nothing half-done.
//! Finished tasks are kept for late pollers, the newest [`KEEP`] and none
//! older than [`EXPIRE`]. Work staged for the next reset
//! ([`Tasks::spawn_staged`]) sleeps until a reset of one of the service's
//! systems wakes it ([`Tasks::notify_reset`]); it polls on no timer,
//! except briefly while the machine is in a power transition.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

/// Where tasks are shown (the TaskEvents' origins).
const TASKS: &str = "/redfish/v1/TaskService/Tasks";

use crate::api::error::{ApiError, Msg};
use crate::api::events::Events;
use crate::backend::{BackendError, BoxFuture};
use crate::bmc::changes::{with_cause, Cause};

/// Finished tasks kept at most.
pub const KEEP: usize = 64;
/// Tasks running (or claimed) at once at most: a BMC's job queue is
/// finite too.
pub const MAX_LIVE: usize = 128;
/// How long a finished task is kept.
pub const EXPIRE: Duration = Duration::from_secs(3600);
/// How often staged work looks again while its machine changes power
/// state (the fake settles transitions when touched).
const SETTLING: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Accepted, not started yet (an iDRAC's update answers this first).
    New,
    /// Preparing (a firmware image being fetched and verified).
    Starting,
    Running,
    /// Asked to stop (a DELETE of the Task); its work stops at its next
    /// step.
    Cancelling,
    Completed,
    Exception,
    /// Stopped before it finished, as asked.
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::New => "New",
            TaskState::Starting => "Starting",
            TaskState::Running => "Running",
            TaskState::Cancelling => "Cancelling",
            TaskState::Completed => "Completed",
            TaskState::Exception => "Exception",
            TaskState::Cancelled => "Cancelled",
        }
    }

    /// Not ended yet.
    pub fn live(self) -> bool {
        matches!(
            self,
            TaskState::New | TaskState::Starting | TaskState::Running | TaskState::Cancelling
        )
    }
}

#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub name: String,
    pub state: TaskState,
    pub start: SystemTime,
    pub end: Option<SystemTime>,
    /// What the operation's own response would have been on failure.
    pub error: Option<(u16, Vec<Msg>)>,
    /// The resource the task acts on.
    pub target: String,
    /// How far it is, where its work says (else 0 while live, 100 after).
    pub percent: Option<u8>,
    /// What its work said on the way (rendered messages, oldest first).
    pub messages: Vec<serde_json::Value>,
    /// Dropped when it ends rather than kept for late pollers (a vendor
    /// whose TaskService forgets it).
    pub forget: bool,
    /// Its work stops when asked (a DELETE cancels it).
    pub cancellable: bool,
}

/// What a DELETE of a Task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// A running task was asked to stop.
    Cancelling,
    /// A finished task was removed.
    Removed,
}

/// Why a task's work failed: the status and messages its operation's own
/// response would have had.
pub type Failure = (u16, Vec<Msg>);

/// Most progress messages a task keeps (the newest).
const MAX_TASK_MESSAGES: usize = 32;

/// Where staged work stands, as its check finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staged {
    /// Done: the task completes.
    Applied,
    /// Waiting for the next reset.
    Waiting,
    /// The machine is changing power state: look again shortly.
    Settling,
}

struct Entry {
    task: Task,
    /// The key the task holds while it runs.
    key: String,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    /// Keys claimed whose task is not spawned yet.
    claimed: Vec<String>,
}

impl Inner {
    fn live(&self) -> usize {
        self.claimed.len() + self.entries.iter().filter(|e| e.task.state.live()).count()
    }

    fn busy(&self, key: &str) -> bool {
        self.claimed.iter().any(|k| k == key)
            || self
                .entries
                .iter()
                .any(|e| e.task.state.live() && e.key == key)
    }

    /// Drops expired finished tasks and all but the newest `KEEP`.
    fn prune(&mut self, now: SystemTime) {
        self.entries.retain(|e| {
            e.task
                .end
                .is_none_or(|end| now.duration_since(end).unwrap_or_default() < EXPIRE)
        });
        let finished = self.entries.iter().filter(|e| !e.task.state.live()).count();
        let mut extra = finished.saturating_sub(KEEP);
        // Entries are in creation order: the oldest finished go first.
        self.entries.retain(|e| {
            if extra > 0 && !e.task.state.live() {
                extra -= 1;
                false
            } else {
                true
            }
        });
    }
}

pub struct Tasks {
    inner: Arc<Mutex<Inner>>,
    next: AtomicU64,
    /// Bumped at every reset of the service's systems.
    resets: watch::Sender<u64>,
    /// How many times staged work has looked at its machine.
    checks: Arc<AtomicU64>,
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks {
            inner: Arc::default(),
            next: AtomicU64::new(0),
            resets: watch::channel(0).0,
            checks: Arc::default(),
        }
    }
}

/// The right to start one task on a key; dropped unused, it frees both.
pub struct Claim {
    inner: Arc<Mutex<Inner>>,
    key: Option<String>,
    /// The Id the task takes (a vendor's job Id), if not the next number.
    id: Option<String>,
}

impl Claim {
    /// The task started under this claim takes Id `id` (unique: a
    /// vendor's job Id).
    pub fn with_id(mut self, id: String) -> Claim {
        self.id = Some(id);
        self
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut inner = lock(&self.inner);
            if let Some(i) = inner.claimed.iter().position(|k| *k == key) {
                inner.claimed.remove(i);
            }
        }
    }
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tasks {
    /// Claims `key` for one task: 409 (`ResourceInUse`) while another task
    /// on it runs or is being started, 503 when `MAX_LIVE` tasks run.
    pub fn claim(&self, key: &str) -> Result<Claim, ApiError> {
        let mut inner = lock(&self.inner);
        if inner.busy(key) {
            return Err(ApiError::Conflict(format!("a task on {key} is running")));
        }
        if inner.live() >= MAX_LIVE {
            tracing::warn!(tasks = MAX_LIVE, "task limit reached");
            return Err(ApiError::Unavailable(10));
        }
        inner.claimed.push(key.to_string());
        Ok(Claim {
            inner: self.inner.clone(),
            key: Some(key.to_string()),
            id: None,
        })
    }

    /// A DELETE of task `id`: a running one that can stop is asked to
    /// (Cancelling), a finished one removed; `None` when there is none.
    /// 409 for a running task whose work cannot stop.
    pub fn delete(&self, id: &str) -> Result<Option<Deleted>, ApiError> {
        let mut inner = lock(&self.inner);
        let Some(i) = inner.entries.iter().position(|e| e.task.id == id) else {
            return Ok(None);
        };
        let t = &mut inner.entries[i].task;
        if !t.state.live() {
            inner.entries.remove(i);
            return Ok(Some(Deleted::Removed));
        }
        if !t.cancellable {
            return Err(ApiError::Status(
                axum::http::StatusCode::CONFLICT,
                vec![Msg::new("OperationNotAllowed", &[])],
            ));
        }
        t.state = TaskState::Cancelling;
        Ok(Some(Deleted::Cancelling))
    }

    /// Whether a task on `key` runs (or is being started).
    pub fn busy(&self, key: &str) -> bool {
        lock(&self.inner).busy(key)
    }

    /// Waits until no task on a key starting with `prefix` runs or is
    /// being started, for at most `limit`; whether they all ended.
    pub async fn settled(&self, prefix: &str, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let busy = {
                let inner = lock(&self.inner);
                inner.claimed.iter().any(|k| k.starts_with(prefix))
                    || inner
                        .entries
                        .iter()
                        .any(|e| e.task.state.live() && e.key.starts_with(prefix))
            };
            if !busy {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts `work` in the background under `claim` and returns the
    /// task's Id.
    pub fn spawn(
        &self,
        claim: Claim,
        name: &str,
        target: &str,
        work: BoxFuture<Result<(), BackendError>>,
        events: Arc<Events>,
    ) -> String {
        self.spawn_tracked(claim, name, target, TaskState::Running, events, move |_| {
            Box::pin(async move { work.await.map_err(failure) })
        })
    }

    /// Starts a task in state `first` whose work tells its progress
    /// through the [`Progress`] it is given; returns the task's Id: the
    /// claim's where it has one ([`Claim::with_id`]), else the next number.
    pub fn spawn_tracked<W>(
        &self,
        mut claim: Claim,
        name: &str,
        target: &str,
        first: TaskState,
        events: Arc<Events>,
        work: W,
    ) -> String
    where
        W: FnOnce(Progress) -> BoxFuture<Result<(), Failure>>,
    {
        let id = claim
            .id
            .take()
            .unwrap_or_else(|| (self.next.fetch_add(1, Ordering::Relaxed) + 1).to_string());
        let uri = format!("{TASKS}/{id}");
        events.task("TaskStarted", &id, uri.clone());
        let key = claim.key.take().unwrap_or_default();
        {
            let mut inner = lock(&self.inner);
            if let Some(i) = inner.claimed.iter().position(|k| *k == key) {
                inner.claimed.remove(i);
            }
            inner.entries.push(Entry {
                task: Task {
                    id: id.clone(),
                    name: name.to_string(),
                    state: first,
                    start: SystemTime::now(),
                    end: None,
                    error: None,
                    target: target.to_string(),
                    percent: None,
                    messages: Vec::new(),
                    forget: false,
                    cancellable: false,
                },
                key,
            });
            inner.prune(SystemTime::now());
        }
        let progress = Progress {
            inner: self.inner.clone(),
            id: id.clone(),
            uri: uri.clone(),
            events: events.clone(),
        };
        let work = work(progress);
        let list = self.inner.clone();
        let tid = id.clone();
        let cause = Cause::Bmc(format!("task {id} ({name})"));
        tokio::spawn(with_cause(cause, async move {
            let outcome = work.await;
            let mut inner = lock(&list);
            let now = SystemTime::now();
            if let Some(t) = inner
                .entries
                .iter_mut()
                .map(|e| &mut e.task)
                .find(|t| t.id == tid)
            {
                t.end = Some(now);
                let cancelled = t.state == TaskState::Cancelling;
                let key = match &outcome {
                    Ok(()) => "TaskCompletedOK",
                    Err(_) if cancelled => "TaskCancelled",
                    Err(_) => "TaskAborted",
                };
                events.task(key, &tid, uri);
                match outcome {
                    // Done before it saw the request to stop.
                    Ok(()) => t.state = TaskState::Completed,
                    Err(_) if cancelled => t.state = TaskState::Cancelled,
                    Err(failure) => {
                        tracing::warn!(task = %tid, status = failure.0, "task failed");
                        t.state = TaskState::Exception;
                        t.error = Some(failure);
                    }
                }
            }
            inner
                .entries
                .retain(|e| !(e.task.id == tid && e.task.forget));
            inner.prune(now);
        }));
        id
    }

    /// Starts a task that ends when `check` finds its change applied: it
    /// looks now, then after each reset ([`Tasks::notify_reset`]), and
    /// every `SETTLING` only while `check` says the machine is settling.
    pub fn spawn_staged<F>(
        &self,
        claim: Claim,
        name: &str,
        target: &str,
        mut check: F,
        events: Arc<Events>,
    ) -> String
    where
        F: FnMut() -> BoxFuture<Result<Staged, BackendError>> + Send + 'static,
    {
        // Subscribed before the first look: a reset in between wakes it.
        let mut resets = self.resets.subscribe();
        let checks = self.checks.clone();
        let work = Box::pin(async move {
            loop {
                checks.fetch_add(1, Ordering::Relaxed);
                match check().await? {
                    Staged::Applied => return Ok(()),
                    Staged::Settling => tokio::time::sleep(SETTLING).await,
                    Staged::Waiting => {
                        if resets.changed().await.is_err() {
                            return Err(BackendError::Unavailable("the service stopped".into()));
                        }
                    }
                }
            }
        });
        self.spawn(claim, name, target, work, events)
    }

    /// A system of this service was reset: staged work looks again.
    pub fn notify_reset(&self) {
        self.resets.send_modify(|n| *n += 1);
    }

    /// How many times staged work has looked at its machine (it never
    /// looks while nothing happens).
    pub fn staged_checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    pub fn list(&self) -> Vec<Task> {
        let mut inner = lock(&self.inner);
        inner.prune(SystemTime::now());
        inner.entries.iter().map(|e| e.task.clone()).collect()
    }

    pub fn get(&self, id: &str) -> Option<Task> {
        let inner = lock(&self.inner);
        inner
            .entries
            .iter()
            .find(|e| e.task.id == id)
            .map(|e| e.task.clone())
    }
}

/// What a failed backend operation's own response would have been.
pub fn failure(e: BackendError) -> Failure {
    tracing::warn!(error = %e, "task work failed");
    let api: ApiError = e.into();
    let msgs = match &api {
        ApiError::BadRequest(m) => m.clone(),
        _ => vec![Msg::new("OperationFailed", &[])],
    };
    (api.status_code().as_u16(), msgs)
}

/// A live task's handle on itself: its work says how far it is.
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Mutex<Inner>>,
    id: String,
    uri: String,
    events: Arc<Events>,
}

impl Progress {
    /// The task's Id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn with(&self, f: impl FnOnce(&mut Task)) {
        let mut inner = lock(&self.inner);
        if let Some(e) = inner.entries.iter_mut().find(|e| e.task.id == self.id) {
            f(&mut e.task);
        }
    }

    /// The task moves to `state` (a live one: its end is its work's),
    /// unless it was asked to stop.
    pub fn state(&self, state: TaskState) {
        debug_assert!(state.live());
        self.with(|t| {
            if t.state != TaskState::Cancelling {
                t.state = state;
            }
        });
    }

    /// The task's work stops when asked: a DELETE of the Task cancels it.
    pub fn cancellable(&self) {
        self.with(|t| t.cancellable = true);
    }

    /// Whether the task was asked to stop.
    pub fn cancelled(&self) -> bool {
        let mut asked = false;
        self.with(|t| asked = t.state == TaskState::Cancelling);
        asked
    }

    /// The task is `percent` done; a change is a TaskProgressChanged event.
    pub fn percent(&self, percent: u8) {
        let percent = percent.min(100);
        let mut moved = false;
        self.with(|t| {
            moved = t.percent != Some(percent);
            t.percent = Some(percent);
        });
        if moved {
            self.events
                .task_progress(&self.id, percent, self.uri.clone());
        }
    }

    /// The task is dropped when it ends (its Task and monitor then answer
    /// 404).
    pub fn forget(&self) {
        self.with(|t| t.forget = true);
    }

    /// The task says `message` (a rendered registry message).
    pub fn message(&self, message: serde_json::Value) {
        self.with(|t| {
            if t.messages.len() == MAX_TASK_MESSAGES {
                t.messages.remove(0);
            }
            t.messages.push(message);
        });
    }
}

impl crate::bmc::Work for Tasks {
    fn settled<'a>(&'a self, prefix: &'a str, limit: Duration) -> crate::bmc::Borrowed<'a, bool> {
        Box::pin(Tasks::settled(self, prefix, limit))
    }

    fn reset_seen(&self) {
        self.notify_reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done() -> BoxFuture<Result<(), BackendError>> {
        Box::pin(async { Ok(()) })
    }

    async fn settle(t: &Tasks) {
        for _ in 0..100 {
            if lock(&t.inner).live() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("tasks still running");
    }

    /// A DELETE stops a task whose work can stop (Cancelling until its
    /// next step, then Cancelled), is refused for one whose work cannot,
    /// and removes a finished one.
    #[tokio::test]
    async fn a_delete_cancels_what_can_stop_and_removes_what_ended() {
        let t = Tasks::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let fixed = t.spawn(
            t.claim("a").unwrap(),
            "insert",
            "/x",
            Box::pin(async move {
                let _ = rx.await;
                Ok(())
            }),
            Arc::default(),
        );
        assert!(t.delete(&fixed).is_err(), "its work cannot stop");
        let stoppable = t.spawn_tracked(
            t.claim("b").unwrap(),
            "update",
            "/y",
            TaskState::New,
            Arc::default(),
            |p| {
                Box::pin(async move {
                    p.cancellable();
                    while !p.cancelled() {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err((409, Vec::new()))
                })
            },
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(t.delete(&stoppable).unwrap(), Some(Deleted::Cancelling));
        tx.send(()).unwrap();
        settle(&t).await;
        assert_eq!(t.get(&stoppable).unwrap().state, TaskState::Cancelled);
        assert_eq!(t.get(&fixed).unwrap().state, TaskState::Completed);
        assert_eq!(t.delete(&fixed).unwrap(), Some(Deleted::Removed));
        assert!(t.get(&fixed).is_none());
        assert_eq!(t.delete("nope").unwrap(), None);
    }

    #[tokio::test]
    async fn settled_waits_for_the_tasks_of_a_prefix_only() {
        let t = Tasks::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let c = t.claim("vmedia:a:Cd").unwrap();
        t.spawn(
            c,
            "insert",
            "/x",
            Box::pin(async move {
                let _ = rx.await;
                Ok(())
            }),
            Arc::default(),
        );
        // Another system's insert is no reason to wait.
        assert!(t.settled("vmedia:b:", Duration::ZERO).await);
        assert!(!t.settled("vmedia:a:", Duration::from_millis(120)).await);
        let waiter = tokio::spawn({
            let inner = t.inner.clone();
            async move {
                let t = Tasks {
                    inner,
                    ..Tasks::default()
                };
                t.settled("vmedia:a:", Duration::from_secs(10)).await
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished());
        tx.send(()).unwrap();
        assert!(waiter.await.unwrap());
        // A claim alone (a task being started) counts too.
        let _c = t.claim("vmedia:a:Usb").unwrap();
        assert!(!t.settled("vmedia:a:", Duration::from_millis(60)).await);
    }

    #[tokio::test]
    async fn one_task_per_key_and_the_key_is_freed_whatever_the_outcome() {
        let t = Tasks::default();
        let c = t.claim("cd").unwrap();
        assert!(matches!(t.claim("cd"), Err(ApiError::Conflict(_))));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        t.spawn(
            c,
            "insert",
            "/x",
            Box::pin(async move {
                let _ = rx.await;
                Err(BackendError::Internal("download failed".into()))
            }),
            Arc::default(),
        );
        assert!(t.busy("cd"), "running: still claimed");
        assert!(t.claim("floppy").is_ok(), "other keys are free");
        tx.send(()).unwrap();
        settle(&t).await;
        assert_eq!(t.list()[0].state, TaskState::Exception);
        assert!(t.claim("cd").is_ok(), "a failed task frees its key");
        // A claim dropped unused frees its key too.
        drop(t.claim("hd").unwrap());
        assert!(!t.busy("hd"));
    }

    #[tokio::test]
    async fn live_tasks_are_capped_and_finished_ones_bounded() {
        let t = Tasks::default();
        let claims: Vec<Claim> = (0..MAX_LIVE)
            .map(|i| t.claim(&i.to_string()).unwrap())
            .collect();
        assert!(matches!(t.claim("one more"), Err(ApiError::Unavailable(_))));
        drop(claims);
        for i in 0..KEEP * 3 {
            let c = t.claim(&format!("k{i}")).unwrap();
            t.spawn(c, "n", "/x", done(), Arc::default());
            settle(&t).await;
        }
        assert_eq!(t.list().len(), KEEP);
        assert_eq!(t.list().last().unwrap().id, (KEEP * 3).to_string());
    }

    #[tokio::test]
    async fn staged_work_waits_for_a_reset_without_polling() {
        let t = Tasks::default();
        let applied = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let a = applied.clone();
        let check = move || -> BoxFuture<Result<Staged, BackendError>> {
            let a = a.clone();
            Box::pin(async move {
                Ok(if a.load(Ordering::Relaxed) {
                    Staged::Applied
                } else {
                    Staged::Waiting
                })
            })
        };
        let claim = t.claim("v").unwrap();
        let id = t.spawn_staged(claim, "staged", "/v", check, Arc::default());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(t.staged_checks(), 1, "looked once, then slept");
        t.notify_reset();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(t.staged_checks(), 2, "a reset that applied nothing");
        assert_eq!(t.get(&id).unwrap().state, TaskState::Running);
        applied.store(true, Ordering::Relaxed);
        t.notify_reset();
        settle(&t).await;
        assert_eq!(t.get(&id).unwrap().state, TaskState::Completed);
        assert_eq!(t.staged_checks(), 3);
    }
}
