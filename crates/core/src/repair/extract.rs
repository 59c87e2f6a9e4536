//! [`Fences`]: the Markdown code fences of a reply, plus the other helpers that locate JSON
//! inside prose: the positions where a value may start ([`Starts`]) and the reading of text
//! that is dropped around it ([`Gap`]).
//!
//! Everything here is one forward scan over bytes, bounded by the caps the caller passes, so a
//! reply of many megabytes costs a few linear passes at most.

use super::RootHint;
use std::ops::Range;

/// A Markdown code fence (```` ``` ```` or `~~~`, with or without an info string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fence {
    /// The whole fence, opening delimiter to closing delimiter (or the end of the text).
    pub(super) span: Range<usize>,
    /// The text between the delimiters.
    pub(super) content: Range<usize>,
    /// The opening delimiter and its info string (```` ```json ````).
    pub(super) opener: Range<usize>,
}

/// Whether `b` may appear in a fence's info string (`json`, `JSON`, `jsonc`, `json5`, …).
fn is_info_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.' | b'#')
}

/// Length of the run of `ch` starting at `src[i]`.
fn run_len(src: &[u8], i: usize, ch: u8) -> usize {
    src.get(i..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| b == ch)
        .count()
}

/// The code fences of a text, in order, found lazily.
///
/// An opening delimiter is three or more backticks or tildes, at the start of a line or after
/// whitespace, followed by an optional info string and then a line break or the end; at the
/// start of a line, also the `{`/`[` of a one-line fence. (Valid JSON holds no raw line break
/// in a string, so no fence is ever found inside valid JSON.) The closing delimiter is a run of
/// the same character, at least as long, that starts its line or ends it. A fence without one
/// runs to the end (a cut-off reply).
#[derive(Debug, Clone)]
pub(super) struct Fences<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Fences<'a> {
    pub(super) fn new(src: &'a [u8]) -> Self {
        Self { src, pos: 0 }
    }
}

impl Iterator for Fences<'_> {
    type Item = Fence;

    fn next(&mut self) -> Option<Fence> {
        let src = self.src;
        loop {
            let offset = src
                .get(self.pos..)?
                .iter()
                .position(|&b| b == b'`' || b == b'~')?;
            let open = self.pos + offset;
            let ch = src[open];
            let len = run_len(src, open, ch);
            self.pos = open + len;
            // A delimiter starts its line, or follows whitespace; "```" inside a word or a
            // quoted string ("x```[") is not one.
            let before = src.get(..open).unwrap_or_default();
            let line_start = before
                .iter()
                .rposition(|&b| b != b' ' && b != b'\t')
                .is_none_or(|k| matches!(before[k], b'\n' | b'\r'));
            let after_space = before.last().is_some_and(u8::is_ascii_whitespace);
            if len < 3 || !(line_start || after_space) {
                continue;
            }
            let mut j = self.pos;
            while src.get(j).is_some_and(|&b| is_info_byte(b)) {
                j += 1;
            }
            let opener = open..j;
            while let Some(b' ' | b'\t') = src.get(j) {
                j += 1;
            }
            // The one-line form (```` ```{"a": 1}``` ````) only where the delimiter starts its
            // line: mid-line, "```{" is more likely text inside a string of the JSON itself.
            let content_start = match src.get(j) {
                None => j,
                Some(b'{' | b'[') if line_start => j,
                Some(b'\n') => j + 1,
                Some(b'\r') if src.get(j + 1) == Some(&b'\n') => j + 2,
                Some(_) => continue,
            };
            let (content_end, end) = find_closer(src, content_start, ch, len);
            self.pos = end;
            return Some(Fence {
                span: open..end,
                content: content_start..content_end,
                opener,
            });
        }
    }
}

/// Finds the delimiter closing a fence of `len` × `ch` whose content starts at `from`; returns
/// where the content ends and where the fence ends.
fn find_closer(src: &[u8], from: usize, ch: u8, len: usize) -> (usize, usize) {
    let mut i = from;
    while let Some(offset) = src
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == ch))
    {
        let at = i + offset;
        let end = at + run_len(src, at, ch);
        if end - at >= len && (starts_line(src, from, at) || rest_of_line_blank(src, end)) {
            return (at, end);
        }
        i = end;
    }
    (src.len(), src.len())
}

/// Whether only spaces and tabs stand between the start of the line and `src[at]`, the
/// content of the fence starting at `from`.
fn starts_line(src: &[u8], from: usize, at: usize) -> bool {
    let before = src.get(from..at).unwrap_or_default();
    match before
        .iter()
        .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
    {
        Some(k) => before[k] == b'\n',
        None => from == 0 || src.get(from - 1) == Some(&b'\n'),
    }
}

fn rest_of_line_blank(src: &[u8], from: usize) -> bool {
    src.get(from..)
        .unwrap_or_default()
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'))
        .is_none_or(|&b| b == b'\n')
}

/// The positions of `{` and `[` in a text where a value may start, in text order, found
/// lazily. With an object or array hint the preferred bracket gets `max` places of its own
/// and the other half as many, so a preferred start far into the text is still tried.
#[derive(Debug, Clone)]
pub(super) struct Starts<'a> {
    src: &'a [u8],
    pos: usize,
    preferred: Option<u8>,
    /// Places left for the preferred bracket (both, without a hint) and for the other one.
    left_preferred: usize,
    left_other: usize,
}

impl<'a> Starts<'a> {
    pub(super) fn new(src: &'a [u8], hint: RootHint, max: usize) -> Self {
        let preferred = match hint {
            RootHint::Any => None,
            RootHint::Object => Some(b'{'),
            RootHint::Array => Some(b'['),
        };
        let left_other = if preferred.is_some() { max / 2 } else { 0 };
        Self {
            src,
            pos: 0,
            preferred,
            left_preferred: max,
            left_other,
        }
    }

    /// Passes over the text before `pos` (text an attempt has read), spending no places on it.
    pub(super) fn skip_to(&mut self, pos: usize) {
        self.pos = self.pos.max(pos);
    }
}

impl Iterator for Starts<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.left_preferred + self.left_other > 0 {
            let offset = self
                .src
                .get(self.pos..)?
                .iter()
                .position(|&b| b == b'{' || b == b'[')?;
            let at = self.pos + offset;
            self.pos = at + 1;
            if self.preferred.is_none_or(|p| p == self.src[at]) {
                if self.left_preferred > 0 {
                    self.left_preferred -= 1;
                    return Some(at);
                }
            } else if self.left_other > 0 {
                self.left_other -= 1;
                return Some(at);
            }
        }
        None
    }
}

/// The end of the comment starting at `src[i]`, if one does: `// …` and `# …` (when `hash`)
/// run to the line break (not included), `/* … */` to its close or the end of the text.
pub(super) fn comment_end(src: &[u8], i: usize, hash: bool) -> Option<usize> {
    let line_end = |from: usize| {
        src.get(from..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
            .map_or(src.len(), |n| from + n)
    };
    match (src.get(i)?, src.get(i + 1)) {
        (b'/', Some(b'/')) => Some(line_end(i + 2)),
        (b'#', _) if hash => Some(line_end(i + 1)),
        (b'/', Some(b'*')) => Some(
            src.get(i + 2..)
                .and_then(|rest| rest.windows(2).position(|w| w == b"*/"))
                .map_or(src.len(), |n| i + 2 + n + 2),
        ),
        _ => None,
    }
}

/// What a stretch of dropped text held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Gap {
    /// `//` and `/* */` comments in it (counted up to the first prose).
    pub(super) comments: u32,
    /// Whether it held anything besides whitespace and comments.
    pub(super) prose: bool,
}

impl Gap {
    /// Reads `src`, text that is dropped around the JSON.
    pub(super) fn of(src: &[u8]) -> Self {
        let mut gap = Self::default();
        let mut i = 0;
        while let Some(&b) = src.get(i) {
            if b.is_ascii_whitespace() {
                i += 1;
            } else if let Some(end) = comment_end(src, i, false) {
                gap.comments += 1;
                i = end;
            } else {
                gap.prose = true;
                break;
            }
        }
        gap
    }
}

/// Where the bracketed text opened at `src[start]` (a `{` or `[`) closes: just after the
/// bracket that balances it, skipping `"`-strings and closers that close nothing; the end of
/// the text when none does. Bounds a broken document found in prose, so that no start inside
/// it is taken for an answer.
pub(super) fn extent(src: &[u8], start: usize) -> usize {
    let mut open: Vec<u8> = Vec::new();
    let mut i = start;
    let mut in_string = false;
    while let Some(&b) = src.get(i) {
        i += 1;
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            // A closer closes the innermost container of its kind and those opened inside it
            // (as the fixer reads `{"a": [1}`); one that closes nothing is passed over.
            b'}' | b']' => {
                if let Some(k) = open.iter().rposition(|&c| c == b) {
                    open.truncate(k);
                    if open.is_empty() {
                        return i;
                    }
                }
            }
            _ => {}
        }
    }
    src.len()
}

/// The position of the first byte that is not JSON whitespace.
pub(super) fn first_token(src: &[u8]) -> Option<usize> {
    src.iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(src: &str) -> Vec<&str> {
        Fences::new(src.as_bytes())
            .map(|f| &src[f.content])
            .collect()
    }

    #[test]
    fn fences_are_found_with_any_tag_closed_or_not() {
        assert_eq!(contents("```json\n{\"a\":1}\n```"), ["{\"a\":1}\n"]);
        assert_eq!(contents("x ```JSON\r\n[1]\r\n``` y"), ["[1]\r\n"]);
        assert_eq!(
            contents("~~~\n{}\n~~~\nand\n```\n[]\n```"),
            ["{}\n", "[]\n"]
        );
        assert_eq!(
            contents("````json\n{\"s\":\"```\"}\n````"),
            ["{\"s\":\"```\"}\n"]
        );
        assert_eq!(contents("```json\n{\"a\": \"cut"), ["{\"a\": \"cut"]);
        assert_eq!(contents("```{\"a\":1}```"), ["{\"a\":1}"]);
        assert_eq!(contents("x\n  ```[1]```"), ["[1]"]);
        assert_eq!(contents("{\"s\": \" ```{\"}"), Vec::<&str>::new());
        assert_eq!(contents("Here: ```json\n{}\n```"), ["{}\n"]);
        assert_eq!(contents("use ```code``` inline"), Vec::<&str>::new());
        assert_eq!(contents("``"), Vec::<&str>::new());
        assert_eq!(contents("{\"a\":\"```[\"}"), Vec::<&str>::new());
        assert_eq!(contents("```"), [""]);
        let fence = Fences::new(b"Sure:\n~~~JSON \n{}\n~~~").next();
        assert_eq!(fence.map(|f| f.opener), Some(6..13));
    }

    #[test]
    fn candidates_follow_the_hint() {
        let src = b"[a] {b} [c] {d}";
        let starts = |hint, max| Starts::new(src, hint, max).collect::<Vec<_>>();
        assert_eq!(starts(RootHint::Any, 16), [0, 4, 8, 12]);
        assert_eq!(starts(RootHint::Any, 2), [0, 4]);
        assert_eq!(starts(RootHint::Object, 2), [0, 4, 12]);
        assert_eq!(starts(RootHint::Array, 2), [0, 4, 8]);
        assert_eq!(starts(RootHint::Object, 0), Vec::<usize>::new());
        let mut skipping = Starts::new(src, RootHint::Any, 2);
        skipping.skip_to(5);
        assert_eq!(skipping.collect::<Vec<_>>(), [8, 12]);
    }

    #[test]
    fn gaps_tell_comments_from_prose() {
        assert_eq!(
            Gap::of(b" \n\t"),
            Gap {
                comments: 0,
                prose: false
            }
        );
        assert_eq!(
            Gap::of(b"// a\n/* b */ "),
            Gap {
                comments: 2,
                prose: false
            }
        );
        assert_eq!(
            Gap::of(b"/* open"),
            Gap {
                comments: 1,
                prose: false
            }
        );
        assert_eq!(
            Gap::of(b"Sure! // x"),
            Gap {
                comments: 0,
                prose: true
            }
        );
        assert_eq!(
            Gap::of(b"# Heading"),
            Gap {
                comments: 0,
                prose: true
            }
        );
        assert_eq!(comment_end(b"# x\ny", 0, true), Some(3));
        assert_eq!(extent(b"x {\"a\": [1}, \"b}\": 2} y", 2), 11);
        assert_eq!(extent(b"{\"a\": [1]], \"b\": [2]} y", 0), 21);
        assert_eq!(extent(b"[1, [2]", 0), 7);
        assert_eq!(extent(b"{\"a\": \"\\\"}\"} z", 0), 12);
        assert_eq!(first_token(b" \r\n x"), Some(4));
        assert_eq!(first_token(b"  "), None);
    }
}
