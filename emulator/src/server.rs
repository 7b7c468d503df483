//! Builds the service from [`Settings`] and runs it over HTTP or HTTPS
//! (rustls, TLS 1.2 and 1.3) until SIGINT/SIGTERM, then flushes the backend.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::api::mockup::attach;
use crate::api::{app, AppState};
use crate::auth::AuthStore;
use crate::backend::fake::FakeBackend;
use crate::backend::view::{Member, View};
use crate::backend::Backend;
use crate::cli::{BackendChoice, Settings};
use crate::faults::Faults;
use crate::model::SystemRef;

/// A service root's UUID: stable for a given set of systems.
fn uuid_of<'a>(ids: impl Iterator<Item = &'a str>) -> Uuid {
    let mut h = Sha256::new();
    for id in ids {
        h.update(id.as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_random_bytes(b).into_uuid()
}

fn backend(settings: &Settings) -> Result<Arc<dyn Backend>> {
    match &settings.backend {
        BackendChoice::Fake => Ok(Arc::new(
            FakeBackend::new(settings.systems.clone(), settings.fake.clone())
                .context("cannot load the state file")?,
        )),
        #[cfg(feature = "libvirt")]
        BackendChoice::Libvirt {
            profile,
            domain_profiles,
            uris,
            allow,
            http_boot,
            graceful_timeout,
            media,
            media_pool,
            loaders,
        } => {
            let opts = crate::backend::libvirt::LibvirtOptions {
                profile: profile.clone(),
                domain_profiles: domain_profiles.clone(),
                uris: uris.clone(),
                allow: allow.clone(),
                http_boot: *http_boot,
                graceful_timeout: *graceful_timeout,
                media: media.clone(),
                media_pool: media_pool.clone(),
                nvram_dir: None,
                ipmi_in_band_dir: settings.ipmi.in_band_dir.clone(),
                loaders: loaders.clone(),
            };
            Ok(Arc::new(
                crate::backend::libvirt::LibvirtBackend::connect(opts)
                    .map_err(anyhow::Error::msg)?,
            ))
        }
        BackendChoice::Ironic { cloud, profile } => Ok(Arc::new(
            crate::backend::ironic::IronicBackend::connect(cloud, profile.clone())
                .map_err(anyhow::Error::msg)?,
        )),
        #[cfg(not(feature = "libvirt"))]
        BackendChoice::Libvirt { .. } => {
            anyhow::bail!("this shoal-emulator was built without the `libvirt` feature (cargo build --features libvirt)")
        }
    }
}

/// The application state for these settings: the main root's, over all.
pub fn state(settings: &Settings) -> Result<AppState> {
    let backend = backend(settings)?;
    let mut st = AppState::new(
        backend,
        auth_store(settings)?,
        settings.feature_set,
        uuid_of(settings.systems.iter().map(|s| s.id.as_str())),
    )
    .with_profiles(settings.profiles.clone())
    .with_faults(Arc::new(Faults::new(settings.faults.clone())));
    st.core.power_off_disabled = settings.power_off_disabled;
    st.core.boot_device_ignored = settings.boot_device_ignored;
    st.media_ip_family = settings.media_ip_family;
    st.updates = Arc::new(settings.updates.clone());
    st.enclosures = Arc::new(
        settings
            .enclosures
            .iter()
            .map(|(e, led)| {
                crate::model::Enclosure::new(e.id.clone(), e.name.clone(), e.uuid, *led)
            })
            .collect(),
    );
    // What an image fetch checks by default: the fake without
    // --fake-fetch-media fetches nothing, so checks nothing.
    st.media_verifies = match &settings.backend {
        BackendChoice::Fake => settings
            .fake
            .fetch_media
            .as_ref()
            .is_some_and(|m| !m.insecure),
        BackendChoice::Libvirt { media, .. } => !media.insecure,
        BackendChoice::Ironic { .. } => true,
    };
    Ok(st)
}

/// Accounts and sessions: each endpoint has its own, from the same file.
fn auth_store(settings: &Settings) -> Result<AuthStore> {
    Ok(match &settings.auth_file {
        Some(p) => AuthStore::from_htpasswd(p)?,
        None => AuthStore::open(),
    })
}

/// One listening service: its address and state.
pub struct Endpoint {
    pub listen: SocketAddr,
    pub state: AppState,
}

/// Splits the systems between the main service root and the endpoints of
/// their own (`[[endpoints]]`, `--endpoint-per-system`). Every system is in
/// one service; an endpoint of one system whose profile has fixed Ids
/// shows them. Without endpoints, the main state is returned as it is.
pub async fn endpoints(settings: &Settings, mut main: AppState) -> Result<Vec<Endpoint>> {
    let plan = &settings.endpoints;
    if plan.listed.is_empty() && plan.per_system.is_none() {
        let refs = main.core.backend.systems().await?;
        main.root_profile = root_profile_of(&main, &refs).await?;
        let replayed = attach(&mut main, settings.mockup.as_ref()).await;
        replayed.map_err(anyhow::Error::msg)?;
        main.core.faults.register(
            refs.into_iter().map(|r| r.name).collect(),
            main.auth.clone(),
        );
        return Ok(vec![Endpoint {
            listen: settings.listen,
            state: main.with_events(settings.events.clone()),
        }]);
    }
    let mut all = vec![Endpoint {
        listen: settings.listen,
        state: main.clone(),
    }];
    // Each endpoint's core announces the changes of its own view.
    let backend = main.core.machines().clone();
    let refs = backend.systems().await?;
    let mut taken = std::collections::HashSet::new();
    let mut groups = listed_groups(settings, &*backend, &mut taken).await?;
    if let Some(first) = plan.per_system {
        groups.extend(per_system_groups(first, &refs, &taken)?);
        taken.extend(refs.iter().map(|r| r.id.clone()));
    }
    let rest: Vec<Member> = refs
        .iter()
        .filter(|r| !taken.contains(&r.id))
        .map(|r| member(r, r.id.clone()))
        .collect();
    main.core.faults.register(
        rest.iter().map(|m| m.name.clone()).collect(),
        main.auth.clone(),
    );
    all[0]
        .state
        .core
        .set_view(Arc::new(View::new(backend.clone(), rest)));
    let rest_refs: Vec<_> = refs
        .iter()
        .filter(|r| !taken.contains(&r.id))
        .cloned()
        .collect();
    all[0].state.root_profile = root_profile_of(&main, &rest_refs).await?;
    for (i, (key, listen, refs)) in groups.into_iter().enumerate() {
        let mut state = endpoint_state(settings, &main, &key, &refs).await?;
        let mockup = settings.endpoints.mockups.get(i).and_then(Option::as_ref);
        let replayed = attach(&mut state, mockup).await;
        replayed.map_err(|e| anyhow::anyhow!("{key}: {e}"))?;
        all.push(Endpoint { listen, state });
    }
    // Each endpoint's EventService, shaped by the profile its root speaks for.
    for e in &mut all {
        e.state = e.state.clone().with_events(settings.events.clone());
    }
    Ok(all)
}

/// An endpoint's systems: where it listens and the key that names it.
type Group = (String, SocketAddr, Vec<SystemRef>);

/// A system of a view, under the Id the view gives it.
fn member(r: &SystemRef, id: String) -> Member {
    Member {
        id,
        inner: r.id.clone(),
        name: r.name.clone(),
    }
}

/// The `[[endpoints]]` listed, each system found by name or UUID and in
/// one endpoint only (`taken`), none empty.
async fn listed_groups(
    settings: &Settings,
    backend: &dyn Backend,
    taken: &mut std::collections::HashSet<String>,
) -> Result<Vec<Group>> {
    let mut groups = Vec::new();
    for (key, e) in &settings.endpoints.listed {
        let mut members = Vec::new();
        for (j, name) in e.systems.iter().enumerate() {
            let r = backend
                .find(name)
                .await?
                .with_context(|| format!("{key}.systems[{j}]: no system {name:?}"))?;
            if !taken.insert(r.id.clone()) {
                anyhow::bail!("{key}.systems[{j}]: {name:?} already has an endpoint");
            }
            members.push(r);
        }
        if members.is_empty() {
            anyhow::bail!("{key}.systems: an endpoint serves at least one system");
        }
        groups.push((key.clone(), e.listen, members));
    }
    Ok(groups)
}

/// `--endpoint-per-system`: each system not `taken` on an endpoint of its
/// own, at consecutive IPv4 addresses from `first`.
fn per_system_groups(
    first: SocketAddr,
    refs: &[SystemRef],
    taken: &std::collections::HashSet<String>,
) -> Result<Vec<Group>> {
    let std::net::IpAddr::V4(v4) = first.ip() else {
        anyhow::bail!("--endpoint-per-system: {first} is not an IPv4 address");
    };
    let mut groups = Vec::new();
    let mut n = u32::from(v4);
    for r in refs.iter().filter(|r| !taken.contains(&r.id)) {
        let addr = SocketAddr::new(std::net::Ipv4Addr::from(n).into(), first.port());
        groups.push((
            format!("--endpoint-per-system ({})", r.name),
            addr,
            vec![r.clone()],
        ));
        n = n
            .checked_add(1)
            .context("--endpoint-per-system: out of IPv4 addresses")?;
    }
    Ok(groups)
}

/// The state of an endpoint of its own: a view of its systems (under the
/// profile's fixed Ids when it serves one system that has them), its own
/// accounts, and a service UUID derived from its systems.
async fn endpoint_state(
    settings: &Settings,
    main: &AppState,
    key: &str,
    refs: &[SystemRef],
) -> Result<AppState> {
    let backend = main.core.machines();
    let one = match refs {
        [one] => Some(backend.system(&one.id).await?),
        _ => None,
    };
    let fixed = one.as_ref().and_then(|sys| main.profile(sys).ids.clone());
    let members = refs
        .iter()
        .map(|r| {
            let id = fixed.as_ref().map_or(r.id.clone(), |f| f.system.clone());
            member(r, id)
        })
        .collect::<Vec<_>>();
    let mut state = AppState::new(
        Arc::new(View::new(backend.clone(), members)),
        auth_store(settings).with_context(|| key.to_string())?,
        settings.feature_set,
        uuid_of(refs.iter().map(|r| r.id.as_str())),
    )
    .with_profiles((*main.core.profiles).clone())
    .with_faults(main.core.faults.clone())
    .with_endpoint_systems(refs.iter().map(|r| r.name.clone()).collect());
    state.core.power_off_disabled = main.core.power_off_disabled;
    state.core.boot_device_ignored = main.core.boot_device_ignored;
    state.media_ip_family = main.media_ip_family;
    state.updates = main.updates.clone();
    main.core.faults.register(
        refs.iter().map(|r| r.name.clone()).collect(),
        state.auth.clone(),
    );
    Ok(match &one {
        Some(sys) => state.serving_one(sys),
        None => {
            state.root_profile = root_profile_of(main, refs).await?;
            state
        }
    })
}

/// The profile a service with these systems speaks for at its root
/// (`ServiceRoot.Vendor`, the links' form): their profile when they share
/// one, as a real BMC (one vendor's) has; else, and with no systems, the
/// generic one.
async fn root_profile_of(
    state: &AppState,
    refs: &[crate::model::SystemRef],
) -> Result<&'static crate::profile::Profile> {
    let mut shared: Option<&'static crate::profile::Profile> = None;
    for r in refs {
        let p = state.profile(&state.core.backend.system(&r.id).await?);
        if shared.is_some_and(|seen| seen.name != p.name) {
            return Ok(crate::profile::generic());
        }
        shared = Some(p);
    }
    Ok(shared.unwrap_or(crate::profile::generic()))
}

/// The IPMI side of an endpoint that serves one system.
async fn ipmi_bmc(
    ipmi: &crate::ipmi::IpmiSettings,
    e: &Endpoint,
    id: &str,
    http: SocketAddr,
) -> Result<Arc<crate::ipmi::Bmc>> {
    let sys = e.state.core.backend.system(id).await?;
    Ok(Arc::new(crate::ipmi::Bmc::new(
        &e.state.core,
        e.state.auth.clone(),
        id,
        &sys,
        ipmi,
        SocketAddr::new(http.ip(), ipmi.port),
    )))
}

/// Binds a BMC's UDP socket: IPMI is served only where asked for, so a
/// port that cannot be had stops the start, naming the setting.
fn bmc_socket(ipmi: &crate::ipmi::IpmiSettings, addr: SocketAddr) -> Result<tokio::net::UdpSocket> {
    let key = ipmi.asked_by.as_deref().unwrap_or("--ipmi-port");
    let s = std::net::UdpSocket::bind(addr)
        .with_context(|| format!("{key}: cannot listen on udp://{addr}"))?;
    s.set_nonblocking(true)?;
    Ok(tokio::net::UdpSocket::from_std(s)?)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

/// A machine-readable line on stdout, for scripts and tests; a closed
/// stdout (a reader that took the lines it wanted) is no error.
fn announce(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// A listener bound and its server made, not yet announced nor running:
/// the line that announces it, and the server.
type Bound<F> = (String, F);

/// The admin endpoint, bound: its own listener and, so that clients
/// filling the Redfish listeners' cap cannot lock the operator out,
/// connection slots of its own.
fn admin(
    listen: SocketAddr,
    router: axum::Router,
    settings: &Settings,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Bound<impl std::future::Future<Output = Result<()>>>> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let std_listener = std::net::TcpListener::bind(listen)
        .with_context(|| format!("--admin-listen: cannot listen on {listen}"))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    tracing::info!("admin endpoint on {scheme}://{addr}/shoal/v1/");
    let admin_limits = crate::serve::Limits {
        max_connections: 64,
        ..settings.limits
    };
    let server = crate::serve::serve(
        std_listener,
        router,
        tls,
        admin_limits,
        admin_limits.slots(),
        stop,
        None,
    );
    Ok((format!("shoal-emulator admin on {scheme}://{addr}"), server))
}

/// A BMC's in-band IPMI socket in `dir` (named by its system's UUID), bound.
fn in_band(
    dir: &Path,
    name: &str,
    bmc: Arc<crate::ipmi::Bmc>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Bound<impl std::future::Future<Output = Result<()>>>> {
    let path = shoal_ipmi::inband::socket_path(dir, &bmc.uuid);
    let listener = crate::ipmi::inband::bind(&path)
        .with_context(|| format!("--ipmi-in-band-dir: cannot listen on {}", path.display()))?;
    tracing::info!(system = %name, "in-band IPMI on unix:{}", path.display());
    let line = format!(
        "shoal-emulator ipmi-in-band {name} on unix:{}",
        path.display()
    );
    Ok((line, crate::ipmi::inband::serve(listener, bmc, stop)))
}

/// A Redfish service bound: its announcement, listener and state.
type BoundService = (String, std::net::TcpListener, AppState);
/// The IPMI side of a service of one system: its name, BMC and ports.
type ServiceBmc = (String, Arc<crate::ipmi::Bmc>, Arc<crate::api::Ports>);

/// Binds each endpoint's Redfish listener (its line says where), and
/// makes the BMC of each that serves one system where IPMI is asked for.
async fn bind_services(
    settings: &Settings,
    endpoints: Vec<Endpoint>,
    tls: bool,
    backend_kind: &str,
) -> Result<(Vec<BoundService>, Vec<ServiceBmc>)> {
    let scheme = if tls { "https" } else { "http" };
    let mut services = Vec::new();
    let mut bmcs = Vec::new();
    for (i, e) in endpoints.into_iter().enumerate() {
        let std_listener = std::net::TcpListener::bind(e.listen)
            .with_context(|| format!("cannot listen on {}", e.listen))?;
        std_listener.set_nonblocking(true)?;
        let addr: SocketAddr = std_listener.local_addr()?;
        let _ = e.state.ports.redfish.set((tls, addr.port()));
        let systems = e.state.core.backend.systems().await?;
        tracing::info!(
            systems = systems.len(),
            backend = backend_kind,
            feature_set = ?settings.feature_set,
            auth = settings.auth_file.is_some(),
            "Redfish service on {scheme}://{addr}/redfish/v1/"
        );
        // Machine-readable lines on stdout, for scripts and tests: the main
        // service first, then one per endpoint with its systems' names.
        let line = if i == 0 {
            format!("shoal-emulator listening on {scheme}://{addr}")
        } else {
            let names: Vec<&str> = systems.iter().map(|s| s.name.as_str()).collect();
            format!(
                "shoal-emulator endpoint {} on {scheme}://{addr}",
                names.join(",")
            )
        };
        let ipmi = settings.ipmi.port != 0 || settings.ipmi.in_band_dir.is_some();
        if let ([only], true) = (systems.as_slice(), ipmi) {
            bmcs.push((
                only.name.clone(),
                ipmi_bmc(&settings.ipmi, &e, &only.id, addr).await?,
                e.state.ports.clone(),
            ));
        }
        services.push((line, std_listener, e.state));
    }
    Ok((services, bmcs))
}

/// Runs the emulator until a shutdown signal: the main service root and
/// each endpoint of its own.
pub async fn run(settings: Settings) -> Result<()> {
    let main = state(&settings)?;
    let backend = main.core.backend.clone();
    let faults = main.core.faults.clone();
    let endpoints = endpoints(&settings, main).await?;
    // Each service's BMC core has its own change stream, each system's
    // changes on exactly one of them.
    if let Some(n) = &settings.notify {
        for e in &endpoints {
            crate::notifier::spawn(n.clone(), e.state.core.changes.subscribe())?;
        }
    }
    let tls = match &settings.tls {
        Some((cert, key)) => Some(Arc::new(crate::serve::tls_config(cert, key)?)),
        None => None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let slots = settings.limits.slots();
    let mut servers = tokio::task::JoinSet::new();
    // Everything is bound before anything is announced: a setting that
    // cannot be served stops the start before a reader sees it listening.
    let (services, bmcs) =
        bind_services(&settings, endpoints, tls.is_some(), backend.kind()).await?;
    if let (Some(key), true) = (&settings.ipmi.asked_by, bmcs.is_empty()) {
        bail!(
            "{key}: IPMI is served by the BMC of one system, and no service here has one \
             system (one system, --endpoint-per-system or [[endpoints]] give one)"
        );
    }
    let mut ipmi_sockets = Vec::new();
    if settings.ipmi.port != 0 {
        for (_, bmc, _) in &bmcs {
            ipmi_sockets.push(bmc_socket(&settings.ipmi, bmc.addr)?);
        }
    }
    let admin = match &settings.admin {
        Some((listen, token)) => {
            let router = crate::admin::router(faults, backend.clone(), token);
            Some(admin(
                *listen,
                router,
                &settings,
                tls.clone(),
                stop_rx.clone(),
            )?)
        }
        None => None,
    };
    let mut in_band_sockets = Vec::new();
    if let Some(dir) = &settings.ipmi.in_band_dir {
        for (name, bmc, _) in &bmcs {
            in_band_sockets.push(in_band(dir, name, bmc.clone(), stop_rx.clone())?);
        }
    }
    for (line, std_listener, state) in services {
        // A closed stdout (a reader that took the first line) is no error.
        announce(&line);
        let down = Some(state.downtime.subscribe());
        servers.spawn(crate::serve::serve(
            std_listener,
            app(state),
            tls.clone(),
            settings.limits,
            slots.clone(),
            stop_rx.clone(),
            down,
        ));
    }
    if let Some((line, server)) = admin {
        announce(&line);
        servers.spawn(server);
    }
    // IPMI lines come last: readers of the Redfish lines above (the
    // harness, scripts) see them as they always were.
    for (_, bmc, _) in &bmcs {
        servers.spawn(crate::ipmi::timers(bmc.clone(), stop_rx.clone()));
    }
    for ((name, bmc, ports), socket) in bmcs.iter().zip(ipmi_sockets) {
        let at = socket.local_addr()?;
        let _ = ports.ipmi.set(at.port());
        tracing::info!(system = %name, "IPMI (RMCP+) on udp://{at}");
        announce(&format!("shoal-emulator ipmi {name} on udp://{at}"));
        servers.spawn(crate::ipmi::serve(socket, bmc.clone(), stop_rx.clone()));
    }
    for (line, server) in in_band_sockets {
        announce(&line);
        servers.spawn(server);
    }
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    while let Some(done) = servers.join_next().await {
        done??;
    }
    backend.flush().await?;
    Ok(())
}
