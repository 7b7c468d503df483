//! The in-band IPMI socket's name, shared by the BMC that listens on it
//! (the emulator's `ipmi::inband`) and the backend that points a
//! machine's `ipmi-bmc-extern` device at it: one Unix socket per machine,
//! `<dir>/<system UUID>.sock`, whatever Id a profile shows.

use std::path::{Path, PathBuf};

/// The socket of the machine with this UUID in `dir`.
pub fn socket_path(dir: &Path, uuid: &uuid::Uuid) -> PathBuf {
    dir.join(format!("{}.sock", uuid.hyphenated()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_by_the_hyphenated_uuid() {
        let u = uuid::Uuid::parse_str("6A1F0B2C3D4E5F60718293A4B5C6D7E8").unwrap();
        assert_eq!(
            socket_path(Path::new("/run/shoal"), &u),
            Path::new("/run/shoal/6a1f0b2c-3d4e-5f60-7182-93a4b5c6d7e8.sock")
        );
    }
}
