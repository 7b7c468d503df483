//! `[emulator] mockup`: a capture replayed as the case's BMC, found
//! beside the scenario file, and the Id of the one system it holds (the
//! machine stands behind it; drivers ask for that Id).

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::Emulator;

/// Makes `e.mockup` a path (it is relative to the scenario file `path`)
/// and reads the captured system's Id.
pub(super) fn resolve(e: &mut Emulator, path: &Path) -> Result<()> {
    let Some(m) = &e.mockup else { return Ok(()) };
    if e.profile.is_some() || e.system_id.is_some() {
        bail!("the capture is the BMC (its profile is derived from it, its Ids are its own); no emulator.profile or emulator.system_id beside it");
    }
    let dir = path.parent().unwrap_or(Path::new(".")).join(m);
    e.mockup_system = Some(captured_system(&dir)?);
    e.mockup = Some(dir);
    Ok(())
}

/// The Id of the one ComputerSystem a capture folder holds (its Systems
/// collection's member), as a scenario's machine stands behind it.
fn captured_system(dir: &Path) -> Result<String> {
    let collection = ["redfish/v1/Systems/index.json", "Systems/index.json"]
        .iter()
        .map(|p| dir.join(p))
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "{}: no capture there (no redfish/v1/Systems/index.json)",
                dir.display()
            )
        })?;
    let text = std::fs::read_to_string(&collection)
        .with_context(|| format!("read {}", collection.display()))?;
    let v: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .with_context(|| format!("{}: not JSON", collection.display()))?;
    let members: Vec<&str> = v["Members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["@odata.id"].as_str())
        .collect();
    let [member] = members[..] else {
        bail!(
            "{}: a scenario's machine stands behind one captured system; this capture has {}",
            collection.display(),
            members.len()
        );
    };
    member
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .with_context(|| format!("{}: member {member:?} has no Id", collection.display()))
}
