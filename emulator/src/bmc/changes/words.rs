//! A change record in words, for the log: what changed in the values a
//! client sees (`power Off -> On`, `boot override Pxe (Once, UEFI)`), and
//! what caused it (`POST /redfish/v1/... by admin`, `IPMI 0x00/0x02 by
//! op`, `the BMC: Dell job JID_1`, `the machine`).

use std::fmt;

use super::{Cause, What};
use crate::model::MediaState;

fn media(m: &MediaState) -> String {
    match (&m.image, m.inserted) {
        (Some(i), true) => format!("{i} inserted"),
        (Some(i), false) => format!("{i} (not inserted)"),
        (None, _) => "empty".into(),
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Power { before, after } => write!(f, "power {before} -> {after}"),
            What::Boot { after, .. } => {
                write!(
                    f,
                    "boot override {} ({}, {})",
                    after.target, after.enabled, after.mode
                )?;
                if let Some(u) = &after.http_boot_uri {
                    write!(f, " from {u}")?;
                }
                Ok(())
            }
            What::Media {
                slot,
                before,
                after,
            } => {
                write!(
                    f,
                    "virtual media {slot}: {} -> {}",
                    media(before),
                    media(after)
                )
            }
            What::Bios { before, after } => write!(
                f,
                "BIOS attributes: {} pending (was {}){}",
                after.pending.len(),
                before.pending.len(),
                if before.current == after.current {
                    ""
                } else {
                    ", current ones changed"
                }
            ),
            What::SecureBoot { before, after } => write!(
                f,
                "Secure Boot enable {} -> {}",
                before.enable, after.enable
            ),
            What::Indicator { before, after } => write!(f, "indicator {before} -> {after}"),
            What::AssetTag { before, after } => write!(f, "asset tag {before:?} -> {after:?}"),
            What::PowerRestore { before, after } => {
                write!(f, "power restore policy {before} -> {after}")
            }
            What::Firmware {
                component,
                before,
                after,
            } => write!(
                f,
                "{component:?} firmware {} -> {}",
                before.as_ref().map_or("factory", |b| b.version.as_str()),
                after.version
            ),
            What::Booted { record } => write!(f, "booted {} ({})", record.target, record.mode),
            What::Other { part } => write!(f, "{} changed", part.replace('_', " ")),
            What::LogCleared { book } => write!(f, "log cleared ({book:?})"),
            What::BmcRestarted { reason } => write!(f, "BMC restarted ({reason})"),
            What::Reset { reset, before } => write!(f, "reset {reset} (was {before})"),
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by = |f: &mut fmt::Formatter<'_>, user: &Option<String>| match user {
            Some(u) => write!(f, " by {u}"),
            None => Ok(()),
        };
        match self {
            Cause::Redfish { method, path, user } => {
                write!(f, "{method} {path}")?;
                by(f, user)
            }
            Cause::Ipmi { netfn, cmd, user } => {
                write!(f, "IPMI {netfn:#04x}/{cmd:#04x}")?;
                if user.is_none() {
                    write!(f, " in-band")?;
                }
                by(f, user)
            }
            Cause::Bmc(what) => write!(f, "the BMC: {what}"),
            Cause::Fault(what) => write!(f, "injected fault: {what}"),
            Cause::Machine => write!(f, "the machine"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PowerState, ResetType};

    #[test]
    fn records_read_as_what_a_client_sees() {
        let w = What::Power {
            before: PowerState::Off,
            after: PowerState::On,
        };
        assert_eq!(w.to_string(), "power Off -> On");
        let r = What::Reset {
            reset: ResetType::ForceRestart,
            before: PowerState::On,
        };
        assert_eq!(r.to_string(), "reset ForceRestart (was On)");
        let c = Cause::Redfish {
            method: "POST".into(),
            path: "/redfish/v1/x".into(),
            user: Some("admin".into()),
        };
        assert_eq!(c.to_string(), "POST /redfish/v1/x by admin");
        let i = Cause::Ipmi {
            netfn: 0,
            cmd: 2,
            user: None,
        };
        assert_eq!(i.to_string(), "IPMI 0x00/0x02 in-band");
    }
}
