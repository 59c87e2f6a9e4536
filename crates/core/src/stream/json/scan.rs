//! [`Scanner`]: the incremental reader of the one JSON value a reply started — an explicit
//! state machine over bytes that picks up where the last delta stopped, so every byte is
//! looked at once however the reply is split.
//!
//! It accepts strict JSON plus trailing commas (`[1,]`, `{"a": 1,}`); anything else (comments,
//! other quotes, bare words, raw control characters in strings, lone UTF-16 surrogates, a
//! missing comma, numbers `serde_json` cannot hold, nesting deeper than `serde_json` reads)
//! makes it [`Status::Lost`] for good, at the first byte it cannot follow. After the root
//! value closes it reads nothing more.
//!
//! What it reads is reported to a [`Sink`] at the moment it is settled: a member's key when
//! its `:` arrives, a scalar when the `,`, `}` or `]` after it arrives (so that no reading of
//! a continuation — not even the repair's lenient one, which takes a `"` that is not followed
//! by one of those for an unescaped quote — can make it another value), a container when it
//! opens and when it closes.

use crate::report::Violation;
use std::ops::Range;

/// Deepest nesting `serde_json` reads (it refuses the 128th level).
pub(super) const MAX_DEPTH: usize = 127;

/// Violations proven by what was read; the reader stops checking after the first.
pub(super) type Proven = Vec<Violation>;

/// What kind of scalar a settled token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Number,
    Bool,
    Null,
}

/// Who hears about the value's parts as they are settled. `raw` is the reply so far; spans
/// are byte ranges into it.
pub(super) trait Sink {
    /// An array's item number `index` starts.
    fn item(&mut self, index: usize);
    /// The key at `span` (quotes included) is followed by its `:`.
    fn key(&mut self, raw: &str, span: Range<usize>) -> Result<(), Proven>;
    /// An object (or array) opens at byte `at`.
    fn open(&mut self, at: usize, object: bool);
    /// The scalar at `span` is settled (the structural character after it arrived).
    fn scalar(&mut self, raw: &str, span: Range<usize>, kind: Scalar) -> Result<(), Proven>;
    /// The innermost open container closes; `end` is just after its closing bracket.
    fn close(&mut self, raw: &str, end: usize) -> Result<(), Proven>;
}

/// A sink that hears nothing (no checks to make).
impl Sink for () {
    fn item(&mut self, _index: usize) {}
    fn key(&mut self, _raw: &str, _span: Range<usize>) -> Result<(), Proven> {
        Ok(())
    }
    fn open(&mut self, _at: usize, _object: bool) {}
    fn scalar(&mut self, _raw: &str, _span: Range<usize>, _kind: Scalar) -> Result<(), Proven> {
        Ok(())
    }
    fn close(&mut self, _raw: &str, _end: usize) -> Result<(), Proven> {
        Ok(())
    }
}

/// Where the reader is with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// Inside it.
    Reading,
    /// It closed; `end` is just after it.
    Done { end: usize },
    /// The reply stopped being JSON the reader follows at byte `at`.
    Lost { at: usize },
}

/// What the innermost container (or the root) expects between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The root value.
    Root,
    /// An object's key or `}` (after `{` or `,`).
    Key,
    /// The `:` after a key.
    Colon,
    /// A member's value (after `:`).
    Member,
    /// An array's item or `]` (after `[` or `,`).
    Item,
    /// `,` or the closing bracket, after a member or item.
    After,
}

/// Where a string is in its escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    Plain,
    /// After `\`.
    Backslash,
    /// Reading the hex digits of `\u` (`low`: the second half of a surrogate pair).
    Hex {
        left: u8,
        code: u16,
        low: bool,
    },
    /// After a leading surrogate's `\uD8xx`: its trailing one must follow.
    PairBackslash,
    PairU,
}

/// The escape state after byte `b`; `None` when the escape is not JSON's (or a surrogate
/// does not pair up, which serde_json refuses).
fn escape_step(esc: Esc, b: u8) -> Option<Esc> {
    Some(match esc {
        Esc::Plain => Esc::Plain,
        Esc::Backslash => match b {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Esc::Plain,
            b'u' => Esc::Hex {
                left: 4,
                code: 0,
                low: false,
            },
            _ => return None,
        },
        Esc::Hex { left, code, low } => {
            let digit = (b as char).to_digit(16)?;
            let code = (code << 4) | digit as u16;
            if left > 1 {
                return Some(Esc::Hex {
                    left: left - 1,
                    code,
                    low,
                });
            }
            let leading = (0xD800..=0xDBFF).contains(&code);
            let trailing = (0xDC00..=0xDFFF).contains(&code);
            match (low, leading, trailing) {
                (false, true, _) => Esc::PairBackslash,
                (false, false, false) | (true, false, true) => Esc::Plain,
                _ => return None,
            }
        }
        Esc::PairBackslash if b == b'\\' => Esc::PairU,
        Esc::PairU if b == b'u' => Esc::Hex {
            left: 4,
            code: 0,
            low: true,
        },
        Esc::PairBackslash | Esc::PairU => return None,
    })
}

/// States of JSON's number grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
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
    fn first(b: u8) -> Self {
        match b {
            b'-' => Self::Minus,
            b'0' => Self::Zero,
            _ => Self::Int,
        }
    }

    fn step(self, b: u8) -> Option<Self> {
        let digit = b.is_ascii_digit();
        Some(match (self, b) {
            (Self::Minus, b'0') => Self::Zero,
            (Self::Minus | Self::Int, _) if digit => Self::Int,
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

/// The token being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// Between tokens.
    None,
    Str {
        start: usize,
        key: bool,
        esc: Esc,
    },
    Num {
        start: usize,
        state: Num,
    },
    Word {
        start: usize,
        word: &'static [u8],
        at: usize,
    },
}

/// One open container.
#[derive(Debug, Clone, Copy)]
struct Open {
    object: bool,
    /// Items started so far (arrays).
    count: usize,
}

/// The incremental reader of one JSON value. See the module docs.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    /// Where the value starts (its `{` or `[`).
    start: usize,
    /// The next byte to read.
    pos: usize,
    token: Token,
    slot: Slot,
    stack: Vec<Open>,
    /// A scalar read but not yet settled.
    pending: Option<(Range<usize>, Scalar)>,
    /// The key waiting for its `:`.
    key: Range<usize>,
    status: Status,
    /// Something that may change the partial value was read since [`Scanner::take_dirty`].
    dirty: bool,
}

impl Scanner {
    /// A reader of the value whose first byte (`{` or `[`) is at `start`.
    pub(super) fn new(start: usize) -> Self {
        Self {
            start,
            pos: start,
            token: Token::None,
            slot: Slot::Root,
            stack: Vec::new(),
            pending: None,
            key: 0..0,
            status: Status::Reading,
            dirty: false,
        }
    }

    /// Where the value starts.
    pub(super) fn start(&self) -> usize {
        self.start
    }

    pub(super) fn status(&self) -> Status {
        self.status
    }

    /// Whether something was read since the last call that may change the partial value.
    pub(super) fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Reads `raw` from where the last call stopped to its end (`raw` only ever grows), telling
    /// `sink`. Stops at the first violation the sink proves (reading on from there when called
    /// again).
    pub(super) fn scan<S: Sink>(&mut self, raw: &str, sink: &mut S) -> Result<(), Proven> {
        let bytes = raw.as_bytes();
        let mut i = self.pos;
        let mut outcome = Ok(());
        while i < bytes.len() && self.status == Status::Reading && outcome.is_ok() {
            let step = match self.token {
                Token::Str { .. } => self.string(raw, i),
                Token::Num { start, state } => self.number(raw, i, start, state),
                Token::Word { start, word, at } => self.word(bytes, i, start, word, at),
                Token::None => self.between(raw, i, sink),
            };
            match step {
                Step::To(next) => i = next,
                Step::Proven(next, proven) => {
                    i = next;
                    outcome = Err(proven);
                }
                Step::Lost(at) => self.status = Status::Lost { at },
            }
        }
        self.pos = i.max(self.pos);
        outcome
    }

    /// Inside a string: reads to its end or to the end of the text.
    fn string(&mut self, raw: &str, mut i: usize) -> Step {
        let bytes = raw.as_bytes();
        let Token::Str {
            start,
            key,
            mut esc,
        } = self.token
        else {
            return Step::Lost(i);
        };
        if !key {
            self.dirty = true;
        }
        loop {
            if esc == Esc::Plain {
                let rest = bytes.get(i..).unwrap_or_default();
                let Some(n) = rest
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                else {
                    i = bytes.len();
                    break;
                };
                i += n;
                match bytes.get(i) {
                    Some(b'"') => {
                        self.token = Token::None;
                        let span = start..i + 1;
                        if key {
                            self.key = span;
                            self.slot = Slot::Colon;
                        } else {
                            self.pending = Some((span, Scalar::String));
                            self.slot = Slot::After;
                        }
                        return Step::To(i + 1);
                    }
                    Some(b'\\') => esc = Esc::Backslash,
                    _ => return Step::Lost(i),
                }
            } else {
                let Some(&b) = bytes.get(i) else {
                    break;
                };
                let Some(next) = escape_step(esc, b) else {
                    return Step::Lost(i);
                };
                esc = next;
            }
            i += 1;
        }
        self.token = Token::Str { start, key, esc };
        Step::To(i)
    }

    /// Inside a number: reads its bytes; the first other byte ends it (and is read next).
    fn number(&mut self, raw: &str, mut i: usize, start: usize, mut state: Num) -> Step {
        let bytes = raw.as_bytes();
        self.dirty = true;
        while let Some(&b) = bytes.get(i) {
            if !is_number_byte(b) {
                if !state.complete() {
                    return Step::Lost(i);
                }
                let text = raw.get(start..i).unwrap_or_default();
                // An exponent, or 300 digits and more, may overflow an f64: serde_json says.
                let risky = text.len() >= 300 || text.bytes().any(|c| c == b'e' || c == b'E');
                if risky && serde_json::from_str::<serde_json::Value>(text).is_err() {
                    return Step::Lost(start);
                }
                self.token = Token::None;
                self.pending = Some((start..i, Scalar::Number));
                self.slot = Slot::After;
                return Step::To(i);
            }
            let Some(next) = state.step(b) else {
                return Step::Lost(i);
            };
            state = next;
            i += 1;
        }
        self.token = Token::Num { start, state };
        Step::To(i)
    }

    /// Inside `true`, `false` or `null`.
    fn word(
        &mut self,
        bytes: &[u8],
        mut i: usize,
        start: usize,
        word: &'static [u8],
        mut at: usize,
    ) -> Step {
        while let (Some(&b), Some(&want)) = (bytes.get(i), word.get(at)) {
            if b != want {
                return Step::Lost(i);
            }
            i += 1;
            at += 1;
        }
        if at < word.len() {
            self.token = Token::Word { start, word, at };
            return Step::To(i);
        }
        self.dirty = true;
        self.token = Token::None;
        let kind = if word == b"null" {
            Scalar::Null
        } else {
            Scalar::Bool
        };
        self.pending = Some((start..i, kind));
        self.slot = Slot::After;
        Step::To(i)
    }

    /// Between tokens: one structural byte, or the start of a token.
    fn between<S: Sink>(&mut self, raw: &str, i: usize, sink: &mut S) -> Step {
        let bytes = raw.as_bytes();
        let Some(&b) = bytes.get(i) else {
            return Step::To(i);
        };
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return Step::To(i + 1);
        }
        let object = self.stack.last().is_some_and(|o| o.object);
        let result = match (self.slot, b) {
            (Slot::Root | Slot::Member, _) => return self.value(raw, i, sink),
            (Slot::Item, b']') | (Slot::Key, b'}') => self.close(raw, i, sink),
            (Slot::Item, _) => {
                if let Some(open) = self.stack.last_mut() {
                    sink.item(open.count);
                    open.count += 1;
                }
                return self.value(raw, i, sink);
            }
            (Slot::Key, b'"') => {
                self.token = Token::Str {
                    start: i,
                    key: true,
                    esc: Esc::Plain,
                };
                return Step::To(i + 1);
            }
            (Slot::Colon, b':') => {
                self.slot = Slot::Member;
                sink.key(raw, self.key.clone())
            }
            (Slot::After, b',') => {
                self.slot = if object { Slot::Key } else { Slot::Item };
                self.settle(raw, sink)
            }
            (Slot::After, b'}') if object => self.close(raw, i, sink),
            (Slot::After, b']') if !object => self.close(raw, i, sink),
            _ => return Step::Lost(i),
        };
        match result {
            Ok(()) => Step::To(i + 1),
            Err(proven) => Step::Proven(i + 1, proven),
        }
    }

    /// Tells the sink about the scalar waiting for this structural byte.
    fn settle<S: Sink>(&mut self, raw: &str, sink: &mut S) -> Result<(), Proven> {
        match self.pending.take() {
            Some((span, kind)) => sink.scalar(raw, span, kind),
            None => Ok(()),
        }
    }

    /// The closing bracket at `i` closes the innermost container.
    fn close<S: Sink>(&mut self, raw: &str, i: usize, sink: &mut S) -> Result<(), Proven> {
        self.dirty = true;
        let settled = self.settle(raw, sink);
        self.stack.pop();
        self.slot = Slot::After;
        if self.stack.is_empty() {
            self.status = Status::Done { end: i + 1 };
        }
        settled?;
        sink.close(raw, i + 1)
    }

    /// A value starts at `i`.
    fn value<S: Sink>(&mut self, raw: &str, i: usize, sink: &mut S) -> Step {
        let Some(&b) = raw.as_bytes().get(i) else {
            return Step::To(i);
        };
        self.dirty = true;
        match b {
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Step::Lost(i);
                }
                let object = b == b'{';
                sink.open(i, object);
                self.stack.push(Open { object, count: 0 });
                self.slot = if object { Slot::Key } else { Slot::Item };
            }
            // Only a container may be the root.
            _ if self.slot == Slot::Root => return Step::Lost(i),
            b'"' => {
                self.token = Token::Str {
                    start: i,
                    key: false,
                    esc: Esc::Plain,
                };
            }
            b'-' | b'0'..=b'9' => {
                self.token = Token::Num {
                    start: i,
                    state: Num::first(b),
                };
            }
            b't' | b'f' | b'n' => {
                let word: &'static [u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.token = Token::Word {
                    start: i,
                    word,
                    at: 1,
                };
            }
            _ => return Step::Lost(i),
        }
        Step::To(i + 1)
    }
}

/// What reading one step did.
enum Step {
    /// Read on from this byte.
    To(usize),
    /// Read on from this byte; the sink proved these violations.
    Proven(usize, Proven),
    /// The reply stopped being JSON the reader follows at this byte.
    Lost(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that writes down what it hears.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Sink for Log {
        fn item(&mut self, index: usize) {
            self.0.push(format!("item {index}"));
        }
        fn key(&mut self, raw: &str, span: Range<usize>) -> Result<(), Proven> {
            self.0.push(format!("key {}", &raw[span]));
            Ok(())
        }
        fn open(&mut self, _at: usize, object: bool) {
            self.0.push(if object { "{" } else { "[" }.into());
        }
        fn scalar(&mut self, raw: &str, span: Range<usize>, kind: Scalar) -> Result<(), Proven> {
            self.0.push(format!("{kind:?} {}", &raw[span]));
            Ok(())
        }
        fn close(&mut self, _raw: &str, _end: usize) -> Result<(), Proven> {
            self.0.push("close".into());
            Ok(())
        }
    }

    /// Feeds `text` in pieces of `step` characters; returns the status and the log.
    fn read(text: &str, step: usize) -> (Status, Vec<String>) {
        let mut scanner = Scanner::new(text.find(['{', '[']).unwrap_or(0));
        let mut log = Log::default();
        let mut raw = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(step.max(1)) {
            raw.extend(piece);
            let _ = scanner.scan(&raw, &mut log);
        }
        (scanner.status(), log.0)
    }

    #[test]
    fn events_come_when_settled_however_the_text_is_split() {
        let text = r#"{"a": [1, "x\"y", true, null,], "b\u00e9": {"c": -2.5e3}, } tail"#;
        let want = [
            "{",
            "key \"a\"",
            "[",
            "item 0",
            "Number 1",
            "item 1",
            "String \"x\\\"y\"",
            "item 2",
            "Bool true",
            "item 3",
            "Null null",
            "close",
            "key \"b\\u00e9\"",
            "{",
            "key \"c\"",
            "Number -2.5e3",
            "close",
            "close",
        ];
        for step in [1, 2, 3, 7, 100] {
            let (status, log) = read(text, step);
            assert_eq!(status, Status::Done { end: 59 }, "step {step}");
            assert_eq!(log, want, "step {step}");
        }
    }

    #[test]
    fn only_strict_json_and_trailing_commas_are_followed() {
        for (text, lost) in [
            ("{\"a\": 1}", false),
            ("[1,]", false),
            ("{\"a\": [],}", false),
            ("[\"\\ud83d\\ude00\"]", false),
            ("{\"a\": 1 \"b\": 2}", true),
            ("{a: 1}", true),
            ("{'a': 1}", true),
            ("[1, // c\n 2]", true),
            ("[True]", true),
            ("[\"raw\nnewline\"]", true),
            ("[\"bad \\x escape\"]", true),
            ("[\"lone \\ud83d\"]", true),
            ("[\"lone \\ude00\"]", true),
            ("[\"pair \\ud83d\\u0041\"]", true),
            ("[01]", true),
            ("[1.]", true),
            ("[-]", true),
            ("[1e400]", true),
            ("[truex]", true),
            ("[,1]", true),
            ("[1,,2]", true),
            ("{,}", true),
            ("{\"a\":}", true),
            ("{\"a\": 1]", true),
            ("[1}", true),
            ("[NaN]", true),
        ] {
            for step in [1, 3, 50] {
                let (status, _) = read(text, step);
                assert_eq!(
                    matches!(status, Status::Lost { .. }),
                    lost,
                    "{text:?} step {step}"
                );
            }
        }
    }

    #[test]
    fn nesting_stops_where_serde_json_does() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(serde_json::from_str::<serde_json::Value>(&deep(MAX_DEPTH)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&deep(MAX_DEPTH + 1)).is_err());
        assert!(matches!(read(&deep(MAX_DEPTH), 5).0, Status::Done { .. }));
        assert_eq!(
            read(&deep(MAX_DEPTH + 1), 5).0,
            Status::Lost { at: MAX_DEPTH }
        );
    }

    #[test]
    fn a_scalar_waits_for_the_byte_after_it() {
        let (_, log) = read("[12", 1);
        assert_eq!(log, ["[", "item 0"]);
        let (_, log) = read("[12 ", 1);
        assert_eq!(log, ["[", "item 0"]);
        let (_, log) = read("[12 ,", 1);
        assert_eq!(log, ["[", "item 0", "Number 12"]);
        let (_, log) = read("{\"k\" ", 1);
        assert_eq!(log, ["{"]);
        let (_, log) = read("{\"k\" :", 1);
        assert_eq!(log, ["{", "key \"k\""]);
    }
}
