//! A session-setup case: Open Session, RAKP 1 and RAKP 3 with the
//! case's mutations, abandoned half-open or carried through; a session
//! that comes of it runs the case's command and is closed. Silence is
//! allowed at every step; RAKP 4 with status 0 for a wrong password, HMAC
//! or session ID is a finding.

use std::time::Duration;

use anyhow::Result;
use shoal_ipmi::console::Login;
use shoal_ipmi::crypto::SUITES;
use shoal_ipmi::wire::{self, payload, Datagram};

use super::gen::{Case, Setup, Who};
use super::link;
use super::{Run, SETUP_ADMIN, SETUP_ADMIN_PASSWORD, VICTIM, VICTIM_PASSWORD};
use crate::fuzz::{Invariant, PASSWORD};

/// How long a session-setup step's answer is waited for.
const SETUP_WAIT: Duration = Duration::from_millis(300);

/// Sets a v2.0 datagram's payload length field to its payload's length
/// (after the payload was cut or grown).
fn fix_len(d: &mut [u8]) {
    if d.len() >= 16 {
        let n = (d.len() - 16) as u16;
        d[14..16].copy_from_slice(&n.to_le_bytes());
    }
}

impl Run<'_> {
    /// Open Session, RAKP 1, RAKP 3 with the case's mutations; a session
    /// that comes of it is used (the case's command) and closed.
    pub(super) fn setup(&mut self, case: &Case, st: &Setup) -> Result<Vec<u8>> {
        let (name, password): (Vec<u8>, &str) = match &st.who {
            Who::Admin => (SETUP_ADMIN.into(), SETUP_ADMIN_PASSWORD),
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
