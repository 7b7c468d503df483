//! Power for libvirt domains, and what a start does first: the firmware
//! variant the boot mode and Secure Boot ask for, the boot settings in the
//! definition (device order, petitboot's `shoal.bootdev=` on pseries, the
//! in-band IPMI device) and the NVRAM (Shoal's HTTP boot option,
//! BootNext/BootOrder), then the BMC state's start semantics
//! ([`BmcState::start`]), written back before the domain starts. A powernv
//! host reads the boot flags over in-band IPMI and clears a one-time
//! override itself, so its start leaves the override as it is.
//!
//! Power mapping: On/ForceOn start; ForceOff destroys; GracefulShutdown is an
//! ACPI shutdown; ForceRestart and PowerCycle destroy then start (so pending
//! changes apply); GracefulRestart shuts down, waits up to
//! `graceful_timeout`, forces off if needed, then starts; PushPowerButton
//! toggles (shutdown or start); Nmi injects an NMI.

use std::path::Path;
use std::time::{Duration, Instant};

use virt::domain::{Domain, DomainState};
use virt::enumutil::Enum;
use virt::sys;

use super::domain::{self, Facts};
use super::{firmware, media, nvram_dir, nvram_file, virt_err, xml, Inner};
use crate::backend::options::HttpBootMapping;
use crate::backend::{BackendError, Result};
use crate::model::{
    BmcState, BootMode, BootTarget, MediaImage, MediaSlot, MediaState, OverrideEnabled, PowerState,
    ResetType, TargetSource,
};
use crate::nvram::{boot as efiboot, tls, Varstore};
use crate::sync::lock;

impl Inner {
    pub(super) fn power(dom: &Domain) -> Result<PowerState> {
        let (state, _) = dom.state().map_err(virt_err)?;
        Ok(match state {
            Enum::Known(
                DomainState::Running
                | DomainState::Blocked
                | DomainState::Paused
                | DomainState::PMSuspended,
            ) => PowerState::On,
            Enum::Known(DomainState::Shutdown) => PowerState::PoweringOff,
            _ => PowerState::Off,
        })
    }

    /// Makes the definition's firmware match the wanted boot mode and Secure
    /// Boot settings; a change of UEFI variant starts from a fresh varstore
    /// (its template holds the variant's keys): removed here on a local
    /// host, or (`true` returned) reset by libvirt at the start on a remote
    /// one. Returns the new facts.
    fn ensure_firmware(
        &self,
        conn: usize,
        d: &mut xml::Element,
        f: &Facts,
        s: &BmcState,
    ) -> Result<(Facts, bool)> {
        let nvram = f.nvram.clone().unwrap_or_else(|| {
            let dir = match &self.opts.nvram_dir {
                Some(d) => d.clone(),
                None => nvram_dir(&self.conns[conn].uri),
            };
            dir.join(format!("{}_VARS.fd", f.name))
                .display()
                .to_string()
        });
        let want_uefi = boots_uefi(s, f);
        let list = self.firmwares(f);
        let want = firmware::Want {
            secure_boot: s.secure_boot.enable,
            enrolled_keys: s.secure_boot.keys_enrolled,
        };
        let change = match (want_uefi, firmware::select(&list, want)) {
            (true, Some(fw)) => {
                let same = firmware::current_loader(d).as_deref() == Some(fw.code.as_str())
                    && f.nvram_template.as_deref() == Some(fw.vars.as_str());
                (!same).then_some(Some(fw.clone()))
            }
            // A UEFI domain with firmware of its own choosing is left alone.
            (true, None) if f.uefi => None,
            (true, None) => {
                return Err(BackendError::Internal(format!(
                    "no UEFI firmware descriptor for {} {}",
                    f.arch, f.machine
                )))
            }
            (false, _) if f.uefi => Some(None),
            (false, _) => None,
        };
        let Some(fw) = change else {
            return Ok((f.clone(), false));
        };
        firmware::apply(d, fw.as_ref(), &nvram);
        let remote = self.conns[conn].remote;
        if fw.is_some() && !remote {
            match std::fs::remove_file(&nvram) {
                Ok(()) => {
                    tracing::info!(domain = %f.name, %nvram, "firmware variant changed: fresh varstore")
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BackendError::Internal(format!("{nvram}: {e}"))),
            }
        }
        let facts = domain::facts(d).map_err(BackendError::Internal)?;
        Ok((facts, fw.is_some() && remote))
    }

    /// Writes (or clears) Shoal's HTTP boot option in the domain's NVRAM,
    /// and makes the firmware's trusted CAs for HTTPS boot the BMC's
    /// `Boot.Certificates` (none: no `TlsCaCertificate`).
    fn prepare_nvram(
        &self,
        d: &xml::Element,
        f: &Facts,
        s: &BmcState,
        target: Option<BootTarget>,
    ) -> Result<()> {
        let Some(path) = &f.nvram else {
            return match target {
                Some(BootTarget::UefiHttp) => Err(BackendError::Internal(format!(
                    "{} has no NVRAM file in its definition",
                    f.name
                ))),
                _ => Ok(()),
            };
        };
        let path = Path::new(path);
        let bytes = match nvram_file::read(path, f.nvram_qcow2) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A fresh host has no NVRAM folder until libvirt's QEMU
                // driver first starts: make it as libvirt would.
                let dir = path.parent().unwrap_or(Path::new("/"));
                nvram_file::ensure_folder(dir).map_err(|e| {
                    BackendError::Internal(format!(
                        "cannot create the NVRAM folder {} for {}: {e}",
                        dir.display(),
                        path.display()
                    ))
                })?;
                // Debian's templates are raw; libvirt converts them for qcow2 NVRAM too.
                let template = f.nvram_template.as_deref().ok_or_else(|| {
                    BackendError::Internal(format!(
                        "{} does not exist and the domain names no template",
                        path.display()
                    ))
                })?;
                std::fs::read(template)
                    .map_err(|e| BackendError::Internal(format!("{template}: {e}")))?
            }
            Err(e) => return Err(BackendError::Internal(format!("{}: {e}", path.display()))),
        };
        let mut store = Varstore::parse(bytes)
            .map_err(|e| BackendError::Internal(format!("{}: {e}", path.display())))?;
        let result = match target {
            Some(BootTarget::UefiHttp) => {
                let how = match s.boot.enabled {
                    OverrideEnabled::Continuous => efiboot::Persistence::Continuous,
                    _ => efiboot::Persistence::Once,
                };
                let uri = s.http_boot_uri_at_start();
                let path = http_boot_device_path(d, f, s, uri.as_deref().unwrap_or(""));
                efiboot::set_http_boot_path(&mut store, path, how).map(drop)
            }
            _ => efiboot::clear_http_boot(&mut store),
        };
        let cas: Vec<&[u8]> = s
            .boot_certs
            .at_start()
            .iter()
            .map(|c| c.der.as_slice())
            .collect();
        let result = result.and_then(|()| tls::set_ca_certificates(&mut store, &cas));
        result.map_err(|e| BackendError::Internal(format!("{}: {e}", path.display())))?;
        nvram_file::write(path, f.nvram_qcow2, store.as_bytes())
            .map_err(|e| BackendError::Internal(format!("{}: {e}", path.display())))
    }

    /// Applies the boot settings to the definition and NVRAM, then starts.
    fn power_on(&self, conn: usize, id: &str, dom: &Domain) -> Result<()> {
        let (mut d, f, mut s) = self.read(id, dom)?;
        let at_start = s.target_at_start(boots_uefi(&s, &f));
        let source = at_start.map(|(_, from)| from);
        let mut target = at_start.map(|(t, _)| t);
        let remote = self.conns[conn].remote;
        if remote && (target == Some(BootTarget::UefiHttp) || !s.boot_certs.at_start().is_empty()) {
            return Err(super::not_on_remote("HTTP boot", &self.conns[conn].uri));
        }
        if target == Some(BootTarget::UefiHttp) && self.opts.http_boot == HttpBootMapping::Vmedia {
            // sushy-tools' mapping: the URI's image goes into the CD-ROM and
            // the CD boots; without a URI the machine network-boots.
            target = Some(match s.http_boot_uri_at_start() {
                Some(uri) => {
                    let image = MediaImage {
                        image: uri,
                        inserted: true,
                        write_protected: true,
                        transfer_protocol: None,
                        transfer_method: None,
                        user_name: None,
                        password: None,
                        verify: None,
                        cas: Vec::new(),
                    }
                    .checked_by(&s.cd_tls);
                    let path = media::fetch(&self.opts.media, id, &image, MediaSlot::Cd)?;
                    media::set_cdrom(&mut d, f.arch, Some(&path));
                    s.cd = MediaState {
                        image: Some(image.image),
                        inserted: true,
                        write_protected: true,
                        ..Default::default()
                    };
                    BootTarget::Cd
                }
                None => BootTarget::Pxe,
            });
        }
        let (f, fresh_nvram) = self.ensure_firmware(conn, &mut d, &f, &s)?;
        let device_first = target.filter(|t| {
            matches!(
                t,
                BootTarget::Pxe | BootTarget::Hdd | BootTarget::Cd | BootTarget::Floppy
            )
        });
        domain::set_boot_order(&mut d, device_first);
        // The device only where a BMC serves the domain's socket (one per
        // BMC of one system): a domain behind a shared endpoint has none.
        let socket = match (&self.opts.ipmi_in_band_dir, uuid::Uuid::parse_str(id)) {
            (Some(dir), Ok(u)) => {
                Some(shoal_ipmi::inband::socket_path(dir, &u)).filter(|p| p.exists())
            }
            _ => None,
        };
        let qemu = match socket {
            Some(_) => self.with_conn(conn, |c| c.hyp_version()).unwrap_or(0),
            None => 0,
        };
        let in_band = super::inband::set(&mut d, socket.as_deref(), qemu);
        let petitboot = domain::petitboot_firmware(&d);
        // A petitboot host with an in-band BMC (powernv) reads the boot
        // flags over IPMI and clears a one-time override itself; the
        // others (pseries) learn it from their command line, and the
        // start consumes it.
        let host_reads_flags = petitboot && in_band;
        if petitboot {
            domain::set_petitboot_bootdev(&mut d, device_first.filter(|_| !host_reads_flags));
        }
        // A remote host's NVRAM holds nothing of Shoal's (see above).
        if f.uefi && !remote {
            self.prepare_nvram(&d, &f, &s, target)?;
        }
        let booted = target.unwrap_or(BootTarget::Hdd);
        let media = (booted == BootTarget::Cd)
            .then(|| s.cd.image.clone())
            .flatten();
        let once = match source {
            Some(TargetSource::Override) => s.boot.enabled == OverrideEnabled::Once,
            Some(TargetSource::BiosOnce) => true,
            None => false,
        };
        let boot = s.boot.clone();
        s.start(f.uefi, booted, source, media, &f.disks);
        if host_reads_flags {
            s.boot = boot;
        }
        domain::write_state(&mut d, &s);
        self.define(conn, &d)?;
        match fresh_nvram {
            true => dom.create_with_flags(sys::VIR_DOMAIN_START_RESET_NVRAM),
            false => dom.create(),
        }
        .map_err(virt_err)?;
        if once {
            // The running instance keeps the override's order; the next
            // start uses the normal one.
            domain::set_boot_order(&mut d, None);
            if petitboot {
                domain::set_petitboot_bootdev(&mut d, None);
            }
            self.define(conn, &d)?;
        }
        tracing::info!(domain = %f.name, target = %booted, "powered on");
        Ok(())
    }

    fn wait_off(dom: &Domain, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if Self::power(dom)? == PowerState::Off {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(false)
    }

    pub(super) fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let domain = self.lock(id);
        let _g = lock(&domain);
        let (conn, dom) = self.domain(id)?;
        let on = Self::power(&dom)? != PowerState::Off;
        use ResetType as R;
        match reset {
            R::On | R::ForceOn if !on => self.power_on(conn, id, &dom),
            R::On | R::ForceOn => Ok(()),
            R::ForceOff if on => dom.destroy().map_err(virt_err),
            R::GracefulShutdown if on => dom.shutdown().map_err(virt_err),
            R::ForceOff | R::GracefulShutdown => Ok(()),
            R::ForceRestart | R::PowerCycle => {
                if on {
                    dom.destroy().map_err(virt_err)?;
                }
                self.power_on(conn, id, &dom)
            }
            R::GracefulRestart => {
                if on {
                    dom.shutdown().map_err(virt_err)?;
                    if !Self::wait_off(&dom, self.opts.graceful_timeout)? {
                        tracing::warn!(%id, "guest ignored the shutdown request; forcing off");
                        dom.destroy().map_err(virt_err)?;
                    }
                }
                self.power_on(conn, id, &dom)
            }
            R::PushPowerButton if on => dom.shutdown().map_err(virt_err),
            R::PushPowerButton => self.power_on(conn, id, &dom),
            R::Nmi if on => {
                // SAFETY: the pointer is valid while `dom` lives; flags must be 0.
                let rc = unsafe { sys::virDomainInjectNMI(dom.as_ptr(), 0) };
                if rc < 0 {
                    return Err(BackendError::Internal(
                        "libvirt: NMI injection failed".into(),
                    ));
                }
                Ok(())
            }
            R::Nmi => Err(BackendError::Conflict(format!("{id} is off: no NMI"))),
        }
    }
}

/// The device path of Shoal's HTTP boot option. HPE's BIOS attribute
/// `PrebootNetworkEnvPolicy` picks the IP version as a real BMC's firmware
/// setting does: `IPv4` or `IPv6` names that HTTP boot instance of the first
/// NIC, so the firmware tries no other; `Auto` (the default) leaves the URI
/// short-form, which OVMF tries over every instance, IPv4 first.
fn http_boot_device_path(d: &xml::Element, f: &Facts, s: &BmcState, uri: &str) -> Vec<u8> {
    let ip = match crate::model::bios_at_start(&s.bios, "PrebootNetworkEnvPolicy") {
        Some("IPv4") => efiboot::IpVersion::V4,
        Some("IPv6") => efiboot::IpVersion::V6,
        _ => return efiboot::uri_device_path(uri),
    };
    match domain::nic_path(d) {
        Some(nic) => efiboot::nic_http_device_path(&nic, ip, uri),
        None => {
            tracing::warn!(
                domain = %f.name,
                "no PCI address for the first NIC: HTTP boot over every IP version"
            );
            efiboot::uri_device_path(uri)
        }
    }
}

/// Whether the machine's next start runs UEFI firmware: the BMC's boot
/// mode, where the architecture has UEFI at all.
fn boots_uefi(s: &BmcState, f: &Facts) -> bool {
    s.boot.mode == BootMode::Uefi && f.arch.has_uefi()
}
