//! Property tests of the loaders that take outside input: the inventory
//! (`config::ConfigFile`), behaviour profiles (`profile::Profile`) and
//! sushy-tools configurations (`sushy`). Any text is loaded or refused
//! without panicking; a key the schema does not have is refused by name.

use proptest::prelude::*;
use shoal_emulator::config::ConfigFile;
use shoal_emulator::profile::{Profile, Profiles};

const GENERIC: &str = include_str!("../../profiles/generic.toml");
const INVENTORY: &str = r#"feature_set = "full"
profile = "generic"

[fake]
power_delay_ms = 0

[[systems]]
name = "a"
disks = [{ name = "d", capacity_gib = 1 }]
"#;

/// TOML made of the loaders' own vocabulary, to get past the syntax.
fn toml_soup() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-z_]{1,10} = \"[ -~&&[^\"\\\\]]{0,10}\"",
        "[a-z_]{1,10} = -?[0-9]{1,20}",
        "[a-z_]{1,10} = (true|false)",
        "[a-z_]{1,10} = \\[\\]",
        Just("[[systems]]".to_string()),
        Just("name = \"x\"".to_string()),
        Just("arch = \"ppc64le\"".to_string()),
        Just("boot_mode = \"Legacy\"".to_string()),
        Just("[fake]".to_string()),
        Just("[auth]".to_string()),
        Just("[boot]".to_string()),
        Just("[ids]".to_string()),
        Just("[etag]".to_string()),
        Just("memory_mib = 18446744073709551616".to_string()),
        Just("cpus = -1".to_string()),
        "[ -~]{0,20}",
    ];
    prop::collection::vec(line, 0..12).prop_map(|l| l.join("\n"))
}

/// `text` with `key = 1` added at the end of its top-level table (before
/// the first section header).
fn with_top_key(text: &str, key: &str) -> String {
    match text.find("\n[") {
        Some(i) => format!("{}\n{key} = 1{}", &text[..i], &text[i..]),
        None => format!("{text}\n{key} = 1\n"),
    }
}

/// Python made of a sushy-tools configuration's vocabulary.
fn python_soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("SUSHY_EMULATOR_FAKE_SYSTEMS".to_string()),
        Just("SUSHY_EMULATOR_LISTEN_PORT".to_string()),
        Just("SUSHY_EMULATOR_INDICATOR_LEDS".to_string()),
        Just("SUSHY_EMULATOR_VMEDIA_DEVICES".to_string()),
        Just("SUSHY_EMULATOR_FAKE_DRIVER".to_string()),
        Just("'uuid'".to_string()),
        Just("'27946b59-9e44-4fa7-8e91-f3527a1ef094'".to_string()),
        Just("'nics'".to_string()),
        Just("'mac'".to_string()),
        Just("'Cd'".to_string()),
        "[=:,(){}\\[\\]\n#'\"\\\\-]",
        "(True|False|None|u''|r'x'|'''|0x1F|1e5|-1|0755)",
        "[ -~]{0,6}",
    ];
    prop::collection::vec(token, 0..40).prop_map(|t| t.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_sushy_tools_configuration_text_loads_or_is_refused(text in python_soup()) {
        let _ = shoal_emulator::sushy::parse("fuzz.py", &text, false);
        let _ = shoal_emulator::sushy::parse("fuzz.py", &text, true);
    }

    #[test]
    fn a_sushy_tools_configuration_with_code_is_refused_by_line(
        before in 0usize..5,
        code in "(import os|x = open\\('f'\\)|SUSHY_EMULATOR_LISTEN_PORT = 8000 \\+ 1|A = f'x')",
    ) {
        let text = format!("{}{code}\n", "SUSHY_EMULATOR_LISTEN_PORT = 8000\n".repeat(before));
        let e = shoal_emulator::sushy::parse("c.py", &text, false).unwrap_err().to_string();
        prop_assert!(e.contains(&format!("line {}", before + 1)), "{}", e);
    }

    #[test]
    fn any_inventory_text_loads_or_is_refused(text in toml_soup()) {
        if let Ok(c) = ConfigFile::parse("fuzz.toml", &text) {
            let _ = c.systems("fuzz.toml", &Profiles::default(), "generic");
            let _ = c.fake_options();
        }
    }

    #[test]
    fn any_profile_text_loads_or_is_refused(text in toml_soup()) {
        let _ = Profile::parse(&text);
        let _ = Profile::parse(&format!("{GENERIC}\n{text}"));
    }

    #[test]
    fn an_unknown_inventory_key_is_named(key in "zz[a-z_]{1,12}", system in any::<bool>()) {
        let text = if system {
            format!("{INVENTORY}{key} = 1\n")
        } else {
            with_top_key(INVENTORY, &key)
        };
        let err = ConfigFile::parse("fuzz.toml", &text).expect_err("refused");
        let msg = err.to_string();
        prop_assert!(msg.contains(&key) && msg.contains("fuzz.toml"), "{}", msg);
    }

    #[test]
    fn an_unknown_profile_key_is_named(key in "zz[a-z_]{1,12}") {
        let err = Profile::parse(&with_top_key(GENERIC, &key)).expect_err("refused");
        prop_assert!(err.contains(&key), "{}", err);
    }

    #[test]
    fn a_bad_system_value_names_its_key(
        (key, value) in prop_oneof![
            Just(("arch", "\"sparc\"")),
            Just(("boot_mode", "\"Floppy\"")),
            Just(("power", "\"Maybe\"")),
            Just(("macs", "[\"52:54:zz\"]")),
            Just(("uuid", "\"not-a-uuid\"")),
            Just(("profile", "\"no-such-profile\"")),
        ]
    ) {
        let text = format!("{INVENTORY}{key} = {value}\n");
        let c = ConfigFile::parse("fuzz.toml", &text).expect("parses");
        let err = c.systems("fuzz.toml", &Profiles::default(), "generic").expect_err("refused");
        let msg = err.to_string();
        prop_assert!(msg.contains(key), "{}", msg);
    }
}
