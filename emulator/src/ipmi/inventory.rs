//! What a BMC tells about itself and its machine: the FRU inventory image
//! (IPMI Platform Management FRU Information Storage Definition v1.0) and
//! the SDR repository (a Management Controller Device Locator record, so
//! clients that rebuild an empty repository leave it alone, and the
//! Event-Only records of the sensors the SEL logs on).

use super::commands::{backend_cc, cc, err, ok, Reply};
use super::Bmc;
use crate::model::System;
use crate::profile::Profile;

/// A FRU field: type/length byte 0xC0 | len (8-bit ASCII), then the bytes
/// (at most 63).
fn field(out: &mut Vec<u8>, s: &str) {
    let mut b: Vec<u8> = s
        .bytes()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .take(63)
        .collect();
    // One byte would read 0xC1, the end-of-fields marker: a space pads it.
    if b.len() == 1 {
        b.push(b' ');
    }
    out.push(0xc0 | b.len() as u8);
    out.extend_from_slice(&b);
}

/// Closes an area: end marker 0xC1, zero pad to 8 bytes with room for
/// the checksum, the length byte (in 8-byte units) and the zero-sum
/// checksum.
fn close_area(mut a: Vec<u8>) -> Vec<u8> {
    a.push(0xc1);
    while (a.len() + 1) % 8 != 0 {
        a.push(0);
    }
    a[1] = ((a.len() + 1) / 8) as u8;
    a.push(shoal_ipmi::wire::checksum(&a));
    a
}

/// The FRU image of a machine: chassis, board and product areas.
pub fn fru(sys: &System, profile: &Profile) -> Vec<u8> {
    let serial = sys.uuid.simple().to_string()[..12].to_uppercase();
    // Chassis: version, length, type 0x17 (rack mount chassis).
    let mut chassis = vec![1, 0, 0x17];
    field(&mut chassis, &profile.model);
    field(&mut chassis, &serial);
    let chassis = close_area(chassis);
    // Board: version, length, language English, manufacturing date
    // (0: unspecified), manufacturer, product, serial, part, FRU file id.
    let mut board = vec![1, 0, 0, 0, 0, 0];
    field(&mut board, &profile.manufacturer);
    field(&mut board, &profile.model);
    field(&mut board, &serial);
    field(&mut board, "");
    field(&mut board, "");
    let board = close_area(board);
    // Product: version, length, language, manufacturer, name, part,
    // version, serial, asset tag, FRU file id.
    let mut product = vec![1, 0, 0];
    field(&mut product, &profile.manufacturer);
    field(&mut product, &profile.model);
    field(&mut product, "");
    field(&mut product, &profile.bios_version);
    field(&mut product, &serial);
    field(&mut product, &sys.bmc.asset_tag);
    field(&mut product, "");
    let product = close_area(product);
    let chassis_at = 1u8;
    let board_at = chassis_at + (chassis.len() / 8) as u8;
    let product_at = board_at + (board.len() / 8) as u8;
    let mut header = vec![1, 0, chassis_at, board_at, product_at, 0, 0];
    header.push(shoal_ipmi::wire::checksum(&header));
    [header, chassis, board, product].concat()
}

/// The SDR repository: a Management Controller Device Locator (type
/// 0x12) for the BMC at slave address 0x20, named `BMC`, then an
/// Event-Only record (type 0x03) for each sensor the SEL logs on
/// (`bmc::log::SEL_SENSORS`), so that clients name them. Record Ids are
/// 1, 2, ...
pub fn sdr_records() -> Vec<Vec<u8>> {
    let name = b"BMC";
    let mut body = vec![
        0x20, // device slave address
        0x00, // channel 0
        0x00, // power state notification / global initialization
        0x8e, // capabilities: chassis, FRU, SEL, SDR repository
        0, 0, 0,    // reserved
        0x00, // entity id (unspecified)
        0x01, // entity instance
        0x00, // OEM
    ];
    body.push(0xc0 | name.len() as u8);
    body.extend_from_slice(name);
    let mut bodies = vec![(0x12, body)];
    for (sensor_type, number, name) in crate::bmc::log::SEL_SENSORS {
        let mut b = vec![
            0x20,   // sensor owner: the BMC
            0x00,   // owner LUN, channel 0
            number, // sensor number
            0x07,   // entity: system board
            0x01,   // entity instance
            sensor_type,
            0x6f, // event/reading type: sensor-specific
            0x01, // one sensor, no instance modifier
            0x00, // entity instance sharing
            0x00, // reserved
            0x00, // OEM
        ];
        b.push(0xc0 | name.len() as u8);
        b.extend_from_slice(name.as_bytes());
        bodies.push((0x03, b));
    }
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, (kind, body))| {
            // Header: record id, SDR version 0x51, type, length.
            let id = (i as u16 + 1).to_le_bytes();
            let mut r = vec![id[0], id[1], 0x51, kind, body.len() as u8];
            r.extend_from_slice(&body);
            r
        })
        .collect()
}

pub(super) async fn fru_info(bmc: &Bmc, data: &[u8]) -> Reply {
    let [id] = data else {
        return err(cc::BAD_LENGTH);
    };
    if *id != 0 {
        return err(cc::NOT_PRESENT);
    }
    match bmc.fru().await {
        Ok(img) => {
            let n = (img.len() as u16).to_le_bytes();
            // Accessed by bytes.
            ok(vec![n[0], n[1], 0x00])
        }
        Err(e) => err(backend_cc(&e)),
    }
}

pub(super) async fn fru_read(bmc: &Bmc, data: &[u8]) -> Reply {
    let [id, lo, hi, count] = data else {
        return err(cc::BAD_LENGTH);
    };
    if *id != 0 {
        return err(cc::NOT_PRESENT);
    }
    let img = match bmc.fru().await {
        Ok(img) => img,
        Err(e) => return err(backend_cc(&e)),
    };
    let at = u16::from_le_bytes([*lo, *hi]) as usize;
    if at >= img.len() {
        return err(cc::OUT_OF_RANGE);
    }
    // At most 32 bytes a read: the response must fit what clients take.
    let n = (*count as usize).min(32).min(img.len() - at);
    let mut v = vec![n as u8];
    v.extend_from_slice(&img[at..at + n]);
    ok(v)
}

pub(super) fn sdr_info() -> Reply {
    let n = sdr_records().len() as u16;
    let n = n.to_le_bytes();
    // Version 0x51, count, free space 0, timestamps unspecified, ops:
    // reserve supported (bit 1).
    ok(vec![
        0x51, n[0], n[1], 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
    ])
}

pub(super) fn get_sdr(data: &[u8]) -> Reply {
    let [_r0, _r1, id_lo, id_hi, offset, count] = data else {
        return err(cc::BAD_LENGTH);
    };
    let records = sdr_records();
    let id = u16::from_le_bytes([*id_lo, *id_hi]);
    // Record id 0 is the first record; ids are 1, 2, ...
    let index = if id == 0 { 0 } else { id as usize - 1 };
    let Some(r) = records.get(index) else {
        return err(cc::NOT_PRESENT);
    };
    let next: u16 = if index + 1 < records.len() {
        index as u16 + 2
    } else {
        0xffff
    };
    let at = *offset as usize;
    if at > r.len() {
        return err(cc::OUT_OF_RANGE);
    }
    let n = if *count == 0xff {
        r.len() - at
    } else {
        (*count as usize).min(r.len() - at)
    };
    let mut v = next.to_le_bytes().to_vec();
    v.extend_from_slice(&r[at..at + n]);
    ok(v)
}

/// Get SEL Time: the host clock moved by what Set SEL Time said.
pub(super) fn sel_time(offset: i64) -> Reply {
    let now = (crate::timefmt::unix_now() as i64).saturating_add(offset);
    ok((now.clamp(0, u32::MAX as i64) as u32)
        .to_le_bytes()
        .to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero_sum(b: &[u8]) -> bool {
        b.iter().fold(0u8, |s, x| s.wrapping_add(*x)) == 0
    }

    #[test]
    fn the_fru_image_has_valid_areas_and_checksums() {
        let sys = crate::config::fake_systems(1).remove(0);
        let img = fru(&sys, crate::profile::generic());
        assert_eq!(img[0], 1);
        assert!(zero_sum(&img[..8]), "header checksum");
        for at in [img[2], img[3], img[4]] {
            let start = at as usize * 8;
            let len = img[start + 1] as usize * 8;
            assert!(zero_sum(&img[start..start + len]), "area at {start}");
        }
        assert_eq!(img.len() % 8, 0);
    }
}
