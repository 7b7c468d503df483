//! The protocol layer every request passes before routing: the request's
//! `OData-Version`, conditional GET (`If-None-Match` → 304) and the query
//! parameters of DSP0266 §7.3 (`only`, `$filter`, `$skip`, `$top`,
//! `$expand`, `$select`), applied in the order the specification gives to
//! the representation the resource handlers render.
//!
//! Queries are answered from the handlers' own responses: the request goes
//! to the router without its query string, and expansion, filtering and
//! `only` fetch the resources they need through the same router with the
//! caller's credentials, so a query sees exactly what plain GETs would.
//! A request without a query string costs two header lookups.
//!
//! This module parses the query and applies it in order; the subrequests
//! and `$expand` are in `expand`, `$select` in `select`, the `$filter`
//! grammar in `filter`.

use std::collections::HashSet;
use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

use super::AppState;
use crate::api::error::{ApiError, Msg};

mod expand;
mod filter;
mod select;

use expand::{is_reference, json_of, Fetcher};
pub use filter::{
    Cmp, Filter, FilterError, Operand, MAX_FILTER_DEPTH, MAX_FILTER_LEN, MAX_FILTER_TOKENS,
};
pub use select::select;

/// Deepest `$levels` accepted (advertised as `ExpandQuery.MaxLevels`).
pub const MAX_LEVELS: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expand {
    /// `*`: every hyperlink.
    All,
    /// `.`: subordinate resources, not those under `Links`.
    NoLinks,
    /// `~`: only those under `Links`.
    Links,
}

/// The query parameters of one request.
#[derive(Debug, Default, PartialEq)]
pub struct Query {
    pub only: bool,
    pub filter: Option<Filter>,
    pub skip: Option<usize>,
    pub top: Option<usize>,
    pub expand: Option<(Expand, u32)>,
    /// Property paths (`Boot/BootSourceOverrideTarget` → two segments).
    pub select: Option<Vec<Vec<String>>>,
}

impl Query {
    fn is_empty(&self) -> bool {
        *self == Query::default()
    }
}

fn format_error(value: &str, param: &str) -> ApiError {
    ApiError::bad(Msg::new(
        "QueryParameterValueFormatError",
        &[&crate::api::input::echo(value), param],
    ))
}

/// Parses a query string. Unknown parameters starting with `$` are 501
/// (DSP0266: the service shall not ignore them); others are ignored.
pub fn parse(raw: &str) -> Result<Query, ApiError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw).map_err(|_| format_error(raw, "query string"))?;
    let mut q = Query::default();
    let mut seen = HashSet::new();
    for (k, v) in &pairs {
        if !seen.insert(k.as_str()) && (k.starts_with('$') || k == "only") {
            return Err(ApiError::bad(Msg::new("QueryCombinationInvalid", &[])));
        }
        match k.as_str() {
            "only" => {
                if !v.is_empty() {
                    return Err(format_error(v, "only"));
                }
                q.only = true;
            }
            "$filter" => q.filter = Some(parse_filter(v)?),
            "$skip" | "$top" => {
                let n: usize = v.parse().map_err(|_| {
                    ApiError::bad(Msg::new("QueryParameterValueTypeError", &[v, k]))
                })?;
                if k == "$skip" {
                    q.skip = Some(n);
                } else {
                    q.top = Some(n);
                }
            }
            "$expand" => q.expand = Some(parse_expand(v)?),
            "$select" => {
                let paths: Vec<Vec<String>> = v
                    .split(',')
                    .map(|p| p.trim().split('/').map(str::to_string).collect())
                    .collect();
                let ok = paths.iter().all(|p: &Vec<String>| {
                    p.iter().all(|s| {
                        !s.is_empty()
                            && s.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "_@.#".contains(c))
                    })
                });
                if !ok {
                    return Err(format_error(v, k));
                }
                q.select = Some(paths);
            }
            other if other.starts_with('$') => return Err(ApiError::QueryUnsupported(k.clone())),
            _ => {}
        }
    }
    if q.only && pairs.len() > 1 {
        return Err(ApiError::bad(Msg::new("QueryCombinationInvalid", &[])));
    }
    Ok(q)
}

/// A `$filter` value, within the size and depth bounds (out of them:
/// `QueryParameterOutOfRange`, naming the bound).
fn parse_filter(v: &str) -> Result<Filter, ApiError> {
    let out_of_range = |what: &str| {
        ApiError::bad(Msg::new(
            "QueryParameterOutOfRange",
            &[&crate::api::input::echo(v), "$filter", what],
        ))
    };
    if v.len() > MAX_FILTER_LEN {
        return Err(out_of_range(&format!("of at most {MAX_FILTER_LEN} bytes")));
    }
    match Filter::parse_bounded(v) {
        Ok(f) => Ok(f),
        Err(FilterError::TooLong) => Err(out_of_range(&format!(
            "of at most {MAX_FILTER_TOKENS} terms"
        ))),
        Err(FilterError::TooDeep) => Err(out_of_range(&format!(
            "nested at most {MAX_FILTER_DEPTH} deep"
        ))),
        Err(FilterError::Syntax) => Err(format_error(v, "$filter")),
    }
}

fn parse_expand(v: &str) -> Result<(Expand, u32), ApiError> {
    let bad = || format_error(v, "$expand");
    let mut chars = v.chars();
    let kind = match chars.next() {
        Some('*') => Expand::All,
        Some('.') => Expand::NoLinks,
        Some('~') => Expand::Links,
        _ => return Err(bad()),
    };
    let rest = chars.as_str();
    if rest.is_empty() {
        return Ok((kind, 1));
    }
    let n = rest
        .strip_prefix("($levels=")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(bad)?;
    let levels: u32 = n.parse().map_err(|_| bad())?;
    if levels == 0 || levels > MAX_LEVELS {
        return Err(ApiError::bad(Msg::new(
            "QueryParameterOutOfRange",
            &[n, "$expand", &format!("1-{MAX_LEVELS}")],
        )));
    }
    Ok((kind, levels))
}

fn is_collection(v: &Value) -> bool {
    v.get("Members").is_some_and(Value::is_array)
}

/// Answers a GET with a query from the unqueried representation.
/// A redirect of the query-less request the handler saw, sent back with
/// the query the client asked (so `$select` on a system's name still
/// selects at its Id).
fn with_query(mut resp: Response, query: Option<&str>) -> Response {
    let (Some(q), Some(at)) = (query, resp.headers().get(header::LOCATION)) else {
        return resp;
    };
    let Ok(at) = at.to_str() else {
        return resp;
    };
    if at.contains('?') {
        return resp;
    }
    if let Ok(v) = format!("{at}?{q}").parse() {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

async fn answer(router: Router, req: Request, q: Query) -> Result<Response, ApiError> {
    let headers = req.headers().clone();
    let head = req.method() == Method::HEAD;
    let (mut parts, body) = req.into_parts();
    let asked = parts.uri.query().map(str::to_string);
    parts.uri = Uri::builder()
        .path_and_query(parts.uri.path())
        .build()
        .map_err(|e| ApiError::Internal(format!("uri: {e}")))?;
    // The handler sees a plain GET; HEAD is answered from it without body.
    parts.method = Method::GET;
    let resp = router
        .clone()
        .oneshot(Request::from_parts(parts, body))
        .await
        .unwrap_or_else(|e: Infallible| match e {});
    if resp.status().is_redirection() {
        return Ok(with_query(resp, asked.as_deref()));
    }
    if resp.status() != StatusCode::OK {
        return Ok(resp);
    }
    let status = resp.status();
    let Some((mut rparts, mut v)) = json_of(resp).await else {
        return Err(ApiError::bad(Msg::new("QueryNotSupportedOnResource", &[])));
    };
    let collection = is_collection(&v);
    let mut fetch = Fetcher::new(router, &headers);
    if (q.only || q.filter.is_some() || q.skip.is_some() || q.top.is_some()) && !collection {
        return Err(ApiError::bad(Msg::new("QueryNotSupportedOnResource", &[])));
    }
    if q.only {
        let members = v["Members"].as_array().cloned().unwrap_or_default();
        if let [only] = &members[..] {
            if let Some(uri) = is_reference(only) {
                let r = fetch.response(uri).await?;
                return Ok(if head { strip_body(r) } else { r });
            }
        }
    }
    if let Some(f) = &q.filter {
        let mut kept = Vec::new();
        for m in v["Members"].as_array().cloned().unwrap_or_default() {
            let body = match is_reference(&m) {
                Some(uri) => fetch.json(uri).await?,
                None => Some(m.clone()),
            };
            if body.as_ref().is_some_and(|b| f.matches(b)) {
                kept.push(m);
            }
        }
        v["Members@odata.count"] = Value::from(kept.len());
        v["Members"] = Value::Array(kept);
    }
    if collection && (q.skip.is_some() || q.top.is_some()) {
        let members = v["Members"].as_array().cloned().unwrap_or_default();
        let page: Vec<Value> = members
            .into_iter()
            .skip(q.skip.unwrap_or(0))
            .take(q.top.unwrap_or(usize::MAX))
            .collect();
        v["Members"] = Value::Array(page);
    }
    if let Some((kind, levels)) = q.expand {
        let mut path = vec![v
            .get("@odata.id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()];
        fetch
            .expand_members(&mut v, kind, levels, &mut path)
            .await?;
    }
    if let Some(paths) = &q.select {
        let expanded_members = collection
            && v["Members"]
                .as_array()
                .is_some_and(|m| m.iter().all(|x| is_reference(x).is_none()));
        if expanded_members {
            if let Some(ms) = v["Members"].as_array_mut() {
                for m in ms.iter_mut() {
                    *m = select(m, paths);
                }
            }
        } else {
            v = select(&v, paths);
        }
    }
    rparts.headers.remove(header::CONTENT_LENGTH);
    let body = if head {
        Body::empty()
    } else {
        Body::from(serde_json::to_vec(&v).unwrap_or_default())
    };
    let mut r = Response::from_parts(rparts, body);
    *r.status_mut() = status;
    Ok(r)
}

fn strip_body(r: Response) -> Response {
    let (mut parts, _) = r.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::empty())
}

/// `If-None-Match` lists the response's ETag (or `*`): 304 Not Modified.
fn not_modified(if_none_match: &HeaderValue, resp: &Response) -> bool {
    let Some(tag) = resp
        .headers()
        .get(header::ETAG)
        .and_then(|t| t.to_str().ok())
    else {
        return false;
    };
    let tag = tag.strip_prefix("W/").unwrap_or(tag);
    if_none_match.to_str().is_ok_and(|list| {
        list.split(',')
            .map(str::trim)
            .any(|v| v == "*" || v.strip_prefix("W/").unwrap_or(v) == tag)
    })
}

/// The layer: wraps the routed service (`router`) and answers `req`.
/// A query string is parsed only once the request has authenticated
/// (`st`'s accounts) or is anonymous on a public URL (the service root),
/// where the parser's bounds are what protects it.
pub async fn handle(router: Router, st: &AppState, req: Request) -> Response {
    match handle_inner(router, st, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn handle_inner(router: Router, st: &AppState, req: Request) -> Result<Response, ApiError> {
    if let Some(v) = req.headers().get("OData-Version") {
        // DSP0266 §8.1: a version the service does not support is 412.
        if v.as_bytes() != b"4.0" {
            return Err(ApiError::HeaderInvalid(format!(
                "OData-Version: {}",
                String::from_utf8_lossy(v.as_bytes())
            )));
        }
    }
    let conditional = match *req.method() {
        Method::GET | Method::HEAD => req.headers().get(header::IF_NONE_MATCH).cloned(),
        _ => None,
    };
    if super::events::is_sse(st, req.uri().path()) {
        // A stream takes its own `$filter`, and never ends to be queried.
        return Ok(router
            .oneshot(req)
            .await
            .unwrap_or_else(|e: Infallible| match e {}));
    }
    let query = match req.uri().query() {
        Some(raw) if !raw.is_empty() => {
            match req.extensions().get::<super::guard::Decided>() {
                Some(super::guard::Decided(Err(e))) => return Err(e.clone()),
                Some(_) => {}
                None => {
                    super::authorize(st, req.headers(), req.method(), req.uri().path()).await?;
                }
            }
            parse(raw)?
        }
        _ => Query::default(),
    };
    let resp = if query.is_empty() {
        router
            .oneshot(req)
            .await
            .unwrap_or_else(|e: Infallible| match e {})
    } else if matches!(*req.method(), Method::GET | Method::HEAD) {
        answer(router, req, query).await?
    } else {
        return Err(ApiError::bad(Msg::new("QueryNotSupportedOnOperation", &[])));
    };
    if let Some(inm) = conditional {
        if resp.status() == StatusCode::OK && not_modified(&inm, &resp) {
            let mut r = StatusCode::NOT_MODIFIED.into_response();
            for h in [header::ETAG, header::CACHE_CONTROL] {
                if let Some(v) = resp.headers().get(&h) {
                    r.headers_mut().insert(h, v.clone());
                }
            }
            return Ok(r);
        }
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_parse() {
        let q = parse("$expand=.($levels=2)&$select=Name,Boot/BootSourceOverrideTarget").unwrap();
        assert_eq!(q.expand, Some((Expand::NoLinks, 2)));
        assert_eq!(
            q.select.unwrap(),
            [
                vec!["Name".to_string()],
                vec!["Boot".into(), "BootSourceOverrideTarget".into()]
            ]
        );
        assert!(parse("only").unwrap().only);
        assert!(
            parse("foo=bar").unwrap().is_empty(),
            "non-$ unknowns are ignored"
        );
        assert!(matches!(
            parse("$rpvunknown"),
            Err(ApiError::QueryUnsupported(p)) if p == "$rpvunknown"
        ));
        for bad in [
            "only=1",
            "only&$top=1",
            "$expand=+",
            "$expand=*($levels=0)",
            "$expand=*($levels=x)",
            "$top=-1",
            "$select=a,,b",
            "$filter=Id eq",
            "$top=1&$top=2",
        ] {
            assert!(
                matches!(parse(bad), Err(ApiError::BadRequest(_))),
                "{bad} should be a 400"
            );
        }
    }
}
