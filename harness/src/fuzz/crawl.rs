//! The surface the fuzzer aims at, taken from the service itself (there is
//! no OpenAPI document in any package this project can install: DMTF
//! publishes `openapi.yaml` only in the DSP8010 bundle, and the
//! `nv-redfish-schema` crate ships CSDL): every resource reachable from
//! `/redfish/v1` by `@odata.id`, with its `Allow` methods and body, every
//! action with its target and parameters (`@Redfish.ActionInfo`,
//! `@Redfish.AllowableValues`), and the message registries it serves.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use super::http::{Client, Req};

/// Most resources crawled (the schema files alone are several hundred).
const MAX_RESOURCES: usize = 1500;

#[derive(Debug, Clone)]
pub struct Resource {
    pub path: String,
    pub allow: Vec<String>,
    pub body: Value,
}

impl Resource {
    pub fn allows(&self, method: &str) -> bool {
        self.allow.iter().any(|m| m == method)
    }
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    /// `String`, `Boolean`, `Number`, `Object`, … from the ActionInfo.
    pub data_type: Option<String>,
    pub allowable: Vec<Value>,
}

#[derive(Debug, Clone)]
pub struct Action {
    /// `#ComputerSystem.Reset`.
    pub name: String,
    pub target: String,
    /// The resource whose `Actions` names it.
    pub owner: String,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone, Default)]
pub struct Surface {
    /// Every resource that answered 200 with JSON, in crawl order.
    pub resources: Vec<Resource>,
    pub actions: Vec<Action>,
    /// Registry prefixes a MessageId may have (`Base`, and those served
    /// under `/redfish/v1/Registries`).
    pub registries: BTreeSet<String>,
}

impl Surface {
    pub fn get(&self, path: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.path == path)
    }
}

fn links(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("@odata.id", Value::String(s)) => out.push(s.clone()),
                    ("target" | "@Redfish.ActionInfo", Value::String(s)) => out.push(s.clone()),
                    _ => links(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| links(x, out)),
        _ => {}
    }
}

/// A path without its fragment (`/Chassis/1#/Thermal/0`), under `/redfish/v1`.
fn resource_path(s: &str) -> Option<String> {
    let p = s.split('#').next()?.trim_end_matches('/');
    (p.starts_with("/redfish/v1") && !p.contains('?')).then(|| p.to_string())
}

fn actions_of(owner: &str, body: &Value, out: &mut Vec<(String, String, String, Value)>) {
    let Some(acts) = body.get("Actions").and_then(Value::as_object) else {
        return;
    };
    let mut stack: Vec<&serde_json::Map<String, Value>> = vec![acts];
    while let Some(m) = stack.pop() {
        for (k, v) in m {
            if k == "Oem" {
                if let Some(o) = v.as_object() {
                    stack.push(o);
                }
                continue;
            }
            let Some(target) = v.get("target").and_then(Value::as_str) else {
                continue;
            };
            out.push((k.clone(), target.to_string(), owner.to_string(), v.clone()));
        }
    }
}

/// Crawls from `/redfish/v1` with `auth` (a header, or none).
pub fn crawl(client: &mut Client, auth: Option<&(String, Vec<u8>)>) -> Surface {
    let get = |client: &mut Client, path: &str| {
        let mut r = Req::new("GET", path);
        if let Some((n, v)) = auth {
            r = r.header(n, v.clone());
        }
        client.send(&r).ok()
    };
    let mut seen = BTreeSet::new();
    let mut todo = VecDeque::from(["/redfish/v1".to_string()]);
    let mut s = Surface::default();
    let mut raw_actions = Vec::new();
    while let Some(path) = todo.pop_front() {
        if s.resources.len() >= MAX_RESOURCES || !seen.insert(path.clone()) {
            continue;
        }
        // The schema documents are static files: their collections are
        // enough.
        if path.contains("/Schemas/") || path.contains("/JsonSchemas/") {
            continue;
        }
        let Some(resp) = get(client, &path) else {
            continue;
        };
        let Some(body) = resp.json().filter(|_| resp.status == 200) else {
            continue;
        };
        let allow = resp
            .header("allow")
            .unwrap_or("GET")
            .split(',')
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        let mut found = Vec::new();
        links(&body, &mut found);
        todo.extend(found.iter().filter_map(|l| resource_path(l)));
        actions_of(&path, &body, &mut raw_actions);
        s.resources.push(Resource { path, allow, body });
    }
    s.registries.insert("Base".into());
    for r in &s.resources {
        if r.path.starts_with("/redfish/v1/Registries/") {
            if let Some(id) = r.body.get("Id").and_then(Value::as_str) {
                s.registries
                    .insert(id.split('.').next().unwrap_or(id).to_string());
            }
        }
    }
    for (name, target, owner, decl) in raw_actions {
        let mut params: BTreeMap<String, Param> = BTreeMap::new();
        if let Some(info) = decl.get("@Redfish.ActionInfo").and_then(Value::as_str) {
            let body = s.get(info.trim_end_matches('/')).map(|r| r.body.clone());
            for p in body
                .as_ref()
                .and_then(|b| b.get("Parameters"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(n) = p.get("Name").and_then(Value::as_str) else {
                    continue;
                };
                params.insert(
                    n.to_string(),
                    Param {
                        name: n.to_string(),
                        data_type: p
                            .get("DataType")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        allowable: p
                            .get("AllowableValues")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default(),
                    },
                );
            }
        }
        for (k, v) in decl.as_object().into_iter().flatten() {
            if let Some(n) = k.strip_suffix("@Redfish.AllowableValues") {
                let p = params.entry(n.to_string()).or_insert_with(|| Param {
                    name: n.to_string(),
                    data_type: Some("String".into()),
                    allowable: Vec::new(),
                });
                if p.allowable.is_empty() {
                    p.allowable = v.as_array().cloned().unwrap_or_default();
                }
            }
        }
        s.actions.push(Action {
            name,
            target,
            owner,
            params: params.into_values().collect(),
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn links_and_actions_are_found() {
        let body = json!({
            "@odata.id": "/redfish/v1/Systems/1",
            "Boot": {"Certificates": {"@odata.id": "/redfish/v1/Systems/1/Boot/Certificates"}},
            "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1#/x"}]},
            "Actions": {
                "#ComputerSystem.Reset": {"target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                    "ResetType@Redfish.AllowableValues": ["On"]},
                "Oem": {"#Shoal.X": {"target": "/redfish/v1/Systems/1/Actions/Oem/Shoal.X"}}
            }
        });
        let mut l = Vec::new();
        links(&body, &mut l);
        let paths: Vec<_> = l.iter().filter_map(|p| resource_path(p)).collect();
        assert!(
            paths.contains(&"/redfish/v1/Chassis/1".to_string()),
            "{paths:?}"
        );
        assert!(paths.contains(&"/redfish/v1/Systems/1/Boot/Certificates".to_string()));
        let mut a = Vec::new();
        actions_of("/redfish/v1/Systems/1", &body, &mut a);
        let names: BTreeSet<_> = a.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, BTreeSet::from(["#ComputerSystem.Reset", "#Shoal.X"]));
        assert_eq!(resource_path("http://elsewhere/redfish/v1"), None);
    }
}
