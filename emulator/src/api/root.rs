//! Service root, `/redfish`, the OData service document and the message
//! registries.

use crate::api::State;
use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::bios_registry as bios;
use super::json::Resource;
use super::{collection, link, AppState};
use crate::api::error::ApiError;
use crate::registry;

pub fn router() -> Router {
    Router::new()
        .route("/redfish", get(version))
        .route("/redfish/v1", get(service_root))
        .route("/redfish/v1/", get(service_root))
        .route("/redfish/v1/odata", get(odata))
        .route("/redfish/v1/Registries", get(registries))
        .route("/redfish/v1/Registries/{id}", get(registry_file))
        .route("/redfish/v1/Registries/{id}/{file}", get(registry))
}

async fn version() -> Resource {
    Resource::plain(json!({ "v1": "/redfish/v1/" }), "GET")
}

/// The top-level resources: (name in the service root, URI). The
/// certificate service exists where the resources it acts on do.
fn top_level(st: &AppState) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        ("Systems", "/redfish/v1/Systems"),
        ("Managers", "/redfish/v1/Managers"),
        ("Chassis", "/redfish/v1/Chassis"),
        ("SessionService", "/redfish/v1/SessionService"),
        ("AccountService", "/redfish/v1/AccountService"),
        ("Tasks", "/redfish/v1/TaskService"),
        ("EventService", "/redfish/v1/EventService"),
        ("Registries", "/redfish/v1/Registries"),
    ];
    if st.features.full() {
        v.push(("CertificateService", "/redfish/v1/CertificateService"));
        v.push(("UpdateService", "/redfish/v1/UpdateService"));
    }
    v.extend(super::vendor::top_level(st));
    v
}

async fn service_root(State(st): State<AppState>) -> Resource {
    let mut body = json!({
        "@odata.type": "#ServiceRoot.v1_17_0.ServiceRoot",
        "@odata.id": "/redfish/v1",
        "Id": "RootService",
        "Name": "Shoal Redfish Service",
        "RedfishVersion": "1.20.0",
        "UUID": st.service_uuid.hyphenated().to_string(),
        "Vendor": st.root_profile.vendor,
        "Product": "Shoal Redfish BMC emulator",
        "ProtocolFeaturesSupported": {
            "ExpandQuery": {
                "ExpandAll": true, "Levels": true, "Links": true, "NoLinks": true,
                "MaxLevels": super::query::MAX_LEVELS,
            },
            "FilterQuery": true,
            "SelectQuery": true,
            "OnlyMemberQuery": true,
            "TopSkipQuery": true,
            "ExcerptQuery": false,
            "DeepOperations": { "DeepPATCH": false, "DeepPOST": false },
        },
        "Links": { "Sessions": link("/redfish/v1/SessionService/Sessions") },
    });
    // iLO's links end in `/`; proliantutils joins `1` onto them
    // (`urljoin(Systems, "1")`), which without it would drop `Systems`.
    let slash = if st.root_profile.collection_links_end_in_slash() {
        "/"
    } else {
        ""
    };
    for (name, uri) in top_level(&st) {
        body[name] = link(&format!("{uri}{slash}"));
    }
    // The vendor's own: an iLO's generation (HPE's iLOrest reads it
    // before it logs in), an iDRAC's service tag (Dell's tools identify
    // the machine there before anything else).
    if let Some(oem) = super::vendor::root_oem(&st) {
        body["Oem"] = oem;
    }
    Resource::new(body, crate::profile::generic(), "GET")
}

async fn odata(State(st): State<AppState>) -> Resource {
    let mut values: Vec<Value> =
        vec![json!({"name": "Service", "kind": "Singleton", "url": "/redfish/v1/"})];
    values.extend(
        top_level(&st)
            .into_iter()
            .map(|(name, uri)| json!({"name": name, "kind": "Singleton", "url": uri})),
    );
    Resource::plain(
        json!({ "@odata.context": "/redfish/v1/$metadata", "value": values }),
        "GET",
    )
}

/// Registry files served: (Id, full registry name). The BIOS attribute
/// registry exists only where the BIOS resource does.
fn registry_files(st: &AppState) -> Vec<(&'static str, String)> {
    let mut v = vec![(
        registry::BASE_PREFIX,
        format!("{}.{}", registry::BASE_PREFIX, registry::BASE_VERSION),
    )];
    if st.features.full() {
        // Under the name the Bios resource's AttributeRegistry gives, as
        // iLO serves it: clients look the file up by that name (Ansible's
        // GetBiosRegistries GETs Registries/<AttributeRegistry>).
        v.push((bios::REGISTRY, bios::REGISTRY.to_string()));
    }
    for r in registry::SERVED_REGISTRIES {
        v.push((r.prefix, format!("{}.{}", r.prefix, r.version)));
    }
    // The vendor's own, where the profile's events speak it.
    if let Some((prefix, version)) = st.root_profile.events.messages.registry() {
        v.push((prefix, format!("{prefix}.{version}")));
    }
    v
}

async fn registries(State(st): State<AppState>) -> Resource {
    let members = registry_files(&st)
        .into_iter()
        .map(|(id, _)| format!("/redfish/v1/Registries/{id}"));
    Resource::plain(
        collection(
            "MessageRegistryFileCollection",
            "/redfish/v1/Registries",
            "Registry File Collection",
            members,
        ),
        "GET",
    )
}

async fn registry_file(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Resource, ApiError> {
    let Some((_, full)) = registry_files(&st).into_iter().find(|(i, _)| *i == id) else {
        return Err(ApiError::NotFound(format!("/redfish/v1/Registries/{id}")));
    };
    Ok(Resource::new(
        json!({
            "@odata.type": "#MessageRegistryFile.v1_1_3.MessageRegistryFile",
            "@odata.id": format!("/redfish/v1/Registries/{id}"),
            "Id": id,
            "Name": format!("{id} Registry File"),
            "Description": format!("Locations of the {id} registry"),
            "Languages": ["en"],
            "Registry": full,
            "Location": [{
                "Language": "en",
                "Uri": format!("/redfish/v1/Registries/{id}/{id}"),
            }],
        }),
        crate::profile::generic(),
        "GET",
    ))
}

async fn registry(
    State(st): State<AppState>,
    Path((id, file)): Path<(String, String)>,
) -> Result<Resource, ApiError> {
    let uri = format!("/redfish/v1/Registries/{id}/{file}");
    let known = file == id && registry_files(&st).iter().any(|(i, _)| *i == id);
    match id.as_str() {
        _ if !known => Err(ApiError::NotFound(uri)),
        registry::BASE_PREFIX => Ok(Resource::new(
            registry::registry_document(),
            crate::profile::generic(),
            "GET",
        )),
        _ if id == bios::REGISTRY => Ok(Resource::new(
            bios::registry_document(&uri),
            crate::profile::generic(),
            "GET",
        )),
        _ => match registry::SERVED_REGISTRIES.iter().find(|r| r.prefix == id) {
            Some(r) => Ok(Resource::new(
                r.document(&uri),
                crate::profile::generic(),
                "GET",
            )),
            None => super::events::vendor::registry_document(st.root_profile, &uri)
                .map(|doc| Resource::new(doc, crate::profile::generic(), "GET"))
                .ok_or(ApiError::NotFound(uri)),
        },
    }
}
