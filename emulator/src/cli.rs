//! Command line (clap derive, every flag also a `SHOAL_*` variable) and its
//! resolution, together with `--config`, into [`Settings`].
//! Flags win over the config file; the config file wins over defaults.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

mod ipmi;

use crate::backend::fake::FakeOptions;
use crate::backend::options::HttpBootMapping;
use crate::config::{self, ConfigError, ConfigFile, FeatureSet};
use crate::model::System;
use crate::profile::{ProfileError, Profiles};
use crate::sushy::{self, SushyConfig};

/// A Redfish BMC emulator for many machines at once.
#[derive(Debug, Parser)]
#[command(name = "shoal-emulator", version, about)]
pub struct Cli {
    /// TOML inventory: systems, auth, TLS, feature set. A `.py` or `.conf`
    /// file is a sushy-tools configuration (as --sushy-config).
    #[arg(long, env = "SHOAL_CONFIG")]
    pub config: Option<PathBuf>,
    /// A sushy-tools configuration (Python literals: SUSHY_EMULATOR_*
    /// keys), served as sushy-emulator would serve it; see the README's
    /// table of keys. Nothing in it is executed.
    #[arg(long, env = "SUSHY_EMULATOR_CONFIG", conflicts_with = "config")]
    pub sushy_config: Option<PathBuf>,
    /// Log at debug level (unless RUST_LOG says otherwise), as
    /// sushy-emulator's --debug.
    #[arg(long)]
    pub debug: bool,
    /// sushy-emulator's fake driver: the systems of the sushy-tools
    /// configuration's SUSHY_EMULATOR_FAKE_SYSTEMS, or its one default
    /// system `fake`.
    #[arg(long, conflicts_with_all = ["libvirt_uris", "fake_systems", "ironic_cloud", "os_cloud"])]
    pub fake: bool,
    /// Serve the nodes of a standalone Ironic as systems (sushy-emulator's
    /// Ironic backend): the cloud's name in clouds.yaml (found as
    /// openstacksdk finds it; auth_type none or http_basic).
    #[arg(long, env = "SHOAL_IRONIC_CLOUD", conflicts_with_all = ["os_cloud", "libvirt_uris", "fake_systems"])]
    pub ironic_cloud: Option<String>,
    /// sushy-emulator's OpenStack (Nova) backend (not served: refused).
    #[arg(long)]
    pub os_cloud: Option<String>,
    /// Refuse power-off actions (ForceOff, GracefulShutdown; IPMI power
    /// down and soft off), as sushy-tools'
    /// SUSHY_EMULATOR_DISABLE_POWER_OFF does.
    #[arg(long, env = "SHOAL_DISABLE_POWER_OFF")]
    pub disable_power_off: bool,
    /// Number of generated fake systems (node-0, node-1, ...) when the
    /// config lists none [default: 2].
    #[arg(long, env = "SHOAL_FAKE_SYSTEMS")]
    pub fake_systems: Option<usize>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(short = 'i', long, env = "SHOAL_INTERFACE")]
    pub interface: Option<IpAddr>,
    /// TCP port (0 picks a free one; the chosen address is printed)
    /// [default: 8000].
    #[arg(short, long, env = "SHOAL_PORT")]
    pub port: Option<u16>,
    /// PEM certificate chain; serves HTTPS (TLS 1.2 and 1.3) with --ssl-key.
    #[arg(long, env = "SHOAL_SSL_CERTIFICATE", requires = "ssl_key")]
    pub ssl_certificate: Option<PathBuf>,
    /// PEM private key for --ssl-certificate.
    #[arg(long, env = "SHOAL_SSL_KEY", requires = "ssl_certificate")]
    pub ssl_key: Option<PathBuf>,
    /// htpasswd file with bcrypt hashes; without one, no authentication.
    #[arg(long, env = "SHOAL_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    /// Which resources to serve.
    #[arg(long, env = "SHOAL_FEATURE_SET", value_enum)]
    pub feature_set: Option<FeatureSet>,
    /// The BMC behaviour profile of every system whose inventory entry
    /// names none (generic, openbmc, idrac9, idrac10, ilo5, ilo6,
    /// supermicro-x12, ami-asrockrack, lenovo-xcc, no-allowable-values,
    /// sushy-tools, or one of --profile-dir) [default: generic; started
    /// from a sushy-tools configuration or with --fake: sushy-tools].
    #[arg(long, env = "SHOAL_PROFILE")]
    pub profile: Option<String>,
    /// A folder of user profiles (`*.toml`, the format of the built-in
    /// ones in emulator/profiles/); one named like a built-in replaces it.
    #[arg(long, env = "SHOAL_PROFILE_DIR")]
    pub profile_dir: Option<PathBuf>,
    /// Gives every system a BMC endpoint of its own: the first listens on
    /// this address, the next on the following IPv4 address, same port
    /// (127.0.1.1:8000, 127.0.1.2:8000, ...: all of 127.0.0.0/8 is
    /// loopback), each with its own service root, sessions and accounts.
    /// Adds to the config's [[endpoints]].
    #[arg(long, env = "SHOAL_ENDPOINT_PER_SYSTEM")]
    pub endpoint_per_system: Option<SocketAddr>,
    /// Serve the admin endpoint (fault injection at runtime, apart from the
    /// Redfish tree) on this address; needs --admin-token.
    #[arg(long, env = "SHOAL_ADMIN_LISTEN", requires = "admin_token")]
    pub admin_listen: Option<SocketAddr>,
    /// The bearer token the admin endpoint requires.
    #[arg(
        long,
        env = "SHOAL_ADMIN_TOKEN",
        hide_env_values = true,
        requires = "admin_listen"
    )]
    pub admin_token: Option<String>,
    /// Most client connections served at once, over all listeners; one
    /// more is closed as soon as it is accepted.
    #[arg(long, env = "SHOAL_MAX_CONNECTIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// Seconds a client has to send a request's headers (or finish the TLS
    /// handshake); a kept-alive connection idle that long is closed.
    #[arg(long, env = "SHOAL_HEADER_TIMEOUT_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: u64,
    /// Keep the fake backend's state in this file across restarts.
    #[arg(long, env = "SHOAL_STATE_FILE")]
    pub state_file: Option<PathBuf>,
    /// Fake backend: how long power transitions take, in milliseconds.
    #[arg(long, env = "SHOAL_POWER_DELAY_MS")]
    pub power_delay_ms: Option<u64>,
    /// Fake backend: how long InsertMedia takes (a Task when non-zero).
    #[arg(long, env = "SHOAL_MEDIA_DELAY_MS")]
    pub media_delay_ms: Option<u64>,
    /// Serve libvirt domains instead of fake systems (repeatable: one
    /// emulator in front of several hypervisors). Needs the `libvirt` feature.
    #[arg(long = "libvirt-uri", env = "SHOAL_LIBVIRT_URI", value_delimiter = ',')]
    pub libvirt_uris: Vec<String>,
    /// Only these domains (names or UUIDs) are systems (repeatable).
    #[arg(
        long = "libvirt-domain",
        env = "SHOAL_LIBVIRT_DOMAINS",
        value_delimiter = ','
    )]
    pub libvirt_domains: Vec<String>,
    /// The storage pool, on a remote libvirt host (a URI with a host
    /// part), that virtual media images are uploaded into (sushy-tools'
    /// `SUSHY_EMULATOR_STORAGE_POOL`). Local hosts' domains read the
    /// image from Shoal's cache.
    #[arg(long, env = "SHOAL_LIBVIRT_MEDIA_POOL")]
    pub libvirt_media_pool: Option<String>,
    /// libvirt backend: how UefiHttp is carried out.
    #[arg(long, env = "SHOAL_HTTP_BOOT", value_enum, default_value = "firmware")]
    pub http_boot: HttpBootMapping,
    /// libvirt backend: how long GracefulRestart waits for the guest to stop.
    #[arg(long, env = "SHOAL_GRACEFUL_TIMEOUT_SECS", default_value_t = 60)]
    pub graceful_timeout_secs: u64,
    /// Fake backend: InsertMedia downloads the image and checks it (size,
    /// ISO 9660 for a CD, the address policy), answering as the libvirt
    /// backend does, and keeps nothing; without it any URL is taken.
    #[arg(long, env = "SHOAL_FAKE_FETCH_MEDIA")]
    pub fake_fetch_media: bool,
    /// libvirt backend: where InsertMedia downloads images.
    #[arg(
        long,
        env = "SHOAL_MEDIA_CACHE",
        default_value = "/var/lib/shoal/media"
    )]
    pub media_cache: PathBuf,
    /// The largest image InsertMedia accepts, in MiB (libvirt, and the
    /// fake with --fake-fetch-media; so are the next three).
    #[arg(long, env = "SHOAL_MEDIA_MAX_MIB", default_value_t = 8192)]
    pub media_max_mib: u64,
    /// How long one image download may take.
    #[arg(long, env = "SHOAL_MEDIA_TIMEOUT_SECS", default_value_t = 600)]
    pub media_timeout_secs: u64,
    /// Do not verify image servers' TLS certificates.
    #[arg(long, env = "SHOAL_MEDIA_INSECURE")]
    pub media_insecure: bool,
    /// Let InsertMedia fetch from these networks although
    /// the default refuses them (loopback, link-local), e.g. 127.0.0.0/8
    /// for images served on the emulator's own host (repeatable).
    /// Unspecified, multicast and broadcast addresses are always refused.
    #[arg(
        long = "media-allow-net",
        env = "SHOAL_MEDIA_ALLOW_NETS",
        value_delimiter = ','
    )]
    pub media_allow_nets: Vec<crate::netpolicy::IpNet>,
    /// The only IP family of the BMCs' network (4 or 6): an image URL
    /// naming an address of the other family is refused (400) when
    /// inserted, and a host name resolving only to such addresses is
    /// refused when fetched (sushy-tools'
    /// `SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY`). Default: both.
    #[arg(long, env = "SHOAL_MEDIA_IP_FAMILY", value_enum)]
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
    /// Serve IPMI over LAN (RMCP+, "lanplus") on this UDP port of every
    /// BMC of one system (an endpoint of its own, or the main service when
    /// it serves one system), on that BMC's address; 0: no IPMI. IPMI is
    /// served only when asked for: by this, the config's [ipmi] port, or
    /// an IPMI user (then on 623); it needs at least one user.
    #[arg(long, env = "SHOAL_IPMI_PORT")]
    pub ipmi_port: Option<u16>,
    /// An IPMI user, NAME:PASSWORD[:PRIVILEGE] (user, operator or
    /// administrator, the default); repeatable. These (or the config's
    /// [[ipmi.users]]) are the only accounts IPMI has: there is no
    /// built-in one. (A password may hold commas: users are not split on
    /// them.)
    #[arg(long = "ipmi-user", env = "SHOAL_IPMI_USER", hide_env_values = true)]
    pub ipmi_users: Vec<String>,
    /// Serve IPMI cipher suite 0: no authentication, any password logs
    /// in. A known hole of real BMCs, for tests of clients that probe it.
    #[arg(long, env = "SHOAL_IPMI_CIPHER_SUITE_ZERO")]
    pub ipmi_cipher_suite_zero: bool,
    /// In-band IPMI: every BMC of one system serves its host's side
    /// (KCS on x86_64, BT on powernv) on the Unix socket
    /// DIR/<system UUID>.sock, and the libvirt backend gives each domain it
    /// starts QEMU's ipmi-bmc-extern device connected there (through
    /// <qemu:commandline>). The folder's permissions decide who reaches
    /// the sockets (QEMU's user must).
    #[arg(long, env = "SHOAL_IPMI_IN_BAND_DIR", value_name = "DIR")]
    pub ipmi_in_band_dir: Option<std::path::PathBuf>,
    /// What every BMC's boot initiator mailbox (System Boot Options
    /// parameter 7) holds at start: the IANA number 02 00 00 (OpenPOWER's
    /// petitboot checks it), then this text and a NUL, in 16-byte blocks
    /// (at most 252 bytes). OpenPOWER hosts read their boot order there:
    /// "petitboot,bootdevs=network disk". IPMI writes change it later.
    #[arg(long, env = "SHOAL_IPMI_BOOT_MAILBOX", value_name = "TEXT")]
    pub ipmi_boot_mailbox: Option<String>,
}

/// Which backend serves the systems.
#[derive(Debug, Clone)]
pub enum BackendChoice {
    Fake,
    Libvirt {
        /// The profile of every domain.
        profile: String,
        uris: Vec<String>,
        allow: Vec<String>,
        http_boot: HttpBootMapping,
        graceful_timeout: Duration,
        media: crate::backend::download::MediaOptions,
        /// A remote host's pool for virtual media volumes.
        media_pool: String,
    },
    /// Ironic's nodes (`--ironic-cloud`), each with `profile`.
    Ironic {
        cloud: crate::backend::ironic::cloud::Cloud,
        profile: String,
    },
}

/// Where endpoints of their own are, beside the main service root.
#[derive(Debug, Clone, Default)]
pub struct EndpointPlan {
    /// From the config: `(key for errors, entry)`.
    pub listed: Vec<(String, config::EndpointEntry)>,
    /// `--endpoint-per-system`: the first address.
    pub per_system: Option<SocketAddr>,
}

/// Everything the server runs with, validated.
#[derive(Debug)]
pub struct Settings {
    pub listen: SocketAddr,
    /// Bounds on clients, for each listener.
    pub limits: crate::serve::Limits,
    pub tls: Option<(PathBuf, PathBuf)>,
    pub auth_file: Option<PathBuf>,
    pub feature_set: FeatureSet,
    pub fake: FakeOptions,
    pub systems: Vec<System>,
    pub backend: BackendChoice,
    pub profiles: Profiles,
    pub endpoints: EndpointPlan,
    /// Faults injected from the start.
    pub faults: crate::faults::FaultConfig,
    /// The admin endpoint: address and bearer token.
    pub admin: Option<(SocketAddr, String)>,
    /// The IPMI listeners.
    pub ipmi: crate::ipmi::IpmiSettings,
    /// Power-off actions are refused.
    pub power_off_disabled: bool,
    /// Chassis enclosing the systems' own, with their LED at start
    /// (sushy-tools' chassis, when started as sushy-emulator with the full
    /// feature set, as sushy-tools serves Chassis).
    pub enclosures: Vec<(sushy::ChassisEntry, crate::model::IndicatorLed)>,
    /// The only IP family image URLs may name (`--media-ip-family`).
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("--profile-dir: {0}")]
    ProfileDir(ProfileError),
    #[error("--profile: {0}")]
    Profile(ProfileError),
    #[error("{0}: faults.{1}")]
    Faults(String, String),
    #[error("--admin-token: must not be empty")]
    EmptyAdminToken,
    #[error("--fake-systems cannot be combined with a config file that lists [[systems]]")]
    BothInventories,
    #[error("--fake-systems must be at least 1")]
    NoSystems,
    #[error("--libvirt-uri serves libvirt domains; it cannot be combined with --fake-systems or [[systems]]")]
    LibvirtAndFake,
    #[error("{0}")]
    Ipmi(String),
    #[error("{0}: {1}")]
    Unsupported(&'static str, &'static str),
    #[error(transparent)]
    Cloud(#[from] crate::backend::ironic::cloud::CloudError),
    #[error("--ironic-cloud serves Ironic's nodes; it cannot be combined with {0}")]
    IronicAnd(&'static str),
    #[error("{0} applies to the {1} backend, and this service runs the {2} one")]
    OtherBackend(&'static str, &'static str, &'static str),
}

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
        let path = self.sushy_config.as_ref().or(self
            .config
            .as_ref()
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("py" | "conf"))));
        let (file, mut c) = match path {
            Some(p) => (p.display().to_string(), sushy::load(p, self.fake)?),
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
        let (profiles, profile) = self.profiles(&cfg, sushy.is_some())?;
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
        let systems = match libvirt || ironic.is_some() {
            true => Vec::new(),
            false => self.inventory(&file, &cfg, sushy, &profiles, &profile)?,
        };
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
        let backend = match ironic {
            Some(cloud) => BackendChoice::Ironic { cloud, profile },
            None if libvirt => self.libvirt_choice(sushy, profile, libvirt_uris, media),
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
                per_system: self.endpoint_per_system,
            },
            faults,
            admin,
            ipmi: self.ipmi_settings(&file, &cfg)?,
            power_off_disabled: self.disable_power_off
                || sushy.is_some_and(|c| c.disable_power_off),
            enclosures: enclosures(sushy, feature_set),
            media_ip_family,
        })
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
    fn libvirt_choice(
        &self,
        sushy: Option<&SushyConfig>,
        profile: String,
        uris: Vec<String>,
        media: crate::backend::download::MediaOptions,
    ) -> BackendChoice {
        BackendChoice::Libvirt {
            profile,
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
        }
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
