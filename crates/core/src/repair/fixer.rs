//! [`Fixer`]: the token-level pass that copies one almost-JSON value into valid JSON.
//!
//! It reads the bytes once, left to right, keeping the open objects and arrays on an explicit
//! stack (never recursion, so 100,000 nested `[` cost memory, not stack). Unchanged stretches
//! are copied in bulk; every change is counted in a [`Tally`]. It stops at the end of the
//! first complete value, at the first thing it cannot read (a [`Outcome::Failed`], saying what
//! was expected there and whether what came before was plainly JSON), or at the end of the
//! text. There the value was cut off, and it says where with a JSON pointer instead of
//! guessing the rest — except when the text is a region that the reply goes on after (a closed
//! code fence): a value that ends there with brackets still open was finished by its writer,
//! and the missing closing brackets are appended.

use super::Truncation;
use super::extract::comment_end;
use super::output::Output;
use super::scalar::{ScalarStop, copy_number, copy_word, is_word_byte};
use super::string::{Cut, Quote, copy_string, curly_at};
use super::tally::{Kind, Tally};

/// How one run of the fixer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A whole value was read; `end` is the position after it (or the end of the text when
    /// missing brackets were appended).
    Complete { end: usize },
    /// The text ended in the middle of the value.
    Cut(Truncation),
    /// Something at `at` could not be read as (almost-)JSON; `expected` says, in words, what
    /// could have stood there. `committed`: the text read before it was plainly JSON (a quoted
    /// key, a bare key and its `:`, or a whole item or member), so the value had started.
    Failed {
        at: usize,
        committed: bool,
        expected: &'static str,
    },
}

/// What a run of the fixer produced.
#[derive(Debug, Clone)]
pub(super) struct Fixed {
    /// The output: valid JSON when complete; when cut, the value up to the end of the text;
    /// when failed, the part read before the failure.
    pub(super) text: String,
    pub(super) tally: Tally,
    pub(super) outcome: Outcome,
    /// Whether the text, though complete, needs a full parse to be called valid.
    pub(super) needs_parse: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

impl Container {
    fn closer(self) -> u8 {
        match self {
            Self::Object => b'}',
            Self::Array => b']',
        }
    }
}

/// Where a container is between its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Just after `{` or `[`.
    Open,
    AfterComma,
    /// After an object key (before the `:`).
    AfterKey,
    AfterColon,
    AfterValue,
}

/// One open object or array.
#[derive(Debug, Clone, Copy)]
struct Frame {
    container: Container,
    slot: Slot,
    /// Arrays: the index of the element being written.
    index: usize,
    /// Objects: the output range of the current key, quotes included.
    key: (usize, usize),
    /// Output position of the last comma written.
    comma_at: usize,
    /// Output position just after the last complete value or member.
    value_end: usize,
}

/// Where the text ended, when it ended too soon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CutKind {
    InString,
    InKey,
    InScalar,
    AfterOpen,
    AfterComma,
    AfterKey,
    AfterColon,
    /// After a complete member or element, with brackets still open.
    AfterValue,
}

/// Why the main loop stopped before a complete value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cut(CutKind),
    Invalid,
}

impl From<ScalarStop> for Stop {
    fn from(stop: ScalarStop) -> Self {
        match stop {
            ScalarStop::Cut => Self::Cut(CutKind::InScalar),
            ScalarStop::Invalid => Self::Invalid,
        }
    }
}

/// How deeply objects and arrays may nest. `serde_json` refuses more than 128 levels anyway;
/// the limit bounds the stack's memory on hostile input.
const MAX_DEPTH: usize = 1024;
/// From this depth on, leave it to `serde_json` to say whether it reads the output.
const SERDE_DEPTH: usize = 100;

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether a bare (unquoted) key may start with the character at `src[i]`: ASCII letters,
/// digits, `_`, `$`, and any non-ASCII character that is not a curly quote.
fn starts_bare_key(src: &[u8], i: usize) -> bool {
    src.get(i)
        .is_some_and(|&b| is_word_byte(b) || (b >= 0x80 && curly_at(src, i).is_none()))
}

/// The token-level fixer over one region of the reply.
#[derive(Debug)]
pub(super) struct Fixer<'a> {
    src: &'a [u8],
    pos: usize,
    out: Output,
    stack: Vec<Frame>,
    /// Whether a `"` that cannot end its string is read as content (see [`copy_string`]).
    lenient: bool,
    /// Whether the text ending after a complete member, brackets still open, is completed
    /// (the reply went on after this region) rather than reported as cut off.
    close_at_end: bool,
    /// Whether what was read is plainly JSON (see [`Outcome::Failed`]).
    committed: bool,
}

impl<'a> Fixer<'a> {
    /// Reads the value starting at `src[start]` and copies it, repaired, into a [`Fixed`].
    /// `src` must be valid UTF-8 (it is a `&str`'s bytes, cut at character boundaries).
    /// `lenient` reads a `"` that cannot end its string as a quote the writer forgot to escape;
    /// `close_at_end` appends the closing brackets a value that ends `src` still lacks.
    pub(super) fn fix(src: &'a [u8], start: usize, lenient: bool, close_at_end: bool) -> Fixed {
        let mut fixer = Self {
            src,
            pos: start,
            out: Output::with_capacity(src.len().saturating_sub(start).min(1 << 16) + 16),
            stack: Vec::new(),
            lenient,
            close_at_end,
            committed: false,
        };
        let outcome = match fixer.run() {
            Ok(end) => Outcome::Complete { end },
            Err(Stop::Cut(kind)) => Outcome::Cut(fixer.truncation(kind)),
            Err(Stop::Invalid) => Outcome::Failed {
                at: fixer.pos,
                committed: fixer.committed,
                expected: fixer.expected(),
            },
        };
        let Output {
            bytes,
            tally,
            needs_parse,
        } = fixer.out;
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Fixed {
            text,
            tally,
            outcome,
            needs_parse,
        }
    }

    /// The main loop: one token per turn. Returns the position after the complete value.
    fn run(&mut self) -> Result<usize, Stop> {
        loop {
            if !self.stack.is_empty() {
                self.skip_trivia();
            }
            let Some(&b) = self.src.get(self.pos) else {
                return self.at_end();
            };
            let Some(top) = self.stack.last().copied() else {
                if self.value(b)? {
                    return Ok(self.pos);
                }
                continue;
            };
            let done = match (top.container, top.slot, b) {
                (_, Slot::AfterKey | Slot::AfterColon, b'}' | b']') => return Err(Stop::Invalid),
                (_, _, b'}' | b']') => self.close(b)?,
                (_, Slot::AfterValue, b',') => {
                    self.comma(self.out.len());
                    self.out.push(b',');
                    self.pos += 1;
                    false
                }
                (_, Slot::Open | Slot::AfterComma, b',') => {
                    // `[,1]` or `[1,,2]`: a comma with nothing before it.
                    self.out.bump(Kind::ExtraComma);
                    self.pos += 1;
                    false
                }
                (Container::Object, Slot::AfterKey, b':') => {
                    self.committed = true;
                    self.set_slot(Slot::AfterColon);
                    self.out.push(b':');
                    self.pos += 1;
                    false
                }
                (Container::Object, Slot::Open | Slot::AfterComma, _) => {
                    self.key()?;
                    false
                }
                (Container::Object, Slot::AfterValue, _) if self.starts_key() => {
                    self.insert_comma(top.value_end);
                    self.key()?;
                    false
                }
                (Container::Object, Slot::AfterColon, _)
                | (Container::Array, Slot::Open | Slot::AfterComma, _) => self.value(b)?,
                (Container::Array, Slot::AfterValue, _) if self.starts_value() => {
                    self.insert_comma(top.value_end);
                    self.value(b)?
                }
                _ => return Err(Stop::Invalid),
            };
            if done {
                return Ok(self.pos);
            }
        }
    }

    /// Copies whitespace and drops comments (counting them) before the next token.
    fn skip_trivia(&mut self) {
        loop {
            let start = self.pos;
            let ws = self
                .src
                .get(start..)
                .unwrap_or_default()
                .iter()
                .take_while(|&&b| is_whitespace(b))
                .count();
            if ws > 0 {
                self.out.extend_from_slice(&self.src[start..start + ws]);
                self.pos += ws;
            }
            match comment_end(self.src, self.pos, true) {
                Some(end) => {
                    self.out.bump(Kind::Comment);
                    self.pos = end;
                }
                None => return,
            }
        }
    }

    fn starts_key(&self) -> bool {
        Quote::opening_at(self.src, self.pos).is_some() || starts_bare_key(self.src, self.pos)
    }

    fn starts_value(&self) -> bool {
        Quote::opening_at(self.src, self.pos).is_some()
            || self
                .src
                .get(self.pos)
                .is_some_and(|&b| matches!(b, b'{' | b'[' | b'-') || b.is_ascii_alphanumeric())
    }

    fn set_slot(&mut self, slot: Slot) {
        if let Some(top) = self.stack.last_mut() {
            top.slot = slot;
        }
    }

    /// Records a comma written (or inserted) at output position `at` in the open container.
    fn comma(&mut self, at: usize) {
        if let Some(top) = self.stack.last_mut() {
            top.slot = Slot::AfterComma;
            top.comma_at = at;
            if top.container == Container::Array {
                top.index += 1;
            }
        }
    }

    /// Inserts the comma missing between two values, just after the first one.
    fn insert_comma(&mut self, value_end: usize) {
        let at = value_end.min(self.out.len());
        self.out.bytes.insert(at, b',');
        self.comma(at);
        self.out.bump(Kind::MissingComma);
    }

    /// Reads one value starting with `b`; returns whether it completed the root value.
    fn value(&mut self, b: u8) -> Result<bool, Stop> {
        let container = match b {
            b'{' => Some(Container::Object),
            b'[' => Some(Container::Array),
            _ => None,
        };
        if let Some(container) = container {
            if self.stack.len() >= MAX_DEPTH {
                return Err(Stop::Invalid);
            }
            if self.stack.len() >= SERDE_DEPTH {
                self.out.needs_parse = true;
            }
            let at = self.out.len();
            self.stack.push(Frame {
                container,
                slot: Slot::Open,
                index: 0,
                key: (at, at),
                comma_at: at,
                value_end: at + 1,
            });
            self.out.push(b);
            self.pos += 1;
            return Ok(false);
        }
        self.pos = if let Some((quote, len)) = Quote::opening_at(self.src, self.pos) {
            copy_string(self.src, self.pos, quote, len, self.lenient, &mut self.out)
                .map_err(|Cut| Stop::Cut(CutKind::InString))?
        } else if b == b'-' || b.is_ascii_digit() {
            copy_number(self.src, self.pos, &mut self.out)?
        } else if b.is_ascii_alphabetic() {
            copy_word(self.src, self.pos, &mut self.out)?
        } else {
            return Err(Stop::Invalid);
        };
        Ok(self.value_done())
    }

    /// Marks the value just written as complete; returns whether it was the root value.
    fn value_done(&mut self) -> bool {
        let end = self.out.len();
        match self.stack.last_mut() {
            Some(top) => {
                self.committed = true;
                top.slot = Slot::AfterValue;
                top.value_end = end;
                false
            }
            None => true,
        }
    }

    /// Reads an object key: a string in any quotes, or a bare identifier.
    fn key(&mut self) -> Result<(), Stop> {
        let start = self.out.len();
        if let Some((quote, len)) = Quote::opening_at(self.src, self.pos) {
            self.pos = copy_string(self.src, self.pos, quote, len, self.lenient, &mut self.out)
                .map_err(|Cut| Stop::Cut(CutKind::InKey))?;
            self.committed = true;
        } else if starts_bare_key(self.src, self.pos) {
            // Stop at ASCII bytes that cannot be in an identifier and at curly quotes, so the
            // key ends on a character boundary and holds no `"`, `\` or control character.
            let mut end = self.pos;
            while let Some(&b) = self.src.get(end) {
                let part = is_word_byte(b)
                    || b == b'-'
                    || (b >= 0x80 && curly_at(self.src, end).is_none());
                if !part {
                    break;
                }
                end += 1;
            }
            if end == self.src.len() {
                return Err(Stop::Cut(CutKind::InKey));
            }
            self.out.push(b'"');
            self.out.extend_from_slice(&self.src[self.pos..end]);
            self.out.push(b'"');
            self.pos = end;
            self.out.bump(Kind::UnquotedKey);
        } else {
            return Err(Stop::Invalid);
        }
        let end = self.out.len();
        if let Some(top) = self.stack.last_mut() {
            top.slot = Slot::AfterKey;
            top.key = (start, end);
        }
        Ok(())
    }

    /// Closes containers at the closing bracket `b`. A bracket that closes an outer container
    /// first closes the inner ones it skips (`{"a": [1}` → `{"a": [1]}`). Returns whether the
    /// root value is complete.
    fn close(&mut self, b: u8) -> Result<bool, Stop> {
        let wanted = if b == b'}' {
            Container::Object
        } else {
            Container::Array
        };
        let Some(skipped) = self.stack.iter().rev().position(|f| f.container == wanted) else {
            return Err(Stop::Invalid);
        };
        if let Some(top) = self.stack.last()
            && top.slot == Slot::AfterComma
            && self.out.bytes.get(top.comma_at) == Some(&b',')
        {
            self.out.bytes.remove(top.comma_at);
            self.out.bump(Kind::TrailingComma);
        }
        for _ in 0..skipped {
            if let Some(frame) = self.stack.pop() {
                self.out.push(frame.container.closer());
                self.out.bump(Kind::UnclosedBracket);
                self.value_done();
            }
        }
        self.stack.pop();
        self.out.push(b);
        self.pos += 1;
        Ok(self.value_done())
    }

    /// At the end of the text: says what was cut, or (`close_at_end`) closes what is open after
    /// a complete value.
    fn at_end(&mut self) -> Result<usize, Stop> {
        let Some(top) = self.stack.last() else {
            return Err(Stop::Invalid);
        };
        let kind = match top.slot {
            Slot::AfterValue if !self.close_at_end => CutKind::AfterValue,
            Slot::AfterValue => {
                let kept = self
                    .out
                    .bytes
                    .iter()
                    .rposition(|&b| !is_whitespace(b))
                    .map_or(0, |i| i + 1);
                self.out.bytes.truncate(kept);
                let mut appended = 0;
                while let Some(frame) = self.stack.pop() {
                    self.out.push(frame.container.closer());
                    appended += 1;
                }
                self.out.tally.add(Kind::UnclosedBracket, appended);
                return Ok(self.src.len());
            }
            Slot::Open => CutKind::AfterOpen,
            Slot::AfterComma => CutKind::AfterComma,
            Slot::AfterKey => CutKind::AfterKey,
            Slot::AfterColon => CutKind::AfterColon,
        };
        Err(Stop::Cut(kind))
    }

    /// What could have stood where the fixer stopped, in words a writer can act on.
    fn expected(&self) -> &'static str {
        let Some(top) = self.stack.last() else {
            return "a JSON object or array";
        };
        if self.stack.len() >= MAX_DEPTH && matches!(self.src.get(self.pos), Some(b'{' | b'[')) {
            return "no deeper nesting (1024 levels at most)";
        }
        match (top.container, top.slot) {
            (Container::Object, Slot::Open) => "a member name in double quotes, or '}'",
            (Container::Object, Slot::AfterComma) => "a member name in double quotes",
            (Container::Object, Slot::AfterKey) => "':' after the member name",
            (Container::Object, Slot::AfterColon) => {
                "the member's value (a string in double quotes, a number, true, false, null, an object or an array)"
            }
            (Container::Object, Slot::AfterValue) => "',' or '}' after the member",
            (Container::Array, Slot::Open) => "an item, or ']'",
            (Container::Array, Slot::AfterComma) => {
                "an item (a string in double quotes, a number, true, false, null, an object or an array)"
            }
            (Container::Array, Slot::AfterValue) => "',' or ']' after the item",
            (Container::Array, Slot::AfterKey | Slot::AfterColon) => "an item",
        }
    }

    /// Describes a cut: the JSON pointer of the member or element being written, in words.
    fn truncation(&self, kind: CutKind) -> Truncation {
        let mut path = String::new();
        let last = self.stack.len().saturating_sub(1);
        for (depth, frame) in self.stack.iter().enumerate() {
            let inner = depth < last;
            let named = match frame.container {
                Container::Object => {
                    inner
                        || matches!(frame.slot, Slot::AfterKey | Slot::AfterColon)
                        || kind == CutKind::AfterValue
                }
                Container::Array => {
                    inner
                        || matches!(
                            kind,
                            CutKind::InString
                                | CutKind::InScalar
                                | CutKind::AfterComma
                                | CutKind::AfterValue
                        )
                }
            };
            if !named {
                continue;
            }
            path.push('/');
            match frame.container {
                Container::Object => push_pointer_token(&mut path, &self.key_text(frame.key)),
                Container::Array => path.push_str(&frame.index.to_string()),
            }
        }
        let at = if path.is_empty() {
            "the root".to_owned()
        } else {
            path.clone()
        };
        let what = match kind {
            CutKind::InString => format!("inside the string at {at}"),
            CutKind::InKey => format!("inside a key of the object at {at}"),
            CutKind::InScalar => format!("inside the value at {at}"),
            CutKind::AfterOpen => format!("right after the opening bracket of {at}"),
            CutKind::AfterComma => format!("after a comma, before the next item at {at}"),
            CutKind::AfterKey => format!("after the key at {at}, before its value"),
            CutKind::AfterColon => format!("after the ':' at {at}, before its value"),
            CutKind::AfterValue => {
                let open = self.stack.len();
                let s = if open == 1 { "" } else { "s" };
                format!("after the value at {at}, with {open} bracket{s} still open")
            }
        };
        Truncation {
            path,
            message: format!("the reply ends {what} (it was cut off)"),
        }
    }

    /// The text of the key written at `range` of the output.
    fn key_text(&self, (start, end): (usize, usize)) -> String {
        let raw = self.out.bytes.get(start..end).unwrap_or_default();
        serde_json::from_slice::<String>(raw).unwrap_or_else(|_| {
            let inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default();
            String::from_utf8_lossy(inner).into_owned()
        })
    }
}

/// Appends `token` to a JSON pointer, escaping `~` as `~0` and `/` as `~1`.
fn push_pointer_token(path: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            _ => path.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(src: &str) -> Fixed {
        let start = src.find(['{', '[']).unwrap_or(0);
        Fixer::fix(src.as_bytes(), start, false, true)
    }

    #[test]
    fn complete_values_end_where_they_end() {
        let fixed = fix(r#"x {"a": [1, 2,], "b": {}} tail"#);
        assert_eq!(fixed.text, r#"{"a": [1, 2], "b": {}}"#);
        assert_eq!(fixed.outcome, Outcome::Complete { end: 25 });
        assert_eq!(fixed.tally.count(Kind::TrailingComma), 1);
    }

    #[test]
    fn mismatched_closers_close_the_skipped_containers() {
        let fixed = fix(r#"{"a": [1, 2}"#);
        assert_eq!(fixed.text, r#"{"a": [1, 2]}"#);
        assert_eq!(fixed.tally.count(Kind::UnclosedBracket), 1);
        let fixed = fix(r#"[{"a": 1,]"#);
        assert_eq!(fixed.text, r#"[{"a": 1}]"#);
        assert_eq!(fixed.tally.count(Kind::TrailingComma), 1);
    }

    #[test]
    fn failures_say_where() {
        let failed = |at, committed, expected| Outcome::Failed {
            at,
            committed,
            expected,
        };
        let fixed = fix("[the answer]");
        assert_eq!(fixed.outcome, failed(1, false, "an item, or ']'"));
        assert_eq!(fixed.text, "[");
        assert_eq!(
            fix("{braces}").outcome,
            failed(7, false, "':' after the member name")
        );
        assert_eq!(
            fix(r#"{"a" 1}"#).outcome,
            failed(5, true, "':' after the member name")
        );
        assert!(matches!(
            fix(r#"{"a": }"#).outcome,
            Outcome::Failed { at: 6, committed: true, expected } if expected.starts_with("the member's value")
        ));
        assert_eq!(
            fix("[1 ; 2]").outcome,
            failed(3, true, "',' or ']' after the item")
        );
        // A bare key is plain JSON only once its `:` follows; an item once it is complete.
        assert!(matches!(
            fix("{see: below}").outcome,
            Outcome::Failed {
                at: 6,
                committed: true,
                ..
            }
        ));
        assert_eq!(
            fix(r#"{"a": ["x"], ["b"]}"#).outcome,
            failed(13, true, "a member name in double quotes")
        );
        assert_eq!(
            fix(r#"{"a": [1]]}"#).outcome,
            failed(9, true, "',' or '}' after the member")
        );
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        let fixed = fix(r#"{"a/b": {"c~d": ["x", "y"#);
        let Outcome::Cut(cut) = fixed.outcome else {
            panic!("not cut: {:?}", fixed.outcome)
        };
        assert_eq!(cut.path, "/a~1b/c~0d/1");
    }
}
