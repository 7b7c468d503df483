//! `shoal-harness`: end-to-end boot scenarios against shoal-emulator.
//!
//! - `run [SCENARIO_DIR]`: runs `scenarios/*.toml` in a confined lab
//!   (cargo feature `lab`, on by default).
//! - `doctor`: whether this host has what real-VM scenarios need.
//! - `serve`: the boot file server on its own.
//! - `conformance`: DMTF's four conformance tools against the emulator.
//! - `fuzz`: generated requests against the emulator, checking invariants.
//! - `bench`: shoal beside sushy-tools and nginx, at scale, under a PATCH
//!   storm and in a soak.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use shoal_harness::{bench, conformance, doctor, fuzz};
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
    Run {
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
    },
    /// Check that this host can run real-VM scenarios.
    Doctor,
    /// Run DMTF's service, protocol, use-case and interop (Ironic profile)
    /// checks against the emulator (fake backend, HTTPS, sessions); fails
    /// on any FAIL.
    Conformance {
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
    },
    /// Fuzz the emulator over loopback with requests generated from its own
    /// crawled surface; fails on any broken invariant (5xx, crash, hang,
    /// state changed by a refused request, non-Redfish error, invalid
    /// input accepted, RSS over the bound).
    Fuzz {
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
    },
    /// Benchmark shoal-emulator (fake backend) against sushy-tools 2.2.0
    /// (gunicorn, 2 workers x 2 threads) and nginx on loopback, and its
    /// IPMI side against virtualbmc 3.3.0; prints the table, scale, rack,
    /// IPMI, PATCH-storm and soak figures.
    Bench {
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
        /// BMCs in the fleet run.
        #[arg(long, default_value_t = 1000)]
        fleet_nodes: usize,
    },
    /// Serve a folder as the boot file server does.
    Serve {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value = "127.0.0.1:8080")]
        bind: SocketAddr,
        #[arg(long, default_value = "http.log")]
        log: PathBuf,
    },
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
    match Cli::parse().command {
        Command::Doctor => Ok(doctor::run()),
        Command::Conformance {
            out,
            venv,
            emulator,
            only,
            timeout_secs,
        } => {
            let emulator = emulator_or_sibling(emulator)?;
            let out = std::path::absolute(&out)?;
            std::fs::create_dir_all(&out).with_context(|| format!("{}", out.display()))?;
            let opts = conformance::Options {
                emulator,
                venv_bin: venv.join("bin"),
                out: out.clone(),
                tools: if only.is_empty() {
                    conformance::Tool::ALL.to_vec()
                } else {
                    only
                },
                timeout: std::time::Duration::from_secs(timeout_secs),
            };
            let results = conformance::run(&opts)?;
            let summary = conformance::summary(&results);
            std::fs::write(out.join("summary.txt"), &summary)?;
            std::fs::write(out.join("junit.xml"), conformance::junit(&results))?;
            print!("{summary}");
            eprintln!("conformance reports are in {}", out.display());
            Ok(if results.iter().all(|r| r.passed()) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Fuzz {
            out,
            duration_secs,
            seed,
            case,
            max_cases,
            targets,
            rss_limit_mib,
            timeout_secs,
            emulator,
        } => {
            let emulator = emulator_or_sibling(emulator)?;
            let out = std::path::absolute(&out)?;
            let seed = seed.unwrap_or_else(|| {
                let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                t.map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
            });
            eprintln!("fuzz: seed {seed} (replay with --seed {seed})");
            let opts = fuzz::Options {
                emulator,
                out: out.clone(),
                duration: std::time::Duration::from_secs(duration_secs.max(1)),
                seed,
                targets,
                rss_limit_kib: rss_limit_mib << 10,
                max_cases,
                only_case: case,
                timeout: std::time::Duration::from_secs(timeout_secs.max(1)),
            };
            let results = fuzz::run(&opts)?;
            let summary = fuzz::summary(&opts, &results);
            if case.is_none() {
                std::fs::write(out.join("summary.txt"), &summary)?;
                std::fs::write(
                    out.join("findings.jsonl"),
                    fuzz::findings_jsonl(&opts, &results),
                )?;
                std::fs::write(out.join("junit.xml"), fuzz::junit(&opts, &results))?;
            }
            print!("{summary}");
            eprintln!("fuzz reports are in {}", out.display());
            Ok(if results.iter().all(|r| r.passed()) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Bench {
            out,
            sushy_venv,
            nginx,
            no_nginx,
            emulator,
            systems,
            clients,
            duration_secs,
            scale_systems,
            rack_endpoints,
            soak_secs,
            ironic_venv,
            fleet_nodes,
        } => {
            let emulator = emulator_or_sibling(emulator)?;
            if !no_nginx && !nginx.exists() {
                anyhow::bail!(
                    "{} is missing (apt-get install nginx-light, or --no-nginx)",
                    nginx.display()
                );
            }
            if let Some(v) = &sushy_venv {
                if !v.join("bin/gunicorn").exists() {
                    anyhow::bail!(
                        "{} has no gunicorn (pip install -r ci/requirements-bench.txt)",
                        v.display()
                    );
                }
            }
            let out = std::path::absolute(&out)?;
            // The same venv holds virtualbmc (ci/requirements-bench.txt).
            let vbmc_venv = sushy_venv.clone().filter(|v| v.join("bin/vbmcd").exists());
            let opts = bench::Options {
                emulator,
                vbmc_venv,
                sushy_venv,
                nginx: (!no_nginx).then_some(nginx),
                systems: systems.max(1),
                clients: clients.max(1),
                duration: std::time::Duration::from_secs(duration_secs.max(1)),
                scale_systems: scale_systems.max(1),
                rack_endpoints: rack_endpoints.max(1),
                soak: std::time::Duration::from_secs(soak_secs.max(1)),
                out: out.clone(),
                fleet: ironic_venv.map(|v| (v, fleet_nodes.max(1))),
            };
            let report = bench::run(&opts)?;
            std::fs::write(out.join("report.txt"), &report.text)?;
            print!("{}", report.text);
            eprintln!("bench logs and report.txt are in {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { dir, bind, log } => {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(shoal_harness::fileserver::run(&dir, bind, &log))?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "lab")]
        Command::Run {
            dir,
            filter,
            exclude_tag,
            jobs,
            junit,
            artifacts,
            keep_passed,
            emulator,
            python,
            ironic_venv,
            ironic35_venv,
        } => {
            let mut scenarios = Scenario::load_dir(&dir)?;
            if let Some(f) = &filter {
                scenarios.retain(|s| s.name.contains(f.as_str()));
            }
            let before = scenarios.len();
            scenarios.retain(|s| !s.tags.iter().any(|t| exclude_tag.contains(t)));
            if scenarios.len() < before {
                eprintln!(
                    "shoal-harness: {} scenario(s) left out by tag ({})",
                    before - scenarios.len(),
                    exclude_tag.join(", ")
                );
            }
            if scenarios.is_empty() {
                anyhow::bail!("no scenario in {} matches", dir.display());
            }
            let emulator = emulator_or_sibling(emulator)?;
            let python = python.or_else(|| {
                std::env::var_os("SHOAL_TEST_VENV")
                    .map(|v| PathBuf::from(v).join("bin/python"))
                    .filter(|p| p.exists())
            });
            let artifacts = std::path::absolute(&artifacts)?;
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
                ironic_venv,
                ironic35_venv,
                keep_passed,
            };
            let results = runner::run(&scenarios, &opts)?;
            if let Some(j) = junit {
                std::fs::write(&j, runner::junit(&results))
                    .with_context(|| format!("write {}", j.display()))?;
            }
            print!("{}", runner::summary(&results));
            if results.iter().all(|r| r.passed) {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!(
                    "artifacts of the failed cases are in {}",
                    artifacts.display()
                );
                Ok(ExitCode::FAILURE)
            }
        }
    }
}
