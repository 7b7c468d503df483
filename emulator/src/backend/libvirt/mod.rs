//! The libvirt backend (cargo feature `libvirt`): systems are domains on
//! one or more libvirt connections, and power, boot and firmware settings
//! really happen.
//!
//! Invariants:
//! - One long-lived connection per URI, reopened when it dies; every libvirt
//!   call runs on the blocking pool, never on the async workers.
//! - Every read-modify-write of a domain holds that domain's lock.
//! - Shoal's state (boot override, HttpBootUri, BIOS, media, last boot) lives
//!   in the persistent domain XML under `<metadata>` (`domain.rs`), so an
//!   emulator restart loses nothing.
//! - Boot settings are applied when the machine is powered on, while it is
//!   off: device boot order in the XML, and for UefiHttp (firmware mapping)
//!   a URI load option plus BootNext/BootOrder in the domain's NVRAM
//!   (`nvram`). A Once override is consumed by that start.
//!
//! Power mapping: On/ForceOn start; ForceOff destroys; GracefulShutdown is an
//! ACPI shutdown; ForceRestart and PowerCycle destroy then start (so pending
//! changes apply); GracefulRestart shuts down, waits up to
//! `graceful_timeout`, forces off if needed, then starts; PushPowerButton
//! toggles (shutdown or start); Nmi injects an NMI.

pub mod domain;
pub mod firmware;
pub mod media;
mod nvram_file;
pub mod xml;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use virt::connect::Connect;
use virt::domain::{Domain, DomainState};
use virt::enumutil::Enum;
use virt::error::ErrorNumber;
use virt::sys;

use super::{Backend, BackendError, Completion, Result};
use crate::config::HttpBootMapping;
use crate::error::Msg;
use crate::model::{
    start_machine, BootTarget, MediaImage, MediaSlot, OverrideEnabled, PowerState, ResetKeysType,
    ResetType, System, SystemRef, SystemSettings,
};
use crate::nvram::{boot as efiboot, Varstore};
use domain::{Facts, ShoalState};

#[derive(Debug, Clone)]
pub struct LibvirtOptions {
    /// The behaviour profile of every domain.
    pub profile: String,
    pub uris: Vec<String>,
    /// Only these domains (names or UUIDs) are systems; empty: all.
    pub allow: Vec<String>,
    pub http_boot: HttpBootMapping,
    pub graceful_timeout: Duration,
    pub media: media::MediaOptions,
    /// Where a domain switched to UEFI gets its varstore
    /// (`<name>_VARS.fd`); `None`: libvirt's own folder for the URI
    /// ([`nvram_dir`]).
    pub nvram_dir: Option<std::path::PathBuf>,
}

/// libvirt's NVRAM folder for a connection URI: the QEMU driver's
/// `nvramDir`, `<config base>/qemu/nvram` of a session daemon
/// (`$XDG_CONFIG_HOME/libvirt`, else `~/.config/libvirt`), else the
/// system daemon's `/var/lib/libvirt/qemu/nvram`. Drivers that keep no
/// NVRAM of their own (`test:///`) get the system folder too; give them
/// `nvram_dir`.
pub fn nvram_dir(uri: &str) -> std::path::PathBuf {
    let session = uri.starts_with("qemu") && uri.trim_end_matches('/').ends_with("/session");
    if session {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")));
        if let Some(base) = base {
            return base.join("libvirt/qemu/nvram");
        }
    }
    std::path::PathBuf::from("/var/lib/libvirt/qemu/nvram")
}

struct Conn {
    uri: String,
    conn: Mutex<Option<Connect>>,
}

struct Inner {
    conns: Vec<Conn>,
    opts: LibvirtOptions,
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

#[derive(Clone)]
pub struct LibvirtBackend {
    inner: Arc<Inner>,
}

fn virt_err(e: virt::error::Error) -> BackendError {
    match e.code() {
        Enum::Known(ErrorNumber::NoDomain) => BackendError::NotFound(e.message().to_string()),
        Enum::Known(ErrorNumber::OperationInvalid) => {
            BackendError::Conflict(e.message().to_string())
        }
        _ => BackendError::Internal(format!("libvirt: {}", e.message())),
    }
}

fn invalid(msg: Msg) -> BackendError {
    BackendError::Invalid(msg)
}

impl LibvirtBackend {
    /// Opens every connection now, so a wrong URI fails at start-up.
    pub fn connect(opts: LibvirtOptions) -> std::result::Result<Self, String> {
        // Errors come back as values and are logged with context; libvirt
        // need not also print them to stderr.
        virt::error::clear_error_callback();
        let mut conns = Vec::new();
        for uri in &opts.uris {
            let c = Connect::open(Some(uri))
                .map_err(|e| format!("cannot connect to {uri}: {}", e.message()))?;
            conns.push(Conn {
                uri: uri.clone(),
                conn: Mutex::new(Some(c)),
            });
        }
        if conns.is_empty() {
            return Err("no libvirt URI given".into());
        }
        Ok(LibvirtBackend {
            inner: Arc::new(Inner {
                conns,
                opts,
                locks: Mutex::new(HashMap::new()),
            }),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| BackendError::Internal(format!("libvirt worker: {e}")))?
    }
}

impl Inner {
    /// Runs `f` on connection `i`, reopening it first if it was lost.
    fn with_conn<T>(
        &self,
        i: usize,
        f: impl FnOnce(&Connect) -> std::result::Result<T, virt::error::Error>,
    ) -> Result<T> {
        let c = &self.conns[i];
        let mut guard = c.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_ref().map(|c| c.is_alive().unwrap_or(false)) != Some(true) {
            tracing::warn!(uri = %c.uri, "reconnecting to libvirt");
            *guard =
                Some(Connect::open(Some(&c.uri)).map_err(|e| {
                    BackendError::Unavailable(format!("{}: {}", c.uri, e.message()))
                })?);
        }
        f(guard.as_ref().expect("connected")).map_err(virt_err)
    }

    fn allowed(&self, name: &str, uuid: &str) -> bool {
        self.opts.allow.is_empty()
            || self
                .opts
                .allow
                .iter()
                .any(|a| a == name || a.eq_ignore_ascii_case(uuid))
    }

    fn list(&self) -> Result<Vec<SystemRef>> {
        let mut out = Vec::new();
        for i in 0..self.conns.len() {
            let flags =
                sys::VIR_CONNECT_LIST_DOMAINS_ACTIVE | sys::VIR_CONNECT_LIST_DOMAINS_INACTIVE;
            let doms = self.with_conn(i, |c| c.list_all_domains(flags))?;
            for d in doms {
                let (name, uuid) = (
                    d.name().map_err(virt_err)?,
                    d.uuid_string().map_err(virt_err)?,
                );
                if self.allowed(&name, &uuid) {
                    out.push(SystemRef { id: uuid, name });
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The domain with this UUID on any connection.
    fn domain(&self, id: &str) -> Result<(usize, Domain)> {
        for i in 0..self.conns.len() {
            match self.with_conn(i, |c| c.lookup_domain_by_uuid_string(id)) {
                Ok(d) => {
                    let name = d.name().map_err(virt_err)?;
                    if !self.allowed(&name, id) {
                        break;
                    }
                    return Ok((i, d));
                }
                Err(BackendError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(BackendError::NotFound(id.to_string()))
    }

    fn lock(&self, id: &str) -> Arc<Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone()
    }

    /// The persistent definition, parsed, with Shoal's state.
    fn read(&self, dom: &Domain) -> Result<(xml::Element, Facts, ShoalState)> {
        let text = dom
            .xml_desc(sys::VIR_DOMAIN_XML_INACTIVE)
            .map_err(virt_err)?;
        let d = xml::parse(&text).map_err(|e| BackendError::Internal(e.to_string()))?;
        let f = domain::facts(&d).map_err(BackendError::Internal)?;
        let s = domain::read_state(&d).unwrap_or_else(|| {
            let enrolled = Self::firmwares(&f).iter().any(|fw| {
                fw.enrolled_keys && f.nvram_template.as_deref() == Some(fw.vars.as_str())
            });
            ShoalState::fresh(&f, enrolled)
        });
        Ok((d, f, s))
    }

    fn firmwares(f: &Facts) -> Vec<firmware::Firmware> {
        let dirs: Vec<&Path> = firmware::DIRS.iter().map(Path::new).collect();
        firmware::available(&dirs, f.arch, &f.machine)
    }

    /// Makes the definition's firmware match the wanted boot mode and Secure
    /// Boot settings; a change of UEFI variant starts from a fresh varstore
    /// (its template holds the variant's keys). Returns the new facts.
    fn ensure_firmware(
        &self,
        conn: usize,
        d: &mut xml::Element,
        f: &Facts,
        s: &ShoalState,
    ) -> Result<Facts> {
        let nvram = f.nvram.clone().unwrap_or_else(|| {
            let dir = match &self.opts.nvram_dir {
                Some(d) => d.clone(),
                None => nvram_dir(&self.conns[conn].uri),
            };
            dir.join(format!("{}_VARS.fd", f.name))
                .display()
                .to_string()
        });
        let want_uefi = s.boot.mode == crate::model::BootMode::Uefi && f.arch.has_uefi();
        let list = Self::firmwares(f);
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
            return Ok(f.clone());
        };
        firmware::apply(d, fw.as_ref(), &nvram);
        if fw.is_some() {
            match std::fs::remove_file(&nvram) {
                Ok(()) => {
                    tracing::info!(domain = %f.name, %nvram, "firmware variant changed: fresh varstore")
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BackendError::Internal(format!("{nvram}: {e}"))),
            }
        }
        domain::facts(d).map_err(BackendError::Internal)
    }

    fn define(&self, conn: usize, d: &xml::Element) -> Result<()> {
        let text = d.to_xml();
        self.with_conn(conn, |c| c.define_domain_xml(&text))
            .map(drop)
    }

    fn power(dom: &Domain) -> Result<PowerState> {
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

    fn system(&self, id: &str) -> Result<System> {
        let (_, dom) = self.domain(id)?;
        let (_, f, s) = self.read(&dom)?;
        Ok(System {
            id: id.to_ascii_lowercase(),
            name: f.name,
            uuid: f.uuid,
            arch: f.arch,
            memory_mib: f.memory_mib,
            cpus: f.cpus,
            storage: crate::storage::StorageState::jbod(&f.disks),
            disks: f.disks,
            nics: f.nics,
            power: Self::power(&dom)?,
            boot: s.boot,
            bios: s.bios,
            secure_boot: s.secure_boot,
            cd: s.cd,
            floppy: s.floppy,
            indicator: s.indicator,
            asset_tag: s.asset_tag,
            last_boot: s.last_boot,
            profile: self.opts.profile.clone(),
        })
    }

    /// Read-modify-write of Shoal's state under the domain's lock.
    fn modify(
        &self,
        id: &str,
        f: impl FnOnce(&Facts, &mut ShoalState) -> Result<()>,
    ) -> Result<()> {
        let lock = self.lock(id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (conn, dom) = self.domain(id)?;
        let (mut d, facts, mut state) = self.read(&dom)?;
        f(&facts, &mut state)?;
        domain::write_state(&mut d, &state);
        self.define(conn, &d)
    }

    /// Puts a downloaded image into the CD-ROM (or empties it): in the
    /// definition, in the running instance when there is one, and in
    /// Shoal's state. An ejected image's cached file is removed.
    fn set_media(&self, id: &str, media: Option<(&Path, &MediaImage)>) -> Result<()> {
        let lock = self.lock(id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (conn, dom) = self.domain(id)?;
        let (mut d, f, mut s) = self.read(&dom)?;
        let path = media.map(|(p, _)| p);
        let old =
            s.cd.image
                .as_deref()
                .map(|u| media::cache_path(&self.opts.media, id, u));
        media::set_cdrom(&mut d, f.arch, path);
        s.cd = match media {
            Some((_, img)) => crate::model::MediaState {
                image: Some(img.image.clone()),
                inserted: img.inserted,
                write_protected: img.write_protected,
                transfer_protocol: img.transfer_protocol,
                transfer_method: img.transfer_method,
                user_name: img.user_name.clone(),
            },
            None => crate::model::MediaState::default(),
        };
        domain::write_state(&mut d, &s);
        self.define(conn, &d)?;
        if dom.is_active().map_err(virt_err)? {
            let live = dom.xml_desc(0).map_err(virt_err)?;
            let mut live = xml::parse(&live).map_err(|e| BackendError::Internal(e.to_string()))?;
            if let Some(disk) = media::live_cdrom(&mut live, path) {
                dom.update_device_flags(&disk.to_xml(), sys::VIR_DOMAIN_AFFECT_LIVE)
                    .map_err(virt_err)?;
            }
        }
        if let Some(old) = old.filter(|o| Some(o.as_path()) != path) {
            let _ = std::fs::remove_file(old);
        }
        tracing::info!(domain = %f.name, image = ?s.cd.image, "virtual CD changed");
        Ok(())
    }

    /// Writes (or clears) Shoal's HTTP boot option in the domain's NVRAM.
    fn prepare_nvram(
        &self,
        d: &xml::Element,
        f: &Facts,
        s: &ShoalState,
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
                let uri = crate::model::http_boot_uri_at_start(&s.boot, &s.bios);
                let path = http_boot_device_path(d, f, s, uri.as_deref().unwrap_or(""));
                efiboot::set_http_boot_path(&mut store, path, how).map(drop)
            }
            _ => efiboot::clear_http_boot(&mut store),
        };
        result.map_err(|e| BackendError::Internal(format!("{}: {e}", path.display())))?;
        nvram_file::write(path, f.nvram_qcow2, store.as_bytes())
            .map_err(|e| BackendError::Internal(format!("{}: {e}", path.display())))
    }

    /// Applies the boot settings to the definition and NVRAM, then starts.
    fn power_on(&self, conn: usize, dom: &Domain) -> Result<()> {
        let (mut d, f, mut s) = self.read(dom)?;
        let mut target = s.boot.effective_target();
        if target == Some(BootTarget::UefiHttp) && self.opts.http_boot == HttpBootMapping::Vmedia {
            // sushy-tools' mapping: the URI's image goes into the CD-ROM and
            // the CD boots; without a URI the machine network-boots.
            target = Some(
                match crate::model::http_boot_uri_at_start(&s.boot, &s.bios) {
                    Some(uri) => {
                        let image = MediaImage {
                            image: uri,
                            inserted: true,
                            write_protected: true,
                            transfer_protocol: None,
                            transfer_method: None,
                            user_name: None,
                            password: None,
                        };
                        let id = dom.uuid_string().map_err(virt_err)?;
                        let path = media::fetch(&self.opts.media, &id, &image, MediaSlot::Cd)?;
                        media::set_cdrom(&mut d, f.arch, Some(&path));
                        s.cd = crate::model::MediaState {
                            image: Some(image.image),
                            inserted: true,
                            write_protected: true,
                            ..Default::default()
                        };
                        BootTarget::Cd
                    }
                    None => BootTarget::Pxe,
                },
            );
        }
        let f = self.ensure_firmware(conn, &mut d, &f, &s)?;
        let device_first = target.filter(|t| {
            matches!(
                t,
                BootTarget::Pxe | BootTarget::Hdd | BootTarget::Cd | BootTarget::Floppy
            )
        });
        domain::set_boot_order(&mut d, device_first);
        let petitboot = domain::petitboot_firmware(&d);
        if petitboot {
            domain::set_petitboot_bootdev(&mut d, device_first);
        }
        if f.uefi {
            self.prepare_nvram(&d, &f, &s, target)?;
        }
        let booted = target.unwrap_or(BootTarget::Hdd);
        let media = (booted == BootTarget::Cd)
            .then(|| s.cd.image.clone())
            .flatten();
        let once = s.boot.enabled == OverrideEnabled::Once;
        s.last_boot = Some(start_machine(
            &mut s.boot,
            &mut s.bios,
            &mut s.secure_boot,
            f.uefi,
            booted,
            media,
        ));
        domain::write_state(&mut d, &s);
        self.define(conn, &d)?;
        dom.create().map_err(virt_err)?;
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

    fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let lock = self.lock(id);
        let _g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (conn, dom) = self.domain(id)?;
        let on = Self::power(&dom)? != PowerState::Off;
        use ResetType as R;
        match reset {
            R::On | R::ForceOn if !on => self.power_on(conn, &dom),
            R::On | R::ForceOn => Ok(()),
            R::ForceOff if on => dom.destroy().map_err(virt_err),
            R::GracefulShutdown if on => dom.shutdown().map_err(virt_err),
            R::ForceOff | R::GracefulShutdown => Ok(()),
            R::ForceRestart | R::PowerCycle => {
                if on {
                    dom.destroy().map_err(virt_err)?;
                }
                self.power_on(conn, &dom)
            }
            R::GracefulRestart => {
                if on {
                    dom.shutdown().map_err(virt_err)?;
                    if !Self::wait_off(&dom, self.opts.graceful_timeout)? {
                        tracing::warn!(%id, "guest ignored the shutdown request; forcing off");
                        dom.destroy().map_err(virt_err)?;
                    }
                }
                self.power_on(conn, &dom)
            }
            R::PushPowerButton if on => dom.shutdown().map_err(virt_err),
            R::PushPowerButton => self.power_on(conn, &dom),
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

#[async_trait]
impl Backend for LibvirtBackend {
    fn kind(&self) -> &'static str {
        "libvirt"
    }

    async fn systems(&self) -> Result<Vec<SystemRef>> {
        self.blocking(|i| i.list()).await
    }

    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>> {
        let key = id_or_name.to_string();
        self.blocking(move |i| {
            Ok(i.list()?
                .into_iter()
                .find(|r| r.id.eq_ignore_ascii_case(&key) || r.name == key))
        })
        .await
    }

    async fn system(&self, id: &str) -> Result<System> {
        let id = id.to_string();
        self.blocking(move |i| i.system(&id)).await
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| i.reset(&id, reset)).await
    }

    async fn update_system(
        &self,
        id: &str,
        boot: Option<&crate::model::BootOverride>,
        settings: &SystemSettings,
    ) -> Result<()> {
        let (id, boot, settings) = (id.to_string(), boot.cloned(), settings.clone());
        self.blocking(move |i| {
            i.modify(&id, |f, s| {
                if let Some(b) = boot {
                    if b.mode != s.boot.mode {
                        let possible = match b.mode {
                            crate::model::BootMode::Uefi => {
                                f.uefi || !Inner::firmwares(f).is_empty()
                            }
                            crate::model::BootMode::Legacy => f.arch == crate::model::Arch::X86_64,
                        };
                        if !possible {
                            return Err(invalid(
                                Msg::new(
                                    "PropertyValueNotInList",
                                    &[b.mode.as_str(), "Boot/BootSourceOverrideMode"],
                                )
                                .about("Boot/BootSourceOverrideMode"),
                            ));
                        }
                    }
                    s.boot = b;
                }
                if let Some(led) = settings.indicator {
                    s.indicator = led;
                }
                if let Some(tag) = settings.asset_tag {
                    s.asset_tag = tag;
                }
                Ok(())
            })
        })
        .await
    }

    async fn insert_media(
        &self,
        id: &str,
        slot: MediaSlot,
        image: MediaImage,
    ) -> Result<Completion> {
        if slot != MediaSlot::Cd {
            return Err(invalid(Msg::new(
                "ActionNotSupported",
                &["VirtualMedia.InsertMedia"],
            )));
        }
        // The domain must exist before a download is started for it.
        self.system(id).await?;
        let this = self.clone();
        let id = id.to_string();
        Ok(Completion::Running(Box::pin(async move {
            this.blocking(move |i| {
                let path = media::fetch(&i.opts.media, &id, &image, slot)?;
                i.set_media(&id, Some((&path, &image)))
            })
            .await
        })))
    }

    async fn eject_media(&self, id: &str, slot: MediaSlot) -> Result<()> {
        if slot != MediaSlot::Cd {
            return Err(invalid(Msg::new(
                "ActionNotSupported",
                &["VirtualMedia.EjectMedia"],
            )));
        }
        let id = id.to_string();
        self.blocking(move |i| i.set_media(&id, None)).await
    }

    async fn set_bios_pending(
        &self,
        id: &str,
        pending: BTreeMap<String, serde_json::Value>,
    ) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| {
            i.modify(&id, |_, s| {
                s.bios.pending = pending;
                Ok(())
            })
        })
        .await
    }

    async fn reset_bios(&self, id: &str) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| {
            i.modify(&id, |_, s| {
                s.bios.pending = crate::bios::defaults();
                Ok(())
            })
        })
        .await
    }

    async fn set_secure_boot(&self, id: &str, enable: bool) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| {
            i.modify(&id, |_, s| {
                s.secure_boot.enable = enable;
                Ok(())
            })
        })
        .await
    }

    async fn reset_secure_boot_keys(&self, id: &str, kind: ResetKeysType) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| {
            i.modify(&id, |_, s| {
                s.secure_boot.keys_enrolled = kind == ResetKeysType::ResetAllKeysToDefault;
                Ok(())
            })
        })
        .await
    }
}

/// The device path of Shoal's HTTP boot option. HPE's BIOS attribute
/// `PrebootNetworkEnvPolicy` picks the IP version as a real BMC's firmware
/// setting does: `IPv4` or `IPv6` names that HTTP boot instance of the first
/// NIC, so the firmware tries no other; `Auto` (the default) leaves the URI
/// short-form, which OVMF tries over every instance, IPv4 first.
fn http_boot_device_path(d: &xml::Element, f: &Facts, s: &ShoalState, uri: &str) -> Vec<u8> {
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
