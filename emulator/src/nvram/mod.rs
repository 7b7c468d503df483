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
//!
//! This module holds the store and its edits (set, remove, write back);
//! reading a file is in `parse`, the boot variables in `boot`.

pub mod boot;
mod parse;
pub mod tls;

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

/// Encodes a name as NUL-terminated UCS-2.
pub fn ucs2_encode(s: &str) -> Vec<u8> {
    s.encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect()
}

impl Varstore {
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
pub(crate) mod tests;
