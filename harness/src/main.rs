//! `shoal-harness`: end-to-end boot scenarios against shoal-emulator.
//!
//! - `run [SCENARIO_DIR]`: runs `scenarios/*.toml` in a confined lab
//!   (cargo feature `lab`, on by default).
//! - `doctor`: whether this host has what real-VM scenarios need.
//! - `serve`: the boot file server on its own.
//! - `lab up|status|down`: machines with their BMCs that stay up.
//! - `conformance`: DMTF's four conformance tools against the emulator.
//! - `fuzz`: generated requests against the emulator, checking invariants.
//! - `bench`: shoal beside sushy-tools and nginx, at scale, under a PATCH
//!   storm and in a soak; with `--ab-baseline`, two builds of shoal
//!   interleaved in one run instead.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use shoal_harness::{bench, capture, conformance, doctor, fuzz};
#[cfg(feature = "lab")]
use shoal_harness::{runner, scenario::Scenario};

#[derive(Parser)]
#[command(name = "shoal-harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run boot scenarios end to end.
    #[cfg(feature = "lab")]
    Run(RunArgs),
    /// Build (or find in the cache) the boot images the scenarios boot,
    /// one after another, as `run` would on first use; `ci/test` starts
    /// it beside the conformance and fuzz stages on a fresh machine.
    #[cfg(feature = "lab")]
    Images(Selection),
    /// Check that this host can run real-VM scenarios.
    Doctor,
    /// Run DMTF's service, protocol, use-case and interop (Ironic profile)
    /// checks against the emulator (fake backend, HTTPS, sessions); fails
    /// on any FAIL.
    Conformance(ConformanceArgs),
    /// Fuzz the emulator over loopback with requests generated from its own
    /// crawled surface; fails on any broken invariant (5xx, crash, hang,
    /// state changed by a refused request, non-Redfish error, invalid
    /// input accepted, RSS over the bound).
    Fuzz(FuzzArgs),
    /// Benchmark shoal-emulator against sushy-tools 2.2.0, nginx and
    /// virtualbmc 3.3.0 on loopback (table, scale, rack, IPMI, PATCH-storm,
    /// soak); with --ab-baseline, two builds of shoal-emulator A/B.
    Bench(BenchArgs),
    /// Check every scenario file of a folder without booting anything.
    Validate {
        #[arg(default_value = "scenarios")]
        dir: PathBuf,
        /// Print the format's reference page (docs/scenario-reference.md) instead.
        #[arg(long)]
        reference: bool,
    },
    /// Serve a folder as the boot file server does.
    Serve(shoal_harness::fileserver::ServeArgs),
    /// A lab that stays up: machines, their BMCs, network and inventory.
    #[cfg(feature = "lab")]
    #[command(subcommand)]
    Lab(shoal_harness::lab::LabCommand),
    /// Record a live Redfish service into DIR in DMTF Redfish-Mockup-
    /// Creator's layout (index.json, headers.json, time.json per URI),
    /// which `shoal-emulator --mockup` and DMTF's Mockup-Server replay.
    Capture(capture::Args),
    /// Write a starting behaviour profile (TOML) from a capture.
    ProfileFromCapture(capture::FromCaptureArgs),
    /// List where a profile and a capture disagree; fails if they do.
    ProfileDiff(capture::DiffArgs),
}

/// Which scenarios `run` and `images` take.
#[cfg(feature = "lab")]
#[derive(Args)]
struct Selection {
    /// Folder of scenario files.
    #[arg(default_value = "scenarios")]
    dir: PathBuf,
    /// Only scenarios whose name contains this.
    #[arg(long, env = "SHOAL_FILTER")]
    filter: Option<String>,
    /// Leave out the scenarios with this tag (`tags` in the file);
    /// repeatable. `ci/test` leaves out `full`, which `ci/test --full`
    /// runs.
    #[arg(long, value_name = "TAG")]
    exclude_tag: Vec<String>,
}

/// The flags of `run`.
#[cfg(feature = "lab")]
#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    select: Selection,
    /// Cases run at once (each is one VM).
    #[arg(long, env = "SHOAL_JOBS", default_value_t = 2)]
    jobs: usize,
    /// Write JUnit XML here.
    #[arg(long, env = "SHOAL_JUNIT")]
    junit: Option<PathBuf>,
    /// Where each case's artifacts go (kept for failed cases).
    #[arg(long, env = "SHOAL_ARTIFACTS", default_value = "shoal-artifacts")]
    artifacts: PathBuf,
    /// Keep the artifacts of passed cases too.
    #[arg(long)]
    keep_passed: bool,
    /// The shoal-emulator binary (built with --features libvirt);
    /// default: the one beside this program.
    #[arg(long, env = "SHOAL_EMULATOR")]
    emulator: Option<PathBuf>,
    /// Python of the venv with sushy (default: $SHOAL_TEST_VENV/bin/python).
    #[arg(long, env = "SHOAL_PYTHON")]
    python: Option<PathBuf>,
    /// The venv with Ironic, for scenarios of the `ironic` driver
    /// (ci/test builds it from ci/requirements-ironic.txt).
    #[arg(long, env = "SHOAL_IRONIC_VENV")]
    ironic_venv: Option<PathBuf>,
    /// The venv with Ironic 35, the last release with the ilo5
    /// hardware type, for `ilo5` scenarios (ci/test builds it from
    /// ci/requirements-ironic35.txt).
    #[arg(long, env = "SHOAL_IRONIC35_VENV")]
    ironic35_venv: Option<PathBuf>,
    /// Your own driver code in place of the venvs' (a sushy or Ironic
    /// checkout, a folder of modules): first on every Python's PYTHONPATH.
    #[arg(long, env = "SHOAL_DRIVER_SOURCE", value_delimiter = ':')]
    driver_source: Vec<PathBuf>,
}

/// The flags of `conformance`.
#[derive(Args)]
struct ConformanceArgs {
    /// Reports, logs, summary.txt and junit.xml go here.
    #[arg(
        long,
        env = "SHOAL_CONFORMANCE_OUT",
        default_value = "shoal-artifacts/conformance"
    )]
    out: PathBuf,
    /// The venv with the DMTF tools (default: $SHOAL_CONFORMANCE_VENV).
    #[arg(long, env = "SHOAL_CONFORMANCE_VENV")]
    venv: PathBuf,
    /// The shoal-emulator binary; default: the one beside this program.
    #[arg(long, env = "SHOAL_EMULATOR")]
    emulator: Option<PathBuf>,
    /// Only these tools (service-validator, protocol-validator,
    /// use-case-checkers, interop-validator).
    #[arg(long, value_delimiter = ',', value_parser = parse_tool)]
    only: Vec<conformance::Tool>,
    /// Limit per tool, in seconds.
    #[arg(long, default_value_t = 1200)]
    timeout_secs: u64,
}

/// The flags of `fuzz`.
#[derive(Args)]
struct FuzzArgs {
    /// summary.txt, findings.jsonl, junit.xml and logs go here.
    #[arg(long, env = "SHOAL_FUZZ_OUT", default_value = "shoal-artifacts/fuzz")]
    out: PathBuf,
    /// Seconds for all targets together.
    #[arg(long, env = "SHOAL_FUZZ_SECS", default_value_t = 240)]
    duration_secs: u64,
    /// The seed (printed; default: from the clock).
    #[arg(long, env = "SHOAL_FUZZ_SEED")]
    seed: Option<u64>,
    /// Replay this one case of --seed, printing request and response.
    #[arg(long)]
    case: Option<u64>,
    /// At most this many cases per target.
    #[arg(long, env = "SHOAL_FUZZ_MAX_CASES")]
    max_cases: Option<u64>,
    /// fake-auth, fake-noauth, sushy-config (started from a
    /// sushy-tools configuration), ipmi (RMCP+ datagrams and sessions),
    /// libvirt-test (needs an emulator built with the libvirt feature).
    #[arg(long, env = "SHOAL_FUZZ_TARGETS", value_delimiter = ',', value_parser = parse_target,
          default_value = "fake-auth,fake-noauth,sushy-config,ipmi")]
    targets: Vec<fuzz::Target>,
    /// The emulator's VmRSS bound, in MiB.
    #[arg(long, env = "SHOAL_FUZZ_RSS_MIB", default_value_t = 200)]
    rss_limit_mib: u64,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 10)]
    timeout_secs: u64,
    /// The shoal-emulator binary; default: the one beside this program.
    #[arg(long, env = "SHOAL_EMULATOR")]
    emulator: Option<PathBuf>,
}

/// The flags of `bench`.
#[derive(Args)]
struct BenchArgs {
    /// Logs, configs and report.txt go here.
    #[arg(long, env = "SHOAL_BENCH_OUT", default_value = "shoal-artifacts/bench")]
    out: PathBuf,
    /// Venv with sushy-tools and gunicorn (ci/requirements-bench.txt);
    /// without it sushy-tools is left out.
    #[arg(long, env = "SHOAL_BENCH_VENV")]
    sushy_venv: Option<PathBuf>,
    /// The nginx binary.
    #[arg(long, default_value = "/usr/sbin/nginx")]
    nginx: PathBuf,
    /// Leave nginx out.
    #[arg(long)]
    no_nginx: bool,
    /// The shoal-emulator binary; default: the one beside this program
    /// (build with --release for figures worth quoting).
    #[arg(long, env = "SHOAL_EMULATOR")]
    emulator: Option<PathBuf>,
    /// Systems in each service.
    #[arg(long, default_value_t = 10)]
    systems: usize,
    /// Concurrent keep-alive clients.
    #[arg(long, default_value_t = 64)]
    clients: usize,
    /// Seconds per table row.
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Systems in the scale run.
    #[arg(long, default_value_t = 10_000)]
    scale_systems: usize,
    /// BMC endpoints of their own in the rack run.
    #[arg(long, default_value_t = 1000)]
    rack_endpoints: usize,
    /// Seconds of the soak.
    #[arg(long, default_value_t = 300)]
    soak_secs: u64,
    /// Venv with Ironic (ci/requirements-ironic.txt): with it, the
    /// fleet run (Ironic enrolling --fleet-nodes BMCs of Shoal, then of
    /// sushy-tools; needs root for its network namespace).
    #[arg(long, env = "SHOAL_IRONIC_VENV")]
    ironic_venv: Option<PathBuf>,
    /// BMCs in the fleet run; 0: no fleet run, even with an Ironic venv.
    #[arg(long, default_value_t = 1000)]
    fleet_nodes: usize,
    /// A/B mode: a second shoal-emulator binary, the baseline (A);
    /// --emulator is the candidate (B). With it only the A/B rows run
    /// (GET System, PATCH Boot, IPMI Get Chassis Status), rounds
    /// alternating A B A B, each a fresh process, --duration-secs long;
    /// the report gives each side's median and range and a verdict.
    #[arg(long, env = "SHOAL_BENCH_BASELINE")]
    ab_baseline: Option<PathBuf>,
    /// Rounds per side and operation in A/B mode.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..))]
    ab_rounds: u32,
    /// Only the events row (GET System beside push subscribers and SSE
    /// streams, alone and beside, twice), for work on event delivery.
    #[arg(long, conflicts_with = "ab_baseline")]
    events_only: bool,
}

fn parse_tool(s: &str) -> Result<conformance::Tool, String> {
    conformance::Tool::parse(s).ok_or_else(|| {
        let names: Vec<&str> = conformance::Tool::ALL.iter().map(|t| t.name()).collect();
        format!("unknown tool '{s}' (one of: {})", names.join(", "))
    })
}

fn parse_target(s: &str) -> Result<fuzz::Target, String> {
    fuzz::Target::parse(s).ok_or_else(|| {
        let names: Vec<&str> = fuzz::Target::ALL.iter().map(|t| t.name()).collect();
        format!("unknown target '{s}' (one of: {})", names.join(", "))
    })
}

/// `--emulator`, else the `shoal-emulator` beside this program.
fn emulator_or_sibling(emulator: Option<PathBuf>) -> Result<PathBuf> {
    let sibling = || {
        std::env::current_exe()
            .ok()?
            .parent()
            .map(|d| d.join("shoal-emulator"))
            .filter(|p| p.exists())
    };
    emulator
        .or_else(sibling)
        .context("no shoal-emulator beside this program; pass --emulator")
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shoal-harness: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> Result<ExitCode> {
    let report = match Cli::parse().command {
        Command::Doctor => return Ok(doctor::run()),
        Command::Validate { dir, reference } => return shoal_harness::check::run(&dir, reference),
        Command::Serve(args) => return args.serve(),
        #[cfg(feature = "lab")]
        Command::Lab(c) => return c.run(),
        Command::Conformance(args) => args.run()?,
        Command::Fuzz(args) => args.run()?,
        Command::ProfileFromCapture(args) => Report {
            files: Vec::new(),
            summary: args.run()?,
            look: None,
            passed: true,
        },
        Command::ProfileDiff(args) => {
            let (summary, passed) = args.run()?;
            Report {
                files: Vec::new(),
                summary,
                look: None,
                passed,
            }
        }
        Command::Capture(args) => {
            let (summary, _) = args.run()?;
            Report {
                files: Vec::new(),
                summary,
                look: None,
                passed: true,
            }
        }
        Command::Bench(args) => args.run()?,
        #[cfg(feature = "lab")]
        Command::Run(args) => args.run()?,
        #[cfg(feature = "lab")]
        Command::Images(select) => {
            let started = std::time::Instant::now();
            let n = runner::prebuild(&select.scenarios()?)?;
            Report {
                files: Vec::new(),
                summary: format!(
                    "images: {n} ready in {:.0} s\n",
                    started.elapsed().as_secs_f64()
                ),
                look: None,
                passed: true,
            }
        }
    };
    finish(report)
}

/// What a command leaves behind: its report files, the summary for
/// stdout, a line for stderr saying where to look, and its verdict.
struct Report {
    files: Vec<(PathBuf, String)>,
    summary: String,
    /// Printed after the summary (`None`: nothing to point at).
    look: Option<String>,
    passed: bool,
}

/// The one way a command ends: its files written, its summary printed,
/// where to look said, and the exit code of its verdict.
fn finish(report: Report) -> Result<ExitCode> {
    for (path, text) in &report.files {
        std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
    }
    print!("{}", report.summary);
    if let Some(look) = &report.look {
        eprintln!("{look}");
    }
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

impl ConformanceArgs {
    fn run(self) -> Result<Report> {
        let emulator = emulator_or_sibling(self.emulator)?;
        let out = std::path::absolute(&self.out)?;
        std::fs::create_dir_all(&out).with_context(|| format!("{}", out.display()))?;
        let opts = conformance::Options {
            emulator,
            venv_bin: self.venv.join("bin"),
            out: out.clone(),
            tools: if self.only.is_empty() {
                conformance::Tool::ALL.to_vec()
            } else {
                self.only
            },
            timeout: std::time::Duration::from_secs(self.timeout_secs),
        };
        let results = conformance::run(&opts)?;
        let summary = conformance::summary(&results);
        Ok(Report {
            files: vec![
                (out.join("summary.txt"), summary.clone()),
                (out.join("junit.xml"), conformance::junit(&results)),
            ],
            summary,
            look: Some(format!("conformance reports are in {}", out.display())),
            passed: results.iter().all(|r| r.passed()),
        })
    }
}

impl FuzzArgs {
    fn run(self) -> Result<Report> {
        let emulator = emulator_or_sibling(self.emulator)?;
        let out = std::path::absolute(&self.out)?;
        let seed = self.seed.unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            t.map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
        });
        eprintln!("fuzz: seed {seed} (replay with --seed {seed})");
        let opts = fuzz::Options {
            emulator,
            out: out.clone(),
            duration: std::time::Duration::from_secs(self.duration_secs.max(1)),
            seed,
            targets: self.targets,
            rss_limit_kib: self.rss_limit_mib << 10,
            max_cases: self.max_cases,
            only_case: self.case,
            timeout: std::time::Duration::from_secs(self.timeout_secs.max(1)),
        };
        let results = fuzz::run(&opts)?;
        let summary = fuzz::summary(&opts, &results);
        // A replayed case leaves no report files.
        let files = match self.case {
            Some(_) => Vec::new(),
            None => vec![
                (out.join("summary.txt"), summary.clone()),
                (
                    out.join("findings.jsonl"),
                    fuzz::findings_jsonl(&opts, &results),
                ),
                (out.join("junit.xml"), fuzz::junit(&opts, &results)),
            ],
        };
        Ok(Report {
            files,
            summary,
            look: Some(format!("fuzz reports are in {}", out.display())),
            passed: results.iter().all(|r| r.passed()),
        })
    }
}

impl BenchArgs {
    fn run(self) -> Result<Report> {
        let emulator = emulator_or_sibling(self.emulator)?;
        // The A/B rows need neither nginx nor sushy-tools.
        let ab = self.ab_baseline.map(|baseline| bench::Ab {
            baseline,
            rounds: self.ab_rounds as usize,
        });
        if ab.is_none() && !self.no_nginx && !self.nginx.exists() {
            anyhow::bail!(
                "{} is missing (apt-get install nginx-light, or --no-nginx)",
                self.nginx.display()
            );
        }
        if let Some(v) = &self.sushy_venv {
            if !v.join("bin/gunicorn").exists() {
                anyhow::bail!(
                    "{} has no gunicorn (pip install -r ci/requirements-bench.txt)",
                    v.display()
                );
            }
        }
        let out = std::path::absolute(&self.out)?;
        // The same venv holds virtualbmc (ci/requirements-bench.txt).
        let vbmc_venv = self
            .sushy_venv
            .clone()
            .filter(|v| v.join("bin/vbmcd").exists());
        let opts = bench::Options {
            emulator,
            vbmc_venv,
            sushy_venv: self.sushy_venv,
            nginx: (!self.no_nginx).then_some(self.nginx),
            systems: self.systems.max(1),
            clients: self.clients.max(1),
            duration: std::time::Duration::from_secs(self.duration_secs.max(1)),
            scale_systems: self.scale_systems.max(1),
            rack_endpoints: self.rack_endpoints.max(1),
            soak: std::time::Duration::from_secs(self.soak_secs.max(1)),
            out: out.clone(),
            fleet: self
                .ironic_venv
                .filter(|_| self.fleet_nodes > 0)
                .map(|v| (v, self.fleet_nodes)),
        };
        let report = match &ab {
            Some(ab) => bench::run_ab(&opts, ab)?,
            None if self.events_only => bench::run_events(&opts)?,
            None => bench::run(&opts)?,
        };
        Ok(Report {
            files: vec![(out.join("report.txt"), report.text.clone())],
            summary: report.text,
            look: Some(format!(
                "bench logs and report.txt are in {}",
                out.display()
            )),
            // Figures are printed, never judged.
            passed: true,
        })
    }
}

#[cfg(feature = "lab")]
impl RunArgs {
    fn run(self) -> Result<Report> {
        runner::use_driver_sources(&self.driver_source)?;
        let scenarios = self.select.scenarios()?;
        let emulator = emulator_or_sibling(self.emulator)?;
        let python = self.python.or_else(|| {
            std::env::var_os("SHOAL_TEST_VENV")
                .map(|v| PathBuf::from(v).join("bin/python"))
                .filter(|p| p.exists())
        });
        let artifacts = std::path::absolute(&self.artifacts)?;
        let jobs = self.jobs;
        eprintln!(
            "shoal-harness: {} scenario(s), {jobs} at a time; artifacts in {}",
            scenarios.len(),
            artifacts.display()
        );
        let opts = runner::Options {
            jobs,
            artifacts: artifacts.clone(),
            emulator,
            python,
            ironic_venv: self.ironic_venv,
            ironic35_venv: self.ironic35_venv,
            keep_passed: self.keep_passed,
        };
        let results = runner::run(&scenarios, &opts)?;
        let passed = results.iter().all(|r| r.passed);
        Ok(Report {
            files: self
                .junit
                .map(|j| (j, runner::junit(&results)))
                .into_iter()
                .collect(),
            summary: runner::summary(&results),
            look: (!passed).then(|| {
                format!(
                    "artifacts of the failed cases are in {}",
                    artifacts.display()
                )
            }),
            passed,
        })
    }
}

#[cfg(feature = "lab")]
impl Selection {
    /// The scenarios in `dir` that `--filter` and `--exclude-tag` leave.
    fn scenarios(&self) -> Result<Vec<Scenario>> {
        let mut scenarios = Scenario::load_dir(&self.dir)?;
        if let Some(f) = &self.filter {
            scenarios.retain(|s| s.name.contains(f.as_str()));
        }
        let before = scenarios.len();
        scenarios.retain(|s| !s.tags.iter().any(|t| self.exclude_tag.contains(t)));
        if scenarios.len() < before {
            eprintln!(
                "shoal-harness: {} scenario(s) left out by tag ({})",
                before - scenarios.len(),
                self.exclude_tag.join(", ")
            );
        }
        if scenarios.is_empty() {
            anyhow::bail!("no scenario in {} matches", self.dir.display());
        }
        Ok(scenarios)
    }
}
