//! `FirmwareInventory`: a member per component of each system (its BIOS,
//! its BMC, its network adapter), showing what the core says it runs, and
//! the targets a SimpleUpdate may name.

use axum::extract::Path;
use axum::http::Uri;
use serde_json::{json, Value};

use crate::api::error::ApiError;
use crate::api::json::Resource;
use crate::api::{collection, link, AppState, State};
use crate::bmc::firmware::{components, installed};
use crate::firmware::Component;
use crate::model::System;

pub const INVENTORY: &str = "/redfish/v1/UpdateService/FirmwareInventory";

/// A member's Id: the component's name, prefixed by the system's Id where
/// the service serves more than one.
pub fn member_id(sys: &System, shared: bool, c: Component) -> String {
    let name = match c {
        Component::Bios => "BIOS",
        Component::Bmc => "BMC",
        Component::Nic => "NIC",
    };
    if shared {
        format!("{}-{name}", sys.id)
    } else {
        name.to_string()
    }
}

/// The systems of this service, and whether there are several.
pub async fn systems(st: &AppState) -> Result<(Vec<System>, bool), ApiError> {
    let refs = st.core.backend.systems().await?;
    let shared = refs.len() > 1;
    let mut all = Vec::with_capacity(refs.len());
    for r in refs {
        all.push(st.core.backend.system(&r.id).await?);
    }
    Ok((all, shared))
}

/// The one system `path` can be about, read alone (a fleet's other
/// systems are not): the service's only system, else the one whose Id
/// the path carries (`/redfish/v1/{Systems,Managers,Chassis}/{id}/…`, an
/// inventory member `{id}-{NAME}`). Also whether the service has several.
pub async fn system_for(st: &AppState, path: &str) -> Result<(Option<System>, bool), ApiError> {
    let refs = st.core.backend.systems().await?;
    let shared = refs.len() > 1;
    let found = match shared {
        false => refs.into_iter().next(),
        true => match id_in(path) {
            Some(id) => st.core.backend.find(id).await?,
            None => None,
        },
    };
    Ok(match found {
        Some(r) => (Some(st.core.backend.system(&r.id).await?), shared),
        None => (None, shared),
    })
}

/// The system Id a path names, on a service of several systems.
fn id_in(path: &str) -> Option<&str> {
    let path = path.find("/redfish/v1/").map_or(path, |i| &path[i..]);
    if let Some(member) = path.strip_prefix(&format!("{INVENTORY}/")) {
        return member.rsplit_once('-').map(|(id, _)| id);
    }
    ["Systems", "Managers", "Chassis"].iter().find_map(|c| {
        path.strip_prefix(&format!("/redfish/v1/{c}/"))
            .and_then(|rest| rest.split('/').next())
            .filter(|id| !id.is_empty())
    })
}

/// The collection: every system's components, then the images uploaded
/// and not yet installed.
pub async fn list_json(st: &AppState) -> Result<Value, ApiError> {
    let (all, shared) = systems(st).await?;
    let members = all
        .iter()
        .flat_map(|sys| {
            components(sys).map(move |c| format!("{INVENTORY}/{}", member_id(sys, shared, c)))
        })
        .chain(super::store::members(st));
    Ok(collection(
        "SoftwareInventoryCollection",
        INVENTORY,
        "Firmware Inventory Collection",
        members.collect::<Vec<_>>(),
    ))
}

/// The collection with its ETag (what an upload's If-Match is checked
/// against), taking uploads where the BMC does.
pub async fn list(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let allow = match st.root_profile.update.http_push_stores {
        true => "GET, POST",
        false => "GET",
    };
    Ok(Resource::new(list_json(&st).await?, st.root_profile, allow))
}

pub async fn member(
    State(st): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    if let Some(u) = st.uploads.get(&id) {
        return Ok(Resource::plain(
            super::store::member_json(&u),
            "GET, DELETE",
        ));
    }
    let (sys, shared) = system_for(&st, uri.path()).await?;
    let (sys, c) = sys
        .and_then(|sys| {
            let c = components(&sys).find(|c| member_id(&sys, shared, *c) == id)?;
            Some((sys, c))
        })
        .ok_or_else(|| ApiError::NotFound(uri.path().to_string()))?;
    Ok(Resource::plain(member_json(&st, &sys, shared, c), "GET"))
}

/// The member of `c` of `sys`.
fn member_json(st: &AppState, sys: &System, shared: bool, c: Component) -> Value {
    let profile = st.profile(sys);
    let id = member_id(sys, shared, c);
    let now = installed(sys, profile, c);
    let (name, related) = match c {
        Component::Bios => ("BIOS", format!("/redfish/v1/Systems/{}", sys.id)),
        Component::Bmc => (
            "BMC firmware",
            format!("/redfish/v1/Managers/{}", st.manager_id(sys)),
        ),
        Component::Nic => (
            "Network adapter firmware",
            crate::api::network_adapters::adapter_uri(st, sys),
        ),
    };
    let mut v = json!({
        "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory",
        "@odata.id": format!("{INVENTORY}/{id}"),
        "Id": id,
        "Name": name,
        "Version": now.version,
        "Updateable": true,
        "SoftwareId": c.as_str().to_ascii_uppercase(),
        "Manufacturer": profile.manufacturer,
        "Status": { "State": "Enabled", "Health": "OK" },
        "RelatedItem": [link(&related)],
        "RelatedItem@odata.count": 1,
    });
    if let Some(d) = &now.release_date {
        v["ReleaseDate"] = json!(format!("{d}T00:00:00Z"));
    }
    v
}

/// What a SimpleUpdate target names: a system, and the component when the
/// target is one (a Manager is its BMC, a network adapter its NIC, an
/// inventory member its component; a System or its Bios: the image says).
pub async fn resolve_target(
    st: &AppState,
    target: &str,
) -> Result<Option<(System, Option<Component>)>, ApiError> {
    let path = target.trim_end_matches('/');
    let path = path.find("/redfish/v1/").map_or(path, |i| &path[i..]);
    if let Some(replay) = &st.replay {
        // A replayed capture's targets are its own resources.
        let Some((id, c)) = replay.update_target(path) else {
            return Ok(None);
        };
        return Ok(Some((st.core.backend.system(&id).await?, c)));
    }
    let (Some(sys), shared) = system_for(st, path).await? else {
        return Ok(None);
    };
    let rest = |prefix: &str| path.strip_prefix(prefix);
    let system = format!("/redfish/v1/Systems/{}", sys.id);
    let found = if path == system || rest(&system) == Some("/Bios") {
        Some(None)
    } else if path == format!("/redfish/v1/Managers/{}", st.manager_id(&sys)) {
        Some(Some(Component::Bmc))
    } else if !sys.nics.is_empty() && path == crate::api::network_adapters::adapter_uri(st, &sys) {
        Some(Some(Component::Nic))
    } else {
        rest(&format!("{INVENTORY}/"))
            .and_then(|m| components(&sys).find(|c| member_id(&sys, shared, *c) == m))
            .map(Some)
    };
    Ok(found.map(|c| (sys, c)))
}
