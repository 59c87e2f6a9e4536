//! [`After`]: what the text right after a complete JSON value says about it — nothing, prose,
//! more members of the same document ([`Follow::MoreMembers`]: the value was closed too early),
//! or a second value ([`Follow::SecondValue`]).
//!
//! The whole-reply repair asks once, over the rest of the text; the streaming JSON check asks
//! after each delta, so the reader is an explicit state machine that picks up where it stopped
//! and looks at each byte once. Both read the same bytes the same way, which is what makes the
//! stream's early `parse` abort agree with the complete check.
//!
//! The grammar, after the value: whitespace and stray closing brackets (`}` `]`) are passed
//! over (a closer too many loses nothing); then
//!
//! - `,` followed (after whitespace) by what starts a member or an item — a quote, `{`, `[`, a
//!   digit or `-`, or a bare word and its `:` — is more of the document;
//! - a `"`-string on the same line followed by `:` (a key, its comma forgotten) is too;
//! - `{` or `[` is a second value;
//! - anything else is prose, and a `,` with nothing after it is nothing.
//!
//! Constructs that could span lines (comments, strings over a line break) are read as prose,
//! so the answer never depends on whether the text ends at a closing code fence or goes on.

/// What follows a complete value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// Only whitespace, stray closers (or a lone comma) up to the end of the text.
    End,
    /// Something that does not go on with the JSON: prose, a comment, a fence.
    Prose,
    /// The document goes on from byte `at` (its `,`, or a key written without one).
    MoreMembers { at: usize },
    /// A second value starts at byte `at` (a `{` or `[`).
    SecondValue { at: usize },
}

/// Where the reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// After the value: whitespace and stray closers.
    Lead,
    /// After a `,` at `at`.
    Comma { at: usize },
    /// After the `,` at `at`, `seen` bytes into what may be a curly quote.
    Curly { at: usize, seen: u8 },
    /// In a bare word after the `,` at `at` (a key if a `:` follows).
    Word { at: usize },
    /// Spaces after that word.
    WordSpace { at: usize },
    /// In a `"`-string opened at `at` right after the value; `escape`: after a `\`.
    Key { at: usize, escape: bool },
    /// Spaces after that string.
    KeySpace { at: usize },
}

/// The incremental reader of the text after a value. See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct After {
    /// The next byte to read.
    pos: usize,
    state: State,
}

impl After {
    /// A reader of the text from byte `from` (just after the value's last byte).
    pub(crate) fn new(from: usize) -> Self {
        Self {
            pos: from,
            state: State::Lead,
        }
    }

    /// Reads `src` (it only ever grows between calls) from where the last call stopped.
    /// `None`: not decided yet, and more text may come (`complete` is false); at the end of a
    /// `complete` text the answer is always given.
    pub(crate) fn read(&mut self, src: &[u8], complete: bool) -> Option<Follow> {
        while let Some(&b) = src.get(self.pos) {
            if let Some(follow) = self.step(b) {
                return Some(follow);
            }
            self.pos += 1;
        }
        complete.then_some(match self.state {
            State::Lead | State::Comma { .. } => Follow::End,
            _ => Follow::Prose,
        })
    }

    /// Reads the byte at `self.pos`; `Some` once decided.
    fn step(&mut self, b: u8) -> Option<Follow> {
        let at = self.pos;
        self.state = match self.state {
            State::Lead => match b {
                b' ' | b'\t' | b'\n' | b'\r' | b'}' | b']' => State::Lead,
                b',' => State::Comma { at },
                b'{' | b'[' => return Some(Follow::SecondValue { at }),
                b'"' => State::Key { at, escape: false },
                _ => return Some(Follow::Prose),
            },
            State::Comma { at: comma } => match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.state,
                b'"' | b'\'' | b'{' | b'[' | b'-' | b'0'..=b'9' => {
                    return Some(Follow::MoreMembers { at: comma });
                }
                // The first byte of a curly quote (U+2018..=U+201F is E2 80 98..9F).
                0xE2 => State::Curly { at: comma, seen: 1 },
                _ if is_word_byte(b) => State::Word { at: comma },
                _ => return Some(Follow::Prose),
            },
            State::Curly { at: comma, seen } => match (seen, b) {
                (1, 0x80) => State::Curly { at: comma, seen: 2 },
                (2, 0x98..=0x9F) => return Some(Follow::MoreMembers { at: comma }),
                _ => return Some(Follow::Prose),
            },
            State::Word { at: comma } => match b {
                b':' => return Some(Follow::MoreMembers { at: comma }),
                b' ' | b'\t' => State::WordSpace { at: comma },
                _ if is_word_byte(b) || b == b'-' => self.state,
                _ => return Some(Follow::Prose),
            },
            State::WordSpace { at: comma } => match b {
                b':' => return Some(Follow::MoreMembers { at: comma }),
                b' ' | b'\t' => self.state,
                _ => return Some(Follow::Prose),
            },
            State::Key { at: key, escape } => match b {
                b'\n' | b'\r' => return Some(Follow::Prose),
                b'"' if !escape => State::KeySpace { at: key },
                b'\\' if !escape => State::Key {
                    at: key,
                    escape: true,
                },
                _ => State::Key {
                    at: key,
                    escape: false,
                },
            },
            State::KeySpace { at: key } => match b {
                b':' => return Some(Follow::MoreMembers { at: key }),
                b' ' | b'\t' => self.state,
                _ => return Some(Follow::Prose),
            },
        };
        None
    }
}

/// Whether `b` may be in a bare key (as the fixer reads them).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// What follows the value that ends just before `src[from]`, `src` being the whole text.
pub(crate) fn follow(src: &[u8], from: usize) -> Follow {
    After::new(from).read(src, true).unwrap_or(Follow::End)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(rest: &str) -> Follow {
        follow(rest.as_bytes(), 0)
    }

    #[test]
    fn more_of_the_document_is_told_from_prose() {
        for (rest, want) in [
            ("", Follow::End),
            ("  \n", Follow::End),
            ("}\n]", Follow::End),
            (",", Follow::End),
            (", \n", Follow::End),
            (", \"key2\": 1}", Follow::MoreMembers { at: 0 }),
            ("}, \"key2\": 1}", Follow::MoreMembers { at: 1 }),
            (",\n  [\"b\"]]", Follow::MoreMembers { at: 0 }),
            (", 3]", Follow::MoreMembers { at: 0 }),
            (", -1]", Follow::MoreMembers { at: 0 }),
            (", 'k': 1}", Follow::MoreMembers { at: 0 }),
            (", “k”: 1}", Follow::MoreMembers { at: 0 }),
            (", key2: 1}", Follow::MoreMembers { at: 0 }),
            (", key_2 : 1}", Follow::MoreMembers { at: 0 }),
            (" \"key2\": 1}", Follow::MoreMembers { at: 1 }),
            (" \"k\\\"2\" : 1}", Follow::MoreMembers { at: 1 }),
            ("\n{\"b\": 2}", Follow::SecondValue { at: 1 }),
            ("][1]", Follow::SecondValue { at: 1 }),
            (", as you asked.", Follow::Prose),
            (", but note: x", Follow::Prose),
            (", note", Follow::Prose),
            (", — as asked", Follow::Prose),
            (", ‘k’: 1}", Follow::MoreMembers { at: 0 }),
            ("\nHope this helps.", Follow::Prose),
            (" \"Hope this helps\"", Follow::Prose),
            (" \"Hope\nthis\": 1", Follow::Prose),
            (" // note", Follow::Prose),
            (" /* x */, \"b\": 1", Follow::Prose),
            ("\n```\n, \"b\": 1", Follow::Prose),
            (". Done", Follow::Prose),
            (",\n```", Follow::Prose),
        ] {
            assert_eq!(after(rest), want, "{rest:?}");
        }
    }

    #[test]
    fn the_answer_does_not_depend_on_how_the_text_arrives() {
        let text = "{\"a\": 1}}  , key_two : 2}";
        let whole = follow(text.as_bytes(), 8);
        assert_eq!(whole, Follow::MoreMembers { at: 11 });
        for step in 1..=4 {
            let mut reader = After::new(8);
            let mut got = None;
            let mut end = 8;
            while got.is_none() && end < text.len() {
                end = (end + step).min(text.len());
                got = reader.read(&text.as_bytes()[..end], false);
            }
            assert_eq!(got, Some(whole), "step {step}");
        }
        // Undecided until more comes; decided at the end of a complete text.
        let mut reader = After::new(0);
        assert_eq!(reader.read(b", ke", false), None);
        assert_eq!(reader.read(b", ke", true), Some(Follow::Prose));
    }
}
