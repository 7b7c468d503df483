//! RMCP+ sessions of one BMC: Open Session, RAKP 1 to 4, the table of
//! established sessions (each in `established`: its sequence-number
//! window and retransmissions), idle timeout, Close Session and the bounds
//! that keep a flood of half-open sessions, or one account's sessions,
//! from exhausting the BMC; the accounts' lockout at RAKP 3.
//!
//! A name no user has, or a locked user's, is answered as a known user
//! with a wrong password would be: a RAKP 2 whose code is keyed by a
//! secret of this BMC, then 0x0F at RAKP 3; so RAKP 2 tells no one which
//! names exist, nor that a user is locked.
//!
//! The table is plain data behind the BMC's lock; nothing here awaits.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::crypto::{ct_eq, Auth, Keys, Suite, SUITES, SUITE_ZERO};
use super::lockout::Lockouts;
use super::users::{Privilege, User, Users};
use crate::auth::LockoutPolicy;

mod established;
pub use established::{Active, Admitted};

/// An established session left idle this long is closed (the IPMI
/// default session inactivity timeout).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// A session not through RAKP 3 this long after Open Session is dropped.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Established sessions per BMC; one more gets "insufficient resources".
pub const MAX_ACTIVE: usize = 16;
/// Established sessions of one user.
pub const MAX_SESSIONS_PER_USER: usize = 8;
/// Of `MAX_ACTIVE`, the ones only a session at ADMINISTRATOR may take, so
/// that other users filling theirs cannot lock the administrators out.
pub const ADMIN_RESERVED_SESSIONS: usize = 4;
/// Sessions in setup per BMC; one more evicts the oldest of them.
pub const MAX_PENDING: usize = 64;

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
    /// RAKP 2 sent: what RAKP 3 and the keys need. `key` is the user's
    /// password, or for a name no user has (or a locked one) the decoy
    /// key, with `user` then `None`.
    Challenged {
        rm: [u8; 16],
        rc: [u8; 16],
        role: u8,
        name: Vec<u8>,
        key: Vec<u8>,
        user: Option<User>,
        /// The user's lockout epoch at RAKP 1 (`lockout`).
        epoch: u64,
    },
}

#[derive(Debug, Clone)]
struct Pending {
    created: Instant,
    console_sid: u32,
    suite: Suite,
    setup: Setup,
}

/// The sessions of one BMC.
#[derive(Debug)]
pub struct Sessions {
    pending: HashMap<u32, Pending>,
    active: HashMap<u32, Active>,
    lockouts: Lockouts,
    /// Keys RAKP 2's code for a name that cannot log in (per name, so a
    /// name answers alike each time, as a user's fixed password would).
    decoy: [u8; 32],
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            pending: HashMap::new(),
            active: HashMap::new(),
            lockouts: Lockouts::default(),
            decoy: rand::random(),
        }
    }
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

/// A RAKP message's tag and the BMC's session Id it names.
fn rakp_header(req: &[u8]) -> Option<(u8, u32)> {
    let tag = *req.first()?;
    Some((tag, u32::from_le_bytes(req.get(4..8)?.try_into().ok()?)))
}

/// How every setup answer but Open Session's success starts: the tag,
/// the status, two reserved bytes, the console's session Id.
fn answer_head(tag: u8, status: u8, console_sid: u32) -> Vec<u8> {
    let mut r = vec![tag, status, 0, 0];
    r.extend_from_slice(&console_sid.to_le_bytes());
    r
}

impl Sessions {
    /// Drops idle established sessions and stale setups (a user's
    /// challenge never answered is a failed login); the established ones
    /// dropped.
    pub fn prune(&mut self, now: Instant, policy: &LockoutPolicy) -> Vec<u32> {
        let stale: Vec<u32> = self
            .pending
            .iter()
            .filter(|(_, p)| now.duration_since(p.created) >= SETUP_TIMEOUT)
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            self.abandon(k, policy, now);
        }
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

    /// Ends setup `bmc_sid` unfinished: a challenge sent to a user that
    /// never came back is a failed login (the console found RAKP 2's
    /// code was not its password's).
    fn abandon(&mut self, bmc_sid: u32, policy: &LockoutPolicy, now: Instant) {
        if let Some(Pending {
            setup:
                Setup::Challenged {
                    user: Some(u),
                    epoch,
                    ..
                },
            ..
        }) = self.pending.remove(&bmc_sid)
        {
            self.failed_login(&u, epoch, policy, now);
        }
    }

    /// The checks of `name` under way in `epoch` (RAKP 2 sent, no RAKP
    /// 3 yet), but setup `except`'s.
    fn running(&self, name: &[u8], epoch: u64, except: u32) -> u32 {
        let n = self.pending.iter().filter(|(k, p)| {
            **k != except
                && matches!(&p.setup, Setup::Challenged { user: Some(u), epoch: e, .. }
                    if u.name == name && *e == epoch)
        });
        n.count() as u32
    }

    /// Whether one more session at `role` fits: the table has room, and
    /// below ADMINISTRATOR not into the administrators' slots.
    fn room_for(&self, role: Privilege) -> bool {
        let n = self.active.len();
        n < MAX_ACTIVE
            && (role >= Privilege::Administrator || n < MAX_ACTIVE - ADMIN_RESERVED_SESSIONS)
    }

    pub fn get_mut(&mut self, bmc_sid: u32) -> Option<&mut Active> {
        self.active.get_mut(&bmc_sid)
    }

    pub fn close(&mut self, bmc_sid: u32) -> bool {
        self.active.remove(&bmc_sid).is_some()
    }

    /// Open Session Request → Open Session Response.
    pub fn open(
        &mut self,
        req: &[u8],
        suite_zero: bool,
        now: Instant,
        policy: &LockoutPolicy,
    ) -> Option<Vec<u8>> {
        self.prune(now, policy);
        let Some(p) = parse_proposal(req) else {
            // Too short to answer properly: an answer with what is known.
            let tag = req.first().copied()?;
            return Some(vec![tag, status::ILLEGAL_PARAMETER, 0, 0, 0, 0, 0, 0]);
        };
        let fail = |code: u8| Some(answer_head(p.tag, code, p.console_sid));
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
        // Refused here when it can be (ipmitool prints this answer's
        // status): a full table, or a console asking for less than
        // ADMINISTRATOR (0: the most the BMC allows) when only the
        // administrators' slots are left. RAKP 1 and 3 check again.
        let proposed = Privilege::from_u8(p.max_priv).unwrap_or(Privilege::Administrator);
        if !self.room_for(proposed) {
            return fail(status::NO_RESOURCES);
        }
        if self.pending.len() >= MAX_PENDING {
            if let Some(oldest) = self
                .pending
                .iter()
                .min_by_key(|(_, p)| p.created)
                .map(|(k, _)| *k)
            {
                self.abandon(oldest, policy, now);
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

    /// RAKP 1 → RAKP 2; no role above `cap`, the channel's privilege
    /// limit, whoever asks.
    pub fn rakp1(
        &mut self,
        req: &[u8],
        users: &Users,
        cap: Privilege,
        guid: &[u8; 16],
        now: Instant,
        policy: &LockoutPolicy,
    ) -> Option<Vec<u8>> {
        let (tag, bmc_sid) = rakp_header(req)?;
        let fail = |code: u8, console_sid: u32| Some(answer_head(tag, code, console_sid));
        let Some(pending) = self.pending.get(&bmc_sid) else {
            return fail(status::INVALID_SESSION_ID, 0);
        };
        let (console_sid, suite) = (pending.console_sid, pending.suite);
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
        let Some(wanted) = Privilege::from_u8(role & 0x0f).filter(|w| *w <= cap) else {
            return fail(status::INVALID_ROLE, console_sid);
        };
        // Whatever the name: no room at this role is no room.
        if !self.room_for(wanted) {
            self.pending.remove(&bmc_sid);
            return fail(status::NO_RESOURCES, console_sid);
        }
        let user = users.find(&name);
        if user.as_ref().is_some_and(|u| wanted > u.privilege) {
            self.pending.remove(&bmc_sid);
            return fail(status::INVALID_ROLE, console_sid);
        }
        // A locked user, or one whose failures and running checks reach
        // the threshold, is answered as a name no user has.
        let epoch = self.lockouts.epoch(&name);
        let running = self.running(&name, epoch, bmc_sid);
        let user = user.filter(|_| self.lockouts.may_try(&name, running, policy, now));
        // The decoy is computed for every name: the same work either way.
        let mut decoy = Auth::HmacSha256.hmac(&self.decoy, &[&name]);
        decoy.truncate(20);
        let key = user.as_ref().map_or(decoy, |u| u.password.clone());
        let rc: [u8; 16] = rand::random();
        let code = suite.auth.hmac(
            &key,
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
        // A challenge replaced by another (not the same RAKP 1 again) was
        // a check that failed.
        if let Some(Pending {
            setup:
                Setup::Challenged {
                    rm: was_rm,
                    name: was_name,
                    user: Some(u),
                    epoch: e,
                    ..
                },
            ..
        }) = self.pending.get(&bmc_sid)
        {
            if (was_rm, was_name) != (&rm, &name) {
                let (u, e) = (u.clone(), *e);
                self.failed_login(&u, e, policy, now);
            }
        }
        let Some(pending) = self.pending.get_mut(&bmc_sid) else {
            return fail(status::INVALID_SESSION_ID, console_sid);
        };
        pending.setup = Setup::Challenged {
            rm,
            rc,
            role,
            name,
            key,
            user,
            epoch,
        };
        let mut r = answer_head(tag, 0, console_sid);
        r.extend_from_slice(&rc);
        r.extend_from_slice(guid);
        r.extend_from_slice(&code);
        Some(r)
    }

    /// RAKP 3 → RAKP 4, and the session is established. A wrong code
    /// counts against the user under `policy`, and so does a console
    /// that gave up because RAKP 2's code was not its password's.
    pub fn rakp3(
        &mut self,
        req: &[u8],
        guid: &[u8; 16],
        now: Instant,
        policy: &LockoutPolicy,
    ) -> Option<Vec<u8>> {
        let (tag, bmc_sid) = rakp_header(req)?;
        if let Some(a) = self.active.get(&bmc_sid) {
            // RAKP 4 was lost: the same answer again.
            return a.rakp4.clone();
        }
        let fail = |code: u8, console_sid: u32| Some(answer_head(tag, code, console_sid));
        let Some(pending) = self.pending.remove(&bmc_sid) else {
            return fail(status::INVALID_SESSION_ID, 0);
        };
        let Setup::Challenged {
            rm,
            rc,
            role,
            name,
            key,
            user,
            epoch,
        } = pending.setup
        else {
            return fail(status::INVALID_SESSION_ID, pending.console_sid);
        };
        if req[1] != 0 {
            // The console gave up (a wrong password shows there, in RAKP
            // 2's code): a failed login, and no answer.
            if let Some(u) = &user {
                self.failed_login(u, epoch, policy, now);
            }
            return None;
        }
        let suite = pending.suite;
        let console_sid = pending.console_sid;
        let role_name = [role, name.len() as u8];
        let expected = suite
            .auth
            .hmac(&key, &[&rc, &console_sid.to_le_bytes(), &role_name, &name]);
        let matched = ct_eq(req.get(8..).unwrap_or_default(), &expected);
        // A name that cannot log in fails here whatever it sent (suite 0
        // has no code to compare), and so does a user locked since RAKP 1.
        let Some(user) = user.filter(|u| !self.lockouts.locked(&u.name, now)) else {
            return fail(status::INVALID_INTEGRITY_CHECK, console_sid);
        };
        if !matched {
            self.failed_login(&user, epoch, policy, now);
            return fail(status::INVALID_INTEGRITY_CHECK, console_sid);
        }
        self.lockouts.succeeded(&user.name);
        let max = Privilege::from_u8(role & 0x0f).unwrap_or(Privilege::User);
        let own = self
            .active
            .values()
            .filter(|a| a.user.name == user.name)
            .count();
        if !self.room_for(max) || own >= MAX_SESSIONS_PER_USER {
            return fail(status::NO_RESOURCES, console_sid);
        }
        let sik = suite.auth.hmac(&key, &[&rm, &rc, &role_name, &name]);
        let mut icv = suite.auth.hmac(&sik, &[&rm, &bmc_sid.to_le_bytes(), guid]);
        icv.truncate(suite.auth.icv_len());
        let mut r = answer_head(tag, 0, console_sid);
        r.extend_from_slice(&icv);
        let keys = if suite.auth == Auth::None {
            Keys::derive(suite, &[])
        } else {
            Keys::derive(suite, &sik)
        };
        let active = Active::new(console_sid, keys, user, max, now, r.clone());
        self.active.insert(bmc_sid, active);
        Some(r)
    }

    fn failed_login(&mut self, user: &User, epoch: u64, policy: &LockoutPolicy, now: Instant) {
        if self.lockouts.failed(&user.name, epoch, policy, now) {
            tracing::warn!(
                user = %String::from_utf8_lossy(&user.name),
                seconds = policy.duration,
                "IPMI user locked after failed logins"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Sessions {
        fn open_now(&mut self, req: &[u8], zero: bool, now: Instant) -> Option<Vec<u8>> {
            self.open(req, zero, now, &LockoutPolicy::default())
        }
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
        let r = s.open_now(&open(3, 4, 1), false, now).unwrap();
        assert_eq!((r[1], r[2], r[16], r[24], r[32]), (0, 4, 3, 4, 1));
        let r = s.open_now(&open(1, 1, 1), false, now).unwrap();
        assert_eq!((r[1], r[16], r[24], r[32]), (0, 1, 1, 1));
        // Suite 0 only when enabled.
        assert_eq!(
            s.open_now(&open(0, 0, 0), false, now).unwrap()[1],
            status::NO_CIPHER_SUITE_MATCH
        );
        assert_eq!(s.open_now(&open(0, 0, 0), true, now).unwrap()[1], 0);
        // SHA-256 key exchange with SHA-1 integrity is no suite.
        assert_eq!(
            s.open_now(&open(3, 1, 1), false, now).unwrap()[1],
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
            assert_eq!(s.open_now(&p, false, now).unwrap()[1], 0);
        }
        assert_eq!(s.pending.len(), MAX_PENDING);
        s.prune(now + SETUP_TIMEOUT, &LockoutPolicy::default());
        assert!(s.pending.is_empty());
    }
}
