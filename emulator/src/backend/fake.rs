//! The in-memory backend: machines that exist only as state, with real BMC
//! semantics (power transitions, Once overrides consumed by a boot, BIOS
//! settings applied at reset).
//!
//! Invariants: the set of systems is fixed at start-up, so lookups need no
//! global lock; each machine has its own mutex and every operation on it is
//! atomic. Power transitions with a delay are settled lazily, whenever the
//! machine is touched, so no timer tasks exist. With a state file, a writer
//! task persists the latest snapshot after changes (atomic rename).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::watch;

use super::{Backend, BackendError, Completion, Result};
use crate::model::{
    BootMode, BootTarget, Change, MediaImage, MediaSlot, MediaState, PowerState, ResetType, System,
    SystemRef,
};
use crate::sync::lock;

/// Timing knobs, so that clients' polling code is exercised.
#[derive(Debug, Clone, Default)]
pub struct FakeOptions {
    /// How long PoweringOn/PoweringOff last.
    pub power_delay: Duration,
    /// How long an InsertMedia "download" takes (a Task when non-zero).
    pub media_delay: Duration,
    /// Where to persist state; loaded at start when it exists.
    pub state_file: Option<PathBuf>,
    /// Download InsertMedia's image and check it, as the libvirt backend
    /// does (the same errors), keeping nothing; `None`: take any URL.
    pub fetch_media: Option<crate::backend::download::MediaOptions>,
}

struct Transition {
    due: Instant,
    to: PowerState,
    boots: bool,
}

struct Machine {
    sys: System,
    transition: Option<Transition>,
    /// Its serial console: what the machine does, as lines; made when a
    /// client first asks for it (a channel per machine of 10,000 would
    /// cost more than the machines).
    console: Option<tokio::sync::broadcast::Sender<bytes::Bytes>>,
}

impl Machine {
    /// Completes a due power transition.
    fn settle(&mut self, now: Instant) {
        if let Some(t) = &self.transition {
            if t.due <= now {
                let (to, boots) = (t.to, t.boots);
                self.transition = None;
                self.power_to(to, boots);
            }
        }
    }

    /// The power state reaches `to` (a start when `boots`), and the
    /// console says so.
    fn power_to(&mut self, to: PowerState, boots: bool) {
        self.sys.power = to;
        if to == PowerState::Off {
            self.say("power off");
        }
        if boots {
            self.say("power on");
            self.boot();
        }
    }

    /// A line on the synthetic serial console.
    fn say(&self, what: &str) {
        // Nobody listening is no error.
        if let Some(c) = &self.console {
            let line = format!("\r\n[shoal {}] {what}\r\n", self.sys.name);
            let _ = c.send(bytes::Bytes::from(line));
        }
    }

    /// What happens when the firmware starts: pending BIOS settings take
    /// effect, the override is consumed if Once, the boot is recorded.
    fn boot(&mut self) {
        let uefi = self.sys.uefi();
        let disks = &self.sys.disks;
        let s = &mut self.sys.bmc;
        let at_start = s.target_at_start(uefi);
        let target = at_start.map_or(BootTarget::Hdd, |(t, _)| t);
        let media = match target {
            BootTarget::Cd if s.cd.inserted => s.cd.image.clone(),
            BootTarget::Floppy if s.floppy.inserted => s.floppy.image.clone(),
            _ => None,
        };
        s.start(uefi, target, at_start.map(|(_, from)| from), media, disks);
        let what = match s.last_boot.as_ref() {
            Some(b) => format!(
                "booting {} ({}){}",
                b.target,
                b.mode,
                b.uri
                    .as_deref()
                    .or(b.media.as_deref())
                    .map(|u| format!(" from {u}"))
                    .unwrap_or_default()
            ),
            None => format!("booting {target}"),
        };
        self.say(&what);
    }

    fn start_transition(&mut self, via: PowerState, to: PowerState, boots: bool, delay: Duration) {
        if delay.is_zero() {
            self.power_to(to, boots);
        } else {
            self.sys.power = via;
            self.transition = Some(Transition {
                due: Instant::now() + delay,
                to,
                boots,
            });
        }
    }

    fn reset(&mut self, reset: ResetType, delay: Duration) -> Result<()> {
        if self.transition.is_some() {
            return Err(BackendError::Conflict(format!(
                "{} is {} and cannot take {reset} now",
                self.sys.name, self.sys.power
            )));
        }
        use PowerState::*;
        use ResetType as R;
        let on = self.sys.power == On;
        match reset {
            R::On | R::ForceOn if !on => self.start_transition(PoweringOn, On, true, delay),
            R::On | R::ForceOn => {}
            R::ForceOff | R::GracefulShutdown if on => {
                self.start_transition(PoweringOff, Off, false, delay)
            }
            R::ForceOff | R::GracefulShutdown => {}
            // A restart of a machine that is off powers it on, as most BMCs do.
            R::GracefulRestart | R::ForceRestart | R::PowerCycle => {
                self.power_to(Off, false);
                self.start_transition(PoweringOn, On, true, delay)
            }
            R::PushPowerButton if on => self.start_transition(PoweringOff, Off, false, delay),
            R::PushPowerButton => self.start_transition(PoweringOn, On, true, delay),
            R::Nmi if on => {
                tracing::info!(system = %self.sys.name, "NMI injected");
                self.say("NMI received");
            }
            R::Nmi => {
                return Err(BackendError::Conflict(format!(
                    "{} is off: no NMI",
                    self.sys.name
                )))
            }
        }
        Ok(())
    }
}

struct Inner {
    machines: Vec<Mutex<Machine>>,
    /// Identity never changes, so listings and lookups take no machine lock.
    refs: Vec<SystemRef>,
    by_id: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    opts: FakeOptions,
    changed: watch::Sender<u64>,
}

/// The in-memory backend. Cheap to clone.
#[derive(Clone)]
pub struct FakeBackend {
    inner: Arc<Inner>,
}

impl FakeBackend {
    /// Builds the backend from the inventory's initial states. With a state
    /// file that exists, the saved mutable state of each system (matched by
    /// Id) replaces the initial one; hardware facts come from the inventory.
    pub fn new(systems: Vec<System>, opts: FakeOptions) -> std::io::Result<Self> {
        let saved = match &opts.state_file {
            Some(p) if p.exists() => load_state(p)?,
            _ => HashMap::new(),
        };
        let mut by_id = HashMap::new();
        let mut by_name = HashMap::new();
        let mut machines = Vec::with_capacity(systems.len());
        let mut refs = Vec::with_capacity(systems.len());
        for (i, mut sys) in systems.into_iter().enumerate() {
            if let Some(old) = saved.get(&sys.id) {
                restore(&mut sys, old);
            }
            by_id.insert(sys.id.clone(), i);
            by_name.insert(sys.name.clone(), i);
            refs.push(SystemRef {
                id: sys.id.clone(),
                name: sys.name.clone(),
            });
            machines.push(Mutex::new(Machine {
                sys,
                transition: None,
                console: None,
            }));
        }
        let (changed, _) = watch::channel(0);
        let fake = FakeBackend {
            inner: Arc::new(Inner {
                machines,
                refs,
                by_id,
                by_name,
                opts,
                changed,
            }),
        };
        if let Some(path) = fake.inner.opts.state_file.clone() {
            // Written now: a file that cannot be is said at start-up, not
            // found out at the first change or at exit.
            write_state(&path, &fake.snapshot()).map_err(|e| {
                std::io::Error::new(e.kind(), format!("state file {}: {e}", path.display()))
            })?;
            fake.spawn_writer(path);
        }
        Ok(fake)
    }

    fn spawn_writer(&self, path: PathBuf) {
        let mut rx = self.inner.changed.subscribe();
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                let Some(inner) = weak.upgrade() else { break };
                let snapshot = FakeBackend { inner }.snapshot();
                let path = path.clone();
                match tokio::task::spawn_blocking(move || write_state(&path, &snapshot)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::error!(error = %e, "cannot write state file"),
                    Err(e) => tracing::error!(error = %e, "state writer panicked"),
                }
            }
        });
    }

    fn snapshot(&self) -> Vec<System> {
        let now = Instant::now();
        self.inner
            .machines
            .iter()
            .map(|m| {
                let mut m = lock(m);
                m.settle(now);
                m.sys.clone()
            })
            .collect()
    }

    fn machine(&self, id: &str) -> Result<MutexGuard<'_, Machine>> {
        let i = *self
            .inner
            .by_id
            .get(id)
            .ok_or_else(|| BackendError::NotFound(id.to_string()))?;
        let mut m = lock(&self.inner.machines[i]);
        m.settle(Instant::now());
        Ok(m)
    }

    /// Runs `f` on a machine and, when it succeeds, marks the state changed.
    fn update<T>(&self, id: &str, f: impl FnOnce(&mut Machine) -> Result<T>) -> Result<T> {
        let out = {
            let mut m = self.machine(id)?;
            f(&mut m)?
        };
        self.inner.changed.send_modify(|v| *v += 1);
        Ok(out)
    }

    /// Applies BMC changes to a machine and returns it. In-memory machines
    /// can take every change.
    fn apply_now(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        if changes.is_empty() {
            return Ok(self.machine(id)?.sys.clone());
        }
        self.update(id, |m| {
            for c in changes {
                m.sys.bmc.apply(c);
            }
            Ok(m.sys.clone())
        })
    }
}

fn restore(sys: &mut System, old: &System) {
    sys.power = old.power;
    // Volumes survive a restart only over the same drives.
    let drives_exist = old.bmc.storage.volumes.iter().all(|v| {
        v.drives
            .iter()
            .all(|d| sys.disks.iter().any(|x| &x.name == d))
    });
    let storage = if drives_exist && old.disks == sys.disks {
        old.bmc.storage.clone()
    } else {
        std::mem::take(&mut sys.bmc.storage)
    };
    sys.bmc = old.bmc.clone();
    sys.bmc.storage = storage;
    if !sys.arch.has_uefi() {
        sys.bmc.boot.mode = BootMode::Legacy;
    }
}

fn load_state(path: &Path) -> std::io::Result<HashMap<String, System>> {
    let bytes = std::fs::read(path)?;
    let systems: Vec<System> = serde_json::from_slice(&bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: not a Shoal state file: {e}", path.display()),
        )
    })?;
    Ok(systems.into_iter().map(|s| (s.id.clone(), s)).collect())
}

fn write_state(path: &Path, systems: &[System]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // sushy-tools' state folder need not exist yet.
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, systems)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[async_trait]
impl Backend for FakeBackend {
    fn kind(&self) -> &'static str {
        "fake"
    }

    async fn systems(&self) -> Result<Vec<SystemRef>> {
        Ok(self.inner.refs.clone())
    }

    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>> {
        let i = self
            .inner
            .by_id
            .get(id_or_name)
            .or_else(|| self.inner.by_name.get(id_or_name));
        Ok(i.map(|&i| self.inner.refs[i].clone()))
    }

    async fn system(&self, id: &str) -> Result<System> {
        Ok(self.machine(id)?.sys.clone())
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        let delay = self.inner.opts.power_delay;
        self.update(id, |m| m.reset(reset, delay))
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        self.apply_now(id, changes)
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        // Checks that the system exists before anything is started.
        drop(self.machine(id)?);
        let fetch = self.inner.opts.fetch_media.clone().map(|opts| {
            let img = img.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    crate::backend::download::download(&opts, &img, slot, None)
                })
                .await
                .map_err(|e| BackendError::Internal(format!("media download: {e}")))?
                .map(drop)
            }
        });
        let change = Change::Media(slot, MediaState::from(&img));
        let delay = self.inner.opts.media_delay;
        if delay.is_zero() {
            if let Some(fetch) = fetch {
                fetch.await?;
            }
            self.apply_now(id, vec![change])?;
            return Ok(Completion::Done);
        }
        let this = self.clone();
        let id = id.to_string();
        Ok(Completion::Running(Box::pin(async move {
            tokio::time::sleep(delay).await;
            if let Some(fetch) = fetch {
                fetch.await?;
            }
            this.apply_now(&id, vec![change]).map(drop)
        })))
    }

    fn manages_volumes(&self) -> bool {
        true
    }

    /// The synthetic console: the machine's power transitions and boots
    /// as lines, and what is typed echoed back, as a terminal would.
    async fn console(&self, id: &str) -> Result<super::SerialConsole> {
        let out = self
            .machine(id)?
            .console
            .get_or_insert_with(|| tokio::sync::broadcast::channel(64).0)
            .clone();
        let (input, mut typed) = tokio::sync::mpsc::channel::<bytes::Bytes>(64);
        let output = out.subscribe();
        tokio::spawn(async move {
            while let Some(b) = typed.recv().await {
                let _ = out.send(b);
            }
        });
        Ok(super::SerialConsole { output, input })
    }

    async fn flush(&self) -> Result<()> {
        if let Some(path) = self.inner.opts.state_file.clone() {
            let snapshot = self.snapshot();
            tokio::task::spawn_blocking(move || write_state(&path, &snapshot))
                .await
                .map_err(|e| BackendError::Internal(e.to_string()))?
                .map_err(|e| BackendError::Internal(format!("state file: {e}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::machines::test_system;
    use crate::model::OverrideEnabled;

    fn backend(delay_ms: u64) -> FakeBackend {
        FakeBackend::new(
            vec![test_system("node-0")],
            FakeOptions {
                power_delay: Duration::from_millis(delay_ms),
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[tokio::test]
    async fn once_override_is_consumed_by_power_on() {
        let b = backend(0);
        let id = b.systems().await.unwrap()[0].id.clone();
        let mut boot = b.system(&id).await.unwrap().bmc.boot;
        boot.target = BootTarget::UefiHttp;
        boot.enabled = OverrideEnabled::Once;
        boot.http_boot_uri = Some("http://h/a.iso".into());
        b.apply(&id, vec![Change::Boot(boot)]).await.unwrap();
        b.reset(&id, ResetType::On).await.unwrap();
        let s = b.system(&id).await.unwrap();
        assert_eq!(s.power, PowerState::On);
        assert_eq!(s.bmc.boot.enabled, OverrideEnabled::Disabled);
        let rec = s.bmc.last_boot.unwrap();
        assert_eq!(rec.target, BootTarget::UefiHttp);
        assert_eq!(rec.uri.as_deref(), Some("http://h/a.iso"));
        // The next boot goes to the disk.
        b.reset(&id, ResetType::ForceRestart).await.unwrap();
        assert_eq!(
            b.system(&id).await.unwrap().bmc.last_boot.unwrap().target,
            BootTarget::Hdd
        );
    }

    #[tokio::test]
    async fn delayed_transition_passes_through_powering_on_and_refuses_resets() {
        let b = backend(50);
        let id = b.systems().await.unwrap()[0].id.clone();
        b.reset(&id, ResetType::On).await.unwrap();
        assert_eq!(b.system(&id).await.unwrap().power, PowerState::PoweringOn);
        assert!(matches!(
            b.reset(&id, ResetType::ForceOff).await,
            Err(BackendError::Conflict(_))
        ));
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(b.system(&id).await.unwrap().power, PowerState::On);
    }

    #[tokio::test]
    async fn bios_pending_applies_at_reset_only() {
        let b = backend(0);
        let id = b.systems().await.unwrap()[0].id.clone();
        let pending = std::collections::BTreeMap::from([(
            "ProcTurboMode".to_string(),
            serde_json::json!("Disabled"),
        )]);
        let after = b
            .apply(&id, vec![Change::BiosPending(pending)])
            .await
            .unwrap();
        assert_eq!(after.bmc.bios.current["ProcTurboMode"], "Enabled");
        b.reset(&id, ResetType::ForceRestart).await.unwrap();
        let s = b.system(&id).await.unwrap();
        assert_eq!(s.bmc.bios.current["ProcTurboMode"], "Disabled");
        assert!(s.bmc.bios.pending.is_empty());
    }

    #[tokio::test]
    async fn state_file_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let opts = FakeOptions {
            state_file: Some(dir.path().join("state.json")),
            ..Default::default()
        };
        let b = FakeBackend::new(vec![test_system("node-0")], opts.clone()).unwrap();
        let id = b.systems().await.unwrap()[0].id.clone();
        b.reset(&id, ResetType::On).await.unwrap();
        b.flush().await.unwrap();
        drop(b);
        let b = FakeBackend::new(vec![test_system("node-0")], opts).unwrap();
        assert_eq!(b.system(&id).await.unwrap().power, PowerState::On);
    }
}
