//! IPMI's settings: `--ipmi-*` over the config's `[ipmi]`. IPMI over LAN
//! is served only where a port or an account asks for it, and only with
//! the accounts given.

use super::{Cli, CliError};
use crate::config::{self, ConfigFile};

impl Cli {
    /// `--ipmi-*` over the config's `[ipmi]`.
    pub(super) fn ipmi_settings(
        &self,
        file: &str,
        cfg: &ConfigFile,
    ) -> Result<crate::ipmi::IpmiSettings, CliError> {
        use crate::ipmi::users::Users;
        let section = cfg.ipmi.clone().unwrap_or_default();
        // The key that asked for accounts, for the errors below.
        let users_key = if !self.ipmi_users.is_empty() {
            Some("--ipmi-user".to_string())
        } else {
            section
                .users
                .as_ref()
                .map(|_| format!("{file}: ipmi.users"))
        };
        let users = if !self.ipmi_users.is_empty() {
            let list = self
                .ipmi_users
                .iter()
                .map(|u| Users::parse_flag(u))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CliError::Ipmi(format!("--ipmi-user: {e}")))?;
            Users::new(list).map_err(|e| CliError::Ipmi(format!("--ipmi-user: {e}")))?
        } else if let Some(list) = section.users {
            Users::new(list.into_iter().map(config::IpmiUserEntry::user).collect())
                .map_err(|e| CliError::Ipmi(format!("{file}: ipmi.users: {e}")))?
        } else {
            Users::default()
        };
        let port_key = match (self.ipmi_port, section.port) {
            (Some(p), _) => Some((p, "--ipmi-port".to_string())),
            (None, Some(p)) => Some((p, format!("{file}: ipmi.port"))),
            (None, None) => None,
        };
        // Served only where asked for: a port, or accounts (on 623).
        let (port, asked_by) = match (port_key, users_key) {
            (Some((0, _)), _) | (None, None) => (0, None),
            (Some((p, key)), _) => (p, Some(key)),
            (None, Some(key)) => (623, Some(key)),
        };
        if let (Some(key), 0) = (&asked_by, users.enabled()) {
            return Err(CliError::Ipmi(format!(
                "{key}: IPMI on udp port {port} needs an account: give --ipmi-user \
                 NAME:PASSWORD[:PRIVILEGE] or [[ipmi.users]] (IPMI has no built-in one)"
            )));
        }
        Ok(crate::ipmi::IpmiSettings {
            port,
            asked_by,
            users,
            cipher_suite_zero: self.ipmi_cipher_suite_zero || section.cipher_suite_zero,
            in_band_dir: self.ipmi_in_band_dir.clone().or(section.in_band_dir),
            boot_mailbox: match (&self.ipmi_boot_mailbox, section.boot_mailbox) {
                (Some(t), _) => shoal_ipmi::boot::mailbox_blocks(t)
                    .map_err(|e| CliError::Ipmi(format!("--ipmi-boot-mailbox: {e}")))?,
                (None, Some(t)) => shoal_ipmi::boot::mailbox_blocks(&t)
                    .map_err(|e| CliError::Ipmi(format!("{file}: ipmi.boot_mailbox: {e}")))?,
                (None, None) => Vec::new(),
            },
        })
    }
}
