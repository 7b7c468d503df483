//! What one change of a system's state is, as records: the parts of
//! [`System`] that differ, each a [`What`] with its before and after.

use super::What;
use crate::model::{MediaSlot, System};

/// What differs from `before` to `after`; the power state only with
/// `power` (a change of the BMC's state never moves it: a power state
/// that moved meanwhile is the machine's own doing).
pub(super) fn differences(before: &System, after: &System, power: bool) -> Vec<What> {
    let (b, a) = (&before.bmc, &after.bmc);
    let mut out = Vec::new();
    if power && before.power != after.power {
        out.push(What::Power {
            before: before.power,
            after: after.power,
        });
    }
    if b.last_boot != a.last_boot {
        if let Some(record) = &a.last_boot {
            out.push(What::Booted {
                record: record.clone(),
            });
        }
    }
    if b.boot != a.boot {
        out.push(What::Boot {
            before: b.boot.clone(),
            after: a.boot.clone(),
        });
    }
    for (slot, x, y) in [
        (MediaSlot::Cd, &b.cd, &a.cd),
        (MediaSlot::Floppy, &b.floppy, &a.floppy),
    ] {
        if x != y {
            out.push(What::Media {
                slot,
                before: x.clone(),
                after: y.clone(),
            });
        }
    }
    if b.bios != a.bios {
        out.push(What::Bios {
            before: b.bios.clone(),
            after: a.bios.clone(),
        });
    }
    if b.secure_boot != a.secure_boot {
        out.push(What::SecureBoot {
            before: b.secure_boot.clone(),
            after: a.secure_boot.clone(),
        });
    }
    if b.indicator != a.indicator {
        out.push(What::Indicator {
            before: b.indicator,
            after: a.indicator,
        });
    }
    if b.asset_tag != a.asset_tag {
        out.push(What::AssetTag {
            before: b.asset_tag.clone(),
            after: a.asset_tag.clone(),
        });
    }
    if b.power_restore != a.power_restore {
        out.push(What::PowerRestore {
            before: b.power_restore,
            after: a.power_restore,
        });
    }
    for (c, after) in &a.firmware.installed {
        let before = b.firmware.installed.get(c);
        if before != Some(after) {
            out.push(What::Firmware {
                component: *c,
                before: before.cloned(),
                after: after.clone(),
            });
        }
    }
    let others: [(&'static str, bool); 7] = [
        ("storage", b.storage != a.storage),
        ("boot_certs", b.boot_certs != a.boot_certs),
        ("ntp", b.ntp != a.ntp),
        (
            "service_identification",
            b.service_identification != a.service_identification,
        ),
        ("cd_tls", b.cd_tls != a.cd_tls),
        ("floppy_tls", b.floppy_tls != a.floppy_tls),
        ("firmware_staged", b.firmware.staged != a.firmware.staged),
    ];
    out.extend(
        others
            .into_iter()
            .filter(|(_, differs)| *differs)
            .map(|(part, _)| What::Other { part }),
    );
    out
}
