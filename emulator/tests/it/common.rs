//! Test helpers: an in-process API client and a spawned emulator.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use shoal_emulator::auth::AuthStore;
use shoal_emulator::backend::fake::{FakeBackend, FakeOptions};
use shoal_emulator::config::{fake_systems, FeatureSet};
use shoal_emulator::model::System;
use shoal_emulator::{app, AppState};
use tower::ServiceExt;

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    /// The emulator's log lines while this request (or task) ran.
    pub log: Vec<String>,
    /// Where the log stood when the request was sent: a task it started
    /// logs from there on, even before its monitor is first read.
    pub log_from: usize,
}

/// Status, body and the emulator's own log lines: what an assertion on an
/// unexpected status prints (`assert_eq!(r.status, …, "{r}")`), since the
/// cause of a 500 is only in the log.
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.body)?;
        if self.log.is_empty() {
            return write!(f, "\n(the emulator logged nothing meanwhile)");
        }
        write!(f, "\nthe emulator's log meanwhile:")?;
        for l in &self.log {
            write!(f, "\n  {l}")?;
        }
        Ok(())
    }
}

/// The in-process emulator's log: one global subscriber for the test
/// process (nextest runs each test in a process of its own; under `cargo
/// test` lines of tests running at the same time can interleave), whose
/// lines a [`Reply`] takes from its request's start on.
pub mod log {
    use std::sync::{Mutex, OnceLock};

    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture(Vec<u8>);

    impl std::io::Write for Capture {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Drop for Capture {
        fn drop(&mut self) {
            let text = String::from_utf8_lossy(&self.0);
            let mut lines = LINES.lock().unwrap_or_else(|p| p.into_inner());
            lines.extend(text.lines().map(str::to_string));
        }
    }

    /// Installs the capturing subscriber (once; `RUST_LOG` or `info`).
    pub fn install() {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            let filter = tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
            let sub = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_ansi(false)
                .with_writer(|| Capture(Vec::new()))
                .finish();
            // Another subscriber set first keeps its place; lines then go there.
            let _ = tracing::subscriber::set_global_default(sub);
        });
    }

    /// Where the log is now.
    pub fn mark() -> usize {
        LINES.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The lines logged since `mark`.
    pub fn since(mark: usize) -> Vec<String> {
        let lines = LINES.lock().unwrap_or_else(|p| p.into_inner());
        lines.get(mark..).unwrap_or_default().to_vec()
    }
}

impl Reply {
    /// The MessageIds of an error body, without the registry prefix.
    pub fn message_ids(&self) -> Vec<String> {
        self.body["error"]["@Message.ExtendedInfo"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|m| {
                        m["MessageId"]
                            .as_str()
                            .unwrap_or("")
                            .rsplit('.')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
}

/// An in-process client of a fresh emulator.
pub struct Api {
    pub state: AppState,
    router: axum::Router,
    /// Extra headers sent with every request (auth).
    pub auth: Vec<(String, String)>,
}

impl Api {
    pub fn new(n: usize) -> Self {
        Self::with(
            fake_systems(n),
            FakeOptions::default(),
            AuthStore::open(),
            FeatureSet::Full,
        )
    }

    pub fn with(
        systems: Vec<System>,
        opts: FakeOptions,
        auth: AuthStore,
        features: FeatureSet,
    ) -> Self {
        let backend = FakeBackend::new(systems, opts).expect("backend");
        Self::on_with(std::sync::Arc::new(backend), auth, features)
    }

    /// The service of `state` (one built and then changed by a test).
    #[allow(dead_code)]
    pub fn of_state(state: AppState) -> Self {
        Api {
            router: app(state.clone()),
            state,
            auth: Vec::new(),
        }
    }

    /// An open, full-featured service whose one fake system (UEFI x86_64)
    /// has the profile `name`, out of `profiles`.
    #[allow(dead_code)]
    pub fn profiled(name: &str, profiles: shoal_emulator::profile::Profiles) -> Self {
        log::install();
        let mut systems = fake_systems(1);
        systems[0].profile = name.to_string();
        let backend = FakeBackend::new(systems, FakeOptions::default()).expect("backend");
        let state = AppState::new(
            std::sync::Arc::new(backend),
            AuthStore::open(),
            FeatureSet::Full,
            uuid::Uuid::nil(),
        )
        .with_profiles(profiles);
        Api {
            router: app(state.clone()),
            state,
            auth: Vec::new(),
        }
    }

    /// An open, full-featured endpoint of its own for one fake system
    /// (UEFI x86_64) with the profile `name`, under the profile's fixed
    /// Ids (`System.Embedded.1`, `iDRAC.Embedded.1`), as
    /// `--endpoint-per-system` serves it.
    #[allow(dead_code)]
    pub fn own_endpoint(name: &str) -> Self {
        Self::own_endpoint_with(name, shoal_emulator::profile::Profiles::default())
    }

    /// The same, the profile `name` taken from `profiles`.
    #[allow(dead_code)]
    pub fn own_endpoint_with(name: &str, profiles: shoal_emulator::profile::Profiles) -> Self {
        Self::own_endpoint_of(name, profiles, fake_systems(1).remove(0))
    }

    /// The same, for the machine `sys`.
    #[allow(dead_code)]
    pub fn own_endpoint_of(
        name: &str,
        profiles: shoal_emulator::profile::Profiles,
        sys: shoal_emulator::model::System,
    ) -> Self {
        use shoal_emulator::backend::view::{Member, View};
        log::install();
        let profile = profiles.get(name).expect("profile");
        let ids = profile.ids.clone().expect("fixed Ids");
        let mut systems = vec![sys];
        let mut seen = systems[0].clone();
        seen.profile = name.to_string();
        systems[0].profile = name.to_string();
        let (inner, sys_name) = (systems[0].id.clone(), systems[0].name.clone());
        let backend = FakeBackend::new(systems, FakeOptions::default()).expect("backend");
        let view = View::new(
            std::sync::Arc::new(backend),
            vec![Member {
                id: ids.system.clone(),
                inner,
                name: sys_name,
            }],
        );
        let state = AppState::new(
            std::sync::Arc::new(view),
            AuthStore::open(),
            FeatureSet::Full,
            uuid::Uuid::nil(),
        )
        .with_profiles(profiles)
        .serving_one(&seen);
        Api {
            router: app(state.clone()),
            state,
            auth: Vec::new(),
        }
    }

    /// An open, full-featured service in front of any backend.
    #[allow(dead_code)] // used by the libvirt tests only
    pub fn on(backend: std::sync::Arc<dyn shoal_emulator::backend::Backend>) -> Self {
        Self::on_with(backend, AuthStore::open(), FeatureSet::Full)
    }

    fn on_with(
        backend: std::sync::Arc<dyn shoal_emulator::backend::Backend>,
        auth: AuthStore,
        features: FeatureSet,
    ) -> Self {
        log::install();
        let state = AppState::new(backend, auth, features, uuid::Uuid::nil());
        Api {
            router: app(state.clone()),
            state,
            auth: Vec::new(),
        }
    }

    pub async fn req(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut b = Request::builder().method(method).uri(path);
        for (k, v) in &self.auth {
            b = b.header(k, v);
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let body = match body {
            Some(v) => {
                b = b.header("Content-Type", "application/json");
                Body::from(serde_json::to_vec(&v).unwrap())
            }
            None => Body::empty(),
        };
        self.raw(b.body(body).unwrap()).await
    }

    /// The response to `req`, its body not read (a stream).
    #[allow(dead_code)]
    pub async fn open(&self, req: Request<Body>) -> axum::response::Response {
        self.router.clone().oneshot(req).await.unwrap()
    }

    pub async fn raw(&self, req: Request<Body>) -> Reply {
        let mark = log::mark();
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
            log: log::since(mark),
            log_from: mark,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.req(Method::GET, path, None, &[]).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Reply {
        self.req(Method::PATCH, path, Some(body), &[]).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.req(Method::POST, path, Some(body), &[]).await
    }

    #[allow(dead_code)]
    pub async fn delete(&self, path: &str) -> Reply {
        self.req(Method::DELETE, path, None, &[]).await
    }

    /// `ComputerSystem.Reset`, which must succeed.
    #[allow(dead_code)] // used by the libvirt tests only
    pub async fn reset(&self, sys: &str, reset_type: &str) {
        let r = self
            .post(
                &format!("{sys}/Actions/ComputerSystem.Reset"),
                serde_json::json!({"ResetType": reset_type}),
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{reset_type}: {r}");
    }

    /// Polls a task monitor (or a Task that answers 202 while it runs)
    /// until the task is done; its final answer.
    #[allow(dead_code)]
    pub async fn finish_task(&self, monitor: &str, limit: std::time::Duration) -> Reply {
        self.finish_task_logged_from(monitor, limit, log::mark())
            .await
    }

    /// Polls the task that `started` (a 202) began until it is done; its
    /// final answer, with every line logged since `started` was sent.
    #[allow(dead_code)] // used by the libvirt tests only
    pub async fn finish(&self, started: &Reply, limit: std::time::Duration) -> Reply {
        let monitor = started.header("location").expect("a task monitor");
        self.finish_task_logged_from(&monitor, limit, started.log_from)
            .await
    }

    async fn finish_task_logged_from(
        &self,
        monitor: &str,
        limit: std::time::Duration,
        mark: usize,
    ) -> Reply {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let mut r = self.get(monitor).await;
            if r.status != StatusCode::ACCEPTED {
                // What the task logged in the background, too.
                r.log = log::since(mark);
                return r;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "task {monitor} not done after {limit:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The URL of the n-th system.
    pub async fn system(&self, n: usize) -> String {
        let r = self.get("/redfish/v1/Systems").await;
        r.body["Members"][n]["@odata.id"]
            .as_str()
            .expect("system")
            .to_string()
    }
}

/// An emulator binary running on a free port; killed on drop. Its
/// `TMPDIR` is its own (sushy-tools' default state directory is under
/// it), so no two tests share a state file.
pub struct Spawned {
    pub child: Child,
    pub url: String,
    _tmp: tempfile::TempDir,
}

impl Spawned {
    pub fn start(args: &[&str]) -> Self {
        Self::start_lines(args, 1).0
    }

    /// Starts the binary and reads its first `n` stdout lines (the main
    /// service's, then one per endpoint of its own).
    pub fn start_lines(args: &[&str], n: usize) -> (Self, Vec<String>) {
        Self::start_env(args, &[], n)
    }

    /// As [`Spawned::start_lines`], with these environment variables.
    pub fn start_env(args: &[&str], env: &[(&str, &str)], n: usize) -> (Self, Vec<String>) {
        Self::start_with(args, env, n, Stdio::inherit())
    }

    /// As [`Spawned::start_env`], its log (stderr) to `stderr`.
    pub fn start_with(
        args: &[&str],
        env: &[(&str, &str)],
        n: usize,
        stderr: Stdio,
    ) -> (Self, Vec<String>) {
        let tmp = tempfile::tempdir().expect("a TMPDIR");
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("shoal-emulator"))
            .args(["--port", "0"])
            .args(args)
            .env("RUST_LOG", "warn")
            .env("TMPDIR", tmp.path())
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn shoal-emulator");
        let stdout = child.stdout.take().unwrap();
        let mut reader = BufReader::new(stdout);
        let mut lines = Vec::new();
        for _ in 0..n {
            let mut line = String::new();
            reader.read_line(&mut line).expect("read banner");
            lines.push(line.trim().to_string());
        }
        let url = lines[0].rsplit(' ').next().unwrap_or("").to_string();
        assert!(url.starts_with("http"), "unexpected banner {lines:?}");
        (
            Spawned {
                child,
                url,
                _tmp: tmp,
            },
            lines,
        )
    }

    /// SIGTERM, then wait: the emulator flushes its state on the way out.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id() as i32;
        // `kill` from the command line: no signal crate needed for one SIGTERM.
        Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        // Waited for here; the drop's kill then finds it gone.
        self.child.wait().unwrap()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bcrypt htpasswd file in `dir` with one admin account.
pub fn htpasswd(dir: &std::path::Path, user: &str, pass: &str, cost: u32) -> std::path::PathBuf {
    let p = dir.join("htpasswd");
    std::fs::write(
        &p,
        format!("{user}:{}\n", bcrypt::hash(pass, cost).unwrap()),
    )
    .unwrap();
    p
}

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files.
pub fn certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, ck.cert.pem()).unwrap();
    std::fs::write(&k, ck.key_pair.serialize_pem()).unwrap();
    (c, k)
}

/// A file a test needs from the host (`ci/test` installs it). Missing: a
/// loud skip on a developer's machine, a failure in CI (`CI` set).
pub fn required(
    path: impl Into<std::path::PathBuf>,
    installed_by: &str,
) -> Option<std::path::PathBuf> {
    let path = path.into();
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "{} is missing ({installed_by}; run ci/test)",
        path.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// A program of the test venv that `ci/test` builds (`SHOAL_TEST_VENV`).
pub fn venv_program(name: &str) -> Option<std::path::PathBuf> {
    let venv = std::env::var_os("SHOAL_TEST_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    required(
        venv.join("bin").join(name),
        "the test venv, SHOAL_TEST_VENV",
    )
}

/// A tiny HTTP/1.1 file server on 127.0.0.1 for tests: GET of a known
/// path answers 200 with its bytes, anything else 404. Runs until the
/// test process ends.
pub fn file_server(files: Vec<(&'static str, Vec<u8>)>) -> String {
    file_server_on(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), files)
}

/// The same on a listener of the caller's (one in a network namespace).
pub fn file_server_on(
    listener: std::net::TcpListener,
    files: Vec<(&'static str, Vec<u8>)>,
) -> String {
    use std::io::{Read, Write};
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&req)
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            let path = line.split_whitespace().nth(1).unwrap_or("");
            let _ = match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|_| s.write_all(body)),
                None => s.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    format!("http://{addr}")
}

/// Bytes that look like an ISO 9660 image (the "CD001" descriptor).
#[allow(dead_code)]
pub fn fake_iso(len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(0x8010)];
    b[0x8001..0x8006].copy_from_slice(b"CD001");
    b
}

/// A UDP port free now on 127.0.0.1.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// ipmitool is there (`ci/test` installs it; missing: as `required`).
pub fn ipmitool_installed() -> bool {
    required("/usr/bin/ipmitool", "Debian package ipmitool").is_some()
}

/// Writes into `dir` the user profile `name`: the built-in profile `base`
/// renamed, each `(from, to)` of `edits` replaced once (each must be
/// there), then `extra` appended (the `[[sources]]` row its quirks need).
pub fn derived_profile(
    dir: &std::path::Path,
    base: &str,
    name: &str,
    edits: &[(&str, &str)],
    extra: &str,
) {
    let path = format!("{}/profiles/{base}.toml", env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(path).unwrap();
    let rename = (format!("name = \"{base}\""), format!("name = \"{name}\""));
    let edits =
        std::iter::once((rename.0.as_str(), rename.1.as_str())).chain(edits.iter().copied());
    for (from, to) in edits {
        assert!(text.contains(from), "{base}.toml has no {from:?}");
        text = text.replacen(from, to, 1);
    }
    std::fs::write(dir.join(format!("{name}.toml")), text + "\n" + extra).unwrap();
}

/// The generic profile as `quick`, whose updates take fractions of a
/// second and whose BMC is back in a second or two, plus `extra`.
pub fn quick_update_profile(dir: &std::path::Path, update: &str, extra: &str) {
    let row =
        "[[sources]]\nquirks = [\"update\"]\nsynthetic = true\nshows = \"a test's quick BMC\"\n";
    derived_profile(
        dir,
        "generic",
        "quick",
        &[],
        &format!("[update]\n{update}{extra}{row}"),
    );
}

/// A GET with curl (a client apart from the emulator's own), as JSON.
pub fn curl_json(url: &str) -> serde_json::Value {
    let out = std::process::Command::new("curl")
        .args(["-sS", url])
        .output()
        .expect("curl");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Id of the first member of the Systems collection of the service at
/// `url` (its `.../redfish/v1/` or its base).
pub fn first_system_id(url: &str) -> String {
    let base = url.trim_end_matches('/').trim_end_matches("/redfish/v1");
    let systems = curl_json(&format!("{base}/redfish/v1/Systems"));
    systems["Members"][0]["@odata.id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// A spawned emulator whose one system `name` (on `profile`) is served on
/// an endpoint of its own at `listen` (`127.0.4.41:0`), with the vendor's
/// fixed Ids; `args` go to the command line too. Returns the process and
/// the endpoint's URL (`…/redfish/v1/`).
pub fn endpoint_emulator(
    dir: &std::path::Path,
    name: &str,
    profile: &str,
    listen: &str,
    args: &[&str],
) -> (Spawned, String) {
    let cfg = dir.join(format!("endpoint-{name}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[[systems]]\nname = \"{name}\"\nprofile = \"{profile}\"\n\
             [[endpoints]]\nlisten = \"{listen}\"\nsystems = [\"{name}\"]\n"
        ),
    )
    .unwrap();
    let mut all = vec!["--config", cfg.to_str().unwrap()];
    all.extend_from_slice(args);
    let (emu, lines) = Spawned::start_lines(&all, 2);
    let url = lines[1].rsplit(' ').next().unwrap_or("").to_string();
    (emu, url)
}

/// The JSON body and status of a request to the emulator.
pub fn call(method: &str, url: &str, body: &str) -> (u16, serde_json::Value) {
    call_as(method, url, None, (!body.is_empty()).then_some(body))
}

/// The status and JSON body of a request, as `user:password` when given
/// (TLS unchecked, as suites set their emulator's `verify_ca` off).
pub fn call_as(
    method: &str,
    url: &str,
    user: Option<&str>,
    body: Option<&str>,
) -> (u16, serde_json::Value) {
    let mut c = std::process::Command::new("curl");
    c.args(["-s", "-k", "-X", method, "-w", "\n%{http_code}"]);
    if let Some(u) = user {
        c.args(["-u", u]);
    }
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "-d", b]);
    }
    let out = c.arg(url).output().expect("curl (ci/test installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}
