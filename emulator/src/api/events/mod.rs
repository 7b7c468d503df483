//! The EventService: `ServiceEnabled` and the delivery retry settings
//! (PATCHable), the subscriptions (`Subscriptions`: POST 201 with
//! Location, GET, PATCH, DELETE, Suspend/ResumeSubscription),
//! `SubmitTestEvent`, and Server-Sent Events (`sse`). Events come from the
//! core's change stream (`service`), are made in `record`, filtered by
//! each subscription (`destination`) and pushed by `delivery`.
//!
//! Invariants: nothing is created or changed by a request with any bad
//! property; a push goes only where a client subscribed, through the
//! address policy (`--event-allow-net`, `--event-reachable-net`).

pub mod body;
mod delivery;
pub mod destination;
mod push;
pub mod record;
pub mod service;
pub mod sse;
pub mod vendor;

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use self::body::{parse_create, parse_patch, Offer};
use self::destination::EVENT_TYPES;
use self::record::{Record, RESOURCE_TYPES};
use self::service::{Refused, Settings};
use super::json::{self, JsonObject, Resource};
use super::patch::{validate_patch, writable, Kind};
use super::{collection, created, link, AppState, State};
use crate::api::error::{ApiError, Msg};
use crate::api::input::echo;
use crate::netpolicy::AddressPolicy;
use crate::registry::RESOURCE_EVENT;

pub use self::service::Events;

pub const SERVICE: &str = "/redfish/v1/EventService";
pub const SUBSCRIPTIONS: &str = "/redfish/v1/EventService/Subscriptions";
const SUBMIT: &str = "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent";

/// Where and how the BMC pushes events (flags, shared by every endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventOptions {
    /// Which addresses destinations may have, and which the BMC reaches.
    pub addresses: AddressPolicy,
    /// Never verify destinations' certificates.
    pub insecure: bool,
}

pub fn router() -> Router {
    live_router().route(SERVICE, get(service).patch(patch_service))
}

/// Everything but the service resource itself: also what a replayed
/// capture serves of Shoal's own beside its captured EventService.
pub fn live_router() -> Router {
    Router::new()
        .route(SUBMIT, post(submit_test_event))
        .route(SUBSCRIPTIONS, get(list).post(subscribe))
        .route(&format!("{SUBSCRIPTIONS}/Members"), post(subscribe))
        .route(
            &format!("{SUBSCRIPTIONS}/{{id}}"),
            get(member).patch(patch_member).delete(unsubscribe),
        )
        .route(
            &format!("{SUBSCRIPTIONS}/{{id}}/Actions/{{action}}"),
            post(member_action),
        )
        .route("/redfish/v1/EventService/SSE", get(open_sse))
        .route("/redfish/v1/SSE", get(open_sse))
}

/// Whether `path` is a stream's (the query layer passes it through: its
/// `$filter` is the stream's own).
pub fn is_sse(st: &AppState, path: &str) -> bool {
    path == st.events.profile.sse_uri
}

fn service_json(st: &AppState) -> Value {
    let e = &st.events;
    let s = e.settings();
    let sse: Map<String, Value> = sse::filter_properties()
        .map(|p| (p.to_string(), json!(true)))
        .chain([("MetricReportDefinition".to_string(), json!(false))])
        .collect();
    json!({
        "@odata.type": "#EventService.v1_10_0.EventService",
        "@odata.id": SERVICE,
        "Id": "EventService",
        "Name": "Event Service",
        "ServiceEnabled": s.enabled,
        "Status": {
            "State": if s.enabled { "Enabled" } else { "Disabled" },
            "Health": "OK",
        },
        "DeliveryRetryAttempts": s.retry_attempts,
        "DeliveryRetryIntervalSeconds": s.retry_interval,
        "EventTypesForSubscription": EVENT_TYPES,
        "EventFormatTypes": ["Event"],
        "RegistryPrefixes": body::registry_prefixes(&e.profile.messages),
        "ResourceTypes": RESOURCE_TYPES,
        "ServerSentEventUri": e.profile.sse_uri,
        "SSEFilterPropertiesSupported": sse,
        "SubordinateResourcesSupported": true,
        "IncludeOriginOfConditionSupported": false,
        "Subscriptions": link(SUBSCRIPTIONS),
        "Actions": {
            "#EventService.SubmitTestEvent": {
                "target": SUBMIT,
                "EventType@Redfish.AllowableValues": EVENT_TYPES,
            },
        },
    })
}

async fn service(State(st): State<AppState>) -> Resource {
    Resource::new(service_json(&st), st.root_profile, "GET, PATCH")
}

async fn patch_service(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    validate_patch(
        &body,
        &service_json(&st),
        &[
            writable("ServiceEnabled", Kind::Bool),
            writable("DeliveryRetryAttempts", Kind::Int { min: 0, max: 100 }),
            writable(
                "DeliveryRetryIntervalSeconds",
                Kind::Int {
                    min: 1,
                    max: 86_400,
                },
            ),
        ],
    )?;
    let mut s: Settings = st.events.settings();
    if let Some(b) = body.get("ServiceEnabled").and_then(Value::as_bool) {
        s.enabled = b;
    }
    if let Some(n) = body.get("DeliveryRetryAttempts").and_then(Value::as_u64) {
        s.retry_attempts = n as u32;
    }
    if let Some(n) = body
        .get("DeliveryRetryIntervalSeconds")
        .and_then(Value::as_u64)
    {
        s.retry_interval = n as u32;
    }
    st.events.set_settings(s);
    tracing::info!(?s, "EventService settings changed");
    Ok(Resource::new(
        service_json(&st),
        st.root_profile,
        "GET, PATCH",
    ))
}

async fn list(State(st): State<AppState>) -> Resource {
    let members = st
        .events
        .subs()
        .into_iter()
        .map(|s| format!("{SUBSCRIPTIONS}/{}", s.id));
    Resource::plain(
        collection(
            "EventDestinationCollection",
            SUBSCRIPTIONS,
            "Event Subscriptions Collection",
            members,
        ),
        "GET, POST",
    )
}

async fn subscribe(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let events = st.events.clone();
    let mut spec = parse_create(
        &body,
        &Offer {
            addresses: &events.options.addresses,
            https_only: events.profile.https_only,
            messages: &events.profile.messages,
        },
    )?;
    spec.sse = false;
    let (sub, rx) = events
        .add(spec)
        .map_err(|Refused::Limit| ApiError::bad(Msg::new("EventSubscriptionLimitExceeded", &[])))?;
    if let Some(rx) = rx {
        delivery::spawn(events.clone(), sub.clone(), rx, st.core.faults.clone());
    }
    events.ensure_pump(&st);
    let uri = format!("{SUBSCRIPTIONS}/{}", sub.id);
    let spec = crate::sync::read(&sub.spec).clone();
    tracing::info!(subscription = %sub.id, destination = %spec.destination, "subscription created");
    Ok(created(&uri, spec.json(&sub.id, &uri, false)))
}

fn found(st: &AppState, id: &str) -> Result<std::sync::Arc<service::Sub>, ApiError> {
    st.events
        .sub(id)
        .ok_or_else(|| ApiError::NotFound(format!("{SUBSCRIPTIONS}/{id}")))
}

fn member_json(sub: &service::Sub) -> Value {
    let uri = format!("{SUBSCRIPTIONS}/{}", sub.id);
    let suspended = sub.suspended.load(std::sync::atomic::Ordering::Relaxed);
    crate::sync::read(&sub.spec).json(&sub.id, &uri, suspended)
}

async fn member(State(st): State<AppState>, Path(id): Path<String>) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        member_json(&*found(&st, &id)?),
        "GET, PATCH, DELETE",
    ))
}

async fn patch_member(
    State(st): State<AppState>,
    Path(id): Path<String>,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    let sub = found(&st, &id)?;
    if body.is_empty() {
        return Err(ApiError::bad(Msg::new("EmptyJSON", &[])));
    }
    let spec = parse_patch(&crate::sync::read(&sub.spec), &body)?;
    if spec.sse && body.keys().any(|k| k != "Context") {
        return Err(ApiError::bad(Msg::new(
            "PropertyNotWritable",
            &[&echo(
                body.keys().find(|k| *k != "Context").map_or("", |k| k),
            )],
        )));
    }
    service::set_spec(&sub, spec);
    tracing::info!(subscription = %id, "subscription changed");
    Ok(Resource::plain(member_json(&sub), "GET, PATCH, DELETE"))
}

async fn unsubscribe(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    found(&st, &id)?;
    st.events.remove(&id);
    tracing::info!(subscription = %id, "subscription deleted");
    Ok(json::no_content().into_response())
}

async fn member_action(
    State(st): State<AppState>,
    Path((id, action)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let sub = found(&st, &id)?;
    let suspend = match action.as_str() {
        "EventDestination.SuspendSubscription" => true,
        "EventDestination.ResumeSubscription" => false,
        _ => {
            return Err(ApiError::NotFound(format!(
                "{SUBSCRIPTIONS}/{id}/Actions/{action}"
            )))
        }
    };
    if crate::sync::read(&sub.spec).sse {
        return Err(ApiError::bad(Msg::new("ActionNotSupported", &[&action])));
    }
    sub.suspended
        .store(suspend, std::sync::atomic::Ordering::Relaxed);
    sub.nudge();
    tracing::info!(subscription = %id, suspend, "subscription {action}");
    Ok(json::no_content().into_response())
}

/// `SubmitTestEvent`: an event of the client's making, published as
/// any other (a message of a registry Shoal serves, or free text).
async fn submit_test_event(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    const ACTION: &str = "SubmitTestEvent";
    const PARAMS: [&str; 11] = [
        "EventType",
        "EventId",
        "EventGroupId",
        "EventTimestamp",
        "Message",
        "MessageArgs",
        "MessageId",
        "MessageSeverity",
        "OriginOfCondition",
        "Resolution",
        "Severity",
    ];
    let mut bad = Vec::new();
    for k in body.keys() {
        if !PARAMS.contains(&k.as_str()) {
            bad.push(Msg::new("ActionParameterUnknown", &[ACTION, &echo(k)]));
        }
    }
    let text = |k: &'static str, bad: &mut Vec<Msg>| -> Option<String> {
        let v = body.get(k)?;
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                bad.push(Msg::new(
                    "ActionParameterValueTypeError",
                    &[&echo(&v.to_string()), k, ACTION],
                ));
                None
            }
        }
    };
    let event_type = text("EventType", &mut bad).unwrap_or_else(|| "Alert".into());
    if !EVENT_TYPES.contains(&event_type.as_str()) && event_type != "Other" {
        bad.push(Msg::new(
            "ActionParameterValueNotInList",
            &[&echo(&event_type), "EventType", ACTION],
        ));
    }
    let message_id = text("MessageId", &mut bad);
    let message = text("Message", &mut bad);
    let severity = text("Severity", &mut bad).or(text("MessageSeverity", &mut bad));
    let origin = match body.get("OriginOfCondition") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => match v.get("@odata.id").and_then(Value::as_str) {
            Some(s) => Some(s.to_string()),
            None => {
                bad.push(Msg::new(
                    "ActionParameterValueTypeError",
                    &[&echo(&v.to_string()), "OriginOfCondition", ACTION],
                ));
                None
            }
        },
    };
    let args: Vec<String> = match body.get("MessageArgs") {
        None => Vec::new(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(v) => {
            bad.push(Msg::new(
                "ActionParameterValueTypeError",
                &[&echo(&v.to_string()), "MessageArgs", ACTION],
            ));
            Vec::new()
        }
    };
    for k in ["EventId", "EventGroupId", "EventTimestamp", "Resolution"] {
        if body
            .get(k)
            .is_some_and(|v| !v.is_string() && !v.is_number())
        {
            bad.push(Msg::new(
                "ActionParameterValueTypeError",
                &[&echo(&body[k].to_string()), k, ACTION],
            ));
        }
    }
    if !bad.is_empty() {
        return Err(ApiError::BadRequest(bad));
    }
    if !st.events.settings().enabled {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            vec![Msg::new("ServiceDisabled", &[SERVICE])],
        ));
    }
    let mut r = Record::of(&RESOURCE_EVENT, "TestMessage", &[], &event_type, origin, "");
    if let Some(id) = message_id {
        r.message_id = id;
    }
    if let Some(m) = message {
        r.message = m;
    }
    if let Some(s) = severity {
        r.severity = s;
    }
    r.args = args;
    tracing::info!(message_id = %r.message_id, "test event submitted");
    st.events.publish(vec![r]);
    Ok(json::no_content().into_response())
}

async fn open_sse(
    State(st): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    sse::open(&st, &headers, &uri).await
}
