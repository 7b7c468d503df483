//! The few statements beyond literals that real sushy-tools configuration
//! files hold, understood without running anything: `import collections`
//! (or `from collections import namedtuple`), a named tuple type made from
//! it (`Host = collections.namedtuple('Host', ['hostname', 'port'])`), and
//! that type called with literals (`Host(hostname='h', port=1)`), whose
//! value is the tuple of its fields in their declared order, as Python's.
//! metal3's fake-IPA setup writes all three in the `conf.py` that
//! sushy-emulator and sushy-fake-ipa share. Any other import or call stays
//! code, refused with its line.

use super::lex::Tok;
use super::{err, LiteralError, Parser, Py};

/// What the file has imported and the tuple types it made.
#[derive(Default)]
pub(super) struct Idioms {
    /// `import collections`: `collections.namedtuple` may be called.
    collections: bool,
    /// `from collections import namedtuple`: `namedtuple` may be called.
    namedtuple: bool,
    /// The named tuple types made so far: name and fields.
    types: Vec<(String, Vec<String>)>,
}

/// The modules and names an import may bring: the standard library's
/// `collections` and, from it, only what builds a literal.
const FROM_COLLECTIONS: &[&str] = &["namedtuple"];

impl Parser<'_> {
    /// An `import` or `from` statement (its keyword already read).
    pub(super) fn import(&mut self, line: usize, keyword: &str) -> Result<(), LiteralError> {
        let refuse = |what: &str| {
            err(
                line,
                format!(
                    "`{what}` is code: Shoal reads literal assignments, `import collections` \
                     and `from collections import namedtuple` only"
                ),
            )
        };
        self.bump()?;
        let module = match &self.tok {
            Tok::Name(m) => m.clone(),
            _ => return refuse(keyword),
        };
        if module != "collections" {
            return refuse(&format!("{keyword} {module}"));
        }
        self.bump()?;
        if keyword == "import" {
            self.idioms.collections = true;
            return self.end_of_statement();
        }
        if self.tok != Tok::Name("import".into()) {
            return err(
                line,
                format!(
                    "expected `import` after `from collections`, found {}",
                    self.tok
                ),
            );
        }
        loop {
            self.bump()?;
            match &self.tok {
                Tok::Name(n) if FROM_COLLECTIONS.contains(&n.as_str()) => {
                    self.idioms.namedtuple = true;
                }
                Tok::Name(n) => return refuse(&format!("from collections import {n}")),
                t => return err(line, format!("expected a name to import, found {t}")),
            }
            self.bump()?;
            if self.tok != Tok::Punct(',') {
                return self.end_of_statement();
            }
        }
    }

    /// At the start of an assignment's value: `collections.namedtuple(...)`
    /// or `namedtuple(...)` once imported. Makes the type `name` and
    /// returns true; false (nothing read) for any other value.
    pub(super) fn tuple_type(&mut self, name: &str) -> Result<bool, LiteralError> {
        match &self.tok {
            Tok::Name(n) if n == "collections" && self.idioms.collections => {
                self.bump()?;
                self.expect('.')?;
                if self.tok != Tok::Name("namedtuple".into()) {
                    return err(
                        self.line,
                        format!(
                            "`collections.{}` is code: only `collections.namedtuple` is read",
                            self.tok
                        ),
                    );
                }
            }
            Tok::Name(n) if n == "namedtuple" && self.idioms.namedtuple => {}
            _ => return Ok(false),
        }
        let line = self.line;
        self.bump()?;
        self.expect('(')?;
        let Tok::Str(_) = self.tok else {
            return err(
                line,
                "namedtuple: expected the type's name as a string first",
            );
        };
        self.value()?;
        self.expect(',')?;
        let fields = match self.value()? {
            // `'hostname port'` or `'hostname, port'`, as Python splits it.
            Py::Str(s) => s
                .replace(',', " ")
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            Py::List(v) | Py::Tuple(v) => v
                .into_iter()
                .map(|f| match f {
                    Py::Str(s) => Ok(s),
                    f => err(
                        line,
                        format!("namedtuple: a field name must be a string, found {f}"),
                    ),
                })
                .collect::<Result<Vec<_>, _>>()?,
            v => {
                return err(
                    line,
                    format!("namedtuple: expected the field names, found {v}"),
                )
            }
        };
        if self.tok == Tok::Punct(',') {
            self.bump()?;
        }
        if self.tok != Tok::Punct(')') {
            return err(
                self.line,
                format!(
                    "namedtuple: only the name and the fields are read, found {}",
                    self.tok
                ),
            );
        }
        self.bump()?;
        self.idioms.types.retain(|(t, _)| t != name);
        self.idioms.types.push((name.to_string(), fields));
        Ok(true)
    }

    /// The fields of the named tuple type `name`, if the file made one.
    pub(super) fn tuple_fields(&self, name: &str) -> Option<Vec<String>> {
        self.idioms
            .types
            .iter()
            .find(|(t, _)| t == name)
            .map(|(_, f)| f.clone())
    }

    /// A call of a named tuple type (its name already read): literals by
    /// position, then by field name; every field given once.
    pub(super) fn construct(&mut self, ty: &str, fields: &[String]) -> Result<Py, LiteralError> {
        let line = self.line;
        self.expect('(')?;
        let mut values: Vec<Option<Py>> = vec![None; fields.len()];
        let mut next = 0;
        while self.tok != Tok::Punct(')') {
            let keyword = match &self.tok {
                Tok::Name(n) if !matches!(n.as_str(), "True" | "False" | "None") => Some(n.clone()),
                _ => None,
            };
            let slot = if let Some(k) = keyword {
                self.bump()?;
                self.expect('=')?;
                fields
                    .iter()
                    .position(|f| *f == k)
                    .ok_or_else(|| LiteralError {
                        line,
                        message: format!(
                            "{ty}() has no field `{k}` (fields: {})",
                            fields.join(", ")
                        ),
                    })?
            } else {
                if next >= fields.len() || values[next..].iter().any(Option::is_some) {
                    return err(line, format!("{ty}() takes {} values", fields.len()));
                }
                next += 1;
                next - 1
            };
            if values[slot].is_some() {
                return err(line, format!("{ty}() got `{}` twice", fields[slot]));
            }
            values[slot] = Some(self.value()?);
            match self.tok {
                Tok::Punct(',') => self.bump()?,
                Tok::Punct(')') => {}
                _ => {
                    return err(
                        self.line,
                        format!("expected `,` or `)`, found {}", self.tok),
                    )
                }
            }
        }
        self.bump()?;
        values
            .into_iter()
            .zip(fields)
            .map(|(v, f)| {
                v.ok_or_else(|| LiteralError {
                    line,
                    message: format!("{ty}() is missing `{f}`"),
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Py::Tuple)
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn metal3s_shared_conf_idioms_are_read() {
        let src =
            "import collections\n\nHost = collections.namedtuple('Host', ['hostname', 'port'])\n\
                   A = Host(hostname=\"192.168.111.1\", port=\"9902\")\n\
                   B = Host('h', port=1)\n";
        let a = parse(src).unwrap();
        let get = |n: &str| a.iter().find(|x| x.name == n).map(|x| x.value.clone());
        assert_eq!(
            get("A"),
            Some(Py::Tuple(vec![
                Py::Str("192.168.111.1".into()),
                Py::Str("9902".into())
            ]))
        );
        assert_eq!(
            get("B"),
            Some(Py::Tuple(vec![Py::Str("h".into()), Py::Int(1)]))
        );
        // The type itself is no setting.
        assert_eq!(get("Host"), None);
        let from =
            "from collections import namedtuple\nP = namedtuple('P', 'a b')\nX = P(b=2, a=1)\n";
        assert_eq!(
            parse(from).unwrap()[0].value,
            Py::Tuple(vec![Py::Int(1), Py::Int(2)])
        );
    }

    #[test]
    fn other_imports_and_calls_stay_code() {
        for (src, line, words) in [
            ("import os\n", 1, "`import os` is code"),
            ("from os import environ\n", 1, "`from os` is code"),
            (
                "from collections import OrderedDict\n",
                1,
                "`from collections import OrderedDict` is code",
            ),
            (
                "A = collections.namedtuple('A', 'x')\n",
                1,
                "`collections` is a name",
            ),
            (
                "import collections\nA = collections.OrderedDict()\n",
                2,
                "only `collections.namedtuple`",
            ),
            (
                "import collections\nH = collections.namedtuple('H', 'a b')\nX = H(1)\n",
                3,
                "missing `b`",
            ),
            (
                "import collections\nH = collections.namedtuple('H', 'a')\nX = H(c=1)\n",
                3,
                "no field `c`",
            ),
            (
                "import collections\nH = collections.namedtuple('H', 'a')\nX = H(1, 2)\n",
                3,
                "takes 1 values",
            ),
            (
                "import collections\nH = collections.namedtuple('H', 'a')\nX = H(1, a=2)\n",
                3,
                "`a` twice",
            ),
            (
                "import collections\nH = collections.namedtuple('H', 'a', rename=True)\n",
                2,
                "only the name and the fields",
            ),
            ("X = Host(1)\n", 1, "`Host` is a name"),
        ] {
            let e = parse(src).expect_err(src);
            assert!(e.message.contains(words), "{src:?}: {e}");
            assert_eq!(e.line, line, "{src:?}: {e}");
        }
    }
}
