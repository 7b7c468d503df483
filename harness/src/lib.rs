//! `shoal-harness` as a library: the lab real VMs run in, the boot file
//! server, image recipes, and (in `scenario`, `driver`, `runner`) the
//! declarative end-to-end scenarios.

pub mod fileserver;
pub mod images;
pub mod lab;
pub mod netns;
