//! Requests generated from the crawled surface: mutated JSON bodies
//! (wrong types, huge strings, deep nesting, unicode, numbers out of
//! range, unknown keys), mutated paths, query strings, headers, methods
//! and raw bytes. Case `n` of seed `s` is a pure function of `(s, n)` and
//! the surface, so one case can be replayed alone (`--case`).
//!
//! This module holds the seeded generator and picks a case's family;
//! `body` makes the JSON-body families (PATCH, actions, creates),
//! `request` the rest (paths, queries, headers, methods, raw bytes), and
//! `values` the hostile values both draw on.

mod body;
mod request;
#[cfg(test)]
mod tests;
mod values;

use serde_json::Value;

use super::crawl::{Resource, Surface};
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

    pub(super) fn authed(&self, mut req: Req) -> Req {
        if let Some((n, v)) = &self.auth {
            req = req.header(n, v.clone());
        }
        req
    }

    pub(super) fn json_req(&self, method: &str, path: &str, body: Vec<u8>) -> Req {
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
