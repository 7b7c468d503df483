//! Checking credentials: a remembered success (keyed by a SHA-256 of the
//! credentials, tied to the hash it matched), else one bcrypt through the
//! gate, and the lockout (`AccountLockoutThreshold`, `Duration`,
//! `CounterResetAfter`) with its budget of running checks.
//!
//! Invariants: every refused check costs one bcrypt (unknown, disabled and
//! locked users against the dummy hash); concurrent guesses get the
//! threshold and no more, as each running check holds a slot of it.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{
    Account, AuthError, AuthStore, LockoutPolicy, Principal, MAX_LOGIN_PASSWORD_LEN,
    MAX_USERNAME_LEN,
};
use crate::sync::lock;

fn cache_key(user: &str, pass: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(user.as_bytes());
    h.update([0]);
    h.update(pass.as_bytes());
    h.finalize().into()
}

/// A running password check's slot of its account's lockout budget; given
/// back when the check is settled, or when its request is dropped first.
struct Attempt<'a> {
    store: &'a AuthStore,
    id: String,
    settled: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if let Some(a) = self
            .store
            .write_accounts()
            .iter_mut()
            .find(|a| a.id == self.id)
        {
            a.in_flight = a.in_flight.saturating_sub(1);
        }
    }
}

impl AuthStore {
    /// Checks a user name and password (Basic auth or a login). Every
    /// refusal looks the same (`BadCredentials`) and, but for names or
    /// passwords too long for any account, costs one bcrypt.
    pub async fn verify(&self, user: &str, pass: &str) -> Result<Principal, AuthError> {
        if !self.enabled {
            return Ok(Principal {
                username: Some(user.to_string()),
                ..Principal::anonymous_admin()
            });
        }
        if user.len() > MAX_USERNAME_LEN || pass.len() > MAX_LOGIN_PASSWORD_LEN {
            return Err(AuthError::BadCredentials);
        }
        let key = cache_key(user, pass);
        let cached = lock(&self.verified).get(&key).cloned();
        let policy = self.lockout_policy();
        // Under the accounts' lock: the account as it is now, and for an
        // uncached check a slot of the lockout budget, taken before bcrypt
        // runs (an account whose failures and running checks reach the
        // threshold is refused as a locked one is).
        let (account, attempt) = {
            let mut accounts = self.write_accounts();
            match accounts
                .iter_mut()
                .find(|a| a.username == user && a.enabled && !a.locked())
            {
                // Known good: no bcrypt, and a success clears the count.
                Some(a) if cached.as_ref() == Some(&a.hash) => {
                    a.failures = 0;
                    (Some(a.clone()), None)
                }
                Some(a) if policy.threshold == 0 || a.failures + a.in_flight < policy.threshold => {
                    a.in_flight += 1;
                    let attempt = Attempt {
                        store: self,
                        id: a.id.clone(),
                        settled: false,
                    };
                    (Some(a.clone()), Some(attempt))
                }
                _ => (None, None),
            }
        };
        let ok = match (&account, &attempt) {
            (Some(_), None) => true,
            (Some(a), Some(_)) => self.gate.verify(pass, &a.hash).await?,
            (None, _) => {
                self.gate.verify(pass, &self.dummy_hash).await?;
                false
            }
        };
        let Some(account) = account else {
            return Err(AuthError::BadCredentials);
        };
        if let Some(mut attempt) = attempt {
            attempt.settled = true;
            if !self.settle(&account, ok) {
                return Err(AuthError::BadCredentials);
            }
        }
        lock(&self.verified).insert(key, account.hash.clone());
        Ok(Principal {
            username: Some(account.username),
            role: account.role,
            session: None,
        })
    }

    /// Ends the running check of `seen` that came out `ok`: a failure is
    /// counted (the threshold's locks the account); a success clears the
    /// count and holds only if the account is still enabled, unlocked and
    /// of the hash that was checked. Whether the check lets the caller in.
    fn settle(&self, seen: &Account, ok: bool) -> bool {
        {
            let mut accounts = self.write_accounts();
            let Some(a) = accounts.iter_mut().find(|a| a.id == seen.id) else {
                return false;
            };
            a.in_flight = a.in_flight.saturating_sub(1);
            if ok {
                let valid = a.hash == seen.hash && a.enabled && !a.locked();
                if valid {
                    a.failures = 0;
                }
                return valid;
            }
        }
        self.record_failure(seen);
        false
    }

    /// Counts a failed check of `seen`; the threshold's failure locks it.
    fn record_failure(&self, seen: &Account) {
        let policy = self.lockout_policy();
        let mut accounts = self.write_accounts();
        // Only against the hash that was checked: a password changed
        // meanwhile makes this failure moot.
        let Some(a) = accounts
            .iter_mut()
            .find(|a| a.id == seen.id && a.hash == seen.hash)
        else {
            return;
        };
        let now = Instant::now();
        let stale = a
            .last_failure
            .is_some_and(|t| now.duration_since(t) >= Duration::from_secs(policy.reset_after));
        if stale {
            a.failures = 0;
        }
        a.failures = a.failures.saturating_add(1);
        a.last_failure = Some(now);
        if policy.threshold > 0 && policy.duration > 0 && a.failures >= policy.threshold {
            a.locked_until = Some(now + Duration::from_secs(policy.duration));
            a.failures = 0;
            tracing::warn!(user = %a.username, seconds = policy.duration, "account locked after failed logins");
        }
    }

    // ---- lockout policy ----

    pub fn lockout_policy(&self) -> LockoutPolicy {
        *lock(&self.lockout)
    }

    /// Replaces the policy; accounts already locked stay locked until
    /// their time is up (or an administrator unlocks them).
    pub fn set_lockout_policy(&self, p: LockoutPolicy) {
        *lock(&self.lockout) = p;
    }

    /// Changes the policy as `change` says, from the one in force, under
    /// one lock: two writers (Redfish's AccountService, IPMI's LAN
    /// parameter 26) never lose each other's change. Nothing changes when
    /// `change` fails; the policy applied otherwise.
    pub fn update_lockout_policy<E>(
        &self,
        change: impl FnOnce(&mut LockoutPolicy) -> Result<(), E>,
    ) -> Result<LockoutPolicy, E> {
        let mut held = lock(&self.lockout);
        let mut p = *held;
        change(&mut p)?;
        *held = p;
        Ok(p)
    }
}
