//! Text mode of the marker scan ([`super::MarkerStream`]): where a marker section may start,
//! and the marker itself.
//!
//! A marker is a whole word equal to a marker name, preceded by up to two `*` (not glued to a
//! word) and, when the line so far is only `#`s and spaces, a Markdown heading; then up to two
//! `*`, spaces or tabs, a colon and up to two `*` (as `markers::find` reads it). The scan
//! keeps, per byte, the shape of the current line and the word being read, so where a
//! section would start is known without looking back more than two bytes.

use super::{Mode, Scan, is_word};

/// The shape of the current line so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Start,
    /// `#`s (count, capped).
    Hashes(u8),
    /// `#`s then spaces.
    HashSpaces(u8),
    /// Backticks at the line start (1 or 2).
    Ticks(u8),
    /// ```` ``` ```` at the line start and no backtick after it.
    FenceLine,
    Other,
}

/// The current line.
#[derive(Debug, Clone, Copy)]
pub(super) struct LineShape {
    start: usize,
    shape: Shape,
    /// Where the line's heading prefix (`#` to `######`, then spaces) ends.
    heading_end: Option<usize>,
}

impl LineShape {
    pub(super) fn at(start: usize) -> Self {
        Self {
            start,
            shape: Shape::Start,
            heading_end: None,
        }
    }

    /// After a section the rest of the line is neither a heading nor a fence line.
    pub(super) fn after_section(&mut self) {
        self.shape = Shape::Other;
        self.heading_end = None;
    }
}

/// A line starting with ```` ``` ```` (no other backtick) that a section may follow: the
/// complete reader then cuts it out with the section, when a closing fence follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fence {
    pub start: usize,
    /// The line has not ended yet (a section may start anywhere in it).
    pub in_line: bool,
    /// The first non-whitespace byte after the line: the section must start exactly there.
    pub first: Option<usize>,
}

/// The word being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Word {
    /// Not in a word.
    Between,
    /// In a word that is no marker name.
    Dead,
    /// In a word that is a prefix of a name (see `Scan::alive`); its section would
    /// start at `section`.
    Live { start: usize, section: usize },
}

/// After a marker name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Header {
    /// This many `*` after the name.
    AfterName(u8),
    /// Spaces or tabs before the colon.
    Spaces,
    /// The colon, then this many `*`.
    Colon(u8),
}

impl Scan {
    /// Scans text until a marker name ends (then `Header` mode) or the bytes run out.
    pub(super) fn text(&mut self, raw: &str) -> bool {
        let bytes = raw.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            let i = self.pos;
            match self.word {
                Word::Live { start, section } => {
                    if is_word(b) {
                        let k = i - start;
                        let names = &self.names;
                        self.alive.retain(|&n| {
                            names.get(n).and_then(|name| name.as_bytes().get(k)) == Some(&b)
                        });
                        if self.alive.is_empty() {
                            self.word = Word::Dead;
                        }
                    } else {
                        self.word = Word::Between;
                        let len = i - start;
                        let names = &self.names;
                        let whole = self
                            .alive
                            .iter()
                            .copied()
                            .find(|&n| names.get(n).is_some_and(|name| name.len() == len));
                        if let Some(marker) = whole {
                            self.mode = Mode::Header {
                                start: section,
                                marker,
                                state: Header::AfterName(0),
                            };
                            return true;
                        }
                    }
                }
                Word::Between if is_word(b) => self.start_word(bytes, i),
                Word::Dead if is_word(b) => {}
                Word::Between | Word::Dead => self.word = Word::Between,
            }
            self.step(raw, i);
            self.pos = i + 1;
        }
        false
    }

    /// A word starts at `at`.
    fn start_word(&mut self, bytes: &[u8], at: usize) {
        let Some(&first) = bytes.get(at) else {
            return;
        };
        self.alive.clear();
        let names = &self.names;
        self.alive
            .extend((0..names.len()).filter(|&n| names[n].as_bytes().first() == Some(&first)));
        self.word = match self.section_start(bytes, at) {
            Some(section) if !self.alive.is_empty() => Word::Live { start: at, section },
            _ => Word::Dead,
        };
    }

    /// Where the section of a marker name starting at `at` starts (its `*`s, a heading), or
    /// `None` when the name cannot be a marker there (glued to a word).
    fn section_start(&self, bytes: &[u8], at: usize) -> Option<usize> {
        let base = self.base();
        let mut start = at;
        while start > base && bytes.get(start - 1) == Some(&b'*') && at - start < 2 {
            start -= 1;
        }
        if start > base && bytes.get(start - 1).copied().is_some_and(is_word) {
            return None;
        }
        let start = if self.line.heading_end == Some(start) {
            self.line.start
        } else {
            start
        };
        Some(start.max(self.prev_end))
    }

    /// Where a section that is not settled yet may start, before `pos`: the current word's, or
    /// that of a name the next bytes may begin — after trailing `*`s (the last two of them:
    /// glued to a word now, they may not be once more `*`s follow) or a heading prefix.
    fn open_start(&self, bytes: &[u8], pos: usize) -> Option<usize> {
        match self.word {
            Word::Live { section, .. } => Some(section),
            Word::Dead => None,
            Word::Between => {
                let base = self.base();
                let mut stars = pos;
                while stars > base && bytes.get(stars - 1) == Some(&b'*') && pos - stars < 2 {
                    stars -= 1;
                }
                let start = if stars < pos {
                    let start = if self.line.heading_end == Some(stars) {
                        self.line.start
                    } else {
                        stars
                    };
                    start.max(self.prev_end)
                } else {
                    self.section_start(bytes, pos)?
                };
                Some(start).filter(|&s| s < pos)
            }
        }
    }

    /// Up to where text can be released now.
    pub(super) fn hold(&self, raw: &str) -> usize {
        let bytes = raw.as_bytes();
        let fence = self.fence.map_or(usize::MAX, |f| f.start);
        let hold = match self.mode {
            Mode::Text => {
                let mut hold = self.pos.min(fence);
                if let Some(start) = self.open_start(bytes, self.pos) {
                    hold = hold.min(start);
                }
                if let Shape::Ticks(_) = self.line.shape {
                    hold = hold.min(self.line.start);
                }
                hold
            }
            Mode::Header { start, .. } => start.min(fence),
            _ => self.sent,
        };
        hold.max(self.sent)
    }

    /// Byte `i` of text: the line's shape, and the fence line a section may follow.
    fn step(&mut self, raw: &str, i: usize) {
        let bytes = raw.as_bytes();
        let Some(&b) = bytes.get(i) else {
            return;
        };
        if b == b'\n' {
            self.line = LineShape::at(i + 1);
            if let Some(fence) = &mut self.fence {
                fence.in_line = false;
            }
            return;
        }
        let before = self.line.shape;
        let shape = match (before, b) {
            (Shape::Start, b'#') => Shape::Hashes(1),
            (Shape::Start, b'`') => Shape::Ticks(1),
            (Shape::Hashes(n), b'#') => Shape::Hashes(n.saturating_add(1)),
            (Shape::Hashes(n) | Shape::HashSpaces(n), b' ') => Shape::HashSpaces(n),
            (Shape::Ticks(1), b'`') => Shape::Ticks(2),
            (Shape::Ticks(2), b'`') => Shape::FenceLine,
            (Shape::FenceLine, b) if b != b'`' => Shape::FenceLine,
            _ => Shape::Other,
        };
        self.line.shape = shape;
        if let Shape::Hashes(1..=6) | Shape::HashSpaces(1..=6) = shape {
            self.line.heading_end = Some(i + 1);
        }
        match (before, shape) {
            (Shape::Ticks(2), Shape::FenceLine) => {
                self.fence = Some(Fence {
                    start: self.line.start,
                    in_line: true,
                    first: None,
                });
                return;
            }
            (Shape::FenceLine, Shape::Other) => {
                // A backtick after the opening ones: not a fence the reader would cut.
                if self.fence.is_some_and(|f| f.in_line) {
                    self.fence = None;
                }
                return;
            }
            _ => {}
        }
        let Some(fence) = self.fence else {
            return;
        };
        if fence.in_line {
            return;
        }
        let first = match fence.first {
            Some(first) => first,
            None if starts_text(raw, i) => {
                self.fence = Some(Fence {
                    first: Some(i),
                    ..fence
                });
                i
            }
            None => return,
        };
        // After the fence line only whitespace, then the start of a section, may come.
        if self.open_start(bytes, i + 1) != Some(first) {
            self.fence = None;
        }
    }

    /// After a marker name: its `*`s, spaces and colon. The colon settles the section; the
    /// `*`s after it belong to it.
    pub(super) fn header(&mut self, raw: &str, eof: bool) -> bool {
        let Mode::Header {
            start,
            marker,
            mut state,
        } = self.mode
        else {
            return false;
        };
        let bytes = raw.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            state = match (state, b) {
                (Header::AfterName(n), b'*') if n < 2 => Header::AfterName(n + 1),
                (Header::AfterName(_) | Header::Spaces, b' ' | b'\t') => Header::Spaces,
                (Header::AfterName(_) | Header::Spaces, b':') => {
                    self.settle(raw, start);
                    Header::Colon(0)
                }
                (Header::Colon(n), b'*') if n < 2 => Header::Colon(n + 1),
                (Header::Colon(_), _) => return self.open_body(start, marker),
                // Not a marker: the byte is text again.
                _ => {
                    self.mode = Mode::Text;
                    return true;
                }
            };
            self.pos += 1;
            if state == Header::Colon(2) {
                return self.open_body(start, marker);
            }
        }
        if eof {
            if let Header::Colon(_) = state {
                return self.open_body(start, marker);
            }
            self.mode = Mode::Text;
            return true;
        }
        self.mode = Mode::Header {
            start,
            marker,
            state,
        };
        false
    }

    /// The section starting at `start` is certain: the text before it is released, except a
    /// fence line the section may be cut out with.
    fn settle(&mut self, raw: &str, start: usize) {
        let keep = self
            .fence
            .is_some_and(|f| f.in_line || f.first == Some(start));
        if !keep {
            self.fence = None;
        }
        let upto = self.fence.map_or(start, |f| f.start);
        self.send(raw, upto);
    }

    fn open_body(&mut self, start: usize, marker: usize) -> bool {
        self.mode = Mode::Body {
            start,
            marker,
            after: self.pos,
            state: super::section::Lead::Space,
        };
        true
    }
}

/// Whether a non-whitespace character starts at byte `i` (continuation bytes start none).
fn starts_text(raw: &str, i: usize) -> bool {
    match raw.as_bytes().get(i) {
        Some(&b) if b < 0x80 => !char::from(b).is_whitespace(),
        Some(&b) if b >= 0xC0 => raw
            .get(i..)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| !c.is_whitespace()),
        _ => false,
    }
}
