//! Get LAN Configuration Parameters and Get SOL Configuration Parameters:
//! enough for `ipmitool lan print` and `sol info`. What they say is what
//! is served: no IPMI v1.5 authentication type (RMCP+ only), and the
//! accounts' lockout policy as the bad password threshold, the one LAN
//! parameter Set LAN Configuration Parameters changes: the others follow
//! from how the emulator was started.

use super::commands::{cc, err, ok, Reply};
use super::Bmc;

/// A Get LAN/SOL Configuration Parameters request: the parameter asked
/// for, or the answer already (a bad request, or the revision only).
fn config_param(data: &[u8]) -> Result<u8, Reply> {
    let [ch, param, _set, _block] = data else {
        return Err(err(cc::BAD_LENGTH));
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) {
        return Err(err(cc::INVALID_FIELD));
    }
    // Bit 7: the revision only.
    if ch & 0x80 != 0 {
        return Err(ok(vec![0x11]));
    }
    Ok(*param)
}

/// A configuration parameter's answer: revision 1.1, then its data.
fn config_value(d: &[u8]) -> Reply {
    let mut v = vec![0x11];
    v.extend_from_slice(d);
    ok(v)
}

pub(super) fn lan_config(bmc: &Bmc, data: &[u8]) -> Reply {
    let param = match config_param(data) {
        Ok(p) => p,
        Err(reply) => return reply,
    };
    let ip = match bmc.addr.ip() {
        std::net::IpAddr::V4(v4) => v4.octets(),
        std::net::IpAddr::V6(_) => [0; 4],
    };
    let suites: Vec<u8> = bmc
        .cipher_suite_zero
        .then_some(0)
        .into_iter()
        .chain(super::crypto::SUITES.iter().map(|s| s.id))
        .collect();
    let d: Vec<u8> = match param {
        0 => vec![0x00],
        // IPMI v1.5 authentication types supported, and enabled per
        // privilege level: none (no v1.5 session is served; RMCP+ carries
        // its own).
        1 => vec![0x00],
        2 => vec![0x00; 5],
        3 => ip.to_vec(),
        // Static address.
        4 => vec![0x01],
        5 => bmc.mac.to_vec(),
        6 => vec![255, 255, 255, 0],
        // TTL 64, flags don't fragment, precedence/TOS normal.
        7 => vec![0x40, 0x40, 0x10],
        10 => vec![0x00],
        11 => vec![0x00],
        12 | 14 => vec![0, 0, 0, 0],
        13 | 15 => vec![0; 6],
        16 => {
            let mut c = b"public".to_vec();
            c.resize(18, 0);
            c
        }
        20 => vec![0x00, 0x00],
        21 => vec![0x00],
        22 => vec![suites.len() as u8],
        23 => [vec![0x00], suites.clone()].concat(),
        // Privilege levels per suite entry, two to a byte: ADMINISTRATOR.
        24 => {
            let mut v = vec![0x00];
            v.extend(std::iter::repeat_n(0x44, 8));
            v
        }
        26 => bad_password_threshold(&bmc.auth.lockout_policy()).to_vec(),
        _ => return err(cc::PARAM_NOT_SUPPORTED),
    };
    config_value(&d)
}

/// Parameter 26, Bad Password Threshold (IPMI v2.0 table 23-4): no
/// event generated (byte 1 bit 0), the threshold (0: lockout off, as the
/// policy's threshold or duration 0 is; one byte, so a threshold above
/// 255 reads 255), then the count's reset interval and the lockout
/// interval in tens of seconds (rounded up), LS byte first.
fn bad_password_threshold(p: &crate::auth::LockoutPolicy) -> [u8; 6] {
    if p.threshold == 0 || p.duration == 0 {
        return [0; 6];
    }
    let tens = |s: u64| (s.div_ceil(10).min(u64::from(u16::MAX)) as u16).to_le_bytes();
    let [r0, r1] = tens(p.reset_after);
    let [d0, d1] = tens(p.duration);
    [0, p.threshold.min(255) as u8, r0, r1, d0, d1]
}

/// "Attempt to write a read-only parameter" (Set LAN Configuration
/// Parameters).
const READ_ONLY: u8 = 0x82;

/// Set LAN Configuration Parameters: parameter 26 sets the accounts'
/// lockout policy (the one the Redfish AccountService shows); the other
/// parameters Get answers are read-only here, the rest not supported.
pub(super) fn set_lan_config(bmc: &Bmc, data: &[u8]) -> Reply {
    let [ch, param, value @ ..] = data else {
        return err(cc::BAD_LENGTH);
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) {
        return err(cc::INVALID_FIELD);
    }
    match param {
        // Set In Progress: every write applies at once, whole, so there
        // is nothing to hold or commit; it reads "set complete" always.
        0 => match value {
            [v] if v & 0x03 != 0x03 => ok(Vec::new()),
            [_] => err(cc::INVALID_FIELD),
            _ => err(cc::BAD_LENGTH),
        },
        26 => set_bad_password_threshold(bmc, value),
        1..=7 | 10..=16 | 20..=24 => err(READ_ONLY),
        _ => err(cc::PARAM_NOT_SUPPORTED),
    }
}

/// Parameter 26 as [`bad_password_threshold`] reads it. No event can be
/// asked for (byte 1 bit 0: this BMC has no event log yet), and a count
/// reset interval above a non-zero lockout interval is refused as the
/// AccountService refuses it; nothing changes on a refusal.
fn set_bad_password_threshold(bmc: &Bmc, value: &[u8]) -> Reply {
    let &[event, threshold, r0, r1, d0, d1] = value else {
        return err(cc::BAD_LENGTH);
    };
    if event != 0 {
        return err(cc::INVALID_FIELD);
    }
    let tens = |lo: u8, hi: u8| u64::from(u16::from_le_bytes([lo, hi])) * 10;
    let set = bmc.auth.update_lockout_policy(|p| {
        p.threshold = u32::from(threshold);
        p.reset_after = tens(r0, r1);
        p.duration = tens(d0, d1);
        if p.consistent() {
            Ok(())
        } else {
            Err(())
        }
    });
    match set {
        Ok(p) => {
            tracing::info!(
                threshold = p.threshold,
                duration = p.duration,
                reset_after = p.reset_after,
                "account lockout policy changed over IPMI"
            );
            ok(Vec::new())
        }
        Err(()) => err(cc::INVALID_FIELD),
    }
}

/// Get SOL Configuration Parameters: enabled, USER may activate, the
/// character timing, retries, 115,200 bit/s, channel 1, the BMC's port.
pub(super) fn sol_config(bmc: &Bmc, data: &[u8]) -> Reply {
    let param = match config_param(data) {
        Ok(p) => p,
        Err(reply) => return reply,
    };
    let port = bmc.addr.port().to_le_bytes();
    let d: Vec<u8> = match param {
        0 => vec![0x00],
        1 => vec![0x01],
        // Encryption and authentication forced off, privilege USER.
        2 => vec![0x02],
        // Accumulate 50 ms (10 x 5 ms), send at 200 characters.
        3 => vec![0x0a, 0xc8],
        // 5 retries, 1 s apart (100 x 10 ms).
        4 => vec![0x05, 0x64],
        // 115,200 bit/s.
        5 | 6 => vec![0x0a],
        7 => vec![0x01],
        8 => vec![port[0], port[1]],
        _ => return err(cc::PARAM_NOT_SUPPORTED),
    };
    config_value(&d)
}
