//! The edk2 variable store (the NVRAM file of an OVMF/AAVMF domain), read
//! and written in Rust, and the UEFI boot variables Shoal puts in it.
//!
//! Layout of a raw varstore (`OVMF_VARS_4M.fd`): a firmware volume header
//! (`_FVH`, file system GUID `EFI_SYSTEM_NV_DATA_FV_GUID`), then a variable
//! store header (authenticated-variable GUID, formatted 0x5a, healthy 0xfe),
//! then variables, each a 60-byte authenticated header (StartId 0x55aa,
//! State, attributes, count, time, key index, name and data sizes, vendor
//! GUID) followed by the UCS-2 name and then the data (no padding between
//! them on x86 and ARM: edk2's ALIGNMENT is 1 there), the next header at
//! the next 4-byte boundary.
//! Free space is 0xff. Everything after the store (the fault-tolerant-write
//! areas) is kept byte for byte.
//!
//! Writes work as the firmware's own driver does: a changed variable's old
//! copy is marked deleted and the new one appended; only when the store is
//! full are deleted entries squeezed out. So parsing and writing back an
//! unchanged store gives the same bytes.

pub mod boot;

use uuid::Uuid;

/// `EFI_SYSTEM_NV_DATA_FV_GUID`.
pub const NV_DATA_FV: Uuid = Uuid::from_u128(0xfff12b8d_7696_4c8b_a985_2747075b4f50);
/// `EFI_AUTHENTICATED_VARIABLE_GUID` (variable store signature).
pub const AUTH_VARSTORE: Uuid = Uuid::from_u128(0xaaf32c78_947b_439a_a180_2e144ec37792);
/// `EFI_VARIABLE_GUID` (non-authenticated variable store signature).
pub const PLAIN_VARSTORE: Uuid = Uuid::from_u128(0xddcf3616_3275_4164_98b6_fe85707ffe7d);

const START_ID: u16 = 0x55aa;
const VAR_ADDED: u8 = 0x3f;
const VAR_DELETED_BIT: u8 = 0x02; // VAR_DELETED = 0xfd clears bit 1
const VAR_IN_DELETED_TRANSITION_BIT: u8 = 0x01; // 0xfe clears bit 0
const AUTH_HEADER: usize = 60;
const PLAIN_HEADER: usize = 32;
const STORE_HEADER: usize = 28;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvramError {
    #[error("not an edk2 varstore: {0}")]
    Format(String),
    #[error("the variable store is full ({needed} bytes needed, {free} free)")]
    Full { needed: usize, free: usize },
    #[error("variable name {0:?} cannot be stored")]
    BadName(String),
}

/// One variable as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub vendor: Uuid,
    pub name: String,
    pub attributes: u32,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone)]
struct Entry {
    offset: usize,
    state: u8,
    var: Variable,
}

impl Entry {
    fn valid(&self) -> bool {
        // ADDED, possibly mid-deletion (the firmware treats that as live
        // when no newer copy exists), but not DELETED.
        self.state | VAR_IN_DELETED_TRANSITION_BIT == VAR_ADDED
    }
}

/// A parsed varstore that can be edited and written back.
#[derive(Debug, Clone)]
pub struct Varstore {
    bytes: Vec<u8>,
    authenticated: bool,
    /// First byte after the store header (where variables start).
    vars_start: usize,
    /// End of the variable store region.
    store_end: usize,
    /// First free byte.
    free: usize,
    entries: Vec<Entry>,
}

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
fn align4(n: usize) -> Option<usize> {
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

/// Encodes a name as NUL-terminated UCS-2.
pub fn ucs2_encode(s: &str) -> Vec<u8> {
    s.encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect()
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

    /// The live variables, in store order.
    pub fn variables(&self) -> impl Iterator<Item = &Variable> {
        self.entries.iter().filter(|e| e.valid()).map(|e| &e.var)
    }

    pub fn get(&self, vendor: Uuid, name: &str) -> Option<&Variable> {
        // The newest live copy wins.
        self.entries
            .iter()
            .rev()
            .filter(|e| e.valid())
            .map(|e| &e.var)
            .find(|v| v.vendor == vendor && v.name == name)
    }

    /// Bytes left for new variables.
    pub fn free_bytes(&self) -> usize {
        // `parse` and `append` keep `vars_start <= free <= store_end`.
        self.store_end.saturating_sub(self.free)
    }

    fn mark_deleted(&mut self, vendor: Uuid, name: &str) -> bool {
        let mut any = false;
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.valid() && e.var.vendor == vendor && e.var.name == name)
        {
            e.state &= !VAR_DELETED_BIT;
            self.bytes[e.offset + 2] = e.state;
            any = true;
        }
        any
    }

    /// Deletes a variable; returns whether it existed.
    pub fn remove(&mut self, vendor: Uuid, name: &str) -> bool {
        self.mark_deleted(vendor, name)
    }

    fn encoded(&self, v: &Variable) -> Vec<u8> {
        let name = ucs2_encode(&v.name);
        let mut out = Vec::new();
        out.extend(START_ID.to_le_bytes());
        out.push(VAR_ADDED);
        out.push(0);
        out.extend(v.attributes.to_le_bytes());
        if self.authenticated {
            out.extend(0u64.to_le_bytes()); // MonotonicCount
            out.extend([0u8; 16]); // TimeStamp
            out.extend(0u32.to_le_bytes()); // PubKeyIndex
        }
        out.extend((name.len() as u32).to_le_bytes());
        out.extend((v.data.len() as u32).to_le_bytes());
        out.extend(v.vendor.to_bytes_le());
        out.extend(&name);
        out.extend(&v.data);
        // A variable is far smaller than usize::MAX: rounding cannot overflow.
        out.resize(out.len().next_multiple_of(4), 0xff);
        out
    }

    /// Sets a variable (replacing any live copy). Unchanged values are not rewritten.
    pub fn set(&mut self, v: Variable) -> Result<(), NvramError> {
        if v.name.is_empty() || v.name.contains('\0') {
            return Err(NvramError::BadName(v.name));
        }
        if self.get(v.vendor, &v.name) == Some(&v) {
            return Ok(());
        }
        let enc = self.encoded(&v);
        if enc.len() > self.free_bytes() {
            self.compact();
            // The copy about to be replaced does not count against the room.
            let old = self
                .get(v.vendor, &v.name)
                .map(|o| self.encoded(o).len())
                .unwrap_or(0);
            if enc.len() > self.free_bytes() + old {
                return Err(NvramError::Full {
                    needed: enc.len(),
                    free: self.free_bytes() + old,
                });
            }
            self.mark_deleted(v.vendor, &v.name);
            self.compact();
        } else {
            self.mark_deleted(v.vendor, &v.name);
        }
        self.append(v, &enc);
        Ok(())
    }

    /// Writes an encoded variable at the free offset (room checked by the caller).
    fn append(&mut self, var: Variable, enc: &[u8]) {
        let at = self.free;
        self.bytes[at..at + enc.len()].copy_from_slice(enc);
        self.entries.push(Entry {
            offset: at,
            state: VAR_ADDED,
            var,
        });
        self.free = at + enc.len();
    }

    /// Rewrites the store with live variables only.
    fn compact(&mut self) {
        let live: Vec<Variable> = self.variables().cloned().collect();
        self.bytes[self.vars_start..self.store_end].fill(0xff);
        self.entries.clear();
        self.free = self.vars_start;
        for v in live {
            let enc = self.encoded(&v);
            self.append(v, &enc);
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal but well-formed authenticated varstore of `store` bytes.
    pub fn blank_store(store: usize) -> Vec<u8> {
        let header_len = 0x48usize;
        let fv_len = header_len + store + 0x1000;
        let mut b = vec![0xffu8; fv_len];
        b[..16].fill(0);
        b[16..32].copy_from_slice(&NV_DATA_FV.to_bytes_le());
        b[32..40].copy_from_slice(&(fv_len as u64).to_le_bytes());
        b[40..44].copy_from_slice(b"_FVH");
        b[44..48].copy_from_slice(&0x0004_feffu32.to_le_bytes());
        b[48..50].copy_from_slice(&(header_len as u16).to_le_bytes());
        b[50..header_len].fill(0);
        let s = header_len;
        b[s..s + 16].copy_from_slice(&AUTH_VARSTORE.to_bytes_le());
        b[s + 16..s + 20].copy_from_slice(&(store as u32).to_le_bytes());
        b[s + 20] = 0x5a;
        b[s + 21] = 0xfe;
        b[s + 22..s + 28].fill(0);
        b
    }

    fn var(name: &str, data: &[u8]) -> Variable {
        Variable {
            vendor: boot::EFI_GLOBAL_VARIABLE,
            name: name.into(),
            attributes: 7,
            data: data.to_vec(),
        }
    }

    #[test]
    fn set_get_and_round_trip() {
        let mut s = Varstore::parse(blank_store(4096)).unwrap();
        s.set(var("BootNext", &[0x99, 0])).unwrap();
        s.set(var("Lang", b"eng\0")).unwrap();
        let bytes = s.clone().into_bytes();
        let again = Varstore::parse(bytes.clone()).unwrap();
        assert_eq!(
            again
                .get(boot::EFI_GLOBAL_VARIABLE, "BootNext")
                .unwrap()
                .data,
            [0x99, 0]
        );
        assert_eq!(again.variables().count(), 2);
        assert_eq!(
            again.into_bytes(),
            bytes,
            "parse + write of an unchanged store is byte-identical"
        );
    }

    #[test]
    fn replacing_marks_the_old_copy_deleted_then_compacts_when_full() {
        let mut s = Varstore::parse(blank_store(512)).unwrap();
        for i in 0..40u8 {
            s.set(var("BootNext", &[i, 0])).unwrap();
        }
        let live: Vec<_> = s.variables().collect();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].data, [39, 0]);
        let parsed = Varstore::parse(s.into_bytes()).unwrap();
        assert_eq!(
            parsed
                .get(boot::EFI_GLOBAL_VARIABLE, "BootNext")
                .unwrap()
                .data,
            [39, 0]
        );
    }

    #[test]
    fn a_full_store_says_so_and_stays_intact() {
        let mut s = Varstore::parse(blank_store(256)).unwrap();
        let before = s.as_bytes().to_vec();
        let err = s.set(var("Big", &[0u8; 400])).unwrap_err();
        assert!(matches!(err, NvramError::Full { .. }));
        assert_eq!(s.as_bytes(), &before[..]);
    }

    /// Sets the variable store size field of a [`blank_store`] image.
    fn with_store_size(mut b: Vec<u8>, size: u32) -> Vec<u8> {
        b[0x48 + 16..0x48 + 20].copy_from_slice(&size.to_le_bytes());
        b
    }

    fn format_error(b: Vec<u8>) -> String {
        match Varstore::parse(b) {
            Err(NvramError::Format(m)) => m,
            other => panic!("not a format error: {other:?}"),
        }
    }

    #[test]
    fn a_store_smaller_than_its_header_is_refused() {
        // Store sizes 0..28 used to parse, then `free_bytes` underflowed.
        for size in [0, 1, 27] {
            let m = format_error(with_store_size(blank_store(512), size));
            assert!(m.contains("smaller than its header"), "{size}: {m}");
        }
        assert!(Varstore::parse(with_store_size(blank_store(512), 28)).is_ok());
    }

    #[test]
    fn an_unaligned_header_leaves_no_room_for_variables() {
        // Volume header 0x39 bytes, store of exactly its header: variables
        // would start at the next 4-byte boundary, past the store's end.
        let mut b = with_store_size(blank_store(512), 28);
        b.copy_within(0x48..0x48 + 28, 0x39);
        b[48..50].copy_from_slice(&0x39u16.to_le_bytes());
        let m = format_error(b);
        assert!(m.contains("smaller than its header"), "{m}");
    }

    #[test]
    fn volume_sizes_past_the_file_are_refused() {
        let mut b = blank_store(512);
        b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(format_error(b).contains("do not fit"));
        let mut b = blank_store(512);
        b[48..50].copy_from_slice(&0x37u16.to_le_bytes());
        assert!(format_error(b).contains("do not fit"));
        let mut b = blank_store(512);
        b[48..50].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(format_error(b).contains("do not fit"));
        let m = format_error(with_store_size(blank_store(512), u32::MAX));
        assert!(m.contains("larger than its volume"), "{m}");
        assert!(format_error(blank_store(512)[..0x60].to_vec()).contains("too small"));
    }

    #[test]
    fn variable_sizes_past_the_store_are_refused() {
        let mut s = Varstore::parse(blank_store(512)).unwrap();
        s.set(var("Lang", b"eng\0")).unwrap();
        let good = s.into_bytes();
        let at = align4(0x48 + STORE_HEADER).unwrap();
        // Name size 36..40, data size 40..44 of the authenticated header.
        for (field, value) in [(36, u32::MAX), (40, u32::MAX), (40, u32::MAX - 3), (36, 0)] {
            let mut b = good.clone();
            b[at + field..at + field + 4].copy_from_slice(&value.to_le_bytes());
            let m = format_error(b);
            assert!(m.contains("overruns the store"), "{field} {value}: {m}");
        }
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Varstore::parse(vec![0u8; 4096]).is_err());
        let mut b = blank_store(512);
        b[0x48 + 20] = 0;
        assert!(Varstore::parse(b).is_err());
    }

    mod fuzz {
        use super::super::boot;
        use super::*;
        use proptest::prelude::*;

        /// A store with a few variables and a Shoal boot option, the real
        /// OVMF template when this host has one.
        fn valid_stores() -> Vec<Vec<u8>> {
            let mut s = Varstore::parse(blank_store(2048)).unwrap();
            s.set(var("Lang", b"eng\0")).unwrap();
            boot::set_http_boot(&mut s, "http://192.0.2.1/a.efi", boot::Persistence::Once).unwrap();
            let mut out = vec![s.into_bytes()];
            if let Ok(b) = std::fs::read("/usr/share/OVMF/OVMF_VARS_4M.fd") {
                out.push(b);
            }
            out
        }

        /// Everything a caller does with a parsed store: nothing may panic.
        fn exercise(bytes: Vec<u8>) {
            let Ok(mut s) = Varstore::parse(bytes) else {
                return;
            };
            let _ = s.free_bytes();
            let _ = s.variables().count();
            let _ = boot::boot_order(&s);
            let _ = boot::boot_next(&s);
            for (n, o) in boot::load_options(&s) {
                let _ = boot::device_path_uri(&o.device_path);
                let _ = boot::option_uri(&s, n);
            }
            let _ = boot::set_http_boot(
                &mut s,
                "http://192.0.2.1/b.iso",
                boot::Persistence::Continuous,
            );
            let _ = boot::clear_http_boot(&mut s);
            let _ = s.set(var("Big", &[0u8; 700]));
            let _ = Varstore::parse(s.into_bytes());
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..1024)) {
                exercise(b);
            }

            #[test]
            fn mutated_stores_never_panic(
                which in any::<prop::sample::Index>(),
                edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
                fields in proptest::collection::vec(
                    (any::<prop::sample::Index>(), prop_oneof![0u32..80, any::<u32>()]),
                    0..4,
                ),
                cut in proptest::option::of(any::<prop::sample::Index>()),
            ) {
                let stores = valid_stores();
                let mut b = stores[which.index(stores.len())].clone();
                // Bytes anywhere in the headers and the first variables…
                let hot = b.len().min(0x48 + STORE_HEADER + 512);
                for (at, v) in edits {
                    b[at.index(hot)] = v;
                }
                // …whole 32-bit fields: the volume length, the header
                // length, the store size, the first variable's name and
                // data sizes, or any 4-byte boundary…
                let first = align4(0x48 + STORE_HEADER).unwrap();
                let known = [32, 48, 0x48 + 16, first + 36, first + 40];
                for (at, v) in fields {
                    let i = at.index(known.len() * 2);
                    let o = known.get(i).copied().unwrap_or_else(|| at.index(hot / 4) * 4);
                    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
                }
                // …and a truncated file.
                if let Some(c) = cut {
                    b.truncate(c.index(b.len()));
                }
                exercise(b);
            }

            #[test]
            fn device_paths_and_load_options_never_panic(
                b in proptest::collection::vec(any::<u8>(), 0..300),
            ) {
                let _ = boot::device_path_uri(&b);
                if let Some(o) = boot::LoadOption::decode(&b) {
                    let _ = boot::device_path_uri(&o.device_path);
                    prop_assert_eq!(boot::LoadOption::decode(&o.encode()), Some(o));
                }
            }
        }
    }
}
