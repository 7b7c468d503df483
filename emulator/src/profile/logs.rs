//! The BMC's Redfish log services (`api/logs`): where each one is, which
//! book of the BMC's log it shows (`bmc::log`), and how its entries look.

use serde::Deserialize;

/// The log services of a system and of its manager, and their order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logs {
    /// `Systems/{id}/LogServices/{service}`.
    #[serde(default = "system_default")]
    pub system: Vec<LogService>,
    /// `Managers/{id}/LogServices/{service}`.
    #[serde(default = "manager_default")]
    pub manager: Vec<LogService>,
    /// Entries listed newest first (iDRAC), else oldest first.
    #[serde(default)]
    pub newest_first: bool,
}

/// One log service.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogService {
    /// Its `Id`, the last segment of its URI (`Sel`, `Lclog`, `IML`).
    pub id: String,
    /// Its `Name`.
    pub name: String,
    /// Which book it shows: `sel` (power, boots, the clearing) or `all`
    /// (every change).
    pub book: BookName,
    /// How its entries look.
    pub format: Format,
    /// Whether it has `#LogService.ClearLog` (iDRAC's Lclog has none).
    #[serde(default = "yes")]
    pub clear: bool,
}

/// The book a log service shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BookName {
    Sel,
    All,
}

/// How a log service's entries look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `EntryType: SEL`: the IPMI event's sensor type, number and code,
    /// its `MessageId` the event's bytes as DMTF's pattern has them
    /// (`0x6F00FFFF`).
    Sel,
    /// The same, the `MessageId` bare lowercase hex as iDRAC writes it
    /// (`6f00ffff`).
    DellSel,
    /// `EntryType: Event`: the message of the change's event
    /// (ResourceEvent), its origin linked.
    Event,
    /// `EntryType: Oem`, `OemRecordFormat: Dell`, Dell's messages where
    /// Shoal knows one (power: `SYS1000`, `SYS1001`, `SYS1003`) under the
    /// profile's registry prefix, with `Oem.Dell`.
    DellLc,
}

fn yes() -> bool {
    true
}

fn system_default() -> Vec<LogService> {
    vec![LogService {
        id: "Sel".into(),
        name: "System Event Log".into(),
        book: BookName::Sel,
        format: Format::Sel,
        clear: true,
    }]
}

fn manager_default() -> Vec<LogService> {
    vec![LogService {
        id: "Log".into(),
        name: "Manager Event Log".into(),
        book: BookName::All,
        format: Format::Event,
        clear: true,
    }]
}

impl Default for Logs {
    fn default() -> Self {
        Logs {
            system: system_default(),
            manager: manager_default(),
            newest_first: false,
        }
    }
}
