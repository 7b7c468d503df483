//! Server-Sent Events: `GET <ServerSentEventUri>` opens a
//! `text/event-stream` of the service's events (`id:` the event's Id,
//! `data:` the Event), filtered by the stream's `$filter`, shown as an
//! EventDestination (`SubscriptionType: SSE`) while it is open; deleting
//! that member closes the stream. `Last-Event-ID` resumes from the
//! buffer (with `EventBufferExceeded` first when events were lost since);
//! a comment line keeps an idle stream open.
//!
//! Invariant: a stream's subscription is removed when the stream ends,
//! whoever ends it (client, DELETE, the service turned off).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::{broadcast, mpsc, watch};

use super::destination::Spec;
use super::record::{payload, Event, Record, Shape};
use super::service::{Events, Refused, Sub};
use crate::api::error::{ApiError, Msg};
use crate::api::input::echo;
use crate::api::AppState;
use crate::faults::{EventFault, Faults};

/// How often an idle stream gets a comment line.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A property `$filter` may compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prop {
    EventFormatType,
    EventType,
    MessageId,
    OriginResource,
    RegistryPrefix,
    ResourceType,
}

const PROPS: [(&str, Prop); 6] = [
    ("EventFormatType", Prop::EventFormatType),
    ("EventType", Prop::EventType),
    ("MessageId", Prop::MessageId),
    ("OriginResource", Prop::OriginResource),
    ("RegistryPrefix", Prop::RegistryPrefix),
    ("ResourceType", Prop::ResourceType),
];

/// The properties `$filter` takes (`SSEFilterPropertiesSupported`).
pub fn filter_properties() -> impl Iterator<Item = &'static str> {
    PROPS.iter().map(|(n, _)| *n)
}

/// A parsed `$filter`: comparisons joined by `and`, those joined by
/// `or` (`and` binds tighter, as in OData).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter(Vec<Vec<(Prop, String)>>);

impl Filter {
    /// Parses `prop eq 'value'` terms joined by `and`/`or`; `None` when
    /// it is anything else.
    pub fn parse(s: &str) -> Option<Filter> {
        let mut any = Vec::new();
        for alt in split_word(s, "or") {
            let mut all = Vec::new();
            for term in split_word(alt, "and") {
                let term = term.trim();
                let term = term
                    .strip_prefix('(')
                    .and_then(|t| t.strip_suffix(')'))
                    .unwrap_or(term)
                    .trim();
                let (name, rest) = term.split_once(char::is_whitespace)?;
                let rest = rest.trim_start().strip_prefix("eq")?;
                if !rest.starts_with(char::is_whitespace) {
                    return None;
                }
                let value = rest.trim().strip_prefix('\'')?.strip_suffix('\'')?;
                if value.contains('\'') {
                    return None;
                }
                let prop = PROPS.iter().find(|(n, _)| *n == name)?.1;
                all.push((prop, value.to_string()));
            }
            any.push(all);
        }
        Some(Filter(any))
    }

    /// Whether `r` passes (shaped as `shape` sends it).
    fn passes(&self, r: &Record, shape: Shape) -> bool {
        self.0.is_empty()
            || self.0.iter().any(|all| {
                all.iter().all(|(p, v)| match p {
                    Prop::EventFormatType => v == "Event",
                    Prop::EventType => shape.event_type.unwrap_or(&r.event_type) == v,
                    Prop::MessageId => {
                        r.message_id == *v || {
                            let parts: Vec<&str> = v.split('.').collect();
                            matches!(parts.as_slice(), [p, .., k] if format!("{p}.{k}") == r.unversioned_id())
                        }
                    }
                    Prop::OriginResource => {
                        r.origin.as_deref() == Some(v.trim_end_matches('/'))
                    }
                    Prop::RegistryPrefix => r.prefix() == v,
                    Prop::ResourceType => r.resource_type == v,
                })
            })
    }
}

/// `s` split at the word `w` standing alone (between spaces).
fn split_word<'a>(s: &'a str, w: &str) -> Vec<&'a str> {
    let sep = format!(" {w} ");
    s.split(sep.as_str()).collect()
}

/// The stream's `$filter`, from the query (the only parameter it takes).
fn filter_of(uri: &Uri) -> Result<Filter, ApiError> {
    let Some(q) = uri.query().filter(|q| !q.is_empty()) else {
        return Ok(Filter::default());
    };
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(q).map_err(|_| {
        ApiError::bad(Msg::new(
            "QueryParameterValueFormatError",
            &[&echo(q), "$filter"],
        ))
    })?;
    let mut filter = Filter::default();
    for (k, v) in pairs {
        if k != "$filter" {
            return Err(ApiError::bad(Msg::new(
                "QueryParameterUnsupported",
                &[&echo(&k)],
            )));
        }
        filter = Filter::parse(&v).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "QueryParameterValueFormatError",
                &[&echo(&v), "$filter"],
            ))
        })?;
    }
    Ok(filter)
}

/// Opens a stream.
pub async fn open(st: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Response, ApiError> {
    let events = st.events.clone();
    if uri.path() != events.profile.sse_uri {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    if !accept.contains("text/event-stream") && !accept.contains("*/*") {
        return Err(ApiError::Status(
            StatusCode::NOT_ACCEPTABLE,
            vec![Msg::new(
                "HeaderInvalid",
                &[&format!("Accept: {}", echo(accept))],
            )],
        ));
    }
    if !events.settings().enabled {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            vec![Msg::new("ServiceDisabled", &["/redfish/v1/EventService"])],
        ));
    }
    let filter = filter_of(uri)?;
    let last = headers
        .get("Last-Event-ID")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // Subscribed to the broadcast before the replay is read: an event
    // published in between is in both, and sent once (ids only grow).
    let live = events.sse.subscribe();
    let (sub, _) = events
        .add(Spec::sse(String::new()))
        .map_err(|Refused::Limit| {
            ApiError::Status(
                StatusCode::SERVICE_UNAVAILABLE,
                vec![Msg::new("EventSubscriptionLimitExceeded", &[])],
            )
        })?;
    events.ensure_pump(st);
    tracing::info!(subscription = %sub.id, "SSE stream opened");
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    // Watched from here, before the feed runs: a DELETE or the service
    // turned off in between still wakes it.
    let wake = sub.wake.subscribe();
    let faults = st.core.faults.clone();
    tokio::spawn(feed(
        (events.clone(), faults),
        sub.clone(),
        filter,
        last,
        (live, wake),
        tx,
    ));
    let body = Body::new(Stream {
        rx,
        _open: Open(events, sub),
    });
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response())
}

/// The frame of `ev` (its records `filter` passes), if any passes.
fn frame(events: &Events, filter: &Filter, ev: &Event) -> Option<Bytes> {
    framed(events, filter, ev, &[])
}

/// The same, its records' `empty` fields sent empty (an event fault).
fn framed(events: &Events, filter: &Filter, ev: &Event, empty: &[String]) -> Option<Bytes> {
    let shape = events.shape();
    let records: Vec<&Record> = ev
        .records
        .iter()
        .filter(|r| filter.passes(r, shape))
        .collect();
    if records.is_empty() {
        return None;
    }
    let mut data = payload(ev, &records, "", shape);
    super::delivery::empty_fields(&mut data, empty);
    Some(Bytes::from(format!("id: {}\ndata: {data}\n\n", ev.id)))
}

/// Feeds one stream until it ends; the event faults (rules of method
/// `EVENT` whose path is the stream's URI) act on its live frames as on
/// a push delivery: delayed, dropped, sent twice, held back until after
/// the next (or [`HOLD`]), fields emptied.
async fn feed(
    (events, faults): (Arc<Events>, Arc<Faults>),
    sub: Arc<Sub>,
    filter: Filter,
    last: Option<u64>,
    (mut live, mut wake): (broadcast::Receiver<Arc<Event>>, watch::Receiver<u64>),
    tx: mpsc::Sender<Bytes>,
) {
    let mut sent = 0u64;
    let lost = |events: &Events| {
        let ev = Event {
            id: events.next_id(),
            records: vec![Record::base(
                "EventBufferExceeded",
                None,
                "EventDestination",
            )],
        };
        frame(events, &Filter::default(), &ev)
    };
    if let Some(last) = last {
        let (replay, gone) = events.since(last);
        if gone {
            if let Some(f) = lost(&events) {
                if tx.send(f).await.is_err() {
                    return;
                }
            }
        }
        for ev in replay {
            sent = ev.id;
            if let Some(f) = frame(&events, &filter, &ev) {
                if tx.send(f).await.is_err() {
                    return;
                }
            }
        }
    }
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE);
    keep_alive.tick().await;
    // Ended before it ran (deleted, the service turned off).
    let ended = |events: &Events| sub.is_closed() || !events.settings().enabled;
    let mut held: Option<Bytes> = None;
    while !ended(&events) {
        let out = tokio::select! {
            r = live.recv() => match r {
                Ok(ev) if ev.id > sent => {
                    sent = ev.id;
                    let Some(f) = frame(&events, &filter, &ev) else { continue };
                    let fault = faults.decide_event(&events.profile.sse_uri);
                    let frames = faulted(&events, &filter, &ev, f, fault, &mut held).await;
                    if send_all(&tx, frames).await.is_err() {
                        break;
                    }
                    None
                }
                Ok(_) => None,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(subscription = %sub.id, lost = n, "SSE stream fell behind");
                    lost(&events)
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            changed = wake.changed() => {
                if changed.is_err() {
                    break;
                }
                None
            }
            _ = keep_alive.tick() => Some(Bytes::from_static(b": keep-alive\n\n")),
            _ = tokio::time::sleep(HOLD), if held.is_some() => held.take(),
            _ = tx.closed() => break,
        };
        if let Some(f) = out {
            if tx.send(f).await.is_err() {
                break;
            }
        }
    }
    // The stream ends: so does its subscription (if a DELETE has not
    // removed it already).
    events.remove(&sub.id);
    tracing::info!(subscription = %sub.id, "SSE stream closed");
}

/// How long a frame held back by a reorder fault waits for the next.
const HOLD: Duration = Duration::from_secs(2);

/// The frames that go out for a live frame `f` under `fault`, in order:
/// none when it is dropped or held back; twice when duplicated; then
/// the one held back before.
async fn faulted(
    events: &Events,
    filter: &Filter,
    ev: &Event,
    f: Bytes,
    fault: EventFault,
    held: &mut Option<Bytes>,
) -> Vec<Bytes> {
    if !fault.delay.is_zero() {
        tokio::time::sleep(fault.delay).await;
    }
    if fault.drop {
        tracing::info!(event = ev.id, "event fault: SSE frame dropped");
        return Vec::new();
    }
    let f = match fault.empty.is_empty() {
        true => f,
        false => framed(events, filter, ev, &fault.empty).unwrap_or(f),
    };
    if fault.reorder && held.is_none() {
        tracing::info!(event = ev.id, "event fault: SSE frame held back");
        *held = Some(f);
        return Vec::new();
    }
    let mut out = vec![f.clone()];
    if fault.duplicate {
        tracing::info!(event = ev.id, "event fault: SSE frame sent twice");
        out.push(f);
    }
    out.extend(held.take());
    out
}

async fn send_all(tx: &mpsc::Sender<Bytes>, frames: Vec<Bytes>) -> Result<(), ()> {
    for f in frames {
        tx.send(f).await.map_err(drop)?;
    }
    Ok(())
}

/// Removes a stream's subscription when its body is dropped (the client
/// went away).
struct Open(Arc<Events>, Arc<Sub>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.remove(&self.1.id);
    }
}

/// The response body: the frames `feed` sends.
struct Stream {
    rx: mpsc::Receiver<Bytes>,
    _open: Open,
}

impl http_body::Body for Stream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::RESOURCE_EVENT;

    #[test]
    fn a_filter_is_terms_joined_by_and_and_or() {
        let f = Filter::parse(
            "MessageId eq 'ResourceEvent.ResourcePoweredOn' or RegistryPrefix eq 'Base' and ResourceType eq 'Manager'",
        )
        .unwrap();
        assert_eq!(f.0.len(), 2);
        let on = Record::of(
            &RESOURCE_EVENT,
            "ResourcePoweredOn",
            &["s"],
            "StatusChange",
            Some("/redfish/v1/Systems/s".into()),
            "ComputerSystem",
        );
        let shape = Shape::default();
        assert!(f.passes(&on, shape));
        let changed = Record::of(
            &RESOURCE_EVENT,
            "ResourceChanged",
            &[],
            "ResourceUpdated",
            None,
            "Bios",
        );
        assert!(!f.passes(&changed, shape));
        let by_origin = Filter::parse("OriginResource eq '/redfish/v1/Systems/s/'").unwrap();
        assert!(by_origin.passes(&on, shape));
        // iDRAC sends every event as an Alert.
        let alert = Filter::parse("EventType eq 'Alert'").unwrap();
        assert!(!alert.passes(&on, shape));
        assert!(alert.passes(
            &on,
            Shape {
                event_type: Some("Alert"),
                ..Default::default()
            }
        ));
        for bad in [
            "",
            "MessageId eq",
            "Bogus eq 'x'",
            "MessageId ne 'x'",
            "MessageId eq x",
            "MessageId eq 'a'b'",
        ] {
            assert!(Filter::parse(bad).is_none(), "{bad:?}");
        }
    }
}
