//! `shoal-harness` as a library: the lab real VMs run in, the boot file
//! server, image recipes, scenario files, the drivers that talk to the BMC,
//! the host check (`doctor`), the one JUnit writer,
//! the standalone Ironic of the `ironic` driver,
//! the HTTPS side of the boot server (test CAs, OpenSSL),
//! the runner, the capture of a live Redfish service (`capture`), the conformance run of DMTF's tools, the HTTP fuzzer, and
//! the benchmark
//! against sushy-tools and nginx with its load generator.
//!
//! The lab itself (`lab::Lab`) and the runner need libvirt's C library and
//! are behind the cargo feature `lab` (on by default).

pub mod bench;
pub mod capture;
pub mod check;
pub mod conformance;
pub mod doctor;
pub mod driver;
pub mod emulator;
pub mod fileserver;
pub mod firmware;
pub mod fuzz;
pub mod images;
pub mod ironic;
pub mod junit;
pub mod lab;
pub mod load;
pub mod netns;
pub mod petitboot;
#[cfg(feature = "lab")]
pub mod runner;
pub mod scenario;
pub mod tls;

/// Locks `m`, taking over a lock whose holder panicked: what each of the
/// harness's mutexes guards (a process table, a log, a peer) stays whole
/// at every step, so one failed thread does not take the others down.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
