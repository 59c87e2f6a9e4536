//! [`Doc`]: a reply laid out for card detection — its [`Line`]s, the option [`Group`]s (runs of
//! 2–6 list lines lettered A, B, C… or numbered 1, 2, 3… in sequence), and the prose around
//! them as [`Para`]graphs of [`Sentence`]s.

use super::lines::{self, Family, Kind, Line};
use super::sentences::{self, Sentence};
use super::{MAX_OPTIONS, MIN_OPTIONS};
use std::ops::Range;

/// A run of option lines that can be a card's options.
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub first_line: usize,
    pub family: Family,
    /// Each option's text after its marker, and its indented continuation lines.
    pub options: Vec<(String, String)>,
    /// Byte offset just after the last option's text.
    pub end: usize,
}

/// A paragraph of prose (a heading is a paragraph of its own).
#[derive(Debug, Clone)]
pub(super) struct Para {
    pub heading: bool,
    pub sentences: Range<usize>,
    /// Only blank lines separate it from the paragraph before.
    pub adjacent_prev: bool,
}

/// The reply, laid out.
#[derive(Debug)]
pub(super) struct Doc<'a> {
    pub text: &'a str,
    pub lines: Vec<Line<'a>>,
    pub groups: Vec<Group>,
    pub paras: Vec<Para>,
    pub sentences: Vec<Sentence>,
    /// The paragraph each line belongs to (`None`: blank, code, break or option group).
    pub para_of_line: Vec<Option<usize>>,
}

impl<'a> Doc<'a> {
    pub fn new(text: &'a str) -> Self {
        let lines = lines::split(text);
        let (groups, in_group) = groups(&lines);
        let mut doc = Doc {
            text,
            para_of_line: vec![None; lines.len()],
            lines,
            groups,
            paras: Vec::new(),
            sentences: Vec::new(),
        };
        doc.paragraphs(&in_group);
        doc
    }

    fn paragraphs(&mut self, in_group: &[bool]) {
        let mut i = 0;
        let mut prev_last: Option<usize> = None;
        while i < self.lines.len() {
            let line = &self.lines[i];
            let prose = matches!(line.kind, Kind::Text | Kind::Heading) && !in_group[i];
            if !prose {
                i += 1;
                continue;
            }
            let first = i;
            let mut last = i;
            if line.kind == Kind::Text {
                while self
                    .lines
                    .get(last + 1)
                    .is_some_and(|l| l.kind == Kind::Text)
                    && !in_group[last + 1]
                {
                    last += 1;
                }
            }
            let adjacent_prev = prev_last.is_some_and(|p| {
                self.lines[p + 1..first]
                    .iter()
                    .all(|l| l.kind == Kind::Blank)
            });
            let index = self.paras.len();
            let start = self.sentences.len();
            sentences::split(
                self.text,
                &self.lines[first..=last],
                index,
                &mut self.sentences,
            );
            self.paras.push(Para {
                heading: line.kind == Kind::Heading,
                sentences: start..self.sentences.len(),
                adjacent_prev,
            });
            for slot in &mut self.para_of_line[first..=last] {
                *slot = Some(index);
            }
            prev_last = Some(last);
            i = last + 1;
        }
    }

    /// The paragraph that ends right before line `line` with only blank lines between.
    pub fn para_before_line(&self, line: usize) -> Option<usize> {
        let mut at = line;
        loop {
            at = at.checked_sub(1)?;
            let before = self.lines.get(at)?;
            if before.kind != Kind::Blank {
                return self.para_of_line.get(at).copied().flatten();
            }
        }
    }
}

/// The option groups of `lines`, and which lines they cover. A run of list lines of one family
/// is a group when it starts at A / 1, counts up by one (blank lines and indented continuation
/// lines may come between) and has 2–6 items; a run that skips or repeats a value is not.
fn groups(lines: &[Line<'_>]) -> (Vec<Group>, Vec<bool>) {
    let mut groups = Vec::new();
    let mut in_group = vec![false; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let Some(first) = lines[i].marker else {
            i += 1;
            continue;
        };
        let mut options = vec![(head(&lines[i]), String::new())];
        let mut broken = first.value != 1;
        let mut expected = first.value + 1;
        let mut last = i;
        let mut j = i + 1;
        while let Some(line) = lines.get(j) {
            match (line.kind, line.marker) {
                (Kind::Blank, _) => {}
                (Kind::Text, Some(m)) if m.family == first.family && m.value != 1 => {
                    broken |= m.value != expected;
                    expected = m.value + 1;
                    options.push((head(line), String::new()));
                    last = j;
                }
                (Kind::Text, None) if line.indent() > first.indent => {
                    if let Some((_, continuation)) = options.last_mut() {
                        continuation.push(' ');
                        continuation.push_str(line.text.trim());
                    }
                    last = j;
                }
                _ => break,
            }
            j += 1;
        }
        if !broken && (MIN_OPTIONS..=MAX_OPTIONS).contains(&options.len()) {
            for flag in &mut in_group[i..=last] {
                *flag = true;
            }
            groups.push(Group {
                first_line: i,
                family: first.family,
                options,
                end: lines[last].end(),
            });
        }
        i = last + 1;
    }
    (groups, in_group)
}

/// An option line's text after its marker, with a bold opened before the marker put back.
fn head(line: &Line<'_>) -> String {
    match line.marker {
        Some(m) if m.bold_open => format!("**{}", &line.text[m.text_at..]),
        Some(m) => line.text[m.text_at..].to_owned(),
        None => line.text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<Vec<String>> {
        Doc::new(text)
            .groups
            .iter()
            .map(|g| g.options.iter().map(|o| o.0.clone()).collect())
            .collect()
    }

    #[test]
    fn groups_need_a_sequence() {
        assert_eq!(labels("A) x\nB) y"), [["x", "y"]]);
        assert_eq!(labels("A) x\n\nB) y\n\nC) z"), [["x", "y", "z"]]);
        assert!(labels("A) x\nC) y").is_empty(), "skips a letter");
        assert!(labels("B) x\nC) y").is_empty(), "does not start at A");
        assert!(labels("A) x").is_empty(), "one option");
        assert!(
            labels("1. a\n2. b\n3. c\n4. d\n5. e\n6. f\n7. g").is_empty(),
            "seven"
        );
        assert_eq!(labels("1. a\n2. b\n1. c\n2. d"), [["a", "b"], ["c", "d"]]);
        assert!(labels("1. a\n2. b\n2. c").is_empty(), "repeats a number");
        assert_eq!(
            labels("A) x\n1. y\n2. z"),
            [["y", "z"]],
            "a family change ends a run"
        );
        assert_eq!(labels("**A) x** — d\n**B)** y"), [["**x** — d", "y"]]);
    }

    #[test]
    fn continuation_lines_and_paragraphs() {
        let doc = Doc::new("Intro line\nstill intro.\n\n1. a\n   more about a\n2. b\nAfter.");
        assert_eq!(doc.groups.len(), 1);
        assert_eq!(doc.groups[0].options[0].1, " more about a");
        assert_eq!(doc.paras.len(), 2);
        assert_eq!(doc.para_before_line(doc.groups[0].first_line), Some(0));
        assert!(!doc.paras[1].adjacent_prev, "a group lies between");
        let doc = Doc::new("```\nA) x\nB) y\n```");
        assert!(doc.groups.is_empty());
        assert!(doc.paras.is_empty());
    }
}
