//! Tests of the rules (parsing, bounds, matching) and of the decisions
//! and outages they make.

use super::rules::glob;
use super::*;

fn rule() -> Rule {
    Rule::default()
}

#[test]
fn paths_match_with_stars() {
    assert!(glob("/redfish/v1/Systems/*", "/redfish/v1/Systems/abc"));
    assert!(glob(
        "/redfish/v1/Systems/*/Actions/*",
        "/redfish/v1/Systems/x/Actions/ComputerSystem.Reset"
    ));
    assert!(!glob(
        "/redfish/v1/Systems/*/Actions/*",
        "/redfish/v1/Systems/x"
    ));
    assert!(glob("/redfish/v1", "/redfish/v1"));
    assert!(!glob("/redfish/v1", "/redfish/v1/Systems"));
    assert!(glob("*", "/anything"));
}

#[test]
fn the_same_seed_makes_the_same_decisions() {
    let cfg = FaultConfig {
        seed: 7,
        rules: vec![Rule {
            error_rate: 0.5,
            ..rule()
        }],
    };
    let run = || {
        let f = Faults::new(cfg.clone());
        (0..200)
            .map(|_| f.decide("GET", "/redfish/v1", &[]).1 != Decision::Pass)
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run());
    let failed = a.iter().filter(|x| **x).count();
    assert!((70..130).contains(&failed), "{failed} of 200 at rate 0.5");
    let other = Faults::new(FaultConfig {
        seed: 8,
        ..cfg.clone()
    });
    let b: Vec<bool> = (0..200)
        .map(|_| other.decide("GET", "/redfish/v1", &[]).1 != Decision::Pass)
        .collect();
    assert_ne!(a, b, "another seed, other decisions");
}

#[test]
fn rules_select_by_system_method_and_path_and_latencies_add_up() {
    let f = Faults::new(FaultConfig {
        seed: 0,
        rules: vec![
            Rule {
                systems: vec!["node-1".into()],
                methods: vec!["PATCH".into()],
                path: Some("/redfish/v1/Systems/*".into()),
                error_rate: 1.0,
                status: Some(503),
                latency_ms: 5,
                ..rule()
            },
            Rule {
                latency_ms: 7,
                ..rule()
            },
        ],
    });
    let n1 = ["node-1".to_string()];
    let (lat, d) = f.decide("PATCH", "/redfish/v1/Systems/a", &n1);
    assert_eq!(
        (lat, d),
        (
            Duration::from_millis(12),
            Decision::Fail {
                status: Some(503),
                message_id: None
            }
        )
    );
    assert_eq!(
        f.decide("GET", "/redfish/v1/Systems/a", &n1).1,
        Decision::Pass
    );
    assert_eq!(
        f.decide("PATCH", "/redfish/v1/Systems/a", &["node-2".to_string()]),
        (Duration::from_millis(7), Decision::Pass)
    );
    f.clear();
    assert!(!f.active());
}

/// In-band IPMI requests match only rules that name the IPMI method; a
/// rule without methods stays an HTTP rule.
#[test]
fn ipmi_in_band_requests_match_only_rules_naming_ipmi() {
    let f = Faults::new(FaultConfig {
        seed: 0,
        rules: vec![
            Rule {
                latency_ms: 7,
                ..rule()
            },
            Rule {
                methods: vec![IPMI.into()],
                path: Some("/ipmi/in-band/06/*".into()),
                drop_rate: 1.0,
                ..rule()
            },
        ],
    });
    let n = ["node-0".to_string()];
    assert_eq!(
        f.decide(IPMI, "/ipmi/in-band/06/01", &n),
        (Duration::ZERO, Decision::Drop)
    );
    assert_eq!(
        f.decide(IPMI, "/ipmi/in-band/00/09", &n),
        (Duration::ZERO, Decision::Pass)
    );
    assert_eq!(
        f.decide("GET", "/ipmi/in-band/06/01", &n),
        (Duration::from_millis(7), Decision::Pass)
    );
    let cfg = FaultConfig::from_json(br#"{"rules": [{"methods": ["IPMI"], "drop_rate": 1}]}"#);
    assert!(cfg.is_ok(), "{cfg:?}");
}

#[test]
fn a_reboot_makes_the_bmc_unavailable_then_ends() {
    let f = Faults::default();
    assert!(!f.active());
    f.reboot(vec!["node-0".into()], 30);
    assert!(f.active());
    match f.decide("GET", "/redfish/v1", &["node-0".to_string()]).1 {
        Decision::Unavailable(s) => assert!((29..=30).contains(&s), "{s}"),
        d => panic!("{d:?}"),
    }
    assert_eq!(
        f.decide("GET", "/redfish/v1", &["node-1".to_string()]).1,
        Decision::Pass
    );
    f.reboot(Vec::new(), 0);
    assert_eq!(f.outages().len(), 1, "a zero-second reboot is over at once");
}

#[test]
fn bad_rules_name_their_key() {
    let bad = |r: Rule| {
        FaultConfig {
            seed: 0,
            rules: vec![rule(), r],
        }
        .check()
        .unwrap_err()
    };
    assert!(bad(Rule {
        error_rate: 1.5,
        ..rule()
    })
    .contains("rules[1].error_rate"));
    assert!(bad(Rule {
        drop_rate: -0.1,
        ..rule()
    })
    .contains("rules[1].drop_rate"));
    assert!(bad(Rule {
        status: Some(200),
        ..rule()
    })
    .contains("rules[1].status"));
    assert!(bad(Rule {
        methods: vec!["FETCH".into()],
        ..rule()
    })
    .contains("rules[1].methods[0]"));
    assert!(bad(Rule {
        path: Some("Systems".into()),
        ..rule()
    })
    .contains("rules[1].path"));
    assert!(bad(Rule {
        latency_ms: MAX_LATENCY_MS + 1,
        ..rule()
    })
    .contains("rules[1].latency_ms"));
    assert!(bad(Rule {
        power_delay_ms: u64::MAX,
        ..rule()
    })
    .contains("rules[1].power_delay_ms"));
    assert!(bad(Rule {
        path: Some(format!("/{}", "a".repeat(MAX_PATH))),
        ..rule()
    })
    .contains("rules[1].path"));
    let many = FaultConfig {
        seed: 0,
        rules: vec![rule(); MAX_RULES + 1],
    };
    assert!(many.check().unwrap_err().starts_with("rules:"));
}

#[test]
fn json_errors_name_their_key() {
    let err = |s: &str| FaultConfig::from_json(s.as_bytes()).unwrap_err();
    assert!(err(r#"{"rules":[{},{"latency_ms":18446744073709551615}]}"#)
        .starts_with("rules[1].latency_ms:"));
    assert!(err(r#"{"rules":[{"latency_ms":1e30}]}"#).starts_with("rules[0].latency_ms:"));
    assert!(err(r#"{"rules":[{"latency_ms":-1}]}"#).starts_with("rules[0].latency_ms:"));
    assert!(err(r#"{"rules":[{"status":"503"}]}"#).starts_with("rules[0].status:"));
    assert!(err(r#"{"rules":[{"status":70000}]}"#).starts_with("rules[0].status:"));
    assert!(err(r#"{"rules":[{"error_rate":2}]}"#).starts_with("rules[0].error_rate:"));
    assert!(err(r#"{"rules":[{"bogus":1}]}"#).starts_with("rules[0]:"));
    assert!(err(r#"{"seed":-3}"#).starts_with("seed:"));
    assert!(err(r#"{"rule":[]}"#).starts_with("rule:"));
    assert!(err("[]").contains("object"));
    assert!(err(r#"{"rules":[{"times":-1}]}"#).starts_with("rules[0].times:"));
    assert!(err(r#"{"rules":[{"times":4294967296}]}"#).starts_with("rules[0].times:"));
    let unknown = err(r#"{"rules":[{},{"message_id":"LC999"}]}"#);
    assert!(unknown.starts_with("rules[1].message_id:"), "{unknown}");
    assert!(
        unknown.contains("LC068"),
        "names the ones it knows: {unknown}"
    );
    assert!(err(r#"{"rules":[{"message_id":"PropertyUnknown"}]}"#).contains("argument"));
    let long = format!(r#"{{"rules":[{{"message_id":"{}"}}]}}"#, "A".repeat(65));
    assert!(err(&long).starts_with("rules[0].message_id:"));
    for id in ["LC068", "RAC0679", "ResourceInUse"] {
        let body = format!(r#"{{"rules":[{{"message_id":"{id}","times":2}}]}}"#);
        let ok = FaultConfig::from_json(body.as_bytes()).unwrap();
        assert_eq!(ok.rules[0].message_id.as_deref(), Some(id));
    }
    let ok = FaultConfig::from_json(br#"{"seed":3,"rules":[{"latency_ms":60000}]}"#).unwrap();
    assert_eq!((ok.seed, ok.rules[0].latency_ms), (3, 60_000));
    assert_eq!(FaultConfig::from_json(b"").unwrap(), FaultConfig::default());
}

/// A rule with `times` fails that many matching requests, then is spent:
/// no more failures and no more latency; the failures carry its message.
/// Rules after it still apply; replacing the rules rearms it.
#[test]
fn a_rule_with_times_is_spent_after_that_many_failures() {
    let cfg = FaultConfig {
        seed: 0,
        rules: vec![
            Rule {
                methods: vec!["POST".into()],
                path: Some("/redfish/v1/Managers/*/Actions/Oem/*".into()),
                error_rate: 1.0,
                latency_ms: 3,
                message_id: Some("LC068".into()),
                times: Some(2),
                ..rule()
            },
            Rule {
                methods: vec!["POST".into()],
                error_rate: 1.0,
                message_id: Some("RAC0679".into()),
                times: Some(1),
                ..rule()
            },
        ],
    };
    let f = Faults::new(cfg.clone());
    let import = || {
        f.decide(
            "POST",
            "/redfish/v1/Managers/iDRAC.Embedded.1/Actions/Oem/x",
            &[],
        )
    };
    let fail = |id: &str| Decision::Fail {
        status: None,
        message_id: Some(id.into()),
    };
    assert_eq!(import(), (Duration::from_millis(3), fail("LC068")));
    // A GET matches neither rule and spends nothing.
    assert_eq!(f.decide("GET", "/redfish/v1", &[]).1, Decision::Pass);
    assert_eq!(import(), (Duration::from_millis(3), fail("LC068")));
    assert_eq!(import(), (Duration::ZERO, fail("RAC0679")));
    for _ in 0..5 {
        assert_eq!(import(), (Duration::ZERO, Decision::Pass));
    }
    assert!(f.active(), "spent rules are still the configuration");
    f.replace(cfg);
    assert_eq!(import().1, fail("LC068"), "replaced rules fire again");
}

#[test]
fn update_faults_select_updates_only_and_take_only_their_members() {
    let stuck = Rule {
        methods: vec![UPDATE.into()],
        path: Some("/bios.fw".into()),
        stuck_rate: 1.0,
        ..Rule::default()
    };
    let f = Faults::new(FaultConfig {
        seed: 0,
        rules: vec![stuck.clone()],
    });
    assert!(f.decide_update("node-0", "/bios.fw").stuck);
    assert!(!f.decide_update("node-0", "/bmc.fw").stuck, "by path");
    let (latency, decision) = f.decide("POST", "/bios.fw", &["node-0".into()]);
    assert_eq!(
        (latency, decision),
        (Duration::ZERO, Decision::Pass),
        "no request fault"
    );
    let bad = |r: Rule| {
        FaultConfig {
            seed: 0,
            rules: vec![r],
        }
        .check()
        .unwrap_err()
    };
    assert!(bad(Rule {
        stuck_rate: 0.5,
        ..Rule::default()
    })
    .contains("rules[0].stuck_rate"));
    assert!(bad(Rule {
        status: Some(503),
        ..stuck.clone()
    })
    .contains("rules[0].status"));
    assert!(bad(Rule {
        methods: vec![UPDATE.into(), "POST".into()],
        ..stuck.clone()
    })
    .contains("rules[0].methods"));
    assert!(bad(Rule {
        stuck_rate: 2.0,
        ..stuck
    })
    .contains("rules[0].stuck_rate"));
}
