//! Long-running operations as Redfish Tasks.
//!
//! A backend operation that returns `Completion::Running` is spawned here;
//! the API answers 202 with a task monitor URL, and the task's state moves
//! Running → Completed or Exception when the future ends. Finished tasks are
//! kept (the newest `KEEP`) so clients polling late still see the outcome.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::backend::{BackendError, BoxFuture};
use crate::error::{ApiError, Msg};

const KEEP: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Running,
    Completed,
    Exception,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Running => "Running",
            TaskState::Completed => "Completed",
            TaskState::Exception => "Exception",
        }
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
}

#[derive(Default)]
pub struct Tasks {
    list: Arc<Mutex<Vec<Task>>>,
    next: AtomicU64,
}

impl Tasks {
    /// Starts `work` in the background and returns the task's Id.
    pub fn spawn(
        &self,
        name: &str,
        target: &str,
        work: BoxFuture<Result<(), BackendError>>,
    ) -> String {
        let id = (self.next.fetch_add(1, Ordering::Relaxed) + 1).to_string();
        let task = Task {
            id: id.clone(),
            name: name.to_string(),
            state: TaskState::Running,
            start: SystemTime::now(),
            end: None,
            error: None,
            target: target.to_string(),
        };
        {
            let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
            list.push(task);
            let finished = list
                .iter()
                .filter(|t| t.state != TaskState::Running)
                .count();
            if finished > KEEP {
                if let Some(i) = list.iter().position(|t| t.state != TaskState::Running) {
                    list.remove(i);
                }
            }
        }
        let list = self.list.clone();
        let tid = id.clone();
        tokio::spawn(async move {
            let outcome = work.await;
            let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(t) = list.iter_mut().find(|t| t.id == tid) {
                t.end = Some(SystemTime::now());
                match outcome {
                    Ok(()) => t.state = TaskState::Completed,
                    Err(e) => {
                        tracing::warn!(task = %tid, error = %e, "task failed");
                        let api: ApiError = e.into();
                        let msgs = match &api {
                            ApiError::BadRequest(m) => m.clone(),
                            _ => vec![Msg::new("OperationFailed", &[])],
                        };
                        t.state = TaskState::Exception;
                        t.error = Some((api.status_code().as_u16(), msgs));
                    }
                }
            }
        });
        id
    }

    pub fn list(&self) -> Vec<Task> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn get(&self, id: &str) -> Option<Task> {
        self.list().into_iter().find(|t| t.id == id)
    }
}
