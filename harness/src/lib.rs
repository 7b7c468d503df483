//! `shoal-harness` as a library: the lab real VMs run in, the boot file
//! server, image recipes, scenario files, the drivers that talk to the BMC,
//! the runner, and the conformance run of DMTF's tools.

pub mod conformance;
pub mod driver;
pub mod emulator;
pub mod fileserver;
pub mod images;
pub mod lab;
pub mod netns;
pub mod runner;
pub mod scenario;
