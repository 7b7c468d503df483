//! What `lab up` writes for the tools a user brings: the lab's own state
//! (`lab.json`, which `lab status` and `lab down` read), Ironic's
//! enrollment file (`baremetal create ironic-nodes.json`) and metal3's
//! BareMetalHost manifests with their credentials' Secrets
//! (`kubectl apply -f baremetalhosts.yaml`). Pure: no lab needed.

use serde::{Deserialize, Serialize};

/// One machine of the lab and its BMC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub name: String,
    /// The Redfish System Id (the domain's UUID).
    pub system_id: String,
    pub mac: String,
    pub memory_mib: u64,
    pub cpus: u32,
    pub disk_gib: u64,
    /// Its serial console's log.
    pub serial: String,
}

/// `lab.json`: what runs and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The `lab up` process that keeps the lab (`lab down` signals it).
    pub pid: u32,
    /// The network namespace the machines' network is in.
    pub namespace: String,
    /// The BMCs' Redfish service on the host's loopback.
    pub redfish: String,
    /// The same service inside the namespace, on the lab network.
    pub redfish_in_lab: String,
    /// The machines' boot file server (inside the namespace).
    pub boot_server: String,
    /// The folder it serves; also the BMCs' virtual media server's.
    pub served: String,
    /// Where the BMCs download virtual media from (host loopback).
    pub media_server: String,
    pub username: String,
    pub password: String,
    pub machines: Vec<Machine>,
}

impl State {
    /// Ironic's enrollment file: a node per machine on the redfish
    /// hardware type, its boot NIC as a port.
    pub fn ironic_nodes(&self) -> serde_json::Value {
        let nodes: Vec<serde_json::Value> = self
            .machines
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name,
                    "driver": "redfish",
                    "driver_info": {
                        "redfish_address": self.redfish,
                        "redfish_system_id": format!("/redfish/v1/Systems/{}", m.system_id),
                        "redfish_username": self.username,
                        "redfish_password": self.password,
                    },
                    "properties": {
                        "cpu_arch": "x86_64",
                        "cpus": m.cpus,
                        "memory_mb": m.memory_mib,
                        "local_gb": m.disk_gib,
                        "capabilities": "boot_mode:uefi",
                    },
                    "ports": [{ "address": m.mac, "pxe_enabled": true }],
                })
            })
            .collect();
        serde_json::json!({ "nodes": nodes })
    }

    /// metal3's manifests: per machine a Secret with the BMC's account and
    /// a BareMetalHost booting by Redfish virtual media from `redfish`
    /// (the address the cluster reaches the BMCs at).
    pub fn baremetal_hosts(&self, redfish: &str) -> String {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let host = redfish.split_once("://").map_or(redfish, |(_, h)| h);
        let scheme = if redfish.starts_with("https://") {
            "redfish-virtualmedia+https"
        } else {
            "redfish-virtualmedia+http"
        };
        let mut out = String::new();
        for m in &self.machines {
            out.push_str(&format!(
                "---\n\
                 apiVersion: v1\n\
                 kind: Secret\n\
                 metadata:\n  name: {name}-bmc-secret\n\
                 type: Opaque\n\
                 data:\n  username: {user}\n  password: {pass}\n\
                 ---\n\
                 apiVersion: metal3.io/v1alpha1\n\
                 kind: BareMetalHost\n\
                 metadata:\n  name: {name}\n\
                 spec:\n  online: true\n  bootMACAddress: \"{mac}\"\n  bootMode: UEFI\n\
                 \x20 bmc:\n    address: \"{scheme}://{host}/redfish/v1/Systems/{id}\"\n\
                 \x20   credentialsName: {name}-bmc-secret\n",
                name = m.name,
                user = b64(&self.username),
                pass = b64(&self.password),
                mac = m.mac,
                id = m.system_id,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            pid: 1,
            namespace: "shoal-lab-1".into(),
            redfish: "http://127.0.0.1:8000".into(),
            redfish_in_lab: "http://198.18.1.1:8000".into(),
            boot_server: "http://198.18.1.1:8080".into(),
            served: "/lab/www".into(),
            media_server: "http://127.0.0.1:40000".into(),
            username: "admin".into(),
            password: "s3cret".into(),
            machines: vec![Machine {
                name: "node-1".into(),
                system_id: "1f6bd6b6-5c0f-4b5e-9d8e-0f0a6c1d2e3f".into(),
                mac: "52:54:00:5e:01:01".into(),
                memory_mib: 2048,
                cpus: 2,
                disk_gib: 10,
                serial: "/lab/serial/node-1.log".into(),
            }],
        }
    }

    #[test]
    fn ironic_enrolls_each_machine_on_its_bmc() {
        let n = &state().ironic_nodes()["nodes"][0];
        assert_eq!(n["driver"], "redfish");
        assert_eq!(n["driver_info"]["redfish_address"], "http://127.0.0.1:8000");
        assert_eq!(
            n["driver_info"]["redfish_system_id"],
            "/redfish/v1/Systems/1f6bd6b6-5c0f-4b5e-9d8e-0f0a6c1d2e3f"
        );
        assert_eq!(n["driver_info"]["redfish_password"], "s3cret");
        assert_eq!(n["ports"][0]["address"], "52:54:00:5e:01:01");
        assert_eq!(n["properties"]["memory_mb"], 2048);
    }

    #[test]
    fn a_baremetal_host_and_its_secret_per_machine() {
        let y = state().baremetal_hosts("http://198.18.1.1:8000");
        assert!(
            y.contains("kind: BareMetalHost\nmetadata:\n  name: node-1\n"),
            "{y}"
        );
        assert!(
            y.contains("    address: \"redfish-virtualmedia+http://198.18.1.1:8000/redfish/v1/Systems/1f6bd6b6-5c0f-4b5e-9d8e-0f0a6c1d2e3f\"\n"),
            "{y}"
        );
        assert!(y.contains("  password: czNjcmV0\n"), "{y}");
        assert!(
            y.contains("    credentialsName: node-1-bmc-secret\n"),
            "{y}"
        );
        assert!(
            y.contains("  bootMACAddress: \"52:54:00:5e:01:01\"\n"),
            "{y}"
        );
    }
}
