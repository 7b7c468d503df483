//! Reading a raw varstore: the firmware volume and store headers, then
//! every variable header, with each size and offset from the file checked
//! against the file before it is used.
//!
//! Invariant: a damaged or hostile file is a `NvramError::Format`, never a
//! panic, and no size from the file is trusted unchecked.

use uuid::Uuid;

use super::{
    Entry, NvramError, Variable, Varstore, AUTH_HEADER, AUTH_VARSTORE, NV_DATA_FV, PLAIN_HEADER,
    PLAIN_VARSTORE, START_ID, STORE_HEADER,
};

/// `N` bytes at `o`, or a format error when the file ends first.
fn bytes_at<const N: usize>(b: &[u8], o: usize) -> Result<[u8; N], NvramError> {
    o.checked_add(N)
        .and_then(|end| b.get(o..end))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| NvramError::Format(format!("{N} bytes at {o:#x} are past the end")))
}
fn u16_at(b: &[u8], o: usize) -> Result<u16, NvramError> {
    bytes_at(b, o).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], o: usize) -> Result<u32, NvramError> {
    bytes_at(b, o).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], o: usize) -> Result<u64, NvramError> {
    bytes_at(b, o).map(u64::from_le_bytes)
}
fn guid_at(b: &[u8], o: usize) -> Result<Uuid, NvramError> {
    bytes_at(b, o).map(Uuid::from_bytes_le)
}
/// A size or offset read from the file, as `usize` (refused when it does not fit).
fn size(v: impl TryInto<usize>, what: &str) -> Result<usize, NvramError> {
    v.try_into()
        .map_err(|_| NvramError::Format(format!("{what} does not fit in memory")))
}
/// `a + b` for sizes from the file; an overflow is a format error.
fn add(a: usize, b: usize, what: &str) -> Result<usize, NvramError> {
    a.checked_add(b)
        .ok_or_else(|| NvramError::Format(format!("{what} overflows")))
}
/// `n` rounded up to a multiple of 4; `None` on overflow.
pub(super) fn align4(n: usize) -> Option<usize> {
    Some(n.checked_add(3)? & !3)
}

/// Decodes a NUL-terminated UCS-2 name.
fn ucs2_decode(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

impl Varstore {
    /// Parses a raw varstore. Every size and offset comes from the file,
    /// so each is checked against the file before it is used: a damaged or
    /// hostile file is a [`NvramError::Format`], never a panic.
    pub fn parse(bytes: Vec<u8>) -> Result<Self, NvramError> {
        let bad = |m: &str| NvramError::Format(m.to_string());
        if bytes.len() < 0x48 + STORE_HEADER {
            return Err(bad("file too small"));
        }
        if guid_at(&bytes, 16)? != NV_DATA_FV {
            return Err(bad("firmware volume is not an NV data volume"));
        }
        if &bytes_at::<4>(&bytes, 40)? != b"_FVH" {
            return Err(bad("no _FVH signature"));
        }
        let fv_len = size(u64_at(&bytes, 32)?, "firmware volume length")?;
        let header_len = usize::from(u16_at(&bytes, 48)?);
        if fv_len > bytes.len()
            || header_len < 0x38
            || add(header_len, STORE_HEADER, "volume header")? > fv_len
        {
            return Err(bad("firmware volume sizes do not fit the file"));
        }
        let s = header_len;
        let authenticated = match guid_at(&bytes, s)? {
            AUTH_VARSTORE => true,
            PLAIN_VARSTORE => false,
            _ => return Err(bad("unknown variable store signature")),
        };
        let store_size = size(u32_at(&bytes, s + 16)?, "variable store size")?;
        if bytes_at::<2>(&bytes, s + 20)? != [0x5a, 0xfe] {
            return Err(bad("variable store not formatted or not healthy"));
        }
        if store_size < STORE_HEADER {
            return Err(bad("variable store smaller than its header"));
        }
        let store_end = add(s, store_size, "variable store size")?;
        if store_end > fv_len {
            return Err(bad("variable store larger than its volume"));
        }
        let vars_start = align4(s + STORE_HEADER)
            .filter(|&v| v <= store_end)
            .ok_or_else(|| bad("variable store smaller than its header"))?;
        let hdr = if authenticated {
            AUTH_HEADER
        } else {
            PLAIN_HEADER
        };
        let mut entries = Vec::new();
        let mut o = vars_start;
        while add(o, hdr, "variable header")? <= store_end && u16_at(&bytes, o)? == START_ID {
            let overrun = || NvramError::Format(format!("variable at {o:#x} overruns the store"));
            let state = bytes[o + 2];
            let attributes = u32_at(&bytes, o + 4)?;
            let (name_size, data_size, vendor) = if authenticated {
                (
                    u32_at(&bytes, o + 36)?,
                    u32_at(&bytes, o + 40)?,
                    guid_at(&bytes, o + 44)?,
                )
            } else {
                (
                    u32_at(&bytes, o + 8)?,
                    u32_at(&bytes, o + 12)?,
                    guid_at(&bytes, o + 16)?,
                )
            };
            let (name_size, data_size) = (
                size(name_size, "variable name size")?,
                size(data_size, "variable data size")?,
            );
            let name_at = o + hdr;
            let data_at = name_at.checked_add(name_size).ok_or_else(overrun)?;
            let data_end = data_at.checked_add(data_size).ok_or_else(overrun)?;
            let next = align4(data_end).ok_or_else(overrun)?;
            if name_size == 0 || next > store_end {
                return Err(overrun());
            }
            entries.push(Entry {
                offset: o,
                state,
                var: Variable {
                    vendor,
                    name: ucs2_decode(&bytes[name_at..data_at]),
                    attributes,
                    data: bytes[data_at..data_end].to_vec(),
                },
            });
            o = next;
        }
        Ok(Varstore {
            bytes,
            authenticated,
            vars_start,
            store_end,
            free: o,
            entries,
        })
    }
}
