//! The lab itself (cargo feature `lab`): the namespace with its own
//! libvirtd and virtlogd, the networks, boot file servers and domains,
//! over libvirt's C library; all stopped on drop.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use virt::connect::Connect;

use super::{host6, missing, Net, NetSpec, BOOT_PORT, BOOT_TLS_PORT, SYSTEM_URI};
use crate::netns;

const DNSMASQ_NS: &str = "http://libvirt.org/schemas/network/dnsmasq/1.0";

/// A ppc64le machine for `Lab::define_ppc64le`: pseries or powernv.
pub struct Ppc64le<'a> {
    pub platform: crate::scenario::Platform,
    pub name: &'a str,
    pub uuid: &'a str,
    pub net: &'a Net,
    pub mac: &'a str,
    pub memory_mib: u64,
    pub cpus: u32,
    /// Where its console (hvc0; on powernv also skiboot's) writes.
    pub serial: &'a Path,
    /// The netboot image it boots as its firmware.
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    /// A raw disk, as a virtio disk.
    pub disk: Option<&'a Path>,
}

/// A UEFI x86_64 machine for `Lab::define_uefi`.
pub struct Uefi<'a> {
    pub name: &'a str,
    pub net: &'a Net,
    pub mac: &'a str,
    pub memory_mib: u64,
    pub cpus: u32,
    /// Where its serial port's log goes.
    pub serial: &'a Path,
    /// A CA list for OVMF's fw_cfg file `etc/edk2/https/cacerts`.
    pub https_cacerts: Option<&'a Path>,
    /// A qcow2 file, as a virtio disk.
    pub disk: Option<&'a Path>,
}

pub struct Lab {
    pub ns: String,
    dir: PathBuf,
    daemons: Vec<Child>,
    conn: Option<Connect>,
    networks: Vec<String>,
    domains: Vec<String>,
    servers: Vec<tokio::task::JoinHandle<()>>,
    /// NICs the lab wires itself (powernv machines), by domain.
    wires: Vec<(String, super::wire::Wire)>,
}

impl Lab {
    /// Starts the namespace and the daemons; their logs go to `dir`.
    pub fn start(dir: &Path) -> Result<Lab> {
        let gone = missing();
        if !gone.is_empty() {
            bail!("this host cannot run VMs; missing: {}", gone.join(", "));
        }
        if Path::new("/run/libvirt/libvirt-sock").exists()
            && Connect::open(Some(SYSTEM_URI)).is_ok()
        {
            bail!("a libvirtd already serves {SYSTEM_URI}; the lab needs its own (stop the other one)");
        }
        std::fs::create_dir_all(dir)?;
        // Errors come back as values; libvirt need not also print them.
        virt::error::clear_error_callback();
        let ns = format!("shoal-lab-{}", std::process::id());
        netns::create(&ns)?;
        let mut lab = Lab {
            ns: ns.clone(),
            dir: dir.to_path_buf(),
            daemons: Vec::new(),
            conn: None,
            networks: Vec::new(),
            domains: Vec::new(),
            servers: Vec::new(),
            wires: Vec::new(),
        };
        for (daemon, log) in [
            ("/usr/sbin/virtlogd", "virtlogd.log"),
            ("/usr/sbin/libvirtd", "libvirtd.log"),
        ] {
            let log = std::fs::File::create(dir.join(log))?;
            let child = Command::new("ip")
                .args(["netns", "exec", &ns, daemon])
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("starting {daemon}"))?;
            lab.daemons.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        lab.conn = loop {
            if let Ok(c) = Connect::open(Some(SYSTEM_URI)) {
                break Some(c);
            }
            if Instant::now() > deadline {
                bail!(
                    "libvirtd did not come up; see {}",
                    dir.join("libvirtd.log").display()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        Ok(lab)
    }

    /// The lab's libvirt connection; gone once the lab is stopped (by a
    /// signal while cases still run).
    pub fn conn(&self) -> Result<&Connect> {
        self.conn.as_ref().context("the lab is stopped")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A short folder of case `index`'s own for Unix sockets (the BMC's
    /// in-band side, a NIC's wire), `/run/shoal-lab-PID/N`: a socket's
    /// path must stay under 108 bytes, which one under a deep artifact
    /// folder can pass. Readable by QEMU's user; gone with the lab. `sub`:
    /// a folder in it (created), or "" for the case's folder itself.
    pub fn socket_dir(&self, index: u8, sub: &str) -> Result<PathBuf> {
        let case = Path::new("/run").join(&self.ns).join(index.to_string());
        let d = case.join(sub);
        std::fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
        use std::os::unix::fs::PermissionsExt;
        for p in [d.as_path(), &case, case.parent().unwrap_or(&case)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
        }
        Ok(d)
    }

    /// Creates isolated network number `index` (1..=254).
    pub fn network(&mut self, index: u8, spec: &NetSpec) -> Result<Net> {
        let name = format!("shoal-{}-{index}", std::process::id() % 100_000);
        let bridge = format!("shoalbr{index}");
        let host = Ipv4Addr::new(198, 18, index, 1);
        let mut opts = String::new();
        let mut options = spec.dnsmasq_options.clone();
        if let Some(log) = &spec.dnsmasq_log {
            options.push("log-dhcp".into());
            options.push(format!("log-facility={}", log.display()));
        }
        if !options.is_empty() {
            opts.push_str("<dnsmasq:options>");
            for o in &options {
                opts.push_str(&format!("<dnsmasq:option value=\"{}\"/>", xml_escape(o)));
            }
            opts.push_str("</dnsmasq:options>");
        }
        let host6 = spec.ipv6.then(|| host6(index).to_string());
        let v6 = host6
            .as_ref()
            .map(|h| format!("<ip family='ipv6' address='{h}' prefix='64'><dhcp><range start='fd00:5e:{index:x}::100' end='fd00:5e:{index:x}::1ff'/></dhcp></ip>"))
            .unwrap_or_default();
        let dhcp4 = if spec.no_dhcp4 {
            String::new()
        } else {
            let hosts: String = spec
                .hosts
                .iter()
                .map(|(mac, n)| format!("<host mac='{mac}' ip='198.18.{index}.{n}'/>"))
                .collect();
            format!(
                "<dhcp><range start='198.18.{index}.100' end='198.18.{index}.200'/>{hosts}</dhcp>"
            )
        };
        let tftp = spec
            .tftp_root
            .as_ref()
            .map(|r| format!("<tftp root='{}'/>", xml_escape(&r.display().to_string())))
            .unwrap_or_default();
        let xml = format!(
            "<network xmlns:dnsmasq='{DNSMASQ_NS}'><name>{name}</name><bridge name='{bridge}' stp='off'/>\
             <ip address='{host}' netmask='255.255.255.0'>{tftp}{dhcp4}</ip>{v6}{opts}</network>"
        );
        std::fs::write(self.dir.join(format!("{name}.xml")), &xml)?;
        self.conn()?
            .create_network_xml(&xml)
            .with_context(|| format!("network {name}"))?;
        self.networks.push(name.clone());
        Ok(Net {
            name,
            index,
            host,
            host6,
        })
    }

    /// Serves `root` on the network's host address (inside the namespace),
    /// logging requests to `log`: HTTP on `BOOT_PORT`, and with `tls` HTTPS
    /// on `BOOT_TLS_PORT` too (its own log, `https.log` beside `log`).
    /// Needs a tokio runtime.
    pub fn file_server(
        &mut self,
        net: &Net,
        root: &Path,
        log: &Path,
        tls: Option<Arc<openssl::ssl::SslAcceptor>>,
    ) -> Result<()> {
        let mut ports = vec![(BOOT_PORT, None)];
        if let Some(t) = tls {
            ports.push((BOOT_TLS_PORT, Some(t)));
        }
        for (port, tls) in ports {
            let log = match tls {
                Some(_) => log.with_file_name("https.log"),
                None => log.to_path_buf(),
            };
            let addr = SocketAddr::new(net.host.into(), port);
            let listener = netns::bind_in(&self.ns, addr)?;
            self.serve_on(listener, root, &log, tls.clone())?;
            if let Some(h6) = &net.host6 {
                // The address is usable once duplicate address detection is done.
                let addr: SocketAddr = format!("[{h6}]:{port}").parse()?;
                let mut tries = 0;
                let listener = loop {
                    match netns::bind_in(&self.ns, addr) {
                        Ok(l) => break l,
                        Err(_) if tries < 40 => {
                            tries += 1;
                            std::thread::sleep(Duration::from_millis(250));
                        }
                        Err(e) => return Err(e),
                    }
                };
                self.serve_on(listener, root, &log, tls)?;
            }
        }
        Ok(())
    }

    /// Serves `root` on a loopback port of the host (for what the BMC itself
    /// downloads); returns the base URL.
    pub fn bmc_file_server(&mut self, root: &Path, log: &Path) -> Result<String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}", listener.local_addr()?);
        self.serve_on(listener, root, log, None)?;
        Ok(url)
    }

    fn serve_on(
        &mut self,
        listener: std::net::TcpListener,
        root: &Path,
        log: &Path,
        tls: Option<Arc<openssl::ssl::SslAcceptor>>,
    ) -> Result<()> {
        let app = crate::fileserver::router(root, log)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let log = log.to_path_buf();
        self.servers.push(tokio::spawn(async move {
            let _ = match tls {
                Some(t) => crate::fileserver::serve_tls(listener, app, t, &log).await,
                None => crate::fileserver::serve(listener, app).await,
            };
        }));
        Ok(())
    }

    /// Defines a UEFI x86_64 domain (OVMF, one NIC on `net` without option
    /// ROM) whose serial port writes `serial`. Returns its UUID. The port
    /// is a pty with a log, as a real machine's is a line the BMC reads:
    /// libvirt streams pty consoles only, and the BMC's Serial-over-LAN
    /// takes the console through that stream while the log keeps all of
    /// it (from each start: `append="off"`, as a file port is opened).
    /// With `disk` (a qcow2 file), a virtio disk, and the log keeps every
    /// start: the machine boots more than once (an agent, then the
    /// instance it wrote), and each boot's lines stay in order after the
    /// last one's; the file is emptied here, once.
    pub fn define_uefi(&mut self, m: &Uefi) -> Result<String> {
        let Uefi {
            name,
            net,
            mac,
            memory_mib,
            cpus,
            serial,
            https_cacerts,
            disk,
        } = *m;
        // On an IPv6 network the firmware waits at its boot menu (as a real
        // machine spends that in POST) with the NIC's network stack already
        // connected: OVMF 2022.11's HttpBootDxe sends its first DHCPv6
        // Solicit without waiting for the NIC's link-local address to pass
        // duplicate address detection, and fails with EFI_NO_MAPPING
        // ("Unexpected network error", nothing on the wire) when a boot
        // option starts HTTP over IPv6 right after the stack came up (edk2
        // waits since 11f1d28, stable202508).
        let menu = if net.host6.is_some() {
            r#"<bootmenu enable="yes" timeout="3000"/>"#
        } else {
            ""
        };
        // OVMF's other source of HTTPS CAs: the fw_cfg file
        // etc/edk2/https/cacerts (as `p11-kit extract --format=edk2-cacerts`
        // writes it), which libvirt can pass only as QEMU arguments.
        let fw_cfg = match https_cacerts {
            Some(p) => format!(
                r#"<qemu:commandline xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0"><qemu:arg value="-fw_cfg"/><qemu:arg value="name=etc/edk2/https/cacerts,file={}"/></qemu:commandline>"#,
                p.display()
            ),
            None => String::new(),
        };
        let (disk, append) = match disk {
            Some(p) => {
                std::fs::write(serial, "")?;
                (
                    format!(
                        r#"
    <disk type="file" device="disk"><driver name="qemu" type="qcow2" discard="unmap"/><source file="{}"/><target dev="vda" bus="virtio"/></disk>"#,
                        xml_escape(&p.display().to_string())
                    ),
                    "on",
                )
            }
            None => (String::new(), "off"),
        };
        let xml = format!(
            r#"<domain type="qemu"><name>{name}</name><memory unit="MiB">{memory_mib}</memory><vcpu>{cpus}</vcpu>
  <os><type arch="x86_64" machine="q35">hvm</type>
    <loader readonly="yes" secure="no" type="pflash">/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
    <nvram template="/usr/share/OVMF/OVMF_VARS_4M.fd">/var/lib/libvirt/qemu/nvram/{name}_VARS.fd</nvram>{menu}</os>
  <features><acpi/></features><on_poweroff>destroy</on_poweroff>
  <devices>{disk}
    <interface type="network"><source network="{net}"/><model type="virtio"/><rom enabled="no"/><mac address="{mac}"/></interface>
    <serial type="pty"><log file="{serial}" append="{append}"/><target port="0"/></serial>
    <console type="pty"><target type="serial" port="0"/></console>
  </devices>{fw_cfg}</domain>"#,
            net = net.name,
            serial = serial.display()
        );
        self.define(name, &xml)
    }

    /// Defines a ppc64le domain whose firmware is the petitboot-like
    /// netboot image (`kernel` + `initrd`, booted directly, as OpenPOWER
    /// machines run petitboot from flash), its console a pty with a log in
    /// `serial` (as x86's: the BMC's Serial-over-LAN takes the console
    /// stream while the log keeps all of it), and `disk` (raw) as a virtio
    /// disk when given.
    /// - pseries: one spapr-vlan NIC on `net`, the console on hvc0.
    /// - powernv (POWER9): QEMU's skiboot as its OPAL firmware (QEMU
    ///   loads it by itself), skiboot's console on the LPC UART and the
    ///   kernel's through OPAL (hvc0) to the same UART, a virtio NIC on
    ///   `net`. Its BMC device (`ipmi-bmc-extern` with a BT interface) is
    ///   the emulator's to add as it starts the domain.
    pub fn define_ppc64le(&mut self, m: &Ppc64le) -> Result<String> {
        let Ppc64le {
            platform,
            name,
            uuid,
            net,
            mac,
            memory_mib,
            cpus,
            serial,
            kernel,
            initrd,
            disk,
        } = *m;
        let disk = disk
            .map(|p| {
                format!(
                    r#"<disk type="file" device="disk"><driver name="qemu" type="raw"/><source file="{}"/><target dev="vda" bus="virtio"/></disk>"#,
                    xml_escape(&p.display().to_string())
                )
            })
            .unwrap_or_default();
        // No USB controller and no memory balloon, which libvirt adds by
        // default: a netboot machine uses neither. The kernel's messages
        // (no `quiet`) show where a boot stops.
        let (machine, devices, qemu) = match platform {
            crate::scenario::Platform::Pseries => (
                "pseries",
                format!(
                    r#"{disk}
    <interface type="network"><source network="{net}"/><model type="spapr-vlan"/><mac address="{mac}"/></interface>"#,
                    net = net.name,
                ),
                String::new(),
            ),
            crate::scenario::Platform::Powernv => (
                "powernv9",
                String::new(),
                self.powernv_pci(name, net, mac, m.disk)?,
            ),
        };
        let xml = format!(
            r#"<domain type="qemu"{ns}><name>{name}</name><uuid>{uuid}</uuid><memory unit="MiB">{memory_mib}</memory><vcpu>{cpus}</vcpu>
  <os><type arch="ppc64le" machine="{machine}">hvm</type>
    <kernel>{kernel}</kernel><initrd>{initrd}</initrd><cmdline>{cmdline}</cmdline></os>
  <on_poweroff>destroy</on_poweroff>
  <devices>{devices}
    <serial type="pty"><log file="{serial}" append="off"/><target port="0"/></serial>
    <console type="pty"><target type="serial" port="0"/></console>
    <controller type="usb" model="none"/><memballoon model="none"/>
  </devices>{qemu}</domain>"#,
            ns = if qemu.is_empty() {
                ""
            } else {
                r#" xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0""#
            },
            serial = serial.display(),
            kernel = kernel.display(),
            initrd = initrd.display(),
            cmdline = crate::images::PPC64LE_NETBOOT_CMDLINE,
        );
        self.define(name, &xml)
    }

    /// A powernv machine's PCI devices, through the QEMU command line
    /// (libvirt knows no PHB of powernv, and `-nodefaults` leaves it none):
    /// a PHB4 with its root port per device, a virtio NIC on `net` (wired by
    /// a tap, `wire::Wire`) and the disk (read-only) as virtio-blk.
    fn powernv_pci(
        &mut self,
        domain: &str,
        net: &Net,
        mac: &str,
        disk: Option<&Path>,
    ) -> Result<String> {
        let socket = self.socket_dir(net.index, "")?.join("nic.sock");
        self.wires.retain(|(d, _)| d != domain);
        let wire = super::wire::Wire::start(
            &self.ns,
            &format!("shoaltap{}", net.index),
            &format!("shoalbr{}", net.index),
            &socket,
        )?;
        self.wires.push((domain.to_string(), wire));
        let comma = |p: &Path| p.display().to_string().replace(',', ",,");
        let mut args = vec![
            "-device".to_string(),
            "pnv-phb,chip-id=0,index=0,id=shoal-phb0".into(),
            "-device".into(),
            "pnv-phb-root-port,id=shoal-rp0,bus=shoal-phb0".into(),
            "-netdev".into(),
            format!(
                "stream,id=shoal-net0,server=off,addr.type=unix,addr.path={}",
                comma(&socket)
            ),
            "-device".into(),
            format!("virtio-net-pci,netdev=shoal-net0,mac={mac},bus=shoal-rp0"),
        ];
        if let Some(d) = disk {
            args.extend([
                "-device".to_string(),
                "pnv-phb,chip-id=0,index=1,id=shoal-phb1".into(),
                "-device".into(),
                "pnv-phb-root-port,id=shoal-rp1,bus=shoal-phb1".into(),
                "-drive".into(),
                format!(
                    "file={},format=raw,if=none,id=shoal-disk0,readonly=on",
                    comma(d)
                ),
                "-device".into(),
                "virtio-blk-pci,drive=shoal-disk0,bus=shoal-rp1".into(),
            ]);
        }
        let args: String = args
            .iter()
            .map(|a| format!(r#"<qemu:arg value="{}"/>"#, xml_escape(a)))
            .collect();
        Ok(format!("\n  <qemu:commandline>{args}</qemu:commandline>"))
    }

    /// Defines domain `name` from `xml` (kept in the lab folder); its UUID.
    fn define(&mut self, name: &str, xml: &str) -> Result<String> {
        std::fs::write(self.dir.join(format!("{name}.domain.xml")), xml)?;
        // A run that was killed before its lab stopped leaves its domains
        // defined; this lab's names are its own, so such a leftover goes.
        if !self.domains.iter().any(|d| d == name) {
            if let Ok(old) = self.conn()?.lookup_domain_by_name(name) {
                eprintln!("lab: removing domain {name}, which a killed run left behind");
                if old.is_active().unwrap_or(false) {
                    let _ = old.destroy();
                }
                let _ = old.undefine_flags(virt::sys::VIR_DOMAIN_UNDEFINE_NVRAM);
            }
        }
        let d = self
            .conn()?
            .define_domain_xml(xml)
            .with_context(|| format!("define {name}"))?;
        self.domains.push(name.to_string());
        Ok(d.uuid_string()?)
    }

    /// Stops domain `name` if it runs (it stays defined, for its XML), and
    /// its wired NIC.
    pub fn stop_domain(&mut self, name: &str) {
        self.wires.retain(|(d, _)| d != name);
        if let Ok(d) = self.conn().and_then(|c| Ok(c.lookup_domain_by_name(name)?)) {
            if d.is_active().unwrap_or(false) {
                let _ = d.destroy();
            }
        }
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.conn().is_ok_and(|c| {
            c.lookup_domain_by_name(name)
                .and_then(|d| d.is_active())
                .unwrap_or(false)
        })
    }

    /// The domain's current definition, for artifact folders.
    pub fn domain_xml(&self, name: &str) -> Option<String> {
        self.conn()
            .ok()?
            .lookup_domain_by_name(name)
            .and_then(|d| d.xml_desc(0))
            .ok()
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Lab {
    /// Stops everything the lab started; safe to call twice (Ctrl-C, then drop).
    pub fn stop(&mut self) {
        for s in self.servers.drain(..) {
            s.abort();
        }
        self.wires.clear();
        if let Some(c) = &self.conn {
            for name in std::mem::take(&mut self.domains) {
                if let Ok(d) = c.lookup_domain_by_name(&name) {
                    if d.is_active().unwrap_or(false) {
                        let _ = d.destroy();
                    }
                    let _ = d.undefine_flags(virt::sys::VIR_DOMAIN_UNDEFINE_NVRAM);
                }
            }
            for n in std::mem::take(&mut self.networks) {
                if let Ok(n) = c.lookup_network_by_name(&n) {
                    let _ = n.destroy();
                }
            }
        }
        drop(self.conn.take());
        for mut d in self.daemons.drain(..).rev() {
            let _ = d.kill();
            let _ = d.wait();
        }
        netns::delete(&self.ns);
        let _ = std::fs::remove_dir_all(Path::new("/run").join(&self.ns));
    }
}
