//! The request-level families: mutated paths, query strings (`$filter`
//! expressions built to exhaust a recursive parser among them), headers,
//! methods, and raw bytes that are hardly HTTP.

use base64::Engine;

use super::{Case, Gen, Rng};
use crate::fuzz::http::Req;

/// Percent-encodes what may not stand raw in a query string.
pub(super) fn qenc(s: &str) -> String {
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

impl Gen<'_> {
    pub(super) fn path(&self, r: &mut Rng, c: &mut Case) {
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

    pub(super) fn query(&self, r: &mut Rng, c: &mut Case) {
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

    pub(super) fn header(&self, r: &mut Rng, c: &mut Case) {
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
                        b64(format!("{}:wrong", crate::fuzz::VICTIM).as_bytes())
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

    pub(super) fn method(&self, r: &mut Rng, c: &mut Case) {
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

    pub(super) fn raw(&self, r: &mut Rng, c: &mut Case) {
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
