//! How a captured service words its errors, as far as the capture shows
//! it: the Base registry version its MessageIds name (from the error
//! bodies it answered, else its Registries collection), and its error
//! envelope's own `code` and `message` where it keeps those constant
//! (iLO's `iLO.0.10.ExtendedInfo`) instead of the first message's.
//! A replay words the errors of writes the capture cannot show so.

use serde_json::Value;

use super::{Body, Mockup};

/// A captured service's error wording.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorStyle {
    /// `Base.1.12`: the registry and version its Base MessageIds carry.
    pub base: Option<String>,
    /// The envelope's constant `code` and `message`.
    pub envelope: Option<(String, String)>,
}

/// `Base.1.12` of a MessageId `Base.1.12.GeneralError` (or
/// `Base.1.12.0.GeneralError`, as some BMCs write it).
fn base_of(id: &str) -> Option<String> {
    let mut parts = id.split('.');
    if parts.next()? != "Base" {
        return None;
    }
    let major = parts.next()?;
    let minor = parts.next()?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(major) && numeric(minor)).then(|| format!("Base.{major}.{minor}"))
}

impl ErrorStyle {
    /// What `m` shows of its error wording.
    pub fn of(m: &Mockup) -> ErrorStyle {
        let errors: Vec<Value> = m
            .resources
            .values()
            .filter_map(|c| match &c.body {
                Body::Error { body, .. } => serde_json::from_str::<Value>(body).ok(),
                _ => None,
            })
            .filter(|v| v.get("error").is_some_and(Value::is_object))
            .collect();
        let ids = |e: &Value| -> Vec<String> {
            e["error"]["@Message.ExtendedInfo"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["MessageId"].as_str().map(str::to_string))
                .collect()
        };
        let from_errors = errors
            .iter()
            .flat_map(|e| {
                let mut all = ids(e);
                all.extend(e["error"]["code"].as_str().map(str::to_string));
                all
            })
            .find_map(|id| base_of(&id));
        let from_registries = m
            .json("/redfish/v1/Registries")
            .map(super::members)
            .into_iter()
            .flatten()
            .filter_map(|l| base_of(&format!("{}.X", l.rsplit('/').next()?)))
            .max_by_key(|b| version_key(b));
        // A code that is none of its messages' and the same on every
        // error the capture holds is the service's own.
        let envelope = errors.first().and_then(|first| {
            let code = first["error"]["code"].as_str()?;
            let message = first["error"]["message"].as_str().unwrap_or_default();
            let own = errors
                .iter()
                .all(|e| e["error"]["code"] == code && !ids(e).iter().any(|i| i == code));
            own.then(|| (code.to_string(), message.to_string()))
        });
        ErrorStyle {
            base: from_errors.or(from_registries),
            envelope,
        }
    }

    /// `error` (a Redfish error body of Shoal's) in this style: Base
    /// MessageIds at the captured version, the envelope's own code and
    /// message where the service has them.
    pub fn apply(&self, error: &mut Value) {
        let Some(e) = error.get_mut("error").and_then(Value::as_object_mut) else {
            return;
        };
        let restyle = |id: &str| -> Option<String> {
            let base = self.base.as_deref()?;
            let ours = base_of(id)?;
            Some(format!("{base}{}", &id[ours.len()..]))
        };
        if let Some(infos) = e
            .get_mut("@Message.ExtendedInfo")
            .and_then(Value::as_array_mut)
        {
            for info in infos {
                let id = info["MessageId"].as_str().and_then(restyle);
                if let Some(id) = id {
                    info["MessageId"] = Value::String(id);
                }
            }
        }
        match &self.envelope {
            Some((code, message)) => {
                e.insert("code".into(), Value::String(code.clone()));
                e.insert("message".into(), Value::String(message.clone()));
            }
            None => {
                if let Some(code) = e.get("code").and_then(Value::as_str).and_then(restyle) {
                    e.insert("code".into(), Value::String(code));
                }
            }
        }
    }
}

/// `Base.1.12` as (1, 12), to find the newest.
fn version_key(base: &str) -> (u32, u32) {
    let mut n = base
        .split('.')
        .skip(1)
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (n.next().unwrap_or(0), n.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mockup::Captured;
    use serde_json::json;

    fn capture(parts: Vec<(&str, Body)>) -> Mockup {
        Mockup {
            source: "t".into(),
            resources: parts
                .into_iter()
                .map(|(u, body)| {
                    (
                        u.to_string(),
                        Captured {
                            body,
                            headers: Vec::new(),
                            secs: None,
                            file: "t".into(),
                        },
                    )
                })
                .collect(),
            systems: Vec::new(),
            dangling: Vec::new(),
            folded: Default::default(),
        }
    }

    fn refused(body: Value) -> Body {
        Body::Error {
            status: 404,
            body: body.to_string(),
        }
    }

    #[test]
    fn an_ilo_style_envelope_and_its_base_version_are_kept() {
        let ilo = capture(vec![(
            "/redfish/v1/Systems/1/Missing",
            refused(json!({"error": {"code": "iLO.0.10.ExtendedInfo",
                "message": "See @Message.ExtendedInfo for more information.",
                "@Message.ExtendedInfo": [{"MessageId": "Base.1.4.ResourceMissingAtURI"}]}})),
        )]);
        let style = ErrorStyle::of(&ilo);
        assert_eq!(style.base.as_deref(), Some("Base.1.4"));
        let mut ours = json!({"error": {"code": "Base.1.19.PropertyNotWritable",
            "message": "The property Name is a read-only property.",
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.19.PropertyNotWritable", "Message": "m"},
                                      {"MessageId": "Shoal.1.0.Other"}]}});
        style.apply(&mut ours);
        assert_eq!(ours["error"]["code"], "iLO.0.10.ExtendedInfo");
        assert_eq!(
            ours["error"]["message"],
            "See @Message.ExtendedInfo for more information."
        );
        let infos = &ours["error"]["@Message.ExtendedInfo"];
        assert_eq!(infos[0]["MessageId"], "Base.1.4.PropertyNotWritable");
        assert_eq!(infos[1]["MessageId"], "Shoal.1.0.Other", "only Base's");
    }

    #[test]
    fn dells_general_error_envelope_and_the_first_messages_code_otherwise() {
        // iDRAC: every error's code is Base's GeneralError, its messages
        // iDRAC's own.
        let dell = capture(vec![
            (
                "/redfish/v1/Registries",
                Body::Json(json!({"Members": [
                    {"@odata.id": "/redfish/v1/Registries/Base.1.8.0"},
                    {"@odata.id": "/redfish/v1/Registries/Base.1.12.0"},
                    {"@odata.id": "/redfish/v1/Registries/IDRAC.2.8"}]})),
            ),
            (
                "/redfish/v1/Oops",
                refused(
                    json!({"error": {"code": "Base.1.12.GeneralError", "message": "x",
                    "@Message.ExtendedInfo": [{"MessageId": "IDRAC.2.8.SYS403"}]}}),
                ),
            ),
        ]);
        let style = ErrorStyle::of(&dell);
        assert_eq!(style.base.as_deref(), Some("Base.1.12"));
        assert_eq!(
            style.envelope,
            Some(("Base.1.12.GeneralError".into(), "x".into()))
        );
        let mut ours = json!({"error": {"code": "Base.1.19.PropertyNotWritable", "message": "m",
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.19.PropertyNotWritable"}]}});
        style.apply(&mut ours);
        assert_eq!(ours["error"]["code"], "Base.1.12.GeneralError");
        assert_eq!(ours["error"]["message"], "x");
        assert_eq!(
            ours["error"]["@Message.ExtendedInfo"][0]["MessageId"],
            "Base.1.12.PropertyNotWritable"
        );
        // bmcweb: the code is the first message's; so is the replay's.
        let openbmc = capture(vec![(
            "/redfish/v1/Oops",
            refused(
                json!({"error": {"code": "Base.1.13.ResourceNotFound", "message": "y",
                "@Message.ExtendedInfo": [{"MessageId": "Base.1.13.ResourceNotFound"}]}}),
            ),
        )]);
        let style = ErrorStyle::of(&openbmc);
        assert_eq!(style.envelope, None);
        let mut ours = json!({"error": {"code": "Base.1.19.GeneralError", "message": "m",
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.19.GeneralError"}]}});
        style.apply(&mut ours);
        assert_eq!(ours["error"]["code"], "Base.1.13.GeneralError");
        assert_eq!(ours["error"]["message"], "m");
        // Registries alone name the version; nothing captured, nothing changed.
        let registries_only = capture(vec![(
            "/redfish/v1/Registries",
            Body::Json(json!({"Members": [{"@odata.id": "/redfish/v1/Registries/Base.1.8.0"}]})),
        )]);
        assert_eq!(
            ErrorStyle::of(&registries_only).base.as_deref(),
            Some("Base.1.8")
        );
        let mut same = ours.clone();
        ErrorStyle::default().apply(&mut same);
        assert_eq!(same, ours);
    }
}
