//! Log services of Systems and Managers: `LogServices`, each service,
//! its `Entries` (every entry inline, as Ansible, libredfish and Dell's
//! scripts read them) and `#LogService.ClearLog`. Each service shows one
//! book of the BMC's log (`bmc::log`) in the format its profile names
//! (`profile::logs`): SEL entries with their IPMI event, event entries
//! with the message the EventService sends for the same change, Dell's
//! Lifecycle log.
//!
//! A read of a log first reads the system, so that what its machine did
//! by itself is in the log (`bmc::changes`). ClearLog answers 204 (Dell's
//! script takes nothing else; every other client takes any 2xx).

use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::events::record::{records_of, Place};
use super::events::vendor::records_for;
use super::json::{OptionalJsonObject, Resource};
use super::{collection, link, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::api::State;
use crate::bmc::changes::{Cause, What};
use crate::bmc::log::{self, Book, Entry, SelEvent};
use crate::model::System;
use crate::profile::logs::{BookName, Format, LogService};
use crate::profile::Profile;
use crate::timefmt::rfc3339;

const SYSTEMS: &str = "/redfish/v1/Systems/{id}/LogServices";
const MANAGERS: &str = "/redfish/v1/Managers/{id}/LogServices";
const CLEAR: &str = "LogService.ClearLog";

pub fn router() -> Router {
    let mut r = Router::new();
    for (base, owner) in [(SYSTEMS, Owner::System), (MANAGERS, Owner::Manager)] {
        r = r
            .route(
                base,
                get(move |st: State<AppState>, sys: Sys| services(st, sys, owner)),
            )
            .route(
                &format!("{base}/{{log}}"),
                get(
                    move |st: State<AppState>, sys: Sys, p: Path<(String, String)>, uri: Uri| {
                        service(st, sys, p, uri, owner)
                    },
                ),
            )
            .route(
                &format!("{base}/{{log}}/Entries"),
                get(
                    move |st: State<AppState>, sys: Sys, p: Path<(String, String)>, uri: Uri| {
                        entries(st, sys, p, uri, owner)
                    },
                ),
            )
            .route(
                &format!("{base}/{{log}}/Entries/{{entry}}"),
                get(
                    move |st: State<AppState>,
                          sys: Sys,
                          p: Path<(String, String, String)>,
                          uri: Uri| entry(st, sys, p, uri, owner),
                ),
            )
            .route(
                &format!("{base}/{{log}}/Actions/{CLEAR}"),
                post(
                    move |st: State<AppState>,
                          sys: Sys,
                          p: Path<(String, String)>,
                          uri: Uri,
                          body: OptionalJsonObject| {
                        clear(st, sys, p, uri, body, owner)
                    },
                ),
            );
    }
    r
}

/// Whose log services: the system's or its manager's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    System,
    Manager,
}

/// The owner's URI on this endpoint.
fn owner_uri(st: &AppState, sys: &System, owner: Owner) -> String {
    match owner {
        Owner::System => format!("/redfish/v1/Systems/{}", sys.id),
        Owner::Manager => format!("/redfish/v1/Managers/{}", st.manager_id(sys)),
    }
}

/// A log service's URI on this endpoint.
fn service_uri(st: &AppState, sys: &System, s: &LogService, owner: Owner) -> String {
    format!("{}/LogServices/{}", owner_uri(st, sys, owner), s.id)
}

fn services_of(profile: &Profile, owner: Owner) -> &[LogService] {
    match owner {
        Owner::System => &profile.logs.system,
        Owner::Manager => &profile.logs.manager,
    }
}

/// The service `log` of the owner, else 404 naming the path asked for.
fn find<'p>(
    profile: &'p Profile,
    owner: Owner,
    log: &str,
    uri: &Uri,
) -> Result<&'p LogService, ApiError> {
    services_of(profile, owner)
        .iter()
        .find(|s| s.id == log)
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

fn book(s: &LogService) -> Book {
    match s.book {
        BookName::Sel => Book::Sel,
        BookName::All => Book::All,
    }
}

async fn services(
    State(st): State<AppState>,
    Sys(sys): Sys,
    owner: Owner,
) -> Result<Resource, ApiError> {
    let base = format!("{}/LogServices", owner_uri(&st, &sys, owner));
    let profile = st.profile(&sys);
    let members = services_of(profile, owner)
        .iter()
        .map(|s| format!("{base}/{}", s.id));
    let mut body = collection(
        "LogServiceCollection",
        &base,
        "Log Service Collection",
        members,
    );
    body["Description"] = json!("Collection of Log Services");
    Ok(Resource::plain(body, "GET"))
}

async fn service(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, log)): Path<(String, String)>,
    uri: Uri,
    owner: Owner,
) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    let s = find(profile, owner, &log, &uri)?;
    let at = service_uri(&st, &sys, s, owner);
    let entry_type = match s.format {
        Format::Sel | Format::DellSel => "SEL",
        Format::Event => "Event",
        Format::DellLc => "OEM",
    };
    let mut body = json!({
        "@odata.type": "#LogService.v1_9_0.LogService",
        "@odata.id": at,
        "Id": s.id,
        "Name": s.name,
        "Description": s.name,
        "LogEntryType": entry_type,
        "MaxNumberOfRecords": log::CAPACITY,
        "OverWritePolicy": "WrapsWhenFull",
        "DateTime": rfc3339(std::time::SystemTime::now()),
        "DateTimeLocalOffset": "+00:00",
        "ServiceEnabled": true,
        "Status": {"State": "Enabled", "Health": "OK"},
        "Entries": link(&format!("{at}/Entries")),
    });
    if s.clear {
        body["Actions"] = json!({
            format!("#{CLEAR}"): {"target": format!("{at}/Actions/{CLEAR}")}
        });
    }
    Ok(Resource::plain(body, "GET"))
}

async fn entries(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, log)): Path<(String, String)>,
    uri: Uri,
    owner: Owner,
) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    let s = find(profile, owner, &log, &uri)?;
    let body = entries_body(&st, &sys, s, owner, profile);
    Ok(Resource::new(body, profile, "GET"))
}

/// A service's Entries, every entry inline.
fn entries_body(
    st: &AppState,
    sys: &System,
    s: &LogService,
    owner: Owner,
    profile: &Profile,
) -> Value {
    let at = format!("{}/Entries", service_uri(st, sys, s, owner));
    let place = place(st, sys);
    let mut members: Vec<Value> = st.core.changes.log.read(&sys.id, book(s), |r| {
        r.entries
            .iter()
            .filter_map(|e| render(e, s.format, &at, &place, profile))
            .collect()
    });
    if profile.logs.newest_first {
        members.reverse();
    }
    json!({
        "@odata.type": "#LogEntryCollection.LogEntryCollection",
        "@odata.id": at,
        "Name": format!("{} Entries", s.name),
        "Description": format!("The entries of the {}", s.name),
        "Members@odata.count": members.len(),
        "Members": members,
    })
}

async fn entry(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, log, id)): Path<(String, String, String)>,
    uri: Uri,
    owner: Owner,
) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    let s = find(profile, owner, &log, &uri)?;
    let at = format!("{}/Entries", service_uri(&st, &sys, s, owner));
    let place = place(&st, &sys);
    let found = id.parse::<u32>().ok().and_then(|n| {
        st.core.changes.log.read(&sys.id, book(s), |r| {
            r.get(n)
                .and_then(|e| render(e, s.format, &at, &place, profile))
        })
    });
    let body = found.ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    Ok(Resource::plain(body, "GET"))
}

/// `#LogService.ClearLog`: its one parameter, `LogEntriesETag`, must be
/// the Entries collection's ETag when given (else 428, as the schema
/// says, and nothing cleared).
async fn clear(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, log)): Path<(String, String)>,
    uri: Uri,
    OptionalJsonObject(body): OptionalJsonObject,
    owner: Owner,
) -> Result<Response, ApiError> {
    let profile = st.profile(&sys);
    let s = find(profile, owner, &log, &uri)?;
    if !s.clear {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let body = body.unwrap_or_default();
    if let Some(k) = body.keys().find(|k| *k != "LogEntriesETag") {
        return Err(ApiError::bad(
            Msg::new("ActionParameterUnknown", &[CLEAR, k]).about(k),
        ));
    }
    let _guard = st.core.locks.lock(&sys.id).await;
    if let Some(tag) = body.get("LogEntriesETag") {
        let Some(tag) = tag.as_str() else {
            return Err(ApiError::bad(
                Msg::new(
                    "ActionParameterValueTypeError",
                    &[&tag.to_string(), "LogEntriesETag", CLEAR],
                )
                .about("LogEntriesETag"),
            ));
        };
        let now = super::json::etag_of(&entries_body(&st, &sys, s, owner, profile));
        if tag.trim_start_matches("W/").trim_matches('"') != now {
            return Err(ApiError::PreconditionRequired);
        }
    }
    st.core.clear_log(&sys, book(s));
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Where the system's resources are (the origins of entries).
fn place(st: &AppState, sys: &System) -> Place {
    super::events::service::place(st, sys)
}

/// One entry in `format`; `None` for a record the format has no words
/// for (an event log leaves out a boot's own record, as events do).
fn render(e: &Entry, format: Format, at: &str, place: &Place, profile: &Profile) -> Option<Value> {
    let mut v = json!({
        "@odata.type": "#LogEntry.v1_21_0.LogEntry",
        "@odata.id": format!("{at}/{}", e.id),
        "Id": e.id.to_string(),
        "Name": format!("Log Entry {}", e.id),
        "Created": rfc3339(e.record.at),
    });
    let origin = match format {
        Format::Sel | Format::DellSel => {
            let sel = e.sel?;
            let (message, severity) = sel_words(&sel);
            let code = format!("6f{:02x}{:02x}ff", sel_data1(&sel), sel.data2);
            v["EntryType"] = json!("SEL");
            v["EntryCode"] = json!("Assert");
            v["SensorType"] = json!(sensor_type(sel.sensor_type));
            v["SensorNumber"] = json!(sel.sensor);
            v["GeneratorId"] = json!("0x0020");
            v["Message"] = json!(message);
            v["Severity"] = json!(severity);
            v["MessageId"] = json!(if format == Format::Sel {
                format!("0x{}", code.to_uppercase())
            } else {
                code
            });
            v["MessageArgs"] = json!([]);
            Some(place.system.clone())
        }
        Format::Event => {
            // As the BMC's events say it (bmcweb's event log: its own
            // registry's DCPowerOn).
            let r = records_for(&e.record, place, profile).into_iter().next()?;
            v["EntryType"] = json!("Event");
            v["Message"] = json!(r.message);
            v["MessageId"] = json!(r.message_id);
            v["MessageArgs"] = json!(r.args);
            v["Severity"] = json!(r.severity);
            r.origin
        }
        Format::DellLc => return dell_lc(v, e, place, profile),
    };
    if let Some(o) = origin {
        v["Links"] = json!({"OriginOfCondition": link(&o)});
    }
    Some(v)
}

/// A Lifecycle log entry: Dell's message where Shoal knows one for the
/// change (power), else the event's.
fn dell_lc(mut v: Value, e: &Entry, place: &Place, profile: &Profile) -> Option<Value> {
    let (dell_id, args, origin) = match (&e.record.what, e.sel) {
        (What::BmcRestarted { reason }, _) => (Some("RAC0182"), vec![*reason], &place.manager),
        (_, Some(s)) if s.sensor_type == log::ACPI_POWER && s.offset == 0 => {
            (Some("SYS1000"), vec![], &place.system)
        }
        (_, Some(s)) if s.sensor_type == log::ACPI_POWER => {
            (Some("SYS1001"), vec![], &place.system)
        }
        (_, Some(s)) if s.sensor_type == log::BOOT_INITIATED && s.offset != 0 => {
            (Some("SYS1003"), vec![], &place.system)
        }
        _ => (None, vec![], &place.system),
    };
    let dell = dell_id.and_then(|id| profile.dell.as_ref()?.message(id));
    let (id, message, args, severity, origin) = match dell {
        Some(m) => (
            m.id.clone(),
            crate::registry::substitute(&m.message, &args),
            args.iter().map(|a| a.to_string()).collect(),
            severity_of(&m.severity),
            Some(origin.clone()),
        ),
        None => {
            let r = records_of(&e.record, place).into_iter().next()?;
            (r.message_id, r.message, r.args, r.severity, r.origin)
        }
    };
    let user = match &e.record.cause {
        Cause::Redfish { user, .. } | Cause::Ipmi { user, .. } => user.clone(),
        _ => None,
    };
    v["EntryType"] = json!("Oem");
    v["OemRecordFormat"] = json!("Dell");
    v["MessageId"] = json!(id);
    v["Message"] = json!(message);
    v["MessageArgs"] = json!(args);
    v["Severity"] = json!(severity);
    v["Oem"] = json!({"Dell": {
        "@odata.type": "#DellLCLogEntry.v1_1_0.DellLCLogEntry",
        "Category": if dell_id.is_some() { "System Health" } else { "Configuration" },
        "Comment": null,
        "LastUpdatedByUser": user.unwrap_or_else(|| "iDRAC".into()),
    }});
    if let Some(o) = origin {
        v["Links"] = json!({"OriginOfCondition": link(&o)});
    }
    Some(v)
}

/// Dell's severities in Redfish's words.
fn severity_of(dell: &str) -> String {
    match dell {
        "Informational" => "OK".into(),
        other => other.into(),
    }
}

/// Event data 1 of a SEL event, as the IPMI record carries it.
fn sel_data1(s: &SelEvent) -> u8 {
    (if s.data2 == 0xff { 0 } else { 0xc0 }) | (s.offset & 0x0f)
}

/// Redfish's `SensorType` of an IPMI sensor type.
fn sensor_type(t: u8) -> &'static str {
    match t {
        log::ACPI_POWER => "System ACPI PowerState",
        log::BOOT_INITIATED => "SystemBoot/Restart",
        log::LOGGING => "Event Logging Disabled",
        _ => "OEM",
    }
}

/// What a SEL event says, and how severe it is.
fn sel_words(s: &SelEvent) -> (&'static str, &'static str) {
    match (s.sensor_type, s.offset) {
        (log::ACPI_POWER, 0x00) => ("The system is in the S0/G0 (working) power state.", "OK"),
        (log::ACPI_POWER, _) => ("The system is in the S5/G2 (soft-off) power state.", "OK"),
        (log::BOOT_INITIATED, 0x00) => ("A system boot was initiated by power up.", "OK"),
        (log::BOOT_INITIATED, _) => ("A system boot was initiated by a hard reset.", "OK"),
        (log::LOGGING, _) => ("The event log was cleared.", "OK"),
        _ => ("An OEM event occurred.", "OK"),
    }
}
