//! Chassis: one per system, with the legacy Power and Thermal resources and
//! the newer EnvironmentMetrics. Readings are plausible constants that
//! follow the power state (a powered-off machine draws standby power).
//! Enclosures (`api/enclosure`) are served at the same routes, listed
//! first.

use crate::api::State;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use super::boot_rules::indicator_asked;
use super::enclosure::{self, ChassisOf, ChassisPatch};
use super::json::Resource;
use super::patch::{writable, Kind};
use super::systems::serial;
use super::{collection, link, AppState, Sys};
use crate::api::error::ApiError;
use crate::model::{Change, IndicatorLed, PowerState, System, SystemSettings};
use crate::profile::Profile;

pub fn router() -> Router {
    Router::new()
        .route("/redfish/v1/Chassis", get(list))
        .route(
            "/redfish/v1/Chassis/{id}",
            get(chassis).patch(patch_chassis),
        )
        .route("/redfish/v1/Chassis/{id}/Power", get(power))
        .route("/redfish/v1/Chassis/{id}/Thermal", get(thermal))
        .route(
            "/redfish/v1/Chassis/{id}/EnvironmentMetrics",
            get(environment),
        )
}

async fn list(State(st): State<AppState>) -> Result<Resource, ApiError> {
    let own = st.core.backend.systems().await?.into_iter().map(|s| {
        format!(
            "/redfish/v1/Chassis/{}",
            st.fixed.as_ref().map_or(&s.id, |f| &f.chassis)
        )
    });
    let members = st.enclosures.iter().map(enclosure::path).chain(own);
    Ok(Resource::plain(
        collection(
            "ChassisCollection",
            "/redfish/v1/Chassis",
            "Chassis Collection",
            members,
        ),
        "GET",
    ))
}

fn chassis_json(st: &AppState, sys: &System, profile: &Profile) -> Value {
    let base = format!("/redfish/v1/Chassis/{}", st.chassis_id(sys));
    let mut v = json!({
        "@odata.type": "#Chassis.v1_25_0.Chassis",
        "@odata.id": base,
        "Id": st.chassis_id(sys),
        "Name": format!("Chassis of {}", sys.name),
        "ChassisType": "RackMount",
        "Manufacturer": profile.manufacturer,
        "Model": profile.model,
        "SerialNumber": serial(sys),
        "PowerState": sys.power.as_str(),
        "IndicatorLED": sys.bmc.indicator.as_str(),
        "LocationIndicatorActive": sys.bmc.indicator != IndicatorLed::Off,
        "Status": { "State": "Enabled", "Health": "OK" },
        "Power": link(&format!("{base}/Power")),
        "Thermal": link(&format!("{base}/Thermal")),
        "EnvironmentMetrics": link(&format!("{base}/EnvironmentMetrics")),
        "Links": {
            "ComputerSystems": [link(&format!("/redfish/v1/Systems/{}", sys.id))],
            "ManagedBy": [link(&format!("/redfish/v1/Managers/{}", st.manager_id(sys)))],
        },
    });
    if let Some(e) = st.enclosures.first() {
        v["Links"]["ContainedBy"] = link(&enclosure::path(e));
    }
    if st.features.full() {
        v["NetworkAdapters"] = link(&format!("{base}/NetworkAdapters"));
    }
    super::vendor::chassis_parts(st, sys, profile, &mut v);
    v
}

async fn chassis(State(st): State<AppState>, of: ChassisOf) -> Result<Resource, ApiError> {
    let sys = match of {
        ChassisOf::System(sys) => *sys,
        ChassisOf::Enclosure(i) => {
            let systems = enclosure::held(&st, i).await?;
            return Ok(Resource::new(
                enclosure::render(&st, i, &systems),
                st.root_profile,
                "GET, PATCH",
            ));
        }
    };
    let profile = st.profile(&sys);
    Ok(Resource::new(
        chassis_json(&st, &sys, profile),
        profile,
        "GET, PATCH",
    ))
}

/// The properties a Chassis PATCH may set: its indicator LED, either way.
fn led_fields() -> [super::patch::Writable; 2] {
    [
        writable(
            "IndicatorLED",
            Kind::Enum(IndicatorLed::ALL.iter().map(|e| e.as_str()).collect()),
        ),
        writable("LocationIndicatorActive", Kind::Bool),
    ]
}

async fn patch_chassis(
    State(st): State<AppState>,
    req: ChassisPatch,
) -> Result<Resource, ApiError> {
    let req = match req {
        ChassisPatch::System(req) => req,
        ChassisPatch::Enclosure {
            index,
            headers,
            body,
        } => return patch_enclosure(&st, index, &headers, &body).await,
    };
    let p = st
        .begin_patch(&req, |sys, profile| chassis_json(&st, sys, profile))
        .await?
        .validated(&req.body, &led_fields())?;
    let (sys, profile) = (&p.target, p.profile);
    let settings = SystemSettings {
        indicator: indicator_asked(&req.body)?,
        ..Default::default()
    };
    let sys = st
        .core
        .backend
        .apply(&sys.id, vec![Change::Settings(settings)])
        .await?;
    Ok(Resource::new(
        chassis_json(&st, &sys, profile),
        profile,
        "GET, PATCH",
    ))
}

/// An enclosure's LED: checked (If-Match, the body) under its own lock,
/// then set.
async fn patch_enclosure(
    st: &AppState,
    index: usize,
    headers: &axum::http::HeaderMap,
    body: &serde_json::Map<String, Value>,
) -> Result<Resource, ApiError> {
    let systems = enclosure::held(st, index).await?;
    let e = &st.enclosures[index];
    let p = st
        .begin_patch_keyed(
            &format!("enclosure {}", e.uuid),
            headers,
            st.root_profile,
            || Ok(((), enclosure::render(st, index, &systems))),
        )
        .await?
        .validated(body, &led_fields())?;
    if let Some(led) = indicator_asked(body)? {
        e.set_led(led);
    }
    drop(p);
    Ok(Resource::new(
        enclosure::render(st, index, &systems),
        st.root_profile,
        "GET, PATCH",
    ))
}

/// Watts drawn: a function of size and power state.
fn watts(sys: &System) -> f64 {
    match sys.power {
        PowerState::On | PowerState::PoweringOff => {
            60.0 + 4.0 * sys.cpus as f64 + sys.memory_mib as f64 / 1024.0
        }
        _ => 8.0,
    }
}

/// A CPU's temperature, with its machine on or off.
pub(super) fn temperature(sys: &System) -> f64 {
    if sys.power == PowerState::On {
        41.0
    } else {
        24.0
    }
}

/// Member `index` of a Power or Thermal array `list` under `base`: its
/// identity, `fields`, then a healthy status.
pub(super) fn member(base: &str, list: &str, index: usize, name: &str, fields: Value) -> Value {
    let mut m = json!({
        "@odata.id": format!("{base}#/{list}/{index}"),
        "MemberId": index.to_string(),
        "Name": name,
    });
    if let (Some(m), Value::Object(fields)) = (m.as_object_mut(), fields) {
        m.extend(fields);
        m.insert(
            "Status".into(),
            json!({ "State": "Enabled", "Health": "OK" }),
        );
    }
    m
}

async fn power(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    let base = format!("/redfish/v1/Chassis/{}/Power", st.chassis_id(&sys));
    Ok(Resource::plain(
        json!({
            "@odata.type": "#Power.v1_7_1.Power",
            "@odata.id": base,
            "Id": "Power",
            "Name": "Power",
            "PowerControl": [member(&base, "PowerControl", 0, "System Power Control", json!({
                "PowerConsumedWatts": watts(&sys),
                "PowerCapacityWatts": 750,
            }))],
            "PowerSupplies": [member(&base, "PowerSupplies", 0, "PSU 0", json!({
                "PowerSupplyType": "AC",
                "PowerCapacityWatts": 750,
                "LastPowerOutputWatts": watts(&sys),
            }))],
        }),
        "GET",
    ))
}

async fn thermal(State(st): State<AppState>, of: ChassisOf) -> Result<Resource, ApiError> {
    let sys = match of {
        ChassisOf::System(sys) => *sys,
        ChassisOf::Enclosure(i) => {
            // Each system's reading follows its power: read all those the
            // enclosure holds (one gone meanwhile is left out).
            let mut systems = Vec::new();
            for r in enclosure::held(&st, i).await? {
                if let Ok(s) = st.core.backend.system(&r.id).await {
                    systems.push(s);
                }
            }
            return Ok(Resource::plain(enclosure::thermal(&st, i, &systems), "GET"));
        }
    };
    let base = format!("/redfish/v1/Chassis/{}/Thermal", st.chassis_id(&sys));
    let rpm = if sys.power == PowerState::On { 5200 } else { 0 };
    Ok(Resource::plain(
        json!({
            "@odata.type": "#Thermal.v1_7_1.Thermal",
            "@odata.id": base,
            "Id": "Thermal",
            "Name": "Thermal",
            "Temperatures": [member(&base, "Temperatures", 0, "CPU Temp", json!({
                "ReadingCelsius": temperature(&sys),
                "UpperThresholdCritical": 95,
                "PhysicalContext": "CPU",
            }))],
            "Fans": [member(&base, "Fans", 0, "Fan 0", json!({
                "Reading": rpm,
                "ReadingUnits": "RPM",
                "PhysicalContext": "SystemBoard",
            }))],
        }),
        "GET",
    ))
}

async fn environment(State(st): State<AppState>, Sys(sys): Sys) -> Result<Resource, ApiError> {
    Ok(Resource::plain(
        json!({
            "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
            "@odata.id": format!("/redfish/v1/Chassis/{}/EnvironmentMetrics", st.chassis_id(&sys)),
            "Id": "EnvironmentMetrics",
            "Name": "Chassis Environment Metrics",
            "TemperatureCelsius": { "Reading": temperature(&sys) },
            "PowerWatts": { "Reading": watts(&sys) },
        }),
        "GET",
    ))
}
