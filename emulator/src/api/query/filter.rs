//! The `$filter` grammar (DSP0266 §7.3.4): comparisons (`eq`, `ne`, `gt`,
//! `ge`, `lt`, `le`) of property paths and literals, joined by `and`,
//! `or` and `not`, in parentheses as needed; and its evaluation against a
//! resource.
//!
//! The parser and the tree are bounded: at most [`MAX_FILTER_TOKENS`]
//! tokens and [`MAX_FILTER_DEPTH`] levels of parentheses and `not`, so no
//! recursion (parsing, evaluation, `Drop`) goes deeper than the bounds,
//! whatever the client sends.

use serde_json::Value;

/// Longest `$filter` expression accepted, in bytes.
pub const MAX_FILTER_LEN: usize = 2_048;
/// Most tokens in a `$filter` expression: with at most three per
/// comparison this bounds the `and`/`or` chains, hence the depth of the
/// tree that evaluation and `Drop` walk.
pub const MAX_FILTER_TOKENS: usize = 256;
/// Deepest nesting of parentheses and `not` in a `$filter`.
pub const MAX_FILTER_DEPTH: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Path(Vec<String>),
    Literal(Value),
}

/// A `$filter` expression (comparisons joined by `and`, `or`, `not`, in
/// parentheses as needed).
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Cmp(Operand, Cmp, Operand),
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open,
    Close,
    Str(String),
    Word(String),
}

fn tokens(s: &str) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(&c) = it.peek() {
        match c {
            ' ' | '\t' => {
                it.next();
            }
            '(' => {
                it.next();
                out.push(Tok::Open);
            }
            ')' => {
                it.next();
                out.push(Tok::Close);
            }
            '\'' => {
                it.next();
                let mut lit = String::new();
                loop {
                    match it.next()? {
                        // '' is an escaped quote inside a string literal.
                        '\'' if it.peek() == Some(&'\'') => {
                            it.next();
                            lit.push('\'');
                        }
                        '\'' => break,
                        ch => lit.push(ch),
                    }
                }
                out.push(Tok::Str(lit));
            }
            _ => {
                let mut w = String::new();
                while let Some(&ch) = it.peek() {
                    if matches!(ch, ' ' | '\t' | '(' | ')' | '\'') {
                        break;
                    }
                    w.push(ch);
                    it.next();
                }
                out.push(Tok::Word(w));
            }
        }
    }
    Some(out)
}

/// Why a `$filter` expression was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterError {
    Syntax,
    /// More than [`MAX_FILTER_TOKENS`] tokens.
    TooLong,
    /// Nested deeper than [`MAX_FILTER_DEPTH`].
    TooDeep,
}

struct FilterParser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    too_deep: bool,
}

impl FilterParser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Word(x)) if x == w)
    }

    fn or(&mut self) -> Option<Filter> {
        let mut left = self.and()?;
        while self.peek_word("or") {
            self.pos += 1;
            left = Filter::Or(Box::new(left), Box::new(self.and()?));
        }
        Some(left)
    }

    fn and(&mut self) -> Option<Filter> {
        let mut left = self.unary()?;
        while self.peek_word("and") {
            self.pos += 1;
            left = Filter::And(Box::new(left), Box::new(self.unary()?));
        }
        Some(left)
    }

    /// Enters one level of `not` or parentheses; fails past the bound,
    /// so recursion never goes deeper than [`MAX_FILTER_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        if self.depth >= MAX_FILTER_DEPTH {
            self.too_deep = true;
            return None;
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn unary(&mut self) -> Option<Filter> {
        if self.peek_word("not") {
            self.pos += 1;
            return self.nested(|p| Some(Filter::Not(Box::new(p.unary()?))));
        }
        if self.toks.get(self.pos) == Some(&Tok::Open) {
            self.pos += 1;
            let inner = self.nested(Self::or)?;
            if self.toks.get(self.pos) != Some(&Tok::Close) {
                return None;
            }
            self.pos += 1;
            return Some(inner);
        }
        let left = self.operand()?;
        let op = match self.toks.get(self.pos)? {
            Tok::Word(w) => match w.as_str() {
                "eq" => Cmp::Eq,
                "ne" => Cmp::Ne,
                "gt" => Cmp::Gt,
                "ge" => Cmp::Ge,
                "lt" => Cmp::Lt,
                "le" => Cmp::Le,
                _ => return None,
            },
            _ => return None,
        };
        self.pos += 1;
        let right = self.operand()?;
        Some(Filter::Cmp(left, op, right))
    }

    fn operand(&mut self) -> Option<Operand> {
        let t = self.toks.get(self.pos)?.clone();
        self.pos += 1;
        match t {
            Tok::Str(s) => Some(Operand::Literal(Value::String(s))),
            Tok::Word(w) => Some(match w.as_str() {
                "true" => Operand::Literal(Value::Bool(true)),
                "false" => Operand::Literal(Value::Bool(false)),
                "null" => Operand::Literal(Value::Null),
                _ if w.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
                    let n: f64 = w.parse().ok()?;
                    Operand::Literal(serde_json::Number::from_f64(n).map(Value::Number)?)
                }
                _ if w
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_@.#/".contains(c)) =>
                {
                    Operand::Path(w.split('/').map(str::to_string).collect())
                }
                _ => return None,
            }),
            _ => None,
        }
    }
}

fn lookup<'a>(v: &'a Value, path: &[String]) -> &'a Value {
    path.iter()
        .try_fold(v, |cur, seg| cur.get(seg))
        .unwrap_or(&Value::Null)
}

impl Filter {
    pub fn parse(s: &str) -> Option<Filter> {
        Self::parse_bounded(s).ok()
    }

    /// Parses within [`MAX_FILTER_TOKENS`] and [`MAX_FILTER_DEPTH`].
    pub fn parse_bounded(s: &str) -> Result<Filter, FilterError> {
        let toks = tokens(s).ok_or(FilterError::Syntax)?;
        if toks.len() > MAX_FILTER_TOKENS {
            return Err(FilterError::TooLong);
        }
        let mut p = FilterParser {
            toks,
            pos: 0,
            depth: 0,
            too_deep: false,
        };
        match p.or() {
            Some(f) if p.pos == p.toks.len() => Ok(f),
            _ if p.too_deep => Err(FilterError::TooDeep),
            _ => Err(FilterError::Syntax),
        }
    }

    /// Whether resource `v` passes the filter.
    pub fn matches(&self, v: &Value) -> bool {
        match self {
            Filter::And(a, b) => a.matches(v) && b.matches(v),
            Filter::Or(a, b) => a.matches(v) || b.matches(v),
            Filter::Not(a) => !a.matches(v),
            Filter::Cmp(l, op, r) => {
                let side = |o: &Operand| match o {
                    Operand::Path(p) => lookup(v, p).clone(),
                    Operand::Literal(x) => x.clone(),
                };
                compare(&side(l), *op, &side(r))
            }
        }
    }
}

fn compare(a: &Value, op: Cmp, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64().partial_cmp(&y.as_f64()),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (x, y) if x == y => Some(Ordering::Equal),
        _ => None,
    };
    match op {
        Cmp::Eq => ord == Some(Ordering::Equal),
        Cmp::Ne => ord != Some(Ordering::Equal),
        Cmp::Gt => ord == Some(Ordering::Greater),
        Cmp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        Cmp::Lt => ord == Some(Ordering::Less),
        Cmp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_evaluate() {
        let v = json!({"Id": "Operator", "Count": 3, "Status": {"State": "Enabled"}, "On": true});
        let yes = [
            "Id eq 'Operator'",
            "not (Id eq 'ReadOnly')",
            "Id eq 'ReadOnly' or Id eq 'Operator'",
            "Count gt 2 and Count le 3",
            "Status/State eq 'Enabled'",
            "On eq true",
            "Missing eq null",
            "Id ne 'x'",
            "'Operator' eq Id",
        ];
        for f in yes {
            assert!(Filter::parse(f).unwrap().matches(&v), "{f}");
        }
        let no = [
            "Id eq 'ReadOnly'",
            "Count lt 3",
            "not Id eq 'Operator'",
            "Id gt 5",
        ];
        for f in no {
            assert!(!Filter::parse(f).unwrap().matches(&v), "{f}");
        }
        assert_eq!(
            Filter::parse("Name eq 'it''s'"),
            Some(Filter::Cmp(
                Operand::Path(vec!["Name".into()]),
                Cmp::Eq,
                Operand::Literal(json!("it's"))
            ))
        );
        for bad in [
            "",
            "Id",
            "Id eq 'x",
            "(Id eq 'x'",
            "Id like 'x'",
            "Id eq 'x' and",
        ] {
            assert_eq!(Filter::parse(bad), None, "{bad}");
        }
    }
}
