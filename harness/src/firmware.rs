//! Shoal's firmware images, written: what scenarios and tests hand a BMC
//! to update with. The emulator reads them (`shoal_emulator::firmware`,
//! where the format is described): a `SHOAL-FIRMWARE 1` line, `Key:
//! value` lines (Component, Version, optional ReleaseDate, the payload's
//! Payload-SHA256), a blank line, the payload.

use sha2::{Digest, Sha256};

/// An image installing `version` (released on `release_date`,
/// `YYYY-MM-DD`) on `component` (`bios`, `bmc` or `nic`), around
/// `payload`.
pub fn image(
    component: &str,
    version: &str,
    release_date: Option<&str>,
    payload: &[u8],
) -> Vec<u8> {
    let mut head = format!("SHOAL-FIRMWARE 1\nComponent: {component}\nVersion: {version}\n");
    if let Some(d) = release_date {
        head.push_str(&format!("ReleaseDate: {d}\n"));
    }
    head.push_str(&format!(
        "Payload-SHA256: {}\n\n",
        hex::encode(Sha256::digest(payload))
    ));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(payload);
    bytes
}

/// The image a scenario's artifact names: `spec` is the version, then
/// optionally a space and the release date (`2.19.1 2026-11-02`).
pub fn artifact(component: &str, spec: &str) -> Vec<u8> {
    let mut words = spec.split_whitespace();
    let version = words.next().unwrap_or_default();
    let payload = format!("{component} firmware {version} (Shoal test image)\n");
    image(component, version, words.next(), payload.as_bytes())
}
