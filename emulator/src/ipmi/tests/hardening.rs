//! A hostile network against a whole BMC: session slots per account and
//! for administrators, the accounts' lockout policy over RAKP, no user
//! enumeration through RAKP 2, and only RMCP+ advertised.

use super::*;
use crate::auth::LockoutPolicy;
use crate::ipmi::crypto::SUITE_ZERO;
use crate::ipmi::session::{
    status, ADMIN_RESERVED_SESSIONS, MAX_ACTIVE, MAX_SESSIONS_PER_USER, SETUP_TIMEOUT,
};

fn user(name: &str, password: &str, privilege: Privilege) -> User {
    User {
        name: name.into(),
        password: password.into(),
        privilege,
    }
}

fn users() -> Vec<User> {
    vec![
        user("admin", "secret", Privilege::Administrator),
        user("viewer", "look", Privilege::User),
        user("reader", "read", Privilege::User),
        user("op", "oper", Privilege::Operator),
    ]
}

/// The RMCP+ payload of a session-setup answer.
fn setup_payload(datagram: &[u8]) -> Vec<u8> {
    match wire::parse(datagram) {
        Ok(wire::Datagram::V20(p)) => p.payload.to_vec(),
        other => panic!("not an RMCP+ answer: {other:?}"),
    }
}

/// Open Session's status when the console proposes `max_priv` (0: the
/// highest the BMC allows).
async fn open_status(bmc: &Arc<Bmc>, max_priv: u8) -> u8 {
    let l = Login::new(b"admin", b"secret", suite(17), 4, 7, [1; 16]);
    let mut open = l.open();
    // RMCP (4), AuthType, payload type, session ID, sequence, length.
    open[16 + 1] = max_priv;
    setup_payload(&bmc.handle_at(&open).await.unwrap())[1]
}

/// Open Session and RAKP 1 for `name`: RAKP 2's payload, and the login
/// to carry on with.
async fn rakp2(bmc: &Arc<Bmc>, name: &str, suite: u8, role: u8) -> (Vec<u8>, Login) {
    let mut l = Login::new(
        name.as_bytes(),
        b"guess",
        self::suite(suite),
        role,
        9,
        [2; 16],
    );
    let open = bmc.handle_at(&l.open()).await.unwrap();
    let rakp1 = l.rakp1(&open).unwrap();
    (setup_payload(&bmc.handle_at(&rakp1).await.unwrap()), l)
}

/// What ipmitool does when RAKP 2's code does not match its password:
/// RAKP 3 with status 0x0F and no code. No answer comes.
async fn give_up(bmc: &Arc<Bmc>, name: &str) {
    let mut l = Login::new(name.as_bytes(), b"guess", suite(17), 3, 9, [2; 16]);
    let open = bmc.handle_at(&l.open()).await.unwrap();
    let sid = setup_payload(&open)[8..12].to_vec();
    let rakp1 = l.rakp1(&open).unwrap();
    assert_eq!(setup_payload(&bmc.handle_at(&rakp1).await.unwrap())[1], 0);
    let mut r3 = vec![0x03, status::INVALID_INTEGRITY_CHECK, 0, 0];
    r3.extend_from_slice(&sid);
    let pkt = wire::build_v20(payload::RAKP3, false, 0, 0, &r3, None);
    assert!(bmc.handle_at(&pkt).await.is_none());
}

fn suite(id: u8) -> crate::ipmi::crypto::Suite {
    *SUITES.iter().find(|s| s.id == id).unwrap()
}

#[test]
fn one_account_gets_its_share_of_sessions_and_administrators_the_last() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        let mut kept = Vec::new();
        for _ in 0..MAX_SESSIONS_PER_USER {
            kept.push(login(&bmc, "viewer", "look", 17, 2).await.unwrap());
        }
        // Its own limit, whatever room the table has.
        assert_eq!(
            login(&bmc, "viewer", "look", 17, 2).await.err(),
            Some(status::NO_RESOURCES)
        );
        // Other accounts below ADMINISTRATOR fill the table but the
        // administrators' slots.
        let shared = MAX_ACTIVE - ADMIN_RESERVED_SESSIONS;
        while bmc.active_sessions() < shared {
            kept.push(login(&bmc, "reader", "read", 17, 2).await.unwrap());
        }
        assert_eq!(
            login(&bmc, "op", "oper", 17, 3).await.err(),
            Some(status::NO_RESOURCES)
        );
        // An administrator asking for less than ADMINISTRATOR is refused
        // too; a console proposing USER already at Open Session (ipmitool
        // prints that answer's status).
        assert_eq!(
            login(&bmc, "admin", "secret", 17, 2).await.err(),
            Some(status::NO_RESOURCES)
        );
        assert_eq!(open_status(&bmc, 2).await, status::NO_RESOURCES);
        assert_eq!(open_status(&bmc, 0).await, 0);
        // The administrators get the last slots.
        for _ in 0..ADMIN_RESERVED_SESSIONS {
            kept.push(login(&bmc, "admin", "secret", 17, 4).await.unwrap());
        }
        assert_eq!(bmc.active_sessions(), MAX_ACTIVE);
        assert_eq!(open_status(&bmc, 0).await, status::NO_RESOURCES);
        // A session closed gives its slot back.
        let mut c = kept.remove(0);
        let sid = c.bmc_sid.to_le_bytes();
        assert_eq!(c.call(&bmc, 0x06, 0x3c, &sid).await.unwrap().0, 0);
        assert_eq!(open_status(&bmc, 0).await, 0);
        login(&bmc, "admin", "secret", 17, 4).await.unwrap();
    });
}

fn policy(threshold: u32, duration: u64, reset_after: u64) -> LockoutPolicy {
    LockoutPolicy {
        threshold,
        duration,
        reset_after,
    }
}

/// The finding: 250 wrong passwords, then the right one logged in. Now
/// the accounts' policy (Redfish's AccountService, default 5 failures)
/// locks the account; while locked its right password fails as a wrong
/// one does; other accounts are not affected; it opens after the
/// duration.
#[test]
fn wrong_passwords_lock_the_account_until_the_lockout_ends() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        let defaults = LockoutPolicy::default();
        assert_eq!(bmc.auth.lockout_policy(), defaults);
        for _ in 0..defaults.threshold {
            assert_eq!(login(&bmc, "op", "wrong", 17, 3).await.err(), Some(0x0f));
        }
        assert_eq!(login(&bmc, "op", "oper", 17, 3).await.err(), Some(0x0f));
        login(&bmc, "admin", "secret", 3, 4).await.unwrap();
        // The live policy: what a PATCH of AccountService sets.
        bmc.auth.set_lockout_policy(policy(2, 1, 1));
        for _ in 0..2 {
            assert_eq!(login(&bmc, "viewer", "x", 3, 2).await.err(), Some(0x0f));
        }
        assert_eq!(login(&bmc, "viewer", "look", 3, 2).await.err(), Some(0x0f));
        // Tries while locked do not extend the lock.
        assert_eq!(login(&bmc, "viewer", "x", 3, 2).await.err(), Some(0x0f));
        std::thread::sleep(Duration::from_millis(1100));
        login(&bmc, "viewer", "look", 3, 2).await.unwrap();
    });
}

/// A console that stops at RAKP 2 because its code did not match (RAKP 3
/// with status 0x0F, as ipmitool sends it) failed a login too.
#[test]
fn a_console_giving_up_after_rakp_2_counts_as_a_failure() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        bmc.auth.set_lockout_policy(policy(3, 60, 60));
        for _ in 0..3 {
            give_up(&bmc, "op").await;
        }
        assert_eq!(login(&bmc, "op", "oper", 17, 3).await.err(), Some(0x0f));
    });
}

/// ipmitool 1.8.19, FreeIPMI and pyghmi stop after a RAKP 2 whose code
/// is not their password's and send no RAKP 3. Each such challenge is a
/// check under way, which counts against the threshold at once, and a
/// failure when it ends unanswered; a login forgives the checks begun
/// before it.
#[test]
fn challenges_a_console_abandons_count_as_failures() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        bmc.auth.set_lockout_policy(policy(3, 60, 60));
        for _ in 0..3 {
            assert_eq!(rakp2(&bmc, "op", 17, 3).await.0[1], 0);
        }
        assert_eq!(login(&bmc, "op", "oper", 17, 3).await.err(), Some(0x0f));
        bmc.tick(Instant::now() + SETUP_TIMEOUT).await;
        assert_eq!(login(&bmc, "op", "oper", 17, 3).await.err(), Some(0x0f));

        let bmc = bmc_with(users());
        bmc.auth.set_lockout_policy(policy(3, 60, 60));
        for _ in 0..2 {
            rakp2(&bmc, "op", 17, 3).await;
        }
        login(&bmc, "op", "oper", 17, 3).await.unwrap();
        bmc.tick(Instant::now() + SETUP_TIMEOUT).await;
        for _ in 0..2 {
            assert_eq!(login(&bmc, "op", "wrong", 17, 3).await.err(), Some(0x0f));
        }
        login(&bmc, "op", "oper", 17, 3).await.unwrap();
    });
}

/// The count of failures restarts after `AccountLockoutCounterResetAfter`
/// without one, and after a login; threshold 0 turns lockout off.
#[test]
fn the_failure_count_resets_after_a_quiet_while_and_after_a_login() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        bmc.auth.set_lockout_policy(policy(3, 60, 1));
        for _ in 0..2 {
            assert_eq!(login(&bmc, "op", "wrong", 3, 3).await.err(), Some(0x0f));
        }
        std::thread::sleep(Duration::from_millis(1100));
        for _ in 0..2 {
            assert_eq!(login(&bmc, "op", "wrong", 3, 3).await.err(), Some(0x0f));
        }
        login(&bmc, "op", "oper", 3, 3).await.unwrap();
        for _ in 0..2 {
            assert_eq!(login(&bmc, "op", "wrong", 3, 3).await.err(), Some(0x0f));
        }
        login(&bmc, "op", "oper", 3, 3).await.unwrap();
        // The third failure in a row locks.
        for _ in 0..3 {
            assert_eq!(login(&bmc, "op", "wrong", 3, 3).await.err(), Some(0x0f));
        }
        assert_eq!(login(&bmc, "op", "oper", 3, 3).await.err(), Some(0x0f));
        bmc.auth.set_lockout_policy(policy(0, 60, 60));
        login(&bmc, "viewer", "look", 3, 2).await.unwrap();
        for _ in 0..10 {
            assert_eq!(login(&bmc, "viewer", "x", 3, 2).await.err(), Some(0x0f));
        }
        login(&bmc, "viewer", "look", 3, 2).await.unwrap();
    });
}

/// LAN parameter 26, Bad Password Threshold (IPMI v2.0 table 23-4): no
/// event, the threshold, then the counter's reset and the lockout in
/// tens of seconds, least significant byte first (rounded up).
#[test]
fn lan_parameter_26_shows_the_lockout_policy() {
    use super::super::commands::execute;
    rt().block_on(async {
        let bmc = bmc_with(users());
        let param = |bmc: Arc<Bmc>| async move {
            execute(&bmc, Privilege::Administrator, 0x0c, 0x02, &[1, 26, 0, 0]).await
        };
        assert_eq!(
            param(bmc.clone()).await,
            (0, vec![0x11, 0, 5, 30, 0, 30, 0])
        );
        bmc.auth.set_lockout_policy(policy(3, 4000, 25));
        assert_eq!(
            param(bmc.clone()).await,
            (0, vec![0x11, 0, 3, 3, 0, 0x90, 0x01])
        );
    });
}

/// Set LAN Configuration Parameters 26 sets the one lockout policy (as
/// the AccountService shows it), administrators only; a refused value,
/// and every other parameter, changes nothing.
#[test]
fn lan_parameter_26_sets_the_lockout_policy() {
    use super::super::commands::execute;
    rt().block_on(async {
        let bmc = bmc_with(users());
        let set = |bmc: Arc<Bmc>, p: Privilege, data: Vec<u8>| async move {
            execute(&bmc, p, 0x0c, 0x01, &data).await.0
        };
        let admin = Privilege::Administrator;
        // Threshold 4, counter reset after 60 s, locked for 120 s.
        let value = vec![1, 26, 0, 4, 6, 0, 12, 0];
        assert_eq!(
            set(bmc.clone(), Privilege::Operator, value.clone()).await,
            0xd4
        );
        assert_eq!(bmc.auth.lockout_policy(), LockoutPolicy::default());
        assert_eq!(set(bmc.clone(), admin, value).await, 0);
        assert_eq!(bmc.auth.lockout_policy(), policy(4, 120, 60));
        let read = execute(&bmc, admin, 0x0c, 0x02, &[1, 26, 0, 0]).await;
        assert_eq!(read, (0, vec![0x11, 0, 4, 6, 0, 12, 0]));
        for (data, code) in [
            (vec![1, 26, 1, 4, 6, 0, 12, 0], 0xcc),  // an event asked for
            (vec![1, 26, 0, 4, 13, 0, 12, 0], 0xcc), // reset after the lock ends
            (vec![1, 26, 0, 4, 6, 0, 12], 0xc7),     // short
            (vec![2, 26, 0, 4, 6, 0, 12, 0], 0xcc),  // no channel 2
            (vec![1, 3, 10, 0, 0, 9], 0x82),         // the IP address
            (vec![1, 99, 0], 0x80),
        ] {
            assert_eq!(
                set(bmc.clone(), admin, data.clone()).await,
                code,
                "{data:?}"
            );
            assert_eq!(bmc.auth.lockout_policy(), policy(4, 120, 60), "{data:?}");
        }
        // Lockout off: threshold 0.
        assert_eq!(
            set(bmc.clone(), admin, vec![1, 26, 0, 0, 0, 0, 0, 0]).await,
            0
        );
        assert_eq!(bmc.auth.lockout_policy().threshold, 0);
    });
}

/// RAKP 2 for a name no user has looks as a known user's: status 0, the
/// same length, a code keyed by a secret of this BMC; the login then
/// fails at RAKP 3 with the status of a wrong password. A locked user's
/// likewise. Only a malformed name length is still 0x0C.
#[test]
fn an_unknown_name_is_answered_as_a_known_one_with_a_wrong_password() {
    rt().block_on(async {
        let bmc = bmc_with(users());
        for suite in [3, 17] {
            let (known, _) = rakp2(&bmc, "admin", suite, 4).await;
            let (unknown, _) = rakp2(&bmc, "nobody", suite, 4).await;
            assert_eq!(unknown[1], 0, "suite {suite}");
            assert_eq!(unknown.len(), known.len(), "suite {suite}");
            assert_eq!(unknown[24..40], known[24..40], "the GUID");
            assert_ne!(unknown[40..], known[40..]);
        }
        let wrong = login(&bmc, "admin", "wrong", 17, 4).await.err();
        assert_eq!(wrong, Some(status::INVALID_INTEGRITY_CHECK));
        assert_eq!(login(&bmc, "nobody", "secret", 17, 4).await.err(), wrong);
        assert_eq!(login(&bmc, "nobody", "", 3, 2).await.err(), wrong);
        // A locked account answers as an unknown one.
        bmc.auth.set_lockout_policy(policy(1, 60, 60));
        assert_eq!(login(&bmc, "op", "wrong", 17, 3).await.err(), wrong);
        let (locked, _) = rakp2(&bmc, "op", 17, 3).await;
        assert_eq!((locked[1], locked.len()), (0, 40 + 32));
        // Malformed name lengths keep their own status.
        let mut l = Login::new(b"admin", b"secret", suite(17), 4, 9, [2; 16]);
        let open = bmc.handle_at(&l.open()).await.unwrap();
        let mut rakp1 = l.rakp1(&open).unwrap();
        rakp1[16 + 27] = 17;
        let r = setup_payload(&bmc.handle_at(&rakp1).await.unwrap());
        assert_eq!(r[1], status::INVALID_NAME_LENGTH);
    });
}

/// With cipher suite 0 (no authentication) an unknown name still gets no
/// session.
#[test]
fn suite_zero_lets_no_unknown_name_in() {
    rt().block_on(async {
        let bmc = bmc_from(IpmiSettings {
            users: Users::new(users()).unwrap(),
            cipher_suite_zero: true,
            ..IpmiSettings::default()
        });
        for (name, established) in [("admin", true), ("nobody", false)] {
            let mut l = Login::new(name.as_bytes(), b"", SUITE_ZERO, 4, 9, [2; 16]);
            let open = bmc.handle_at(&l.open()).await.unwrap();
            let rakp1 = l.rakp1(&open).unwrap();
            let rakp3 = l.rakp3(&bmc.handle_at(&rakp1).await.unwrap()).unwrap();
            let rakp4 = bmc.handle_at(&rakp3.datagram).await.unwrap();
            assert_eq!(l.finish(&rakp4).is_ok(), established, "{name}");
        }
    });
}

/// A session-less request as a v1.5 datagram; the completion code and data.
async fn session_less(bmc: &Arc<Bmc>, netfn: u8, cmd: u8, data: &[u8]) -> (u8, Vec<u8>) {
    let req = wire::build_request(netfn, cmd, 1, data);
    let reply = bmc.handle_at(&wire::build_v15(&req)).await.unwrap();
    let Ok(wire::Datagram::V15 { message, .. }) = wire::parse(&reply) else {
        panic!("not a v1.5 answer");
    };
    (message[6], message[7..message.len() - 1].to_vec())
}

/// Get Channel Authentication Capabilities (IPMI v2.0 table 22-15)
/// advertises what is served: RMCP+ only, no IPMI v1.5 authentication
/// type, so v1.5 consoles stop at once instead of waiting for a session
/// challenge nobody answers; LAN parameters 1 and 2 agree, and a Get
/// Session Challenge is refused, not left unanswered.
#[test]
fn only_rmcp_plus_is_advertised() {
    use super::super::commands::execute;
    rt().block_on(async {
        let bmc = bmc();
        // v2.0 data asked (bit 7): extended capabilities, no v1.5 types;
        // non-null user names; IPMI v2.0 connections only.
        assert_eq!(
            session_less(&bmc, 0x06, 0x38, &[0x8e, 4]).await,
            (0, vec![0x01, 0x80, 0x04, 0x02, 0, 0, 0, 0])
        );
        // The v1.5 form: no authentication type at all.
        assert_eq!(
            session_less(&bmc, 0x06, 0x38, &[0x0e, 4]).await,
            (0, vec![0x01, 0x00, 0x04, 0x00, 0, 0, 0, 0])
        );
        let mut challenge = vec![0x00];
        challenge.extend_from_slice(b"admin\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(
            session_less(&bmc, 0x06, 0x39, &challenge).await.0,
            0xcc,
            "Get Session Challenge"
        );
        for (param, want) in [(1, vec![0x11, 0]), (2, vec![0x11, 0, 0, 0, 0, 0])] {
            let got = execute(
                &bmc,
                Privilege::Administrator,
                0x0c,
                0x02,
                &[1, param, 0, 0],
            )
            .await;
            assert_eq!(got, (0, want), "LAN parameter {param}");
        }
    });
}
