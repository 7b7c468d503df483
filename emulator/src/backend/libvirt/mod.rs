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
//! - A domain's definition is parsed once per version: the last parse is
//!   kept with the text it came from, so a re-read that finds the same text
//!   costs one libvirt call and no parse.
//!
//! Power and the start sequence are in `power.rs`; the serial console
//! (Serial-over-LAN's) in `console.rs`.

mod console;
pub mod domain;
pub mod firmware;
mod hosts;
mod inband;
pub mod media;
mod nvram_file;
mod power;
pub mod xml;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use virt::connect::Connect;
use virt::domain::Domain;
use virt::enumutil::Enum;
use virt::error::ErrorNumber;
use virt::sys;

use super::options::HttpBootMapping;
use super::{Backend, BackendError, Completion, Result, Unsupported};
use crate::model::{
    Arch, BmcState, BootMode, BootTarget, Change, MediaImage, MediaSlot, MediaState, ResetType,
    System, SystemRef,
};
use crate::sync::lock;
use domain::Facts;
use hosts::Conn;

#[derive(Debug, Clone)]
pub struct LibvirtOptions {
    /// The behaviour profile of every domain but those of
    /// `domain_profiles`.
    pub profile: String,
    /// Domains (names or UUIDs) with a profile of their own: those behind
    /// a replayed capture's systems run on the profiles derived from them.
    pub domain_profiles: Vec<(String, String)>,
    pub uris: Vec<String>,
    /// Only these domains (names or UUIDs) are systems; empty: all.
    pub allow: Vec<String>,
    pub http_boot: HttpBootMapping,
    pub graceful_timeout: Duration,
    pub media: media::MediaOptions,
    /// The storage pool a remote host's virtual media images are uploaded
    /// into (`--libvirt-media-pool`).
    pub media_pool: String,
    /// Where a domain switched to UEFI gets its varstore
    /// (`<name>_VARS.fd`); `None`: libvirt's own folder for the URI
    /// ([`nvram_dir`]).
    pub nvram_dir: Option<std::path::PathBuf>,
    /// In-band IPMI: where the BMCs' sockets are (`<dir>/<UUID>.sock`);
    /// each domain started gets QEMU's `ipmi-bmc-extern` connected to
    /// its own. `None`: Shoal's device is taken out at the next start.
    pub ipmi_in_band_dir: Option<std::path::PathBuf>,
    /// The configuration's UEFI firmware, in place of the descriptors'
    /// (`SUSHY_EMULATOR_BOOT_LOADER_MAP`).
    pub loaders: Option<crate::backend::options::LoaderMap>,
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

/// Whether a libvirt URI names another machine (`qemu+tcp://host/system`,
/// `qemu+ssh://user@host/system`): its domains' files (NVRAM, images) are
/// on that machine, where Shoal cannot write them.
pub fn remote_uri(uri: &str) -> bool {
    uri.split_once("://")
        .map(|(_, rest)| {
            let authority = rest.split(['/', '?']).next().unwrap_or("");
            let host = authority.rsplit('@').next().unwrap_or("");
            !host.is_empty()
        })
        .unwrap_or(false)
}

/// The refusal of what needs the domain's files on a remote host.
fn not_on_remote(what: &str, uri: &str) -> BackendError {
    Unsupported::Refused(format!(
        "{what} on a domain of {uri}: Shoal writes the domain's NVRAM itself, and that host's \
         files are out of its reach (power, boot devices, boot mode, Secure Boot and virtual \
         media work there)"
    ))
    .into()
}

/// How many of each libvirt call the backend made since it connected: what
/// a request costs, for tests and the logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    /// Domain lookups by UUID or name.
    pub lookups: u64,
    /// Reads of a persistent definition (`virDomainGetXMLDesc`).
    pub reads: u64,
    /// Of those, the ones whose text was parsed (it had changed).
    pub parses: u64,
    /// Definitions written (`virDomainDefineXML`).
    pub defines: u64,
}

#[derive(Default)]
struct Counters {
    lookups: AtomicU64,
    reads: AtomicU64,
    parses: AtomicU64,
    defines: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Most parsed definitions kept (a few tens of KiB each).
const PARSED_MAX: usize = 4096;

/// A domain definition as last parsed, with the text it came from. For a
/// domain without Shoal's metadata the state is the fresh one, which also
/// depends on the firmware descriptors installed: those change only with
/// the host's packages, which a restart of the emulator follows.
struct Parsed {
    text: String,
    d: xml::Element,
    f: Facts,
    s: BmcState,
}

struct Inner {
    conns: Vec<Conn>,
    opts: LibvirtOptions,
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// The last parse of each domain's persistent definition, by UUID.
    parsed: Mutex<HashMap<String, Arc<Parsed>>>,
    calls: Counters,
    /// The console pumps running now.
    consoles: console::Pumps,
    /// Where each domain was last seen (its connection) and its name, by
    /// UUID: while a host is unreachable its domains stay listed and
    /// answer `Unavailable`, and the other hosts' are looked up without it.
    homes: Mutex<HashMap<String, (usize, String)>>,
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

impl LibvirtBackend {
    /// Opens every connection now. With one host, an unreachable URI stops
    /// the start (most often a typo, or the socket not mounted); with
    /// several, the start needs one reachable host, and the others are
    /// retried at each request, their domains appearing once they answer.
    pub fn connect(opts: LibvirtOptions) -> std::result::Result<Self, String> {
        // Errors come back as values and are logged with context; libvirt
        // need not also print them to stderr.
        virt::error::clear_error_callback();
        let mut conns = Vec::new();
        let mut failed = Vec::new();
        for uri in &opts.uris {
            let c = match Connect::open(Some(uri)) {
                Ok(c) => Some(c),
                Err(e) => {
                    failed.push(format!("cannot connect to {uri}: {}", e.message()));
                    None
                }
            };
            conns.push(Conn {
                remote: remote_uri(uri),
                uri: uri.clone(),
                conn: Mutex::new(c),
                retry_at: Mutex::default(),
            });
        }
        if conns.is_empty() {
            return Err("no libvirt URI given".into());
        }
        if failed.len() == conns.len() {
            return Err(failed.join("; "));
        }
        for f in &failed {
            tracing::error!("{f}: its domains are served once it answers");
        }
        Ok(LibvirtBackend {
            inner: Arc::new(Inner {
                conns,
                opts,
                locks: Mutex::new(HashMap::new()),
                parsed: Mutex::new(HashMap::new()),
                calls: Counters::default(),
                consoles: console::Pumps::default(),
                homes: Mutex::default(),
            }),
        })
    }

    /// The libvirt calls made so far.
    pub fn calls(&self) -> Calls {
        let c = &self.inner.calls;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Calls {
            lookups: get(&c.lookups),
            reads: get(&c.reads),
            parses: get(&c.parses),
            defines: get(&c.defines),
        }
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
    fn lock(&self, id: &str) -> Arc<Mutex<()>> {
        lock(&self.locks).entry(id.to_string()).or_default().clone()
    }

    /// The persistent definition, parsed, with Shoal's state: one libvirt
    /// call, and a parse only when the text changed since the last one.
    fn read(&self, id: &str, dom: &Domain) -> Result<(xml::Element, Facts, BmcState)> {
        bump(&self.calls.reads);
        let text = dom
            .xml_desc(sys::VIR_DOMAIN_XML_INACTIVE)
            .map_err(virt_err)?;
        let cached = lock(&self.parsed)
            .get(id)
            .filter(|p| p.text == text)
            .cloned();
        let p = match cached {
            Some(p) => p,
            None => {
                bump(&self.calls.parses);
                let d = xml::parse(&text).map_err(|e| BackendError::Internal(e.to_string()))?;
                let f = domain::facts(&d).map_err(BackendError::Internal)?;
                let mut s = domain::read_state(&d).unwrap_or_else(|| {
                    let enrolled = self.firmwares(&f).iter().any(|fw| {
                        fw.enrolled_keys && f.nvram_template.as_deref() == Some(fw.vars.as_str())
                    });
                    domain::fresh_state(&f, enrolled)
                });
                // The controller's configuration lasts while the domain's
                // disks do; new disks meet a controller in JBOD mode.
                s.storage = std::mem::take(&mut s.storage).over(&f.disks);
                let p = Arc::new(Parsed { text, d, f, s });
                let mut cache = lock(&self.parsed);
                if cache.len() >= PARSED_MAX && !cache.contains_key(id) {
                    // Domains come and go: an old entry makes room.
                    if let Some(k) = cache.keys().next().cloned() {
                        cache.remove(&k);
                    }
                }
                cache.insert(id.to_string(), p.clone());
                p
            }
        };
        Ok((p.d.clone(), p.f.clone(), p.s.clone()))
    }

    /// The UEFI firmware a domain may run: QEMU's descriptors', or the
    /// configuration's loader map where it names code for the domain's
    /// architecture.
    fn firmwares(&self, f: &Facts) -> Vec<firmware::Firmware> {
        let dirs: Vec<&Path> = firmware::DIRS.iter().map(Path::new).collect();
        let found = firmware::available(&dirs, f.arch, &f.machine);
        match &self.opts.loaders {
            Some(map) => firmware::mapped(map, f.arch, &found).unwrap_or(found),
            None => found,
        }
    }

    fn define(&self, conn: usize, d: &xml::Element) -> Result<()> {
        bump(&self.calls.defines);
        let text = d.to_xml();
        self.with_conn(conn, |c| c.define_domain_xml(&text))
            .map(drop)
    }

    fn system(&self, id: &str) -> Result<System> {
        let (_, dom) = self.domain(id)?;
        let (_, f, s) = self.read(id, &dom)?;
        self.assemble(id, &dom, f, s)
    }

    /// The profile of the domain `f`.
    fn profile_of(&self, f: &Facts) -> String {
        let uuid = f.uuid.to_string();
        self.opts
            .domain_profiles
            .iter()
            .find(|(d, _)| *d == f.name || d.eq_ignore_ascii_case(&uuid))
            .map_or_else(|| self.opts.profile.clone(), |(_, p)| p.clone())
    }

    /// The system from its facts, its power state and the BMC state.
    fn assemble(&self, id: &str, dom: &Domain, f: Facts, bmc: BmcState) -> Result<System> {
        let profile = self.profile_of(&f);
        Ok(System {
            id: id.to_ascii_lowercase(),
            name: f.name,
            uuid: f.uuid,
            arch: f.arch,
            memory_mib: f.memory_mib,
            cpus: f.cpus,
            disks: f.disks,
            nics: f.nics,
            power: Self::power(dom)?,
            profile,
            bmc,
        })
    }

    /// Whether this domain can take `c`, as its definition stands, on its
    /// host (`uri` when that is remote).
    fn check(&self, f: &Facts, s: &BmcState, c: &Change, remote: Option<&str>) -> Result<()> {
        if let Some(uri) = remote {
            match c {
                Change::Boot(b) if b.target == BootTarget::UefiHttp => {
                    return Err(not_on_remote("HTTP boot", uri))
                }
                Change::BootCerts(_) => return Err(not_on_remote("HTTPS boot certificates", uri)),
                _ => {}
            }
        }
        match c {
            Change::Boot(b) if b.mode != s.boot.mode => {
                let possible = match b.mode {
                    BootMode::Uefi => f.uefi || !self.firmwares(f).is_empty(),
                    BootMode::Legacy => f.arch == Arch::X86_64,
                };
                if !possible {
                    return Err(Unsupported::BootMode(b.mode).into());
                }
            }
            Change::Media(slot, m) if *slot != MediaSlot::Cd => {
                return Err(match m.image {
                    Some(_) => Unsupported::Insert(*slot),
                    None => Unsupported::Eject(*slot),
                }
                .into())
            }
            _ => {}
        }
        Ok(())
    }

    /// Applies changes under the domain's lock: one read, every check
    /// before anything changes, one define (and, for the CD-ROM, the
    /// running instance's device). Returns the system afterwards.
    fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        if changes.is_empty() {
            return self.system(id);
        }
        let domain = self.lock(id);
        let _g = lock(&domain);
        let (conn, dom) = self.domain(id)?;
        let (mut d, f, mut s) = self.read(id, &dom)?;
        let remote = Some(self.conns[conn].uri.as_str()).filter(|_| self.conns[conn].remote);
        for c in &changes {
            self.check(&f, &s, c, remote)?;
        }
        let old_cd = s.cd.image.clone();
        let cd_changed = changes
            .iter()
            .any(|c| matches!(c, Change::Media(MediaSlot::Cd, _)));
        for c in changes {
            s.apply(c);
        }
        // A remote host's CD is the volume the insert uploaded; an eject
        // goes through without the pool (its volume is then left there).
        let pool = match (remote, cd_changed) {
            (Some(uri), true) => {
                match self.with_conn(conn, |c| Ok(media::pool(c, &self.opts.media_pool, uri)))? {
                    Ok(p) => Some(p),
                    Err(why) if s.cd.image.is_some() => {
                        return Err(Unsupported::Refused(why).into())
                    }
                    Err(why) => {
                        tracing::warn!(%uri, %why, "CD ejected; its volume is left");
                        None
                    }
                }
            }
            _ => None,
        };
        let path = match (&pool, s.cd.image.as_deref()) {
            (_, None) => None,
            (None, Some(u)) => Some(media::cache_path(&self.opts.media, id, u)),
            (Some(p), Some(u)) => {
                let name = media::volume_name(&self.opts.media, id, u);
                Some(media::volume_path(p, &name).ok_or_else(|| {
                    BackendError::Internal(format!("the media volume {name} is gone"))
                })?)
            }
        };
        if cd_changed {
            media::set_cdrom(&mut d, f.arch, path.as_deref());
        }
        domain::write_state(&mut d, &s);
        self.define(conn, &d)?;
        if cd_changed {
            if dom.is_active().map_err(virt_err)? {
                let live = dom.xml_desc(0).map_err(virt_err)?;
                let mut live =
                    xml::parse(&live).map_err(|e| BackendError::Internal(e.to_string()))?;
                if let Some(disk) = media::live_cdrom(&mut live, path.as_deref()) {
                    media::update_live(&dom, &disk).map_err(virt_err)?;
                }
            }
            match (
                remote,
                &pool,
                old_cd.filter(|u| Some(u) != s.cd.image.as_ref()),
            ) {
                (_, _, None) | (Some(_), None, _) => {}
                (_, Some(p), Some(u)) => {
                    media::delete_volume(p, &media::volume_name(&self.opts.media, id, &u))
                }
                (None, None, Some(u)) => {
                    let _ = std::fs::remove_file(media::cache_path(&self.opts.media, id, &u));
                }
            }
            tracing::info!(domain = %f.name, image = ?s.cd.image, "virtual CD changed");
        }
        self.assemble(id, &dom, f, s)
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
        self.blocking(move |i| i.find(&key)).await
    }

    async fn system(&self, id: &str) -> Result<System> {
        let id = id.to_string();
        self.blocking(move |i| i.system(&id)).await
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let id = id.to_string();
        self.blocking(move |i| i.reset(&id, reset)).await
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        let id = id.to_string();
        self.blocking(move |i| i.apply(&id, changes)).await
    }

    /// Volumes are the controller's configuration, kept in the domain's
    /// metadata with the rest of the BMC state; the guest keeps seeing
    /// the drives themselves (no block device per volume).
    fn manages_volumes(&self) -> bool {
        true
    }

    async fn console(&self, id: &str) -> Result<super::SerialConsole> {
        let key = id.to_string();
        self.blocking(move |i| {
            let (_, dom) = i.domain(&key)?;
            let (d, _, _) = i.read(&key, &dom)?;
            match console::streamable(&d) {
                true => Ok(()),
                false => Err(Unsupported::Console.into()),
            }
        })
        .await?;
        console::attach(&self.inner, id, tokio::runtime::Handle::current())
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        if slot != MediaSlot::Cd {
            return Err(Unsupported::Insert(slot).into());
        }
        // The domain must exist before a download is started for it, and
        // on a remote host, the pool its image goes into.
        self.system(id).await?;
        let key = id.to_string();
        let remote = self
            .blocking(move |i| {
                let (conn, _) = i.domain(&key)?;
                if !i.conns[conn].remote {
                    return Ok(None);
                }
                let uri = i.conns[conn].uri.clone();
                i.with_conn(conn, |c| {
                    Ok(media::pool(c, &i.opts.media_pool, &uri).map(drop))
                })?
                .map_err(Unsupported::Refused)?;
                Ok(Some(conn))
            })
            .await?;
        let this = self.clone();
        let id = id.to_string();
        Ok(Completion::Running(Box::pin(async move {
            this.blocking(move |i| {
                let local = media::fetch(&i.opts.media, &id, &img, slot)?;
                let Some(conn) = remote else {
                    return i
                        .apply(&id, vec![Change::Media(slot, MediaState::from(&img))])
                        .map(drop);
                };
                // The upload has a connection of its own: the host's other
                // requests do not wait on it. The cache held the image only
                // on its way to the host.
                let name = media::volume_name(&i.opts.media, &id, &img.image);
                let uri = i.conns[conn].uri.clone();
                let up = Connect::open(Some(&uri))
                    .map_err(|e| format!("connecting for the upload: {}", e.message()))
                    .and_then(|c| {
                        let pool = media::pool(&c, &i.opts.media_pool, &uri)?;
                        let path = media::upload(&c, &pool, &name, &local)?;
                        Ok((pool, path))
                    });
                let _ = std::fs::remove_file(&local);
                let (pool, path) =
                    up.map_err(|why| BackendError::Internal(format!("{uri}: {why}")))?;
                tracing::info!(%uri, volume = %name, path = %path.display(), "media uploaded");
                // A change refused now would leave the volume behind.
                i.apply(&id, vec![Change::Media(slot, MediaState::from(&img))])
                    .map(drop)
                    .inspect_err(|_| media::delete_volume(&pool, &name))
            })
            .await
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A libvirtd URI where nothing listens: a host that is down.
    const DOWN: &str = "qemu+tcp://127.0.0.1:1/system";

    #[test]
    fn a_uri_with_a_host_is_another_machine() {
        for local in [
            "qemu:///system",
            "qemu:///session",
            "test:///default",
            "qemu+unix:///system?socket=/run/x/libvirt-sock",
        ] {
            assert!(!remote_uri(local), "{local}");
        }
        for remote in [
            "qemu+tcp://10.0.0.2/system",
            "qemu+ssh://root@hv1.example/system?keyfile=/k",
            "qemu+tls://[2001:db8::2]:16514/system",
            "test+tcp://10.231.1.2/tmp/node.xml",
        ] {
            assert!(remote_uri(remote), "{remote}");
        }
    }

    fn two_hosts() -> LibvirtBackend {
        let mut opts = LibvirtOptions {
            media_pool: "default".into(),
            profile: "generic".into(),
            domain_profiles: Vec::new(),
            uris: vec![DOWN.into(), "test:///default".into()],
            allow: Vec::new(),
            http_boot: HttpBootMapping::Firmware,
            graceful_timeout: std::time::Duration::from_secs(1),
            media: crate::backend::download::MediaOptions {
                cache: std::env::temp_dir(),
                max_bytes: 1,
                timeout: std::time::Duration::from_secs(1),
                insecure: false,
                addresses: Default::default(),
            },
            nvram_dir: Some(std::env::temp_dir()),
            ipmi_in_band_dir: None,
            loaders: None,
        };
        let b = LibvirtBackend::connect(opts.clone()).expect("one host answers");
        opts.uris.truncate(1);
        let e = LibvirtBackend::connect(opts)
            .err()
            .expect("no host answers");
        assert!(e.contains("127.0.0.1:1"), "{e}");
        b
    }

    #[test]
    fn a_domain_last_seen_on_a_host_that_is_down_is_unavailable_and_the_rest_served() {
        let b = two_hosts();
        let i = &b.inner;
        // The host that answers: its domain is found and listed.
        let listed = i.list().unwrap();
        let test = listed
            .iter()
            .find(|r| r.name == "test")
            .expect("test domain");
        assert_eq!(i.domain(&test.id).unwrap().0, 1);
        // A domain the down host served before it went away.
        let ghost = "0a1b2c3d-0000-4000-8000-000000000001";
        i.homes().insert(ghost.into(), (0, "ghost".into()));
        assert!(matches!(i.domain(ghost), Err(BackendError::Unavailable(_))));
        assert!(matches!(i.find("ghost"), Err(BackendError::Unavailable(_))));
        assert!(
            i.list().unwrap().iter().any(|r| r.id == ghost),
            "still listed"
        );
        // What no host has is not found, down host or not.
        assert!(matches!(
            i.domain("0a1b2c3d-0000-4000-8000-0000000000ff"),
            Err(BackendError::NotFound(_))
        ));
        assert!(i.find("nowhere").unwrap().is_none());
        // The down host is left alone between attempts: the next request
        // is answered without reopening it.
        let retry = *i.conns[0].retry_at.lock().unwrap();
        assert!(retry.is_some());
        i.list().unwrap();
        assert_eq!(*i.conns[0].retry_at.lock().unwrap(), retry);
    }
}
