//! The System Event Log over IPMI (Storage: Get SEL Info, Reserve SEL,
//! Get SEL Entry, Clear SEL): the system's SEL book of the BMC's log
//! (`bmc::log`), each entry a 16-byte system event record (type 0x02)
//! from the BMC (generator 0x0020, event message revision 0x04), its
//! sensor one of the Event-Only records of the SDR repository.
//!
//! What clients do (ipmitool, FreeIPMI's ipmi-sel, pyghmi): read whole
//! records with reservation 0 from record 0x0000 until the next Id is
//! 0xFFFF; FreeIPMI reserves first; a clear reserves, then sends 'CLR'
//! 0xAA once. An empty SEL answers 0xCB for record 0x0000.

use super::commands::{backend_cc, err, ok, Reply};
use super::Bmc;
use crate::bmc::log::{Book, Entry, CAPACITY};

/// Completion codes of the SEL commands.
mod cc {
    pub use super::super::commands::cc::*;
    /// The reservation was cancelled or is not the current one.
    pub const RESERVATION: u8 = 0xc5;
    /// Cannot return the number of bytes asked for.
    pub const CANNOT_RETURN: u8 = 0xca;
}

const RECORD_LEN: usize = 16;
/// The BMC's generator Id: IPMB slave address 0x20, LUN 0, channel 0.
const GENERATOR: u16 = 0x0020;

/// A SEL timestamp: seconds since 1970 on the SEL clock (the host clock
/// moved by what Set SEL Time said); 0xFFFFFFFF when there is none.
fn stamp(at: Option<std::time::SystemTime>, offset: i64) -> [u8; 4] {
    let Some(at) = at else {
        return [0xff; 4];
    };
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
        .saturating_add(offset);
    (secs.clamp(0, i64::from(u32::MAX - 1)) as u32).to_le_bytes()
}

/// The 16 bytes of an entry.
pub fn record(e: &Entry, offset: i64) -> [u8; RECORD_LEN] {
    let sel = e.sel.unwrap_or(crate::bmc::log::SelEvent {
        sensor_type: 0,
        sensor: 0,
        offset: 0,
        data2: 0xff,
    });
    let id = (e.id as u16).to_le_bytes();
    let t = stamp(Some(e.record.at), offset);
    let g = GENERATOR.to_le_bytes();
    // Event data 1: bits 7:6 say what data 2 is (11: sensor-specific),
    // bits 5:4 data 3 (unspecified); the offset in the low nibble.
    let data1 = if sel.data2 == 0xff { 0 } else { 0xc0 } | (sel.offset & 0x0f);
    [
        id[0],
        id[1],
        0x02,
        t[0],
        t[1],
        t[2],
        t[3],
        g[0],
        g[1],
        0x04,
        sel.sensor_type,
        sel.sensor,
        0x6f, // assertion, sensor-specific
        data1,
        sel.data2,
        0xff,
    ]
}

/// Looks at the machine first, so that what it did by itself is in the
/// log when a client reads it.
async fn look(bmc: &Bmc) -> Result<crate::model::System, u8> {
    bmc.system().await.map_err(|e| backend_cc(&e))
}

/// Get SEL Info: version 0x51, entries, free bytes, the last addition
/// and erasure, and the operations supported (reserve only).
pub(super) async fn info(bmc: &Bmc, data: &[u8]) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    if let Err(code) = look(bmc).await {
        return err(code);
    }
    let offset = bmc.chassis().sel_offset;
    let (n, added, erased) = bmc.core.changes.log.read(&bmc.system_id, Book::Sel, |r| {
        (r.entries.len(), r.added, r.erased)
    });
    let count = (n as u16).to_le_bytes();
    let free = (((CAPACITY - n) * RECORD_LEN).min(0xfffe) as u16).to_le_bytes();
    let mut v = vec![0x51, count[0], count[1], free[0], free[1]];
    v.extend_from_slice(&stamp(added, offset));
    v.extend_from_slice(&stamp(erased, offset));
    v.push(0x02);
    ok(v)
}

/// Reserve SEL: a new reservation, which cancels the one before.
pub(super) fn reserve(bmc: &Bmc, data: &[u8]) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    ok(bmc
        .core
        .changes
        .log
        .reserve(&bmc.system_id)
        .to_le_bytes()
        .to_vec())
}

/// Whether `rsv` may read or clear: 0 reads whole records (the spec
/// needs a reservation only for partial reads); else the current one.
fn reservation_ok(bmc: &Bmc, rsv: u16, partial: bool) -> bool {
    match rsv {
        0 => !partial,
        r => bmc.core.changes.log.reserved(&bmc.system_id, r),
    }
}

/// Get SEL Entry: record `id` (0x0000 the first, 0xFFFF the last), from
/// `at`, `count` bytes (0xFF: to its end), after the next record's Id
/// (0xFFFF after the last).
pub(super) async fn get(bmc: &Bmc, data: &[u8]) -> Reply {
    let [r0, r1, i0, i1, at, count] = *data else {
        return err(cc::BAD_LENGTH);
    };
    let (rsv, id) = (u16::from_le_bytes([r0, r1]), u16::from_le_bytes([i0, i1]));
    let partial = at != 0 || count != 0xff;
    if !reservation_ok(bmc, rsv, partial) {
        return err(cc::RESERVATION);
    }
    if id == 0 {
        if let Err(code) = look(bmc).await {
            return err(code);
        }
    }
    let offset = bmc.chassis().sel_offset;
    let found = bmc.core.changes.log.read(&bmc.system_id, Book::Sel, |r| {
        let i = match id {
            0x0000 => (!r.entries.is_empty()).then_some(0),
            0xffff => r.entries.len().checked_sub(1),
            id => r.entries.iter().position(|e| e.id == u32::from(id)),
        }?;
        let next = r.entries.get(i + 1).map_or(0xffff, |e| e.id as u16);
        Some((next, record(&r.entries[i], offset)))
    });
    let Some((next, bytes)) = found else {
        return err(cc::NOT_PRESENT);
    };
    let at = at as usize;
    let n = if count == 0xff {
        RECORD_LEN.saturating_sub(at)
    } else {
        count as usize
    };
    if at > RECORD_LEN || at + n > RECORD_LEN {
        return err(cc::CANNOT_RETURN);
    }
    let mut v = next.to_le_bytes().to_vec();
    v.extend_from_slice(&bytes[at..at + n]);
    ok(v)
}

/// Clear SEL: 'CLR' and 0xAA with the current reservation erases (at
/// once); 0x00 asks how far it got: completed.
pub(super) async fn clear(bmc: &Bmc, data: &[u8]) -> Reply {
    let [r0, r1, b'C', b'L', b'R', op] = *data else {
        return err(if data.len() == 6 {
            cc::INVALID_FIELD
        } else {
            cc::BAD_LENGTH
        });
    };
    match op {
        // The erasure is over as soon as it began (and its reservation
        // with it): a status query finds it completed.
        0x00 => ok(vec![0x01]),
        0xaa if !reservation_ok(bmc, u16::from_le_bytes([r0, r1]), true) => err(cc::RESERVATION),
        0xaa => {
            let _guard = bmc.lock_system().await;
            match look(bmc).await {
                Ok(sys) => {
                    bmc.core.clear_log(&sys, Book::Sel);
                    ok(vec![0x01])
                }
                Err(code) => err(code),
            }
        }
        _ => err(cc::INVALID_FIELD),
    }
}
