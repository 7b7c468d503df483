//! Ironic's inspection against the machine: what each inspect interface
//! reported (the `IRONIC-INSPECTED` lines of the enrollment) is compared
//! with the machine the scenario describes.

use serde_json::Value;

use crate::scenario::{IronicNode, Machine};

/// What each inspection (an `IRONIC-INSPECTED` line of the enrollment)
/// found, against the machine: its vCPUs, its memory, its disk's size
/// and its NIC's MAC, in the inventory Ironic stored (the BMC's for redfish
/// inspection, the agent's own for agent inspection), and for redfish
/// also the properties Ironic derived (memory_mb, local_gb) and the ports
/// it created.
pub(super) fn inspected(out: &str, node: &IronicNode, machine: &Machine, mac: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let found: Vec<Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("IRONIC-INSPECTED "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    let mac = mac.to_lowercase();
    for how in &node.inspect {
        let Some(f) = found.iter().find(|f| f["interface"] == how.as_str()) else {
            problems.push(format!("{how} inspection: Ironic reported nothing"));
            continue;
        };
        let mut c = Compare {
            how,
            machine,
            mac: &mac,
            problems: &mut problems,
        };
        if how == "ilo" {
            c.ilo(f);
            continue;
        }
        c.inventory(&f["inventory"]);
        if how == "idrac-redfish" {
            c.dell(&f["inventory"]);
        }
        if how == "redfish" || how == "idrac-redfish" {
            c.derived(f);
        }
    }
    problems
}

/// One inspection's report against the machine; what differs goes to
/// `problems`.
struct Compare<'a> {
    how: &'a str,
    machine: &'a Machine,
    /// The machine's MAC, lower case.
    mac: &'a str,
    problems: &'a mut Vec<String>,
}

impl Compare<'_> {
    fn want(&mut self, what: &str, ok: bool, got: String) {
        if !ok {
            self.problems
                .push(format!("{} inspection: {what} is {got}", self.how));
        }
    }

    fn disk_gib(&self) -> u64 {
        self.machine.disk_gib.unwrap_or(0)
    }

    /// iLO's inspection keeps no inventory: the node's properties, the
    /// capabilities proliantutils found, and a port per MAC.
    fn ilo(&mut self, f: &Value) {
        let (p, memory_mib, disk_gib) =
            (&f["properties"], self.machine.memory_mib, self.disk_gib());
        let mem = int(&p["memory_mb"]);
        self.want(
            "properties.memory_mb",
            mem == Some(memory_mib),
            format!("{mem:?}, not {memory_mib}"),
        );
        let gb = int(&p["local_gb"]);
        self.want(
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
            self.want(
                "properties.capabilities",
                caps.contains(cap),
                format!("{caps:?}, without {cap}"),
            );
        }
        self.ports(f);
    }

    /// The inventory Ironic stored: the MAC, the vCPUs, the memory, the
    /// disk's size.
    fn inventory(&mut self, inv: &Value) {
        let (mac, memory_mib, disk_gib) = (self.mac, self.machine.memory_mib, self.disk_gib());
        let macs = strings(&inv["interfaces"], "mac_address");
        self.want(
            "the inventory's MACs",
            macs.iter().any(|m| m == mac),
            format!("{macs:?}, not with {mac}"),
        );
        let (cpus, want) = (int(&inv["cpu"]["count"]), u64::from(self.machine.cpus));
        self.want(
            "cpu.count",
            cpus == Some(want),
            format!("{cpus:?}, not {want}"),
        );
        let mem = int(&inv["memory"]["physical_mb"]);
        self.want(
            "memory.physical_mb",
            mem == Some(memory_mib),
            format!("{mem:?}, not {memory_mib}"),
        );
        let sizes: Vec<u64> = inv["disks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| int(&d["size"]))
            .collect();
        self.want(
            "the disks' sizes",
            sizes.contains(&(disk_gib << 30)),
            format!(
                "{sizes:?} bytes, not with {} ({disk_gib} GiB)",
                disk_gib << 30
            ),
        );
    }

    /// What Dell's inspection adds: the service tag, the PXE port.
    fn dell(&mut self, inv: &Value) {
        // Dell's serial number is the service tag (the System's SKU).
        let tag = inv["system_vendor"]["serial_number"].as_str().unwrap_or("");
        self.want(
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
            let (pxe, mac) = (pxe.to_lowercase(), self.mac);
            self.want(
                "boot.pxe_interface",
                pxe == mac,
                format!("{pxe:?}, not {mac}"),
            );
        }
    }

    /// What redfish inspection derives: the ports, memory_mb, local_gb.
    fn derived(&mut self, f: &Value) {
        let (p, memory_mib, disk_gib) =
            (&f["properties"], self.machine.memory_mib, self.disk_gib());
        self.ports(f);
        let mem = int(&p["memory_mb"]);
        self.want(
            "properties.memory_mb",
            mem == Some(memory_mib),
            format!("{mem:?}, not {memory_mib}"),
        );
        // Ironic keeps a GiB for partitioning: the disk's size less one.
        let gb = int(&p["local_gb"]);
        self.want(
            "properties.local_gb",
            gb == Some(disk_gib - 1),
            format!("{gb:?}, not {}", disk_gib - 1),
        );
    }

    /// The ports Ironic created: one with the machine's MAC.
    fn ports(&mut self, f: &Value) {
        let (ports, mac) = (strings(&f["ports"], ""), self.mac);
        self.want(
            "the ports",
            ports.iter().any(|p| p == mac),
            format!("{ports:?}, not with {mac}"),
        );
    }
}

/// A number, or a string that holds one (Ironic's properties are either).
fn int(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// The strings of an array (`key` empty), or each item's `key`, lower case.
fn strings(v: &Value, key: &str) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| match key {
            "" => i.as_str(),
            k => i[k].as_str(),
        })
        .map(str::to_lowercase)
        .collect()
}
