//! In-process tests of a whole BMC: a minimal RMCP+ console (written from
//! the spec, independent of the server's session code) logs in over
//! [`Bmc::handle`], and hostile input is thrown at the same entry point.

use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::commands::netfn;
use super::crypto::SUITES;
use super::users::{Privilege, User, Users};
use super::wire::{self, payload};
use super::{Bmc, IpmiSettings};
use crate::backend::fake::FakeBackend;
use crate::backend::Backend;
use crate::model::{BootMode, BootTarget, OverrideEnabled, PowerState};
use shoal_ipmi::console::{ConsoleError, Login, Session};

fn bmc() -> Arc<Bmc> {
    bmc_with(vec![
        User {
            name: b"admin".to_vec(),
            password: b"secret".to_vec(),
            privilege: Privilege::Administrator,
        },
        User {
            name: b"viewer".to_vec(),
            password: b"look".to_vec(),
            privilege: Privilege::User,
        },
    ])
}

/// A BMC of one fake system with these users.
fn bmc_with(users: Vec<User>) -> Arc<Bmc> {
    bmc_from(IpmiSettings {
        users: Users::new(users).unwrap(),
        ..IpmiSettings::default()
    })
}

fn bmc_from(settings: IpmiSettings) -> Arc<Bmc> {
    let backend: Arc<dyn Backend> =
        Arc::new(FakeBackend::new(crate::config::fake_systems(1), Default::default()).unwrap());
    let core = crate::bmc::Core::new(backend);
    let sys = crate::config::fake_systems(1).remove(0);
    Arc::new(Bmc::new(
        &core,
        Arc::new(crate::auth::AuthStore::open()),
        &sys.id,
        &sys,
        &settings,
        "127.0.0.1:623".parse().unwrap(),
    ))
}

/// A console's side of one session.
struct Console {
    session: Session,
    bmc_sid: u32,
    seq: u32,
}

/// Logs in with `suite_id`; `Err(status)` for an RMCP+ error status.
async fn login(
    bmc: &Arc<Bmc>,
    user: &str,
    password: &str,
    suite_id: u8,
    role: u8,
) -> Result<Console, u8> {
    let suite = *SUITES.iter().find(|s| s.id == suite_id).unwrap();
    let mut l = Login::new(
        user.as_bytes(),
        password.as_bytes(),
        suite,
        role,
        0x0a0b_0c0d,
        [0x5a; 16],
    );
    let status = |e: ConsoleError| match e {
        ConsoleError::Status { status, .. } => status,
        other => panic!("{other}"),
    };
    let open = bmc.handle_at(&l.open()).await.unwrap();
    let rakp1 = l.rakp1(&open).map_err(status)?;
    let rakp2 = bmc.handle_at(&rakp1).await.unwrap();
    // A console that found RAKP 2's code wrong may still answer (with its
    // own idea of the key): RAKP 4 must refuse it.
    let rakp3 = l.rakp3(&rakp2).map_err(status)?;
    let rakp4 = bmc.handle_at(&rakp3.datagram).await.unwrap();
    match l.finish(&rakp4) {
        Ok(session) => {
            assert!(
                rakp3.password_matched,
                "RAKP 2's code did not match the password"
            );
            let bmc_sid = session.bmc_sid;
            Ok(Console {
                session,
                bmc_sid,
                seq: 0,
            })
        }
        Err(ConsoleError::Status { status, .. }) => {
            // A good password is refused at RAKP 3 only for want of room.
            assert!(
                !rakp3.password_matched || status == 0x01,
                "a good password refused at RAKP 3 ({status:#04x})"
            );
            Err(status)
        }
        Err(e) => panic!("{e}"),
    }
}

impl Console {
    /// The datagram of a request, with the next sequence number (`seq`
    /// may be moved on by a test to leave the window).
    fn packet(&mut self, netfn: u8, cmd: u8, data: &[u8]) -> Vec<u8> {
        self.session.seq = self.seq;
        let p = self.session.request(netfn, cmd, data, [3; 16]);
        self.seq = self.session.seq;
        p
    }

    /// Sends a request; the completion code and data, or `None` when the
    /// BMC dropped it.
    async fn call(
        &mut self,
        bmc: &Arc<Bmc>,
        netfn: u8,
        cmd: u8,
        data: &[u8],
    ) -> Option<(u8, Vec<u8>)> {
        let pkt = self.packet(netfn, cmd, data);
        self.send(bmc, &pkt).await
    }

    async fn send(&self, bmc: &Arc<Bmc>, pkt: &[u8]) -> Option<(u8, Vec<u8>)> {
        let reply = bmc.handle_at(pkt).await?;
        Some(self.session.response(&reply).unwrap())
    }
}

impl Bmc {
    /// `handle` from a console on loopback.
    async fn handle_at(self: &Arc<Self>, datagram: &[u8]) -> Option<Vec<u8>> {
        self.handle(datagram, "127.0.0.1:40000".parse().unwrap())
            .await
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_console_logs_in_with_suites_3_and_17_and_a_bad_password_does_not() {
    rt().block_on(async {
        let bmc = bmc();
        for suite in [3, 17] {
            let mut c = login(&bmc, "admin", "secret", suite, 4).await.unwrap();
            let (code, data) = c.call(&bmc, 0x06, 0x3b, &[4]).await.unwrap();
            assert_eq!((code, data), (0, vec![4]));
            let (code, data) = c.call(&bmc, 0x00, 0x01, &[]).await.unwrap();
            assert_eq!(code, 0);
            assert_eq!(data[0] & 1, 0, "off");
        }
        assert_eq!(login(&bmc, "admin", "wrong", 17, 4).await.err(), Some(0x0f));
        // An unknown name fails as a wrong password does.
        assert_eq!(
            login(&bmc, "nobody", "secret", 17, 4).await.err(),
            Some(0x0f)
        );
        // A USER account asking for ADMINISTRATOR: invalid role.
        assert_eq!(login(&bmc, "viewer", "look", 3, 4).await.err(), Some(0x09));
        assert_eq!(bmc.active_sessions(), 2);
    });
}

/// The channel's privilege limit (Set Channel Access, volatile) caps the
/// next logins for every name alike; the non-volatile set keeps its own,
/// and only an administrator sets either.
#[test]
fn the_channel_privilege_limit_caps_the_roles_a_login_may_ask_for() {
    rt().block_on(async {
        let bmc = bmc();
        let mut admin = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        admin.call(&bmc, 0x06, 0x3b, &[4]).await.unwrap();
        let mut viewer = login(&bmc, "viewer", "look", 17, 2).await.unwrap();
        let limit_operator = [0x01, 0x80 | 0x22, 0x80 | 3];
        let refused = viewer.call(&bmc, 0x06, 0x40, &limit_operator).await;
        assert_eq!(refused.unwrap().0, 0xd4);
        let set = admin.call(&bmc, 0x06, 0x40, &limit_operator).await;
        assert_eq!(set.unwrap().0, 0);
        let volatile = viewer.call(&bmc, 0x06, 0x41, &[0x01, 0x80]).await;
        assert_eq!(volatile.unwrap(), (0, vec![0x22, 3]));
        let non_volatile = viewer.call(&bmc, 0x06, 0x41, &[0x01, 0x40]).await;
        assert_eq!(non_volatile.unwrap(), (0, vec![0x22, 4]));
        // Above the limit: invalid role at RAKP 2, known name or not.
        assert_eq!(
            login(&bmc, "admin", "secret", 17, 4).await.err(),
            Some(0x09)
        );
        assert_eq!(login(&bmc, "nobody", "x", 17, 4).await.err(), Some(0x09));
        login(&bmc, "admin", "secret", 17, 3).await.unwrap();
        // A session set up before keeps its role.
        let again = admin.call(&bmc, 0x06, 0x3b, &[4]).await;
        assert_eq!(again.unwrap(), (0, vec![4]));
    });
}

/// An in-band fault rule selects its system by name, as Redfish rules and
/// BMC reboots do (the Id is the UUID here, and the domain's UUID on
/// libvirt): a rule naming this system drops its host's requests, one
/// naming another system leaves them alone.
#[test]
fn in_band_fault_rules_select_the_system_by_name() {
    rt().block_on(async {
        let bmc = bmc();
        assert_ne!(bmc.system_id, bmc.system_name);
        let mut get_device_id = vec![0x42, netfn::APP << 2, 0x01];
        get_device_id.push(
            get_device_id
                .iter()
                .fold(0u8, |s, b| s.wrapping_add(*b))
                .wrapping_neg(),
        );
        for (system, answered) in [("node-0", false), ("node-1", true)] {
            let rule = crate::faults::Rule {
                systems: vec![system.to_string()],
                methods: vec![crate::faults::IPMI.into()],
                drop_rate: 1.0,
                ..Default::default()
            };
            bmc.core.faults.replace(crate::faults::FaultConfig {
                seed: 0,
                rules: vec![rule],
            });
            let reply = super::inband::answer(&bmc, &get_device_id).await;
            assert_eq!(reply.is_some(), answered, "a rule naming {system}");
        }
    });
}

#[test]
fn replayed_tampered_and_unprivileged_requests_change_nothing() {
    rt().block_on(async {
        let bmc = bmc();
        let mut c = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        // At USER (before Set Session Privilege Level): no power control.
        assert_eq!(c.call(&bmc, 0x00, 0x02, &[1]).await.unwrap().0, 0xd4);
        assert_eq!(bmc.system().await.unwrap().power, PowerState::Off);
        assert_eq!(c.call(&bmc, 0x06, 0x3b, &[4]).await.unwrap().0, 0);
        let on = c.packet(0x00, 0x02, &[1]);
        // A flipped bit anywhere after the RMCP header: dropped.
        for i in 4..on.len() {
            let mut bad = on.clone();
            bad[i] ^= 0x01;
            assert!(bmc.handle_at(&bad).await.is_none(), "byte {i} flipped");
        }
        assert_eq!(bmc.system().await.unwrap().power, PowerState::Off);
        assert_eq!(c.send(&bmc, &on).await.unwrap().0, 0);
        assert_eq!(bmc.system().await.unwrap().power, PowerState::On);
        // The same packet again: a replay, dropped.
        assert!(bmc.handle_at(&on).await.is_none());
        // Way out of the window: dropped.
        c.seq += 1000;
        assert!(c.call(&bmc, 0x00, 0x01, &[]).await.is_none());
        // A viewer at USER reads, and cannot act.
        let mut v = login(&bmc, "viewer", "look", 3, 2).await.unwrap();
        assert_eq!(v.call(&bmc, 0x00, 0x01, &[]).await.unwrap().0, 0);
        assert_eq!(v.call(&bmc, 0x00, 0x02, &[0]).await.unwrap().0, 0xd4);
        assert_eq!(v.call(&bmc, 0x06, 0x3b, &[3]).await.unwrap().0, 0x81);
        assert_eq!(bmc.system().await.unwrap().power, PowerState::On);
    });
}

#[test]
fn boot_flags_are_the_redfish_override_and_expire_after_60_seconds() {
    rt().block_on(async {
        let bmc = bmc();
        let mut c = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        c.call(&bmc, 0x06, 0x3b, &[4]).await.unwrap();
        // ipmitool's sequence: set in progress, ack, flags, commit, done.
        for data in [
            &[0x00, 0x01][..],
            &[0x04, 0x01, 0x01],
            &[0x05, 0xa0, 0x04, 0, 0, 0],
            &[0x00, 0x02],
            &[0x00, 0x00],
        ] {
            assert_eq!(
                c.call(&bmc, 0x00, 0x08, data).await.unwrap().0,
                0,
                "{data:x?}"
            );
        }
        let boot = bmc.system().await.unwrap().bmc.boot;
        assert_eq!(
            (boot.target, boot.mode, boot.enabled),
            (BootTarget::Pxe, BootMode::Uefi, OverrideEnabled::Once)
        );
        let (code, data) = c.call(&bmc, 0x00, 0x09, &[5, 0, 0]).await.unwrap();
        assert_eq!((code, data), (0, vec![1, 5, 0xa0, 0x04, 0, 0, 0]));
        // 60 seconds without a restart: the flags are cleared.
        bmc.tick(Instant::now() + Duration::from_secs(30)).await;
        assert_eq!(
            bmc.system().await.unwrap().bmc.boot.enabled,
            OverrideEnabled::Once
        );
        bmc.tick(Instant::now() + Duration::from_secs(61)).await;
        assert_eq!(
            bmc.system().await.unwrap().bmc.boot.enabled,
            OverrideEnabled::Disabled
        );
        // The session idled out with the clock: a new one.
        assert!(c.call(&bmc, 0x00, 0x01, &[]).await.is_none());
        let mut c = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        c.call(&bmc, 0x06, 0x3b, &[4]).await.unwrap();
        // With parameter 3 bit 3 (Ironic and pyghmi send it) they stay.
        assert_eq!(c.call(&bmc, 0x00, 0x08, &[0x03, 0x08]).await.unwrap().0, 0);
        assert_eq!(
            c.call(&bmc, 0x00, 0x08, &[0x05, 0xa0, 0x08, 0, 0, 0])
                .await
                .unwrap()
                .0,
            0
        );
        // Bad flags change nothing.
        // Too short, an unknown selector, no data, and Diags (a target
        // this machine's Redfish side does not offer either).
        for data in [
            &[0x05, 0xa0][..],
            &[0x05, 0xa0, 0x28, 0, 0, 0],
            &[0x05],
            &[0x05, 0xa0, 0x10, 0, 0, 0],
        ] {
            assert_ne!(
                c.call(&bmc, 0x00, 0x08, data).await.unwrap().0,
                0,
                "{data:x?}"
            );
        }
        bmc.tick(Instant::now() + Duration::from_secs(61)).await;
        assert_eq!(bmc.system().await.unwrap().bmc.boot.target, BootTarget::Hdd);
    });
}

/// A host that honoured a one-time override clears it by writing the
/// flags valid with no override (petitboot does): they read back so, not
/// as "not valid", until the valid bit's 60 seconds run out or a restart
/// consumes them; the machine has no override meanwhile.
#[test]
fn flags_written_valid_with_no_override_read_back_as_written() {
    use super::commands::execute;
    rt().block_on(async {
        let bmc = bmc();
        let x = |data: &'static [u8]| {
            let bmc = bmc.clone();
            async move { execute(&bmc, Privilege::Administrator, 0x00, 0x08, data).await }
        };
        let get = || {
            let bmc = bmc.clone();
            async move {
                execute(&bmc, Privilege::Administrator, 0x00, 0x09, &[0x05, 0, 0])
                    .await
                    .1
            }
        };
        assert_eq!(x(&[0x05, 0x80, 0x04, 0, 0, 0]).await.0, 0, "PXE once");
        assert_eq!(get().await[2..4], [0x80, 0x04]);
        assert_eq!(
            x(&[0x05, 0x80, 0x00, 0, 0, 0]).await.0,
            0,
            "the host's clear"
        );
        assert_eq!(get().await[2..4], [0x80, 0x00]);
        assert_eq!(
            bmc.system().await.unwrap().bmc.boot.target,
            BootTarget::None
        );
        // Not valid, written so: not valid.
        assert_eq!(x(&[0x05, 0x00, 0x00, 0, 0, 0]).await.0, 0);
        assert_eq!(get().await[2], 0x00);
        // Valid, no override, then a restart consumes it.
        assert_eq!(x(&[0x05, 0x80, 0x00, 0, 0, 0]).await.0, 0);
        assert_eq!(
            execute(&bmc, Privilege::Administrator, 0x00, 0x02, &[0x01])
                .await
                .0,
            0
        );
        assert_eq!(get().await[2], 0x00);
    });
}

/// What a host's firmware sends over its system interface (OpenPOWER's
/// skiboot: watchdog, ACPI power state, SEL time) and what its petitboot
/// reads (the locked flags, the boot initiator mailbox).
#[test]
fn the_host_firmware_commands_are_served() {
    use super::commands::execute;
    use Privilege::Administrator as A;
    rt().block_on(async {
        let bmc = bmc();
        let x = |netfn: u8, cmd: u8, data: &'static [u8]| {
            let bmc = bmc.clone();
            async move { execute(&bmc, A, netfn, cmd, data).await }
        };
        // The watchdog: never set, it cannot start.
        assert_eq!(x(0x06, 0x22, &[]).await.0, 0x80);
        // skiboot's: BIOS/POST, "don't log", "don't stop", hard reset,
        // 60 s.
        assert_eq!(x(0x06, 0x24, &[0xc2, 0x01, 0, 0, 0x58, 0x02]).await.0, 0);
        assert_eq!(
            x(0x06, 0x25, &[]).await,
            (0, vec![0x82, 0x01, 0, 0, 0x58, 0x02, 0x58, 0x02])
        );
        assert_eq!(x(0x06, 0x22, &[]).await.0, 0);
        let (code, get) = x(0x06, 0x25, &[]).await;
        assert_eq!((code, get[0]), (0, 0xc2), "running: {get:x?}");
        // The machine's OS (SMS/OS), "don't stop": the timer goes on with
        // the new count and action.
        // A pre-timeout as long as the countdown; a reserved use.
        assert_eq!(x(0x06, 0x24, &[0x04, 0x11, 6, 0, 0x3c, 0]).await.0, 0xcc);
        assert_eq!(x(0x06, 0x24, &[0x00, 0x01, 0, 0, 0x3c, 0]).await.0, 0xcc);
        assert_eq!(x(0x06, 0x24, &[0x44, 0x02, 0, 0, 0x64, 0]).await.0, 0);
        assert_eq!(x(0x06, 0x25, &[]).await.1[0], 0x44);
        assert_eq!(x(0x00, 0x02, &[0x01]).await.0, 0);
        bmc.tick(Instant::now() + Duration::from_secs(5)).await;
        assert_eq!(bmc.system().await.unwrap().power, PowerState::On);
        // Run out: stopped, the SMS/OS flag set, the action taken.
        bmc.tick(Instant::now() + Duration::from_secs(11)).await;
        let (_, get) = x(0x06, 0x25, &[]).await;
        assert_eq!((get[0], get[3]), (0x04, 0x10), "{get:x?}");
        assert_eq!(bmc.system().await.unwrap().power, PowerState::Off);
        // Running out on a machine that is off: no action, whatever the
        // action (a power cycle of an off machine does nothing).
        assert_eq!(x(0x06, 0x24, &[0x44, 0x03, 0, 0x10, 0x0a, 0]).await.0, 0);
        assert_eq!(x(0x06, 0x22, &[]).await.0, 0);
        bmc.tick(Instant::now() + Duration::from_secs(2)).await;
        assert_eq!(bmc.system().await.unwrap().power, PowerState::Off);
        assert_eq!(x(0x06, 0x25, &[]).await.1[0], 0x04, "stopped");
        // A Chassis Control power cycle or reset stops a running timer.
        assert_eq!(x(0x00, 0x02, &[0x01]).await.0, 0);
        assert_eq!(x(0x06, 0x22, &[]).await.0, 0);
        assert_eq!(x(0x00, 0x02, &[0x03]).await.0, 0);
        assert_eq!(x(0x06, 0x25, &[]).await.1[0], 0x04, "stopped by the reset");
        bmc.tick(Instant::now() + Duration::from_secs(2)).await;
        assert_eq!(bmc.system().await.unwrap().power, PowerState::On);
        assert_eq!(x(0x00, 0x02, &[0x00]).await.0, 0);
        // Without "don't stop", a Set stops the timer.
        assert_eq!(x(0x06, 0x22, &[]).await.0, 0);
        assert_eq!(x(0x06, 0x24, &[0x04, 0x00, 0, 0x10, 0x64, 0]).await.0, 0);
        assert_eq!(x(0x06, 0x25, &[]).await.1[..4], [0x04, 0, 0, 0]);
        // ACPI power state: S0/G0 and D0 set, "no change" keeps them.
        assert_eq!(x(0x06, 0x07, &[]).await, (0, vec![0x2a, 0x2a]));
        assert_eq!(x(0x06, 0x06, &[0x80, 0x80]).await.0, 0);
        assert_eq!(x(0x06, 0x06, &[0xff, 0x00]).await.0, 0);
        assert_eq!(x(0x06, 0x07, &[]).await, (0, vec![0x00, 0x00]));
        // Undefined states: S 0x22-0x29, D4-D7.
        for bad in [
            &[0x8f, 0x80][..],
            &[0xa2, 0x80],
            &[0xa9, 0xff],
            &[0xff, 0x84],
            &[0x80, 0x87],
        ] {
            assert_eq!(x(0x06, 0x06, bad).await.0, 0xcc, "{bad:x?}");
        }
        assert_eq!(x(0x06, 0x06, &[0xa1, 0x83]).await.0, 0);
        assert_eq!(x(0x06, 0x07, &[]).await, (0, vec![0x21, 0x03]));
        // SEL time, as the host's RTC sets it.
        assert_eq!(x(0x0a, 0x49, &[0x40, 0x42, 0x0f, 0x00]).await.0, 0);
        let (_, t) = x(0x0a, 0x48, &[]).await;
        let t = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        assert!((1_000_000..1_000_005).contains(&t), "{t}");
        // The boot flags read as locked while a set is in progress.
        assert_eq!(x(0x00, 0x08, &[0x00, 0x01]).await.0, 0);
        assert_eq!(x(0x00, 0x09, &[5, 0, 0]).await.1[1], 0x85);
        assert_eq!(x(0x00, 0x08, &[0x00, 0x00]).await.0, 0);
        assert_eq!(x(0x00, 0x09, &[5, 0, 0]).await.1[1], 0x05);
        // The mailbox: blocks as written, unwritten ones zero, 16 blocks.
        let block0: &[u8] = &[
            7, 0, 2, 0, 0, b'p', b'e', b't', b'i', b't', b'b', b'o', b'o', b't', b',', b'b', b'o',
            b'o',
        ];
        assert_eq!(x(0x00, 0x08, block0).await.0, 0);
        let (code, got) = x(0x00, 0x09, &[7, 0, 0]).await;
        assert_eq!(
            (code, &got[..3], &got[3..]),
            (0, &[1u8, 7, 0][..], &block0[2..])
        );
        assert_eq!(
            x(0x00, 0x09, &[7, 1, 0]).await.1,
            [&[1u8, 7, 1][..], &[0; 16]].concat()
        );
        assert_eq!(x(0x00, 0x09, &[7, 16, 0]).await.0, 0xc9);
        assert_eq!(x(0x00, 0x08, &[7, 16, 1]).await.0, 0xc9);
        assert_eq!(x(0x00, 0x08, &[7, 1]).await.0, 0xc7);
        assert_eq!(
            x(
                0x00,
                0x08,
                &[7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            )
            .await
            .0,
            0xc7
        );
    });
}

/// A SOL payload ended by another (administrator's) session: its console
/// is told with a "SOL deactivating" packet, and may activate again.
#[test]
fn a_console_whose_sol_another_session_ends_is_told() {
    rt().block_on(async {
        let bmc = bmc();
        let out = Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
        bmc.set_outbound(out);
        let line = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let peer = line.local_addr().unwrap();
        let mut a = login(&bmc, "viewer", "look", 17, 2).await.unwrap();
        let activate = a.packet(netfn::APP, 0x48, &[payload::SOL, 1, 0, 0, 0, 0]);
        let reply = bmc.handle(&activate, peer).await.unwrap();
        assert_eq!(a.session.response(&reply).unwrap().0, 0);
        let mut b = login(&bmc, "admin", "secret", 3, 4).await.unwrap();
        assert_eq!(b.call(&bmc, netfn::APP, 0x3b, &[4]).await.unwrap().0, 0);
        // An administrator's session may end another session's payload.
        let (cc, _) = b
            .call(&bmc, netfn::APP, 0x49, &[payload::SOL, 1, 0, 0, 0, 0])
            .await
            .unwrap();
        assert_eq!(cc, 0);
        let mut buf = vec![0u8; 512];
        let n = tokio::time::timeout(Duration::from_secs(5), line.recv(&mut buf))
            .await
            .expect("the first console hears of it")
            .unwrap();
        let body = a.session.payload(&buf[..n], payload::SOL).unwrap();
        assert_eq!(body[3] & 0x10, 0x10, "SOL deactivating: {body:x?}");
        // Already deactivated; the line is free for the first console again.
        let (cc, _) = b
            .call(&bmc, netfn::APP, 0x49, &[payload::SOL, 1, 0, 0, 0, 0])
            .await
            .unwrap();
        assert_eq!(cc, 0x80);
        let again = a.packet(netfn::APP, 0x48, &[payload::SOL, 1, 0, 0, 0, 0]);
        let reply = bmc.handle(&again, peer).await.unwrap();
        assert_eq!(a.session.response(&reply).unwrap().0, 0);
    });
}

#[test]
fn a_thousand_half_open_sessions_leave_room_to_log_in() {
    rt().block_on(async {
        let bmc = bmc();
        let mut open = vec![1, 0, 0, 0, 1, 2, 3, 4];
        open.extend_from_slice(&[
            0, 0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 8, 4, 0, 0, 0, 2, 0, 0, 8, 1, 0, 0, 0,
        ]);
        for _ in 0..1000 {
            let pkt = wire::build_v20(payload::OPEN_SESSION_REQUEST, false, 0, 0, &open, None);
            assert!(bmc.handle_at(&pkt).await.is_some());
        }
        let mut c = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        assert_eq!(c.call(&bmc, 0x00, 0x01, &[]).await.unwrap().0, 0);
        // Close Session ends it: the next request is dropped.
        let sid = c.bmc_sid.to_le_bytes();
        assert_eq!(c.call(&bmc, 0x06, 0x3c, &sid).await.unwrap().0, 0);
        assert!(c.call(&bmc, 0x00, 0x01, &[]).await.is_none());
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any datagram: an answer or none, never a panic, never a change.
    #[test]
    fn arbitrary_datagrams_never_panic_or_change_the_machine(
        head in prop::sample::select(vec![
            vec![], vec![6, 0, 0xff, 7, 0], vec![6, 0, 0xff, 7, 6], vec![6, 0, 0xff, 6],
            vec![6, 0, 0xff, 7, 6, 0x10], vec![6, 0, 0xff, 7, 6, 0x12], vec![6, 0, 0xff, 7, 6, 0x14],
            vec![6, 0, 0xff, 7, 6, 0xc0],
        ]),
        tail in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let bmc = bmc();
        let before = rt().block_on(bmc.system()).unwrap();
        let pkt = [head, tail].concat();
        let _ = rt().block_on(bmc.handle_at(&pkt));
        let after = rt().block_on(bmc.system()).unwrap();
        prop_assert_eq!(before, after);
    }

    /// Any frame on the in-band link: a well-formed request (checksum
    /// right, a request NetFn) gets exactly one framed answer naming it,
    /// anything else none; never a panic. The frames a stream decodes to
    /// are bounded whatever the bytes (`inband::tests`).
    #[test]
    fn arbitrary_in_band_frames_are_answered_or_dropped(
        netfn in prop::sample::select(vec![0x00u8, 0x01, 0x04, 0x06, 0x07, 0x0a, 0x0c, 0x2c, 0x3f]),
        cmd in any::<u8>(),
        data in prop::collection::vec(any::<u8>(), 0..40),
        good_sum in any::<bool>(),
        lun in 0u8..4,
    ) {
        rt().block_on(async {
            let bmc = bmc();
            let mut msg = vec![0x42, (netfn << 2) | lun, cmd];
            msg.extend_from_slice(&data);
            let sum = msg.iter().fold(0u8, |s, b| s.wrapping_add(*b)).wrapping_neg();
            msg.push(if good_sum { sum } else { sum.wrapping_add(1) });
            let reply = super::inband::answer(&bmc, &msg).await;
            let request = netfn & 1 == 0;
            match reply {
                None => assert!(!good_sum || !request, "{msg:x?} unanswered"),
                Some(framed) => {
                    assert!(good_sum && request, "{msg:x?} answered");
                    let frames = super::inband::Decoder::default().feed(&framed);
                    let [super::inband::Frame::Message(m)] = &frames[..] else {
                        panic!("{framed:x?}");
                    };
                    assert_eq!((m[0], m[1], m[2]), (0x42, ((netfn | 1) << 2) | lun, cmd));
                    assert_eq!(m.iter().fold(0u8, |s, b| s.wrapping_add(*b)), 0);
                }
            }
        });
    }

    /// Any request inside a good session: a completion code, no panic.
    #[test]
    fn arbitrary_requests_in_a_session_get_a_completion_code(
        netfn in prop::sample::select(vec![0x00u8, 0x04, 0x06, 0x0a, 0x0c, 0x2c, 0x30]),
        cmd in any::<u8>(),
        data in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        rt().block_on(async {
            let bmc = bmc();
            let mut c = login(&bmc, "viewer", "look", 17, 2).await.unwrap();
            let before = bmc.system().await.unwrap();
            let (code, _) = c.call(&bmc, netfn, cmd, &data).await.unwrap();
            // At USER nothing may change the machine.
            if code == 0 {
                let after = bmc.system().await.unwrap();
                assert_eq!(before, after, "netfn {netfn:#x} cmd {cmd:#x} {data:x?}");
            }
        });
    }
}

/// A BMC that is away (rebooting, or its machine without power) answers
/// nothing over LAN, a session's commands included, until it is back;
/// another system's outage leaves it alone.
#[test]
fn a_bmc_that_is_away_is_silent_over_lan() {
    rt().block_on(async {
        let bmc = bmc();
        let mut c = login(&bmc, "admin", "secret", 17, 4).await.unwrap();
        assert_eq!(c.call(&bmc, 0x00, 0x01, &[]).await.unwrap().0, 0);
        bmc.core.faults.outage(vec!["node-1".into()], 60);
        assert_eq!(c.call(&bmc, 0x00, 0x01, &[]).await.unwrap().0, 0);
        bmc.core.faults.outage(vec![bmc.system_name.clone()], 1);
        assert!(c.call(&bmc, 0x00, 0x01, &[]).await.is_none());
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert_eq!(c.call(&bmc, 0x00, 0x01, &[]).await.unwrap().0, 0);
    });
}

/// Found by `shoal-harness fuzz --targets ipmi --seed 7` (case 2204,
/// the machine left off and its flags written valid with no override by
/// the cases before): a Chassis Control the machine refuses (an NMI to a
/// machine that is off: 0xD5) cleared the valid bit, as an accepted
/// restart does. A refused one changes nothing.
#[test]
fn a_refused_chassis_control_leaves_the_boot_flags() {
    use super::commands::execute;
    rt().block_on(async {
        let bmc = bmc();
        let x = |cmd: u8, data: &'static [u8]| {
            let bmc = bmc.clone();
            async move { execute(&bmc, Privilege::Administrator, 0x00, cmd, data).await }
        };
        assert_eq!(x(0x02, &[0x00]).await.0, 0, "power off");
        assert_eq!(x(0x08, &[0x05, 0x80, 0x00, 0, 0, 0]).await.0, 0);
        let flags = x(0x09, &[0x05, 0, 0]).await.1;
        assert_eq!(flags[2], 0x80);
        assert_eq!(
            x(0x02, &[0x04]).await.0,
            0xd5,
            "no NMI to a machine that is off"
        );
        assert_eq!(x(0x09, &[0x05, 0, 0]).await.1, flags);
    });
}

mod hardening;
mod sel;
