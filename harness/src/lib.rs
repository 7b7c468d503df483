//! `shoal-harness` as a library: the lab real VMs run in, the boot file
//! server, image recipes, scenario files, the drivers that talk to the BMC,
//! and the runner.

pub mod driver;
pub mod fileserver;
pub mod images;
pub mod lab;
pub mod netns;
pub mod runner;
pub mod scenario;
