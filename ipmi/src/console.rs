//! The remote console's side of RMCP+, without I/O: each step takes the
//! BMC's datagram and gives the next one to send. The emulator's tests
//! drive a BMC in process with it, and the harness's benchmark drives
//! BMCs over UDP; written from the IPMI v2.0 spec (section 13), apart from
//! the server's session code, so the two check each other.

use crate::crypto::{Auth, Keys, Suite};
use crate::wire::{self, payload, Datagram};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsoleError {
    #[error("not an RMCP+ datagram of the expected payload type")]
    Unexpected,
    #[error("the BMC answered {stage} with status 0x{status:02x}")]
    Status { stage: &'static str, status: u8 },
    #[error("RAKP 2's key exchange code does not match the password")]
    Rakp2,
    #[error("RAKP 4's integrity check value is wrong")]
    Rakp4,
    #[error("the response fails its integrity check or does not decrypt")]
    Integrity,
    #[error("the response is no IPMI response")]
    Malformed,
}

/// A login in progress.
#[derive(Debug, Clone)]
pub struct Login {
    user: Vec<u8>,
    password: Vec<u8>,
    suite: Suite,
    /// RAKP 1's role byte (privilege, and 0x10 for a name-only lookup).
    role: u8,
    console_sid: u32,
    rm: [u8; 16],
    bmc_sid: u32,
    rc: [u8; 16],
    guid: [u8; 16],
}

/// RAKP 3, and whether RAKP 2 proved the BMC knows the password (a real
/// console stops when it did not; a test may send it anyway).
#[derive(Debug, Clone)]
pub struct Rakp3 {
    pub datagram: Vec<u8>,
    pub password_matched: bool,
}

fn v20(datagram: &[u8], want: u8) -> Result<wire::V20<'_>, ConsoleError> {
    match wire::parse(datagram) {
        Ok(Datagram::V20(p)) if p.payload_type == want => Ok(p),
        _ => Err(ConsoleError::Unexpected),
    }
}

fn status(p: &wire::V20<'_>, stage: &'static str) -> Result<(), ConsoleError> {
    match p.payload.get(1) {
        Some(0) => Ok(()),
        Some(s) => Err(ConsoleError::Status { stage, status: *s }),
        None => Err(ConsoleError::Unexpected),
    }
}

impl Login {
    /// `role`: the privilege level asked for (name-only lookup is added);
    /// `console_sid` and `rm` are the console's session ID and random
    /// number (random in real use).
    pub fn new(
        user: &[u8],
        password: &[u8],
        suite: Suite,
        role: u8,
        console_sid: u32,
        rm: [u8; 16],
    ) -> Login {
        Login {
            user: user.to_vec(),
            password: password.to_vec(),
            suite,
            role: 0x10 | (role & 0x0f),
            console_sid,
            rm,
            bmc_sid: 0,
            rc: [0; 16],
            guid: [0; 16],
        }
    }

    /// The Open Session Request, proposing the suite's algorithms.
    pub fn open(&self) -> Vec<u8> {
        let mut p = vec![0x01, 0, 0, 0];
        p.extend_from_slice(&self.console_sid.to_le_bytes());
        p.extend_from_slice(&[0, 0, 0, 8, self.suite.auth.id(), 0, 0, 0]);
        p.extend_from_slice(&[1, 0, 0, 8, self.suite.integrity.id(), 0, 0, 0]);
        p.extend_from_slice(&[2, 0, 0, 8, self.suite.conf.id(), 0, 0, 0]);
        wire::build_v20(payload::OPEN_SESSION_REQUEST, false, 0, 0, &p, None)
    }

    /// The Open Session Response → RAKP 1.
    pub fn rakp1(&mut self, response: &[u8]) -> Result<Vec<u8>, ConsoleError> {
        let p = v20(response, payload::OPEN_SESSION_RESPONSE)?;
        status(&p, "Open Session")?;
        let b = p.payload.get(8..12).ok_or(ConsoleError::Unexpected)?;
        self.bmc_sid = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let mut r = vec![0x02, 0, 0, 0];
        r.extend_from_slice(&self.bmc_sid.to_le_bytes());
        r.extend_from_slice(&self.rm);
        r.extend_from_slice(&[self.role, 0, 0, self.user.len() as u8]);
        r.extend_from_slice(&self.user);
        Ok(wire::build_v20(payload::RAKP1, false, 0, 0, &r, None))
    }

    /// RAKP 2 → RAKP 3.
    pub fn rakp3(&mut self, response: &[u8]) -> Result<Rakp3, ConsoleError> {
        let p = v20(response, payload::RAKP2)?;
        status(&p, "RAKP 1")?;
        let body = p.payload;
        if body.len() < 40 {
            return Err(ConsoleError::Unexpected);
        }
        self.rc.copy_from_slice(&body[8..24]);
        self.guid.copy_from_slice(&body[24..40]);
        let role_name = [self.role, self.user.len() as u8];
        let expected = self.suite.auth.hmac(
            &self.password,
            &[
                &self.console_sid.to_le_bytes(),
                &self.bmc_sid.to_le_bytes(),
                &self.rm,
                &self.rc,
                &self.guid,
                &role_name,
                &self.user,
            ],
        );
        let mut r = vec![0x03, 0, 0, 0];
        r.extend_from_slice(&self.bmc_sid.to_le_bytes());
        r.extend_from_slice(&self.suite.auth.hmac(
            &self.password,
            &[
                &self.rc,
                &self.console_sid.to_le_bytes(),
                &role_name,
                &self.user,
            ],
        ));
        Ok(Rakp3 {
            datagram: wire::build_v20(payload::RAKP3, false, 0, 0, &r, None),
            password_matched: crate::crypto::ct_eq(&body[40..], &expected),
        })
    }

    /// RAKP 4 → the established session.
    pub fn finish(self, response: &[u8]) -> Result<Session, ConsoleError> {
        let p = v20(response, payload::RAKP4)?;
        status(&p, "RAKP 3")?;
        let role_name = [self.role, self.user.len() as u8];
        let sik = self.suite.auth.hmac(
            &self.password,
            &[&self.rm, &self.rc, &role_name, &self.user],
        );
        let mut icv = self
            .suite
            .auth
            .hmac(&sik, &[&self.rm, &self.bmc_sid.to_le_bytes(), &self.guid]);
        icv.truncate(self.suite.auth.icv_len());
        if !crate::crypto::ct_eq(p.payload.get(8..).unwrap_or_default(), &icv) {
            return Err(ConsoleError::Rakp4);
        }
        let keys = if self.suite.auth == Auth::None {
            Keys::derive(self.suite, &[])
        } else {
            Keys::derive(self.suite, &sik)
        };
        Ok(Session {
            keys,
            bmc_sid: self.bmc_sid,
            console_sid: self.console_sid,
            seq: 0,
            rq_seq: 0,
        })
    }
}

/// An established session, on the console's side.
#[derive(Debug, Clone)]
pub struct Session {
    pub keys: Keys,
    pub bmc_sid: u32,
    pub console_sid: u32,
    /// The last session sequence number sent.
    pub seq: u32,
    rq_seq: u8,
}

impl Session {
    /// The datagram of a request, numbered next; `iv` is the AES IV
    /// (random in real use).
    pub fn request(&mut self, netfn: u8, cmd: u8, data: &[u8], iv: [u8; 16]) -> Vec<u8> {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.rq_seq = (self.rq_seq + 1) % 64;
        let msg = wire::build_request(netfn, cmd, self.rq_seq, data);
        let encrypted = self.keys.suite.conf != crate::crypto::Conf::None;
        let body = if encrypted {
            self.keys.encrypt(&msg, iv)
        } else {
            msg
        };
        let keys = &self.keys;
        let code = |b: &[u8]| keys.suite.integrity.code(&keys.k1, b);
        let auth: wire::AuthCode<'_> =
            (keys.suite.integrity != crate::crypto::Integrity::None).then_some(&code);
        wire::build_v20(
            payload::IPMI,
            encrypted,
            self.bmc_sid,
            self.seq,
            &body,
            auth,
        )
    }

    /// A response: its completion code and data, integrity checked.
    pub fn response(&self, datagram: &[u8]) -> Result<(u8, Vec<u8>), ConsoleError> {
        let msg = self.payload(datagram, payload::IPMI)?;
        if msg.len() < 8 {
            return Err(ConsoleError::Malformed);
        }
        Ok((msg[6], msg[7..msg.len() - 1].to_vec()))
    }

    /// The body of a datagram of this session carrying `payload_type`
    /// (an IPMI message, or a SOL packet), integrity checked and
    /// decrypted.
    pub fn payload(&self, datagram: &[u8], payload_type: u8) -> Result<Vec<u8>, ConsoleError> {
        let p = v20(datagram, payload_type)?;
        if p.session_id != self.console_sid {
            return Err(ConsoleError::Unexpected);
        }
        let suite = self.keys.suite;
        if suite.integrity != crate::crypto::Integrity::None {
            let (covered, code) = p
                .integrity_parts(suite.integrity.code_len())
                .map_err(|_| ConsoleError::Integrity)?;
            if !crate::crypto::ct_eq(&suite.integrity.code(&self.keys.k1, covered), code) {
                return Err(ConsoleError::Integrity);
            }
        }
        if p.encrypted {
            self.keys.decrypt(p.payload).ok_or(ConsoleError::Integrity)
        } else {
            Ok(p.payload.to_vec())
        }
    }
}
