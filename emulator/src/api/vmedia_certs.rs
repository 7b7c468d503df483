//! A virtual media device's `Certificates`: the CAs it checks an HTTPS
//! image server against when its `VerifyCertificate` is on (POST a PEM,
//! GET, DELETE; `ReplaceCertificate` and `CertificateLocations` of the
//! `CertificateService` include them). They belong to the device, under
//! its System or its Manager as the profile places it, and outlive
//! inserts and ejects; the backend that fetches the image checks the
//! server against them (none: the system's trusted roots).

use crate::api::State;
use axum::extract::Path;
use axum::http::{Method, Uri};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::boot_certs::{
    cert_collection, cert_in, cert_resource, read_body, refused, unknown_properties, CertUse,
};
use super::json::{self, JsonObject, Resource};
use super::vmedia::{owner_of, slot_of};
use super::{created, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::certs::{self, BootCert};
use crate::model::{Change, MediaSlot, MediaTls, System};

const USE: CertUse = CertUse {
    name: "Virtual Media Certificate",
    description: "A CA this device checks an HTTPS image server against",
    usage: "Device",
    uefi: false,
};

const REPLACE: &str = "CertificateService.ReplaceCertificate";

pub fn router() -> Router {
    let mut r = Router::new();
    for root in ["Managers", "Systems"] {
        let base = format!("/redfish/v1/{root}/{{id}}/VirtualMedia/{{slot}}/Certificates");
        r = r
            .route(&base, get(list).post(create))
            .route(&format!("{base}/{{cert}}"), get(show).delete(delete));
    }
    r
}

/// The device the URL names and its collection's URI.
fn device(
    st: &AppState,
    sys: &System,
    slot: &str,
    uri: &Uri,
) -> Result<(MediaSlot, String), ApiError> {
    let (slot, id) = slot_of(st, sys, slot, uri)?;
    let base = format!(
        "/redfish/v1/{}/VirtualMedia/{id}/Certificates",
        owner_of(st, sys, uri)
    );
    Ok((slot, base))
}

fn cert_of<'a>(tls: &'a MediaTls, raw: &str, uri: &Uri) -> Result<&'a BootCert, ApiError> {
    cert_in(&tls.certs, raw, uri)
}

async fn list(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let (slot, base) = device(&st, &sys, &slot, &uri)?;
    Ok(cert_collection(
        &base,
        "Virtual Media Certificates",
        &sys.bmc.media_tls(slot).certs,
    ))
}

async fn show(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot, cert)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let (slot, base) = device(&st, &sys, &slot, &uri)?;
    let cert = cert_of(sys.bmc.media_tls(slot), &cert, &uri)?;
    Ok(Resource::new(
        cert_resource(&base, cert.id, &cert.der, &USE)?,
        st.profile(&sys),
        "GET, DELETE",
    ))
}

async fn create(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let (slot, base) = device(&st, &sys, &slot, &uri)?;
    unknown_properties(&body, &["CertificateString", "CertificateType"])?;
    let text = read_body(&body, None)?;
    let der = certs::parse_pem(&text).map_err(|e| refused(&e, &text, None))?;
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let tls = sys.bmc.media_tls(slot);
    certs::check_set(&tls.certs.certs, &der, None).map_err(|e| refused(&e, &text, None))?;
    let (next, cert) = tls.certs.with_added(der.clone());
    let tls = MediaTls {
        certs: next,
        ..tls.clone()
    };
    st.core
        .backend
        .apply(&sys.id, vec![Change::MediaTls(slot, tls)])
        .await?;
    tracing::info!(system = %sys.name, %slot, cert, "virtual media certificate added");
    Ok(created(
        &format!("{base}/{cert}"),
        cert_resource(&base, cert, &der, &USE)?,
    ))
}

async fn delete(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, slot, cert)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (slot, _) = device(&st, &sys, &slot, &uri)?;
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let tls = sys.bmc.media_tls(slot);
    let cert = cert_of(tls, &cert, &uri)?.id;
    let tls = MediaTls {
        certs: tls.certs.without(cert),
        ..tls.clone()
    };
    st.core
        .backend
        .apply(&sys.id, vec![Change::MediaTls(slot, tls)])
        .await?;
    tracing::info!(system = %sys.name, %slot, cert, "virtual media certificate deleted");
    Ok(json::no_content())
}

/// The URIs of `sys`'s virtual media certificates, for
/// `CertificateLocations` (under the owner the profile shows them at).
pub(super) fn locations(st: &AppState, sys: &System) -> Vec<String> {
    let profile = st.profile(sys);
    let under_system = super::vmedia::shown(st, sys, true);
    let Some(ids) = profile.vmedia.ids(under_system) else {
        return Vec::new();
    };
    let owner = match under_system {
        true => format!("Systems/{}", sys.id),
        false => format!("Managers/{}", st.manager_id(sys)),
    };
    [MediaSlot::Cd, MediaSlot::Floppy]
        .into_iter()
        .zip(ids)
        .flat_map(|(slot, id)| {
            let owner = owner.clone();
            sys.bmc
                .media_tls(slot)
                .certs
                .certs
                .iter()
                .map(move |c| {
                    format!(
                        "/redfish/v1/{owner}/VirtualMedia/{id}/Certificates/{}",
                        c.id
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `ReplaceCertificate` of a virtual media certificate at `target`
/// (`/redfish/v1/{Systems|Managers}/{id}/VirtualMedia/{dev}/Certificates/{n}`).
pub(super) async fn replace(st: &AppState, target: &str, text: &str) -> Result<Response, ApiError> {
    let not_found = || {
        ApiError::bad(Msg::new(
            "ActionParameterValueError",
            &["CertificateUri", REPLACE],
        ))
    };
    let path = target.trim_end_matches('/');
    let parts: Vec<&str> = path.split('/').collect();
    // "", "redfish", "v1", root, id, "VirtualMedia", dev, "Certificates", n
    let [_, "redfish", "v1", "Systems" | "Managers", id, "VirtualMedia", dev, "Certificates", cert] =
        parts[..]
    else {
        return Err(not_found());
    };
    let uri: Uri = path.parse().map_err(|_| not_found())?;
    let der = certs::parse_pem(text).map_err(|e| refused(&e, text, Some(REPLACE)))?;
    let sys_id = match st.resolve_id(id, &uri, &Method::POST).await {
        Ok(s) => s,
        Err(ApiError::NotFound(_) | ApiError::Redirect { .. }) => return Err(not_found()),
        Err(e) => return Err(e),
    };
    let locked = st.locked(&sys_id).await?;
    let sys = &locked.sys;
    let (slot, _) = slot_of(st, sys, dev, &uri).map_err(|_| not_found())?;
    let tls = sys.bmc.media_tls(slot);
    let cert = cert_of(tls, cert, &uri).map_err(|_| not_found())?.id;
    certs::check_set(&tls.certs.certs, &der, Some(cert))
        .map_err(|e| refused(&e, text, Some(REPLACE)))?;
    let tls = MediaTls {
        certs: tls.certs.with_replaced(cert, der),
        ..tls.clone()
    };
    st.core
        .backend
        .apply(&sys.id, vec![Change::MediaTls(slot, tls)])
        .await?;
    tracing::info!(system = %sys.name, %slot, cert, "virtual media certificate replaced");
    Ok(json::no_content())
}
