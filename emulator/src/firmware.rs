//! Firmware: the parts of a machine that carry a version (its BIOS, its
//! BMC, its network adapter) and Shoal's own image format for updating
//! them.
//!
//! A Shoal firmware image is a short text header, a blank line, then the
//! payload (any bytes):
//!
//! ```text
//! SHOAL-FIRMWARE 1
//! Component: bios
//! Version: 2.19.1
//! ReleaseDate: 2026-11-02
//! Payload-SHA256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//! ```
//!
//! `Component` (`bios`, `bmc` or `nic`), `Version` and `Payload-SHA256`
//! (of the payload, lower-case hex) are required; `ReleaseDate`
//! (`YYYY-MM-DD`) is optional. Any other key, a repeated key, a header
//! over [`MAX_HEADER`] bytes or a payload whose digest differs makes the
//! image unusable, as a BMC refuses an image whose signature fails. The
//! harness writes them (`shoal_harness::firmware`).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The first line of every image.
pub const MAGIC: &str = "SHOAL-FIRMWARE 1";
/// The largest header read.
pub const MAX_HEADER: usize = 4096;
/// The longest version string kept (a BMC's field is bounded too).
pub const MAX_VERSION: usize = 64;

/// A part of a machine that carries firmware of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    /// The host's firmware (BIOS or UEFI).
    Bios,
    /// The BMC's own firmware.
    Bmc,
    /// The network adapter's firmware.
    Nic,
}

impl Component {
    pub const ALL: [Component; 3] = [Component::Bios, Component::Bmc, Component::Nic];

    /// The name images and Ironic use.
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Bios => "bios",
            Component::Bmc => "bmc",
            Component::Nic => "nic",
        }
    }

    pub fn parse(s: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an image installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub component: Component,
    pub version: String,
    /// `YYYY-MM-DD`.
    pub release_date: Option<String>,
}

/// Why an image cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("not a Shoal firmware image (no `{MAGIC}` line)")]
    NotAnImage,
    #[error("the image's header is malformed: {0}")]
    Malformed(String),
    #[error("the image's payload does not match its Payload-SHA256")]
    Checksum,
}

/// Reads an image and checks its payload against its digest.
pub fn parse(bytes: &[u8]) -> Result<Image, ImageError> {
    let head = &bytes[..bytes.len().min(MAX_HEADER)];
    let Some(end) = find(head, b"\n\n") else {
        return Err(if bytes.starts_with(MAGIC.as_bytes()) {
            ImageError::Malformed("no blank line ends the header within 4096 bytes".into())
        } else {
            ImageError::NotAnImage
        });
    };
    let text = std::str::from_utf8(&head[..end]).map_err(|_| ImageError::NotAnImage)?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(ImageError::NotAnImage);
    }
    let mut fields: [Option<&str>; 4] = [None; 4];
    const KEYS: [&str; 4] = ["Component", "Version", "ReleaseDate", "Payload-SHA256"];
    for line in lines {
        let (key, value) = line
            .split_once(": ")
            .ok_or_else(|| ImageError::Malformed(format!("`{line}` is not `Key: value`")))?;
        let i = KEYS
            .iter()
            .position(|k| *k == key)
            .ok_or_else(|| ImageError::Malformed(format!("unknown key `{key}`")))?;
        if fields[i].replace(value.trim()).is_some() {
            return Err(ImageError::Malformed(format!("`{key}` given twice")));
        }
    }
    let need =
        |i: usize| fields[i].ok_or_else(|| ImageError::Malformed(format!("no `{}`", KEYS[i])));
    let component = Component::parse(need(0)?).ok_or_else(|| {
        ImageError::Malformed(format!("unknown component `{}`", need(0).unwrap_or("")))
    })?;
    let version = need(1)?;
    if version.is_empty() || version.len() > MAX_VERSION || version.chars().any(char::is_control) {
        return Err(ImageError::Malformed(format!(
            "`Version` must be 1 to {MAX_VERSION} printable characters"
        )));
    }
    let release_date = match fields[2] {
        Some(d) if is_date(d) => Some(d.to_string()),
        Some(d) => {
            return Err(ImageError::Malformed(format!(
                "`ReleaseDate` `{d}` is not YYYY-MM-DD"
            )))
        }
        None => None,
    };
    let digest = hex::encode(Sha256::digest(&bytes[end + 2..]));
    if need(3)? != digest {
        return Err(ImageError::Checksum);
    }
    Ok(Image {
        component,
        version: version.to_string(),
        release_date,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `YYYY-MM-DD` with a month and a day in range.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return false;
    }
    let month: u8 = s[5..7].parse().unwrap_or(0);
    let day: u8 = s[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bios(version: &str) -> Image {
        Image {
            component: Component::Bios,
            version: version.into(),
            release_date: Some("2026-11-02".into()),
        }
    }

    /// The harness's image of `i` around `payload`.
    fn build(i: &Image, payload: &[u8]) -> Vec<u8> {
        shoal_harness::firmware::image(
            i.component.as_str(),
            &i.version,
            i.release_date.as_deref(),
            payload,
        )
    }

    #[test]
    fn an_image_reads_back_as_built() {
        let img = build(&bios("2.19.1"), b"\x00\x01payload\n\n");
        assert_eq!(parse(&img), Ok(bios("2.19.1")));
        let bare = Image {
            component: Component::Nic,
            version: "22.31.7".into(),
            release_date: None,
        };
        assert_eq!(parse(&build(&bare, b"")), Ok(bare));
    }

    #[test]
    fn a_changed_payload_or_header_is_refused() {
        let mut img = build(&bios("2.19.1"), b"payload");
        *img.last_mut().unwrap() ^= 1;
        assert_eq!(parse(&img), Err(ImageError::Checksum));
        let text = String::from_utf8(build(&bios("2.0"), b"p")).unwrap();
        let cases = [
            (
                text.replace("SHOAL-FIRMWARE 1", "SHOAL-FIRMWARE 2"),
                "magic",
            ),
            (
                text.replace("Component: bios", "Component: raid"),
                "component",
            ),
            (text.replace("Version: 2.0\n", ""), "no version"),
            (text.replace("Version: 2.0", "Version: "), "empty version"),
            (text.replace("2026-11-02", "2026-13-02"), "date"),
            (text.replace("ReleaseDate", "Vendor"), "unknown key"),
            (
                text.replace("Version: 2.0\n", "Version: 2.0\nVersion: 3.0\n"),
                "twice",
            ),
            (text.replace("Version: 2.0", "Version 2.0"), "no colon"),
            (text.replace("\n\n", "\n"), "no blank line"),
        ];
        for (bad, why) in cases {
            assert!(parse(bad.as_bytes()).is_err(), "{why}: {bad:?}");
        }
        assert_eq!(parse(b"MZ\x90\x00 an exe"), Err(ImageError::NotAnImage));
        assert_eq!(parse(b""), Err(ImageError::NotAnImage));
        let long = format!("{MAGIC}\nVersion: {}\n\n", "x".repeat(MAX_HEADER));
        assert!(matches!(
            parse(long.as_bytes()),
            Err(ImageError::Malformed(_))
        ));
    }
}
