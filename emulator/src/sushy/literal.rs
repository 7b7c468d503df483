//! A reader for sushy-tools configuration files: Python source that
//! assigns literals to names. sushy-tools executes the file (Flask's
//! `from_pyfile`); Shoal executes nothing. It reads the subset of Python
//! that `ast.literal_eval` accepts, one `NAME = literal` statement at a
//! time, and anything else (imports, calls, names, operators, f-strings)
//! is an error naming its line.

use std::fmt;

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

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Str(String),
    Int(i64),
    Float(f64),
    Punct(char),
    /// The end of a logical line.
    Newline,
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Name(n) => write!(f, "`{n}`"),
            Tok::Str(_) => write!(f, "a string"),
            Tok::Int(_) | Tok::Float(_) => write!(f, "a number"),
            Tok::Punct(c) => write!(f, "`{c}`"),
            Tok::Newline => write!(f, "the end of the line"),
            Tok::End => write!(f, "the end of the file"),
        }
    }
}

/// The deepest nesting of brackets taken (Python's own parser stops near
/// 200): a hostile file cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    line: usize,
    /// Open brackets and their lines: newlines inside them do not end
    /// the statement.
    open: Vec<(u8, usize)>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer {
            src: text.as_bytes(),
            text,
            pos: 0,
            line: 1,
            open: Vec::new(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    /// The next token and the line it starts on.
    fn next(&mut self) -> Result<(Tok, usize), LiteralError> {
        loop {
            let Some(c) = self.peek() else {
                if let Some(&(b, line)) = self.open.last() {
                    return err(line, format!("`{}` is never closed", b as char));
                }
                return Ok((Tok::End, self.line));
            };
            match c {
                b' ' | b'\t' | b'\x0c' | b'\r' => self.pos += 1,
                b'#' => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.pos += 1;
                    }
                }
                b'\\' => {
                    // An explicit line join.
                    let rest = &self.src[self.pos + 1..];
                    let skip = if rest.starts_with(b"\r\n") {
                        2
                    } else if rest.starts_with(b"\n") {
                        1
                    } else {
                        return err(self.line, "a backslash outside a string must end the line");
                    };
                    self.pos += 1 + skip;
                    self.line += 1;
                }
                b'\n' => {
                    let line = self.line;
                    self.pos += 1;
                    self.line += 1;
                    if self.open.is_empty() {
                        return Ok((Tok::Newline, line));
                    }
                }
                _ => break,
            }
        }
        let line = self.line;
        let c = self.src[self.pos];
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = self.pos;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80)
            {
                self.pos += 1;
            }
            let word = &self.text[start..self.pos];
            if matches!(self.peek(), Some(b'\'' | b'"')) {
                let prefix = word.to_ascii_lowercase();
                return match prefix.as_str() {
                    "u" => self.string(false).map(|s| (Tok::Str(s), line)),
                    "r" => self.string(true).map(|s| (Tok::Str(s), line)),
                    "b" | "br" | "rb" => err(line, "bytes literals are not configuration values"),
                    "f" | "fr" | "rf" => err(line, "f-strings are code, not literals"),
                    _ => err(line, format!("unknown string prefix {word:?}")),
                };
            }
            return Ok((Tok::Name(word.to_string()), line));
        }
        if c.is_ascii_digit()
            || (c == b'.' && self.src.get(self.pos + 1).is_some_and(u8::is_ascii_digit))
        {
            return self.number().map(|t| (t, line));
        }
        if c == b'\'' || c == b'"' {
            return self.string(false).map(|s| (Tok::Str(s), line));
        }
        self.pos += 1;
        match c {
            b'(' | b'[' | b'{' => {
                if self.open.len() == MAX_DEPTH {
                    return err(line, format!("nested deeper than {MAX_DEPTH} brackets"));
                }
                self.open.push((c, line));
            }
            b')' | b']' | b'}' => {
                let want = match self.open.pop() {
                    Some((b'(', _)) => b')',
                    Some((b'[', _)) => b']',
                    Some(_) => b'}',
                    None => return err(line, format!("`{}` closes nothing", c as char)),
                };
                if c != want {
                    return err(
                        line,
                        format!("`{}` where `{}` was expected", c as char, want as char),
                    );
                }
            }
            b'=' | b',' | b':' | b'-' | b'+' | b';' => {}
            _ => {
                let ch = self.text[self.pos - 1..].chars().next().unwrap_or('?');
                return err(line, format!("unexpected `{ch}`"));
            }
        }
        Ok((Tok::Punct(c as char), line))
    }

    fn number(&mut self) -> Result<Tok, LiteralError> {
        let line = self.line;
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
            || (matches!(self.peek(), Some(b'+' | b'-'))
                && matches!(self.src[self.pos - 1], b'e' | b'E')
                && !self.text[start..self.pos].starts_with("0x"))
        {
            self.pos += 1;
        }
        let raw = &self.text[start..self.pos];
        let bad = || err(line, format!("{raw:?} is not a number"));
        if raw.starts_with('_') || raw.ends_with('_') || raw.contains("__") {
            return bad();
        }
        let digits = raw.replace('_', "");
        let lower = digits.to_ascii_lowercase();
        let radix = |p: &str, r| match lower.strip_prefix(p) {
            Some(d) if !d.is_empty() => i64::from_str_radix(d, r).ok(),
            _ => None,
        };
        if lower.starts_with("0x") {
            return radix("0x", 16).map(Tok::Int).map_or_else(bad, Ok);
        }
        if lower.starts_with("0o") {
            return radix("0o", 8).map(Tok::Int).map_or_else(bad, Ok);
        }
        if lower.starts_with("0b") {
            return radix("0b", 2).map(Tok::Int).map_or_else(bad, Ok);
        }
        if lower.contains(['.', 'e']) {
            return match lower.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Tok::Float(x)),
                _ => bad(),
            };
        }
        if lower.len() > 1 && lower.starts_with('0') && lower.bytes().any(|b| b != b'0') {
            // Python 3 refuses 0755: it would mean octal in Python 2.
            return err(
                line,
                format!("{raw:?}: leading zeros are not allowed (0o for octal)"),
            );
        }
        match lower.parse::<i64>() {
            Ok(i) => Ok(Tok::Int(i)),
            Err(_) if lower.bytes().all(|b| b.is_ascii_digit()) => {
                err(line, format!("{raw} is out of range"))
            }
            Err(_) => bad(),
        }
    }

    /// A string literal from its opening quote.
    fn string(&mut self, raw: bool) -> Result<String, LiteralError> {
        let line = self.line;
        let q = self.src[self.pos];
        let triple = self.src[self.pos..].starts_with(&[q, q, q]);
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return err(line, "a string is not closed");
            };
            if c == q && (!triple || self.src[self.pos..].starts_with(&[q, q, q])) {
                self.pos += if triple { 3 } else { 1 };
                return Ok(out);
            }
            if c == b'\n' {
                if !triple {
                    return err(line, "a string is not closed on its line");
                }
                self.line += 1;
            }
            if c == b'\\' && !raw {
                self.pos += 1;
                self.escape(&mut out, line)?;
                continue;
            }
            if c == b'\\' && raw && self.src.get(self.pos + 1).is_some() {
                // A raw string keeps the backslash, and the quote after it.
                let next = self.src[self.pos + 1];
                if next == q || next == b'\\' {
                    out.push('\\');
                    out.push(next as char);
                    self.pos += 2;
                    continue;
                }
            }
            let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
            out.push(ch);
            self.pos += ch.len_utf8();
        }
    }

    /// The escape after a backslash.
    fn escape(&mut self, out: &mut String, line: usize) -> Result<(), LiteralError> {
        let Some(c) = self.peek() else {
            return err(line, "a string is not closed");
        };
        self.pos += 1;
        let hex = |lx: &mut Self, n: usize| -> Result<char, LiteralError> {
            let s = lx.text.get(lx.pos..lx.pos + n).unwrap_or("");
            let v = (s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(s, 16).ok())
                .flatten()
                .and_then(char::from_u32);
            lx.pos += s.len();
            v.map_or_else(
                || err(line, format!("a bad \\x, \\u or \\U escape: {s:?}")),
                Ok,
            )
        };
        match c {
            b'\n' => self.line += 1,
            b'\r' if self.peek() == Some(b'\n') => {
                self.pos += 1;
                self.line += 1;
            }
            b'\\' => out.push('\\'),
            b'\'' => out.push('\''),
            b'"' => out.push('"'),
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'a' => out.push('\x07'),
            b'b' => out.push('\x08'),
            b'f' => out.push('\x0c'),
            b'v' => out.push('\x0b'),
            b'x' => out.push(hex(self, 2)?),
            b'u' => out.push(hex(self, 4)?),
            b'U' => out.push(hex(self, 8)?),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            b'N' => {
                return err(
                    line,
                    "\\N{...} escapes are not supported; write the character",
                )
            }
            _ => {
                // Python keeps an unknown escape as it is.
                out.push('\\');
                self.pos -= 1;
                let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                self.pos += ch.len_utf8();
            }
        }
        Ok(())
    }
}

struct Parser<'a> {
    lx: Lexer<'a>,
    tok: Tok,
    line: usize,
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
                    return err(
                        line,
                        format!("`{n}` is a name, not a literal (Shoal runs no code)"),
                    )
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
            Tok::Name(name) => {
                if matches!(
                    name.as_str(),
                    "import"
                        | "from"
                        | "def"
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
            ("import os\n", 1, "`import` is code"),
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
