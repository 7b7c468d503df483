//! A petitboot case's network side: the `[petitboot]` templates rendered
//! for one machine, the configuration written where the scenario says, and
//! the DHCP options (209, 210; 59 on IPv6) that point the machine at it.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::lab::BOOT_PORT;
use crate::scenario::{Petitboot, Protocol};

/// The machine and server a case's templates are rendered for.
pub struct Target<'a> {
    pub uuid: &'a str,
    /// `52:54:00:...`, lower case.
    pub mac: &'a str,
    pub ip: Ipv4Addr,
    /// The boot server as the machine reaches it (IPv6 on IPv6-only
    /// networks).
    pub server: IpAddr,
}

/// `template` with the `{...}` placeholders of `Petitboot` filled in.
pub fn render(template: &str, p: &Petitboot, t: &Target) -> Result<String> {
    let hex: String = t.ip.octets().iter().map(|o| format!("{o:02X}")).collect();
    let host = match t.server {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    let base = match p.protocol {
        Protocol::Http => format!("http://{host}:{BOOT_PORT}"),
        Protocol::Tftp => format!("tftp://{host}"),
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .with_context(|| format!("unclosed {{ in {template:?}"))?;
        let name = &rest[open + 1..open + close];
        out.push_str(&match name {
            "uuid" => t.uuid.to_string(),
            "mac" => t.mac.replace(':', "-"),
            "ip" => t.ip.to_string(),
            "iphex" => hex.clone(),
            "server" => t.server.to_string(),
            "base" => base.clone(),
            _ => match name.strip_prefix("iphex:").map(str::parse::<usize>) {
                Some(Ok(n)) if (1..=8).contains(&n) => hex[..n].to_string(),
                _ => bail!("unknown placeholder {{{name}}} in {template:?} (uuid, mac, ip, iphex, iphex:1..8, server, base)"),
            },
        });
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A rendered path inside the served folder.
fn inside(key: &str, template: &str, p: &Petitboot, t: &Target) -> Result<String> {
    let rel = render(template, p, t)?;
    if rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
        bail!("petitboot.{key}: {rel:?} must stay inside the served folder");
    }
    Ok(rel)
}

/// Writes the rendered configuration under `root` (the served folder),
/// copies the `artifacts` found there into `files_dir`, and returns the
/// dnsmasq options for 209 and 210 (and DHCPv6's 59).
pub fn prepare(p: &Petitboot, t: &Target, root: &Path, artifacts: &[&str]) -> Result<Vec<String>> {
    let path = root.join(inside("config_path", &p.config_path, p, t)?);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, render(&p.config, p, t)?)?;
    if let Some(d) = &p.files_dir {
        let dir = root.join(inside("files_dir", d, p, t)?);
        std::fs::create_dir_all(&dir)?;
        for a in artifacts {
            std::fs::copy(root.join(a), dir.join(a))
                .with_context(|| format!("copying {a} into {}", dir.display()))?;
        }
    }
    let mut opts = Vec::new();
    for (code, v) in [(209, &p.option_209), (210, &p.option_210)] {
        if let Some(v) = v {
            opts.push(format!("dhcp-option-force={code},\"{}\"", render(v, p, t)?));
        }
    }
    if let Some(v) = &p.bootfile_url {
        // Sent only when the client asks for it, as petitboot's udhcpc6 does.
        opts.push(format!(
            "dhcp-option=option6:bootfile-url,{}",
            render(v, p, t)?
        ));
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pb(protocol: Protocol) -> Petitboot {
        Petitboot {
            protocol,
            option_209: Some("{uuid}/config".into()),
            option_210: Some("{base}/".into()),
            bootfile_url: None,
            config_path: "pxelinux.cfg/{iphex:5}".into(),
            files_dir: Some("{uuid}".into()),
            config: "label x\nkernel {uuid}/k\nappend mac={mac} ip={ip}\n".into(),
        }
    }

    fn target() -> Target<'static> {
        Target {
            uuid: "u-1",
            mac: "52:54:00:5e:0a:01",
            ip: Ipv4Addr::new(198, 18, 10, 50),
            server: Ipv4Addr::new(198, 18, 10, 1).into(),
        }
    }

    #[test]
    fn templates_render_and_the_config_lands_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k"), "K").unwrap();
        let opts = prepare(&pb(Protocol::Http), &target(), dir.path(), &["k"]).unwrap();
        assert_eq!(
            opts,
            [
                "dhcp-option-force=209,\"u-1/config\"",
                "dhcp-option-force=210,\"http://198.18.10.1:8080/\""
            ]
        );
        let written = std::fs::read_to_string(dir.path().join("pxelinux.cfg/C6120")).unwrap();
        assert_eq!(
            written,
            "label x\nkernel u-1/k\nappend mac=52-54-00-5e-0a-01 ip=198.18.10.50\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("u-1/k")).unwrap(),
            "K"
        );
        let t = render("{base}|{iphex}", &pb(Protocol::Tftp), &target()).unwrap();
        assert_eq!(t, "tftp://198.18.10.1|C6120A32");
    }

    #[test]
    fn bad_templates_are_refused() {
        let p = pb(Protocol::Http);
        assert!(render("{nope}", &p, &target())
            .unwrap_err()
            .to_string()
            .contains("unknown placeholder {nope}"));
        assert!(render("{iphex:9}", &p, &target()).is_err());
        assert!(render("{uuid", &p, &target()).is_err());
        let escape = Petitboot {
            config_path: "../x".into(),
            ..p
        };
        assert!(prepare(&escape, &target(), Path::new("/nonexistent"), &[]).is_err());
    }

    #[test]
    fn on_ipv6_the_bootfile_url_is_offered_and_the_base_has_brackets() {
        let dir = tempfile::tempdir().unwrap();
        let p = Petitboot {
            option_209: None,
            option_210: None,
            bootfile_url: Some("{base}/{uuid}/config".into()),
            config_path: "{uuid}/config".into(),
            files_dir: None,
            ..pb(Protocol::Http)
        };
        let t = Target {
            server: "fd00:5e:a::1".parse().unwrap(),
            ..target()
        };
        let opts = prepare(&p, &t, dir.path(), &[]).unwrap();
        assert_eq!(
            opts,
            ["dhcp-option=option6:bootfile-url,http://[fd00:5e:a::1]:8080/u-1/config"]
        );
        assert!(dir.path().join("u-1/config").exists());
    }
}
