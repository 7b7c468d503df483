//! Redfish `DateTime` rendering (`2026-12-02T15:04:05+00:00`).

use std::time::SystemTime;

use time::macros::format_description;
use time::OffsetDateTime;

pub fn rfc3339(t: SystemTime) -> String {
    let fmt = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]+00:00");
    OffsetDateTime::from(t)
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00+00:00".into())
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Seconds since the epoch, rendered the same way.
pub fn rfc3339_secs(secs: u64) -> String {
    rfc3339(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// Seconds since the epoch, possibly before it (a certificate's dates).
pub fn rfc3339_unix(secs: i64) -> String {
    let fmt = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]+00:00");
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00+00:00".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_offset_form() {
        assert_eq!(
            super::rfc3339_secs(86400 + 3661),
            "1970-01-02T01:01:01+00:00"
        );
    }
}
