//! iLO's RAID configuration (`[hpe]` profiles): the System's
//! `Oem.Hpe.SmartStorageConfig` names the Smart Array's
//! `HpeSmartStorageConfig`, whose settings object takes a PUT of the
//! logical drives wanted (`DataGuard`, `LogicalDrives`: new ones by `Raid`,
//! `CapacityGiB` and `DataDrives`, old ones deleted by `Actions`
//! `LogicalDriveDelete` and `VolumeUniqueIdentifier`), applied at the next
//! reset, as proliantutils' `create_raid_configuration` /
//! `delete_raid_configuration` (Ironic's `ilo5` RAID interface) do, then
//! read back after the reset with `@Redfish.Settings.Messages`.
//!
//! The changes are the storage model's volume changes, staged; a drive
//! passed through to the host (a `None` volume) counts as unassigned, and
//! a logical drive made over it takes its place. A body the controller
//! could not apply is refused whole at the PUT (iLO reports some of these
//! only after the reset); nothing is staged then.

use crate::api::State;
use axum::http::Uri;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::{ilo_only, Ilo};
use crate::api::error::{ApiError, Msg};
use crate::api::json::{self, JsonObject, Resource};
use crate::api::{link, AppState, SysId};
use crate::model::{Change, System};
use crate::storage::{StorageState, Volume, VolumeChange};

const PATH: &str = "smartstorageconfig";
const DATA_GUARD: &[&str] = &["Disabled", "Permissive", "Strict"];

pub(super) fn router() -> Router {
    Router::new()
        .route(&format!("/redfish/v1/Systems/{{id}}/{PATH}"), get(current))
        .route(
            &format!("/redfish/v1/Systems/{{id}}/{PATH}/settings"),
            get(settings).put(put_settings),
        )
}

fn base(sys: &System) -> String {
    format!("/redfish/v1/Systems/{}/{PATH}", sys.id)
}

/// The System's `Oem.Hpe.SmartStorageConfig`.
pub fn system_parts(sys: &System, v: &mut Value) {
    v["Oem"]["Hpe"]["SmartStorageConfig"] = json!([link(&format!("{}/", base(sys)))]);
}

/// A disk's bay as the Smart Array names it (`1I:1:N`, from 1).
fn location(sys: &System, disk: &str) -> String {
    let n = sys
        .disks
        .iter()
        .position(|d| d.name == disk)
        .map_or(0, |i| i + 1);
    format!("1I:1:{n}")
}

fn disk_at<'a>(sys: &'a System, loc: &str) -> Option<&'a str> {
    let n: usize = loc.strip_prefix("1I:1:")?.parse().ok()?;
    sys.disks.get(n.checked_sub(1)?).map(|d| d.name.as_str())
}

/// A volume's WWN-like identifier, stable for the machine and volume.
fn unique_id(sys: &System, v: &Volume) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sys.id.bytes().chain([0]).chain(v.id.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("600508B1001C{h:020X}")
}

fn raid_name(t: &str) -> String {
    format!("Raid{}", t.strip_prefix("RAID").unwrap_or(t))
}

fn raid_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "Raid0" => "RAID0",
        "Raid1" => "RAID1",
        "Raid5" => "RAID5",
        "Raid6" => "RAID6",
        "Raid10" => "RAID10",
        _ => return None,
    })
}

fn logical_json(sys: &System, volumes: &[Volume]) -> Vec<Value> {
    volumes
        .iter()
        .filter(|v| v.raid_type != "None")
        .enumerate()
        .map(|(i, v)| {
            json!({
                "LogicalDriveNumber": i + 1,
                "LogicalDriveName": v.name,
                "Raid": raid_name(&v.raid_type),
                "CapacityGiB": v.capacity_bytes >> 30,
                "DataDrives": v.drives.iter().map(|d| location(sys, d)).collect::<Vec<_>>(),
                "VolumeUniqueIdentifier": unique_id(sys, v),
            })
        })
        .collect()
}

fn config_json(sys: &System, volumes: &[Volume], uri: &str) -> Value {
    json!({
        "@odata.type": "#SmartStorageConfig.v2_0_0.SmartStorageConfig",
        "@odata.id": uri,
        "Id": PATH,
        "Name": "Smart Storage Config",
        "Location": "Slot 0",
        "LocationFormat": "PCISlot",
        "DataGuard": "Disabled",
        "LogicalDrives": logical_json(sys, volumes),
        "PhysicalDrives": sys.disks.iter().map(|d| json!({
            "Location": location(sys, &d.name),
            "LocationFormat": "ControllerPort:Box:Bay",
        })).collect::<Vec<_>>(),
    })
}

/// The volumes once the staged changes apply.
fn projected(s: &StorageState) -> Vec<Volume> {
    let mut p = s.clone();
    for c in std::mem::take(&mut p.pending) {
        p.apply(c);
    }
    p.volumes
}

async fn current(ilo: Ilo) -> Result<Resource, ApiError> {
    let sys = &ilo.sys;
    let b = base(sys);
    let mut v = config_json(sys, &sys.bmc.storage.volumes, &b);
    // What became of the configuration the last start applied: it was
    // checked when it was PUT, so a start applies it whole.
    let messages = match sys.bmc.last_boot {
        Some(_) => json!([{ "MessageId": "SmartStorageMessages.2.0.0.Success" }]),
        None => json!([]),
    };
    v["@Redfish.Settings"] = json!({
        "@odata.type": "#Settings.v1_0_0.Settings",
        "SettingsObject": link(&format!("{b}/settings/")),
        "Messages": messages,
    });
    Ok(Resource::plain(v, "GET"))
}

async fn settings(ilo: Ilo) -> Result<Resource, ApiError> {
    let Ilo { st, sys, .. } = &ilo;
    let allow = if st.core.backend.manages_volumes() {
        "GET, PUT"
    } else {
        "GET"
    };
    let v = config_json(
        sys,
        &projected(&sys.bmc.storage),
        &format!("{}/settings", base(sys)),
    );
    Ok(Resource::plain(v, allow))
}

fn bad(id: &'static str, args: &[&str], path: &str) -> ApiError {
    ApiError::bad(Msg::new(id, args).about(path))
}

/// The staged changes a PUT body asks for, planned against what the
/// controller will hold (every check before anything is staged).
fn plan(sys: &System, body: &Map<String, Value>) -> Result<Vec<VolumeChange>, ApiError> {
    let items = logical_drives(body)?;
    // Planned on a copy that takes each change as it is staged.
    let mut p = Planner {
        sys,
        s: sys.bmc.storage.clone(),
        changes: Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        let o = item.as_object().ok_or_else(|| {
            bad(
                "PropertyValueTypeError",
                &[&json::shown(item), &format!("LogicalDrives/{i}")],
                &format!("LogicalDrives/{i}"),
            )
        })?;
        match o.get("Actions") {
            Some(actions) => p.delete(i, o, actions)?,
            None => p.create(i, o)?,
        }
    }
    Ok(p.changes)
}

/// The body's `LogicalDrives`, once its other properties passed (only
/// `DataGuard`, with one of iLO's values).
fn logical_drives(body: &Map<String, Value>) -> Result<&Vec<Value>, ApiError> {
    for k in body.keys() {
        if !["DataGuard", "LogicalDrives"].contains(&k.as_str()) && !k.starts_with("@odata.") {
            return Err(bad("PropertyUnknown", &[k], k));
        }
    }
    match body.get("DataGuard") {
        None => {}
        Some(Value::String(g)) if DATA_GUARD.contains(&g.as_str()) => {}
        Some(v) => {
            return Err(bad(
                "PropertyValueNotInList",
                &[&json::shown(v), "DataGuard"],
                "DataGuard",
            ))
        }
    }
    match body.get("LogicalDrives") {
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(bad(
            "PropertyValueTypeError",
            &[&json::shown(v), "LogicalDrives"],
            "LogicalDrives",
        )),
        None => Err(ApiError::bad(
            Msg::new("PropertyMissing", &["LogicalDrives"]).about("LogicalDrives"),
        )),
    }
}

/// `LogicalDrives/{i}/{k}`, the path of an item's property.
fn at(i: usize, k: &str) -> String {
    format!("LogicalDrives/{i}/{k}")
}

/// A PUT's items planned one by one on a copy of the storage state that
/// takes each change as it is staged.
struct Planner<'a> {
    sys: &'a System,
    s: StorageState,
    changes: Vec<VolumeChange>,
}

impl Planner<'_> {
    fn stage(&mut self, c: VolumeChange) {
        self.s.pending.push(c.clone());
        self.changes.push(c);
    }

    /// An item with `Actions`: `LogicalDriveDelete` of the logical drive
    /// its `VolumeUniqueIdentifier` names.
    fn delete(
        &mut self,
        i: usize,
        o: &Map<String, Value>,
        actions: &Value,
    ) -> Result<(), ApiError> {
        let delete = actions.as_array().is_some_and(|a| {
            a.len() == 1 && a[0].get("Action") == Some(&json!("LogicalDriveDelete"))
        });
        if !delete {
            return Err(bad(
                "PropertyValueNotInList",
                &[&json::shown(actions), &at(i, "Actions")],
                &at(i, "Actions"),
            ));
        }
        let vuid = o
            .get("VolumeUniqueIdentifier")
            .and_then(Value::as_str)
            .unwrap_or("");
        let v = projected(&self.s)
            .into_iter()
            .find(|v| v.raid_type != "None" && unique_id(self.sys, v) == vuid)
            .ok_or_else(|| {
                bad(
                    "PropertyValueNotInList",
                    &[vuid, &at(i, "VolumeUniqueIdentifier")],
                    &at(i, "VolumeUniqueIdentifier"),
                )
            })?;
        self.stage(VolumeChange::Delete(v.id));
        Ok(())
    }

    /// A new logical drive: its RAID level, capacity, name and drives; the
    /// pass-through volumes of those drives go first.
    fn create(&mut self, i: usize, o: &Map<String, Value>) -> Result<(), ApiError> {
        let sys = self.sys;
        for k in o.keys() {
            if !["Raid", "CapacityGiB", "DataDrives", "LogicalDriveName"].contains(&k.as_str()) {
                return Err(bad("PropertyUnknown", &[&at(i, k)], &at(i, k)));
            }
        }
        let raid = o.get("Raid").and_then(Value::as_str).unwrap_or("");
        let raid = raid_type(raid).ok_or_else(|| {
            bad(
                "PropertyValueNotInList",
                &[raid, &at(i, "Raid")],
                &at(i, "Raid"),
            )
        })?;
        let capacity = match o.get("CapacityGiB").and_then(Value::as_i64) {
            None | Some(-1) => None,
            Some(g) if g > 0 => Some((g as u64) << 30),
            Some(g) => {
                return Err(bad(
                    "PropertyValueOutOfRange",
                    &[&g.to_string(), &at(i, "CapacityGiB")],
                    &at(i, "CapacityGiB"),
                ))
            }
        };
        let name = o.get("LogicalDriveName").and_then(Value::as_str);
        let volumes = projected(&self.s);
        let drives = data_drives(sys, &volumes, i, o)?;
        for v in volumes
            .iter()
            .filter(|v| v.raid_type == "None" && v.drives.iter().any(|d| drives.contains(d)))
        {
            self.stage(VolumeChange::Delete(v.id.clone()));
        }
        let v = self
            .s
            .plan(&sys.disks, raid, &drives, capacity, name, true)
            .map_err(|e| {
                tracing::info!(system = %sys.name, why = %e, "logical drive refused");
                bad(
                    "PropertyValueConflict",
                    &[&at(i, "DataDrives"), &at(i, "Raid")],
                    &at(i, "DataDrives"),
                )
            })?;
        self.stage(VolumeChange::Create(v));
        Ok(())
    }
}

/// An item's `DataDrives`: locations (each an unassigned drive), or a
/// `DataDriveCount` of the first unassigned drives. Unassigned: in no
/// logical drive once the staged changes (`volumes`) apply; a drive
/// passed through counts as unassigned.
fn data_drives(
    sys: &System,
    volumes: &[Volume],
    i: usize,
    o: &Map<String, Value>,
) -> Result<Vec<String>, ApiError> {
    let unassigned = |d: &str| {
        !volumes
            .iter()
            .any(|v| v.raid_type != "None" && v.drives.iter().any(|x| x == d))
    };
    Ok(match o.get("DataDrives") {
        Some(Value::Array(locs)) => locs
            .iter()
            .map(|l| {
                let loc = l.as_str().unwrap_or("");
                disk_at(sys, loc)
                    .filter(|d| unassigned(d))
                    .map(str::to_string)
                    .ok_or_else(|| {
                        bad(
                            "PropertyValueNotInList",
                            &[loc, &at(i, "DataDrives")],
                            &at(i, "DataDrives"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Object(want)) => {
            let n = want
                .get("DataDriveCount")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            let free: Vec<String> = sys
                .disks
                .iter()
                .map(|d| d.name.clone())
                .filter(|d| unassigned(d))
                .take(n)
                .collect();
            if n == 0 || free.len() < n {
                return Err(bad(
                    "PropertyValueOutOfRange",
                    &[&n.to_string(), &at(i, "DataDrives/DataDriveCount")],
                    &at(i, "DataDrives/DataDriveCount"),
                ));
            }
            free
        }
        _ => {
            return Err(ApiError::bad(
                Msg::new("PropertyMissing", &[&at(i, "DataDrives")]).about(&at(i, "DataDrives")),
            ))
        }
    })
}

async fn put_settings(
    State(st): State<AppState>,
    SysId(id): SysId,
    uri: Uri,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    let locked = st.locked(&id).await?;
    let sys = &locked.sys;
    ilo_only(&st, sys, uri.path())?;
    if !st.core.backend.manages_volumes() {
        return Err(ApiError::MethodNotAllowed);
    }
    let changes = plan(sys, &body)?;
    tracing::info!(system = %sys.name, changes = changes.len(), "SmartStorageConfig staged");
    let changes = changes
        .into_iter()
        .map(|change| Change::Volume {
            change,
            staged: true,
        })
        .collect();
    st.core.backend.apply(&sys.id, changes).await?;
    Ok(json::no_content())
}
