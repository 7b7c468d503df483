//! The CA certificates a system trusts when it boots over HTTPS
//! (`Boot.Certificates`): what the BMC keeps of each (its DER bytes), what
//! it shows of it, and the checks a certificate passes before it is kept.
//!
//! The firmware gets them as one UEFI variable, `TlsCaCertificate`
//! (`nvram::tls`); its size is bounded by the firmware's largest variable,
//! so the bound is checked here, before anything is stored.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use x509_parser::prelude::*;

/// One enrolled certificate: its Id in the collection and its DER bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootCert {
    pub id: u32,
    #[serde(with = "b64")]
    pub der: Vec<u8>,
}

/// Why a certificate cannot be enrolled. Each is a client error.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CertError {
    #[error("the text holds no PEM block")]
    NotPem,
    #[error("the PEM block is a {0}, not a certificate")]
    NotCertificate(String),
    #[error("the text holds {0} certificates: enroll one at a time")]
    Chain(usize),
    #[error("the certificate does not parse: {0}")]
    Unparsable(String),
    #[error("the certificate is not a CA (basicConstraints cA is not set)")]
    NotCa,
    #[error("certificate {0} holds the same certificate")]
    Duplicate(u32),
    #[error("the trusted list would take {needed} bytes; the firmware's variable holds {max}")]
    TooMany { needed: usize, max: usize },
}

/// The largest `TlsCaCertificate` data OVMF takes: its largest variable
/// (`PcdMaxVariableSize`, 0x8400 in the 4 MiB builds every distribution
/// ships) less the authenticated variable header (60 bytes) and the name
/// (`TlsCaCertificate`, UCS-2 with its NUL: 34 bytes).
pub const MAX_TLS_CA_DATA: usize = 0x8400 - 60 - 34;

/// `EFI_SIGNATURE_LIST` header (type GUID, list size, header size,
/// signature size) plus the signature's owner GUID: what each certificate
/// adds to the variable beside its own bytes.
pub const LIST_OVERHEAD: usize = 16 + 4 + 4 + 4 + 16;

/// The variable's size for these certificates (one list per certificate).
pub fn variable_len<'a>(ders: impl IntoIterator<Item = &'a [u8]>) -> usize {
    ders.into_iter().map(|d| LIST_OVERHEAD + d.len()).sum()
}

/// Reads the one PEM certificate of `text` and checks it can be a trust
/// anchor. Returns its DER bytes.
pub fn parse_pem(text: &str) -> Result<Vec<u8>, CertError> {
    let mut blocks = Vec::new();
    for pem in Pem::iter_from_buffer(text.as_bytes()) {
        match pem {
            Ok(p) => blocks.push(p),
            Err(e) if blocks.is_empty() => return Err(CertError::Unparsable(e.to_string())),
            Err(_) => break,
        }
    }
    let Some(first) = blocks.first() else {
        return Err(CertError::NotPem);
    };
    if let Some(other) = blocks.iter().find(|p| p.label != "CERTIFICATE") {
        return Err(CertError::NotCertificate(other.label.to_lowercase()));
    }
    if blocks.len() > 1 {
        return Err(CertError::Chain(blocks.len()));
    }
    let der = first.contents.clone();
    let info = CertInfo::parse(&der)?;
    if !info.ca {
        return Err(CertError::NotCa);
    }
    Ok(der)
}

/// Whether a set of enrolled certificates with `der` added (or put in
/// place of `replacing`) still fits the firmware's variable and holds no
/// certificate twice.
pub fn check_set(certs: &[BootCert], der: &[u8], replacing: Option<u32>) -> Result<(), CertError> {
    let others = certs.iter().filter(|c| Some(c.id) != replacing);
    if let Some(same) = others.clone().find(|c| c.der == der) {
        return Err(CertError::Duplicate(same.id));
    }
    let needed = variable_len(others.map(|c| c.der.as_slice()).chain([der]));
    if needed > MAX_TLS_CA_DATA {
        return Err(CertError::TooMany {
            needed,
            max: MAX_TLS_CA_DATA,
        });
    }
    Ok(())
}

/// The certificates a system's BMC holds for HTTPS boot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootCerts {
    pub certs: Vec<BootCert>,
    /// The highest Id ever given, so a deleted certificate's URI never
    /// names another one.
    #[serde(default)]
    pub last_id: u32,
    /// A whole new set staged for the next start (a BMC whose certificates
    /// are a settings object applied at reset: HPE's TLS configuration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Vec<BootCert>>,
}

impl BootCerts {
    pub fn is_empty(&self) -> bool {
        self.certs.is_empty() && self.last_id == 0 && self.pending.is_none()
    }

    /// The set the firmware gets at the next start.
    pub fn at_start(&self) -> &[BootCert] {
        self.pending.as_deref().unwrap_or(&self.certs)
    }

    /// The set with `staged` to apply at the next start.
    pub fn with_pending(&self, staged: Vec<BootCert>) -> BootCerts {
        let mut next = self.clone();
        next.last_id = staged.iter().map(|c| c.id).fold(next.last_id, u32::max);
        next.pending = Some(staged);
        next
    }

    pub fn get(&self, id: u32) -> Option<&BootCert> {
        self.certs.iter().find(|c| c.id == id)
    }

    /// The set with `der` enrolled under the next Id (checked first with
    /// [`check_set`]).
    pub fn with_added(&self, der: Vec<u8>) -> (BootCerts, u32) {
        let id = self.certs.iter().map(|c| c.id).fold(self.last_id, u32::max) + 1;
        let mut next = self.clone();
        next.certs.push(BootCert { id, der });
        next.last_id = id;
        (next, id)
    }

    pub fn with_replaced(&self, id: u32, der: Vec<u8>) -> BootCerts {
        let mut next = self.clone();
        for c in next.certs.iter_mut().filter(|c| c.id == id) {
            c.der = der.clone();
        }
        next
    }

    pub fn without(&self, id: u32) -> BootCerts {
        let mut next = self.clone();
        next.certs.retain(|c| c.id != id);
        next
    }
}

/// A distinguished name as Redfish shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Name {
    pub common_name: Option<String>,
    pub organization: Option<String>,
    pub organizational_unit: Option<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    pub email: Option<String>,
}

/// What a BMC shows of a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    pub subject: Name,
    pub issuer: Name,
    /// Seconds since the epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// Colon-separated upper-case hex, as BMCs print it.
    pub serial: String,
    /// SHA-256 of the DER bytes, upper-case hex with colons.
    pub fingerprint: String,
    /// Redfish `KeyUsage` names (key usage, then extended key usage).
    pub key_usage: Vec<&'static str>,
    pub signature_algorithm: String,
    pub ca: bool,
}

fn name(n: &X509Name) -> Name {
    fn first<'a>(mut it: impl Iterator<Item = &'a AttributeTypeAndValue<'a>>) -> Option<String> {
        it.next().and_then(|a| a.as_str().ok()).map(str::to_string)
    }
    Name {
        common_name: first(n.iter_common_name()),
        organization: first(n.iter_organization()),
        organizational_unit: first(n.iter_organizational_unit()),
        city: first(n.iter_locality()),
        state: first(n.iter_state_or_province()),
        country: first(n.iter_country()),
        email: first(n.iter_email()),
    }
}

fn colon_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl CertInfo {
    pub fn parse(der: &[u8]) -> Result<Self, CertError> {
        let (rest, cert) =
            parse_x509_certificate(der).map_err(|e| CertError::Unparsable(e.to_string()))?;
        if !rest.is_empty() {
            return Err(CertError::Unparsable(format!(
                "{} bytes after the certificate",
                rest.len()
            )));
        }
        let bad = |e: X509Error| CertError::Unparsable(e.to_string());
        let ca = cert
            .basic_constraints()
            .map_err(bad)?
            .is_some_and(|b| b.value.ca);
        let mut key_usage = Vec::new();
        if let Some(ku) = cert.key_usage().map_err(bad)? {
            let k = ku.value;
            for (set, usage) in [
                (k.digital_signature(), "DigitalSignature"),
                (k.non_repudiation(), "NonRepudiation"),
                (k.key_encipherment(), "KeyEncipherment"),
                (k.data_encipherment(), "DataEncipherment"),
                (k.key_agreement(), "KeyAgreement"),
                (k.key_cert_sign(), "KeyCertSign"),
                (k.crl_sign(), "CRLSigning"),
                (k.encipher_only(), "EncipherOnly"),
                (k.decipher_only(), "DecipherOnly"),
            ] {
                if set {
                    key_usage.push(usage);
                }
            }
        }
        if let Some(eku) = cert.extended_key_usage().map_err(bad)? {
            let e = eku.value;
            for (set, usage) in [
                (e.server_auth, "ServerAuthentication"),
                (e.client_auth, "ClientAuthentication"),
                (e.code_signing, "CodeSigning"),
                (e.email_protection, "EmailProtection"),
                (e.time_stamping, "Timestamping"),
                (e.ocsp_signing, "OCSPSigning"),
            ] {
                if set {
                    key_usage.push(usage);
                }
            }
        }
        let alg = &cert.signature_algorithm.algorithm;
        let signature_algorithm = x509_parser::objects::oid2sn(alg, oid_registry())
            .map(str::to_string)
            .unwrap_or_else(|_| alg.to_id_string());
        Ok(CertInfo {
            subject: name(cert.subject()),
            issuer: name(cert.issuer()),
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            serial: colon_hex(cert.raw_serial()),
            fingerprint: colon_hex(&Sha256::digest(der)),
            key_usage,
            signature_algorithm,
            ca,
        })
    }
}

/// The certificate as PEM text, 64 columns, as `openssl x509` writes it.
pub fn to_pem(der: &[u8]) -> String {
    use base64::Engine;
    let b = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cn: &str, is_ca: bool) -> String {
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        p.distinguished_name
            .push(rcgen::DnType::OrganizationName, "Shoal test");
        p.distinguished_name.push(rcgen::DnType::CountryName, "NL");
        if is_ca {
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            p.key_usages = vec![
                rcgen::KeyUsagePurpose::KeyCertSign,
                rcgen::KeyUsagePurpose::CrlSign,
            ];
        } else {
            p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        }
        let key = rcgen::KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn a_ca_parses_and_shows_its_names_and_usage() {
        let pem = ca("Shoal CA", true);
        let der = parse_pem(&pem).unwrap();
        let info = CertInfo::parse(&der).unwrap();
        assert!(info.ca);
        assert_eq!(info.subject.common_name.as_deref(), Some("Shoal CA"));
        assert_eq!(info.issuer.organization.as_deref(), Some("Shoal test"));
        assert_eq!(info.subject.country.as_deref(), Some("NL"));
        assert_eq!(info.key_usage, vec!["KeyCertSign", "CRLSigning"]);
        assert_eq!(info.fingerprint.len(), 32 * 3 - 1);
        assert!(info.not_after > info.not_before);
        // The PEM written back is the same certificate.
        assert_eq!(parse_pem(&to_pem(&der)).unwrap(), der);
    }

    #[test]
    fn bad_texts_are_refused_with_their_reason() {
        assert_eq!(parse_pem("hello"), Err(CertError::NotPem));
        assert_eq!(parse_pem(""), Err(CertError::NotPem));
        let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        assert_eq!(
            parse_pem(&key),
            Err(CertError::NotCertificate("private key".into()))
        );
        let two = format!("{}{}", ca("a", true), ca("b", true));
        assert_eq!(parse_pem(&two), Err(CertError::Chain(2)));
        assert_eq!(parse_pem(&ca("leaf", false)), Err(CertError::NotCa));
        let junk = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(parse_pem(junk), Err(CertError::Unparsable(_))));
    }

    #[test]
    fn the_set_refuses_duplicates_and_what_the_variable_cannot_hold() {
        let der = parse_pem(&ca("a", true)).unwrap();
        let set = vec![BootCert {
            id: 1,
            der: der.clone(),
        }];
        assert_eq!(check_set(&set, &der, None), Err(CertError::Duplicate(1)));
        // Replacing a certificate by itself is no duplicate.
        assert_eq!(check_set(&set, &der, Some(1)), Ok(()));
        let big = vec![0u8; MAX_TLS_CA_DATA];
        assert!(matches!(
            check_set(&set, &big, None),
            Err(CertError::TooMany { .. })
        ));
        let set = BootCerts {
            certs: set,
            last_id: 1,
            pending: None,
        };
        let (two, id) = set.with_added(vec![1]);
        assert_eq!((id, two.certs.len()), (2, 2));
        // A deleted certificate's Id is not given again.
        let (again, id) = two.without(2).with_added(vec![2]);
        assert_eq!((id, again.certs.len()), (3, 2));
        assert_eq!(again.with_replaced(3, vec![9]).get(3).unwrap().der, vec![9]);
    }
}
