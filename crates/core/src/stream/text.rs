//! [`TextStream`]: a `text` reply as it streams in.
//!
//! Without question cards (no `[cards]` in the contract, or a context `mode` other than
//! `discovery` / `clarification`) the text passes straight through (a leading byte-order mark
//! dropped, as `text::read` drops it).
//!
//! With cards, text that may still become part of a card — from a question (or the rationale
//! or `Question:` label before it) through its options, as [`crate::cards::detect`] cuts them
//! out — is held back. The reply is read line by line and cut into **segments** at lines no
//! card can reach across:
//!
//! - a code fence or thematic break line (no card contains one, and detection never walks
//!   across one); code inside a fence is released as it comes — it is never part of a card;
//! - the line that ends a run of option lines that is a valid option group (2–6 options in
//!   sequence): a card's walk back from later options cannot cross a group into the text
//!   before it, and the group's own card (if any) is complete.
//!
//! A finished segment is final: detection on it alone ([`crate::cards::spans`]) finds exactly
//! the cards the whole reply has there, so its text without those cards is released. Inside the
//! open segment, text is released by blocks (lines between blank lines — a question's card
//! starts in the question's block, or in the block just before it when that block's last line
//! may be a `Question:` label, i.e. has a colon): everything before the first block holding a
//! `?` (or before that block's label block) is released; before any `?`, everything but the
//! last block (and a label block before it). From the first `?` on, the rest of the segment is
//! held until the segment ends — at the latest at the end of the reply ([`TextStream::finish`]),
//! which releases what the cards did not take.
//!
//! Work is linear: every byte is looked at once by the line scan, and each segment is run
//! through detection once.

mod layout;

use super::Emit;
use super::out::Out;
use crate::cards::lines::{Kind, classify};
use crate::cards::{Category, spans};
use crate::context::Context;
use crate::contract::{Checked, Contract};
use crate::text::MODE_KEY;
use layout::{Blocks, Line, OptionRun};

/// The text stream of one attempt. See the module docs.
#[derive(Debug)]
pub(super) struct TextStream {
    /// Question cards are detected in this reply.
    cards: bool,
    /// Where the text starts (after a byte-order mark), once the first bytes are in.
    base: Option<usize>,
    /// `raw[..released]` is settled: emitted, or cut out as a card.
    released: usize,
    /// Where the current (incomplete) line starts, and how far it has been looked at.
    line_start: usize,
    scanned: usize,
    /// The current line is inside a code fence.
    in_code: bool,
    /// Where the open segment starts.
    segment: usize,
    blocks: Blocks,
    run: OptionRun,
    line: Line,
    out: Out,
}

impl TextStream {
    pub(super) fn new(contract: &Contract, context: &Context) -> Self {
        let cards = contract.cards().is_some()
            && context
                .get(MODE_KEY)
                .and_then(Category::from_mode)
                .is_some();
        Self {
            cards,
            base: None,
            released: 0,
            line_start: 0,
            scanned: 0,
            in_code: false,
            segment: 0,
            blocks: Blocks::default(),
            run: OptionRun::default(),
            line: Line::default(),
            out: Out::default(),
        }
    }

    /// Takes the reply so far (`raw`; the new delta starts at `from`) and emits what may go.
    pub(super) fn feed(&mut self, raw: &str, from: usize, out: &mut Vec<Emit>) {
        let Some(base) = self.begin(raw) else {
            return;
        };
        if !self.cards {
            if let Some(delta) = raw.get(from.max(base)..).filter(|d| !d.is_empty()) {
                out.push(Emit::Text(delta.to_owned()));
            }
            return;
        }
        self.scan(raw);
        let hold = if self.in_code {
            raw.len()
        } else {
            self.blocks.hold(raw.len())
        };
        self.release(raw, hold);
        self.out.emit(out);
    }

    /// The reply is complete: releases the rest of the text without the cards detected in it.
    pub(super) fn finish(&mut self, raw: &str, _checked: &Checked, out: &mut Vec<Emit>) {
        if !self.cards || self.begin(raw).is_none() {
            return;
        }
        self.scan(raw);
        if self.in_code {
            self.release(raw, raw.len());
        } else {
            self.finalise(raw, raw.len());
        }
        self.out.finish(out);
    }

    /// Where the text starts, once there are bytes.
    fn begin(&mut self, raw: &str) -> Option<usize> {
        if let Some(base) = self.base {
            return Some(base);
        }
        if raw.is_empty() {
            return None;
        }
        let base = if raw.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        self.base = Some(base);
        self.released = base;
        self.line_start = base;
        self.scanned = base;
        self.segment = base;
        Some(base)
    }

    /// Reads the bytes not looked at yet, line by line.
    fn scan(&mut self, raw: &str) {
        let bytes = raw.as_bytes();
        loop {
            let newline = bytes
                .get(self.scanned..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|k| self.scanned + k);
            let upto = newline.unwrap_or(bytes.len());
            if !self.in_code
                && let Some(part) = raw.get(self.scanned..upto)
            {
                self.look(part);
            }
            self.scanned = upto;
            let Some(newline) = newline else {
                return;
            };
            self.end_line(raw, newline);
            self.line_start = newline + 1;
            self.scanned = newline + 1;
            self.line = Line::default();
        }
    }

    /// New bytes of the current line (outside code).
    fn look(&mut self, part: &str) {
        if !self.line.content && part.contains(|c: char| !c.is_whitespace()) {
            self.line.content = true;
            self.blocks.open(self.line_start);
        }
        if part.contains(':') {
            self.line.colon = true;
        }
        if part.contains('?') {
            self.line.question = true;
            self.blocks.question();
        }
    }

    /// The line ending at the `\n` at `newline` is complete.
    fn end_line(&mut self, raw: &str, newline: usize) {
        let body = raw.get(self.line_start..newline).unwrap_or_default();
        let body = body.strip_suffix('\r').unwrap_or(body);
        if self.in_code {
            classify(body, &mut self.in_code);
            self.release(raw, newline + 1);
            if !self.in_code {
                self.new_segment(newline + 1);
            }
            return;
        }
        let (kind, marker) = classify(body, &mut self.in_code);
        let indent = body.len() - body.trim_start().len();
        let group_ended = self.run.next(kind, marker, indent);
        match kind {
            Kind::Code | Kind::Break => {
                self.finalise(raw, self.line_start);
                self.release(raw, newline + 1);
                self.new_segment(newline + 1);
            }
            Kind::Blank => self.blocks.blank(),
            Kind::Heading | Kind::Text => {
                if group_ended {
                    self.finalise(raw, self.line_start);
                    self.new_segment(self.line_start);
                    self.blocks.open(self.line_start);
                    if self.line.question {
                        self.blocks.question();
                    }
                }
                self.blocks.line_done(self.line.colon);
            }
        }
    }

    fn new_segment(&mut self, at: usize) {
        self.segment = at;
        self.blocks = Blocks::default();
    }

    /// Emits `raw[released..upto]` as it is.
    fn release(&mut self, raw: &str, upto: usize) {
        if upto > self.released {
            if let Some(text) = raw.get(self.released..upto) {
                self.out.push(text);
            }
            self.released = upto;
        }
    }

    /// The open segment ends at `end` and is final: its text not yet released, without its
    /// cards (joined as `cards::detect` joins the text around a card), is released.
    fn finalise(&mut self, raw: &str, end: usize) {
        let start = self.segment;
        let Some(segment) = raw.get(start..end).filter(|s| !s.is_empty()) else {
            self.release(raw, end);
            return;
        };
        let mut at = self.released.max(start);
        for (from, to) in spans(segment) {
            let (from, to) = (start + from, start + to);
            if to <= at {
                continue;
            }
            let before = raw.get(at..from.max(at)).unwrap_or_default();
            self.out.push(before.trim_end_matches([' ', '\t']));
            let rest = raw.get(to..end).unwrap_or_default();
            let kept = rest.trim_start_matches([' ', '\t']);
            at = end - kept.len();
            if kept.starts_with(|c: char| c != '\n' && c != '\r') {
                self.out.separate();
            }
        }
        self.out.push(raw.get(at..end).unwrap_or_default());
        self.released = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::cut;
    use crate::{Contracts, StreamCheck};
    use std::sync::Arc;

    fn question_cards() -> Arc<Contract> {
        Contracts::builtin()
            .ok()
            .and_then(|c| c.get("question-cards").ok())
            .expect("question-cards is built in")
    }

    fn normalise(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The text of `pieces` streamed, checking after every delta that the text so far starts
    /// the final message.
    fn stream(contract: &Contract, context: &Context, pieces: &[&str]) -> String {
        let raw: String = pieces.concat();
        let checked = contract.check(&raw, context);
        let message = checked
            .value
            .as_ref()
            .and_then(|v| v["message"].as_str())
            .map(normalise);
        let mut check = StreamCheck::new(contract, context);
        let mut events = Vec::new();
        let mut text = String::new();
        for piece in pieces {
            assert!(check.push(piece, &mut events).is_ok());
            for event in events.drain(..) {
                match event {
                    Emit::Text(t) => text.push_str(&t),
                    other => panic!("a text reply emitted {other:?}"),
                }
            }
            if let Some(message) = &message {
                let so_far = normalise(&text);
                assert!(
                    message.starts_with(&so_far),
                    "{raw:?} split {pieces:?}: {so_far:?} does not start {message:?}"
                );
            }
        }
        check.finish(&checked, &mut events);
        for event in events {
            if let Emit::Text(t) = event {
                text.push_str(&t);
            }
        }
        text
    }

    fn message(contract: &Contract, context: &Context, raw: &str) -> String {
        let checked = contract.check(raw, context);
        normalise(
            checked
                .value
                .as_ref()
                .and_then(|v| v["message"].as_str())
                .unwrap_or(""),
        )
    }

    /// Every way of cutting `raw` in two, and one character at a time.
    fn splits(raw: &str) -> Vec<Vec<&str>> {
        let mut out = vec![vec![raw]];
        for (at, _) in raw.char_indices().skip(1) {
            out.push(vec![&raw[..at], &raw[at..]]);
        }
        out.push(
            raw.char_indices()
                .map(|(i, c)| &raw[i..i + c.len_utf8()])
                .collect(),
        );
        out
    }

    #[test]
    fn every_split_streams_the_message_without_the_cards() {
        let contract = question_cards();
        let context = Context::new().with("mode", "discovery");
        let replies = [
            "Thanks! That helps.\n\nWhat is the primary objective?\n\nUnderstanding it matters.\n\nFor example:\n(A) Revenue\n(B) Efficiency\n(C) Retention\n\nTell me more after.",
            "Would you prefer (a) tea or (b) coffee? Either is fine.",
            "Intro line.\n\n**Question:**\nWhich database?\n1. Postgres\n2. SQLite\n",
            "Is this right? I think so.\n\n```\ncode? (A) x\n(B) y\n```\nAfter the code.\n\n---\nDone?",
            "No question here.\n\nJust text — é ✓ 🎉.",
            "\u{feff}Which one? (1) Fast. (2) Cheap.\n\nA) Not\nB) Options? no",
            "A) x\nB) y\n\nAfter a group without a question.\n\nWhich now?\n- (A) one\n- (B) two",
            "Why? Because.",
            "Which one?\n\nA) x\nB) y\nC) z\nD) w\nE) v\nF) u\nG) t\nEnd.",
        ];
        for raw in replies {
            let want = message(&contract, &context, raw);
            for pieces in splits(raw) {
                assert_eq!(
                    normalise(&stream(&contract, &context, &pieces)),
                    want,
                    "{raw:?} split {pieces:?}"
                );
            }
        }
    }

    #[test]
    fn text_before_a_question_goes_out_before_the_reply_ends() {
        let contract = question_cards();
        let context = Context::new().with("mode", "clarification");
        let mut check = StreamCheck::new(&contract, &context);
        let mut events = Vec::new();
        for delta in ["First paragraph.\n\n", "Which one?\n", "A) x\n"] {
            assert!(check.push(delta, &mut events).is_ok());
        }
        assert_eq!(events, [Emit::Text("First paragraph.".into())]);
        // A group's end makes its card final; what follows it goes out once its block is over.
        for delta in ["B) y\n\n", "Thanks, and more text.\n"] {
            assert!(check.push(delta, &mut events).is_ok());
        }
        assert_eq!(events.len(), 1, "{events:?}");
        for delta in ["\n", "Bye"] {
            assert!(check.push(delta, &mut events).is_ok());
        }
        assert_eq!(
            events[1..],
            [Emit::Text("\n\nThanks, and more text.".into())]
        );
    }

    #[test]
    fn without_cards_text_passes_through_at_once() {
        let contract = question_cards();
        for context in [Context::new(), Context::new().with("mode", "chat")] {
            let mut check = StreamCheck::new(&contract, &context);
            let mut events = Vec::new();
            for delta in ["\u{feff}Which one?", "\n(A) x\n(B) y"] {
                assert!(check.push(delta, &mut events).is_ok());
            }
            assert_eq!(
                events,
                [
                    Emit::Text("Which one?".into()),
                    Emit::Text("\n(A) x\n(B) y".into())
                ]
            );
        }
    }

    /// Pieces card replies are made of, odd ones included.
    const PIECES: &[&str] = &[
        "Which one?",
        "Why?",
        " ",
        "\n",
        "\n\n",
        "\r\n",
        "(A) x",
        "(B) y",
        "(C) z",
        "A) x\n",
        "B) y\n",
        "C) z\n",
        "1. one\n",
        "2. two\n",
        "   more\n",
        "For example:\n",
        "Question:",
        "**Question 2:** ",
        "### Which db?",
        "Some text.",
        "It matters. ",
        "e.g. ",
        "```\n",
        "~~~\n",
        "---\n",
        "- ",
        "**",
        "é ✓ ",
        "🎉",
        "(1) Fast. ",
        "(2) Cheap.",
        " or ",
        ", ",
        "Pick one.",
        "(recommended)",
        "Options",
        ":",
        "?",
        "a",
        "\u{a0}",
    ];

    /// Lines card replies are made of.
    const LINES: &[&str] = &[
        "Which one?",
        "Intro.",
        "It matters here.",
        "Question:",
        "**Question 2:**",
        "A) x",
        "B) y",
        "C) z",
        "D) w",
        "1. a",
        "2. b",
        "3. c",
        "   continued",
        "  - nested",
        "",
        "",
        "After.",
        "```",
        "~~~",
        "---",
        "For example:",
        "# Which?",
        "(A) p or (B) q?",
        "Why? (1) u. (2) v.",
        "a) lower",
        "b) case",
        "Pick one.",
        "Thanks! Which db? Tell me.",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn any_lines_any_split(
            picks in proptest::collection::vec(0..LINES.len(), 0..30),
            cuts in proptest::collection::vec(0usize..1000, 0..12),
        ) {
            let raw = picks.iter().map(|&i| LINES[i]).collect::<Vec<_>>().join("\n");
            let contract = question_cards();
            let context = Context::new().with("mode", "discovery");
            let pieces = cut(&raw, &cuts);
            let text = stream(&contract, &context, &pieces);
            proptest::prop_assert_eq!(
                normalise(&text),
                message(&contract, &context, &raw),
                "{:?} split {:?}", raw, pieces
            );
        }

        #[test]
        fn any_reply_any_split(
            picks in proptest::collection::vec(0..PIECES.len(), 0..40),
            cuts in proptest::collection::vec(0usize..1000, 0..12),
        ) {
            let raw: String = picks.iter().map(|&i| PIECES[i]).collect();
            let contract = question_cards();
            let context = Context::new().with("mode", "discovery");
            let pieces = cut(&raw, &cuts);
            let text = stream(&contract, &context, &pieces);
            proptest::prop_assert_eq!(
                normalise(&text),
                message(&contract, &context, &raw),
                "{:?} split {:?}", raw, pieces
            );
        }
    }

    #[test]
    fn long_replies_stream_in_linear_time() {
        let replies = [
            format!("Is it? {}", "More text here. ".repeat(10_000)),
            format!(
                "{}Which? A) x\nB) y\n",
                "Plain line, no question.\n\n".repeat(5000)
            ),
            "Which one?\nA) x\nB) y\n\nAfter.\n".repeat(3000),
            format!("```\n{}```\nDone?", "code? line\n".repeat(10_000)),
        ];
        let contract = question_cards();
        let context = Context::new().with("mode", "discovery");
        for raw in &replies {
            let started = std::time::Instant::now();
            let pieces: Vec<&str> = raw
                .char_indices()
                .map(|(i, c)| &raw[i..i + c.len_utf8()])
                .collect();
            let mut check = StreamCheck::new(&contract, &context);
            let mut events = Vec::new();
            for piece in pieces {
                assert!(check.push(piece, &mut events).is_ok());
            }
            check.finish(&contract.check(raw, &context), &mut events);
            let text: String = events
                .into_iter()
                .filter_map(|e| match e {
                    Emit::Text(t) => Some(t),
                    _ => None,
                })
                .collect();
            assert_eq!(normalise(&text), message(&contract, &context, raw));
            // Quadratic work on these would take minutes, even unoptimised.
            assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
        }
    }
}
