//! `shoal-harness bench --ab-baseline PATH`: two builds of shoal-emulator
//! measured in one run, a baseline (A) and a candidate (B), so that a
//! change can show its rows "within noise of before".
//!
//! Only the A/B rows run: GET System and PATCH Boot (no auth, the
//! service's `--systems`, `--clients` keep-alive clients, as `compare`
//! starts and drives shoal) and IPMI Get Chassis Status (1 client, cipher
//! suite 3, as the IPMI rows start and drive it). For each operation the
//! rounds alternate A B A B ..., each a process started fresh for that
//! round alone and stopped by pid after it; every round runs
//! `--duration-secs`.
//!
//! Per side the figures are the median of the rounds' req/s (with their
//! min and max) and the median of the rounds' p50 and p99. The verdict
//! (see [`verdict`]): with `w` the larger of the two sides' relative
//! spread, (max - min) / median of its rounds' req/s, the band is
//! `[min_A * (1 - w), max_A * (1 + w)]`: the baseline rounds' range
//! widened by the rounds' own relative spread. A candidate median inside
//! the band is "within noise"; above it "faster", below it "slower".
//! Beside it, each round's B against the A run just before it, which a
//! drift of the machine moves less. Figures are printed, never asserted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::ipmi::{self, Figures};
use super::services::{start_shoal, system_paths, url_addr};
use super::{operation, progress, rt, Op, Options, Report, Target};
use crate::load::{self, Stats};

/// IPMI Get Chassis Status as the first IPMI row runs it.
const IPMI_CLIENTS: usize = 1;
const IPMI_SUITE: u8 = 3;

/// What the A/B mode needs beyond the bench's options (whose `emulator`
/// is the candidate).
pub struct Ab {
    /// The baseline shoal-emulator binary.
    pub baseline: PathBuf,
    /// Rounds per side and operation (at least 2: a verdict needs a
    /// spread).
    pub rounds: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AbOp {
    Http(Op),
    IpmiChassisStatus,
}

const OPS: [AbOp; 3] = [
    AbOp::Http(Op::GetSystem),
    AbOp::Http(Op::PatchBoot),
    AbOp::IpmiChassisStatus,
];

impl AbOp {
    fn label(self) -> String {
        match self {
            AbOp::Http(op) => op.label().to_string(),
            AbOp::IpmiChassisStatus => {
                format!("IPMI Get Chassis Status ({IPMI_CLIENTS} client, suite {IPMI_SUITE})")
            }
        }
    }

    fn slug(self) -> &'static str {
        match self {
            AbOp::Http(Op::GetSystem) => "get-system",
            AbOp::Http(Op::PatchBoot) => "patch-boot",
            AbOp::Http(_) => "http",
            AbOp::IpmiChassisStatus => "ipmi-chassis-status",
        }
    }
}

/// One round's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl From<&Stats> for Sample {
    fn from(s: &Stats) -> Sample {
        Sample {
            rate: s.rate(),
            p50_ms: s.percentile_ms(50.0).unwrap_or(0.0),
            p99_ms: s.percentile_ms(99.0).unwrap_or(0.0),
            errors: s.errors,
            first_error: s.first_error.clone(),
        }
    }
}

impl From<Figures> for Sample {
    fn from(f: Figures) -> Sample {
        Sample {
            rate: f.per_sec,
            p50_ms: f.p50_ms,
            p99_ms: f.p99_ms,
            errors: f.errors,
            first_error: f.first_error,
        }
    }
}

/// One operation's rounds, in the order they ran (A B A B ...).
#[derive(Debug, Clone)]
pub struct AbRow {
    pub label: String,
    pub baseline: Vec<Sample>,
    pub candidate: Vec<Sample>,
}

/// The median (the mean of the middle two for an even count); 0 for none.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median, min and max of one side's rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(xs: &[f64]) -> Spread {
        Spread {
            median: median(xs),
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// (max - min) / median.
    pub fn relative(&self) -> f64 {
        (self.max - self.min) / self.median
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    WithinNoise,
    Faster,
    Slower,
    /// A side with no successful request: no verdict.
    NoFigures,
}

impl Outcome {
    pub fn text(self) -> &'static str {
        match self {
            Outcome::WithinNoise => "within noise",
            Outcome::Faster => "faster",
            Outcome::Slower => "SLOWER",
            Outcome::NoFigures => "no figures",
        }
    }
}

/// The verdict on two sides' req/s rounds, and how it was reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub baseline: Spread,
    pub candidate: Spread,
    /// The larger of the two sides' relative spreads.
    pub widen: f64,
    /// `[baseline.min * (1 - widen), baseline.max * (1 + widen)]`.
    pub band: (f64, f64),
    /// (candidate median - baseline median) / baseline median, in %.
    pub diff_pct: f64,
}

/// The candidate's median req/s against the baseline rounds' range
/// `[min_A, max_A]` widened by `w`, the larger of the two sides' relative
/// spread ((max - min) / median of its rounds): inside
/// `[min_A * (1 - w), max_A * (1 + w)]` is within noise, above faster,
/// below slower.
pub fn verdict(baseline: &[f64], candidate: &[f64]) -> Verdict {
    let b = Spread::of(baseline);
    let c = Spread::of(candidate);
    if baseline.is_empty() || candidate.is_empty() || !(b.median > 0.0 && c.median > 0.0) {
        return Verdict {
            outcome: Outcome::NoFigures,
            baseline: b,
            candidate: c,
            widen: 0.0,
            band: (0.0, 0.0),
            diff_pct: 0.0,
        };
    }
    let widen = b.relative().max(c.relative());
    let band = (b.min * (1.0 - widen), b.max * (1.0 + widen));
    let outcome = if c.median < band.0 {
        Outcome::Slower
    } else if c.median > band.1 {
        Outcome::Faster
    } else {
        Outcome::WithinNoise
    };
    Verdict {
        outcome,
        baseline: b,
        candidate: c,
        widen,
        band,
        diff_pct: (c.median - b.median) / b.median * 100.0,
    }
}

/// Round i's candidate against round i's baseline (run just before it),
/// in %: a drift of the machine moves both alike, so a sign that holds in
/// every pair says more than the verdict's band. Shown, not judged.
pub fn pair_diffs_pct(baseline: &[f64], candidate: &[f64]) -> Vec<f64> {
    baseline
        .iter()
        .zip(candidate)
        .map(|(a, b)| if *a > 0.0 { (b - a) / a * 100.0 } else { 0.0 })
        .collect()
}

/// One round of `op` against a fresh `emulator`, its files in `dir`.
fn round(
    op: AbOp,
    emulator: &Path,
    opts: &Options,
    dir: &Path,
    rt: &tokio::runtime::Runtime,
) -> Result<Sample> {
    std::fs::create_dir_all(dir)?;
    match op {
        AbOp::Http(op) => {
            let emu = start_shoal(emulator, dir, opts.systems, false)?;
            let addr = url_addr(&emu.url)?;
            let t = Target {
                name: "shoal",
                addr,
                systems: rt.block_on(system_paths(addr, None))?,
                basic: None,
            };
            let s = rt.block_on(load::run(
                addr,
                opts.clients,
                opts.duration,
                operation(op, &t),
            ));
            drop(emu);
            Ok(Sample::from(&s))
        }
        AbOp::IpmiChassisStatus => {
            let (emu, bmc) = ipmi::start_shoal(emulator, &dir.join("shoal-ipmi.log"))?;
            let f = ipmi::chassis_status_load(bmc, IPMI_CLIENTS, opts.duration, IPMI_SUITE)?;
            drop(emu);
            Ok(f.into())
        }
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "-".into())
}

/// The A/B rows: baseline `ab.baseline`, candidate `opts.emulator`.
pub fn run_ab(opts: &Options, ab: &Ab) -> Result<Report> {
    if ab.rounds < 2 {
        bail!("--ab-rounds must be at least 2 (the verdict needs a spread)");
    }
    for (side, p) in [("baseline", &ab.baseline), ("candidate", &opts.emulator)] {
        if !p.is_file() {
            bail!("the {side} shoal-emulator {} is missing", p.display());
        }
    }
    let dir = opts.out.join("ab");
    std::fs::create_dir_all(&dir)?;
    let rt = rt()?;
    let load_start = loadavg();
    let mut rows = Vec::new();
    for op in OPS {
        let mut row = AbRow {
            label: op.label(),
            baseline: Vec::new(),
            candidate: Vec::new(),
        };
        for r in 1..=ab.rounds {
            for (side, bin) in [("A", &ab.baseline), ("B", &opts.emulator)] {
                progress(&format!(
                    "A/B {} round {r}/{} {side} ...",
                    row.label, ab.rounds
                ));
                let d = dir.join(format!("{}-r{r}-{side}", op.slug()));
                let s = round(op, bin, opts, &d, &rt)?;
                progress(&format!(
                    "  {:.0}/s p50 {:.2} ms p99 {:.2} ms errors {}",
                    s.rate, s.p50_ms, s.p99_ms, s.errors
                ));
                match side {
                    "A" => row.baseline.push(s),
                    _ => row.candidate.push(s),
                }
            }
        }
        rows.push(row);
    }
    let load_end = loadavg();
    let mut text = format!(
        "A/B: baseline (A) {}\n     candidate (B) {}\n\
         {} rounds per side and operation, {:.0} s each, interleaved A B A B ...; \
         each round a fresh process on loopback.\n\
         HTTP: {} systems, {} keep-alive clients, no auth; IPMI: {IPMI_CLIENTS} client, suite {IPMI_SUITE}.\n\
         load average (1, 5, 15 min) at start {load_start}, at end {load_end}\n\n",
        ab.baseline.display(),
        opts.emulator.display(),
        ab.rounds,
        opts.duration.as_secs_f64(),
        opts.systems,
        opts.clients,
    );
    text.push_str(&ab_table(&rows));
    Ok(Report {
        rows: Vec::new(),
        text,
    })
}

/// The A/B table, each operation's rounds, and how the verdict is reached.
pub fn ab_table(rows: &[AbRow]) -> String {
    let mut t = String::from(
        "| operation | A req/s median (min–max) | A p50 | A p99 | B req/s median (min–max) | B p50 | B p99 | B vs A | verdict |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let rates = |s: &[Sample]| s.iter().map(|x| x.rate).collect::<Vec<_>>();
    let p = |s: &[Sample], f: fn(&Sample) -> f64| median(&s.iter().map(f).collect::<Vec<_>>());
    let mut footer = String::new();
    for r in rows {
        let v = verdict(&rates(&r.baseline), &rates(&r.candidate));
        let errs = |s: &[Sample]| s.iter().map(|x| x.errors).sum::<u64>();
        let (ea, eb) = (errs(&r.baseline), errs(&r.candidate));
        let mut verdict_cell = v.outcome.text().to_string();
        if ea + eb > 0 {
            write!(verdict_cell, " (errors: A {ea}, B {eb})").ok();
        }
        writeln!(
            t,
            "| {} | {:.0} ({:.0}–{:.0}) | {:.2} | {:.2} | {:.0} ({:.0}–{:.0}) | {:.2} | {:.2} | {:+.1}% | {} |",
            r.label,
            v.baseline.median,
            v.baseline.min,
            v.baseline.max,
            p(&r.baseline, |s| s.p50_ms),
            p(&r.baseline, |s| s.p99_ms),
            v.candidate.median,
            v.candidate.min,
            v.candidate.max,
            p(&r.candidate, |s| s.p50_ms),
            p(&r.candidate, |s| s.p99_ms),
            v.diff_pct,
            verdict_cell,
        )
        .ok();
        let list = |s: &[Sample]| {
            s.iter()
                .map(|x| format!("{:.0}", x.rate))
                .collect::<Vec<_>>()
                .join(" ")
        };
        writeln!(
            footer,
            "- {}: rounds A {} / B {} req/s; w = {:.1}%; band {:.0}–{:.0} req/s; B median {:.0}",
            r.label,
            list(&r.baseline),
            list(&r.candidate),
            v.widen * 100.0,
            v.band.0,
            v.band.1,
            v.candidate.median,
        )
        .ok();
        let pairs = pair_diffs_pct(&rates(&r.baseline), &rates(&r.candidate));
        writeln!(
            footer,
            "  each round's B vs the A just before it: {}; B lower in {} of {}",
            pairs
                .iter()
                .map(|d| format!("{d:+.1}%"))
                .collect::<Vec<_>>()
                .join(" "),
            pairs.iter().filter(|d| **d < 0.0).count(),
            pairs.len(),
        )
        .ok();
        for s in r.baseline.iter().chain(&r.candidate) {
            if let Some(e) = &s.first_error {
                writeln!(footer, "  (first error: {e})").ok();
                break;
            }
        }
    }
    t.push_str(
        "\nreq/s: the median of the rounds (min–max); p50, p99: the median of the rounds' \
         percentiles, in ms; B vs A: (median B - median A) / median A.\n\
         verdict: w is the larger of the two sides' relative spread, (max - min) / median \
         of its rounds' req/s; B's median inside [min A x (1 - w), max A x (1 + w)] (the \
         baseline rounds' range widened by the rounds' own relative spread) is \"within \
         noise\", above it \"faster\", below it \"SLOWER\".\n",
    );
    t.push_str(&footer);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(rates: &[f64]) -> Vec<Sample> {
        rates
            .iter()
            .map(|&rate| Sample {
                rate,
                p50_ms: rate / 1000.0,
                p99_ms: rate / 100.0,
                ..Sample::default()
            })
            .collect()
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        let s = Spread::of(&[98.0, 102.0, 100.0, 101.0]);
        assert_eq!(
            s,
            Spread {
                median: 100.5,
                min: 98.0,
                max: 102.0
            }
        );
        assert!((s.relative() - 4.0 / 100.5).abs() < 1e-12);
    }

    #[test]
    fn the_band_is_the_baseline_range_widened_by_the_relative_spread() {
        // A: min 98, max 102, median 100, relative spread 4%. B's
        // (100 101 99 100) is 2%; w = 4%: band [94.08, 106.08].
        let a = [98.0, 100.0, 102.0, 100.0];
        let v = verdict(&a, &[100.0, 101.0, 99.0, 100.0]);
        assert!((v.widen - 0.04).abs() < 1e-12, "{v:?}");
        assert!((v.band.0 - 94.08).abs() < 1e-9 && (v.band.1 - 106.08).abs() < 1e-9);
        assert_eq!(v.outcome, Outcome::WithinNoise);
        assert!(v.diff_pct.abs() < 1e-12);
        // Just inside and just outside the band's low edge.
        assert_eq!(verdict(&a, &[94.1; 4]).outcome, Outcome::WithinNoise);
        assert_eq!(verdict(&a, &[94.0; 4]).outcome, Outcome::Slower);
        assert_eq!(verdict(&a, &[106.1; 4]).outcome, Outcome::Faster);
        // A noisy candidate widens the band: 90 is inside it with B's
        // own spread of 20% (band [78.4, 122.4]).
        let v = verdict(&a, &[81.0, 90.0, 90.0, 99.0]);
        assert!((v.widen - 0.2).abs() < 1e-12, "{v:?}");
        assert!((v.band.0 - 78.4).abs() < 1e-9 && (v.band.1 - 122.4).abs() < 1e-9);
        assert_eq!(v.outcome, Outcome::WithinNoise);
        assert!((v.diff_pct + 10.0).abs() < 1e-9, "{v:?}");
        // No figures, no verdict.
        assert_eq!(verdict(&a, &[0.0; 4]).outcome, Outcome::NoFigures);
        assert_eq!(verdict(&[], &a).outcome, Outcome::NoFigures);
    }

    #[test]
    fn the_table_shows_medians_spreads_and_verdicts() {
        let rows = vec![
            AbRow {
                label: "GET System".into(),
                baseline: samples(&[40_000.0, 41_000.0, 39_000.0, 40_000.0]),
                candidate: samples(&[40_400.0, 40_000.0, 39_600.0, 40_000.0]),
            },
            AbRow {
                label: "PATCH Boot".into(),
                baseline: samples(&[20_000.0, 20_200.0, 19_800.0, 20_000.0]),
                candidate: samples(&[15_000.0, 15_100.0, 14_900.0, 15_000.0]),
            },
        ];
        let t = ab_table(&rows);
        assert!(
            t.contains(
                "| GET System | 40000 (39000–41000) | 40.00 | 400.00 | 40000 (39600–40400) | 40.00 | 400.00 | +0.0% | within noise |"
            ),
            "{t}"
        );
        assert!(t.contains("| -25.0% | SLOWER |"), "{t}");
        assert!(
            t.contains("- GET System: rounds A 40000 41000 39000 40000 / B 40400 40000 39600 40000 req/s; w = 5.0%"),
            "{t}"
        );
        assert!(
            t.contains("  each round's B vs the A just before it: +1.0% -2.4% +1.5% +0.0%; B lower in 1 of 4"),
            "{t}"
        );
        assert!(
            t.contains("-25.0% -25.2% -24.7% -25.0%; B lower in 4 of 4"),
            "{t}"
        );
    }
}
