//! The capture on disk, in Mockup-Creator's layout: a folder per URI
//! (its path below the capture's root), `index.json` or `index.xml`,
//! `headers.json`, `time.json`, or `error.txt`; a `README` at the top.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::crawl::{capturable, key};
use super::{Fetched, Options, Payload, Summary};

/// The folder that holds `uri`'s files under `dir`.
pub fn folder(dir: &Path, uri: &str) -> Option<PathBuf> {
    capturable(uri).then(|| dir.join(&key(uri)[1..]))
}

fn put(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}

pub fn write(opts: &Options, fetched: &[Fetched], summary: &Summary) -> Result<()> {
    std::fs::create_dir_all(&opts.dir).with_context(|| format!("{}", opts.dir.display()))?;
    for f in fetched {
        // Redaction keeps paths plain; a stand-in never adds a `/`.
        let Some(dir) = folder(&opts.dir, &f.uri) else {
            tracing::warn!(uri = %f.uri, "capture: not a folder name, left out");
            continue;
        };
        std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
        match &f.payload {
            Payload::Json(v) => put(&dir.join("index.json"), &pretty(v))?,
            Payload::Xml(doc) => put(&dir.join("index.xml"), doc)?,
            Payload::Error { status, body } => {
                let mut text = format!("HTTP {status}\n");
                for (n, v) in &f.headers {
                    text += &format!("{n}: {v}\n");
                }
                text += "\n";
                text += body;
                put(&dir.join("error.txt"), &text)?;
                continue;
            }
        }
        let headers: Map<String, Value> = f
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), json!(v)))
            .collect();
        put(&dir.join("headers.json"), &pretty(&json!({"GET": headers})))?;
        put(
            &dir.join("time.json"),
            &pretty(&json!({"GET_Time": format!("{:.2}", f.secs)})),
        )?;
    }
    put(&opts.dir.join("README"), &readme(opts, fetched, summary))
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn readme(opts: &Options, fetched: &[Fetched], summary: &Summary) -> String {
    let now = time::OffsetDateTime::now_utc();
    let mut s = format!(
        "Redfish service captured by shoal-harness capture {} (Redfish-Mockup-Creator's layout)\n\
         Created: {:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC\n\
         Service: {}\nUser: {}\nDescription: {}\n",
        env!("CARGO_PKG_VERSION"),
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        if opts.redact {
            "(redacted)"
        } else {
            &opts.base
        },
        match (&opts.user, opts.redact) {
            (None, _) => "(none)",
            (Some(_), true) => "(redacted)",
            (Some(u), false) => u,
        },
        opts.description,
    );
    if opts.redact {
        s += "Redacted: serial numbers, UUIDs, MAC and IP addresses, host and user names\n";
    }
    let total: f64 = fetched.iter().map(|f| f.secs).sum();
    s += &format!(
        "Resources: {}\nTotal response time: {total:.2}\n",
        summary.resources
    );
    if let Some(slow) = fetched.iter().max_by(|a, b| a.secs.total_cmp(&b.secs)) {
        s += &format!("Maximum response time: {:.2}, {}\n", slow.secs, slow.uri);
    }
    for (kind, line) in summary.gaps(opts) {
        s += &format!("{kind}: {line}\n");
    }
    s
}
