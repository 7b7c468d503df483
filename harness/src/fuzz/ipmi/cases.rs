//! One IPMI case carried out and judged: a mutated datagram (silence
//! allowed), a session setup (silence allowed; a session from a wrong
//! password or HMAC is a finding), or a command in a session (an answer
//! due within the timeout; after a refusal, the state as before).

use std::time::Duration;

use anyhow::Result;
use shoal_ipmi::console::{Login, Session};
use shoal_ipmi::crypto::SUITES;
use shoal_ipmi::wire::{self, payload, Datagram};

use super::gen::{self, Case, Command, Mutation, Op, Setup, Template, Who};
use super::link::{self, QUIET};
use super::{spec_cc, spec_status, Run, VICTIM, VICTIM_PASSWORD};
use crate::fuzz::{Invariant, PASSWORD, USER};

/// How long a session-setup step's answer is waited for.
const SETUP_WAIT: Duration = Duration::from_millis(300);
/// The sequence window's size in the emulator (IPMI v2.0 suggests 16).
const WINDOW: u32 = 16;

/// Commands that only read: no state read around them.
fn read_only(netfn: u8, cmd: u8) -> bool {
    matches!(
        (netfn, cmd),
        (0x06, 0x01 | 0x04 | 0x07 | 0x08 | 0x25 | 0x37 | 0x38 | 0x42 | 0x44 | 0x46 | 0x4a..=0x4f)
            | (0x06, 0x54)
            | (0x00, 0x00 | 0x01 | 0x09)
            | (0x0a, 0x10 | 0x11 | 0x20..=0x23 | 0x40..=0x43 | 0x48)
            | (0x0c, 0x02 | 0x22)
            | (0x04, _)
    )
}

/// An IPMI message's completion code, if `msg` is a response.
fn msg_cc(msg: &[u8]) -> Option<u8> {
    (msg.len() >= 8).then(|| msg[6])
}

/// Sets a v2.0 datagram's payload length field to its payload's length
/// (after the payload was cut or grown).
fn fix_len(d: &mut [u8]) {
    if d.len() >= 16 {
        let n = (d.len() - 16) as u16;
        d[14..16].copy_from_slice(&n.to_le_bytes());
    }
}

impl Run<'_> {
    pub(super) fn one(&mut self, case: &Case) -> Result<()> {
        *self.res.kinds.entry(case.family()).or_default() += 1;
        self.link.drain();
        let wire = match &case.op {
            Op::Datagram { base, mutation } => self.datagram(case, *base, mutation)?,
            Op::Setup(s) => self.setup(case, s)?,
            Op::Command(c) => {
                let mut s = match self.session() {
                    Ok(s) => s,
                    Err(e) => {
                        self.status(format!("no session ({e})"));
                        return Ok(());
                    }
                };
                let (cc, gone) = self.command(case, c, &mut s, true)?;
                let closed = c.own_sid && (c.netfn, c.cmd) == (0x06, 0x3c) && cc == Some(0);
                if !gone && !closed {
                    if cc.is_some() && (c.netfn, c.cmd) == (0x06, 0x3b) {
                        // Back to administrator for the next cases.
                        let _ = self.link.call(&mut s, 0x06, 0x3b, &[4], case.iv, QUIET);
                    }
                    self.session = Some(s);
                }
                Vec::new()
            }
        };
        self.panics(case, &wire);
        Ok(())
    }

    /// A mutated datagram; what was sent.
    fn datagram(&mut self, case: &Case, base: Template, m: &Mutation) -> Result<Vec<u8>> {
        if base != Template::InSession {
            let mut d = gen::template(base, 0x5300_0000 | case.id as u32, case.id);
            gen::mutate(&mut d, m);
            let answer = self.link.exchange(&d, QUIET)?;
            self.judge_outside(case, &d, answer.as_deref());
            return Ok(d);
        }
        let Ok(mut s) = self.session() else {
            self.status("no session".into());
            return Ok(Vec::new());
        };
        let seq = s.seq;
        let d = match m {
            Mutation::Replay if self.last_datagram.is_some() => {
                self.last_datagram.clone().unwrap_or_default()
            }
            Mutation::SeqAhead(k) => {
                s.seq = match k {
                    0 => seq.wrapping_sub(WINDOW + 4),
                    k => seq.wrapping_add(k - 1),
                };
                s.request(0x06, 0x01, &[], case.iv)
            }
            _ => {
                let mut d = s.request(0x06, 0x01, &[], case.iv);
                gen::mutate(&mut d, m);
                d
            }
        };
        self.link.send(&d)?;
        let answer = self.link.answer(&s, 0x06, 0x01, QUIET);
        match answer {
            Some((cc, _)) => {
                self.status(format!("in-session datagram: answered 0x{cc:02x}"));
                self.check_cc(case, &d, cc);
            }
            None => {
                // Dropped: its number was never taken.
                s.seq = seq;
                self.status("in-session datagram: silent".into());
            }
        }
        if s.seq != seq {
            self.last_datagram = Some(d.clone());
        }
        self.session = Some(s);
        Ok(d)
    }

    fn check_cc(&mut self, case: &Case, wire: &[u8], cc: u8) {
        if !spec_cc(cc) {
            let detail = format!("completion code 0x{cc:02x} is none the IPMI spec defines");
            self.finding(
                Invariant::SpecCodes,
                case,
                &format!("cc {cc:02x}"),
                wire,
                detail,
            );
        }
    }

    fn check_status(&mut self, case: &Case, wire: &[u8], what: &str, st: u8) {
        self.status(format!("{what}: status 0x{st:02x}"));
        if !spec_status(st) {
            let detail = format!("{what}: RMCP+ status 0x{st:02x} is none of table 13-15");
            self.finding(
                Invariant::SpecCodes,
                case,
                &format!("{what} {st:02x}"),
                wire,
                detail,
            );
        }
    }

    /// The answer to a session-less datagram: its codes.
    fn judge_outside(&mut self, case: &Case, sent: &[u8], answer: Option<&[u8]>) {
        let Some(a) = answer else {
            self.status("silent".into());
            return;
        };
        match wire::parse(a) {
            Ok(Datagram::V20(p)) if p.payload_type == payload::IPMI => {
                if let Some(cc) = msg_cc(p.payload) {
                    self.status(format!("answered 0x{cc:02x}"));
                    self.check_cc(case, sent, cc);
                }
            }
            Ok(Datagram::V20(p)) => {
                if let Some(&st) = p.payload.get(1) {
                    let what = format!("payload 0x{:02x}", p.payload_type);
                    self.check_status(case, sent, &what, st);
                }
            }
            Ok(Datagram::V15 { message, .. }) => {
                if let Some(cc) = msg_cc(message) {
                    self.status(format!("v1.5 answered 0x{cc:02x}"));
                    self.check_cc(case, sent, cc);
                }
            }
            Ok(Datagram::Ping { .. }) | Err(_) => self.status("answered (pong)".into()),
        }
    }

    /// A command in session `s` (the fuzzer's when `own`); its completion
    /// code (None: no answer), and whether the session is gone.
    pub(super) fn command(
        &mut self,
        case: &Case,
        c: &Command,
        s: &mut Session,
        own: bool,
    ) -> Result<(Option<u8>, bool)> {
        let mut data = c.data.clone();
        if c.own_sid {
            data[..4].copy_from_slice(&s.bmc_sid.to_le_bytes());
        }
        // The state before, read in the fuzzer's session (kept apart
        // from `s` when `s` is it).
        let probes = (!read_only(c.netfn, c.cmd)).then(|| link::probes(c.netfn, c.cmd));
        let before = match &probes {
            Some(p) if own => {
                self.session = Some(s.clone());
                let b = self.state(p).ok();
                if let Some(own) = self.session.take() {
                    *s = own;
                }
                b
            }
            Some(p) => self.state(p).ok(),
            None => None,
        };
        let d = s.request(c.netfn, c.cmd, &data, case.iv);
        self.link.send(&d)?;
        self.last_datagram = Some(d.clone());
        let Some((cc, _)) = self.link.answer(s, c.netfn, c.cmd, self.opts.timeout) else {
            self.no_answer(case, c, &data, &d)?;
            return Ok((None, true));
        };
        self.status(format!("cc 0x{cc:02x}"));
        self.check_cc(case, &d, cc);
        if cc != 0 {
            if let (Some(p), Some(b)) = (probes, before) {
                self.unchanged(case, c, &data, s, own, &p, b, &d)?;
            }
        }
        Ok((Some(cc), false))
    }

    /// A well-formed request in a session went unanswered: a crash, a
    /// hang, or the session lost; the same request in a fresh session
    /// tells which.
    fn no_answer(&mut self, case: &Case, c: &Command, data: &[u8], wire: &[u8]) -> Result<()> {
        self.status("timeout".into());
        if let Some(exit) = self.died() {
            let log = self.svc.log.display().to_string();
            let detail = format!("the emulator exited ({exit}); see {log}");
            self.finding(Invariant::Alive, case, "exit", wire, detail);
            return self.restart(format!("case {}: crashed ({exit})", case.id));
        }
        self.session = None;
        let again = match self.session() {
            Ok(mut s) => {
                let r = self
                    .link
                    .call(&mut s, c.netfn, c.cmd, data, case.iv, self.opts.timeout)?;
                if r.is_some() {
                    self.session = Some(s);
                }
                r
            }
            Err(_) => None,
        };
        if again.is_none() {
            let detail = format!(
                "no answer in {:?}, nor to the same request in a fresh session",
                self.opts.timeout
            );
            let key = format!("{:02x}/{:02x}", c.netfn, c.cmd);
            self.finding(Invariant::NoHang, case, &key, wire, detail);
        }
        Ok(())
    }

    /// After a refusal: the state as before, or a finding once it is
    /// confirmed (the state holds still afterwards, or the same refused
    /// request changes it again).
    #[allow(clippy::too_many_arguments)]
    fn unchanged(
        &mut self,
        case: &Case,
        c: &Command,
        data: &[u8],
        s: &mut Session,
        own: bool,
        probes: &[link::Probe],
        before: Vec<(String, String)>,
        wire: &[u8],
    ) -> Result<()> {
        let read = |run: &mut Run<'_>, s: &mut Session| {
            if own {
                run.session = Some(s.clone());
                let r = run.state(probes).ok();
                if let Some(own) = run.session.take() {
                    *s = own;
                }
                r
            } else {
                run.state(probes).ok()
            }
        };
        let Some(after) = read(self, s) else {
            return Ok(());
        };
        if after == before {
            return Ok(());
        }
        let changed: Vec<String> = before
            .iter()
            .zip(&after)
            .filter(|(x, y)| x != y)
            .map(|((k, x), (_, y))| format!("{k}: {x} → {y}"))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let settled = read(self, s);
        let resent = self
            .link
            .call(s, c.netfn, c.cmd, data, case.iv, self.opts.timeout)?;
        let again = read(self, s);
        let repeats = matches!(resent, Some((cc, _)) if cc != 0) && settled != again;
        if settled.as_ref() == Some(&after) || repeats {
            let key = format!("{:02x}/{:02x}", c.netfn, c.cmd);
            let detail = format!(
                "refused, yet changed: {}{}",
                changed.join("; "),
                if repeats { " (again when resent)" } else { "" }
            );
            self.finding(Invariant::UnchangedAfterRefusal, case, &key, wire, detail);
        }
        Ok(())
    }

    /// Open Session, RAKP 1, RAKP 3 with the case's mutations; a session
    /// that comes of it is used (the case's command) and closed.
    fn setup(&mut self, case: &Case, st: &Setup) -> Result<Vec<u8>> {
        let (name, password): (Vec<u8>, &str) = match &st.who {
            Who::Admin => (USER.into(), PASSWORD),
            Who::Victim => (VICTIM.into(), VICTIM_PASSWORD),
            Who::Unknown(n) => (n.clone(), PASSWORD),
        };
        let password = if st.right_password {
            password
        } else {
            "not-the-password"
        };
        let pick = |id: u8| SUITES.iter().find(|s| s.id == id).copied();
        let Some(suite) = pick(st.suite) else {
            return Ok(Vec::new());
        };
        let console_sid = 0x5300_0000 | (case.id as u32 & 0xffff);
        let rm = case.iv;
        let mut l = Login::new(&name, password.as_bytes(), suite, st.role, console_sid, rm);
        let open = open_datagram(st, &l, console_sid, case.id as u8);
        let Some(a) = self.link.exchange(&open, SETUP_WAIT)? else {
            self.status("open session: silent".into());
            return Ok(open);
        };
        let Some(status) = setup_status(&a) else {
            return Ok(open);
        };
        self.check_status(case, &open, "open session", status);
        if status != 0 || st.steps < 2 {
            return Ok(open);
        }
        // Odd algorithms accepted: the suite the BMC picked.
        if let Some(s) = picked_suite(&a).filter(|s| s.id != suite.id) {
            l = Login::new(&name, password.as_bytes(), s, st.role, console_sid, rm);
        }
        let Ok(mut r1) = l.rakp1(&a) else {
            return Ok(open);
        };
        patch_rakp1(&mut r1, st);
        let Some(a) = self.link.exchange(&r1, SETUP_WAIT)? else {
            self.status("rakp 1: silent".into());
            return Ok(r1);
        };
        let Some(status) = setup_status(&a) else {
            return Ok(r1);
        };
        self.check_status(case, &r1, "rakp 1", status);
        if status != 0 || st.steps < 3 {
            return Ok(r1);
        }
        let Ok(r3) = l.rakp3(&a) else {
            return Ok(r1);
        };
        let mut d = r3.datagram;
        let forged = patch_rakp3(&mut d, st) || !r3.password_matched;
        let Some(a) = self.link.exchange(&d, SETUP_WAIT)? else {
            self.status("rakp 3: silent".into());
            return Ok(d);
        };
        let Some(status) = setup_status(&a) else {
            return Ok(d);
        };
        self.check_status(case, &d, "rakp 3", status);
        if status == 0 && forged {
            let detail =
                "RAKP 3 with a wrong password, HMAC or session ID got RAKP 4 status 0".into();
            self.finding(Invariant::RejectsInvalid, case, "rakp3", &d, detail);
        }
        let Ok(mut s) = l.finish(&a) else {
            return Ok(d);
        };
        if let Some(c) = &st.command {
            if self.command(case, c, &mut s, false)?.1 {
                return Ok(d);
            }
        }
        link::close(&mut self.link, &mut s);
        Ok(d)
    }
}

/// The Open Session Request: the console's own, or one with the
/// case's odd role, algorithms or length.
fn open_datagram(st: &Setup, l: &Login, console_sid: u32, tag: u8) -> Vec<u8> {
    if st.algorithms.is_none() && st.open_len.is_none() && st.open_role == 4 {
        return l.open();
    }
    let mut p = vec![tag, st.open_role, 0, 0];
    p.extend_from_slice(&console_sid.to_le_bytes());
    let suite = SUITES.iter().find(|s| s.id == st.suite).copied();
    let (a, i, c, len) = st.algorithms.unwrap_or(suite.map_or((3, 4, 1, 8), |s| {
        (s.auth.id(), s.integrity.id(), s.conf.id(), 8)
    }));
    for (kind, alg) in [(0u8, a), (1, i), (2, c)] {
        p.extend_from_slice(&[kind, 0, 0, len, alg, 0, 0, 0]);
    }
    if let Some(n) = st.open_len {
        p.resize(n, 0);
    }
    wire::build_v20(payload::OPEN_SESSION_REQUEST, false, 0, 0, &p, None)
}

/// A session-setup answer's RMCP+ status code.
fn setup_status(a: &[u8]) -> Option<u8> {
    match wire::parse(a) {
        Ok(Datagram::V20(p)) => p.payload.get(1).copied(),
        _ => None,
    }
}

/// The suite an Open Session Response names.
fn picked_suite(a: &[u8]) -> Option<shoal_ipmi::crypto::Suite> {
    let Ok(Datagram::V20(p)) = wire::parse(a) else {
        return None;
    };
    let ids = (p.payload.get(16)?, p.payload.get(24)?, p.payload.get(32)?);
    SUITES.iter().copied().find(|s| {
        (s.auth.id(), s.integrity.id(), s.conf.id())
            == (*ids.0 & 0x3f, *ids.1 & 0x3f, *ids.2 & 0x3f)
    })
}

/// RAKP 1's fields the case mutates (payload bytes start at 16).
fn patch_rakp1(d: &mut [u8], st: &Setup) {
    if d.len() < 16 + 28 {
        return;
    }
    d[16 + 24] = st.role;
    if let Some(n) = st.name_len_lie {
        d[16 + 27] = n;
    }
    if st.rakp1_wrong_sid {
        d[16 + 4] ^= 0x5a;
    }
}

/// RAKP 3's fields the case mutates; whether any was.
fn patch_rakp3(d: &mut Vec<u8>, st: &Setup) -> bool {
    if d.len() < 16 + 8 {
        return false;
    }
    if let Some(h) = &st.bad_hmac {
        d.truncate(16 + 8);
        d.extend_from_slice(h);
        fix_len(d);
    }
    d[16 + 1] = st.rakp3_status;
    if st.rakp3_wrong_sid {
        d[16 + 4] ^= 0x5a;
    }
    st.bad_hmac.is_some() || st.rakp3_status != 0 || st.rakp3_wrong_sid
}
