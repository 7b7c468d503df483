//! A case's event subscribers, made before the driver starts, and what
//! each must have got once the machine booted: the BMC's file server
//! (`checks.events`, in order) and, with `[events]`, a receiver down for
//! a while (the same events, after deliveries the emulator logged as
//! failed), one never up (its subscription terminated, the file server
//! told) and an SSE stream with a `$filter` (exactly its own events).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::prepare::Prepared;
use crate::fileserver::events_log;
use crate::lab::wait_until;
use crate::scenario::{EventSetup, Scenario};

/// A profile's `DeliveryRetryIntervalSeconds` when the scenario sets none.
const PROFILE_INTERVAL: u64 = 30;
/// How long a log may lag behind what the BMC did.
const LAG: Duration = Duration::from_secs(10);

/// The subscribers a case made; the late receiver's server stops with it.
pub(super) struct Subscribers {
    setup: EventSetup,
    /// When the driver was about to start.
    from: Instant,
    late: Option<Late>,
    /// The URI of the subscription whose receiver never comes up.
    dead: Option<String>,
}

/// A receiver that comes up only after a while: its destination and the
/// task that serves it.
struct Late {
    destination: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Subscribers {
    fn drop(&mut self) {
        if let Some(l) = &self.late {
            l.task.abort();
        }
    }
}

/// Sets the scenario's retry settings and subscribes its receivers (none
/// without `checks.events`). Needs the runner's tokio runtime.
pub(super) fn subscribe(s: &Scenario, case: &Prepared) -> Result<Option<Subscribers>> {
    if s.checks.events.is_empty() {
        return Ok(None);
    }
    let (bmc, setup) = (&case.bmc, s.events.clone().unwrap_or_default());
    let mut settings = serde_json::Map::new();
    if let Some(i) = setup.retry_interval_secs {
        settings.insert("DeliveryRetryIntervalSeconds".into(), i.into());
    }
    if let Some(n) = setup.retry_attempts {
        settings.insert("DeliveryRetryAttempts".into(), n.into());
    }
    if !settings.is_empty() {
        bmc.patch_event_service(Value::Object(settings))?;
    }
    // The BMC pushes to its own file server, on the host's loopback.
    let sub = bmc
        .subscribe_events(&format!("{}/events", case.bmc_url))
        .context("subscribing to the BMC's events")?;
    println!("  events: subscribed ({sub})");
    let late = match setup.late_receiver_secs {
        Some(secs) => Some(late_receiver(case, secs)?),
        None => None,
    };
    let dead = match setup.dead_receiver {
        true => Some(bmc.subscribe(json!({
            "Destination": format!("http://127.0.0.1:{}/events", free_port()?),
            "Context": "never up",
            "DeliveryRetryPolicy": "TerminateAfterRetries",
        }))?),
        false => None,
    };
    if let Some(f) = &setup.sse_filter {
        bmc.sse_to_file(f, &case.dir.join("sse-events.jsonl"))
            .context("opening the BMC's SSE stream")?;
    }
    Ok(Some(Subscribers {
        setup,
        from: Instant::now(),
        late,
        dead,
    }))
}

/// Subscribes a loopback port with `RetryForever`, and serves it (a file
/// server's `POST /events`, logged to `late-http.log`) after `secs`.
fn late_receiver(case: &Prepared, secs: u64) -> Result<Late> {
    let port = free_port()?;
    let destination = format!("http://127.0.0.1:{port}/events");
    case.bmc.subscribe(json!({
        "Destination": destination,
        "Context": "late",
        "DeliveryRetryPolicy": "RetryForever",
    }))?;
    let root = case.dir.join("late-www");
    std::fs::create_dir_all(&root)?;
    let app = crate::fileserver::router(&root, &case.dir.join("late-http.log"))?;
    let task = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => {
                let _ = crate::fileserver::serve(l, app).await;
            }
            Err(e) => eprintln!("  events: the late receiver cannot listen on {port}: {e}"),
        }
    });
    println!("  events: a receiver on port {port} comes up in {secs} s");
    Ok(Late { destination, task })
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// What each receiver must have got (`problems` says what it lacks).
pub(super) fn check(s: &Scenario, case: &Prepared, subs: &Subscribers, problems: &mut Vec<String>) {
    let want = &s.checks.events;
    let main = events_log(&case.dir.join("bmc-http.log"));
    waited(LAG, problems, || in_order(&records(&main), want));
    let interval = Duration::from_secs(
        subs.setup
            .retry_interval_secs
            .map_or(PROFILE_INTERVAL, u64::from),
    );
    if let (Some(l), Some(secs)) = (&subs.late, subs.setup.late_receiver_secs) {
        let log = events_log(&case.dir.join("late-http.log"));
        let until = (subs.from + Duration::from_secs(secs) + interval + LAG)
            .saturating_duration_since(Instant::now());
        waited(until.max(LAG), problems, || {
            in_order(&records(&log), want).map_err(|e| format!("the late receiver: {e}"))
        });
        let emulator = std::fs::read_to_string(case.dir.join("emulator.log")).unwrap_or_default();
        if !emulator
            .lines()
            .any(|l2| l2.contains("event delivery failed") && l2.contains(&l.destination))
        {
            problems.push(format!(
                "the emulator logged no failed delivery to {} while it was down: nothing was retried",
                l.destination
            ));
        }
    }
    if let Some(uri) = &subs.dead {
        let attempts = u64::from(subs.setup.retry_attempts.unwrap_or(3)) + 1;
        let limit = interval * attempts as u32 + LAG;
        let gone = wait_until(limit, || case.bmc.status_of(uri).is_ok_and(|st| st == 404));
        if gone.is_none() {
            problems.push(format!(
                "the subscription {uri}, whose receiver never came up, still stands after its retries"
            ));
        }
        let path = uri.split_once("/redfish").map_or(uri.as_str(), |(_, p)| p);
        let told = [format!("SubscriptionTerminated {path}")];
        waited(LAG, problems, || in_order(&records(&main), &told));
    }
    if !subs.setup.sse_events.is_empty() {
        let log = case.dir.join("sse-events.jsonl");
        waited(LAG, problems, || {
            exactly(&records(&log), &subs.setup.sse_events).map_err(|e| {
                format!(
                    "the SSE stream ($filter={}): {e}",
                    subs.setup.sse_filter.as_deref().unwrap_or("")
                )
            })
        });
    }
}

/// Waits up to `limit` for `check` to pass; its last error is a problem.
fn waited(
    limit: Duration,
    problems: &mut Vec<String>,
    mut check: impl FnMut() -> Result<(), String>,
) {
    let mut last = Ok(());
    let _ = wait_until(limit, || {
        last = check();
        last.is_ok()
    });
    if let Err(why) = last {
        problems.push(why);
    }
}

/// The records of the Events in `log` (one a line), by event Id: each
/// its MessageId's last part and its OriginOfCondition (a link or, as
/// some BMCs send it, a plain URI).
fn records(log: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut events: Vec<(u64, Value)> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            let id = match &v["Id"] {
                Value::Number(n) => n.as_u64(),
                other => other.as_str().and_then(|i| i.parse().ok()),
            };
            (id.unwrap_or(0), v)
        })
        .collect();
    events.sort_by_key(|(id, _)| *id);
    events
        .iter()
        .flat_map(|(_, v)| v["Events"].as_array().cloned().unwrap_or_default())
        .map(|r| {
            let key = r["MessageId"].as_str().unwrap_or("");
            let key = key.rsplit('.').next().unwrap_or("");
            let o = &r["OriginOfCondition"];
            let origin = o["@odata.id"].as_str().or(o.as_str()).unwrap_or("");
            (key.to_string(), origin.to_string())
        })
        .collect()
}

/// Whether `record` is the `Key` or `Key origin` of `want`.
fn matches(record: &(String, String), want: &str) -> bool {
    let (key, origin) = want.split_once(' ').unwrap_or((want, ""));
    record.0 == key && record.1.contains(origin)
}

fn listed(records: &[(String, String)]) -> Vec<String> {
    records.iter().map(|(k, o)| format!("{k} {o}")).collect()
}

/// Whether `records` hold `want` in order (others may come between).
fn in_order(records: &[(String, String)], want: &[String]) -> Result<(), String> {
    let mut at = records.iter();
    for w in want {
        if !at.any(|r| matches(r, w)) {
            return Err(format!(
                "no {w:?} after the events before it; what came, in order: {:?}",
                listed(records)
            ));
        }
    }
    Ok(())
}

/// Whether `records` are `want`, one for one: nothing missing, nothing else.
fn exactly(records: &[(String, String)], want: &[String]) -> Result<(), String> {
    let same = records.len() == want.len() && records.iter().zip(want).all(|(r, w)| matches(r, w));
    match same {
        true => Ok(()),
        false => Err(format!(
            "expected exactly {want:?}; what came, in order: {:?}",
            listed(records)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(k: &str, o: &str) -> (String, String) {
        (k.into(), o.into())
    }

    #[test]
    fn in_order_skips_between_and_exactly_does_not() {
        let got = [
            r("ResourceChanged", "/redfish/v1/Managers/m/VirtualMedia/Cd"),
            r("ResourcePoweredOn", "/redfish/v1/Systems/s"),
            r("ResourceChanged", "/redfish/v1/Managers/m/VirtualMedia/Cd"),
        ];
        let want = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let media = want(&[
            "ResourceChanged /VirtualMedia/",
            "ResourceChanged /VirtualMedia/",
        ]);
        assert!(in_order(&got, &media).is_ok());
        assert!(exactly(&got, &media).is_err(), "the power event is extra");
        assert!(exactly(&[got[0].clone(), got[2].clone()], &media).is_ok());
        assert!(in_order(&got, &want(&["ResourcePoweredOn", "ResourcePoweredOn"])).is_err());
        assert!(exactly(&got[..1], &media).is_err(), "one is missing");
    }

    #[test]
    fn records_come_by_event_id_with_either_origin_shape() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("e.jsonl");
        std::fs::write(
            &log,
            concat!(
                r#"{"Id":"2","Events":[{"MessageId":"ResourceEvent.1.3.ResourcePoweredOn","OriginOfCondition":"/redfish/v1/Systems/s"}]}"#,
                "\nnot json\n",
                r#"{"Id":1,"Events":[{"MessageId":"ResourceEvent.1.3.ResourceChanged","OriginOfCondition":{"@odata.id":"/x/VirtualMedia/Cd"}}]}"#,
                "\n"
            ),
        )
        .unwrap();
        assert_eq!(
            records(&log),
            [
                r("ResourceChanged", "/x/VirtualMedia/Cd"),
                r("ResourcePoweredOn", "/redfish/v1/Systems/s")
            ]
        );
    }
}
