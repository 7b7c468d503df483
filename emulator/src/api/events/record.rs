//! What an event says: the records made from one change of the core's
//! change stream (a message of an event registry, the resource it is
//! about, the kind of event), and the `Event` payload a destination
//! receives, shaped by the profile.
//!
//! Invariant: every record comes from a change that happened (or from
//! the service's own doings: a test event, a heartbeat, a subscription
//! ended); every MessageId is in `registry.rs`.

use std::time::SystemTime;

use serde_json::{json, Value};

use crate::bmc::changes::{ChangeRecord, What};
use crate::model::{MediaSlot, PowerState};
use crate::registry::{self, EventRegistry, HEARTBEAT_EVENT, RESOURCE_EVENT, TASK_EVENT};
use crate::timefmt::rfc3339;

/// One record of an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// `StatusChange`, `ResourceUpdated`, `ResourceAdded`,
    /// `ResourceRemoved`, `Alert`, `Other`.
    pub event_type: String,
    /// `Prefix.major.minor.Key`.
    pub message_id: String,
    pub message: String,
    pub args: Vec<String>,
    pub severity: String,
    /// The resource the record is about (its URI).
    pub origin: Option<String>,
    /// That resource as a GET rendered it when the record was made, for
    /// subscriptions with `IncludeOriginOfCondition` (read only while one
    /// exists).
    pub origin_body: Option<std::sync::Arc<Value>>,
    /// The schema of that resource (`ComputerSystem`, `VirtualMedia`).
    pub resource_type: &'static str,
    pub at: SystemTime,
}

impl Record {
    /// A record of a message of `reg`.
    pub fn of(
        reg: &EventRegistry,
        key: &str,
        args: &[&str],
        event_type: &str,
        origin: Option<String>,
        resource_type: &'static str,
    ) -> Record {
        let (message_id, message, severity) = reg.message(key, args);
        Record {
            event_type: event_type.to_string(),
            message_id,
            message,
            args: args.iter().map(|a| a.to_string()).collect(),
            severity: severity.to_string(),
            origin,
            origin_body: None,
            resource_type,
            at: SystemTime::now(),
        }
    }

    /// A record of a Base message (a subscription ended, events lost).
    pub fn base(key: &'static str, origin: Option<String>, resource_type: &'static str) -> Record {
        let def = registry::lookup(key);
        debug_assert!(def.is_some(), "{key} missing from the Base table");
        Record {
            event_type: "Other".into(),
            message_id: registry::message_id(key),
            message: def.map_or(key, |d| d.message).to_string(),
            args: Vec::new(),
            severity: def.map_or("OK", |d| d.severity).to_string(),
            origin,
            origin_body: None,
            resource_type,
            at: SystemTime::now(),
        }
    }

    /// The heartbeat of a subscription that asked for them.
    pub fn heartbeat(subscription: &str) -> Record {
        Record::of(
            &HEARTBEAT_EVENT,
            "RedfishServiceFunctional",
            &[],
            "Other",
            Some(subscription.to_string()),
            "EventDestination",
        )
    }

    /// The registry prefix of its MessageId.
    pub fn prefix(&self) -> &str {
        self.message_id.split('.').next().unwrap_or("")
    }

    /// Its MessageId without the version: `Prefix.Key`.
    pub fn unversioned_id(&self) -> String {
        let key = self.message_id.rsplit('.').next().unwrap_or("");
        format!("{}.{key}", self.prefix())
    }
}

/// One event: its records, under the Id the service gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: u64,
    pub records: Vec<Record>,
}

/// Where the resources of one system are, as an endpoint shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub system: String,
    pub manager: String,
    /// The VirtualMedia collection and the CD's and removable device's
    /// Ids, where the profile has them.
    pub media: Option<(String, [&'static str; 2])>,
}

/// The records a change makes (none for one no client can see: a boot's
/// record, which the power-on and the boot override's change tell).
pub fn records_of(change: &ChangeRecord, at: &Place) -> Vec<Record> {
    let changed = |origin: String, resource_type: &'static str| {
        let mut r = Record::of(
            &RESOURCE_EVENT,
            "ResourceChanged",
            &[],
            "ResourceUpdated",
            Some(origin),
            resource_type,
        );
        r.at = change.at;
        vec![r]
    };
    let media = |slot: MediaSlot| match &at.media {
        Some((base, [cd, removable])) => format!(
            "{base}/{}",
            if slot == MediaSlot::Cd { cd } else { removable }
        ),
        None => at.system.clone(),
    };
    let sys = at.system.clone();
    match &change.what {
        What::Power { after, .. } => {
            let key = match after {
                PowerState::On => "ResourcePoweredOn",
                PowerState::Off => "ResourcePoweredOff",
                PowerState::PoweringOn => "ResourcePoweringOn",
                PowerState::PoweringOff => "ResourcePoweringOff",
            };
            let mut r = Record::of(
                &RESOURCE_EVENT,
                key,
                &[&change.system],
                "StatusChange",
                Some(sys),
                "ComputerSystem",
            );
            r.at = change.at;
            vec![r]
        }
        // A log's clearing is told by the log itself, a BMC's restart by
        // its Lifecycle log (the streams that would carry it end with it);
        // a reset by the power states it moves.
        What::Booted { .. }
        | What::LogCleared { .. }
        | What::BmcRestarted { .. }
        | What::Reset { .. } => Vec::new(),
        What::Boot { .. }
        | What::Indicator { .. }
        | What::AssetTag { .. }
        | What::PowerRestore { .. } => changed(sys, "ComputerSystem"),
        What::Media { slot, .. } => changed(media(*slot), "VirtualMedia"),
        What::Bios { .. } => changed(format!("{sys}/Bios"), "Bios"),
        // A new BMC firmware shows on the Manager; the BIOS's and the
        // NIC's on the System (its BiosVersion, its adapter).
        What::Firmware { component, .. } => match component {
            crate::firmware::Component::Bmc => changed(at.manager.clone(), "Manager"),
            _ => changed(sys, "ComputerSystem"),
        },
        What::SecureBoot { .. } => changed(format!("{sys}/SecureBoot"), "SecureBoot"),
        What::Other { part } => match *part {
            // Volumes and the HTTPS boot CAs are collections under the
            // System: an origin is a resource, so the System it is.
            "storage" | "boot_certs" => changed(sys, "ComputerSystem"),
            "ntp" => changed(
                format!("{}/NetworkProtocol", at.manager),
                "ManagerNetworkProtocol",
            ),
            "cd_tls" => changed(media(MediaSlot::Cd), "VirtualMedia"),
            "floppy_tls" => changed(media(MediaSlot::Floppy), "VirtualMedia"),
            _ => changed(at.manager.clone(), "Manager"),
        },
    }
}

/// The `ResourceTypes` events are about.
pub const RESOURCE_TYPES: [&str; 12] = [
    "Task",
    "ComputerSystem",
    "VirtualMedia",
    "Bios",
    "SecureBoot",
    "ManagerNetworkProtocol",
    "Manager",
    "EventDestination",
    "ManagerAccount",
    "AccountService",
    "Session",
    "SessionService",
];

/// What happened to a resource of the service's own (an account, a
/// session, a service's settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Happened {
    Created,
    Changed,
    Removed,
}

impl Record {
    /// A task's (or Dell job's) state: `TaskStarted`, `TaskCompletedOK`,
    /// `TaskCompletedWarning`, `TaskAborted` (TaskEvent), about the task
    /// at `uri`.
    pub fn task(key: &'static str, id: &str, uri: String) -> Record {
        Record::of(&TASK_EVENT, key, &[id], "StatusChange", Some(uri), "Task")
    }

    /// TaskProgressChanged of task `id`.
    pub fn task_progress(id: &str, percent: u8, uri: String) -> Record {
        let percent = percent.to_string();
        Record::of(
            &TASK_EVENT,
            "TaskProgressChanged",
            &[id, &percent],
            "StatusChange",
            Some(uri),
            "Task",
        )
    }

    /// `ResourceCreated`, `ResourceChanged` or `ResourceRemoved` of the
    /// resource at `uri`.
    pub fn resource(happened: Happened, uri: String, resource_type: &'static str) -> Record {
        let (key, event_type) = match happened {
            Happened::Created => ("ResourceCreated", "ResourceAdded"),
            Happened::Changed => ("ResourceChanged", "ResourceUpdated"),
            Happened::Removed => ("ResourceRemoved", "ResourceRemoved"),
        };
        Record::of(
            &RESOURCE_EVENT,
            key,
            &[],
            event_type,
            Some(uri),
            resource_type,
        )
    }
}

/// How a BMC shapes what it sends (its profile's `[events]`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape<'a> {
    /// Every record's `EventType` (iDRAC: `Alert`).
    pub event_type: Option<&'a str>,
    /// `OriginOfCondition` a plain string (iLO 5, bmcweb).
    pub origin_as_string: bool,
    /// `Id` and `EventId` JSON numbers (bmcweb).
    pub ids_as_numbers: bool,
    /// `Oem.Dell` on the Event (iDRAC).
    pub dell_oem: bool,
    /// `OriginOfCondition` the resource itself, where the record has it
    /// (the subscription's `IncludeOriginOfCondition`).
    pub include_origin: bool,
}

impl<'a> Shape<'a> {
    pub fn of(p: &'a crate::profile::Events) -> Shape<'a> {
        Shape {
            event_type: p.event_type.as_deref(),
            origin_as_string: p.origin_as_string,
            ids_as_numbers: p.ids_as_numbers,
            include_origin: false,
            dell_oem: p.dell_oem,
        }
    }
}

/// The `Event` a destination with `context` receives.
pub fn payload(ev: &Event, records: &[&Record], context: &str, shape: Shape) -> Value {
    let events: Vec<Value> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let event_id = match shape.ids_as_numbers {
                // One number per record: the event's Id, then its index.
                true => json!(ev.id * 100 + i as u64),
                false => json!(format!("{}.{i}", ev.id)),
            };
            let mut e = json!({
                "EventType": shape.event_type.unwrap_or(&r.event_type),
                "EventId": event_id,
                "EventTimestamp": rfc3339(r.at),
                "MemberId": i.to_string(),
                "MessageId": r.message_id,
                "Message": r.message,
                "MessageArgs": r.args,
                "MessageSeverity": r.severity,
                "Severity": r.severity,
                "Context": context,
            });
            if let Some(o) = &r.origin {
                e["OriginOfCondition"] = match (&r.origin_body, shape) {
                    (
                        Some(body),
                        Shape {
                            include_origin: true,
                            ..
                        },
                    ) => (**body).clone(),
                    (
                        _,
                        Shape {
                            origin_as_string: true,
                            ..
                        },
                    ) => json!(o),
                    _ => json!({ "@odata.id": o }),
                };
            }
            e
        })
        .collect();
    let mut v = json!({
        "@odata.type": "#Event.v1_7_0.Event",
        "Id": if shape.ids_as_numbers { json!(ev.id) } else { json!(ev.id.to_string()) },
        "Name": "Event Array",
        "Context": context,
        "Events@odata.count": events.len(),
        "Events": events,
    });
    if shape.dell_oem {
        v["Oem"] = json!({"Dell": {
            "@odata.type": "#DellEvent.v1_0_0.DellEvent",
            "ServerHostname": "",
        }});
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmc::changes::Cause;
    use crate::model::MediaState;

    fn place() -> Place {
        Place {
            system: "/redfish/v1/Systems/s1".into(),
            manager: "/redfish/v1/Managers/m1".into(),
            media: Some((
                "/redfish/v1/Managers/m1/VirtualMedia".into(),
                ["Cd", "Floppy"],
            )),
        }
    }

    fn change(what: What) -> ChangeRecord {
        ChangeRecord {
            system: "s1".into(),
            name: "node-1".into(),
            what,
            cause: Cause::Machine,
            at: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn power_and_media_changes_name_their_message_and_resource() {
        let on = records_of(
            &change(What::Power {
                before: PowerState::Off,
                after: PowerState::On,
            }),
            &place(),
        );
        assert_eq!(on.len(), 1);
        assert_eq!(on[0].message_id, "ResourceEvent.1.3.ResourcePoweredOn");
        assert_eq!(on[0].message, "The resource `s1` has powered on.");
        assert_eq!(on[0].origin.as_deref(), Some("/redfish/v1/Systems/s1"));
        assert_eq!(on[0].event_type, "StatusChange");
        assert_eq!(on[0].unversioned_id(), "ResourceEvent.ResourcePoweredOn");
        let ejected = records_of(
            &change(What::Media {
                slot: MediaSlot::Cd,
                before: MediaState::default(),
                after: MediaState::default(),
            }),
            &place(),
        );
        assert_eq!(
            ejected[0].origin.as_deref(),
            Some("/redfish/v1/Managers/m1/VirtualMedia/Cd")
        );
        assert_eq!(ejected[0].resource_type, "VirtualMedia");
        assert_eq!(ejected[0].prefix(), "ResourceEvent");
    }

    #[test]
    fn a_payload_carries_the_context_and_string_ids() {
        let r = Record::base("SubscriptionTerminated", None, "EventDestination");
        let ev = Event {
            id: 7,
            records: vec![r.clone()],
        };
        let p = payload(
            &ev,
            &[&r],
            "ctx",
            Shape {
                event_type: Some("Alert"),
                ..Default::default()
            },
        );
        assert_eq!(p["Id"], "7");
        assert_eq!(p["Context"], "ctx");
        assert_eq!(p["Events"][0]["EventType"], "Alert");
        assert_eq!(p["Events"][0]["EventId"], "7.0");
        assert_eq!(
            p["Events"][0]["MessageId"],
            "Base.1.19.SubscriptionTerminated"
        );
        assert!(p["Events"][0].get("OriginOfCondition").is_none());
    }

    #[test]
    fn vendor_shapes_change_the_origin_the_ids_and_the_oem() {
        let r = Record::resource(
            Happened::Changed,
            "/redfish/v1/Systems/1".into(),
            "ComputerSystem",
        );
        let ev = Event {
            id: 3,
            records: vec![r.clone()],
        };
        // iLO 5 and bmcweb: a plain string.
        let ilo = payload(
            &ev,
            &[&r],
            "",
            Shape {
                origin_as_string: true,
                ..Default::default()
            },
        );
        assert_eq!(
            ilo["Events"][0]["OriginOfCondition"],
            "/redfish/v1/Systems/1"
        );
        // bmcweb: numbers.
        let obmc = payload(
            &ev,
            &[&r],
            "",
            Shape {
                ids_as_numbers: true,
                ..Default::default()
            },
        );
        assert_eq!(obmc["Id"], 3);
        assert_eq!(obmc["Events"][0]["EventId"], 300);
        // iDRAC: Oem.Dell.
        let dell = payload(
            &ev,
            &[&r],
            "",
            Shape {
                dell_oem: true,
                ..Default::default()
            },
        );
        assert_eq!(
            dell["Oem"]["Dell"]["@odata.type"],
            "#DellEvent.v1_0_0.DellEvent"
        );
        let plain = payload(&ev, &[&r], "", Shape::default());
        assert!(plain.get("Oem").is_none());
        assert_eq!(
            plain["Events"][0]["OriginOfCondition"]["@odata.id"],
            "/redfish/v1/Systems/1"
        );
    }
}
