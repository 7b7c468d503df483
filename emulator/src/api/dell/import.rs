//! Server Configuration Profile import
//! (`#OemManager.ImportSystemConfiguration` under the Manager's
//! `Actions.Oem`): the request checked, the profile in `ImportBuffer`
//! parsed and planned (`scp.rs`), the boot it asks for decided as every
//! boot request is, its BIOS values staged, and a job started that
//! applies them (rebooting the host when they need it), answered 202
//! with the job's Task.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject};
use crate::api::{AppState, State, SysId};
use crate::bmc::changes::{with_cause, Cause};
use crate::bmc::{BootRefused, BootRequest};
use crate::model::{BootTarget, Change, OverrideEnabled, PowerState};

use super::jobs::{complete, until_applied, BIOS_JOB};
use super::{dell_msg, lc_of, scp, JobState};

const IMPORT: &str = "ImportSystemConfiguration";
/// `ShareParameters.Target` values (the component classes an import may
/// touch).
pub(super) const TARGETS: &[&str] = &[
    "ALL",
    "IDRAC",
    "BIOS",
    "NIC",
    "RAID",
    "FC",
    "InfiniBand",
    "SupportAssist",
    "EventFilters",
    "System",
    "LifecycleController",
    "AHCI",
    "PCIeSSD",
];
pub(super) const SHUTDOWN_TYPES: &[&str] = &["Graceful", "Forced", "NoReboot"];
pub(super) const HOST_POWER_STATES: &[&str] = &["On", "Off"];

/// `ShareParameters`: only `Target` (a string or a list); a network
/// share (`IPAddress`, `ShareName`, …) is not something Shoal fetches.
fn targets(body: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let Some(sp) = body.get("ShareParameters") else {
        return Ok(vec!["ALL".into()]);
    };
    let sp = sp.as_object().ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterValueTypeError",
            &[&json::shown(sp), "ShareParameters", IMPORT],
        ))
    })?;
    let unsupported: Vec<Msg> = sp
        .keys()
        .filter(|k| *k != "Target")
        .map(|k| {
            Msg::new(
                "ActionParameterNotSupported",
                &[&format!("ShareParameters/{k}"), IMPORT],
            )
        })
        .collect();
    if !unsupported.is_empty() {
        return Err(ApiError::BadRequest(unsupported));
    }
    let list: Vec<&Value> = match sp.get("Target") {
        None => return Ok(vec!["ALL".into()]),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
    };
    let mut out = Vec::new();
    for v in list {
        // iDRAC takes "ALL" and "IDRAC,BIOS" alike.
        let s = v.as_str().ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueTypeError",
                &[&json::shown(v), "ShareParameters/Target", IMPORT],
            ))
        })?;
        for t in s.split(',').map(str::trim) {
            if !TARGETS.contains(&t) {
                return Err(ApiError::bad(Msg::new(
                    "ActionParameterValueNotInList",
                    &[t, "ShareParameters/Target", IMPORT],
                )));
            }
            out.push(t.to_string());
        }
    }
    if out.is_empty() {
        return Err(ApiError::bad(Msg::new(
            "ActionParameterValueError",
            &["ShareParameters/Target", IMPORT],
        )));
    }
    Ok(out)
}

/// The component class of an FQDD (`iDRAC.Embedded.1` → `IDRAC`), as
/// `ShareParameters.Target` names it.
fn class_of(fqdd: &str) -> String {
    fqdd.split('.').next().unwrap_or("").to_ascii_uppercase()
}

pub(super) async fn import(
    State(st): State<AppState>,
    SysId(id): SysId,
    Path((_, action)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    // The action's name is the profile's (checked before the body is read).
    let d = lc_of(&st, sys, &uri)?;
    if action != d.import_action {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    json::action_known(
        &body,
        &[
            "ShareParameters",
            "ImportBuffer",
            "ShutdownType",
            "HostPowerState",
            // Dell's Ansible module (idrac_server_config_profile, from a
            // local file) names the host's power state after the import so.
            "EndHostPowerState",
            "TimeToWait",
        ],
        IMPORT,
    )?;
    for (param, allowed) in [
        ("ShutdownType", SHUTDOWN_TYPES),
        ("HostPowerState", HOST_POWER_STATES),
        ("EndHostPowerState", HOST_POWER_STATES),
    ] {
        if let Some(v) = json::action_str(&body, param, IMPORT)? {
            if !allowed.contains(&v) {
                return Err(ApiError::bad(Msg::new(
                    "ActionParameterValueNotInList",
                    &[v, param, IMPORT],
                )));
            }
        }
    }
    if let Some(t) = body.get("TimeToWait") {
        if !t.as_u64().is_some_and(|n| (300..=3600).contains(&n)) {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueError",
                &["TimeToWait", IMPORT],
            )));
        }
    }
    let targets = targets(&body)?;
    let buffer = json::action_str(&body, "ImportBuffer", IMPORT)?.ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterMissing",
            &[IMPORT, "ImportBuffer"],
        ))
    })?;
    if !st.jobs.ready() {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            vec![
                Msg::new("ServiceTemporarilyUnavailable", &["30"]),
                dell_msg(d, "SYS518", &[]),
            ],
        ));
    }
    // LC068: an import runs, a configuration job waits, or attributes
    // are staged without one.
    let staged = sys.bmc.bios.held && !sys.bmc.bios.pending.is_empty();
    if st.jobs.busy(&sys.id, "ImportConfiguration") || st.jobs.busy(&sys.id, BIOS_JOB) || staged {
        return Err(ApiError::BadRequest(vec![
            Msg::new("ResourceInUse", &[]),
            dell_msg(d, "LC068", &[]),
        ]));
    }
    let refused = |e: scp::ScpError| {
        tracing::info!(system = %sys.name, why = %e, "SCP import refused");
        let line;
        let m = match &e {
            scp::ScpError::NoRoot => dell_msg(d, "SYS062", &[]),
            scp::ScpError::NotClosed(_) => dell_msg(d, "SYS063", &[]),
            scp::ScpError::Invalid(n, _) => {
                line = n.to_string();
                dell_msg(d, "SYS064", &[&line])
            }
            scp::ScpError::Malformed(_) => dell_msg(d, "SYS064", &["1"]),
            scp::ScpError::Json(_) => dell_msg(d, "SYS405", &[]),
            scp::ScpError::UnknownComponent(_) => dell_msg(d, "SYS076", &[]),
            scp::ScpError::UnknownAttribute(..) | scp::ScpError::BadValue(..) => {
                dell_msg(d, "SYS067", &[])
            }
        };
        ApiError::BadRequest(vec![
            Msg::new("ActionParameterValueError", &["ImportBuffer", IMPORT]),
            m,
        ])
    };
    let components = scp::parse(buffer).map_err(refused)?;
    let all = targets.iter().any(|t| t == "ALL");
    let chosen: Vec<scp::Component> = components
        .into_iter()
        .filter(|c| all || targets.contains(&class_of(&c.fqdd)))
        .collect();
    let now = scp::NextBoot {
        target: sys.bmc.boot.target,
        enabled: sys.bmc.boot.enabled,
    };
    let plan = scp::plan(&chosen, st.manager_id(sys), now).map_err(refused)?;
    for (name, value) in &plan.bios {
        if crate::api::bios_registry::validate(name, value).is_err() {
            return Err(refused(scp::ScpError::BadValue(
                scp::BIOS.into(),
                name.clone(),
                json::shown(value),
            )));
        }
    }
    let mut changes = Vec::new();
    let changed = plan.next.filter(|n| *n != now);
    if let Some(n) = changed {
        // ServerBoot.1#BootOnce and FirstBootDevice: the one boot
        // decision; a device the server does not offer, or BootOnce
        // Disabled where it boots once only, is a bad value.
        let req = BootRequest {
            target: Some(match n.enabled {
                OverrideEnabled::Disabled => BootTarget::None,
                _ => n.target,
            }),
            enabled: Some(n.enabled),
            ..BootRequest::default()
        };
        let boot = st.core.decide_boot(sys, &req).map_err(|e| match e {
            BootRefused::TargetNotOffered(t) => refused(scp::ScpError::BadValue(
                st.manager_id(sys).to_string(),
                "ServerBoot.1#FirstBootDevice".into(),
                t.to_string(),
            )),
            BootRefused::ContinuousNotOffered => refused(scp::ScpError::BadValue(
                st.manager_id(sys).to_string(),
                "ServerBoot.1#BootOnce".into(),
                "Disabled".into(),
            )),
            other => crate::api::boot_rules::boot_refused(other, st.profile(sys)),
        })?;
        changes.push(Change::Boot(boot));
    }
    // BIOS values the machine would not have after its next start: staged
    // as a configuration job stages them, applied by the reboot the
    // import makes (or waits for, with NoReboot).
    let bios = &sys.bmc.bios;
    let bios_changes: BTreeMap<String, Value> = plan
        .bios
        .into_iter()
        .filter(|(k, v)| bios.pending.get(k).or_else(|| bios.current.get(k)) != Some(v))
        .collect();
    if !bios_changes.is_empty() {
        let mut pending = bios.pending.clone();
        pending.extend(bios_changes.clone());
        changes.push(Change::BiosPending(pending));
        changes.push(Change::BiosHold(false));
    }
    if !changes.is_empty() {
        st.core.backend.apply(&sys.id, changes).await?;
    }
    let job = st.jobs.create(
        &sys.id,
        "Configure: Import Server Configuration Profile",
        "ImportConfiguration",
        JobState::Running,
    );
    tracing::info!(system = %sys.name, job = %job.id, next = ?changed, bios = ?bios_changes, "SCP import");
    let power = ImportPower {
        shutdown: json::action_str(&body, "ShutdownType", IMPORT)?
            .unwrap_or("Graceful")
            .to_string(),
        host_off: json::action_str(&body, "HostPowerState", IMPORT)? == Some("Off")
            || json::action_str(&body, "EndHostPowerState", IMPORT)? == Some("Off"),
        was_on: sys.power != PowerState::Off,
    };
    let something = changed.is_some() || !bios_changes.is_empty();
    let reboot = !bios_changes.is_empty();
    drop(locked);
    let (st2, id, jid, secs) = (st.clone(), id.clone(), job.id.clone(), d.import_secs);
    let job_cause = Cause::Bmc(format!("Dell job {jid}"));
    tokio::spawn(with_cause(job_cause, async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        if reboot {
            apply_import_bios(&st2, &id, &jid, &power).await;
            return;
        }
        complete(&st2, &jid, if something { "SYS053" } else { "SYS069" });
    }));
    let mut r = StatusCode::ACCEPTED.into_response();
    if let Ok(h) = HeaderValue::from_str(&format!("/redfish/v1/TaskService/Tasks/{}", job.id)) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    r.headers_mut()
        .insert("OData-Version", HeaderValue::from_static("4.0"));
    Ok(r)
}

/// How an import with BIOS changes treats the host: `ShutdownType`
/// (`Graceful`, `Forced`, `NoReboot`), `HostPowerState` `Off` (the host is
/// left off afterwards), and whether it was on when the import came.
struct ImportPower {
    shutdown: String,
    host_off: bool,
    was_on: bool,
}

/// The rest of an import that staged BIOS changes, as an iDRAC runs it:
/// it reboots the host to apply them (gracefully or by force; a host that
/// is off is powered on for it), or with `NoReboot` waits for a reboot
/// someone else makes; once the machine has started with them the job
/// completes (SYS053), and with `HostPowerState` `Off` the host is turned
/// off again. A job deleted meanwhile is no longer followed.
async fn apply_import_bios(st: &AppState, id: &str, jid: &str, p: &ImportPower) {
    use crate::model::ResetType;
    let reset = match (p.was_on, p.shutdown.as_str()) {
        (true, "NoReboot") => None,
        (true, "Forced") => Some(ResetType::ForceRestart),
        (true, _) => Some(ResetType::GracefulRestart),
        (false, _) => Some(ResetType::On),
    };
    if let Some(r) = reset {
        tracing::info!(system = %id, job = %jid, reset = %r, "SCP import: the host restarts to apply the BIOS settings");
        if let Err(e) = st.core.backend.reset(id, r).await {
            tracing::warn!(system = %id, job = %jid, error = %e, "SCP import: the host did not restart");
            let msg = "SYS067";
            st.jobs
                .update(jid, JobState::Failed, msg, crate::profile::dell::text(msg));
            return;
        }
    }
    if !until_applied(st, id, jid, |sys| sys.bmc.bios.pending.is_empty()).await {
        return;
    }
    if p.host_off {
        if let Err(e) = st.core.backend.reset(id, ResetType::ForceOff).await {
            tracing::warn!(system = %id, job = %jid, error = %e, "SCP import: the host was not turned off");
        }
    }
    complete(st, jid, "SYS053");
}
