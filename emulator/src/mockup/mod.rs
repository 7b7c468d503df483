//! A capture of a real BMC (`shoal-harness capture`, DMTF's
//! Redfish-Mockup-Creator, or a DMTF mockup in its short form), loaded
//! whole and checked at start-up for `--mockup`: from a folder or a
//! `.tar.gz` (`archive.rs`).
//!
//! Layouts: Mockup-Creator's (`redfish/v1/index.json`, a folder per URI
//! below the capture's root) or DMTF's short form (the service root's
//! `index.json` at the top, folders below `/redfish/v1`). Per folder:
//! `index.json` (or `index.xml`, CSDL), and optionally `headers.json`
//! (`{"GET": {…}}`), `time.json` (`{"GET_Time": "0.12"}`) and `error.txt`
//! (what the BMC answered instead: `HTTP 404`, headers, body).
//!
//! Invariants: loading is all or nothing, and every error names the file;
//! the root's Systems, Managers and Chassis and their members resolve to
//! captured resources (other links to nothing are listed, as a real BMC
//! has them); nothing here knows HTTP routing or the machines
//! (`api/mockup/` grafts those on).

mod archive;
mod profile;
mod style;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use profile::derived_profile;
pub use style::ErrorStyle;

/// At most this many files are read (a capture of a large server holds a
/// few thousand).
pub const MAX_FILES: usize = 200_000;
/// At most this many bytes in all.
pub const MAX_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum MockupError {
    #[error("{0}: {1}")]
    Io(PathBuf, String),
    #[error("{0} is not a capture: it has neither redfish/v1/index.json (Redfish-Mockup-Creator's layout) nor a service root index.json at its top (DMTF's short form)")]
    NotACapture(PathBuf),
    #[error("{file}: {why}")]
    Bad { file: PathBuf, why: String },
    #[error("{file}: {link} points nowhere in the capture")]
    Dangling { file: PathBuf, link: String },
    #[error("{0}: more than {1}")]
    TooLarge(PathBuf, String),
}

/// What the BMC answered to a captured GET.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Json(Value),
    /// A CSDL document (`$metadata`, `/redfish/v1/Schemas/…`).
    Xml(String),
    /// Not a resource: the status, and the body as it came.
    Error {
        status: u16,
        body: String,
    },
}

/// One captured URI.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    pub body: Body,
    /// The response headers kept (`headers.json`, or `error.txt`'s).
    pub headers: Headers,
    /// How long the GET took (`time.json`).
    pub secs: Option<f64>,
    /// The file it came from, for messages.
    pub file: PathBuf,
}

/// A whole capture, by URI (without a trailing `/`).
#[derive(Debug, Clone)]
pub struct Mockup {
    pub source: PathBuf,
    pub resources: BTreeMap<String, Captured>,
    /// The ComputerSystems the Systems collection lists, in its order.
    pub systems: Vec<String>,
    /// Links (other than members and the root's) to nothing captured.
    pub dangling: Vec<(String, String)>,
    /// Each key in lower case → the key, where no other folds to it: an
    /// iLO answers its URIs in any case, and links `/redfish/v1/systems/1/bios`
    /// beside the `Systems/1/bios` folder.
    pub folded: BTreeMap<String, String>,
}

/// `uri` as a capture's key: path only, no trailing `/`.
pub fn key(uri: &str) -> &str {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    match path.trim_end_matches('/') {
        "" => "/",
        k => k,
    }
}

/// A capture to replay and whether with its latencies (`--mockup`,
/// `mockup_latency`).
pub type Replayed = (std::sync::Arc<Mockup>, bool);

/// Response headers as captured.
pub type Headers = Vec<(String, String)>;

/// The files of a capture: path below its root → bytes.
type Files = BTreeMap<PathBuf, Vec<u8>>;

/// Whether a capture's file named `name` is read: the files of
/// [`KNOWN`], and a resource kept as a file of its own (`Base.1.5.0.json`
/// in DMTF's mockups, served at its own URI as Mockup-Server serves it).
fn wanted(name: &str) -> bool {
    KNOWN.contains(&name) || name.ends_with(".json")
}

/// The files a capture folder holds per URI; others are left unread.
const KNOWN: [&str; 5] = [
    "index.json",
    "index.xml",
    "headers.json",
    "time.json",
    "error.txt",
];

impl Mockup {
    /// Loads and checks the capture at `path` (a folder, or a `.tar.gz` /
    /// `.tgz` file).
    pub fn load(path: &Path) -> Result<Mockup, MockupError> {
        let meta =
            std::fs::metadata(path).map_err(|e| MockupError::Io(path.into(), e.to_string()))?;
        let files = if meta.is_dir() {
            read_folder(path)?
        } else {
            archive::read(path)?
        };
        Mockup::from_files(path, files)
    }

    fn from_files(source: &Path, files: Files) -> Result<Mockup, MockupError> {
        let (files, base) = locate(source, files)?;
        let mut folders: BTreeMap<String, BTreeMap<&str, (&PathBuf, &Vec<u8>)>> = BTreeMap::new();
        for (rel, bytes) in &files {
            let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let (known, dir) = match KNOWN.iter().find(|k| **k == name) {
                Some(k) => (*k, rel.parent()),
                // A resource as a file of its own: its path is its URI.
                None if wanted(name) => ("index.json", Some(rel.as_path())),
                None => continue,
            };
            let dir = dir.map(|p| p.to_string_lossy().to_string());
            let uri = uri_of(&base, dir.as_deref().unwrap_or(""));
            folders.entry(uri).or_default().insert(known, (rel, bytes));
        }
        let mut resources = BTreeMap::new();
        for (uri, parts) in &folders {
            if let Some(c) = captured(source, parts)? {
                resources.insert(uri.clone(), c);
            }
        }
        if base == Base::Short && !resources.contains_key("/redfish") {
            // DMTF's short form has no version document; Mockup-Server
            // answers it so.
            resources.insert(
                "/redfish".into(),
                Captured {
                    body: Body::Json(serde_json::json!({"v1": "/redfish/v1/"})),
                    headers: Vec::new(),
                    secs: None,
                    file: source.into(),
                },
            );
        }
        let mut m = Mockup {
            source: source.into(),
            resources,
            systems: Vec::new(),
            dangling: Vec::new(),
            folded: BTreeMap::new(),
        };
        m.folded = folded(m.resources.keys());
        m.check()?;
        Ok(m)
    }

    /// The key `uri` is captured under: its own, else the one it names in
    /// another case (as the BMC answered it); a URI not captured, as a key.
    pub fn canonical(&self, uri: &str) -> String {
        let k = key(uri);
        if self.resources.contains_key(k) {
            return k.to_string();
        }
        match self.folded.get(&k.to_lowercase()) {
            Some(found) => found.clone(),
            None => k.to_string(),
        }
    }

    /// `path` with its longest captured prefix in the capture's case
    /// (`/redfish/v1/sessionservice/sessions/7` →
    /// `/redfish/v1/SessionService/Sessions/7`), so routes of Shoal's own
    /// match whatever case a client sends.
    pub fn canonical_prefix(&self, path: &str) -> String {
        let k = key(path);
        if self.resources.contains_key(k) || self.folded.is_empty() {
            return k.to_string();
        }
        let mut end = k.len();
        loop {
            let prefix = &k[..end];
            if let Some(found) = self.folded.get(&prefix.to_lowercase()) {
                return format!("{found}{}", &k[end..]);
            }
            match prefix.rfind('/') {
                Some(i) if i > 0 => end = i,
                _ => return k.to_string(),
            }
        }
    }

    /// The MACs the captured `system`'s EthernetInterfaces show, in the
    /// collection's order, lower case (those that are MACs at all).
    pub fn macs(&self, system: &str) -> Vec<String> {
        let members = self
            .json(system)
            .and_then(|v| v.pointer("/EthernetInterfaces/@odata.id"))
            .and_then(Value::as_str)
            .and_then(|c| self.json(c))
            .map(members)
            .unwrap_or_default();
        members
            .iter()
            .filter_map(|m| self.json(m)?.get("MACAddress")?.as_str())
            .map(str::to_lowercase)
            .filter(|m| {
                let octets: Vec<&str> = m.split(':').collect();
                octets.len() == 6
                    && octets
                        .iter()
                        .all(|o| o.len() == 2 && o.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .collect()
    }

    /// What was captured at `uri` (in any case, `canonical`).
    pub fn get(&self, uri: &str) -> Option<&Captured> {
        self.resources.get(&self.canonical(uri))
    }

    /// The JSON body of `uri`, if captured as one.
    pub fn json(&self, uri: &str) -> Option<&Value> {
        match &self.get(uri)?.body {
            Body::Json(v) => Some(v),
            _ => None,
        }
    }

    fn file_of(&self, uri: &str) -> PathBuf {
        self.get(uri)
            .map_or_else(|| self.source.clone(), |c| c.file.clone())
    }

    /// Whether the capture holds the BMC's refusal of `uri`.
    fn refused(&self, uri: &str) -> bool {
        matches!(self.get(uri).map(|c| &c.body), Some(Body::Error { .. }))
    }

    /// The captured resources one segment below `uri`, as members.
    fn below(&self, uri: &str) -> Vec<String> {
        let prefix = format!("{}/", key(uri));
        self.resources
            .keys()
            .filter(|k| {
                k.strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/'))
            })
            .filter(|k| self.json(k).is_some())
            .cloned()
            .collect()
    }

    /// What a replay stands on resolves (the root's Systems, Managers and
    /// Chassis, and the systems); other links to nothing are kept, to be
    /// told at start-up (a real BMC links to what it then refuses).
    fn check(&mut self) -> Result<(), MockupError> {
        let root = self
            .json("/redfish/v1")
            .ok_or_else(|| MockupError::NotACapture(self.source.clone()))?
            .clone();
        let root_file = self.file_of("/redfish/v1");
        let mut systems = Vec::new();
        for name in ["Systems", "Managers", "Chassis"] {
            let Some(link) = root
                .get(name)
                .and_then(|v| v.get("@odata.id"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let listed = match self.json(link) {
                Some(collection) => members(collection),
                // The BMC refused the collection to the capturer (an AMI
                // answers 403 to an account without the privilege), yet
                // its members were captured: those below it are.
                None if self.refused(link) => self.below(link),
                None => {
                    return Err(MockupError::Dangling {
                        file: root_file,
                        link: link.into(),
                    })
                }
            };
            // A manager or chassis the BMC failed to answer is a link to
            // nothing, told at start-up as others are; a system is what
            // the replay stands on.
            for m in listed.iter().filter(|_| name == "Systems") {
                if self.json(m).is_none() {
                    return Err(MockupError::Dangling {
                        file: self.file_of(key(link)),
                        link: m.clone(),
                    });
                }
            }
            if name == "Systems" {
                systems = listed;
            }
        }
        let mut dangling = Vec::new();
        for (uri, c) in &self.resources {
            let Body::Json(v) = &c.body else { continue };
            let mut links = members(v);
            collect_links(v, &mut links);
            for l in links {
                if l.starts_with("/redfish/") && self.get(&l).is_none() {
                    dangling.push((uri.clone(), l));
                }
            }
        }
        self.dangling = dangling;
        self.systems = systems.iter().map(|s| self.canonical(s)).collect();
        Ok(())
    }
}

/// Each of `keys` in lower case → the key, but those two keys share.
fn folded<'a>(keys: impl Iterator<Item = &'a String>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, Option<String>> = BTreeMap::new();
    for k in keys {
        out.entry(k.to_lowercase())
            .and_modify(|v| *v = None)
            .or_insert_with(|| Some(k.clone()));
    }
    out.into_iter().filter_map(|(l, k)| Some((l, k?))).collect()
}

/// A collection's member links.
pub fn members(v: &Value) -> Vec<String> {
    v.get("Members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("@odata.id").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Every `@odata.id` below `v` but its own.
fn collect_links(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, item) in m {
                match item {
                    Value::Object(inner) => {
                        if let Some(l) = inner.get("@odata.id").and_then(Value::as_str) {
                            if !l.contains('#') {
                                out.push(l.to_string());
                            }
                        }
                        collect_links(item, out);
                    }
                    Value::Array(_) if k != "Members" => collect_links(item, out),
                    _ => {}
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_links(i, out)),
        _ => {}
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Base {
    /// Mockup-Creator's: folders are the URIs' paths.
    Full,
    /// DMTF's short form: folders are below `/redfish/v1`.
    Short,
}

/// Finds the capture's root among `files` (at the top, or below one
/// folder, as an archive often has it) and its layout.
fn locate(source: &Path, files: Files) -> Result<(Files, Base), MockupError> {
    let has = |p: &str| files.contains_key(Path::new(p));
    let top: Option<String> = {
        let mut tops = files
            .keys()
            .filter_map(|p| p.components().next())
            .map(|c| c.as_os_str().to_string_lossy().to_string());
        let first = tops.next();
        first.filter(|f| tops.all(|t| &t == f) && f != "index.json")
    };
    let (prefix, base) = if has("redfish/v1/index.json") {
        (None, Base::Full)
    } else if has("index.json") {
        (None, Base::Short)
    } else if let Some(t) = top
        .filter(|t| has(&format!("{t}/redfish/v1/index.json")) || has(&format!("{t}/index.json")))
    {
        let base = if has(&format!("{t}/redfish/v1/index.json")) {
            Base::Full
        } else {
            Base::Short
        };
        (Some(t), base)
    } else {
        return Err(MockupError::NotACapture(source.into()));
    };
    let files = match prefix {
        None => files,
        Some(t) => files
            .into_iter()
            .filter_map(|(p, b)| Some((p.strip_prefix(&t).ok()?.to_path_buf(), b)))
            .collect(),
    };
    Ok((files, base))
}

fn uri_of(base: &Base, dir: &str) -> String {
    match (base, dir) {
        (Base::Full, d) => format!("/{d}"),
        (Base::Short, "") => "/redfish/v1".into(),
        (Base::Short, d) => format!("/redfish/v1/{d}"),
    }
}

/// One folder's files as a captured resource (`None`: nothing served).
fn captured(
    source: &Path,
    parts: &BTreeMap<&str, (&PathBuf, &Vec<u8>)>,
) -> Result<Option<Captured>, MockupError> {
    let file = |rel: &PathBuf| source.join(rel);
    let text = |rel: &PathBuf, bytes: &[u8]| {
        String::from_utf8(bytes.to_vec()).map_err(|_| MockupError::Bad {
            file: file(rel),
            why: "not UTF-8".into(),
        })
    };
    let parsed = |rel: &PathBuf, bytes: &[u8]| -> Result<Value, MockupError> {
        serde_json::from_slice(bytes).map_err(|e| MockupError::Bad {
            file: file(rel),
            why: format!("not JSON: {e}"),
        })
    };
    let (body, from, mut headers) = if let Some((rel, bytes)) = parts.get("index.json") {
        let mut v = parsed(rel, bytes)?;
        let Some(resource) = v.as_object_mut() else {
            return Err(MockupError::Bad {
                file: file(rel),
                why: "not a JSON object".into(),
            });
        };
        // DMTF's mockups carry their copyright in each resource, an
        // annotation "only intended for use in mockups" (the Service
        // Validator fails a service that sends it); no BMC does, and
        // DMTF's Mockup-Server leaves it out too.
        resource.shift_remove("@Redfish.Copyright");
        (Body::Json(v), *rel, Vec::new())
    } else if let Some((rel, bytes)) = parts.get("index.xml") {
        (Body::Xml(text(rel, bytes)?), *rel, Vec::new())
    } else if let Some((rel, bytes)) = parts.get("error.txt") {
        let (status, headers, body) =
            error_txt(&text(rel, bytes)?).ok_or_else(|| MockupError::Bad {
                file: file(rel),
                why: "an error.txt starts with `HTTP <status>`".into(),
            })?;
        (Body::Error { status, body }, *rel, headers)
    } else {
        return Ok(None);
    };
    if let Some((rel, bytes)) = parts.get("headers.json") {
        let v = parsed(rel, bytes)?;
        let get = v
            .get("GET")
            .and_then(Value::as_object)
            .ok_or_else(|| MockupError::Bad {
                file: file(rel),
                why: "headers.json holds {\"GET\": {header: value, …}}".into(),
            })?;
        headers = get
            .iter()
            .filter_map(|(n, v)| Some((n.clone(), v.as_str()?.to_string())))
            .collect();
    }
    let secs = match parts.get("time.json") {
        None => None,
        Some((rel, bytes)) => {
            let v = parsed(rel, bytes)?;
            let t = match v.get("GET_Time") {
                Some(Value::String(s)) => s.parse::<f64>().ok(),
                Some(Value::Number(n)) => n.as_f64(),
                _ => None,
            };
            match t {
                Some(t) if t.is_finite() && t >= 0.0 => Some(t),
                _ => {
                    return Err(MockupError::Bad {
                        file: file(rel),
                        why: "time.json holds {\"GET_Time\": \"<seconds>\"}".into(),
                    })
                }
            }
        }
    };
    Ok(Some(Captured {
        body,
        headers,
        secs,
        file: file(from),
    }))
}

/// `HTTP 404`, header lines, a blank line, the body.
fn error_txt(text: &str) -> Option<(u16, Headers, String)> {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines.next()?.strip_prefix("HTTP ")?.trim().parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Some((status, headers, body.to_string()))
}

/// The known files of a capture folder, bounded; symbolic links refused.
fn read_folder(root: &Path) -> Result<Files, MockupError> {
    let mut files = Files::new();
    let mut bytes = 0u64;
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| MockupError::Io(dir.clone(), e.to_string()))?;
        for entry in entries {
            let entry = entry.map_err(|e| MockupError::Io(dir.clone(), e.to_string()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| MockupError::Io(path.clone(), e.to_string()))?;
            if kind.is_symlink() {
                return Err(MockupError::Bad {
                    file: path,
                    why: "a symbolic link (a capture holds plain files)".into(),
                });
            }
            if kind.is_dir() {
                todo.push(path);
                continue;
            }
            let name = entry.file_name();
            if !name.to_str().is_some_and(wanted) {
                continue;
            }
            if files.len() >= MAX_FILES {
                return Err(MockupError::TooLarge(
                    root.into(),
                    format!("{MAX_FILES} files"),
                ));
            }
            let data =
                std::fs::read(&path).map_err(|e| MockupError::Io(path.clone(), e.to_string()))?;
            bytes += data.len() as u64;
            if bytes > MAX_BYTES {
                return Err(MockupError::TooLarge(
                    root.into(),
                    format!("{MAX_BYTES} bytes"),
                ));
            }
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            files.insert(rel, data);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests;
