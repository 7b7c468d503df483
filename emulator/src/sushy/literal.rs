//! A reader for sushy-tools configuration files: Python source that
//! assigns literals to names. sushy-tools executes the file (Flask's
//! `from_pyfile`); Shoal executes nothing. It reads the subset of Python
//! that `ast.literal_eval` accepts, one `NAME = literal` statement at a
//! time, plus the `collections.namedtuple` idiom real files hold
//! (`idiom`); anything else (imports, calls, names, operators, f-strings)
//! is an error naming its line.

mod idiom;
mod lex;

use std::fmt;

use lex::{Lexer, Tok};

/// A Python literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Py {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Py>),
    Tuple(Vec<Py>),
    Set(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

impl Py {
    /// How Python would name the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Py::None => "None",
            Py::Bool(_) => "a bool",
            Py::Int(_) => "an int",
            Py::Float(_) => "a float",
            Py::Str(_) => "a str",
            Py::List(_) => "a list",
            Py::Tuple(_) => "a tuple",
            Py::Set(_) => "a set",
            Py::Dict(_) => "a dict",
        }
    }
}

impl Py {
    /// The value as Python's `json.dumps` writes it (what `requests`
    /// sends): tuples and sets as arrays, a dict key that is not a string
    /// written as its literal.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Py::None => J::Null,
            Py::Bool(b) => J::Bool(*b),
            Py::Int(i) => J::from(*i),
            Py::Float(x) => serde_json::Number::from_f64(*x).map_or(J::Null, J::Number),
            Py::Str(s) => J::String(s.clone()),
            Py::List(v) | Py::Tuple(v) | Py::Set(v) => {
                J::Array(v.iter().map(Py::to_json).collect())
            }
            Py::Dict(d) => J::Object(
                d.iter()
                    .map(|(k, v)| {
                        let key = match k {
                            Py::Str(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (key, v.to_json())
                    })
                    .collect(),
            ),
        }
    }
}

impl fmt::Display for Py {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seq = |f: &mut fmt::Formatter<'_>, items: &[Py], open, close| {
            write!(f, "{open}")?;
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{x}")?;
            }
            write!(f, "{close}")
        };
        match self {
            Py::None => write!(f, "None"),
            Py::Bool(true) => write!(f, "True"),
            Py::Bool(false) => write!(f, "False"),
            Py::Int(i) => write!(f, "{i}"),
            Py::Float(x) => write!(f, "{x:?}"),
            Py::Str(s) => write!(f, "{s:?}"),
            Py::List(v) => seq(f, v, "[", "]"),
            Py::Tuple(v) => seq(f, v, "(", ")"),
            Py::Set(v) => seq(f, v, "{", "}"),
            Py::Dict(v) => {
                write!(f, "{{")?;
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k}: {x}")?;
                }
                write!(f, "}}")
            }
        }
    }
}

/// One `NAME = literal` statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub name: String,
    /// 1-based line of the name.
    pub line: usize,
    pub value: Py,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LiteralError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, LiteralError> {
    Err(LiteralError {
        line,
        message: message.into(),
    })
}

struct Parser<'a> {
    lx: Lexer<'a>,
    tok: Tok,
    line: usize,
    idioms: idiom::Idioms,
}

impl<'a> Parser<'a> {
    fn bump(&mut self) -> Result<(), LiteralError> {
        let (t, l) = self.lx.next()?;
        self.tok = t;
        self.line = l;
        Ok(())
    }

    fn expect(&mut self, c: char) -> Result<(), LiteralError> {
        if self.tok == Tok::Punct(c) {
            self.bump()
        } else {
            err(self.line, format!("expected `{c}`, found {}", self.tok))
        }
    }

    fn value(&mut self) -> Result<Py, LiteralError> {
        let line = self.line;
        let v = match std::mem::replace(&mut self.tok, Tok::End) {
            Tok::Str(mut s) => {
                self.bump()?;
                // Adjacent literals are one string.
                while let Tok::Str(more) = &self.tok {
                    s.push_str(more);
                    self.bump()?;
                }
                return Ok(Py::Str(s));
            }
            Tok::Int(i) => Py::Int(i),
            Tok::Float(x) => Py::Float(x),
            Tok::Name(n) => match n.as_str() {
                "True" => Py::Bool(true),
                "False" => Py::Bool(false),
                "None" => Py::None,
                _ => {
                    if let Some(fields) = self.tuple_fields(&n) {
                        self.bump()?;
                        return self.construct(&n, &fields);
                    }
                    return err(
                        line,
                        format!("`{n}` is a name, not a literal (Shoal runs no code)"),
                    );
                }
            },
            Tok::Punct(sign @ ('-' | '+')) => {
                // Signs in a row (`--1` is 1), then a number.
                let mut neg = sign == '-';
                self.bump()?;
                while let Tok::Punct(s @ ('-' | '+')) = self.tok {
                    neg ^= s == '-';
                    self.bump()?;
                }
                let v = match self.tok {
                    Tok::Int(i) if neg => Py::Int(-i),
                    Tok::Float(x) if neg => Py::Float(-x),
                    Tok::Int(i) => Py::Int(i),
                    Tok::Float(x) => Py::Float(x),
                    _ => return err(line, format!("`{sign}` applies to numbers only")),
                };
                self.bump()?;
                return Ok(v);
            }
            Tok::Punct('[') => {
                self.bump()?;
                return self.items(']').map(Py::List);
            }
            Tok::Punct('(') => {
                self.bump()?;
                if self.tok == Tok::Punct(')') {
                    self.bump()?;
                    return Ok(Py::Tuple(Vec::new()));
                }
                let first = self.value()?;
                if self.tok == Tok::Punct(')') {
                    // Parentheses around one value group it.
                    self.bump()?;
                    return Ok(first);
                }
                self.expect(',')?;
                let mut rest = self.items(')')?;
                rest.insert(0, first);
                return Ok(Py::Tuple(rest));
            }
            Tok::Punct('{') => {
                self.bump()?;
                return self.dict_or_set();
            }
            t => return err(line, format!("expected a literal, found {t}")),
        };
        self.bump()?;
        Ok(v)
    }

    /// Comma-separated values up to `close` (a trailing comma allowed).
    fn items(&mut self, close: char) -> Result<Vec<Py>, LiteralError> {
        let mut v = Vec::new();
        while self.tok != Tok::Punct(close) {
            v.push(self.value()?);
            if self.tok == Tok::Punct(',') {
                self.bump()?;
            } else if self.tok != Tok::Punct(close) {
                return err(
                    self.line,
                    format!("expected `,` or `{close}`, found {}", self.tok),
                );
            }
        }
        self.bump()?;
        Ok(v)
    }

    fn dict_or_set(&mut self) -> Result<Py, LiteralError> {
        if self.tok == Tok::Punct('}') {
            self.bump()?;
            return Ok(Py::Dict(Vec::new()));
        }
        let first = self.value()?;
        if self.tok != Tok::Punct(':') {
            let mut rest = if self.tok == Tok::Punct(',') {
                self.bump()?;
                self.items('}')?
            } else {
                self.expect('}')?;
                Vec::new()
            };
            rest.insert(0, first);
            return Ok(Py::Set(rest));
        }
        let mut pairs = Vec::new();
        let mut key = first;
        loop {
            self.expect(':')?;
            let v = self.value()?;
            pairs.push((key, v));
            match self.tok {
                Tok::Punct(',') => self.bump()?,
                Tok::Punct('}') => {}
                _ => {
                    return err(
                        self.line,
                        format!("expected `,` or `}}`, found {}", self.tok),
                    )
                }
            }
            if self.tok == Tok::Punct('}') {
                self.bump()?;
                return Ok(Py::Dict(pairs));
            }
            key = self.value()?;
        }
    }
}

/// Reads a configuration file's statements: `NAME = literal`, a string on
/// its own (a docstring), comments and blank lines. A name assigned twice
/// keeps its last value, as Python would.
pub fn parse(text: &str) -> Result<Vec<Assignment>, LiteralError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut p = Parser {
        lx: Lexer::new(text),
        tok: Tok::End,
        line: 1,
        idioms: idiom::Idioms::default(),
    };
    p.bump()?;
    let mut out: Vec<Assignment> = Vec::new();
    loop {
        let line = p.line;
        match std::mem::replace(&mut p.tok, Tok::End) {
            Tok::End => return Ok(out),
            Tok::Newline | Tok::Punct(';') => p.bump()?,
            Tok::Str(_) => {
                // A docstring: read and dropped.
                p.tok = Tok::Str(String::new());
                p.value()?;
                p.end_of_statement()?;
            }
            Tok::Name(name) if name == "import" || name == "from" => {
                p.import(line, &name)?;
            }
            Tok::Name(name) => {
                if matches!(
                    name.as_str(),
                    "def"
                        | "class"
                        | "if"
                        | "for"
                        | "while"
                        | "with"
                        | "try"
                        | "lambda"
                        | "del"
                        | "global"
                        | "exec"
                        | "print"
                        | "assert"
                ) {
                    return err(
                        line,
                        format!("`{name}` is code: Shoal reads literal assignments only"),
                    );
                }
                p.bump()?;
                if p.tok != Tok::Punct('=') {
                    return err(
                        line,
                        format!(
                            "expected `{name} = <literal>`, found {} after the name",
                            p.tok
                        ),
                    );
                }
                p.bump()?;
                if p.tuple_type(&name)? {
                    p.end_of_statement()?;
                    continue;
                }
                let value = p.value()?;
                if p.tok == Tok::Punct(',') {
                    // `A = 1, 2` is a tuple in Python.
                    p.bump()?;
                    let mut rest = Vec::new();
                    while !matches!(p.tok, Tok::Newline | Tok::End | Tok::Punct(';')) {
                        rest.push(p.value()?);
                        if p.tok == Tok::Punct(',') {
                            p.bump()?;
                        } else {
                            break;
                        }
                    }
                    rest.insert(0, value);
                    p.end_of_statement()?;
                    out.retain(|a| a.name != name);
                    out.push(Assignment {
                        name,
                        line,
                        value: Py::Tuple(rest),
                    });
                    continue;
                }
                p.end_of_statement()?;
                out.retain(|a| a.name != name);
                out.push(Assignment { name, line, value });
            }
            t => return err(line, format!("expected `NAME = <literal>`, found {t}")),
        }
    }
}

impl Parser<'_> {
    fn end_of_statement(&mut self) -> Result<(), LiteralError> {
        match self.tok {
            Tok::Newline | Tok::Punct(';') => self.bump(),
            Tok::End => Ok(()),
            _ => err(
                self.line,
                format!(
                    "expected the end of the statement, found {} (only literals are read)",
                    self.tok
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lex::MAX_DEPTH;
    use super::*;

    fn one(src: &str) -> Py {
        let a = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(a.len(), 1, "{a:?}");
        a[0].value.clone()
    }

    fn fails(src: &str) -> LiteralError {
        parse(src).expect_err(src)
    }

    #[test]
    fn reads_the_literals_sushy_tools_configs_hold() {
        let text = r#"# Flask config, as sushy-tools' sample
"""A docstring."""
SUSHY_EMULATOR_LISTEN_IP = u''
SUSHY_EMULATOR_LISTEN_PORT = 8000
SUSHY_EMULATOR_SSL_CERT = None
SUSHY_EMULATOR_VMEDIA_VERIFY_SSL = False
SUSHY_EMULATOR_BOOT_LOADER_MAP = {
    u'UEFI': {
        u'x86_64': u'/usr/share/OVMF/OVMF_CODE.fd',   # comment
        u'aarch64': None,
    },
    'Legacy': {'x86_64': None}
}
SUSHY_EMULATOR_DRIVES = {
    ('da69abcc-dae0-4913-9a7b-d344043097c0', '1'): [
        {'Id': '32ADF365C6C1B7BD', 'CapacityBytes': 899527000000, "Protocol": "SAS"},
    ]
}
SUSHY_EMULATOR_ALLOWED_INSTANCES = ['a', "b",]
X = ('one',)
Y = ('grouped')
Z = -1.5e3; W = 0x1F
LONG = 'ab' \
    "cd"
"#;
        let a = parse(text).unwrap();
        let get = |n: &str| a.iter().find(|x| x.name == n).unwrap();
        assert_eq!(
            get("SUSHY_EMULATOR_LISTEN_IP").value,
            Py::Str(String::new())
        );
        assert_eq!(get("SUSHY_EMULATOR_LISTEN_IP").line, 3);
        assert_eq!(get("SUSHY_EMULATOR_LISTEN_PORT").value, Py::Int(8000));
        assert_eq!(get("SUSHY_EMULATOR_SSL_CERT").value, Py::None);
        assert_eq!(
            get("SUSHY_EMULATOR_VMEDIA_VERIFY_SSL").value,
            Py::Bool(false)
        );
        let Py::Dict(map) = &get("SUSHY_EMULATOR_BOOT_LOADER_MAP").value else {
            panic!()
        };
        assert_eq!(map[0].0, Py::Str("UEFI".into()));
        let Py::Dict(drives) = &get("SUSHY_EMULATOR_DRIVES").value else {
            panic!()
        };
        assert!(matches!(&drives[0].0, Py::Tuple(t) if t.len() == 2));
        assert_eq!(
            get("SUSHY_EMULATOR_ALLOWED_INSTANCES").value,
            Py::List(vec![Py::Str("a".into()), Py::Str("b".into())])
        );
        assert_eq!(get("X").value, Py::Tuple(vec![Py::Str("one".into())]));
        assert_eq!(get("Y").value, Py::Str("grouped".into()));
        assert_eq!(get("Z").value, Py::Float(-1500.0));
        assert_eq!(get("W").value, Py::Int(31));
        assert_eq!(get("LONG").value, Py::Str("abcd".into()));
        assert_eq!(get("LONG").line, 23);
    }

    #[test]
    fn strings_decode_as_python_does() {
        assert_eq!(
            one(r#"A = 'it\'s\n\x41\u00e9\101'"#),
            Py::Str("it's\nAéA".into())
        );
        assert_eq!(one("A = --1"), Py::Int(1));
        assert_eq!(one(r"A = r'C:\new\''"), Py::Str(r"C:\new\'".into()));
        assert_eq!(one(r"A = '\d'"), Py::Str(r"\d".into()));
        assert_eq!(one("A = '''two\nlines'''"), Py::Str("two\nlines".into()));
        assert_eq!(one("A = 'é😀'"), Py::Str("é😀".into()));
        assert_eq!(one("A = {1, 2}"), Py::Set(vec![Py::Int(1), Py::Int(2)]));
        assert_eq!(one("A = {}"), Py::Dict(vec![]));
        assert_eq!(one("A = 1_000"), Py::Int(1000));
        assert_eq!(one("A = 1, 2"), Py::Tuple(vec![Py::Int(1), Py::Int(2)]));
    }

    #[test]
    fn code_is_refused_with_its_line() {
        for (src, line, words) in [
            ("import os\n", 1, "`import os` is code"),
            ("A = 1\nB = os.environ['X']\n", 2, "`os` is a name"),
            ("A = 1\n\nB = f'{A}'\n", 3, "f-strings"),
            ("A = open('x')\n", 1, "`open` is a name"),
            ("A = 1 + 2\n", 1, "expected the end of the statement"),
            ("A = [1,\n 2,\n x]\n", 3, "`x` is a name"),
            ("A = 'open\n", 1, "not closed"),
            ("A = B = 1\n", 1, "`B` is a name"),
            ("A += 1\n", 1, "expected `A = <literal>`"),
            ("def f(): pass\n", 1, "`def` is code"),
            ("A = 0755\n", 1, "leading zeros"),
            ("A = b'x'\n", 1, "bytes"),
            ("A = [1, 2\n", 1, "`[` is never closed"),
            ("A = [1)\n", 1, "`)` where `]`"),
            ("A = 1]\n", 1, "closes nothing"),
            ("A = 99999999999999999999\n", 1, "out of range"),
            ("A = -'x'\n", 1, "numbers only"),
            ("A = {1: 2, 3}\n", 1, "expected `:`"),
            ("A = 1 $\n", 1, "unexpected `$`"),
        ] {
            let e = fails(src);
            assert!(e.message.contains(words), "{src:?}: {e}");
            assert_eq!(e.line, line, "{src:?}: {e}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("A = {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert!(fails(&deep).message.contains("nested deeper"));
        let signs = format!("A = {}1\n", "-".repeat(100_000));
        assert_eq!(one(&signs), Py::Int(1));
        let ok = format!("A = {}{}\n", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        parse(&ok).unwrap();
    }

    #[test]
    fn the_last_assignment_of_a_name_wins() {
        let a = parse("A = 1\nA = 2\n").unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].value, Py::Int(2));
        assert_eq!(a[0].line, 2);
    }
}
