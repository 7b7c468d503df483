//! Builds the service from [`Settings`] and runs it over HTTP or HTTPS
//! (rustls, TLS 1.2 and 1.3) until SIGINT/SIGTERM, then flushes the backend.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::api::{app, AppState};
use crate::auth::AuthStore;
use crate::backend::fake::FakeBackend;
use crate::backend::Backend;
use crate::cli::{BackendChoice, Settings};

/// The service root UUID: stable for a given set of systems.
fn service_uuid(settings: &Settings) -> Uuid {
    let mut h = Sha256::new();
    for s in &settings.systems {
        h.update(s.id.as_bytes());
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
            uris,
            allow,
            http_boot,
            graceful_timeout,
            media,
        } => {
            let opts = crate::backend::libvirt::LibvirtOptions {
                profile: profile.clone(),
                uris: uris.clone(),
                allow: allow.clone(),
                http_boot: *http_boot,
                graceful_timeout: *graceful_timeout,
                media: crate::backend::libvirt::media::MediaOptions {
                    cache: media.cache.clone(),
                    max_bytes: media.max_bytes,
                    timeout: media.timeout,
                    insecure: media.insecure,
                },
            };
            Ok(Arc::new(
                crate::backend::libvirt::LibvirtBackend::connect(opts)
                    .map_err(anyhow::Error::msg)?,
            ))
        }
        #[cfg(not(feature = "libvirt"))]
        BackendChoice::Libvirt { .. } => {
            anyhow::bail!("this shoal-emulator was built without the `libvirt` feature (cargo build --features libvirt)")
        }
    }
}

/// The application state for these settings.
pub fn state(settings: &Settings) -> Result<AppState> {
    let auth = match &settings.auth_file {
        Some(p) => AuthStore::from_htpasswd(p)?,
        None => AuthStore::open(),
    };
    let backend = backend(settings)?;
    Ok(
        AppState::new(backend, auth, settings.feature_set, service_uuid(settings))
            .with_profiles(settings.profiles.clone()),
    )
}

pub fn tls_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("{}: cannot read certificate", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: bad PEM certificate", cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no certificate found", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("{}: cannot read private key", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not match")?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
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

/// Runs the emulator until a shutdown signal.
pub async fn run(settings: Settings) -> Result<()> {
    let state = state(&settings)?;
    let backend = state.backend.clone();
    let router = app(state);
    let std_listener = std::net::TcpListener::bind(settings.listen)
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    std_listener.set_nonblocking(true)?;
    let addr: SocketAddr = std_listener.local_addr()?;
    let scheme = if settings.tls.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(
        systems = backend.systems().await?.len(),
        backend = backend.kind(),
        feature_set = ?settings.feature_set,
        auth = settings.auth_file.is_some(),
        "Redfish service on {scheme}://{addr}/redfish/v1/"
    );
    // One machine-readable line on stdout, for scripts and tests.
    println!("shoal-emulator listening on {scheme}://{addr}");
    match &settings.tls {
        Some((cert, key)) => {
            let cfg = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls_config(
                cert, key,
            )?));
            let handle = axum_server::Handle::new();
            let h = handle.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                h.graceful_shutdown(Some(Duration::from_secs(5)));
            });
            axum_server::from_tcp_rustls(std_listener, cfg)
                .handle(handle)
                .serve(router.into_make_service())
                .await?;
        }
        None => {
            let listener = tokio::net::TcpListener::from_std(std_listener)?;
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown_signal())
                .await?;
        }
    }
    backend.flush().await?;
    Ok(())
}
