//! One IPMI case carried out and judged: a mutated datagram (silence
//! allowed), a session setup (silence allowed; a session from a wrong
//! password or HMAC is a finding), or a command in a session (an answer
//! due within the timeout; after a refusal, the state as before).

use std::time::Duration;

use anyhow::Result;
use shoal_ipmi::console::Session;
use shoal_ipmi::wire::{self, payload, Datagram};

use super::datagram;
use super::gen::{Case, Command, Mutation, Op, Template};
use super::link::{self, Probe, QUIET};
use super::{spec_cc, spec_status, Run};
use crate::fuzz::Invariant;

/// What `Run::state` reads: (probe name, value) pairs.
type State = Vec<(String, String)>;

/// Hex text (`link::hex`) back to bytes.
fn unhex(t: &str) -> Option<Vec<u8>> {
    t.split(' ')
        .map(|b| u8::from_str_radix(b, 16).ok())
        .collect()
}

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
            let mut d = datagram::template(base, 0x5300_0000 | case.id as u32, case.id);
            datagram::mutate(&mut d, m);
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
                datagram::mutate(&mut d, m);
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

    pub(super) fn check_status(&mut self, case: &Case, wire: &[u8], what: &str, st: u8) {
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
            Ok(Datagram::V20(p)) if matches!(p.payload_type, 0x11 | 0x13 | 0x15) => {
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
            Ok(Datagram::V20(p)) => self.status(format!("payload 0x{:02x}", p.payload_type)),
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
        // The prelude, then the state before, in the fuzzer's session
        // (which may be `s`).
        if !c.prelude.is_empty() {
            let mut admin = if own { s.clone() } else { self.session()? };
            for (n, cmd, d) in &c.prelude {
                self.link
                    .call(&mut admin, *n, *cmd, d, case.iv, self.opts.timeout)?;
            }
            if own {
                *s = admin;
            } else {
                self.session = Some(admin);
            }
        }
        let probes = (!read_only(c.netfn, c.cmd)).then(|| link::probes(c.netfn, c.cmd));
        let before = probes.as_ref().and_then(|p| self.read_in(s, own, p));
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

    /// The state (`Run::state`) while `s` is in use: when `s` is the
    /// fuzzer's own session, the reads go through it.
    fn read_in(&mut self, s: &mut Session, own: bool, probes: &[Probe]) -> Option<State> {
        if !own {
            return self.state(probes).ok();
        }
        self.session = Some(s.clone());
        let r = self.state(probes).ok();
        if let Some(own) = self.session.take() {
            *s = own;
        }
        r
    }

    /// After a refusal: the state as before, or a finding once the change
    /// is confirmed (see `confirm`).
    #[allow(clippy::too_many_arguments)]
    fn unchanged(
        &mut self,
        case: &Case,
        c: &Command,
        data: &[u8],
        s: &mut Session,
        own: bool,
        probes: &[Probe],
        before: State,
        wire: &[u8],
    ) -> Result<()> {
        let Some(after) = self.read_in(s, own, probes) else {
            return Ok(());
        };
        if after == before {
            return Ok(());
        }
        let (mut changed, mut names) = (Vec::new(), Vec::new());
        for ((k, x), (_, y)) in before.iter().zip(&after).filter(|(x, y)| x != y) {
            changed.push(format!("{k}: {x} → {y}"));
            names.push(k.clone());
        }
        let Some(how) = self.confirm(c, data, s, own, probes, &before, &after, &names)? else {
            self.status("refused, changed, unconfirmed (a timer?)".into());
            return Ok(());
        };
        let key = format!("{:02x}/{:02x}", c.netfn, c.cmd);
        let detail = format!("refused, yet changed: {} ({how})", changed.join("; "));
        self.finding(Invariant::UnchangedAfterRefusal, case, &key, wire, detail);
        Ok(())
    }

    /// Whether a change seen after a refusal is the refusal's: the same
    /// request refused again changes the state again; or the state holds
    /// still and nothing but a request changes what changed (users,
    /// channels, privileges, boot options but the flags); or the boot
    /// flags, which a 60-second timer also clears, written back as they
    /// were and changed again by the same refused request. Power, which a
    /// watchdog or a transition moves, counts only when it repeats.
    #[allow(clippy::too_many_arguments)]
    fn confirm(
        &mut self,
        c: &Command,
        data: &[u8],
        s: &mut Session,
        own: bool,
        probes: &[Probe],
        before: &State,
        after: &State,
        names: &[String],
    ) -> Result<Option<&'static str>> {
        std::thread::sleep(Duration::from_millis(300));
        let settled = self.read_in(s, own, probes);
        let held = settled.as_ref() == Some(after);
        let resent = self
            .link
            .call(s, c.netfn, c.cmd, data, [7; 16], self.opts.timeout)?;
        let again = self.read_in(s, own, probes);
        if matches!(resent, Some((cc, _)) if cc != 0) && again.is_some() && settled != again {
            return Ok(Some("again when resent"));
        }
        if !held {
            return Ok(None);
        }
        let timer_free = |k: &String| {
            [
                "user ",
                "channel ",
                "session privilege",
                "ACPI",
                "boot option 0",
            ]
            .iter()
            .chain(&["boot option 3", "boot option 4", "boot option 7"])
            .any(|p| k.starts_with(p))
        };
        if names.iter().all(timer_free) {
            return Ok(Some("it holds still, and no timer changes it"));
        }
        let flags_only = names
            .iter()
            .all(|k| k == "boot option 5" || k == "redfish Boot");
        let old = before.iter().find(|(k, _)| k == "boot option 5");
        let Some(flags) = old.and_then(|(_, v)| unhex(v)).filter(|b| b.len() == 7) else {
            return Ok(None);
        };
        if !flags_only {
            return Ok(None);
        }
        // The flags written back as they were, then the request again.
        let mut set = vec![5];
        set.extend_from_slice(&flags[2..]);
        let mut admin = if own { s.clone() } else { self.session()? };
        let w = self
            .link
            .call(&mut admin, 0x00, 0x08, &set, [8; 16], self.opts.timeout)?;
        if own {
            *s = admin;
        } else {
            self.session = Some(admin);
        }
        let restored = self.read_in(s, own, probes);
        if w.map(|r| r.0) != Some(0) || restored.as_ref() != Some(before) {
            return Ok(None);
        }
        let resent = self
            .link
            .call(s, c.netfn, c.cmd, data, [9; 16], self.opts.timeout)?;
        let again = self.read_in(s, own, probes);
        let repeats = matches!(resent, Some((cc, _)) if cc != 0) && again.as_ref() == Some(after);
        Ok(repeats.then_some("again after the flags were written back and it was resent"))
    }
}
