//! The BMC's logs, kept from its change stream as each record is made
//! ([`Changes::send`](super::changes::Changes::send)), whoever listens:
//! per system, two books.
//! - [`Book::Sel`], the System Event Log: what a SEL holds (the machine
//!   powered on or off, a boot began, the log was cleared), each entry
//!   with its IPMI event ([`SelEvent`]). IPMI's SEL and the Redfish SEL
//!   log services show it.
//! - [`Book::All`]: every change (a lifecycle or event log).
//!
//! A machine's own change is kept when the BMC sees it: any read of the
//! system (the reads of a log among them), so a guest that powered off is
//! logged by the next look, timed then.
//!
//! Invariants: Ids increase in a book until it is cleared (SEL Ids are
//! IPMI record Ids, 1..=0xFFFE, never 0x0000 or 0xFFFF); a book holds
//! [`CAPACITY`] entries at most and drops the oldest (wraps when full);
//! a clear leaves one entry, the clearing itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::changes::{ChangeRecord, What};
use super::lock;
use crate::model::PowerState;

/// Entries a book keeps (iDRAC's SEL: 1024).
pub const CAPACITY: usize = 1024;

/// The last SEL record Id before they start again at 1.
const SEL_LAST_ID: u32 = 0xFFFE;

/// Which of a system's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Book {
    Sel,
    All,
}

/// An IPMI sensor event: what a SEL entry says, in IPMI's terms (the
/// sensor type and the offset of the sensor-specific event, 0x6f), and
/// the sensor the BMC reports it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelEvent {
    pub sensor_type: u8,
    pub sensor: u8,
    pub offset: u8,
    /// Event data 2 (0xFF: unspecified).
    pub data2: u8,
}

/// The sensors the BMC logs on: (sensor type, number, name). IPMI's SDR
/// repository lists them (Event-Only records), so that `ipmitool sel
/// elist`, `ipmi-sel` and pyghmi name them.
pub const SEL_SENSORS: [(u8, u8, &str); 3] = [
    (ACPI_POWER, 0x70, "ACPI State"),
    (BOOT_INITIATED, 0x71, "System Boot"),
    (LOGGING, 0x72, "Event Log"),
];

/// Sensor type 0x22, System ACPI Power State.
pub const ACPI_POWER: u8 = 0x22;
/// Sensor type 0x1D, System Boot / Restart Initiated.
pub const BOOT_INITIATED: u8 = 0x1d;
/// Sensor type 0x10, Event Logging Disabled (offset 0x02: log cleared).
pub const LOGGING: u8 = 0x10;

impl SelEvent {
    fn on(sensor_type: u8, offset: u8) -> SelEvent {
        let sensor = SEL_SENSORS
            .iter()
            .find(|(t, ..)| *t == sensor_type)
            .map_or(0, |(_, n, _)| *n);
        SelEvent {
            sensor_type,
            sensor,
            offset,
            data2: 0xff,
        }
    }

    /// S0/G0 working: powered on.
    pub const fn is_power_on(&self) -> bool {
        self.sensor_type == ACPI_POWER && self.offset == 0x00
    }
}

/// One entry of a book.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: u32,
    pub record: Arc<ChangeRecord>,
    /// Its SEL event, when a SEL keeps such a record.
    pub sel: Option<SelEvent>,
}

/// One book of one system.
#[derive(Debug, Default)]
pub struct Ring {
    pub entries: VecDeque<Entry>,
    next: u32,
    /// When the last entry was added, and the book last cleared.
    pub added: Option<SystemTime>,
    pub erased: Option<SystemTime>,
}

impl Ring {
    fn push(&mut self, record: Arc<ChangeRecord>, sel: Option<SelEvent>, last: u32) {
        if self.entries.len() == CAPACITY {
            self.entries.pop_front();
        }
        self.next = if self.next >= last { 1 } else { self.next + 1 };
        self.added = Some(record.at);
        self.entries.push_back(Entry {
            id: self.next,
            record,
            sel,
        });
    }

    /// The entry `id`.
    pub fn get(&self, id: u32) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

/// A system's books, and its IPMI SEL reservation.
#[derive(Debug, Default)]
struct Books {
    sel: Ring,
    all: Ring,
    reservation: u16,
}

/// The logs of one BMC's systems (see the module's documentation).
#[derive(Default)]
pub struct Log(Mutex<HashMap<String, Books>>);

impl Log {
    /// Keeps `record` in its system's books.
    pub fn keep(&self, record: &ChangeRecord) {
        let mut map = lock(&self.0);
        let books = map.entry(record.system.clone()).or_default();
        let record = Arc::new(record.clone());
        let sel = sel_event(&record, books.sel.entries.back());
        if let Some(event) = sel {
            books.sel.push(record.clone(), Some(event), SEL_LAST_ID);
        }
        books.all.push(record, sel, u32::MAX);
    }

    /// Reads `book` of `system` (an empty book when nothing was kept).
    pub fn read<T>(&self, system: &str, book: Book, f: impl FnOnce(&Ring) -> T) -> T {
        let map = lock(&self.0);
        match map.get(system) {
            Some(b) => f(b.book(book)),
            None => f(&Ring::default()),
        }
    }

    /// Empties `book` of `system` and cancels its SEL reservation; the
    /// caller sends the record of the clearing, which the book keeps.
    pub fn clear(&self, system: &str, book: Book) {
        let mut map = lock(&self.0);
        let books = map.entry(system.to_string()).or_default();
        let ring = books.book_mut(book);
        ring.entries.clear();
        ring.next = 0;
        ring.erased = Some(SystemTime::now());
        books.reservation = books.reservation.wrapping_add(1).max(1);
    }

    /// A new SEL reservation of `system` (IPMI Reserve SEL): never 0.
    pub fn reserve(&self, system: &str) -> u16 {
        let mut map = lock(&self.0);
        let books = map.entry(system.to_string()).or_default();
        books.reservation = books.reservation.wrapping_add(1).max(1);
        books.reservation
    }

    /// Whether `id` is the current SEL reservation of `system`.
    pub fn reserved(&self, system: &str, id: u16) -> bool {
        lock(&self.0)
            .get(system)
            .is_some_and(|b| b.reservation == id && id != 0)
    }
}

impl Books {
    fn book(&self, book: Book) -> &Ring {
        match book {
            Book::Sel => &self.sel,
            Book::All => &self.all,
        }
    }

    fn book_mut(&mut self, book: Book) -> &mut Ring {
        match book {
            Book::Sel => &mut self.sel,
            Book::All => &mut self.all,
        }
    }
}

/// The SEL event of a record, if a SEL keeps it: power on (S0/G0) and
/// off (S5/G2 soft-off), a boot (initiated by power up when the entry
/// before is the power-on of the same change, else a hard reset), a SEL
/// cleared (log area reset).
fn sel_event(record: &ChangeRecord, last: Option<&Entry>) -> Option<SelEvent> {
    match &record.what {
        What::Power {
            after: PowerState::On,
            ..
        } => Some(SelEvent::on(ACPI_POWER, 0x00)),
        What::Power {
            after: PowerState::Off,
            ..
        } => Some(SelEvent::on(ACPI_POWER, 0x05)),
        What::Booted { .. } => {
            let powered_up = last.is_some_and(|e| {
                e.record.at == record.at && e.sel.is_some_and(|s| s.is_power_on())
            });
            Some(SelEvent::on(
                BOOT_INITIATED,
                if powered_up { 0x00 } else { 0x01 },
            ))
        }
        What::LogCleared { book: Book::Sel } => Some(SelEvent::on(LOGGING, 0x02)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmc::changes::Cause;
    use crate::model::BootRecord;

    fn record(what: What, at: SystemTime) -> ChangeRecord {
        ChangeRecord {
            system: "s1".into(),
            name: "node-1".into(),
            what,
            cause: Cause::Machine,
            at,
        }
    }

    fn power(after: PowerState, at: SystemTime) -> ChangeRecord {
        let before = if after == PowerState::On {
            PowerState::Off
        } else {
            PowerState::On
        };
        record(What::Power { before, after }, at)
    }

    fn booted(at: SystemTime) -> ChangeRecord {
        let record = BootRecord {
            at: 0,
            number: 1,
            target: crate::model::BootTarget::Pxe,
            mode: crate::model::BootMode::Uefi,
            uri: None,
            media: None,
        };
        self::record(What::Booted { record }, at)
    }

    fn sel(log: &Log) -> Vec<(u32, u8, u8)> {
        log.read("s1", Book::Sel, |r| {
            r.entries
                .iter()
                .map(|e| {
                    let s = e.sel.unwrap();
                    (e.id, s.sensor_type, s.offset)
                })
                .collect()
        })
    }

    #[test]
    fn the_sel_keeps_power_and_boots_and_all_keeps_everything() {
        let log = Log::default();
        let t = SystemTime::now();
        log.keep(&power(PowerState::On, t));
        log.keep(&booted(t));
        let later = t + std::time::Duration::from_secs(5);
        log.keep(&booted(later));
        log.keep(&record(What::Other { part: "ntp" }, later));
        log.keep(&power(PowerState::Off, later));
        assert_eq!(
            sel(&log),
            [
                (1, ACPI_POWER, 0x00),
                (2, BOOT_INITIATED, 0x00),
                (3, BOOT_INITIATED, 0x01),
                (4, ACPI_POWER, 0x05)
            ]
        );
        assert_eq!(log.read("s1", Book::All, |r| r.entries.len()), 5);
        assert_eq!(log.read("other", Book::Sel, |r| r.entries.len()), 0);
    }

    #[test]
    fn a_clear_empties_one_book_restarts_its_ids_and_cancels_the_reservation() {
        let log = Log::default();
        let t = SystemTime::now();
        log.keep(&power(PowerState::On, t));
        let rsv = log.reserve("s1");
        assert!(rsv != 0 && log.reserved("s1", rsv));
        log.clear("s1", Book::Sel);
        assert!(!log.reserved("s1", rsv));
        log.keep(&record(What::LogCleared { book: Book::Sel }, t));
        assert_eq!(sel(&log), [(1, LOGGING, 0x02)]);
        assert!(log.read("s1", Book::Sel, |r| r.erased.is_some()));
        assert_eq!(log.read("s1", Book::All, |r| r.entries.len()), 2);
    }

    #[test]
    fn a_full_book_drops_the_oldest_and_sel_ids_skip_0_and_ffff() {
        let log = Log::default();
        let t = SystemTime::now();
        for i in 0..CAPACITY + 3 {
            let state = if i % 2 == 0 {
                PowerState::On
            } else {
                PowerState::Off
            };
            log.keep(&power(state, t));
        }
        let ids: Vec<u32> = log.read("s1", Book::Sel, |r| {
            r.entries.iter().map(|e| e.id).collect()
        });
        assert_eq!(ids.len(), CAPACITY);
        assert_eq!(ids[0], 4);
        let mut ring = Ring {
            next: SEL_LAST_ID - 1,
            ..Ring::default()
        };
        for _ in 0..3 {
            ring.push(Arc::new(power(PowerState::On, t)), None, SEL_LAST_ID);
        }
        let ids: Vec<u32> = ring.entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [SEL_LAST_ID, 1, 2]);
    }
}
