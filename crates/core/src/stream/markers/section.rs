//! Section mode of the marker scan ([`super::MarkerStream`]): what follows a marker's colon,
//! as `markers::find` reads it — whitespace, or a ```` ``` ```` line then whitespace, then a
//! JSON object or array matched to its balanced end (brackets inside strings, `\"` and `\\`
//! tracked); a closing fence after fenced JSON; and the fence around the whole section when a
//! held fence line precedes it. Each piece keeps its scanner state between deltas.

use super::{Mode, Scan};
use crate::stream::Emit;

/// After the colon, before the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lead {
    /// Whitespace.
    Space,
    /// This many backticks (1 or 2).
    Ticks(u8),
    /// The rest of a ```` ``` ```` line.
    Info,
    /// Whitespace after the ```` ``` ```` line.
    FenceSpace,
}

/// Where a balanced scan of JSON is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct JsonScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl JsonScan {
    /// Takes one byte; true when it closes the outermost bracket.
    fn step(&mut self, b: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return false;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            // A mismatched closer still closes the innermost bracket, as the reader has it.
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

/// The last search for a line break: `bytes[from..to]` has none, and `to` is one when `found`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct NewlineMemo {
    from: usize,
    to: usize,
    found: bool,
}

impl NewlineMemo {
    /// The first `\n` at or after `from`.
    fn find(&mut self, bytes: &[u8], from: usize) -> Option<usize> {
        let mut at = from;
        if self.from <= from && from <= self.to {
            if self.found {
                return Some(self.to);
            }
            at = self.to;
        } else {
            self.from = from;
        }
        let found = bytes.get(at..).and_then(|rest| memchr::memchr(b'\n', rest));
        self.found = found.is_some();
        self.to = found.map_or(bytes.len(), |k| at + k);
        found.map(|k| at + k)
    }
}

/// The last whitespace skip: `bytes[from..to]` is ASCII whitespace.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SpaceMemo {
    from: usize,
    to: usize,
}

impl SpaceMemo {
    /// The first byte at or after `from` that is not ASCII whitespace (or the end).
    fn skip(&mut self, bytes: &[u8], from: usize) -> usize {
        let mut at = from;
        if self.from <= from && from <= self.to {
            at = self.to;
        } else {
            self.from = from;
        }
        at = skip_space(bytes, at);
        self.to = at;
        at
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// Whether ```` ``` ```` starts at `at`: `None` while the bytes there are all backticks but
/// fewer than three.
fn fence_at(bytes: &[u8], at: usize) -> Option<bool> {
    let have = bytes.get(at..).unwrap_or_default();
    let have = &have[..have.len().min(3)];
    if have.iter().any(|&b| b != b'`') {
        Some(false)
    } else if have.len() == 3 {
        Some(true)
    } else {
        None
    }
}

impl Scan {
    /// What the JSON after the colon starts with; JSON missing means the section is just the
    /// marker, and what follows it is text.
    pub(super) fn lead(&mut self, raw: &str, eof: bool) -> bool {
        let Mode::Body {
            start,
            marker,
            after,
            mut state,
        } = self.mode
        else {
            return false;
        };
        let bytes = raw.as_bytes();
        loop {
            match state {
                Lead::Space | Lead::FenceSpace => {
                    let at = if state == Lead::FenceSpace {
                        self.space.skip(bytes, self.pos)
                    } else {
                        skip_space(bytes, self.pos)
                    };
                    self.pos = at;
                    match bytes.get(at) {
                        None if eof => return self.body_done(start, after),
                        None => break,
                        Some(b'{' | b'[') => {
                            self.mode = Mode::Json {
                                start,
                                marker,
                                open: at,
                                fenced: state == Lead::FenceSpace,
                                scan: JsonScan::default(),
                            };
                            return true;
                        }
                        Some(b'`') if state == Lead::Space => {
                            self.pos = at + 1;
                            state = Lead::Ticks(1);
                        }
                        Some(_) => return self.body_done(start, after),
                    }
                }
                Lead::Ticks(n) => match bytes.get(self.pos) {
                    None if eof => return self.body_done(start, after),
                    None => break,
                    Some(b'`') => {
                        self.pos += 1;
                        state = if n >= 2 {
                            Lead::Info
                        } else {
                            Lead::Ticks(n + 1)
                        };
                    }
                    Some(_) => return self.body_done(start, after),
                },
                Lead::Info => match self.newline.find(bytes, self.pos) {
                    Some(newline) => {
                        self.pos = newline + 1;
                        state = Lead::FenceSpace;
                    }
                    // A fence line that never ends: the section runs to the end.
                    None if eof => return self.body_done(start, bytes.len()),
                    None => {
                        self.pos = bytes.len();
                        break;
                    }
                },
            }
        }
        self.mode = Mode::Body {
            start,
            marker,
            after,
            state,
        };
        false
    }

    /// Scans the JSON to its balanced end, then reads the section.
    pub(super) fn json(&mut self, raw: &str, eof: bool, out: &mut Vec<Emit>) -> bool {
        let Mode::Json {
            start,
            marker,
            open,
            fenced,
            mut scan,
        } = self.mode
        else {
            return false;
        };
        let bytes = raw.as_bytes();
        self.pos = self.pos.max(open);
        while let Some(&b) = bytes.get(self.pos) {
            self.pos += 1;
            if scan.step(b) {
                let end = self.pos;
                self.read(raw, (marker, start), open, out);
                if fenced {
                    self.mode = Mode::Close {
                        start,
                        json_end: end,
                    };
                    return true;
                }
                return self.body_done(start, end);
            }
        }
        if eof {
            // Cut off inside the JSON: the section runs to the end.
            return self.body_done(start, bytes.len());
        }
        self.mode = Mode::Json {
            start,
            marker,
            open,
            fenced,
            scan,
        };
        false
    }

    /// After fenced JSON: a closing ```` ``` ```` (after whitespace) belongs to the section.
    pub(super) fn close(&mut self, raw: &str, eof: bool) -> bool {
        let Mode::Close { start, json_end } = self.mode else {
            return false;
        };
        let bytes = raw.as_bytes();
        self.pos = skip_space(bytes, self.pos);
        match fence_at(bytes, self.pos) {
            Some(true) => self.body_done(start, self.pos + 3),
            Some(false) => self.body_done(start, json_end),
            None if eof => self.body_done(start, json_end),
            None => false,
        }
    }

    /// The section's body ends at `end`: with a fence line held before it, see whether a
    /// closing fence follows; else the section is complete.
    fn body_done(&mut self, start: usize, end: usize) -> bool {
        if self.fence.is_some() {
            self.mode = Mode::Widen { start, end };
            self.pos = end;
            true
        } else {
            self.complete(end)
        }
    }

    /// After a section a fence line precedes: whitespace then ```` ``` ```` makes the fence
    /// part of the section; anything else releases the fence line as text.
    pub(super) fn widen(&mut self, raw: &str, eof: bool) -> bool {
        let Mode::Widen { start, end } = self.mode else {
            return false;
        };
        let rest = raw.get(self.pos..).unwrap_or_default();
        self.pos = raw.len() - rest.trim_start().len();
        match fence_at(raw.as_bytes(), self.pos) {
            Some(true) => {
                let close = self.pos + 3;
                self.fence = None;
                self.complete(close)
            }
            None if !eof => false,
            Some(false) | None => {
                self.fence = None;
                self.send(raw, start);
                self.complete(end)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_ends_at_its_balanced_close_whatever_is_quoted() {
        let cases: &[(&str, Option<usize>)] = &[
            (r#"["a", "b"] tail"#, Some(10)),
            (r#"{"a": "x } ] \" {", "b": ["\\", "]"]} tail"#, Some(37)),
            (r#"{"a": [1, 2}"#, None),
            (r#"[}"#, Some(2)),
            (r#"["\\\"]"]"#, Some(9)),
            ("[\"é ✓ ]\"] x", Some(12)),
        ];
        for (text, want) in cases {
            let mut scan = JsonScan::default();
            let end = text.bytes().position(|b| scan.step(b)).map(|at| at + 1);
            assert_eq!(end, *want, "{text}");
        }
    }

    #[test]
    fn remembered_searches_answer_rescans() {
        let bytes = b"abc   \n  x";
        let mut memo = NewlineMemo::default();
        assert_eq!(memo.find(bytes, 1), Some(6));
        assert_eq!(memo.find(bytes, 3), Some(6));
        assert_eq!(memo.find(bytes, 7), None);
        let mut memo = SpaceMemo::default();
        assert_eq!(memo.skip(bytes, 3), 9);
        assert_eq!(memo.skip(bytes, 5), 9);
        assert_eq!(memo.skip(bytes, 9), 9);
        assert_eq!(fence_at(b"``", 0), None);
        assert_eq!(fence_at(b"```x", 0), Some(true));
        assert_eq!(fence_at(b"`x", 0), Some(false));
        assert_eq!(fence_at(b"", 0), None);
    }
}
