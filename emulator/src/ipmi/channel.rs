//! What the channel tells a console before any session: Get Channel
//! Authentication Capabilities, Get Session Challenge (IPMI v1.5, not
//! served) and Get Channel Cipher Suites. Only what is served is
//! advertised.

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
