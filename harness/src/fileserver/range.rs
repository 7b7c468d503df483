//! The `Range` request header (RFC 9110 §14.1.2, §14.2) against a file of
//! known length: what part of it a GET answers with. Pure; every input
//! string and length has an answer, none panics.

/// What a GET with some `Range` header answers for a file of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The whole file, 200: no Range, or one the server ignores (another
    /// unit, a syntax error, a range whose last position is before its
    /// first, several ranges, or an empty file that a suffix range asks
    /// for: it is satisfiable but selects nothing, which no
    /// `Content-Range` can express).
    Whole,
    /// Bytes `first..=last` (`first <= last < len`), 206.
    Part { first: u64, last: u64 },
    /// No range overlaps the file, 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

/// One `range-spec`.
enum Spec {
    /// `first-` or `first-last` (`last` absent or clipped: `u64::MAX`).
    From(u64, u64),
    /// `-length`: the last `length` bytes.
    Suffix(u64),
}

/// The answer to `Range: value` for a file of `len` bytes.
pub fn answer(value: &str, len: u64) -> Answer {
    let Some(specs) = parse(value) else {
        return Answer::Whole;
    };
    // A set is satisfiable if one int-range starts inside the file or one
    // suffix-range is non-empty (§14.1.2); several ranges, satisfiable,
    // get the whole file (§14.2 lets a server ignore Range).
    let satisfiable = |s: &Spec| match *s {
        Spec::From(first, _) => first < len,
        Spec::Suffix(n) => n > 0,
    };
    if !specs.iter().any(satisfiable) {
        return Answer::Unsatisfiable;
    }
    match specs[..] {
        [Spec::From(first, last)] => Answer::Part {
            first,
            last: last.min(len - 1), // len > first >= 0
        },
        [Spec::Suffix(n)] if len > 0 => Answer::Part {
            first: len - n.min(len),
            last: len - 1,
        },
        _ => Answer::Whole,
    }
}

/// The range-specs of a valid `bytes` ranges-specifier, None otherwise.
fn parse(value: &str) -> Option<Vec<Spec>> {
    let (unit, set) = value.trim_matches([' ', '\t']).split_once('=')?;
    if !unit.eq_ignore_ascii_case("bytes") {
        return None;
    }
    // `1#range-spec`: commas with optional whitespace, empty elements
    // allowed (§5.6.1), at least one range-spec.
    let specs = set
        .split(',')
        .map(|e| e.trim_matches([' ', '\t']))
        .filter(|e| !e.is_empty())
        .map(spec)
        .collect::<Option<Vec<_>>>()?;
    (!specs.is_empty()).then_some(specs)
}

fn spec(s: &str) -> Option<Spec> {
    let (first, last) = s.split_once('-')?;
    match (number(first), number(last)) {
        (None, Some(n)) if first.is_empty() => Some(Spec::Suffix(n)),
        (Some(first), None) if last.is_empty() => Some(Spec::From(first, u64::MAX)),
        (Some(first), Some(last)) if first <= last => Some(Spec::From(first, last)),
        _ => None,
    }
}

/// `1*DIGIT` (no sign, no space), saturating: a position past `u64::MAX`
/// is past any file.
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn part(first: u64, last: u64) -> Answer {
        Answer::Part { first, last }
    }

    #[test]
    fn int_ranges() {
        assert_eq!(answer("bytes=0-9", 100), part(0, 9));
        assert_eq!(answer("bytes=5-5", 100), part(5, 5));
        assert_eq!(answer("bytes=90-200", 100), part(90, 99), "clipped");
        assert_eq!(answer("bytes=0-0", 1), part(0, 0));
        assert_eq!(
            answer("bytes=99-99999999999999999999999", 100),
            part(99, 99)
        );
    }

    #[test]
    fn open_ranges() {
        assert_eq!(answer("bytes=90-", 100), part(90, 99));
        assert_eq!(answer("bytes=0-", 100), part(0, 99));
    }

    #[test]
    fn suffix_ranges() {
        assert_eq!(answer("bytes=-10", 100), part(90, 99));
        assert_eq!(answer("bytes=-100", 100), part(0, 99));
        assert_eq!(
            answer("bytes=-1000", 100),
            part(0, 99),
            "longer than the file"
        );
        assert_eq!(answer("bytes=-99999999999999999999999", 100), part(0, 99));
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(answer("bytes=100-", 100), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=100-200", 100), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=-0", 100), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=0-", 0), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=0-0", 0), Answer::Unsatisfiable);
        assert_eq!(answer("bytes=200-,300-400,-0", 100), Answer::Unsatisfiable);
        assert_eq!(
            answer("bytes=99999999999999999999999-", u64::MAX),
            Answer::Unsatisfiable
        );
    }

    #[test]
    fn empty_file_suffix_is_the_whole_empty_file() {
        assert_eq!(answer("bytes=-5", 0), Answer::Whole);
    }

    #[test]
    fn several_ranges_get_the_whole_file() {
        assert_eq!(answer("bytes=0-1,5-6", 100), Answer::Whole);
        assert_eq!(answer("bytes=0-1, -5", 100), Answer::Whole);
        assert_eq!(answer("bytes=200-,0-1", 100), Answer::Whole);
    }

    #[test]
    fn list_syntax() {
        assert_eq!(answer("bytes=0-1,", 100), part(0, 1), "empty elements");
        assert_eq!(answer("bytes= , 3-4 ,\t", 100), part(3, 4));
        assert_eq!(
            answer("Bytes=0-1", 100),
            part(0, 1),
            "the unit ignores case"
        );
    }

    #[test]
    fn ignored() {
        for v in [
            "",
            "bytes",
            "bytes=",
            "bytes=,",
            "bytes=5-2",
            "bytes=-",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes=1-+2",
            "bytes=--1",
            "bytes=1 -2",
            "bytes=0x1-2",
            "bytes=0-1,5-2",
            "items=0-1",
            "bytes 0-1",
            "bytes=١-٢",
        ] {
            assert_eq!(answer(v, 100), Answer::Whole, "{v:?}");
        }
    }

    /// A header string that is often almost a ranges-specifier.
    fn header() -> impl Strategy<Value = String> {
        let n = prop_oneof![
            Just(String::new()),
            (0u64..200).prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            Just("99999999999999999999999".to_string()),
            "[0-9+ a-]{1,4}",
        ];
        let spec = (n.clone(), prop_oneof![Just("-"), Just(""), Just("--")], n)
            .prop_map(|(a, d, b)| format!("{a}{d}{b}"));
        let set = prop::collection::vec(spec, 0..4).prop_map(|v| v.join(","));
        prop_oneof![
            set.clone().prop_map(|s| format!("bytes={s}")),
            (
                prop_oneof![Just("BYTES"), Just("items"), Just(" bytes ")],
                set
            )
                .prop_map(|(u, s)| format!("{u}={s}")),
            any::<String>(),
        ]
    }

    fn length() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..300, any::<u64>(), Just(u64::MAX)]
    }

    proptest! {
        #[test]
        fn never_panics_and_parts_lie_within_the_file(v in header(), len in length()) {
            if let Answer::Part { first, last } = answer(&v, len) {
                prop_assert!(first <= last && last < len, "{v:?} on {len}: {first}-{last}");
            }
        }

        #[test]
        fn one_int_range_is_clipped_to_the_file(
            first in 0u64..300, extra in 0u64..300, len in 0u64..300, open in any::<bool>()
        ) {
            let last = first + extra;
            let v = if open { format!("bytes={first}-") } else { format!("bytes={first}-{last}") };
            let want = match first < len {
                false => Answer::Unsatisfiable,
                true if open => part(first, len - 1),
                true => part(first, last.min(len - 1)),
            };
            prop_assert_eq!(answer(&v, len), want);
        }

        #[test]
        fn one_suffix_range_is_the_tail(n in 0u64..300, len in 0u64..300) {
            let want = match (n, len) {
                (0, _) => Answer::Unsatisfiable,
                (_, 0) => Answer::Whole,
                _ => part(len - n.min(len), len - 1),
            };
            prop_assert_eq!(answer(&format!("bytes=-{n}"), len), want);
        }
    }
}
