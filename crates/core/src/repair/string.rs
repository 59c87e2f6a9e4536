//! [`Quote`]: how a string literal in the reply is delimited, and [`copy_string`], which copies
//! one string literal into the output as a valid JSON string.
//!
//! A string opened by `"` is read strictly: the first unescaped `"` ends it, and curly or
//! single quotes inside it are content (in the lenient reading, tried only when the strict one
//! fails, a `"` that cannot end the string is escaped instead). A string opened by `'`,
//! `‘`/`’` or a curly double quote is rewritten with `"` delimiters, its inner `"` escaped and
//! `\'` unescaped. A single quote only closes such a string when what follows it can follow a
//! string (`,` `:` `}` `]`, the end, or the start of a next item after some space), so
//! apostrophes (`'it's'`) stay content. Raw control characters are escaped; escapes JSON does
//! not know are fixed: `\'` loses its backslash, any other unknown escape (`\d`, `\U`, a `\u`
//! without four hex digits) gets its backslash doubled so the text reads the same once parsed.

use super::output::Output;
use super::scalar::is_word_byte;
use super::tally::Kind;

/// How a string literal is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quote {
    /// `"…"`, JSON's own.
    Double,
    /// `'…'`.
    Single,
    /// `“…”`, `„…“` and the like.
    CurlyDouble,
    /// `‘…’`.
    CurlySingle,
}

/// The third byte of a curly quote (`E2 80 xx`), U+2018 to U+201F.
const CURLY_FIRST: u8 = 0x98;
const CURLY_LAST: u8 = 0x9F;
/// U+201C, the first of the double curly quotes.
const CURLY_DOUBLE_FIRST: u8 = 0x9C;
/// U+201A and U+201E, the low quotes, which open a string but never close one.
const LOW_SINGLE: u8 = 0x9A;
const LOW_DOUBLE: u8 = 0x9E;

/// The third byte of the curly quote (U+2018..=U+201F) that starts at `src[i]`, if one does.
pub(super) fn curly_at(src: &[u8], i: usize) -> Option<u8> {
    match src.get(i..i + 3) {
        Some(&[0xE2, 0x80, third]) if (CURLY_FIRST..=CURLY_LAST).contains(&third) => Some(third),
        _ => None,
    }
}

impl Quote {
    /// The quote that opens a string at `src[i]`, with its length in bytes.
    pub(super) fn opening_at(src: &[u8], i: usize) -> Option<(Self, usize)> {
        match src.get(i)? {
            b'"' => Some((Self::Double, 1)),
            b'\'' => Some((Self::Single, 1)),
            _ => curly_at(src, i).map(|third| {
                let quote = if third >= CURLY_DOUBLE_FIRST {
                    Self::CurlyDouble
                } else {
                    Self::CurlySingle
                };
                (quote, 3)
            }),
        }
    }

    /// The repair this delimiter needs, if it is not JSON's own.
    pub(super) fn repair_kind(self) -> Option<Kind> {
        match self {
            Self::Double => None,
            Self::Single => Some(Kind::SingleQuote),
            Self::CurlyDouble | Self::CurlySingle => Some(Kind::SmartQuote),
        }
    }

    fn is_single(self) -> bool {
        matches!(self, Self::Single | Self::CurlySingle)
    }

    /// Whether the curly quote with third byte `third` closes a string opened by `self`.
    fn closed_by_curly(self, third: u8) -> bool {
        match self {
            Self::CurlyDouble => third >= CURLY_DOUBLE_FIRST && third != LOW_DOUBLE,
            Self::CurlySingle => third < CURLY_DOUBLE_FIRST && third != LOW_SINGLE,
            Self::Double | Self::Single => false,
        }
    }
}

/// Whether a quote that may be content (an apostrophe, or a `"` the writer forgot to escape)
/// closes its string, judged by what follows it: after optional whitespace, the end, a
/// structural character or a comment; or, after some whitespace, what starts a next item or
/// member (a quote, `{`, `[`, or a bare key and its `:`).
fn quote_closes(src: &[u8], after: usize) -> bool {
    let skip_ws = |mut k: usize| {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = src.get(k) {
            k += 1;
        }
        k
    };
    let k = skip_ws(after);
    let spaced = k > after;
    match src.get(k) {
        None | Some(b',' | b':' | b'}' | b']' | b'/') => true,
        Some(b'"' | b'\'' | b'{' | b'[') => spaced,
        Some(&b) if spaced && is_word_byte(b) => {
            let word = src[k..]
                .iter()
                .take_while(|&&b| is_word_byte(b) || b == b'-')
                .count();
            src.get(skip_ws(k + word)) == Some(&b':')
        }
        Some(_) => spaced && curly_at(src, k).is_some(),
    }
}

/// The text ended inside a string literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cut;

/// Copies the string literal whose opening quote (`quote`, `open_len` bytes) starts at
/// `src[start]` into `out` as a JSON string, counting what it changed.
///
/// Returns the position just after the closing quote, or [`Cut`] when the text ends first
/// (then `out` holds the opening `"` and the content read so far, never a closing quote).
///
/// With `lenient`, a `"` that [cannot end](quote_closes) a `"`-delimited string is taken for
/// one the writer forgot to escape, and escaped.
pub(super) fn copy_string(
    src: &[u8],
    start: usize,
    quote: Quote,
    open_len: usize,
    lenient: bool,
    out: &mut Output,
) -> Result<usize, Cut> {
    if let Some(kind) = quote.repair_kind() {
        out.bump(kind);
    }
    out.push(b'"');
    let single = quote.is_single();
    let curly = matches!(quote, Quote::CurlyDouble | Quote::CurlySingle);
    let mut i = start + open_len;
    let mut run = i;
    while let Some(&b) = src.get(i) {
        let special = b < 0x20
            || b == b'"'
            || b == b'\\'
            || (b == b'\'' && quote == Quote::Single)
            || (b == 0xE2 && curly);
        if !special {
            i += 1;
            continue;
        }
        out.extend_from_slice(&src[run..i]);
        match b {
            b'"' if quote == Quote::Double && (!lenient || quote_closes(src, i + 1)) => {
                out.push(b'"');
                return Ok(i + 1);
            }
            b'"' if quote == Quote::Double => {
                out.bump(Kind::UnescapedQuote);
                out.extend_from_slice(b"\\\"");
                i += 1;
            }
            b'"' => {
                out.extend_from_slice(b"\\\"");
                i += 1;
            }
            b'\'' => {
                if quote_closes(src, i + 1) {
                    out.push(b'"');
                    return Ok(i + 1);
                }
                out.push(b'\'');
                i += 1;
            }
            b'\\' => i = copy_escape(src, i, single, out)?,
            0xE2 => match curly_at(src, i) {
                Some(third)
                    if quote.closed_by_curly(third) && (!single || quote_closes(src, i + 3)) =>
                {
                    out.push(b'"');
                    return Ok(i + 3);
                }
                // Any other curly quote, or another character starting with E2, is content:
                // copy its lead byte and let the run carry the rest.
                _ => {
                    out.push(b);
                    i += 1;
                }
            },
            _ => i = escape_control(src, i, out),
        }
        run = i;
    }
    out.extend_from_slice(&src[run..]);
    Err(Cut)
}

/// Copies the escape whose backslash is at `src[i]`; returns the position after it.
fn copy_escape(src: &[u8], i: usize, single: bool, out: &mut Output) -> Result<usize, Cut> {
    let Some(&next) = src.get(i + 1) else {
        out.push(b'\\');
        return Err(Cut);
    };
    match next {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
            out.extend_from_slice(&src[i..i + 2]);
            Ok(i + 2)
        }
        b'u' => {
            let hex = src.get(i + 2..).unwrap_or_default();
            let digits = hex
                .iter()
                .take(4)
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            if digits == 4 {
                // D800–DFFF: a UTF-16 surrogate, valid only in a pair; the parse will tell.
                if matches!(
                    hex.get(..2),
                    Some([b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'])
                ) {
                    out.needs_parse = true;
                }
                out.extend_from_slice(&src[i..i + 6]);
                Ok(i + 6)
            } else if digits == hex.len() {
                // `\u12` and then the end: the escape was being written when the text ended.
                out.extend_from_slice(&src[i..]);
                Err(Cut)
            } else {
                // Not a unicode escape: keep the text as written by doubling the backslash.
                out.bump(Kind::InvalidEscape);
                out.extend_from_slice(b"\\\\");
                Ok(i + 1)
            }
        }
        b'\'' => {
            // `\'` is how single-quoted strings escape their quote (part of that repair); in a
            // JSON string it is an invalid escape. Either way the backslash is dropped.
            if !single {
                out.bump(Kind::InvalidEscape);
            }
            out.push(b'\'');
            Ok(i + 2)
        }
        _ => {
            // `\d`, `\U`, `\x`, …: the writer meant a backslash; double it so it stays one.
            out.bump(Kind::InvalidEscape);
            out.extend_from_slice(b"\\\\");
            Ok(i + 1)
        }
    }
}

/// Escapes the raw control character at `src[i]`; returns the position after it.
fn escape_control(src: &[u8], i: usize, out: &mut Output) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = src[i];
    match b {
        b'\r' if src.get(i + 1) == Some(&b'\n') => {
            out.bump(Kind::RawNewline);
            out.extend_from_slice(b"\\r\\n");
            return i + 2;
        }
        b'\n' => {
            out.bump(Kind::RawNewline);
            out.extend_from_slice(b"\\n");
        }
        b'\r' => {
            out.bump(Kind::RawNewline);
            out.extend_from_slice(b"\\r");
        }
        b'\t' => {
            out.bump(Kind::ControlCharacter);
            out.extend_from_slice(b"\\t");
        }
        _ => {
            out.bump(Kind::ControlCharacter);
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0x0F)]);
        }
    }
    i + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies the string at the start of `src`; returns `output|rest` (or the output written
    /// before the cut) and the tally.
    fn copy(src: &str) -> (Result<String, String>, Output) {
        let bytes = src.as_bytes();
        let mut out = Output::default();
        let Some((quote, len)) = Quote::opening_at(bytes, 0) else {
            panic!("no quote at the start of {src:?}");
        };
        let result = copy_string(bytes, 0, quote, len, false, &mut out);
        let text = String::from_utf8(out.bytes.clone()).expect("output is UTF-8");
        match result {
            Ok(end) => (Ok(format!("{text}|{}", &src[end..])), out),
            Err(Cut) => (Err(text), out),
        }
    }

    #[test]
    fn strings_copy_to_json_strings() {
        type Row = (&'static str, &'static str, &'static [(Kind, u32)]);
        let rows: &[Row] = &[
            (r#""plain" x"#, r#""plain"| x"#, &[]),
            (
                r#""a \"q\" \\ \/ \n \u00e9","#,
                r#""a \"q\" \\ \/ \n \u00e9"|,"#,
                &[],
            ),
            (
                "\"“curly” and 'single' stay\"}",
                "\"“curly” and 'single' stay\"|}",
                &[],
            ),
            ("'single'", "\"single\"|", &[(Kind::SingleQuote, 1)]),
            (
                r#"'say "hi" \'x\''"#,
                r#""say \"hi\" 'x'"|"#,
                &[(Kind::SingleQuote, 1)],
            ),
            (
                "'it's fine', 1",
                "\"it's fine\"|, 1",
                &[(Kind::SingleQuote, 1)],
            ),
            ("'a' 'b'", "\"a\"| 'b'", &[(Kind::SingleQuote, 1)]),
            ("“curly”: 1", "\"curly\"|: 1", &[(Kind::SmartQuote, 1)]),
            ("„low“", "\"low\"|", &[(Kind::SmartQuote, 1)]),
            (
                "“say \"x\"”",
                "\"say \\\"x\\\"\"|",
                &[(Kind::SmartQuote, 1)],
            ),
            ("‘it’s’]", "\"it’s\"|]", &[(Kind::SmartQuote, 1)]),
            (
                "\"a\nb\r\nc\"",
                "\"a\\nb\\r\\nc\"|",
                &[(Kind::RawNewline, 2)],
            ),
            (
                "\"a\tb\u{1}\"",
                "\"a\\tb\\u0001\"|",
                &[(Kind::ControlCharacter, 2)],
            ),
            (
                r#""\d+ \' \x \u12G""#,
                r#""\\d+ ' \\x \\u12G"|"#,
                &[(Kind::InvalidEscape, 4)],
            ),
            ("\"é—漢字🎉\"", "\"é—漢字🎉\"|", &[]),
        ];
        for &(src, want, kinds) in rows {
            let (got, out) = copy(src);
            let got = got.unwrap_or_else(|cut| panic!("{src:?} was cut: {cut:?}"));
            assert_eq!(got, want, "{src:?}");
            for &(kind, n) in kinds {
                assert_eq!(out.tally.count(kind), n, "{src:?} {kind:?}");
            }
        }
    }

    #[test]
    fn lenient_strings_escape_quotes_that_cannot_close_them() {
        let src = r#""He said "hi" and "bye", "x": 1"#;
        let mut out = Output::default();
        let end = copy_string(src.as_bytes(), 0, Quote::Double, 1, true, &mut out);
        assert_eq!(end, Ok(23));
        assert_eq!(out.bytes, br#""He said \"hi\" and \"bye""#);
        assert_eq!(out.tally.count(Kind::UnescapedQuote), 3);
        let mut out = Output::default();
        let end = copy_string(br#""a" b: 1"#, 0, Quote::Double, 1, true, &mut out);
        assert_eq!(end, Ok(3), "a bare key and its colon follow");
    }

    #[test]
    fn surrogate_escapes_ask_for_a_parse() {
        assert!(!copy(r#""\u00e9 \uD7FF \uE000""#).1.needs_parse);
        assert!(copy(r#""\ud83c\udf89""#).1.needs_parse);
        assert!(copy(r#""\uDFFF""#).1.needs_parse);
    }

    #[test]
    fn the_end_of_the_text_cuts_a_string() {
        for (src, want) in [
            ("\"I was cut", "\"I was cut"),
            ("\"ends in escape \\", "\"ends in escape \\"),
            ("\"ends in \\u00", "\"ends in \\u00"),
            ("'it's", "\"it's"),
            ("“open", "\"open"),
        ] {
            assert_eq!(copy(src).0, Err(want.to_owned()), "{src:?}");
        }
    }
}
