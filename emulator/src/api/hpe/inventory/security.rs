//! iLO's `SecurityService` below the Manager (`[hpe]` profiles),
//! read-only: the service, its HTTPS certificate resource, the security
//! dashboard and its parameters as a lab server has them, and the
//! Manager's `Oem.Hpe.Links.SecurityService` to it.

use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::oem_hpe;
use crate::api::error::ApiError;
use crate::api::hpe::Ilo;
use crate::api::json::Resource;
use crate::api::{collection, link};

pub(super) fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/Managers/{id}/SecurityService",
            get(security_service),
        )
        .route(
            "/redfish/v1/Managers/{id}/SecurityService/SecurityDashboard",
            get(security_dashboard),
        )
        .route(
            "/redfish/v1/Managers/{id}/SecurityService/HttpsCert",
            get(https_cert),
        )
        .route(
            "/redfish/v1/Managers/{id}/SecurityService/SecurityDashboard/SecurityParams",
            get(security_params),
        )
        .route(
            "/redfish/v1/Managers/{id}/SecurityService/SecurityDashboard/SecurityParams/{n}",
            get(security_param),
        )
}

/// The Manager's `Oem.Hpe.Links.SecurityService`.
pub fn manager_links(manager: &str, v: &mut Value) {
    oem_hpe(v, "#HpeiLO.v2_8_0.HpeiLO")["Links"]["SecurityService"] =
        link(&format!("/redfish/v1/Managers/{manager}/SecurityService/"));
}

/// iLO's security parameters as a lab server has them: the override
/// switch off, the last firmware scan clean, the rest at their defaults.
const SECURITY_PARAMS: &[(&str, &str, &str, &str)] = &[
    (
        "Security Override Switch",
        "Ok",
        "Off",
        "The security override switch is off.",
    ),
    (
        "Last Firmware Scan Result",
        "Ok",
        "Ok",
        "The last firmware scan found no problem.",
    ),
    (
        "IPMI/DCMI Over LAN",
        "Risk",
        "Enabled",
        "IPMI/DCMI over LAN is enabled.",
    ),
    (
        "Minimum Password Length",
        "Ok",
        "Ok",
        "The minimum password length meets the recommendation.",
    ),
    (
        "Require Login for iLO RBSU",
        "Risk",
        "Disabled",
        "Login is not required for the iLO RBSU.",
    ),
];

async fn security_service(ilo: Ilo) -> Result<Resource, ApiError> {
    let b = ilo.id().to_string();
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeSecurityService.v2_3_1.HpeSecurityService",
            "@odata.id": b,
            "Id": "SecurityService",
            "Name": "iLO Security Service",
            "SecurityState": "Production",
            "Links": {
                "SecurityDashboard": link(&format!("{b}/SecurityDashboard/")),
                "HttpsCert": link(&format!("{b}/HttpsCert/")),
            },
        }),
        "GET",
    ))
}

/// The iLO's HTTPS certificate resource (its details are the endpoint's
/// own TLS set-up, which Shoal does not restate here).
async fn https_cert(ilo: Ilo) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeHttpsCert.v2_0_0.HpeHttpsCert",
            "@odata.id": ilo.id(),
            "Id": "HttpsCert",
            "Name": "HTTPS Certificate",
        }),
        "GET",
    ))
}

async fn security_dashboard(ilo: Ilo) -> Result<Resource, ApiError> {
    let b = ilo.id().to_string();
    let risk = SECURITY_PARAMS.iter().any(|p| p.1 == "Risk");
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeiLOSecurityDashboard.v1_0_0.HpeiLOSecurityDashboard",
            "@odata.id": b,
            "Id": "SecurityDashboard",
            "Name": "iLO Security Dashboard",
            "OverallSecurityStatus": if risk { "Risk" } else { "Ok" },
            "ServerConfigurationLockStatus": "Disabled",
            "SecurityParameters": link(&format!("{b}/SecurityParams/")),
        }),
        "GET",
    ))
}

async fn security_params(ilo: Ilo) -> Result<Resource, ApiError> {
    let b = ilo.id().to_string();
    let members = (0..SECURITY_PARAMS.len()).map(|n| format!("{b}/{n}"));
    let v = collection(
        "HpeiLOSecurityParamCollection",
        &b,
        "Security Parameters",
        members,
    );
    Ok(Resource::plain(v, "GET"))
}

async fn security_param(
    Path((_, n)): Path<(String, usize)>,
    ilo: Ilo,
) -> Result<Resource, ApiError> {
    let &(name, status, state, description) =
        SECURITY_PARAMS.get(n).ok_or_else(|| ilo.not_found())?;
    Ok(Resource::plain(
        json!({
            "@odata.type": "#HpeiLOSecurityParam.v1_1_0.HpeiLOSecurityParam",
            "@odata.id": ilo.path,
            "Id": n.to_string(),
            "Name": name,
            "SecurityStatus": status,
            "State": state,
            "Ignore": false,
            "Description": description,
        }),
        "GET",
    ))
}
