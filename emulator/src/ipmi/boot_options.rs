//! Get/Set System Boot Options (IPMI v2.0 section 28.12-13): parameters
//! 0 (set in progress), 3 (boot flag valid bit clearing), 4 (boot info
//! acknowledge), 5 (boot flags, one state with the Redfish override
//! through `boot`) and 7 (the boot initiator mailbox, which OpenPOWER's
//! petitboot reads its boot order from).

use std::time::Instant;

use super::commands::{backend_cc, cc, err, ok, Reply, MAILBOX_BLOCKS};
use super::{boot, Bmc};
use crate::bmc::{BootRefused, BootRequest};
use crate::model::OverrideEnabled;

pub(super) async fn set_boot_option(bmc: &Bmc, data: &[u8]) -> Reply {
    let Some((&param, rest)) = data.split_first() else {
        return err(cc::BAD_LENGTH);
    };
    match param & 0x7f {
        0 => {
            let [v] = rest else {
                return err(cc::BAD_LENGTH);
            };
            let mut c = bmc.chassis();
            match v & 0x03 {
                // "Set in progress" when one already is: 0x81.
                0x01 if c.set_in_progress == 0x01 => return err(0x81),
                0x03 => return err(cc::INVALID_FIELD),
                // Commit write: the flags apply as they are set.
                0x02 => {}
                v => c.set_in_progress = v,
            }
            ok(Vec::new())
        }
        3 => {
            let [v] = rest else {
                return err(cc::BAD_LENGTH);
            };
            let mut c = bmc.chassis();
            c.valid_clearing = v & 0x1f;
            if c.valid_clearing & 0x08 != 0 {
                c.valid_since = None;
            }
            ok(Vec::new())
        }
        4 => {
            let [mask, bits] = rest else {
                return err(cc::BAD_LENGTH);
            };
            let mut c = bmc.chassis();
            c.boot_ack = (c.boot_ack & !mask) | (bits & mask);
            ok(Vec::new())
        }
        5 => set_boot_flags(bmc, rest).await,
        7 => {
            // A block selector, then up to 16 bytes of the block.
            let Some((&block, bytes)) = rest.split_first() else {
                return err(cc::BAD_LENGTH);
            };
            if bytes.is_empty() || bytes.len() > 16 {
                return err(cc::BAD_LENGTH);
            }
            let block = usize::from(block);
            if block >= MAILBOX_BLOCKS {
                return err(cc::OUT_OF_RANGE);
            }
            let mut c = bmc.chassis();
            if c.mailbox.len() <= block {
                c.mailbox.resize(block + 1, [0; 16]);
            }
            let b = &mut c.mailbox[block];
            *b = [0; 16];
            b[..bytes.len()].copy_from_slice(bytes);
            ok(Vec::new())
        }
        _ => err(cc::PARAM_NOT_SUPPORTED),
    }
}

async fn set_boot_flags(bmc: &Bmc, data: &[u8]) -> Reply {
    // Read, decide and write under the system's lock, as a Redfish PATCH.
    let locked = match bmc.core.locked(&bmc.system_id).await {
        Ok(l) => l,
        Err(e) => return err(backend_cc(&e)),
    };
    let sys = &locked.sys;
    let wanted = match boot::override_of(data, &sys.bmc.boot, sys.arch.has_uefi()) {
        Ok(o) => o,
        Err(boot::FlagsError::Length) => return err(cc::BAD_LENGTH),
        Err(_) => return err(cc::INVALID_FIELD),
    };
    // The flags say target, persistence and mode; no URI, no UEFI target.
    let req = BootRequest {
        target: Some(wanted.target),
        enabled: Some(wanted.enabled),
        mode: Some(wanted.mode),
        pxe_means_network: true,
        ..BootRequest::default()
    };
    match bmc.core.set_boot(&locked, &req).await {
        Ok(after) => {
            let mut c = bmc.chassis();
            let now = Instant::now();
            c.valid_since = (after.bmc.boot.enabled == OverrideEnabled::Once
                && c.valid_clearing & 0x08 == 0)
                .then(|| (now, after.bmc.boot.clone()));
            let none = after.bmc.boot.enabled == OverrideEnabled::Disabled;
            c.valid_no_override = (none && data[0] & boot::VALID != 0)
                .then_some((now, data[0] & (boot::VALID | boot::PERSISTENT)));
            ok(Vec::new())
        }
        Err(e) => err(refusal_cc(&e)),
    }
}

/// The completion code of a refused boot request (IPMI v2.0 table 5-2):
/// not now while the host is in POST, an invalid field for a target,
/// persistence or mode this BMC does not offer.
fn refusal_cc(e: &BootRefused) -> u8 {
    match e {
        BootRefused::InPost => cc::NOT_NOW,
        BootRefused::TargetNotOffered(_)
        | BootRefused::ContinuousNotOffered
        | BootRefused::ModeNotOffered(_)
        | BootRefused::NeedsUefi(_) => cc::INVALID_FIELD,
        BootRefused::Backend(e) => backend_cc(e),
    }
}

pub(super) async fn get_boot_option(bmc: &Bmc, data: &[u8]) -> Reply {
    let [param, set, _block] = data else {
        return err(cc::BAD_LENGTH);
    };
    let param = param & 0x7f;
    // Response: parameter version 1, the parameter (bit 7: invalid or
    // locked), its data. While a client has a set in progress (parameter
    // 0), the boot flags it is writing read as locked: a host that reads
    // them then (petitboot, at start-up) honours no override.
    let locked = param == 5 && bmc.chassis().set_in_progress == 0x01;
    let with = |d: &[u8]| {
        let mut v = vec![0x01, param | if locked { 0x80 } else { 0 }];
        v.extend_from_slice(d);
        ok(v)
    };
    match param {
        0 => with(&[bmc.chassis().set_in_progress]),
        3 => with(&[bmc.chassis().valid_clearing]),
        4 => with(&[0x00, bmc.chassis().boot_ack]),
        5 => match bmc.system().await {
            Ok(sys) => {
                let mut flags = boot::flags_of(&sys.bmc.boot);
                // No override: valid when last written so (a host's
                // clear), else not valid. A Redfish override since wins.
                if flags[0] & boot::VALID == 0 {
                    if let Some(b1) = bmc.chassis().valid_no_override(Instant::now()) {
                        flags[0] |= b1;
                    }
                }
                with(&flags)
            }
            Err(e) => err(backend_cc(&e)),
        },
        7 if usize::from(*set) >= MAILBOX_BLOCKS => err(cc::OUT_OF_RANGE),
        7 => {
            let block = bmc
                .chassis()
                .mailbox
                .get(usize::from(*set))
                .copied()
                .unwrap_or([0; 16]);
            let mut d = vec![*set];
            d.extend_from_slice(&block);
            with(&d)
        }
        _ => err(cc::PARAM_NOT_SUPPORTED),
    }
}
