//! The layout [`TextStream`](super::TextStream) keeps of the open segment: its blocks (where
//! held-back text starts) and the run of option lines in progress (whose end may end the
//! segment).

use crate::cards::lines::{Family, Kind, Marker};
use crate::cards::{MAX_OPTIONS, MIN_OPTIONS};

/// What the current line holds so far.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Line {
    /// Something other than whitespace.
    pub content: bool,
    pub colon: bool,
    pub question: bool,
}

/// A block: lines between blank lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    start: usize,
    /// Its last complete line has a colon (it may be a `Question:` label).
    colon: bool,
}

/// The blocks of the open segment, as far as holding back goes.
///
/// A card starts at its question's sentence, or at the sentence before it in its paragraph
/// (a rationale), or at a bare `Question:` label in the paragraph just above (only blank lines
/// between). So a card starts in the block of a line holding a `?`, or in the block before that
/// one when that block's last line has a colon. Once a block holds a `?`, the hold is fixed there.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Blocks {
    /// The last block, and whether a line of it may still come.
    last: Option<Block>,
    open: bool,
    /// The block before the last one.
    before: Option<Block>,
    /// Where text is held from, since a block got a `?`.
    fixed: Option<usize>,
}

impl Blocks {
    /// A line with content starts at `start`: it opens a block unless one is open.
    pub fn open(&mut self, start: usize) {
        if !self.open {
            self.before = self.last.take();
            self.last = Some(Block {
                start,
                colon: false,
            });
            self.open = true;
        }
    }

    /// A line of the open block is complete.
    pub fn line_done(&mut self, colon: bool) {
        if let (true, Some(block)) = (self.open, self.last.as_mut()) {
            block.colon = colon;
        }
    }

    /// A blank line: the open block ends.
    pub fn blank(&mut self) {
        self.open = false;
    }

    /// The open block holds a `?`.
    pub fn question(&mut self) {
        if self.fixed.is_none() {
            self.fixed = Some(self.open_start());
        }
    }

    /// Where held-back text starts (`end`: the end of the text so far).
    pub fn hold(&self, end: usize) -> usize {
        if let Some(fixed) = self.fixed {
            return fixed;
        }
        match self.last {
            Some(_) if self.open => self.open_start(),
            Some(last) if last.colon => last.start,
            _ => end,
        }
    }

    /// Where a card with its question in the open block may start.
    fn open_start(&self) -> usize {
        match (self.before, self.last) {
            (Some(before), _) if before.colon => before.start,
            (_, Some(last)) => last.start,
            (Some(before), None) => before.start,
            (None, None) => 0,
        }
    }
}

/// The run of option lines in progress, read line by line as `cards` reads option groups: lines
/// of one family (`A`, `a` or `1`) counting up from the first, with blank lines and indented
/// continuation lines between.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct OptionRun(Option<Run>);

#[derive(Debug, Clone, Copy)]
struct Run {
    family: Family,
    indent: usize,
    count: usize,
    broken: bool,
    expected: u32,
}

impl OptionRun {
    /// Takes a complete line outside code (`indent`: its leading whitespace in bytes). True when
    /// the line ended a run that is a valid option group (2–6 options in sequence).
    pub fn next(&mut self, kind: Kind, marker: Option<Marker>, indent: usize) -> bool {
        let mut ended_group = false;
        if let Some(run) = self.0.as_mut() {
            match (kind, marker) {
                (Kind::Blank, _) => return false,
                (Kind::Text, Some(m)) if m.family == run.family && m.value != 1 => {
                    run.broken |= m.value != run.expected;
                    run.expected = m.value.saturating_add(1);
                    run.count += 1;
                    return false;
                }
                (Kind::Text, None) if indent > run.indent => return false,
                _ => {
                    ended_group = !run.broken && (MIN_OPTIONS..=MAX_OPTIONS).contains(&run.count);
                    self.0 = None;
                }
            }
        }
        if let (Kind::Text, Some(m)) = (kind, marker) {
            self.0 = Some(Run {
                family: m.family,
                indent: m.indent,
                count: 1,
                broken: m.value != 1,
                expected: m.value.saturating_add(1),
            });
        }
        ended_group
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::lines::classify;

    #[test]
    fn held_text_starts_at_the_question_block_or_its_label_block() {
        // (lines, where the hold is) — each line complete; "" is a blank line.
        let cases: &[(&[&str], usize)] = &[
            (&["Intro."], 0),
            (&["Intro.", ""], 8),
            (&["Intro:", ""], 0),
            (&["Intro.", "", "Which one?"], 8),
            (&["Intro.", "", "Question:", "", "Which one?"], 8),
            (&["Which one?", "", "More.", "", "Still."], 0),
            (&["A.", "", "B.", "", "C?"], 8),
        ];
        for (lines, want) in cases {
            let mut blocks = Blocks::default();
            let mut at = 0;
            for line in *lines {
                if line.is_empty() {
                    blocks.blank();
                } else {
                    blocks.open(at);
                    if line.contains('?') {
                        blocks.question();
                    }
                    blocks.line_done(line.contains(':'));
                }
                at += line.len() + 1;
            }
            assert_eq!(blocks.hold(at), *want, "{lines:?}");
        }
    }

    #[test]
    fn a_valid_group_ends_at_the_first_line_not_in_it() {
        // (lines, index of the line that ends a valid group)
        let cases: &[(&[&str], Option<usize>)] = &[
            (&["A) x", "B) y", "After."], Some(2)),
            (&["A) x", "", "B) y", "", "After."], Some(4)),
            (&["A) x", "   more", "B) y", "  more", "After."], Some(4)),
            (&["A) x", "C) y", "After."], None),
            (&["B) x", "C) y", "After."], None),
            (&["A) x", "After."], None),
            (&["1. a", "2. b", "1. c", "2. d", "End."], Some(2)),
            (&["A) x", "B) y", "1. a", "2. b", "End."], Some(2)),
            (
                &[
                    "1. a", "2. b", "3. c", "4. d", "5. e", "6. f", "7. g", "End.",
                ],
                None,
            ),
            (&["A) x", "B) y", "# Heading"], Some(2)),
        ];
        for (lines, want) in cases {
            let mut run = OptionRun::default();
            let mut in_code = false;
            let mut first = None;
            for (i, line) in lines.iter().enumerate() {
                let (kind, marker) = classify(line, &mut in_code);
                let indent = line.len() - line.trim_start().len();
                if run.next(kind, marker, indent) && first.is_none() {
                    first = Some(i);
                }
            }
            assert_eq!(first, *want, "{lines:?}");
        }
    }
}
