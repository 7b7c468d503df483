//! Property tests of the domain-XML editor (`backend::libvirt::xml`, and
//! the boot-order and petitboot edits of `domain`): any text parses or is
//! refused without panicking, mutated domain XML too; what parses is
//! written back stably, and edits with any value keep it well-formed.

use proptest::prelude::*;
use shoal_emulator::backend::libvirt::domain;
use shoal_emulator::backend::libvirt::xml::{self, Element};
use shoal_emulator::model::BootTarget;

const DOMAIN: &str = r#"<domain type="kvm">
  <name>vm-0</name>
  <!-- a comment Shoal keeps -->
  <uuid>4e0eba61-a53c-5cbf-a1fa-35ba545aa664</uuid>
  <memory unit="KiB">1048576</memory>
  <os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><boot dev="network"/>
    <loader readonly="yes" type="pflash">/usr/share/OVMF/OVMF_CODE.fd</loader>
    <nvram>/var/lib/libvirt/qemu/nvram/vm-0_VARS.fd</nvram></os>
  <metadata><shoal:state xmlns:shoal="https://shoal.dev/libvirt/1">{"a":1}</shoal:state></metadata>
  <devices>
    <disk type="file" device="disk"><source file="/x.qcow2"/><target dev="vda" bus="virtio"/></disk>
    <disk type="file" device="cdrom"><target dev="sda" bus="sata"/><readonly/></disk>
    <interface type="network"><mac address="52:54:00:00:00:01"/><source network="n"/></interface>
    <serial type="pty"><target port="0"/></serial>
    <description><![CDATA[raw & <text>]]> &amp; more</description>
  </devices>
</domain>"#;

/// Characters XML 1.0 allows (`Char` production).
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Whether `s` is one well-formed element (by the same parser, and with
/// only XML characters).
fn well_formed(s: &str) -> bool {
    s.chars().all(xml_char) && xml::parse(s).is_ok()
}

fn mutated_domain() -> impl Strategy<Value = String> {
    let edit = (
        0usize..DOMAIN.len(),
        0usize..8,
        "[<>/&'\"=!\\[\\]a-z \u{FFFE}]{0,4}",
    );
    prop::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut s = DOMAIN.to_string();
        for (at, cut, ins) in edits {
            let mut at = at.min(s.len());
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + cut).min(s.len());
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.replace_range(at..end, &ins);
        }
        s
    })
}

fn edit_and_check(d: &mut Element, name: &str, value: &str) -> Result<(), TestCaseError> {
    d.set_attr(name, value);
    d.child_or_insert("os")
        .child_or_insert("cmdline")
        .push(Element::new("x").with_text(value));
    domain::set_boot_order(d, Some(BootTarget::Pxe));
    domain::set_petitboot_bootdev(d, Some(BootTarget::Hdd));
    let out = d.to_xml();
    let back = xml::parse(&out).map_err(|e| TestCaseError::fail(format!("{e:?}: {out}")))?;
    prop_assert_eq!(back.attr(name), Some(value));
    prop_assert_eq!(back.to_xml(), out);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_parses_or_is_refused(s in "\\PC{0,200}") {
        if let Ok(e) = xml::parse(&s) {
            let _ = domain::facts(&e);
            let _ = e.to_xml();
        }
    }

    #[test]
    fn mutated_domain_xml_never_panics_and_writes_back_stably(s in mutated_domain()) {
        if let Ok(mut d) = xml::parse(&s) {
            let _ = domain::facts(&d);
            let _ = domain::read_state(&d);
            let once = d.to_xml();
            let twice = xml::parse(&once).expect("its own output parses").to_xml();
            prop_assert_eq!(&once, &twice);
            domain::set_boot_order(&mut d, Some(BootTarget::Cd));
            domain::set_boot_order(&mut d, None);
            domain::set_petitboot_bootdev(&mut d, Some(BootTarget::Pxe));
            let edited = d.to_xml();
            prop_assert!(xml::parse(&edited).is_ok(), "{}", edited);
        }
    }

    /// Values from outside (a PATCH, a profile) made only of XML
    /// characters keep the document well-formed and read back equal.
    #[test]
    fn edits_with_any_xml_text_keep_it_well_formed(
        name in "[a-z][a-z0-9_-]{0,8}",
        value in "\\PC{0,40}".prop_filter("XML characters", |v| v.chars().all(xml_char)),
    ) {
        let mut d = xml::parse(DOMAIN).expect("the sample parses");
        edit_and_check(&mut d, &name, &value)?;
        prop_assert!(well_formed(&d.to_xml()));
    }
}

#[test]
fn the_sample_is_written_back_as_read() {
    let d = xml::parse(DOMAIN).unwrap();
    assert_eq!(d.to_xml(), DOMAIN);
}
