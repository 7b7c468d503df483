//! Accounts, credential checks and sessions.
//!
//! Accounts come from an htpasswd file (bcrypt hashes, as sushy-tools takes)
//! and from AccountService POSTs. A successful bcrypt check is remembered,
//! keyed by a SHA-256 of the credentials and tied to the hash it matched, so
//! Basic auth pays bcrypt once per credential (not per request) and a
//! password change invalidates the memory. Sessions are opaque random tokens
//! that expire after `SessionTimeout` seconds without use; a session holds
//! the account's name only, so each request sees the account's current role,
//! and a deleted, disabled or renamed account's sessions end.
//!
//! Password guessing is bounded three ways: an account locks after
//! `AccountLockoutThreshold` failures (DSP0268 AccountService, 401 like a
//! wrong password while locked); every failed check costs one bcrypt,
//! unknown users included (a dummy hash of the accounts' cost), so names
//! cannot be probed by timing; and bcrypt runs behind a gate of a few
//! permits with a bounded queue, so a storm of wrong passwords costs at
//! most those cores and cached credentials and sessions keep their latency.
//!
//! Without an htpasswd file authentication is off: every request is served
//! as Administrator, and session logins accept any credentials.
//!
//! This module holds the types and the store itself; `verify` checks
//! credentials (with the lockout), `sessions` and `accounts` manage those,
//! `gate` runs bcrypt.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Instant, SystemTime};

use rand::RngCore;

mod accounts;
mod gate;
mod sessions;
mod verify;

use crate::sync::{lock, read, write};
use gate::BcryptGate;
pub use gate::BCRYPT_QUEUE;

/// Cost for hashes Shoal creates itself (new accounts, password changes).
const NEW_HASH_COST: u32 = 10;
pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 64;
/// Longest UserName an account may have, and a login may name (bytes).
pub const MAX_USERNAME_LEN: usize = 256;
/// Longest password a login or Basic header may carry (bytes); an
/// htpasswd account's password may exceed `MAX_PASSWORD_LEN`.
pub const MAX_LOGIN_PASSWORD_LEN: usize = 256;
pub const DEFAULT_SESSION_TIMEOUT: u64 = 1800;
pub const SESSION_TIMEOUT_RANGE: (u64, u64) = (30, 86400);
/// Sessions of the whole service.
pub const MAX_SESSIONS: usize = 1024;
/// Most accounts the service holds (a BMC has a fixed number of user
/// slots: OpenBMC 15, iDRAC 16); creation beyond is refused.
pub const MAX_ACCOUNTS: usize = 64;
/// Sessions of one account.
pub const MAX_SESSIONS_PER_USER: usize = 64;
/// Of `MAX_SESSIONS`, the ones only an Administrator's login may take, so
/// that other users filling theirs cannot lock the administrators out.
pub const ADMIN_RESERVED_SESSIONS: usize = 64;
/// Upper bounds of the lockout settings (AccountService PATCH).
pub const MAX_LOCKOUT_THRESHOLD: u32 = 1000;
pub const MAX_LOCKOUT_SECONDS: u64 = 86400;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    ReadOnly,
    Operator,
    Administrator,
}

impl Role {
    pub const ALL: &'static [Role] = &[Role::Administrator, Role::Operator, Role::ReadOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Administrator => "Administrator",
            Role::Operator => "Operator",
            Role::ReadOnly => "ReadOnly",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.as_str() == s)
    }

    pub fn privileges(self) -> &'static [Privilege] {
        use Privilege::*;
        match self {
            Role::Administrator => &[
                Login,
                ConfigureManager,
                ConfigureUsers,
                ConfigureComponents,
                ConfigureSelf,
            ],
            Role::Operator => &[Login, ConfigureComponents, ConfigureSelf],
            Role::ReadOnly => &[Login, ConfigureSelf],
        }
    }

    pub fn has(self, p: Privilege) -> bool {
        self.privileges().contains(&p)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    Login,
    ConfigureManager,
    ConfigureUsers,
    ConfigureComponents,
    ConfigureSelf,
}

impl Privilege {
    pub fn as_str(self) -> &'static str {
        match self {
            Privilege::Login => "Login",
            Privilege::ConfigureManager => "ConfigureManager",
            Privilege::ConfigureUsers => "ConfigureUsers",
            Privilege::ConfigureComponents => "ConfigureComponents",
            Privilege::ConfigureSelf => "ConfigureSelf",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{file}:{line}: {message}")]
    Htpasswd {
        file: String,
        line: usize,
        message: String,
    },
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("invalid credentials")]
    BadCredentials,
    /// Too many credential checks are waiting for bcrypt.
    #[error("too many logins in progress")]
    Busy,
    #[error("too many sessions")]
    SessionLimit,
    #[error("account {0} exists")]
    Exists(String),
    #[error("no more than {MAX_ACCOUNTS} accounts")]
    AccountLimit,
    #[error("no account {0}")]
    NoAccount(String),
    #[error("password must be {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters")]
    PasswordLength,
    #[error("the last administrator cannot be removed or demoted")]
    LastAdmin,
    #[error("hashing failed: {0}")]
    Hash(String),
}

#[derive(Debug, Clone)]
pub struct Account {
    pub id: String,
    pub username: String,
    pub role: Role,
    pub enabled: bool,
    hash: String,
    /// Failed checks since the last success, reset after
    /// `AccountLockoutCounterResetAfter` without one.
    failures: u32,
    last_failure: Option<Instant>,
    locked_until: Option<Instant>,
    /// Password checks of this account running now: each counts against
    /// the lockout threshold until it is settled, so concurrent guesses
    /// get no more tries than sequential ones.
    in_flight: u32,
}

impl Account {
    /// Locked after too many failed logins (`Locked` in the resource).
    pub fn locked(&self) -> bool {
        self.locked_until.is_some_and(|t| Instant::now() < t)
    }

    fn admin(&self) -> bool {
        self.role == Role::Administrator && self.enabled
    }
}

/// AccountService's lockout settings; 0 in the threshold or the duration
/// turns lockout off (DSP0268).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockoutPolicy {
    /// `AccountLockoutThreshold`: failed logins that lock an account.
    pub threshold: u32,
    /// `AccountLockoutDuration`, seconds.
    pub duration: u64,
    /// `AccountLockoutCounterResetAfter`, seconds after the last failure.
    pub reset_after: u64,
}

impl LockoutPolicy {
    /// The counter resets no later than a lock ends (DMTF: the reset
    /// interval is at most the duration, when there is a duration).
    pub fn consistent(&self) -> bool {
        self.duration == 0 || self.reset_after <= self.duration
    }
}

impl Default for LockoutPolicy {
    /// 5 failures, 300 s locked, counter reset 300 s after the last
    /// failure (pam_faillock-style BMCs; DMTF wants duration ≥ reset).
    fn default() -> Self {
        LockoutPolicy {
            threshold: 5,
            duration: 300,
            reset_after: 300,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub username: String,
    pub created: SystemTime,
    last_used: Instant,
}

/// Who is making a request.
#[derive(Debug, Clone)]
pub struct Principal {
    pub username: Option<String>,
    pub role: Role,
    pub session: Option<String>,
}

impl Principal {
    pub fn anonymous_admin() -> Self {
        Principal {
            username: None,
            role: Role::Administrator,
            session: None,
        }
    }
}

/// Changes to an account (PATCH of an Account resource).
#[derive(Debug, Default)]
pub struct AccountChange {
    pub username: Option<String>,
    pub password: Option<String>,
    pub role: Option<Role>,
    pub enabled: Option<bool>,
    /// `Some(false)` unlocks; clients cannot lock.
    pub locked: Option<bool>,
}

pub struct AuthStore {
    enabled: bool,
    accounts: RwLock<Vec<Account>>,
    next_account: AtomicU32,
    verified: Mutex<HashMap<[u8; 32], String>>,
    sessions: Mutex<HashMap<String, Session>>,
    session_timeout: AtomicU64,
    lockout: Mutex<LockoutPolicy>,
    gate: BcryptGate,
    /// What a check for an unknown, disabled or locked user verifies
    /// against: a hash of the accounts' cost, so it takes as long.
    dummy_hash: String,
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// The cost of a `$2b$NN$…` hash.
fn hash_cost(hash: &str) -> Option<u32> {
    hash.get(4..6)?.parse().ok()
}

fn new_account(id: String, username: &str, role: Role, enabled: bool, hash: String) -> Account {
    Account {
        id,
        username: username.to_string(),
        role,
        enabled,
        hash,
        failures: 0,
        last_failure: None,
        locked_until: None,
        in_flight: 0,
    }
}

impl AuthStore {
    /// Authentication off: everything is served as Administrator.
    pub fn open() -> Self {
        Self::with_accounts(false, Vec::new())
    }

    fn with_accounts(enabled: bool, accounts: Vec<Account>) -> Self {
        let next = accounts.len() as u32 + 1;
        let dummy_hash = if enabled {
            // The dearest of the accounts' costs: an unknown name never
            // answers faster than a known one.
            let cost = accounts
                .iter()
                .filter_map(|a| hash_cost(&a.hash))
                .max()
                .unwrap_or(NEW_HASH_COST);
            bcrypt::hash(random_hex(16), cost).unwrap_or_default()
        } else {
            String::new()
        };
        AuthStore {
            enabled,
            accounts: RwLock::new(accounts),
            next_account: AtomicU32::new(next),
            verified: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            session_timeout: AtomicU64::new(DEFAULT_SESSION_TIMEOUT),
            lockout: Mutex::new(LockoutPolicy::default()),
            gate: BcryptGate::new(),
            dummy_hash,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How many bcrypt verifications have run (figures and tests).
    pub fn bcrypt_checks(&self) -> u64 {
        self.gate.checks.load(Ordering::Relaxed)
    }

    fn read_accounts(&self) -> std::sync::RwLockReadGuard<'_, Vec<Account>> {
        read(&self.accounts)
    }

    fn write_accounts(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Account>> {
        write(&self.accounts)
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        lock(&self.sessions)
    }
}

#[cfg(test)]
mod tests;
