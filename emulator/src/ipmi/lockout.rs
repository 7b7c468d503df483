//! The accounts' lockout policy over IPMI logins. The policy is the
//! endpoint's live one (its AccountService's, the Redfish accounts' too);
//! the counts are this BMC's, per user name, as its users are.
//!
//! A console checks RAKP 2's code against its password and, when it does
//! not match, stops: ipmitool 1.8.19, FreeIPMI and pyghmi send no RAKP 3
//! then. So a login is settled by RAKP 3 (its code right: a success;
//! wrong, or a console's error status: a failure) or, when none comes, by
//! the challenge's end (setup timeout or eviction: a failure). Until then
//! it is a running check that counts against the threshold, as the
//! Redfish side's running bcrypt checks do: a user whose failures and
//! running checks reach the threshold is answered as a locked one.
//! A success starts a new epoch: checks begun before it count no more.
//!
//! Invariant: only names of configured users are counted (an unknown name
//! has nothing to lock), so the table is as small as the user list plus
//! the names Set User Name gave; a locked user gets no count.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::auth::LockoutPolicy;

#[derive(Debug, Default, Clone)]
struct Entry {
    failures: u32,
    last_failure: Option<Instant>,
    locked_until: Option<Instant>,
    epoch: u64,
}

/// Failed logins and locks of one BMC's users.
#[derive(Debug, Default)]
pub struct Lockouts {
    by_name: HashMap<Vec<u8>, Entry>,
}

fn enforced(p: &LockoutPolicy) -> bool {
    p.threshold > 0 && p.duration > 0
}

impl Lockouts {
    /// Whether `name` is locked at `now`.
    pub fn locked(&self, name: &[u8], now: Instant) -> bool {
        self.by_name
            .get(name)
            .and_then(|e| e.locked_until)
            .is_some_and(|t| now < t)
    }

    /// Whether `name` may begin one more check, `running` being under way.
    pub fn may_try(&self, name: &[u8], running: u32, p: &LockoutPolicy, now: Instant) -> bool {
        if self.locked(name, now) {
            return false;
        }
        let Some(e) = self.by_name.get(name) else {
            return !enforced(p) || running < p.threshold;
        };
        let stale = e
            .last_failure
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(p.reset_after));
        let failures = if stale { 0 } else { e.failures };
        !enforced(p) || failures.saturating_add(running) < p.threshold
    }

    /// The epoch a check of `name` begun now belongs to.
    pub fn epoch(&self, name: &[u8]) -> u64 {
        self.by_name.get(name).map_or(0, |e| e.epoch)
    }

    /// Counts a failed check of `name` begun in `epoch`; whether it
    /// locked the user. Not counted: a check from before the last
    /// success, or while locked.
    pub fn failed(&mut self, name: &[u8], epoch: u64, p: &LockoutPolicy, now: Instant) -> bool {
        if self.locked(name, now) || epoch != self.epoch(name) {
            return false;
        }
        let e = self.by_name.entry(name.to_vec()).or_default();
        let reset = Duration::from_secs(p.reset_after);
        if e.last_failure
            .is_some_and(|t| now.duration_since(t) >= reset)
        {
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        e.last_failure = Some(now);
        if enforced(p) && e.failures >= p.threshold {
            e.failures = 0;
            e.locked_until = Some(now + Duration::from_secs(p.duration));
            return true;
        }
        false
    }

    /// A login of `name` succeeded: its count restarts, in a new epoch.
    pub fn succeeded(&mut self, name: &[u8]) {
        let e = self.by_name.entry(name.to_vec()).or_default();
        e.failures = 0;
        e.last_failure = None;
        e.epoch += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_locks_for_the_duration_and_a_quiet_while_resets_the_count() {
        let p = LockoutPolicy {
            threshold: 3,
            duration: 60,
            reset_after: 30,
        };
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut l = Lockouts::default();
        assert!(!l.failed(b"op", 0, &p, at(0)));
        assert!(!l.failed(b"op", 0, &p, at(1)));
        // Two failures and a running check: no more tries.
        assert!(l.may_try(b"op", 0, &p, at(2)) && !l.may_try(b"op", 1, &p, at(2)));
        // 30 s without a failure: counting starts again.
        assert!(l.may_try(b"op", 2, &p, at(31)));
        assert!(!l.failed(b"op", 0, &p, at(31)));
        assert!(!l.failed(b"op", 0, &p, at(32)));
        assert!(l.failed(b"op", 0, &p, at(33)), "the third in a row");
        assert!(l.locked(b"op", at(92)) && !l.locked(b"other", at(40)));
        assert!(!l.may_try(b"op", 0, &p, at(92)));
        // Failures while locked neither count nor extend the lock.
        assert!(!l.failed(b"op", 0, &p, at(90)));
        assert!(!l.locked(b"op", at(93)) && l.may_try(b"op", 0, &p, at(93)));
        // A success clears the count, and checks begun before it.
        l.failed(b"op", 0, &p, at(100));
        l.failed(b"op", 0, &p, at(101));
        l.succeeded(b"op");
        assert_eq!(l.epoch(b"op"), 1);
        assert!(!l.failed(b"op", 0, &p, at(102)) && !l.failed(b"op", 0, &p, at(103)));
        assert!(!l.failed(b"op", 1, &p, at(104)) && !l.failed(b"op", 1, &p, at(105)));
        assert!(l.failed(b"op", 1, &p, at(106)));
        // Threshold or duration 0: no lockout (DSP0268).
        for p in [
            LockoutPolicy { threshold: 0, ..p },
            LockoutPolicy { duration: 0, ..p },
        ] {
            let mut l = Lockouts::default();
            assert!((0..100).all(|i| !l.failed(b"op", 0, &p, at(i))));
            assert!(l.may_try(b"op", 1000, &p, at(100)));
        }
    }
}
