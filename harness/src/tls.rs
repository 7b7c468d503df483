//! HTTPS for the boot file server: the run's test CAs, a server
//! certificate per case, and the OpenSSL acceptor that serves it.
//!
//! OpenSSL rather than rustls because of the firmware: OVMF 2022.11's TLS
//! client offers TLS 1.2 only, with DHE-RSA and RSA key exchange (its
//! OpenSSL is built without elliptic curves), and rustls implements
//! neither. The acceptor prefers ECDHE for firmware that has it, then
//! DHE, then RSA key exchange.

use std::net::IpAddr;
use std::path::Path;

use crate::lock;
use anyhow::{Context, Result};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::ssl::{SslAcceptor, SslMethod, SslOptions, SslVersion};
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509NameBuilder, X509};

/// RSA key size of every key made here (the floor: 3072).
pub const RSA_BITS: u32 = 3072;

/// Key exchange preference: ECDHE, DHE, then plain RSA (OVMF 2022.11
/// takes the last two).
const CIPHERS: &str = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:\
DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:\
AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA256:AES256-SHA256";

/// A CA: its certificate and key, and the CAs above it (an
/// intermediate's issuers, which its servers send along).
pub struct Ca {
    pub cert: X509,
    key: PKey<Private>,
    above: Vec<X509>,
}

fn rsa_key() -> Result<PKey<Private>> {
    Ok(PKey::from_rsa(Rsa::generate(RSA_BITS)?)?)
}

fn serial() -> Result<openssl::asn1::Asn1Integer> {
    let mut bn = BigNum::new()?;
    bn.rand(127, MsbOption::MAYBE_ZERO, false)?;
    Ok(bn.to_asn1_integer()?)
}

fn name(cn: &str) -> Result<openssl::x509::X509Name> {
    let mut n = X509NameBuilder::new()?;
    n.append_entry_by_text("O", "Shoal test run")?;
    n.append_entry_by_text("CN", cn)?;
    Ok(n.build())
}

impl Ca {
    /// A self-signed CA valid from a day ago for ten years.
    pub fn new(cn: &str) -> Result<Self> {
        Self::make(cn, None)
    }

    /// An intermediate CA under this one.
    pub fn intermediate(&self, cn: &str) -> Result<Self> {
        Self::make(cn, Some(self))
    }

    fn make(cn: &str, parent: Option<&Ca>) -> Result<Self> {
        let key = rsa_key()?;
        let mut b = X509::builder()?;
        b.set_version(2)?;
        let sn = serial()?;
        b.set_serial_number(&sn)?;
        let n = name(cn)?;
        b.set_subject_name(&n)?;
        match parent {
            Some(p) => b.set_issuer_name(p.cert.subject_name())?,
            None => b.set_issuer_name(&n)?,
        }
        b.set_pubkey(&key)?;
        b.set_not_before(Asn1Time::from_unix(now() - 86_400)?.as_ref())?;
        b.set_not_after(Asn1Time::days_from_now(3650)?.as_ref())?;
        b.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        b.append_extension(
            KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .build()?,
        )?;
        let above = match parent {
            Some(p) => {
                b.sign(&p.key, MessageDigest::sha256())?;
                let mut above = vec![p.cert.clone()];
                above.extend(p.above.iter().cloned());
                above
            }
            None => {
                b.sign(&key, MessageDigest::sha256())?;
                Vec::new()
            }
        };
        Ok(Ca {
            cert: b.build(),
            key,
            above,
        })
    }

    pub fn pem(&self) -> Result<String> {
        Ok(String::from_utf8(self.cert.to_pem()?)?)
    }

    /// A server certificate for `ips` (as IP SANs), signed by this CA,
    /// valid over `[not_before, not_after]` (Unix seconds).
    pub fn server(&self, ips: &[IpAddr], not_before: i64, not_after: i64) -> Result<Server> {
        let key = rsa_key()?;
        let mut b = X509::builder()?;
        b.set_version(2)?;
        let sn = serial()?;
        b.set_serial_number(&sn)?;
        let cn = ips.first().map(IpAddr::to_string).unwrap_or_default();
        let subject = name(&cn)?;
        b.set_subject_name(&subject)?;
        b.set_issuer_name(self.cert.subject_name())?;
        b.set_pubkey(&key)?;
        b.set_not_before(Asn1Time::from_unix(not_before)?.as_ref())?;
        b.set_not_after(Asn1Time::from_unix(not_after)?.as_ref())?;
        let mut san = SubjectAlternativeName::new();
        for ip in ips {
            san.ip(&ip.to_string());
        }
        let ctx = b.x509v3_context(Some(&self.cert), None);
        let san = san.build(&ctx)?;
        b.append_extension(san)?;
        b.append_extension(BasicConstraints::new().build()?)?;
        b.append_extension(
            KeyUsage::new()
                .critical()
                .digital_signature()
                .key_encipherment()
                .build()?,
        )?;
        b.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
        b.sign(&self.key, MessageDigest::sha256())?;
        // The chain a server sends: its issuer and the issuer's own
        // intermediates (not the self-signed root).
        let mut chain = vec![self.cert.clone()];
        chain.extend(self.above.iter().filter(|c| !self_signed(c)).cloned());
        Ok(Server {
            cert: b.build(),
            chain,
            key,
        })
    }
}

/// The run's two CAs: the one that signs every boot server's certificate,
/// and another that signs nothing a server shows (the untrusted case).
pub struct RunCas {
    pub ca: Ca,
    pub other: Ca,
    /// An intermediate under `ca`, for servers that send a chain.
    pub intermediate: Ca,
}

/// The run's CAs, made at the first call (about a second: two RSA keys).
pub fn run_cas() -> Result<&'static RunCas> {
    static CAS: std::sync::OnceLock<RunCas> = std::sync::OnceLock::new();
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = lock(&MAKING);
    if let Some(c) = CAS.get() {
        return Ok(c);
    }
    let ca = Ca::new("Shoal run CA")?;
    let made = RunCas {
        intermediate: ca.intermediate("Shoal run intermediate CA")?,
        ca,
        other: Ca::new("Shoal other CA")?,
    };
    Ok(CAS.get_or_init(|| made))
}

/// CA certificates as edk2 takes them from fw_cfg's
/// `etc/edk2/https/cacerts` (and from its `TlsCaCertificate` variable):
/// an `EFI_SIGNATURE_LIST` of one X.509 certificate (no signature
/// header) per CA, owned by a fixed GUID.
pub fn edk2_cacerts(cas: &[&X509]) -> Result<Vec<u8>> {
    // EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072, little-endian fields.
    const X509_GUID: [u8; 16] = [
        0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a, 0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0,
        0x72,
    ];
    let mut out = Vec::new();
    for ca in cas {
        let der = ca.to_der()?;
        let sig = 16 + der.len();
        out.extend(X509_GUID);
        out.extend(u32::try_from(28 + sig)?.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(u32::try_from(sig)?.to_le_bytes());
        out.extend([0x5a; 16]); // owner
        out.extend(der);
    }
    Ok(out)
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn self_signed(c: &X509) -> bool {
    c.issuer_name_hash() == c.subject_name_hash()
}

/// A server's certificate, the chain it sends and its key.
pub struct Server {
    pub cert: X509,
    chain: Vec<X509>,
    key: PKey<Private>,
}

impl Server {
    /// The acceptor serving this certificate (and its CA in the chain),
    /// TLS 1.2 and 1.3, with the key exchanges the firmware speaks.
    pub fn acceptor(&self) -> Result<SslAcceptor> {
        let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())?;
        b.set_min_proto_version(Some(SslVersion::TLS1_2))?;
        b.set_cipher_list(CIPHERS)?;
        b.set_options(SslOptions::CIPHER_SERVER_PREFERENCE);
        // RFC 7919's ffdhe2048 group for DHE.
        let dh = openssl::dh::Dh::params_from_pem(FFDHE2048)?;
        b.set_tmp_dh(&dh)?;
        b.set_private_key(&self.key)?;
        b.set_certificate(&self.cert)?;
        for c in &self.chain {
            b.add_extra_chain_cert(c.clone())?;
        }
        b.check_private_key()?;
        Ok(b.build())
    }

    /// Writes `server.pem` (certificate then its chain) and `server.key` into `dir`,
    /// for the case's artifacts.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut pem = self.cert.to_pem()?;
        for c in &self.chain {
            pem.extend(c.to_pem()?);
        }
        std::fs::write(dir.join("server.pem"), pem).context("server.pem")?;
        std::fs::write(dir.join("server.key"), self.key.private_key_to_pem_pkcs8()?)
            .context("server.key")?;
        Ok(())
    }
}

/// RFC 7919 Appendix A.1, ffdhe2048.
const FFDHE2048: &[u8] = b"-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_certificate_verifies_against_its_ca_only() {
        let ca = Ca::new("Shoal test CA").unwrap();
        let other = Ca::new("Another CA").unwrap();
        let ip: IpAddr = "198.18.3.1".parse().unwrap();
        let s = ca.server(&[ip], now() - 60, now() + 3600).unwrap();
        assert!(s.cert.verify(&ca.cert.public_key().unwrap()).unwrap());
        assert!(!s.cert.verify(&other.cert.public_key().unwrap()).unwrap());
        let sans: Vec<_> = s
            .cert
            .subject_alt_names()
            .unwrap()
            .iter()
            .filter_map(|n| n.ipaddress().map(<[u8]>::to_vec))
            .collect();
        assert_eq!(sans, vec![vec![198, 18, 3, 1]]);
        assert_eq!(s.cert.public_key().unwrap().bits(), RSA_BITS);
        s.acceptor().unwrap();
        // Through an intermediate: the server sends it, and the chain
        // verifies up to the root.
        let mid = ca.intermediate("Mid").unwrap();
        let s = mid.server(&[ip], now() - 60, now() + 3600).unwrap();
        assert_eq!(s.chain.len(), 1);
        assert!(s.cert.verify(&mid.cert.public_key().unwrap()).unwrap());
        assert!(mid.cert.verify(&ca.cert.public_key().unwrap()).unwrap());
        assert!(!self_signed(&mid.cert) && self_signed(&ca.cert));
    }
}
