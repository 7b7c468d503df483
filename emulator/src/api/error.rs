//! The API layer's error type and its single mapping to HTTP.
//!
//! Every failure a client can see is an [`ApiError`]; [`IntoResponse`] renders
//! it as a Redfish error body (`error.code`, `error.message`,
//! `error.@Message.ExtendedInfo`) with Base registry MessageIds. Backend and
//! auth errors convert into it through `From`, so handlers just use `?`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::backend::{BackendError, MediaError, Unsupported};
use crate::profile::VendorMessage;
use crate::registry;

/// One Base registry message: id, arguments and the JSON pointer-ish
/// property paths it relates to; or a vendor's own message (a profile's),
/// which always follows a Base message saying the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub id: &'static str,
    pub args: Vec<String>,
    pub related: Vec<String>,
    vendor: Option<(&'static VendorMessage, String)>,
}

/// Longest message argument kept, in bytes: arguments echo what a client
/// sent, and an error must not be a way to amplify it.
pub const MAX_ARG: usize = 512;
/// Most messages in one error body; past it one `GeneralError` says more
/// were found.
pub const MAX_MESSAGES: usize = 64;

/// `s`, cut to [`MAX_ARG`] bytes at a character boundary.
fn bounded(s: &str) -> String {
    if s.len() <= MAX_ARG {
        return s.to_string();
    }
    let mut end = MAX_ARG;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

impl Msg {
    pub fn new(id: &'static str, args: &[&str]) -> Self {
        Msg {
            id,
            args: args.iter().map(|s| bounded(s)).collect(),
            related: Vec::new(),
            vendor: None,
        }
    }

    /// A profile's vendor message; `{settings}` in its text becomes
    /// `settings_uri`.
    pub fn vendor(m: &'static VendorMessage, settings_uri: &str) -> Self {
        Msg {
            id: "",
            args: Vec::new(),
            related: Vec::new(),
            vendor: Some((m, m.message.replace("{settings}", settings_uri))),
        }
    }

    /// A vendor message with its arguments substituted (`%1` → `args[0]`).
    pub fn vendor_with(m: &'static VendorMessage, args: &[&str]) -> Self {
        let mut text = m.message.clone();
        for (i, a) in args.iter().enumerate().rev() {
            text = text.replace(&format!("%{}", i + 1), &bounded(a));
        }
        Msg {
            id: "",
            args: Vec::new(),
            related: Vec::new(),
            vendor: Some((m, text)),
        }
    }

    /// Attaches a `RelatedProperties` entry (`#/Boot/HttpBootUri`).
    pub fn about(mut self, property_path: &str) -> Self {
        self.related.push(format!("#/{}", bounded(property_path)));
        self
    }

    pub fn render(&self) -> Value {
        if let Some((m, text)) = &self.vendor {
            let mut v = json!({
                "@odata.type": "#Message.v1_1_1.Message",
                "MessageId": m.id,
                "Message": text,
                "MessageArgs": [],
                "MessageSeverity": m.severity,
                "Severity": m.severity,
                "Resolution": m.resolution,
            });
            if !self.related.is_empty() {
                v["RelatedProperties"] = json!(self.related);
            }
            return v;
        }
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        registry::message(self.id, &args, &self.related)
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// 400 with one or more messages (all validation problems of a request).
    #[error("bad request: {0:?}")]
    BadRequest(Vec<Msg>),
    #[error("authentication required")]
    Unauthorized,
    #[error("insufficient privilege")]
    Forbidden,
    #[error("resource not found: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("ETag mismatch")]
    PreconditionFailed,
    #[error("If-Match required")]
    PreconditionRequired,
    #[error("payload too large")]
    PayloadTooLarge,
    #[error("unsupported media type")]
    UnsupportedMediaType,
    #[error("service unavailable, retry in {0} s")]
    Unavailable(u32),
    /// 501: a `$` query parameter Shoal does not implement.
    #[error("query parameter {0} not supported")]
    QueryUnsupported(String),
    /// 412: a request header with a value the service cannot honour
    /// (`OData-Version` other than 4.0).
    #[error("invalid header {0}")]
    HeaderInvalid(String),
    #[error("redirect to {location}")]
    Redirect {
        location: String,
        permanent_method: bool,
    },
    #[error("internal error: {0}")]
    Internal(String),
    /// A status with its messages: an injected fault, a vendor's refusal.
    #[error("HTTP {0}")]
    Status(StatusCode, Vec<Msg>),
}

impl ApiError {
    pub fn bad(msg: Msg) -> Self {
        ApiError::BadRequest(vec![msg])
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            ApiError::PreconditionRequired => StatusCode::PRECONDITION_REQUIRED,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::QueryUnsupported(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::HeaderInvalid(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::Redirect {
                permanent_method: true,
                ..
            } => StatusCode::PERMANENT_REDIRECT,
            ApiError::Redirect { .. } => StatusCode::MOVED_PERMANENTLY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Status(s, _) => *s,
        }
    }

    fn messages(&self) -> Vec<Msg> {
        match self {
            ApiError::BadRequest(m) => m.clone(),
            ApiError::Unauthorized => vec![Msg::new("NoValidSession", &[])],
            ApiError::Forbidden => vec![Msg::new("InsufficientPrivilege", &[])],
            ApiError::NotFound(uri) => vec![Msg::new("ResourceMissingAtURI", &[uri])],
            ApiError::MethodNotAllowed => vec![Msg::new("OperationNotAllowed", &[])],
            ApiError::Conflict(_) => vec![Msg::new("ResourceInUse", &[])],
            ApiError::PreconditionFailed => vec![Msg::new("PreconditionFailed", &[])],
            ApiError::PreconditionRequired => vec![Msg::new("PreconditionRequired", &[])],
            ApiError::PayloadTooLarge => vec![Msg::new("PayloadTooLarge", &[])],
            ApiError::UnsupportedMediaType => vec![Msg::new("UnrecognizedRequestBody", &[])],
            ApiError::Unavailable(s) => {
                vec![Msg::new("ServiceTemporarilyUnavailable", &[&s.to_string()])]
            }
            ApiError::QueryUnsupported(p) => vec![Msg::new("QueryParameterUnsupported", &[p])],
            ApiError::HeaderInvalid(h) => vec![Msg::new("HeaderInvalid", &[h])],
            ApiError::Redirect { .. } => vec![],
            ApiError::Internal(_) => vec![Msg::new("InternalError", &[])],
            ApiError::Status(_, m) => m.clone(),
        }
    }
}

/// Renders the standard Redfish error envelope for a list of messages.
pub fn error_body(msgs: &[Msg]) -> Value {
    let mut kept: Vec<Msg> = msgs.iter().take(MAX_MESSAGES).cloned().collect();
    if msgs.len() > MAX_MESSAGES {
        kept.push(Msg::new("GeneralError", &[]));
    }
    let msgs = &kept[..];
    let first = msgs.first().map(Msg::render);
    let (code, message) = match (msgs.len(), &first) {
        (1, Some(m)) => (m["MessageId"].clone(), m["Message"].clone()),
        _ => (
            json!(registry::message_id("GeneralError")),
            json!("A general error has occurred. See ExtendedInfo for more information."),
        ),
    };
    json!({
        "error": {
            "code": code,
            "message": message,
            "@Message.ExtendedInfo": msgs.iter().map(Msg::render).collect::<Vec<_>>(),
        }
    })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        match &self {
            ApiError::Internal(why) => tracing::error!(%why, "internal error"),
            ApiError::Conflict(why) => tracing::debug!(%why, "conflict"),
            _ => {}
        }
        if let ApiError::Redirect { location, .. } = &self {
            let mut r = status.into_response();
            if let Ok(v) = HeaderValue::from_str(location) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            return r;
        }
        let msgs = self.messages();
        let mut r = (status, axum::Json(error_body(&msgs))).into_response();
        // For the access log: the first MessageId, as the body names it.
        if let Some(id) = msgs
            .first()
            .map(Msg::render)
            .and_then(|m| m["MessageId"].as_str().map(str::to_string))
        {
            r.extensions_mut().insert(crate::access::Refused(id));
        }
        let h = r.headers_mut();
        h.insert("OData-Version", HeaderValue::from_static("4.0"));
        match &self {
            ApiError::Unauthorized => {
                h.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"Redfish\""),
                );
            }
            ApiError::Unavailable(s) => {
                if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                    h.insert(header::RETRY_AFTER, v);
                }
            }
            _ => {}
        }
        r
    }
}

const INSERT: &str = "VirtualMedia.InsertMedia";

/// The one mapping of backend errors, which speak of machines, to Redfish.
impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::NotFound(id) => ApiError::NotFound(id),
            BackendError::Conflict(why) => ApiError::Conflict(why),
            BackendError::Unsupported(u) => ApiError::bad(unsupported(&u)),
            BackendError::Media(m) => ApiError::bad(media(&m)),
            BackendError::Unavailable(why) => {
                tracing::warn!(%why, "backend unavailable");
                ApiError::Unavailable(5)
            }
            BackendError::Internal(why) => ApiError::Internal(why),
        }
    }
}

fn unsupported(u: &Unsupported) -> Msg {
    match u {
        Unsupported::BootMode(mode) => {
            const MODE: &str = "Boot/BootSourceOverrideMode";
            Msg::new("PropertyValueNotInList", &[mode.as_str(), MODE]).about(MODE)
        }
        Unsupported::Insert(_) => Msg::new("ActionNotSupported", &[INSERT]),
        Unsupported::Eject(_) => Msg::new("ActionNotSupported", &["VirtualMedia.EjectMedia"]),
        Unsupported::Console => Msg::new("ActionNotSupported", &["Serial console"]),
        Unsupported::Refused(why) => Msg::new("ActionNotSupported", &[why]),
    }
}

fn media(m: &MediaError) -> Msg {
    match m {
        MediaError::Protocol(p) => Msg::new(
            "ActionParameterValueNotInList",
            &[p.as_str(), "TransferProtocolType", INSERT],
        ),
        MediaError::BadImage(url) => {
            Msg::new("ActionParameterValueFormatError", &[url, "Image", INSERT])
        }
        MediaError::Unreachable(url) => Msg::new("CouldNotEstablishConnection", &[url]),
        MediaError::Unauthorized { url, status } => {
            Msg::new("ResourceAtUriUnauthorized", &[url, &status.to_string()])
        }
        MediaError::Missing(url) => Msg::new("ResourceMissingAtURI", &[url]),
        MediaError::TooLarge => Msg::new("PayloadTooLarge", &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_message_becomes_the_error_code() {
        let b = error_body(&[Msg::new("PropertyUnknown", &["Foo"])]);
        assert_eq!(b["error"]["code"], "Base.1.19.PropertyUnknown");
        assert_eq!(
            b["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][0],
            "Foo"
        );
    }

    #[test]
    fn errors_do_not_amplify_what_the_client_sent() {
        let arg = "%1".repeat(100_000);
        let msgs: Vec<Msg> = (0..1000)
            .map(|_| Msg::new("PropertyUnknown", &[&arg]).about(&arg))
            .collect();
        let b = error_body(&msgs);
        let len = serde_json::to_vec(&b).unwrap().len();
        assert!(len < 200_000, "{len} bytes");
        let infos = b["error"]["@Message.ExtendedInfo"].as_array().unwrap();
        assert_eq!(infos.len(), MAX_MESSAGES + 1);
        assert_eq!(infos[MAX_MESSAGES]["MessageId"], "Base.1.19.GeneralError");
    }

    #[test]
    fn several_messages_use_general_error() {
        let b = error_body(&[
            Msg::new("PropertyUnknown", &["Foo"]),
            Msg::new("PropertyUnknown", &["Bar"]),
        ]);
        assert_eq!(b["error"]["code"], "Base.1.19.GeneralError");
        assert_eq!(
            b["error"]["@Message.ExtendedInfo"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
}
