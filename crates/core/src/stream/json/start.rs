//! [`Locate`]: where the JSON value a reply started begins, found incrementally.
//!
//! The value is followed only where the complete check's repair search would take it first:
//!
//! - (a) the reply's first character that is not JSON whitespace (after an optional byte-order
//!   mark) is `{` or `[`: the search's first attempt starts there;
//! - (b) before anything else that could start JSON (a `{` or `[`) or be a fence, the reply
//!   opens a Markdown code fence (three or more backticks or tildes at the start of a line,
//!   an optional info string like `json`, then the line break) and the fence's first
//!   character that is not whitespace is `{` or `[` (also on the opening line: ```` ```{…``` ````):
//!   the search tries the first fence's starts before any other.
//!
//! Anything else — prose with a brace, a fence that is not at the start of its line, a fence
//! holding something else first — is never followed ([`Found::Never`]): the reply may still
//! hold JSON, but not JSON the reader could vouch for.

/// What [`Locate::scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// Not decided yet: read more.
    Pending,
    /// The value starts at this byte (a `{` or `[`).
    At(usize),
    /// The reply starts no value the reader follows.
    Never,
}

/// Where the search is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the text before any fence. `blank`: only whitespace so far (a `{` starts the value);
    /// `line_start`: only spaces and tabs since the last line break (a fence may open).
    Prose { blank: bool, line_start: bool },
    /// A run of `len` backticks or tildes; `line_start` as before it.
    Run {
        ch: u8,
        len: usize,
        line_start: bool,
    },
    /// The info string after a fence's opening run.
    Info,
    /// Spaces and tabs after the info string.
    InfoSpace,
    /// A `\r` ending the opening line: a `\n` must follow.
    Cr,
    /// Inside the fence, before its first character that is not whitespace.
    Content,
}

/// The incremental search for where the value starts. See the module docs.
#[derive(Debug, Clone)]
pub(super) struct Locate {
    pos: usize,
    state: State,
}

impl Locate {
    pub(super) fn new() -> Self {
        Self {
            pos: 0,
            state: State::Prose {
                blank: true,
                line_start: true,
            },
        }
    }

    /// Reads `raw` from where the last call stopped (`raw` only ever grows).
    pub(super) fn scan(&mut self, raw: &str) -> Found {
        let bytes = raw.as_bytes();
        if self.pos == 0 && raw.starts_with('\u{feff}') {
            self.pos = '\u{feff}'.len_utf8();
        }
        while let Some(&b) = bytes.get(self.pos) {
            match self.step(b) {
                Found::Pending => self.pos += 1,
                Found::At(_) => return Found::At(self.pos),
                Found::Never => return Found::Never,
            }
        }
        Found::Pending
    }

    /// Reads one byte; `At` means the value starts at this byte.
    fn step(&mut self, b: u8) -> Found {
        self.state = match self.state {
            State::Prose { blank, line_start } => match b {
                b'{' | b'[' if blank => return Found::At(0),
                b'{' | b'[' => return Found::Never,
                b'\n' | b'\r' => State::Prose {
                    blank,
                    line_start: true,
                },
                b' ' | b'\t' => State::Prose { blank, line_start },
                b'`' | b'~' => State::Run {
                    ch: b,
                    len: 1,
                    line_start,
                },
                _ => State::Prose {
                    blank: false,
                    line_start: false,
                },
            },
            State::Run {
                ch,
                len,
                line_start,
            } if b == ch => State::Run {
                ch,
                len: len + 1,
                line_start,
            },
            State::Run { len, .. } if len < 3 => {
                // Inline code (`x`), not a fence: prose again, this byte included.
                self.state = State::Prose {
                    blank: false,
                    line_start: false,
                };
                return self.step(b);
            }
            State::Run { line_start, .. } => {
                if !line_start {
                    return Found::Never;
                }
                self.state = State::Info;
                return self.step(b);
            }
            State::Info if is_info_byte(b) => State::Info,
            State::Info | State::InfoSpace => match b {
                b' ' | b'\t' => State::InfoSpace,
                b'\n' => State::Content,
                b'\r' => State::Cr,
                b'{' | b'[' => return Found::At(0),
                _ => return Found::Never,
            },
            State::Cr if b == b'\n' => State::Content,
            State::Cr => return Found::Never,
            State::Content => match b {
                b' ' | b'\t' | b'\n' | b'\r' => State::Content,
                b'{' | b'[' => return Found::At(0),
                _ => return Found::Never,
            },
        };
        Found::Pending
    }
}

/// Whether `b` may be in a fence's info string (as the repair's fence reader says).
fn is_info_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.' | b'#')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the value starts in `text` fed in pieces of `step` characters.
    fn start(text: &str, step: usize) -> Found {
        let mut locate = Locate::new();
        let mut raw = String::new();
        let chars: Vec<char> = text.chars().collect();
        let mut found = Found::Pending;
        for piece in chars.chunks(step.max(1)) {
            raw.extend(piece);
            found = locate.scan(&raw);
            if found != Found::Pending {
                break;
            }
        }
        found
    }

    #[test]
    fn the_value_starts_at_the_reply_or_in_its_first_fence() {
        for (text, want) in [
            ("{\"a\": 1}", Found::At(0)),
            ("  \n\t[1]", Found::At(4)),
            ("\u{feff}{}", Found::At(3)),
            ("```json\n{\"a\": 1}\n```", Found::At(8)),
            ("```\n\n  [1]", Found::At(7)),
            ("~~~JSON \r\n{}", Found::At(10)),
            ("Here it is:\n```json\n{\"a\": 1}\n```", Found::At(20)),
            ("Use `code` here.\n  ```json\n{}", Found::At(27)),
            ("```{\"a\": 1}```", Found::At(3)),
            ("```json {}", Found::At(8)),
            ("Sure {not json}", Found::Never),
            ("Sure: [1]", Found::Never),
            ("Here: ```json\n{}\n```", Found::Never),
            ("x```json\n{}", Found::Never),
            ("```python\nprint(1)\n```\n{}", Found::Never),
            ("```json\r{}", Found::Never),
            ("```json please\n{}", Found::Never),
            ("// note\n{}", Found::Never),
            ("\u{a0}{}", Found::Never),
            ("```json\n", Found::Pending),
            ("Here it is", Found::Pending),
            ("``", Found::Pending),
        ] {
            for step in [1, 2, 5, 100] {
                assert_eq!(start(text, step), want, "{text:?} step {step}");
            }
        }
    }
}
