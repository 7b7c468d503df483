//! What the channel tells a console before any session: Get Channel
//! Authentication Capabilities, Get Session Challenge (IPMI v1.5, not
//! served) and Get Channel Cipher Suites. Only what is served is
//! advertised. And the LAN channel's access settings (Get/Set Channel
//! Access), whose privilege limit caps every login.

use super::commands::cc;
use super::crypto;
use super::users::Privilege;

/// Get Channel Authentication Capabilities (IPMI v2.0 section 22.13,
/// table 22-15): what is served, RMCP+ only. No IPMI v1.5 authentication
/// type is offered, as no v1.5 session is answered: a v1.5 console
/// (`ipmitool -I lan`, FreeIPMI's LAN driver) stops at this answer
/// instead of waiting for a session challenge.
pub(super) fn auth_capabilities(data: &[u8]) -> (u8, Vec<u8>) {
    let [ch, level] = data else {
        return (cc::BAD_LENGTH, Vec::new());
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) || Privilege::from_u8(level & 0x0f).is_none() {
        return (cc::INVALID_FIELD, Vec::new());
    }
    let v2 = ch & 0x80 != 0;
    // Byte 2: v2.0 extended capabilities (bit 7, only when asked for;
    // reserved in the v1.5 form), no v1.5 authentication type (bits 5:0).
    // Byte 3: non-null user names only (bit 2), per-message and user
    // level authentication, no K_g. Byte 4: IPMI v2.0 connections only
    // (bit 1; bit 0, v1.5, clear).
    let b1 = if v2 { 0x80 } else { 0x00 };
    let b3 = if v2 { 0x02 } else { 0x00 };
    (cc::OK, vec![0x01, b1, 0x04, b3, 0, 0, 0, 0])
}

/// Get Session Challenge (IPMI v2.0 section 22.16), the first step of an
/// IPMI v1.5 session: no v1.5 authentication type is enabled, so every
/// one asked for is an invalid field (0xCC), whatever the name.
pub(super) fn session_challenge(data: &[u8]) -> (u8, Vec<u8>) {
    if data.len() != 17 {
        return (cc::BAD_LENGTH, Vec::new());
    }
    (cc::INVALID_FIELD, Vec::new())
}

/// Get Channel Cipher Suites (list by cipher suite): 16 bytes of records
/// per index.
pub(super) fn cipher_suites(data: &[u8], zero: bool) -> (u8, Vec<u8>) {
    let [ch, payload_type, index] = data else {
        return (cc::BAD_LENGTH, Vec::new());
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) || *payload_type != 0 {
        return (cc::INVALID_FIELD, Vec::new());
    }
    let mut records = Vec::new();
    let suites = zero
        .then_some(crypto::SUITE_ZERO)
        .into_iter()
        .chain(crypto::SUITES.iter().copied());
    for s in suites {
        records.extend_from_slice(&[
            0xc0,
            s.id,
            s.auth.id(),
            0x40 | s.integrity.id(),
            0x80 | s.conf.id(),
        ]);
    }
    let at = (index & 0x3f) as usize * 16;
    if at > records.len() {
        return (cc::INVALID_FIELD, Vec::new());
    }
    let mut out = vec![0x01];
    out.extend_from_slice(&records[at..(at + 16).min(records.len())]);
    (cc::OK, out)
}

/// The LAN channel's access settings, as one of the two sets (volatile:
/// in effect now; non-volatile: what the BMC starts with) holds them.
/// The access mode is always "always available" and PEF alerting always
/// off (this BMC sends no alerts): a Set asking for another is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Bits 4 and 3 of the access byte, per-message and user-level
    /// authentication disabled: they concern IPMI v1.5 sessions, which
    /// are not served, so they are kept as set and change nothing else.
    pub v15_auth: u8,
    /// The channel's privilege limit: no session is set up above it.
    pub limit: Privilege,
}

impl Default for Access {
    fn default() -> Self {
        Access {
            v15_auth: 0,
            limit: Privilege::Administrator,
        }
    }
}

/// The channel's two sets of access settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelAccess {
    pub volatile: Access,
    pub non_volatile: Access,
}

/// Access mode "always available" (bits 2:0 of the access byte).
const ALWAYS_AVAILABLE: u8 = 0x02;
/// PEF alerting disabled (bit 5 of the access byte).
const ALERTING_DISABLED: u8 = 0x20;
const V15_AUTH_BITS: u8 = 0x18;

/// Which set a request's two top bits name: `Some(true)` volatile,
/// `Some(false)` non-volatile, `None` neither (00b for Set: leave it).
fn which(bits: u8) -> Result<Option<bool>, u8> {
    match bits >> 6 {
        0b00 => Ok(None),
        0b01 => Ok(Some(false)),
        0b10 => Ok(Some(true)),
        _ => Err(cc::INVALID_FIELD),
    }
}

/// Get Channel Access (IPMI v2.0 section 22.23) of the LAN channel.
pub(super) fn get_access(settings: &ChannelAccess, data: &[u8]) -> (u8, Vec<u8>) {
    let [ch, kind] = data else {
        return (cc::BAD_LENGTH, Vec::new());
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) {
        return (cc::INVALID_FIELD, Vec::new());
    }
    let a = match which(*kind) {
        Ok(Some(true)) => settings.volatile,
        Ok(Some(false)) => settings.non_volatile,
        _ => return (cc::INVALID_FIELD, Vec::new()),
    };
    let access = ALERTING_DISABLED | a.v15_auth | ALWAYS_AVAILABLE;
    (cc::OK, vec![access, a.limit as u8])
}

/// Set Channel Access (IPMI v2.0 section 22.22) of the LAN channel: the
/// whole request is checked before either set changes.
pub(super) fn set_access(settings: &mut ChannelAccess, data: &[u8]) -> (u8, Vec<u8>) {
    let [ch, access, limit] = data else {
        return (cc::BAD_LENGTH, Vec::new());
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) {
        return (cc::INVALID_FIELD, Vec::new());
    }
    let (Ok(set_access), Ok(set_limit)) = (which(*access), which(*limit)) else {
        return (cc::INVALID_FIELD, Vec::new());
    };
    if set_access.is_some() {
        if access & 0x07 != ALWAYS_AVAILABLE {
            // Access mode not supported.
            return (0x83, Vec::new());
        }
        if access & ALERTING_DISABLED == 0 {
            return (cc::INVALID_FIELD, Vec::new());
        }
    }
    let new_limit = match set_limit {
        None => None,
        Some(_) => match Privilege::from_u8(limit & 0x0f) {
            Some(p) if p != Privilege::Oem => Some(p),
            _ => return (cc::INVALID_FIELD, Vec::new()),
        },
    };
    let mut apply = |volatile: bool, f: &dyn Fn(&mut Access)| {
        f(if volatile {
            &mut settings.volatile
        } else {
            &mut settings.non_volatile
        })
    };
    if let Some(v) = set_access {
        apply(v, &|a| a.v15_auth = access & V15_AUTH_BITS);
    }
    if let (Some(v), Some(p)) = (set_limit, new_limit) {
        apply(v, &|a| a.limit = p);
    }
    (cc::OK, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_read_back_from_its_own_set_only() {
        let mut s = ChannelAccess::default();
        assert_eq!(get_access(&s, &[1, 0x80]), (0, vec![0x22, 4]));
        // Volatile limit OPERATOR, access as read, both auth bits off.
        assert_eq!(set_access(&mut s, &[1, 0x80 | 0x22 | 0x18, 0x80 | 3]).0, 0);
        assert_eq!(get_access(&s, &[1, 0x80]), (0, vec![0x3a, 3]));
        assert_eq!(get_access(&s, &[0x0e, 0x40]), (0, vec![0x22, 4]));
        // 00b: leave that set; a limit alone.
        assert_eq!(set_access(&mut s, &[1, 0x22, 0x40 | 2]).0, 0);
        assert_eq!(get_access(&s, &[1, 0x40]), (0, vec![0x22, 2]));
        assert_eq!(get_access(&s, &[1, 0x80]), (0, vec![0x3a, 3]));
    }

    #[test]
    fn a_refused_set_changes_neither_set() {
        let mut s = ChannelAccess::default();
        let before = s;
        for (req, code) in [
            (vec![1, 0x80 | 0x20, 0x80 | 3], 0x83), // mode disabled
            (vec![1, 0x80 | 0x23, 0x80 | 3], 0x83), // mode shared
            (vec![1, 0x80 | 0x02, 0x80 | 3], 0xcc), // alerting on
            (vec![1, 0x80 | 0x22, 0x80], 0xcc),     // limit 0
            (vec![1, 0x80 | 0x22, 0x80 | 5], 0xcc), // limit OEM
            (vec![1, 0xc0 | 0x22, 0x80 | 3], 0xcc), // set 11b
            (vec![2, 0x80 | 0x22, 0x80 | 3], 0xcc), // channel 2
            (vec![1, 0x80 | 0x22], 0xc7),           // short
        ] {
            assert_eq!(set_access(&mut s, &req).0, code, "{req:02x?}");
            assert_eq!(s, before, "{req:02x?}");
        }
        assert_eq!(get_access(&s, &[1, 0x00]).0, 0xcc);
        assert_eq!(get_access(&s, &[1, 0xc0]).0, 0xcc);
        assert_eq!(get_access(&s, &[3, 0x80]).0, 0xcc);
    }
}
