//! A BMC's own event messages (`[events.messages]`): what its registry
//! says of a change (iLO's `ServerPoweredOn`, bmcweb's `DCPowerOn`,
//! iDRAC's `SYS1000`), sent instead of DMTF's ResourceEvent record for
//! that change. One registry per profile; the service lists its prefix
//! and serves it beside DMTF's.

use serde::Deserialize;

/// The changes a vendor's registry may have a message for.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct EventMessages {
    /// The machine powered on.
    pub power_on: Option<EventMessage>,
    /// The machine powered off.
    pub power_off: Option<EventMessage>,
    /// A resource's properties changed (DMTF's `ResourceChanged`).
    pub changed: Option<EventMessage>,
    /// The BMC restarted.
    pub bmc_restarted: Option<EventMessage>,
}

/// One message of the vendor's registry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventMessage {
    /// The whole `MessageId`: `Prefix.major.minor.Key`.
    pub id: String,
    /// Its text, `%1`, `%2`, … standing for `args`.
    pub message: String,
    #[serde(default = "ok")]
    pub severity: String,
    /// What fills `%1`, `%2`, … in order.
    #[serde(default)]
    pub args: Vec<Arg>,
    /// Whether the record names its `OriginOfCondition` (bmcweb's
    /// messages from its event log name none).
    #[serde(default = "yes")]
    pub origin: bool,
    /// Its `EventType`; unset: `Alert`, or `ResourceUpdated` for `changed`.
    pub event_type: Option<String>,
}

/// A value a message's argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arg {
    /// The System's Id.
    System,
    /// Why the BMC restarted.
    Reason,
    /// The BMC's firmware version.
    Firmware,
}

fn ok() -> String {
    "OK".into()
}

fn yes() -> bool {
    true
}

impl EventMessages {
    /// Each message there is, with its key in `[events.messages]`.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &EventMessage)> {
        [
            ("power_on", &self.power_on),
            ("power_off", &self.power_off),
            ("changed", &self.changed),
            ("bmc_restarted", &self.bmc_restarted),
        ]
        .into_iter()
        .filter_map(|(k, m)| Some((k, m.as_ref()?)))
    }

    /// The registry the messages are of: its prefix and version
    /// (`iLOEvents`, `2.3.0`); `None` without messages.
    pub fn registry(&self) -> Option<(&str, String)> {
        let (_, m) = self.all().next()?;
        let (prefix, version, _) = m.parts()?;
        Some((prefix, format!("{version}.0")))
    }

    /// Every message well formed and of one registry; the error names the
    /// key.
    pub fn check(&self) -> Result<(), String> {
        let mut registry: Option<(&str, &str)> = None;
        for (key, m) in self.all() {
            let at = format!("events.messages.{key}");
            let Some((prefix, version, _)) = m.parts() else {
                return Err(format!("{at}.id: {:?} is not Prefix.major.minor.Key", m.id));
            };
            match registry {
                Some(r) if r != (prefix, version) => {
                    return Err(format!(
                        "{at}.id: {:?} is not of {}.{} (one registry per profile)",
                        m.id, r.0, r.1
                    ))
                }
                _ => registry = Some((prefix, version)),
            }
            if ["Base", "ResourceEvent", "TaskEvent", "HeartbeatEvent"].contains(&prefix) {
                return Err(format!(
                    "{at}.id: {prefix} is DMTF's registry, not the vendor's"
                ));
            }
            if !["OK", "Warning", "Critical"].contains(&m.severity.as_str()) {
                return Err(format!(
                    "{at}.severity: {:?} is not OK, Warning or Critical",
                    m.severity
                ));
            }
            let wanted = (1..=9)
                .take_while(|i| m.message.contains(&format!("%{i}")))
                .count();
            if wanted != m.args.len() {
                return Err(format!(
                    "{at}.args: the message takes {wanted} arguments, {} given",
                    m.args.len()
                ));
            }
            if m.args.contains(&Arg::Reason) && key != "bmc_restarted" {
                return Err(format!("{at}.args: only bmc_restarted has a reason"));
            }
        }
        Ok(())
    }
}

impl EventMessage {
    /// Prefix, `major.minor` and key of its `MessageId`.
    pub fn parts(&self) -> Option<(&str, &str, &str)> {
        let mut it = self.id.split('.');
        let (prefix, major, minor, key) = (it.next()?, it.next()?, it.next()?, it.next()?);
        let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
        if it.next().is_some() || !word(prefix) || !word(key) || !number(major) || !number(minor) {
            return None;
        }
        // The version's part of the id: `2.3` of `iLOEvents.2.3.Key`.
        let version = &self.id[prefix.len() + 1..prefix.len() + 1 + major.len() + 1 + minor.len()];
        Some((prefix, version, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, message: &str, args: Vec<Arg>) -> Option<EventMessage> {
        Some(EventMessage {
            id: id.into(),
            message: message.into(),
            severity: "OK".into(),
            args,
            origin: true,
            event_type: None,
        })
    }

    #[test]
    fn one_registry_well_formed_messages_and_their_arguments() {
        let mut m = EventMessages {
            power_on: msg(
                "iLOEvents.2.3.ServerPoweredOn",
                "The server has been powered on.",
                vec![],
            ),
            bmc_restarted: msg("IDRAC.2.8.RAC0182", "Rebooted: %1.", vec![Arg::Reason]),
            ..Default::default()
        };
        assert!(m
            .check()
            .unwrap_err()
            .contains("events.messages.bmc_restarted.id"));
        m.bmc_restarted = msg("iLOEvents.2.3.Reset", "Rebooted: %1 %2.", vec![Arg::Reason]);
        assert!(m.check().unwrap_err().contains("takes 2 arguments"));
        m.bmc_restarted = msg("iLOEvents.2.3.Reset", "Rebooted: %1.", vec![Arg::Reason]);
        m.check().unwrap();
        assert_eq!(m.registry(), Some(("iLOEvents", "2.3.0".to_string())));
        m.power_off = msg("iLOEvents.2.3", "x", vec![]);
        assert!(m.check().unwrap_err().contains("power_off.id"));
        m.power_off = msg("ResourceEvent.1.3.Off", "x", vec![]);
        assert!(m.check().unwrap_err().contains("power_off.id"));
        m.power_off = msg("iLOEvents.2.3.Off", "%1", vec![Arg::Reason]);
        assert!(m.check().unwrap_err().contains("only bmc_restarted"));
        assert_eq!(EventMessages::default().registry(), None);
    }
}
