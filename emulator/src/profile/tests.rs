//! Tests of the profile loader and its checks, over the built-in profiles
//! and hand-made files.

use super::load::BUILTIN;
use super::*;

#[test]
fn every_builtin_profile_loads_and_the_issue_list_is_shipped() {
    let all = Profiles::default();
    for name in [
        "generic",
        "openbmc",
        "idrac9",
        "idrac10",
        "ilo5",
        "ilo6",
        "supermicro-x12",
        "ami-asrockrack",
        "lenovo-xcc",
        "no-allowable-values",
        "sushy-tools",
        "synthetic-strict-etag",
    ] {
        let p = all.get(name).unwrap();
        assert_eq!(p.name, name);
    }
    assert_eq!(generic().name, "generic");
    assert_eq!(generic().etag.style, EtagStyle::Strong);
}

#[test]
fn bad_profiles_are_refused_naming_the_key() {
    let base = "name = \"x\"\ndescription = \"d\"\nmanufacturer = \"m\"\nmodel = \"m\"\n\
                bios_version = \"1\"\nbmc_firmware_version = \"1\"\n";
    assert!(Profile::parse(base).is_ok(), "no quirks, no sources needed");
    let e = Profile::parse(&format!("{base}[boot]\nhidden_targets = [\"Floppyy\"]\n")).unwrap_err();
    assert!(e.contains("boot.hidden_targets[0]"), "{e}");
    let e =
        Profile::parse(&format!("{base}[boot]\nallowable_values = \"settings\"\n")).unwrap_err();
    assert!(e.contains("boot.allowable_values"), "{e}");
    let e = Profile::parse(&format!(
        "{base}[boot.settings]\npath = \"a/b\"\nfields = []\n"
    ))
    .unwrap_err();
    assert!(e.contains("boot.settings.path"), "{e}");
    let e = Profile::parse(&format!(
        "{base}[boot.settings]\npath = \"SD\"\nfields = [\"Colour\"]\n"
    ))
    .unwrap_err();
    assert!(e.contains("boot.settings.fields[0]"), "{e}");
    let e = Profile::parse(&format!("{base}[etag]\nstyle = \"fuzzy\"\n")).unwrap_err();
    assert!(e.contains("fuzzy"), "{e}");
    let e = Profile::parse(&format!("{base}colour = 1\n")).unwrap_err();
    assert!(e.contains("colour"), "{e}");
}

const BASE: &str = "name = \"x\"\ndescription = \"d\"\nmanufacturer = \"m\"\nmodel = \"m\"\n\
                    bios_version = \"1\"\nbmc_firmware_version = \"1\"\n";

#[test]
fn every_quirk_needs_a_citation_or_a_synthetic_mark() {
    // A quirk without any source.
    let quirk = "[etag]\nstrict_if_match = true\n";
    let e = Profile::parse(&format!("{BASE}{quirk}")).unwrap_err();
    assert!(
        e.contains("etag.strict_if_match") && e.contains("synthetic"),
        "{e}"
    );
    // A source for another quirk does not cover it.
    let other = "[boot]\ncontinuous = false\n\
                 [[sources]]\nquirks = [\"boot.continuous\"]\nreference = \"r\"\nshows = \"s\"\n";
    let e = Profile::parse(&format!("{BASE}{quirk}{other}")).unwrap_err();
    assert!(e.contains("etag.strict_if_match"), "{e}");
    // A source without a reference that is not marked synthetic.
    let bare = "[[sources]]\nquirks = [\"etag.strict_if_match\"]\nshows = \"s\"\n";
    let e = Profile::parse(&format!("{BASE}{quirk}{bare}")).unwrap_err();
    assert!(e.contains("sources[0].reference"), "{e}");
    // Either is enough.
    let p = Profile::parse(&format!("{BASE}{quirk}{bare}synthetic = true\n")).unwrap();
    assert_eq!(p.synthetic_quirks(), ["etag.strict_if_match"]);
    let cited = bare.replace("shows", "reference = \"https://example.org/x\"\nshows");
    let p = Profile::parse(&format!("{BASE}{quirk}{cited}")).unwrap();
    assert!(p.synthetic_quirks().is_empty());
    // A citation of a quirk the profile does not have, or of no key.
    let e = Profile::parse(&format!("{BASE}{cited}")).unwrap_err();
    assert!(e.contains("sources[0].quirks[0]"), "{e}");
    let e = Profile::parse(&format!(
        "{BASE}{quirk}{}",
        cited.replace("etag.strict_if_match", "etag.colour")
    ))
    .unwrap_err();
    assert!(
        e.contains("sources[0].quirks[0]") && e.contains("colour"),
        "{e}"
    );
}

#[test]
fn builtin_quirks_are_cited_and_strict_if_match_is_only_synthetic() {
    for p in BUILTIN.iter() {
        for q in p.quirks() {
            let cited = p.sources.iter().any(|s| s.quirks.iter().any(|c| c == q));
            assert!(cited, "{}: {q}", p.name);
        }
        if p.etag.strict_if_match {
            assert!(
                p.synthetic_quirks().contains(&"etag.strict_if_match"),
                "{}: strict If-Match is cited by no vendor",
                p.name
            );
        }
    }
    let all = Profiles::default();
    assert!(!all.get("ilo6").unwrap().etag.strict_if_match);
    assert!(!all.get("ilo5").unwrap().etag.strict_if_match);
    assert!(
        all.get("synthetic-strict-etag")
            .unwrap()
            .etag
            .strict_if_match
    );
}

#[test]
fn a_profile_dir_adds_and_replaces_and_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mine = include_str!("../../profiles/generic.toml")
        .replace("name = \"generic\"", "name = \"mine\"");
    std::fs::write(
        dir.path().join("mine.toml"),
        // `behaviour` is the older spelling of `shows`.
        format!(
            "{}\n[[sources]]\nquirks = [\"etag.if_match_required\"]\nbehaviour = \"b\"\nreference = \"r\"\n",
            mine.replace("if_match_required = false", "if_match_required = true")
        ),
    )
    .unwrap();
    let all = Profiles::load(Some(dir.path())).unwrap();
    assert_eq!(
        all.get("mine").unwrap().manufacturer,
        generic().manufacturer
    );
    assert!(all.get("idrac10").is_ok());
    std::fs::write(dir.path().join("bad.toml"), "name = 1\n").unwrap();
    let e = Profiles::load(Some(dir.path())).unwrap_err().to_string();
    assert!(e.contains("bad.toml"), "{e}");
    let e = all.get("nope").unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("idrac10"), "{e}");
}
