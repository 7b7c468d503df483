//! Request and response plumbing shared by every resource module: the JSON
//! body extractor (MalformedJSON, 413, 415) and action parameters, resource
//! responses (`Resource`, with ETag and OData headers, and their final form
//! `Rendered`) and If-Match checks. PATCH validation is in `api::patch`
//! (re-exported here).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::api::error::{ApiError, Msg};
use crate::profile::{EtagStyle, Profile};

/// Largest request body accepted (413 beyond).
pub const MAX_BODY: usize = 1 << 20;

/// Renders a JSON value for a message argument: strings bare, others as JSON.
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A request body that must be a JSON object. An empty body is `{}`.
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = OptionalJsonObject::from_request(req, state).await?;
        Ok(JsonObject(body.0.unwrap_or_default()))
    }
}

/// A JSON object body, or `None` when there is no body at all (for BMCs
/// that tell the two apart).
pub struct OptionalJsonObject(pub Option<Map<String, Value>>);

impl<S: Send + Sync> FromRequest<S> for OptionalJsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // JSON is required when a type is named. Form and text types are
        // what a browser page may send cross-site without asking first, so
        // they are refused (curl users add `-H 'Content-Type:
        // application/json'`).
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let media_type = ct
                .to_str()
                .map_err(|_| ApiError::UnsupportedMediaType)?
                .split(';')
                .next()
                .unwrap_or("")
                .trim();
            if !media_type.is_empty() && !media_type.eq_ignore_ascii_case("application/json") {
                return Err(ApiError::UnsupportedMediaType);
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge
            } else {
                ApiError::bad(Msg::new("UnrecognizedRequestBody", &[]))
            }
        })?;
        if bytes.len() > MAX_BODY {
            return Err(ApiError::PayloadTooLarge);
        }
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(OptionalJsonObject(None));
        }
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => Ok(OptionalJsonObject(Some(m))),
            Ok(_) => Err(ApiError::bad(Msg::new("UnrecognizedRequestBody", &[]))),
            Err(_) => Err(ApiError::bad(Msg::new("MalformedJSON", &[]))),
        }
    }
}

/// The opaque ETag value of serialized JSON (without quotes).
fn tag_of_bytes(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// The opaque ETag value of a rendered resource (without quotes).
pub fn etag_of(body: &Value) -> String {
    tag_of_bytes(&serde_json::to_vec(body).unwrap_or_default())
}

fn styled(tag: &str, style: EtagStyle) -> Option<String> {
    match style {
        EtagStyle::Strong => Some(format!("\"{tag}\"")),
        EtagStyle::Weak => Some(format!("W/\"{tag}\"")),
        EtagStyle::None => None,
    }
}

/// The `ETag` header value in the profile's style, or none.
pub fn etag_header(body: &Value, profile: &Profile) -> Option<String> {
    styled(&etag_of(body), profile.etag.style)
}

/// Checks `If-Match` against the current representation. Both the strong
/// and the weak form of the current tag match (RFC 9110 weak comparison is
/// what most BMCs in the field apply to PATCH), as does `*`; a profile with
/// `strict_if_match` compares strongly, as RFC 9110 has If-Match do, so a
/// weak tag never matches.
pub fn check_if_match(
    headers: &HeaderMap,
    current: &Value,
    profile: &Profile,
) -> Result<(), ApiError> {
    if profile.etag.style == EtagStyle::None {
        return Ok(());
    }
    let values: Vec<&str> = headers
        .get_all(header::IF_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return if profile.etag.if_match_required {
            Err(ApiError::PreconditionRequired)
        } else {
            Ok(())
        };
    }
    let tag = etag_of(current);
    let strict = profile.etag.strict_if_match;
    let matches = values.iter().any(|v| {
        if strict && v.starts_with("W/") {
            return false;
        }
        let v: &str = v.strip_prefix("W/").unwrap_or(v);
        v == "*" || v.trim_matches('"') == tag
    });
    if matches {
        Ok(())
    } else {
        Err(ApiError::PreconditionFailed)
    }
}

/// A successful resource response: body with `@odata.etag`, and the ETag,
/// OData-Version, Allow and Content-Type headers.
///
/// The body is serialized once: the ETag is the hash of those bytes (the
/// representation without `@odata.etag`, as `etag_of` and `check_if_match`
/// see it), and `@odata.etag` is spliced in as the object's first member.
pub struct Resource {
    pub body: Value,
    /// The ETag style, `None` for resources without an ETag.
    etag: Option<EtagStyle>,
    /// The ETag's value when it is not the body's (`tagged_by`).
    tag: Option<String>,
    pub allow: &'static str,
    pub status: StatusCode,
}

impl Resource {
    /// A resource whose ETag follows the profile.
    pub fn new(body: Value, profile: &Profile, allow: &'static str) -> Self {
        Resource {
            body,
            etag: (profile.etag.style != EtagStyle::None).then_some(profile.etag.style),
            tag: None,
            allow,
            status: StatusCode::OK,
        }
    }

    /// A resource part of which moves by itself (a clock): its ETag is
    /// that of `basis`, the representation without that part, which is
    /// also what a PATCH's If-Match is checked against.
    pub fn tagged_by(body: Value, basis: &Value, profile: &Profile, allow: &'static str) -> Self {
        Resource {
            tag: Some(etag_of(basis)),
            ..Resource::new(body, profile, allow)
        }
    }

    /// A collection or other resource without an ETag.
    pub fn plain(body: Value, allow: &'static str) -> Self {
        Resource {
            body,
            etag: None,
            tag: None,
            allow,
            status: StatusCode::OK,
        }
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The bytes sent and the ETag header value.
    fn render_body(&self) -> (Vec<u8>, Option<String>) {
        let bytes = serde_json::to_vec(&self.body).unwrap_or_default();
        let Some(tag) = self.etag.and_then(|style| {
            let value = self.tag.clone().unwrap_or_else(|| tag_of_bytes(&bytes));
            styled(&value, style)
        }) else {
            return (bytes, None);
        };
        if !(self.body.is_object() && bytes.first() == Some(&b'{')) {
            return (bytes, Some(tag));
        }
        let member = format!(
            "\"@odata.etag\":{}",
            serde_json::to_string(&tag).unwrap_or_default()
        );
        let mut out = Vec::with_capacity(bytes.len() + member.len() + 1);
        out.push(b'{');
        out.extend_from_slice(member.as_bytes());
        if bytes.len() > 2 {
            out.push(b',');
        }
        out.extend_from_slice(&bytes[1..]);
        (out, Some(tag))
    }

    /// The response's bytes and headers, ready to be sent (and sent again:
    /// see `Rendered`).
    pub fn render(&self) -> Rendered {
        let link = described_by(&self.body);
        let (bytes, etag) = self.render_body();
        Rendered {
            bytes: Bytes::from(bytes),
            etag: etag.and_then(|t| HeaderValue::from_str(&t).ok()),
            link,
            allow: self.allow,
            status: self.status,
        }
    }
}

/// A resource response in its final form. Cloning it is cheap (the body is
/// shared), so a representation that has not changed can be answered again
/// without building its JSON.
#[derive(Clone, Debug)]
pub struct Rendered {
    pub bytes: Bytes,
    pub etag: Option<HeaderValue>,
    link: Option<HeaderValue>,
    allow: &'static str,
    status: StatusCode,
}

/// `Link: <…/ComputerSystem.v1_22_0.json>; rel=describedby` for a body's
/// `@odata.type` (DSP0266 §8.2: the JSON schema that describes it).
fn described_by(body: &Value) -> Option<HeaderValue> {
    let t = body.get("@odata.type")?.as_str()?.strip_prefix('#')?;
    // "#ComputerSystem.v1_22_0.ComputerSystem" → "ComputerSystem.v1_22_0";
    // "#ComputerSystemCollection.ComputerSystemCollection" → unversioned.
    let schema = match t.rsplit_once('.') {
        Some((ns, _)) => ns,
        None => t,
    };
    HeaderValue::from_str(&format!(
        "<http://redfish.dmtf.org/schemas/v1/{schema}.json>; rel=describedby"
    ))
    .ok()
}

impl IntoResponse for Resource {
    fn into_response(self) -> Response {
        self.render().into_response()
    }
}

impl IntoResponse for Rendered {
    fn into_response(self) -> Response {
        let mut r = (self.status, self.bytes).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        h.insert("OData-Version", HeaderValue::from_static("4.0"));
        h.insert(header::ALLOW, HeaderValue::from_static(self.allow));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        if let Some(tag) = self.etag {
            h.insert(header::ETAG, tag);
        }
        if let Some(l) = self.link {
            h.insert(header::LINK, l);
        }
        r
    }
}

/// 204 No Content with OData-Version.
pub fn no_content() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    r.headers_mut()
        .insert("OData-Version", HeaderValue::from_static("4.0"));
    r
}

/// Reads a string-valued action parameter, with the action's error messages.
pub fn action_str<'a>(
    body: &'a Map<String, Value>,
    param: &str,
    action: &str,
) -> Result<Option<&'a str>, ApiError> {
    match body.get(param) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(ApiError::bad(Msg::new(
            "ActionParameterValueTypeError",
            &[&shown(v), param, action],
        ))),
    }
}

pub fn action_bool(
    body: &Map<String, Value>,
    param: &str,
    action: &str,
) -> Result<Option<bool>, ApiError> {
    match body.get(param) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(ApiError::bad(Msg::new(
            "ActionParameterValueTypeError",
            &[&shown(v), param, action],
        ))),
    }
}

/// Refuses parameters the action does not define.
pub fn action_known(
    body: &Map<String, Value>,
    known: &[&str],
    action: &str,
) -> Result<(), ApiError> {
    let unknown: Vec<Msg> = body
        .keys()
        .filter(|k| !k.starts_with('@') && !known.contains(&k.as_str()))
        .map(|k| Msg::new("ActionParameterUnknown", &[action, k]))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(unknown))
    }
}

/// Refuses properties a body (not an action's) does not define, each
/// with PropertyUnknown.
pub fn properties_known(body: &Map<String, Value>, known: &[&str]) -> Result<(), ApiError> {
    let unknown: Vec<Msg> = body
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| Msg::new("PropertyUnknown", &[k]))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::BadRequest(unknown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_serialization_gives_body_etag_and_header() {
        let body = serde_json::json!({"@odata.id": "/r", "Name": "n \"q\""});
        let r = Resource::new(body.clone(), crate::profile::generic(), "GET");
        let (bytes, tag) = r.render_body();
        let sent: Value = serde_json::from_slice(&bytes).unwrap();
        let tag = tag.unwrap();
        assert_eq!(tag, format!("\"{}\"", etag_of(&body)));
        assert_eq!(sent["@odata.etag"], tag.as_str());
        let mut without = sent.clone();
        without.as_object_mut().unwrap().remove("@odata.etag");
        assert_eq!(without, body);
        let empty = Resource::new(serde_json::json!({}), crate::profile::generic(), "GET");
        let (bytes, _) = empty.render_body();
        assert!(serde_json::from_slice::<Value>(&bytes).unwrap()["@odata.etag"].is_string());
    }

    #[test]
    fn if_match_weak_and_strong() {
        let body = json!({"a": 1});
        let tag = etag_of(&body);
        let p = crate::profile::generic().clone();
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::IF_MATCH, HeaderValue::from_str(v).unwrap());
            m
        };
        assert!(check_if_match(&h(&format!("\"{tag}\"")), &body, &p).is_ok());
        assert!(check_if_match(&h(&format!("W/\"{tag}\"")), &body, &p).is_ok());
        assert!(check_if_match(&h("*"), &body, &p).is_ok());
        assert!(matches!(
            check_if_match(&h("\"nope\""), &body, &p),
            Err(ApiError::PreconditionFailed)
        ));
        assert!(check_if_match(&HeaderMap::new(), &body, &p).is_ok());
        let mut strict = p;
        strict.etag.if_match_required = true;
        assert!(matches!(
            check_if_match(&HeaderMap::new(), &body, &strict),
            Err(ApiError::PreconditionRequired)
        ));
    }
}
