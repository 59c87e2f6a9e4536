//! [`render`]: the best-effort value of a JSON prefix, as compact one-line JSON text.
//!
//! It is built from the reply's own text, once per call (no tree is kept between calls):
//! complete members and items are copied as written, minus the whitespace between tokens;
//! a string still being written is cut at a safe point (never inside an escape, never between
//! the halves of a surrogate pair) and closed; a number still being written is cut to its
//! longest valid prefix (`12` of `12`, `1` of `1.`, nothing of `-`); an unfinished key, a key
//! without a value yet and an unfinished `true`/`false`/`null` are left out; trailing commas
//! are dropped and the open containers closed. So what one call shows, a later call on a
//! longer prefix of the same text shows too (strings only grow, containers only gain members).
//!
//! The text given must be what the [`Scanner`](super::scan::Scanner) accepted: strict
//! JSON plus trailing commas. Anything else gives `None`, never a panic.

/// The value of `raw[start..end]` (a prefix of one JSON value, starting at its `{` or `[`),
/// closed, as compact JSON; `None` when it cannot be shown yet (a number still being written
/// that `serde_json` could not hold) or the text is not what the scanner accepts.
pub(super) fn render(raw: &str, start: usize, end: usize) -> Option<String> {
    let text = raw.get(start..end)?;
    let b = text.as_bytes();
    // Room for the closing brackets too, so the text is never copied to grow.
    let mut out = String::with_capacity(b.len() + 64);
    let mut stack: Vec<Open> = Vec::new();
    // The key read last, waiting for its value to be shown.
    let mut key: Option<(usize, usize)> = None;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => i += 1,
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.expect_key = top.object;
                }
                i += 1;
            }
            b'{' | b'[' => {
                lead(&mut out, &mut stack, &mut key, text)?;
                out.push(char::from(c));
                let object = c == b'{';
                stack.push(Open {
                    object,
                    shown: false,
                    expect_key: object,
                });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                out.push(char::from(c));
                key = None;
                if stack.is_empty() {
                    return Some(out);
                }
                i += 1;
            }
            b'"' => {
                let is_key = stack.last().is_some_and(|top| top.expect_key);
                let (close, safe) = string_end(b, i);
                match close {
                    Some(after) if is_key => {
                        key = Some((i, after));
                        if let Some(top) = stack.last_mut() {
                            top.expect_key = false;
                        }
                        i = after;
                    }
                    Some(after) => {
                        lead(&mut out, &mut stack, &mut key, text)?;
                        out.push_str(text.get(i..after)?);
                        i = after;
                    }
                    None => {
                        if !is_key {
                            lead(&mut out, &mut stack, &mut key, text)?;
                            out.push_str(text.get(i..safe)?);
                            out.push('"');
                        }
                        i = b.len();
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let (token_end, valid_end) = number_end(b, i);
                let shown = if token_end < b.len() {
                    token_end
                } else {
                    valid_end
                };
                if shown > i {
                    let number = text.get(i..shown)?;
                    let risky =
                        number.len() >= 300 || number.bytes().any(|c| c == b'e' || c == b'E');
                    if risky && serde_json::from_str::<serde_json::Value>(number).is_err() {
                        return None;
                    }
                    lead(&mut out, &mut stack, &mut key, text)?;
                    out.push_str(number);
                }
                i = token_end;
            }
            b't' | b'f' | b'n' => {
                let word = match c {
                    b't' => "true",
                    b'f' => "false",
                    _ => "null",
                };
                if b.get(i..i + word.len()) == Some(word.as_bytes()) {
                    lead(&mut out, &mut stack, &mut key, text)?;
                    out.push_str(word);
                    i += word.len();
                } else if word.as_bytes().starts_with(b.get(i..)?) {
                    // Still being written.
                    i = b.len();
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    for open in stack.iter().rev() {
        out.push(if open.object { '}' } else { ']' });
    }
    Some(out)
}

/// One open container of the output.
#[derive(Debug, Clone, Copy)]
struct Open {
    object: bool,
    /// Something was shown in it (the next one needs a comma).
    shown: bool,
    /// An object between members: the next string is a key.
    expect_key: bool,
}

/// Writes what must come before a value shown in the innermost container: a comma after an
/// earlier member or item, and in an object the member's key. `None` when an object's value
/// has no key (text the scanner would not accept).
fn lead(
    out: &mut String,
    stack: &mut [Open],
    key: &mut Option<(usize, usize)>,
    text: &str,
) -> Option<()> {
    let Some(top) = stack.last_mut() else {
        return Some(());
    };
    if top.shown {
        out.push(',');
    }
    top.shown = true;
    if top.object {
        let (start, end) = key.take()?;
        out.push_str(text.get(start..end)?);
        out.push(':');
    }
    Some(())
}

/// The string starting at `b[i]` (its `"`): `Some(end)` just after its closing quote, or
/// `None` when the text ends first, with the safe place to cut it then.
fn string_end(b: &[u8], i: usize) -> (Option<usize>, usize) {
    let mut j = i + 1;
    while let Some(&c) = b.get(j) {
        match c {
            b'"' => return (Some(j + 1), j),
            b'\\' => {
                let escape = j;
                let len = match b.get(j + 1) {
                    None => return (None, escape),
                    Some(b'u') => {
                        let code = b
                            .get(j + 2..j + 6)
                            .and_then(|hex| std::str::from_utf8(hex).ok())
                            .and_then(|hex| u16::from_str_radix(hex, 16).ok());
                        match code {
                            None => return (None, escape),
                            // A leading surrogate goes with the `\uDCxx` after it.
                            Some(code) if (0xD800..=0xDBFF).contains(&code) => 12,
                            Some(_) => 6,
                        }
                    }
                    Some(_) => 2,
                };
                if j + len > b.len() {
                    return (None, escape);
                }
                j += len;
            }
            _ => j += 1,
        }
    }
    (None, b.len())
}

/// The number starting at `b[i]`: where its token ends, and where its longest prefix that is
/// a whole number ends.
fn number_end(b: &[u8], i: usize) -> (usize, usize) {
    let mut j = i;
    let mut valid = i;
    // 0: sign or first digit; 1: integer digits; 2: after '.'; 3: fraction digits;
    // 4: after 'e'; 5: after the exponent's sign; 6: exponent digits.
    let mut state = 0u8;
    while let Some(&c) = b.get(j) {
        let digit = c.is_ascii_digit();
        state = match (state, c) {
            (0, b'-') => 0,
            (0 | 1, _) if digit => 1,
            (1, b'.') => 2,
            (2 | 3, _) if digit => 3,
            (1 | 3, b'e' | b'E') => 4,
            (4, b'+' | b'-') => 5,
            (4..=6, _) if digit => 6,
            _ => break,
        };
        j += 1;
        if matches!(state, 1 | 3 | 6) {
            valid = j;
        }
    }
    (j, valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partial(text: &str) -> Option<String> {
        render(text, 0, text.len())
    }

    #[test]
    fn prefixes_show_what_is_settled() {
        for (text, want) in [
            ("{", "{}"),
            ("[", "[]"),
            ("{\"a", "{}"),
            ("{\"a\"", "{}"),
            ("{\"a\":", "{}"),
            ("{\"a\": ", "{}"),
            ("{\"a\": \"he", "{\"a\":\"he\"}"),
            ("{\"a\": \"he\\", "{\"a\":\"he\"}"),
            ("{\"a\": \"he\\n", "{\"a\":\"he\\n\"}"),
            ("{\"a\": \"caf\\u00", "{\"a\":\"caf\"}"),
            ("{\"a\": \"caf\\u00e9", "{\"a\":\"caf\\u00e9\"}"),
            ("{\"a\": \"x\\ud83d\\ude", "{\"a\":\"x\"}"),
            ("{\"a\": \"x\\ud83d\\ude00", "{\"a\":\"x\\ud83d\\ude00\"}"),
            ("{\"a\": \"é", "{\"a\":\"é\"}"),
            ("{\"a\": -", "{}"),
            ("{\"a\": 12", "{\"a\":12}"),
            ("{\"a\": 1.", "{\"a\":1}"),
            ("{\"a\": 1.5e", "{\"a\":1.5}"),
            ("{\"a\": 1.5e-", "{\"a\":1.5}"),
            ("{\"a\": 1.5e-3", "{\"a\":1.5e-3}"),
            ("{\"a\": tr", "{}"),
            ("{\"a\": true", "{\"a\":true}"),
            ("{\"a\": nul", "{}"),
            ("{\"a\": 1, \"b", "{\"a\":1}"),
            ("{\"a\": 1,", "{\"a\":1}"),
            ("[1, 2,", "[1,2]"),
            ("[1, 2, ]", "[1,2]"),
            ("{\"a\": [1, {\"b\": [", "{\"a\":[1,{\"b\":[]}]}"),
            (
                "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}",
                "{\"a\":[1,2],\"b\":{}}",
            ),
            ("{\"a\": {}, }", "{\"a\":{}}"),
            ("[[], [1], \"s\", false, null]", "[[],[1],\"s\",false,null]"),
        ] {
            let got = partial(text);
            assert_eq!(got.as_deref(), Some(want), "{text:?}");
            let value = serde_json::from_str::<serde_json::Value>(want);
            assert!(value.is_ok(), "{want:?} parses");
        }
    }

    #[test]
    fn the_value_ends_at_its_closing_bracket() {
        assert_eq!(
            render("{\"a\": 1} and more {", 0, 19).as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(render("xx[1]", 2, 5).as_deref(), Some("[1]"));
    }

    #[test]
    fn what_cannot_be_shown_is_none() {
        assert_eq!(partial("[1e400"), None);
        assert_eq!(partial("[1e40").as_deref(), Some("[1e40]"));
        assert_eq!(partial("[truex]"), None);
        assert_eq!(partial("[yes]"), None);
        assert_eq!(render("[1]", 2, 1), None);
        assert_eq!(render("[1]", 0, 10), None);
    }
}
