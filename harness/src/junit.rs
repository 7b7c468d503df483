//! JUnit XML, the one writer behind every report CI systems read: the
//! scenario run's, the conformance run's and the fuzz run's. One
//! `<testsuite>` of `<testcase>`s; a failed case carries a `<failure>`
//! with a message and, when given, a text. Every attribute and text is
//! escaped here, so callers pass plain strings.

/// A test suite: its name, the total time when the report gives one, and
/// its cases in order.
pub struct Suite<'a> {
    pub name: &'a str,
    /// Seconds, written with one decimal; `None` leaves the attribute out.
    pub time: Option<f64>,
    pub cases: Vec<Case>,
}

/// One test case; `failure` is `None` when it passed.
pub struct Case {
    pub classname: String,
    pub name: String,
    /// Seconds, written with one decimal.
    pub time: f64,
    pub failure: Option<Failure>,
}

/// Why a case failed: the `message` attribute, and the element's text
/// (`None`: an empty `<failure/>` element).
pub struct Failure {
    pub message: String,
    pub text: Option<String>,
}

/// `s` with `&`, `"`, `<` and `>` escaped, for an XML attribute or text.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Suite<'_> {
    /// The XML document, ending with a newline.
    pub fn to_xml(&self) -> String {
        let failures = self.cases.iter().filter(|c| c.failure.is_some()).count();
        let time = self
            .time
            .map(|t| format!(" time=\"{t:.1}\""))
            .unwrap_or_default();
        let mut x = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\"{time}>\n",
            escape(self.name),
            self.cases.len()
        );
        for c in &self.cases {
            x.push_str(&format!(
                "  <testcase classname=\"{}\" name=\"{}\" time=\"{:.1}\"",
                escape(&c.classname),
                escape(&c.name),
                c.time
            ));
            match &c.failure {
                None => x.push_str("/>\n"),
                Some(Failure {
                    message,
                    text: None,
                }) => x.push_str(&format!(
                    ">\n    <failure message=\"{}\"/>\n  </testcase>\n",
                    escape(message)
                )),
                Some(Failure {
                    message,
                    text: Some(text),
                }) => x.push_str(&format!(
                    ">\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                    escape(message),
                    escape(text)
                )),
            }
        }
        x.push_str("</testsuite>\n");
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_failed_and_texts_are_written_escaped() {
        let case = |name: &str, failure| Case {
            classname: "c.<x>".into(),
            name: name.into(),
            time: 1.5,
            failure,
        };
        let suite = Suite {
            name: "s",
            time: None,
            cases: vec![
                case("ok", None),
                case(
                    "bare",
                    Some(Failure {
                        message: "\"a\" & b".into(),
                        text: None,
                    }),
                ),
                case(
                    "text",
                    Some(Failure {
                        message: "m".into(),
                        text: Some("<t>".into()),
                    }),
                ),
            ],
        };
        assert_eq!(
            suite.to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuite name=\"s\" tests=\"3\" failures=\"2\">\n  \
             <testcase classname=\"c.&lt;x&gt;\" name=\"ok\" time=\"1.5\"/>\n  \
             <testcase classname=\"c.&lt;x&gt;\" name=\"bare\" time=\"1.5\">\n    \
             <failure message=\"&quot;a&quot; &amp; b\"/>\n  </testcase>\n  \
             <testcase classname=\"c.&lt;x&gt;\" name=\"text\" time=\"1.5\">\n    \
             <failure message=\"m\">&lt;t&gt;</failure>\n  </testcase>\n\
             </testsuite>\n"
        );
        let timed = Suite {
            name: "s",
            time: Some(2.0),
            cases: vec![],
        };
        assert!(timed
            .to_xml()
            .contains("<testsuite name=\"s\" tests=\"0\" failures=\"0\" time=\"2.0\">"));
    }
}
