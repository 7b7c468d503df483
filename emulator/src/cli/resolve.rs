//! How the command line, its `SHOAL_*` variables and the files it names
//! (`--config` TOML, a sushy-tools configuration) become [`Settings`]:
//! flags over the file, the file over defaults, every problem refused at
//! start-up naming its key.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::{BackendChoice, Cli, CliError, EndpointPlan, Settings};
use crate::backend::fake::FakeOptions;
use crate::config::{self, ConfigFile, FeatureSet};
use crate::model::System;
use crate::profile::Profiles;
use crate::sushy::{self, SushyConfig};

/// The enclosures of a service started as sushy-emulator with the full
/// feature set: sushy-tools' chassis, every LED lit at start but those its
/// configuration sets.
fn enclosures(
    sushy: Option<&SushyConfig>,
    feature_set: FeatureSet,
) -> Vec<(sushy::ChassisEntry, crate::model::IndicatorLed)> {
    match sushy {
        Some(c) if feature_set.full() => c
            .chassis
            .iter()
            .map(|e| {
                let led = c.indicator_leds.iter().find(|(u, _)| *u == e.uuid);
                (
                    e.clone(),
                    led.map_or(crate::model::IndicatorLed::Lit, |(_, l)| *l),
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Each `[[endpoints]]` entry's capture, loaded and checked, in order.
fn endpoint_mockups(
    file: &str,
    cfg: &ConfigFile,
) -> Result<Vec<Option<crate::mockup::Replayed>>, CliError> {
    cfg.endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| match &e.mockup {
            None => Ok(None),
            Some(p) => crate::mockup::Mockup::load(p)
                .map(|m| Some((std::sync::Arc::new(m), e.mockup_latency)))
                .map_err(|err| CliError::EndpointMockup(format!("{file}: endpoints[{i}]"), err)),
        })
        .collect()
}

/// A profile derived from each captured system (what its
/// AllowableValues offer), named `prefix-N`, added to `profiles`; their
/// names, in the capture's order.
fn derive_profiles(
    m: &crate::mockup::Mockup,
    profiles: &mut Profiles,
    prefix: &str,
) -> Vec<String> {
    let root = m.json("/redfish/v1").cloned().unwrap_or_default();
    let update = root
        .pointer("/UpdateService/@odata.id")
        .and_then(serde_json::Value::as_str)
        .and_then(|u| m.json(u));
    let mut names = Vec::new();
    for (i, uri) in m.systems.iter().enumerate() {
        let captured = m.json(uri).cloned().unwrap_or_default();
        let name = format!("{prefix}-{}", i + 1);
        profiles.insert(crate::mockup::derived_profile(
            &name, &root, &captured, update,
        ));
        names.push(name);
    }
    names
}

/// Each fake machine behind a captured system runs on the profile derived
/// from that system.
fn fit_mockup(
    m: &crate::mockup::Mockup,
    systems: &mut [System],
    profiles: &mut Profiles,
    prefix: &str,
) {
    for (name, sys) in derive_profiles(m, profiles, prefix)
        .into_iter()
        .zip(systems.iter_mut())
    {
        sys.profile = name;
    }
}

impl Cli {
    /// The sushy-tools configuration Shoal serves, if started as
    /// sushy-emulator is: with one (`--sushy-config`, or a `--config`
    /// ending in `.py` or `.conf`) or with `--fake`. Its notes are logged.
    fn sushy(&self) -> Result<Option<(String, SushyConfig)>, CliError> {
        if self.os_cloud.is_some() {
            return Err(CliError::Unsupported(
                "--os-cloud",
                "Shoal has no OpenStack (Nova) backend: it serves libvirt domains or fake systems",
            ));
        }
        let is_sushy =
            |p: &&PathBuf| matches!(p.extension().and_then(|e| e.to_str()), Some("py" | "conf"));
        if let (Some(s), Some(c)) = (&self.sushy_config, &self.config) {
            if !is_sushy(&c) {
                return Err(CliError::InventoryAndSushy(
                    c.display().to_string(),
                    s.display().to_string(),
                ));
            }
        }
        // sushy-emulator reads its SUSHY_EMULATOR_CONFIG file, then the one
        // --config names over it.
        let paths: Vec<&std::path::Path> = [
            self.sushy_config.as_ref(),
            self.config.as_ref().filter(is_sushy),
        ]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
        let how = sushy::Reading {
            fake: self.fake,
            unknown_keys_warn: self.unknown_keys == crate::cli::UnknownKeys::Warn,
        };
        let (file, mut c) = match paths.last() {
            Some(p) => (p.display().to_string(), sushy::load_all(&paths, how)?),
            // With a Shoal inventory (`--config x.toml`), `--fake` only
            // names the fake backend, which serves that inventory: the
            // file is applied whole (its systems, [auth], [tls], [ipmi]),
            // never traded for sushy-tools' default system.
            None if self.fake && self.config.is_none() => {
                ("--fake".to_string(), sushy::parse("--fake", "", true)?)
            }
            None => return Ok(None),
        };
        if let sushy::Driver::Libvirt(uri) = &mut c.driver {
            // sushy-emulator takes the URI from its environment over its
            // configuration.
            for var in ["SUSHY_EMULATOR_LIBVIRT_URL", "SUSHY_EMULATOR_LIBVIRT_URI"] {
                if let Some(u) = std::env::var(var).ok().filter(|u| !u.is_empty()) {
                    *uri = u;
                }
            }
        }
        for n in &c.notes {
            tracing::warn!("{n}");
        }
        Ok(Some((file, c)))
    }

    pub fn settings(&self) -> Result<Settings, CliError> {
        let sushy = self.sushy()?;
        let (file, cfg) = match (&sushy, &self.config) {
            (Some((f, c)), _) => (f.clone(), c.config_file()),
            (None, Some(p)) => (p.display().to_string(), ConfigFile::load(p)?),
            (None, None) => (String::new(), ConfigFile::default()),
        };
        let sushy = sushy.map(|(_, c)| c);
        let sushy = sushy.as_ref();
        let (mut profiles, profile) = self.profiles(&cfg, sushy.is_some())?;
        if let Some(p) = sushy.and_then(|c| c.media_profile(profiles.get(&profile).ok()?)) {
            profiles.insert(p);
        }
        let mockup = self.mockup(&cfg)?;
        let faults = cfg.faults.clone().unwrap_or_default();
        faults
            .check()
            .map_err(|why| CliError::Faults(file.clone(), why))?;
        let admin = match (self.admin_listen, &self.admin_token) {
            (Some(_), Some(t)) if t.trim().is_empty() => return Err(CliError::EmptyAdminToken),
            (Some(a), Some(t)) => Some((a, t.trim().to_string())),
            _ => None,
        };
        let (libvirt_uris, ironic) = self.machines_source(&cfg, sushy)?;
        let libvirt = !libvirt_uris.is_empty();
        let running = match (libvirt, &ironic) {
            (true, _) => "libvirt",
            (false, Some(_)) => "Ironic",
            (false, None) => "fake",
        };
        self.check_backend_flags(running)?;
        let mut systems = match libvirt || ironic.is_some() {
            true => Vec::new(),
            false => self.inventory(&file, &cfg, sushy, &profiles, &profile)?,
        };
        let mockups = endpoint_mockups(&file, &cfg)?;
        if !libvirt && ironic.is_none() {
            self.fit_mockups(&cfg, mockup.as_ref(), &mockups, &mut systems, &mut profiles);
        }
        let tls = match (&self.ssl_certificate, &self.ssl_key, &cfg.tls) {
            (Some(c), Some(k), _) => Some((c.clone(), k.clone())),
            (_, _, Some(t)) => Some((t.certificate.clone(), t.key.clone())),
            _ => None,
        };
        let feature_set = self
            .feature_set
            .or(cfg.feature_set)
            .unwrap_or(FeatureSet::Full);
        let media_ip_family = self
            .media_ip_family
            .or(sushy.and_then(|c| c.media_ip_family));
        let media = self.media_options(sushy, media_ip_family);
        let fake = self.fake_options(&cfg, sushy, &media);
        let notify = sushy.and_then(|c| notify(c, fake.power_delay));
        let updates = crate::api::update::UpdateOptions::new(media.clone());
        let backend = match ironic {
            Some(cloud) => BackendChoice::Ironic { cloud, profile },
            None if libvirt => {
                let captured = mockup.as_ref().map(|(m, _)| (m.as_ref(), &mut profiles));
                self.libvirt_choice(sushy, profile, captured, libvirt_uris, media)?
            }
            None => BackendChoice::Fake,
        };
        Ok(Settings {
            listen: SocketAddr::new(
                self.interface
                    .or(sushy.and_then(|c| c.listen_ip))
                    .unwrap_or(IpAddr::from([127, 0, 0, 1])),
                self.port
                    .or(sushy.and_then(|c| c.listen_port))
                    .unwrap_or(8000),
            ),
            limits: crate::serve::Limits {
                max_connections: self.max_connections as usize,
                header_timeout: Duration::from_secs(self.header_timeout_secs),
            },
            tls,
            auth_file: self
                .auth_file
                .clone()
                .or_else(|| cfg.auth.as_ref().map(|a| a.htpasswd.clone())),
            feature_set,
            fake,
            systems,
            backend,
            profiles,
            endpoints: EndpointPlan {
                listed: cfg
                    .endpoints
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (format!("{file}: endpoints[{i}]"), e.clone()))
                    .collect(),
                mockups,
                per_system: self.endpoint_per_system,
            },
            faults,
            admin,
            ipmi: self.ipmi_settings(&file, &cfg)?,
            power_off_disabled: self.disable_power_off
                || sushy.is_some_and(|c| c.disable_power_off),
            boot_device_ignored: sushy.is_some_and(|c| c.ignore_boot_device),
            enclosures: enclosures(sushy, feature_set),
            media_ip_family,
            events: crate::api::events::EventOptions {
                addresses: crate::netpolicy::AddressPolicy {
                    allow: self.event_allow_nets.clone(),
                    family: media_ip_family,
                    reachable: self.event_reachable_nets.clone(),
                },
                insecure: self.event_insecure,
            },
            updates,
            mockup,
            notify,
        })
    }

    /// The fake machines behind captured systems: `--mockup` without an
    /// inventory makes one per captured system; each runs on a profile
    /// derived from its captured system (the main root's capture, or its
    /// endpoint's, in the endpoint's order).
    fn fit_mockups(
        &self,
        cfg: &ConfigFile,
        main: Option<&crate::mockup::Replayed>,
        endpoints: &[Option<crate::mockup::Replayed>],
        systems: &mut Vec<System>,
        profiles: &mut Profiles,
    ) {
        if let Some((m, _)) = main {
            if cfg.systems.is_empty() && self.fake_systems.is_none() {
                *systems = config::fake_systems(m.systems.len());
                // The machines have the captured NICs' MACs.
                for (sys, uri) in systems.iter_mut().zip(&m.systems) {
                    let macs = m.macs(uri);
                    if !macs.is_empty() {
                        sys.nics = macs
                            .into_iter()
                            .map(|mac| crate::model::Nic { mac })
                            .collect();
                    }
                }
            }
            fit_mockup(m, systems, profiles, "capture");
        }
        for (i, (e, m)) in cfg.endpoints.iter().zip(endpoints).enumerate() {
            let Some((m, _)) = m else { continue };
            let mut mine: Vec<System> = e
                .systems
                .iter()
                .filter_map(|n| systems.iter().find(|s| &s.name == n).cloned())
                .collect();
            fit_mockup(
                m,
                &mut mine,
                profiles,
                &format!("endpoint{}-capture", i + 1),
            );
            for s in mine {
                if let Some(t) = systems.iter_mut().find(|t| t.name == s.name) {
                    t.profile = s.profile;
                }
            }
        }
    }

    /// The libvirt domains behind a capture's systems (`--libvirt-domain`,
    /// one for each, in the capture's order), each with the profile
    /// derived from its system (`capture-N`).
    fn mockup_domains(
        &self,
        m: &crate::mockup::Mockup,
        profiles: &mut Profiles,
    ) -> Result<Vec<(String, String)>, CliError> {
        if self.libvirt_domains.len() != m.systems.len() {
            return Err(CliError::MockupDomains(
                m.systems.len(),
                self.libvirt_domains.len(),
            ));
        }
        let names = derive_profiles(m, profiles, "capture");
        Ok(self.libvirt_domains.iter().cloned().zip(names).collect())
    }

    /// `--mockup`, loaded and checked; the main service root alone
    /// replays it.
    fn mockup(&self, cfg: &ConfigFile) -> Result<Option<crate::mockup::Replayed>, CliError> {
        let Some(path) = &self.mockup else {
            return Ok(None);
        };
        if !cfg.endpoints.is_empty() || self.endpoint_per_system.is_some() {
            return Err(CliError::Unsupported(
                "--mockup",
                "the main service root replays the capture; [[endpoints]] and --endpoint-per-system are not combined with it",
            ));
        }
        let m = crate::mockup::Mockup::load(path)?;
        tracing::info!(
            capture = %path.display(),
            resources = m.resources.len(),
            systems = m.systems.len(),
            "capture loaded"
        );
        for (from, to) in m.dangling.iter().take(20) {
            tracing::warn!(resource = %from, link = %to, "the capture links to what it does not hold (served as 404)");
        }
        Ok(Some((std::sync::Arc::new(m), self.mockup_latency)))
    }

    /// The profiles (built in and `--profile-dir`) and the default one,
    /// which must exist: `--profile`, else the file's, else `sushy-tools`
    /// when started as sushy-emulator (its systems at sushy-tools' paths),
    /// else `generic`.
    fn profiles(&self, cfg: &ConfigFile, as_sushy: bool) -> Result<(Profiles, String), CliError> {
        let profile_dir = self.profile_dir.as_ref().or(cfg.profile_dir.as_ref());
        let profiles =
            Profiles::load(profile_dir.map(PathBuf::as_path)).map_err(CliError::ProfileDir)?;
        let neutral = if as_sushy { "sushy-tools" } else { "generic" };
        let profile = self
            .profile
            .clone()
            .or_else(|| cfg.profile.clone())
            .unwrap_or_else(|| neutral.into());
        profiles.get(&profile).map_err(CliError::Profile)?;
        Ok((profiles, profile))
    }

    /// Where the machines come from: libvirt URIs (flags, else a sushy-tools
    /// configuration's), else an Ironic cloud (`--ironic-cloud` over the
    /// configuration's), loaded; neither: the fake backend. Each refused
    /// with fake systems, and with each other.
    fn machines_source(
        &self,
        cfg: &ConfigFile,
        sushy: Option<&SushyConfig>,
    ) -> Result<(Vec<String>, Option<crate::backend::ironic::cloud::Cloud>), CliError> {
        let libvirt_uris = match (&self.libvirt_uris[..], sushy.map(|c| &c.driver)) {
            ([], Some(sushy::Driver::Libvirt(uri))) => vec![uri.clone()],
            (uris, _) => uris.to_vec(),
        };
        // sushy-emulator's --ironic-cloud wins over its configuration's.
        let ironic = match (&self.ironic_cloud, sushy.map(|c| &c.driver)) {
            (Some(c), _) | (None, Some(sushy::Driver::Ironic(c))) => Some(c.clone()),
            _ => None,
        };
        let libvirt_uris = if ironic.is_some() && self.libvirt_uris.is_empty() {
            Vec::new()
        } else {
            libvirt_uris
        };
        let libvirt = !libvirt_uris.is_empty();
        let ironic = match ironic {
            None => None,
            Some(_) if libvirt => return Err(CliError::IronicAnd("--libvirt-uri")),
            Some(_) if self.fake_systems.is_some() || !cfg.systems.is_empty() => {
                return Err(CliError::IronicAnd("fake systems"))
            }
            Some(name) => Some(crate::backend::ironic::cloud::load(&name)?),
        };
        if libvirt && (self.fake_systems.is_some() || !cfg.systems.is_empty()) {
            return Err(CliError::LibvirtAndFake);
        }
        Ok((libvirt_uris, ironic))
    }

    /// The fake backend's machines: the file's `[[systems]]` (a sushy-tools
    /// configuration's fake systems, as many as it lets through, none an
    /// empty collection as there), or `--fake-systems` default ones.
    fn inventory(
        &self,
        file: &str,
        cfg: &ConfigFile,
        sushy: Option<&SushyConfig>,
        profiles: &Profiles,
        profile: &str,
    ) -> Result<Vec<System>, CliError> {
        Ok(match (cfg.systems.is_empty(), self.fake_systems) {
            (false, Some(_)) => return Err(CliError::BothInventories),
            _ if sushy.is_some() => {
                let mut v = cfg.systems(file, profiles, profile)?;
                sushy.iter().for_each(|c| c.apply(&mut v));
                v
            }
            (false, None) => cfg.systems(file, profiles, profile)?,
            (true, Some(0)) => return Err(CliError::NoSystems),
            (true, n) => {
                let mut v = config::fake_systems(n.unwrap_or(2));
                for s in &mut v {
                    s.profile = profile.to_string();
                }
                v
            }
        })
    }

    /// InsertMedia's download options.
    fn media_options(
        &self,
        sushy: Option<&SushyConfig>,
        family: Option<crate::netpolicy::IpFamily>,
    ) -> crate::backend::download::MediaOptions {
        crate::backend::download::MediaOptions {
            cache: self.media_cache.clone(),
            max_bytes: self.media_max_mib << 20,
            timeout: Duration::from_secs(self.media_timeout_secs),
            // sushy-tools verifies image servers only when told to.
            insecure: self.media_insecure || sushy.is_some_and(|c| !c.vmedia_verify_ssl),
            addresses: crate::netpolicy::AddressPolicy {
                allow: self.media_allow_nets.clone(),
                family,
                reachable: Vec::new(),
            },
        }
    }

    /// The fake backend's options: delays (flags over the file), the state
    /// file (`--state-file`, else sushy-tools' state folder for its fake
    /// driver), and whether InsertMedia downloads.
    fn fake_options(
        &self,
        cfg: &ConfigFile,
        sushy: Option<&SushyConfig>,
        media: &crate::backend::download::MediaOptions,
    ) -> FakeOptions {
        let (power_delay, media_delay) = cfg.fake_options();
        FakeOptions {
            power_delay: self
                .power_delay_ms
                .map(Duration::from_millis)
                .unwrap_or(power_delay),
            media_delay: self
                .media_delay_ms
                .map(Duration::from_millis)
                .unwrap_or(media_delay),
            state_file: self.state_file.clone().or_else(|| {
                sushy
                    .filter(|c| matches!(c.driver, sushy::Driver::Fake(_)))
                    .map(|c| c.state_dir.join(sushy::STATE_FILE))
            }),
            fetch_media: self.fake_fetch_media.then(|| media.clone()),
        }
    }

    /// The libvirt backend with its options (the allowed domains and the
    /// media pool from a sushy-tools configuration unless flags say).
    /// The libvirt backend: every domain on `profile`, but those behind a
    /// replayed capture's systems (`--mockup`), which get the profiles
    /// derived from them (added to `profiles`).
    fn libvirt_choice(
        &self,
        sushy: Option<&SushyConfig>,
        profile: String,
        captured: Option<(&crate::mockup::Mockup, &mut Profiles)>,
        uris: Vec<String>,
        media: crate::backend::download::MediaOptions,
    ) -> Result<BackendChoice, CliError> {
        let domain_profiles = match captured {
            Some((m, profiles)) => self.mockup_domains(m, profiles)?,
            None => Vec::new(),
        };
        Ok(BackendChoice::Libvirt {
            profile,
            domain_profiles,
            uris,
            allow: match sushy {
                Some(c) if self.libvirt_domains.is_empty() => c.allowed.clone(),
                _ => self.libvirt_domains.clone(),
            },
            http_boot: self.http_boot,
            graceful_timeout: Duration::from_secs(self.graceful_timeout_secs),
            media,
            media_pool: self
                .libvirt_media_pool
                .clone()
                .or_else(|| sushy.and_then(|c| c.storage_pool.clone()))
                .unwrap_or_else(|| "default".into()),
            loaders: sushy.and_then(|c| c.loaders.clone()),
        })
    }

    /// Refuses a flag of another backend than the one that runs (it would
    /// be dropped); flags with a default value are not told apart from it.
    fn check_backend_flags(&self, running: &'static str) -> Result<(), CliError> {
        let given = [
            (
                "--libvirt-domain",
                "libvirt",
                !self.libvirt_domains.is_empty(),
            ),
            (
                "--libvirt-media-pool",
                "libvirt",
                self.libvirt_media_pool.is_some(),
            ),
            ("--power-delay-ms", "fake", self.power_delay_ms.is_some()),
            ("--media-delay-ms", "fake", self.media_delay_ms.is_some()),
            ("--state-file", "fake", self.state_file.is_some()),
            ("--fake-fetch-media", "fake", self.fake_fetch_media),
        ];
        match given.into_iter().find(|(_, b, set)| *set && *b != running) {
            Some((flag, backend, _)) => Err(CliError::OtherBackend(flag, backend, running)),
            None => Ok(()),
        }
    }
}

/// sushy-tools' external notifier, when a fake system asks for it.
fn notify(c: &SushyConfig, power_delay: Duration) -> Option<crate::notifier::Notify> {
    let sushy::Driver::Fake(systems) = &c.driver else {
        return None;
    };
    let systems: Vec<_> = systems
        .iter()
        .filter_map(|s| Some((s.entry_uuid.hyphenated().to_string(), s.notifies.clone()?)))
        .collect();
    if systems.is_empty() {
        return None;
    }
    let n = &c.notification;
    Some(crate::notifier::Notify {
        url: n.url.clone(),
        ca_file: n.ca_file.clone(),
        client_cert: n.cert_file.clone().zip(n.key_file.clone()),
        systems,
        power_delay,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::model::BootTarget;

    #[test]
    fn libvirt_domains_behind_a_capture_run_on_its_derived_profiles() {
        let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/captures/idrac9")
            .display()
            .to_string();
        let args = |domains: &[&str]| {
            let mut a = vec!["shoal-emulator", "--libvirt-uri", "test:///default"];
            for d in domains {
                a.extend(["--libvirt-domain", d]);
            }
            a.extend(["--mockup", capture.as_str()]);
            Cli::parse_from(a).settings()
        };
        let s = args(&["vm-1"]).unwrap();
        let BackendChoice::Libvirt {
            profile,
            domain_profiles,
            ..
        } = &s.backend
        else {
            panic!("libvirt: {:?}", s.backend);
        };
        assert_eq!(domain_profiles, &[("vm-1".into(), "capture-1".into())]);
        assert_ne!(profile, "capture-1", "other domains keep the default");
        let derived = s.profiles.get("capture-1").unwrap();
        assert_eq!(derived.model, "PowerEdge R650");
        assert!(derived.offers(BootTarget::UefiHttp) && !derived.offers(BootTarget::UsbCd));
        // The capture holds one system: one domain stands behind it.
        for domains in [&[][..], &["vm-1", "vm-2"][..]] {
            let e = args(domains).unwrap_err().to_string();
            assert!(e.contains("the capture has 1 system(s)"), "{e}");
        }
    }

    /// The help and the variables agree with what is served: every flag
    /// has its variable (`SHOAL_*`, or sushy-tools' own), the profile
    /// flag's help names every built-in profile.
    #[test]
    fn every_flag_has_its_variable_and_the_help_names_every_profile() {
        use clap::CommandFactory;
        let cmd = crate::cli::Cli::command();
        for a in cmd.get_arguments() {
            let Some(long) = a.get_long() else { continue };
            if matches!(long, "help" | "version") {
                continue;
            }
            let env = a.get_env().map(|e| e.to_string_lossy().into_owned());
            assert!(
                env.as_deref()
                    .is_some_and(|e| e.starts_with("SHOAL_") || e.starts_with("SUSHY_EMULATOR_")),
                "--{long} has no SHOAL_* variable ({env:?})"
            );
        }
        let help = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some("profile"))
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        for name in crate::profile::Profiles::default().names() {
            assert!(help.contains(name), "--profile's help lacks {name}: {help}");
        }
    }
}
