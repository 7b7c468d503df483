//! Property tests of the query-parameter grammar (`$filter`, `$expand`,
//! `$select`, `$top`/`$skip`, `only`): any input parses or is refused, never
//! panics; deep nesting is refused or handled without deep recursion (on a
//! thread with a small stack); a `$filter` printed from its tree parses
//! back to the same tree.

use proptest::prelude::*;
use serde_json::{json, Value};
use shoal_emulator::api::query::{self, Cmp, Filter, Operand, MAX_LEVELS};

/// Runs `f` on a thread with `kib` KiB of stack: a recursion as deep as
/// its input overflows it (and aborts the test binary) where a bounded
/// parser does not.
fn on_small_stack<T: Send + 'static>(kib: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(kib << 10)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no panic")
}

const KEYWORDS: [&str; 11] = [
    "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false",
];

fn path() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[A-Z][A-Za-z0-9_]{0,8}", 1..3).prop_filter("not a keyword", |p| {
        p.iter()
            .all(|s| !KEYWORDS.contains(&s.as_str()) && s != "null")
    })
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[ -~]{0,12}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        (-1_000_000i64..1_000_000).prop_map(|n| json!(n as f64)),
    ]
}

fn operand() -> impl Strategy<Value = Operand> {
    prop_oneof![
        path().prop_map(Operand::Path),
        literal().prop_map(Operand::Literal)
    ]
}

fn cmp() -> impl Strategy<Value = Cmp> {
    prop_oneof![
        Just(Cmp::Eq),
        Just(Cmp::Ne),
        Just(Cmp::Gt),
        Just(Cmp::Ge),
        Just(Cmp::Lt),
        Just(Cmp::Le)
    ]
}

fn filter() -> impl Strategy<Value = Filter> {
    let leaf = (path().prop_map(Operand::Path), cmp(), operand())
        .prop_map(|(l, c, r)| Filter::Cmp(l, c, r));
    leaf.prop_recursive(6, 48, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Filter::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Filter::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Filter::Not(Box::new(a))),
        ]
    })
}

fn show_operand(o: &Operand) -> String {
    match o {
        Operand::Path(p) => p.join("/"),
        Operand::Literal(Value::String(s)) => format!("'{}'", s.replace('\'', "''")),
        Operand::Literal(Value::Number(n)) => {
            let f = n.as_f64().expect("f64");
            format!("{f}")
        }
        Operand::Literal(v) => v.to_string(),
    }
}

/// The grammar's printer: every compound in parentheses.
fn show(f: &Filter) -> String {
    match f {
        Filter::Cmp(l, c, r) => {
            let op = match c {
                Cmp::Eq => "eq",
                Cmp::Ne => "ne",
                Cmp::Gt => "gt",
                Cmp::Ge => "ge",
                Cmp::Lt => "lt",
                Cmp::Le => "le",
            };
            format!("{} {op} {}", show_operand(l), show_operand(r))
        }
        Filter::And(a, b) => format!("({}) and ({})", show(a), show(b)),
        Filter::Or(a, b) => format!("({}) or ({})", show(a), show(b)),
        Filter::Not(a) => format!("not ({})", show(a)),
    }
}

/// Input built from the grammar's own tokens, to reach deeper than noise.
fn filter_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("(".to_string()),
            Just(")".to_string()),
            Just(" and ".to_string()),
            Just(" or ".to_string()),
            Just("not ".to_string()),
            Just(" eq ".to_string()),
            Just("'x'".to_string()),
            Just("'".to_string()),
            Just("Id".to_string()),
            Just("1e999".to_string()),
            Just("-".to_string()),
            "[ -~]{0,3}",
        ],
        0..60,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_query_string_parses_or_is_refused(raw in "[ -~]{0,80}") {
        let _ = query::parse(&raw);
    }

    #[test]
    fn any_filter_parses_or_is_refused(s in filter_soup()) {
        if let Some(f) = Filter::parse(&s) {
            let _ = f.matches(&json!({"Id": "x", "Status": {"State": "Enabled"}}));
        }
        let _ = query::parse(&format!("$filter={}", urlencode(&s)));
    }

    #[test]
    fn a_printed_filter_parses_back_to_itself(f in filter()) {
        let text = show(&f);
        prop_assert_eq!(Filter::parse(&text), Some(f), "{}", text);
    }

    #[test]
    fn expand_levels_are_bounded(kind in "[*.~x]", n in 0u64..20) {
        let q = query::parse(&format!("$expand={}($levels={n})", urlencode(&kind)));
        let ok = kind != "x" && (1..=MAX_LEVELS as u64).contains(&n);
        prop_assert_eq!(q.is_ok(), ok, "{:?} {} {:?}", kind, n, q.err().map(|e| e.to_string()));
    }

    #[test]
    fn select_paths_are_split_or_refused(paths in prop::collection::vec("[A-Za-z@#._]{0,6}(/[A-Za-z]{0,4}){0,2}", 1..4)) {
        let raw = paths.join(",");
        match query::parse(&format!("$select={}", urlencode(&raw))) {
            Ok(q) => {
                let sel = q.select.expect("a select");
                prop_assert_eq!(sel.len(), paths.len());
                prop_assert!(sel.iter().flatten().all(|s| !s.is_empty()));
            }
            Err(_) => prop_assert!(paths.iter().any(|p| p.split('/').any(str::is_empty))),
        }
    }

    #[test]
    fn top_and_skip_take_numbers_only(v in "[0-9a-z-]{0,24}") {
        let q = query::parse(&format!("$top={v}"));
        prop_assert_eq!(q.is_ok(), v.parse::<usize>().is_ok());
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Nesting far past any real query, on a 256 KiB stack: refused, or
/// parsed, evaluated and dropped without recursing as deep as the input.
#[test]
fn deep_filters_do_not_recurse_with_their_depth() {
    for n in [1_500usize, 20_000, 100_000] {
        let inputs = [
            format!("{}Id eq 'x'{}", "(".repeat(n), ")".repeat(n)),
            "(".repeat(n),
            format!("{}Id eq 'x'", "not ".repeat(n)),
            format!("Id eq 'x'{}", " and Id eq 'x'".repeat(n)),
            format!("Id eq 'x'{}", " or Id eq 'x'".repeat(n)),
            format!("{}Id eq 'x'{}", "not (".repeat(n), ")".repeat(n)),
        ];
        for input in inputs {
            let head: String = input.chars().take(24).collect();
            let ok = on_small_stack(256, move || {
                let q = query::parse(&format!("$filter={}", urlencode(&input)));
                if let Ok(query::Query {
                    filter: Some(f), ..
                }) = &q
                {
                    let _ = f.matches(&json!({"Id": "x"}));
                }
                let f = Filter::parse(&input);
                if let Some(f) = &f {
                    let _ = f.matches(&json!({"Id": "x"}));
                }
                (q.is_ok(), f.is_some())
            });
            // Either way it came back: no overflow.
            let _ = (head, ok);
        }
    }
}
