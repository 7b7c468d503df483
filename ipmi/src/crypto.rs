//! The RMCP+ cipher suites: RAKP key exchange (HMAC-SHA1 or HMAC-SHA256),
//! per-packet integrity (HMAC-SHA1-96 or HMAC-SHA256-128) and
//! confidentiality (AES-CBC-128), IPMI v2.0 spec sections 13.28 to 13.32.
//!
//! What real clients do where the spec leaves room (checked in pyghmi,
//! ipmitool 1.8.19 and FreeIPMI): K1 and K2 derive from a 20-byte constant
//! with SHA-256 too; ROLEm is hashed as sent, name-only bit included.

use aes::cipher::{block_padding::NoPadding, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hmac::{Hmac, Mac};

/// RAKP authentication algorithm (Open Session payload type 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    None,
    HmacSha1,
    HmacSha256,
}

/// Integrity algorithm (payload type 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    None,
    HmacSha1_96,
    HmacSha256_128,
}

/// Confidentiality algorithm (payload type 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conf {
    None,
    AesCbc128,
}

impl Auth {
    pub fn from_id(id: u8) -> Option<Auth> {
        match id {
            0 => Some(Auth::None),
            1 => Some(Auth::HmacSha1),
            3 => Some(Auth::HmacSha256),
            _ => None,
        }
    }
    pub fn id(self) -> u8 {
        match self {
            Auth::None => 0,
            Auth::HmacSha1 => 1,
            Auth::HmacSha256 => 3,
        }
    }
    /// The keyed hash of the key exchange, full length.
    pub fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        match self {
            Auth::None => Vec::new(),
            Auth::HmacSha1 => hmac_sha1(key, parts),
            Auth::HmacSha256 => hmac_sha256(key, parts),
        }
    }
    /// Bytes of RAKP 4's integrity check value.
    pub fn icv_len(self) -> usize {
        match self {
            Auth::None => 0,
            Auth::HmacSha1 => 12,
            Auth::HmacSha256 => 16,
        }
    }
}

impl Integrity {
    pub fn from_id(id: u8) -> Option<Integrity> {
        match id {
            0 => Some(Integrity::None),
            1 => Some(Integrity::HmacSha1_96),
            4 => Some(Integrity::HmacSha256_128),
            _ => None,
        }
    }
    pub fn id(self) -> u8 {
        match self {
            Integrity::None => 0,
            Integrity::HmacSha1_96 => 1,
            Integrity::HmacSha256_128 => 4,
        }
    }
    /// Bytes of the AuthCode a packet carries.
    pub fn code_len(self) -> usize {
        match self {
            Integrity::None => 0,
            Integrity::HmacSha1_96 => 12,
            Integrity::HmacSha256_128 => 16,
        }
    }
    /// The AuthCode of `covered` under K1.
    pub fn code(self, k1: &[u8], covered: &[u8]) -> Vec<u8> {
        let mut full = match self {
            Integrity::None => return Vec::new(),
            Integrity::HmacSha1_96 => hmac_sha1(k1, &[covered]),
            Integrity::HmacSha256_128 => hmac_sha256(k1, &[covered]),
        };
        full.truncate(self.code_len());
        full
    }
}

impl Conf {
    pub fn from_id(id: u8) -> Option<Conf> {
        match id {
            0 => Some(Conf::None),
            1 => Some(Conf::AesCbc128),
            _ => None,
        }
    }
    pub fn id(self) -> u8 {
        match self {
            Conf::None => 0,
            Conf::AesCbc128 => 1,
        }
    }
}

/// Compares two byte strings in time independent of where they differ
/// (AuthCodes and RAKP codes are checked before anyone is known).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A cipher suite: the three algorithms a session runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    pub id: u8,
    pub auth: Auth,
    pub integrity: Integrity,
    pub conf: Conf,
}

/// The suites served, strongest last (Get Channel Cipher Suites lists them
/// in this order; ipmitool picks 17 when present, else 3): every one with
/// integrity, so nobody who sees a session ID can inject into it. Suites 1
/// and 15 (no integrity) are not served; suite 0 (no authentication at
/// all) only with `cipher_suite_zero`.
pub const SUITES: &[Suite] = &[
    Suite {
        id: 2,
        auth: Auth::HmacSha1,
        integrity: Integrity::HmacSha1_96,
        conf: Conf::None,
    },
    Suite {
        id: 3,
        auth: Auth::HmacSha1,
        integrity: Integrity::HmacSha1_96,
        conf: Conf::AesCbc128,
    },
    Suite {
        id: 16,
        auth: Auth::HmacSha256,
        integrity: Integrity::HmacSha256_128,
        conf: Conf::None,
    },
    Suite {
        id: 17,
        auth: Auth::HmacSha256,
        integrity: Integrity::HmacSha256_128,
        conf: Conf::AesCbc128,
    },
];

/// Suite 0: no authentication, integrity or confidentiality.
pub const SUITE_ZERO: Suite = Suite {
    id: 0,
    auth: Auth::None,
    integrity: Integrity::None,
    conf: Conf::None,
};

/// MAC `M` (an HMAC) keyed with `key` over the concatenation of `parts`.
fn hmac<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    #[allow(clippy::expect_used)]
    let mut m = <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

fn hmac_sha1(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    hmac::<Hmac<sha1::Sha1>>(key, parts)
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    hmac::<Hmac<sha2::Sha256>>(key, parts)
}

/// The keys of an established session.
#[derive(Clone)]
pub struct Keys {
    pub suite: Suite,
    pub k1: Vec<u8>,
    /// The AES key: the first 16 bytes of K2.
    pub aes: [u8; 16],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("suite", &self.suite.id)
            .finish()
    }
}

impl Keys {
    /// K1 and K2 from the session integrity key.
    pub fn derive(suite: Suite, sik: &[u8]) -> Keys {
        let k1 = suite.auth.hmac(sik, &[&[1u8; 20]]);
        let k2 = suite.auth.hmac(sik, &[&[2u8; 20]]);
        let mut aes = [0u8; 16];
        if k2.len() >= 16 {
            aes.copy_from_slice(&k2[..16]);
        }
        Keys { suite, k1, aes }
    }

    /// Encrypts a payload: IV, then AES-CBC of data + 1, 2, .. N + N.
    pub fn encrypt(&self, data: &[u8], iv: [u8; 16]) -> Vec<u8> {
        let pad = (16 - (data.len() + 1) % 16) % 16;
        let mut buf = Vec::with_capacity(16 + data.len() + pad + 1);
        buf.extend_from_slice(data);
        buf.extend((1..=pad as u8).collect::<Vec<_>>());
        buf.push(pad as u8);
        let n = buf.len();
        let enc = cbc::Encryptor::<aes::Aes128>::new(&self.aes.into(), &iv.into());
        // The length is a multiple of 16 by construction: no padding error.
        let _ = enc.encrypt_padded_mut::<NoPadding>(&mut buf, n);
        let mut out = iv.to_vec();
        out.extend_from_slice(&buf);
        out
    }

    /// Decrypts a payload; `None` when its length or padding is wrong.
    pub fn decrypt(&self, payload: &[u8]) -> Option<Vec<u8>> {
        if payload.len() < 32 || payload.len() % 16 != 0 {
            return None;
        }
        let (iv, body) = payload.split_at(16);
        let mut iv16 = [0u8; 16];
        iv16.copy_from_slice(iv);
        let mut buf = body.to_vec();
        let dec = cbc::Decryptor::<aes::Aes128>::new(&self.aes.into(), &iv16.into());
        let plain = dec.decrypt_padded_mut::<NoPadding>(&mut buf).ok()?;
        let pad = *plain.last()? as usize;
        if pad + 1 > plain.len() || pad > 15 {
            return None;
        }
        let data_len = plain.len() - pad - 1;
        // The pad is 1, 2, .. N, as the spec and ipmitool have it.
        if plain[data_len..data_len + pad]
            .iter()
            .enumerate()
            .any(|(i, b)| *b as usize != i + 1)
        {
            return None;
        }
        Some(plain[..data_len].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmacs_match_rfc_vectors() {
        // RFC 2202 test case 2 and RFC 4231 test case 2 ("Jefe").
        let msg = b"what do ya want for nothing?";
        assert_eq!(
            hex::encode(hmac_sha1(b"Jefe", &[&msg[..10], &msg[10..]])),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", &[msg])),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn aes_round_trips_with_the_spec_padding() {
        let keys = Keys::derive(SUITES[SUITES.len() - 1], b"sik");
        for n in [0usize, 1, 14, 15, 16, 17, 40] {
            let data: Vec<u8> = (0..n as u8).collect();
            let enc = keys.encrypt(&data, [7; 16]);
            assert_eq!(enc.len() % 16, 0);
            assert_eq!(keys.decrypt(&enc).as_deref(), Some(&data[..]));
        }
        // A payload of the wrong length or with a bad pad is refused.
        assert_eq!(keys.decrypt(&[0; 31]), None);
        let mut enc = keys.encrypt(b"abc", [1; 16]);
        let last = enc.len() - 1;
        enc[last] ^= 0x55;
        assert_eq!(keys.decrypt(&enc), None);
    }

    #[test]
    fn integrity_codes_are_truncated_per_algorithm() {
        assert_eq!(Integrity::HmacSha1_96.code(b"k", b"x").len(), 12);
        assert_eq!(Integrity::HmacSha256_128.code(b"k", b"x").len(), 16);
        assert!(Integrity::None.code(b"k", b"x").is_empty());
    }
}
