//! HPE's route for the HTTPS boot CAs (profiles with
//! `https_boot.hpe_tlsconfig`): the BIOS TLS configuration, `HpeTlsConfig`,
//! linked from the Bios resource's `Oem.Hpe.Links.TlsConfig`. The current
//! resource lists the certificates the firmware trusts; its settings
//! object takes a PUT (only a PUT) of `NewCertificates`
//! (`[{"X509Certificate": PEM}]`), `DeleteCertificates`
//! (`[{"FingerPrint": SHA-256}]`) or `BaseConfig: "Default"`, applied at
//! the next start. Shapes from HPE's iLO REST API documentation and
//! what proliantutils sends (`add_tls_certificate`,
//! `remove_tls_certificate`).
//!
//! The firmware behind Shoal's machines (OVMF) always verifies the
//! server and its host name, so `VerifyMode` shows `PEER` and
//! `HostnameCheck` `Enabled`, and a PUT asking for anything else is
//! refused rather than shown and not done.

use crate::api::State;
use axum::http::Uri;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::api::error::{ApiError, Msg};
use crate::api::input::echo;
use crate::api::json::{JsonObject, Resource};
use crate::api::{link, AppState, Sys, SysId};
use crate::certs::{self, BootCert, CertInfo};
use crate::model::{Change, System};
use crate::profile::HPE_TLSCONFIG_PATHS;

/// The cipher list iLO shows (read-only here: the firmware's own list).
const CIPHERS: &str = "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-GCM-SHA256";

pub(super) fn router() -> Router {
    let mut r = Router::new();
    for p in HPE_TLSCONFIG_PATHS {
        r = r
            .route(&format!("/redfish/v1/Systems/{{id}}/{p}"), get(current))
            .route(
                &format!("/redfish/v1/Systems/{{id}}/{p}/settings"),
                get(settings).put(put_settings),
            );
    }
    r
}

/// The TLS configuration's URI for this system, where its BMC has one.
pub fn config_uri(st: &AppState, sys: &System) -> Option<String> {
    let p = st.profile(sys).https_boot.hpe_tlsconfig.as_deref()?;
    sys.arch
        .has_uefi()
        .then(|| format!("/redfish/v1/Systems/{}/{p}", sys.id))
}

/// The URI asked for, if it is this system's TLS configuration (plus
/// `/settings` when `settings`).
fn base(st: &AppState, sys: &System, uri: &Uri, settings: bool) -> Result<String, ApiError> {
    let missing = || ApiError::NotFound(uri.path().to_string());
    let base = config_uri(st, sys).ok_or_else(missing)?;
    let want = if settings {
        format!("{base}/settings")
    } else {
        base.clone()
    };
    if uri.path().trim_end_matches('/') != want {
        return Err(missing());
    }
    Ok(base)
}

fn cert_entries(list: &[BootCert]) -> Result<Vec<Value>, ApiError> {
    list.iter()
        .map(|c| {
            let i = CertInfo::parse(&c.der)
                .map_err(|e| ApiError::Internal(format!("certificate {}: {e}", c.id)))?;
            let dn = |n: &certs::Name| {
                n.common_name
                    .as_deref()
                    .map(|cn| format!("CN={cn}"))
                    .unwrap_or_default()
            };
            Ok(json!({
                "FingerPrint": i.fingerprint,
                "Issuer": dn(&i.issuer),
                "SerialNumber": i.serial,
                "Subject": dn(&i.subject),
                "ValidNotAfter": crate::timefmt::rfc3339_unix(i.not_after),
                "ValidNotBefore": crate::timefmt::rfc3339_unix(i.not_before),
            }))
        })
        .collect()
}

fn config_json(base: &str, id: &str, name: &str, list: &[BootCert]) -> Result<Value, ApiError> {
    Ok(json!({
        "@odata.type": "#HpeTlsConfig.v1_0_0.HpeTlsConfig",
        "@odata.id": base,
        "Id": id,
        "Name": name,
        "Certificates": cert_entries(list)?,
        "Ciphers": CIPHERS,
        "HostnameCheck": "Enabled",
        "ProtocolVersion": "AUTO",
        "TlsCaCertificateCount": list.len(),
        "VerifyMode": "PEER",
    }))
}

async fn current(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let base = base(&st, &sys, &uri, false)?;
    let mut body = config_json(
        &base,
        "tlsconfig",
        "TLS Current Settings",
        &sys.bmc.boot_certs.certs,
    )?;
    body["@Redfish.Settings"] = json!({
        "@odata.type": "#Settings.v1_0_0.Settings",
        "SettingsObject": link(&format!("{base}/settings")),
    });
    Ok(Resource::new(body, st.profile(&sys), "GET"))
}

fn settings_body(sys: &System, base: &str) -> Result<Value, ApiError> {
    let mut body = config_json(
        &format!("{base}/settings"),
        "settings",
        "TLS Pending Settings",
        sys.bmc.boot_certs.at_start(),
    )?;
    body["NewCertificates"] = json!([]);
    body["DeleteCertificates"] = json!([]);
    Ok(body)
}

async fn settings(
    State(st): State<AppState>,
    Sys(sys): Sys,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let base = base(&st, &sys, &uri, true)?;
    Ok(Resource::new(
        settings_body(&sys, &base)?,
        st.profile(&sys),
        "GET, PUT",
    ))
}

/// One fixed value a PUT may only repeat.
fn fixed(body: &Map<String, Value>, key: &str, only: &str, problems: &mut Vec<Msg>) {
    match body.get(key) {
        None => {}
        Some(Value::String(s)) if s == only => {}
        Some(Value::String(s)) => {
            problems.push(Msg::new("PropertyValueNotInList", &[&echo(s), key]).about(key))
        }
        Some(v) => problems
            .push(Msg::new("PropertyValueTypeError", &[&echo(&v.to_string()), key]).about(key)),
    }
}

/// The certificate set a PUT body asks for, from `staged` (what the next
/// start would apply now); every problem of the body at once.
fn put_set(
    body: &Map<String, Value>,
    staged: &[BootCert],
    last_id: u32,
) -> Result<Vec<BootCert>, ApiError> {
    let mut problems = Vec::new();
    for k in body.keys().filter(|k| !k.starts_with('@')) {
        match k.as_str() {
            "NewCertificates" | "DeleteCertificates" | "BaseConfig" | "VerifyMode"
            | "HostnameCheck" | "ProtocolVersion" => {}
            "Certificates" | "TlsCaCertificateCount" | "Ciphers" | "Id" | "Name" => {
                problems.push(Msg::new("PropertyNotWritable", &[k]).about(k))
            }
            _ => problems.push(Msg::new("PropertyUnknown", &[k]).about(k)),
        }
    }
    fixed(body, "VerifyMode", "PEER", &mut problems);
    fixed(body, "HostnameCheck", "Enabled", &mut problems);
    fixed(body, "ProtocolVersion", "AUTO", &mut problems);
    fixed(body, "BaseConfig", "Default", &mut problems);
    let mut set: Vec<BootCert> = if body.contains_key("BaseConfig") {
        Vec::new()
    } else {
        staged.to_vec()
    };
    let list = |key: &str, problems: &mut Vec<Msg>| -> Vec<Value> {
        match body.get(key) {
            None => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(v) => {
                problems.push(
                    Msg::new("PropertyValueTypeError", &[&echo(&v.to_string()), key]).about(key),
                );
                Vec::new()
            }
        }
    };
    for (i, d) in list("DeleteCertificates", &mut problems).iter().enumerate() {
        let at = format!("DeleteCertificates/{i}/FingerPrint");
        let Some(fp) = d.get("FingerPrint").and_then(Value::as_str) else {
            problems.push(Msg::new("PropertyMissing", &[&at]).about(&at));
            continue;
        };
        let before = set.len();
        set.retain(|c| {
            CertInfo::parse(&c.der).map_or(true, |i| !i.fingerprint.eq_ignore_ascii_case(fp))
        });
        if set.len() == before {
            problems.push(Msg::new("PropertyValueNotInList", &[&echo(fp), &at]).about(&at));
        }
    }
    let mut next_id = set.iter().map(|c| c.id).fold(last_id, u32::max);
    for (i, n) in list("NewCertificates", &mut problems).iter().enumerate() {
        let at = format!("NewCertificates/{i}/X509Certificate");
        let Some(text) = n.get("X509Certificate").and_then(Value::as_str) else {
            problems.push(Msg::new("PropertyMissing", &[&at]).about(&at));
            continue;
        };
        match certs::parse_pem(text).and_then(|der| {
            certs::check_set(&set, &der, None)?;
            Ok(der)
        }) {
            Ok(der) => {
                next_id += 1;
                set.push(BootCert { id: next_id, der });
            }
            Err(e) => problems.push(crate::api::boot_certs::refused_msg(&e, text, &at, None)),
        }
    }
    if problems.is_empty() {
        Ok(set)
    } else {
        Err(ApiError::BadRequest(problems))
    }
}

async fn put_settings(
    State(st): State<AppState>,
    SysId(id): SysId,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Resource, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    let base = base(&st, sys, &uri, true)?;
    if !sys.uefi() {
        // As proliantutils refuses it: HTTPS boot is UEFI's.
        return Err(ApiError::bad(
            Msg::new(
                "PropertyValueConflict",
                &["NewCertificates", "Boot/BootSourceOverrideMode"],
            )
            .about("NewCertificates"),
        ));
    }
    let certs = &sys.bmc.boot_certs;
    let set = put_set(&body, certs.at_start(), certs.last_id)?;
    let next = certs.with_pending(set);
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::BootCerts(next)])
        .await?;
    tracing::info!(system = %sys.name, count = sys.bmc.boot_certs.at_start().len(), "HPE TLS settings staged for the next start");
    Ok(Resource::new(
        settings_body(&sys, &base)?,
        locked.profile,
        "GET, PUT",
    ))
}
