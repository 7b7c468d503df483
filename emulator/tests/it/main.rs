//! The emulator's integration tests, as one test binary: in-process API
//! tests (`oneshot` on the router), tests that spawn the real binary over
//! HTTP and HTTPS, and client compatibility with the real `sushy` library.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

mod access_log;
mod ansible;
mod api_auth;
mod api_auth_limits;
mod api_boot;
mod api_boot_certs;
mod api_dell;
mod api_dell_raid;
mod api_hostile;
mod api_hpe;
mod api_logs;
mod api_media_fetch;
mod api_profiles;
mod api_query;
mod api_resources;
mod api_storage;
mod api_update;
mod api_update_ilo;
mod architecture;
mod binary;
mod boot_routes;
mod changes;
mod common;
mod drivers;
mod events;
mod ilorest;
mod ipmi;
mod ironic_backend;
#[cfg(feature = "libvirt")]
mod libvirt;
#[cfg(feature = "libvirt")]
mod libvirt_hosts;
mod mockup;
mod mockup_bios;
mod mockup_firmware;
#[cfg(feature = "libvirt")]
mod mockup_libvirt;
mod mockup_media;
mod nvram;
mod proliantutils;
mod props_config;
mod props_json;
mod props_query;
#[cfg(feature = "libvirt")]
mod props_xml;
#[cfg(feature = "libvirt")]
mod real_vm;
mod start_paths;
mod sushy;
mod sushy_dell;
mod sushy_dropin;
mod sushy_notifier;
mod sushy_suites;
#[cfg(feature = "libvirt")]
mod vmlab;
