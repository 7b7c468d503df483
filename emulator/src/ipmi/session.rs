//! RMCP+ sessions of one BMC: Open Session, RAKP 1 to 4, the inbound
//! sequence-number window, idle timeout, Close Session and the bounds
//! that keep a flood of half-open sessions from exhausting the BMC.
//!
//! The table is plain data behind the BMC's lock; nothing here awaits.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::commands::cc;
use super::crypto;
use super::crypto::{ct_eq, Auth, Conf, Integrity, Keys, Suite, SUITES, SUITE_ZERO};
use super::users::{Privilege, User, Users};

/// An established session left idle this long is closed (the IPMI
/// default session inactivity timeout).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A session not through RAKP 3 this long after Open Session is dropped.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Established sessions per BMC; one more gets "insufficient resources".
pub const MAX_ACTIVE: usize = 16;
/// Sessions in setup per BMC; one more evicts the oldest of them.
pub const MAX_PENDING: usize = 64;
/// How far around the highest sequence number seen a packet may be.
const WINDOW: u32 = 16;

/// RMCP+ status codes (IPMI v2.0 table 13-15).
pub mod status {
    pub const NO_RESOURCES: u8 = 0x01;
    pub const INVALID_SESSION_ID: u8 = 0x02;
    pub const INVALID_ROLE: u8 = 0x09;
    pub const INVALID_NAME_LENGTH: u8 = 0x0c;
    pub const UNAUTHORIZED_NAME: u8 = 0x0d;
    pub const INVALID_INTEGRITY_CHECK: u8 = 0x0f;
    pub const NO_CIPHER_SUITE_MATCH: u8 = 0x11;
    pub const ILLEGAL_PARAMETER: u8 = 0x12;
}

/// Where a session in setup is.
#[derive(Debug, Clone)]
enum Setup {
    Opened,
    /// RAKP 2 sent: what RAKP 3 and the keys need.
    Challenged {
        rm: [u8; 16],
        rc: [u8; 16],
        role: u8,
        name: Vec<u8>,
        user: User,
    },
}

#[derive(Debug, Clone)]
struct Pending {
    created: Instant,
    console_sid: u32,
    suite: Suite,
    setup: Setup,
}

/// An established session.
#[derive(Debug, Clone)]
pub struct Active {
    pub console_sid: u32,
    pub keys: Keys,
    pub user: User,
    /// The most the session may raise itself to (RAKP 1's role).
    pub max: Privilege,
    /// The privilege the session operates at now.
    pub privilege: Privilege,
    pub last_seen: Instant,
    window: Window,
    out_seq: u32,
    /// RAKP 4 as sent, for a console that repeats RAKP 3 because it
    /// lost it; dropped with the first packet of the session.
    rakp4: Option<Vec<u8>>,
    /// The last request and its response (`None` while it is carried
    /// out), for a retransmitted request: answered again, never carried
    /// out twice.
    pub last: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Active {
    /// The next outbound session sequence number: 1, 2, ... (never 0).
    pub fn next_out_seq(&mut self) -> u32 {
        self.out_seq = self.out_seq.wrapping_add(1).max(1);
        self.out_seq
    }
}

/// The inbound sequence numbers seen: the highest and a bitmap below it.
#[derive(Debug, Clone, Default)]
struct Window {
    highest: u32,
    seen: u32,
}

impl Window {
    /// Accepts `seq` once: the first packet sets the base (clients start
    /// anywhere: pyghmi at 1, ipmitool at 3 or more); later ones must be
    /// within the window around the highest, and unseen.
    fn accept(&mut self, seq: u32) -> bool {
        if seq == 0 {
            return false;
        }
        if self.highest == 0 {
            self.highest = seq;
            self.seen = 1;
            return true;
        }
        let ahead = seq.wrapping_sub(self.highest);
        if ahead != 0 && ahead <= WINDOW {
            self.seen = (self.seen << ahead) | 1;
            self.highest = seq;
            return true;
        }
        let behind = self.highest.wrapping_sub(seq);
        if behind < WINDOW && self.seen & (1 << behind) == 0 {
            self.seen |= 1 << behind;
            return true;
        }
        false
    }
}

/// The sessions of one BMC.
#[derive(Debug, Default)]
pub struct Sessions {
    pending: HashMap<u32, Pending>,
    active: HashMap<u32, Active>,
}

/// A parsed Open Session Request.
struct Proposal {
    tag: u8,
    max_priv: u8,
    console_sid: u32,
    auth: Option<u8>,
    integrity: Option<u8>,
    conf: Option<u8>,
}

fn parse_proposal(p: &[u8]) -> Option<Proposal> {
    if p.len() != 32 && p.len() != 8 {
        return None;
    }
    // Each algorithm record: type, 2 reserved, length (0: "any"), algorithm.
    let alg = |at: usize, kind: u8| -> Option<Option<u8>> {
        let r = p.get(at..at + 8)?;
        if r[0] != kind {
            return None;
        }
        Some(if r[3] == 0 { None } else { Some(r[4] & 0x3f) })
    };
    let (auth, integrity, conf) = if p.len() == 32 {
        (alg(8, 0)?, alg(16, 1)?, alg(24, 2)?)
    } else {
        (None, None, None)
    };
    Some(Proposal {
        tag: p[0],
        max_priv: p[1] & 0x0f,
        console_sid: u32::from_le_bytes([p[4], p[5], p[6], p[7]]),
        auth,
        integrity,
        conf,
    })
}

fn algorithm_record(kind: u8, alg: u8) -> [u8; 8] {
    [kind, 0, 0, 8, alg, 0, 0, 0]
}

impl Sessions {
    /// Drops idle established sessions and stale setups; the established
    /// ones dropped.
    pub fn prune(&mut self, now: Instant) -> Vec<u32> {
        self.pending
            .retain(|_, p| now.duration_since(p.created) < SETUP_TIMEOUT);
        let idle: Vec<u32> = self
            .active
            .iter()
            .filter(|(_, a)| now.duration_since(a.last_seen) >= IDLE_TIMEOUT)
            .map(|(k, _)| *k)
            .collect();
        for k in &idle {
            self.active.remove(k);
        }
        idle
    }

    pub fn active_count(&self) -> usize {
        self.active.len()
    }

    pub fn get_mut(&mut self, bmc_sid: u32) -> Option<&mut Active> {
        self.active.get_mut(&bmc_sid)
    }

    pub fn close(&mut self, bmc_sid: u32) -> bool {
        self.active.remove(&bmc_sid).is_some()
    }

    /// Open Session Request → Open Session Response.
    pub fn open(&mut self, req: &[u8], suite_zero: bool, now: Instant) -> Option<Vec<u8>> {
        self.prune(now);
        let Some(p) = parse_proposal(req) else {
            // Too short to answer properly: an answer with what is known.
            let tag = req.first().copied()?;
            return Some(vec![tag, status::ILLEGAL_PARAMETER, 0, 0, 0, 0, 0, 0]);
        };
        let fail = |code: u8| {
            let mut r = vec![p.tag, code, 0, 0];
            r.extend_from_slice(&p.console_sid.to_le_bytes());
            Some(r)
        };
        if p.max_priv > Privilege::Oem as u8 {
            return fail(status::INVALID_ROLE);
        }
        let zero = suite_zero.then_some(SUITE_ZERO);
        let fits = |s: &Suite| {
            p.auth.is_none_or(|a| a == s.auth.id())
                && p.integrity.is_none_or(|i| i == s.integrity.id())
                && p.conf.is_none_or(|c| c == s.conf.id())
        };
        let Some(suite) = SUITES.iter().rev().chain(zero.iter()).find(|s| fits(s)) else {
            return fail(status::NO_CIPHER_SUITE_MATCH);
        };
        if self.active.len() >= MAX_ACTIVE {
            return fail(status::NO_RESOURCES);
        }
        if self.pending.len() >= MAX_PENDING {
            if let Some(oldest) = self
                .pending
                .iter()
                .min_by_key(|(_, p)| p.created)
                .map(|(k, _)| *k)
            {
                self.pending.remove(&oldest);
            }
        }
        let bmc_sid = loop {
            let id: u32 = rand::random();
            if id != 0 && !self.pending.contains_key(&id) && !self.active.contains_key(&id) {
                break id;
            }
        };
        self.pending.insert(
            bmc_sid,
            Pending {
                created: now,
                console_sid: p.console_sid,
                suite: *suite,
                setup: Setup::Opened,
            },
        );
        let max = if p.max_priv == 0 {
            Privilege::Administrator as u8
        } else {
            p.max_priv
        };
        let mut r = vec![p.tag, 0, max, 0];
        r.extend_from_slice(&p.console_sid.to_le_bytes());
        r.extend_from_slice(&bmc_sid.to_le_bytes());
        r.extend_from_slice(&algorithm_record(0, suite.auth.id()));
        r.extend_from_slice(&algorithm_record(1, suite.integrity.id()));
        r.extend_from_slice(&algorithm_record(2, suite.conf.id()));
        Some(r)
    }

    /// RAKP 1 → RAKP 2.
    pub fn rakp1(&mut self, req: &[u8], users: &Users, guid: &[u8; 16]) -> Option<Vec<u8>> {
        let tag = *req.first()?;
        let bmc_sid = u32::from_le_bytes(req.get(4..8)?.try_into().ok()?);
        let fail = |code: u8, console_sid: u32| {
            let mut r = vec![tag, code, 0, 0];
            r.extend_from_slice(&console_sid.to_le_bytes());
            Some(r)
        };
        let Some(pending) = self.pending.get_mut(&bmc_sid) else {
            return fail(status::INVALID_SESSION_ID, 0);
        };
        let console_sid = pending.console_sid;
        if req.len() < 28 {
            return fail(status::ILLEGAL_PARAMETER, console_sid);
        }
        let name_len = req[27] as usize;
        if name_len > 16 || req.len() != 28 + name_len {
            return fail(status::INVALID_NAME_LENGTH, console_sid);
        }
        let mut rm = [0u8; 16];
        rm.copy_from_slice(&req[8..24]);
        let role = req[24];
        let name = req[28..].to_vec();
        let Some(wanted) = Privilege::from_u8(role & 0x0f) else {
            return fail(status::INVALID_ROLE, console_sid);
        };
        let Some(user) = users.find(&name) else {
            self.pending.remove(&bmc_sid);
            return fail(status::UNAUTHORIZED_NAME, console_sid);
        };
        if wanted > user.privilege {
            self.pending.remove(&bmc_sid);
            return fail(status::INVALID_ROLE, console_sid);
        }
        let rc: [u8; 16] = rand::random();
        let suite = pending.suite;
        let code = suite.auth.hmac(
            &user.password,
            &[
                &console_sid.to_le_bytes(),
                &bmc_sid.to_le_bytes(),
                &rm,
                &rc,
                guid,
                &[role, name_len as u8],
                &name,
            ],
        );
        pending.setup = Setup::Challenged {
            rm,
            rc,
            role,
            name,
            user: user.clone(),
        };
        let mut r = vec![tag, 0, 0, 0];
        r.extend_from_slice(&console_sid.to_le_bytes());
        r.extend_from_slice(&rc);
        r.extend_from_slice(guid);
        r.extend_from_slice(&code);
        Some(r)
    }

    /// RAKP 3 → RAKP 4, and the session is established.
    pub fn rakp3(&mut self, req: &[u8], guid: &[u8; 16], now: Instant) -> Option<Vec<u8>> {
        let tag = *req.first()?;
        let bmc_sid = u32::from_le_bytes(req.get(4..8)?.try_into().ok()?);
        if let Some(a) = self.active.get(&bmc_sid) {
            // RAKP 4 was lost: the same answer again.
            return a.rakp4.clone();
        }
        let fail = |code: u8, console_sid: u32| {
            let mut r = vec![tag, code, 0, 0];
            r.extend_from_slice(&console_sid.to_le_bytes());
            Some(r)
        };
        let Some(pending) = self.pending.remove(&bmc_sid) else {
            return fail(status::INVALID_SESSION_ID, 0);
        };
        let Setup::Challenged {
            rm,
            rc,
            role,
            name,
            user,
        } = pending.setup
        else {
            return fail(status::INVALID_SESSION_ID, pending.console_sid);
        };
        if req[1] != 0 {
            // The console gave up (a wrong password shows there): no session.
            return None;
        }
        let suite = pending.suite;
        let console_sid = pending.console_sid;
        let role_name = [role, name.len() as u8];
        let expected = suite.auth.hmac(
            &user.password,
            &[&rc, &console_sid.to_le_bytes(), &role_name, &name],
        );
        if !ct_eq(req.get(8..).unwrap_or_default(), &expected) {
            return fail(status::INVALID_INTEGRITY_CHECK, console_sid);
        }
        if self.active.len() >= MAX_ACTIVE {
            return fail(status::NO_RESOURCES, console_sid);
        }
        let sik = suite
            .auth
            .hmac(&user.password, &[&rm, &rc, &role_name, &name]);
        let mut icv = suite.auth.hmac(&sik, &[&rm, &bmc_sid.to_le_bytes(), guid]);
        icv.truncate(suite.auth.icv_len());
        let mut r = vec![tag, 0, 0, 0];
        r.extend_from_slice(&console_sid.to_le_bytes());
        r.extend_from_slice(&icv);
        let max = Privilege::from_u8(role & 0x0f).unwrap_or(Privilege::User);
        let keys = if suite.auth == Auth::None {
            Keys::derive(suite, &[])
        } else {
            Keys::derive(suite, &sik)
        };
        self.active.insert(
            bmc_sid,
            Active {
                console_sid,
                keys,
                user,
                max,
                privilege: max.min(Privilege::User),
                last_seen: now,
                window: Window::default(),
                out_seq: 0,
                rakp4: Some(r.clone()),
                last: None,
            },
        );
        Some(r)
    }

    /// Checks an in-session packet's sequence number; `false` drops it.
    pub fn accept_seq(&mut self, bmc_sid: u32, seq: u32, now: Instant) -> bool {
        let Some(a) = self.active.get_mut(&bmc_sid) else {
            return false;
        };
        if !a.window.accept(seq) {
            return false;
        }
        a.last_seen = now;
        a.rakp4 = None;
        true
    }
}

/// Whether a packet's protection matches what the session's suite
/// requires: integrity when the suite has it, encryption likewise.
pub fn protection_ok(suite: &Suite, authenticated: bool, encrypted: bool) -> bool {
    let needs_auth = suite.integrity != Integrity::None;
    let needs_conf = suite.conf != Conf::None;
    authenticated == needs_auth && encrypted == needs_conf
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_takes_each_number_once_and_refuses_stale_ones() {
        let mut w = Window::default();
        assert!(!w.accept(0));
        assert!(w.accept(5), "any first number is the base");
        assert!(!w.accept(5), "a replay");
        assert!(w.accept(7));
        assert!(w.accept(6), "late but unseen");
        assert!(!w.accept(6));
        assert!(w.accept(7 + WINDOW));
        assert!(!w.accept(7 + 2 * WINDOW + 1), "too far ahead");
        assert!(!w.accept(1), "too far behind");
    }

    #[test]
    fn proposals_pick_the_matching_suite() {
        let mut s = Sessions::default();
        let now = Instant::now();
        let open = |auth: u8, integ: u8, conf: u8| {
            let mut p = vec![1, 0, 0, 0, 0x78, 0x56, 0x34, 0x12];
            p.extend_from_slice(&algorithm_record(0, auth));
            p.extend_from_slice(&algorithm_record(1, integ));
            p.extend_from_slice(&algorithm_record(2, conf));
            p
        };
        let r = s.open(&open(3, 4, 1), false, now).unwrap();
        assert_eq!((r[1], r[2], r[16], r[24], r[32]), (0, 4, 3, 4, 1));
        let r = s.open(&open(1, 1, 1), false, now).unwrap();
        assert_eq!((r[1], r[16], r[24], r[32]), (0, 1, 1, 1));
        // Suite 0 only when enabled.
        assert_eq!(
            s.open(&open(0, 0, 0), false, now).unwrap()[1],
            status::NO_CIPHER_SUITE_MATCH
        );
        assert_eq!(s.open(&open(0, 0, 0), true, now).unwrap()[1], 0);
        // SHA-256 key exchange with SHA-1 integrity is no suite.
        assert_eq!(
            s.open(&open(3, 1, 1), false, now).unwrap()[1],
            status::NO_CIPHER_SUITE_MATCH
        );
    }

    #[test]
    fn a_flood_of_half_open_sessions_stays_bounded() {
        let mut s = Sessions::default();
        let now = Instant::now();
        let mut p = vec![1, 0, 0, 0, 1, 0, 0, 0];
        p.extend_from_slice(&algorithm_record(0, 3));
        p.extend_from_slice(&algorithm_record(1, 4));
        p.extend_from_slice(&algorithm_record(2, 1));
        for _ in 0..1000 {
            assert_eq!(s.open(&p, false, now).unwrap()[1], 0);
        }
        assert_eq!(s.pending.len(), MAX_PENDING);
        s.prune(now + SETUP_TIMEOUT);
        assert!(s.pending.is_empty());
    }
}
