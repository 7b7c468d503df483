//! Firmware selection from QEMU's firmware descriptors
//! (`/usr/share/qemu/firmware/*.json`, overridden by `/etc/qemu/firmware`),
//! and the `<os>` edits that switch a domain between UEFI variants and
//! legacy BIOS.
//!
//! UEFI variants: Secure Boot on with keys enrolled (the `enrolled-keys`
//! descriptor), Secure Boot on in setup mode (secure-boot, no keys), and
//! Secure Boot off (no `secure-boot` feature). Legacy BIOS is the machine's
//! default firmware (SeaBIOS): no loader, no NVRAM.

use std::path::Path;

use serde::Deserialize;

use super::xml::Element;
use crate::model::Arch;

pub const DIRS: &[&str] = &["/etc/qemu/firmware", "/usr/share/qemu/firmware"];

#[derive(Debug, Deserialize)]
struct Descriptor {
    #[serde(rename = "interface-types")]
    interface_types: Vec<String>,
    mapping: Mapping,
    targets: Vec<Target>,
    #[serde(default)]
    features: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Mapping {
    device: String,
    executable: Option<FwFile>,
    #[serde(rename = "nvram-template")]
    nvram_template: Option<FwFile>,
}

#[derive(Debug, Deserialize)]
struct FwFile {
    filename: String,
    #[serde(default)]
    format: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Target {
    architecture: String,
    machines: Vec<String>,
}

/// One usable UEFI firmware: code, varstore template and its properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firmware {
    pub code: String,
    pub vars: String,
    pub secure_boot: bool,
    pub enrolled_keys: bool,
    pub requires_smm: bool,
}

/// Which UEFI variant a machine's Secure Boot settings call for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    pub secure_boot: bool,
    pub enrolled_keys: bool,
}

fn glob(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((pre, post)) => {
            s.len() >= pre.len() + post.len() && s.starts_with(pre) && s.ends_with(post)
        }
    }
}

/// Whether a descriptor's machine pattern covers the domain's machine type
/// (`q35` is the alias of the versioned `pc-q35-*` types).
fn machine_matches(pattern: &str, machine: &str) -> bool {
    let canonical = match machine {
        "q35" => "pc-q35-0",
        "pc" => "pc-i440fx-0",
        "virt" => "virt-0",
        m => m,
    };
    glob(pattern, machine) || glob(pattern, canonical)
}

fn arch_name(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64",
        Arch::Aarch64 => "aarch64",
        Arch::Ppc64le => "ppc64",
    }
}

/// All UEFI flash firmwares for `arch`/`machine`, in descriptor priority
/// order (file name order; `/etc` overrides a same-named `/usr/share` file).
pub fn available(dirs: &[&Path], arch: Arch, machine: &str) -> Vec<Firmware> {
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && !files.iter().any(|(n, _)| *n == name) {
                files.push((name, e.path()));
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|(_, p)| serde_json::from_slice::<Descriptor>(&std::fs::read(p).ok()?).ok())
        .filter(|d| d.interface_types.iter().any(|t| t == "uefi") && d.mapping.device == "flash")
        .filter(|d| {
            d.targets.iter().any(|t| {
                t.architecture == arch_name(arch)
                    && t.machines.iter().any(|m| machine_matches(m, machine))
            })
        })
        .filter_map(|d| {
            let code = d.mapping.executable.as_ref()?;
            let vars = d.mapping.nvram_template.as_ref()?;
            let raw = |f: &FwFile| f.format.as_deref().unwrap_or("raw") == "raw";
            if !raw(code) || !raw(vars) {
                return None;
            }
            let has = |f: &str| d.features.iter().any(|x| x == f);
            Some(Firmware {
                code: code.filename.clone(),
                vars: vars.filename.clone(),
                secure_boot: has("secure-boot"),
                enrolled_keys: has("enrolled-keys"),
                requires_smm: has("requires-smm"),
            })
        })
        .collect()
}

/// The firmware `map` names for `arch` (the UEFI code it gives, with
/// Secure Boot on and off), the descriptors' `found` supplying what the
/// map leaves out (the varstore templates, whether the code needs SMM);
/// `None` where the map names no code for `arch`.
pub fn mapped(
    map: &crate::backend::options::LoaderMap,
    arch: Arch,
    found: &[Firmware],
) -> Option<Vec<Firmware>> {
    let code = map.code(arch_name(arch))?;
    let kind = |f: &&Firmware, secure: bool, enrolled: bool| {
        f.secure_boot == secure && (!secure || f.enrolled_keys == enrolled)
    };
    // A descriptor's template for the same code, else the one named
    // after the code (`X_CODE.secboot.fd`: `X_VARS.ms.fd` with keys,
    // `X_VARS.fd` without), which has its size; never another build's.
    let template = |secure: bool, enrolled: bool| {
        let mut same = found.iter().filter(|f| f.code == code);
        same.find(|f| kind(f, secure, enrolled))
            .map(|f| f.vars.clone())
            .or_else(|| vars_beside(code, secure && enrolled))
    };
    let smm = found.iter().find(|f| f.code == code).map_or(
        arch == Arch::X86_64 && (code.contains("secboot") || code.contains(".ms.")),
        |f| f.requires_smm,
    );
    let vars = |secure: bool, enrolled: bool| {
        let given = match (secure && enrolled, &map.secure_boot_vars, &map.plain_vars) {
            (true, Some(v), _) | (false, _, Some(v)) => Some(v.clone()),
            _ => None,
        };
        given.or_else(|| template(secure, enrolled))
    };
    let variants = [(true, true), (true, false), (false, false)];
    Some(
        variants
            .into_iter()
            .filter_map(|(secure, enrolled)| {
                Some(Firmware {
                    code: code.to_string(),
                    vars: vars(secure, enrolled)?,
                    secure_boot: secure,
                    enrolled_keys: enrolled,
                    requires_smm: smm || (secure && arch == Arch::X86_64),
                })
            })
            .collect(),
    )
}

/// The varstore template shipped beside `code` under the distributions'
/// names, if it is there: with Secure Boot's keys enrolled (`.ms`) or none.
fn vars_beside(code: &str, enrolled: bool) -> Option<String> {
    let (dir, file) = code.rsplit_once('/').unwrap_or(("", code));
    let (stem, _) = file.split_once('.')?;
    let stem = stem.replace("CODE", "VARS");
    let name = if enrolled {
        format!("{dir}/{stem}.ms.fd")
    } else {
        format!("{dir}/{stem}.fd")
    };
    (stem != file.split_once('.')?.0 && Path::new(&name).exists()).then_some(name)
}

/// The best firmware for what is wanted.
pub fn select(list: &[Firmware], want: Want) -> Option<&Firmware> {
    list.iter().find(|f| {
        f.secure_boot == want.secure_boot
            && (!want.secure_boot || f.enrolled_keys == want.enrolled_keys)
    })
}

/// The loader the definition names now, if any.
pub fn current_loader(d: &Element) -> Option<String> {
    d.at("os/loader")
        .map(|l| l.text().trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The machine type of the definition (`q35`, `pc-q35-10.0`, ...).
pub fn machine(d: &Element) -> String {
    d.at("os/type")
        .and_then(|t| t.attr("machine"))
        .unwrap_or("pc")
        .to_string()
}

/// Rewrites `<os>` for `fw` (UEFI) or for the default BIOS (`None`).
/// `nvram` is the per-domain varstore path to use.
pub fn apply(d: &mut Element, fw: Option<&Firmware>, nvram: &str) {
    let os = d.child_or_insert("os");
    os.attrs.retain(|(k, _)| k != "firmware");
    os.remove_where(|e| matches!(e.name.as_str(), "loader" | "nvram" | "firmware"));
    let Some(fw) = fw else { return };
    let loader = Element::new("loader")
        .with_attr("readonly", "yes")
        .with_attr("secure", if fw.secure_boot { "yes" } else { "no" })
        .with_attr("type", "pflash")
        .with_text(&fw.code);
    let nv = Element::new("nvram")
        .with_attr("template", &fw.vars)
        .with_text(nvram);
    // <loader> and <nvram> follow <type> in libvirt's schema order.
    let at = os
        .children
        .iter()
        .position(|n| matches!(n, super::xml::Node::Element(e) if e.name == "type"))
        .map(|i| i + 1)
        .unwrap_or(0);
    os.children.insert(at, super::xml::Node::Element(nv));
    os.children.insert(at, super::xml::Node::Element(loader));
    if fw.requires_smm {
        let features = d.child_or_insert("features");
        if features.child("smm").is_none() {
            features.push(Element::new("smm").with_attr("state", "on"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::xml::parse;
    use super::*;

    fn debian() -> Vec<Firmware> {
        available(
            &[Path::new("/usr/share/qemu/firmware")],
            Arch::X86_64,
            "q35",
        )
    }

    /// sushy-tools' loader map: its code with Secure Boot on and off, the
    /// templates it names, else the descriptors' for that code, else the
    /// ones shipped beside it; never a template of another size.
    #[test]
    fn a_loader_map_names_the_code() {
        let pick = |v: &[Firmware], secure_boot, enrolled_keys| {
            select(
                v,
                Want {
                    secure_boot,
                    enrolled_keys,
                },
            )
            .cloned()
            .unwrap()
        };
        use crate::backend::options::LoaderMap;
        let map = |code: &str, sb: Option<&str>| LoaderMap {
            uefi_code: vec![("x86_64".into(), code.into())],
            secure_boot_vars: sb.map(str::to_string),
            plain_vars: None,
        };
        assert_eq!(mapped(&map("/x", None), Arch::Aarch64, &debian()), None);
        let found = debian();
        // The 4M secboot build, as the descriptors know it.
        let code = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
        let v = mapped(&map(code, None), Arch::X86_64, &found).unwrap();
        let on = pick(&v, true, true);
        assert_eq!(
            (on.code.as_str(), on.vars.as_str()),
            (code, "/usr/share/OVMF/OVMF_VARS_4M.ms.fd")
        );
        assert!(on.requires_smm);
        // The 2M build of sushy-tools' sample: its own templates beside it.
        let code = "/usr/share/OVMF/OVMF_CODE.secboot.fd";
        let v = mapped(&map(code, Some("/given/VARS.fd")), Arch::X86_64, &found).unwrap();
        let on = pick(&v, true, true);
        assert_eq!(on.vars, "/given/VARS.fd");
        let off = pick(&v, false, false);
        assert_eq!(
            (off.code.as_str(), off.vars.as_str()),
            (code, "/usr/share/OVMF/OVMF_VARS.fd")
        );
        assert!(
            off.requires_smm,
            "a secboot build needs SMM with Secure Boot off too"
        );
    }

    #[test]
    fn machine_patterns() {
        assert!(machine_matches("pc-q35-*", "q35"));
        assert!(machine_matches("pc-q35-*", "pc-q35-10.0"));
        assert!(!machine_matches("pc-q35-*", "pc-i440fx-10.0"));
    }

    #[test]
    fn variants_map_to_descriptors() {
        let fws = vec![
            Firmware {
                code: "sec".into(),
                vars: "enrolled".into(),
                secure_boot: true,
                enrolled_keys: true,
                requires_smm: true,
            },
            Firmware {
                code: "sec".into(),
                vars: "empty".into(),
                secure_boot: true,
                enrolled_keys: false,
                requires_smm: true,
            },
            Firmware {
                code: "plain".into(),
                vars: "empty".into(),
                secure_boot: false,
                enrolled_keys: false,
                requires_smm: false,
            },
        ];
        assert_eq!(
            select(
                &fws,
                Want {
                    secure_boot: true,
                    enrolled_keys: true
                }
            )
            .unwrap()
            .vars,
            "enrolled"
        );
        assert_eq!(
            select(
                &fws,
                Want {
                    secure_boot: true,
                    enrolled_keys: false
                }
            )
            .unwrap()
            .vars,
            "empty"
        );
        assert_eq!(
            select(
                &fws,
                Want {
                    secure_boot: false,
                    enrolled_keys: true
                }
            )
            .unwrap()
            .code,
            "plain"
        );
        // On a Debian host with ovmf, the same three exist.
        if Path::new("/usr/share/qemu/firmware/60-edk2-x86_64.json").exists() {
            let d = debian();
            assert_eq!(
                select(
                    &d,
                    Want {
                        secure_boot: false,
                        enrolled_keys: false
                    }
                )
                .unwrap()
                .code,
                "/usr/share/OVMF/OVMF_CODE_4M.fd"
            );
            assert!(select(
                &d,
                Want {
                    secure_boot: true,
                    enrolled_keys: true
                }
            )
            .unwrap()
            .vars
            .ends_with("OVMF_VARS_4M.ms.fd"));
        }
    }

    #[test]
    fn apply_switches_between_uefi_and_bios() {
        let mut d = parse(r#"<domain><os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><boot dev="hd"/></os><features><acpi/></features></domain>"#).unwrap();
        let fw = Firmware {
            code: "/c.fd".into(),
            vars: "/v.fd".into(),
            secure_boot: true,
            enrolled_keys: true,
            requires_smm: true,
        };
        apply(&mut d, Some(&fw), "/n/x_VARS.fd");
        let out = d.to_xml();
        assert!(out.contains(r#"<type arch="x86_64" machine="q35">hvm</type><loader readonly="yes" secure="yes" type="pflash">/c.fd</loader><nvram template="/v.fd">/n/x_VARS.fd</nvram>"#), "{out}");
        assert!(
            out.contains(r#"<smm state="on"/>"#) && !out.contains("firmware="),
            "{out}"
        );
        assert_eq!(current_loader(&d).as_deref(), Some("/c.fd"));
        apply(&mut d, None, "/n/x_VARS.fd");
        assert!(current_loader(&d).is_none());
        assert!(!d.to_xml().contains("<nvram"));
    }
}
