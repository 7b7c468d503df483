//! Accounts: loaded from an htpasswd file (bcrypt only), created,
//! changed and deleted through the AccountService.
//!
//! Invariants: a change applies whole or not at all; a new password ends
//! the account's other sessions and forgets its remembered checks; the
//! last administrator cannot go.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{
    new_account, Account, AccountChange, AuthError, AuthStore, Role, MAX_ACCOUNTS,
    MAX_PASSWORD_LEN, MAX_USERNAME_LEN, MIN_PASSWORD_LEN,
};
use crate::sync::lock;

impl AuthStore {
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
            lock(&self.verified).retain(|_, h| *h != old.hash);
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
        lock(&self.verified).retain(|_, h| *h != gone.hash);
        Ok(())
    }
}

fn check_password(p: &str) -> Result<(), AuthError> {
    if p.chars().count() < MIN_PASSWORD_LEN || p.len() > MAX_PASSWORD_LEN {
        return Err(AuthError::PasswordLength);
    }
    Ok(())
}
