//! Push delivery: one task per subscription takes events from its own
//! queue and POSTs each (JSON with a Content-Length, the subscription's
//! `HttpHeaders`) until a 2xx answer, retrying `DeliveryRetryAttempts`
//! times `DeliveryRetryIntervalSeconds` apart, then applying its
//! `DeliveryRetryPolicy`: terminated (deleted, `SubscriptionTerminated`
//! published), suspended (until `ResumeSubscription`), or retried for
//! ever (at the interval, or backing off to 32 times it).
//!
//! Event faults (`faults`, rules of method `EVENT`) act here, seeded:
//! a delivery delayed, dropped, sent twice, held back until after the
//! next one, or with fields of its records emptied.
//!
//! Invariants: a destination's address is checked by the policy when it
//! is resolved, at every connection (`--event-allow-net`,
//! `--event-reachable-net`, in `push`); the HTTP call is async, so a
//! slow or dead destination holds its own task only, never a thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use bytes::Bytes;

use super::destination::RetryPolicy;
use super::push::Client;
use super::record::{payload, Event, Record, Shape};
use super::service::{Events, Sub};
use crate::faults::Faults;
use crate::sync::read;

/// How long one delivery may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most a backing-off retry waits, in retry intervals.
const MAX_BACKOFF: u32 = 32;
/// How long an event held back by a reorder fault waits for the next.
const HOLD: Duration = Duration::from_secs(2);

/// Starts the delivery task of push subscription `sub`.
pub fn spawn(
    events: Arc<Events>,
    sub: Arc<Sub>,
    rx: mpsc::Receiver<Arc<Event>>,
    faults: Arc<Faults>,
) {
    tokio::spawn(run(events, sub, rx, faults));
}

/// One delivery to make: the event, whether the subscription's filters
/// apply (not to a heartbeat), the fields sent empty.
struct Job {
    ev: Arc<Event>,
    filtered: bool,
    empty: Vec<String>,
}

/// What came of one event.
enum Outcome {
    Delivered,
    /// The subscription is gone (deleted, or terminated by its policy).
    Gone,
}

async fn run(
    events: Arc<Events>,
    sub: Arc<Sub>,
    mut rx: mpsc::Receiver<Arc<Event>>,
    faults: Arc<Faults>,
) {
    let mut wake = sub.wake.subscribe();
    let mut client = Client::default();
    let mut beat = next_beat(&sub);
    let mut held: Option<Job> = None;
    loop {
        if sub.is_closed() {
            break;
        }
        if sub.suspended.load(Ordering::Relaxed) {
            // Events wait in the queue (or are dropped when it is full)
            // until a client resumes the subscription.
            if wake.changed().await.is_err() {
                break;
            }
            continue;
        }
        let (ev, filtered) = tokio::select! {
            e = rx.recv() => match e {
                Some(e) => (e, true),
                None => break,
            },
            _ = wake.changed() => {
                beat = next_beat(&sub);
                continue;
            }
            _ = sleep_until(beat) => {
                beat = next_beat(&sub);
                let uri = format!("{}/{}", super::SUBSCRIPTIONS, sub.id);
                (Arc::new(Event { id: events.next_id(), records: vec![Record::heartbeat(&uri)] }), false)
            }
            _ = tokio::time::sleep(HOLD), if held.is_some() => {
                // Nothing came after the event held back: it goes now.
                let Some(job) = held.take() else { continue };
                let mut d = Deliverer { events: &events, sub: &sub, client: &mut client, wake: &mut wake };
                if let Outcome::Gone = d.deliver(&job).await {
                    break;
                }
                continue;
            }
        };
        let mut d = Deliverer {
            events: &events,
            sub: &sub,
            client: &mut client,
            wake: &mut wake,
        };
        if let Outcome::Gone = d.with_faults(&faults, ev, filtered, &mut held).await {
            break;
        }
    }
    tracing::debug!(subscription = %sub.id, "delivery task ended");
}

/// What one delivery needs of its task.
struct Deliverer<'a> {
    events: &'a Events,
    sub: &'a Sub,
    client: &'a mut Client,
    wake: &'a mut watch::Receiver<u64>,
}

impl Deliverer<'_> {
    /// Delivers `ev` as the event faults decide: delayed, dropped, sent
    /// twice, held back (in `held`) until after the next, fields emptied.
    async fn with_faults(
        &mut self,
        faults: &Faults,
        ev: Arc<Event>,
        filtered: bool,
        held: &mut Option<Job>,
    ) -> Outcome {
        let f = faults.decide_event(path_of(&read(&self.sub.spec).destination));
        if !f.delay.is_zero() {
            tokio::time::sleep(f.delay).await;
        }
        let id = &self.sub.id;
        if f.drop {
            tracing::info!(subscription = %id, event = ev.id, "event fault: delivery dropped");
            return Outcome::Delivered;
        }
        let job = Job {
            ev,
            filtered,
            empty: f.empty,
        };
        if f.reorder && held.is_none() {
            tracing::info!(subscription = %id, event = job.ev.id, "event fault: delivery held back");
            *held = Some(job);
            return Outcome::Delivered;
        }
        let mut out = self.deliver(&job).await;
        if f.duplicate && matches!(out, Outcome::Delivered) {
            tracing::info!(subscription = %id, event = job.ev.id, "event fault: delivery sent twice");
            out = self.deliver(&job).await;
        }
        match (out, held.take()) {
            (Outcome::Delivered, Some(h)) => self.deliver(&h).await,
            (out, _) => out,
        }
    }

    /// Delivers a job's event (its records the subscription takes, unless
    /// not filtered), retrying as the service and the subscription say.
    async fn deliver(&mut self, job: &Job) -> Outcome {
        let (ev, filtered) = (&*job.ev, job.filtered);
        let mut failures: u32 = 0;
        loop {
            if self.sub.is_closed() {
                return Outcome::Gone;
            }
            let spec = read(&self.sub.spec).clone();
            let records: Vec<&Record> = ev
                .records
                .iter()
                .filter(|r| !filtered || spec.takes(r))
                .collect();
            if records.is_empty() {
                return Outcome::Delivered;
            }
            let shape = Shape {
                include_origin: spec.include_origin,
                ..self.events.shape()
            };
            let mut body = payload(ev, &records, &spec.context, shape);
            empty_fields(&mut body, &job.empty);
            let body = Bytes::from(body.to_string());
            let options = &self.events.options;
            let verify = spec.verify_certificate && !options.insecure;
            let post = self.client.post(
                &spec.destination,
                &spec.headers,
                body,
                verify,
                &options.addresses,
            );
            let sent = tokio::time::timeout(TIMEOUT, post)
                .await
                .unwrap_or_else(|_| Err(format!("no answer in {} s", TIMEOUT.as_secs())));
            let why = match sent {
                Ok(()) => {
                    tracing::debug!(subscription = %self.sub.id, event = ev.id, "event delivered");
                    return Outcome::Delivered;
                }
                Err(why) => why,
            };
            failures += 1;
            let s = self.events.settings();
            tracing::warn!(
                subscription = %self.sub.id, destination = %spec.destination, event = ev.id,
                attempt = failures, %why, "event delivery failed"
            );
            let mut wait = Duration::from_secs(u64::from(s.retry_interval));
            match spec.retry {
                RetryPolicy::TerminateAfterRetries if failures > s.retry_attempts => {
                    if self.events.remove(&self.sub.id) {
                        tracing::warn!(subscription = %self.sub.id, "subscription terminated after its retries");
                        self.events.publish(vec![Record::base(
                            "SubscriptionTerminated",
                            Some(format!("{}/{}", super::SUBSCRIPTIONS, self.sub.id)),
                            "EventDestination",
                        )]);
                    }
                    return Outcome::Gone;
                }
                RetryPolicy::SuspendRetries if failures > s.retry_attempts => {
                    tracing::warn!(subscription = %self.sub.id, "subscription suspended after its retries");
                    self.sub.suspended.store(true, Ordering::Relaxed);
                    while self.sub.suspended.load(Ordering::Relaxed) && !self.sub.is_closed() {
                        if self.wake.changed().await.is_err() {
                            return Outcome::Gone;
                        }
                    }
                    // Resumed: this event is tried again, afresh.
                    failures = 0;
                    continue;
                }
                RetryPolicy::RetryForeverWithBackoff => {
                    wait *= 1 << (failures - 1).min(MAX_BACKOFF.trailing_zeros());
                }
                _ => {}
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                // Deleted (or changed) meanwhile: looked at again now.
                _ = self.wake.changed() => {}
            }
        }
    }
}

/// The path of a destination URL (what an event fault's `path` matches).
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) => rest[i..].split(['?', '#']).next().unwrap_or("/"),
        None => "/",
    }
}

/// When the next heartbeat is due (never, without `SendHeartbeat`).
fn next_beat(sub: &Sub) -> Option<Instant> {
    read(&sub.spec)
        .heartbeat
        .map(|m| Instant::now() + Duration::from_secs(u64::from(m) * 60))
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends `fields` of every record empty (an event fault), as some BMCs
/// send them: `MessageArgs` an empty list, the others an empty string.
pub(super) fn empty_fields(body: &mut serde_json::Value, fields: &[String]) {
    for f in fields {
        let blank = match f.as_str() {
            "MessageArgs" => serde_json::json!([]),
            _ => serde_json::json!(""),
        };
        if f == "Context" {
            body["Context"] = blank.clone();
        }
        if let Some(records) = body["Events"].as_array_mut() {
            for r in records {
                r[f.as_str()] = blank.clone();
            }
        }
    }
}
