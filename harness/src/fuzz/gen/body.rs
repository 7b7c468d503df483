//! The JSON-body families: a PATCH of a resource's own properties with
//! one mutated (and whether it must be refused), an action with mutated
//! parameters, a create (POST to a collection), and bodies that are not a
//! JSON object at all.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::values::*;
use super::{a_type, Case, Gen, Rng, MAX_STRING, SERDE_DEPTH};
use crate::fuzz::crawl::{Action, Param};

impl Gen<'_> {
    /// A body that is not a JSON object a service can take, and why.
    /// (An empty body is a valid action request without parameters.)
    pub(super) fn garbage_body(&self, r: &mut Rng) -> (Vec<u8>, &'static str) {
        match r.below(10) {
            0 => (b"[]".to_vec(), "a non-object body"),
            1 => (b"null".to_vec(), "a non-object body"),
            2 => (b"{\"a\": ".to_vec(), "truncated JSON"),
            3 => (
                deep_json(SERDE_DEPTH * (1 + r.below(800)), r.chance(50)),
                "JSON nested deeper than any resource",
            ),
            4 => (b"{\"\xff\xfe\": 1}".to_vec(), "a body that is not UTF-8"),
            5 => (
                format!("{{\"Name\": \"{}\"}}", "A".repeat(1_100_000)).into_bytes(),
                "a body over 1 MiB",
            ),
            6 => (b"{\"a\": \"\\ud800\"}".to_vec(), "a lone surrogate"),
            7 => (b"{\"a\": 1e99999}".to_vec(), "a number JSON cannot hold"),
            8 => (b"{'single': 'quotes'}".to_vec(), "not JSON"),
            _ => (b"".to_vec(), "an empty body"),
        }
    }

    pub(super) fn patch(&self, r: &mut Rng, c: &mut Case) {
        let res = *r.pick(&self.patchable);
        c.guard = Some(res.path.clone());
        let mut lv = Vec::new();
        leaves(&res.body, &mut Vec::new(), &mut lv);
        // Settings objects take this annotation; elsewhere it is refused.
        lv.push((
            vec!["@Redfish.SettingsApplyTime".into(), "ApplyTime".into()],
            json!("OnReset"),
        ));
        let mut body = Map::new();
        if r.chance(12) || lv.is_empty() {
            let (b, w) = self.garbage_body(r);
            c.must_reject = Some(w.to_string());
            c.req = self.json_req("PATCH", &res.path, b);
            return;
        }
        // Why each path's final value is certainly wrong (a later pick of
        // the same path replaces an earlier one).
        let mut wrong: BTreeMap<String, Option<String>> = BTreeMap::new();
        for _ in 0..1 + r.below(3) {
            let (path, cur) = r.pick(&lv).clone();
            let shown = path.join("/");
            let mut why = None;
            let v = match r.below(7) {
                0 | 1 if !cur.is_null() => {
                    let v = other_type(r, &cur);
                    why = Some(format!(
                        "{shown}: {} where the resource has {}",
                        a_type(&v),
                        a_type(&cur)
                    ));
                    v
                }
                2 if cur.is_string() || cur.is_null() => {
                    why = Some(format!("{shown}: a string over {MAX_STRING} bytes"));
                    Value::String(huge_string(r))
                }
                3 => {
                    let s = nasty_string(r);
                    if let Some(allowed) = allowable(&res.body, &path) {
                        if !allowed.contains(&Value::String(s.clone())) {
                            why = Some(format!("{shown}: a value not in its AllowableValues"));
                        }
                    }
                    Value::String(s)
                }
                4 if cur.is_number() => nasty_number(r),
                _ => match allowable(&res.body, &path) {
                    Some(a) if !a.is_empty() => r.pick(&a).clone(),
                    _ => cur.clone(),
                },
            };
            set_path(&mut body, &path, v);
            wrong.insert(shown, why);
        }
        let mut why = wrong.into_values().flatten().next();
        if r.chance(10) {
            body.insert(format!("Unknown{}", r.below(100)), json!(1));
            why = Some("an unknown property".into());
        }
        c.must_reject = why;
        let text = Value::Object(body).to_string().into_bytes();
        let mut req = self.json_req("PATCH", &res.path, text);
        if r.chance(15) {
            let tag = *r.pick(&["*", "\"nope\"", "W/\"x\""]);
            req = req.header("If-Match", tag);
        }
        c.req = req;
    }

    pub(super) fn param_value(&self, r: &mut Rng, p: &Param, why: &mut Option<String>) -> Value {
        let string_typed = p.data_type.as_deref().is_none_or(|t| t == "String");
        match r.below(6) {
            0..=2 if !p.allowable.is_empty() => r.pick(&p.allowable).clone(),
            3 if string_typed => {
                let v = other_type(r, &json!(""));
                *why = Some(format!("{}: {} for a string parameter", p.name, a_type(&v)));
                v
            }
            4 => {
                let s = if r.chance(30) {
                    huge_string(r)
                } else {
                    nasty_string(r)
                };
                if s.len() > MAX_STRING {
                    *why = Some(format!("{}: a string over {MAX_STRING} bytes", p.name));
                } else if !p.allowable.is_empty()
                    && !p.allowable.contains(&Value::String(s.clone()))
                {
                    *why = Some(format!("{}: a value not in its AllowableValues", p.name));
                }
                Value::String(s)
            }
            _ => match p.data_type.as_deref() {
                Some("Boolean") => json!(r.chance(50)),
                Some("Number") => nasty_number(r),
                _ => Value::String(format!("http://127.0.0.1:9/{}.iso", r.below(10))),
            },
        }
    }

    pub(super) fn action(&self, r: &mut Rng, c: &mut Case, a: &Action) {
        c.guard = Some(a.owner.clone());
        if r.chance(12) {
            let (b, w) = self.garbage_body(r);
            c.must_reject = (!b.is_empty()).then(|| w.to_string());
            c.req = self.json_req("POST", &a.target, b);
            return;
        }
        let mut body = Map::new();
        let mut why = None;
        for p in &a.params {
            if r.chance(80) {
                let v = self.param_value(r, p, &mut why);
                body.insert(p.name.clone(), v);
            }
        }
        if r.chance(10) {
            body.insert("NoSuchParameter".into(), json!("x"));
            why = Some("an unknown parameter".into());
        }
        c.must_reject = why;
        c.req = self.json_req(
            "POST",
            &a.target,
            Value::Object(body).to_string().into_bytes(),
        );
    }

    pub(super) fn create(&self, r: &mut Rng, c: &mut Case) {
        let coll = *r.pick(&self.creatable);
        c.guard = Some(coll.path.clone());
        if r.chance(20) {
            let (b, w) = self.garbage_body(r);
            c.must_reject = Some(w.to_string());
            c.req = self.json_req("POST", &coll.path, b);
            return;
        }
        // Keys a member of the collection shows, with mutated values.
        let member = coll
            .body
            .get("Members")
            .and_then(Value::as_array)
            .and_then(|m| m.first())
            .and_then(|m| m.get("@odata.id"))
            .and_then(Value::as_str)
            .and_then(|p| self.surface.get(p));
        let mut lv = Vec::new();
        if let Some(m) = member {
            leaves(&m.body, &mut Vec::new(), &mut lv);
        }
        for k in ["UserName", "Password", "RoleId", "RAIDType", "Name"] {
            lv.push((vec![k.to_string()], json!("x")));
        }
        let mut body = Map::new();
        for _ in 0..1 + r.below(4) {
            let (path, cur) = r.pick(&lv).clone();
            let v = match r.below(4) {
                0 => other_type(r, &cur),
                1 => Value::String(nasty_string(r)),
                2 => Value::String(huge_string(r)),
                _ => cur,
            };
            set_path(&mut body, &path, v);
        }
        c.req = self.json_req(
            "POST",
            &coll.path,
            Value::Object(body).to_string().into_bytes(),
        );
    }
}
