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

use std::sync::Mutex;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::json::JsonObject;
use super::patch::SysPatch;
use super::state::{endpoint_state, id_segment, Sys};
use super::{link, AppState};
use crate::api::error::ApiError;
use crate::model::{IndicatorLed, PowerState, System, SystemRef};

/// One enclosure, as configured.
#[derive(Debug)]
pub struct Enclosure {
    pub id: String,
    pub name: String,
    pub uuid: Uuid,
    led: Mutex<IndicatorLed>,
}

impl Enclosure {
    pub fn new(id: String, name: String, uuid: Uuid, led: IndicatorLed) -> Self {
        Enclosure {
            id,
            name,
            uuid,
            led: Mutex::new(led),
        }
    }

    /// Where it is served: under its UUID, as sushy-tools serves it.
    pub fn path(&self) -> String {
        format!("/redfish/v1/Chassis/{}", self.uuid)
    }

    pub fn led(&self) -> IndicatorLed {
        *self.led.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_led(&self, led: IndicatorLed) {
        *self.led.lock().unwrap_or_else(|p| p.into_inner()) = led;
    }
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
        return Some(Named::At(i));
    }
    list.iter()
        .position(|e| e.id == segment || e.name == segment)
        .map(Named::Alias)
}

/// The redirect from an alias to the UUID's URL, the rest of the path and
/// the query kept: 301 for reads, 308 for writes so they are repeated (as
/// for a system named by its name). The rest is cut from the path as it
/// came (the alias segment may be percent-encoded).
fn redirect(parts: &Parts, to: &Enclosure) -> ApiError {
    let raw = parts.uri.path();
    let rest = raw
        .strip_prefix("/redfish/v1/Chassis/")
        .and_then(|r| r.find('/').map(|i| &r[i..]))
        .unwrap_or("");
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    ApiError::Redirect {
        location: format!("{}{rest}{query}", to.path()),
        permanent_method: !matches!(parts.method, Method::GET | Method::HEAD),
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
            Some(Named::Alias(i)) => Err(redirect(parts, &st.enclosures[i])),
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
            Some(Named::Alias(i)) => Err(redirect(&parts, &st.enclosures[i])),
            None => SysPatch::from_request(Request::from_parts(parts, body), s)
                .await
                .map(ChassisPatch::System),
        }
    }
}

/// The enclosure at `index`; the first holds `systems` (each with its
/// Chassis and Manager, Ids the system's: enclosures are the main
/// service's, where no profile fixes other Ids), the others nothing.
pub fn render(st: &AppState, index: usize, systems: &[SystemRef]) -> Value {
    let e = &st.enclosures[index];
    let held: &[SystemRef] = if index == 0 { systems } else { &[] };
    let managers: Vec<Value> = held
        .iter()
        .map(|s| link(&format!("/redfish/v1/Managers/{}", s.id)))
        .collect();
    let led = e.led();
    let base = e.path();
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

/// The enclosure's Thermal: a CPU temperature per system it holds, then
/// the intake's, and its two fans.
pub fn thermal(st: &AppState, index: usize, systems: &[System]) -> Value {
    let e = &st.enclosures[index];
    let held: &[System] = if index == 0 { systems } else { &[] };
    let base = format!("{}/Thermal", e.path());
    let status = json!({ "State": "Enabled", "Health": "OK" });
    let mut temps: Vec<Value> = held
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "@odata.id": format!("{base}#/Temperatures/{i}"),
                "MemberId": i.to_string(),
                "Name": "CPU Temp",
                "ReadingCelsius": if s.power == PowerState::On { 41 } else { 24 },
                "UpperThresholdCritical": 95,
                "PhysicalContext": "CPU",
                "RelatedItem": [link(&format!("/redfish/v1/Systems/{}", s.id))],
                "Status": status,
            })
        })
        .collect();
    let everything: Vec<Value> = std::iter::once(link(&e.path()))
        .chain(
            held.iter()
                .map(|s| link(&format!("/redfish/v1/Systems/{}", s.id))),
        )
        .collect();
    temps.push(json!({
        "@odata.id": format!("{base}#/Temperatures/{}", held.len()),
        "MemberId": held.len().to_string(),
        "Name": "Chassis Intake Temp",
        "ReadingCelsius": 25,
        "UpperThresholdCritical": 40,
        "PhysicalContext": "Intake",
        "RelatedItem": everything,
        "Status": status,
    }));
    let on = held.iter().any(|s| s.power == PowerState::On);
    let fans: Vec<Value> = ["BaseBoard System Fan", "BaseBoard System Fan Backup"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            json!({
                "@odata.id": format!("{base}#/Fans/{i}"),
                "MemberId": i.to_string(),
                "Name": name,
                "Reading": if on { 2100 - 50 * i as i64 } else { 900 },
                "ReadingUnits": "RPM",
                "PhysicalContext": "Backplane",
                "RelatedItem": everything,
                "Status": status,
            })
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
            named(
                &list,
                "15693887-7984-9484-3272-842188918912"
                    .to_uppercase()
                    .as_str()
            ),
            Some(Named::At(0))
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
