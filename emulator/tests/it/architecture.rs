//! ARCHITECTURE.md's written rules, checked: which folder never imports
//! which, no import circle between the emulator's top-level modules, and
//! the sizes files and functions stay under. The rules read the source
//! as text (every `crate::x` path outside test modules), so a broken rule
//! fails here, naming the file and the line, before it reaches review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `(folder, never imports, why)`: the emulator's "never" rules.
const NEVER: &[(&str, &[&str], &str)] = &[
    (
        "bmc",
        &[
            "api", "ipmi", "server", "serve", "cli", "config", "sushy", "admin",
        ],
        "the BMC core decides for every front-end and knows none",
    ),
    (
        "ipmi",
        &["api", "server", "cli", "config", "sushy", "admin"],
        "IPMI is a front-end beside Redfish, over the core",
    ),
    (
        "api",
        &["ipmi", "server", "cli", "sushy", "admin"],
        "Redfish is a front-end beside IPMI, over the core",
    ),
    (
        "backend",
        &[
            "api", "ipmi", "bmc", "server", "serve", "cli", "config", "sushy", "admin", "profile",
            "faults", "auth",
        ],
        "machines know nothing of the BMC in front of them nor of start-up",
    ),
    (
        "model",
        &[
            "api", "ipmi", "bmc", "backend", "server", "serve", "cli", "config", "sushy", "admin",
            "profile", "faults", "auth",
        ],
        "the vocabulary every layer shares sits below them all",
    ),
    (
        "mockup",
        &[
            "api", "ipmi", "bmc", "backend", "server", "serve", "cli", "config", "sushy", "admin",
            "faults", "auth",
        ],
        "a capture is data: the Redfish front-end replays it over the core",
    ),
];

/// Production files stay under this many lines (their test module aside).
const FILE_MAX: usize = 600;
/// ... and their functions under this many.
const FUNCTION_MAX: usize = 120;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Test code: a `tests` folder or file, which the rules do not bind.
fn is_test_file(rel: &str) -> bool {
    rel.split('/').any(|s| s == "tests" || s == "tests.rs")
}

/// The production lines of a file: up to its `#[cfg(test)]` module.
fn production(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .collect()
}

/// The top-level modules (`crate::x`) a line names, outside comments.
fn named_modules(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::x, b}`: each member's first segment.
            let inner = group.split('}').next().unwrap_or("");
            out.extend(inner.split(',').map(|m| first_segment(m.trim())));
        } else {
            out.push(first_segment(rest));
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

fn first_segment(path: &str) -> String {
    path.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every import of the emulator crate's production code: (top-level
/// module of the file, module named, file, line number).
fn imports() -> Vec<(String, String, String, usize)> {
    let src = workspace().join("emulator/src");
    let mut out = Vec::new();
    for path in sources(&src) {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if is_test_file(&rel) {
            continue;
        }
        let top = first_segment(&rel);
        let text = std::fs::read_to_string(&path).unwrap();
        // `use crate::{...}` groups may span lines: joined per statement.
        let mut statement = String::new();
        for (n, line) in production(&text).iter().enumerate() {
            statement.push_str(line.split("//").next().unwrap_or(""));
            if statement.trim_start().starts_with("use ") && !statement.contains(';') {
                continue;
            }
            for m in named_modules(&statement) {
                if m != top {
                    out.push((top.clone(), m, rel.clone(), n + 1));
                }
            }
            statement.clear();
        }
    }
    out
}

#[test]
fn no_folder_imports_what_its_rule_forbids() {
    let mut broken = Vec::new();
    for (from, to, file, line) in imports() {
        for (folder, never, why) in NEVER {
            if from == *folder && never.contains(&to.as_str()) {
                broken.push(format!(
                    "emulator/src/{file}:{line}: {folder} imports {to} ({why})"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_top_level_modules_form_no_import_circle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut at: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, to, file, line) in imports() {
        at.entry((from.clone(), to.clone()))
            .or_insert(format!("emulator/src/{file}:{line}"));
        graph.entry(from).or_default().insert(to);
    }
    // Depth-first search; a grey node met again closes a circle.
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let start = path.iter().position(|p| p == n).unwrap();
                let mut circle = path[start..].to_vec();
                circle.push(n.to_string());
                return Some(circle);
            }
            Some(_) => return None,
            None => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if let Some(circle) = visit(n, &graph, &mut state, &mut Vec::new()) {
            let arrows: Vec<String> = circle
                .windows(2)
                .map(|w| {
                    let key = (w[0].clone(), w[1].clone());
                    format!("{} -> {} ({})", w[0], w[1], at[&key])
                })
                .collect();
            panic!("import circle:\n{}", arrows.join("\n"));
        }
    }
}

/// Where generic Redfish code may name a vendor wing: `api/vendor.rs`
/// (the hooks) and `api/mod.rs` (merging the wings' routers).
const WING_DOORS: &[&str] = &["api/vendor.rs", "api/mod.rs"];

#[test]
fn vendor_wings_are_reached_only_through_their_hooks() {
    let src = workspace().join("emulator/src");
    let mut broken = Vec::new();
    for path in sources(&src.join("api")) {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if is_test_file(&rel)
            || rel.starts_with("api/dell/")
            || rel.starts_with("api/hpe/")
            || WING_DOORS.contains(&rel.as_str())
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in production(&text).iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for wing in ["dell::", "hpe::"] {
                let named = code.match_indices(wing).any(|(i, _)| {
                    // A path segment, not the end of another name.
                    !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if named {
                    broken.push(format!(
                        "emulator/src/{rel}:{}: names {wing} (use a hook in api/vendor.rs)",
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The line a function starts on and its name, if `line` starts one.
fn function_start(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name = rest.split(['(', '<']).next()?;
    Some(name)
}

#[test]
fn files_and_functions_stay_readable() {
    let root = workspace();
    let mut over = Vec::new();
    for crate_src in ["emulator/src", "ipmi/src", "harness/src"] {
        let dir = root.join(crate_src);
        for path in sources(&dir) {
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            if is_test_file(&rel) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines = production(&text);
            if lines.len() > FILE_MAX {
                over.push(format!("{rel}: {} lines (at most {FILE_MAX})", lines.len()));
            }
            for (i, line) in lines.iter().enumerate() {
                let Some(name) = function_start(line) else {
                    continue;
                };
                let indent = &line[..line.len() - line.trim_start().len()];
                // A declaration without a body (a trait's) ends in `;`.
                let Some(open) = lines[i..]
                    .iter()
                    .position(|l| l.contains('{') || l.trim_end().ends_with(';'))
                else {
                    continue;
                };
                if !lines[i + open].contains('{') || lines[i + open].trim_end().ends_with('}') {
                    continue;
                }
                let end = lines[i + open..]
                    .iter()
                    .position(|l| *l == format!("{indent}}}"))
                    .map_or(lines.len(), |e| i + open + e);
                let len = end - i + 1;
                if len > FUNCTION_MAX {
                    over.push(format!(
                        "{rel}:{}: fn {name} is {len} lines (at most {FUNCTION_MAX})",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn the_rules_see_imports() {
    // The checks above read text: a line they could not parse would make
    // them pass for nothing. These are the shapes the code uses.
    assert_eq!(named_modules("use crate::model::System;"), ["model"]);
    assert_eq!(
        named_modules("use crate::{api::AppState, bmc};"),
        ["api", "bmc"]
    );
    assert_eq!(
        named_modules("    let x = crate::config::fake_systems(1); // crate::api"),
        ["config"]
    );
    assert_eq!(
        function_start("    pub(crate) async fn go<T>(x: T) {"),
        Some("go")
    );
    assert_eq!(function_start("    let f = fn_name;"), None);
    let found = imports();
    assert!(
        found
            .iter()
            .any(|(from, to, ..)| from == "api" && to == "bmc"),
        "the API's imports of the core are seen"
    );
}
