//! The IPMI target's console over UDP on loopback: datagrams out and the
//! answers that belong to them back (others, late ones and SOL packets,
//! skipped), an RMCP+ login with `shoal_ipmi::console`, requests in a
//! session, and the machine state read over IPMI before and after a
//! command.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use shoal_ipmi::console::{Login, Session};
use shoal_ipmi::crypto::SUITES;
use shoal_ipmi::wire::{self, payload, Datagram};

/// How long an answer is waited for where silence is allowed.
pub const QUIET: Duration = Duration::from_millis(20);

pub struct Link {
    sock: UdpSocket,
    /// Datagrams sent, for the rate.
    pub sent: u64,
}

/// The answer's payload type for a datagram's (RAKP and Open Session:
/// the next one up; 0xff for anything not RMCP+).
pub fn answer_type(out: &[u8]) -> u8 {
    match (out.get(4), out.get(5).map(|t| t & 0x3f)) {
        (Some(0x06), Some(t @ (0x10 | 0x12 | 0x14))) => t + 1,
        (Some(0x06), Some(t)) => t,
        _ => 0xff,
    }
}

impl Link {
    pub fn new(bmc: SocketAddr) -> Result<Link> {
        let sock = UdpSocket::bind("127.0.0.1:0")?;
        sock.connect(bmc)?;
        Ok(Link { sock, sent: 0 })
    }

    pub fn send(&mut self, d: &[u8]) -> Result<()> {
        self.sent += 1;
        // A refused send (ICMP port unreachable of an earlier datagram)
        // is the BMC's absence, which `alive` judges.
        let _ = self.sock.send(d);
        Ok(())
    }

    /// Datagrams until `wait` has passed, each offered to `take` until it
    /// takes one.
    pub fn recv_until<T>(
        &mut self,
        wait: Duration,
        mut take: impl FnMut(&[u8]) -> Option<T>,
    ) -> Option<T> {
        let end = Instant::now() + wait;
        let mut buf = [0u8; 2048];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let _ = self.sock.set_read_timeout(Some(left));
            match self.sock.recv(&mut buf) {
                Ok(k) => {
                    if let Some(t) = take(&buf[..k]) {
                        return Some(t);
                    }
                }
                // An ICMP "port unreachable" of an earlier datagram.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return None,
            }
        }
    }

    /// One datagram out; its answer (of the payload type it calls for),
    /// if one comes within `wait`.
    pub fn exchange(&mut self, out: &[u8], wait: Duration) -> Result<Option<Vec<u8>>> {
        let want = answer_type(out);
        self.send(out)?;
        Ok(self.recv_until(wait, |d| {
            // Session-less answers only (session ID 0): not a packet of
            // a session (SOL a payload activated sends on its own).
            let ok = match wire::parse(d) {
                Ok(Datagram::V20(p)) => p.payload_type == want && p.session_id == 0,
                Ok(Datagram::V15 { .. }) => out.get(4) == Some(&0),
                Ok(Datagram::Ping { .. }) => false,
                Err(_) => d.get(3) == Some(&6),
            };
            ok.then(|| d.to_vec())
        }))
    }

    /// Drops whatever is queued (late answers, SOL packets).
    pub fn drain(&mut self) {
        self.recv_until(Duration::from_millis(1), |_| None::<()>);
    }

    /// A request of session `s`; its completion code and data, if the
    /// answer comes within `wait`.
    pub fn call(
        &mut self,
        s: &mut Session,
        netfn: u8,
        cmd: u8,
        data: &[u8],
        iv: [u8; 16],
        wait: Duration,
    ) -> Result<Option<(u8, Vec<u8>)>> {
        let d = s.request(netfn, cmd, data, iv);
        self.send(&d)?;
        Ok(self.answer(s, netfn, cmd, wait))
    }

    /// The answer of session `s` to (netfn, cmd), within `wait`.
    pub fn answer(
        &mut self,
        s: &Session,
        netfn: u8,
        cmd: u8,
        wait: Duration,
    ) -> Option<(u8, Vec<u8>)> {
        self.recv_until(wait, |d| {
            let msg = s.payload(d, payload::IPMI).ok()?;
            if msg.len() < 8 || msg[1] >> 2 != netfn | 1 || msg[5] != cmd {
                return None;
            }
            Some((msg[6], msg[7..msg.len() - 1].to_vec()))
        })
    }
}

/// An RMCP+ login (cipher suite 17) raised to administrator; an error
/// names the step that failed.
pub fn login(
    link: &mut Link,
    user: &str,
    password: &str,
    n: u32,
    wait: Duration,
) -> Result<Session> {
    let suite = *SUITES.iter().find(|s| s.id == 17).context("suite 17")?;
    let mut rm = [0u8; 16];
    rm[..4].copy_from_slice(&n.to_le_bytes());
    let mut l = Login::new(
        user.as_bytes(),
        password.as_bytes(),
        suite,
        4,
        0x4600_0000 | (n & 0xffff),
        rm,
    );
    let step = |link: &mut Link, d: &[u8], what: &str| -> Result<Vec<u8>> {
        link.exchange(d, wait)?
            .with_context(|| format!("no answer to {what} in {wait:?}"))
    };
    let a = step(link, &l.open(), "Open Session")?;
    let r1 = l.rakp1(&a)?;
    let a = step(link, &r1, "RAKP 1")?;
    let r3 = l.rakp3(&a)?;
    if !r3.password_matched {
        bail!("RAKP 2 does not prove the password");
    }
    let a = step(link, &r3.datagram, "RAKP 3")?;
    let mut s = l.finish(&a)?;
    match link.call(&mut s, 0x06, 0x3b, &[4], [3; 16], wait)? {
        Some((0, _)) => Ok(s),
        Some((cc, _)) => bail!("Set Session Privilege Level (administrator): 0x{cc:02x}"),
        None => bail!("no answer to Set Session Privilege Level in {wait:?}"),
    }
}

/// Closes session `s` (its answer waited for briefly).
pub fn close(link: &mut Link, s: &mut Session) {
    let sid = s.bmc_sid.to_le_bytes();
    let _ = link.call(s, 0x06, 0x3c, &sid, [4; 16], QUIET);
}

/// What a state read asks: a name and a request.
pub struct Probe {
    pub name: String,
    pub netfn: u8,
    pub cmd: u8,
    pub data: Vec<u8>,
    /// The answer's bytes that count (the rest changes by itself).
    pub keep: fn(&[u8]) -> Vec<u8>,
}

fn probe(name: &str, netfn: u8, cmd: u8, data: &[u8], keep: fn(&[u8]) -> Vec<u8>) -> Probe {
    Probe {
        name: name.into(),
        netfn,
        cmd,
        data: data.to_vec(),
        keep,
    }
}

fn all(b: &[u8]) -> Vec<u8> {
    b.to_vec()
}

/// The reads that show what a command may change: the power state and
/// restore policy, the boot flags always; the user slots for user
/// commands, and the like.
pub fn probes(netfn: u8, cmd: u8) -> Vec<Probe> {
    // Chassis Status byte 1: power on (bit 0), restore policy (6:5).
    let mut p = vec![
        probe("chassis power/policy", 0x00, 0x01, &[], |b| {
            b.first().map(|x| vec![x & 0x61]).unwrap_or_default()
        }),
        probe("boot option 5", 0x00, 0x09, &[5, 0, 0], all),
    ];
    match (netfn, cmd) {
        (0x00, _) => {
            for param in [0u8, 3, 4] {
                p.push(probe(
                    &format!("boot option {param}"),
                    0x00,
                    0x09,
                    &[param, 0, 0],
                    all,
                ));
            }
            p.push(probe("boot option 7/0", 0x00, 0x09, &[7, 0, 0], all));
        }
        (0x06, 0x40..=0x47) => {
            for (ch, set) in [(0x01u8, 0x40u8), (0x01, 0x80), (0x0e, 0x40), (0x0e, 0x80)] {
                p.push(probe(
                    &format!("channel {ch} access {set:#04x}"),
                    0x06,
                    0x41,
                    &[ch, set],
                    all,
                ));
            }
            for id in 1..=15u8 {
                p.push(probe(&format!("user {id} name"), 0x06, 0x46, &[id], all));
                p.push(probe(
                    &format!("user {id} access"),
                    0x06,
                    0x44,
                    &[1, id],
                    all,
                ));
            }
        }
        (0x06, 0x06 | 0x07) => p.push(probe("ACPI power state", 0x06, 0x07, &[], all)),
        // Get Watchdog Timer without its present countdown.
        (0x06, 0x22 | 0x24 | 0x25) => p.push(probe("watchdog", 0x06, 0x25, &[], |b| {
            b[..b.len().min(6)].to_vec()
        })),
        (0x06, 0x3b) => p.push(probe("session privilege", 0x06, 0x3b, &[0], all)),
        // The lockout policy, the one LAN parameter that takes a Set.
        (0x0c, 0x01) => p.push(probe("LAN parameter 26", 0x0c, 0x02, &[1, 26, 0, 0], all)),
        _ => {}
    }
    p
}

/// Reads each probe in session `s`: (name, value text) pairs.
pub fn read_state(
    link: &mut Link,
    s: &mut Session,
    probes: &[Probe],
    wait: Duration,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(probes.len());
    for p in probes {
        let v = match link.call(s, p.netfn, p.cmd, &p.data, [5; 16], wait)? {
            Some((0, d)) => hex(&(p.keep)(&d)),
            Some((cc, _)) => format!("cc 0x{cc:02x}"),
            None => bail!("no answer to the state read {:?} in {wait:?}", p.name),
        };
        out.push((p.name.clone(), v));
    }
    Ok(out)
}

pub fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_told_by_payload_type() {
        let open = shoal_ipmi::wire::build_v20(0x10, false, 0, 0, &[0; 32], None);
        assert_eq!(answer_type(&open), 0x11);
        let ipmi = shoal_ipmi::wire::build_v20(0x00, false, 0, 0, &[0; 7], None);
        assert_eq!(answer_type(&ipmi), 0x00);
        assert_eq!(answer_type(&[6, 0, 0xff, 7, 0, 0]), 0xff);
        assert_eq!(answer_type(&[]), 0xff);
    }

    #[test]
    fn user_commands_read_every_slot() {
        // Both channels' both access sets, and every slot's name and access.
        assert_eq!(probes(0x06, 0x47).len(), 2 + 4 + 30);
        assert_eq!(probes(0x0a, 0x11).len(), 2);
    }
}
