//! A case's preparation, everything before the drive: its folder and boot
//! images (built without the lab), its network's DHCP profile (the
//! scenario's, Ironic's DHCP provider folders, a petitboot machine's
//! options and fixed address), the petitboot configuration and patterns
//! rendered for the machine, the network, boot servers and domain in the
//! lab, and the case's emulator.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::bmc::{bmc_certificate, ipmi_port, start_emulator, url_host};
use super::machine::{copy_artifacts, define_machine, domain_uuid, Machine};
use super::options::Options;
use crate::driver::Bmc;
use crate::emulator::EmulatorProcess;
use crate::ironic::Layout;
use crate::lab::{Lab, Net, NetSpec};
use crate::scenario::{
    DeployInterface, Dhcp, Driver, Enroll, Https, IronicDriver, Petitboot, Protocol, Scenario,
    ServerCertificate, Then,
};

/// The host number of a petitboot machine's fixed address in its /24.
const PETITBOOT_HOST: u8 = 50;

/// A case ready to be driven: its machine defined (not started), its
/// servers and emulator up.
pub(super) struct Prepared {
    /// The artifact folder.
    pub dir: PathBuf,
    pub domain: String,
    pub serial: PathBuf,
    pub mac: String,
    /// The lab's namespace.
    pub ns: String,
    /// Where the case's Ironic keeps its files (the `ironic` driver).
    pub layout: Option<Layout>,
    pub patterns: Patterns,
    pub net: Net,
    /// The BMC's own file server (empty for Ironic, which hands out its own).
    pub bmc_url: String,
    /// `[https]`: the CA the driver enrolls in `Boot.Certificates` (PEM).
    pub enroll: Option<String>,
    /// The case's emulator, in front of the domain (`bmc.system`).
    pub bmc: Bmc,
    /// The UDP port of the emulator's IPMI listener, on `bmc.url`'s host
    /// (0: IPMI over LAN is off for this case).
    pub ipmi_port: u16,
    /// The scenario's timeout, for each wait on the serial port.
    pub limit: Duration,
    /// Held, not read: the emulator stops when the case is dropped (after
    /// the drive's Ironic, which talks to it).
    _emulator: EmulatorProcess,
}

/// The patterns of a case: the scenario's, rendered for the machine where
/// it is a petitboot one.
pub(super) struct Patterns {
    pub serial: Vec<String>,
    pub requests: Vec<String>,
    pub failure: Vec<String>,
    pub then: Option<Then>,
}

/// The libvirt domain of case number `index` of scenario `name`.
pub(super) fn domain_name(index: u8, name: &str) -> String {
    format!("shoal-{index}-{name}")
}

/// What case `index` of a scenario is called: every name derives from
/// the number (and the scenario's name) alone.
struct Names {
    index: u8,
    /// The host's address on the case's network, 198.18.index.1.
    host: Ipv4Addr,
    domain: String,
    uuid: String,
    mac: String,
    serial: PathBuf,
}

impl Names {
    fn new(index: u8, name: &str, dir: &Path) -> Names {
        let domain = domain_name(index, name);
        Names {
            index,
            host: Ipv4Addr::new(198, 18, index, 1),
            uuid: domain_uuid(&domain),
            domain,
            mac: format!("52:54:00:5e:{index:02x}:01"),
            serial: dir.join("serial.log"),
        }
    }
}

impl Patterns {
    /// The scenario's patterns, as yet unrendered.
    fn of(s: &Scenario) -> Patterns {
        Patterns {
            serial: s.checks.serial.clone(),
            requests: s.checks.requests.clone(),
            failure: s.checks.failure.clone(),
            then: s.then.clone(),
        }
    }
}

/// Prepares case `index` (network 198.18.index.0/24) of `s` with `driver`
/// in `dir`, which it empties first.
pub(super) fn prepare(
    lab: &Mutex<Lab>,
    opts: &Options,
    s: &Scenario,
    driver: Driver,
    index: u8,
    dir: &Path,
) -> Result<Prepared> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("www"))?;
    // Images first: building them needs no lab.
    copy_artifacts(s, &dir.join("www"))?;
    if s.machine.stays_on {
        std::fs::write(dir.join("www/stay-on"), "stay on\n")?;
    }
    if s.machine.waits_for_eject {
        std::fs::write(dir.join("www/wait-eject"), "wait for the CD's eject\n")?;
    }
    let names = Names::new(index, &s.name, dir);
    let mut spec = net_spec(s, names.host);
    spec.dnsmasq_log = Some(std::fs::canonicalize(dir)?.join("dnsmasq.log"));
    let ironic = driver == Driver::Ironic;
    let layout = ironic
        .then(|| ironic_layout(s, index, names.host, dir))
        .transpose()?;
    if let Some(l) = &layout {
        // The network's dnsmasq watches these folders from its start.
        l.create_dhcp_dirs()?;
        spec.dnsmasq_options.extend(l.dnsmasq_options());
        spec.tftp_root = Some(l.www.clone());
    }
    let mut patterns = Patterns::of(s);
    if let Some(p) = &s.petitboot {
        petitboot_machine(s, p, &names, dir, &mut spec, &mut patterns)?;
    }
    let tls = s
        .https
        .as_ref()
        .map(|h| https_server(h, index, dir))
        .transpose()?;
    let enroll = enrolled_ca(s)?;
    let (net, bmc_url) = network_and_machine(lab, s, &names, &spec, dir, tls, ironic)?;
    let id = lab
        .lock()
        .map_err(|_| anyhow!("lab lock"))?
        .conn()?
        .lookup_domain_by_name(&names.domain)?
        .uuid_string()?;
    let ns = lab.lock().map_err(|_| anyhow!("lab lock"))?.ns.clone();
    // IPMI over LAN for the cases whose driver speaks it (Ironic's ipmi
    // nodes and ipmitool-socat consoles); the others have it off, so that
    // a UDP port taken on this host cannot fail a Redfish case.
    let lan = s
        .ironic
        .as_ref()
        .is_some_and(|n| n.driver == IronicDriver::Ipmi || !n.console.is_empty())
        || s.drivers.iter().any(|d| d.ipmi());
    let ipmi_port = if lan { ipmi_port(index) } else { 0 };
    let sockets = match s.in_band_ipmi() {
        true => Some(
            lab.lock()
                .map_err(|_| anyhow!("lab lock"))?
                .socket_dir(index, "ipmi")?,
        ),
        false => None,
    };
    // proliantutils speaks HTTPS only: its BMC serves a certificate from
    // the run's CA (the harness's driver does not verify it, as Ironic's
    // iLO drivers did not without `ilo_verify_ca`; Ironic's ilo5 cases
    // verify it against the run's CA).
    let ilo5 = s
        .ironic
        .as_ref()
        .is_some_and(|n| n.driver == IronicDriver::Ilo5);
    let bmc_tls = (driver == Driver::Proliantutils || ilo5)
        .then(|| bmc_certificate(dir))
        .transpose()?;
    let emulator = start_emulator(
        opts,
        &names.domain,
        &s.emulator,
        dir,
        ironic.then_some(&ns),
        ipmi_port,
        sockets.as_deref(),
        bmc_tls.as_deref(),
    )?;
    // The IPMI listener shares the Redfish address.
    let ipmi = (ipmi_port != 0)
        .then(|| url_host(&emulator.url).map(|h| (h, ipmi_port)))
        .transpose()?;
    Ok(Prepared {
        dir: dir.to_path_buf(),
        bmc: Bmc {
            url: emulator.url.clone(),
            system: s
                .emulator
                .system_id
                .clone()
                .or_else(|| s.emulator.mockup_system.clone())
                .unwrap_or(id),
            python: opts.python.clone(),
            ipmi,
        },
        ipmi_port,
        domain: names.domain,
        serial: names.serial,
        mac: names.mac,
        ns,
        layout,
        patterns,
        net,
        bmc_url,
        enroll,
        limit: Duration::from_secs(s.timeout_secs),
        _emulator: emulator,
    })
}

/// A petitboot machine's side of the case: a fixed address, so that the
/// configuration can be named after it (the pxelinux IP probe); the
/// configuration and its DHCP options; the patterns rendered for it.
fn petitboot_machine(
    s: &Scenario,
    p: &Petitboot,
    names: &Names,
    dir: &Path,
    spec: &mut NetSpec,
    patterns: &mut Patterns,
) -> Result<()> {
    let target = crate::petitboot::Target {
        uuid: &names.uuid,
        mac: &names.mac,
        ip: Ipv4Addr::new(198, 18, names.index, PETITBOOT_HOST),
        server: if s.network.ipv6_only {
            crate::lab::host6(names.index).into()
        } else {
            names.host.into()
        },
    };
    let www = std::fs::canonicalize(dir.join("www"))?;
    let artifacts: Vec<&str> = s.artifacts.iter().map(|a| a.name.as_str()).collect();
    spec.dnsmasq_options
        .extend(crate::petitboot::prepare(p, &target, &www, &artifacts)?);
    for c in patterns
        .serial
        .iter_mut()
        .chain(patterns.requests.iter_mut())
        .chain(patterns.failure.iter_mut())
        .chain(
            patterns
                .then
                .iter_mut()
                .flat_map(|t| t.serial.iter_mut().chain(t.requests_absent.iter_mut())),
        )
    {
        *c = crate::petitboot::render(c, p, &target)?;
    }
    spec.hosts.push((names.mac.clone(), PETITBOOT_HOST));
    if p.protocol == Protocol::Tftp {
        spec.tftp_root = Some(www);
    }
    Ok(())
}

/// `[https]`: the CA the driver enrolls in `Boot.Certificates` (PEM).
fn enrolled_ca(s: &Scenario) -> Result<Option<String>> {
    Ok(match s.https.as_ref().map(|h| h.enroll) {
        Some(Enroll::RunCa) => Some(crate::tls::run_cas()?.ca.pem()?),
        Some(Enroll::OtherCa) => Some(crate::tls::run_cas()?.other.pem()?),
        Some(Enroll::Intermediate) => Some(crate::tls::run_cas()?.intermediate.pem()?),
        Some(Enroll::None) | None => None,
    })
}

/// The case's network, its boot servers (HTTPS with `tls`) and its
/// machine, defined, in the lab; the network and the BMC's own file
/// server's URL.
fn network_and_machine(
    lab: &Mutex<Lab>,
    s: &Scenario,
    names: &Names,
    spec: &NetSpec,
    dir: &Path,
    tls: Option<Arc<openssl::ssl::SslAcceptor>>,
    ironic: bool,
) -> Result<(Net, String)> {
    let mut lab = lab.lock().map_err(|_| anyhow!("lab lock"))?;
    let net = lab.network(names.index, spec)?;
    lab.file_server(&net, &dir.join("www"), &dir.join("http.log"), tls)?;
    // What the BMC itself downloads; Ironic hands it http_url instead.
    let bmc_url = match ironic {
        true => String::new(),
        false => lab.bmc_file_server(&dir.join("www"), &dir.join("bmc-http.log"))?,
    };
    let machine = Machine {
        domain: &names.domain,
        uuid: &names.uuid,
        net: &net,
        mac: &names.mac,
        serial: &names.serial,
    };
    define_machine(&mut lab, s, &machine, dir)?;
    Ok((net, bmc_url))
}

/// The case's HTTPS acceptor: a server certificate from the run's CA for
/// the network's host addresses (or another address, or expired, as the
/// scenario says), written with the CAs into the case folder (`tls/`).
fn https_server(h: &Https, index: u8, dir: &Path) -> Result<Arc<openssl::ssl::SslAcceptor>> {
    let cas = crate::tls::run_cas()?;
    let now = crate::tls::now();
    let day = 86_400;
    let here: Vec<std::net::IpAddr> = vec![
        Ipv4Addr::new(198, 18, index, 1).into(),
        crate::lab::host6(index).into(),
    ];
    let elsewhere = vec![Ipv4Addr::new(192, 0, 2, 1).into()];
    let server = match h.certificate {
        ServerCertificate::Valid => cas.ca.server(&here, now - day, now + 30 * day)?,
        ServerCertificate::WrongHost => cas.ca.server(&elsewhere, now - day, now + 30 * day)?,
        ServerCertificate::Expired => cas.ca.server(&here, now - 30 * day, now - day)?,
        ServerCertificate::ViaIntermediate => {
            cas.intermediate.server(&here, now - day, now + 30 * day)?
        }
    };
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls)?;
    server.write(&tls)?;
    std::fs::write(tls.join("run-ca.pem"), cas.ca.pem()?)?;
    std::fs::write(tls.join("other-ca.pem"), cas.other.pem()?)?;
    std::fs::write(tls.join("intermediate-ca.pem"), cas.intermediate.pem()?)?;
    Ok(Arc::new(server.acceptor()?))
}

/// Where the case's Ironic keeps its files and how it names the boot
/// server; on an IPv6-only network Ironic's URLs name the host's IPv6
/// address.
fn ironic_layout(s: &Scenario, index: u8, host: Ipv4Addr, dir: &Path) -> Result<Layout> {
    let case = std::fs::canonicalize(dir)?;
    let (server, authority) = if s.network.ipv6_only {
        let v6 = crate::lab::host6(index);
        (v6.to_string(), format!("[{v6}]"))
    } else {
        (host.to_string(), host.to_string())
    };
    Ok(Layout {
        dir: case.join("ironic"),
        www: case.join("www"),
        http_url: match s.https {
            Some(_) => format!("https://{authority}:{}", crate::lab::BOOT_TLS_PORT),
            None => format!("http://{authority}:{}", crate::lab::BOOT_PORT),
        },
        // Written by `https_server` before Ironic starts.
        verify_ca: s
            .https
            .as_ref()
            .map(|_| case.join("tls").join("run-ca.pem")),
        tftp_server: server,
        ilo: s.ironic.as_ref().is_some_and(|n| n.driver.ironic35()),
        basic_auth: None,
        power_sync_secs: None,
        api_port: 16000 + u16::from(index),
        console_port: 18000 + u16::from(index),
        agent: s
            .ironic
            .as_ref()
            .filter(|n| n.deploy_interface == DeployInterface::Direct)
            .map(|n| crate::ironic::Agent {
                // Where nothing listens, for an agent that must not reach it.
                api_url: match n.agent_reaches_api {
                    true => format!("http://{authority}:{}", 16000 + u16::from(index)),
                    false => format!("http://{authority}:{}", 19000 + u16::from(index)),
                },
                cleaning: n.cleaning,
                callback_timeout: n.callback_timeout_secs.unwrap_or(600),
            }),
    })
}

/// The DHCP profile the scenario gives its network.
fn net_spec(s: &Scenario, net_host: Ipv4Addr) -> NetSpec {
    let url = |f: &str| match s.https {
        Some(_) => format!("https://{net_host}:{}/{f}", crate::lab::BOOT_TLS_PORT),
        None => format!("http://{net_host}:{}/{f}", crate::lab::BOOT_PORT),
    };
    let mut o = Vec::new();
    if s.network.ipv6_only {
        // DHCPv6: the bootfile URL (option 59) and the HTTPClient vendor
        // class (option 16). OVMF takes an ADVERTISE as an HTTP offer only
        // when option 16 has "HTTPClient" at offset 6, after the 4-byte
        // enterprise number and the 2-byte length of the first class item
        // (HttpBootDxe, HttpBootParseDhcp6Packet); it does not check the
        // enterprise number. dnsmasq writes an option6:16 value as a list of
        // items, each behind a 2-byte length, and has no way to write the
        // raw enterprise number: the two-byte item "EN" stands in for it
        // (a captured ADVERTISE showed a hex value sent as one text item).
        let index = net_host.octets()[2];
        if let (Dhcp::Httpclient, Some(f)) = (s.network.dhcp, &s.network.bootfile) {
            let (scheme, port) = match s.https {
                Some(_) => ("https", crate::lab::BOOT_TLS_PORT),
                None => ("http", crate::lab::BOOT_PORT),
            };
            o.push(format!(
                "dhcp-option=option6:bootfile-url,{scheme}://[{}]:{port}/{f}",
                crate::lab::host6(index),
            ));
            o.push("dhcp-option-force=option6:16,EN,HTTPClient".into());
        }
        return NetSpec {
            dnsmasq_options: o,
            ipv6: true,
            no_dhcp4: true,
            ..NetSpec::default()
        };
    }
    match (s.network.dhcp, &s.network.bootfile) {
        (Dhcp::Httpclient, Some(f)) => {
            o.push("dhcp-vendorclass=set:efihttp,HTTPClient".to_string());
            o.push("dhcp-option-force=tag:efihttp,60,HTTPClient".to_string());
            o.push(format!("dhcp-boot=tag:efihttp,{}", url(f)));
        }
        (Dhcp::HttpclientWithoutVendorClass, Some(f)) => {
            o.push("dhcp-vendorclass=set:efihttp,HTTPClient".to_string());
            o.push(format!("dhcp-boot=tag:efihttp,{}", url(f)));
        }
        _ => {}
    }
    NetSpec {
        dnsmasq_options: o,
        ..NetSpec::default()
    }
}
