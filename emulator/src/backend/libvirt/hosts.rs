//! The libvirt hosts: one long-lived connection per URI (reopened when
//! it died, at most every [`RETRY_AFTER`]; `Unavailable` meanwhile), the
//! domains the options allow, where each domain was last seen (`homes`),
//! the listing across hosts (an unreachable host's domains as last seen),
//! and finding a domain by UUID or name with lookups, never a listing.

use std::collections::HashMap;
use std::sync::Mutex;

use virt::connect::Connect;
use virt::domain::Domain;
use virt::sys;

use super::{bump, virt_err, Inner};
use crate::backend::{BackendError, Result};
use crate::model::SystemRef;
use crate::sync::lock;

pub(super) struct Conn {
    pub(super) uri: String,
    /// [`remote_uri`] of `uri`.
    pub(super) remote: bool,
    pub(super) conn: Mutex<Option<Connect>>,
    /// After a failed reopen: until when requests get `Unavailable` at
    /// once rather than each waiting on another attempt.
    pub(super) retry_at: Mutex<Option<std::time::Instant>>,
}

/// How long an unreachable host is left alone after a failed reopen.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

impl Inner {
    /// Runs `f` on connection `i`, reopening it first if it was lost.
    pub(super) fn with_conn<T>(
        &self,
        i: usize,
        f: impl FnOnce(&Connect) -> std::result::Result<T, virt::error::Error>,
    ) -> Result<T> {
        let c = &self.conns[i];
        let mut guard = lock(&c.conn);
        if guard.as_ref().map(|c| c.is_alive().unwrap_or(false)) != Some(true) {
            let mut retry_at = lock(&c.retry_at);
            let now = std::time::Instant::now();
            if retry_at.is_some_and(|t| now < t) {
                return Err(BackendError::Unavailable(format!(
                    "{}: unreachable (retried every {} s)",
                    c.uri,
                    RETRY_AFTER.as_secs()
                )));
            }
            tracing::warn!(uri = %c.uri, "reconnecting to libvirt");
            match Connect::open(Some(&c.uri)) {
                Ok(conn) => {
                    *guard = Some(conn);
                    *retry_at = None;
                    tracing::info!(uri = %c.uri, "connected to libvirt again");
                }
                Err(e) => {
                    *guard = None;
                    *retry_at = Some(now + RETRY_AFTER);
                    return Err(BackendError::Unavailable(format!(
                        "{}: {}",
                        c.uri,
                        e.message()
                    )));
                }
            }
        }
        f(guard.as_ref().expect("connected")).map_err(virt_err)
    }

    pub(super) fn allowed(&self, name: &str, uuid: &str) -> bool {
        self.opts.allow.is_empty()
            || self
                .opts
                .allow
                .iter()
                .any(|a| a == name || a.eq_ignore_ascii_case(uuid))
    }

    pub(super) fn homes(&self) -> std::sync::MutexGuard<'_, HashMap<String, (usize, String)>> {
        lock(&self.homes)
    }

    /// Notes that connection `i` serves this domain.
    pub(super) fn seen(&self, i: usize, id: &str, name: &str) {
        let mut homes = self.homes();
        match homes.get_mut(id) {
            Some((h, n)) if *h == i && n == name => {}
            Some(home) => *home = (i, name.to_string()),
            None => {
                homes.insert(id.to_string(), (i, name.to_string()));
            }
        }
    }

    /// Every domain of every host; an unreachable host's as last seen.
    pub(super) fn list(&self) -> Result<Vec<SystemRef>> {
        let mut out = Vec::new();
        for i in 0..self.conns.len() {
            let flags =
                sys::VIR_CONNECT_LIST_DOMAINS_ACTIVE | sys::VIR_CONNECT_LIST_DOMAINS_INACTIVE;
            let doms = match self.with_conn(i, |c| c.list_all_domains(flags)) {
                Ok(d) => d,
                Err(BackendError::Unavailable(why)) => {
                    tracing::warn!(%why, "host unreachable: its domains as last seen");
                    out.extend(self.homes().iter().filter(|(_, (h, _))| *h == i).map(
                        |(id, (_, name))| SystemRef {
                            id: id.clone(),
                            name: name.clone(),
                        },
                    ));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut here = Vec::new();
            for d in doms {
                let (name, uuid) = (
                    d.name().map_err(virt_err)?,
                    d.uuid_string().map_err(virt_err)?,
                );
                if self.allowed(&name, &uuid) {
                    here.push(SystemRef { id: uuid, name });
                }
            }
            // The host's list is the truth: domains gone from it are gone.
            let mut homes = self.homes();
            homes.retain(|id, (h, _)| *h != i || here.iter().any(|r| r.id == *id));
            for r in &here {
                homes.insert(r.id.clone(), (i, r.name.clone()));
            }
            drop(homes);
            out.extend(here);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// After a search of every host found nothing: `Unavailable` when the
    /// key names a domain last seen on a host that did not answer
    /// (`down`), else not found.
    pub(super) fn missing(&self, key: &str, down: Vec<(usize, BackendError)>) -> Result<()> {
        let homes = self.homes();
        for (i, err) in down {
            let on_down_host = homes
                .iter()
                .any(|(id, (h, name))| *h == i && (id.eq_ignore_ascii_case(key) || name == key));
            if on_down_host {
                return Err(err);
            }
        }
        Ok(())
    }

    /// The system a client names, by UUID (hyphenated, any case) or domain
    /// name, on any connection: lookups, not a listing. A key that is a
    /// UUID but names no domain may still be a domain's name.
    pub(super) fn find(&self, key: &str) -> Result<Option<SystemRef>> {
        let hyphenated = uuid::Uuid::parse_str(key)
            .is_ok_and(|u| u.hyphenated().to_string().eq_ignore_ascii_case(key));
        if hyphenated {
            if let Some(found) = self.lookup(key, |c, k| c.lookup_domain_by_uuid_string(k))? {
                return Ok(Some(found));
            }
        }
        self.lookup(key, |c, k| c.lookup_domain_by_name(k))
    }

    /// The first allowed domain `how` finds on any connection.
    pub(super) fn lookup(
        &self,
        key: &str,
        how: fn(&Connect, &str) -> std::result::Result<Domain, virt::error::Error>,
    ) -> Result<Option<SystemRef>> {
        let mut down = Vec::new();
        for i in 0..self.conns.len() {
            bump(&self.calls.lookups);
            let dom = match self.with_conn(i, |c| how(c, key)) {
                Ok(d) => d,
                Err(BackendError::NotFound(_)) => continue,
                Err(e @ BackendError::Unavailable(_)) => {
                    // Another host may have it; if not, this one might.
                    down.push((i, e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let (name, uuid) = (
                dom.name().map_err(virt_err)?,
                dom.uuid_string().map_err(virt_err)?,
            );
            if self.allowed(&name, &uuid) {
                self.seen(i, &uuid, &name);
                return Ok(Some(SystemRef { id: uuid, name }));
            }
        }
        self.missing(key, down)?;
        Ok(None)
    }

    /// The domain with this UUID on any connection.
    pub(super) fn domain(&self, id: &str) -> Result<(usize, Domain)> {
        let mut down = Vec::new();
        // Where it was last seen first: a request for one host's domain
        // does not wait on another host.
        let home = self.homes().get(id).map(|(h, _)| *h);
        let order = home
            .into_iter()
            .chain((0..self.conns.len()).filter(|i| Some(*i) != home));
        for i in order {
            bump(&self.calls.lookups);
            match self.with_conn(i, |c| c.lookup_domain_by_uuid_string(id)) {
                Ok(d) => {
                    let name = d.name().map_err(virt_err)?;
                    if !self.allowed(&name, id) {
                        break;
                    }
                    self.seen(i, id, &name);
                    return Ok((i, d));
                }
                Err(BackendError::NotFound(_)) => continue,
                Err(e @ BackendError::Unavailable(_)) => {
                    down.push((i, e));
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        self.missing(id, down)?;
        Err(BackendError::NotFound(id.to_string()))
    }
}
