//! The crawl: one request at a time, paced, each URI fetched once, in
//! the order Mockup-Creator walks a service.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::{status_text, Auth, Options, Summary};

/// Where the crawl starts, as Mockup-Creator's does.
const STARTS: [&str; 4] = [
    "/redfish",
    "/redfish/v1/odata",
    "/redfish/v1/$metadata",
    "/redfish/v1",
];

/// Response headers never kept: they carry credentials.
const SECRET_HEADERS: [&str; 3] = ["set-cookie", "x-auth-token", "authorization"];

/// What one GET gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A 2xx JSON body.
    Json(Value),
    /// A 2xx CSDL document.
    Xml(String),
    /// Anything else: status (0: no response) and body.
    Error { status: u16, body: String },
}

/// One resource as captured.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The path as linked (trailing `/` and all).
    pub uri: String,
    pub payload: Payload,
    /// Response headers, credentials left out.
    pub headers: Vec<(String, String)>,
    pub secs: f64,
}

/// `uri` as a folder key: without a trailing `/`.
pub fn key(uri: &str) -> &str {
    match uri.trim_end_matches('/') {
        "" => "/",
        k => k,
    }
}

/// Whether `uri` is a path the capture may fetch and write: under
/// `/redfish`, no query or fragment, and every segment a plain folder
/// name (never `.`, `..`, a NUL or a backslash).
pub fn capturable(uri: &str) -> bool {
    let k = key(uri);
    if !(k == "/redfish" || k.starts_with("/redfish/")) || k.contains(['?', '#', '\0', '\\']) {
        return false;
    }
    k[1..]
        .split('/')
        .all(|s| !s.is_empty() && s != "." && s != ".." && s.len() <= 255)
}

struct Crawler<'a> {
    opts: &'a Options,
    agent: ureq::Agent,
    /// `(name, value)` sent with every request.
    credential: Option<(&'static str, String)>,
    /// The session's URI, deleted at the end.
    session: Option<String>,
    last: Option<Instant>,
    seen: HashSet<String>,
    queue: VecDeque<(String, bool)>,
    out: Vec<Fetched>,
    summary: Summary,
    progress: Instant,
}

/// Crawls the service: every resource fetched, in crawl order.
pub fn crawl(opts: &Options) -> Result<(Vec<Fetched>, Summary)> {
    let mut c = Crawler {
        opts,
        agent: agent(opts)?,
        credential: None,
        session: None,
        last: None,
        seen: HashSet::new(),
        queue: VecDeque::new(),
        out: Vec::new(),
        summary: Summary::default(),
        progress: Instant::now(),
    };
    c.login()?;
    let result = c.walk();
    c.logout();
    result?;
    Ok((c.out, c.summary))
}

fn agent(opts: &Options) -> Result<ureq::Agent> {
    let mut tls = ureq::tls::TlsConfig::builder();
    if opts.insecure {
        tls = tls.disable_verification(true);
    } else if let Some(ca) = &opts.ca {
        let pem = std::fs::read(ca).with_context(|| format!("--ca {}", ca.display()))?;
        let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        if certs.is_empty() {
            bail!("--ca {}: no PEM certificate in it", ca.display());
        }
        tls = tls.root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)));
    }
    Ok(ureq::Agent::config_builder()
        .tls_config(tls.build())
        .http_status_as_error(false)
        .timeout_global(Some(opts.timeout))
        .max_redirects(0)
        .proxy(None)
        .build()
        .into())
}

impl Crawler<'_> {
    fn url(&self, uri: &str) -> String {
        format!("{}{uri}", self.opts.base)
    }

    /// Waits for the next request's slot.
    fn pace(&mut self) {
        if self.opts.rate > 0.0 {
            if let Some(last) = self.last {
                let gap = Duration::from_secs_f64(1.0 / self.opts.rate);
                let since = last.elapsed();
                if since < gap {
                    std::thread::sleep(gap - since);
                }
            }
        }
        self.last = Some(Instant::now());
    }

    fn login(&mut self) -> Result<()> {
        let (user, password) = match (&self.opts.user, &self.opts.password) {
            (Some(u), Some(p)) => (u.clone(), p.clone()),
            _ => return Ok(()),
        };
        match self.opts.auth {
            Auth::None => Ok(()),
            Auth::Basic => {
                use base64::Engine;
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                self.credential = Some(("Authorization", format!("Basic {token}")));
                Ok(())
            }
            Auth::Session => {
                self.pace();
                let url = self.url("/redfish/v1/SessionService/Sessions");
                let mut resp = self
                    .agent
                    .post(&url)
                    .header("OData-Version", "4.0")
                    .header("Content-Type", "application/json")
                    .send(json!({"UserName": user, "Password": password}).to_string())
                    .with_context(|| format!("POST {url}"))?;
                let status = resp.status().as_u16();
                if !(200..300).contains(&status) {
                    let body = resp.body_mut().read_to_string().unwrap_or_default();
                    bail!("the service refused the session (HTTP {status}): {body}");
                }
                let header = |n: &str| {
                    resp.headers()
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                let token = header("X-Auth-Token").context("the session has no X-Auth-Token")?;
                self.session = header("Location").map(|l| match l.find("/redfish/") {
                    Some(i) => l[i..].to_string(),
                    None => l,
                });
                self.credential = Some(("X-Auth-Token", token));
                Ok(())
            }
        }
    }

    fn logout(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let url = self.url(&session);
        let mut req = self.agent.delete(&url);
        if let Some((name, value)) = &self.credential {
            req = req.header(*name, value);
        }
        if let Err(e) = req.call() {
            tracing::warn!(%url, error = %e, "capture: the session was not deleted");
        }
    }

    /// One GET, retried twice on no answer or 503 (a busy BMC).
    fn get(&mut self, uri: &str, csdl: bool) -> Fetched {
        let mut attempt = 0;
        loop {
            self.pace();
            let started = Instant::now();
            let f = self.get_once(uri, csdl, started);
            let busy = matches!(
                f.payload,
                Payload::Error {
                    status: 0 | 503,
                    ..
                }
            );
            if !busy || attempt == 2 {
                return f;
            }
            attempt += 1;
            std::thread::sleep(Duration::from_secs(attempt));
        }
    }

    fn get_once(&self, uri: &str, csdl: bool, started: Instant) -> Fetched {
        let url = self.url(uri);
        let accept = if csdl {
            "application/xml"
        } else {
            "application/json"
        };
        let mut req = self
            .agent
            .get(&url)
            .header("OData-Version", "4.0")
            .header("Accept", accept)
            .header("Accept-Encoding", "identity");
        if let Some((name, value)) = &self.credential {
            req = req.header(*name, value);
        }
        let (payload, headers) = match req.call() {
            Err(e) => (
                Payload::Error {
                    status: 0,
                    body: e.to_string(),
                },
                Vec::new(),
            ),
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let headers: Vec<(String, String)> = resp
                    .headers()
                    .iter()
                    .filter(|(n, _)| !SECRET_HEADERS.contains(&n.as_str()))
                    .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                    .collect();
                let body = resp
                    .body_mut()
                    .with_config()
                    .limit(64 << 20)
                    .read_to_string()
                    .unwrap_or_default();
                (payload_of(status, csdl, body), headers)
            }
        };
        Fetched {
            uri: uri.to_string(),
            payload,
            headers,
            secs: started.elapsed().as_secs_f64(),
        }
    }

    fn push(&mut self, uri: &str, csdl: bool) {
        if !capturable(uri) {
            self.summary.skipped_links += 1;
            return;
        }
        if self.seen.insert(key(uri).to_string()) {
            self.queue.push_back((uri.to_string(), csdl));
        }
    }

    fn walk(&mut self) -> Result<()> {
        for start in STARTS {
            self.push(start, start.ends_with("$metadata"));
        }
        while let Some((uri, csdl)) = self.queue.pop_front() {
            if self.out.len() >= self.opts.max_resources {
                self.summary.not_fetched = self.queue.len() + 1;
                break;
            }
            let mut f = self.get(&uri, csdl);
            if let Payload::Json(v) = &mut f.payload {
                self.whole_collection(&uri, v);
            }
            match &f.payload {
                Payload::Json(v) => {
                    let mut found = Vec::new();
                    links(v, &mut found);
                    for l in found {
                        self.push(&l, false);
                    }
                }
                Payload::Xml(doc) => {
                    for r in csdl_references(doc) {
                        self.push(&r, true);
                    }
                }
                Payload::Error { status, .. } => {
                    self.summary.errors.push((uri.clone(), *status));
                    tracing::debug!(%uri, status = %status_text(*status), "capture: kept as error.txt");
                }
            }
            self.summary.resources += usize::from(!matches!(f.payload, Payload::Error { .. }));
            self.out.push(f);
            self.show_progress();
        }
        if !self
            .out
            .iter()
            .any(|f| key(&f.uri) == "/redfish/v1" && matches!(f.payload, Payload::Json(_)))
        {
            let why = self
                .out
                .iter()
                .find(|f| key(&f.uri) == "/redfish/v1")
                .map(|f| match &f.payload {
                    Payload::Error { status, body } => {
                        format!("{}: {}", status_text(*status), first_line(body))
                    }
                    _ => "not JSON".to_string(),
                })
                .unwrap_or_default();
            bail!(
                "{}/redfish/v1 gave no service root ({why}): nothing captured",
                self.opts.base
            );
        }
        Ok(())
    }

    /// A collection's later pages merged into its first, at most
    /// `max_members` kept.
    fn whole_collection(&mut self, uri: &str, v: &mut Value) {
        let Some(obj) = v.as_object_mut() else {
            return;
        };
        if !obj.get("Members").is_some_and(Value::is_array) {
            return;
        }
        let mut next = obj
            .remove("Members@odata.nextLink")
            .and_then(|n| n.as_str().map(str::to_string));
        let mut members: Vec<Value> = obj
            .remove("Members")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default();
        let mut pages = 0;
        while let Some(page) = next.take() {
            if members.len() > self.opts.max_members || pages >= 1000 {
                break;
            }
            pages += 1;
            let f = self.get(&page, false);
            if let Payload::Json(Value::Object(mut p)) = f.payload {
                if let Some(Value::Array(more)) = p.remove("Members") {
                    members.extend(more);
                }
                next = p
                    .remove("Members@odata.nextLink")
                    .and_then(|n| n.as_str().map(str::to_string));
            }
        }
        let total = obj
            .get("Members@odata.count")
            .and_then(Value::as_u64)
            .map_or(members.len(), |n| n as usize)
            .max(members.len());
        if total > self.opts.max_members || members.len() > self.opts.max_members {
            members.truncate(self.opts.max_members);
            self.summary.truncated.push((uri.to_string(), total));
            obj.insert("Members@odata.count".into(), json!(members.len()));
        } else if pages > 0 {
            obj.insert("Members@odata.count".into(), json!(members.len()));
        }
        obj.insert("Members".into(), Value::Array(members));
    }

    fn show_progress(&mut self) {
        if self.opts.quiet || self.progress.elapsed() < Duration::from_secs(2) {
            return;
        }
        self.progress = Instant::now();
        eprintln!(
            "capture: {} fetched, {} to go",
            self.out.len(),
            self.queue.len()
        );
    }
}

fn payload_of(status: u16, csdl: bool, body: String) -> Payload {
    if !(200..300).contains(&status) {
        return Payload::Error { status, body };
    }
    if csdl && body.trim_start().starts_with('<') {
        return Payload::Xml(body);
    }
    match serde_json::from_str::<Value>(&body) {
        Ok(v) if v.is_object() => Payload::Json(v),
        _ => Payload::Error { status, body },
    }
}

fn first_line(s: &str) -> &str {
    let l = s.lines().next().unwrap_or("");
    &l[..l.len().min(200)]
}

/// The links Mockup-Creator follows: `@odata.id`, `Uri`,
/// `Members@odata.nextLink` and `@Redfish.ActionInfo` strings that are
/// paths; the caller filters them (`capturable`).
pub fn links(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, item) in m {
                match item {
                    Value::String(s)
                        if matches!(
                            k.as_str(),
                            "@odata.id" | "Uri" | "Members@odata.nextLink" | "@Redfish.ActionInfo"
                        ) && s.starts_with('/') =>
                    {
                        out.push(s.clone());
                    }
                    Value::Object(_) | Value::Array(_) => links(item, out),
                    _ => {}
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| links(i, out)),
        _ => {}
    }
}

/// The `Uri` of each `<edmx:Reference>` of a CSDL document.
pub fn csdl_references(doc: &str) -> Vec<String> {
    doc.split("<edmx:Reference")
        .skip(1)
        .filter_map(|rest| {
            let tag = rest.split('>').next()?;
            let at = tag.find("Uri=\"")? + 5;
            tag[at..].split('"').next().map(str::to_string)
        })
        .filter(|u| u.starts_with('/'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_under_redfish_are_captured() {
        for ok in [
            "/redfish",
            "/redfish/v1/",
            "/redfish/v1/Systems/System.Embedded.1",
            "/redfish/v1/Chassis/Disk.Bay.0:Enclosure.Internal.0-1",
        ] {
            assert!(capturable(ok), "{ok}");
        }
        for bad in [
            "/redfish/v1/../../etc",
            "/redfish/v1/./x",
            "/redfish//v1",
            "/redfish/v1/Systems?$skip=2",
            "/redfish/v1/Chassis/1#/Thermal/0",
            "/redfishx",
            "/other",
            "/redfish/v1/a\\b",
        ] {
            assert!(!capturable(bad), "{bad}");
        }
        assert_eq!(key("/redfish/v1/"), "/redfish/v1");
    }

    #[test]
    fn links_are_the_ones_mockup_creator_follows() {
        let v = json!({
            "@odata.id": "/redfish/v1/Systems/1",
            "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}]},
            "Actions": {"#ComputerSystem.Reset": {
                "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                "@Redfish.ActionInfo": "/redfish/v1/Systems/1/ResetActionInfo"}},
            "Location": [{"Uri": "/redfish/v1/JsonSchemas/X/X.json"}],
            "Description": "/redfish/v1/not-a-link",
            "Members@odata.nextLink": "/redfish/v1/Systems?$skip=1",
        });
        let mut found = Vec::new();
        links(&v, &mut found);
        found.sort();
        assert_eq!(
            found,
            [
                "/redfish/v1/Chassis/1",
                "/redfish/v1/JsonSchemas/X/X.json",
                "/redfish/v1/Systems/1",
                "/redfish/v1/Systems/1/ResetActionInfo",
                "/redfish/v1/Systems?$skip=1",
            ]
        );
    }

    #[test]
    fn csdl_references_keep_local_uris() {
        let doc = r#"<edmx:Edmx Version="4.0">
  <edmx:Reference Uri="/redfish/v1/Schemas/ServiceRoot_v1.xml">
  <edmx:Reference Uri="http://docs.oasis-open.org/odata/Org.OData.Core.V1.xml">
  <edmx:Reference
      Uri="/redfish/v1/Schemas/Chassis_v1.xml"></edmx:Reference>"#;
        assert_eq!(
            csdl_references(doc),
            [
                "/redfish/v1/Schemas/ServiceRoot_v1.xml",
                "/redfish/v1/Schemas/Chassis_v1.xml"
            ]
        );
    }
}
