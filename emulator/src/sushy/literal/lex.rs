//! The lexer of the literal subset: Python's tokens as a configuration
//! file holds them (names, strings with their prefixes and escapes,
//! numbers, punctuation, logical line ends), each with its line; brackets
//! nest at most [`MAX_DEPTH`] deep, and a newline inside one does not end
//! the statement.

use std::fmt;

use super::{err, LiteralError};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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
pub(super) const MAX_DEPTH: usize = 64;

pub(super) struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    line: usize,
    /// Open brackets and their lines: newlines inside them do not end
    /// the statement.
    open: Vec<(u8, usize)>,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(text: &'a str) -> Self {
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
    pub(super) fn next(&mut self) -> Result<(Tok, usize), LiteralError> {
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
            b'=' | b',' | b':' | b'-' | b'+' | b';' | b'.' => {}
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
