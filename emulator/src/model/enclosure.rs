//! An enclosure: a chassis that holds other chassis, as a blade enclosure
//! or a rack holds its servers (sushy-tools' chassis, served when Shoal
//! is started as sushy-emulator). What it is, not how Redfish shows it
//! (`api/enclosure`): its names, its UUID and its indicator LED, which is
//! its own and kept in memory (sushy-tools' is too).

use std::sync::Mutex;

use uuid::Uuid;

use super::IndicatorLed;

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

    pub fn led(&self) -> IndicatorLed {
        *self.led.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_led(&self, led: IndicatorLed) {
        *self.led.lock().unwrap_or_else(|p| p.into_inner()) = led;
    }
}
