//! Ironic's inspection against the machine: what each inspect interface
//! reported (the `IRONIC-INSPECTED` lines of the enrollment) is compared
//! with the machine the scenario describes.

use crate::scenario::{IronicNode, Machine};

/// What each inspection (an `IRONIC-INSPECTED` line of the enrollment)
/// found, against the machine: its one vCPU, its memory, its disk's size
/// and its NIC's MAC, in the inventory Ironic stored (the BMC's for redfish
/// inspection, the agent's own for agent inspection), and for redfish
/// also the properties Ironic derived (memory_mb, local_gb) and the ports
/// it created.
pub(super) fn inspected(out: &str, node: &IronicNode, machine: &Machine, mac: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let found: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("IRONIC-INSPECTED "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    let disk_gib = machine.disk_gib.unwrap_or(0);
    let int = |v: &serde_json::Value| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    };
    let strings = |v: &serde_json::Value, key: &str| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| match key {
                "" => i.as_str(),
                k => i[k].as_str(),
            })
            .map(str::to_lowercase)
            .collect()
    };
    let mac = mac.to_lowercase();
    for how in &node.inspect {
        let Some(f) = found.iter().find(|f| f["interface"] == how.as_str()) else {
            problems.push(format!("{how} inspection: Ironic reported nothing"));
            continue;
        };
        let mut want = |what: &str, ok: bool, got: String| {
            if !ok {
                problems.push(format!("{how} inspection: {what} is {got}"));
            }
        };
        let (p, inv) = (&f["properties"], &f["inventory"]);
        if how == "ilo" {
            // iLO's inspection keeps no inventory: the node's properties,
            // the capabilities proliantutils found, and a port per MAC.
            let mem = int(&p["memory_mb"]);
            want(
                "properties.memory_mb",
                mem == Some(machine.memory_mib),
                format!("{mem:?}, not {}", machine.memory_mib),
            );
            let gb = int(&p["local_gb"]);
            want(
                "properties.local_gb",
                gb == Some(disk_gib.saturating_sub(1)),
                format!("{gb:?}, not {}", disk_gib.saturating_sub(1)),
            );
            let caps = p["capabilities"].as_str().unwrap_or("");
            for cap in [
                "server_model:ProLiant",
                "nic_capacity:1Gb",
                "boot_mode:uefi",
            ] {
                want(
                    "properties.capabilities",
                    caps.contains(cap),
                    format!("{caps:?}, without {cap}"),
                );
            }
            let ports = strings(&f["ports"], "");
            want(
                "the ports",
                ports.contains(&mac),
                format!("{ports:?}, not with {mac}"),
            );
            continue;
        }
        let macs = strings(&inv["interfaces"], "mac_address");
        want(
            "the inventory's MACs",
            macs.contains(&mac),
            format!("{macs:?}, not with {mac}"),
        );
        let cpus = int(&inv["cpu"]["count"]);
        want("cpu.count", cpus == Some(1), format!("{cpus:?}, not 1"));
        let mem = int(&inv["memory"]["physical_mb"]);
        want(
            "memory.physical_mb",
            mem == Some(machine.memory_mib),
            format!("{mem:?}, not {}", machine.memory_mib),
        );
        let sizes: Vec<u64> = inv["disks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| int(&d["size"]))
            .collect();
        want(
            "the disks' sizes",
            sizes.contains(&(disk_gib << 30)),
            format!(
                "{sizes:?} bytes, not with {} ({disk_gib} GiB)",
                disk_gib << 30
            ),
        );
        if how == "idrac-redfish" {
            // Dell's serial number is the service tag (the System's SKU).
            let tag = inv["system_vendor"]["serial_number"].as_str().unwrap_or("");
            want(
                "system_vendor.serial_number",
                tag.len() == 7
                    && tag
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
                format!("{tag:?}, not a 7-character service tag"),
            );
            // Ironic 39 compares sushy's boot mode (`UEFI`) with its own
            // `uefi`, so it never reads the PxeDev attributes and reports
            // no PXE interface; once it does, it must be this port.
            if let Some(pxe) = inv["boot"]["pxe_interface"].as_str() {
                let pxe = pxe.to_lowercase();
                want(
                    "boot.pxe_interface",
                    pxe == mac,
                    format!("{pxe:?}, not {mac}"),
                );
            }
        }
        if how == "redfish" || how == "idrac-redfish" {
            let ports = strings(&f["ports"], "");
            want(
                "the ports",
                ports.contains(&mac),
                format!("{ports:?}, not with {mac}"),
            );
            let mem = int(&p["memory_mb"]);
            want(
                "properties.memory_mb",
                mem == Some(machine.memory_mib),
                format!("{mem:?}, not {}", machine.memory_mib),
            );
            // Ironic keeps a GiB for partitioning: the disk's size less one.
            let gb = int(&p["local_gb"]);
            want(
                "properties.local_gb",
                gb == Some(disk_gib - 1),
                format!("{gb:?}, not {}", disk_gib - 1),
            );
        }
    }
    problems
}
