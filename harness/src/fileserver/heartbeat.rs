//! `heartbeat.log`: one line per heartbeat a machine POSTs, capped in line
//! length and in size, so that neither a guest nor any other client of the
//! boot server can grow it without limit.

use std::io::Write;

/// The longest heartbeat kept, in bytes: a marker, a boot path and a
/// kernel command line (2 KiB at most on x86 and ppc64) fit with room.
pub const MAX_LINE: usize = 8 << 10;
/// The most the log holds, in bytes.
pub const MAX_BYTES: u64 = 1 << 20;

/// Why a heartbeat was not written.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Longer than the line cap (413).
    TooLong,
    /// The log is full (507).
    Full,
    /// Writing failed (500).
    Io,
}

/// An append-only log of heartbeat lines, capped.
pub struct Log {
    file: std::fs::File,
    written: u64,
    max_line: usize,
    max_bytes: u64,
}

impl Log {
    /// Appends to `path` (what is already there counts against the cap).
    pub fn open(path: &std::path::Path, max_line: usize, max_bytes: u64) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let written = file.metadata()?.len();
        Ok(Self {
            file,
            written,
            max_line,
            max_bytes,
        })
    }

    /// Appends `body` as one line: line breaks inside it become spaces, a
    /// trailing one is dropped, bytes that are not UTF-8 become U+FFFD (the
    /// runner reads the log as text). All of it or nothing is written.
    pub fn append(&mut self, body: &[u8]) -> Result<(), Refused> {
        if body.len() > self.max_line {
            return Err(Refused::TooLong);
        }
        let text = String::from_utf8_lossy(body);
        let mut line = text
            .trim_end_matches(['\r', '\n'])
            .replace(['\r', '\n'], " ");
        line.push('\n');
        if line.len() > self.max_line + 1 {
            return Err(Refused::TooLong); // U+FFFD is longer than the byte it replaces
        }
        if self.written + line.len() as u64 > self.max_bytes {
            return Err(Refused::Full);
        }
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|_| Refused::Io)?;
        self.written += line.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_heartbeat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heartbeat.log");
        let mut log = Log::open(&path, 100, 1000).unwrap();
        log.append(b"marker=a cmdline=quiet\n").unwrap();
        log.append(b"two\r\nlines\nin one").unwrap();
        log.append(b"bad \xff byte").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "marker=a cmdline=quiet\ntwo  lines in one\nbad \u{fffd} byte\n"
        );
    }

    #[test]
    fn lines_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heartbeat.log");
        let mut log = Log::open(&path, 10, 1000).unwrap();
        assert_eq!(log.append(&[b'x'; 10]), Ok(()));
        assert_eq!(log.append(&[b'x'; 11]), Err(Refused::TooLong));
        assert_eq!(log.append(&[0xff; 10]), Err(Refused::TooLong));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "xxxxxxxxxx\n");
    }

    #[test]
    fn the_log_is_capped_and_counts_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heartbeat.log");
        std::fs::write(&path, "old\n").unwrap();
        let mut log = Log::open(&path, 100, 20).unwrap();
        assert_eq!(log.append(b"0123456789"), Ok(())); // 4 + 11 bytes
        assert_eq!(log.append(b"0123"), Ok(())); // 20: exactly full
        assert_eq!(log.append(b""), Err(Refused::Full));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 20);
        drop(log);
        let mut log = Log::open(&path, 100, 20).unwrap();
        assert_eq!(log.append(b"x"), Err(Refused::Full), "reopened");
    }
}
