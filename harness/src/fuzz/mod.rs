//! `shoal-harness fuzz`: requests generated from the service's own surface
//! (crawled from `/redfish/v1`, see `crawl`) against a `shoal-emulator` on
//! the fake backend, with authentication on (htpasswd) and off, started
//! from a sushy-tools configuration, and optionally on libvirt's
//! `test:///default` driver, over loopback, for a bounded time. Deterministic: case `n` of a seed is always the same
//! request (`--seed S --case N` replays one alone).
//!
//! Invariants, each a JUnit test case per target:
//! - `no-5xx`: no 5xx, except 501 for a query parameter it does not support;
//! - `alive`: the process stays up and answers (checked after each case's
//!   transport error and after every batch);
//! - `no-hang`: every request is answered within the timeout;
//! - `unchanged-after-4xx`: the resource a refused PATCH/POST/PUT/DELETE
//!   aimed at reads the same afterwards, volatile properties aside
//!   (`VOLATILE`, plus those that change between two plain GETs);
//! - `error-body`: every 4xx is a Redfish error whose `@Message.ExtendedInfo`
//!   MessageIds are `Registry.Major.Minor.Name` of a registry it serves;
//! - `rejects-invalid`: input that is certainly wrong (wrong JSON type,
//!   strings over `gen::MAX_STRING`, values outside AllowableValues,
//!   unknown properties, missing credentials) is not answered 2xx;
//! - `rss-bound`: VmRSS stays under the limit.
//!
//! An accepted request that takes the service away on purpose (a changed
//! fuzz account, a `Manager.Reset`: its BMC answers 503 for half a minute)
//! restarts the target, so the rest of the run is not blind.

pub mod crawl;
pub mod gen;
pub mod http;
mod judge;
mod report;
mod target;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};

pub use report::{findings_jsonl, junit, summary};

const USER: &str = "shoal-fuzz";
/// A second account, the target of the wrong-password cases: its lockout
/// (the service's answer to guessing) must not lock the fuzzer out.
pub(crate) const VICTIM: &str = "shoal-fuzz-victim";
const PASSWORD: &str = "fuzz-Passw0rd";
/// Cases between two health checks (liveness, credentials, RSS).
const BATCH: u64 = 25;
/// Properties that change without a request, by name, wherever they are.
pub const VOLATILE: [&str; 3] = ["@odata.etag", "DateTime", "DateTimeLocalOffset"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Fake backend, Basic authentication from an htpasswd file.
    Auth,
    /// Fake backend, no authentication.
    NoAuth,
    /// libvirt's `test:///default` driver (an emulator built with the
    /// `libvirt` feature), authentication on.
    Libvirt,
    /// Fake backend started from a sushy-tools configuration (its paths,
    /// its chassis as enclosures), authentication on.
    Sushy,
}

impl Target {
    pub const ALL: [Target; 4] = [Target::Auth, Target::NoAuth, Target::Libvirt, Target::Sushy];

    pub fn name(self) -> &'static str {
        match self {
            Target::Auth => "fake-auth",
            Target::NoAuth => "fake-noauth",
            Target::Libvirt => "libvirt-test",
            Target::Sushy => "sushy-config",
        }
    }

    pub fn parse(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }

    fn auth(self) -> bool {
        self != Target::NoAuth
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    NoServerError,
    Alive,
    NoHang,
    UnchangedAfter4xx,
    ErrorBody,
    RejectsInvalid,
    RssBound,
}

impl Invariant {
    pub const ALL: [Invariant; 7] = [
        Invariant::NoServerError,
        Invariant::Alive,
        Invariant::NoHang,
        Invariant::UnchangedAfter4xx,
        Invariant::ErrorBody,
        Invariant::RejectsInvalid,
        Invariant::RssBound,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::NoServerError => "no-5xx",
            Invariant::Alive => "alive",
            Invariant::NoHang => "no-hang",
            Invariant::UnchangedAfter4xx => "unchanged-after-4xx",
            Invariant::ErrorBody => "error-body",
            Invariant::RejectsInvalid => "rejects-invalid",
            Invariant::RssBound => "rss-bound",
        }
    }
}

pub struct Options {
    pub emulator: PathBuf,
    pub out: PathBuf,
    /// For all targets together, split evenly.
    pub duration: Duration,
    pub seed: u64,
    pub targets: Vec<Target>,
    pub rss_limit_kib: u64,
    /// Stop a target after this many cases.
    pub max_cases: Option<u64>,
    /// Run only this case (a replay), printing request and response.
    pub only_case: Option<u64>,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub invariant: Invariant,
    pub target: Target,
    pub case: u64,
    pub kind: &'static str,
    pub request: String,
    /// The whole request, escaped, cut at 4 KiB.
    pub wire: String,
    pub detail: String,
    /// How many cases hit the same (invariant, method, path, status).
    pub count: u64,
}

#[derive(Debug, Clone, Default)]
pub struct TargetResult {
    pub name: String,
    pub cases: u64,
    pub elapsed: Duration,
    pub statuses: BTreeMap<String, u64>,
    pub kinds: BTreeMap<&'static str, u64>,
    pub resources: usize,
    pub actions: usize,
    pub rss_start_kib: u64,
    pub rss_max_kib: u64,
    pub restarts: Vec<String>,
    pub volatile: Vec<String>,
    pub findings: Vec<Finding>,
    /// A reason the target could not run at all.
    pub error: Option<String>,
}

impl TargetResult {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.findings.is_empty()
    }
}

/// Runs every target in turn for its share of the time.
pub fn run(opts: &Options) -> Result<Vec<TargetResult>> {
    if !opts.emulator.exists() {
        bail!("{} is missing", opts.emulator.display());
    }
    std::fs::create_dir_all(&opts.out)?;
    let budget = opts.duration / opts.targets.len().max(1) as u32;
    let mut out = Vec::new();
    for &t in &opts.targets {
        eprintln!(
            "fuzz: {} for {:.0}s (seed {})",
            t.name(),
            budget.as_secs_f64(),
            opts.seed
        );
        let r = target::run_target(opts, t, budget).unwrap_or_else(|e| TargetResult {
            name: t.name().into(),
            error: Some(format!("{e:#}")),
            ..Default::default()
        });
        eprintln!(
            "fuzz: {}: {} cases in {:.0}s, {} finding(s){}",
            t.name(),
            r.cases,
            r.elapsed.as_secs_f64(),
            r.findings.len(),
            r.error
                .as_deref()
                .map(|e| format!("; ERROR {e}"))
                .unwrap_or_default()
        );
        out.push(r);
    }
    Ok(out)
}
