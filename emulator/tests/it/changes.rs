//! The change stream of the BMC core: one record for each change, from
//! whichever side made it (a Redfish request, an IPMI command, a Dell
//! job, an injected fault) and for what the machine does by itself (a
//! reset consuming a Once override, a power transition ending), with its
//! cause; a refused request leaves none.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shoal_emulator::bmc::changes::{Cause, ChangeRecord, What};
use shoal_emulator::ipmi::users::{Privilege, User, Users};
use shoal_emulator::ipmi::{Bmc, IpmiSettings};
use shoal_emulator::model::{BootTarget, OverrideEnabled, PowerState, ResetType};
use shoal_ipmi::console::{Login, Session};
use shoal_ipmi::crypto::SUITES;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::broadcast::Receiver;

use crate::common::Api;

/// The records sent so far, without waiting.
fn drain(rx: &mut Receiver<ChangeRecord>) -> Vec<ChangeRecord> {
    let mut out = Vec::new();
    loop {
        match rx.try_recv() {
            Ok(r) => out.push(r),
            Err(TryRecvError::Empty) => return out,
            Err(e) => panic!("change stream: {e}"),
        }
    }
}

/// The next record, waiting up to `limit`.
async fn next(rx: &mut Receiver<ChangeRecord>, limit: Duration) -> ChangeRecord {
    tokio::time::timeout(limit, rx.recv())
        .await
        .expect("no record in time")
        .expect("change stream")
}

fn redfish(method: &str, path: &str) -> Cause {
    Cause::Redfish {
        method: method.into(),
        path: path.into(),
        user: None,
    }
}

#[tokio::test]
async fn a_redfish_patch_and_a_reset_that_consumes_once_leave_one_record_each() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let mut rx = api.state.core.changes.subscribe();

    // Refused: nothing changed, nothing recorded.
    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "Nowhere"}}),
        )
        .await;
    assert_eq!(r.status, 400, "{r}");
    assert_eq!(drain(&mut rx), vec![]);

    let r = api
        .patch(
            &sys,
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let got = drain(&mut rx);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].cause, redfish("PATCH", &sys));
    let What::Boot { before, after } = &got[0].what else {
        panic!("{got:#?}")
    };
    assert_eq!(
        (before.target, after.target, after.enabled),
        (BootTarget::None, BootTarget::Pxe, OverrideEnabled::Once)
    );
    assert_eq!(got[0].system, sys.rsplit('/').next().unwrap());

    // The start powers on, boots PXE and consumes the Once: each a record
    // of the one reset.
    api.reset(&sys, "On").await;
    let got = drain(&mut rx);
    let reset = redfish("POST", &format!("{sys}/Actions/ComputerSystem.Reset"));
    assert!(got.iter().all(|r| r.cause == reset), "{got:#?}");
    let whats: Vec<&What> = got.iter().map(|r| &r.what).collect();
    assert!(
        matches!(
            whats.as_slice(),
            [
                What::Reset {
                    reset: ResetType::On,
                    before: PowerState::Off
                },
                What::Power {
                    before: PowerState::Off,
                    after: PowerState::On
                },
                What::Booted { record },
                What::Boot { after, .. },
            ] if record.target == BootTarget::Pxe
                && after.enabled == OverrideEnabled::Disabled
        ),
        "{got:#?}"
    );
    // Reads change nothing.
    api.get(&sys).await;
    assert_eq!(drain(&mut rx), vec![]);
}

#[tokio::test]
async fn an_ipmi_command_is_recorded_with_its_user() {
    let api = Api::new(1);
    let sys = api.system(0).await;
    let id = sys.rsplit('/').next().unwrap();
    let settings = IpmiSettings {
        users: Users::new(vec![User {
            name: b"admin".to_vec(),
            password: b"secret".to_vec(),
            privilege: Privilege::Administrator,
        }])
        .unwrap(),
        ..IpmiSettings::default()
    };
    let machine = api.state.core.backend.system(id).await.unwrap();
    let bmc = Arc::new(Bmc::new(
        &api.state.core,
        api.state.auth.clone(),
        id,
        &machine,
        &settings,
        "127.0.0.1:623".parse().unwrap(),
    ));
    let mut rx = api.state.core.changes.subscribe();
    let mut session = login(&bmc).await;
    // Set Session Privilege Level: administrator, as ipmitool does.
    assert_eq!(call(&bmc, &mut session, 0x06, 0x3b, &[4]).await.0, 0);
    // Chassis Control: power up.
    let (code, _) = call(&bmc, &mut session, 0x00, 0x02, &[0x01]).await;
    assert_eq!(code, 0);
    // The start: powered on, and what it booted.
    let got = drain(&mut rx);
    let ipmi = Cause::Ipmi {
        netfn: 0x00,
        cmd: 0x02,
        user: Some("admin".into()),
    };
    assert!(got.iter().all(|r| r.cause == ipmi), "{got:#?}");
    assert!(
        matches!(
            got.iter().map(|r| &r.what).collect::<Vec<_>>().as_slice(),
            [
                What::Reset {
                    reset: ResetType::On,
                    before: PowerState::Off
                },
                What::Power {
                    before: PowerState::Off,
                    after: PowerState::On
                },
                What::Booted { .. }
            ]
        ),
        "{got:#?}"
    );
}

async fn login(bmc: &Arc<Bmc>) -> Session {
    let peer = "127.0.0.1:40000".parse().unwrap();
    let suite = *SUITES.iter().find(|s| s.id == 17).unwrap();
    let mut l = Login::new(b"admin", b"secret", suite, 4, 0x0a0b_0c0d, [0x5a; 16]);
    let open = bmc.handle(&l.open(), peer).await.unwrap();
    let rakp1 = l.rakp1(&open).unwrap();
    let rakp2 = bmc.handle(&rakp1, peer).await.unwrap();
    let rakp3 = l.rakp3(&rakp2).unwrap();
    let rakp4 = bmc.handle(&rakp3.datagram, peer).await.unwrap();
    l.finish(&rakp4).unwrap()
}

async fn call(bmc: &Arc<Bmc>, s: &mut Session, netfn: u8, cmd: u8, data: &[u8]) -> (u8, Vec<u8>) {
    let peer = "127.0.0.1:40000".parse().unwrap();
    let req = s.request(netfn, cmd, data, [3; 16]);
    let reply = bmc.handle(&req, peer).await.expect("an answer");
    s.response(&reply).unwrap()
}

#[tokio::test]
async fn a_dell_job_applies_what_an_import_staged_under_its_own_name() {
    let api = Api::own_endpoint("idrac9");
    let sys = "/redfish/v1/Systems/System.Embedded.1";
    api.reset(sys, "On").await;
    let mut rx = api.state.core.changes.subscribe();
    let target = "/redfish/v1/Managers/iDRAC.Embedded.1/Actions/Oem/EID_674_Manager.ImportSystemConfiguration";
    let r = api
        .post(
            target,
            json!({
                "ShareParameters": {"Target": ["BIOS"]},
                "ImportBuffer": "<SystemConfiguration><Component FQDD=\"BIOS.Setup.1-1\"><Attribute Name=\"ProcVirtualization\">Disabled</Attribute></Component></SystemConfiguration>",
            }),
        )
        .await;
    assert_eq!(r.status, 202, "{r}");
    // Staged by the request.
    let staged = next(&mut rx, Duration::from_secs(1)).await;
    assert_eq!(staged.cause, redfish("POST", target));
    assert!(matches!(staged.what, What::Bios { .. }), "{staged:#?}");
    // Applied by the job's reboot (the host restarts with them): the job
    // is the cause.
    let applied = loop {
        let r = next(&mut rx, Duration::from_secs(10)).await;
        if matches!(&r.what, What::Bios { after, .. } if after.pending.is_empty()) {
            break r;
        }
    };
    let Cause::Bmc(name) = &applied.cause else {
        panic!("{applied:#?}")
    };
    assert!(name.starts_with("Dell job JID_"), "{name}");
}

#[tokio::test]
async fn a_delayed_reset_is_the_faults_and_its_end_the_machines() {
    let opts = shoal_emulator::backend::fake::FakeOptions {
        power_delay: Duration::from_millis(100),
        ..Default::default()
    };
    let api = Api::with(
        shoal_emulator::config::fake_systems(1),
        opts,
        shoal_emulator::auth::AuthStore::open(),
        shoal_emulator::config::FeatureSet::Full,
    );
    let sys = api.system(0).await;
    let rules = serde_json::from_value(json!({"rules": [{"power_delay_ms": 50}]})).unwrap();
    api.state.core.faults.replace(rules);
    let mut rx = api.state.core.changes.subscribe();
    api.reset(&sys, "On").await;
    assert_eq!(drain(&mut rx), vec![], "not carried out yet");
    // The fault carries it out later (the machine takes the reset, then
    // its time to be on).
    let r = next(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(r.cause, Cause::Fault("power delay".into()));
    assert!(
        matches!(
            r.what,
            What::Reset {
                reset: ResetType::On,
                ..
            }
        ),
        "{r:#?}"
    );
    let r = next(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(r.cause, Cause::Fault("power delay".into()));
    assert!(
        matches!(
            r.what,
            What::Power {
                before: PowerState::Off,
                after: PowerState::PoweringOn
            }
        ),
        "{r:#?}"
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    api.get(&sys).await;
    let got = drain(&mut rx);
    let on = got
        .iter()
        .find(|r| matches!(r.what, What::Power { .. }))
        .expect("the transition's end");
    assert_eq!(on.cause, Cause::Machine);
    assert!(
        matches!(
            on.what,
            What::Power {
                before: PowerState::PoweringOn,
                after: PowerState::On
            }
        ),
        "{got:#?}"
    );
}
