//! The records a change makes on a BMC whose profile has messages of its
//! own (`[events.messages]`): the vendor's message where its registry has
//! one for the change, DMTF's ResourceEvent record otherwise (unless the
//! profile says the BMC sends none), and the vendor's registry itself as
//! the service serves it.

use serde_json::Value;

use super::record::{records_of, Place, Record};
use crate::bmc::changes::{ChangeRecord, What};
use crate::model::PowerState;
use crate::profile::event_messages::{Arg, EventMessage};
use crate::profile::Profile;
use crate::registry::{self, MessageDef, RESOURCE_EVENT};

/// The records of `change` on a BMC of `profile`.
pub fn records_for(change: &ChangeRecord, at: &Place, profile: &Profile) -> Vec<Record> {
    let (m, e) = (&profile.events.messages, &profile.events);
    let own = match &change.what {
        What::Power {
            after: PowerState::On,
            ..
        } => m
            .power_on
            .as_ref()
            .map(|v| (v, &at.system, "ComputerSystem")),
        What::Power {
            after: PowerState::Off,
            ..
        } => m
            .power_off
            .as_ref()
            .map(|v| (v, &at.system, "ComputerSystem")),
        What::BmcRestarted { .. } => m
            .bmc_restarted
            .as_ref()
            .map(|v| (v, &at.manager, "Manager")),
        _ => None,
    };
    if let Some((msg, origin, resource_type)) = own {
        return vec![record(
            msg,
            change,
            at,
            origin.clone(),
            resource_type,
            profile,
        )];
    }
    let mut records = records_of(change, at);
    if let Some(msg) = &m.changed {
        for r in records
            .iter_mut()
            .filter(|r| r.message_id.ends_with(".ResourceChanged"))
        {
            let origin = r.origin.clone().unwrap_or_default();
            *r = record(msg, change, at, origin, r.resource_type, profile);
        }
    }
    if !e.resource_events {
        records.retain(|r| r.prefix() != RESOURCE_EVENT.prefix);
    }
    records
}

/// A record of the vendor's message `msg` about `origin`.
fn record(
    msg: &EventMessage,
    change: &ChangeRecord,
    at: &Place,
    origin: String,
    resource_type: &'static str,
    profile: &Profile,
) -> Record {
    let args: Vec<String> = msg
        .args
        .iter()
        .map(|a| match (a, &change.what) {
            (Arg::System, _) => at.system.rsplit('/').next().unwrap_or("").to_string(),
            (Arg::Reason, What::BmcRestarted { reason }) => reason.to_string(),
            (Arg::Reason, _) => String::new(),
            (Arg::Firmware, _) => profile.bmc_firmware_version.clone(),
        })
        .collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let default_type = match change.what {
        What::Power { .. } | What::BmcRestarted { .. } => "Alert",
        _ => "ResourceUpdated",
    };
    Record {
        event_type: msg
            .event_type
            .as_deref()
            .unwrap_or(default_type)
            .to_string(),
        message_id: msg.id.clone(),
        message: registry::substitute(&msg.message, &refs),
        args,
        severity: msg.severity.clone(),
        origin: msg.origin.then_some(origin),
        origin_body: None,
        resource_type,
        at: change.at,
    }
}

/// The vendor's registry as the service serves it (the messages it sends).
pub fn registry_document(profile: &'static Profile, uri: &str) -> Option<Value> {
    let m = &profile.events.messages;
    let (prefix, version) = m.registry()?;
    let defs: Vec<MessageDef> = m
        .all()
        .filter_map(|(_, msg)| {
            let (_, _, key) = msg.parts()?;
            Some(MessageDef {
                id: key,
                message: &msg.message,
                severity: &msg.severity,
                resolution: "None.",
                args: msg.args.len() as u8,
            })
        })
        .collect();
    let name = format!("{} Message Registry", profile.manufacturer);
    Some(registry::vendor_document(
        uri,
        prefix,
        &version,
        &name,
        &defs,
        &profile.manufacturer,
    ))
}
