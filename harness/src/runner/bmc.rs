//! A case's BMC: the emulator process and its flags (profile, faults,
//! TLS certificate, IPMI over LAN on a port of the case's own, in-band
//! IPMI sockets, the BMC's media cache and download rules), and the host
//! of its address.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use anyhow::{anyhow, bail, Result};

use super::options::Options;
use crate::emulator::EmulatorProcess;
use crate::scenario::HttpBoot;

/// The UDP port of case `index`'s IPMI listener (on the emulator's
/// address), beside Ironic's API port `16000 + index`.
pub(super) fn ipmi_port(index: u8) -> u16 {
    17000 + u16::from(index)
}

/// The BMC's own certificate (for 127.0.0.1, from the run's CA), written
/// into the case's `bmc-tls/`; returns that folder.
pub(super) fn bmc_certificate(dir: &Path) -> Result<std::path::PathBuf> {
    let cas = crate::tls::run_cas()?;
    let now = crate::tls::now();
    let day = 86_400;
    let server = cas
        .ca
        .server(&[Ipv4Addr::LOCALHOST.into()], now - day, now + 30 * day)?;
    let tls = dir.join("bmc-tls");
    std::fs::create_dir_all(&tls)?;
    server.write(&tls)?;
    // What a client verifies the BMC against (Ironic's ilo_verify_ca).
    std::fs::write(tls.join("run-ca.pem"), cas.ca.pem()?)?;
    Ok(tls)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn start_emulator(
    opts: &Options,
    domain: &str,
    emulator: &crate::scenario::Emulator,
    dir: &Path,
    ns: Option<&str>,
    ipmi_port: u16,
    in_band: Option<&Path>,
    tls: Option<&Path>,
) -> Result<EmulatorProcess> {
    let http_boot = emulator.http_boot;
    // Inside the lab's namespace (for Ironic there) it listens on the
    // namespace's loopback.
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(&opts.emulator);
            c
        }
        None => Command::new(&opts.emulator),
    };
    if let Some(p) = &emulator.profile {
        cmd.args(["--profile", p]);
    }
    if let Some(m) = &emulator.mockup {
        // The capture is the BMC; the one domain stands behind its system.
        cmd.arg("--mockup").arg(m);
    }
    cmd.args([
        "--libvirt-uri",
        crate::lab::SYSTEM_URI,
        "--libvirt-domain",
        domain,
        "--port",
        "0",
    ])
    // Cases run side by side on one loopback: each BMC's IPMI gets a
    // port of its own, asked for explicitly (a port taken is an error);
    // 0 when the case has no use for it. Its account is the one the
    // drivers log in with.
    .args(["--ipmi-port", &ipmi_port.to_string()]);
    if ipmi_port != 0 {
        cmd.args(["--ipmi-user", &crate::driver::ipmi_user_flag()]);
    }
    if !emulator.faults.is_empty() {
        // Its config file holds only the fault rules; errors in them stop
        // it at start-up, named in its log.
        let mut faults = toml::Table::new();
        faults.insert(
            "rules".into(),
            toml::Value::Array(
                emulator
                    .faults
                    .iter()
                    .cloned()
                    .map(toml::Value::Table)
                    .collect(),
            ),
        );
        let mut config = toml::Table::new();
        config.insert("faults".into(), toml::Value::Table(faults));
        let path = dir.join("emulator.toml");
        std::fs::write(&path, toml::to_string(&config)?)?;
        cmd.arg("--config").arg(path);
    }
    if let Some(t) = tls {
        cmd.arg("--ssl-certificate")
            .arg(t.join("server.pem"))
            .arg("--ssl-key")
            .arg(t.join("server.key"));
    }
    if let Some(sockets) = in_band {
        // The machine's side of the BMC, a socket QEMU (its own user)
        // connects to.
        cmd.arg("--ipmi-in-band-dir").arg(sockets);
    }
    cmd.args([
        "--http-boot",
        match http_boot {
            HttpBoot::Firmware => "firmware",
            HttpBoot::Vmedia => "vmedia",
        },
    ])
    .arg("--media-cache")
    .arg(dir.join("media"))
    // What the BMC downloads is served on the host's loopback
    // (`Lab::bmc_file_server`), which the emulator refuses by default.
    .args(["--media-allow-net", "127.0.0.0/8"])
    // Its events go to that server too (`checks.events`).
    .args(["--event-allow-net", "127.0.0.0/8"])
    // SHOAL_EMULATOR_LOG: the emulator's RUST_LOG, for a closer look.
    .env(
        "RUST_LOG",
        std::env::var("SHOAL_EMULATOR_LOG").unwrap_or_else(|_| "info".into()),
    );
    match &emulator.system_id {
        None => EmulatorProcess::spawn(cmd, &dir.join("emulator.log")),
        Some(_) => {
            // The main service keeps no system; the one endpoint is the
            // machine's BMC, on a port of its own beside it.
            cmd.args(["--endpoint-per-system", "127.0.0.1:0"]);
            let mut e = EmulatorProcess::spawn_endpoints(cmd, &dir.join("emulator.log"), 1)?;
            e.url = e
                .endpoints
                .last()
                .cloned()
                .ok_or_else(|| anyhow!("the emulator announced no endpoint"))?;
            Ok(e)
        }
    }
}

/// The host of a base URL (`https://127.0.0.1:40123` → `127.0.0.1`).
pub(super) fn url_host(url: &str) -> Result<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    if host.is_empty() {
        bail!("no host in the emulator's URL {url:?}");
    }
    Ok(host.to_string())
}

#[cfg(test)]
mod tests {
    use super::url_host;

    #[test]
    fn the_ipmi_host_is_the_redfish_urls() {
        assert_eq!(url_host("https://127.0.0.1:40123").unwrap(), "127.0.0.1");
        assert_eq!(
            url_host("http://[fd00::1]:8000/redfish").unwrap(),
            "fd00::1"
        );
        assert_eq!(url_host("http://bmc.example").unwrap(), "bmc.example");
        assert!(url_host("http://:80").is_err());
    }
}
