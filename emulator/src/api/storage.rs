//! Storage below a system: the controller (with its RAID capabilities), its
//! Drives, and its Volumes, which a client creates (POST) and deletes at
//! once or at the next reset (`@Redfish.OperationApplyTime`), as Ironic's
//! RAID interface does. Creation and deletion exist only where the backend
//! manages volumes (the fake); elsewhere volumes are read-only.

use crate::api::State;
use axum::extract::Path;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::input::{self, Rule};
use super::json::{self, JsonObject, Resource};
use super::system_parts::{base, not_found, OK};
use super::{collection, created, link, AppState, Sys};
use crate::api::error::{ApiError, Msg};
use crate::api::task_store::{Claim, Staged};
use crate::backend::{BackendError, BoxFuture};
use crate::model::{Change, PowerState, System};
use crate::profile::StorageIds;
use crate::storage::{DriveUse, Volume, VolumeChange, VolumeError, RAID_TYPES};

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Systems/{id}/Storage", get(storages))
        .route("/redfish/v1/Systems/{id}/Storage/{ctl}", get(storage))
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Controllers",
            get(controllers),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Controllers/{c}",
            get(controller),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Drives/{drive}",
            get(drive),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Volumes",
            get(volumes).post(create_volume),
        )
        .route(
            "/redfish/v1/Systems/{id}/Storage/{ctl}/Volumes/{vol}",
            get(volume).delete(delete_volume),
        )
}

const APPLY_TIME: &str = "@Redfish.OperationApplyTime";
/// The longest volume Name.
const NAME_MAX: usize = 64;

/// A system's storage as its profile names it (`inventory.storage_ids`).
pub(super) struct Names<'a> {
    pub ids: StorageIds,
    pub sys: &'a System,
}

impl<'a> Names<'a> {
    pub fn of(st: &AppState, sys: &'a System) -> Names<'a> {
        Names {
            ids: st.profile(sys).inventory.storage_ids,
            sys,
        }
    }

    /// The Storage resource's path.
    pub fn storage(&self) -> String {
        format!("{}/Storage/{}", base(self.sys), self.ids.storage())
    }

    /// The Storage Id in a path is this system's, or the path is not found.
    pub fn check(&self, ctl: &str, uri: &Uri) -> Result<(), ApiError> {
        if ctl == self.ids.storage() {
            Ok(())
        } else {
            Err(not_found(uri))
        }
    }

    pub fn drive_id(&self, name: &str) -> String {
        let i = self
            .sys
            .disks
            .iter()
            .position(|d| d.name == name)
            .unwrap_or(0);
        self.ids.drive(i, name)
    }

    /// The drive whose Id is `id`.
    pub fn drive_name(&self, id: &str) -> Option<&'a str> {
        self.sys
            .disks
            .iter()
            .enumerate()
            .find(|(i, d)| self.ids.drive(*i, &d.name) == id)
            .map(|(_, d)| d.name.as_str())
    }

    pub fn drive_uri(&self, name: &str) -> String {
        format!("{}/Drives/{}", self.storage(), self.drive_id(name))
    }

    pub fn volume_id(&self, v: &Volume) -> String {
        self.ids.volume(v, &self.sys.disks)
    }

    pub fn volume_uri(&self, v: &Volume) -> String {
        format!("{}/Volumes/{}", self.storage(), self.volume_id(v))
    }

    /// The volume (its Shoal Id) whose Id is `id`, now or once the staged
    /// changes apply.
    pub fn volume_of(&self, id: &str) -> Option<String> {
        let st = &self.sys.bmc.storage;
        let staged = st.pending.iter().filter_map(|c| match c {
            VolumeChange::Create(v) => Some(v),
            _ => None,
        });
        st.volumes
            .iter()
            .chain(staged)
            .find(|v| self.volume_id(v) == id)
            .map(|v| v.id.clone())
    }
}

/// Where creating and deleting volumes is offered: the apply times.
fn apply_time_support(st: &AppState) -> Option<Value> {
    st.core.backend.manages_volumes().then(|| {
        json!({
            "@odata.type": "#Settings.v1_4_0.OperationApplyTimeSupport",
            "SupportedValues": ["Immediate", "OnReset"],
        })
    })
}

async fn storages(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let b = format!("{}/Storage", base(&sys));
    Ok(Resource::plain(
        collection(
            "StorageCollection",
            &b,
            "Storage Collection",
            [Names::of(&st, &sys).storage()],
        ),
        "GET",
    ))
}

/// What the controller supports: RAID where the backend manages volumes
/// and the controller is in RAID mode.
fn raid_types(st: &AppState, sys: &System) -> &'static [&'static str] {
    let raid_mode = sys.bmc.storage.mode == crate::storage::ControllerMode::Raid;
    if st.core.backend.manages_volumes() && raid_mode {
        RAID_TYPES
    } else {
        &["None"]
    }
}

async fn storage(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = names.storage();
    let drives: Vec<Value> = sys
        .disks
        .iter()
        .map(|d| link(&names.drive_uri(&d.name)))
        .collect();
    let mut v = json!({
        "@odata.type": "#Storage.v1_15_0.Storage",
        "@odata.id": b,
        "Id": names.ids.storage(),
        "Name": "Storage Subsystem",
        "Drives@odata.count": drives.len(),
        "Drives": drives,
        "Volumes": link(&format!("{b}/Volumes")),
        "Controllers": link(&format!("{b}/Controllers")),
        "Status": OK(),
    });
    if st.profile(&sys).dell.is_some() {
        super::dell::raid::storage_parts(&names, raid_types(&st, &sys), &mut v);
    }
    Ok(Resource::plain(v, "GET"))
}

async fn controllers(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = format!("{}/Controllers", names.storage());
    Ok(Resource::plain(
        collection(
            "StorageControllerCollection",
            &b,
            "Storage Controller Collection",
            [format!("{b}/{}", names.ids.controller())],
        ),
        "GET",
    ))
}

async fn controller(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, c)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    if c != names.ids.controller() {
        return Err(not_found(&uri));
    }
    let mut v = json!({
        "@odata.type": "#StorageController.v1_7_0.StorageController",
        "@odata.id": format!("{}/Controllers/{c}", names.storage()),
        "Id": c,
        "Name": "Shoal RAID Controller",
        "Manufacturer": "Shoal",
        "Model": "Virtual RAID Controller",
        "SupportedRAIDTypes": raid_types(&st, &sys),
        "SupportedControllerProtocols": ["PCIe"],
        "SupportedDeviceProtocols": ["SATA"],
        "Status": OK(),
    });
    if st.profile(&sys).dell.is_some() {
        super::dell::raid::controller_parts(&st, &sys, &names, &mut v);
    }
    Ok(Resource::plain(v, "GET"))
}

async fn drive(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, drive)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let name = names.drive_name(&drive).ok_or_else(|| not_found(&uri))?;
    let d = sys
        .disks
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| not_found(&uri))?;
    let volumes: Vec<Value> = sys
        .bmc
        .storage
        .volumes
        .iter()
        .filter(|v| v.drives.contains(&d.name))
        .map(|v| link(&names.volume_uri(v)))
        .collect();
    let mut v = json!({
        "@odata.type": "#Drive.v1_17_0.Drive",
        "@odata.id": names.drive_uri(&d.name),
        "Id": drive,
        "Name": d.name,
        "CapacityBytes": d.capacity_bytes,
        "MediaType": "SSD",
        "Protocol": "SATA",
        "Links": { "Volumes": volumes },
        "Status": OK(),
    });
    if st.profile(&sys).dell.is_some() {
        let status = match sys.bmc.storage.drive_use(&d.name) {
            DriveUse::NonRaid(_) => "NonRAID",
            DriveUse::Ready => "Ready",
            DriveUse::Online(_) => "Online",
        };
        v["Oem"] = json!({ "Dell": {
            "@odata.type": "#DellOem.v1_3_0.DellOemResources",
            "DellPhysicalDisk": {
            "@odata.type": "#DellPhysicalDisk.v1_6_0.DellPhysicalDisk",
            "Id": drive,
            "RaidStatus": status,
        }}});
    }
    Ok(Resource::plain(v, "GET"))
}

async fn volumes(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let b = format!("{}/Volumes", names.storage());
    let members = sys.bmc.storage.volumes.iter().map(|v| names.volume_uri(v));
    let mut body = collection("VolumeCollection", &b, "Volume Collection", members);
    let allow = match apply_time_support(&st) {
        Some(support) => {
            body["@Redfish.OperationApplyTimeSupport"] = support;
            "GET, POST"
        }
        None => "GET",
    };
    Ok(Resource::plain(body, allow))
}

fn volume_json(names: &Names, v: &Volume) -> Value {
    let mut body = json!({
        "@odata.type": "#Volume.v1_9_0.Volume",
        "@odata.id": names.volume_uri(v),
        "Id": names.volume_id(v),
        "Name": v.name,
        "CapacityBytes": v.capacity_bytes,
        "RAIDType": v.raid_type,
        "Encrypted": false,
        "Links": {
            "Drives": v.drives.iter().map(|d| link(&names.drive_uri(d))).collect::<Vec<_>>(),
        },
        "Status": OK(),
    });
    // Dell: a non-RAID drive is a raw device, with no RAID type.
    if names.ids == StorageIds::DellFqdd && v.raid_type == "None" {
        body["RAIDType"] = Value::Null;
        body["VolumeType"] = json!("RawDevice");
    }
    body
}

async fn volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, vol)): Path<(String, String, String)>,
    uri: Uri,
) -> Result<Resource, ApiError> {
    let names = Names::of(&st, &sys);
    names.check(&ctl, &uri)?;
    let v = sys
        .bmc
        .storage
        .volumes
        .iter()
        .find(|v| names.volume_id(v) == vol)
        .ok_or_else(|| not_found(&uri))?;
    let mut body = volume_json(&names, v);
    let allow = match apply_time_support(&st) {
        Some(support) => {
            body["@Redfish.OperationApplyTimeSupport"] = support;
            "GET, DELETE"
        }
        None => "GET",
    };
    Ok(Resource::new(body, st.profile(&sys), allow))
}

/// `@Redfish.OperationApplyTime`: whether the change waits for a reset.
fn staged(body: &Map<String, Value>) -> Result<bool, ApiError> {
    match body.get(APPLY_TIME) {
        None => Ok(false),
        Some(Value::String(s)) if s == "Immediate" => Ok(false),
        Some(Value::String(s)) if s == "OnReset" => Ok(true),
        Some(Value::String(s)) => Err(ApiError::bad(
            Msg::new("PropertyValueNotInList", &[&input::echo(s), APPLY_TIME]).about(APPLY_TIME),
        )),
        Some(other) => Err(ApiError::bad(
            Msg::new("PropertyValueTypeError", &[&json::shown(other), APPLY_TIME])
                .about(APPLY_TIME),
        )),
    }
}

fn volume_error(e: VolumeError) -> ApiError {
    let bad =
        |id: &'static str, args: &[&str], prop: &str| ApiError::bad(Msg::new(id, args).about(prop));
    match e {
        VolumeError::RaidType(t) => bad("PropertyValueNotInList", &[&t, "RAIDType"], "RAIDType"),
        VolumeError::NoDrive(d) => bad(
            "PropertyValueNotInList",
            &[&d, "Links/Drives"],
            "Links/Drives",
        ),
        VolumeError::Duplicate(d) => bad(
            "PropertyValueFormatError",
            &[&d, "Links/Drives"],
            "Links/Drives",
        ),
        VolumeError::DriveCount { .. } => bad(
            "PropertyValueConflict",
            &["Links/Drives", "RAIDType"],
            "Links/Drives",
        ),
        VolumeError::Capacity { asked, .. } => bad(
            "PropertyValueOutOfRange",
            &[&asked.to_string(), "CapacityBytes"],
            "CapacityBytes",
        ),
        e @ VolumeError::InUse { .. } => ApiError::Conflict(e.to_string()),
        VolumeError::NoVolume(v) => ApiError::NotFound(v),
        e @ (VolumeError::Mode(_)
        | VolumeError::NotNonRaid(_)
        | VolumeError::NotReady(_)
        | VolumeError::Staged(_)) => ApiError::Conflict(e.to_string()),
    }
}

/// The deprecated `VolumeType` some clients still send, as a RAID type.
fn raid_of_volume_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "RawDevice" => "None",
        "NonRedundant" => "RAID0",
        "Mirrored" => "RAID1",
        "StripedWithParity" => "RAID5",
        "SpannedMirrors" => "RAID10",
        _ => return None,
    })
}

/// The drive names a `Links/Drives` array names (URIs below this storage).
fn drive_names(names: &Names, links: &Value) -> Result<Vec<String>, ApiError> {
    let bad = |v: &Value| {
        ApiError::bad(
            Msg::new(
                "PropertyValueFormatError",
                &[&json::shown(v), "Links/Drives"],
            )
            .about("Links/Drives"),
        )
    };
    let prefix = format!("{}/Drives/", names.storage());
    let items = links.as_array().ok_or_else(|| bad(links))?;
    items
        .iter()
        .map(|item| {
            let uri = item
                .get("@odata.id")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(item))?;
            match uri
                .strip_prefix(&prefix)
                .and_then(|id| names.drive_name(id))
            {
                Some(name) => Ok(name.to_string()),
                _ => Err(ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[uri, "Links/Drives"])
                        .about("Links/Drives"),
                )),
            }
        })
        .collect()
}

/// The key a volume's task holds: one staged change per volume.
fn volume_key(sys: &System, volume: &str) -> String {
    format!("volume:{}:{volume}", sys.id)
}

/// The task that ends once a staged change has been applied (at a start).
/// It looks at the machine again only when a reset wakes it.
fn staged_task(
    st: &AppState,
    claim: Claim,
    sys: &System,
    target: &str,
    change: VolumeChange,
) -> Response {
    let backend = st.core.backend.clone();
    let id = sys.id.clone();
    let check = move || {
        let (backend, id, change) = (backend.clone(), id.clone(), change.clone());
        let look: BoxFuture<Result<Staged, BackendError>> = Box::pin(async move {
            let now = backend.system(&id).await?;
            Ok(if !now.bmc.storage.pending.contains(&change) {
                Staged::Applied
            } else if matches!(now.power, PowerState::PoweringOn | PowerState::PoweringOff) {
                Staged::Settling
            } else {
                Staged::Waiting
            })
        });
        look
    };
    let task = st
        .tasks
        .spawn_staged(claim, "Volume change at the next reset", target, check);
    match st.tasks.get(&task) {
        Some(t) => super::tasks::accepted(&t),
        None => ApiError::Internal("task vanished".into()).into_response(),
    }
}

async fn create_volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl)): Path<(String, String)>,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    Names::of(&st, &sys).check(&ctl, &uri)?;
    if !st.core.backend.manages_volumes() {
        return Err(ApiError::MethodNotAllowed);
    }
    let mut problems = Vec::new();
    for k in body.keys() {
        let known = [
            "RAIDType",
            "VolumeType",
            "CapacityBytes",
            "Name",
            "Encrypted",
            "Links",
            APPLY_TIME,
        ];
        if !known.contains(&k.as_str()) && !k.starts_with("@odata.") {
            problems.push(Msg::new("PropertyUnknown", &[k]).about(k));
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::BadRequest(problems));
    }
    let raid = match (body.get("RAIDType"), body.get("VolumeType")) {
        (Some(Value::String(r)), _) => r.clone(),
        (None, Some(Value::String(t))) => raid_of_volume_type(t)
            .ok_or_else(|| {
                ApiError::bad(
                    Msg::new("PropertyValueNotInList", &[t, "VolumeType"]).about("VolumeType"),
                )
            })?
            .to_string(),
        (Some(v), _) | (None, Some(v)) => {
            return Err(ApiError::bad(
                Msg::new("PropertyValueTypeError", &[&json::shown(v), "RAIDType"])
                    .about("RAIDType"),
            ))
        }
        (None, None) => {
            return Err(ApiError::bad(Msg::new(
                "CreateFailedMissingReqProperties",
                &["RAIDType"],
            )))
        }
    };
    let links = body
        .get("Links")
        .and_then(|l| l.get("Drives"))
        .ok_or_else(|| {
            ApiError::bad(Msg::new(
                "CreateFailedMissingReqProperties",
                &["Links/Drives"],
            ))
        })?;
    let capacity = match body.get("CapacityBytes") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            ApiError::bad(
                Msg::new(
                    "PropertyValueTypeError",
                    &[&json::shown(v), "CapacityBytes"],
                )
                .about("CapacityBytes"),
            )
        })?),
    };
    let name = match body.get("Name") {
        None => None,
        Some(Value::String(n)) if !n.is_empty() => {
            input::property("Name", n, Rule::Text { max: NAME_MAX }).map_err(ApiError::bad)?;
            Some(n.as_str())
        }
        Some(v) => {
            return Err(ApiError::bad(
                Msg::new("PropertyValueFormatError", &[&json::shown(v), "Name"]).about("Name"),
            ))
        }
    };
    if let Some(e) = body.get("Encrypted") {
        if e != &Value::Bool(false) {
            return Err(ApiError::bad(
                Msg::new("PropertyValueNotInList", &[&json::shown(e), "Encrypted"])
                    .about("Encrypted"),
            ));
        }
    }
    let later = staged(&body)?;
    // Planned and applied under the system's lock: no other change of the
    // volumes comes between the check and the write.
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let names = Names::of(&st, sys);
    let drives = drive_names(&names, links)?;
    let v = sys
        .bmc
        .storage
        .plan(&sys.disks, &raid, &drives, capacity, name, later)
        .map_err(volume_error)?;
    let location = names.volume_uri(&v);
    // The task's place is taken before anything changes.
    let claim = match later {
        true => Some(st.tasks.claim(&volume_key(sys, &v.id))?),
        false => None,
    };
    tracing::info!(system = %sys.name, volume = %v.id, raid = %v.raid_type, staged = later, "create volume");
    let change = VolumeChange::Create(v.clone());
    let volume = Change::Volume {
        change: change.clone(),
        staged: later,
    };
    st.core.backend.apply(&sys.id, vec![volume]).await?;
    if let Some(claim) = claim {
        return Ok(staged_task(&st, claim, sys, &location, change));
    }
    Ok(created(&location, volume_json(&names, &v)))
}

async fn delete_volume(
    State(st): State<AppState>,
    Sys(sys): Sys,
    Path((_, ctl, vol)): Path<(String, String, String)>,
    uri: Uri,
    headers: axum::http::HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    Names::of(&st, &sys).check(&ctl, &uri)?;
    if !st.core.backend.manages_volumes() {
        return Err(ApiError::MethodNotAllowed);
    }
    if let Some(k) = body
        .keys()
        .find(|k| *k != APPLY_TIME && !k.starts_with("@odata."))
    {
        return Err(ApiError::bad(Msg::new("PropertyUnknown", &[k]).about(k)));
    }
    let later = staged(&body)?;
    let locked = st.locked(&sys.id).await?;
    let sys = &locked.sys;
    let names = Names::of(&st, sys);
    let vol = names.volume_of(&vol).ok_or_else(|| not_found(&uri))?;
    if let Some(v) = sys.bmc.storage.volumes.iter().find(|v| v.id == vol) {
        let mut current = volume_json(&names, v);
        if let Some(support) = apply_time_support(&st) {
            current["@Redfish.OperationApplyTimeSupport"] = support;
        }
        json::check_if_match(&headers, &current, locked.profile)?;
    }
    if sys.bmc.storage.has_pending(&vol) {
        // Its creation or deletion waits for the reset: like a controller
        // with a scheduled configuration job, it takes no other change.
        return Err(ApiError::Conflict(format!(
            "volume {vol} of {} has a change staged for the next reset",
            sys.name
        )));
    }
    sys.bmc
        .storage
        .check_delete(&vol)
        .map_err(|_| not_found(&uri))?;
    let claim = match later {
        true => Some(st.tasks.claim(&volume_key(sys, &vol))?),
        false => None,
    };
    tracing::info!(system = %sys.name, volume = %vol, staged = later, "delete volume");
    let change = VolumeChange::Delete(vol);
    let volume = Change::Volume {
        change: change.clone(),
        staged: later,
    };
    st.core.backend.apply(&sys.id, vec![volume]).await?;
    if let Some(claim) = claim {
        return Ok(staged_task(&st, claim, sys, uri.path(), change));
    }
    Ok(json::no_content())
}
