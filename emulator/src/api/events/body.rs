//! A subscription's body, parsed and checked whole: a POST's (every
//! property the service takes, what it offers: types, prefixes, resource
//! types, the destination's form and address) and a PATCH's (only what
//! may change). Every problem is named; a body with any creates or
//! changes nothing.

use serde_json::{Map, Value};

use super::destination::{RetryPolicy, Spec, EVENT_TYPES};
use super::record::RESOURCE_TYPES;
use crate::api::error::{ApiError, Msg};
use crate::api::input::echo;
use crate::netpolicy::{AddressPolicy, IpFamily};
use crate::profile::event_messages::EventMessages;
use crate::registry::{self, EVENT_REGISTRIES};

/// What a Destination may be at most, as bmcweb bounds it.
const MAX_DESTINATION: usize = 2000;
const MAX_CONTEXT: usize = 256;
/// `HttpHeaders`: how many, and their bytes together.
const MAX_HEADERS: usize = 32;
const MAX_HEADER_BYTES: usize = 8192;
/// Headers the BMC writes itself (or that would change the request's
/// framing): a subscription may not set them.
const FORBIDDEN_HEADERS: [&str; 12] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "proxy-authorization",
    "proxy-connection",
];

/// What the service offers subscriptions, for their checks.
pub struct Offer<'a> {
    pub addresses: &'a AddressPolicy,
    pub https_only: bool,
    /// The vendor's own messages the BMC sends (its profile's).
    pub messages: &'a EventMessages,
}

/// The properties a POST may carry.
const CREATE: [&str; 19] = [
    "Destination",
    "Protocol",
    "Context",
    "EventFormatType",
    "EventTypes",
    "RegistryPrefixes",
    "ExcludeRegistryPrefixes",
    "MessageIds",
    "ExcludeMessageIds",
    "ResourceTypes",
    "OriginResources",
    "SubordinateResources",
    "IncludeOriginOfCondition",
    "HttpHeaders",
    "VerifyCertificate",
    "DeliveryRetryPolicy",
    "SendHeartbeat",
    "HeartbeatIntervalMinutes",
    "SubscriptionType",
];

/// The properties a PATCH may change.
pub const PATCHABLE: [&str; 6] = [
    "Context",
    "DeliveryRetryPolicy",
    "HttpHeaders",
    "VerifyCertificate",
    "SendHeartbeat",
    "HeartbeatIntervalMinutes",
];

/// Collects every problem of a body, then answers them all.
struct Problems(Vec<Msg>);

impl Problems {
    fn push(&mut self, m: Msg) {
        self.0.push(m);
    }

    fn type_error(&mut self, v: &Value, prop: &'static str) {
        self.push(Msg::new("PropertyValueTypeError", &[&echo_value(v), prop]).about(prop));
    }

    fn not_in_list(&mut self, v: &str, prop: &'static str) {
        self.push(Msg::new("PropertyValueNotInList", &[&echo(v), prop]).about(prop));
    }

    fn done(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::BadRequest(self.0))
        }
    }
}

fn echo_value(v: &Value) -> String {
    match v {
        Value::String(s) => echo(s),
        other => echo(&other.to_string()),
    }
}

/// A string array property, each member checked by `ok` (None: any).
fn strings(
    body: &Map<String, Value>,
    prop: &'static str,
    ok: Option<&dyn Fn(&str) -> bool>,
    p: &mut Problems,
) -> Vec<String> {
    let Some(v) = body.get(prop) else {
        return Vec::new();
    };
    let Some(items) = v.as_array() else {
        p.type_error(v, prop);
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_str() {
            Some(s) if ok.is_none_or(|f| f(s)) => out.push(s.to_string()),
            Some(s) => p.not_in_list(s, prop),
            None => p.type_error(item, prop),
        }
    }
    out
}

fn boolean(body: &Map<String, Value>, prop: &'static str, p: &mut Problems) -> Option<bool> {
    let v = body.get(prop)?;
    match v.as_bool() {
        Some(b) => Some(b),
        None => {
            p.type_error(v, prop);
            None
        }
    }
}

fn string<'b>(
    body: &'b Map<String, Value>,
    prop: &'static str,
    p: &mut Problems,
) -> Option<&'b str> {
    let v = body.get(prop)?;
    match v.as_str() {
        Some(s) => Some(s),
        None => {
            p.type_error(v, prop);
            None
        }
    }
}

/// Whether `id` names a message Shoal sends (`Prefix.Key` or
/// `Prefix.x.y.Key`).
fn known_message(id: &str, vendor: &EventMessages) -> bool {
    let parts: Vec<&str> = id.split('.').collect();
    let (prefix, key) = match parts.as_slice() {
        [p, k] | [p, _, _, k] | [p, _, _, _, k] => (*p, *k),
        _ => return false,
    };
    if prefix == registry::BASE_PREFIX {
        return registry::lookup(key).is_some();
    }
    EVENT_REGISTRIES
        .iter()
        .any(|r| r.prefix == prefix && r.messages.iter().any(|m| m.id == key))
        || vendor
            .all()
            .any(|(_, m)| m.parts().is_some_and(|(p, _, k)| (p, k) == (prefix, key)))
}

/// The registry prefixes events come from: Base, DMTF's event registries
/// and the vendor's, where the profile has one.
pub fn registry_prefixes(vendor: &EventMessages) -> Vec<&str> {
    let mut v = vec![registry::BASE_PREFIX];
    v.extend(EVENT_REGISTRIES.iter().map(|r| r.prefix));
    v.extend(vendor.registry().map(|(p, _)| p));
    v
}

/// Parses and checks a POST's body whole: a subscription, or every
/// problem it has.
pub fn parse_create(body: &Map<String, Value>, offer: &Offer) -> Result<Spec, ApiError> {
    let mut p = Problems(Vec::new());
    for k in body.keys() {
        if !CREATE.contains(&k.as_str()) && !k.starts_with("@odata.") {
            p.push(Msg::new("PropertyUnknown", &[&echo(k)]).about(k));
        }
    }
    let destination = match string(body, "Destination", &mut p) {
        Some(d) => {
            if let Err(why) = check_destination(d, offer) {
                tracing::info!(destination = d, why, "subscription refused");
                p.push(
                    Msg::new("PropertyValueFormatError", &[&echo(d), "Destination"])
                        .about("Destination"),
                );
            }
            d.to_string()
        }
        None if body.contains_key("Destination") => String::new(),
        None => {
            p.push(Msg::new(
                "CreateFailedMissingReqProperties",
                &["Destination"],
            ));
            String::new()
        }
    };
    if let Some(proto) = string(body, "Protocol", &mut p) {
        if proto != "Redfish" {
            p.not_in_list(proto, "Protocol");
        }
    }
    if let Some(t) = string(body, "SubscriptionType", &mut p) {
        if t != "RedfishEvent" {
            p.not_in_list(t, "SubscriptionType");
        }
    }
    if let Some(f) = string(body, "EventFormatType", &mut p) {
        if f != "Event" {
            p.not_in_list(f, "EventFormatType");
        }
    }
    let mut spec = Spec::sse(String::new());
    spec.sse = false;
    spec.destination = destination;
    patch_into(&mut spec, body, &mut p);
    let prefixes = registry_prefixes(offer.messages);
    let prefix_ok = |s: &str| prefixes.contains(&s);
    spec.event_types = strings(
        body,
        "EventTypes",
        Some(&|s: &str| EVENT_TYPES.contains(&s)),
        &mut p,
    );
    spec.registry_prefixes = strings(body, "RegistryPrefixes", Some(&prefix_ok), &mut p);
    spec.exclude_registry_prefixes =
        strings(body, "ExcludeRegistryPrefixes", Some(&prefix_ok), &mut p);
    let known = |id: &str| known_message(id, offer.messages);
    spec.message_ids = strings(body, "MessageIds", Some(&known), &mut p);
    spec.exclude_message_ids = strings(body, "ExcludeMessageIds", Some(&known), &mut p);
    spec.resource_types = strings(
        body,
        "ResourceTypes",
        Some(&|s: &str| RESOURCE_TYPES.contains(&s)),
        &mut p,
    );
    if !spec.message_ids.is_empty() && !spec.registry_prefixes.is_empty() {
        p.push(
            Msg::new("PropertyValueConflict", &["MessageIds", "RegistryPrefixes"])
                .about("MessageIds"),
        );
    }
    spec.origin_resources = origins(body, &mut p);
    spec.subordinate_resources = boolean(body, "SubordinateResources", &mut p).unwrap_or(false);
    spec.include_origin = boolean(body, "IncludeOriginOfCondition", &mut p).unwrap_or(false);
    p.done()?;
    Ok(spec)
}

/// `OriginResources`: links to resources of this service.
fn origins(body: &Map<String, Value>, p: &mut Problems) -> Vec<String> {
    let Some(v) = body.get("OriginResources") else {
        return Vec::new();
    };
    let Some(items) = v.as_array() else {
        p.type_error(v, "OriginResources");
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        match item.get("@odata.id").and_then(Value::as_str) {
            Some(u) if u.starts_with("/redfish/v1/") && !u.contains(['?', '#']) => {
                out.push(u.trim_end_matches('/').to_string())
            }
            Some(u) => p.push(
                Msg::new("PropertyValueFormatError", &[&echo(u), "OriginResources"])
                    .about("OriginResources"),
            ),
            None => p.type_error(item, "OriginResources"),
        }
    }
    out
}

/// Applies the writable properties of `body` to `spec` (a POST's, or a
/// PATCH's on a copy), noting every problem.
fn patch_into(spec: &mut Spec, body: &Map<String, Value>, p: &mut Problems) {
    if let Some(c) = string(body, "Context", p) {
        if c.len() > MAX_CONTEXT {
            p.push(Msg::new("PropertyValueFormatError", &[&echo(c), "Context"]).about("Context"));
        }
        spec.context = c.to_string();
    }
    if let Some(r) = string(body, "DeliveryRetryPolicy", p) {
        match RetryPolicy::parse(r) {
            Some(policy) => spec.retry = policy,
            None => p.not_in_list(r, "DeliveryRetryPolicy"),
        }
    }
    if let Some(v) = boolean(body, "VerifyCertificate", p) {
        spec.verify_certificate = v;
    }
    if let Some(v) = body.get("HeartbeatIntervalMinutes") {
        match v.as_u64() {
            Some(m @ 1..=65535) => spec.heartbeat_minutes = m as u32,
            Some(_) => p.push(
                Msg::new(
                    "PropertyValueOutOfRange",
                    &[&v.to_string(), "HeartbeatIntervalMinutes"],
                )
                .about("HeartbeatIntervalMinutes"),
            ),
            None => p.type_error(v, "HeartbeatIntervalMinutes"),
        }
    }
    if let Some(on) = boolean(body, "SendHeartbeat", p) {
        spec.heartbeat = on.then_some(spec.heartbeat_minutes);
    }
    if let Some(m) = spec.heartbeat.as_mut() {
        *m = spec.heartbeat_minutes;
    }
    if let Some(v) = body.get("HttpHeaders") {
        match headers(v) {
            Ok(h) => spec.headers = h,
            Err(m) => p.push(m),
        }
    }
}

/// A PATCH of `spec`: the changed spec, or every problem (nothing
/// changed).
pub fn parse_patch(spec: &Spec, body: &Map<String, Value>) -> Result<Spec, ApiError> {
    let mut p = Problems(Vec::new());
    for k in body.keys() {
        if k.starts_with("@odata.") {
            continue;
        }
        if CREATE.contains(&k.as_str()) || matches!(k.as_str(), "Id" | "Name" | "Status") {
            if !PATCHABLE.contains(&k.as_str()) {
                p.push(Msg::new("PropertyNotWritable", &[&echo(k)]).about(k));
            }
        } else {
            p.push(Msg::new("PropertyUnknown", &[&echo(k)]).about(k));
        }
    }
    let mut out = spec.clone();
    patch_into(&mut out, body, &mut p);
    p.done()?;
    Ok(out)
}

/// `HttpHeaders`: an array of objects of string values (metal3 sends one
/// object per header), none the BMC writes itself, bounded.
fn headers(v: &Value) -> Result<Vec<(String, String)>, Msg> {
    let bad = |why: &str| {
        tracing::info!(why, "HttpHeaders refused");
        Msg::new("PropertyValueFormatError", &["(hidden)", "HttpHeaders"]).about("HttpHeaders")
    };
    let objects: Vec<&Map<String, Value>> = match v {
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_object()
                    .ok_or_else(|| bad("a member is not an object"))
            })
            .collect::<Result<_, _>>()?,
        Value::Object(o) => vec![o],
        Value::Null => Vec::new(),
        _ => return Err(bad("not an array of objects")),
    };
    let mut out = Vec::new();
    let mut bytes = 0;
    for o in objects {
        for (name, value) in o {
            let value = value
                .as_str()
                .ok_or_else(|| bad("a header's value is not a string"))?;
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(bad("a header name or value is malformed"));
            }
            if FORBIDDEN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(bad("a header the BMC writes itself"));
            }
            bytes += name.len() + value.len();
            out.push((name.clone(), value.to_string()));
        }
    }
    if out.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Err(bad("too many or too long"));
    }
    Ok(out)
}

/// Why `d` cannot be a destination, if it cannot: an absolute http(s)
/// URL without credentials in it, whose literal address the policy
/// admits (a host name is checked when it is resolved, at delivery).
fn check_destination(d: &str, offer: &Offer) -> Result<(), &'static str> {
    if d.len() > MAX_DESTINATION {
        return Err("too long");
    }
    let https = d.starts_with("https://");
    if !https && !d.starts_with("http://") {
        return Err("not an absolute http or https URL");
    }
    if offer.https_only && !https {
        return Err("this BMC pushes events over HTTPS only");
    }
    let uri: axum::http::Uri = d.parse().map_err(|_| "not a URL")?;
    let authority = uri.authority().ok_or("no host")?;
    if authority.as_str().contains('@') {
        return Err("credentials in the URL (HttpHeaders carry them)");
    }
    if authority.host().is_empty() {
        return Err("no host");
    }
    if let Some(ip) = IpFamily::literal_host(d) {
        offer.addresses.admits(ip)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offer() -> AddressPolicy {
        AddressPolicy::default()
    }

    fn parse(v: Value) -> Result<Spec, ApiError> {
        let policy = offer();
        parse_create(
            v.as_object().unwrap(),
            &Offer {
                addresses: &policy,
                https_only: false,
                messages: &EventMessages::default(),
            },
        )
    }

    fn ids(e: ApiError) -> Vec<&'static str> {
        match e {
            ApiError::BadRequest(m) => m.iter().map(|m| m.id).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_ironic_and_the_protocol_validator_send_is_taken() {
        let s = parse(json!({
            "Destination": "https://192.0.2.9/events", "Protocol": "Redfish",
            "Context": "", "EventTypes": ["Alert"],
            "HttpHeaders": [{"X-Auth": "a"}, {"X-Other": "b"}],
        }))
        .unwrap();
        assert_eq!(s.event_types, ["Alert"]);
        assert_eq!(s.headers.len(), 2);
        let v = s.json("1", "/redfish/v1/EventService/Subscriptions/1", false);
        assert_eq!(v["HttpHeaders"], json!([]));
        assert_eq!(v["Context"], "");
        parse(json!({"Destination": "https://192.168.1.50/Destination1",
                     "Context": "RPV test subscription", "Protocol": "Redfish"}))
        .unwrap();
    }

    #[test]
    fn every_bad_property_is_named_and_nothing_taken() {
        let e = parse(json!({
            "Destination": "ftp://x/", "Protocol": "FTP", "EventTypes": ["Bogus"],
            "RegistryPrefixes": ["Nope"], "HttpHeaders": [{"Host": "x"}],
            "Extra": 1, "DeliveryRetryPolicy": "Sometimes",
        }))
        .unwrap_err();
        let got = ids(e);
        for want in [
            "PropertyValueFormatError",
            "PropertyValueNotInList",
            "PropertyUnknown",
        ] {
            assert!(got.contains(&want), "{got:?}");
        }
        assert_eq!(got.len(), 7, "{got:?}");
        assert_eq!(
            ids(parse(json!({"Context": "x"})).unwrap_err()),
            ["CreateFailedMissingReqProperties"]
        );
        // The default policy refuses loopback and credentials in the URL.
        for d in ["http://127.0.0.1:9/", "http://u:p@192.0.2.1/", "http:///x"] {
            assert!(parse(json!({ "Destination": d })).is_err(), "{d}");
        }
        assert_eq!(
            ids(parse(json!({"Destination": "http://192.0.2.1/",
                             "MessageIds": ["ResourceEvent.ResourceChanged"],
                             "RegistryPrefixes": ["Base"]}))
            .unwrap_err()),
            ["PropertyValueConflict"]
        );
    }
}
