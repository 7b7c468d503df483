//! What Get Device ID says of the BMC: the profile's IANA enterprise
//! number and product, and its firmware version as IPMI encodes it.

use crate::profile::Profile;

/// Get Device ID's identity, from the profile.
#[derive(Debug, Clone)]
pub struct Identity {
    pub manufacturer_id: u32,
    pub product_id: u16,
    pub fw_major: u8,
    pub fw_minor_bcd: u8,
}

impl Identity {
    /// From the profile: its IANA enterprise number, and the first
    /// `MAJOR.MINOR` of its BMC firmware version (`iLO 5 v3.08` → 3,
    /// 0x08; `7.00.00.181` → 7, 0x00).
    pub fn of(profile: &Profile) -> Identity {
        let (major, minor) = firmware_version(&profile.bmc_firmware_version);
        Identity {
            manufacturer_id: profile.ipmi.manufacturer_id & 0x00ff_ffff,
            product_id: profile.ipmi.product_id,
            fw_major: major.min(127) as u8,
            fw_minor_bcd: (((minor / 10) << 4) | (minor % 10)) as u8,
        }
    }
}

/// The first `digits.digits` of a version text (minor: its first two
/// digits), else its first number and 0.
fn firmware_version(v: &str) -> (u32, u32) {
    let b = v.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut first = None;
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit()) {
            let n = digits(i);
            let major = v[i..i + n].parse::<u32>().unwrap_or(0);
            first.get_or_insert(major);
            if b.get(i + n) == Some(&b'.') && digits(i + n + 1) > 0 {
                let m = digits(i + n + 1).min(2);
                let minor = v[i + n + 1..i + n + 1 + m].parse::<u32>().unwrap_or(0);
                return (major, minor);
            }
            i += n;
        } else {
            i += 1;
        }
    }
    (first.unwrap_or(1), 0)
}
