//! Sessions: opaque random tokens that expire after `SessionTimeout`
//! seconds without use, and their limits.
//!
//! Invariants: a session carries the account's name only, so it sees the
//! current role and ends with a deleted, disabled or renamed account; at
//! most `MAX_SESSIONS_PER_USER` per account, the last
//! `ADMIN_RESERVED_SESSIONS` of `MAX_SESSIONS` for Administrators.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use super::{
    random_hex, AuthError, AuthStore, Principal, Role, Session, ADMIN_RESERVED_SESSIONS,
    MAX_SESSIONS, MAX_SESSIONS_PER_USER,
};

impl AuthStore {
    pub fn session_timeout(&self) -> u64 {
        self.session_timeout.load(Ordering::Relaxed)
    }

    pub fn set_session_timeout(&self, secs: u64) {
        self.session_timeout.store(secs, Ordering::Relaxed);
    }

    fn expire(&self, sessions: &mut HashMap<String, Session>) {
        let ttl = Duration::from_secs(self.session_timeout());
        sessions.retain(|_, s| s.last_used.elapsed() < ttl);
    }

    /// Creates a session; returns it with its token. An account has at
    /// most `MAX_SESSIONS_PER_USER`; the last `ADMIN_RESERVED_SESSIONS` of
    /// `MAX_SESSIONS` are for Administrators.
    pub async fn login(&self, user: &str, pass: &str) -> Result<(Session, String), AuthError> {
        let p = self.verify(user, pass).await?;
        let mut sessions = self.lock_sessions();
        self.expire(&mut sessions);
        let limit = if p.role == Role::Administrator {
            MAX_SESSIONS
        } else {
            MAX_SESSIONS - ADMIN_RESERVED_SESSIONS
        };
        let own = sessions.values().filter(|s| s.username == user).count();
        if sessions.len() >= limit || own >= MAX_SESSIONS_PER_USER {
            return Err(AuthError::SessionLimit);
        }
        let token = random_hex(32);
        let s = Session {
            id: random_hex(8),
            username: user.to_string(),
            created: SystemTime::now(),
            last_used: Instant::now(),
        };
        sessions.insert(token.clone(), s.clone());
        Ok((s, token))
    }

    /// Resolves an `X-Auth-Token`, refreshing the session's idle timer.
    /// The role is the account's as it is now; a session whose account is
    /// gone or disabled ends here.
    pub fn by_token(&self, token: &str) -> Option<Principal> {
        let (username, id) = {
            let mut sessions = self.lock_sessions();
            self.expire(&mut sessions);
            let s = sessions.get_mut(token)?;
            s.last_used = Instant::now();
            (s.username.clone(), s.id.clone())
        };
        let role = if self.enabled {
            let role = self
                .read_accounts()
                .iter()
                .find(|a| a.username == username && a.enabled)
                .map(|a| a.role);
            match role {
                Some(r) => r,
                None => {
                    self.lock_sessions().remove(token);
                    return None;
                }
            }
        } else {
            Role::Administrator
        };
        Some(Principal {
            username: Some(username),
            role,
            session: Some(id),
        })
    }

    pub fn sessions(&self) -> Vec<Session> {
        let mut sessions = self.lock_sessions();
        self.expire(&mut sessions);
        let mut v: Vec<Session> = sessions.values().cloned().collect();
        v.sort_by_key(|s| s.created);
        v
    }

    pub fn session(&self, id: &str) -> Option<Session> {
        self.sessions().into_iter().find(|s| s.id == id)
    }

    pub fn delete_session(&self, id: &str) -> bool {
        let mut sessions = self.lock_sessions();
        let before = sessions.len();
        sessions.retain(|_, s| s.id != id);
        before != sessions.len()
    }

    /// Drops every session (a BMC reboot, an expiry forced by a fault);
    /// returns how many there were.
    pub fn drop_all_sessions(&self) -> usize {
        let mut sessions = self.lock_sessions();
        let n = sessions.len();
        sessions.clear();
        n
    }

    /// Drops the sessions of `username` but the one with the Id `keep`.
    pub(super) fn drop_sessions_of(&self, username: &str, keep: Option<&str>) {
        self.lock_sessions()
            .retain(|_, s| s.username != username || Some(s.id.as_str()) == keep);
    }
}
