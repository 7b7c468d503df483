//! The Lifecycle Controller's services, each linked under the Manager's
//! `Links.Oem.Dell` with its one action: `DellJobService`
//! (`DeleteJobQueue`), `DellLCService` (`GetRemoteServicesAPIStatus`: LC,
//! real-time and server status) and `DelliDRACCardService`
//! (`iDRACReset`: the endpoint's address refuses connections for
//! `reset_down_secs`, sessions lost, then the LC is not ready for
//! `lc_settle_secs`).

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::model::PowerState;

use super::jobs::delete_jobs;
use super::{dell_msg, success, LcRequest};

pub(super) const DELETE_QUEUE: &str = "DeleteJobQueue";
pub(super) const API_STATUS: &str = "GetRemoteServicesAPIStatus";
pub(super) const IDRAC_RESET: &str = "iDRACReset";
const FORCE: &[&str] = &["Force", "Graceful"];

/// One of the services linked under `Links.Oem.Dell`, with its one
/// action (`Service.Action`) and that action's allowable values.
struct Service {
    odata_type: &'static str,
    id: &'static str,
    name: &'static str,
    description: &'static str,
    action: (&'static str, &'static str),
    allowable: Option<(&'static str, &'static [&'static str])>,
}

fn service(lc: &LcRequest, s: &Service) -> Result<Resource, ApiError> {
    let path = lc.path.as_str();
    let (svc, action) = s.action;
    let mut a = json!({ "target": format!("{path}/Actions/{svc}.{action}") });
    if let Some((param, values)) = s.allowable {
        a[format!("{param}@Redfish.AllowableValues")] = json!(values);
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": s.odata_type,
            "@odata.id": path,
            "Id": s.id,
            "Name": s.name,
            "Description": s.description,
            "Actions": { format!("#{svc}.{action}"): a },
        }),
        "GET",
    ))
}

pub(super) async fn job_service(lc: LcRequest) -> Result<Resource, ApiError> {
    service(&lc, &Service {
        odata_type: "#DellJobService.v1_6_0.DellJobService",
        id: "Job Service",
        name: "DellJobService",
        description: "The DellJobService resource provides some actions to support Job management functionality.",
        action: ("DellJobService", DELETE_QUEUE),
        allowable: None,
    })
}

pub(super) async fn delete_queue(
    lc: LcRequest,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let LcRequest { st, sys, d, .. } = &lc;
    json::action_known(&body, &["JobID"], DELETE_QUEUE)?;
    let jid = json::action_str(&body, "JobID", DELETE_QUEUE)?.ok_or_else(|| {
        ApiError::bad(Msg::new("ActionParameterMissing", &[DELETE_QUEUE, "JobID"]))
    })?;
    if jid == "JID_CLEARALL" || jid == "JID_CLEARALL_FORCE" {
        let n = delete_jobs(st, &sys.id, None).await?;
        tracing::info!(system = %sys.name, jobs = n, "job queue cleared");
    } else if delete_jobs(st, &sys.id, Some(jid)).await? == 0 {
        return Err(ApiError::BadRequest(vec![
            Msg::new("ActionParameterValueError", &["JobID", DELETE_QUEUE]),
            dell_msg(d, "SUP011", &[]),
        ]));
    }
    Ok(success(dell_msg(d, "SUP020", &[])))
}

pub(super) async fn lc_service(lc: LcRequest) -> Result<Resource, ApiError> {
    service(&lc, &Service {
        odata_type: "#DellLCService.v1_7_0.DellLCService",
        id: "DellLCService",
        name: "DellLCService",
        description: "The DellLCService resource provides some actions to support Lifecycle Controller functionality.",
        action: ("DellLCService", API_STATUS),
        allowable: None,
    })
}

pub(super) async fn api_status(
    lc: LcRequest,
    body: json::OptionalJsonObject,
) -> Result<Response, ApiError> {
    let LcRequest { st, sys, .. } = &lc;
    if let Some(b) = &body.0 {
        json::action_known(b, &[], API_STATUS)?;
    }
    let ready = st.jobs.ready();
    let word = |r: bool| if r { "Ready" } else { "NotReady" };
    // After a reset the LC reloads what it knows of the server.
    let lc = if ready { "Ready" } else { "ReloadingData" };
    let server = match sys.power {
        PowerState::Off | PowerState::PoweringOff => "PoweredOff",
        _ if st
            .core
            .power_clock
            .within(&sys.id, st.profile(sys).power.post_secs, true) =>
        {
            "InPOST"
        }
        _ => "OutOfPOST",
    };
    Ok((
        StatusCode::OK,
        axum::Json(json!({
            "@Message.ExtendedInfo": [Msg::new("Success", &[]).render()],
            "LCStatus": lc,
            "RTStatus": word(ready),
            "SEKMServiceStatus": word(ready),
            "ServerStatus": server,
            "Status": word(ready),
            "TelemetryServiceStatus": word(ready),
        })),
    )
        .into_response())
}

pub(super) async fn card_service(lc: LcRequest) -> Result<Resource, ApiError> {
    service(&lc, &Service {
        odata_type: "#DelliDRACCardService.v1_6_0.DelliDRACCardService",
        id: "DelliDRACCardService",
        name: "DelliDRACCardService",
        description: "The DelliDRACCardService resource provides some actions to support iDRAC configuration.",
        action: ("DelliDRACCardService", IDRAC_RESET),
        allowable: Some(("Force", FORCE)),
    })
}

pub(super) async fn idrac_reset(
    lc: LcRequest,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let LcRequest { st, sys, d, .. } = &lc;
    json::action_known(&body, &["Force"], IDRAC_RESET)?;
    if let Some(f) = json::action_str(&body, "Force", IDRAC_RESET)? {
        if !FORCE.contains(&f) {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[f, "Force", IDRAC_RESET],
            )));
        }
    }
    let down = Duration::from_secs(d.reset_down_secs);
    let settle = Duration::from_secs(d.lc_settle_secs);
    tracing::info!(system = %sys.name, ?down, ?settle, "iDRAC reset");
    crate::api::managers::restart_bmc(st, sys, "user initiated", (down, settle));
    Ok(success(dell_msg(d, "RAC064", &[])))
}
