//! [`copy_number`] and [`copy_word`]: the bare (unquoted) scalars, numbers and literals, checked
//! against JSON's grammar and copied into the output; [`ScalarStop`] says why one could not be.
//!
//! Python's and JavaScript's literals (`True`, `False`, `None`, `undefined`) become JSON's, and
//! `NaN`/`Infinity`/`-Infinity`, which JSON cannot express, become `null`. A number or literal
//! that is cut short by the end of the text (`1.`, `-`, `1e+`, `tru`, `Non`) is reported as cut,
//! never completed by guessing.

use super::output::Output;
use super::tally::Kind;

/// Why a bare scalar could not be copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScalarStop {
    /// The text ended while the scalar was still incomplete.
    Cut,
    /// The scalar is not one the repair knows how to read.
    Invalid,
}

/// States of JSON's number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    fn step(self, b: u8) -> Option<Self> {
        let digit = b.is_ascii_digit();
        Some(match (self, b) {
            (Self::Start, b'-') => Self::Minus,
            (Self::Start | Self::Minus, b'0') => Self::Zero,
            (Self::Start | Self::Minus, _) if digit => Self::Int,
            (Self::Int, _) if digit => Self::Int,
            (Self::Zero | Self::Int, b'.') => Self::Dot,
            (Self::Dot | Self::Frac, _) if digit => Self::Frac,
            (Self::Zero | Self::Int | Self::Frac, b'e' | b'E') => Self::Exp,
            (Self::Exp, b'+' | b'-') => Self::ExpSign,
            (Self::Exp | Self::ExpSign | Self::ExpDigits, _) if digit => Self::ExpDigits,
            _ => return None,
        })
    }

    fn complete(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::ExpDigits)
    }
}

fn is_number_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')
}

/// Whether `b` can be part of a bare word (a literal or an unquoted key).
pub(super) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Copies the number starting at `src[i]` (a `-` or a digit); returns the position after it.
/// `-Infinity` is handed to [`copy_word`].
pub(super) fn copy_number(src: &[u8], i: usize, out: &mut Output) -> Result<usize, ScalarStop> {
    if src.get(i) == Some(&b'-') && src.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        return copy_word(src, i, out);
    }
    let mut state = Num::Start;
    let mut end = i;
    while let Some(&b) = src.get(end) {
        if !is_number_byte(b) {
            break;
        }
        state = state.step(b).ok_or(ScalarStop::Invalid)?;
        end += 1;
    }
    if state.complete() {
        // An exponent, or 300 digits and more, may overflow an f64, which serde_json refuses.
        let number = &src[i..end];
        if number.len() >= 300 || number.iter().any(|&b| b == b'e' || b == b'E') {
            out.needs_parse = true;
        }
        out.extend_from_slice(number);
        Ok(end)
    } else if end == src.len() {
        out.extend_from_slice(&src[i..end]);
        Err(ScalarStop::Cut)
    } else {
        Err(ScalarStop::Invalid)
    }
}

/// The bare words a value may be, and what each becomes.
const WORDS: &[(&str, &str, Option<Kind>)] = &[
    ("true", "true", None),
    ("false", "false", None),
    ("null", "null", None),
    ("True", "true", Some(Kind::PythonLiteral)),
    ("False", "false", Some(Kind::PythonLiteral)),
    ("None", "null", Some(Kind::PythonLiteral)),
    ("undefined", "null", Some(Kind::PythonLiteral)),
    ("NaN", "null", Some(Kind::NonFiniteNumber)),
    ("Infinity", "null", Some(Kind::NonFiniteNumber)),
    ("-Infinity", "null", Some(Kind::NonFiniteNumber)),
];

/// Copies the bare literal starting at `src[i]` as JSON; returns the position after it.
pub(super) fn copy_word(src: &[u8], i: usize, out: &mut Output) -> Result<usize, ScalarStop> {
    let body = if src.get(i) == Some(&b'-') { i + 1 } else { i };
    let end = body
        + src
            .get(body..)
            .unwrap_or_default()
            .iter()
            .take_while(|&&b| is_word_byte(b))
            .count();
    let word = &src[i..end];
    if let Some(&(_, json, kind)) = WORDS.iter().find(|(w, _, _)| w.as_bytes() == word) {
        out.extend_from_slice(json.as_bytes());
        if let Some(kind) = kind {
            out.bump(kind);
        }
        return Ok(end);
    }
    if end == src.len() && WORDS.iter().any(|(w, _, _)| w.as_bytes().starts_with(word)) {
        out.extend_from_slice(word);
        return Err(ScalarStop::Cut);
    }
    Err(ScalarStop::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(src: &str) -> Result<(String, usize), ScalarStop> {
        let mut out = Output::default();
        let end = copy_number(src.as_bytes(), 0, &mut out)?;
        Ok((String::from_utf8(out.bytes).expect("ASCII"), end))
    }

    fn word(src: &str) -> (Result<(String, usize), ScalarStop>, Output) {
        let mut out = Output::default();
        let result = copy_word(src.as_bytes(), 0, &mut out)
            .map(|end| (String::from_utf8(out.bytes.clone()).expect("ASCII"), end));
        (result, out)
    }

    #[test]
    fn numbers_follow_json_grammar() {
        for (src, want) in [
            ("0", 1),
            ("-12.5e+3,", 8),
            ("7]", 1),
            ("1E9 ", 3),
            ("-0.0}", 4),
        ] {
            assert_eq!(number(src), Ok((src[..want].to_owned(), want)), "{src:?}");
        }
        for src in ["1.", "-", "1e", "1e+", "-0."] {
            assert_eq!(number(src), Err(ScalarStop::Cut), "{src:?}");
        }
        let mut out = Output::default();
        copy_number(b"12.5", 0, &mut out).expect("a number");
        assert!(!out.needs_parse);
        copy_number(b"1e999", 0, &mut out).expect("a number");
        assert!(out.needs_parse, "may overflow");
        for src in ["01", "1.,", "1-2", "--1", "1e,", "1.2.3"] {
            assert_eq!(number(src), Err(ScalarStop::Invalid), "{src:?}");
        }
    }

    #[test]
    fn words_become_json_literals() {
        for (src, json, kind) in [
            ("true,", "true", None),
            ("null}", "null", None),
            ("True ", "true", Some(Kind::PythonLiteral)),
            ("None]", "null", Some(Kind::PythonLiteral)),
            ("undefined", "null", Some(Kind::PythonLiteral)),
            ("NaN", "null", Some(Kind::NonFiniteNumber)),
            ("-Infinity,", "null", Some(Kind::NonFiniteNumber)),
        ] {
            let (result, out) = word(src);
            let (text, _) = result.unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
            assert_eq!(text, json, "{src:?}");
            if let Some(kind) = kind {
                assert_eq!(out.tally.count(kind), 1, "{src:?}");
            }
        }
        for src in ["tru", "Non", "-Inf", "f"] {
            assert_eq!(word(src).0, Err(ScalarStop::Cut), "{src:?}");
        }
        for src in ["Trueish", "yes", "tru ", "nulls"] {
            assert_eq!(word(src).0, Err(ScalarStop::Invalid), "{src:?}");
        }
        let mut out = Output::default();
        let end = copy_number(b"-Infinity]", 0, &mut out);
        assert_eq!((end, out.bytes.as_slice()), (Ok(9), b"null".as_slice()));
    }
}
