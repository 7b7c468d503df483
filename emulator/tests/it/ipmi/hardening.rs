//! The IPMI side against a hostile network, with the real clients: the
//! accounts' lockout policy (shown by `ipmitool lan print`, changed by a
//! PATCH of AccountService) over RAKP, and consoles of IPMI v1.5, which
//! is not served, told so at once.

use std::time::{Duration, Instant};

use super::*;

/// A field of `ipmitool lan print`.
fn field(out: &str, name: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// `ipmitool lan set 1 bad_pass_thresh` changes the one lockout policy:
/// the AccountService shows it, `lan print` reads it back; an operator
/// may not, and a read-only parameter is refused with nothing changed.
#[test]
fn ipmitool_sets_the_lockout_policy_the_account_service_shows() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let service = format!("{}/redfish/v1/AccountService", bmc.emu.url);
    let policy = || {
        let v = get(&service);
        (
            v["AccountLockoutThreshold"].clone(),
            v["AccountLockoutCounterResetAfter"].clone(),
            v["AccountLockoutDuration"].clone(),
        )
    };
    let set = ["lan", "set", "1", "bad_pass_thresh", "4", "0", "6", "12"];
    let (ok, out) = bmc.ipmitool(
        ("op", "0per-pw"),
        None,
        &[&["-L", "OPERATOR"], &set[..]].concat(),
    );
    assert!(!ok || out.contains("Insufficient privilege"), "{out}");
    assert_eq!(policy(), (json!(5), json!(300), json!(300)));
    let (ok, out) = bmc.ipmitool(ADMIN, None, &set);
    assert!(ok, "{out}");
    assert_eq!(policy(), (json!(4), json!(60), json!(120)));
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["lan", "print", "1"]);
    assert!(ok, "{out}");
    assert_eq!(field(&out, "Bad Password Threshold"), "4", "{out}");
    assert_eq!(field(&out, "User Lockout Interval"), "120", "{out}");
    let (ok, out) = bmc.ipmitool(ADMIN, None, &["lan", "set", "1", "ipaddr", "10.9.9.9"]);
    assert!(!ok || out.to_lowercase().contains("read"), "{out}");
    assert_eq!(policy(), (json!(4), json!(60), json!(120)));
}

/// `lan print` shows the accounts' lockout policy as the Bad Password
/// Threshold, a PATCH of AccountService included; after that many wrong
/// passwords the right one is refused too, until the lockout ends; other
/// users log in meanwhile. ipmitool sends no RAKP 3 after a RAKP 2 whose
/// code is not its password's: each such challenge counts against the
/// threshold at once and as a failure when it times out (10 s), from
/// when the lockout runs.
#[test]
fn ipmitool_sees_the_lockout_policy_and_is_locked_out_for_its_duration() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start();
    let print = || {
        let (ok, out) = bmc.ipmitool(ADMIN, None, &["lan", "print", "1"]);
        assert!(ok, "{out}");
        out
    };
    let out = print();
    assert_eq!(field(&out, "Bad Password Threshold"), "5", "{out}");
    assert_eq!(field(&out, "Attempt Count Reset Int."), "300", "{out}");
    assert_eq!(field(&out, "User Lockout Interval"), "300", "{out}");
    patch(
        &format!("{}/redfish/v1/AccountService", bmc.emu.url),
        r#"{"AccountLockoutThreshold": 3, "AccountLockoutDuration": 3,
            "AccountLockoutCounterResetAfter": 3}"#,
    );
    let out = print();
    assert_eq!(field(&out, "Bad Password Threshold"), "3", "{out}");
    // Tens of seconds, rounded up.
    assert_eq!(field(&out, "User Lockout Interval"), "10", "{out}");

    let status = |password| {
        let args = ["-L", "OPERATOR", "chassis", "status"];
        bmc.ipmitool(("op", password), Some(17), &args)
    };
    for _ in 0..3 {
        let (ok, out) = status("wrong-pw");
        assert!(!ok, "{out}");
    }
    let locked_at = Instant::now();
    let (ok, out) = status("0per-pw");
    assert!(!ok, "locked, the right password is refused: {out}");
    assert!(bmc.ipmitool(ADMIN, Some(17), &["chassis", "status"]).0);
    // Open again once the challenges timed out and the 3 s are over, not
    // before: tries while locked neither count nor extend the lock.
    let opened = loop {
        if status("0per-pw").0 {
            break locked_at.elapsed();
        }
        assert!(
            locked_at.elapsed() < Duration::from_secs(30),
            "still locked"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(opened >= Duration::from_secs(12), "open after {opened:?}");
}

/// Get Channel Authentication Capabilities offers no IPMI v1.5
/// authentication type, as no v1.5 session is served: `ipmitool -I lan`
/// and FreeIPMI's v1.5 driver stop at once with a message saying so
/// (before, they waited 8 and 20 s for a session challenge), while the
/// same tools over RMCP+ still log in.
#[test]
fn v1_5_consoles_are_told_at_once_that_it_is_not_served() {
    if !ipmitool_installed() {
        return;
    }
    let bmc = Bmc::start_on(free_low_udp_port());
    let port = bmc.port.to_string();
    let run = |prog: &str, args: &[&str]| {
        let started = Instant::now();
        let out = Command::new(prog).args(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text, started.elapsed())
    };
    let lan = |interface| {
        run(
            "ipmitool",
            &[
                "-I",
                interface,
                "-H",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "admin",
                "-P",
                "Adm1n-pw",
                "chassis",
                "status",
            ],
        )
    };
    let (ok, out, took) = lan("lan");
    assert!(!ok && out.contains("not supported"), "{out}");
    assert!(
        took < Duration::from_secs(2),
        "ipmitool -I lan took {took:?}"
    );
    let (ok, out, _) = lan("lanplus");
    assert!(ok, "{out}");

    let Some(bmc_info) = required("/usr/sbin/bmc-info", "Debian package freeipmi-tools") else {
        return;
    };
    let host = format!("127.0.0.1:{port}");
    let bmc_info = bmc_info.to_str().unwrap();
    let freeipmi = |driver| {
        run(
            bmc_info,
            &["-h", &host, "-u", "admin", "-p", "Adm1n-pw", "-D", driver],
        )
    };
    let (ok, out, took) = freeipmi("LAN");
    assert!(!ok, "{out}");
    assert!(
        took < Duration::from_secs(2),
        "bmc-info -D LAN took {took:?}: {out}"
    );
    let (ok, out, _) = freeipmi("LAN_2_0");
    assert!(ok, "{out}");
}

/// FreeIPMI and pyghmi, like ipmitool, stop after a RAKP 2 whose code is
/// not their password's: their wrong passwords count all the same, and the
/// user's right one is refused once they reach the threshold; pyghmi is
/// told "Incorrect password" then, no more.
#[test]
fn freeipmi_and_pyghmi_wrong_passwords_count_too() {
    let Some(bmc_info) = required("/usr/sbin/bmc-info", "Debian package freeipmi-tools") else {
        return;
    };
    let Some(python) = venv_program("python") else {
        return;
    };
    let bmc = Bmc::start_on(free_low_udp_port());
    patch(
        &format!("{}/redfish/v1/AccountService", bmc.emu.url),
        r#"{"AccountLockoutThreshold": 3}"#,
    );
    let host = format!("127.0.0.1:{}", bmc.port);
    let freeipmi = |password: &str| {
        let out = Command::new(&bmc_info)
            .args(["-h", &host, "-u", "op", "-p", password, "-l", "OPERATOR"])
            .args(["-D", "LAN_2_0"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.success(), text)
    };
    let pyghmi = |password: &str| {
        let script = "import sys\n\
            from pyghmi.ipmi import command\n\
            try:\n    \
                c = command.Command(bmc='127.0.0.1', port=int(sys.argv[1]),\n        \
                    userid='op', password=sys.argv[2], privlevel=3)\n    \
                print(c.get_power()['powerstate'])\n\
            except Exception as e:\n    \
                print('error:', e)\n";
        let out = Command::new(&python)
            .args(["-c", script, &bmc.port.to_string(), password])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(pyghmi("0per-pw"), "off");
    for _ in 0..2 {
        let (ok, err) = freeipmi("wrong-pw");
        assert!(!ok && err.contains("password invalid"), "{err}");
    }
    let wrong = pyghmi("wrong-pw");
    assert!(wrong.contains("Incorrect password"), "{wrong}");
    // Three failed checks: the right password fails as a wrong one.
    let (ok, err) = freeipmi("0per-pw");
    assert!(!ok && err.contains("password invalid"), "{err}");
    assert_eq!(pyghmi("0per-pw"), wrong);
    let (ok, _) = bmc.ipmitool(ADMIN, None, &["chassis", "status"]);
    assert!(ok, "other users log in");
}
