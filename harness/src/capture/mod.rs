//! `shoal-harness capture URL DIR`: a live Redfish service recorded as
//! DMTF's Redfish-Mockup-Creator records it, so that either tool's
//! captures load in the other (and in `shoal-emulator --mockup`).
//!
//! The crawl starts where Mockup-Creator's does (`/redfish`,
//! `/redfish/v1/odata`, `/redfish/v1/$metadata` and the CSDL files it
//! references, `/redfish/v1`) and follows every `@odata.id`, `Uri`,
//! `Members@odata.nextLink` and `@Redfish.ActionInfo` that names a path
//! under `/redfish/` (no fragment, no query), one request at a time, at
//! most `rate` a second, with `$expand` never asked. Each resource is one
//! folder holding `index.json` (`index.xml` for CSDL), `headers.json`
//! (`{"GET": {…}}`, credentials never kept) and `time.json`
//! (`{"GET_Time": "0.12"}`); a response that is not a 2xx JSON body is
//! kept as `error.txt` (status, headers, body). Loops end at the first
//! visit, a collection keeps at most `max_members` members (its pages
//! merged, `Members@odata.count` set to what is kept, as Mockup-Creator's
//! `--maxlogentries` does), and the crawl stops at `max_resources`; the
//! capture's README names what was cut. With `redact`, serial numbers,
//! UUIDs, MAC and IP addresses, host and user names are replaced
//! consistently (`redact.rs`) before anything is written.

mod crawl;
pub mod profile;
mod redact;
mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};

pub use crawl::{Fetched, Payload};

/// The flags of `capture`.
#[derive(clap::Args)]
pub struct Args {
    /// The service: `https://host[:port]` (or `http://`).
    pub url: String,
    /// A new or empty folder for the capture.
    pub dir: PathBuf,
    /// How to authenticate: session (created, then deleted), basic, none.
    #[arg(long, default_value = "session", value_parser = parse_auth)]
    pub auth: Auth,
    #[arg(long, short = 'u', env = "SHOAL_CAPTURE_USER")]
    pub user: Option<String>,
    #[arg(
        long,
        short = 'p',
        env = "SHOAL_CAPTURE_PASSWORD",
        hide_env_values = true
    )]
    pub password: Option<String>,
    /// Do not check the service's certificate (a BMC's own, self-signed).
    #[arg(long, short = 'k', conflicts_with = "ca")]
    pub insecure: bool,
    /// Trust the service's certificate if this CA (PEM) signed it.
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// Requests a second at most; 0 for no limit. BMCs are slow and
    /// some lock up under load.
    #[arg(long, default_value_t = 10.0)]
    pub rate: f64,
    /// Stop after this many resources (a service that links without end).
    #[arg(long, default_value_t = 20_000)]
    pub max_resources: usize,
    /// Members kept of a collection (its pages merged); the rest, and what
    /// only they link to, left out, as Mockup-Creator's --maxlogentries.
    #[arg(long, default_value_t = 200)]
    pub max_members: usize,
    /// Seconds a request may take.
    #[arg(long, default_value_t = 30)]
    pub timeout_secs: u64,
    /// Replace serial numbers, UUIDs, MAC and IP addresses, host and user
    /// names by stand-ins, consistently.
    #[arg(long)]
    pub redact: bool,
    /// A line for the capture's README.
    #[arg(long, default_value = "")]
    pub description: String,
    /// No progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl Args {
    /// Captures as the flags say: the summary's text and the figures.
    pub fn run(self) -> Result<(String, Summary)> {
        let opts = Options {
            base: self.url.trim_end_matches('/').to_string(),
            dir: self.dir,
            auth: self.auth,
            user: self.user,
            password: self.password,
            insecure: self.insecure,
            ca: self.ca,
            rate: self.rate,
            max_resources: self.max_resources,
            max_members: self.max_members,
            timeout: std::time::Duration::from_secs(self.timeout_secs.max(1)),
            redact: self.redact,
            description: self.description,
            quiet: self.quiet,
        };
        let summary = capture(&opts)?;
        Ok((summary.text(&opts), summary))
    }
}

fn parse_auth(s: &str) -> Result<Auth, String> {
    Auth::parse(s).ok_or_else(|| format!("unknown auth '{s}' (one of: session, basic, none)"))
}

/// The flags of `profile-from-capture`.
#[derive(clap::Args)]
pub struct FromCaptureArgs {
    /// The capture (a folder in Mockup-Creator's layout or DMTF's short
    /// form).
    pub dir: PathBuf,
    /// The profile's name.
    #[arg(long, default_value = "captured")]
    pub name: String,
    /// Write the profile here instead of standard output.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

impl FromCaptureArgs {
    pub fn run(self) -> Result<String> {
        let text = profile::from_capture(&self.dir, &self.name)?;
        match &self.out {
            None => Ok(text),
            Some(p) => {
                std::fs::write(p, &text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
                Ok(format!(
                    "profile {} written to {}\n",
                    self.name,
                    p.display()
                ))
            }
        }
    }
}

/// The flags of `profile-diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The profile (a TOML file, as in emulator/profiles/).
    pub profile: PathBuf,
    /// The capture.
    pub dir: PathBuf,
}

impl DiffArgs {
    /// The differences, a line each, and whether there were none.
    pub fn run(self) -> Result<(String, bool)> {
        let text = std::fs::read_to_string(&self.profile)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.profile.display()))?;
        let lines = profile::diff(&text, &self.dir)?;
        let mut out = String::new();
        for l in &lines {
            out += l;
            out.push('\n');
        }
        out += &format!(
            "{} difference(s) between {} and {}\n",
            lines.len(),
            self.profile.display(),
            self.dir.display()
        );
        Ok((out, lines.is_empty()))
    }
}

/// How the capture authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    None,
    Basic,
    /// A session created at the start and deleted at the end.
    Session,
}

impl Auth {
    pub fn parse(s: &str) -> Option<Auth> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Some(Auth::None),
            "basic" => Some(Auth::Basic),
            "session" => Some(Auth::Session),
            _ => None,
        }
    }
}

/// What to capture and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// `http(s)://host[:port]`, without a path.
    pub base: String,
    pub dir: PathBuf,
    pub auth: Auth,
    pub user: Option<String>,
    pub password: Option<String>,
    /// Do not check the service's certificate (a BMC's is self-signed).
    pub insecure: bool,
    /// A PEM file of the CA that signed the service's certificate.
    pub ca: Option<PathBuf>,
    /// Requests a second at most (0: no limit).
    pub rate: f64,
    pub max_resources: usize,
    pub max_members: usize,
    pub timeout: Duration,
    pub redact: bool,
    pub description: String,
    pub quiet: bool,
}

impl Options {
    /// A capture of `base` (`http(s)://host[:port]`) into `dir` with the
    /// command's defaults: no authentication, 10 requests a second, at
    /// most 20,000 resources and 200 members a collection, 30 s a
    /// request, nothing redacted, progress shown.
    pub fn new(base: &str, dir: &Path) -> Options {
        Options {
            base: base.trim_end_matches('/').to_string(),
            dir: dir.to_path_buf(),
            auth: Auth::None,
            user: None,
            password: None,
            insecure: false,
            ca: None,
            rate: 10.0,
            max_resources: 20_000,
            max_members: 200,
            timeout: Duration::from_secs(30),
            redact: false,
            description: String::new(),
            quiet: false,
        }
    }

    /// Checks what the flags cannot: the URL, the credentials an
    /// authentication needs, an output folder that is empty.
    pub fn check(&self) -> Result<()> {
        let Some(rest) = self
            .base
            .strip_prefix("https://")
            .or_else(|| self.base.strip_prefix("http://"))
        else {
            bail!("URL {}: give http:// or https:// and the host", self.base);
        };
        if rest.is_empty() || rest.contains('/') {
            bail!(
                "URL {}: the service's scheme and host only (the crawl starts at /redfish)",
                self.base
            );
        }
        if self.auth != Auth::None && (self.user.is_none() || self.password.is_none()) {
            bail!("--auth basic and session need --user and --password (or SHOAL_CAPTURE_USER, SHOAL_CAPTURE_PASSWORD)");
        }
        if self.max_resources == 0 {
            bail!("--max-resources must be at least 1");
        }
        if !(self.rate >= 0.0 && self.rate.is_finite()) {
            bail!("--rate must be 0 (no limit) or more");
        }
        if self.dir.exists() {
            let mut entries = std::fs::read_dir(&self.dir)
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.dir.display()))?;
            if entries.next().is_some() {
                bail!(
                    "{} is not empty: a capture goes into a new or empty folder",
                    self.dir.display()
                );
            }
        }
        Ok(())
    }
}

/// What a capture did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Resources kept as `index.json` / `index.xml`.
    pub resources: usize,
    /// Kept as `error.txt`: the URI and its status (0: no response).
    pub errors: Vec<(String, u16)>,
    /// Collections cut to `max_members`: the URI and how many it had.
    pub truncated: Vec<(String, usize)>,
    /// URIs linked but not fetched because `max_resources` was reached.
    pub not_fetched: usize,
    /// Links not followed: outside `/redfish/`, or with a query.
    pub skipped_links: usize,
    pub seconds: f64,
}

impl Summary {
    pub fn text(&self, opts: &Options) -> String {
        let mut s = format!(
            "capture: {} resources from {} into {} in {:.1} s{}\n",
            self.resources,
            opts.base,
            opts.dir.display(),
            self.seconds,
            if opts.redact { " (redacted)" } else { "" }
        );
        let gaps = self.gaps(opts);
        let (errors, others): (Vec<_>, Vec<_>) = gaps.iter().partition(|(k, _)| *k == "Error");
        if !errors.is_empty() {
            s += &format!(
                "  {} answered with an error (kept as error.txt):\n",
                errors.len()
            );
            for (_, line) in errors.iter().take(20) {
                s += &format!("    {line}\n");
            }
        }
        for (kind, line) in others {
            s += &format!("  {kind}: {line}\n");
        }
        s
    }

    /// What the capture holds other than as the service has it, a line
    /// each after its kind (`Error`, `Truncated`, `Not fetched`): the
    /// summary's and the capture README's.
    pub(crate) fn gaps(&self, opts: &Options) -> Vec<(&'static str, String)> {
        let mut out: Vec<_> = self
            .errors
            .iter()
            .map(|(uri, status)| ("Error", format!("{uri}: {}", status_text(*status))))
            .collect();
        out.extend(self.truncated.iter().map(|(uri, had)| {
            let kept = opts.max_members.min(*had);
            ("Truncated", format!("{uri}: {had} members, {kept} kept"))
        }));
        if self.not_fetched > 0 {
            out.push((
                "Not fetched",
                format!(
                    "{} linked resources (--max-resources {} reached)",
                    self.not_fetched, opts.max_resources
                ),
            ));
        }
        out
    }
}

pub(crate) fn status_text(status: u16) -> String {
    match status {
        0 => "no response".to_string(),
        s => format!("HTTP {s}"),
    }
}

/// Crawls the service and writes the capture; errors only when nothing
/// useful could be captured (no service root) or the folder cannot be
/// written.
pub fn capture(opts: &Options) -> Result<Summary> {
    opts.check()?;
    let started = std::time::Instant::now();
    let (mut fetched, mut summary) = crawl::crawl(opts)?;
    if opts.redact {
        redact::redact(&mut fetched, opts.user.as_deref());
    }
    summary.seconds = started.elapsed().as_secs_f64();
    write::write(opts, &fetched, &summary)?;
    Ok(summary)
}
