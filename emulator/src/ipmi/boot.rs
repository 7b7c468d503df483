//! IPMI boot flags (System Boot Options parameter 5) and the Redfish
//! boot override are one thing: this maps between them, both ways.
//!
//! Byte 1: 0x80 the flags are valid, 0x40 persistent (else next boot
//! only), 0x20 EFI (else legacy/BIOS). Byte 2, bits 5:2: the device.
//! `chassis bootdev pxe options=efiboot` is `05 a0 04 ..` and reads back
//! over Redfish as Pxe / UEFI / Once.

use crate::model::{BootMode, BootOverride, BootTarget, OverrideEnabled};

pub const VALID: u8 = 0x80;
pub const PERSISTENT: u8 = 0x40;
pub const EFI: u8 = 0x20;

/// Why a set of boot flags cannot be taken (completion code 0xCC).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagsError {
    #[error("boot flags need 5 data bytes")]
    Length,
    #[error("boot device selector {0:#x} is not served")]
    Device(u8),
    #[error("this machine has no EFI firmware")]
    NoEfi,
}

/// The device selector (byte 2, bits 5:2) of a target.
fn selector(t: BootTarget) -> u8 {
    use BootTarget::*;
    match t {
        Pxe | UefiHttp => 0x1,
        Hdd => 0x2,
        Diags => 0x4,
        Cd | UsbCd => 0x5,
        BiosSetup => 0x6,
        RemoteDrive => 0xb,
        Floppy | Usb => 0xf,
        None | UefiShell | UefiTarget | Utilities | SDCard | UefiBootNext | Recovery => 0x0,
    }
}

fn target(sel: u8) -> Result<BootTarget, FlagsError> {
    use BootTarget::*;
    Ok(match sel {
        0x0 => None,
        0x1 => Pxe,
        // 3: disk in safe mode; the disk still.
        0x2 | 0x3 => Hdd,
        0x4 => Diags,
        // 8: primary remote media, 9: remote CD/DVD.
        0x5 | 0x8 | 0x9 => Cd,
        0x6 => BiosSetup,
        0xb => RemoteDrive,
        // 7: remote floppy; f: floppy or primary removable media.
        0x7 | 0xf => Floppy,
        other => return Err(FlagsError::Device(other)),
    })
}

/// Parameter 5's five data bytes for an override.
pub fn flags_of(o: &BootOverride) -> [u8; 5] {
    let mut b1 = 0;
    if o.enabled != OverrideEnabled::Disabled && o.target != BootTarget::None {
        b1 |= VALID;
        if o.enabled == OverrideEnabled::Continuous {
            b1 |= PERSISTENT;
        }
    }
    if o.mode == BootMode::Uefi {
        b1 |= EFI;
    }
    let dev = if b1 & VALID != 0 {
        selector(o.target)
    } else {
        0
    };
    [b1, dev << 2, 0, 0, 0]
}

/// The override parameter 5's data bytes ask for (no HTTP URI and no UEFI
/// target: IPMI cannot say them; the caller keeps a Redfish UefiHttp's URI
/// when PXE is set over it). `uefi_capable`: the machine has UEFI firmware
/// at all; without it the mode stays `current`'s.
pub fn override_of(
    data: &[u8],
    current: &BootOverride,
    uefi_capable: bool,
) -> Result<BootOverride, FlagsError> {
    let d: [u8; 5] = data.try_into().map_err(|_| FlagsError::Length)?;
    let efi = d[0] & EFI != 0;
    if efi && !uefi_capable {
        return Err(FlagsError::NoEfi);
    }
    let mode = if !uefi_capable {
        current.mode
    } else if efi {
        BootMode::Uefi
    } else {
        BootMode::Legacy
    };
    let target = target((d[1] >> 2) & 0x0f)?;
    if d[0] & VALID == 0 || target == BootTarget::None {
        return Ok(BootOverride::disabled(mode));
    }
    let enabled = if d[0] & PERSISTENT != 0 {
        OverrideEnabled::Continuous
    } else {
        OverrideEnabled::Once
    };
    Ok(BootOverride {
        target,
        enabled,
        mode,
        http_boot_uri: None,
        uefi_target: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off() -> BootOverride {
        BootOverride::disabled(BootMode::Uefi)
    }

    #[test]
    fn ipmitool_bootdev_pxe_efiboot_is_pxe_uefi_once() {
        let o = override_of(&[0xa0, 0x04, 0, 0, 0], &off(), true).unwrap();
        assert_eq!(
            (o.target, o.mode, o.enabled),
            (BootTarget::Pxe, BootMode::Uefi, OverrideEnabled::Once)
        );
        assert_eq!(flags_of(&o), [0xa0, 0x04, 0, 0, 0]);
    }

    #[test]
    fn persistent_disk_in_legacy_mode_round_trips() {
        let o = override_of(&[0xc0, 0x08, 0, 0, 0], &off(), true).unwrap();
        assert_eq!(
            (o.target, o.mode, o.enabled),
            (
                BootTarget::Hdd,
                BootMode::Legacy,
                OverrideEnabled::Continuous
            )
        );
        assert_eq!(flags_of(&o), [0xc0, 0x08, 0, 0, 0]);
    }

    #[test]
    fn every_served_selector_reads_back_as_itself() {
        for sel in [0x1u8, 0x2, 0x4, 0x5, 0x6, 0xb, 0xf] {
            let o = override_of(&[0xa0, sel << 2, 0, 0, 0], &off(), true).unwrap();
            assert_eq!(flags_of(&o)[1], sel << 2, "selector {sel:#x}");
        }
    }

    #[test]
    fn invalid_flags_or_no_device_clear_the_override() {
        let set = override_of(&[0xa0, 0x04, 0, 0, 0], &off(), true).unwrap();
        for data in [[0x20, 0x04, 0, 0, 0], [0xa0, 0x00, 0, 0, 0]] {
            let o = override_of(&data, &set, true).unwrap();
            assert_eq!(o.enabled, OverrideEnabled::Disabled);
            assert_eq!(flags_of(&o)[0] & VALID, 0);
        }
    }

    #[test]
    fn bad_flags_are_refused() {
        assert_eq!(
            override_of(&[0x80, 0x04], &off(), true),
            Err(FlagsError::Length)
        );
        assert_eq!(
            override_of(&[0x80, 0x0a << 2, 0, 0, 0], &off(), true),
            Err(FlagsError::Device(0xa))
        );
        assert_eq!(
            override_of(&[0xa0, 0x04, 0, 0, 0], &off(), false),
            Err(FlagsError::NoEfi)
        );
    }
}
