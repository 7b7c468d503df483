//! SecureBoot: `SecureBootEnable` (takes effect at the next boot, reported
//! by `SecureBootCurrentBoot`), `SecureBoot.ResetKeys`, and the standard
//! UEFI key databases.

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::json::{self, JsonObject, Resource};
use super::patch::SysPatch;
use super::patch::{writable, Kind};
use super::{collection, link, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::model::{Change, ResetKeysType, System};

const RESET_KEYS: &str = "SecureBoot.ResetKeys";
/// The databases of the UEFI specification, as BMCs list them.
const DATABASES: &[&str] = &[
    "PK",
    "KEK",
    "db",
    "dbx",
    "PKDefault",
    "KEKDefault",
    "dbDefault",
    "dbxDefault",
];

pub fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/Systems/{id}/SecureBoot",
            get(secure_boot).patch(patch),
        )
        .route(
            "/redfish/v1/Systems/{id}/SecureBoot/Actions/SecureBoot.ResetKeys",
            post(reset_keys),
        )
        .route(
            "/redfish/v1/Systems/{id}/SecureBoot/SecureBootDatabases",
            get(databases),
        )
        .route(
            "/redfish/v1/Systems/{id}/SecureBoot/SecureBootDatabases/{db}",
            get(database),
        )
}

fn secure_boot_json(sys: &System) -> Value {
    let base = format!("/redfish/v1/Systems/{}/SecureBoot", sys.id);
    let sb = &sys.bmc.secure_boot;
    json!({
        "@odata.type": "#SecureBoot.v1_1_0.SecureBoot",
        "@odata.id": base,
        "Id": "SecureBoot",
        "Name": "UEFI Secure Boot",
        "SecureBootEnable": sb.enable,
        "SecureBootCurrentBoot": if sb.current_boot { "Enabled" } else { "Disabled" },
        "SecureBootMode": if sb.keys_enrolled { "UserMode" } else { "SetupMode" },
        "SecureBootDatabases": link(&format!("{base}/SecureBootDatabases")),
        "Actions": {
            "#SecureBoot.ResetKeys": {
                "target": format!("{base}/Actions/{RESET_KEYS}"),
                "ResetKeysType@Redfish.AllowableValues": ResetKeysType::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            }
        },
    })
}

async fn secure_boot(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    Ok(Resource::new(
        secure_boot_json(&sys),
        st.profile(&sys),
        "GET, PATCH",
    ))
}

async fn patch(State(st): State<AppState>, req: SysPatch) -> Result<Resource, ApiError> {
    let p = st
        .begin_patch(&req, |sys, _| secure_boot_json(sys))
        .await?
        .validated(&req.body, &[writable("SecureBootEnable", Kind::Bool)])?;
    let (sys, profile) = (&p.target, p.profile);
    let mut changes = Vec::new();
    if let Some(enable) = req.body.get("SecureBootEnable").and_then(Value::as_bool) {
        if enable && !sys.uefi() {
            return Err(ApiError::bad(
                Msg::new(
                    "PropertyValueConflict",
                    &["SecureBootEnable", "Boot/BootSourceOverrideMode"],
                )
                .about("SecureBootEnable"),
            ));
        }
        changes.push(Change::SecureBoot(enable));
    }
    let sys = st.core.backend.apply(&sys.id, changes).await?;
    Ok(Resource::new(secure_boot_json(&sys), profile, "GET, PATCH"))
}

async fn reset_keys(
    State(st): State<AppState>,
    Sys(sys): Sys,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    json::action_known(&body, &["ResetKeysType"], RESET_KEYS)?;
    let kind = match json::action_str(&body, "ResetKeysType", RESET_KEYS)? {
        None => {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterMissing",
                &[RESET_KEYS, "ResetKeysType"],
            )))
        }
        Some(k) => ResetKeysType::parse(k).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueNotInList",
                &[k, "ResetKeysType", RESET_KEYS],
            ))
        })?,
    };
    let _guard = st.core.locks.lock(&sys.id).await;
    st.core
        .backend
        .apply(&sys.id, vec![Change::ResetKeys(kind)])
        .await?;
    Ok(json::no_content())
}

async fn databases(Sys(sys): Sys) -> Result<Resource, ApiError> {
    let base = format!(
        "/redfish/v1/Systems/{}/SecureBoot/SecureBootDatabases",
        sys.id
    );
    let members = DATABASES.iter().map(|d| format!("{base}/{d}"));
    Ok(Resource::plain(
        collection(
            "SecureBootDatabaseCollection",
            &base,
            "UEFI SecureBoot Database Collection",
            members,
        ),
        "GET",
    ))
}

async fn database(
    Sys(sys): Sys,
    Path((_, db)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if !DATABASES.contains(&db.as_str()) {
        return Err(ApiError::NotFound(uri.path().to_string()));
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": "#SecureBootDatabase.v1_0_1.SecureBootDatabase",
            "@odata.id": format!("/redfish/v1/Systems/{}/SecureBoot/SecureBootDatabases/{db}", sys.id),
            "Id": db,
            "Name": format!("{db} Database"),
            "DatabaseId": db,
        }),
        "GET",
    ))
}
