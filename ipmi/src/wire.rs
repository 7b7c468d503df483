//! The bytes of IPMI over LAN: the RMCP header, the IPMI v1.5 and v2.0
//! (RMCP+) session wrappers, and the IPMI message inside them (IPMI v2.0
//! spec, sections 13.6 to 13.8). Pure functions: every parse returns a
//! [`WireError`] for input that is short, long or inconsistent, never a
//! panic; nothing here knows sessions or keys beyond the lengths asked.

/// RMCP version 1.0, the only one there is.
pub const RMCP_VERSION: u8 = 0x06;
/// RMCP message class: ASF (presence ping).
pub const CLASS_ASF: u8 = 0x06;
/// RMCP message class: IPMI.
pub const CLASS_IPMI: u8 = 0x07;
/// Authentication type byte of an IPMI v2.0 (RMCP+) session header.
pub const AUTH_RMCPP: u8 = 0x06;
/// The largest datagram taken: far above any IPMI message (SOL data is
/// at most a few hundred bytes); longer ones are refused unparsed.
pub const MAX_DATAGRAM: usize = 1024;

/// RMCP+ payload types (the low six bits of the payload-type byte).
pub mod payload {
    pub const IPMI: u8 = 0x00;
    pub const SOL: u8 = 0x01;
    pub const OPEN_SESSION_REQUEST: u8 = 0x10;
    pub const OPEN_SESSION_RESPONSE: u8 = 0x11;
    pub const RAKP1: u8 = 0x12;
    pub const RAKP2: u8 = 0x13;
    pub const RAKP3: u8 = 0x14;
    pub const RAKP4: u8 = 0x15;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("datagram of {0} bytes is too short")]
    Short(usize),
    #[error("datagram of {0} bytes is too long")]
    Long(usize),
    #[error("not RMCP version 1.0 (0x{0:02x})")]
    Version(u8),
    #[error("RMCP class 0x{0:02x} is not served")]
    Class(u8),
    #[error("authentication type 0x{0:02x} is not served")]
    AuthType(u8),
    #[error("length field {declared} does not match the {actual} bytes present")]
    Length { declared: usize, actual: usize },
    #[error("bad checksum in the IPMI message")]
    Checksum,
    #[error("bad integrity pad")]
    Pad,
    #[error("not an ASF presence ping")]
    NotPing,
}

/// One received datagram, its session wrapper parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// ASF Presence Ping (class 6): answered with a Presence Pong.
    Ping { rmcp_seq: u8, tag: u8 },
    /// IPMI v1.5 wrapper with authentication type NONE: only outside a
    /// session (Get Channel Authentication Capabilities and the like).
    V15 {
        seq: u32,
        session_id: u32,
        message: &'a [u8],
    },
    /// IPMI v2.0 (RMCP+) wrapper, its trailer not yet checked.
    V20(V20<'a>),
}

/// An RMCP+ packet as received: header fields, the payload (still
/// encrypted when `encrypted`), and what integrity covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V20<'a> {
    pub payload_type: u8,
    pub encrypted: bool,
    pub authenticated: bool,
    pub session_id: u32,
    pub seq: u32,
    pub payload: &'a [u8],
    /// Everything after the payload: integrity pad, pad length, next
    /// header and the AuthCode (only when `authenticated`).
    pub trailer: &'a [u8],
    /// From the AuthType byte to the end of the datagram, which the
    /// integrity check covers (minus the AuthCode).
    pub session_bytes: &'a [u8],
}

fn u32_le(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Parses a datagram's RMCP header and session wrapper.
pub fn parse(buf: &[u8]) -> Result<Datagram<'_>, WireError> {
    if buf.len() > MAX_DATAGRAM {
        return Err(WireError::Long(buf.len()));
    }
    if buf.len() < 4 {
        return Err(WireError::Short(buf.len()));
    }
    if buf[0] != RMCP_VERSION {
        return Err(WireError::Version(buf[0]));
    }
    match buf[3] & 0x1f {
        CLASS_ASF => parse_ping(buf),
        CLASS_IPMI if buf[3] & 0x80 == 0 => parse_session(buf),
        other => Err(WireError::Class(other)),
    }
}

/// ASF message: IANA 4542, type 0x80 (Presence Ping), tag, reserved, len.
fn parse_ping(buf: &[u8]) -> Result<Datagram<'_>, WireError> {
    let b = buf.get(4..12).ok_or(WireError::Short(buf.len()))?;
    if b[..4] != [0x00, 0x00, 0x11, 0xbe] || b[4] != 0x80 {
        return Err(WireError::NotPing);
    }
    Ok(Datagram::Ping {
        rmcp_seq: buf[2],
        tag: b[5],
    })
}

fn parse_session(buf: &[u8]) -> Result<Datagram<'_>, WireError> {
    let s = &buf[4..];
    let short = || WireError::Short(buf.len());
    match *s.first().ok_or_else(short)? {
        0x00 => {
            // AuthType(1) Seq(4) SessionId(4) Len(1) Message
            let h = s.get(..10).ok_or_else(short)?;
            let len = h[9] as usize;
            let message = &s[10..];
            if message.len() != len {
                return Err(WireError::Length {
                    declared: len,
                    actual: message.len(),
                });
            }
            Ok(Datagram::V15 {
                seq: u32_le(&h[1..5]),
                session_id: u32_le(&h[5..9]),
                message,
            })
        }
        AUTH_RMCPP => {
            // AuthType(1) PayloadType(1) [OEM IANA(4) OEM id(2)]
            // SessionId(4) Seq(4) Len(2) Payload Trailer
            let pt = *s.get(1).ok_or_else(short)?;
            let mut at = 2;
            if pt & 0x3f == 0x02 {
                at += 6; // OEM explicit: skipped, then refused by type
            }
            let h = s.get(at..at + 10).ok_or_else(short)?;
            let len = u16::from_le_bytes([h[8], h[9]]) as usize;
            let body = &s[at + 10..];
            let payload = body.get(..len).ok_or(WireError::Length {
                declared: len,
                actual: body.len(),
            })?;
            let trailer = &body[len..];
            let authenticated = pt & 0x40 != 0;
            if !authenticated && !trailer.is_empty() {
                return Err(WireError::Length {
                    declared: len,
                    actual: body.len(),
                });
            }
            Ok(Datagram::V20(V20 {
                payload_type: pt & 0x3f,
                encrypted: pt & 0x80 != 0,
                authenticated,
                session_id: u32_le(&h[0..4]),
                seq: u32_le(&h[4..8]),
                payload,
                trailer,
                session_bytes: s,
            }))
        }
        other => Err(WireError::AuthType(other)),
    }
}

impl V20<'_> {
    /// Checks the trailer's shape for an AuthCode of `code_len` bytes and
    /// returns `(covered bytes, auth code)`: the integrity pad makes the
    /// bytes from AuthType to Next Header a multiple of four.
    pub fn integrity_parts(&self, code_len: usize) -> Result<(&[u8], &[u8]), WireError> {
        let t = self.trailer;
        if t.len() < code_len + 2 {
            return Err(WireError::Pad);
        }
        let (before, code) = t.split_at(t.len() - code_len);
        let pad_len = before[before.len() - 2] as usize;
        let next_header = before[before.len() - 1];
        if next_header != 0x07 || pad_len + 2 != before.len() || pad_len > 3 {
            return Err(WireError::Pad);
        }
        if before[..pad_len].iter().any(|b| *b != 0xff) {
            return Err(WireError::Pad);
        }
        let covered = &self.session_bytes[..self.session_bytes.len() - code_len];
        if covered.len() % 4 != 0 {
            return Err(WireError::Pad);
        }
        Ok((covered, code))
    }
}

/// Computes a packet's AuthCode over the bytes integrity covers.
pub type AuthCode<'a> = Option<&'a dyn Fn(&[u8]) -> Vec<u8>>;

/// Builds an RMCP+ datagram: `payload` is already encrypted when
/// `encrypted`; `auth` computes the AuthCode over the covered bytes
/// (present iff the packet is authenticated).
pub fn build_v20(
    payload_type: u8,
    encrypted: bool,
    session_id: u32,
    seq: u32,
    payload: &[u8],
    auth: AuthCode<'_>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 48);
    out.extend_from_slice(&[RMCP_VERSION, 0x00, 0xff, CLASS_IPMI, AUTH_RMCPP]);
    let mut pt = payload_type & 0x3f;
    if encrypted {
        pt |= 0x80;
    }
    if auth.is_some() {
        pt |= 0x40;
    }
    out.push(pt);
    out.extend_from_slice(&session_id.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    out.extend_from_slice(payload);
    if let Some(auth) = auth {
        // Covered: AuthType .. Next Header, padded to a multiple of 4.
        let covered_len = out.len() - 4 + 2;
        let pad = (4 - covered_len % 4) % 4;
        out.extend(std::iter::repeat_n(0xff, pad));
        out.push(pad as u8);
        out.push(0x07);
        let code = auth(&out[4..]);
        out.extend_from_slice(&code);
    }
    out
}

/// Builds an IPMI v1.5 datagram with authentication type NONE.
pub fn build_v15(message: &[u8]) -> Vec<u8> {
    let mut out = vec![RMCP_VERSION, 0x00, 0xff, CLASS_IPMI, 0x00];
    out.extend_from_slice(&[0; 8]); // sequence, session id
    out.push(message.len() as u8);
    out.extend_from_slice(message);
    out
}

/// The ASF Presence Pong answering a ping: IPMI supported, no OEM data.
pub fn build_pong(rmcp_seq: u8, tag: u8) -> Vec<u8> {
    let mut out = vec![RMCP_VERSION, 0x00, rmcp_seq, CLASS_ASF];
    out.extend_from_slice(&[0x00, 0x00, 0x11, 0xbe, 0x40, tag, 0x00, 0x10]);
    out.extend_from_slice(&[0x00, 0x00, 0x11, 0xbe]); // IANA: ASF
    out.extend_from_slice(&[0; 4]); // OEM
    out.push(0x81); // IPMI supported, ASF v1.0
    out.push(0x00);
    out.extend_from_slice(&[0; 6]);
    out
}

/// A request inside an IPMI session or session-less packet (LAN format:
/// rsSA, netFn/rsLUN, checksum, rqSA, rqSeq/rqLUN, cmd, data, checksum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub rs_addr: u8,
    pub netfn: u8,
    pub rs_lun: u8,
    pub rq_addr: u8,
    pub rq_seq: u8,
    pub rq_lun: u8,
    pub cmd: u8,
    pub data: &'a [u8],
}

/// The two's-complement checksum IPMI messages and FRU areas end with.
pub fn checksum(b: &[u8]) -> u8 {
    b.iter().fold(0u8, |a, x| a.wrapping_add(*x)).wrapping_neg()
}

/// Parses a LAN-format IPMI request, both checksums checked.
pub fn parse_request(b: &[u8]) -> Result<Request<'_>, WireError> {
    if b.len() < 7 {
        return Err(WireError::Short(b.len()));
    }
    if checksum(&b[..2]) != b[2] || checksum(&b[3..b.len() - 1]) != b[b.len() - 1] {
        return Err(WireError::Checksum);
    }
    Ok(Request {
        rs_addr: b[0],
        netfn: b[1] >> 2,
        rs_lun: b[1] & 3,
        rq_addr: b[3],
        rq_seq: b[4] >> 2,
        rq_lun: b[4] & 3,
        cmd: b[5],
        data: &b[6..b.len() - 1],
    })
}

/// The response to `req`: completion code `cc` and `data`.
pub fn build_response(req: &Request<'_>, cc: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 8);
    out.push(req.rq_addr);
    out.push(((req.netfn | 1) << 2) | req.rq_lun);
    out.push(checksum(&out[..2]));
    out.push(req.rs_addr);
    out.push((req.rq_seq << 2) | req.rs_lun);
    out.push(req.cmd);
    out.push(cc);
    out.extend_from_slice(data);
    out.push(checksum(&out[3..]));
    out
}

/// Builds a LAN-format request (the console's side).
pub fn build_request(netfn: u8, cmd: u8, rq_seq: u8, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x20, netfn << 2];
    out.push(checksum(&out));
    out.extend_from_slice(&[0x81, rq_seq << 2, cmd]);
    out.extend_from_slice(data);
    out.push(checksum(&out[3..]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_its_response_mirrors_it() {
        let raw = build_request(0x06, 0x01, 5, &[1, 2]);
        let req = parse_request(&raw).unwrap();
        assert_eq!(
            (req.netfn, req.cmd, req.rq_seq, req.data),
            (6, 1, 5, &[1, 2][..])
        );
        let resp = build_response(&req, 0, &[9]);
        // rqSA, netFn 7 / LUN 0, checksum, rsSA, seq, cmd, cc, data, checksum
        assert_eq!(resp[0], 0x81);
        assert_eq!(resp[1], 7 << 2);
        assert_eq!(resp[4] >> 2, 5);
        assert_eq!(checksum(&resp[3..resp.len() - 1]), resp[resp.len() - 1]);
    }

    #[test]
    fn a_bad_checksum_is_refused() {
        let mut raw = build_request(0x06, 0x01, 5, &[]);
        raw[2] ^= 1;
        assert_eq!(parse_request(&raw), Err(WireError::Checksum));
        let mut raw = build_request(0x06, 0x01, 5, &[]);
        let n = raw.len();
        raw[n - 1] ^= 1;
        assert_eq!(parse_request(&raw), Err(WireError::Checksum));
    }

    #[test]
    fn a_v20_packet_round_trips_with_its_integrity_trailer() {
        let code = |b: &[u8]| vec![b.len() as u8; 12];
        let raw = build_v20(0, true, 0x1234, 7, &[1, 2, 3], Some(&code));
        let Datagram::V20(p) = parse(&raw).unwrap() else {
            panic!("not v2.0")
        };
        assert!(p.encrypted && p.authenticated);
        assert_eq!(
            (p.session_id, p.seq, p.payload),
            (0x1234, 7, &[1, 2, 3][..])
        );
        let (covered, auth) = p.integrity_parts(12).unwrap();
        assert_eq!(covered.len() % 4, 0);
        assert_eq!(auth, &code(covered)[..]);
        assert_eq!(p.integrity_parts(16), Err(WireError::Pad));
    }

    #[test]
    fn lengths_that_lie_are_refused() {
        let mut raw = build_v15(&build_request(6, 0x38, 0, &[0x8e, 4]));
        raw[13] += 1;
        assert!(matches!(parse(&raw), Err(WireError::Length { .. })));
        let mut raw = build_v20(0x10, false, 0, 0, &[0; 32], None);
        raw[14] = 40;
        assert!(matches!(parse(&raw), Err(WireError::Length { .. })));
        assert_eq!(parse(&[6, 0, 0xff]), Err(WireError::Short(3)));
        assert_eq!(parse(&[5, 0, 0xff, 7, 0]), Err(WireError::Version(5)));
        assert!(matches!(parse(&vec![6; 2000]), Err(WireError::Long(2000))));
    }

    #[test]
    fn a_presence_ping_gets_a_pong() {
        let ping = [6, 0, 0xff, 6, 0, 0, 0x11, 0xbe, 0x80, 0x42, 0, 0];
        assert_eq!(
            parse(&ping),
            Ok(Datagram::Ping {
                rmcp_seq: 0xff,
                tag: 0x42
            })
        );
        let pong = build_pong(0xff, 0x42);
        assert_eq!(pong[8], 0x40);
        assert_eq!(pong[9], 0x42);
        assert_eq!(pong.len(), 28);
    }
}
