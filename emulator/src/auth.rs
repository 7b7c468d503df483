//! Accounts, credential checks and sessions.
//!
//! Accounts come from an htpasswd file (bcrypt hashes, as sushy-tools takes)
//! and from AccountService POSTs. A successful bcrypt check is remembered,
//! keyed by a SHA-256 of the credentials and tied to the hash it matched, so
//! Basic auth pays bcrypt once per credential (not per request) and a
//! password change invalidates the memory. Sessions are opaque random tokens
//! that expire after `SessionTimeout` seconds without use.
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

/// Cost for hashes Shoal creates itself (new accounts, password changes).
const NEW_HASH_COST: u32 = 10;
pub const MIN_PASSWORD_LEN: usize = 8;
pub const MAX_PASSWORD_LEN: usize = 64;
pub const DEFAULT_SESSION_TIMEOUT: u64 = 1800;
pub const SESSION_TIMEOUT_RANGE: (u64, u64) = (30, 86400);
pub const MAX_SESSIONS: usize = 1024;

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
    #[error("too many sessions")]
    SessionLimit,
    #[error("account {0} exists")]
    Exists(String),
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
    pub locked: bool,
    hash: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub username: String,
    pub role: Role,
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
    pub locked: Option<bool>,
}

pub struct AuthStore {
    enabled: bool,
    accounts: RwLock<Vec<Account>>,
    next_account: AtomicU32,
    verified: Mutex<HashMap<[u8; 32], String>>,
    sessions: Mutex<HashMap<String, Session>>,
    session_timeout: AtomicU64,
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

async fn bcrypt_verify(pass: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || bcrypt::verify(pass, &hash).unwrap_or(false))
        .await
        .unwrap_or(false)
}

async fn bcrypt_hash(pass: String) -> Result<String, AuthError> {
    tokio::task::spawn_blocking(move || bcrypt::hash(pass, NEW_HASH_COST))
        .await
        .map_err(|e| AuthError::Hash(e.to_string()))?
        .map_err(|e| AuthError::Hash(e.to_string()))
}

impl AuthStore {
    /// Authentication off: everything is served as Administrator.
    pub fn open() -> Self {
        Self::with_accounts(false, Vec::new())
    }

    fn with_accounts(enabled: bool, accounts: Vec<Account>) -> Self {
        let next = accounts.len() as u32 + 1;
        AuthStore {
            enabled,
            accounts: RwLock::new(accounts),
            next_account: AtomicU32::new(next),
            verified: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            session_timeout: AtomicU64::new(DEFAULT_SESSION_TIMEOUT),
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
            if !["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p)) {
                return Err(err("only bcrypt hashes are supported (htpasswd -B)"));
            }
            if accounts.iter().any(|a| a.username == user) {
                return Err(err("user listed twice"));
            }
            accounts.push(Account {
                id: (accounts.len() + 1).to_string(),
                username: user.to_string(),
                role: Role::Administrator,
                enabled: true,
                locked: false,
                hash: hash.to_string(),
            });
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

    /// Checks a user name and password (Basic auth or a login).
    pub async fn verify(&self, user: &str, pass: &str) -> Result<Principal, AuthError> {
        if !self.enabled {
            return Ok(Principal {
                username: Some(user.to_string()),
                ..Principal::anonymous_admin()
            });
        }
        let account = {
            let accounts = self.accounts.read().unwrap_or_else(|p| p.into_inner());
            accounts.iter().find(|a| a.username == user).cloned()
        };
        let Some(account) = account.filter(|a| a.enabled && !a.locked) else {
            return Err(AuthError::BadCredentials);
        };
        let key = cache_key(user, pass);
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let ok = match cached {
            Some(h) if h == account.hash => true,
            _ => bcrypt_verify(pass.to_string(), account.hash.clone()).await,
        };
        if !ok {
            return Err(AuthError::BadCredentials);
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

    /// Creates a session; returns it with its token.
    pub async fn login(&self, user: &str, pass: &str) -> Result<(Session, String), AuthError> {
        let p = self.verify(user, pass).await?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        self.expire(&mut sessions);
        if sessions.len() >= MAX_SESSIONS {
            return Err(AuthError::SessionLimit);
        }
        let token = random_hex(32);
        let s = Session {
            id: random_hex(8),
            username: user.to_string(),
            role: p.role,
            created: SystemTime::now(),
            last_used: Instant::now(),
        };
        sessions.insert(token.clone(), s.clone());
        Ok((s, token))
    }

    /// Resolves an `X-Auth-Token`, refreshing the session's idle timer.
    pub fn by_token(&self, token: &str) -> Option<Principal> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        self.expire(&mut sessions);
        let s = sessions.get_mut(token)?;
        s.last_used = Instant::now();
        Some(Principal {
            username: Some(s.username.clone()),
            role: s.role,
            session: Some(s.id.clone()),
        })
    }

    pub fn sessions(&self) -> Vec<Session> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        self.expire(&mut sessions);
        let mut v: Vec<Session> = sessions.values().cloned().collect();
        v.sort_by_key(|s| s.created);
        v
    }

    pub fn session(&self, id: &str) -> Option<Session> {
        self.sessions().into_iter().find(|s| s.id == id)
    }

    pub fn delete_session(&self, id: &str) -> bool {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let before = sessions.len();
        sessions.retain(|_, s| s.id != id);
        before != sessions.len()
    }

    /// Drops every session (a BMC reboot, an expiry forced by a fault);
    /// returns how many there were.
    pub fn drop_all_sessions(&self) -> usize {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let n = sessions.len();
        sessions.clear();
        n
    }

    fn drop_sessions_of(&self, username: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, s| s.username != username);
    }

    // ---- accounts ----

    pub fn accounts(&self) -> Vec<Account> {
        self.accounts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn account(&self, id: &str) -> Option<Account> {
        self.accounts().into_iter().find(|a| a.id == id)
    }

    pub async fn create_account(
        &self,
        username: &str,
        password: &str,
        role: Role,
        enabled: bool,
    ) -> Result<Account, AuthError> {
        check_password(password)?;
        let hash = bcrypt_hash(password.to_string()).await?;
        let mut accounts = self.accounts.write().unwrap_or_else(|p| p.into_inner());
        if accounts.iter().any(|a| a.username == username) {
            return Err(AuthError::Exists(username.to_string()));
        }
        let a = Account {
            id: self
                .next_account
                .fetch_add(1, Ordering::Relaxed)
                .to_string(),
            username: username.to_string(),
            role,
            enabled,
            locked: false,
            hash,
        };
        accounts.push(a.clone());
        Ok(a)
    }

    /// Applies a change atomically (all or nothing).
    pub async fn modify_account(
        &self,
        id: &str,
        change: AccountChange,
    ) -> Result<Account, AuthError> {
        if let Some(p) = &change.password {
            check_password(p)?;
        }
        let new_hash = match &change.password {
            Some(p) => Some(bcrypt_hash(p.clone()).await?),
            None => None,
        };
        let mut accounts = self.accounts.write().unwrap_or_else(|p| p.into_inner());
        let i = accounts
            .iter()
            .position(|a| a.id == id)
            .ok_or_else(|| AuthError::NoAccount(id.to_string()))?;
        if let Some(u) = &change.username {
            if accounts.iter().any(|a| &a.username == u && a.id != id) {
                return Err(AuthError::Exists(u.clone()));
            }
        }
        let mut a = accounts[i].clone();
        let old_name = a.username.clone();
        if let Some(u) = change.username {
            a.username = u;
        }
        if let Some(r) = change.role {
            a.role = r;
        }
        if let Some(e) = change.enabled {
            a.enabled = e;
        }
        if let Some(l) = change.locked {
            a.locked = l;
        }
        if let Some(h) = new_hash {
            a.hash = h;
        }
        let admins_left = accounts
            .iter()
            .enumerate()
            .filter(|(j, b)| {
                if *j == i {
                    a.role == Role::Administrator && a.enabled
                } else {
                    b.role == Role::Administrator && b.enabled
                }
            })
            .count();
        let admins_before = accounts
            .iter()
            .filter(|b| b.role == Role::Administrator && b.enabled)
            .count();
        // Only the change that takes away the last administrator is refused
        // (an open service may have none to begin with).
        if admins_left == 0 && admins_before > 0 {
            return Err(AuthError::LastAdmin);
        }
        let credentials_changed =
            a.hash != accounts[i].hash || a.username != old_name || !a.enabled || a.locked;
        accounts[i] = a.clone();
        drop(accounts);
        if credentials_changed {
            self.drop_sessions_of(&old_name);
        }
        Ok(a)
    }

    pub fn delete_account(&self, id: &str) -> Result<(), AuthError> {
        let mut accounts = self.accounts.write().unwrap_or_else(|p| p.into_inner());
        let i = accounts
            .iter()
            .position(|a| a.id == id)
            .ok_or_else(|| AuthError::NoAccount(id.to_string()))?;
        let admins = accounts
            .iter()
            .filter(|a| a.role == Role::Administrator && a.enabled)
            .count();
        if accounts[i].role == Role::Administrator && accounts[i].enabled && admins == 1 {
            return Err(AuthError::LastAdmin);
        }
        let gone = accounts.remove(i);
        drop(accounts);
        self.drop_sessions_of(&gone.username);
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
mod tests {
    use super::*;

    fn store() -> AuthStore {
        let h = bcrypt::hash("secret-pw", 4).unwrap();
        AuthStore::parse_htpasswd("pw", &format!("# comment\nadmin:{h}\n")).unwrap()
    }

    #[tokio::test]
    async fn verify_accepts_only_the_right_password() {
        let s = store();
        assert!(s.verify("admin", "secret-pw").await.is_ok());
        // Second time comes from the cache and must still be right.
        assert!(s.verify("admin", "secret-pw").await.is_ok());
        assert!(s.verify("admin", "wrong").await.is_err());
        assert!(s.verify("nobody", "secret-pw").await.is_err());
    }

    #[tokio::test]
    async fn password_change_invalidates_cache_and_sessions() {
        let s = store();
        let (_, token) = s.login("admin", "secret-pw").await.unwrap();
        assert!(s.by_token(&token).is_some());
        s.modify_account(
            "1",
            AccountChange {
                password: Some("another-pw".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(s.verify("admin", "secret-pw").await.is_err());
        assert!(s.verify("admin", "another-pw").await.is_ok());
        assert!(s.by_token(&token).is_none());
    }

    #[test]
    fn htpasswd_rejects_non_bcrypt() {
        let e = AuthStore::parse_htpasswd("f", "u:$apr1$abc$def\n")
            .err()
            .unwrap();
        assert!(e.to_string().contains("f:1"), "{e}");
    }

    #[tokio::test]
    async fn last_admin_is_protected() {
        let s = store();
        assert!(matches!(s.delete_account("1"), Err(AuthError::LastAdmin)));
        let r = s
            .modify_account(
                "1",
                AccountChange {
                    role: Some(Role::ReadOnly),
                    ..Default::default()
                },
            )
            .await;
        assert!(matches!(r, Err(AuthError::LastAdmin)));
    }

    #[tokio::test]
    async fn sessions_expire() {
        let s = store();
        let (_, token) = s.login("admin", "secret-pw").await.unwrap();
        s.set_session_timeout(0);
        assert!(s.by_token(&token).is_none());
    }
}
