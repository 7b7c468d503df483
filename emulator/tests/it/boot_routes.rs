//! The five routes that set the boot override agree, because they all end
//! in the one decision of the BMC core (`Core::decide_boot`):
//! - Redfish `PATCH` of the System's `Boot`;
//! - Redfish `PATCH` of the System's settings object (`[boot.settings]`);
//! - Dell's SCP import (`ServerBoot.1#BootOnce`, `#FirstBootDevice`);
//! - HPE's `BootOnNextServerReset` on the CD's VirtualMedia;
//! - IPMI Set System Boot Options, parameter 5 (the boot flags).
//!
//! Each row of [`rows`] is one request under one profile: what it asks of
//! the core, the same request in the words of each route that can say it
//! (`None` where the route cannot: no such route on the profile, or no
//! word for that target, persistence or mode), and the one outcome all of
//! them must have. A fresh machine (one Redfish service and one IPMI BMC
//! sharing one `Core`) takes each cell; the core itself is asked first, so
//! the expectation is the core's. An accepted request leaves the same
//! override (target, enabled, mode, read from the backend); a refused one
//! leaves the machine as it was and shows the same refusal kind
//! (`BootRefused`) in the route's own words: Redfish status and
//! MessageIds, the SCP import's 400 with its Dell message, the IPMI
//! completion code.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use shoal_emulator::bmc::{BootRefused, BootRequest};
use shoal_emulator::config::default_system;
use shoal_emulator::ipmi::users::{Privilege, User, Users};
use shoal_emulator::ipmi::{Bmc, IpmiSettings};
use shoal_emulator::model::{
    Arch, BootMode, BootOverride, BootTarget, Change, OverrideEnabled, ResetType,
};
use shoal_emulator::profile::Profiles;
use shoal_ipmi::console::{Login, Session};

use crate::common::{Api, Reply};

use BootMode::{Legacy, Uefi};
use BootTarget::{Cd, Floppy, Hdd, Pxe, UefiHttp, UefiShell};
use OverrideEnabled::{Continuous, Disabled, Once};

/// The machine a request meets (a fake x86_64 machine, off, UEFI, no
/// override, unless said otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    Fresh,
    /// A one-time CD boot is set.
    CdOnce,
    /// The firmware is in Legacy mode.
    Legacy,
    /// Just powered on through the core: the host is in POST (the iLO
    /// profiles' `power.post_secs`).
    InPost,
    /// An OpenPOWER machine: no UEFI firmware at all (Legacy).
    NoUefi,
}

/// The refusal kinds (`BootRefused`, less the backend's failures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    InPost,
    TargetNotOffered,
    ContinuousNotOffered,
    ModeNotOffered,
    NeedsUefi,
}

/// What the core and every route make of a row's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Accepted: the override afterwards.
    Set(BootTarget, OverrideEnabled, BootMode),
    /// Refused, nothing changed.
    Refused(Kind),
}
use Outcome::{Refused, Set};

/// One request under one profile, as each route says it.
struct Row {
    what: &'static str,
    profile: &'static str,
    before: Before,
    /// The request as the core takes it.
    core: BootRequest,
    /// The `Boot` object of a System PATCH.
    patch: Option<Value>,
    /// The `Boot` object of a PATCH of the settings object.
    settings: Option<Value>,
    /// The iDRAC component's `ServerBoot.1#…` attributes of an SCP import.
    scp: Option<&'static [(&'static str, &'static str)]>,
    /// `Oem.Hpe.BootOnNextServerReset` of the CD.
    hpe: Option<bool>,
    /// Bytes 1 and 2 of the boot flags (valid/persistent/EFI, device).
    ipmi: Option<[u8; 2]>,
    expect: Outcome,
}

fn ask(target: BootTarget, enabled: OverrideEnabled, mode: Option<BootMode>) -> BootRequest {
    BootRequest {
        target: Some(target),
        enabled: Some(enabled),
        mode,
        ..BootRequest::default()
    }
}

/// A Redfish `Boot` object naming target, enabled and mode.
fn boot(target: &str, enabled: &str, mode: &str) -> Option<Value> {
    Some(json!({
        "BootSourceOverrideTarget": target,
        "BootSourceOverrideEnabled": enabled,
        "BootSourceOverrideMode": mode,
    }))
}

/// The user profile of the table: iDRAC 9 taking `Once` only and hiding
/// the floppy too (a Dell profile, so the SCP import can say both).
const STRICT: &str = "idrac9-strict";

fn profiles(dir: &std::path::Path) -> Profiles {
    crate::common::derived_profile(
        dir,
        "idrac9",
        STRICT,
        &[
            ("continuous = true", "continuous = false"),
            (
                "hidden_targets = [\"UefiShell\"]",
                "hidden_targets = [\"UefiShell\", \"Floppy\"]",
            ),
        ],
        "[[sources]]\nquirks = [\"boot.continuous\"]\nshows = \"a test's profile\"\nsynthetic = true\n",
    );
    Profiles::load(Some(dir)).unwrap()
}

/// The table. Which route can say what: the System PATCH and the settings
/// object any target, persistence and mode the profile lists (the settings
/// object only on `ami-asrockrack`, which takes no Boot on the System;
/// idrac10's settings object takes no Target or Enabled); the SCP import
/// (iDRAC profiles) Pxe/Hdd/Cd/Floppy/BiosSetup or none, once or
/// persistent, never a mode; HPE's (iLO profiles) only "the CD once" or,
/// where that is set, "not the CD"; IPMI's flags Pxe/Hdd/Cd/Floppy/...,
/// once or persistent, UEFI or Legacy (always a mode), no UEFI-only
/// target.
fn rows() -> Vec<Row> {
    const PXE_ONCE: &[(&str, &str)] = &[("BootOnce", "Enabled"), ("FirstBootDevice", "PXE")];
    const CD_ONCE: &[(&str, &str)] = &[("BootOnce", "Enabled"), ("FirstBootDevice", "VCD-DVD")];
    const HDD_ALWAYS: &[(&str, &str)] = &[("BootOnce", "Disabled"), ("FirstBootDevice", "HDD")];
    const FLOPPY_ONCE: &[(&str, &str)] = &[("BootOnce", "Enabled"), ("FirstBootDevice", "VFDD")];
    const NORMAL: &[(&str, &str)] = &[("FirstBootDevice", "Normal")];
    vec![
        Row {
            what: "Pxe once",
            profile: "idrac9",
            before: Before::Fresh,
            core: ask(Pxe, Once, Some(Uefi)),
            patch: boot("Pxe", "Once", "UEFI"),
            settings: None,
            scp: Some(PXE_ONCE),
            hpe: None,
            ipmi: Some([0xa0, 0x04]),
            expect: Set(Pxe, Once, Uefi),
        },
        Row {
            what: "Pxe once",
            profile: "ami-asrockrack",
            before: Before::Fresh,
            core: ask(Pxe, Once, Some(Uefi)),
            patch: None,
            settings: boot("Pxe", "Once", "UEFI"),
            scp: None,
            hpe: None,
            ipmi: Some([0xa0, 0x04]),
            expect: Set(Pxe, Once, Uefi),
        },
        Row {
            what: "Cd once",
            profile: "ilo5",
            before: Before::Fresh,
            core: ask(Cd, Once, Some(Uefi)),
            patch: boot("Cd", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: Some(true),
            ipmi: Some([0xa0, 0x14]),
            expect: Set(Cd, Once, Uefi),
        },
        Row {
            what: "Cd once",
            profile: "idrac10",
            before: Before::Fresh,
            core: ask(Cd, Once, Some(Uefi)),
            patch: boot("Cd", "Once", "UEFI"),
            settings: None,
            scp: Some(CD_ONCE),
            hpe: None,
            ipmi: Some([0xa0, 0x14]),
            expect: Set(Cd, Once, Uefi),
        },
        Row {
            what: "Hdd continuous",
            profile: "idrac9",
            before: Before::Fresh,
            core: ask(Hdd, Continuous, Some(Uefi)),
            patch: boot("Hdd", "Continuous", "UEFI"),
            settings: None,
            scp: Some(HDD_ALWAYS),
            hpe: None,
            ipmi: Some([0xe0, 0x08]),
            expect: Set(Hdd, Continuous, Uefi),
        },
        Row {
            what: "Hdd continuous",
            profile: "ami-asrockrack",
            before: Before::Fresh,
            core: ask(Hdd, Continuous, Some(Uefi)),
            patch: None,
            settings: boot("Hdd", "Continuous", "UEFI"),
            scp: None,
            hpe: None,
            ipmi: Some([0xe0, 0x08]),
            expect: Set(Hdd, Continuous, Uefi),
        },
        Row {
            what: "Hdd continuous where only Once is taken",
            profile: STRICT,
            before: Before::Fresh,
            core: ask(Hdd, Continuous, Some(Uefi)),
            patch: boot("Hdd", "Continuous", "UEFI"),
            settings: None,
            scp: Some(HDD_ALWAYS),
            hpe: None,
            ipmi: Some([0xe0, 0x08]),
            expect: Refused(Kind::ContinuousNotOffered),
        },
        Row {
            what: "Floppy (hidden) once",
            profile: "ilo5",
            before: Before::Fresh,
            core: ask(Floppy, Once, Some(Uefi)),
            patch: boot("Floppy", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: Some([0xa0, 0x3c]),
            expect: Refused(Kind::TargetNotOffered),
        },
        Row {
            what: "Floppy (hidden) once",
            profile: "openbmc",
            before: Before::Fresh,
            core: ask(Floppy, Once, Some(Uefi)),
            patch: boot("Floppy", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: Some([0xa0, 0x3c]),
            expect: Refused(Kind::TargetNotOffered),
        },
        Row {
            what: "Floppy (hidden) once",
            profile: STRICT,
            before: Before::Fresh,
            core: ask(Floppy, Once, Some(Uefi)),
            patch: boot("Floppy", "Once", "UEFI"),
            settings: None,
            scp: Some(FLOPPY_ONCE),
            hpe: None,
            ipmi: Some([0xa0, 0x3c]),
            expect: Refused(Kind::TargetNotOffered),
        },
        Row {
            // Neither SCP nor IPMI has a word for the UEFI shell.
            what: "UefiShell (hidden) once",
            profile: "idrac9",
            before: Before::Fresh,
            core: ask(UefiShell, Once, Some(Uefi)),
            patch: boot("UefiShell", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: None,
            expect: Refused(Kind::TargetNotOffered),
        },
        Row {
            what: "off, the CD once set",
            profile: "ilo5",
            before: Before::CdOnce,
            core: ask(BootTarget::None, Disabled, Some(Uefi)),
            patch: boot("None", "Disabled", "UEFI"),
            settings: None,
            scp: None,
            hpe: Some(false),
            ipmi: Some([0x20, 0x00]),
            expect: Set(BootTarget::None, Disabled, Uefi),
        },
        Row {
            what: "off, the CD once set",
            profile: "idrac9",
            before: Before::CdOnce,
            core: ask(BootTarget::None, Disabled, Some(Uefi)),
            patch: boot("None", "Disabled", "UEFI"),
            settings: None,
            scp: Some(NORMAL),
            hpe: None,
            ipmi: Some([0x20, 0x00]),
            expect: Set(BootTarget::None, Disabled, Uefi),
        },
        Row {
            what: "off, the CD once set",
            profile: "ami-asrockrack",
            before: Before::CdOnce,
            core: ask(BootTarget::None, Disabled, Some(Uefi)),
            patch: None,
            settings: boot("None", "Disabled", "UEFI"),
            scp: None,
            hpe: None,
            ipmi: Some([0x20, 0x00]),
            expect: Set(BootTarget::None, Disabled, Uefi),
        },
        Row {
            what: "Cd once in POST",
            profile: "ilo5",
            before: Before::InPost,
            core: ask(Cd, Once, Some(Uefi)),
            patch: boot("Cd", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: Some(true),
            ipmi: Some([0xa0, 0x14]),
            expect: Refused(Kind::InPost),
        },
        Row {
            what: "Pxe once in POST",
            profile: "ilo6",
            before: Before::InPost,
            core: ask(Pxe, Once, Some(Uefi)),
            patch: boot("Pxe", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: Some([0xa0, 0x04]),
            expect: Refused(Kind::InPost),
        },
        Row {
            // HPE's `false` has nothing to withdraw here (the start used
            // up any one-time boot) and answers without asking the core:
            // not the same request.
            what: "off in POST",
            profile: "ilo5",
            before: Before::InPost,
            core: ask(BootTarget::None, Disabled, Some(Uefi)),
            patch: boot("None", "Disabled", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: Some([0x20, 0x00]),
            expect: Refused(Kind::InPost),
        },
        Row {
            // Only Redfish names UEFI-only targets.
            what: "UefiHttp once in Legacy mode",
            profile: "ilo5",
            before: Before::Fresh,
            core: ask(UefiHttp, Once, Some(Legacy)),
            patch: boot("UefiHttp", "Once", "Legacy"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: None,
            expect: Refused(Kind::NeedsUefi),
        },
        Row {
            what: "UefiHttp once in Legacy mode",
            profile: "ami-asrockrack",
            before: Before::Fresh,
            core: ask(UefiHttp, Once, Some(Legacy)),
            patch: None,
            settings: boot("UefiHttp", "Once", "Legacy"),
            scp: None,
            hpe: None,
            ipmi: None,
            expect: Refused(Kind::NeedsUefi),
        },
        Row {
            // The firmware in Legacy offers no UEFI-only target at all.
            what: "UefiHttp once, the firmware in Legacy",
            profile: "ilo5",
            before: Before::Legacy,
            core: ask(UefiHttp, Once, Some(Legacy)),
            patch: boot("UefiHttp", "Once", "Legacy"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: None,
            expect: Refused(Kind::TargetNotOffered),
        },
        Row {
            what: "Pxe once in UEFI mode without UEFI firmware",
            profile: "openbmc",
            before: Before::NoUefi,
            core: ask(Pxe, Once, Some(Uefi)),
            patch: boot("Pxe", "Once", "UEFI"),
            settings: None,
            scp: None,
            hpe: None,
            ipmi: Some([0xa0, 0x04]),
            expect: Refused(Kind::ModeNotOffered),
        },
    ]
}

/// The routes, as named in failures.
#[derive(Debug, Clone, Copy)]
enum Route {
    Patch,
    Settings,
    Scp,
    Hpe,
    Ipmi,
}

/// One machine: its Redfish service and IPMI BMC, on one core.
struct Machine {
    api: Api,
    bmc: Arc<Bmc>,
    id: String,
    manager: String,
}

const PEER: &str = "127.0.0.1:40000";

impl Machine {
    async fn new(profiles: &Profiles, name: &str, before: Before) -> Machine {
        let mut sys = default_system("node-0");
        if before == Before::NoUefi {
            sys.arch = Arch::Ppc64le;
            sys.bmc.boot = BootOverride::disabled(Legacy);
        }
        let api = Api::own_endpoint_of(name, profiles.clone(), sys);
        let ids = profiles.get(name).unwrap().ids.clone().unwrap();
        let (id, manager) = (ids.system, ids.manager);
        let core = &api.state.core;
        match before {
            Before::Fresh | Before::NoUefi => {}
            Before::CdOnce => {
                let cd = BootOverride {
                    target: Cd,
                    enabled: Once,
                    ..BootOverride::disabled(Uefi)
                };
                core.backend
                    .apply(&id, vec![Change::Boot(cd)])
                    .await
                    .unwrap();
            }
            Before::Legacy => {
                let legacy = BootOverride::disabled(Legacy);
                core.backend
                    .apply(&id, vec![Change::Boot(legacy)])
                    .await
                    .unwrap();
            }
            Before::InPost => {
                let sys = core.backend.system(&id).await.unwrap();
                core.power_action(&sys, ResetType::On).await.unwrap();
            }
        }
        let sys = core.backend.system(&id).await.unwrap();
        let settings = IpmiSettings {
            users: Users::new(vec![User {
                name: b"admin".to_vec(),
                password: b"secret".to_vec(),
                privilege: Privilege::Administrator,
            }])
            .unwrap(),
            ..IpmiSettings::default()
        };
        let bmc = Arc::new(Bmc::new(
            core,
            api.state.auth.clone(),
            &id,
            &sys,
            &settings,
            "127.0.0.1:623".parse().unwrap(),
        ));
        Machine {
            api,
            bmc,
            id,
            manager,
        }
    }

    async fn boot(&self) -> BootOverride {
        let sys = self.api.state.core.backend.system(&self.id).await.unwrap();
        sys.bmc.boot
    }

    /// A PATCH with the resource's ETag in If-Match (some profiles
    /// require one).
    async fn patch(&self, path: &str, body: Value) -> Reply {
        let etag = self.api.get(path).await.header("etag");
        let headers: Vec<(&str, &str)> = etag.iter().map(|e| ("If-Match", e.as_str())).collect();
        self.api
            .req(Method::PATCH, path, Some(body), &headers)
            .await
    }

    /// The settings object's path, from the System's `@Redfish.Settings`.
    async fn settings_path(&self) -> String {
        let s = self
            .api
            .get(&format!("/redfish/v1/Systems/{}", self.id))
            .await;
        s.body["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
            .as_str()
            .unwrap_or_else(|| panic!("no settings object: {s}"))
            .to_string()
    }

    /// The import action's target, found as sushy finds it.
    async fn import_target(&self) -> String {
        let m = self
            .api
            .get(&format!("/redfish/v1/Managers/{}", self.manager))
            .await;
        let oem = m.body["Actions"]["Oem"].as_object().expect("Actions.Oem");
        let (_, a) = oem
            .iter()
            .find(|(k, _)| k.ends_with("#OemManager.ImportSystemConfiguration"))
            .expect("the import action");
        a["target"].as_str().unwrap().to_string()
    }

    /// Logs in over RMCP+ (cipher suite 17) as the administrator.
    async fn ipmi_session(&self) -> Session {
        let suite = *shoal_ipmi::crypto::SUITES
            .iter()
            .find(|s| s.id == 17)
            .unwrap();
        let mut l = Login::new(b"admin", b"secret", suite, 4, 0x0a0b_0c0d, [0x5a; 16]);
        let open = self.ipmi_datagram(&l.open()).await;
        let rakp2 = self.ipmi_datagram(&l.rakp1(&open).unwrap()).await;
        let rakp3 = l.rakp3(&rakp2).unwrap();
        let rakp4 = self.ipmi_datagram(&rakp3.datagram).await;
        l.finish(&rakp4).unwrap()
    }

    async fn ipmi_datagram(&self, d: &[u8]) -> Vec<u8> {
        let peer: SocketAddr = PEER.parse().unwrap();
        self.bmc.handle(d, peer).await.expect("an answer")
    }

    /// A request in session `s`: its completion code.
    async fn ipmi_call(&self, s: &mut Session, netfn: u8, cmd: u8, data: &[u8]) -> u8 {
        let req = s.request(netfn, cmd, data, [3; 16]);
        let reply = self.ipmi_datagram(&req).await;
        s.response(&reply).unwrap().0
    }

    /// Set System Boot Options, parameter 5, as the administrator (a
    /// session starts at USER: Set Session Privilege Level first, as
    /// ipmitool does): the completion code.
    async fn ipmi_boot_flags(&self, flags: [u8; 2]) -> u8 {
        let mut s = self.ipmi_session().await;
        assert_eq!(self.ipmi_call(&mut s, 0x06, 0x3b, &[4]).await, 0);
        let data = [0x05, flags[0], flags[1], 0, 0, 0];
        self.ipmi_call(&mut s, 0x00, 0x08, &data).await
    }
}

fn kind_of(e: &BootRefused) -> Kind {
    match e {
        BootRefused::InPost => Kind::InPost,
        BootRefused::TargetNotOffered(_) => Kind::TargetNotOffered,
        BootRefused::ContinuousNotOffered => Kind::ContinuousNotOffered,
        BootRefused::ModeNotOffered(_) => Kind::ModeNotOffered,
        BootRefused::NeedsUefi(_) => Kind::NeedsUefi,
        BootRefused::Backend(e) => panic!("the fake backend failed: {e}"),
    }
}

/// A refusal as Redfish words it: status and MessageIds (the host in
/// POST only happens on the iLO profiles, whose message follows).
fn redfish_words(kind: Kind) -> (StatusCode, Vec<&'static str>) {
    let ids = match kind {
        Kind::InPost => vec!["ResourceInUse", "UnableToModifyDuringSystemPOST"],
        Kind::TargetNotOffered | Kind::ContinuousNotOffered | Kind::ModeNotOffered => {
            vec!["PropertyValueNotInList"]
        }
        Kind::NeedsUefi => vec!["PropertyValueConflict"],
    };
    (StatusCode::BAD_REQUEST, ids)
}

/// A refusal as the SCP import words it: a value the server does not
/// take is a bad value of the profile (SYS067); what the import cannot
/// cause is not expected of it.
fn scp_words(kind: Kind) -> (StatusCode, Vec<&'static str>) {
    match kind {
        Kind::TargetNotOffered | Kind::ContinuousNotOffered => (
            StatusCode::BAD_REQUEST,
            vec!["ActionParameterValueError", "SYS067"],
        ),
        other => redfish_words(other),
    }
}

/// A refusal as IPMI words it: not now (0xD5) in POST, else an invalid
/// field (0xCC).
fn ipmi_words(kind: Kind) -> u8 {
    match kind {
        Kind::InPost => 0xd5,
        _ => 0xcc,
    }
}

/// Sends `row`'s cell for `route` to `m`: what is wrong with the
/// answer (accepted or refused, in the route's words).
async fn answer(m: &Machine, row: &Row, route: Route) -> Result<(), String> {
    if let Route::Ipmi = route {
        let code = m.ipmi_boot_flags(row.ipmi.unwrap()).await;
        return match row.expect {
            Set(..) if code == 0 => Ok(()),
            Refused(k) if code == ipmi_words(k) => Ok(()),
            _ => Err(format!("completion code {code:#04x}")),
        };
    }
    let r = match route {
        Route::Patch => {
            let b = row.patch.clone().unwrap();
            m.patch(&format!("/redfish/v1/Systems/{}", m.id), json!({"Boot": b}))
                .await
        }
        Route::Settings => {
            let b = row.settings.clone().unwrap();
            m.patch(&m.settings_path().await, json!({"Boot": b})).await
        }
        Route::Hpe => {
            let cd = format!("/redfish/v1/Managers/{}/VirtualMedia/2", m.manager);
            assert_eq!(
                m.api.get(&cd).await.body["MediaTypes"],
                json!(["CD", "DVD"])
            );
            let want = row.hpe.unwrap();
            m.patch(
                &cd,
                json!({"Oem": {"Hpe": {"BootOnNextServerReset": want}}}),
            )
            .await
        }
        Route::Scp => {
            let attrs: String = row
                .scp
                .unwrap()
                .iter()
                .map(|(n, v)| format!("<Attribute Name=\"ServerBoot.1#{n}\">{v}</Attribute>"))
                .collect();
            let buffer = format!(
                "<SystemConfiguration><Component FQDD=\"{}\">{attrs}</Component></SystemConfiguration>",
                m.manager
            );
            let body = json!({"ShareParameters": {"Target": ["ALL"]}, "ImportBuffer": buffer});
            m.api.post(&m.import_target().await, body).await
        }
        Route::Ipmi => unreachable!(),
    };
    match row.expect {
        Set(..) => {
            let ok = match route {
                Route::Scp => StatusCode::ACCEPTED,
                _ => StatusCode::OK,
            };
            if r.status == ok {
                Ok(())
            } else {
                Err(format!("refused: {r}"))
            }
        }
        Refused(k) => {
            let (status, ids) = match route {
                Route::Scp => scp_words(k),
                _ => redfish_words(k),
            };
            if r.status == status && r.message_ids() == ids {
                Ok(())
            } else {
                Err(format!("wanted {status} {ids:?}, got {r}"))
            }
        }
    }
}

/// Sends `row`'s cell for `route` to a fresh machine and reads the
/// override back; what went wrong.
async fn run(profiles: &Profiles, row: &Row, route: Route) -> Result<(), String> {
    let m = Machine::new(profiles, row.profile, row.before).await;
    let before = m.boot().await;
    answer(&m, row, route).await?;
    let after = m.boot().await;
    match row.expect {
        Set(t, e, mode) => {
            let got = (after.target, after.enabled, after.mode);
            if got != (t, e, mode) {
                return Err(format!("accepted, but the override is {got:?}"));
            }
        }
        Refused(_) => {
            if after != before {
                return Err(format!(
                    "refused, but the override went from {before:?} to {after:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The core's own answer to a row, on the same machine as the routes'.
async fn core_outcome(profiles: &Profiles, row: &Row) -> Outcome {
    let m = Machine::new(profiles, row.profile, row.before).await;
    let sys = m.api.state.core.backend.system(&m.id).await.unwrap();
    match m.api.state.core.decide_boot(&sys, &row.core) {
        Ok(b) => Set(b.target, b.enabled, b.mode),
        Err(e) => Refused(kind_of(&e)),
    }
}

#[tokio::test]
async fn every_route_that_sets_the_boot_override_agrees_with_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = profiles(dir.path());
    let mut wrong = Vec::new();
    let mut cells = 0;
    for row in rows() {
        let name = format!("{} on {}", row.what, row.profile);
        let core = core_outcome(&profiles, &row).await;
        if core != row.expect {
            wrong.push(format!(
                "{name}: the core says {core:?}, the table {:?}",
                row.expect
            ));
        }
        let routes = [
            (Route::Patch, row.patch.is_some()),
            (Route::Settings, row.settings.is_some()),
            (Route::Scp, row.scp.is_some()),
            (Route::Hpe, row.hpe.is_some()),
            (Route::Ipmi, row.ipmi.is_some()),
        ];
        assert!(
            routes.iter().any(|(_, some)| *some),
            "{name}: no route can say it"
        );
        for (route, _) in routes.into_iter().filter(|(_, some)| *some) {
            cells += 1;
            if let Err(e) = run(&profiles, &row, route).await {
                wrong.push(format!(
                    "{name}, {route:?}: {e} (expected {:?})",
                    row.expect
                ));
            }
        }
    }
    assert!(cells >= 40, "{cells} cells");
    assert!(
        wrong.is_empty(),
        "{} of {cells} cells disagree:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
