//! InsertMedia's download, for every backend that fetches the image (the
//! libvirt backend always; the fake one with `--fake-fetch-media`): the
//! image is streamed (to a file, or only checked), with a size limit, a
//! timeout, TLS verification unless switched off, and Basic credentials
//! when given, then checked against the slot (a CD must be ISO 9660).
//!
//! The BMC fetches what a client names, so the fetch is no way into the
//! host: every hop's host is resolved here and each address checked
//! against the address policy (`netpolicy`) before it is connected to;
//! redirects are followed by hand (at most [`MAX_HOPS`]), each re-checked,
//! credentials only to the first URL's origin. Whatever keeps the image
//! from arriving (refused by the policy, no such host, connection refused,
//! timeout, TLS) is one answer, `MediaError::Unreachable`; the cause is
//! logged. Each domain has its own cached file, so one domain's eject
//! leaves another's image alone.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::backend::{BackendError, MediaError};
use crate::model::{MediaImage, MediaSlot, TransferProtocol};
use crate::netpolicy::AddressPolicy;

/// Requests per download, the redirects included.
pub const MAX_HOPS: usize = 6;
/// An ISO 9660 volume descriptor: "CD001" at byte 1 of sector 16.
const ISO_MAGIC_AT: usize = 0x8001;

#[derive(Debug, Clone)]
pub struct MediaOptions {
    /// Where downloaded images are kept (libvirt).
    pub cache: PathBuf,
    pub max_bytes: u64,
    pub timeout: Duration,
    /// Skip TLS certificate verification of image servers.
    pub insecure: bool,
    /// Which addresses images may come from.
    pub addresses: AddressPolicy,
}

/// Where domain `domain`'s image from `url` is cached (stable per domain
/// and URL; a file per domain, so an eject removes only that domain's).
pub fn cache_path(opts: &MediaOptions, domain: &str, url: &str) -> PathBuf {
    let key = format!("{}\n{url}", domain.to_ascii_lowercase());
    let h = hex::encode(&Sha256::digest(key.as_bytes())[..12]);
    opts.cache.join(format!("{h}.img"))
}

/// Resolves every host ureq connects to and keeps only the addresses the
/// policy allows: what is connected to is what was checked. The flag
/// named in the refusal is the one that lets a network through.
#[derive(Debug)]
struct PolicyResolver(AddressPolicy, &'static str);

impl ureq::unversioned::resolver::Resolver for PolicyResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        // An address needs no lookup: ureq's own resolver starts a thread
        // per request to time a lookup out, which costs every event
        // delivery to a literal address a thread.
        let all = match literal(uri) {
            Some(a) => {
                let mut one = self.empty();
                one.push(a);
                one
            }
            None => ureq::unversioned::resolver::DefaultResolver::default()
                .resolve(uri, config, timeout)?,
        };
        let mut kept = self.empty();
        let mut refused = Vec::new();
        for a in all.iter() {
            match self.0.check(a.ip()) {
                Ok(()) => kept.push(*a),
                Err(why) => refused.push(format!("{} ({why})", a.ip())),
            }
        }
        if kept.is_empty() {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "refused by the address policy: {} ({})",
                    refused.join(", "),
                    self.1
                ),
            )));
        }
        Ok(kept)
    }
}

/// The socket address of a URI whose host is an IP address (`[…]` for
/// IPv6), with its port or the scheme's.
fn literal(uri: &ureq::http::Uri) -> Option<std::net::SocketAddr> {
    let host = uri.host()?;
    let ip: std::net::IpAddr = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()?;
    let port = uri.port_u16().or(match uri.scheme_str()? {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    })?;
    Some(std::net::SocketAddr::new(ip, port))
}

/// Same scheme, host and port.
fn same_origin(a: &ureq::http::Uri, b: &ureq::http::Uri) -> bool {
    let port = |u: &ureq::http::Uri| {
        u.port_u16().or(match u.scheme_str() {
            Some("https") => Some(443),
            _ => Some(80),
        })
    };
    a.scheme() == b.scheme() && a.host() == b.host() && port(a) == port(b)
}

/// The absolute URL a `Location` header names, relative to `base`.
fn redirect_target(base: &ureq::http::Uri, location: &str) -> Option<ureq::http::Uri> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.parse().ok();
    }
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    let url = if let Some(rest) = location.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if location.starts_with('/') {
        format!("{scheme}://{authority}{location}")
    } else {
        let path = base.path();
        let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(0)];
        format!("{scheme}://{authority}{dir}{location}")
    };
    url.parse().ok()
}

/// Downloads `image` for domain `domain` to the cache and checks it fits
/// the slot.
pub fn fetch(
    opts: &MediaOptions,
    domain: &str,
    image: &MediaImage,
    slot: MediaSlot,
) -> Result<PathBuf, BackendError> {
    std::fs::create_dir_all(&opts.cache)
        .map_err(|e| BackendError::Internal(format!("{}: {e}", opts.cache.display())))?;
    let dest = cache_path(opts, domain, &image.image);
    download(opts, image, slot, Some(&dest))?;
    Ok(dest)
}

/// Downloads `image` and checks it fits the slot: into `keep` (replaced
/// only once the whole image arrived and passed), or nowhere. The bytes
/// received.
pub fn download(
    opts: &MediaOptions,
    image: &MediaImage,
    slot: MediaSlot,
    keep: Option<&Path>,
) -> Result<u64, BackendError> {
    let resp = get(opts, image)?;
    let url = &image.image;
    let total = receive(resp, opts, url, slot, keep)?;
    tracing::info!(%url, bytes = total, kept = ?keep, "virtual media downloaded");
    Ok(total)
}

/// Downloads `image` (a firmware image) into memory, within the size
/// limit: the same policy, TLS, credentials and redirects as an
/// InsertMedia's download.
pub fn fetch_bytes(opts: &MediaOptions, image: &MediaImage) -> Result<Vec<u8>, BackendError> {
    let resp = get(opts, image)?;
    let url = &image.image;
    let mut out = Vec::new();
    resp.into_body()
        .into_with_config()
        .limit(opts.max_bytes)
        .reader()
        .read_to_end(&mut out)
        .map_err(|e| {
            if e.to_string().contains("limit") {
                BackendError::from(MediaError::TooLarge)
            } else {
                unreachable(url, e.to_string())
            }
        })?;
    tracing::info!(%url, bytes = out.len(), "firmware image downloaded");
    Ok(out)
}

/// The GET of `image`, its protocol and URL checked, redirects followed:
/// the server's 200, or why there is none.
fn get(
    opts: &MediaOptions,
    image: &MediaImage,
) -> Result<ureq::http::Response<ureq::Body>, BackendError> {
    match image.transfer_protocol {
        Some(TransferProtocol::Http | TransferProtocol::Https) | None => {}
        Some(p) => return Err(MediaError::Protocol(p).into()),
    }
    let url = &image.image;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(bad_image(url));
    }
    let agent = agent(opts, image);
    let resp = follow(&agent, opts, image)?;
    let status = resp.status().as_u16();
    match status {
        200 => Ok(resp),
        401 | 403 => Err(MediaError::Unauthorized {
            url: url.clone(),
            status,
        }
        .into()),
        _ => {
            tracing::warn!(%url, status, "image server refused the download");
            Err(MediaError::Missing(url.clone()).into())
        }
    }
}

fn bad_image(url: &str) -> BackendError {
    BackendError::from(MediaError::BadImage(url.to_string()))
}

/// One answer for every way the image does not arrive: which it was
/// (refused, timed out, refused by policy) would map the network. The
/// cause is logged.
fn unreachable(url: &str, why: String) -> BackendError {
    tracing::warn!(%url, %why, "virtual media download failed");
    BackendError::from(MediaError::Unreachable(url.to_string()))
}

/// The HTTP client for one image: its TLS verification (the device's
/// VerifyCertificate over the service's default; its Certificates, when
/// it has any, the only roots), the one timeout, no redirects or proxy of
/// its own, and every address resolved through the policy.
fn agent(opts: &MediaOptions, image: &MediaImage) -> ureq::Agent {
    let insecure = image.verify.map_or(opts.insecure, |v| !v);
    let mut tls = ureq::tls::TlsConfig::builder().disable_verification(insecure);
    if !insecure && !image.cas.is_empty() {
        let roots = image
            .cas
            .iter()
            .map(|der| ureq::tls::Certificate::from_der(der).to_owned())
            .collect();
        tls = tls.root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(roots)));
    }
    policy_agent(
        tls.build(),
        (opts.timeout, Duration::from_secs(10)),
        &opts.addresses,
        "--media-allow-net",
    )
}

/// A client of what the BMC itself connects to: TLS as given, the one
/// timeout and the connection's, statuses as answers, no redirects or
/// proxy of its own, every address resolved through `policy` (`flag`
/// named in a refusal).
pub(crate) fn policy_agent(
    tls: ureq::tls::TlsConfig,
    (timeout, connect): (Duration, Duration),
    policy: &AddressPolicy,
    flag: &'static str,
) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .timeout_connect(Some(connect))
        .http_status_as_error(false)
        .max_redirects(0)
        .tls_config(tls)
        .proxy(None)
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        PolicyResolver(policy.clone(), flag),
    )
}

/// The GET, redirects followed by hand (at most [`MAX_HOPS`], within the
/// one deadline, credentials only to the first URL's origin): the first
/// answer that is not a redirect.
fn follow(
    agent: &ureq::Agent,
    opts: &MediaOptions,
    image: &MediaImage,
) -> Result<ureq::http::Response<ureq::Body>, BackendError> {
    let url = &image.image;
    let first: ureq::http::Uri = url.parse().map_err(|_| bad_image(url))?;
    let mut at = first.clone();
    let mut hops = 0;
    let deadline = std::time::Instant::now() + opts.timeout;
    loop {
        hops += 1;
        if std::time::Instant::now() >= deadline {
            return Err(unreachable(
                url,
                format!("{at}: out of time after {} redirects", hops - 1),
            ));
        }
        // Each hop gets what is left of the one deadline, not a timeout
        // of its own.
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut req = agent.get(&at).config().timeout_global(Some(left)).build();
        if let (Some(user), true) = (&image.user_name, same_origin(&at, &first)) {
            let pass = image.password.as_deref().unwrap_or("");
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            req = req.header("Authorization", &format!("Basic {token}"));
        }
        let resp = req
            .call()
            .map_err(|e| unreachable(url, format!("{at}: {e}")))?;
        let status = resp.status().as_u16();
        if !matches!(status, 301 | 302 | 303 | 307 | 308) {
            return Ok(resp);
        }
        let next = resp
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .and_then(|l| redirect_target(&at, l))
            .filter(|u| matches!(u.scheme_str(), Some("http" | "https")))
            .ok_or_else(|| unreachable(url, format!("{at}: {status} without a usable Location")))?;
        if hops >= MAX_HOPS {
            return Err(unreachable(
                url,
                format!("more than {} redirects", MAX_HOPS - 1),
            ));
        }
        tracing::debug!(from = %at, to = %next, status, "virtual media download redirected");
        at = next;
    }
}

/// The body, streamed within the size limit into a temporary file beside
/// `keep` (or nowhere), checked against the slot (a CD is ISO 9660), then
/// renamed onto `keep`. The bytes received.
fn receive(
    resp: ureq::http::Response<ureq::Body>,
    opts: &MediaOptions,
    url: &str,
    slot: MediaSlot,
    keep: Option<&Path>,
) -> Result<u64, BackendError> {
    let tmp = match keep.and_then(Path::parent) {
        Some(dir) => Some(
            tempfile::NamedTempFile::new_in(dir)
                .map_err(|e| BackendError::Internal(e.to_string()))?,
        ),
        None => None,
    };
    let mut reader = resp
        .into_body()
        .into_with_config()
        .limit(opts.max_bytes)
        .reader();
    let mut out: Box<dyn Write> = match &tmp {
        Some(t) => Box::new(std::io::BufWriter::new(t.as_file())),
        None => Box::new(std::io::sink()),
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut head = Vec::with_capacity(ISO_MAGIC_AT + 5);
    let mut total: u64 = 0;
    loop {
        let n = reader.read(&mut buf).map_err(|e| {
            if e.to_string().contains("limit") {
                BackendError::from(MediaError::TooLarge)
            } else {
                unreachable(url, e.to_string())
            }
        })?;
        if n == 0 {
            break;
        }
        if head.len() < ISO_MAGIC_AT + 5 {
            let take = n.min(ISO_MAGIC_AT + 5 - head.len());
            head.extend_from_slice(&buf[..take]);
        }
        out.write_all(&buf[..n])
            .map_err(|e| BackendError::Internal(e.to_string()))?;
        total += n as u64;
    }
    out.flush()
        .map_err(|e| BackendError::Internal(e.to_string()))?;
    drop(out);
    if slot == MediaSlot::Cd && head.get(ISO_MAGIC_AT..ISO_MAGIC_AT + 5) != Some(b"CD001") {
        return Err(bad_image(url));
    }
    if let (Some(tmp), Some(dest)) = (tmp, keep) {
        tmp.persist(dest)
            .map_err(|e| BackendError::Internal(e.error.to_string()))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn an_address_is_taken_as_it_is_and_a_name_is_looked_up() {
        let at = |u: &str| literal(&u.parse().unwrap()).map(|a| a.to_string());
        assert_eq!(at("http://127.0.0.1/e").as_deref(), Some("127.0.0.1:80"));
        assert_eq!(at("https://10.0.0.1/e").as_deref(), Some("10.0.0.1:443"));
        assert_eq!(
            at("http://[fd00::1]:8080/e").as_deref(),
            Some("[fd00::1]:8080")
        );
        assert_eq!(at("http://localhost:8080/e"), None);
        assert_eq!(at("http://127.0.0.1.example/e"), None);
    }
}
