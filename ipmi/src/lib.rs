//! IPMI v2.0 over LAN (RMCP+, "lanplus") as bytes: what both ends of a
//! session share. `wire` frames datagrams and IPMI messages, `crypto` is
//! the cipher suites, `console` the remote console's steps without I/O,
//! `boot` the boot initiator mailbox's layout, `inband` the in-band
//! socket's name.
//! The BMC's side (sessions, commands) is the emulator's `ipmi` module;
//! the harness's benchmark is a console.

pub mod boot;
pub mod console;
pub mod crypto;
pub mod inband;
pub mod wire;
