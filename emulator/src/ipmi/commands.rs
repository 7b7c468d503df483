//! IPMI commands, each carried out on the backend exactly as its Redfish
//! equivalent is: power through [`Backend::reset`], boot flags and the
//! identify light through [`Change`]s, identity from the profile.
//!
//! [`execute`] takes a parsed request and the privilege it runs at and
//! returns the completion code and the response data. Requests that are
//! short, long or out of range get the completion code the IPMI spec
//! names for them, and change nothing.

use std::time::{Duration, Instant};

use super::users::{Privilege, SetError};
use super::Bmc;
use super::{boot_options, channel, config, inventory, sel, watchdog};
use crate::backend::BackendError;
use crate::model::{
    BootOverride, Change, IndicatorLed, PowerRestorePolicy, PowerState, ResetType, SystemSettings,
};
use crate::sync::{read, write};

/// Network functions.
pub mod netfn {
    pub const CHASSIS: u8 = 0x00;
    pub const SENSOR: u8 = 0x04;
    pub const APP: u8 = 0x06;
    pub const STORAGE: u8 = 0x0a;
    pub const TRANSPORT: u8 = 0x0c;
    pub const PICMG: u8 = 0x2c;
}

/// Completion codes.
pub mod cc {
    pub const OK: u8 = 0x00;
    pub const NODE_BUSY: u8 = 0xc0;
    pub const INVALID_COMMAND: u8 = 0xc1;
    pub const BAD_LENGTH: u8 = 0xc7;
    pub const OUT_OF_RANGE: u8 = 0xc9;
    pub const NOT_PRESENT: u8 = 0xcb;
    pub const INVALID_FIELD: u8 = 0xcc;
    pub const INSUFFICIENT_PRIVILEGE: u8 = 0xd4;
    pub const NOT_NOW: u8 = 0xd5;
    pub const UNSPECIFIED: u8 = 0xff;
    /// Get/Set System Boot Options: parameter not supported.
    pub const PARAM_NOT_SUPPORTED: u8 = 0x80;
}

/// How long the boot flags stay valid without a restart (IPMI v2.0
/// section 28.12), unless parameter 3 bit 3 stops the timer.
pub const BOOT_VALID_TIMEOUT: Duration = Duration::from_secs(60);
/// Chassis Identify's default interval.
const IDENTIFY_DEFAULT: u64 = 15;

/// What an IPMI BMC keeps beside the machine's shared state: the boot
/// option parameters that have no Redfish meaning, and the timers.
#[derive(Debug, Default)]
pub struct ChassisState {
    /// Parameter 0: set in progress.
    pub set_in_progress: u8,
    /// Parameter 3: which events do not clear the valid bit.
    pub valid_clearing: u8,
    /// Parameter 4: boot info acknowledge bits.
    pub boot_ack: u8,
    /// When IPMI made the boot flags valid, and the override it set:
    /// 60 seconds later without a restart, the override is cleared.
    pub valid_since: Option<(Instant, BootOverride)>,
    /// A temporary Chassis Identify ends then.
    pub identify_until: Option<Instant>,
    /// The watchdog timer.
    pub watchdog: super::watchdog::Watchdog,
    /// ACPI system and device power states as the host last set them
    /// (Set ACPI Power State); 0x2a: unknown.
    pub acpi: Option<(u8, u8)>,
    /// Seconds added to the host clock for the SEL time (Set SEL Time).
    pub sel_offset: i64,
    /// Parameter 7, the boot initiator mailbox: blocks written so far
    /// (unwritten ones read as zeros), at most `MAILBOX_BLOCKS`.
    pub mailbox: Vec<[u8; 16]>,
    /// Boot flags written valid with no override (what a host writes to
    /// clear a one-time override it honoured), and when: the machine's
    /// override is none, which alone would read "not valid"; these read
    /// back as written until the valid bit's 60 seconds run out.
    pub valid_no_override: Option<(Instant, u8)>,
    /// The LAN channel's access settings (Get/Set Channel Access).
    pub channel: channel::ChannelAccess,
}

pub use shoal_ipmi::boot::MAILBOX_BLOCKS;

impl ChassisState {
    /// Data byte 1 of boot flags written valid with no override, while
    /// the valid bit lasts (always, when parameter 3 says a timeout does
    /// not clear it).
    pub fn valid_no_override(&self, now: Instant) -> Option<u8> {
        let (at, b1) = self.valid_no_override?;
        (self.valid_clearing & 0x08 != 0 || now.duration_since(at) < BOOT_VALID_TIMEOUT)
            .then_some(b1)
    }

    /// A BMC's state at start, its mailbox holding `blocks`.
    pub fn with_mailbox(blocks: &[[u8; 16]]) -> Self {
        ChassisState {
            mailbox: blocks.to_vec(),
            ..ChassisState::default()
        }
    }
}

/// The privilege a command needs; `None` for commands not served.
pub fn required(netfn: u8, cmd: u8) -> Option<Privilege> {
    use Privilege::*;
    Some(match (netfn, cmd) {
        (netfn::APP, 0x01 | 0x04 | 0x08 | 0x37 | 0x38 | 0x54 | 0x41 | 0x42) => User,
        (netfn::APP, 0x07 | 0x25) => User,
        (netfn::APP, 0x22 | 0x24) => Operator,
        (netfn::APP, 0x06) => Administrator,
        (netfn::APP, 0x48..=0x4b | 0x4e | 0x4f) => User,
        (netfn::APP, 0x4d) => Operator,
        (netfn::APP, 0x3b | 0x3c) => Callback,
        (netfn::APP, 0x44 | 0x46) => Operator,
        (netfn::APP, 0x40 | 0x43 | 0x45 | 0x47) => Administrator,
        (netfn::CHASSIS, 0x00 | 0x01) => User,
        (netfn::CHASSIS, 0x02 | 0x04 | 0x06 | 0x08 | 0x09) => Operator,
        (netfn::STORAGE, 0x47 | 0x49) => Operator,
        (netfn::STORAGE, 0x10 | 0x11 | 0x20 | 0x21 | 0x22 | 0x23 | 0x40 | 0x42 | 0x43 | 0x48) => {
            User
        }
        (netfn::TRANSPORT, 0x01) => Administrator,
        (netfn::TRANSPORT, 0x02) => Operator,
        (netfn::TRANSPORT, 0x22) => User,
        _ => return None,
    })
}

pub(super) fn backend_cc(e: &BackendError) -> u8 {
    match e {
        BackendError::Conflict(_) => cc::NOT_NOW,
        BackendError::Unsupported(_) => cc::INVALID_FIELD,
        BackendError::NotFound(_) | BackendError::Media(_) => cc::NOT_PRESENT,
        BackendError::Unavailable(_) => cc::NODE_BUSY,
        BackendError::Internal(_) => cc::UNSPECIFIED,
    }
}

pub(super) type Reply = (u8, Vec<u8>);

pub(super) fn ok(data: Vec<u8>) -> Reply {
    (cc::OK, data)
}

pub(super) fn err(code: u8) -> Reply {
    (code, Vec::new())
}

/// Carries out one command at `privilege` (the session's, or User for
/// the few commands served outside a session).
pub async fn execute(bmc: &Bmc, privilege: Privilege, netfn: u8, cmd: u8, data: &[u8]) -> Reply {
    let Some(needed) = required(netfn, cmd) else {
        return err(cc::INVALID_COMMAND);
    };
    if privilege < needed {
        return err(cc::INSUFFICIENT_PRIVILEGE);
    }
    match (netfn, cmd) {
        (netfn::APP, 0x01) => device_id(bmc, data),
        (netfn::APP, 0x04) => exact(data, 0, || ok(vec![0x55, 0x00])),
        (netfn::APP, 0x08 | 0x37) => exact(data, 0, || ok(bmc.guid.to_vec())),
        (netfn::APP, 0x42) => channel_info(bmc, data),
        (netfn::APP, 0x41) => channel::get_access(&bmc.chassis().channel, data),
        (netfn::APP, 0x40) => channel::set_access(&mut bmc.chassis().channel, data),
        (netfn::APP, 0x06) => set_acpi(bmc, data),
        (netfn::APP, 0x07) => exact(data, 0, || {
            let (sys, dev) = bmc.chassis().acpi.unwrap_or((0x2a, 0x2a));
            ok(vec![sys, dev])
        }),
        (netfn::APP, 0x22) => watchdog::reset(bmc, data, Instant::now()),
        (netfn::APP, 0x24) => watchdog::set(bmc, data, Instant::now()),
        (netfn::APP, 0x25) => watchdog::get(bmc, data, Instant::now()),
        (netfn::APP, 0x44) => user_access(bmc, data),
        (netfn::APP, 0x46) => user_name(bmc, data),
        (netfn::APP, 0x43) => set_user_access(bmc, data),
        // Get User Payload Access: SOL (payload type 1) enabled for every
        // user.
        (netfn::APP, 0x4d) => match data {
            [ch, id]
                if matches!(ch & 0x0f, 0x01 | 0x0e)
                    && (1..=super::users::MAX_USERS as u8).contains(&(id & 0x3f)) =>
            {
                ok(vec![0x02, 0, 0, 0])
            }
            [_, _] => err(cc::INVALID_FIELD),
            _ => err(cc::BAD_LENGTH),
        },
        // Get Channel Payload Support: IPMI and SOL messages, and the
        // session setup payloads (0x10-0x15).
        (netfn::APP, 0x4e) => match data {
            [ch] if matches!(ch & 0x0f, 0x01 | 0x0e) => ok(vec![0x03, 0, 0x3f, 0, 0, 0, 0, 0]),
            [_] => err(cc::INVALID_FIELD),
            _ => err(cc::BAD_LENGTH),
        },
        // Get Channel Payload Version: 1.0 for the payloads served.
        (netfn::APP, 0x4f) => match data {
            [ch, t]
                if matches!(ch & 0x0f, 0x01 | 0x0e) && matches!(t, 0x00 | 0x01 | 0x10..=0x15) =>
            {
                ok(vec![0x10])
            }
            [ch, _] if !matches!(ch & 0x0f, 0x01 | 0x0e) => err(cc::INVALID_FIELD),
            // Payload type not available on the given channel.
            [_, _] => err(0x80),
            _ => err(cc::BAD_LENGTH),
        },
        (netfn::APP, 0x45) => set_user_name(bmc, data),
        (netfn::APP, 0x47) => set_user_password(bmc, data),
        // Capabilities: intrusion sensor, lockout, diagnostic interrupt,
        // power interlock; FRU, SDR, SEL and system management at 0x20.
        (netfn::CHASSIS, 0x00) => exact(data, 0, || ok(vec![0x0f, 0x20, 0x20, 0x20, 0x20])),
        (netfn::CHASSIS, 0x01) => chassis_status(bmc, data).await,
        (netfn::CHASSIS, 0x02) => chassis_control(bmc, data).await,
        (netfn::CHASSIS, 0x04) => identify(bmc, data).await,
        (netfn::CHASSIS, 0x06) => power_restore_policy(bmc, data).await,
        (netfn::CHASSIS, 0x08) => boot_options::set_boot_option(bmc, data).await,
        (netfn::CHASSIS, 0x09) => boot_options::get_boot_option(bmc, data).await,
        (netfn::STORAGE, 0x10) => inventory::fru_info(bmc, data).await,
        (netfn::STORAGE, 0x11) => inventory::fru_read(bmc, data).await,
        (netfn::STORAGE, 0x20) => exact(data, 0, inventory::sdr_info),
        (netfn::STORAGE, 0x22) => exact(data, 0, || ok(vec![0x01, 0x00])),
        (netfn::STORAGE, 0x23) => inventory::get_sdr(data),
        (netfn::STORAGE, 0x40) => sel::info(bmc, data).await,
        (netfn::STORAGE, 0x42) => sel::reserve(bmc, data),
        (netfn::STORAGE, 0x43) => sel::get(bmc, data).await,
        (netfn::STORAGE, 0x47) => sel::clear(bmc, data).await,
        (netfn::STORAGE, 0x48) => exact(data, 0, || inventory::sel_time(bmc.chassis().sel_offset)),
        (netfn::STORAGE, 0x49) => match data {
            [a, b, c, d] => {
                let set = i64::from(u32::from_le_bytes([*a, *b, *c, *d]));
                bmc.chassis().sel_offset = set - crate::timefmt::unix_now() as i64;
                ok(Vec::new())
            }
            _ => err(cc::BAD_LENGTH),
        },
        (netfn::TRANSPORT, 0x01) => config::set_lan_config(bmc, data),
        (netfn::TRANSPORT, 0x02) => config::lan_config(bmc, data),
        (netfn::TRANSPORT, 0x22) => config::sol_config(bmc, data),
        _ => err(cc::INVALID_COMMAND),
    }
}

/// Runs `f` when the request has exactly `n` data bytes.
fn exact(data: &[u8], n: usize, f: impl FnOnce() -> Reply) -> Reply {
    if data.len() != n {
        return err(cc::BAD_LENGTH);
    }
    f()
}

fn device_id(bmc: &Bmc, data: &[u8]) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    let id = &bmc.identity;
    let m = id.manufacturer_id.to_le_bytes();
    let p = id.product_id.to_le_bytes();
    ok(vec![
        0x20,               // device id
        0x01,               // device revision; no device SDRs (the repository has them)
        id.fw_major & 0x7f, // device available
        id.fw_minor_bcd,
        0x02, // IPMI 2.0
        0x8e, // chassis, FRU inventory, SEL, SDR repository
        m[0],
        m[1],
        m[2],
        p[0],
        p[1],
        0,
        0,
        0,
        0,
    ])
}

fn channel_info(bmc: &Bmc, data: &[u8]) -> Reply {
    let [ch] = data else {
        return err(cc::BAD_LENGTH);
    };
    if !matches!(ch & 0x0f, 0x01 | 0x0e) {
        return err(cc::INVALID_FIELD);
    }
    // Channel 1: 802.3 LAN, IPMB-1.0 protocol, multi-session with the
    // sessions open now; IANA of the IPMI forum (7154).
    let open = bmc.active_sessions().min(0x3f) as u8;
    ok(vec![
        0x01,
        0x04,
        0x01,
        0x80 | open,
        0xf2,
        0x1b,
        0x00,
        0x00,
        0x00,
    ])
}

fn user_access(bmc: &Bmc, data: &[u8]) -> Reply {
    let [ch, id] = data else {
        return err(cc::BAD_LENGTH);
    };
    let id = id & 0x3f;
    if !matches!(ch & 0x0f, 0x01 | 0x0e) || id == 0 || id as usize > super::users::MAX_USERS {
        return err(cc::INVALID_FIELD);
    }
    let users = read(&bmc.users);
    let enabled = users.enabled() as u8;
    let (status, access) = match users.by_id(id) {
        // Enabled or disabled (by Set User Password); link authentication
        // on, IPMI messaging as set, the privilege limit (0x0F: none).
        Some(s) => (
            if s.enabled { 0x40 } else { 0x80 },
            0x20 | if s.messaging { 0x10 } else { 0 } | s.limit.map_or(0x0f, |p| p as u8),
        ),
        // The null user: disabled, no access.
        None => (0x80, 0x0f),
    };
    ok(vec![
        super::users::MAX_USERS as u8,
        status | enabled,
        0x01,
        access,
    ])
}

fn user_name(bmc: &Bmc, data: &[u8]) -> Reply {
    let [id] = data else {
        return err(cc::BAD_LENGTH);
    };
    let id = id & 0x3f;
    if id == 0 || id as usize > super::users::MAX_USERS {
        return err(cc::INVALID_FIELD);
    }
    let mut name = [0u8; 16];
    if let Some(s) = read(&bmc.users).by_id(id) {
        name[..s.name.len()].copy_from_slice(&s.name);
    }
    ok(name.to_vec())
}

fn set_result(r: Result<(), SetError>) -> Reply {
    match r {
        Ok(()) => ok(Vec::new()),
        Err(SetError::Invalid) => err(cc::INVALID_FIELD),
        Err(SetError::PasswordMismatch) => err(0x80),
        Err(SetError::PasswordSize) => err(0x81),
    }
}

/// Set User Access: byte 1 bit 7 makes bits 6:4 (callback, link
/// authentication, IPMI messaging) apply; byte 3, the privilege limit.
fn set_user_access(bmc: &Bmc, data: &[u8]) -> Reply {
    let (ch_flags, id, limit) = match data {
        [a, b, c] | [a, b, c, _] => (*a, b & 0x3f, *c),
        _ => return err(cc::BAD_LENGTH),
    };
    if !matches!(ch_flags & 0x0f, 0x01 | 0x0e) {
        return err(cc::INVALID_FIELD);
    }
    let messaging = (ch_flags & 0x80 != 0).then_some(ch_flags & 0x10 != 0);
    set_result(write(&bmc.users).set_access(id, limit, messaging))
}

/// Set User Name: the user ID, then 16 bytes of name.
fn set_user_name(bmc: &Bmc, data: &[u8]) -> Reply {
    let [id, ref name @ ..] = data[..] else {
        return err(cc::BAD_LENGTH);
    };
    if name.len() != 16 {
        return err(cc::BAD_LENGTH);
    }
    set_result(write(&bmc.users).set_name(id & 0x3f, name))
}

/// Set User Password: the user ID (bit 7: a 20-byte password), the
/// operation, and for set and test the password.
fn set_user_password(bmc: &Bmc, data: &[u8]) -> Reply {
    let [id, op, ref password @ ..] = data[..] else {
        return err(cc::BAD_LENGTH);
    };
    let op = op & 0x03;
    let size = if id & 0x80 != 0 { 20 } else { 16 };
    if matches!(op, 2 | 3) && password.len() != size
        || matches!(op, 0 | 1) && !password.is_empty() && password.len() != size
    {
        return err(cc::BAD_LENGTH);
    }
    set_result(write(&bmc.users).set_password(id & 0x3f, op, password))
}

async fn chassis_status(bmc: &Bmc, data: &[u8]) -> Reply {
    if !data.is_empty() {
        return err(cc::BAD_LENGTH);
    }
    let sys = match bmc.system().await {
        Ok(s) => s,
        Err(e) => return err(backend_cc(&e)),
    };
    let on = matches!(sys.power, PowerState::On | PowerState::PoweringOff);
    // The power restore policy in bits 6:5.
    let b1 = u8::from(on) | restore_code(sys.bmc.power_restore) << 5;
    let identify = match sys.bmc.indicator {
        IndicatorLed::Off => 0x00,
        IndicatorLed::Blinking => 0x10,
        IndicatorLed::Lit => 0x20,
    };
    // Identify state reported (bit 6).
    ok(vec![b1, 0x00, 0x40 | identify, 0x00])
}

/// IPMI's code of a power restore policy (Chassis Status bits 6:5, Set
/// Power Restore Policy bits 2:0).
fn restore_code(p: PowerRestorePolicy) -> u8 {
    match p {
        PowerRestorePolicy::AlwaysOff => 0,
        PowerRestorePolicy::LastState => 1,
        PowerRestorePolicy::AlwaysOn => 2,
    }
}

/// Set Power Restore Policy: bits 2:0 say always off (0), the state
/// before (1), always on (2) or no change (3: what `ipmitool chassis
/// policy list` asks). The same setting as Redfish's `PowerRestorePolicy`;
/// the answer lists the policies supported (all three).
async fn power_restore_policy(bmc: &Bmc, data: &[u8]) -> Reply {
    let [b] = data else {
        return err(cc::BAD_LENGTH);
    };
    let policy = match b & 0x07 {
        0 => Some(PowerRestorePolicy::AlwaysOff),
        1 => Some(PowerRestorePolicy::LastState),
        2 => Some(PowerRestorePolicy::AlwaysOn),
        3 => None,
        _ => return err(cc::INVALID_FIELD),
    };
    if let Some(p) = policy {
        let change = Change::Settings(SystemSettings {
            power_restore: Some(p),
            ..Default::default()
        });
        let _guard = bmc.lock_system().await;
        if let Err(e) = bmc.core.backend.apply(&bmc.system_id, vec![change]).await {
            return err(backend_cc(&e));
        }
    }
    ok(vec![0x07])
}

/// Set ACPI Power State: bit 7 of each byte says whether to set that
/// state. System states: S0/G0 to S5 override (0x00-0x0a), legacy on and
/// off (0x20, 0x21), unknown (0x2a); device states: D0-D3 (0x00-0x03),
/// unknown (0x2a); 0x7f: no change. Any other value is undefined.
fn set_acpi(bmc: &Bmc, data: &[u8]) -> Reply {
    let &[sys, dev] = data else {
        return err(cc::BAD_LENGTH);
    };
    let (s, d) = (sys & 0x7f, dev & 0x7f);
    let sys_ok = sys & 0x80 == 0 || matches!(s, 0x00..=0x0a | 0x20 | 0x21 | 0x2a | 0x7f);
    let dev_ok = dev & 0x80 == 0 || matches!(d, 0x00..=0x03 | 0x2a | 0x7f);
    if !sys_ok || !dev_ok {
        return err(cc::INVALID_FIELD);
    }
    let mut c = bmc.chassis();
    let (mut cur_s, mut cur_d) = c.acpi.unwrap_or((0x2a, 0x2a));
    if sys & 0x80 != 0 && s != 0x7f {
        cur_s = s;
    }
    if dev & 0x80 != 0 && d != 0x7f {
        cur_d = d;
    }
    c.acpi = Some((cur_s, cur_d));
    ok(Vec::new())
}

async fn chassis_control(bmc: &Bmc, data: &[u8]) -> Reply {
    let [action] = data else {
        return err(cc::BAD_LENGTH);
    };
    let reset = match action & 0x0f {
        0x00 => ResetType::ForceOff,
        0x01 => ResetType::On,
        0x02 => ResetType::PowerCycle,
        0x03 => ResetType::ForceRestart,
        0x04 => ResetType::Nmi,
        0x05 => ResetType::GracefulShutdown,
        _ => return err(cc::INVALID_FIELD),
    };
    // A Chassis Control command stops the valid bit's timer (the restart
    // it starts consumes the flags, as a boot consumes Once); a power
    // down, cycle or reset stops the watchdog (the firmware that starts
    // next arms it again). A refused one changes nothing: what it stopped
    // is put back, unless something set it anew meanwhile.
    let (saved, stopped) = {
        let mut c = bmc.chassis();
        let saved = (
            c.valid_since.take(),
            c.valid_no_override.take(),
            c.watchdog.clone(),
        );
        if !matches!(reset, ResetType::On | ResetType::Nmi) {
            c.watchdog.stop();
        }
        (saved, c.watchdog.clone())
    };
    let refused = |code: u8| {
        let mut c = bmc.chassis();
        if c.valid_since.is_none() {
            c.valid_since = saved.0.clone();
        }
        if c.valid_no_override.is_none() {
            c.valid_no_override = saved.1;
        }
        if c.watchdog == stopped {
            c.watchdog = saved.2.clone();
        }
        err(code)
    };
    let sys = match bmc.system().await {
        Ok(s) => s,
        Err(e) => return refused(backend_cc(&e)),
    };
    // As a Redfish Reset: the busy window, the lock, staged work woken.
    match bmc.core.power_action(&sys, reset).await {
        Ok(()) => ok(Vec::new()),
        Err(crate::bmc::PowerError::Busy) => refused(cc::NODE_BUSY),
        // Refused by the service's policy: not in its present state.
        Err(crate::bmc::PowerError::PowerOffDisabled) => refused(cc::NOT_NOW),
        Err(crate::bmc::PowerError::Backend(e)) => refused(backend_cc(&e)),
    }
}

async fn identify(bmc: &Bmc, data: &[u8]) -> Reply {
    let (interval, force) = match data {
        [] => (IDENTIFY_DEFAULT, false),
        [i] => (*i as u64, false),
        [i, f] => (*i as u64, f & 1 == 1),
        _ => return err(cc::BAD_LENGTH),
    };
    let led = if force {
        IndicatorLed::Lit
    } else if interval == 0 {
        IndicatorLed::Off
    } else {
        IndicatorLed::Blinking
    };
    let change = Change::Settings(SystemSettings {
        indicator: Some(led),
        ..Default::default()
    });
    let _guard = bmc.lock_system().await;
    match bmc.core.backend.apply(&bmc.system_id, vec![change]).await {
        Ok(_) => {
            bmc.chassis().identify_until = (led == IndicatorLed::Blinking)
                .then(|| Instant::now() + Duration::from_secs(interval));
            ok(Vec::new())
        }
        Err(e) => err(backend_cc(&e)),
    }
}
