//! Requests generated from the crawled surface: mutated JSON bodies
//! (wrong types, huge strings, deep nesting, unicode, numbers out of
//! range, unknown keys), mutated paths, query strings, headers, methods
//! and raw bytes. Case `n` of seed `s` is a pure function of `(s, n)` and
//! the surface, so one case can be replayed alone (`--case`).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{json, Map, Value};

use super::crawl::{Action, Resource, Surface};
use super::http::Req;

/// Longest string a service is expected to accept in a property: a 2xx
/// for a longer one is a finding (no Redfish property Shoal serves needs
/// more; URIs are bounded well below).
pub const MAX_STRING: usize = 8192;
/// Nesting serde_json refuses past (its recursion limit).
const SERDE_DEPTH: usize = 128;

/// SplitMix64: small, fast, and the same on every platform and version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn for_case(seed: u64, case: u64) -> Rng {
        let mut r = Rng(seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Patch,
    Action,
    Create,
    Path,
    Query,
    Header,
    Method,
    Raw,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Patch => "patch-body",
            Kind::Action => "action-body",
            Kind::Create => "create-body",
            Kind::Path => "path",
            Kind::Query => "query",
            Kind::Header => "header",
            Kind::Method => "method",
            Kind::Raw => "raw",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Case {
    pub id: u64,
    pub kind: Kind,
    pub req: Req,
    /// The resource that must read the same after a 4xx.
    pub guard: Option<String>,
    /// Why a 2xx answer is wrong.
    pub must_reject: Option<String>,
    /// The request may be refused by the HTTP layer itself (hyper's own
    /// bare 400/414/431), before the service sees it.
    pub protocol_level: bool,
}

pub struct Gen<'a> {
    pub surface: &'a Surface,
    /// The valid credentials header, when the service requires any.
    pub auth: Option<(String, Vec<u8>)>,
    patchable: Vec<&'a Resource>,
    creatable: Vec<&'a Resource>,
}

/// Strings that break parsers, encoders and backends.
fn nasty_string(r: &mut Rng) -> String {
    match r.below(16) {
        0 => String::new(),
        1 => "\u{FFFE}".into(),
        2 => "a\u{FFFF}b\u{FFFE}".into(),
        3 => "nul\u{0}byte".into(),
        4 => "\u{202E}gnp.exe".into(),
        5 => "😀".repeat(1 + r.below(3000)),
        6 => "e\u{301}\u{301}\u{301}".repeat(50),
        7 => "%s%n%x{}${jndi:ldap://127.0.0.1/}".into(),
        8 => "../../../../etc/passwd".into(),
        9 => "<domain><![CDATA[x]]></domain>&amp;&#0;".into(),
        10 => "http://[::1".into(),
        11 => format!("http://127.0.0.1:1/{}", "a".repeat(100 + r.below(10_000))),
        12 => "file:///etc/shadow".into(),
        13 => "' OR '1'='1".into(),
        14 => "\t\r\n \u{0b}\u{85}\u{2028}".into(),
        _ => "x".repeat(1 + r.below(64)),
    }
}

/// A string longer than any property should take.
fn huge_string(r: &mut Rng) -> String {
    let n = *r.pick(&[MAX_STRING + 1, 70_000, 300_000]);
    let head = *r.pick(&["http://127.0.0.1/", "", "\u{FFFE}"]);
    format!("{head}{}", "A".repeat(n))
}

fn nasty_number(r: &mut Rng) -> Value {
    match r.below(9) {
        0 => json!(-1),
        1 => json!(0),
        2 => json!(1.5),
        3 => json!(1e308),
        4 => json!(-1e308),
        5 => json!(i64::MAX),
        6 => json!(i64::MIN),
        7 => json!(u64::MAX),
        _ => json!(r.below(1000) as i64 - 500),
    }
}

/// A value of a JSON type other than `v`'s.
fn other_type(r: &mut Rng, v: &Value) -> Value {
    loop {
        let x = match r.below(6) {
            0 => Value::String(nasty_string(r)),
            1 => nasty_number(r),
            2 => Value::Bool(r.chance(50)),
            3 => json!([]),
            4 => json!({"x": 1}),
            _ => json!([v.clone()]),
        };
        let same = matches!(
            (&x, v),
            (Value::String(_), Value::String(_))
                | (Value::Number(_), Value::Number(_))
                | (Value::Bool(_), Value::Bool(_))
                | (Value::Array(_), Value::Array(_))
                | (Value::Object(_), Value::Object(_))
        );
        if !same {
            return x;
        }
    }
}

fn deep_json(n: usize, object: bool) -> Vec<u8> {
    let (open, close) = if object { ("{\"a\":", "}") } else { ("[", "]") };
    let mut s = open.repeat(n);
    s.push('1');
    s.push_str(&close.repeat(n));
    s.into_bytes()
}

/// The property paths under `v` with a scalar value, and the value.
fn leaves(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    let Value::Object(m) = v else { return };
    for (k, x) in m {
        if k.starts_with("@odata.") || k == "Links" || k == "Members" || k == "Actions" {
            continue;
        }
        prefix.push(k.clone());
        match x {
            Value::Object(_) if prefix.len() < 4 => leaves(x, prefix, out),
            Value::Object(_) | Value::Array(_) => {}
            _ => out.push((prefix.clone(), x.clone())),
        }
        prefix.pop();
    }
}

fn set_path(body: &mut Map<String, Value>, path: &[String], v: Value) {
    let (last, parents) = path.split_last().expect("non-empty path");
    let mut cur = body;
    for p in parents {
        let next = cur
            .entry(p.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        cur = next.as_object_mut().expect("object");
    }
    cur.insert(last.clone(), v);
}

/// The AllowableValues the representation gives for the leaf at `path`.
fn allowable(body: &Value, path: &[String]) -> Option<Vec<Value>> {
    let (last, parents) = path.split_last()?;
    let parent = parents.iter().try_fold(body, |c, p| c.get(p))?;
    parent
        .get(format!("{last}@Redfish.AllowableValues"))
        .and_then(Value::as_array)
        .cloned()
}

/// Percent-encodes what may not stand raw in a query string.
fn qenc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'~'
            | b'('
            | b')'
            | b'*'
            | b'$'
            | b'/'
            | b','
            | b'@'
            | b'#' => o.push(b as char),
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

fn filter_expr(r: &mut Rng, props: &[String], depth: usize) -> String {
    if depth == 0 || r.chance(35) {
        let prop = if props.is_empty() || r.chance(20) {
            (*r.pick(&["Id", "Name", "Status/State", "@odata.id", "Nope/x/y"])).to_string()
        } else {
            r.pick(props).clone()
        };
        let op = *r.pick(&["eq", "ne", "gt", "ge", "lt", "le", "has", "EQ"]);
        let lit = match r.below(8) {
            0 => "'x'".to_string(),
            1 => "'it''s'".to_string(),
            2 => "1e400".to_string(),
            3 => "-0".to_string(),
            4 => "true".to_string(),
            5 => "null".to_string(),
            6 => "'unterminated".to_string(),
            _ => format!("{}", r.below(100)),
        };
        return format!("{prop} {op} {lit}");
    }
    match r.below(4) {
        0 => format!(
            "{} and {}",
            filter_expr(r, props, depth - 1),
            filter_expr(r, props, depth - 1)
        ),
        1 => format!(
            "{} or {}",
            filter_expr(r, props, depth - 1),
            filter_expr(r, props, depth - 1)
        ),
        2 => format!("not {}", filter_expr(r, props, depth - 1)),
        _ => format!("({})", filter_expr(r, props, depth - 1)),
    }
}

/// `$filter` values built to exhaust a recursive parser or evaluator.
fn deep_filter(r: &mut Rng) -> String {
    let n = *r.pick(&[200, 1500, 5000, 20_000]);
    match r.below(5) {
        0 => format!("{}Id eq 'x'{}", "(".repeat(n), ")".repeat(n)),
        1 => "(".repeat(n),
        2 => format!("{}Id eq 'x'", "not ".repeat(n)),
        3 => format!("Id eq 'x'{}", " and Id eq 'x'".repeat(n)),
        _ => format!("{}Id eq 'x'{}", "not (".repeat(n), ")".repeat(n)),
    }
}

const OPEN: [&str; 4] = [
    "/redfish/v1",
    "/redfish/v1/odata",
    "/redfish/v1/$metadata",
    "/redfish/v1/SessionService/Sessions",
];

impl<'a> Gen<'a> {
    pub fn new(surface: &'a Surface, auth: Option<(String, Vec<u8>)>) -> Gen<'a> {
        let patchable = surface
            .resources
            .iter()
            .filter(|r| r.allows("PATCH"))
            .collect();
        let action_targets: Vec<&str> = surface.actions.iter().map(|a| a.target.as_str()).collect();
        let creatable = surface
            .resources
            .iter()
            .filter(|r| r.allows("POST") && !action_targets.contains(&r.path.as_str()))
            .collect();
        Gen {
            surface,
            auth,
            patchable,
            creatable,
        }
    }

    fn authed(&self, mut req: Req) -> Req {
        if let Some((n, v)) = &self.auth {
            req = req.header(n, v.clone());
        }
        req
    }

    fn json_req(&self, method: &str, path: &str, body: Vec<u8>) -> Req {
        let mut req = self
            .authed(Req::new(method, path))
            .header("Content-Type", "application/json");
        req.body = body;
        req
    }

    /// Case `id` of `seed`.
    pub fn case(&self, seed: u64, id: u64) -> Case {
        let mut r = Rng::for_case(seed, id);
        let roll = r.below(100);
        let kind = match roll {
            0..=26 if !self.patchable.is_empty() => Kind::Patch,
            27..=39 if !self.surface.actions.is_empty() => Kind::Action,
            40..=44 if !self.creatable.is_empty() => Kind::Create,
            45..=56 => Kind::Path,
            57..=76 => Kind::Query,
            77..=88 => Kind::Header,
            89..=95 => Kind::Method,
            96..=99 => Kind::Raw,
            _ => Kind::Query,
        };
        let mut c = Case {
            id,
            kind,
            req: Req::new("GET", "/redfish/v1"),
            guard: None,
            must_reject: None,
            protocol_level: false,
        };
        match kind {
            Kind::Patch => self.patch(&mut r, &mut c),
            Kind::Action => {
                let a = r.pick(&self.surface.actions).clone();
                self.action(&mut r, &mut c, &a)
            }
            Kind::Create => self.create(&mut r, &mut c),
            Kind::Path => self.path(&mut r, &mut c),
            Kind::Query => self.query(&mut r, &mut c),
            Kind::Header => self.header(&mut r, &mut c),
            Kind::Method => self.method(&mut r, &mut c),
            Kind::Raw => self.raw(&mut r, &mut c),
        }
        c
    }

    /// A body that is not a JSON object a service can take, and why.
    /// (An empty body is a valid action request without parameters.)
    fn garbage_body(&self, r: &mut Rng) -> (Vec<u8>, &'static str) {
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

    fn patch(&self, r: &mut Rng, c: &mut Case) {
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
        let text = serde_json::to_vec(&Value::Object(body)).expect("serializable");
        let mut req = self.json_req("PATCH", &res.path, text);
        if r.chance(15) {
            let tag = *r.pick(&["*", "\"nope\"", "W/\"x\""]);
            req = req.header("If-Match", tag);
        }
        c.req = req;
    }

    fn param_value(&self, r: &mut Rng, p: &super::crawl::Param, why: &mut Option<String>) -> Value {
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

    fn action(&self, r: &mut Rng, c: &mut Case, a: &Action) {
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
            serde_json::to_vec(&Value::Object(body)).expect("serializable"),
        );
    }

    fn create(&self, r: &mut Rng, c: &mut Case) {
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
            serde_json::to_vec(&Value::Object(body)).expect("serializable"),
        );
    }

    fn path(&self, r: &mut Rng, c: &mut Case) {
        let res = r.pick(&self.surface.resources);
        let segs: Vec<&str> = res.path.split('/').collect();
        let evil = [
            "%FF",
            "%00",
            "%2e%2e",
            "..",
            ".",
            "%2F",
            "%C0%AE",
            "%E2%80%AE",
            "%",
            "%G1",
            "~",
            "*",
            "$metadata",
            "'",
            "%22",
            "%EF%BF%BE",
            "%F0%9F%98%80",
            ";x=1",
            "%20",
            "+",
        ];
        let mut raw_bytes = false;
        let p = match r.below(7) {
            0 => {
                let i = 1 + r.below(segs.len().saturating_sub(1));
                let mut s: Vec<String> = segs.iter().map(|x| x.to_string()).collect();
                s[i] = r.pick(&evil).to_string();
                s.join("/")
            }
            1 => format!("{}/{}", res.path, r.pick(&evil)),
            2 => format!("{}/{}", res.path, "a".repeat(1 + r.below(60_000))),
            3 => format!("{}{}", res.path, "/a".repeat(1 + r.below(5000))),
            4 => {
                let sep: &&str = r.pick(&["//", "/./", "/%2F"]);
                let sep: &str = sep;
                res.path.replace('/', sep)
            }
            5 => {
                raw_bytes = true;
                format!("{}/\u{FFFE}\u{0}", res.path)
            }
            _ => format!("{}/", res.path),
        };
        c.protocol_level = raw_bytes || p.len() > 8000;
        let method = *r.pick(&["GET", "GET", "GET", "HEAD", "PATCH", "DELETE", "POST"]);
        let mut req = self.authed(Req::new(method, ""));
        req.target = p.into_bytes();
        if method == "PATCH" || method == "POST" {
            req = req.header("Content-Type", "application/json");
            req.body = b"{\"Unknown\": 1}".to_vec();
            c.guard = Some(res.path.clone());
        } else if method == "DELETE" {
            c.guard = Some(res.path.clone());
        }
        c.req = req;
    }

    fn query(&self, r: &mut Rng, c: &mut Case) {
        let res = r.pick(&self.surface.resources);
        let props: Vec<String> = res
            .body
            .as_object()
            .map(|m| m.keys().filter(|k| !k.starts_with('@')).cloned().collect())
            .unwrap_or_default();
        let mut parts = Vec::new();
        for _ in 0..1 + r.below(3) {
            let p = match r.below(12) {
                0 => format!("$filter={}", qenc(&deep_filter(r))),
                1..=2 => {
                    let d = 1 + r.below(6);
                    format!("$filter={}", qenc(&filter_expr(r, &props, d)))
                }
                3 | 4 => {
                    let e = *r.pick(&[
                        "*",
                        ".",
                        "~",
                        "*($levels=0)",
                        "*($levels=1)",
                        "*($levels=6)",
                        "*($levels=7)",
                        ".($levels=99999999999)",
                        "~($levels=-1)",
                        "x",
                        "",
                        "*($levels=1",
                        "%FF",
                        "*($levels=3)",
                    ]);
                    format!("$expand={e}")
                }
                5 => {
                    let s = match r.below(5) {
                        0 => props.join(","),
                        1 => "Boot/BootSourceOverrideTarget,Id".to_string(),
                        2 => "a/".repeat(1 + r.below(3000)) + "b",
                        3 => ",,".to_string(),
                        _ => "*".to_string(),
                    };
                    format!("$select={}", qenc(&s))
                }
                6 | 7 => {
                    let k = *r.pick(&["$top", "$skip"]);
                    let v = *r.pick(&[
                        "0",
                        "1",
                        "-1",
                        "18446744073709551615",
                        "18446744073709551616",
                        "abc",
                        "1e3",
                        "",
                        "99999999999",
                    ]);
                    format!("{k}={v}")
                }
                8 => (*r.pick(&["only", "only=x", "only&only"])).to_string(),
                9 => (*r.pick(&["$foo=1", "$count=true", "$search=x", "$orderby=Id"])).to_string(),
                10 => (*r.pick(&[
                    "%FF=%FF",
                    "%00",
                    "&&&",
                    "=",
                    "$filter",
                    "$filter=%",
                    "a=%E0%A4%A",
                ]))
                .to_string(),
                _ => "$top=1&$top=2".to_string(),
            };
            parts.push(p);
        }
        let q = parts.join("&");
        c.protocol_level = q.len() > 8000;
        let method = if r.chance(10) { "HEAD" } else { "GET" };
        c.req = self.authed(Req::new(method, &format!("{}?{q}", res.path)));
    }

    fn header(&self, r: &mut Rng, c: &mut Case) {
        let res = r.pick(&self.surface.resources);
        let patch = res.allows("PATCH") && r.chance(40);
        let mut req = if patch {
            c.guard = Some(res.path.clone());
            // The resource's own Name or Id back: valid where writable.
            self.json_req("PATCH", &res.path, b"{}".to_vec())
        } else {
            self.authed(Req::new("GET", &res.path))
        };
        let drop_auth = |req: &mut Req| {
            req.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"))
        };
        let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
        let mut bad_auth = false;
        match r.below(10) {
            0 => {
                drop_auth(&mut req);
                bad_auth = true;
                let v: Vec<u8> = match r.below(7) {
                    0 => b"Basic !!!".to_vec(),
                    1 => format!(
                        "Basic {}",
                        b64(format!("{}:wrong", super::VICTIM).as_bytes())
                    )
                    .into_bytes(),
                    2 => format!("Basic {}", b64(b"\xff\xfe:\xff")).into_bytes(),
                    3 => b"Bearer x".to_vec(),
                    4 => format!("Basic {}", "A".repeat(20_000)).into_bytes(),
                    5 => b"Basic".to_vec(),
                    _ => format!("Basic {}", b64(b"nocolon")).into_bytes(),
                };
                req = req.header("Authorization", v);
            }
            1 => {
                drop_auth(&mut req);
                bad_auth = true;
                let tok = *r.pick(&["x", "", "\u{FFFE}"]);
                req = req.header("X-Auth-Token", tok);
            }
            2 => {
                drop_auth(&mut req);
                bad_auth = true;
            }
            3 => {
                let ct = *r.pick(&[
                    "text/plain",
                    "application/json; charset=utf-16",
                    "application/json; charset=\"",
                    "multipart/form-data; boundary=x",
                    "application/merge-patch+json",
                    "",
                ]);
                req.headers
                    .retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
                req = req.header("Content-Type", ct);
            }
            4 => {
                let v = *r.pick(&[
                    "*",
                    "\"garbage\"",
                    "W/\"x\"",
                    "",
                    "\"a\", \"b\"",
                    "\u{FFFE}",
                ]);
                req = req.header("If-Match", v);
            }
            5 => {
                let v = *r.pick(&["*", "\"garbage\"", "W/\"x\"", ""]);
                req = req.header("If-None-Match", v);
            }
            6 => {
                let v = *r.pick(&["3.0", "", "4.0, 4.0", "4"]);
                req = req.header("OData-Version", v);
            }
            7 => {
                let v = *r.pick(&["application/xml", "*/*;q=garbage", "text/html"]);
                req = req.header("Accept", v);
            }
            8 => {
                c.protocol_level = true;
                req = req.header("X-Bytes", b"\xff\xfe\x80".to_vec());
            }
            _ => {
                c.protocol_level = true;
                req = req.header("X-Big", "b".repeat(1 + r.below(100_000)));
            }
        }
        let protected =
            !OPEN.contains(&res.path.as_str()) && !res.path.starts_with("/redfish/v1/Schemas");
        if bad_auth && self.auth.is_some() && protected {
            c.must_reject = Some("no valid credentials".into());
        }
        c.req = req;
    }

    fn method(&self, r: &mut Rng, c: &mut Case) {
        let res = r.pick(&self.surface.resources);
        let m = *r.pick(&[
            "PUT", "DELETE", "POST", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "FOO", "get",
        ]);
        let mut req = self.json_req(m, &res.path, Vec::new());
        if r.chance(50) {
            req.body = b"{}".to_vec();
        }
        if matches!(m, "PUT" | "DELETE" | "POST" | "PATCH") {
            c.guard = Some(res.path.clone());
            if !res.allows(m) {
                c.must_reject = Some(format!("{m} is not in the resource's Allow"));
            }
        }
        c.req = req;
    }

    fn raw(&self, r: &mut Rng, c: &mut Case) {
        c.protocol_level = true;
        let bytes: Vec<u8> = match r.below(10) {
            0 => b"GET /redfish/v1 HTTP/1.1\r\n\r\n".to_vec(),
            1 => b"GET /redfish/v1 HTTP/9.9\r\nHost: x\r\n\r\n".to_vec(),
            2 => b"\x00\x01\x02\xff\r\n\r\n".to_vec(),
            3 => b"GET /redfish/v1\r\n\r\n".to_vec(),
            4 => b"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n".to_vec(),
            5 => b"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n".to_vec(),
            6 => b"POST /redfish/v1/SessionService/Sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n\r\n0\r\n\r\n".to_vec(),
            7 => b"POST /redfish/v1/SessionService/Sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
            8 => b"POST /redfish/v1/SessionService/Sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n".to_vec(),
            _ => {
                let mut v = b"GET /redfish/v1 HTTP/1.1\r\nHost: x\r\n".to_vec();
                for i in 0..200 + r.below(200) {
                    v.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
                }
                v.extend_from_slice(b"\r\n");
                v
            }
        };
        let mut req = Req::new("RAW", "/");
        req.raw = Some(bytes);
        c.req = req;
    }
}

/// `a number`, `an array`, …
pub fn a_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::crawl::{Param, Resource};

    fn surface() -> Surface {
        let sys = json!({
            "@odata.id": "/redfish/v1/Systems/1", "Id": "1",
            "Boot": {"BootSourceOverrideTarget": "None",
                     "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe"],
                     "HttpBootUri": null},
            "AssetTag": ""
        });
        Surface {
            resources: vec![
                Resource {
                    path: "/redfish/v1".into(),
                    allow: vec!["GET".into()],
                    body: json!({"Id": "RootService"}),
                },
                Resource {
                    path: "/redfish/v1/Systems/1".into(),
                    allow: vec!["GET".into(), "PATCH".into()],
                    body: sys,
                },
            ],
            actions: vec![Action {
                name: "#ComputerSystem.Reset".into(),
                target: "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset".into(),
                owner: "/redfish/v1/Systems/1".into(),
                params: vec![Param {
                    name: "ResetType".into(),
                    data_type: Some("String".into()),
                    allowable: vec![json!("On")],
                }],
            }],
            registries: Default::default(),
        }
    }

    #[test]
    fn a_case_is_a_function_of_seed_and_number() {
        let s = surface();
        let g = Gen::new(&s, Some(("Authorization".into(), b"Basic x".to_vec())));
        for id in 0..300 {
            assert_eq!(g.case(7, id).req, g.case(7, id).req);
        }
        let kinds: std::collections::BTreeSet<Kind> = (0..300).map(|i| g.case(7, i).kind).collect();
        assert!(kinds.len() >= 7, "{kinds:?}");
        assert_ne!(g.case(7, 1).req, g.case(8, 1).req);
    }

    #[test]
    fn wrong_types_and_unknown_values_must_be_refused() {
        let s = surface();
        let g = Gen::new(&s, None);
        let mut rejects = 0;
        for id in 0..400 {
            let c = g.case(1, id);
            if c.kind == Kind::Patch {
                assert_eq!(c.guard.as_deref(), Some("/redfish/v1/Systems/1"));
                rejects += c.must_reject.is_some() as usize;
            }
        }
        assert!(rejects > 10, "{rejects}");
        let mut b = Map::new();
        set_path(&mut b, &["Boot".into(), "HttpBootUri".into()], json!(1));
        assert_eq!(Value::Object(b), json!({"Boot": {"HttpBootUri": 1}}));
        assert_eq!(qenc("a eq 'x'"), "a%20eq%20%27x%27");
    }
}
