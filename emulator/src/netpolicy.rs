//! Which addresses the BMC itself may fetch from (virtual media images):
//! by default not its own host's loopback, not link-local (where cloud
//! metadata services live), never unspecified, multicast or broadcast.
//! `--media-allow-net` lets networks through that the default refuses
//! (a lab serving images on loopback). `--media-ip-family` puts the BMC on
//! a single-stack network: image URLs naming an address of the other
//! family are refused when inserted, and a host name that resolves only to
//! such addresses is refused when fetched.

use std::net::IpAddr;
use std::str::FromStr;

/// An IP network, `addr/prefix` (a bare address is a /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |a: IpAddr| -> (u128, u8) {
            match a {
                IpAddr::V4(v) => (u128::from(u32::from(v)) << 96, 32),
                IpAddr::V6(v) => (u128::from(v), 128),
            }
        };
        let ((net, width), (host, host_width)) = (bits(self.addr), bits(ip.to_canonical()));
        if width != host_width {
            return false;
        }
        let mask = match self.prefix {
            0 => 0,
            p => u128::MAX << (128 - u32::from(p)),
        };
        net & mask == host & mask
    }
}

impl FromStr for IpNet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not an IP network (e.g. 127.0.0.0/8, fd00::/8)");
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p.parse::<u8>().ok().filter(|&p| p <= max).ok_or_else(bad)?,
        };
        Ok(IpNet { addr, prefix })
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The one IP family a BMC's network has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IpFamily {
    #[value(name = "4")]
    V4,
    #[value(name = "6")]
    V6,
}

/// An IPv4 address in one of the older spellings the resolver (glibc's
/// `inet_aton`, which `getaddrinfo` uses) still takes for a host name:
/// one to four parts, each decimal, octal (`0` first) or hexadecimal
/// (`0x`), the last filling the bytes left (`2130706433`, `0x7f.1`,
/// `127.1`). So such a host is known for an address before the download
/// resolves it.
fn inet_aton(host: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for p in &parts {
        let (digits, radix) = match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            Some(hex) => (hex, 16),
            None if p.len() > 1 && p.starts_with('0') => (&p[1..], 8),
            None => (*p, 10),
        };
        if digits.is_empty() && radix != 16 || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        values.push(if digits.is_empty() {
            0
        } else {
            u64::from_str_radix(digits, radix).ok()?
        });
    }
    let (last, first) = values.split_last()?;
    if first.iter().any(|v| *v > 255) || *last >= 1u64 << (8 * (4 - first.len())) {
        return None;
    }
    let n = first
        .iter()
        .enumerate()
        .fold(*last, |n, (i, v)| n | v << (8 * (3 - i)));
    Some(std::net::Ipv4Addr::from(u32::try_from(n).ok()?))
}

impl IpFamily {
    /// `4` or `6`, as sushy-tools' `SUSHY_EMULATOR_VIRTUAL_MEDIA_IP_FAMILY`.
    pub fn parse(s: &str) -> Option<IpFamily> {
        match s {
            "4" => Some(IpFamily::V4),
            "6" => Some(IpFamily::V6),
            _ => None,
        }
    }

    pub fn admits(self, ip: IpAddr) -> bool {
        match self {
            IpFamily::V4 => ip.to_canonical().is_ipv4(),
            IpFamily::V6 => ip.to_canonical().is_ipv6(),
        }
    }

    /// The address a URL names by its literal host, if it names one
    /// (`http://192.0.2.1/`, `http://user@[fd00::1]:8080/x`); None for a
    /// host name.
    pub fn literal_host(url: &str) -> Option<IpAddr> {
        let rest = url.split_once("://")?.1;
        let authority = rest.split(['/', '?', '#']).next()?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(v6) = host.strip_prefix('[') {
            return v6.split_once(']')?.0.parse().ok();
        }
        let host = host.split(':').next()?;
        host.parse()
            .ok()
            .or_else(|| inet_aton(host).map(IpAddr::V4))
    }

    /// Why `url` cannot be reached from this network, if its host is an
    /// address of the other family.
    pub fn refuses(self, url: &str) -> Option<String> {
        let ip = Self::literal_host(url)?;
        (!self.admits(ip)).then(|| {
            format!(
                "{ip} is not an IPv{} address, the only family of this BMC's network",
                self.number()
            )
        })
    }

    pub fn number(self) -> u8 {
        match self {
            IpFamily::V4 => 4,
            IpFamily::V6 => 6,
        }
    }
}

/// The address policy of what the BMC itself connects to (image
/// downloads, event deliveries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Networks let through although the default refuses them.
    pub allow: Vec<IpNet>,
    /// The only family the BMC's network has (None: both).
    pub family: Option<IpFamily>,
    /// The only networks the BMC's network reaches (empty: every one).
    pub reachable: Vec<IpNet>,
}

impl AddressPolicy {
    /// `Err(why)` when `ip` may not be connected to.
    pub fn check(&self, ip: IpAddr) -> Result<(), &'static str> {
        if !self.reachable.is_empty() && !self.reachable.iter().any(|n| n.contains(ip)) {
            return Err("not on a network this BMC's network reaches");
        }
        self.admits(ip)
    }

    /// `Err(why)` when the policy refuses `ip` whatever the network
    /// reaches: what a client may be told when it names the address.
    pub fn admits(&self, ip: IpAddr) -> Result<(), &'static str> {
        match self.family {
            Some(IpFamily::V4) if !IpFamily::V4.admits(ip) => {
                return Err("IPv6, and this BMC's network is IPv4 only")
            }
            Some(IpFamily::V6) if !IpFamily::V6.admits(ip) => {
                return Err("IPv4, and this BMC's network is IPv6 only")
            }
            _ => {}
        }
        let ip = ip.to_canonical();
        let never = match ip {
            IpAddr::V4(v) => {
                if v.octets()[0] == 0 {
                    Some("unspecified")
                } else if v.is_multicast() {
                    Some("multicast")
                } else if v.is_broadcast() {
                    Some("broadcast")
                } else {
                    None
                }
            }
            IpAddr::V6(v) if v.is_unspecified() => Some("unspecified"),
            IpAddr::V6(v) if v.is_multicast() => Some("multicast"),
            IpAddr::V6(_) => None,
        };
        if let Some(why) = never {
            return Err(why);
        }
        let refused = match ip {
            IpAddr::V4(v) if v.is_loopback() => Some("loopback"),
            IpAddr::V4(v) if v.is_link_local() => Some("link-local"),
            IpAddr::V6(v) if v.is_loopback() => Some("loopback"),
            IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80 => Some("link-local"),
            _ => None,
        };
        match refused {
            Some(why) if !self.allow.iter().any(|n| n.contains(ip)) => Err(why),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_stack_network_refuses_the_other_family() {
        assert_eq!(
            IpFamily::literal_host("http://user:pw@[fd00::1]:8080/a.iso"),
            Some(ip("fd00::1"))
        );
        assert_eq!(
            IpFamily::literal_host("https://192.0.2.7:8443/a.iso?x=1"),
            Some(ip("192.0.2.7"))
        );
        assert_eq!(IpFamily::literal_host("http://images.example/a.iso"), None);
        assert_eq!(
            IpFamily::literal_host("http://192.0.2.7"),
            Some(ip("192.0.2.7"))
        );
        assert_eq!(IpFamily::literal_host("no scheme"), None);
        // The resolver's older IPv4 spellings are addresses too.
        for (url, ip) in [
            ("http://2130706433/a.iso", "127.0.0.1"),
            ("http://0x7f.1/a.iso", "127.0.0.1"),
            ("http://127.1:8080/a.iso", "127.0.0.1"),
            ("http://0300.0250.1.2/a.iso", "192.168.1.2"),
            ("http://10.0x10203/a.iso", "10.1.2.3"),
        ] {
            assert_eq!(
                IpFamily::literal_host(url),
                Some(ip.parse().unwrap()),
                "{url}"
            );
            assert!(IpFamily::V6.refuses(url).is_some(), "{url}");
        }
        for name in [
            "http://1.2.3.4.5/",
            "http://256.1/",
            "http://1.2.3.256/",
            "http://4294967296/",
            "http://08/",
            "http://0xg/",
            "http://1..2/",
            "http://example.com/",
            "http://1e3/",
        ] {
            assert_eq!(IpFamily::literal_host(name), None, "{name}");
        }
        let v4 = IpFamily::V4;
        assert!(v4.refuses("http://192.0.2.7/a.iso").is_none());
        assert!(v4.refuses("http://images.example/a.iso").is_none());
        let why = v4.refuses("http://[2001:db8::7]/a.iso").unwrap();
        assert!(why.contains("2001:db8::7") && why.contains("IPv4"), "{why}");
        assert!(IpFamily::V6.refuses("http://192.0.2.7/a.iso").is_some());
        assert!(IpFamily::V6.refuses("http://[2001:db8::7]/a.iso").is_none());
        // A mapped IPv4 address is IPv4.
        assert!(v4.admits(ip("::ffff:192.0.2.7")));
        assert!(!IpFamily::V6.admits(ip("192.0.2.7")));
        // What a name resolves to, at download time.
        let p = AddressPolicy {
            family: Some(IpFamily::V6),
            ..Default::default()
        };
        assert_eq!(
            p.check(ip("192.0.2.7")),
            Err("IPv4, and this BMC's network is IPv6 only")
        );
        assert_eq!(p.check(ip("2001:db8::7")), Ok(()));
        assert_eq!(IpFamily::parse("4"), Some(IpFamily::V4));
        assert_eq!(IpFamily::parse("IPv4"), None);
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_default_refuses_the_hosts_own_and_link_local_addresses() {
        let p = AddressPolicy::default();
        for (a, why) in [
            ("127.0.0.1", "loopback"),
            ("127.200.0.9", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
        ] {
            assert_eq!(p.check(ip(a)), Err(why), "{a}");
        }
        // The harness's lab networks and ordinary servers.
        for a in [
            "198.18.0.1",
            "fd00:5e::1",
            "10.0.0.5",
            "192.0.2.1",
            "2001:db8::1",
            "fec0::1",
        ] {
            assert_eq!(p.check(ip(a)), Ok(()), "{a}");
        }
    }

    #[test]
    fn allowed_networks_pass_but_never_unspecified_or_multicast() {
        let p = AddressPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap(), "fe80::/10".parse().unwrap()],
            ..Default::default()
        };
        assert_eq!(p.check(ip("127.0.0.1")), Ok(()));
        assert_eq!(p.check(ip("::ffff:127.0.0.1")), Ok(()));
        assert_eq!(p.check(ip("fe80::2")), Ok(()));
        assert_eq!(p.check(ip("::1")), Err("loopback"));
        assert_eq!(p.check(ip("169.254.1.1")), Err("link-local"));
        let all = AddressPolicy {
            allow: vec!["0.0.0.0/0".parse().unwrap(), "::/0".parse().unwrap()],
            ..Default::default()
        };
        assert_eq!(all.check(ip("0.0.0.0")), Err("unspecified"));
        assert_eq!(all.check(ip("ff02::1")), Err("multicast"));
        assert_eq!(all.check(ip("::1")), Ok(()));
    }

    #[test]
    fn an_isolated_network_reaches_only_its_networks() {
        let p = AddressPolicy {
            allow: vec!["127.0.0.0/8".parse().unwrap()],
            reachable: vec!["127.0.0.0/8".parse().unwrap()],
            ..Default::default()
        };
        assert_eq!(p.check(ip("127.0.0.1")), Ok(()));
        // Admitted (a client may name it) but never connected to.
        assert_eq!(p.admits(ip("192.168.1.50")), Ok(()));
        assert_eq!(
            p.check(ip("192.168.1.50")),
            Err("not on a network this BMC's network reaches")
        );
    }

    #[test]
    fn networks_parse_strictly() {
        assert_eq!(
            "127.0.0.1".parse::<IpNet>().unwrap().to_string(),
            "127.0.0.1/32"
        );
        assert_eq!(
            "::ffff:10.0.0.0/8".parse::<IpNet>().unwrap().to_string(),
            "10.0.0.0/8"
        );
        let n: IpNet = "10.1.0.0/16".parse().unwrap();
        assert!(n.contains(ip("10.1.255.1")) && !n.contains(ip("10.2.0.1")));
        assert!(
            !n.contains(ip("::a01:1")),
            "no v4 network holds a v6 address"
        );
        for bad in ["10.0.0.0/33", "::/129", "host/8", "10.0.0.0/", ""] {
            assert!(bad.parse::<IpNet>().is_err(), "{bad}");
        }
    }
}
