//! `shoal-harness lab up|status|down`: a lab that stays up for interactive
//! work. `up` starts N UEFI machines (each with a blank disk) on an
//! isolated network with DHCP and a boot file server, one emulator as
//! their BMCs (Redfish on the host's loopback, Basic auth with a password
//! made for the lab, the same service reachable on the lab network), a
//! virtual media file server the BMCs download from, and writes
//! `lab.json` plus the inventory a user feeds their tools
//! (`inventory.rs`). It returns once all of that answers, leaving a
//! process (`--foreground`) that keeps the lab until `lab down` (or a
//! signal) stops everything it started, by pid.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::inventory::{Machine, State};
use super::{wait_until, Lab, NetSpec, Uefi};

#[derive(clap::Subcommand)]
pub enum LabCommand {
    /// Start machines with their BMCs, lab network, DHCP and image server,
    /// and write the inventory (Ironic's enrollment file, metal3's
    /// BareMetalHosts); returns once the lab is ready.
    Up(UpArgs),
    /// The lab's addresses and account, and each machine's power state.
    Status(DirArg),
    /// Stop the lab and everything it started.
    Down(DirArg),
}

#[derive(clap::Args, Clone)]
pub struct DirArg {
    /// The lab's folder: its state (`lab.json`), logs, disks, inventory.
    #[arg(long, env = "SHOAL_LAB_DIR", default_value = "shoal-lab")]
    pub dir: PathBuf,
}

#[derive(clap::Args, Clone)]
pub struct UpArgs {
    #[command(flatten)]
    pub at: DirArg,
    /// How many machines (1 to 32).
    #[arg(long, env = "SHOAL_LAB_MACHINES", default_value_t = 2)]
    pub machines: u8,
    #[arg(long, env = "SHOAL_LAB_MEMORY_MIB", default_value_t = 1024)]
    pub memory_mib: u64,
    #[arg(long, env = "SHOAL_LAB_CPUS", default_value_t = 1)]
    pub cpus: u32,
    /// Each machine's blank disk (qcow2, grows as written).
    #[arg(long, env = "SHOAL_LAB_DISK_GIB", default_value_t = 10)]
    pub disk_gib: u64,
    /// The BMCs' Redfish port on 127.0.0.1 (and on the lab network).
    #[arg(long, env = "SHOAL_LAB_PORT", default_value_t = 8000)]
    pub port: u16,
    /// The BMCs' account name (its password is made for the lab).
    #[arg(long, env = "SHOAL_LAB_USER", default_value = "admin")]
    pub user: String,
    /// The BMCs' behaviour profile (`shoal-emulator --profile`).
    #[arg(long, env = "SHOAL_LAB_PROFILE")]
    pub profile: Option<String>,
    /// The folder served to the machines and to the BMCs' virtual media
    /// (default: the lab folder's `www/`).
    #[arg(long, env = "SHOAL_LAB_SERVE")]
    pub serve: Option<PathBuf>,
    /// The shoal-emulator binary (built with libvirt); default: beside
    /// this one.
    #[arg(long, env = "SHOAL_EMULATOR")]
    pub emulator: Option<PathBuf>,
    /// Keep the lab in this process until a signal (what `up` runs in the
    /// background).
    #[arg(long, hide = true)]
    pub foreground: bool,
}

/// The lab network's index: 198.18.1.0/24.
const NET: u8 = 1;

impl LabCommand {
    pub fn run(self) -> Result<ExitCode> {
        match self {
            LabCommand::Up(a) if a.foreground => keep(&a).map(|()| ExitCode::SUCCESS),
            LabCommand::Up(a) => up(a),
            LabCommand::Status(d) => status(&absolute(&d.dir)?),
            LabCommand::Down(d) => down(&absolute(&d.dir)?),
        }
    }
}

fn absolute(dir: &Path) -> Result<PathBuf> {
    Ok(std::path::absolute(dir)?)
}

fn state_file(dir: &Path) -> PathBuf {
    dir.join("lab.json")
}

/// The lab's state, if `up` wrote one.
pub fn read_state(dir: &Path) -> Result<Option<State>> {
    match std::fs::read(state_file(dir)) {
        Ok(b) => {
            Ok(Some(serde_json::from_slice(&b).with_context(|| {
                format!("{}", state_file(dir).display())
            })?))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether `pid` is a live shoal-harness (not a process that took its
/// number since).
fn alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("shoal-harness"))
}

/// Starts the keeper in the background and waits until it wrote the
/// lab's state (or died, its log's end then shown).
fn up(a: UpArgs) -> Result<ExitCode> {
    let dir = absolute(&a.at.dir)?;
    if !(1..=32).contains(&a.machines) {
        bail!("--machines: {} is not between 1 and 32", a.machines);
    }
    if let Some(s) = read_state(&dir)? {
        if alive(s.pid) {
            bail!(
                "a lab is up in {} (pid {}); `shoal-harness lab down --dir {}` first",
                dir.display(),
                s.pid,
                dir.display()
            );
        }
        std::fs::remove_file(state_file(&dir))?;
    }
    std::fs::create_dir_all(&dir)?;
    let log_path = dir.join("lab.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["lab", "up", "--foreground", "--dir"]).arg(&dir);
    cmd.args(["--machines", &a.machines.to_string()])
        .args(["--memory-mib", &a.memory_mib.to_string()])
        .args(["--cpus", &a.cpus.to_string()])
        .args(["--disk-gib", &a.disk_gib.to_string()])
        .args(["--port", &a.port.to_string()])
        .args(["--user", &a.user]);
    if let Some(p) = &a.profile {
        cmd.args(["--profile", p]);
    }
    if let Some(s) = &a.serve {
        cmd.arg("--serve").arg(absolute(s)?);
    }
    cmd.arg("--emulator").arg(emulator(a.emulator.clone())?);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    eprintln!(
        "lab: starting {} machine(s) in {}",
        a.machines,
        dir.display()
    );
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "the lab did not come up ({st}); {}:\n{}",
                log_path.display(),
                tail.join("\n")
            );
        }
        if read_state(&dir)?.is_some_and(|s| s.pid == child.id()) {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("the lab is not up after 600 s; see {}", log_path.display());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("lab: up in {:.1} s", started.elapsed().as_secs_f64());
    status(&dir)
}

/// The emulator binary: the one named, else the one beside this binary.
fn emulator(named: Option<PathBuf>) -> Result<PathBuf> {
    let p = match named {
        Some(p) => p,
        None => std::env::current_exe()?.with_file_name("shoal-emulator"),
    };
    if !p.is_file() {
        bail!("--emulator: {} is not there (build it: cargo build -p shoal-emulator --features libvirt)", p.display());
    }
    absolute(&p)
}

/// A password made for this lab: 16 bytes of the kernel's randomness.
fn password() -> Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(hex::encode(b))
}

/// The keeper: builds the lab, writes its state and inventory, and keeps
/// it until a signal; then stops everything and removes the state.
fn keep(a: &UpArgs) -> Result<()> {
    let dir = absolute(&a.at.dir)?;
    let rt = tokio::runtime::Runtime::new()?;
    let _in_rt = rt.enter();
    let mut lab = Lab::start(&dir.join("daemons"))?;
    let macs: Vec<String> = (1..=a.machines)
        .map(|i| format!("52:54:00:5e:{NET:02x}:{i:02x}"))
        .collect();
    let spec = NetSpec {
        dnsmasq_log: Some(dir.join("dnsmasq.log")),
        hosts: macs
            .iter()
            .zip(10u8..)
            .map(|(m, h)| (m.clone(), h))
            .collect(),
        ..NetSpec::default()
    };
    let net = lab.network(NET, &spec)?;
    let www = match &a.serve {
        Some(s) => s.clone(),
        None => dir.join("www"),
    };
    std::fs::create_dir_all(&www)?;
    lab.file_server(&net, &www, &dir.join("http.log"), None)?;
    let media_server = lab.bmc_file_server(&www, &dir.join("bmc-http.log"))?;
    let machines = define_machines(&mut lab, &net, a, &dir, &macs)?;
    let password = password()?;
    let htpasswd = dir.join("htpasswd");
    let line = format!("{}:{}\n", a.user, bcrypt::hash(&password, 10)?);
    private(&htpasswd, line.as_bytes())?;
    let mut cmd = Command::new(emulator(a.emulator.clone())?);
    cmd.args(["--libvirt-uri", super::SYSTEM_URI, "-i", "127.0.0.1"])
        .args(["--port", &a.port.to_string()])
        .arg("--auth-file")
        .arg(&htpasswd)
        .arg("--media-cache")
        .arg(dir.join("media"))
        .args(["--media-allow-net", "127.0.0.0/8"]);
    for m in &machines {
        cmd.args(["--libvirt-domain", &m.name]);
    }
    if let Some(p) = &a.profile {
        cmd.args(["--profile", p]);
    }
    let bmc = crate::emulator::EmulatorProcess::spawn(cmd, &dir.join("emulator.log"))?;
    let in_lab = into_lab(
        &lab.ns,
        std::net::SocketAddr::new(net.host.into(), a.port),
        a.port,
    )?;
    let state = State {
        pid: std::process::id(),
        namespace: lab.ns.clone(),
        redfish: bmc.url.clone(),
        redfish_in_lab: in_lab,
        boot_server: net.boot_url(),
        served: www.display().to_string(),
        media_server,
        username: a.user.clone(),
        password,
        machines,
    };
    write_inventory(&dir, &state)?;
    eprintln!(
        "lab: ready; `shoal-harness lab down --dir {}` stops it",
        dir.display()
    );
    rt.block_on(super::interrupted());
    eprintln!("lab: stopping");
    let _ = std::fs::remove_file(state_file(&dir));
    drop(bmc);
    drop(lab);
    Ok(())
}

/// The machines: a blank qcow2 disk each, UEFI, on the lab network.
fn define_machines(
    lab: &mut Lab,
    net: &super::Net,
    a: &UpArgs,
    dir: &Path,
    macs: &[String],
) -> Result<Vec<Machine>> {
    for sub in ["disks", "serial"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let mut out = Vec::new();
    for (i, mac) in (1..).zip(macs) {
        let name = format!("node-{i}");
        let disk = dir.join("disks").join(format!("{name}.qcow2"));
        let st = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(&disk)
            .arg(format!("{}G", a.disk_gib))
            .status()
            .context("qemu-img (Debian package qemu-utils)")?;
        if !st.success() {
            bail!("qemu-img create {}: {st}", disk.display());
        }
        let serial = dir.join("serial").join(format!("{name}.log"));
        let uuid = lab.define_uefi(&Uefi {
            name: &name,
            net,
            mac,
            memory_mib: a.memory_mib,
            cpus: a.cpus,
            serial: &serial,
            https_cacerts: None,
            disk: Some(&disk),
        })?;
        out.push(Machine {
            name,
            system_id: uuid,
            mac: mac.clone(),
            memory_mib: a.memory_mib,
            cpus: a.cpus,
            disk_gib: a.disk_gib,
            serial: serial.display().to_string(),
        });
    }
    Ok(out)
}

/// The BMCs' service on the lab network too: a listener at `at` inside
/// the namespace passing each connection to the host's loopback `port`.
fn into_lab(ns: &str, at: std::net::SocketAddr, port: u16) -> Result<String> {
    let listener = tokio::net::TcpListener::from_std(crate::netns::bind_in(ns, at)?)?;
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                if let Ok(mut out) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
    Ok(format!("http://{at}"))
}

/// Writes `path` whole (a rename), readable by its owner only: what the
/// lab writes holds its account.
fn private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    std::io::Write::write_all(&mut f, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// The inventory files, then `lab.json`, whose presence says the lab is
/// ready.
fn write_inventory(dir: &Path, s: &State) -> Result<()> {
    let nodes = serde_json::to_vec_pretty(&s.ironic_nodes())?;
    private(&dir.join("ironic-nodes.json"), &nodes)?;
    let hosts = s.baremetal_hosts(&s.redfish_in_lab);
    private(&dir.join("baremetalhosts.yaml"), hosts.as_bytes())?;
    private(&state_file(dir), &serde_json::to_vec_pretty(s)?)
}

/// What `lab status` prints: the addresses, the account, the inventory
/// and each machine's power state as its BMC tells it.
fn status(dir: &Path) -> Result<ExitCode> {
    let Some(s) = read_state(dir)? else {
        println!(
            "no lab is up in {} (`shoal-harness lab up` starts one)",
            dir.display()
        );
        return Ok(ExitCode::FAILURE);
    };
    if !alive(s.pid) {
        println!(
            "the lab in {} is gone (its process {} ended); `shoal-harness lab down --dir {}` cleans up",
            dir.display(),
            s.pid,
            dir.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "lab in {} (pid {}), namespace {}",
        dir.display(),
        s.pid,
        s.namespace
    );
    println!(
        "  BMCs (Redfish): {} on the host, {} on the lab network",
        s.redfish, s.redfish_in_lab
    );
    println!("  account: {} / {}", s.username, s.password);
    println!(
        "  boot server: {} (inside the namespace), serving {}",
        s.boot_server, s.served
    );
    println!(
        "  virtual media server: {}/ (what the BMCs download)",
        s.media_server
    );
    println!(
        "  tools on the lab network: ip netns exec {} COMMAND",
        s.namespace
    );
    println!(
        "  inventory: {} (baremetal create), {} (kubectl apply)",
        dir.join("ironic-nodes.json").display(),
        dir.join("baremetalhosts.yaml").display()
    );
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:{}", s.username, s.password)
        )
    );
    println!(
        "  {:<8} {:<38} {:<19} {:<8} serial log",
        "machine", "system", "MAC", "power"
    );
    for m in &s.machines {
        let url = format!("{}/redfish/v1/Systems/{}", s.redfish, m.system_id);
        let power = ureq::get(&url)
            .header("Authorization", &auth)
            .call()
            .ok()
            .and_then(|r| r.into_body().read_to_string().ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["PowerState"].as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        println!(
            "  {:<8} {:<38} {:<19} {:<8} {}",
            m.name, m.system_id, m.mac, power, m.serial
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Signals the keeper and waits until it has stopped everything.
fn down(dir: &Path) -> Result<ExitCode> {
    let Some(s) = read_state(dir)? else {
        println!("no lab is up in {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    };
    if alive(s.pid) {
        // SAFETY: kill(2) on a pid this lab's state names, checked above
        // to be a shoal-harness; it touches no memory.
        unsafe { libc::kill(s.pid as i32, libc::SIGTERM) };
        if wait_until(Duration::from_secs(120), || !alive(s.pid)).is_none() {
            bail!("the lab's process {} did not stop in 120 s", s.pid);
        }
    }
    // A keeper that died without cleaning up leaves its namespace.
    if read_state(dir)?.is_some() {
        crate::netns::delete(&s.namespace);
        std::fs::remove_file(state_file(dir))?;
    }
    println!("lab in {} is down", dir.display());
    Ok(ExitCode::SUCCESS)
}
