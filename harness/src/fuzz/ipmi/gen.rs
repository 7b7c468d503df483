//! The IPMI target's cases, a pure function of `(seed, case)`: what to
//! send, not yet the bytes where those depend on the live session (its
//! IDs, keys and sequence numbers), which `render` and the runner fill
//! in. Three families:
//! - `datagram`: a valid RMCP/ASF ping, IPMI v1.5 or v2.0 datagram
//!   (session-less or of the fuzzer's session) with one mutation: random
//!   bytes, a truncation, bit flips, a length field that lies, a wrong
//!   session ID, a sequence number out of the window or replayed, another
//!   payload type, a bad integrity trailer;
//! - `session-setup`: Open Session, RAKP 1 and RAKP 3 with mutated
//!   fields (algorithms, roles, names, session IDs, HMACs), abandoned at
//!   a random step or carried through and closed;
//! - `in-session`: a request in an established session, its command
//!   weighted toward those the emulator serves, with random or boundary
//!   data. User-management commands never aim at the fuzzer's own slot.

use super::super::gen::Rng;

/// The fuzzer's account is configured first: user ID 2.
pub const ADMIN_SLOT: u8 = 2;
/// The victim account: user ID 3.
pub const VICTIM_SLOT: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    Ping,
    V15AuthCaps,
    OpenSession,
    Rakp1,
    Rakp3,
    V20Outside,
    /// A Get Device ID of the fuzzer's session, signed and encrypted.
    InSession,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    Random {
        len: usize,
        header: bool,
        fill: u64,
    },
    Truncate(u64),
    BitFlips(Vec<(u64, u8)>),
    LengthLie(u16),
    /// In-session only: a session ID of no session (or 0).
    WrongSid(u32),
    /// In-session only: signed correctly, numbered this far past the
    /// window (or 0: sequence number zero).
    SeqAhead(u32),
    /// In-session only: the last request of the session sent again.
    Replay,
    PayloadType(u8),
    /// In-session only: the trailer's byte `at` from its end xor'ed.
    Trailer {
        at: u8,
        xor: u8,
    },
    /// In-session only: the authenticated / encrypted bits toggled.
    ProtectionBits(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    Admin,
    Victim,
    /// A name no account has (may be empty or longer than 16 bytes).
    Unknown(Vec<u8>),
}

/// An Open Session, RAKP 1, RAKP 3 sequence with its mutations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub who: Who,
    pub right_password: bool,
    /// Cipher suite asked for (1, 2, 3, 17), unless `algorithms`.
    pub suite: u8,
    /// Odd algorithm records: (auth, integrity, conf, record length).
    pub algorithms: Option<(u8, u8, u8, u8)>,
    /// Open Session's requested maximum privilege byte.
    pub open_role: u8,
    /// An Open Session payload of this length instead (8, 31, 33, ...).
    pub open_len: Option<usize>,
    /// RAKP 1's role byte (privilege, name-only lookup bit).
    pub role: u8,
    pub name_len_lie: Option<u8>,
    pub rakp1_wrong_sid: bool,
    /// RAKP 3: a wrong HMAC of this length (None: the right one).
    pub bad_hmac: Option<Vec<u8>>,
    pub rakp3_status: u8,
    pub rakp3_wrong_sid: bool,
    /// Steps sent before it is abandoned half-open (1: Open Session,
    /// 2: RAKP 1); 3 and more: through RAKP 3, and a session that comes
    /// of it is used and closed.
    pub steps: u8,
    /// When established: a command to run in it (netfn, cmd, data).
    pub command: Option<Command>,
}

/// A request in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub netfn: u8,
    pub cmd: u8,
    pub data: Vec<u8>,
    /// The first four data bytes are the session's own ID (Close Session).
    pub own_sid: bool,
    /// Requests sent first in the fuzzer's session, unjudged, to put the
    /// machine in a state worth refusing from (off, boot flags written
    /// valid with no override, a watchdog running, ...).
    pub prelude: Vec<(u8, u8, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Datagram { base: Template, mutation: Mutation },
    Setup(Box<Setup>),
    Command(Command),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub id: u64,
    pub op: Op,
    pub iv: [u8; 16],
}

impl Case {
    pub fn family(&self) -> &'static str {
        match self.op {
            Op::Datagram { .. } => "datagram",
            Op::Setup(_) => "session-setup",
            Op::Command(_) => "in-session",
        }
    }

    /// A line saying what the case sends.
    pub fn short(&self) -> String {
        match &self.op {
            Op::Datagram { base, mutation } => format!("{base:?} datagram, {mutation:?}"),
            Op::Setup(s) => format!(
                "session setup as {:?} ({} password), {} step(s): {s:?}",
                s.who,
                if s.right_password { "right" } else { "wrong" },
                s.steps
            ),
            Op::Command(c) => c.short(),
        }
    }
}

impl Command {
    pub fn short(&self) -> String {
        let hex: Vec<String> = self.data.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "netfn 0x{:02x} cmd 0x{:02x} data [{}]{}",
            self.netfn,
            self.cmd,
            hex.join(" "),
            if self.own_sid {
                " (own session ID)"
            } else {
                ""
            }
        )
    }
}

/// Commands the emulator serves, with the data length each takes, and
/// weights: (netfn, cmd, length, weight).
const SERVED: &[(u8, u8, usize, usize)] = &[
    (0x06, 0x01, 0, 4),  // Get Device ID
    (0x06, 0x38, 2, 3),  // Get Channel Authentication Capabilities
    (0x06, 0x3b, 1, 3),  // Set Session Privilege Level
    (0x06, 0x3c, 4, 2),  // Close Session
    (0x06, 0x40, 3, 2),  // Set Channel Access
    (0x06, 0x41, 2, 2),  // Get Channel Access
    (0x06, 0x42, 1, 1),  // Get Channel Info
    (0x06, 0x43, 4, 4),  // Set User Access
    (0x06, 0x44, 2, 2),  // Get User Access
    (0x06, 0x45, 17, 4), // Set User Name
    (0x06, 0x46, 1, 2),  // Get User Name
    (0x06, 0x47, 18, 4), // Set User Password
    (0x06, 0x48, 6, 2),  // Activate Payload
    (0x06, 0x49, 6, 1),  // Deactivate Payload
    (0x06, 0x06, 2, 1),  // Set ACPI Power State
    (0x06, 0x22, 0, 1),  // Reset Watchdog Timer
    (0x06, 0x24, 6, 1),  // Set Watchdog Timer
    (0x06, 0x54, 3, 1),  // Get Channel Cipher Suites
    (0x06, 0x07, 0, 1),  // Get ACPI Power State
    (0x06, 0x25, 0, 1),  // Get Watchdog Timer
    (0x06, 0x4d, 2, 1),  // Get User Payload Access
    (0x06, 0x4f, 2, 1),  // Get Channel Payload Version
    (0x00, 0x00, 0, 1),  // Get Chassis Capabilities
    (0x00, 0x01, 0, 2),  // Get Chassis Status
    (0x00, 0x02, 1, 5),  // Chassis Control
    (0x00, 0x04, 2, 1),  // Chassis Identify
    (0x00, 0x06, 1, 2),  // Set Power Restore Policy
    (0x00, 0x08, 6, 6),  // Set System Boot Options
    (0x00, 0x09, 3, 3),  // Get System Boot Options
    (0x0c, 0x01, 8, 1),  // Set LAN Configuration Parameters (26: 8 bytes)
    (0x0c, 0x02, 4, 2),  // Get LAN Configuration Parameters
    (0x0c, 0x21, 3, 1),  // Set SOL Configuration Parameters
    (0x0c, 0x22, 4, 2),  // Get SOL Configuration Parameters
    (0x0a, 0x10, 1, 1),  // Get FRU Inventory Area Info
    (0x0a, 0x11, 4, 2),  // Read FRU Data
    (0x0a, 0x20, 0, 1),  // Get SDR Repository Info
    (0x0a, 0x23, 6, 2),  // Get SDR
    (0x0a, 0x40, 0, 1),  // Get SEL Info
    (0x0a, 0x43, 6, 1),  // Get SEL Entry
    (0x0a, 0x49, 4, 1),  // Set SEL Time
    (0x04, 0x2d, 1, 1),  // Get Sensor Reading
    (0x04, 0x2f, 1, 1),  // Get Sensor Type
];

pub(super) fn bytes(r: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| r.next_u64() as u8).collect()
}

/// A boundary, small (selectors, parameters, actions) or random byte.
fn byte(r: &mut Rng) -> u8 {
    match r.below(8) {
        0 => 0x00,
        1 => 0xff,
        2 => 0x7f,
        3 => 0x80,
        4 | 5 => r.below(8) as u8,
        6 => r.below(16) as u8,
        _ => r.next_u64() as u8,
    }
}

/// A user ID that is not the fuzzer's own slot (bits 7:6 kept).
fn user_id(r: &mut Rng) -> u8 {
    let id = match r.below(5) {
        0 | 1 => VICTIM_SLOT,
        2 => 4 + r.below(12) as u8,
        3 => r.pick(&[0u8, 1, 15, 16, 0x3f]).to_owned(),
        _ => r.next_u64() as u8,
    };
    let id = if r.chance(15) { id | 0x80 } else { id };
    if id & 0x3f == ADMIN_SLOT {
        (id & 0xc0) | VICTIM_SLOT
    } else {
        id
    }
}

fn command(r: &mut Rng) -> Command {
    let (netfn, cmd, len) = if r.chance(6) {
        // Any chassis command (0x00-0x0f).
        (0x00, r.below(16) as u8, r.below(8))
    } else if r.chance(8) {
        (
            r.pick(&[0x00u8, 0x04, 0x06, 0x0a, 0x0c, 0x2c, 0x2e, 0x30, 0x3e])
                .to_owned()
                + if r.chance(10) { 1 } else { 0 },
            r.next_u64() as u8,
            r.below(8),
        )
    } else {
        let total: usize = SERVED.iter().map(|s| s.3).sum();
        let mut at = r.below(total);
        let mut pick = SERVED[0];
        for s in SERVED {
            if at < s.3 {
                pick = *s;
                break;
            }
            at -= s.3;
        }
        (pick.0, pick.1, pick.2)
    };
    let len = match r.below(10) {
        0..=5 => len,
        6 => len.saturating_sub(1),
        7 => len + 1,
        8 => 0,
        _ => r.below(40),
    };
    let mut data: Vec<u8> = (0..len).map(|_| byte(r)).collect();
    // The commands' first data bytes mostly right, so the rest is reached.
    if netfn == 0x06
        && matches!(cmd, 0x38 | 0x40 | 0x41 | 0x42 | 0x43 | 0x44)
        && !data.is_empty()
        && r.chance(70)
    {
        data[0] = (data[0] & 0xf0) | r.pick(&[0x01u8, 0x0e]);
    }
    match (netfn, cmd) {
        (0x06, 0x43) if data.len() > 1 => data[1] = user_id(r),
        (0x06, 0x45 | 0x47) if !data.is_empty() => {
            data[0] = user_id(r);
            if cmd == 0x47 && data.len() > 1 && r.chance(60) {
                data[1] = r.below(4) as u8;
            }
        }
        (0x06, 0x44) if data.len() > 1 && r.chance(50) => data[1] = user_id(r),
        // Set Channel Access never lowers the privilege limit in effect
        // (volatile, bits 7:6 = 10b) below ADMINISTRATOR: that would refuse
        // the fuzzer's own logins from then on, as on a real BMC.
        (0x06, 0x40)
            if data.len() > 2 && data[2] >> 6 == 0b10 && (1..4).contains(&(data[2] & 0x0f)) =>
        {
            data[2] = (data[2] & 0xf0) | 0x04;
        }
        (0x06, 0x48 | 0x49) if data.len() > 1 && r.chance(60) => {
            data[0] = 1;
            data[1] = 1;
        }
        // LAN parameter 26 (the lockout policy) mostly, its lockout kept
        // to 10 s at most: the setup cases' administrator, locked by their
        // wrong passwords, must come back within the run.
        (0x0c, 0x01) if data.len() > 1 => {
            if r.chance(50) {
                data[1] = 26;
            }
            if data[1] == 26 && data.len() > 7 {
                data[6] %= 2;
                data[7] = 0;
            }
        }
        // Chassis Control: mostly one of its six actions.
        (0x00, 0x02) if !data.is_empty() && r.chance(70) => data[0] = r.below(6) as u8,
        (0x00, 0x08 | 0x09) if !data.is_empty() && r.chance(70) => {
            data[0] = r.pick(&[0u8, 3, 4, 5, 5, 5, 7, 0x85]).to_owned();
        }
        _ => {}
    }
    let own_sid = (netfn, cmd) == (0x06, 0x3c) && data.len() >= 4 && r.chance(30);
    let prelude = if r.chance(if netfn == 0x00 { 60 } else { 15 }) {
        prelude(r)
    } else {
        Vec::new()
    };
    Command {
        netfn,
        cmd,
        data,
        own_sid,
        prelude,
    }
}

/// State setters a command may follow: power off or on, boot flags
/// (valid with no override, PXE once, a set in progress), a watchdog
/// counting down from 1,000 s with no action.
fn prelude(r: &mut Rng) -> Vec<(u8, u8, Vec<u8>)> {
    let mut p = Vec::new();
    match r.below(4) {
        0 | 1 => p.push((0x00, 0x02, vec![0x00])),
        2 => p.push((0x00, 0x02, vec![0x01])),
        _ => {}
    }
    match r.below(6) {
        0 | 1 => p.push((0x00, 0x08, vec![5, 0x80, 0x00, 0, 0, 0])),
        2 => p.push((0x00, 0x08, vec![5, 0x80, 0x04, 0, 0, 0])),
        3 => p.push((0x00, 0x08, vec![0, 0x01])),
        _ => {}
    }
    if r.chance(20) {
        p.push((0x06, 0x24, vec![0x44, 0x00, 0, 0, 0x10, 0x27]));
        p.push((0x06, 0x22, Vec::new()));
    }
    p
}

fn setup(r: &mut Rng) -> Setup {
    let who = match r.below(10) {
        0..=3 => Who::Admin,
        4..=6 => Who::Victim,
        _ => Who::Unknown(match r.below(4) {
            0 => Vec::new(),
            1 => {
                let n = 17 + r.below(60);
                bytes(r, n)
            }
            2 => b"shoal-fuzz-adm\0".to_vec(),
            _ => {
                let n = 1 + r.below(16);
                bytes(r, n)
            }
        }),
    };
    let steps = match r.below(10) {
        0 => 1,
        1 | 2 => 2,
        3 => 3,
        _ => 4,
    };
    // One mutation at most per sequence, mostly, so the rest is reached.
    let mutate = r.below(12);
    let right_password = mutate != 0;
    Setup {
        right_password,
        suite: *r.pick(&[3u8, 3, 17, 17, 1, 2]),
        algorithms: (mutate == 1).then(|| {
            (
                byte(r) & 0x3f,
                byte(r) & 0x3f,
                byte(r) & 0x3f,
                *r.pick(&[0u8, 8, 8, 4, 0xff]),
            )
        }),
        open_role: if mutate == 2 { byte(r) } else { 4 },
        open_len: (mutate == 3).then(|| *r.pick(&[0usize, 1, 7, 8, 31, 33, 64])),
        role: if mutate == 4 {
            byte(r)
        } else {
            0x10 | *r.pick(&[2u8, 3, 4, 4])
        },
        name_len_lie: (mutate == 5).then(|| byte(r)),
        rakp1_wrong_sid: mutate == 6,
        bad_hmac: (mutate == 7).then(|| {
            let n = *r.pick(&[0usize, 1, 12, 16, 20, 32, 40]);
            bytes(r, n)
        }),
        rakp3_status: if mutate == 8 { 1 + byte(r) % 0x12 } else { 0 },
        rakp3_wrong_sid: mutate == 9,
        who,
        steps,
        command: r.chance(50).then(|| command(r)),
    }
}

fn datagram(r: &mut Rng) -> Op {
    let base = *r.pick(&[
        Template::Ping,
        Template::V15AuthCaps,
        Template::OpenSession,
        Template::Rakp1,
        Template::Rakp3,
        Template::V20Outside,
        Template::InSession,
        Template::InSession,
        Template::InSession,
    ]);
    let in_session = base == Template::InSession;
    let mutation = match r.below(if in_session { 12 } else { 6 }) {
        0 => Mutation::Random {
            len: *r.pick(&[0usize, 1, 3, 4, 5, 12, 16, 40, 200, 1024, 1025, 1500]),
            header: r.chance(60),
            fill: r.next_u64(),
        },
        1 => Mutation::Truncate(r.next_u64()),
        2 => {
            let n = 1 + r.below(8);
            Mutation::BitFlips((0..n).map(|_| (r.next_u64(), 1 << r.below(8))).collect())
        }
        3 => Mutation::LengthLie(match r.below(4) {
            0 => 0,
            1 => 0xffff,
            2 => r.below(64) as u16,
            _ => r.next_u64() as u16,
        }),
        4 | 5 => Mutation::PayloadType(if r.chance(50) {
            r.below(0x40) as u8 | (r.below(4) as u8) << 6
        } else {
            *r.pick(&[0x01u8, 0x02, 0x10, 0x12, 0x14, 0x15, 0x20, 0x3f])
        }),
        6 => Mutation::WrongSid(if r.chance(30) { 0 } else { r.next_u64() as u32 }),
        7 => Mutation::SeqAhead(*r.pick(&[0u32, 17, 18, 100, 0x8000_0000, u32::MAX])),
        8 => Mutation::Replay,
        9 | 10 => Mutation::Trailer {
            at: r.below(24) as u8,
            xor: 1 << r.below(8),
        },
        _ => Mutation::ProtectionBits(*r.pick(&[0x40u8, 0x80, 0xc0])),
    };
    Op::Datagram { base, mutation }
}

/// Case `id` of `seed`.
pub fn case(seed: u64, id: u64) -> Case {
    // Apart from the HTTP targets' stream of the same seed.
    let mut r = Rng::for_case(seed ^ 0x1b3d_1ba1_0000_0623, id);
    let op = match r.below(100) {
        0..=34 => datagram(&mut r),
        35..=54 => Op::Setup(Box::new(setup(&mut r))),
        _ => Op::Command(command(&mut r)),
    };
    let mut iv = [0u8; 16];
    iv.iter_mut().for_each(|b| *b = r.next_u64() as u8);
    Case { id, op, iv }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fuzz::ipmi::datagram::{mutate, template};

    #[test]
    fn a_case_is_a_function_of_seed_and_number() {
        for n in 0..500 {
            assert_eq!(case(7, n), case(7, n));
        }
        let differ = (0..100).filter(|&n| case(7, n) != case(8, n)).count();
        assert!(differ > 90, "{differ}");
        // The session-less datagrams are the same bytes every time.
        for n in 0..500 {
            if let Op::Datagram { base, mutation } = case(7, n).op {
                if base != Template::InSession {
                    let render = || {
                        let mut d = template(base, 0x5400 + n as u32, n);
                        mutate(&mut d, &mutation);
                        d
                    };
                    assert_eq!(render(), render(), "case {n}");
                }
            }
        }
    }

    #[test]
    fn the_families_are_all_drawn_and_the_fuzz_account_is_spared() {
        let cases: Vec<Case> = (0..2000).map(|n| case(1, n)).collect();
        for f in ["datagram", "session-setup", "in-session"] {
            assert!(
                cases.iter().filter(|c| c.family() == f).count() > 200,
                "{f}"
            );
        }
        for c in &cases {
            let cmds = match &c.op {
                Op::Command(cmd) => vec![cmd],
                Op::Setup(s) => s.command.iter().collect(),
                Op::Datagram { .. } => vec![],
            };
            for cmd in cmds {
                let id = match (cmd.netfn, cmd.cmd) {
                    (0x06, 0x43) => cmd.data.get(1),
                    (0x06, 0x45 | 0x47) => cmd.data.first(),
                    _ => None,
                };
                assert!(id.is_none_or(|id| id & 0x3f != ADMIN_SLOT), "{c:?}");
                if (cmd.netfn, cmd.cmd) == (0x0c, 0x01) && cmd.data.get(1) == Some(&26) {
                    let lockout = cmd.data.get(6..8).map(|d| u16::from_le_bytes([d[0], d[1]]));
                    assert!(lockout.is_none_or(|tens| tens <= 1), "{c:?}");
                }
                if (cmd.netfn, cmd.cmd) == (0x06, 0x40) {
                    let lowers = cmd
                        .data
                        .get(2)
                        .is_some_and(|l| l >> 6 == 0b10 && (1..4).contains(&(l & 0x0f)));
                    assert!(!lowers, "{c:?}");
                }
            }
        }
    }
}
