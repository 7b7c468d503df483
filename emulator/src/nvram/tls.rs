//! `TlsCaCertificate`: the CAs edk2's HTTP boot trusts, as its TLS
//! configuration reads them (`HttpDxe`'s `TlsConfigCertificate`): a
//! variable of vendor `EFI_TLS_CA_CERTIFICATE_GUID`, non-volatile and
//! boot-service access, holding `EFI_SIGNATURE_LIST`s of X.509
//! certificates, one list per certificate (a list's entries share one
//! size), each with no signature header.
//!
//! OVMF also takes the CAs from the fw_cfg file `etc/edk2/https/cacerts`;
//! when that file exists its `TlsAuthConfigLib` deletes this variable and
//! sets a volatile one from the file, so the file wins. Shoal passes no
//! such file: the variable is the one list.

use uuid::Uuid;

use super::{NvramError, Variable, Varstore};

/// `EFI_TLS_CA_CERTIFICATE_GUID`.
pub const TLS_CA_VENDOR: Uuid = Uuid::from_u128(0xfd2340d0_3dab_4349_a6c7_3b4f12b48eae);
/// `EFI_CERT_X509_GUID`.
pub const CERT_X509: Uuid = Uuid::from_u128(0xa5c059a1_94e4_4aa7_87b5_ab155c2bf072);
/// The signature owner Shoal writes (shown as `UefiSignatureOwner`).
pub const SHOAL_OWNER: Uuid = Uuid::from_u128(0x8a3c2f61_5b0e_4d57_9e1a_53686f616c21);
pub const NAME: &str = "TlsCaCertificate";
/// Non-volatile, boot-service access.
pub const NV_BS: u32 = 0x3;

/// The variable's data: one `EFI_SIGNATURE_LIST` per certificate.
pub fn signature_lists<'a>(ders: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for der in ders {
        let sig_size = 16 + der.len();
        let list_size = 28 + sig_size;
        out.extend(CERT_X509.to_bytes_le());
        // Certificates are checked to fit the variable (tens of KiB).
        out.extend((list_size as u32).to_le_bytes());
        out.extend(0u32.to_le_bytes()); // SignatureHeaderSize
        out.extend((sig_size as u32).to_le_bytes());
        out.extend(SHOAL_OWNER.to_bytes_le());
        out.extend(der);
    }
    out
}

/// The certificates of a `TlsCaCertificate` value, or `None` when it is not
/// a well-formed run of X.509 signature lists.
pub fn certificates(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let word = |at: usize| -> Option<usize> {
            let b = rest.get(at..at + 4)?;
            Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
        };
        let kind = Uuid::from_slice_le(rest.get(..16)?).ok()?;
        let (list, header, sig) = (word(16)?, word(20)?, word(24)?);
        if kind != CERT_X509 || list > rest.len() || sig <= 16 || list < 28 + header {
            return None;
        }
        let body = &rest[28 + header..list];
        if body.len() % sig != 0 {
            return None;
        }
        out.extend(body.chunks(sig).map(|s| s[16..].to_vec()));
        rest = &rest[list..];
    }
    Some(out)
}

/// Makes the store's trusted list exactly `ders`; none removes the variable.
pub fn set_ca_certificates(store: &mut Varstore, ders: &[&[u8]]) -> Result<(), NvramError> {
    if ders.is_empty() {
        store.remove(TLS_CA_VENDOR, NAME);
        return Ok(());
    }
    store.set(Variable {
        vendor: TLS_CA_VENDOR,
        name: NAME.into(),
        attributes: NV_BS,
        data: signature_lists(ders.iter().copied()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_back_and_bad_ones_are_refused() {
        let a = vec![0x30, 1, 2, 3];
        let b = vec![0x30; 100];
        let data = signature_lists([a.as_slice(), b.as_slice()]);
        assert_eq!(data.len(), 2 * 44 + 104);
        assert_eq!(certificates(&data), Some(vec![a, b]));
        assert_eq!(certificates(&data[..50]), None);
        let mut wrong = data.clone();
        wrong[0] ^= 1;
        assert_eq!(certificates(&wrong), None);
        assert_eq!(certificates(&[]), Some(vec![]));
    }

    #[test]
    fn the_overhead_is_what_the_api_counts() {
        let der = vec![0u8; 1000];
        assert_eq!(
            signature_lists([der.as_slice()]).len(),
            crate::certs::variable_len([der.as_slice()])
        );
    }
}
