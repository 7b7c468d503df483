//! The events row: GET System at full load with 100 push subscribers, 10
//! SSE streams and a destination that accepts connections but never
//! answers, against the same load without them; a Boot PATCH at a fixed
//! rate makes the changes. It prints events delivered per second and the
//! delivery latency (from the PATCH being sent to the event read by the
//! receiver), push and SSE apart.
//!
//! Each PATCH makes exactly one event, so the n-th event published is the
//! n-th PATCH's: an event's latency is its arrival less that PATCH's
//! start. Loopback only.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::services::{start_shoal_with, system_paths, url_addr};
use super::{operation, progress, rt, Op, Options, Target};
use crate::load::{self, Conn};

/// Push subscribers, SSE streams, Boot PATCHes per second.
const SUBSCRIBERS: usize = 100;
const STREAMS: usize = 10;
const CHANGES_PER_SEC: u64 = 10;
/// Rounds of alone and beside, interleaved.
const ROUNDS: usize = 4;

/// When each event (by Id) reached a receiver.
type Arrivals = Arc<Mutex<Vec<(u64, Instant)>>>;

/// A BMC like the neutral one that takes more subscriptions than real
/// BMCs do (20, 10 of them SSE), for the row's 100 and 10.
const PROFILE: &str = r#"name = "bench-events"
description = "The neutral BMC with room for the events row's subscribers"
manufacturer = "Shoal"
model = "Shoal Virtual Machine"
bios_version = "1.0.0"
bmc_firmware_version = "1.0.0"

[events]
max_subscriptions = 128
max_sse = 16

[[sources]]
quirks = ["events"]
shows = "the bench's 100 push subscribers and 10 SSE streams need more room than a real BMC's 20"
synthetic = true
"#;

pub fn run(opts: &Options) -> Result<String> {
    let rt = rt()?;
    let profiles = opts.out.join("profiles");
    std::fs::create_dir_all(&profiles)?;
    std::fs::write(profiles.join("bench-events.toml"), PROFILE)?;
    let emu = start_shoal_with(
        &opts.emulator,
        &opts.out,
        opts.systems,
        false,
        &[
            "--event-allow-net",
            "127.0.0.0/8",
            "--profile-dir",
            &profiles.display().to_string(),
            "--profile",
            "bench-events",
        ],
    )?;
    let addr = url_addr(&emu.url)?;
    let systems = rt.block_on(system_paths(addr, None))?;
    let t = Target {
        name: "shoal",
        addr,
        systems: systems.clone(),
        basic: None,
    };
    let d = opts.duration;
    let mut text = String::new();
    let (mut alone_all, mut beside_all) = (Vec::new(), Vec::new());
    // Alone and beside, interleaved (A/B/A/B/…): a drift of the machine
    // shows as a difference between the rounds, and the medians hold
    // against one round that it slowed.
    for round in 1..=ROUNDS {
        progress(&format!(
            "shoal GET System, no event subscribers (round {round}) ..."
        ));
        let alone = rt.block_on(load::run(
            addr,
            opts.clients,
            d,
            operation(Op::GetSystem, &t),
        ));
        progress(&format!("  {:.0} req/s", alone.rate()));
        progress(&format!(
            "shoal GET System with {SUBSCRIBERS} push subscribers, {STREAMS} SSE streams, a dead destination, {CHANGES_PER_SEC} changes/s (round {round}) ..."
        ));
        let push: Arrivals = Arc::default();
        let sse: Arrivals = Arc::default();
        let (beside, sent, failed) =
            rt.block_on(beside(addr, &t, &systems[0], opts.clients, d, &push, &sse))?;
        progress(&format!("  {:.0} req/s", beside.rate()));
        let (push_text, sse_text) = if failed > 0 {
            let why = format!("n/a ({failed} PATCHes failed: events cannot be matched)");
            (why.clone(), why)
        } else {
            (
                latency(&push, &sent, SUBSCRIBERS, d),
                latency(&sse, &sent, STREAMS, d),
            )
        };
        text.push_str(&format!(
            "  round {round}: {:.0} req/s alone, {:.0} beside ({:+.1}%), {} changes\n    push: {push_text}\n    SSE:  {sse_text}\n",
            alone.rate(),
            beside.rate(),
            (beside.rate() / alone.rate().max(1e-9) - 1.0) * 100.0,
            sent.len(),
        ));
        alone_all.push(alone.rate());
        beside_all.push(beside.rate());
    }
    let (a, b) = (median(&mut alone_all), median(&mut beside_all));
    Ok(format!(
        "events: GET System {a:.0} req/s alone, {b:.0} req/s ({:+.1}%) beside {SUBSCRIBERS} push \
         subscribers, {STREAMS} SSE streams and a destination that never answers, \
         {CHANGES_PER_SEC} changes/s (medians of {ROUNDS} rounds each, interleaved, {} s each)\n{text}",
        (b / a.max(1e-9) - 1.0) * 100.0,
        d.as_secs()
    ))
}

/// The median of `v` (the mean of the middle two of an even count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One "beside" run: subscribers and streams made, the load and the
/// changes for `d`, then every subscription deleted (the streams end).
async fn beside(
    addr: SocketAddr,
    t: &Target,
    sys: &str,
    clients: usize,
    d: Duration,
    push: &Arrivals,
    sse: &Arrivals,
) -> Result<(load::Stats, Vec<Instant>, u64)> {
    let rx = receiver(push.clone()).await?;
    // Accepts (the kernel does) but never reads nor answers.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")?;
    let dead_addr = dead.local_addr()?;
    let mut conn = Conn::new(addr);
    for i in 0..SUBSCRIBERS {
        let dest = format!("http://{rx}/s/{i}");
        subscribe(
            &mut conn,
            json!({"Destination": dest, "Context": i.to_string()}),
        )
        .await?;
    }
    let dead_dest = format!("http://{dead_addr}/dead");
    subscribe(
        &mut conn,
        json!({"Destination": dead_dest, "DeliveryRetryPolicy": "RetryForever"}),
    )
    .await?;
    let streams: Vec<_> = (0..STREAMS)
        .map(|_| tokio::spawn(stream(addr, sse.clone())))
        .collect();
    // The streams and subscriptions settle before the clock starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let driver = tokio::spawn(changes(addr, sys.to_string(), d));
    let stats = load::run(addr, clients, d, operation(Op::GetSystem, t)).await;
    let (sent, failed) = driver.await?;
    // What is still under way arrives.
    tokio::time::sleep(Duration::from_secs(2)).await;
    unsubscribe_all(&mut conn).await?;
    for s in streams {
        s.abort();
    }
    drop(dead);
    Ok((stats, sent, failed))
}

/// Deletes every subscription (an SSE stream's ends its stream).
async fn unsubscribe_all(conn: &mut Conn) -> Result<()> {
    let path = "/redfish/v1/EventService/Subscriptions";
    let a = conn.send(&Method::GET, path, &[], &Bytes::new()).await?;
    let list: Value = serde_json::from_slice(&a.body)?;
    for m in list["Members"].as_array().into_iter().flatten() {
        if let Some(uri) = m["@odata.id"].as_str() {
            conn.send(&Method::DELETE, uri, &[], &Bytes::new()).await?;
        }
    }
    Ok(())
}

/// Events/s delivered to `n` receivers, and latency percentiles.
fn latency(arrivals: &Arrivals, sent: &[Instant], n: usize, d: Duration) -> String {
    let got = arrivals.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let Some(first) = got.iter().map(|(id, _)| *id).min() else {
        return "no event arrived".into();
    };
    let mut ms: Vec<f64> = got
        .iter()
        .filter_map(|(id, at)| {
            let i = usize::try_from(id - first).ok()?;
            Some(at.saturating_duration_since(*sent.get(i)?).as_secs_f64() * 1e3)
        })
        .collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    let pct = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    format!(
        "{} of {} events delivered ({:.0}/s), latency p50 {:.2} ms, p99 {:.2} ms",
        got.len(),
        sent.len() * n,
        got.len() as f64 / d.as_secs_f64(),
        pct(0.5),
        pct(0.99)
    )
}

async fn subscribe(conn: &mut Conn, body: Value) -> Result<()> {
    let a = conn
        .send(
            &Method::POST,
            "/redfish/v1/EventService/Subscriptions",
            &[("accept", "application/json")],
            &Bytes::from(body.to_string()),
        )
        .await?;
    if a.status.as_u16() != 201 {
        bail!(
            "subscription refused: {} {}",
            a.status,
            String::from_utf8_lossy(&a.body)
        );
    }
    Ok(())
}

/// Boot PATCHes at [`CHANGES_PER_SEC`] for `d`: when each was sent, and
/// how many failed.
async fn changes(addr: SocketAddr, sys: String, d: Duration) -> (Vec<Instant>, u64) {
    let mut conn = Conn::new(addr);
    // Each PATCH must change the target: start from the other one.
    let now = match conn.send(&Method::GET, &sys, &[], &Bytes::new()).await {
        Ok(a) => serde_json::from_slice::<Value>(&a.body).unwrap_or_default(),
        Err(_) => Value::Null,
    };
    let first = usize::from(now["Boot"]["BootSourceOverrideTarget"] == "Pxe");
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / CHANGES_PER_SEC));
    let end = Instant::now() + d;
    let (mut sent, mut failed) = (Vec::new(), 0);
    while Instant::now() < end {
        tick.tick().await;
        let target = if (sent.len() + first) % 2 == 0 {
            "Pxe"
        } else {
            "Hdd"
        };
        let body = json!({"Boot": {"BootSourceOverrideTarget": target}}).to_string();
        let at = Instant::now();
        match conn
            .send(&Method::PATCH, &sys, &[], &Bytes::from(body))
            .await
        {
            Ok(a) if a.status.is_success() => sent.push(at),
            _ => failed += 1,
        }
    }
    (sent, failed)
}

/// A receiver on loopback answering every POST 204; each event's Id and
/// arrival go to `arrivals`.
async fn receiver(arrivals: Arrivals) -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").await?;
    let addr = l.local_addr()?;
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(serve(s, arrivals.clone()));
        }
    });
    Ok(addr)
}

async fn serve(s: TcpStream, arrivals: Arrivals) -> Result<()> {
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    loop {
        let mut len = 0usize;
        let mut line = String::new();
        if r.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        loop {
            line.clear();
            r.read_line(&mut line).await?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().context("Content-Length")?;
                }
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).await?;
        let at = Instant::now();
        if let Some(id) = event_id(&body) {
            arrivals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((id, at));
        }
        w.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            .await?;
    }
}

fn event_id(json: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(json).ok()?;
    v["Id"].as_str()?.parse().ok()
}

/// One SSE stream, read until the process ends: each frame's Id and
/// arrival go to `arrivals`.
async fn stream(addr: SocketAddr, arrivals: Arrivals) -> Result<()> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!(
            "GET /redfish/v1/EventService/SSE HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
        )
        .as_bytes(),
    )
    .await?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        if let Some(id) = line.trim_end().strip_prefix("id: ") {
            if let Ok(id) = id.parse() {
                let at = Instant::now();
                arrivals
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((id, at));
            }
        }
    }
}
