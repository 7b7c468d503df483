//! Property tests of the harness's loaders of outside text: scenario files
//! (every real one, mutated) and the petitboot templates. Whatever the
//! text, the answer is a scenario or an error naming the file; a template
//! renders or is refused, never a panic.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use shoal_harness::petitboot::{render, Target};
use shoal_harness::scenario::{Petitboot, Scenario};

fn scenario_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(out.len() > 10, "the scenarios folder");
    out
}

/// Loads `text` as the scenario file `name` in a folder of its own.
fn load(dir: &Path, name: &str, text: &str) -> (PathBuf, anyhow::Result<Scenario>) {
    // The captures some scenarios replay are beside them.
    let captures = dir.join("captures");
    if !captures.exists() {
        std::os::unix::fs::symlink(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/captures"),
            captures,
        )
        .unwrap();
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let r = Scenario::load(&p);
    (p, r)
}

/// One mutation of a TOML document, by line.
#[derive(Debug, Clone)]
enum Mutation {
    DropLine(usize),
    /// The value after `=` on a line, replaced.
    Value(usize, String),
    /// A line of its own, inserted.
    Insert(usize, String),
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"\"".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551616".to_string()),
        Just("1e309".to_string()),
        Just("true".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("\"\\uFFFE\"".to_string()),
        Just(format!("\"{}\"", "x".repeat(10_000))),
        "\"[ -~]{0,40}\"".prop_map(|s| s.replace('\\', "/")),
        any::<i64>().prop_map(|n| n.to_string()),
        "[ -~]{0,20}",
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..60).prop_map(Mutation::DropLine),
        ((0usize..60), value()).prop_map(|(i, v)| Mutation::Value(i, v)),
        (
            (0usize..60),
            prop_oneof![
                Just("unknown_key = 1".to_string()),
                Just("[unknown_table]".to_string()),
                Just("[[artifacts]]".to_string()),
                Just("[petitboot]".to_string()),
                Just("timeout_secs = 0".to_string()),
                "[ -~]{0,30}",
            ]
        )
            .prop_map(|(i, l)| Mutation::Insert(i, l)),
    ]
}

fn apply(text: &str, ms: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in ms {
        let n = lines.len().max(1);
        match m {
            Mutation::DropLine(i) if !lines.is_empty() => {
                lines.remove(i % n);
            }
            Mutation::Value(i, v) if !lines.is_empty() => {
                let l = &mut lines[i % n];
                if let Some(eq) = l.find('=') {
                    *l = format!("{}= {v}", &l[..eq]);
                }
            }
            Mutation::Insert(i, new) => lines.insert(i % (lines.len() + 1), new.clone()),
            _ => {}
        }
    }
    lines.join("\n")
}

#[test]
fn every_scenario_in_the_folder_loads() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in scenario_files() {
        let (_, r) = load(dir.path(), &name, &text);
        assert!(r.is_ok(), "{name}: {:#}", r.err().unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn mutated_scenarios_load_or_are_refused_naming_the_file(
        pick in any::<prop::sample::Index>(),
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let files = scenario_files();
        let (name, text) = &files[pick.index(files.len())];
        let dir = tempfile::tempdir().unwrap();
        let (path, r) = load(dir.path(), name, &apply(text, &ms));
        if let Err(e) = r {
            let msg = format!("{e:#}");
            prop_assert!(msg.contains(&path.display().to_string()), "{}", msg);
        }
    }

    #[test]
    fn arbitrary_text_is_no_scenario_and_no_panic(text in "\\PC{0,400}") {
        let dir = tempfile::tempdir().unwrap();
        let (path, r) = load(dir.path(), "fuzz.toml", &text);
        if let Err(e) = r {
            let msg = format!("{e:#}");
            prop_assert!(msg.contains(&path.display().to_string()), "{}", msg);
        }
    }

    #[test]
    fn templates_render_or_are_refused(
        template in "[a-z/{}:0-9.-]{0,60}",
        v6 in any::<bool>(),
        octets in any::<[u8; 4]>(),
    ) {
        let p: Petitboot = toml::from_str(
            "protocol = \"http\"\nconfig_path = \"pxelinux.cfg/default\"\nconfig = \"\"\n",
        )
        .unwrap();
        let t = Target {
            uuid: "4f5a3c2e-0000-4000-8000-000000000001",
            mac: "52:54:00:ab:0c:01",
            ip: Ipv4Addr::from(octets),
            server: if v6 {
                IpAddr::V6(Ipv6Addr::new(0xfd00, 0x5e, 1, 0, 0, 0, 0, 1))
            } else {
                IpAddr::V4(Ipv4Addr::new(198, 18, 1, 1))
            },
        };
        match render(&template, &p, &t) {
            Ok(out) => {
                if !template.contains('{') {
                    prop_assert_eq!(&out, &template);
                }
                // Every `{` opened a placeholder, and no value has one.
                prop_assert!(!out.contains('{'), "{:?} -> {:?}", template, out);
            }
            Err(e) => prop_assert!(template.contains('{'), "{:#}", e),
        }
    }
}
