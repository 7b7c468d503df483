//! The BMC's EventService as the runner uses it around a case: retry
//! settings PATCHed, push subscriptions made and looked up, an SSE stream
//! read into a file. Basic `admin` where the BMC asks for credentials, as
//! the drivers log in.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use super::{agent, agent_for, Bmc};

/// `admin:password`, Basic.
const BASIC: &str = "Basic YWRtaW46cGFzc3dvcmQ=";
const EVENT_SERVICE: &str = "/redfish/v1/EventService";

impl Bmc {
    /// The URL of `path` on the BMC (a `Location` may be a whole URL).
    fn at(&self, path: &str) -> String {
        match path.starts_with("http://") || path.starts_with("https://") {
            true => path.to_string(),
            false => format!("{}{path}", self.url.trim_end_matches('/')),
        }
    }

    /// Subscribes `destination` to the BMC's events; returns the
    /// subscription's URI (its `Location`).
    pub fn subscribe_events(&self, destination: &str) -> Result<String> {
        self.subscribe(json!({"Destination": destination, "Context": "shoal-harness"}))
    }

    /// POSTs `body` to the subscriptions collection; the new member's URI.
    pub fn subscribe(&self, body: Value) -> Result<String> {
        let url = self.at(&format!("{EVENT_SERVICE}/Subscriptions"));
        let mut resp = agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Authorization", BASIC)
            .send(body.to_string())
            .with_context(|| format!("POST {url}"))?;
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("Location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match (status, location) {
            (201, Some(l)) => Ok(l),
            _ => bail!(
                "POST {url}: HTTP {status}: {}",
                resp.body_mut().read_to_string().unwrap_or_default()
            ),
        }
    }

    /// PATCHes the EventService (`DeliveryRetryIntervalSeconds`, …).
    pub fn patch_event_service(&self, body: Value) -> Result<()> {
        let url = self.at(EVENT_SERVICE);
        let mut resp = agent()
            .patch(&url)
            .header("Content-Type", "application/json")
            .header("Authorization", BASIC)
            .send(body.to_string())
            .with_context(|| format!("PATCH {url}"))?;
        match resp.status().as_u16() {
            200 | 204 => Ok(()),
            s => bail!(
                "PATCH {url} {body}: HTTP {s}: {}",
                resp.body_mut().read_to_string().unwrap_or_default()
            ),
        }
    }

    /// The HTTP status a GET of `uri` (a path on the BMC) answers.
    pub fn status_of(&self, uri: &str) -> Result<u16> {
        let url = self.at(uri);
        let resp = agent()
            .get(&url)
            .header("Authorization", BASIC)
            .call()
            .with_context(|| format!("GET {url}"))?;
        Ok(resp.status().as_u16())
    }

    /// Opens the BMC's SSE stream with `$filter` = `filter` and has a
    /// thread append each event's `data:` to `out`, one JSON line each,
    /// until the stream ends (the BMC stops with its case). Returns once
    /// the BMC answered the stream's request.
    pub fn sse_to_file(&self, filter: &str, out: &Path) -> Result<()> {
        let mut resp = agent()
            .get(self.at(EVENT_SERVICE))
            .header("Authorization", BASIC)
            .call()
            .context("GET the EventService")?;
        let svc: Value = serde_json::from_str(&resp.body_mut().read_to_string()?)?;
        let uri = svc["ServerSentEventUri"]
            .as_str()
            .ok_or_else(|| anyhow!("the EventService has no ServerSentEventUri"))?;
        let url = self.at(&format!("{uri}?$filter={}", encode(filter)));
        let resp = agent_for(None)
            .get(&url)
            .header("Accept", "text/event-stream")
            .header("Authorization", BASIC)
            .call()
            .with_context(|| format!("GET {url}"))?;
        if resp.status().as_u16() != 200 {
            let status = resp.status().as_u16();
            let body = resp.into_body().read_to_string().unwrap_or_default();
            bail!("GET {url}: HTTP {status}: {body}");
        }
        let mut file = std::fs::File::create(out)?;
        let reader = BufReader::new(resp.into_body().into_reader());
        std::thread::spawn(move || {
            let mut data = String::new();
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if let Some(d) = line.strip_prefix("data:") {
                    // The lines of one event's data join (with a space:
                    // the file keeps one event a line).
                    if !data.is_empty() {
                        data.push(' ');
                    }
                    data.push_str(d.strip_prefix(' ').unwrap_or(d));
                } else if line.is_empty() && !data.is_empty() {
                    let _ = writeln!(file, "{data}").and_then(|()| file.flush());
                    data.clear();
                }
            }
        });
        Ok(())
    }
}

/// `text` as a URL query value: unreserved characters kept, the rest
/// percent-encoded.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::encode;

    #[test]
    fn a_filter_is_percent_encoded() {
        assert_eq!(
            encode("ResourceType eq 'VirtualMedia'"),
            "ResourceType%20eq%20%27VirtualMedia%27"
        );
    }
}
