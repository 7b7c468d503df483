//! Subrequests through the router with the caller's credentials
//! (`Fetcher`), which `only` and `$filter` use to read members and
//! `$expand` to replace hyperlinks with the resources they name.
//!
//! Invariant: one query fetches at most `MAX_FETCHES` resources; a link
//! back to a resource being expanded stays a link.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

use super::Expand;
use crate::api::error::{ApiError, Msg};

/// Resources one query may fetch to answer it.
const MAX_FETCHES: usize = 20_000;

pub(super) fn is_reference(v: &Value) -> Option<&str> {
    match v.as_object() {
        Some(o) if o.len() == 1 => o.get("@odata.id")?.as_str(),
        _ => None,
    }
}

/// Fetches resources through the router with the caller's credentials.
pub(super) struct Fetcher {
    router: Router,
    auth: HeaderMap,
    fetched: usize,
}

impl Fetcher {
    pub(super) fn new(router: Router, headers: &HeaderMap) -> Fetcher {
        let mut auth = HeaderMap::new();
        for h in [header::AUTHORIZATION.as_str(), "x-auth-token"] {
            if let Some(v) = headers.get(h) {
                auth.insert(h.parse::<header::HeaderName>().expect("static"), v.clone());
            }
        }
        Fetcher {
            router,
            auth,
            fetched: 0,
        }
    }

    pub(super) async fn response(&mut self, uri: &str) -> Result<Response, ApiError> {
        self.fetched += 1;
        if self.fetched > MAX_FETCHES {
            return Err(ApiError::bad(Msg::new(
                "QueryParameterOutOfRange",
                &[&MAX_FETCHES.to_string(), "$expand", "resources per query"],
            )));
        }
        let mut req = Request::get(uri)
            .body(Body::empty())
            .map_err(|e| ApiError::Internal(format!("subrequest {uri}: {e}")))?;
        *req.headers_mut() = self.auth.clone();
        Ok(self
            .router
            .clone()
            .oneshot(req)
            .await
            .unwrap_or_else(|e: Infallible| match e {}))
    }

    /// The JSON body of `uri`, or `None` when it does not answer 200 JSON.
    pub(super) async fn json(&mut self, uri: &str) -> Result<Option<Value>, ApiError> {
        let resp = self.response(uri).await?;
        Ok(json_of(resp).await.map(|(_, v)| v))
    }

    /// Replaces hyperlinks with the resources they name, `levels` deep.
    async fn expand(
        &mut self,
        v: &mut Value,
        kind: Expand,
        levels: u32,
        in_links: bool,
        path: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        if levels == 0 {
            return Ok(());
        }
        if let Some(uri) = is_reference(v).map(str::to_string) {
            let wanted = match kind {
                Expand::All => true,
                Expand::NoLinks => !in_links,
                Expand::Links => in_links,
            };
            // A link back to a resource being expanded stays a link.
            if wanted && !path.contains(&uri) {
                if let Some(mut target) = self.json(&uri).await? {
                    path.push(uri);
                    Box::pin(self.expand_members(&mut target, kind, levels - 1, path)).await?;
                    path.pop();
                    *v = target;
                }
            }
            return Ok(());
        }
        match v {
            Value::Array(items) => {
                for item in items {
                    Box::pin(self.expand(item, kind, levels, in_links, path)).await?;
                }
            }
            Value::Object(obj) => {
                for (k, item) in obj.iter_mut() {
                    if k.starts_with("@odata.") {
                        continue;
                    }
                    let links = in_links || k == "Links";
                    Box::pin(self.expand(item, kind, levels, links, path)).await?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Expands the hyperlinks inside a resource (not the resource itself).
    pub(super) async fn expand_members(
        &mut self,
        v: &mut Value,
        kind: Expand,
        levels: u32,
        path: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        if let Value::Object(obj) = v {
            for (k, item) in obj.iter_mut() {
                if k.starts_with("@odata.") {
                    continue;
                }
                self.expand(item, kind, levels, k == "Links", path).await?;
            }
        }
        Ok(())
    }
}

/// `(headers, body)` of a 200 JSON response; `None` for anything else.
pub(super) async fn json_of(resp: Response) -> Option<(axum::http::response::Parts, Value)> {
    if resp.status() != StatusCode::OK {
        return None;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return None;
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.ok()?;
    let v = serde_json::from_slice(&bytes).ok()?;
    Some((parts, v))
}
