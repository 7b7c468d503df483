//! Command line (clap derive, every flag also a `SHOAL_*` variable) and its
//! resolution, together with `--config`, into [`Settings`].
//! Flags win over the config file; the config file wins over defaults.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

mod ipmi;
mod resolve;

use crate::backend::fake::FakeOptions;
use crate::backend::options::HttpBootMapping;
use crate::config::{self, ConfigError, FeatureSet};
use crate::model::System;
use crate::profile::{ProfileError, Profiles};
use crate::sushy;

/// What a sushy-tools configuration's unknown key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnknownKeys {
    Error,
    Warn,
}

/// A Redfish BMC emulator for many machines at once.
#[derive(Debug, Parser)]
#[command(name = "shoal-emulator", version, about)]
pub struct Cli {
    /// TOML inventory: systems, auth, TLS, feature set. A `.py` or `.conf`
    /// file is a sushy-tools configuration (as --sushy-config).
    #[arg(long, env = "SHOAL_CONFIG")]
    pub config: Option<PathBuf>,
    /// A sushy-tools configuration (Python literals: SUSHY_EMULATOR_*
    /// keys), served as sushy-emulator would serve it; see docs/sushy-tools.md's
    /// table of keys. Nothing in it is executed. With a `--config` that is
    /// one too, both are read, that one's keys winning (as sushy-emulator
    /// reads its SUSHY_EMULATOR_CONFIG file, then its --config).
    #[arg(long, env = "SUSHY_EMULATOR_CONFIG")]
    pub sushy_config: Option<PathBuf>,
    /// A key of a sushy-tools configuration that no sushy-tools release
    /// reads: `error` stops the start naming it (and the key one typo
    /// away), `warn` logs that and reads on.
    #[arg(long, env = "SHOAL_UNKNOWN_KEYS", value_enum, default_value_t = UnknownKeys::Error)]
    pub unknown_keys: UnknownKeys,
    /// Log at debug level (unless RUST_LOG says otherwise), as
    /// sushy-emulator's --debug.
    #[arg(long, env = "SHOAL_DEBUG")]
    pub debug: bool,
    /// sushy-emulator's fake driver: the systems of the sushy-tools
    /// configuration's SUSHY_EMULATOR_FAKE_SYSTEMS, or its one default
    /// system `fake`.
    #[arg(long, env = "SHOAL_FAKE", conflicts_with_all = ["libvirt_uris", "fake_systems", "ironic_cloud", "os_cloud"])]
    pub fake: bool,
    /// Serve the nodes of a standalone Ironic as systems (sushy-emulator's
    /// Ironic backend): the cloud's name in clouds.yaml (found as
    /// openstacksdk finds it; auth_type none or http_basic).
    #[arg(long, env = "SHOAL_IRONIC_CLOUD", conflicts_with_all = ["os_cloud", "libvirt_uris", "fake_systems"])]
    pub ironic_cloud: Option<String>,
    /// sushy-emulator's OpenStack (Nova) backend (not served: refused).
    #[arg(long, env = "SHOAL_OS_CLOUD")]
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
    /// Replay a capture of a real BMC on the main service root: a folder
    /// (`shoal-harness capture`'s or Redfish-Mockup-Creator's layout, or a
    /// DMTF mockup's short form) or a .tar.gz of one, served as captured,
    /// with a machine behind each captured system (power, boot override).
    /// The fake backend makes one machine per captured system.
    #[arg(long, env = "SHOAL_MOCKUP")]
    pub mockup: Option<PathBuf>,
    /// Answer each replayed GET after the time it took the captured BMC
    /// (its time.json).
    #[arg(long, env = "SHOAL_MOCKUP_LATENCY", requires = "mockup")]
    pub mockup_latency: bool,
    /// Address to listen on, or a name this host resolves (`localhost`),
    /// as sushy-emulator's -i takes [default: 127.0.0.1].
    #[arg(short = 'i', long, env = "SHOAL_INTERFACE", value_parser = sushy::listen_host)]
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
    /// synthetic-strict-etag, sushy-tools, or one of --profile-dir) [default: generic; started
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
    #[arg(long, alias = "storage-pool", env = "SHOAL_LIBVIRT_MEDIA_POOL")]
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
    /// Let event subscriptions push to these networks although the
    /// default refuses them (loopback, link-local), e.g. 127.0.0.0/8 for a
    /// receiver on the emulator's own host (repeatable). Unspecified,
    /// multicast and broadcast addresses are always refused.
    #[arg(
        long = "event-allow-net",
        env = "SHOAL_EVENT_ALLOW_NETS",
        value_delimiter = ','
    )]
    pub event_allow_nets: Vec<crate::netpolicy::IpNet>,
    /// The only networks the BMCs' network reaches (repeatable; default:
    /// every network): a delivery to an address outside them fails as an
    /// unreachable destination does (retried, then its retry policy),
    /// without a packet sent, as on an isolated management network.
    #[arg(
        long = "event-reachable-net",
        env = "SHOAL_EVENT_REACHABLE_NETS",
        value_delimiter = ','
    )]
    pub event_reachable_nets: Vec<crate::netpolicy::IpNet>,
    /// Do not verify event destinations' TLS certificates (a
    /// subscription's `VerifyCertificate: false` does the same for it).
    #[arg(long, env = "SHOAL_EVENT_INSECURE")]
    pub event_insecure: bool,
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
        /// The profile of every domain but those of `domain_profiles`.
        profile: String,
        /// The domain behind each system of a replayed capture, and the
        /// profile derived from that system (`--mockup`).
        domain_profiles: Vec<(String, String)>,
        uris: Vec<String>,
        allow: Vec<String>,
        http_boot: HttpBootMapping,
        graceful_timeout: Duration,
        media: crate::backend::download::MediaOptions,
        /// A remote host's pool for virtual media volumes.
        media_pool: String,
        /// The configuration's UEFI firmware (sushy-tools' loader map).
        loaders: Option<crate::backend::options::LoaderMap>,
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
    /// Each listed endpoint's capture, loaded (`mockup = "…"`), in order.
    pub mockups: Vec<Option<crate::mockup::Replayed>>,
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
    /// Boot device requests are answered and not applied.
    pub boot_device_ignored: bool,
    /// Chassis enclosing the systems' own, with their LED at start
    /// (sushy-tools' chassis, when started as sushy-emulator with the full
    /// feature set, as sushy-tools serves Chassis).
    pub enclosures: Vec<(sushy::ChassisEntry, crate::model::IndicatorLed)>,
    /// The only IP family image URLs may name (`--media-ip-family`).
    pub media_ip_family: Option<crate::netpolicy::IpFamily>,
    /// Where and how events are pushed.
    pub events: crate::api::events::EventOptions,
    /// How the UpdateService fetches images (InsertMedia's options).
    pub updates: crate::api::update::UpdateOptions,
    /// A capture the main service root replays, and whether with its
    /// latencies (`--mockup`).
    pub mockup: Option<crate::mockup::Replayed>,
    /// sushy-tools' external notifier of the fake systems that ask for it.
    pub notify: Option<crate::notifier::Notify>,
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
    #[error("--config {0} is a Shoal inventory and --sushy-config (or SUSHY_EMULATOR_CONFIG) {1} a sushy-tools configuration: serve one of them")]
    InventoryAndSushy(String, String),
    /// Not a `source`: the message is the whole error, said once.
    #[error("--mockup: {0}")]
    Mockup(crate::mockup::MockupError),
    #[error("{0}.mockup: {1}")]
    EndpointMockup(String, crate::mockup::MockupError),
    #[error("--mockup on libvirt: the capture has {0} system(s) and {1} --libvirt-domain given; name the domain behind each captured system, in the capture's order")]
    MockupDomains(usize, usize),
    #[error(transparent)]
    Cloud(#[from] crate::backend::ironic::cloud::CloudError),
    #[error("--ironic-cloud serves Ironic's nodes; it cannot be combined with {0}")]
    IronicAnd(&'static str),
    #[error("{0} applies to the {1} backend, and this service runs the {2} one")]
    OtherBackend(&'static str, &'static str, &'static str),
}

impl From<crate::mockup::MockupError> for CliError {
    fn from(e: crate::mockup::MockupError) -> Self {
        CliError::Mockup(e)
    }
}
