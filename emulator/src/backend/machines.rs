//! Machines derived from a name alone: a stable identity (a UUID v5 in
//! Shoal's namespace, a locally administered 52:54:00 MAC from the name's
//! hash) on a default UEFI x86_64 machine, the base of every inventory
//! entry and the fake backend's `--fake-systems` machines.

use std::collections::HashSet;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::model::{Arch, BmcState, BootMode, Nic, PowerState, SecureBoot, System};
use crate::storage::Disk;

/// Namespace of the name-derived system UUIDs (stable across runs).
const UUID_NAMESPACE: Uuid = Uuid::from_u128(0x5b0a_1e00_5e0a_4c1b_9d3e_7a11_0c0f_fee0);

/// The locally administered 52:54:00 MAC derived from `name` (attempt
/// `k` > 0 when an earlier one is taken).
pub(crate) fn derived_mac(name: &str, k: u32) -> String {
    let h = if k == 0 {
        Sha256::digest(name.as_bytes())
    } else {
        Sha256::digest(format!("{name}#{k}").as_bytes())
    };
    format!("52:54:00:{:02x}:{:02x}:{:02x}", h[0], h[1], h[2])
}

/// A UEFI x86_64 machine named `name`, with identity derived stably from the
/// name (UUID v5, a locally administered 52:54:00 MAC), 4 GiB, 2 vCPUs and
/// one 20 GiB disk, powered off.
pub fn default_system(name: &str) -> System {
    let uuid = Uuid::new_v5(&UUID_NAMESPACE, name.as_bytes());
    let mut sys = System {
        id: uuid.hyphenated().to_string(),
        name: name.to_string(),
        uuid,
        arch: Arch::X86_64,
        memory_mib: 4096,
        cpus: 2,
        disks: vec![Disk::new("disk0", 20 << 30)],
        nics: vec![Nic {
            mac: derived_mac(name, 0),
        }],
        power: PowerState::Off,
        profile: "generic".into(),
        bmc: BmcState::new(
            BootMode::Uefi,
            SecureBoot {
                enable: false,
                current_boot: false,
                keys_enrolled: true,
            },
        ),
    };
    sys.bmc.storage = crate::storage::StorageState::jbod(&sys.disks);
    sys
}

/// `n` default machines named `node-0` … `node-{n-1}`.
pub fn fake_systems(n: usize) -> Vec<System> {
    let mut macs = HashSet::new();
    (0..n)
        .map(|i| {
            let mut sys = default_system(&format!("node-{i}"));
            sys.nics[0].mac = (0..)
                .map(|k| derived_mac(&sys.name, k))
                .find(|m| macs.insert(m.clone()))
                .expect("a free MAC");
            sys
        })
        .collect()
}

#[cfg(test)]
pub fn test_system(name: &str) -> System {
    default_system(name)
}
