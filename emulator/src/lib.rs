//! Shoal's Redfish BMC emulator as a library: configuration, the backend
//! seam, the Redfish API and the server that runs it. `main.rs` only parses
//! the command line and calls [`server::run`].

pub mod access;
pub mod admin;
pub mod api;
pub mod auth;
pub mod backend;
pub mod bios;
pub mod bmc;
pub mod certs;
pub mod cli;
pub mod config;
pub mod faults;
pub mod firmware;
pub mod ipmi;
pub mod mockup;
pub mod model;
pub mod netpolicy;
pub mod notifier;
pub mod nvram;
pub mod profile;
pub mod registry;
pub mod serve;
pub mod server;
pub mod storage;
pub mod sushy;
pub mod sync;
pub mod timefmt;

pub use api::{app, AppState};
