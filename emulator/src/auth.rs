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

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use rand::RngCore;
use sha2::{Digest, Sha256};

mod gate;

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

fn cache_key(user: &str, pass: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(user.as_bytes());
    h.update([0]);
    h.update(pass.as_bytes());
    h.finalize().into()
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

    /// Loads `user:hash` lines; only bcrypt (`$2a$`, `$2b$`, `$2y$`) is accepted.
    pub fn from_htpasswd(path: &Path) -> Result<Self, AuthError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Read {
            file: file.clone(),
            source,
        })?;
        Self::parse_htpasswd(&file, &text)
    }

    pub fn parse_htpasswd(file: &str, text: &str) -> Result<Self, AuthError> {
        let mut accounts: Vec<Account> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |message: &str| AuthError::Htpasswd {
                file: file.to_string(),
                line: i + 1,
                message: message.to_string(),
            };
            let (user, hash) = line
                .split_once(':')
                .ok_or_else(|| err("expected user:hash"))?;
            if user.is_empty() {
                return Err(err("empty user name"));
            }
            if user.len() > MAX_USERNAME_LEN {
                return Err(err(&format!(
                    "user name longer than {MAX_USERNAME_LEN} bytes"
                )));
            }
            if !["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p)) {
                return Err(err("only bcrypt hashes are supported (htpasswd -B)"));
            }
            if accounts.iter().any(|a| a.username == user) {
                return Err(err("user listed twice"));
            }
            let id = (accounts.len() + 1).to_string();
            accounts.push(new_account(
                id,
                user,
                Role::Administrator,
                true,
                hash.to_string(),
            ));
        }
        if accounts.is_empty() {
            return Err(AuthError::Htpasswd {
                file: file.to_string(),
                line: 0,
                message: "no accounts".into(),
            });
        }
        Ok(Self::with_accounts(true, accounts))
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How many bcrypt verifications have run (figures and tests).
    pub fn bcrypt_checks(&self) -> u64 {
        self.gate.checks.load(Ordering::Relaxed)
    }

    fn read_accounts(&self) -> std::sync::RwLockReadGuard<'_, Vec<Account>> {
        self.accounts.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write_accounts(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Account>> {
        self.accounts.write().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

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
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
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
        self.verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, account.hash.clone());
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
        *self.lockout.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the policy; accounts already locked stay locked until
    /// their time is up (or an administrator unlocks them).
    pub fn set_lockout_policy(&self, p: LockoutPolicy) {
        *self.lockout.lock().unwrap_or_else(|p| p.into_inner()) = p;
    }

    // ---- sessions ----

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
    fn drop_sessions_of(&self, username: &str, keep: Option<&str>) {
        self.lock_sessions()
            .retain(|_, s| s.username != username || Some(s.id.as_str()) == keep);
    }

    // ---- accounts ----

    pub fn accounts(&self) -> Vec<Account> {
        self.read_accounts().clone()
    }

    pub fn account(&self, id: &str) -> Option<Account> {
        self.read_accounts().iter().find(|a| a.id == id).cloned()
    }

    pub async fn create_account(
        &self,
        username: &str,
        password: &str,
        role: Role,
        enabled: bool,
    ) -> Result<Account, AuthError> {
        check_password(password)?;
        let hash = self.gate.hash(password).await?;
        let mut accounts = self.write_accounts();
        if accounts.iter().any(|a| a.username == username) {
            return Err(AuthError::Exists(username.to_string()));
        }
        if accounts.len() >= MAX_ACCOUNTS {
            return Err(AuthError::AccountLimit);
        }
        let id = self
            .next_account
            .fetch_add(1, Ordering::Relaxed)
            .to_string();
        let a = new_account(id, username, role, enabled, hash);
        accounts.push(a.clone());
        Ok(a)
    }

    /// Applies a change atomically (all or nothing). A new password ends
    /// the account's sessions but `by_session` (the one that asked, as
    /// bmcweb does); a new name or a disabled account ends them all.
    pub async fn modify_account(
        &self,
        id: &str,
        change: AccountChange,
        by_session: Option<&str>,
    ) -> Result<Account, AuthError> {
        if let Some(p) = &change.password {
            check_password(p)?;
        }
        let new_hash = match &change.password {
            Some(p) => Some(self.gate.hash(p).await?),
            None => None,
        };
        let mut accounts = self.write_accounts();
        let i = accounts
            .iter()
            .position(|a| a.id == id)
            .ok_or_else(|| AuthError::NoAccount(id.to_string()))?;
        if let Some(u) = &change.username {
            if accounts.iter().any(|a| &a.username == u && a.id != id) {
                return Err(AuthError::Exists(u.clone()));
            }
        }
        let old = accounts[i].clone();
        let mut a = old.clone();
        if let Some(u) = change.username {
            a.username = u;
        }
        if let Some(r) = change.role {
            a.role = r;
        }
        if let Some(e) = change.enabled {
            a.enabled = e;
        }
        if change.locked == Some(false) {
            a.locked_until = None;
            a.failures = 0;
        }
        if let Some(h) = new_hash {
            a.hash = h;
        }
        let admins_before = accounts.iter().filter(|b| b.admin()).count();
        let admins_left = admins_before - usize::from(old.admin()) + usize::from(a.admin());
        // Only the change that takes away the last administrator is refused
        // (an open service may have none to begin with).
        if admins_left == 0 && admins_before > 0 {
            return Err(AuthError::LastAdmin);
        }
        accounts[i] = a.clone();
        drop(accounts);
        if a.username != old.username || !a.enabled {
            self.drop_sessions_of(&old.username, None);
        } else if a.hash != old.hash {
            self.drop_sessions_of(&old.username, by_session);
        }
        if a.hash != old.hash {
            self.verified
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|_, h| *h != old.hash);
        }
        Ok(a)
    }

    pub fn delete_account(&self, id: &str) -> Result<(), AuthError> {
        let mut accounts = self.write_accounts();
        let i = accounts
            .iter()
            .position(|a| a.id == id)
            .ok_or_else(|| AuthError::NoAccount(id.to_string()))?;
        let admins = accounts.iter().filter(|a| a.admin()).count();
        if accounts[i].admin() && admins == 1 {
            return Err(AuthError::LastAdmin);
        }
        let gone = accounts.remove(i);
        drop(accounts);
        self.drop_sessions_of(&gone.username, None);
        self.verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, h| *h != gone.hash);
        Ok(())
    }
}

fn check_password(p: &str) -> Result<(), AuthError> {
    if p.chars().count() < MIN_PASSWORD_LEN || p.len() > MAX_PASSWORD_LEN {
        return Err(AuthError::PasswordLength);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
