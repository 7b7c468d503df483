//! A small element tree over quick-xml for editing libvirt domain XML.
//!
//! Everything Shoal does not touch is written back as it was read: text,
//! comments and entity references are kept raw (still escaped), attribute
//! order is kept, only the attributes and elements Shoal edits change.

use quick_xml::events::Event;
use quick_xml::Reader;

#[derive(Debug, thiserror::Error)]
#[error("domain XML: {0}")]
pub struct XmlError(pub String);

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Element(Element),
    /// Already-serialised markup: escaped text, comments, CDATA, references.
    Raw(String),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Element {
    pub name: String,
    /// Unescaped attribute values, in document order.
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

fn utf8(b: &[u8]) -> Result<String, XmlError> {
    String::from_utf8(b.to_vec()).map_err(|e| XmlError(e.to_string()))
}

fn start(e: &quick_xml::events::BytesStart) -> Result<Element, XmlError> {
    let mut el = Element {
        name: utf8(e.name().as_ref())?,
        ..Default::default()
    };
    for a in e.attributes() {
        let a = a.map_err(|x| XmlError(x.to_string()))?;
        let v = a.unescape_value().map_err(|x| XmlError(x.to_string()))?;
        el.attrs.push((utf8(a.key.as_ref())?, v.into_owned()));
    }
    Ok(el)
}

/// Parses a document with one root element (prolog and trailing markup are dropped).
pub fn parse(xml: &str) -> Result<Element, XmlError> {
    let mut reader = Reader::from_str(xml);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let ev = reader
            .read_event()
            .map_err(|e| XmlError(format!("at {}: {e}", reader.buffer_position())))?;
        let raw = match ev {
            Event::Start(e) => {
                stack.push(start(&e)?);
                continue;
            }
            Event::Empty(e) => {
                let el = start(&e)?;
                match stack.last_mut() {
                    Some(p) => p.children.push(Node::Element(el)),
                    None => return Ok(el),
                }
                continue;
            }
            Event::End(_) => {
                let el = stack
                    .pop()
                    .ok_or_else(|| XmlError("unbalanced end tag".into()))?;
                match stack.last_mut() {
                    Some(p) => p.children.push(Node::Element(el)),
                    None => return Ok(el),
                }
                continue;
            }
            Event::Text(t) => utf8(&t.into_inner())?,
            Event::GeneralRef(r) => format!("&{};", utf8(&r.into_inner())?),
            Event::CData(c) => format!("<![CDATA[{}]]>", utf8(&c.into_inner())?),
            Event::Comment(c) => format!("<!--{}-->", utf8(&c.into_inner())?),
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) => continue,
            Event::Eof => return Err(XmlError("no root element".into())),
        };
        if let Some(p) = stack.last_mut() {
            p.children.push(Node::Raw(raw));
        }
    }
}

pub fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

impl Element {
    pub fn new(name: &str) -> Self {
        Element {
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn with_attr(mut self, k: &str, v: &str) -> Self {
        self.set_attr(k, v);
        self
    }

    pub fn with_text(mut self, text: &str) -> Self {
        self.children.push(Node::Raw(escape(text)));
        self
    }

    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn set_attr(&mut self, k: &str, v: &str) {
        match self.attrs.iter_mut().find(|(n, _)| n == k) {
            Some(a) => a.1 = v.to_string(),
            None => self.attrs.push((k.to_string(), v.to_string())),
        }
    }

    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Raw(_) => None,
        })
    }

    pub fn elements_mut(&mut self) -> impl Iterator<Item = &mut Element> {
        self.children.iter_mut().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Raw(_) => None,
        })
    }

    pub fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|e| e.name == name)
    }

    pub fn child_mut(&mut self, name: &str) -> Option<&mut Element> {
        self.elements_mut().find(|e| e.name == name)
    }

    /// The child `name`, created (appended) when absent.
    pub fn child_or_insert(&mut self, name: &str) -> &mut Element {
        if self.child(name).is_none() {
            self.children.push(Node::Element(Element::new(name)));
        }
        self.child_mut(name).expect("just inserted")
    }

    /// Follows a path of child names (`os/type`).
    pub fn at(&self, path: &str) -> Option<&Element> {
        path.split('/').try_fold(self, |e, n| e.child(n))
    }

    /// Removes the children for which `f` is true; returns how many.
    pub fn remove_where(&mut self, f: impl Fn(&Element) -> bool) -> usize {
        let before = self.children.len();
        self.children
            .retain(|n| !matches!(n, Node::Element(e) if f(e)));
        before - self.children.len()
    }

    pub fn push(&mut self, e: Element) {
        self.children.push(Node::Element(e));
    }

    /// The element's text, unescaped.
    pub fn text(&self) -> String {
        let raw: String = self
            .children
            .iter()
            .filter_map(|n| {
                if let Node::Raw(r) = n {
                    Some(r.as_str())
                } else {
                    None
                }
            })
            .collect();
        quick_xml::escape::unescape(&raw)
            .map(|c| c.into_owned())
            .unwrap_or(raw)
    }

    pub fn write(&self, out: &mut String) {
        out.push('<');
        out.push_str(&self.name);
        for (k, v) in &self.attrs {
            out.push_str(&format!(
                " {k}=\"{}\"",
                quick_xml::escape::escape(v.as_str()).replace('"', "&quot;")
            ));
        }
        if self.children.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        for c in &self.children {
            match c {
                Node::Element(e) => e.write(out),
                Node::Raw(r) => out.push_str(r),
            }
        }
        out.push_str(&format!("</{}>", self.name));
    }

    pub fn to_xml(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOMAIN: &str = r#"<domain type='qemu'>
  <name>node &amp; co</name>
  <!-- kept -->
  <metadata><app:x xmlns:app="urn:a">1</app:x></metadata>
  <os firmware="efi"><type arch="x86_64" machine="q35">hvm</type><boot dev="hd"/></os>
  <devices><disk type="file" device="disk"><target dev="vda"/></disk></devices>
</domain>"#;

    #[test]
    fn round_trip_keeps_what_it_does_not_own() {
        let d = parse(DOMAIN).unwrap();
        let again = parse(&d.to_xml()).unwrap();
        assert_eq!(d, again);
        let out = d.to_xml();
        assert!(
            out.contains("<!-- kept -->")
                && out.contains("node &amp; co")
                && out.contains(r#"<app:x xmlns:app="urn:a">1</app:x>"#),
            "{out}"
        );
        assert_eq!(d.at("name").unwrap().text(), "node & co");
        assert_eq!(d.at("os/type").unwrap().attr("arch"), Some("x86_64"));
    }

    #[test]
    fn edits_touch_only_their_part() {
        let mut d = parse(DOMAIN).unwrap();
        d.child_mut("os")
            .unwrap()
            .remove_where(|e| e.name == "boot");
        d.child_mut("devices")
            .unwrap()
            .elements_mut()
            .next()
            .unwrap()
            .push(Element::new("boot").with_attr("order", "1"));
        let out = d.to_xml();
        assert!(!out.contains("boot dev"));
        assert!(
            out.contains(r#"<target dev="vda"/><boot order="1"/>"#),
            "{out}"
        );
        assert!(parse("<a><b></a>").is_err());
    }
}
