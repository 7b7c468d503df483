//! The one check of every string a client can get into a machine's state:
//! boot URIs (written into NVRAM as a UEFI URI device path node), media
//! image URLs, BIOS string attributes, InsertMedia credentials, AssetTag
//! and the like (all kept in the libvirt domain's XML `<metadata>`).
//!
//! Rules:
//! - a **URI** is ASCII made of the characters RFC 3986 allows (unreserved,
//!   reserved, `%` + two hex digits), as the UEFI URI device path node
//!   requires; a **boot URI** is moreover `http` or `https` with a host;
//! - **text** is one line of XML 1.0 characters: no control character
//!   (C0, DEL, C1) and no U+FFFE/U+FFFF, which XML cannot carry (libvirt
//!   refuses the domain definition);
//! - every string has a length bound. URIs: [`URI_MAX`] bytes. The URI
//!   node's length is a u16 counting its 4-byte header, so 65,531 bytes
//!   would wrap it; the load option must also fit one variable, whose
//!   limit is 8 KiB in OVMF's 2 MB varstore builds (`PcdMaxVariableSize`
//!   0x2000; 0x8400 in the 4 MB ones). 2,048 bytes stays well below both
//!   and is the URL length clients and servers have long supported; edk2's
//!   own setup form is tighter still (255 characters).

use crate::api::error::Msg;

/// The longest URI (bytes) a client may set: boot URIs and media images.
pub const URI_MAX: usize = 2048;

/// What a string must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// An `http`/`https` URI with a host, at most `max` bytes: what the
    /// firmware HTTP-boots.
    BootUri { max: usize },
    /// Any absolute URI (the caller checks the scheme), at most `max` bytes.
    Uri { max: usize },
    /// One line of text, at most `max` characters.
    Text { max: usize },
}

impl Rule {
    pub const BOOT_URI: Rule = Rule::BootUri { max: URI_MAX };
    pub const URI: Rule = Rule::Uri { max: URI_MAX };
}

/// Why a string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    TooLong,
    /// A character the rule does not allow.
    Character,
    /// Not an absolute `http(s)://host...` URI.
    NotHttp,
}

/// Checks `s` against `rule`: the one validator every handler uses.
pub fn check(s: &str, rule: Rule) -> Result<(), Invalid> {
    match rule {
        Rule::BootUri { max } | Rule::Uri { max } => {
            if s.len() > max {
                return Err(Invalid::TooLong);
            }
            if !uri_chars(s) {
                return Err(Invalid::Character);
            }
            if matches!(rule, Rule::BootUri { .. }) && !is_http_url(s) {
                return Err(Invalid::NotHttp);
            }
        }
        Rule::Text { max } => {
            // Bytes bound the work before characters are counted.
            if s.len() > max * 4 || s.chars().count() > max {
                return Err(Invalid::TooLong);
            }
            if !s.chars().all(text_char) {
                return Err(Invalid::Character);
            }
        }
    }
    Ok(())
}

/// `check` for a property of a PATCH or POST body: the error is
/// `PropertyValueFormatError` naming `path`.
pub fn property(path: &str, s: &str, rule: Rule) -> Result<(), Msg> {
    check(s, rule).map_err(|_| Msg::new("PropertyValueFormatError", &[&echo(s), path]).about(path))
}

/// `check` for an action parameter: `ActionParameterValueFormatError`.
pub fn parameter(action: &str, param: &str, s: &str, rule: Rule) -> Result<(), Msg> {
    check(s, rule).map_err(|_| {
        Msg::new(
            "ActionParameterValueFormatError",
            &[&echo(s), param, action],
        )
    })
}

/// A refused value as an error message shows it: its first 64 characters.
pub fn echo(s: &str) -> String {
    const SHOWN: usize = 64;
    match s.char_indices().nth(SHOWN) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Characters RFC 3986 allows in a URI, with `%` escapes well formed.
fn uri_chars(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 3;
                continue;
            }
            c if c.is_ascii_alphanumeric() => {}
            b'-' | b'.' | b'_' | b'~' => {}
            b':' | b'/' | b'?' | b'#' | b'[' | b']' | b'@' => {}
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// One character of single-line XML text.
fn text_char(c: char) -> bool {
    !c.is_control() && c != '\u{FFFE}' && c != '\u{FFFF}'
}

/// Whether `s` is an absolute http or https URL with a host.
pub fn is_http_url(s: &str) -> bool {
    let rest = match s.split_once("://") {
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") =>
        {
            rest
        }
        _ => return false,
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    !host.is_empty() && !host.starts_with(':') && uri_chars(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls() {
        assert!(is_http_url("http://192.0.2.1/boot.iso"));
        assert!(is_http_url("https://[fd00::1]:8080/x.efi"));
        assert!(is_http_url("HTTP://h/a%20b?x=1&y=2#f"));
        assert!(!is_http_url("ftp://h/x"));
        assert!(!is_http_url("file:///boot.efi"));
        assert!(!is_http_url("http:///x"));
        assert!(!is_http_url("http://user@/x"));
        assert!(!is_http_url("boot.iso"));
        assert!(!is_http_url("http://h/a b"));
    }

    #[test]
    fn boot_uris_follow_the_uri_device_path_rules() {
        let ok = |s: &str| check(s, Rule::BOOT_URI);
        assert_eq!(ok("http://h/x.efi"), Ok(()));
        assert_eq!(ok("file:///x.efi"), Err(Invalid::NotHttp));
        assert_eq!(ok("http://h/é.efi"), Err(Invalid::Character));
        assert_eq!(ok("http://h/\u{FFFF}"), Err(Invalid::Character));
        assert_eq!(ok("http://h/a\u{1}b"), Err(Invalid::Character));
        assert_eq!(ok("http://h/<x>"), Err(Invalid::Character));
        assert_eq!(ok("http://h/%zz"), Err(Invalid::Character));
        assert_eq!(ok("http://h/%4"), Err(Invalid::Character));
        let long = format!("http://h/{}", "a".repeat(URI_MAX));
        assert_eq!(ok(&long), Err(Invalid::TooLong));
        let longest = format!("http://h/{}", "a".repeat(URI_MAX - 9));
        assert_eq!(ok(&longest), Ok(()));
        // What the URI node's u16 length could never hold is far out.
        assert!(URI_MAX + 4 < u16::MAX as usize);
        assert_eq!(check("nfs://h/x.iso", Rule::URI), Ok(()));
    }

    #[test]
    fn text_is_one_line_of_xml_characters() {
        let t = |s: &str| check(s, Rule::Text { max: 8 });
        assert_eq!(t("rack-7 é"), Ok(()));
        assert_eq!(t("日本語"), Ok(()));
        assert_eq!(t(""), Ok(()));
        for bad in [
            "a\u{0}", "a\nb", "\t", "\u{7f}", "\u{85}", "\u{FFFE}", "\u{FFFF}",
        ] {
            assert_eq!(t(bad), Err(Invalid::Character), "{bad:?}");
        }
        assert_eq!(t("123456789"), Err(Invalid::TooLong));
        assert_eq!(t("ééééééééé"), Err(Invalid::TooLong));
    }

    #[test]
    fn messages_name_the_property_and_show_a_short_value() {
        let long = "x".repeat(70_000);
        let m = property("Boot/HttpBootUri", &long, Rule::BOOT_URI).unwrap_err();
        assert_eq!(m.id, "PropertyValueFormatError");
        assert_eq!(m.args[1], "Boot/HttpBootUri");
        assert_eq!(m.args[0].len(), 67);
        let m = parameter(
            "VirtualMedia.InsertMedia",
            "UserName",
            "a\u{1}",
            Rule::Text { max: 9 },
        )
        .unwrap_err();
        assert_eq!(m.id, "ActionParameterValueFormatError");
        assert_eq!(m.args[1], "UserName");
    }
}
