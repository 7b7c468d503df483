//! The IPMI rows of `shoal-harness bench`: a BMC's IPMI side (RMCP+,
//! cipher suites 3 and 17) under load on loopback, beside virtualbmc when its venv
//! is given. The load generator is `shoal_ipmi::console` over blocking UDP
//! sockets, a thread per client; its own CPU time is reported with the
//! figures, so what it costs is visible.
//!
//! Rows: `Get Chassis Status` calls per second in an established session
//! (1 client, 4 clients), and session setups per second (Open Session,
//! RAKP 1-4, Close Session). Figures are printed, never asserted.

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use shoal_ipmi::console::{Login, Session};
use shoal_ipmi::crypto::SUITES;

use super::{progress, Options};
use crate::emulator::EmulatorProcess;

/// The account both BMCs are given (Shoal's and virtualbmc's).
use crate::driver::{IPMI_PASSWORD as PASSWORD, IPMI_USER as USER};
/// A round trip longer than this is a lost datagram.
const TIMEOUT: Duration = Duration::from_secs(2);

/// What one measurement gave.
pub(super) struct Figures {
    pub(super) per_sec: f64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) errors: u64,
    /// The load generator's CPU time per operation, in microseconds.
    generator_us: f64,
    /// The first error, as an example.
    pub(super) first_error: Option<String>,
}

fn thread_cpu() -> Duration {
    let mut ru = libc::rusage {
        ru_utime: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        ru_stime: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        ru_maxrss: 0,
        ru_ixrss: 0,
        ru_idrss: 0,
        ru_isrss: 0,
        ru_minflt: 0,
        ru_majflt: 0,
        ru_nswap: 0,
        ru_inblock: 0,
        ru_oublock: 0,
        ru_msgsnd: 0,
        ru_msgrcv: 0,
        ru_nsignals: 0,
        ru_nvcsw: 0,
        ru_nivcsw: 0,
    };
    // SAFETY: getrusage(2) writes only the struct passed, which lives here.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// One datagram out, its answer back: the first datagram of the payload
/// type the request's answer has. Others are skipped, as clients skip
/// them: a socket gets the ephemeral port a just-closed one had, and with
/// it that socket's late answer to Close Session.
fn exchange(sock: &UdpSocket, out: &[u8], buf: &mut [u8]) -> Result<usize> {
    // RMCP (4 bytes), authentication type, then the payload type; an
    // answer's is the request's + 1, except IPMI messages (0).
    let want = match out.get(5).map(|t| t & 0x3f) {
        Some(t @ (0x10 | 0x12 | 0x14)) => t + 1,
        Some(t) => t,
        None => bail!("a datagram too short to send"),
    };
    sock.send(out)?;
    for _ in 0..4 {
        let k = sock.recv(buf)?;
        if buf[..k].get(5).map(|t| t & 0x3f) == Some(want) {
            return Ok(k);
        }
    }
    bail!("no answer of payload type 0x{want:02x} among 4 datagrams")
}

fn login(sock: &UdpSocket, n: u32, suite: u8) -> Result<Session> {
    let suite = *SUITES
        .iter()
        .find(|s| s.id == suite)
        .context("cipher suite")?;
    let mut rm = [0u8; 16];
    rm[..4].copy_from_slice(&n.to_le_bytes());
    let mut l = Login::new(
        USER.as_bytes(),
        PASSWORD.as_bytes(),
        suite,
        4,
        0x5400 + n,
        rm,
    );
    let mut buf = [0u8; 1024];
    let k = exchange(sock, &l.open(), &mut buf)?;
    let r1 = l.rakp1(&buf[..k])?;
    let k = exchange(sock, &r1, &mut buf)?;
    let r3 = l.rakp3(&buf[..k])?;
    if !r3.password_matched {
        bail!("RAKP 2: the BMC does not know the password");
    }
    let k = exchange(sock, &r3.datagram, &mut buf)?;
    let mut s = l.finish(&buf[..k])?;
    // Operate at ADMINISTRATOR, as clients do.
    let k = exchange(sock, &s.request(0x06, 0x3b, &[4], [9; 16]), &mut buf)?;
    let (cc, _) = s.response(&buf[..k])?;
    if cc != 0 {
        bail!("Set Session Privilege Level: completion code 0x{cc:02x}");
    }
    Ok(s)
}

fn close(sock: &UdpSocket, s: &mut Session) -> Result<()> {
    let mut buf = [0u8; 1024];
    let sid = s.bmc_sid.to_le_bytes();
    let k = exchange(sock, &s.request(0x06, 0x3c, &sid, [9; 16]), &mut buf)?;
    let (cc, _) = s.response(&buf[..k])?;
    if cc != 0 {
        bail!("Close Session: completion code 0x{cc:02x}");
    }
    Ok(())
}

/// Runs `clients` threads for `d`, each doing `op` in a loop; `op` gets
/// its socket and the running count.
fn drive(
    bmc: SocketAddr,
    clients: usize,
    d: Duration,
    suite: u8,
    op: fn(&UdpSocket, &mut Option<Session>, u32, u8) -> Result<()>,
) -> Result<Figures> {
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            std::thread::spawn(
                move || -> Result<(Vec<Duration>, u64, Duration, Option<String>)> {
                    let sock = UdpSocket::bind("127.0.0.1:0")?;
                    sock.connect(bmc)?;
                    sock.set_read_timeout(Some(TIMEOUT))?;
                    let mut session = None;
                    let mut lat = Vec::new();
                    let mut errors = 0;
                    let mut first_error = None;
                    let cpu0 = thread_cpu();
                    let end = Instant::now() + d;
                    let mut n = (c as u32) << 20;
                    while Instant::now() < end {
                        n += 1;
                        let t = Instant::now();
                        match op(&sock, &mut session, n, suite) {
                            Ok(()) => lat.push(t.elapsed()),
                            Err(e) => {
                                errors += 1;
                                first_error.get_or_insert_with(|| format!("{e:#}"));
                                session = None;
                            }
                        }
                    }
                    Ok((lat, errors, thread_cpu() - cpu0, first_error))
                },
            )
        })
        .collect();
    let mut lat = Vec::new();
    let mut errors = 0;
    let mut cpu = Duration::ZERO;
    let mut first_error = None;
    for h in handles {
        let (l, e, c, f) = h
            .join()
            .map_err(|_| anyhow::anyhow!("a load thread panicked"))??;
        lat.extend(l);
        errors += e;
        cpu += c;
        first_error = first_error.or(f);
    }
    lat.sort();
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let ops = lat.len().max(1) as f64;
    Ok(Figures {
        per_sec: lat.len() as f64 / d.as_secs_f64(),
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        errors,
        generator_us: cpu.as_secs_f64() * 1e6 / ops,
        first_error,
    })
}

/// Get Chassis Status in an established session.
fn chassis_status(
    sock: &UdpSocket,
    session: &mut Option<Session>,
    n: u32,
    suite: u8,
) -> Result<()> {
    if session.is_none() {
        *session = Some(login(sock, n, suite)?);
    }
    let Some(s) = session.as_mut() else {
        bail!("no session");
    };
    let mut buf = [0u8; 1024];
    let k = exchange(sock, &s.request(0x00, 0x01, &[], [7; 16]), &mut buf)?;
    let (cc, data) = s.response(&buf[..k])?;
    if cc != 0 || data.is_empty() {
        bail!("Get Chassis Status: completion code 0x{cc:02x}");
    }
    Ok(())
}

/// A whole session as a one-shot client (ipmitool) has it: a socket of
/// its own, the setup, then Close Session sent without waiting (a BMC that
/// never answers it costs no timeout).
fn session_setup(sock: &UdpSocket, _: &mut Option<Session>, n: u32, suite: u8) -> Result<()> {
    let own = UdpSocket::bind("127.0.0.1:0")?;
    own.connect(sock.peer_addr()?)?;
    own.set_read_timeout(Some(TIMEOUT))?;
    let mut s = login(&own, n, suite)?;
    let sid = s.bmc_sid.to_le_bytes();
    own.send(&s.request(0x06, 0x3c, &sid, [9; 16]))?;
    Ok(())
}

fn row(what: &str, f: &Figures) -> String {
    let mut r = format!(
        "  {what:<50} {:>9.0}/s  p50 {:>6.2} ms  p99 {:>6.2} ms  errors {:>4}  generator {:>6.1} µs/op\n",
        f.per_sec, f.p50_ms, f.p99_ms, f.errors, f.generator_us
    );
    if let Some(e) = &f.first_error {
        r.push_str(&format!("    (first error: {e})\n"));
    }
    r
}

/// The rows for one BMC: cipher suite 3 (what virtualbmc serves), and for
/// shoal suite 17 too (what ipmitool and pyghmi pick).
fn measure(name: &str, bmc: SocketAddr, d: Duration, with_17: bool) -> Result<(String, [f64; 3])> {
    let one = chassis_status_load(bmc, 1, d, 3)?;
    let four = chassis_status_load(bmc, 4, d, 3)?;
    let setups = drive(bmc, 1, d, 3, session_setup)?;
    let mut text = [
        row(
            &format!("{name}: Get Chassis Status, 1 client, suite 3"),
            &one,
        ),
        row(
            &format!("{name}: Get Chassis Status, 4 clients, suite 3"),
            &four,
        ),
        row(
            &format!("{name}: session setup + close, 1 client, suite 3"),
            &setups,
        ),
    ]
    .concat();
    if with_17 {
        let one = chassis_status_load(bmc, 1, d, 17)?;
        let setups = drive(bmc, 1, d, 17, session_setup)?;
        text.push_str(&row(
            &format!("{name}: Get Chassis Status, 1 client, suite 17"),
            &one,
        ));
        text.push_str(&row(
            &format!("{name}: session setup + close, 1 client, suite 17"),
            &setups,
        ));
    }
    Ok((text, [one.per_sec, four.per_sec, setups.per_sec]))
}

fn free_udp_port() -> Result<u16> {
    Ok(UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// virtualbmc (vbmcd and one BMC on libvirt's test driver), stopped on drop
/// with its process group: vbmcd runs each BMC in a process it forks
/// (multiprocessing), which outlives a vbmcd that is only killed.
struct Vbmc {
    daemon: Child,
    /// Its config and state; removed after the daemon.
    _home: tempfile::TempDir,
}

impl Drop for Vbmc {
    fn drop(&mut self) {
        let group = self.daemon.id() as i32;
        // SAFETY: kill(2) takes two integers and touches none of this
        // process's memory. The group is the one `start_vbmc` made
        // (`process_group(0)`: its id is vbmcd's pid), and vbmcd is not
        // reaped yet (the wait below comes after), so the id is still
        // that group's.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.daemon.wait();
    }
}

fn start_vbmc(venv: &Path, port: u16, log: &Path) -> Result<Vbmc> {
    let home = tempfile::tempdir()?;
    let bin = |p: &str| -> PathBuf { venv.join("bin").join(p) };
    let dir = home.path().to_path_buf();
    let env = |c: &mut Command| {
        c.env("HOME", &dir)
            .env("VIRTUALBMC_CONFIG", dir.join("virtualbmc.conf"));
    };
    std::fs::create_dir_all(home.path().join("bmcs"))?;
    // vbmcd's control port (ZeroMQ, TCP).
    let control = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    std::fs::write(
        home.path().join("virtualbmc.conf"),
        format!(
            "[default]\nserver_port = {}\nconfig_dir = {}\npid_file = {}\n[log]\nlogfile = {}\n",
            control,
            home.path().join("bmcs").display(),
            home.path().join("vbmcd.pid").display(),
            log.display()
        ),
    )?;
    let mut c = Command::new(bin("vbmcd"));
    c.arg("--foreground")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    env(&mut c);
    let daemon = c.spawn().context("starting vbmcd")?;
    let vbmc = Vbmc {
        daemon,
        _home: home,
    };
    let run = |args: &[&str]| -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut c = Command::new(bin("vbmc"));
            c.args(args);
            env(&mut c);
            let out = c.output().context("running vbmc")?;
            if out.status.success() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("vbmc {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let port = port.to_string();
    run(&[
        "add",
        "test",
        "--libvirt-uri",
        "test:///default",
        "--address",
        "127.0.0.1",
        "--port",
        &port,
        "--username",
        USER,
        "--password",
        PASSWORD,
    ])?;
    run(&["start", "test"])?;
    Ok(vbmc)
}

/// Waits until the BMC at `bmc` answers a login.
fn wait_answering(bmc: SocketAddr) -> Result<()> {
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.connect(bmc)?;
    sock.set_read_timeout(Some(Duration::from_millis(300)))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut s) = login(&sock, 1, 3) {
            let _ = close(&sock, &mut s);
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no IPMI answer from {bmc}");
        }
    }
}

/// shoal-emulator `emulator` serving IPMI for one fake system on a free
/// loopback UDP port, as the IPMI rows start it; its log in `log`.
/// Returns once it answers a login.
pub(super) fn start_shoal(emulator: &Path, log: &Path) -> Result<(EmulatorProcess, SocketAddr)> {
    let port = free_udp_port()?;
    let mut cmd = Command::new(emulator);
    cmd.args([
        "--port",
        "0",
        "--fake-systems",
        "1",
        "--ipmi-port",
        &port.to_string(),
        // The account the drivers log in with (IPMI has no built-in one).
        "--ipmi-user",
        &crate::driver::ipmi_user_flag(),
    ])
    .env("RUST_LOG", "warn");
    let emu = EmulatorProcess::spawn_endpoints(cmd, log, 0)?;
    let shoal: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_answering(shoal)?;
    Ok((emu, shoal))
}

/// Get Chassis Status in an established session, `clients` clients,
/// cipher suite `suite`, for `d`: the row `measure` prints.
pub(super) fn chassis_status_load(
    bmc: SocketAddr,
    clients: usize,
    d: Duration,
    suite: u8,
) -> Result<Figures> {
    drive(bmc, clients, d, suite, chassis_status)
}

pub fn run(opts: &Options) -> Result<String> {
    progress("IPMI: shoal ...");
    let (emu, shoal) = start_shoal(&opts.emulator, &opts.out.join("shoal-ipmi.log"))?;
    let (mut text, shoal_rates) = measure("shoal", shoal, opts.duration, true)?;
    text.push_str(&format!(
        "  (shoal RSS {:.1} MiB after the IPMI rows)\n",
        emu.rss_kib().unwrap_or(0) as f64 / 1024.0
    ));
    drop(emu);
    let Some(venv) = &opts.vbmc_venv else {
        return Ok(format!(
            "IPMI over LAN (virtualbmc not measured: no --vbmc-venv)\n{text}"
        ));
    };
    progress("IPMI: virtualbmc ...");
    let port = free_udp_port()?;
    let vbmc = start_vbmc(venv, port, &opts.out.join("vbmc.log"))?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_answering(addr)?;
    let (vtext, vbmc_rates) = measure("virtualbmc", addr, opts.duration, false)?;
    drop(vbmc);
    text.push_str(&vtext);
    let ratio = |i: usize| shoal_rates[i] / vbmc_rates[i].max(f64::MIN_POSITIVE);
    text.push_str(&format!(
        "  shoal/virtualbmc, suite 3: {:.1}x (1 client), {:.1}x (4 clients), {:.1}x (session setups) [goal: 20x]\n",
        ratio(0),
        ratio(1),
        ratio(2)
    ));
    Ok(format!("IPMI over LAN, loopback\n{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A late answer meant for the socket that had the port before is
    /// skipped; the answer of the expected payload type is taken.
    #[test]
    fn exchange_skips_datagrams_of_another_payload_type() {
        let bmc = UdpSocket::bind("127.0.0.1:0").unwrap();
        let console = UdpSocket::bind("127.0.0.1:0").unwrap();
        console.connect(bmc.local_addr().unwrap()).unwrap();
        console
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let open = [0x06, 0x00, 0xff, 0x07, 0x06, 0x10, 0, 0];
        let server = std::thread::spawn(move || {
            let mut b = [0u8; 64];
            let (_, peer) = bmc.recv_from(&mut b).unwrap();
            // A Close Session answer (an IPMI message), then the Open
            // Session Response.
            bmc.send_to(&[0x06, 0x00, 0xff, 0x07, 0x06, 0x00, 1], peer)
                .unwrap();
            bmc.send_to(&[0x06, 0x00, 0xff, 0x07, 0x06, 0x11, 2], peer)
                .unwrap();
        });
        let mut buf = [0u8; 64];
        let k = exchange(&console, &open, &mut buf).unwrap();
        assert_eq!(&buf[5..k], &[0x11, 2]);
        server.join().unwrap();
    }
}
