//! Enclosures: Chassis that hold other chassis, as a blade enclosure or a
//! rack holds its servers. Started as sushy-emulator, Shoal serves
//! sushy-tools' chassis (`SUSHY_EMULATOR_CHASSIS`, or its one default
//! Chassis) so that scripts written against sushy-tools' paths keep
//! working: at `/redfish/v1/Chassis/{UUID}`, its `Id` and `Name` answering
//! with a redirect there. The first encloses every system's own Chassis
//! (`Links.Contains`, and `ContainedBy` back), its systems and managers;
//! the others are empty, as sushy-tools serves them. Its indicator LED is
//! the enclosure's own, kept in memory (sushy-tools' is too); its Thermal
//! reads a CPU temperature per system and the intake's.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::chassis::{member, temperature};
use super::json::JsonObject;
use super::patch::SysPatch;
use super::state::{endpoint_state, id_segment, renamed, Sys};
use super::{link, AppState};
use crate::api::error::ApiError;
pub use crate::model::Enclosure;
use crate::model::{IndicatorLed, PowerState, System, SystemRef};

/// Where an enclosure is served: under its UUID, as sushy-tools serves
/// it.
pub fn path(e: &Enclosure) -> String {
    format!("/redfish/v1/Chassis/{}", e.uuid)
}

/// What a `{id}` segment names among the enclosures.
enum Named {
    /// The enclosure at this index, by its UUID.
    At(usize),
    /// Its `Id` or `Name`: the same URL under the UUID.
    Alias(usize),
}

fn named(list: &[Enclosure], segment: &str) -> Option<Named> {
    let by_uuid = Uuid::parse_str(segment).ok();
    if let Some(i) = list.iter().position(|e| Some(e.uuid) == by_uuid) {
        // Another spelling of the UUID (upper case, braces, no hyphens)
        // redirects to the one its `@odata.id` gives.
        return Some(if segment == list[i].uuid.to_string() {
            Named::At(i)
        } else {
            Named::Alias(i)
        });
    }
    list.iter()
        .position(|e| e.id == segment || e.name == segment)
        .map(Named::Alias)
}

/// The redirect from an alias (`id`, as decoded) to the UUID's URL: 301
/// for reads, 308 for writes so they are repeated (as for a system named
/// by its name).
fn redirect(parts: &Parts, id: &str, to: &Enclosure) -> ApiError {
    match renamed(&parts.uri, id, &to.uuid.to_string()) {
        Some(location) => ApiError::Redirect {
            location,
            permanent_method: !matches!(parts.method, Method::GET | Method::HEAD),
        },
        None => ApiError::NotFound(parts.uri.path().to_string()),
    }
}

/// A Chassis the `{id}` segment names: an enclosure or a system's own.
pub enum ChassisOf {
    Enclosure(usize),
    System(Box<System>),
}

impl<S: Send + Sync> FromRequestParts<S> for ChassisOf {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        let st = endpoint_state(parts)?;
        let id = id_segment(parts, &st).await?;
        match named(&st.enclosures, &id) {
            Some(Named::At(i)) => Ok(ChassisOf::Enclosure(i)),
            Some(Named::Alias(i)) => Err(redirect(parts, &id, &st.enclosures[i])),
            None => Sys::from_request_parts(parts, s)
                .await
                .map(|Sys(sys)| ChassisOf::System(Box::new(sys))),
        }
    }
}

/// A PATCH to a Chassis: an enclosure's, or a system's own.
pub enum ChassisPatch {
    Enclosure {
        index: usize,
        headers: HeaderMap,
        body: Map<String, Value>,
    },
    System(SysPatch),
}

impl<S: Send + Sync> FromRequest<S> for ChassisPatch {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &S) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let st = endpoint_state(&parts)?;
        let id = id_segment(&mut parts, &st).await?;
        match named(&st.enclosures, &id) {
            Some(Named::At(index)) => {
                let headers = parts.headers.clone();
                let JsonObject(body) =
                    JsonObject::from_request(Request::from_parts(parts, body), s).await?;
                Ok(ChassisPatch::Enclosure {
                    index,
                    headers,
                    body,
                })
            }
            Some(Named::Alias(i)) => Err(redirect(&parts, &id, &st.enclosures[i])),
            None => SysPatch::from_request(Request::from_parts(parts, body), s)
                .await
                .map(ChassisPatch::System),
        }
    }
}

/// The systems the enclosure at `index` holds: the first holds every
/// system, the others none (as sushy-tools serves them).
pub async fn held(st: &AppState, index: usize) -> Result<Vec<SystemRef>, ApiError> {
    if index == 0 {
        Ok(st.core.backend.systems().await?)
    } else {
        Ok(Vec::new())
    }
}

/// The enclosure at `index`, holding `held` (each with its Chassis and
/// Manager, Ids the system's: enclosures are the main service's, where no
/// profile fixes other Ids).
pub fn render(st: &AppState, index: usize, held: &[SystemRef]) -> Value {
    let e = &st.enclosures[index];
    let managers: Vec<Value> = held
        .iter()
        .map(|s| link(&format!("/redfish/v1/Managers/{}", s.id)))
        .collect();
    let led = e.led();
    let base = path(e);
    json!({
        "@odata.type": "#Chassis.v1_25_0.Chassis",
        "@odata.id": base,
        "Id": e.uuid.to_string(),
        "Name": e.name,
        "UUID": e.uuid.to_string(),
        "ChassisType": "Enclosure",
        "Manufacturer": st.root_profile.manufacturer,
        "PowerState": "On",
        "IndicatorLED": led.as_str(),
        "LocationIndicatorActive": led != IndicatorLed::Off,
        "Status": { "State": "Enabled", "Health": "OK" },
        "Thermal": link(&format!("{base}/Thermal")),
        "Links": {
            "ComputerSystems": held
                .iter()
                .map(|s| link(&format!("/redfish/v1/Systems/{}", s.id)))
                .collect::<Vec<_>>(),
            "Contains": held
                .iter()
                .map(|s| link(&format!("/redfish/v1/Chassis/{}", s.id)))
                .collect::<Vec<_>>(),
            "ManagedBy": managers.iter().take(1).cloned().collect::<Vec<_>>(),
            "ManagersInChassis": managers,
        },
    })
}

/// The enclosure's Thermal: a CPU temperature per system it holds
/// (`held`), then the intake's, and its two fans.
pub fn thermal(st: &AppState, index: usize, held: &[System]) -> Value {
    let e = &st.enclosures[index];
    let base = format!("{}/Thermal", path(e));
    let system = |s: &System| link(&format!("/redfish/v1/Systems/{}", s.id));
    let mut temps: Vec<Value> = held
        .iter()
        .enumerate()
        .map(|(i, s)| {
            member(
                &base,
                "Temperatures",
                i,
                "CPU Temp",
                json!({
                    "ReadingCelsius": temperature(s),
                    "UpperThresholdCritical": 95,
                    "PhysicalContext": "CPU",
                    "RelatedItem": [system(s)],
                }),
            )
        })
        .collect();
    let everything: Vec<Value> = std::iter::once(link(&path(e)))
        .chain(held.iter().map(system))
        .collect();
    temps.push(member(
        &base,
        "Temperatures",
        held.len(),
        "Chassis Intake Temp",
        json!({
            "ReadingCelsius": 25,
            "UpperThresholdCritical": 40,
            "PhysicalContext": "Intake",
            "RelatedItem": everything,
        }),
    ));
    let on = held.iter().any(|s| s.power == PowerState::On);
    let fans: Vec<Value> = ["BaseBoard System Fan", "BaseBoard System Fan Backup"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            member(
                &base,
                "Fans",
                i,
                name,
                json!({
                    "Reading": if on { 2100 - 50 * i as i64 } else { 900 },
                    "ReadingUnits": "RPM",
                    "PhysicalContext": "Backplane",
                    "RelatedItem": everything,
                }),
            )
        })
        .collect();
    json!({
        "@odata.type": "#Thermal.v1_7_1.Thermal",
        "@odata.id": base,
        "Id": "Thermal",
        "Name": "Thermal",
        "Temperatures": temps,
        "Fans": fans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enclosure_is_named_by_its_uuid_and_aliased_by_id_and_name() {
        let u = Uuid::parse_str("15693887-7984-9484-3272-842188918912").unwrap();
        let list = [Enclosure::new(
            "SheetMetalChassis".into(),
            "Chassis".into(),
            u,
            IndicatorLed::Lit,
        )];
        assert!(matches!(named(&list, &u.to_string()), Some(Named::At(0))));
        assert!(matches!(
            named(&list, "{15693887-7984-9484-3272-842188918912}"),
            Some(Named::Alias(0))
        ));
        assert!(named(&list, "156938877984948432728421889189120").is_none());
        assert!(matches!(
            named(&list, "15693887798494843272842188918912"),
            Some(Named::Alias(0))
        ));
        assert!(matches!(
            named(&list, "SheetMetalChassis"),
            Some(Named::Alias(0))
        ));
        assert!(matches!(named(&list, "Chassis"), Some(Named::Alias(0))));
        assert!(named(&list, "other").is_none());
        assert!(named(&[], "Chassis").is_none());
    }
}
