//! Unit tests of accounts, lockout, the bcrypt gate and sessions.

use super::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn store() -> AuthStore {
    let h = bcrypt::hash("secret-pw", 4).unwrap();
    AuthStore::parse_htpasswd("pw", &format!("# comment\nadmin:{h}\n")).unwrap()
}

/// `admin` and `other`, both Administrators.
fn two_admins() -> AuthStore {
    let h = bcrypt::hash("secret-pw", 4).unwrap();
    AuthStore::parse_htpasswd("pw", &format!("admin:{h}\nother:{h}\n")).unwrap()
}

fn change(f: impl FnOnce(&mut AccountChange)) -> AccountChange {
    let mut c = AccountChange::default();
    f(&mut c);
    c
}

#[tokio::test]
async fn verify_accepts_only_the_right_password() {
    let s = store();
    assert!(s.verify("admin", "secret-pw").await.is_ok());
    // Second time comes from the cache and must still be right.
    assert!(s.verify("admin", "secret-pw").await.is_ok());
    assert!(s.verify("admin", "wrong").await.is_err());
    assert!(s.verify("nobody", "secret-pw").await.is_err());
}

#[tokio::test]
async fn every_refusal_costs_one_bcrypt_and_cached_checks_none() {
    let s = store();
    s.verify("admin", "secret-pw").await.unwrap();
    let n = s.bcrypt_checks();
    s.verify("admin", "secret-pw").await.unwrap();
    assert_eq!(s.bcrypt_checks(), n, "cached");
    assert!(s.verify("nobody", "secret-pw").await.is_err());
    assert_eq!(s.bcrypt_checks(), n + 1, "an unknown user costs as much");
    assert!(s.verify("admin", "wrong").await.is_err());
    assert_eq!(s.bcrypt_checks(), n + 2);
    assert_eq!(hash_cost(&s.dummy_hash), Some(4), "the accounts' cost");
}

#[tokio::test]
async fn failures_lock_the_account_until_unlocked() {
    let s = store();
    s.set_lockout_policy(LockoutPolicy {
        threshold: 3,
        duration: 300,
        reset_after: 300,
    });
    for _ in 0..3 {
        assert!(s.verify("admin", "wrong").await.is_err());
    }
    assert!(s.account("1").unwrap().locked());
    assert!(
        matches!(
            s.verify("admin", "secret-pw").await,
            Err(AuthError::BadCredentials)
        ),
        "locked answers as a wrong password"
    );
    s.modify_account("1", change(|c| c.locked = Some(false)), None)
        .await
        .unwrap();
    assert!(!s.account("1").unwrap().locked());
    assert!(s.verify("admin", "secret-pw").await.is_ok());
}

#[tokio::test]
async fn failures_count_within_the_reset_window_only() {
    let s = store();
    // Each failure is older than 0 s: the counter restarts every time.
    s.set_lockout_policy(LockoutPolicy {
        threshold: 2,
        duration: 300,
        reset_after: 0,
    });
    for _ in 0..4 {
        assert!(s.verify("admin", "wrong").await.is_err());
    }
    assert!(!s.account("1").unwrap().locked());
    // A success resets the counter too.
    s.set_lockout_policy(LockoutPolicy {
        threshold: 2,
        ..LockoutPolicy::default()
    });
    assert!(s.verify("admin", "secret-pw").await.is_ok());
    assert!(s.verify("admin", "wrong").await.is_err());
    assert!(s.verify("admin", "secret-pw").await.is_ok());
    assert!(s.verify("admin", "wrong").await.is_err());
    assert!(!s.account("1").unwrap().locked());
    // Threshold 0: never locked.
    s.set_lockout_policy(LockoutPolicy {
        threshold: 0,
        ..LockoutPolicy::default()
    });
    for _ in 0..6 {
        assert!(s.verify("admin", "wrong").await.is_err());
    }
    assert!(!s.account("1").unwrap().locked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bcrypt_queue_is_bounded_and_cached_checks_pass_it() {
    let s = Arc::new(store());
    s.set_lockout_policy(LockoutPolicy {
        threshold: 0,
        ..LockoutPolicy::default()
    });
    s.verify("admin", "secret-pw").await.unwrap();
    // Every permit taken: checks queue up to the bound.
    let n = s.gate.permits.available_permits() as u32;
    let held = s.gate.permits.clone().acquire_many_owned(n).await.unwrap();
    let waiting: Vec<_> = (0..BCRYPT_QUEUE)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.verify("admin", "wrong").await })
        })
        .collect();
    while s.gate.waiting.load(Ordering::SeqCst) < BCRYPT_QUEUE {
        tokio::task::yield_now().await;
    }
    assert!(matches!(
        s.verify("nobody", "x").await,
        Err(AuthError::Busy)
    ));
    assert!(s.verify("admin", "secret-pw").await.is_ok(), "cached");
    drop(held);
    for w in waiting {
        assert!(matches!(w.await.unwrap(), Err(AuthError::BadCredentials)));
    }
    assert_eq!(s.gate.waiting.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn password_change_invalidates_cache_and_other_sessions() {
    let s = store();
    let (mine, token) = s.login("admin", "secret-pw").await.unwrap();
    let (_, other) = s.login("admin", "secret-pw").await.unwrap();
    s.modify_account(
        "1",
        change(|c| c.password = Some("another-pw".into())),
        Some(&mine.id),
    )
    .await
    .unwrap();
    assert!(s.verify("admin", "secret-pw").await.is_err());
    assert!(s.verify("admin", "another-pw").await.is_ok());
    assert!(s.by_token(&token).is_some(), "the session that changed it");
    assert!(s.by_token(&other).is_none());
}

#[tokio::test]
async fn sessions_follow_the_account() {
    let s = two_admins();
    let (_, token) = s.login("other", "secret-pw").await.unwrap();
    s.modify_account("2", change(|c| c.role = Some(Role::ReadOnly)), None)
        .await
        .unwrap();
    assert_eq!(s.by_token(&token).unwrap().role, Role::ReadOnly);
    s.modify_account("2", change(|c| c.enabled = Some(false)), None)
        .await
        .unwrap();
    assert!(s.by_token(&token).is_none(), "disabled");
    s.modify_account("2", change(|c| c.enabled = Some(true)), None)
        .await
        .unwrap();
    let (_, token) = s.login("other", "secret-pw").await.unwrap();
    s.delete_account("2").unwrap();
    assert!(s.by_token(&token).is_none(), "deleted");
}

#[tokio::test]
async fn session_limits_per_user_and_for_administrators() {
    let s = two_admins();
    for _ in 0..MAX_SESSIONS_PER_USER {
        s.login("other", "secret-pw").await.unwrap();
    }
    assert!(matches!(
        s.login("other", "secret-pw").await,
        Err(AuthError::SessionLimit)
    ));
    s.modify_account("2", change(|c| c.role = Some(Role::ReadOnly)), None)
        .await
        .unwrap();
    s.drop_all_sessions();
    // Others fill all but the administrators' reserve.
    {
        let mut sessions = s.lock_sessions();
        for i in 0..MAX_SESSIONS - ADMIN_RESERVED_SESSIONS {
            sessions.insert(
                format!("t{i}"),
                Session {
                    id: format!("s{i}"),
                    username: format!("user{i}"),
                    created: SystemTime::now(),
                    last_used: Instant::now(),
                },
            );
        }
    }
    assert!(matches!(
        s.login("other", "secret-pw").await,
        Err(AuthError::SessionLimit)
    ));
    assert!(s.login("admin", "secret-pw").await.is_ok());
}

#[test]
fn htpasswd_rejects_non_bcrypt() {
    let e = AuthStore::parse_htpasswd("f", "u:$apr1$abc$def\n")
        .err()
        .unwrap();
    assert!(e.to_string().contains("f:1"), "{e}");
}

#[tokio::test]
async fn last_admin_is_protected() {
    let s = store();
    assert!(matches!(s.delete_account("1"), Err(AuthError::LastAdmin)));
    let r = s
        .modify_account("1", change(|c| c.role = Some(Role::ReadOnly)), None)
        .await;
    assert!(matches!(r, Err(AuthError::LastAdmin)));
}

#[tokio::test]
async fn sessions_expire() {
    let s = store();
    let (_, token) = s.login("admin", "secret-pw").await.unwrap();
    s.set_session_timeout(0);
    assert!(s.by_token(&token).is_none());
}

/// Guesses that run at once get no more tries than guesses in a row: each
/// takes its slot of the threshold before bcrypt, and a right password
/// queued behind the threshold's worth of wrong ones is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_guesses_get_the_threshold_and_no_more() {
    let s = Arc::new(store());
    s.set_lockout_policy(LockoutPolicy {
        threshold: 5,
        duration: 300,
        reset_after: 300,
    });
    let before = s.bcrypt_checks();
    let mut wrong = Vec::new();
    for i in 0..20 {
        let s = s.clone();
        wrong.push(tokio::spawn(async move {
            s.verify("admin", &format!("wrong-{i}")).await
        }));
    }
    // The wrong ones take the whole budget before the right one comes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let taken = {
            let a = &s.read_accounts()[0];
            a.in_flight + a.failures >= 5 || a.locked()
        };
        if taken {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the guesses never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let right = s.verify("admin", "secret-pw").await;
    for w in wrong {
        assert!(w.await.unwrap().is_err());
    }
    assert!(
        right.is_err(),
        "the right password behind 20 running guesses"
    );
    assert!(s.account("1").unwrap().locked());
    // Each refused check still costs one bcrypt (those over the budget
    // against the dummy hash), so the answers take as long.
    assert_eq!(s.bcrypt_checks() - before, 21);
    assert_eq!(s.read_accounts()[0].in_flight, 0, "every slot given back");
}
