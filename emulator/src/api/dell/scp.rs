//! Server Configuration Profiles (SCP): the document Dell's
//! `ImportSystemConfiguration` takes in its `ImportBuffer`, in either of
//! the two forms iDRAC reads, XML
//! (`<SystemConfiguration><Component FQDD=".."><Attribute Name="..">value`)
//! or JSON (`{"SystemConfiguration": {"Components": [{"FQDD": "..",
//! "Attributes": [{"Name": "..", "Value": ".."}]}]}}`), and what an import
//! asks of the machine.
//!
//! Only what Shoal's machines can honour is taken: the iDRAC component's
//! next-boot attributes (`ServerBoot.1#BootOnce`,
//! `ServerBoot.1#FirstBootDevice`, what sushy's `set_virtual_boot_device`
//! and Dell's own scripts send) and the BIOS component's attributes (those
//! of the machine's BIOS, as `Bios/Settings` takes them, the SCP's text
//! read as the attribute's type). Anything else is refused whole, naming
//! the component or attribute, so an import never half-applies.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::bios::AttrKind;
use crate::model::{BootTarget, OverrideEnabled};

/// The BIOS component's FQDD.
pub const BIOS: &str = "BIOS.Setup.1-1";

/// Longest import buffer taken (a whole exported SCP is a few hundred KiB;
/// the request body is bounded before this anyway).
pub const MAX_BUFFER: usize = 1 << 20;
/// Most components and attributes read.
const MAX_ITEMS: usize = 4096;

/// One `<Component>` of a profile, its attributes in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub fqdd: String,
    pub attributes: Vec<(String, String)>,
}

/// Why an import buffer is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScpError {
    #[error("the import buffer is not a Server Configuration Profile: {0}")]
    Malformed(String),
    #[error("no <SystemConfiguration> root element")]
    NoRoot,
    #[error("<{0}> is not closed")]
    NotClosed(String),
    #[error("invalid at line {0}: {1}")]
    Invalid(usize, String),
    #[error("the JSON profile is not valid: {0}")]
    Json(String),
    #[error("component {0} is not present on this system")]
    UnknownComponent(String),
    #[error("attribute {1} of component {0} is not supported")]
    UnknownAttribute(String, String),
    #[error("value {2:?} of attribute {1} of component {0} is not valid")]
    BadValue(String, String, String),
}

/// Reads an import buffer (XML or JSON, by its first character).
pub fn parse(buffer: &str) -> Result<Vec<Component>, ScpError> {
    if buffer.len() > MAX_BUFFER {
        return Err(ScpError::Malformed(format!(
            "{} bytes, more than {MAX_BUFFER}",
            buffer.len()
        )));
    }
    let text = buffer.trim_start();
    let components = if text.starts_with('{') {
        parse_json(text)?
    } else {
        parse_xml(text)?
    };
    if components
        .iter()
        .map(|c| c.attributes.len() + 1)
        .sum::<usize>()
        > MAX_ITEMS
    {
        return Err(ScpError::Malformed(format!("more than {MAX_ITEMS} items")));
    }
    Ok(components)
}

fn malformed(e: impl std::fmt::Display) -> ScpError {
    ScpError::Malformed(e.to_string())
}

fn parse_json(text: &str) -> Result<Vec<Component>, ScpError> {
    let json = |e: &dyn std::fmt::Display| ScpError::Json(e.to_string());
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json(&e))?;
    let comps = v
        .get("SystemConfiguration")
        .and_then(|s| s.get("Components"))
        .and_then(|c| c.as_array())
        .ok_or_else(|| json(&"no SystemConfiguration.Components array"))?;
    let mut out = Vec::new();
    for c in comps {
        let fqdd = c
            .get("FQDD")
            .and_then(|f| f.as_str())
            .ok_or_else(|| json(&"a component without an FQDD string"))?;
        let mut attributes = Vec::new();
        for a in c
            .get("Attributes")
            .and_then(|a| a.as_array())
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let name = a
                .get("Name")
                .and_then(|n| n.as_str())
                .ok_or_else(|| json(&format!("an attribute of {fqdd} without a Name")))?;
            let value = match a.get("Value") {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                    v.to_string()
                }
                _ => {
                    return Err(malformed(format!(
                        "attribute {name} of {fqdd} has no Value"
                    )))
                }
            };
            attributes.push((name.to_string(), value));
        }
        out.push(Component {
            fqdd: fqdd.to_string(),
            attributes,
        });
    }
    Ok(out)
}

/// The line (from 1) of byte `pos` of `text`.
fn line_at(text: &str, pos: u64) -> usize {
    let end = usize::try_from(pos).unwrap_or(usize::MAX).min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn parse_xml(text: &str) -> Result<Vec<Component>, ScpError> {
    let mut reader = quick_xml::Reader::from_str(text);
    parse_xml_events(&mut reader).map_err(|e| match e {
        ScpError::Malformed(why) => ScpError::Invalid(line_at(text, reader.buffer_position()), why),
        other => other,
    })
}

fn parse_xml_events(reader: &mut quick_xml::Reader<&[u8]>) -> Result<Vec<Component>, ScpError> {
    use quick_xml::events::Event;
    // The element path: SystemConfiguration > Component > Attribute.
    let mut depth: Vec<String> = Vec::new();
    let mut out: Vec<Component> = Vec::new();
    let mut attr: Option<(String, String)> = None;
    let mut root_seen = false;
    let utf8 = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(malformed)
    };
    loop {
        match reader.read_event().map_err(malformed)? {
            ev @ (Event::Start(_) | Event::Empty(_)) => {
                let (e, empty) = match ev {
                    Event::Start(e) => (e, false),
                    Event::Empty(e) => (e, true),
                    _ => unreachable!("matched above"),
                };
                let name = utf8(e.name().as_ref())?;
                let attr_of = |key: &str| -> Result<Option<String>, ScpError> {
                    for a in e.attributes() {
                        let a = a.map_err(malformed)?;
                        if a.key.as_ref() == key.as_bytes() {
                            return Ok(Some(a.unescape_value().map_err(malformed)?.into_owned()));
                        }
                    }
                    Ok(None)
                };
                match (depth.len(), name.as_str()) {
                    (0, "SystemConfiguration") if !root_seen => root_seen = true,
                    (1, "Component") => {
                        let fqdd = attr_of("FQDD")?
                            .ok_or_else(|| malformed("a Component without an FQDD"))?;
                        out.push(Component {
                            fqdd,
                            attributes: Vec::new(),
                        });
                    }
                    (2, "Attribute") => {
                        let n = attr_of("Name")?
                            .ok_or_else(|| malformed("an Attribute without a Name"))?;
                        if empty {
                            if let Some(c) = out.last_mut() {
                                c.attributes.push((n, String::new()));
                            }
                        } else {
                            attr = Some((n, String::new()));
                        }
                    }
                    (d, n) => {
                        return Err(malformed(format!("unexpected element <{n}> at depth {d}")))
                    }
                }
                if !empty {
                    depth.push(name);
                }
            }
            Event::End(_) => {
                if depth.pop().as_deref() == Some("Attribute") {
                    if let (Some((n, raw)), Some(c)) = (attr.take(), out.last_mut()) {
                        let v = quick_xml::escape::unescape(&raw).map_err(malformed)?;
                        c.attributes.push((n, v.trim().to_string()));
                    }
                }
            }
            Event::Text(t) => {
                let s = utf8(&t.into_inner())?;
                match &mut attr {
                    Some((_, v)) => v.push_str(&s),
                    None if s.trim().is_empty() => {}
                    None if depth.is_empty() && !root_seen => return Err(ScpError::NoRoot),
                    None => {
                        return Err(malformed(format!(
                            "text {:?} outside an Attribute",
                            s.trim()
                        )))
                    }
                }
            }
            Event::GeneralRef(r) => match &mut attr {
                Some((_, v)) => {
                    v.push('&');
                    v.push_str(&utf8(&r.into_inner())?);
                    v.push(';');
                }
                None => return Err(malformed("an entity outside an Attribute")),
            },
            Event::CData(c) => match &mut attr {
                // CDATA is literal: escape what unescaping would read.
                Some((_, v)) => v.push_str(&quick_xml::escape::escape(utf8(&c.into_inner())?)),
                None => return Err(malformed("CDATA outside an Attribute")),
            },
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) => {}
            Event::DocType(_) => return Err(malformed("a DOCTYPE")),
            Event::Eof => break,
        }
        if out.len() + out.iter().map(|c| c.attributes.len()).sum::<usize>() > MAX_ITEMS {
            return Err(malformed(format!("more than {MAX_ITEMS} items")));
        }
    }
    if !root_seen {
        return Err(ScpError::NoRoot);
    }
    if let Some(open) = depth.first() {
        return Err(ScpError::NotClosed(open.clone()));
    }
    Ok(out)
}

/// The next-boot setting an import makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextBoot {
    pub target: BootTarget,
    pub enabled: OverrideEnabled,
}

/// `ServerBoot.1#FirstBootDevice` values and the target each boots. The
/// virtual CD and floppy are the machine's CD and floppy (Shoal's virtual
/// media are its only removable devices).
const FIRST_BOOT_DEVICES: &[(&str, BootTarget)] = &[
    ("Normal", BootTarget::None),
    ("PXE", BootTarget::Pxe),
    ("HDD", BootTarget::Hdd),
    ("CD-DVD", BootTarget::Cd),
    ("VCD-DVD", BootTarget::Cd),
    ("VFDD", BootTarget::Floppy),
    ("BIOS", BootTarget::BiosSetup),
];

/// What an import asks of a machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The next boot, where the iDRAC component sets it.
    pub next: Option<NextBoot>,
    /// BIOS attributes to set, typed as the BIOS has them (their values
    /// are still to be checked against the attribute's range or list).
    pub bios: BTreeMap<String, Value>,
}

/// What `components` ask of a machine whose iDRAC is `manager` (its
/// FQDD), given the override it has now: the iDRAC component's next-boot
/// attributes and the BIOS component's attributes. Any other component or
/// attribute is refused.
pub fn plan(components: &[Component], manager: &str, now: NextBoot) -> Result<Plan, ScpError> {
    let mut bios = BTreeMap::new();
    let mut idrac = Vec::new();
    for c in components {
        if c.fqdd == manager {
            idrac.push(c.clone());
        } else if c.fqdd == BIOS {
            for (name, value) in &c.attributes {
                bios.insert(name.clone(), bios_value(name, value)?);
            }
        } else {
            return Err(ScpError::UnknownComponent(c.fqdd.clone()));
        }
    }
    Ok(Plan {
        next: next_boot(&idrac, now)?,
        bios,
    })
}

/// An SCP BIOS attribute's text as the attribute's type (an integer for
/// an integer attribute; `Enabled`/`Disabled` or `True`/`False` for a
/// boolean one; text otherwise).
fn bios_value(name: &str, text: &str) -> Result<Value, ScpError> {
    let bad = || ScpError::BadValue(BIOS.into(), name.into(), text.into());
    let def = crate::bios::lookup(name)
        .ok_or_else(|| ScpError::UnknownAttribute(BIOS.into(), name.into()))?;
    Ok(match def.kind {
        AttrKind::Int { .. } => Value::from(text.parse::<i64>().map_err(|_| bad())?),
        AttrKind::Bool => match text.to_ascii_lowercase().as_str() {
            "true" | "enabled" => Value::Bool(true),
            "false" | "disabled" => Value::Bool(false),
            _ => return Err(bad()),
        },
        AttrKind::Enum(_) | AttrKind::Str { .. } | AttrKind::Uri { .. } => {
            Value::String(text.to_string())
        }
    })
}

/// The next boot the iDRAC's `components` ask for, given the override
/// now: `None` where they ask nothing.
fn next_boot(components: &[Component], now: NextBoot) -> Result<Option<NextBoot>, ScpError> {
    let mut once: Option<bool> = None;
    let mut device: Option<BootTarget> = None;
    for c in components {
        for (name, value) in &c.attributes {
            let bad = || ScpError::BadValue(c.fqdd.clone(), name.clone(), value.clone());
            match name.as_str() {
                "ServerBoot.1#BootOnce" => {
                    once = Some(match value.as_str() {
                        "Enabled" => true,
                        "Disabled" => false,
                        _ => return Err(bad()),
                    })
                }
                "ServerBoot.1#FirstBootDevice" => {
                    device = Some(
                        FIRST_BOOT_DEVICES
                            .iter()
                            .find(|(v, _)| v.eq_ignore_ascii_case(value))
                            .map(|(_, t)| *t)
                            .ok_or_else(bad)?,
                    )
                }
                _ => return Err(ScpError::UnknownAttribute(c.fqdd.clone(), name.clone())),
            }
        }
    }
    if once.is_none() && device.is_none() {
        return Ok(None);
    }
    let target = device.unwrap_or(now.target);
    // BootOnce is an attribute of its own: left out, it keeps its value.
    let once = once.unwrap_or(now.enabled != OverrideEnabled::Continuous);
    let enabled = match (target, once) {
        (BootTarget::None, _) => OverrideEnabled::Disabled,
        (_, true) => OverrideEnabled::Once,
        (_, false) => OverrideEnabled::Continuous,
    };
    Ok(Some(NextBoot { target, enabled }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDRAC: &str = "iDRAC.Embedded.1";

    fn next(c: &[Component], now: NextBoot) -> Result<Option<NextBoot>, ScpError> {
        plan(c, IDRAC, now).map(|p| p.next)
    }

    fn none() -> NextBoot {
        NextBoot {
            target: BootTarget::None,
            enabled: OverrideEnabled::Disabled,
        }
    }

    /// The buffer sushy's `set_virtual_boot_device` sends (no whitespace).
    fn sushy_cd(once: &str) -> String {
        format!(
            "<SystemConfiguration><Component FQDD=\"{IDRAC}\"><Attribute Name=\"ServerBoot.1#BootOnce\">{once}</Attribute><Attribute Name=\"ServerBoot.1#FirstBootDevice\">VCD-DVD</Attribute></Component></SystemConfiguration>"
        )
    }

    #[test]
    fn sushys_virtual_cd_buffer_sets_a_one_time_or_persistent_cd_boot() {
        let c = parse(&sushy_cd("Enabled")).unwrap();
        assert_eq!(
            next(&c, none()).unwrap(),
            Some(NextBoot {
                target: BootTarget::Cd,
                enabled: OverrideEnabled::Once
            })
        );
        let c = parse(&sushy_cd("Disabled")).unwrap();
        assert_eq!(
            next(&c, none()).unwrap().unwrap().enabled,
            OverrideEnabled::Continuous
        );
    }

    #[test]
    fn xml_with_declaration_whitespace_comments_and_entities_reads_the_same() {
        let x = format!(
            "<?xml version=\"1.0\"?>\n<SystemConfiguration Model=\"PowerEdge R650\">\n  <!-- boot -->\n  <Component FQDD=\"{IDRAC}\">\n    <Attribute Name=\"ServerBoot.1#FirstBootDevice\"> PXE </Attribute>\n    <Attribute Name=\"ServerBoot.1#BootOnce\">En&#97;bled</Attribute>\n  </Component>\n</SystemConfiguration>\n"
        );
        let c = parse(&x).unwrap();
        assert_eq!(
            c[0].attributes,
            vec![
                ("ServerBoot.1#FirstBootDevice".into(), "PXE".into()),
                ("ServerBoot.1#BootOnce".into(), "Enabled".into())
            ]
        );
    }

    #[test]
    fn the_json_form_reads_as_the_xml_form() {
        let j = format!(
            r#"{{"SystemConfiguration": {{"Components": [{{"FQDD": "{IDRAC}", "Attributes": [{{"Name": "ServerBoot.1#BootOnce", "Value": "Enabled"}}, {{"Name": "ServerBoot.1#FirstBootDevice", "Value": "VCD-DVD"}}]}}]}}}}"#
        );
        assert_eq!(parse(&j).unwrap(), parse(&sushy_cd("Enabled")).unwrap());
    }

    #[test]
    fn malformed_buffers_are_refused_with_the_reason() {
        for bad in [
            "",
            "not xml",
            "<SystemConfiguration><Component FQDD=\"x\">",
            "<SystemConfiguration><Component><Attribute Name=\"a\">b</Attribute></Component></SystemConfiguration>",
            "<SystemConfiguration><Other/></SystemConfiguration>",
            "<Foo/>",
            "<SystemConfiguration/><SystemConfiguration/>",
            "<SystemConfiguration>text</SystemConfiguration>",
            "<!DOCTYPE x [<!ENTITY a \"b\">]><SystemConfiguration/>",
            "{\"SystemConfiguration\": {}}",
            "{\"SystemConfiguration\": {\"Components\": [{\"FQDD\": 1}]}}",
            "{not json",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was taken");
        }
    }

    #[test]
    fn each_kind_of_malformed_buffer_says_what_and_where() {
        assert_eq!(
            parse("<Foo/>"),
            Err(ScpError::Invalid(
                1,
                "unexpected element <Foo> at depth 0".into()
            ))
        );
        assert_eq!(parse("<?xml version=\"1.0\"?>"), Err(ScpError::NoRoot));
        assert_eq!(
            parse("<SystemConfiguration>\n<Component FQDD=\"x\">"),
            Err(ScpError::NotClosed("SystemConfiguration".into()))
        );
        assert!(matches!(
            parse("<SystemConfiguration>\n<Component FQDD=\"x\">\n<Bad/>"),
            Err(ScpError::Invalid(3, _))
        ));
        assert!(matches!(
            parse("{\"SystemConfiguration\": 1"),
            Err(ScpError::Json(_))
        ));
    }

    #[test]
    fn bios_attributes_are_read_as_their_type_beside_the_next_boot() {
        let c = parse(&format!(
            "<SystemConfiguration><Component FQDD=\"{BIOS}\"><Attribute Name=\"ProcVirtualization\">Disabled</Attribute><Attribute Name=\"PowerOnDelaySeconds\">30</Attribute></Component><Component FQDD=\"{IDRAC}\"><Attribute Name=\"ServerBoot.1#FirstBootDevice\">PXE</Attribute></Component></SystemConfiguration>"
        ))
        .unwrap();
        let p = plan(&c, IDRAC, none()).unwrap();
        assert_eq!(
            p.bios,
            BTreeMap::from([
                ("PowerOnDelaySeconds".to_string(), Value::from(30)),
                ("ProcVirtualization".to_string(), Value::from("Disabled")),
            ])
        );
        assert_eq!(p.next.unwrap().target, BootTarget::Pxe);
        let c = parse(&format!(
            "<SystemConfiguration><Component FQDD=\"{BIOS}\"><Attribute Name=\"PowerOnDelaySeconds\">soon</Attribute></Component></SystemConfiguration>"
        ))
        .unwrap();
        assert!(matches!(
            plan(&c, IDRAC, none()),
            Err(ScpError::BadValue(_, n, v)) if n == "PowerOnDelaySeconds" && v == "soon"
        ));
    }

    #[test]
    fn unknown_components_attributes_and_values_are_named() {
        let c = parse("<SystemConfiguration><Component FQDD=\"NIC.Integrated.1-1-1\"><Attribute Name=\"LegacyBootProto\">PXE</Attribute></Component></SystemConfiguration>").unwrap();
        assert_eq!(
            next(&c, none()),
            Err(ScpError::UnknownComponent("NIC.Integrated.1-1-1".into()))
        );
        // The boot mode is what the machine is (BootSourceOverrideMode
        // changes it), not a BIOS setting here.
        let c = parse("<SystemConfiguration><Component FQDD=\"BIOS.Setup.1-1\"><Attribute Name=\"BootMode\">Uefi</Attribute></Component></SystemConfiguration>").unwrap();
        assert_eq!(
            next(&c, none()),
            Err(ScpError::UnknownAttribute(BIOS.into(), "BootMode".into()))
        );
        let c = parse(&format!("<SystemConfiguration><Component FQDD=\"{IDRAC}\"><Attribute Name=\"IPv4.1#Enable\">Disabled</Attribute></Component></SystemConfiguration>")).unwrap();
        assert_eq!(
            next(&c, none()),
            Err(ScpError::UnknownAttribute(
                IDRAC.into(),
                "IPv4.1#Enable".into()
            ))
        );
        let c = parse(&sushy_cd("Maybe")).unwrap();
        assert!(matches!(
            next(&c, none()),
            Err(ScpError::BadValue(_, _, v)) if v == "Maybe"
        ));
    }

    #[test]
    fn boot_once_left_out_keeps_its_value_and_normal_clears_the_override() {
        let only_device = |d: &str| {
            parse(&format!("<SystemConfiguration><Component FQDD=\"{IDRAC}\"><Attribute Name=\"ServerBoot.1#FirstBootDevice\">{d}</Attribute></Component></SystemConfiguration>")).unwrap()
        };
        let continuous = NextBoot {
            target: BootTarget::Pxe,
            enabled: OverrideEnabled::Continuous,
        };
        assert_eq!(
            next(&only_device("HDD"), continuous).unwrap(),
            Some(NextBoot {
                target: BootTarget::Hdd,
                enabled: OverrideEnabled::Continuous
            })
        );
        assert_eq!(
            next(&only_device("Normal"), continuous)
                .unwrap()
                .unwrap()
                .enabled,
            OverrideEnabled::Disabled
        );
        let empty = parse(&format!(
            "<SystemConfiguration><Component FQDD=\"{IDRAC}\"></Component></SystemConfiguration>"
        ))
        .unwrap();
        assert_eq!(next(&empty, none()).unwrap(), None);
    }

    #[test]
    fn no_input_panics_the_parser() {
        use proptest::prelude::*;
        proptest!(ProptestConfig::with_cases(2000), |(s in "[<>/=\"a-zA-Z &#;!?{}\\[\\]:,.-]{0,120}")| {
            let _ = parse(&s);
            let _ = parse(&format!("<SystemConfiguration>{s}</SystemConfiguration>"));
        });
    }
}
