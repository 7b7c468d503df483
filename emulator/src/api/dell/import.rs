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
use crate::model::{BootTarget, Change, OverrideEnabled, PowerState, System};
use crate::profile::DellLc;

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

/// An import's parameters, checked: the component classes it may touch,
/// the profile, and what it does with the host.
struct ImportRequest<'a> {
    targets: Vec<String>,
    buffer: &'a str,
    shutdown: String,
    host_off: bool,
}

/// Checks the action's parameters (names, allowed values, `TimeToWait`,
/// `ShareParameters`, `ImportBuffer`), in the order the iDRAC refuses them.
fn check_request(body: &Map<String, Value>) -> Result<ImportRequest<'_>, ApiError> {
    json::action_known(
        body,
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
        if let Some(v) = json::action_str(body, param, IMPORT)? {
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
    let targets = targets(body)?;
    let buffer = json::action_str(body, "ImportBuffer", IMPORT)?.ok_or_else(|| {
        ApiError::bad(Msg::new(
            "ActionParameterMissing",
            &[IMPORT, "ImportBuffer"],
        ))
    })?;
    Ok(ImportRequest {
        targets,
        buffer,
        shutdown: json::action_str(body, "ShutdownType", IMPORT)?
            .unwrap_or("Graceful")
            .to_string(),
        host_off: json::action_str(body, "HostPowerState", IMPORT)? == Some("Off")
            || json::action_str(body, "EndHostPowerState", IMPORT)? == Some("Off"),
    })
}

/// The LC takes an import now: it is ready (SYS518 otherwise), and no
/// import runs, no configuration job waits and no attributes are staged
/// without one (LC068).
fn check_lc(st: &AppState, sys: &System, d: &DellLc) -> Result<(), ApiError> {
    if !st.jobs.ready() {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            vec![
                Msg::new("ServiceTemporarilyUnavailable", &["30"]),
                dell_msg(d, "SYS518", &[]),
            ],
        ));
    }
    let staged = sys.bmc.bios.held && !sys.bmc.bios.pending.is_empty();
    if st.jobs.busy(&sys.id, "ImportConfiguration") || st.jobs.busy(&sys.id, BIOS_JOB) || staged {
        return Err(ApiError::BadRequest(vec![
            Msg::new("ResourceInUse", &[]),
            dell_msg(d, "LC068", &[]),
        ]));
    }
    Ok(())
}

/// A profile refused: the Base message, then Dell's that says why.
fn refused(sys: &System, d: &DellLc, e: scp::ScpError) -> ApiError {
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
}

/// The one-time boot `sys` has now, as a profile's `ServerBoot.1` says it.
fn next_boot(sys: &System) -> scp::NextBoot {
    scp::NextBoot {
        target: sys.bmc.boot.target,
        enabled: sys.bmc.boot.enabled,
    }
}

/// Parses the profile, keeps the components of the classes asked for and
/// plans what they change; every BIOS value is checked against the
/// registry.
fn plan_import(
    st: &AppState,
    sys: &System,
    d: &DellLc,
    req: &ImportRequest,
) -> Result<scp::Plan, ApiError> {
    let components = scp::parse(req.buffer).map_err(|e| refused(sys, d, e))?;
    let all = req.targets.iter().any(|t| t == "ALL");
    let chosen: Vec<scp::Component> = components
        .into_iter()
        .filter(|c| all || req.targets.contains(&class_of(&c.fqdd)))
        .collect();
    let plan =
        scp::plan(&chosen, st.manager_id(sys), next_boot(sys)).map_err(|e| refused(sys, d, e))?;
    for (name, value) in &plan.bios {
        if crate::api::bios_registry::validate(name, value).is_err() {
            return Err(refused(
                sys,
                d,
                scp::ScpError::BadValue(scp::BIOS.into(), name.clone(), json::shown(value)),
            ));
        }
    }
    Ok(plan)
}

/// The boot change a profile's `ServerBoot.1#BootOnce` and
/// `FirstBootDevice` ask for, where they change the one-time boot: the
/// one boot decision. A device the server does not offer, or BootOnce
/// Disabled where it boots once only, is a bad value.
fn boot_change(
    st: &AppState,
    sys: &System,
    d: &DellLc,
    next: Option<scp::NextBoot>,
) -> Result<Option<(scp::NextBoot, Change)>, ApiError> {
    let Some(n) = next.filter(|n| *n != next_boot(sys)) else {
        return Ok(None);
    };
    let req = BootRequest {
        target: Some(match n.enabled {
            OverrideEnabled::Disabled => BootTarget::None,
            _ => n.target,
        }),
        enabled: Some(n.enabled),
        ..BootRequest::default()
    };
    let bad = |attr: &str, value: String| {
        let e = scp::ScpError::BadValue(st.manager_id(sys).to_string(), attr.into(), value);
        refused(sys, d, e)
    };
    let boot = st.core.decide_boot(sys, &req).map_err(|e| match e {
        BootRefused::TargetNotOffered(t) => bad("ServerBoot.1#FirstBootDevice", t.to_string()),
        BootRefused::ContinuousNotOffered => bad("ServerBoot.1#BootOnce", "Disabled".into()),
        other => crate::api::boot_rules::boot_refused(other, st.profile(sys)),
    })?;
    Ok(Some((n, Change::Boot(boot))))
}

/// BIOS values the machine would not have after its next start: staged
/// as a configuration job stages them (pushed onto `changes`), applied by
/// the reboot the import makes (or waits for, with NoReboot).
fn bios_staging(
    sys: &System,
    planned: BTreeMap<String, Value>,
    changes: &mut Vec<Change>,
) -> BTreeMap<String, Value> {
    let bios = &sys.bmc.bios;
    let staged: BTreeMap<String, Value> = planned
        .into_iter()
        .filter(|(k, v)| bios.pending.get(k).or_else(|| bios.current.get(k)) != Some(v))
        .collect();
    if !staged.is_empty() {
        let mut pending = bios.pending.clone();
        pending.extend(staged.clone());
        changes.push(Change::BiosPending(pending));
        changes.push(Change::BiosHold(false));
    }
    staged
}

/// Runs job `jid` of system `id` to its end after the profile's import
/// time: through a reboot that applies staged BIOS values (`reboot`), or
/// at once, saying whether `something` changed.
fn run_job(
    st: &AppState,
    d: &DellLc,
    id: &str,
    jid: &str,
    reboot: Option<ImportPower>,
    something: bool,
) {
    let (st, id, jid, secs) = (st.clone(), id.to_string(), jid.to_string(), d.import_secs);
    let job_cause = Cause::Bmc(format!("Dell job {jid}"));
    tokio::spawn(with_cause(job_cause, async move {
        tokio::time::sleep(Duration::from_secs(secs)).await;
        if let Some(power) = reboot {
            apply_import_bios(&st, &id, &jid, &power).await;
            return;
        }
        complete(&st, &jid, if something { "SYS053" } else { "SYS069" });
    }));
}

/// 202 for a started import, its job's Task in `Location`.
fn import_accepted(jid: &str) -> Response {
    let mut r = StatusCode::ACCEPTED.into_response();
    if let Ok(h) = HeaderValue::from_str(&format!("/redfish/v1/TaskService/Tasks/{jid}")) {
        r.headers_mut().insert(header::LOCATION, h);
    }
    r.headers_mut()
        .insert("OData-Version", HeaderValue::from_static("4.0"));
    r
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
    let d = lc_of(&st, sys, uri.path())?;
    if action != d.import_action {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    let req = check_request(&body)?;
    check_lc(&st, sys, d)?;
    let plan = plan_import(&st, sys, d, &req)?;
    let mut changes = Vec::new();
    let changed = boot_change(&st, sys, d, plan.next)?.map(|(n, c)| {
        changes.push(c);
        n
    });
    let bios_changes = bios_staging(sys, plan.bios, &mut changes);
    if !changes.is_empty() {
        st.core.backend.apply(&sys.id, changes).await?;
    }
    let job = super::jobs::create(
        &st,
        sys,
        "Configure: Import Server Configuration Profile",
        "ImportConfiguration",
        JobState::Running,
    );
    tracing::info!(system = %sys.name, job = %job.id, next = ?changed, bios = ?bios_changes, "SCP import");
    let power = ImportPower {
        shutdown: req.shutdown,
        host_off: req.host_off,
        was_on: sys.power != PowerState::Off,
    };
    let something = changed.is_some() || !bios_changes.is_empty();
    let reboot = (!bios_changes.is_empty()).then_some(power);
    drop(locked);
    run_job(&st, d, &id, &job.id, reboot, something);
    Ok(import_accepted(&job.id))
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
            super::jobs::moved(st, jid, JobState::Failed, msg);
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
