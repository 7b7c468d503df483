//! An EventDestination: what a client asked for when it subscribed
//! (`Spec`, made from a body by `body`), what it is shown as, and which
//! records it takes.
//!
//! Invariant: `HttpHeaders` are never shown back.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::record::Record;

/// The EventTypes a subscription may name.
pub const EVENT_TYPES: [&str; 5] = [
    "StatusChange",
    "ResourceUpdated",
    "ResourceAdded",
    "ResourceRemoved",
    "Alert",
];
crate::model::redfish_enum!(
    /// What happens when a delivery's retries run out.
    RetryPolicy {
        TerminateAfterRetries = "TerminateAfterRetries",
        SuspendRetries = "SuspendRetries",
        RetryForever = "RetryForever",
        RetryForeverWithBackoff = "RetryForeverWithBackoff",
    }
);

/// A subscription as asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The URL events are POSTed to; empty for an SSE stream.
    pub destination: String,
    pub context: String,
    pub event_types: Vec<String>,
    pub registry_prefixes: Vec<String>,
    pub exclude_registry_prefixes: Vec<String>,
    pub message_ids: Vec<String>,
    pub exclude_message_ids: Vec<String>,
    pub resource_types: Vec<String>,
    pub origin_resources: Vec<String>,
    pub subordinate_resources: bool,
    pub include_origin: bool,
    pub headers: Vec<(String, String)>,
    pub verify_certificate: bool,
    pub retry: RetryPolicy,
    /// Heartbeats every so many minutes (`SendHeartbeat`).
    pub heartbeat: Option<u32>,
    pub heartbeat_minutes: u32,
    pub sse: bool,
}

impl Spec {
    /// The spec of an SSE stream: every record its `$filter` lets
    /// through (the filter is the stream's own).
    pub fn sse(context: String) -> Spec {
        Spec {
            destination: String::new(),
            context,
            event_types: Vec::new(),
            registry_prefixes: Vec::new(),
            exclude_registry_prefixes: Vec::new(),
            message_ids: Vec::new(),
            exclude_message_ids: Vec::new(),
            resource_types: Vec::new(),
            origin_resources: Vec::new(),
            subordinate_resources: false,
            include_origin: false,
            headers: Vec::new(),
            verify_certificate: true,
            retry: RetryPolicy::TerminateAfterRetries,
            heartbeat: None,
            heartbeat_minutes: 10,
            sse: true,
        }
    }

    /// Whether this subscription takes `r`.
    pub fn takes(&self, r: &Record) -> bool {
        let id = r.unversioned_id();
        let id_in = |list: &[String]| list.iter().any(|m| same_message(m, &id));
        (self.event_types.is_empty() || self.event_types.contains(&r.event_type))
            && (self.registry_prefixes.is_empty()
                || self.registry_prefixes.iter().any(|p| p == r.prefix()))
            && !self
                .exclude_registry_prefixes
                .iter()
                .any(|p| p == r.prefix())
            && (self.message_ids.is_empty() || id_in(&self.message_ids))
            && !id_in(&self.exclude_message_ids)
            && (self.resource_types.is_empty()
                || self.resource_types.iter().any(|t| t == r.resource_type))
            && (self.origin_resources.is_empty()
                || r.origin.as_deref().is_some_and(|o| {
                    self.origin_resources.iter().any(|want| {
                        o == want
                            || self.subordinate_resources
                                && o.strip_prefix(want.as_str())
                                    .is_some_and(|rest| rest.starts_with('/'))
                    })
                }))
    }

    /// The EventDestination resource `id` at `uri`.
    pub fn json(&self, id: &str, uri: &str, suspended: bool) -> Value {
        let links =
            |v: &[String]| -> Vec<Value> { v.iter().map(|u| json!({ "@odata.id": u })).collect() };
        let mut v = json!({
            "@odata.type": "#EventDestination.v1_14_1.EventDestination",
            "@odata.id": uri,
            "Id": id,
            "Name": format!("Event Destination {id}"),
            "Context": self.context,
            "Protocol": "Redfish",
            "SubscriptionType": if self.sse { "SSE" } else { "RedfishEvent" },
            "EventFormatType": "Event",
            "EventTypes": self.event_types,
            "RegistryPrefixes": self.registry_prefixes,
            "ExcludeRegistryPrefixes": self.exclude_registry_prefixes,
            "MessageIds": self.message_ids,
            "ExcludeMessageIds": self.exclude_message_ids,
            "ResourceTypes": self.resource_types,
            "OriginResources": links(&self.origin_resources),
            "SubordinateResources": self.subordinate_resources,
            "IncludeOriginOfCondition": self.include_origin,
            // Write-only: what a client set is never shown back.
            "HttpHeaders": [],
            "DeliveryRetryPolicy": self.retry.as_str(),
            "Status": {
                "State": if suspended { "Disabled" } else { "Enabled" },
                "Health": "OK",
            },
        });
        if !self.sse {
            v["Destination"] = json!(self.destination);
            v["VerifyCertificate"] = json!(self.verify_certificate);
            v["SendHeartbeat"] = json!(self.heartbeat.is_some());
            v["HeartbeatIntervalMinutes"] = json!(self.heartbeat_minutes);
            v["Actions"] = json!({
                "#EventDestination.ResumeSubscription": {
                    "target": format!("{uri}/Actions/EventDestination.ResumeSubscription"),
                },
                "#EventDestination.SuspendSubscription": {
                    "target": format!("{uri}/Actions/EventDestination.SuspendSubscription"),
                },
            });
        }
        v
    }
}

/// `want` (a MessageIds entry: `Prefix.Key`, or with a version between)
/// names the message `id` (`Prefix.Key`).
fn same_message(want: &str, id: &str) -> bool {
    let parts: Vec<&str> = want.split('.').collect();
    match parts.as_slice() {
        [p, .., k] => format!("{p}.{k}") == id,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_select_records_by_each_property() {
        use super::super::record::Record;
        use crate::registry::RESOURCE_EVENT;
        let rec = Record::of(
            &RESOURCE_EVENT,
            "ResourceChanged",
            &[],
            "ResourceUpdated",
            Some("/redfish/v1/Systems/a/Bios".into()),
            "Bios",
        );
        let mut s = Spec::sse(String::new());
        assert!(s.takes(&rec));
        s.event_types = vec!["Alert".into()];
        assert!(!s.takes(&rec));
        s.event_types.clear();
        s.message_ids = vec!["ResourceEvent.1.3.0.ResourceChanged".into()];
        assert!(s.takes(&rec));
        s.exclude_registry_prefixes = vec!["ResourceEvent".into()];
        assert!(!s.takes(&rec));
        s.exclude_registry_prefixes.clear();
        s.origin_resources = vec!["/redfish/v1/Systems/a".into()];
        assert!(!s.takes(&rec), "not subordinate");
        s.subordinate_resources = true;
        assert!(s.takes(&rec));
        s.origin_resources = vec!["/redfish/v1/Systems/ab".into()];
        assert!(!s.takes(&rec), "a prefix of a segment is no parent");
    }
}
