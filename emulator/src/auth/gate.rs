//! The bcrypt gate: verifications and hashes run on the blocking pool, a
//! few at a time, behind a bounded queue.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{AuthError, NEW_HASH_COST};

/// Checks waiting for a permit beyond which a check is refused at once
/// (`AuthError::Busy`, 503 with Retry-After).
pub const BCRYPT_QUEUE: usize = 32;

/// Runs bcrypt on the blocking pool, a few checks at a time, with a
/// bounded queue of waiters: a storm of wrong passwords costs at most
/// `permits` cores.
pub(super) struct BcryptGate {
    pub(super) permits: Arc<Semaphore>,
    pub(super) waiting: AtomicUsize,
    /// bcrypt verifications run (each failed or uncached check is one).
    pub(super) checks: AtomicU64,
}

/// Counts a waiter for as long as it waits (also when its request is
/// dropped while waiting).
struct Waiter<'a>(&'a AtomicUsize);

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl BcryptGate {
    /// Half the cores, at least one, at most four.
    pub(super) fn new() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        BcryptGate {
            permits: Arc::new(Semaphore::new((cores / 2).clamp(1, 4))),
            waiting: AtomicUsize::new(0),
            checks: AtomicU64::new(0),
        }
    }

    /// A permit, waiting in the queue if there is room (`bounded`), else
    /// `Busy`.
    async fn permit(&self, bounded: bool) -> Result<OwnedSemaphorePermit, AuthError> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= BCRYPT_QUEUE && bounded {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(AuthError::Busy);
        }
        let _waiter = Waiter(&self.waiting);
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| AuthError::Busy)
    }

    pub(super) async fn verify(&self, pass: &str, hash: &str) -> Result<bool, AuthError> {
        let permit = self.permit(true).await?;
        self.checks.fetch_add(1, Ordering::Relaxed);
        let (pass, hash) = (pass.to_string(), hash.to_string());
        // The permit moves along: a request dropped mid-check still holds
        // its core until bcrypt returns.
        Ok(tokio::task::spawn_blocking(move || {
            let _permit = permit;
            bcrypt::verify(pass, &hash).unwrap_or(false)
        })
        .await
        .unwrap_or(false))
    }

    pub(super) async fn hash(&self, pass: &str) -> Result<String, AuthError> {
        let permit = self.permit(false).await?;
        let pass = pass.to_string();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            bcrypt::hash(pass, NEW_HASH_COST)
        })
        .await
        .map_err(|e| AuthError::Hash(e.to_string()))?
        .map_err(|e| AuthError::Hash(e.to_string()))
    }
}
