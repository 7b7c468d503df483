//! The IPMI target's whole-datagram cases made bytes: the valid
//! session-less templates (ASF ping, IPMI v1.5 and v2.0 messages, Open
//! Session, RAKP 1, RAKP 3) and the mutations that need no session
//! (the runner applies the session's own: sequence numbers, replays).

use shoal_ipmi::wire;

use super::gen::{bytes, Mutation, Template};
use crate::fuzz::gen::Rng;

/// The session-less templates' bytes (`InSession` is made from the
/// session by the runner); `n` gives the tags and IDs they carry.
pub fn template(t: Template, console_sid: u32, n: u64) -> Vec<u8> {
    let outside = wire::build_request(0x06, 0x38, (n % 64) as u8, &[0x8e, 0x04]);
    let sid = (n as u32).wrapping_mul(0x9e37_79b9) | 1;
    match t {
        Template::Ping => vec![6, 0, 0xff, 6, 0, 0, 0x11, 0xbe, 0x80, n as u8, 0, 0],
        Template::V15AuthCaps => wire::build_v15(&outside),
        Template::V20Outside | Template::InSession => {
            wire::build_v20(wire::payload::IPMI, false, 0, 0, &outside, None)
        }
        Template::OpenSession => {
            let mut p = vec![n as u8, 4, 0, 0];
            p.extend_from_slice(&console_sid.to_le_bytes());
            p.extend_from_slice(&[0, 0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 8, 4, 0, 0, 0]);
            p.extend_from_slice(&[2, 0, 0, 8, 1, 0, 0, 0]);
            wire::build_v20(wire::payload::OPEN_SESSION_REQUEST, false, 0, 0, &p, None)
        }
        Template::Rakp1 => {
            let mut p = vec![n as u8, 0, 0, 0];
            p.extend_from_slice(&sid.to_le_bytes());
            p.extend_from_slice(&[0x5a; 16]);
            p.extend_from_slice(&[0x14, 0, 0, 14]);
            p.extend_from_slice(b"shoal-fuzz-adm");
            wire::build_v20(wire::payload::RAKP1, false, 0, 0, &p, None)
        }
        Template::Rakp3 => {
            let mut p = vec![n as u8, 0, 0, 0];
            p.extend_from_slice(&sid.to_le_bytes());
            p.extend_from_slice(&[0xa5; 32]);
            wire::build_v20(wire::payload::RAKP3, false, 0, 0, &p, None)
        }
    }
}

/// Applies a whole-datagram mutation that needs no session (the
/// session's own ones are the runner's).
pub fn mutate(d: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Random { len, header, fill } => {
            let mut r = Rng::for_case(*fill, *len as u64);
            *d = bytes(&mut r, *len);
            if *header {
                for (i, b) in [6u8, 0, 0xff, 7, 6].iter().enumerate().take(d.len()) {
                    d[i] = *b;
                }
            }
        }
        Mutation::Truncate(at) => {
            let n = d.len().max(1);
            d.truncate(*at as usize % n);
        }
        Mutation::BitFlips(flips) => {
            for (at, bit) in flips {
                let n = d.len().max(1);
                if let Some(b) = d.get_mut(*at as usize % n) {
                    *b ^= bit;
                }
            }
        }
        Mutation::LengthLie(v) => match d.get(4) {
            Some(0x00) if d.len() > 13 => d[13] = *v as u8,
            Some(0x06) if d.len() > 15 => d[14..16].copy_from_slice(&v.to_le_bytes()),
            _ => {}
        },
        Mutation::PayloadType(t) => {
            if let Some(b) = d.get_mut(5) {
                *b = *t;
            }
        }
        Mutation::WrongSid(sid) => {
            if d.len() >= 10 {
                d[6..10].copy_from_slice(&sid.to_le_bytes());
            }
        }
        Mutation::Trailer { at, xor } => {
            let n = d.len();
            if let Some(b) = d.get_mut(n.wrapping_sub(1 + *at as usize)) {
                *b ^= xor;
            }
        }
        Mutation::ProtectionBits(bits) => {
            if let Some(b) = d.get_mut(5) {
                *b ^= bits;
            }
        }
        Mutation::SeqAhead(_) | Mutation::Replay => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_keep_within_the_datagram() {
        let mut d = template(Template::V15AuthCaps, 1, 1);
        mutate(&mut d, &Mutation::LengthLie(0x33));
        assert_eq!(d[13], 0x33);
        let mut d = template(Template::OpenSession, 1, 1);
        mutate(&mut d, &Mutation::LengthLie(0x1234));
        assert_eq!(&d[14..16], &[0x34, 0x12]);
        let mut e: Vec<u8> = Vec::new();
        mutate(&mut e, &Mutation::Trailer { at: 3, xor: 1 });
        mutate(&mut e, &Mutation::BitFlips(vec![(5, 1)]));
        mutate(&mut e, &Mutation::Truncate(9));
        assert!(e.is_empty());
    }
}
