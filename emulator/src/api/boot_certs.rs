//! `Boot.Certificates`: the CA certificates a system trusts when its
//! firmware boots over HTTPS (POST a PEM, GET, DELETE), and the
//! `CertificateService` with `ReplaceCertificate` over them. A change
//! takes effect at the next start, as the boot override does: the backend
//! gives the set to the firmware then (libvirt: OVMF's
//! `TlsCaCertificate`).

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use super::input::echo;
use super::json::{self, JsonObject, Resource};
use super::{collection, created, link, AppState, Sys, SysId};
use crate::api::error::{ApiError, Msg};
use crate::certs::{self, BootCert, BootCerts, CertError, CertInfo, Name};
use crate::model::{Change, System};
use crate::nvram::tls::SHOAL_OWNER;
use crate::profile::Profile;

const REPLACE: &str = "CertificateService.ReplaceCertificate";
const SERVICE: &str = "/redfish/v1/CertificateService";

pub fn router() -> Router {
    Router::new()
        .route(
            "/redfish/v1/Systems/{id}/Boot/Certificates",
            get(list).post(create),
        )
        .route(
            "/redfish/v1/Systems/{id}/Boot/Certificates/{cert}",
            get(show).delete(delete),
        )
        .route(SERVICE, get(service))
        .route(&format!("{SERVICE}/Actions/{REPLACE}"), post(replace))
        .route(&format!("{SERVICE}/CertificateLocations"), get(locations))
}

/// The collection's URI on a system that has one: a UEFI architecture,
/// behind a BMC that takes the CAs there (HPE's has its own route,
/// `api/hpe_tls.rs`).
pub fn collection_uri(sys: &System, profile: &Profile) -> Option<String> {
    (sys.arch.has_uefi() && profile.https_boot.hpe_tlsconfig.is_none())
        .then(|| format!("/redfish/v1/Systems/{}/Boot/Certificates", sys.id))
}

fn base(st: &AppState, sys: &System, uri: &Uri) -> Result<String, ApiError> {
    collection_uri(sys, st.profile(sys)).ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

/// A BMC that asks for BIOS settings before it takes a CA (iDRAC: HTTP
/// device 1 enabled, its TLS mode one-way) refuses the enrollment until
/// they are set or staged.
fn bios_allows(sys: &System, profile: &Profile) -> Result<(), ApiError> {
    for (name, want) in &profile.https_boot.needs_bios {
        let have = crate::model::bios_at_start(&sys.bmc.bios, name);
        if have != Some(want.as_str()) {
            return Err(ApiError::bad(
                Msg::new(
                    "PropertyValueConflict",
                    &["CertificateString", &format!("Attributes/{name}")],
                )
                .about("CertificateString"),
            ));
        }
    }
    Ok(())
}

fn identifier(n: &Name) -> Value {
    let mut o = Map::new();
    for (k, v) in [
        ("CommonName", &n.common_name),
        ("Organization", &n.organization),
        ("OrganizationalUnit", &n.organizational_unit),
        ("City", &n.city),
        ("State", &n.state),
        ("Country", &n.country),
        ("Email", &n.email),
    ] {
        if let Some(v) = v {
            o.insert(k.into(), json!(v));
        }
    }
    Value::Object(o)
}

fn date(secs: i64) -> String {
    crate::timefmt::rfc3339_unix(secs)
}

/// What a collection's certificates are for, as their resources say.
pub(super) struct CertUse {
    /// `Name`, before the Id.
    pub name: &'static str,
    pub description: &'static str,
    /// `CertificateUsageTypes`.
    pub usage: &'static str,
    /// Whether the firmware holds it (`UefiSignatureOwner`).
    pub uefi: bool,
}

const BOOT: CertUse = CertUse {
    name: "HTTPS Boot Certificate",
    description: "A CA the firmware trusts when it boots over HTTPS",
    usage: "BIOS",
    uefi: true,
};

fn cert_json(base: &str, id: u32, der: &[u8]) -> Result<Value, ApiError> {
    cert_resource(base, id, der, &BOOT)
}

/// The Certificate resource of `der`, Id `id`, in the collection `base`.
pub(super) fn cert_resource(
    base: &str,
    id: u32,
    der: &[u8],
    what: &CertUse,
) -> Result<Value, ApiError> {
    // Only certificates that parsed are ever kept.
    let info =
        CertInfo::parse(der).map_err(|e| ApiError::Internal(format!("certificate {id}: {e}")))?;
    let mut v = json!({
        "@odata.type": "#Certificate.v1_8_0.Certificate",
        "@odata.id": format!("{base}/{id}"),
        "Id": id.to_string(),
        "Name": format!("{} {id}", what.name),
        "Description": what.description,
        "CertificateString": certs::to_pem(der),
        "CertificateType": "PEM",
        "CertificateUsageTypes": [what.usage],
        "Issuer": identifier(&info.issuer),
        "Subject": identifier(&info.subject),
        "ValidNotBefore": date(info.not_before),
        "ValidNotAfter": date(info.not_after),
        "SerialNumber": info.serial,
        "Fingerprint": info.fingerprint,
        "FingerprintHashAlgorithm": "TPM_ALG_SHA256",
        "SignatureAlgorithm": info.signature_algorithm,
        "KeyUsage": info.key_usage,
    });
    if what.uefi {
        v["UefiSignatureOwner"] = json!(SHOAL_OWNER.hyphenated().to_string());
    }
    Ok(v)
}

async fn list(State(st): State<AppState>, Sys(sys): Sys, uri: Uri) -> Result<Resource, ApiError> {
    let base = base(&st, &sys, &uri)?;
    Ok(cert_collection(
        &base,
        "HTTPS Boot Certificates",
        &sys.bmc.boot_certs,
    ))
}

/// The collection `base` of `certs` (POST adds a PEM).
pub(super) fn cert_collection(base: &str, name: &str, certs: &BootCerts) -> Resource {
    let members = certs.certs.iter().map(|c| format!("{base}/{}", c.id));
    let mut body = collection("CertificateCollection", base, name, members);
    body["@Redfish.SupportedCertificates"] = json!(["PEM"]);
    Resource::plain(body, "GET, POST")
}

/// The certificate of `certs` the `{cert}` segment names (its Id as
/// served).
pub(super) fn cert_in<'a>(
    certs: &'a BootCerts,
    raw: &str,
    uri: &Uri,
) -> Result<&'a BootCert, ApiError> {
    raw.parse::<u32>()
        .ok()
        .filter(|id| raw == id.to_string())
        .and_then(|id| certs.get(id))
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))
}

/// The enrolled certificate the `{cert}` segment names.
fn cert_of<'a>(sys: &'a System, raw: &str, uri: &Uri) -> Result<&'a BootCert, ApiError> {
    cert_in(&sys.bmc.boot_certs, raw, uri)
}

async fn show(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, cert)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let base = base(&st, &sys, &uri)?;
    let cert = cert_of(&sys, &cert, &uri)?;
    Ok(Resource::new(
        cert_json(&base, cert.id, &cert.der)?,
        st.profile(&sys),
        "GET, DELETE",
    ))
}

/// How a certificate `text` refused at property `prop` reads: property
/// messages, or in an action (ReplaceCertificate) the action's parameter
/// messages. HPE's TLS settings (`hpe_tls.rs`) use the same.
pub(super) fn refused_msg(e: &CertError, text: &str, prop: &str, action: Option<&str>) -> Msg {
    tracing::info!(reason = %e, "certificate refused");
    let shown = echo(text);
    let msg = match (e, action) {
        (CertError::Duplicate(_), _) => {
            Msg::new("ResourceAlreadyExists", &["Certificate", prop, &shown])
        }
        (CertError::TooMany { .. }, _) => Msg::new("CreateLimitReachedForResource", &[]),
        (CertError::NotCa, None) => Msg::new("PropertyValueError", &[prop]),
        (CertError::NotCa, Some(a)) => Msg::new("ActionParameterValueError", &[prop, a]),
        (_, None) => Msg::new("PropertyValueFormatError", &[&shown, prop]),
        (_, Some(a)) => Msg::new("ActionParameterValueFormatError", &[&shown, prop, a]),
    };
    msg.about(prop)
}

pub(super) fn refused(e: &CertError, text: &str, action: Option<&str>) -> ApiError {
    ApiError::bad(refused_msg(e, text, "CertificateString", action))
}

/// The certificate of a create or replace body: `CertificateString` as PEM,
/// `CertificateType` `PEM`. `action` names the action for its messages.
pub(super) fn read_body(
    body: &Map<String, Value>,
    action: Option<&str>,
) -> Result<String, ApiError> {
    let mut problems = Vec::new();
    let mut text = None;
    for k in ["CertificateString", "CertificateType"] {
        match (body.get(k), action) {
            (None | Some(Value::Null), None) => {
                problems.push(Msg::new("CreateFailedMissingReqProperties", &[k]))
            }
            (None | Some(Value::Null), Some(a)) => {
                problems.push(Msg::new("ActionParameterMissing", &[a, k]))
            }
            (Some(Value::String(s)), _) => {
                if k == "CertificateString" {
                    text = Some(s.clone());
                } else if s != "PEM" {
                    problems.push(match action {
                        None => Msg::new("PropertyValueNotInList", &[&echo(s), k]).about(k),
                        Some(a) => Msg::new("ActionParameterValueNotInList", &[&echo(s), k, a]),
                    });
                }
            }
            (Some(v), _) => {
                let shown = echo(&v.to_string());
                problems.push(match action {
                    None => Msg::new("PropertyValueTypeError", &[&shown, k]).about(k),
                    Some(a) => Msg::new("ActionParameterValueTypeError", &[&shown, k, a]),
                });
            }
        }
    }
    match (problems.is_empty(), text) {
        (true, Some(t)) => Ok(t),
        _ => Err(ApiError::BadRequest(problems)),
    }
}

pub(super) fn unknown_properties(
    body: &Map<String, Value>,
    known: &[&str],
) -> Result<(), ApiError> {
    let unknown: Vec<Msg> = body
        .keys()
        .filter(|k| !k.starts_with('@') && !known.contains(&k.as_str()))
        .map(|k| Msg::new("PropertyUnknown", &[k]).about(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(unknown))
    }
}

/// A system whose firmware runs in legacy BIOS mode has no HTTPS boot.
fn needs_uefi(sys: &System, property: &str) -> Result<(), ApiError> {
    if sys.uefi() {
        return Ok(());
    }
    Err(ApiError::bad(
        Msg::new(
            "PropertyValueConflict",
            &[property, "Boot/BootSourceOverrideMode"],
        )
        .about(property),
    ))
}

async fn create(
    State(st): State<AppState>,
    SysId(id): SysId,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    unknown_properties(&body, &["CertificateString", "CertificateType"])?;
    let text = read_body(&body, None)?;
    let der = certs::parse_pem(&text).map_err(|e| refused(&e, &text, None))?;
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    let base = base(&st, sys, &uri)?;
    needs_uefi(sys, "CertificateString")?;
    bios_allows(sys, locked.profile)?;
    certs::check_set(&sys.bmc.boot_certs.certs, &der, None)
        .map_err(|e| refused(&e, &text, None))?;
    let (next, cert) = sys.bmc.boot_certs.with_added(der.clone());
    st.core
        .backend
        .apply(&sys.id, vec![Change::BootCerts(next)])
        .await?;
    tracing::info!(system = %sys.name, cert, "HTTPS boot certificate enrolled");
    let location = format!("{base}/{cert}");
    Ok(created(&location, cert_json(&base, cert, &der)?))
}

async fn delete(
    State(st): State<AppState>,
    SysId(id): SysId,
    Path((_, cert)): Path<(String, String)>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    base(&st, sys, &uri)?;
    let cert = cert_of(sys, &cert, &uri)?.id;
    let next = sys.bmc.boot_certs.without(cert);
    st.core
        .backend
        .apply(&sys.id, vec![Change::BootCerts(next)])
        .await?;
    tracing::info!(system = %sys.name, cert, "HTTPS boot certificate deleted");
    Ok(json::no_content())
}

async fn service() -> Resource {
    Resource::plain(
        json!({
            "@odata.type": "#CertificateService.v1_1_0.CertificateService",
            "@odata.id": SERVICE,
            "Id": "CertificateService",
            "Name": "Certificate Service",
            "Description": "Actions on the certificates of this service",
            "CertificateLocations": link(&format!("{SERVICE}/CertificateLocations")),
            "Actions": {
                format!("#{REPLACE}"): {
                    "target": format!("{SERVICE}/Actions/{REPLACE}"),
                    "CertificateType@Redfish.AllowableValues": ["PEM"],
                },
            },
        }),
        "GET",
    )
}

async fn locations(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let mut links = Vec::new();
    for r in st.core.backend.systems().await? {
        let sys = match st.core.backend.system(&r.id).await {
            Ok(s) => s,
            // Gone since the listing.
            Err(crate::backend::BackendError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        if let Some(base) = collection_uri(&sys, st.profile(&sys)) {
            for c in &sys.bmc.boot_certs.certs {
                links.push(link(&format!("{base}/{}", c.id)));
            }
        }
        links.extend(
            super::vmedia_certs::locations(&st, &sys)
                .iter()
                .map(|l| link(l)),
        );
    }
    Ok(Resource::plain(
        json!({
            "@odata.type": "#CertificateLocations.v1_0_4.CertificateLocations",
            "@odata.id": format!("{SERVICE}/CertificateLocations"),
            "Id": "CertificateLocations",
            "Name": "Certificate Locations",
            "Links": { "Certificates": links },
        }),
        "GET",
    ))
}

/// `ReplaceCertificate`: the certificate at `CertificateUri` (a system's
/// boot certificate) becomes the one given, under the same Id.
async fn replace(
    State(st): State<AppState>,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    json::action_known(
        &body,
        &[
            "CertificateUri",
            "CertificateString",
            "CertificateType",
            "Password",
        ],
        REPLACE,
    )?;
    let target = match body.get("CertificateUri") {
        None | Some(Value::Null) => {
            return Err(ApiError::bad(Msg::new(
                "ActionParameterMissing",
                &[REPLACE, "CertificateUri"],
            )))
        }
        Some(v) => v.get("@odata.id").and_then(Value::as_str).ok_or_else(|| {
            ApiError::bad(Msg::new(
                "ActionParameterValueTypeError",
                &[&echo(&v.to_string()), "CertificateUri", REPLACE],
            ))
        })?,
    };
    let text = read_body(&body, Some(REPLACE))?;
    let not_found = || {
        ApiError::bad(Msg::new(
            "ActionParameterValueError",
            &["CertificateUri", REPLACE],
        ))
    };
    if target.contains("/VirtualMedia/") {
        return super::vmedia_certs::replace(&st, target, &text).await;
    }
    // /redfish/v1/Systems/{id}/Boot/Certificates/{cert}
    let rest = target
        .trim_end_matches('/')
        .strip_prefix("/redfish/v1/Systems/")
        .ok_or_else(not_found)?;
    let (sys_id, cert) = rest
        .split_once("/Boot/Certificates/")
        .filter(|(s, c)| !s.contains('/') && !c.contains('/'))
        .ok_or_else(not_found)?;
    let der = certs::parse_pem(&text).map_err(|e| refused(&e, &text, Some(REPLACE)))?;
    let sys_id = st.core.backend.find(sys_id).await?.ok_or_else(not_found)?;
    let locked = st.locked(&sys_id.id).await?;
    let sys = &locked.sys;
    let cert = cert
        .parse::<u32>()
        .ok()
        .filter(|id| {
            collection_uri(sys, locked.profile).is_some() && sys.bmc.boot_certs.get(*id).is_some()
        })
        .ok_or_else(not_found)?;
    certs::check_set(&sys.bmc.boot_certs.certs, &der, Some(cert))
        .map_err(|e| refused(&e, &text, Some(REPLACE)))?;
    let next = sys.bmc.boot_certs.with_replaced(cert, der);
    st.core
        .backend
        .apply(&sys.id, vec![Change::BootCerts(next)])
        .await?;
    tracing::info!(system = %sys.name, cert, "HTTPS boot certificate replaced");
    Ok(json::no_content())
}
