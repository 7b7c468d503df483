//! `capture --redact`: what identifies a site or a machine replaced
//! before anything is written, each value by the same stand-in wherever
//! it appears (bodies, URIs and so folder names, headers, error bodies),
//! so that links, Ids and cross-references still agree.
//!
//! Found by property name: serial numbers (`*SerialNumber`), UUIDs
//! (`*UUID`), host and domain names (`HostName`, `FQDN`, `DomainName`),
//! user names (`UserName`, and the capture's own user); IP addresses under
//! address-like names (`*Address*`, `Gateway`, `*NameServers`, `*DNS*`,
//! `NTPServers`); MAC addresses by their shape, wherever they are. The
//! stand-ins come from reserved ranges: 192.0.2.0/24 (then 198.51.100.0/24,
//! 203.0.113.0/24), 2001:db8::/32, locally administered 02:00:00 MACs,
//! `example.net`. Values of five characters or more are replaced inside
//! longer strings too (at word boundaries); shorter ones only where a
//! whole value or a whole URI segment is one.

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::Value;

use super::{Fetched, Payload};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Serial,
    Uuid,
    Mac,
    Ipv4,
    Ipv6,
    Host,
    Fqdn,
    User,
}

#[derive(Default)]
struct Redactor {
    map: HashMap<String, String>,
    counts: HashMap<Kind, usize>,
    /// Values replaced inside longer strings, longest first.
    long: Vec<String>,
}

/// Redacts the capture in place.
pub fn redact(fetched: &mut [Fetched], user: Option<&str>) {
    let mut r = Redactor::default();
    if let Some(u) = user {
        r.add(Kind::User, u);
    }
    for f in fetched.iter() {
        if let Payload::Json(v) = &f.payload {
            r.collect(v, "");
        }
    }
    r.long = r.map.keys().filter(|k| k.len() >= 5).cloned().collect();
    r.long.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    for f in fetched.iter_mut() {
        f.uri = r.uri(&f.uri);
        for (_, v) in f.headers.iter_mut() {
            *v = r.text(v);
        }
        match &mut f.payload {
            Payload::Json(v) => r.value(v),
            Payload::Xml(_) => {}
            Payload::Error { body, .. } => *body = r.text(body),
        }
    }
}

fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
        && !s.contains(':') | !s.contains('-')
        && parts.iter().any(|p| *p != "00")
}

fn ip_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["address", "gateway", "nameserver", "dns", "ntpserver"]
        .iter()
        .any(|w| k.contains(w))
        && !k.contains("mac")
        && !k.contains("origin")
}

fn kind_by_key(key: &str, s: &str) -> Option<Kind> {
    if key.ends_with("SerialNumber") {
        return Some(Kind::Serial);
    }
    if key.ends_with("UUID") {
        return Some(Kind::Uuid);
    }
    match key {
        "HostName" | "Hostname" => Some(if s.contains('.') {
            Kind::Fqdn
        } else {
            Kind::Host
        }),
        "FQDN" | "DomainName" => Some(Kind::Fqdn),
        "UserName" => Some(Kind::User),
        _ => None,
    }
}

impl Redactor {
    fn add(&mut self, kind: Kind, s: &str) {
        if s.is_empty() || self.map.contains_key(s) {
            return;
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        let n = *n;
        let stand_in = match kind {
            Kind::Serial => format!("SN{n:06}"),
            Kind::Uuid => format!("00000000-0000-4000-8000-{n:012}"),
            Kind::Mac => {
                let sep = if s.contains('-') { "-" } else { ":" };
                let m = format!(
                    "02{sep}00{sep}00{sep}00{sep}{:02x}{sep}{:02x}",
                    n >> 8 & 0xff,
                    n & 0xff
                );
                if s.chars().any(|c| c.is_ascii_uppercase()) {
                    m.to_ascii_uppercase()
                } else {
                    m
                }
            }
            Kind::Ipv4 => {
                let (net, i) = match (n - 1) / 254 {
                    0 => ("192.0.2", n),
                    1 => ("198.51.100", n - 254),
                    _ => ("203.0.113", (n - 1) % 254 + 1),
                };
                format!("{net}.{i}")
            }
            Kind::Ipv6 => format!("2001:db8::{n:x}"),
            Kind::Host => format!("host-{n}"),
            Kind::Fqdn => format!("host-{n}.example.net"),
            Kind::User => format!("user-{n}"),
        };
        self.map.insert(s.to_string(), stand_in);
    }

    fn collect(&mut self, v: &Value, key: &str) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, item)| self.collect(item, k)),
            Value::Array(items) => items.iter().for_each(|i| self.collect(i, key)),
            Value::String(s) => {
                if let Some(k) = kind_by_key(key, s) {
                    self.add(k, s);
                } else if is_mac(s) {
                    self.add(Kind::Mac, s);
                } else if ip_key(key) {
                    match s.parse::<IpAddr>() {
                        Ok(IpAddr::V4(ip))
                            if !ip.is_unspecified()
                                && !ip.is_loopback()
                                && !ip.is_broadcast()
                                && !is_netmask(u32::from(ip)) =>
                        {
                            self.add(Kind::Ipv4, s)
                        }
                        Ok(IpAddr::V6(ip)) if !ip.is_unspecified() && !ip.is_loopback() => {
                            self.add(Kind::Ipv6, s)
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn value(&self, v: &mut Value) {
        match v {
            Value::Object(m) => m.values_mut().for_each(|i| self.value(i)),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::String(s) => *s = self.text(s),
            _ => {}
        }
    }

    /// A string: a whole value replaced, else the long values in it.
    fn text(&self, s: &str) -> String {
        if let Some(m) = self.map.get(s) {
            return m.clone();
        }
        if s.starts_with('/') {
            return self.uri(s);
        }
        self.inside(s)
    }

    /// A path: segment by segment.
    fn uri(&self, s: &str) -> String {
        s.split('/')
            .map(|seg| match self.map.get(seg) {
                Some(m) => m.clone(),
                None => self.inside(seg),
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    fn inside(&self, s: &str) -> String {
        let mut out = s.to_string();
        for v in &self.long {
            if out.contains(v.as_str()) {
                out = replace_words(&out, v, &self.map[v]);
            }
        }
        out
    }
}

fn is_netmask(bits: u32) -> bool {
    bits.leading_ones() + bits.trailing_zeros() == 32
}

/// `s` with `from` replaced where it is not part of a longer word.
fn replace_words(s: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if word(before) || word(after) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fetched(uri: &str, v: Value) -> Fetched {
        Fetched {
            uri: uri.into(),
            payload: Payload::Json(v),
            headers: vec![("location".into(), format!("https://10.1.2.3{uri}"))],
            secs: 0.01,
        }
    }

    /// Every sensitive value goes, the same value becomes the same
    /// stand-in everywhere (body, URI, header), different values stay
    /// different, and what is not sensitive stays as it was.
    #[test]
    fn redaction_is_consistent_and_leaves_the_rest() {
        let mac = "3C:FD:FE:A1:B2:C3";
        let mut caps = vec![
            fetched(
                "/redfish/v1/Systems/1/EthernetInterfaces/3C:FD:FE:A1:B2:C3",
                json!({
                    "@odata.id": "/redfish/v1/Systems/1/EthernetInterfaces/3C:FD:FE:A1:B2:C3",
                    "MACAddress": mac, "PermanentMACAddress": mac,
                    "HostName": "web01", "FQDN": "web01.corp.example.org",
                    "IPv4Addresses": [{"Address": "10.1.2.3", "SubnetMask": "255.255.255.0",
                                       "Gateway": "10.1.2.1"}],
                    "IPv6Addresses": [{"Address": "fe80::3efd:feff:fea1:b2c3"}],
                    "StaticNameServers": ["10.1.2.53", "0.0.0.0"],
                    "Description": format!("Port with {mac}"),
                }),
            ),
            fetched(
                "/redfish/v1/Systems/1",
                json!({
                    "SerialNumber": "CZJ1234567", "UUID": "4c4c4544-0031-3910-8052-b2c04f4d3732",
                    "BiosVersion": "2.10.0.0", "Name": "System",
                    "Links": {"Interfaces": [{"@odata.id":
                        "/redfish/v1/Systems/1/EthernetInterfaces/3C:FD:FE:A1:B2:C3"}]},
                    "Oem": {"Note": "serial CZJ1234567x is not a word match"},
                }),
            ),
            fetched(
                "/redfish/v1/AccountService/Accounts/root",
                json!({"UserName": "root", "Description": "root"}),
            ),
        ];
        redact(&mut caps, Some("root"));
        let all = serde_json::to_string(
            &caps
                .iter()
                .map(|f| match &f.payload {
                    Payload::Json(v) => v.clone(),
                    _ => Value::Null,
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        for gone in [
            "3C:FD:FE:A1:B2:C3",
            "web01",
            "10.1.2.3",
            "10.1.2.1",
            "10.1.2.53",
            "fe80::3efd",
            "4c4c4544",
            "\"CZJ1234567\"",
        ] {
            assert!(!all.contains(gone), "{gone} left in {all}");
        }
        let nic = match &caps[0].payload {
            Payload::Json(v) => v.clone(),
            _ => unreachable!(),
        };
        let stand_in = nic["MACAddress"].as_str().unwrap();
        assert_eq!(stand_in, "02:00:00:00:00:01");
        assert_eq!(nic["PermanentMACAddress"], stand_in);
        assert_eq!(nic["Description"], format!("Port with {stand_in}"));
        assert_eq!(
            caps[0].uri,
            format!("/redfish/v1/Systems/1/EthernetInterfaces/{stand_in}")
        );
        assert_eq!(nic["@odata.id"], caps[0].uri);
        assert_eq!(nic["IPv4Addresses"][0]["Address"], "192.0.2.1");
        assert_eq!(nic["IPv4Addresses"][0]["SubnetMask"], "255.255.255.0");
        assert_eq!(nic["IPv4Addresses"][0]["Gateway"], "192.0.2.2");
        assert_eq!(nic["StaticNameServers"], json!(["192.0.2.3", "0.0.0.0"]));
        assert_eq!(nic["HostName"], "host-1");
        assert_eq!(nic["FQDN"], "host-1.example.net");
        assert_eq!(
            caps[0].headers[0].1,
            format!("https://192.0.2.1{}", caps[0].uri)
        );
        let sys = match &caps[1].payload {
            Payload::Json(v) => v.clone(),
            _ => unreachable!(),
        };
        assert_eq!(sys["SerialNumber"], "SN000001");
        assert_eq!(
            sys["BiosVersion"], "2.10.0.0",
            "a version is not an address"
        );
        assert_eq!(sys["Name"], "System");
        assert_eq!(sys["Links"]["Interfaces"][0]["@odata.id"], caps[0].uri);
        assert_eq!(sys["Oem"]["Note"], "serial CZJ1234567x is not a word match");
        assert_eq!(caps[2].uri, "/redfish/v1/AccountService/Accounts/user-1");
        let acct = match &caps[2].payload {
            Payload::Json(v) => v.clone(),
            _ => unreachable!(),
        };
        assert_eq!(acct["UserName"], "user-1");
        assert_eq!(acct["Description"], "user-1", "a whole value");
    }

    #[test]
    fn macs_netmasks_and_word_boundaries() {
        assert!(is_mac("3c:fd:fe:a1:b2:c3"));
        assert!(is_mac("3C-FD-FE-A1-B2-C3"));
        assert!(!is_mac("00:00:00:00:00:00"));
        assert!(!is_mac("3c:fd:fe-a1:b2:c3"));
        assert!(!is_mac("1.2.3.4.5.6"));
        assert!(is_netmask(0xffff_ff00));
        assert!(!is_netmask(0x0a01_0203));
        assert_eq!(
            replace_words("a 10.1.2.3/24 b", "10.1.2.3", "X"),
            "a X/24 b"
        );
        assert_eq!(replace_words("110.1.2.3", "10.1.2.3", "X"), "110.1.2.3");
    }
}
