//! The bench's report: the comparison table and the targets beside
//! what was measured.

use std::fmt::Write as _;
use std::time::Duration;

use super::Op;
use crate::load::Stats;

/// One row of the comparison table.
#[derive(Debug, Clone)]
pub struct Row {
    pub op: Op,
    pub auth: bool,
    pub shoal: Stats,
    pub sushy: Option<Stats>,
    pub nginx: Option<Stats>,
}

pub struct Report {
    pub rows: Vec<Row>,
    pub text: String,
}

pub(super) fn fmt_stats(s: &Stats) -> String {
    let ms = |p| s.percentile_ms(p).map_or("-".into(), |v| format!("{v:.2}"));
    let mut out = format!("{:>10.0} {:>8} {:>8}", s.rate(), ms(50.0), ms(99.0));
    if s.errors > 0 {
        write!(out, " ({} errors)", s.errors).ok();
    }
    out
}

fn ratio(a: &Stats, b: Option<&Stats>) -> String {
    match b {
        Some(b) if b.ok > 0 => format!("{:.0}x", a.rate() / b.rate()),
        Some(_) => "∞ (0 ok)".into(),
        None => "-".into(),
    }
}

/// The first error of a run that had only errors, for the report.
fn why_failed(s: &Stats) -> Option<String> {
    (s.ok == 0 && s.errors > 0).then(|| s.first_error.clone().unwrap_or_default())
}

pub fn table(rows: &[Row], clients: usize, duration: Duration) -> String {
    let mut t = format!(
        "{clients} keep-alive clients, {:.0} s per row; req/s, p50 and p99 in ms\n\n",
        duration.as_secs_f64()
    );
    writeln!(
        t,
        "| operation | auth | shoal req/s | p50 | p99 | sushy-tools req/s | p50 | p99 | shoal/sushy-tools |"
    )
    .ok();
    writeln!(t, "|---|---|---:|---:|---:|---:|---:|---:|---:|").ok();
    let cells = |s: &Stats| {
        let ms = |p| s.percentile_ms(p).map_or("-".into(), |v| format!("{v:.2}"));
        format!("{:.0} | {} | {}", s.rate(), ms(50.0), ms(99.0))
    };
    for r in rows {
        let sushy = match &r.sushy {
            Some(s) if s.ok > 0 => cells(s),
            Some(s) => format!("0 ({} errors) | - | -", s.errors),
            None => "- | - | -".into(),
        };
        writeln!(
            t,
            "| {} | {} | {} | {} | {} |",
            r.op.label(),
            if r.auth { "Basic (bcrypt 12)" } else { "none" },
            cells(&r.shoal),
            sushy,
            ratio(&r.shoal, r.sushy.as_ref())
        )
        .ok();
    }
    for r in rows {
        if let Some(n) = &r.nginx {
            writeln!(
                t,
                "\nnginx, the same System JSON as a static file: {:.0} req/s, p50 {} ms, p99 {} ms; shoal/nginx {:.2}",
                n.rate(),
                n.percentile_ms(50.0).map_or("-".into(), |v| format!("{v:.2}")),
                n.percentile_ms(99.0).map_or("-".into(), |v| format!("{v:.2}")),
                r.shoal.rate() / n.rate().max(1e-9)
            )
            .ok();
        }
    }
    for r in rows {
        if let Some(why) = r.sushy.as_ref().and_then(why_failed) {
            writeln!(
                t,
                "sushy-tools, {} ({}): every request failed: {why}",
                r.op.label(),
                if r.auth { "auth" } else { "no auth" }
            )
            .ok();
        }
    }
    t
}

/// The targets beside what was measured. Figures, not assertions:
/// a missed target is reported, never turned into a failure.
pub fn targets(rows: &[Row], clients: usize, scale_systems: usize, rss_mib: f64) -> String {
    let mut t = String::from("targets (this machine, load generator included):\n");
    let mut line = |what: String, measured: String, met: Option<bool>| {
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        writeln!(t, "- {what}: {measured}: {verdict}").ok();
    };
    for r in rows {
        let mode = if r.auth { "Basic auth" } else { "no auth" };
        let want = if r.auth { 1000.0 } else { 40.0 };
        let (measured, met) = match &r.sushy {
            Some(s) if s.ok > 0 => {
                let x = r.shoal.rate() / s.rate();
                (format!("{x:.0}x"), Some(x >= want))
            }
            Some(_) => ("sushy-tools answered none".into(), None),
            None => ("sushy-tools not run".into(), None),
        };
        line(
            format!("{} ({mode}) >= {want:.0}x sushy-tools", r.op.label()),
            measured,
            met,
        );
    }
    if let Some((r, n)) = rows.iter().find_map(|r| r.nginx.as_ref().map(|n| (r, n))) {
        let x = r.shoal.rate() / n.rate().max(1e-9);
        line(
            "GET System >= 0.5x nginx".into(),
            format!("{x:.2}x"),
            Some(x >= 0.5),
        );
    }
    for r in rows {
        let p99 = r.shoal.percentile_ms(99.0);
        line(
            format!(
                "{} ({}) p99 < 5 ms at {clients} clients",
                r.op.label(),
                if r.auth { "Basic auth" } else { "no auth" }
            ),
            p99.map_or("-".into(), |v| format!("{v:.2} ms")),
            p99.map(|v| v < 5.0),
        );
    }
    line(
        format!("RSS with {scale_systems} systems < 200 MiB"),
        format!("{rss_mib:.1} MiB"),
        Some(rss_mib < 200.0),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rate: u64, p: u32) -> Stats {
        Stats {
            ok: rate,
            errors: 0,
            first_error: None,
            elapsed: Duration::from_secs(1),
            latencies_us: vec![p; 10],
        }
    }

    #[test]
    fn the_table_shows_ratios_and_failures() {
        let rows = vec![
            Row {
                op: Op::GetSystem,
                auth: false,
                shoal: stats(40_000, 1500),
                sushy: Some(stats(1000, 60_000)),
                nginx: Some(stats(80_000, 800)),
            },
            Row {
                op: Op::Login,
                auth: true,
                shoal: stats(5000, 3000),
                sushy: Some(Stats {
                    errors: 7,
                    first_error: Some("404".into()),
                    elapsed: Duration::from_secs(1),
                    ..Stats::default()
                }),
                nginx: None,
            },
        ];
        let t = table(&rows, 64, Duration::from_secs(10));
        assert!(
            t.contains("| GET System | none | 40000 | 1.50 | 1.50 | 1000 | 60.00 | 60.00 | 40x |"),
            "{t}"
        );
        assert!(t.contains("shoal/nginx 0.50"), "{t}");
        assert!(t.contains("every request failed: 404"), "{t}");
        let goals = targets(&rows, 64, 10_000, 150.0);
        for want in [
            "- GET System (no auth) >= 40x sushy-tools: 40x: met",
            "- session login+logout (Basic auth) >= 1000x sushy-tools: sushy-tools answered none: not measured",
            "- GET System >= 0.5x nginx: 0.50x: met",
            "- GET System (no auth) p99 < 5 ms at 64 clients: 1.50 ms: met",
            "- RSS with 10000 systems < 200 MiB: 150.0 MiB: met",
        ] {
            assert!(goals.contains(want), "{want} not in\n{goals}");
        }
        let slow = targets(&rows[..1], 64, 10, 250.0);
        assert!(slow.contains("250.0 MiB: MISSED"), "{slow}");
    }
}
