//! An established RMCP+ session: its keys and privileges, the inbound
//! sequence-number window, the outbound numbering, and the last request
//! with its answer (a retransmission is answered again, never carried
//! out twice). What a packet of the session must pass before its payload
//! is read is [`Active::admit`].

use std::time::Instant;

use super::super::crypto::{ct_eq, Conf, Integrity, Keys, Suite};
use super::super::users::{Privilege, User};
use super::super::wire;

/// How far around the highest sequence number seen a packet may be.
pub(super) const WINDOW: u32 = 16;

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
    pub(super) rakp4: Option<Vec<u8>>,
    /// The last request and its response (`None` while it is carried
    /// out), for a retransmitted request: answered again, never carried
    /// out twice.
    last: Option<(Vec<u8>, Option<Vec<u8>>)>,
}

/// What a packet admitted into its session is handled with: the
/// session's keys and privileges and its user's name, as they were when
/// it was admitted.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub keys: Keys,
    pub console_sid: u32,
    pub privilege: Privilege,
    pub max: Privilege,
    pub user: String,
}

impl Active {
    /// A session RAKP 3 established at `max` (operating at `max`, at most
    /// USER), with the RAKP 4 it was answered.
    pub(super) fn new(
        console_sid: u32,
        keys: Keys,
        user: User,
        max: Privilege,
        now: Instant,
        rakp4: Vec<u8>,
    ) -> Active {
        Active {
            console_sid,
            keys,
            user,
            max,
            privilege: max.min(Privilege::User),
            last_seen: now,
            window: Window::default(),
            out_seq: 0,
            rakp4: Some(rakp4),
            last: None,
        }
    }

    /// The next outbound session sequence number: 1, 2, ... (never 0).
    pub fn next_out_seq(&mut self) -> u32 {
        self.out_seq = self.out_seq.wrapping_add(1).max(1);
        self.out_seq
    }

    /// Admits packet `p` of this session: its protection is what the
    /// suite requires, its integrity code is right, then its sequence
    /// number is in the window (and is taken); `None` drops it.
    pub fn admit(&mut self, p: &wire::V20<'_>, now: Instant) -> Option<Admitted> {
        let keys = &self.keys;
        if !protection_ok(&keys.suite, p.authenticated, p.encrypted) {
            return None;
        }
        if p.authenticated {
            let (covered, code) = p.integrity_parts(keys.suite.integrity.code_len()).ok()?;
            if !ct_eq(&keys.suite.integrity.code(&keys.k1, covered), code) {
                return None;
            }
        }
        let admitted = Admitted {
            keys: keys.clone(),
            console_sid: self.console_sid,
            privilege: self.privilege,
            max: self.max,
            user: String::from_utf8_lossy(&self.user.name).into_owned(),
        };
        self.accept_seq(p.seq, now).then_some(admitted)
    }

    /// Checks an in-session packet's sequence number; `false` drops it.
    fn accept_seq(&mut self, seq: u32, now: Instant) -> bool {
        if !self.window.accept(seq) {
            return false;
        }
        self.last_seen = now;
        self.rakp4 = None;
        true
    }

    /// Request `body` seen before: `Some` with its answer, or `None` in
    /// it while the first is still being carried out; `None`: a new
    /// request, now the session's last.
    pub fn recall(&mut self, body: &[u8]) -> Option<Option<Vec<u8>>> {
        match &self.last {
            Some((q, done)) if *q == body => Some(done.clone()),
            _ => {
                self.last = Some((body.to_vec(), None));
                None
            }
        }
    }

    /// Keeps `response` as the answer to `body`, if that is still the
    /// session's last request.
    pub fn remember(&mut self, body: &[u8], response: &[u8]) {
        if self.last.as_ref().is_some_and(|(q, _)| *q == body) {
            self.last = Some((body.to_vec(), Some(response.to_vec())));
        }
    }
}

/// The inbound sequence numbers seen: the highest and a bitmap below it.
#[derive(Debug, Clone, Default)]
pub(super) struct Window {
    highest: u32,
    seen: u32,
}

impl Window {
    /// Accepts `seq` once: the first packet sets the base (clients start
    /// anywhere: pyghmi at 1, ipmitool at 3 or more); later ones must be
    /// within the window around the highest, and unseen.
    pub(super) fn accept(&mut self, seq: u32) -> bool {
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

/// Whether a packet's protection matches what the session's suite
/// requires: integrity when the suite has it, encryption likewise.
fn protection_ok(suite: &Suite, authenticated: bool, encrypted: bool) -> bool {
    let needs_auth = suite.integrity != Integrity::None;
    let needs_conf = suite.conf != Conf::None;
    authenticated == needs_auth && encrypted == needs_conf
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
}
