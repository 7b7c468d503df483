//! IPMI v2.0 over LAN (RMCP+, "lanplus") for every BMC of one system:
//! the second front-end on the same machines as Redfish.
//!
//! A [`Bmc`] serves one machine on one UDP socket (port 623 by default,
//! on its endpoint's address). It holds no machine state of its own: power
//! goes through the BMC core's `power_action` (as a Redfish Reset), boot
//! flags through its `set_boot` (the one boot decision), the identify
//! light is a `Change` on the shared `BmcState`, each under the same
//! per-system lock as a Redfish PATCH, so either protocol reads what the
//! other wrote. Nothing here imports the Redfish side (`api`).
//!
//! - `shoal_ipmi::{wire, crypto}` (the `ipmi/` crate): framing and cipher
//!   suites, shared with the consoles that test and measure this side.
//! - `session`: Open Session, RAKP 1-4, sequence window, bounds.
//! - `lockout`: the accounts' lockout policy over RMCP+ logins.
//! - `commands`: the commands, mapped onto the backend.
//! - `boot`: boot flags (parameter 5) ⇄ the Redfish boot override.
//! - `boot_options`: Get/Set System Boot Options (parameters 0, 3, 4, 5).
//! - `config`: LAN and SOL configuration parameters, read-only.
//! - `inventory`: FRU image, SDR records, FRU/SDR/SEL commands.
//! - `sol`: Serial-over-LAN payloads.
//! - `server`: the UDP loop and its timers.
//! - `inband`: the host's own (KCS/BT) side, from QEMU's `ipmi-bmc-extern`.
//!
//! Invariant: a datagram that does not parse, fails its integrity check,
//! is out of its sequence window or names no session is dropped without
//! an answer (as real BMCs do) and changes nothing; a request that parses
//! gets a completion code.

pub mod boot;
mod boot_options;
mod channel;
pub mod commands;
mod config;
mod identity;
pub mod inband;
pub mod inventory;
mod lockout;
pub mod sel;
mod server;
pub mod session;
pub mod sol;
pub mod users;
mod watchdog;

pub use server::{serve, timers};
pub use shoal_ipmi::{crypto, wire};

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::net::UdpSocket;

use crate::auth::AuthStore;
use crate::backend::BackendError;
use crate::bmc::changes::{with_cause, Cause};
use crate::bmc::Core;
use crate::model::{BootOverride, Change, IndicatorLed, SystemSettings};
use crate::profile::Profile;
use crate::sync::{lock, read};
use channel::{auth_capabilities, cipher_suites, session_challenge};
use commands::{cc, netfn, ChassisState};
pub use identity::Identity;
use session::Sessions;
use users::{Privilege, Users};
use wire::{payload, Datagram};

/// What the IPMI listeners run with; by default nothing is served and
/// there is no account.
#[derive(Debug, Clone, Default)]
pub struct IpmiSettings {
    /// UDP port of every BMC; 0: no IPMI over LAN (the default: it is
    /// served only where the operator asks).
    pub port: u16,
    /// The setting that asked for IPMI over LAN (`--ipmi-port`,
    /// `FILE: ipmi.users`, ...), named by the errors that refuse it.
    pub asked_by: Option<String>,
    /// The accounts: only the configured ones (none by default).
    pub users: Users,
    /// Serve cipher suite 0 (no authentication: any password logs in).
    pub cipher_suite_zero: bool,
    /// Where each BMC serves its machine's in-band side
    /// (`<dir>/<system UUID>.sock`, OpenIPMI's VM protocol, which QEMU's
    /// `ipmi-bmc-extern` speaks); `None`: no in-band IPMI.
    pub in_band_dir: Option<std::path::PathBuf>,
    /// The boot initiator mailbox's blocks at start.
    pub boot_mailbox: Vec<[u8; 16]>,
}

/// One BMC's IPMI side: its machine, its sessions.
pub struct Bmc {
    /// The system's Id in `backend` (the endpoint's view).
    pub system_id: String,
    /// The system's name: what fault rules and BMC reboots name it by
    /// (as for its Redfish side), whatever its Id.
    pub system_name: String,
    /// The endpoint's BMC: its backend view, locks, profiles, faults and
    /// power clock, shared with its Redfish side.
    pub core: Core,
    /// The endpoint's accounts: their lockout policy applies to RMCP+
    /// logins too.
    pub auth: Arc<AuthStore>,
    pub identity: Identity,
    /// The system's UUID as Get System GUID sends it (SMBIOS byte order,
    /// what pyghmi decodes and ipmitool prints as the same UUID).
    pub guid: [u8; 16],
    /// The system's UUID: its in-band socket's name (the libvirt backend
    /// names the domain's socket after the domain's UUID, whatever Id a
    /// profile shows).
    pub uuid: uuid::Uuid,
    /// Its users: the configured ones, then what Set User commands made.
    pub users: std::sync::RwLock<Users>,
    pub addr: SocketAddr,
    pub mac: [u8; 6],
    pub cipher_suite_zero: bool,
    sessions: Mutex<Sessions>,
    chassis: Mutex<ChassisState>,
    /// The active Serial-over-LAN payload (one per BMC).
    sol: Mutex<Option<sol::Active>>,
    /// The socket BMC-initiated packets (SOL) leave by.
    outbound: std::sync::OnceLock<Arc<UdpSocket>>,
}

impl Bmc {
    /// The IPMI side of system `id` of an endpoint's BMC `core` (its
    /// view, locks and profiles: the ones its Redfish side uses).
    pub fn new(
        core: &Core,
        auth: Arc<AuthStore>,
        id: &str,
        sys: &crate::model::System,
        settings: &IpmiSettings,
        addr: SocketAddr,
    ) -> Bmc {
        let u = sys.uuid.as_bytes();
        // A locally administered unicast MAC derived from the UUID.
        let mac = [0x02, u[10], u[11], u[12], u[13], u[14]];
        Bmc {
            system_id: id.to_string(),
            system_name: sys.name.clone(),
            core: core.clone(),
            auth,
            identity: Identity::of(core.profile(sys)),
            guid: sys.uuid.to_bytes_le(),
            uuid: sys.uuid,
            users: std::sync::RwLock::new(settings.users.clone()),
            addr,
            mac,
            cipher_suite_zero: settings.cipher_suite_zero,
            sessions: Mutex::new(Sessions::default()),
            chassis: Mutex::new(ChassisState::with_mailbox(&settings.boot_mailbox)),
            sol: Mutex::new(None),
            outbound: std::sync::OnceLock::new(),
        }
    }

    /// The socket SOL packets leave by (set once, by `serve`).
    pub fn set_outbound(&self, socket: Arc<UdpSocket>) {
        let _ = self.outbound.set(socket);
    }

    pub async fn send_to(&self, datagram: &[u8], peer: SocketAddr) {
        if let Some(s) = self.outbound.get() {
            if let Err(e) = s.send_to(datagram, peer).await {
                tracing::debug!(%peer, error = %e, "IPMI send failed");
            }
        }
    }

    pub fn session_alive(&self, sid: u32) -> bool {
        lock(&self.sessions).get_mut(sid).is_some()
    }

    /// The SOL task `task` ended (its slot is freed unless another
    /// activation took it since).
    pub fn sol_ended(&self, task: tokio::task::Id) {
        let mut sol = lock(&self.sol);
        if sol.as_ref().is_some_and(|a| a.task.id() == task) {
            *sol = None;
        }
    }

    /// Ends the SOL payload of session `sid`, if it has one (the session
    /// closed or idled out).
    pub fn end_sol_of(&self, sid: u32) {
        let mut sol = lock(&self.sol);
        if sol.as_ref().is_some_and(|a| a.bmc_sid == sid) {
            if let Some(a) = sol.take() {
                a.task.abort();
                tracing::info!(system = %self.system_id, session = sid, "SOL payload ended with its session");
            }
        }
    }

    /// A payload of session `sid` as a datagram: numbered next, encrypted
    /// and signed as the session's suite says; `None` when the session is
    /// gone.
    pub fn seal(&self, sid: u32, payload_type: u8, body: &[u8]) -> Option<Vec<u8>> {
        let (keys, console_sid, seq) = {
            let mut s = lock(&self.sessions);
            let a = s.get_mut(sid)?;
            (a.keys.clone(), a.console_sid, a.next_out_seq())
        };
        Some(seal_with(&keys, console_sid, seq, payload_type, body))
    }

    pub fn chassis(&self) -> MutexGuard<'_, ChassisState> {
        lock(&self.chassis)
    }

    pub async fn system(&self) -> Result<crate::model::System, BackendError> {
        self.core.backend.system(&self.system_id).await
    }

    pub async fn lock_system(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.core.locks.lock(&self.system_id).await
    }

    pub fn profile(&self, sys: &crate::model::System) -> &'static Profile {
        self.core.profile(sys)
    }

    pub async fn fru(&self) -> Result<Vec<u8>, BackendError> {
        let sys = self.system().await?;
        Ok(inventory::fru(&sys, self.profile(&sys)))
    }

    /// Established sessions now.
    pub fn active_sessions(&self) -> usize {
        lock(&self.sessions).active_count()
    }

    /// The timers: the watchdog, sessions idle too long, the boot flags'
    /// 60 seconds, a temporary identify.
    pub async fn tick(&self, now: Instant) {
        watchdog::tick(self, now).await;
        let policy = self.auth.lockout_policy();
        let idle = lock(&self.sessions).prune(now, &policy);
        for sid in idle {
            self.end_sol_of(sid);
        }
        let (expired, identify_over) = {
            let mut c = self.chassis();
            let expired = match &c.valid_since {
                Some((at, o)) if now.duration_since(*at) >= commands::BOOT_VALID_TIMEOUT => {
                    let o = o.clone();
                    c.valid_since = None;
                    Some(o)
                }
                _ => None,
            };
            let identify_over = c.identify_until.is_some_and(|t| now >= t);
            if identify_over {
                c.identify_until = None;
            }
            (expired, identify_over)
        };
        if let Some(set) = expired {
            self.clear_flags_if_unchanged(&set).await;
        }
        if identify_over {
            let _guard = self.lock_system().await;
            if let Ok(sys) = self.system().await {
                if sys.bmc.indicator == IndicatorLed::Blinking {
                    let off = Change::Settings(SystemSettings {
                        indicator: Some(IndicatorLed::Off),
                        ..Default::default()
                    });
                    let _ = self.core.backend.apply(&self.system_id, vec![off]).await;
                }
            }
        }
    }

    /// The valid bit's timer ran out: the override IPMI set is cleared,
    /// unless something (a boot, Redfish) changed it since.
    async fn clear_flags_if_unchanged(&self, set: &BootOverride) {
        let _guard = self.lock_system().await;
        let Ok(sys) = self.system().await else {
            return;
        };
        if &sys.bmc.boot == set {
            tracing::info!(system = %self.system_id, "IPMI boot flags expired after 60 s without a restart");
            let cleared = BootOverride::disabled(sys.bmc.boot.mode);
            let _ = self
                .core
                .backend
                .apply(&self.system_id, vec![Change::Boot(cleared)])
                .await;
        }
    }

    /// Answers one datagram from `peer`; `None`: no answer.
    pub async fn handle(self: &Arc<Self>, buf: &[u8], peer: SocketAddr) -> Option<Vec<u8>> {
        // A BMC that is rebooting or without power answers nothing.
        if self
            .core
            .faults
            .away(std::slice::from_ref(&self.system_name))
        {
            return None;
        }
        let d = match wire::parse(buf) {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(error = %e, "IPMI datagram dropped");
                return None;
            }
        };
        match d {
            Datagram::Ping { rmcp_seq, tag } => Some(wire::build_pong(rmcp_seq, tag)),
            Datagram::V15 {
                session_id: 0,
                message,
                ..
            } => {
                let req = wire::parse_request(message).ok()?;
                let (code, data) = self.outside_session(&req).await?;
                Some(wire::build_v15(&wire::build_response(&req, code, &data)))
            }
            // IPMI v1.5 sessions are not served: RMCP+ only.
            Datagram::V15 { .. } => None,
            Datagram::V20(p) => self.handle_v20(p, peer).await,
        }
    }

    /// The few commands served before a session (IPMI v2.0 section 13.3).
    async fn outside_session(&self, req: &wire::Request<'_>) -> Option<(u8, Vec<u8>)> {
        match (req.netfn, req.cmd) {
            (netfn::APP, 0x38) => Some(auth_capabilities(req.data)),
            (netfn::APP, 0x39) => Some(session_challenge(req.data)),
            (netfn::APP, 0x54) => Some(cipher_suites(req.data, self.cipher_suite_zero)),
            (netfn::APP, 0x37) => {
                let cause = Cause::Ipmi {
                    netfn: req.netfn,
                    cmd: req.cmd,
                    user: None,
                };
                let run = commands::execute(self, Privilege::User, req.netfn, req.cmd, req.data);
                Some(with_cause(cause, run).await)
            }
            _ => None,
        }
    }

    /// An RMCP+ packet: a session setup payload outside a session, else
    /// a payload of an established session once admitted into it.
    async fn handle_v20(self: &Arc<Self>, p: wire::V20<'_>, peer: SocketAddr) -> Option<Vec<u8>> {
        let now = Instant::now();
        if p.session_id == 0 {
            return self.session_setup(&p, now).await;
        }
        let a = lock(&self.sessions).get_mut(p.session_id)?.admit(&p, now)?;
        let body = if p.encrypted {
            a.keys.decrypt(p.payload)?
        } else {
            p.payload.to_vec()
        };
        if p.payload_type == payload::SOL {
            // To the session's SOL task, which answers.
            let inbound = lock(&self.sol)
                .as_ref()
                .filter(|s| s.bmc_sid == p.session_id)
                .map(|s| s.inbound.clone());
            if let Some(tx) = inbound {
                let _ = tx.try_send(body);
            }
            return None;
        }
        if p.payload_type != payload::IPMI {
            return None;
        }
        let req = wire::parse_request(&body).ok()?;
        let response = self
            .answer_once(p.session_id, &a, &body, &req, peer)
            .await?;
        self.seal_answer(p.session_id, &a, &req, &response)
    }

    /// A payload outside a session: Open Session, RAKP 1 and 3, and the
    /// few commands served before a session; unprotected both ways.
    async fn session_setup(&self, p: &wire::V20<'_>, now: Instant) -> Option<Vec<u8>> {
        if p.authenticated || p.encrypted {
            return None;
        }
        let policy = self.auth.lockout_policy();
        let (pt, r) = match p.payload_type {
            payload::OPEN_SESSION_REQUEST => {
                let zero = self.cipher_suite_zero;
                let r = lock(&self.sessions).open(p.payload, zero, now, &policy)?;
                (payload::OPEN_SESSION_RESPONSE, r)
            }
            payload::RAKP1 => {
                let users = read(&self.users);
                let cap = self.chassis().channel.volatile.limit;
                let mut sessions = lock(&self.sessions);
                let r = sessions.rakp1(p.payload, &users, cap, &self.guid, now, &policy)?;
                (payload::RAKP2, r)
            }
            payload::RAKP3 => {
                let r = lock(&self.sessions).rakp3(p.payload, &self.guid, now, &policy)?;
                (payload::RAKP4, r)
            }
            payload::IPMI => {
                let req = wire::parse_request(p.payload).ok()?;
                let (code, data) = self.outside_session(&req).await?;
                (payload::IPMI, wire::build_response(&req, code, &data))
            }
            _ => return None,
        };
        Some(wire::build_v20(pt, false, 0, 0, &r, None))
    }

    /// The answer to request `req` of session `sid` (`body` as it came),
    /// carried out once: a retransmission of the session's last request
    /// gets the same answer again, or none while the first is still
    /// being carried out.
    async fn answer_once(
        self: &Arc<Self>,
        sid: u32,
        a: &session::Admitted,
        body: &[u8],
        req: &wire::Request<'_>,
        peer: SocketAddr,
    ) -> Option<Vec<u8>> {
        if let Some(done) = lock(&self.sessions).get_mut(sid)?.recall(body) {
            return done;
        }
        let cause = Cause::Ipmi {
            netfn: req.netfn,
            cmd: req.cmd,
            user: Some(a.user.clone()),
        };
        let run = self.in_session(sid, a.privilege, a.max, req, peer);
        let (code, data) = with_cause(cause, run).await;
        let r = wire::build_response(req, code, &data);
        if let Some(s) = lock(&self.sessions).get_mut(sid) {
            s.remember(body, &r);
        }
        Some(r)
    }

    /// `response` to `req` sealed with session `sid`'s next number; a
    /// Close Session of this very session ends it after that.
    fn seal_answer(
        &self,
        sid: u32,
        a: &session::Admitted,
        req: &wire::Request<'_>,
        response: &[u8],
    ) -> Option<Vec<u8>> {
        let closing = (req.netfn, req.cmd) == (netfn::APP, 0x3c)
            && req.data.get(..4) == Some(&sid.to_le_bytes()[..])
            && response.get(6) == Some(&cc::OK);
        let seq = {
            let mut s = lock(&self.sessions);
            let seq = s.get_mut(sid)?.next_out_seq();
            if closing {
                s.close(sid);
            }
            seq
        };
        if closing {
            self.end_sol_of(sid);
        }
        Some(seal_with(
            &a.keys,
            a.console_sid,
            seq,
            payload::IPMI,
            response,
        ))
    }

    /// A command inside a session: the session commands here, the rest
    /// to [`commands::execute`].
    async fn in_session(
        self: &Arc<Self>,
        sid: u32,
        privilege: Privilege,
        max: Privilege,
        req: &wire::Request<'_>,
        peer: SocketAddr,
    ) -> (u8, Vec<u8>) {
        match commands::required(req.netfn, req.cmd) {
            None => return (cc::INVALID_COMMAND, Vec::new()),
            Some(needed) if privilege < needed => return (cc::INSUFFICIENT_PRIVILEGE, Vec::new()),
            Some(_) => {}
        }
        match (req.netfn, req.cmd) {
            (netfn::APP, 0x38) => auth_capabilities(req.data),
            (netfn::APP, 0x54) => cipher_suites(req.data, self.cipher_suite_zero),
            // Set Session Privilege Level.
            (netfn::APP, 0x3b) => {
                let [level] = req.data else {
                    return (cc::BAD_LENGTH, Vec::new());
                };
                let level = level & 0x0f;
                if level == 0 {
                    return (cc::OK, vec![privilege as u8]);
                }
                let Some(want) = Privilege::from_u8(level).filter(|p| *p != Privilege::Oem) else {
                    return (cc::INVALID_FIELD, Vec::new());
                };
                if want > max {
                    // Above the session's (and user's) limit.
                    return (0x81, Vec::new());
                }
                if let Some(a) = lock(&self.sessions).get_mut(sid) {
                    a.privilege = want;
                }
                (cc::OK, vec![want as u8])
            }
            // Close Session: this one, or another (administrators).
            (netfn::APP, 0x3c) => {
                let Some(id) = req.data.get(..4) else {
                    return (cc::BAD_LENGTH, Vec::new());
                };
                let id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
                if id == sid {
                    // Closed once its answer is numbered (see handle_v20).
                    return (cc::OK, Vec::new());
                }
                if privilege < Privilege::Administrator {
                    return (cc::INSUFFICIENT_PRIVILEGE, Vec::new());
                }
                if lock(&self.sessions).close(id) {
                    self.end_sol_of(id);
                    (cc::OK, Vec::new())
                } else {
                    // Invalid session ID in request.
                    (0x87, Vec::new())
                }
            }
            (netfn::APP, 0x48) => self.activate_sol(sid, privilege, req.data, peer).await,
            (netfn::APP, 0x49) => self.deactivate_sol(sid, privilege, req.data).await,
            (netfn::APP, 0x4a) => {
                let [1] = req.data else {
                    return (cc::INVALID_FIELD, Vec::new());
                };
                let active = u8::from(lock(&self.sol).is_some());
                (cc::OK, vec![0x01, active, 0x00])
            }
            (netfn::APP, 0x4b) => {
                let [1, 1] = req.data else {
                    return (cc::INVALID_FIELD, Vec::new());
                };
                let owner = lock(&self.sol).as_ref().map_or(0, |a| a.bmc_sid);
                let mut v = owner.to_le_bytes().to_vec();
                v.extend_from_slice(&[0; 8]);
                (cc::OK, v)
            }
            _ => commands::execute(self, privilege, req.netfn, req.cmd, req.data).await,
        }
    }
}

/// A payload as a datagram of a session with these keys.
fn seal_with(
    keys: &crypto::Keys,
    console_sid: u32,
    seq: u32,
    payload_type: u8,
    body: &[u8],
) -> Vec<u8> {
    let encrypted = keys.suite.conf == crypto::Conf::AesCbc128;
    let bytes = if encrypted {
        keys.encrypt(body, rand::random())
    } else {
        body.to_vec()
    };
    let code = |covered: &[u8]| keys.suite.integrity.code(&keys.k1, covered);
    let auth: wire::AuthCode<'_> =
        (keys.suite.integrity != crypto::Integrity::None).then_some(&code);
    wire::build_v20(payload_type, encrypted, console_sid, seq, &bytes, auth)
}

#[cfg(test)]
mod tests;
