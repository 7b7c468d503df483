//! Managers: one BMC per system, sharing the system's Id, as sushy-tools
//! lays them out (Ironic finds a system's manager through `Links.ManagedBy`).

use std::time::Duration;

use crate::api::State;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use uuid::Uuid;

use super::json::{self, JsonObject, Resource};
use super::patch::{writable, Kind, SysPatch};
use super::{collection, link, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::model::{Change, Ntp, System};
use crate::profile::Profile;
use crate::timefmt::rfc3339;

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Managers", get(list))
        .route(
            "/redfish/v1/Managers/{id}",
            get(manager).patch(patch_manager),
        )
        .route(
            "/redfish/v1/Managers/{id}/Actions/Manager.Reset",
            post(reset),
        )
        .route(
            "/redfish/v1/Managers/{id}/NetworkProtocol",
            get(network_protocol).patch(patch_network_protocol),
        )
}

const RESET: &str = "Manager.Reset";
const RESET_TYPES: &[&str] = &["GracefulRestart", "ForceRestart"];
/// How long the BMC takes to go down after it answered the reset.
const RESET_GRACE: Duration = Duration::from_secs(1);
/// How long a BMC is away while it restarts, where its profile does not
/// say (Dell's: `dell.reset_down_secs`).
pub(super) const RESET_DOWN_SECS: u64 = 30;

async fn list(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let members = st.core.backend.systems().await?.into_iter().map(|s| {
        format!(
            "/redfish/v1/Managers/{}",
            st.fixed.as_ref().map_or(&s.id, |f| &f.manager)
        )
    });
    Ok(Resource::plain(
        collection(
            "ManagerCollection",
            "/redfish/v1/Managers",
            "Manager Collection",
            members,
        ),
        "GET",
    ))
}

/// The Manager as its ETag sees it: all but `DateTime`, which moves by
/// itself every second (a PATCH's If-Match is checked against this). Its
/// `ServiceEntryPointUUID` is the service root's UUID.
fn manager_state(st: &AppState, sys: &System, profile: &Profile) -> Value {
    let id = st.manager_id(sys);
    let base = format!("/redfish/v1/Managers/{id}");
    let mut v = json!({
        "@odata.type": "#Manager.v1_19_0.Manager",
        "@odata.id": base,
        "Id": id,
        "Name": format!("Manager for {}", sys.name),
        "Description": "Baseboard management controller",
        "ManagerType": "BMC",
        "UUID": Uuid::new_v5(&sys.uuid, b"manager").hyphenated().to_string(),
        "ServiceEntryPointUUID": st.service_uuid.hyphenated().to_string(),
        "Manufacturer": profile.manufacturer,
        "Model": profile.manager_model.clone().unwrap_or_else(|| format!("{} BMC", profile.model)),
        "FirmwareVersion": crate::bmc::firmware::installed(sys, profile, crate::firmware::Component::Bmc).version,
        "DateTimeLocalOffset": "+00:00",
        "PowerState": "On",
        "ServiceIdentification": sys.bmc.service_identification,
        "Status": { "State": "Enabled", "Health": "OK" },
        "Actions": {
            "#Manager.Reset": {
                "target": format!("{base}/Actions/{RESET}"),
                "ResetType@Redfish.AllowableValues": RESET_TYPES,
            },
        },
        "Links": {
            "ManagerForServers": [link(&format!("/redfish/v1/Systems/{}", sys.id))],
            "ManagerForChassis": [link(&format!("/redfish/v1/Chassis/{}", st.chassis_id(sys)))],
        },
    });
    if super::vmedia::shown(st, sys, false) {
        v["VirtualMedia"] = link(&format!("{base}/VirtualMedia"));
    }
    v["NetworkProtocol"] = link(&format!("{base}/NetworkProtocol"));
    if st.features.full() && !profile.logs.manager.is_empty() {
        v["LogServices"] = link(&format!("{base}/LogServices"));
    }
    if let Some(oem) = &profile.oem.manager {
        v["Oem"] = json!(oem);
    }
    super::vendor::manager_parts(st, sys, profile, &mut v);
    v
}

/// The Manager with its ETag: that of its state, not of its clock.
fn manager_resource(st: &AppState, sys: &System, profile: &Profile) -> Resource {
    let basis = manager_state(st, sys, profile);
    let mut body = basis.clone();
    body["DateTime"] = json!(rfc3339(std::time::SystemTime::now()));
    Resource::tagged_by(body, &basis, profile, "GET, PATCH")
}

async fn manager(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    Ok(manager_resource(&st, &sys, profile))
}

/// The longest `ServiceIdentification` taken.
const SERVICE_ID_MAX: usize = 255;

/// A PATCH sets `ServiceIdentification` (the name operators give the
/// service, as Ansible's SetServiceIdentification does); the rest of the
/// Manager is what the BMC is.
async fn patch_manager(State(st): State<AppState>, req: SysPatch) -> Result<Resource, ApiError> {
    const FIELD: &str = "ServiceIdentification";
    let p = st
        .begin_patch(&req, |sys, profile| manager_state(&st, sys, profile))
        .await?
        .validated(&req.body, &[writable(FIELD, Kind::Str)])?;
    let sys = &p.target;
    let id = req.body.get(FIELD).and_then(Value::as_str).unwrap_or("");
    super::input::property(
        FIELD,
        id,
        super::input::Rule::Text {
            max: SERVICE_ID_MAX,
        },
    )
    .map_err(ApiError::bad)?;
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::ServiceIdentification(id.to_string())])
        .await?;
    Ok(manager_resource(&st, &sys, p.profile))
}

/// `Manager.Reset` (`GracefulRestart`, `ForceRestart`): the BMC restarts a
/// second after it answered (204). On an endpoint of its own (one BMC,
/// one server) its address refuses connections while it is away and its
/// sessions are lost, as a real BMC's; a Dell LC then reloads its data.
/// On a service that serves many systems, only this system's requests
/// answer 503 (with Retry-After) meanwhile.
async fn reset(
    State(st): State<AppState>,
    Sys(sys): Sys,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    json::action_known(&body, &["ResetType"], RESET)?;
    let kind = json::action_str(&body, "ResetType", RESET)?
        .ok_or_else(|| ApiError::bad(Msg::new("ActionParameterMissing", &[RESET, "ResetType"])))?;
    if !RESET_TYPES.contains(&kind) {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueNotInList",
            &[kind, "ResetType", RESET],
        )));
    }
    let (down, settle) = super::vendor::bmc_reset_times(st.profile(&sys))
        .unwrap_or((Duration::from_secs(RESET_DOWN_SECS), Duration::ZERO));
    tracing::info!(system = %sys.name, reset = kind, ?down, "BMC reset");
    restart_bmc(&st, &sys, "user initiated", (down, settle));
    Ok(json::no_content())
}

/// The BMC of `sys` restarts a second from now and is away for `down`
/// (its LC, on a Dell, not ready for `settle` more): on an endpoint of its
/// own the address refuses connections and the sessions are lost; on a
/// service that serves many systems, this system's requests answer 503.
pub(super) fn restart_bmc(
    st: &AppState,
    sys: &System,
    reason: &'static str,
    (down, settle): (Duration, Duration),
) {
    let booting = st.profile(sys).update.not_ready_secs;
    if booting > 0 {
        // Back from the restart, it is still booting its update service.
        let until = tokio::time::Instant::now() + RESET_GRACE + down + Duration::from_secs(booting);
        st.uploads.not_ready_until(&sys.id, until);
    }
    let (st, name, sys) = (st.clone(), sys.name.clone(), sys.clone());
    tokio::spawn(async move {
        tokio::time::sleep(RESET_GRACE).await;
        tracing::info!(system = %name, reason, down_secs = down.as_secs_f64(), "BMC restarting");
        // One BMC's service (an endpoint of its own, a replayed capture):
        // its whole address goes away.
        if st.fixed.is_some() || st.replay.is_some() {
            st.events.restarted();
            st.auth.drop_all_sessions();
            st.jobs.not_ready_for(down + settle);
            st.downtime.until(tokio::time::Instant::now() + down);
        } else {
            st.core.faults.outage(vec![name], down.as_secs());
        }
        // Away first: no client sees the new firmware before the restart.
        st.core.bmc_restarted(&sys, reason).await;
    });
}

/// The BMC's host name as its vendor sets it out of the box: Dell's
/// `idrac-<service tag>`, HPE's `ILO<serial number>`, else the system's
/// name with `-bmc`.
fn host_name(sys: &System, profile: &Profile) -> String {
    super::vendor::bmc_host_name(sys, profile).unwrap_or_else(|| format!("{}-bmc", sys.name))
}

/// `ManagerNetworkProtocol`: what the BMC really serves. Redfish over
/// HTTP or HTTPS on the port it listens on, IPMI over LAN where this BMC
/// has its socket (an endpoint of one system), its NTP client as set;
/// nothing else (no SSH, SNMP, KVM or remote-console media).
fn network_protocol_json(st: &AppState, sys: &System, profile: &Profile) -> Value {
    let id = st.manager_id(sys);
    let off = || json!({ "ProtocolEnabled": false });
    let served = |port: Option<u16>| match port {
        Some(p) => json!({ "ProtocolEnabled": true, "Port": p }),
        None => json!({ "ProtocolEnabled": true }),
    };
    // In-process (nothing bound) the service answers plain HTTP.
    let (https, port) = match st.ports.redfish.get() {
        Some(&(tls, port)) => (tls, Some(port)),
        None => (false, None),
    };
    let (http, https) = if https {
        (off(), served(port))
    } else {
        (served(port), off())
    };
    let ipmi = match st.ports.ipmi.get() {
        Some(&p) => served(Some(p)),
        None => off(),
    };
    let ntp = &sys.bmc.ntp;
    json!({
        "@odata.type": "#ManagerNetworkProtocol.v1_10_0.ManagerNetworkProtocol",
        "@odata.id": format!("/redfish/v1/Managers/{id}/NetworkProtocol"),
        "Id": "NetworkProtocol",
        "Name": "Manager Network Protocol",
        "Description": "The network services this BMC serves",
        "HostName": host_name(sys, profile),
        "Status": { "State": "Enabled", "Health": "OK" },
        "HTTP": http,
        "HTTPS": https,
        "IPMI": ipmi,
        "SSH": off(),
        "SNMP": off(),
        "Telnet": off(),
        "SSDP": off(),
        "KVMIP": off(),
        "VirtualMedia": off(),
        "NTP": {
            "ProtocolEnabled": ntp.enabled,
            "NTPServers": ntp.servers,
        },
    })
}

async fn network_protocol(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let profile = st.profile(&sys);
    Ok(Resource::new(
        network_protocol_json(&st, &sys, profile),
        profile,
        "GET, PATCH",
    ))
}

/// A PATCH sets the BMC's NTP client (`NTP/ProtocolEnabled`,
/// `NTP/NTPServers`, at most [`Ntp::MAX_SERVERS`]: an array PATCH as
/// Redfish defines it, `null` removes an entry, `{}` keeps it); the
/// served protocols are what the process listens on and are not
/// writable (changing them would mean rebinding the service).
async fn patch_network_protocol(
    State(st): State<AppState>,
    req: SysPatch,
) -> Result<Resource, ApiError> {
    const SERVERS: &str = "NTP/NTPServers";
    let fields = [
        writable("NTP/ProtocolEnabled", Kind::Bool),
        writable(SERVERS, Kind::Array),
    ];
    let p = st
        .begin_patch(&req, |sys, profile| {
            network_protocol_json(&st, sys, profile)
        })
        .await?
        .validated(&req.body, &fields)?;
    let (sys, profile) = (&p.target, p.profile);
    let ntp = req.body.get("NTP");
    let mut next = sys.bmc.ntp.clone();
    if let Some(on) = ntp
        .and_then(|n| n.get("ProtocolEnabled"))
        .and_then(Value::as_bool)
    {
        next.enabled = on;
    }
    if let Some(list) = ntp
        .and_then(|n| n.get("NTPServers"))
        .and_then(Value::as_array)
    {
        next.servers = ntp_servers(list, &sys.bmc.ntp.servers)?;
    }
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::Ntp(next)])
        .await?;
    Ok(Resource::new(
        network_protocol_json(&st, &sys, profile),
        profile,
        "GET, PATCH",
    ))
}

/// The servers an `NTPServers` PATCH leaves: each entry a host name or
/// address (one line of text), `null` or `""` removing it, `{}` keeping
/// the current one; all problems reported at once.
fn ntp_servers(list: &[Value], current: &[String]) -> Result<Vec<String>, ApiError> {
    const SERVERS: &str = "NTP/NTPServers";
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let path = format!("{SERVERS}/{i}");
        match v {
            Value::Null => {}
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => {
                let checked = super::input::property(&path, s, NTP_SERVER).and_then(|()| {
                    match s.contains(char::is_whitespace) {
                        true => Err(Msg::new(
                            "PropertyValueFormatError",
                            &[&super::input::echo(s), &path],
                        )
                        .about(&path)),
                        false => Ok(()),
                    }
                });
                match checked {
                    Ok(()) => out.push(s.clone()),
                    Err(m) => errors.push(m),
                }
            }
            Value::Object(o) if o.is_empty() => out.extend(current.get(i).cloned()),
            other => {
                let shown = super::input::echo(&json::shown(other));
                errors.push(Msg::new("PropertyValueTypeError", &[&shown, &path]).about(&path));
            }
        }
    }
    if errors.is_empty() && out.len() > Ntp::MAX_SERVERS {
        let n = out.len().to_string();
        errors.push(Msg::new("PropertyValueOutOfRange", &[&n, SERVERS]).about(SERVERS));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::BadRequest(errors))
    }
}

/// An NTP server: a host name or address, at most 255 characters (a DNS
/// name's limit), one line without blanks.
const NTP_SERVER: super::input::Rule = super::input::Rule::Text { max: 255 };
