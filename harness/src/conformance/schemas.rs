//! The CSDL the service validator reads, crawled from the service itself:
//! `$metadata` and, transitively, every schema file it references from
//! `/redfish/v1/Schemas/` (OASIS's own vocabularies are not served and
//! the validator does not need them).

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The schema file names a CSDL document references.
pub(super) fn references(doc: &str) -> Vec<String> {
    doc.split("<edmx:Reference Uri=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter_map(|uri| uri.rsplit('/').next())
        .map(str::to_string)
        .collect()
}

/// Fetches `$metadata` and, transitively, every schema file it references
/// from the service into `dir`. Returns how many files were written.
/// An HTTP client for the service under test, which does not check its
/// certificate: the tools check it; the harness's own requests (the schema
/// crawl, the certificates' set-up) need only the bytes.
pub fn unverified_agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .disable_verification(true)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .proxy(None)
        .build()
        .into()
}

pub fn fetch_schemas(base: &str, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir)?;
    let agent = unverified_agent();
    let get = |path: &str| -> Result<Option<String>> {
        let mut resp = agent
            .get(&format!("{base}{path}"))
            .call()
            .with_context(|| format!("GET {path}"))?;
        match resp.status().as_u16() {
            200 => Ok(Some(resp.body_mut().read_to_string()?)),
            404 => Ok(None),
            s => bail!("GET {path}: HTTP {s}"),
        }
    };
    let metadata = get("/redfish/v1/$metadata")?.context("no $metadata")?;
    std::fs::write(dir.join("metadata.xml"), &metadata)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = references(&metadata);
    let mut written = 0;
    while let Some(file) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        match get(&format!("/redfish/v1/Schemas/{file}"))? {
            Some(text) => {
                todo.extend(references(&text));
                std::fs::write(dir.join(&file), text)?;
                written += 1;
            }
            // OASIS's vocabularies (Org.OData.*) are not DMTF's to serve.
            None if file.starts_with("Org.OData.") => {}
            None => bail!("the service does not serve the schema {file} it references"),
        }
    }
    Ok(written)
}
