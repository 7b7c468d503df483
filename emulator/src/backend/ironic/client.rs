//! Ironic's REST API, blocking (ureq; the backend runs calls on the
//! blocking pool): JSON in and out, the microversion negotiated once, and
//! Ironic's answers turned into the backend's errors.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use super::cloud::{Auth, Cloud};
use crate::backend::BackendError;

/// The newest microversion Shoal uses (1.89: virtual media attach); older
/// servers get their own maximum, and the features past it are refused.
pub const WANTED: (u32, u32) = (1, 89);
/// Without `fields` and node names (1.8) and `inject_nmi` (1.29) there is
/// not enough to serve.
pub const OLDEST: (u32, u32) = (1, 29);

pub struct Client {
    agent: ureq::Agent,
    base: String,
    auth: Option<String>,
    /// The negotiated microversion.
    pub version: (u32, u32),
    cloud: String,
}

fn parse_version(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// What Ironic said went wrong: its `faultstring` (inside the JSON string
/// `error_message`), or the body as it is.
fn fault(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let inner = v["error_message"]
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok());
    let text = inner
        .as_ref()
        .and_then(|i| i["faultstring"].as_str())
        .or_else(|| v["error_message"].as_str())
        .unwrap_or(body);
    text.chars().take(400).collect()
}

impl Client {
    /// A client for `cloud`, its microversion agreed with the server (which
    /// must answer now).
    pub fn connect(cloud: &Cloud) -> Result<Client, String> {
        let mut tls = ureq::tls::TlsConfig::builder().disable_verification(cloud.insecure);
        if let Some(ca) = &cloud.cacert {
            let pem = std::fs::read(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
            let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!("{}: no PEM certificate in it", ca.display()));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)));
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .timeout_connect(Some(Duration::from_secs(5)))
            .http_status_as_error(false)
            .tls_config(tls.build())
            .proxy(None)
            .build();
        let auth = match &cloud.auth {
            Auth::None => None,
            Auth::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
        };
        let mut c = Client {
            agent: config.into(),
            base: cloud.endpoint.clone(),
            auth,
            version: OLDEST,
            cloud: cloud.name.clone(),
        };
        let here = format!("Ironic at {} (cloud {})", c.base, c.cloud);
        let mut req = c.agent.get(format!("{}/v1", c.base));
        if let Some(a) = &c.auth {
            req = req.header("Authorization", a);
        }
        let mut resp = req
            .call()
            .map_err(|e| format!("{here} does not answer: {e}"))?;
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            return Err(format!("{here} refused the credentials (HTTP {status})"));
        }
        let max = resp
            .headers()
            .get("X-OpenStack-Ironic-API-Maximum-Version")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_version);
        let Some(max) = max else {
            let body = resp.body_mut().read_to_string().unwrap_or_default();
            return Err(format!(
                "{here} is not Ironic's API (HTTP {status}, no API version header): {}",
                fault(&body)
            ));
        };
        if max < OLDEST {
            return Err(format!(
                "{here} speaks API 1.{} at most; Shoal needs 1.{}",
                max.1, OLDEST.1
            ));
        }
        c.version = max.min(WANTED);
        // `/v1` is public; the node list is not: the credentials are
        // checked now, not at a client's first request.
        match c.call("GET", "/v1/nodes?limit=1&fields=uuid", None) {
            Ok(_) => Ok(c),
            Err(BackendError::Internal(why))
                if why.contains("HTTP 401") || why.contains("HTTP 403") =>
            {
                Err(format!("{here} refused the credentials: {why}"))
            }
            Err(e) => Err(format!("{here}: {e}")),
        }
    }

    pub fn at_least(&self, minor: u32) -> bool {
        self.version >= (1, minor)
    }

    /// One call; `Ok` with the body (`Null` when empty) for 2xx.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, BackendError> {
        let url = format!("{}{path}", self.base);
        let version = format!("{}.{}", self.version.0, self.version.1);
        let builder = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("X-OpenStack-Ironic-API-Version", version)
            .header("Accept", "application/json");
        let builder = match &self.auth {
            Some(a) => builder.header("Authorization", a),
            None => builder,
        };
        let sent = match body {
            Some(b) => {
                let req = builder
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(b).unwrap_or_default())
                    .map_err(|e| BackendError::Internal(format!("{url}: {e}")))?;
                self.agent.run(req)
            }
            None => {
                let req = builder
                    .body(())
                    .map_err(|e| BackendError::Internal(format!("{url}: {e}")))?;
                self.agent.run(req)
            }
        };
        let mut resp = sent.map_err(|e| {
            BackendError::Unavailable(format!(
                "Ironic (cloud {}): {method} {path}: {e}",
                self.cloud
            ))
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| BackendError::Unavailable(format!("Ironic: {method} {path}: {e}")))?;
        if (200..300).contains(&status) {
            if text.trim().is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_str(&text).map_err(|e| {
                BackendError::Internal(format!("Ironic: {method} {path}: not JSON: {e}"))
            });
        }
        let why = fault(&text);
        let what = format!("Ironic: {method} {path}: HTTP {status}: {why}");
        Err(match status {
            404 => BackendError::NotFound(path.to_string()),
            // A node another task holds is busy, not in conflict: clients
            // retry a 503 (Ironic's own client retries this 409).
            409 if why.contains("locked") => BackendError::Unavailable(what),
            409 => BackendError::Conflict(why),
            400 => BackendError::Unsupported(crate::backend::Unsupported::Refused(why)),
            401 | 403 => BackendError::Internal(format!("{what} (check the cloud's credentials)")),
            503 => BackendError::Unavailable(what),
            _ => BackendError::Internal(what),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ironic_faults_are_read_from_inside_error_message() {
        let body = r#"{"error_message": "{\"faultstring\": \"Node abc is locked by host h.\", \"debuginfo\": null}"}"#;
        assert_eq!(fault(body), "Node abc is locked by host h.");
        assert_eq!(fault(r#"{"error_message": "plain"}"#), "plain");
        assert_eq!(fault("not json"), "not json");
        assert_eq!(parse_version("1.99"), Some((1, 99)));
        assert_eq!(parse_version("x"), None);
    }
}
