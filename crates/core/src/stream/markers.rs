//! [`MarkerStream`]: a `markers` reply as it streams in — the text for the user with marker
//! sections stripped live, and each section's JSON read as soon as it is complete.
//!
//! It finds the sections [`crate::markers`]' complete reader finds, scanning left to right and
//! never going back more than a bounded distance:
//!
//! - **Text** ([`text`](self::text)): text is released as soon as no section can start in it.
//!   Held back, only until the next bytes decide: a word that is a prefix of a marker name
//!   (`SUGG`, `SUGGESTED_VALUES` without its colon yet, `SUGGESTED_VALUES **` …) from where its
//!   section would start — up to two `*` before it, or the line start when the line so far is
//!   a Markdown heading's `#`s —, trailing `*`s and a trailing `#…# ` heading prefix that a
//!   name may follow, and a line that starts with ```` ``` ```` (and the whitespace after it)
//!   while a section may follow it: the complete reader cuts such a fence out with the section
//!   when a closing ```` ``` ```` follows the section. A name glued to a word (`MY_…`, `…X`) is
//!   not a marker and is released at once.
//! - **Sections** ([`section`](self::section)): after the colon, whitespace or a
//!   ```` ```json ```` line, then the JSON, scanned once for its balanced end (strings and
//!   escapes tracked across deltas). When it closes, the section is read as the complete check
//!   reads it ([`SectionReader`]) and emitted as [`Emit::Suggestions`] / [`Emit::Payload`];
//!   a repeated marker, a second payload, a payload not offered on the page or unreadable
//!   JSON emits nothing. Suggestions are emitted when the reply is complete, and only when it
//!   carried no payload (the final value drops suggestions that come with a proposal); a
//!   payload is emitted as soon as its JSON closes. A closing fence after fenced JSON is
//!   consumed with the section.
//! - **Message text** then goes through [`EmptyFences`] (a fence left wrapping nothing is
//!   dropped, as the complete check's tidy step does) and [`Out`] (whitespace laid out as in
//!   the message). Where a section was, a line break stands, as in the message.
//!
//! The text emitted over the whole reply equals the final message up to whitespace; no byte of
//! a recognised marker or its JSON is ever emitted. Work is linear in the reply however it is
//! split: every byte is scanned once, plus at most once more after a section whose JSON turned
//! out to be missing (the text after its colon is text after all) and for the whitespace
//! before a closing fence that turned out not to be one.

mod empty_fence;
mod section;
mod text;

use super::Emit;
use super::out::Out;
use crate::context::Context;
use crate::contract::{Checked, Contract};
use crate::markers::{Body, Section, SectionReader, Slot, normalise_actions, normalise_values};
use empty_fence::EmptyFences;
use serde_json::json;

/// The live marker stripper of one attempt. See the module docs.
#[derive(Debug)]
pub(super) struct MarkerStream(Box<Scan>);

impl MarkerStream {
    pub(super) fn new(contract: &Contract, context: &Context) -> Self {
        Self(Box::new(Scan::new(contract, context)))
    }

    /// Scans the reply so far (`raw`; the new delta starts at `from`) and emits what it settles.
    pub(super) fn feed(&mut self, raw: &str, _from: usize, out: &mut Vec<Emit>) {
        self.0.feed(raw, out);
    }

    /// The reply is complete: what was held back pending more bytes is settled as the end of
    /// the reply settles it (a marker name at the very end is not a marker; a section whose
    /// JSON never closed runs to the end), and the rest of the text is released.
    pub(super) fn finish(&mut self, raw: &str, _checked: &Checked, out: &mut Vec<Emit>) {
        self.0.finish(raw, out);
    }
}

/// The scanner's state.
#[derive(Debug)]
struct Scan {
    /// Marker names, indexed as the reader indexes them.
    names: Vec<String>,
    /// Reads each complete section as the complete check does (`None`: no marker spec).
    reader: Option<SectionReader<'static>>,
    /// Where the text starts (after a byte-order mark), once the first bytes are in.
    base: Option<usize>,
    /// The next byte to scan.
    pos: usize,
    /// `raw[..sent]` is settled: handed on as text, or part of a section.
    sent: usize,
    /// Where the last section ended.
    prev_end: usize,
    /// The current line, as far as markers care.
    line: text::LineShape,
    /// A ```` ``` ```` line a section may follow (then cut out with it).
    fence: Option<text::Fence>,
    /// The word being scanned.
    word: text::Word,
    /// Names the current word is still a prefix of.
    alive: Vec<usize>,
    mode: Mode,
    /// Remembered searches, so bytes looked at after a missing section are not searched again.
    newline: section::NewlineMemo,
    space: section::SpaceMemo,
    fences: EmptyFences,
    out: Out,
    /// A payload was emitted: later suggestions are not.
    payload: bool,
    /// Suggestions read so far, emitted at the end unless a payload came.
    suggestions: Vec<Emit>,
}

/// What the scanner is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Message text.
    Text,
    /// After a marker name: the `*`s, spaces and colon that make it a marker.
    Header {
        /// Where the section starts.
        start: usize,
        marker: usize,
        state: text::Header,
    },
    /// After the colon: what the JSON starts with.
    Body {
        start: usize,
        marker: usize,
        /// Just after the colon (and its `*`s).
        after: usize,
        state: section::Lead,
    },
    /// Inside the JSON that opens at `open`.
    Json {
        start: usize,
        marker: usize,
        open: usize,
        fenced: bool,
        scan: section::JsonScan,
    },
    /// After fenced JSON: looking for its closing fence.
    Close { start: usize, json_end: usize },
    /// After a section that a held ```` ``` ```` line precedes: looking for the fence's end.
    Widen { start: usize, end: usize },
}

impl Scan {
    fn new(contract: &Contract, context: &Context) -> Self {
        let reader = contract
            .markers()
            .map(|spec| SectionReader::new(spec, context).into_owned());
        let names = reader.as_ref().map_or_else(Vec::new, |r| {
            r.names().iter().map(|n| n.as_ref().to_owned()).collect()
        });
        Self {
            names,
            reader,
            base: None,
            pos: 0,
            sent: 0,
            prev_end: 0,
            line: text::LineShape::at(0),
            fence: None,
            word: text::Word::Between,
            alive: Vec::new(),
            mode: Mode::Text,
            newline: section::NewlineMemo::default(),
            space: section::SpaceMemo::default(),
            fences: EmptyFences::default(),
            out: Out::default(),
            payload: false,
            suggestions: Vec::new(),
        }
    }

    fn feed(&mut self, raw: &str, out: &mut Vec<Emit>) {
        if !self.begin(raw) {
            return;
        }
        self.run(raw, false, out);
        let hold = self.hold(raw);
        self.send(raw, hold);
        self.out.emit(out);
    }

    fn finish(&mut self, raw: &str, out: &mut Vec<Emit>) {
        if self.begin(raw) {
            self.run(raw, true, out);
            self.send(raw, raw.len());
        }
        self.fences.finish(&mut self.out);
        self.out.finish(out);
        if !self.payload {
            out.append(&mut self.suggestions);
        }
    }

    /// Sets where the text starts, once there are bytes; false while there are none.
    fn begin(&mut self, raw: &str) -> bool {
        if self.base.is_some() {
            return true;
        }
        if raw.is_empty() {
            return false;
        }
        let base = if raw.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        self.base = Some(base);
        self.pos = base;
        self.sent = base;
        self.prev_end = base;
        self.line = text::LineShape::at(base);
        true
    }

    fn base(&self) -> usize {
        self.base.unwrap_or(0)
    }

    /// Scans as far as the bytes allow (`eof`: they are all there is).
    fn run(&mut self, raw: &str, eof: bool, out: &mut Vec<Emit>) {
        loop {
            let moved = match self.mode {
                Mode::Text => self.text(raw),
                Mode::Header { .. } => self.header(raw, eof),
                Mode::Body { .. } => self.lead(raw, eof),
                Mode::Json { .. } => self.json(raw, eof, out),
                Mode::Close { .. } => self.close(raw, eof),
                Mode::Widen { .. } => self.widen(raw, eof),
            };
            if !moved {
                return;
            }
        }
    }

    /// Hands `raw[sent..upto]` on as message text.
    fn send(&mut self, raw: &str, upto: usize) {
        if upto > self.sent {
            if let Some(text) = raw.get(self.sent..upto) {
                self.fences.push(text, &mut self.out);
            }
            self.sent = upto;
        }
    }

    /// A section's JSON `raw[open..end]` is complete: read it and emit what it fills.
    fn read(&mut self, raw: &str, section: (usize, usize), open: usize, out: &mut Vec<Emit>) {
        let (marker, start) = section;
        let end = self.pos;
        let (Some(reader), Some(json)) = (self.reader.as_mut(), raw.get(open..end)) else {
            return;
        };
        let found = Section {
            marker,
            start,
            end,
            body: Body::Json(json),
        };
        let Some(slot) = reader.section(&found) else {
            return;
        };
        let Some(value) = reader.filled(slot).cloned() else {
            return;
        };
        let mut repairs = Vec::new();
        let emit = match slot {
            Slot::Payload(_) => {
                self.payload = true;
                Emit::Payload(value)
            }
            Slot::Values if !self.payload => Emit::Suggestions(
                json!({"suggested_values": normalise_values(value, &mut repairs)}),
            ),
            Slot::Actions if !self.payload => Emit::Suggestions(
                json!({"suggested_actions": normalise_actions(value, &mut repairs)}),
            ),
            Slot::Values | Slot::Actions => return,
        };
        if matches!(emit, Emit::Suggestions(_)) {
            self.suggestions.push(emit);
            return;
        }
        self.out.emit(out);
        out.push(emit);
    }

    /// The section `start..end` is over: a line break stands for it in the text, and text
    /// scanning resumes after it.
    fn complete(&mut self, end: usize) -> bool {
        self.fences.push("\n", &mut self.out);
        self.sent = end;
        self.pos = end;
        self.prev_end = end;
        self.fence = None;
        self.word = text::Word::Between;
        self.line.after_section();
        self.mode = Mode::Text;
        true
    }
}

/// Letters, digits and `_`: what a marker name is made of, and what may not touch it.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::cut;
    use crate::{Contracts, StreamCheck};
    use serde_json::Value;
    use std::sync::Arc;

    fn table_chat() -> Arc<Contract> {
        Contracts::builtin()
            .ok()
            .and_then(|c| c.get("table-chat").ok())
            .expect("table-chat is built in")
    }

    fn normalise(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The text and the other events of `pieces` streamed, checking after every delta that the
    /// text so far starts the final message.
    fn stream(contract: &Contract, context: &Context, pieces: &[&str]) -> (String, Vec<Emit>) {
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
        let mut others = Vec::new();
        let mut take = |events: &mut Vec<Emit>, text: &mut String| {
            for event in events.drain(..) {
                match event {
                    Emit::Text(t) => text.push_str(&t),
                    other => others.push(other),
                }
            }
        };
        for piece in pieces {
            assert!(check.push(piece, &mut events).is_ok());
            take(&mut events, &mut text);
            if let Some(message) = &message {
                let so_far = normalise(&text);
                assert!(
                    message.starts_with(&so_far),
                    "{raw:?} split {pieces:?}: {so_far:?} does not start {message:?}"
                );
            }
        }
        check.finish(&checked, &mut events);
        take(&mut events, &mut text);
        (text, others)
    }

    /// Every way of cutting `raw` in two, and one character at a time.
    fn splits(raw: &str) -> Vec<Vec<&str>> {
        let mut out = vec![vec![raw]];
        for (at, _) in raw.char_indices().skip(1) {
            out.push(vec![&raw[..at], &raw[at..]]);
        }
        let mut chars = Vec::new();
        let mut rest = raw;
        while let Some(c) = rest.chars().next() {
            chars.push(&rest[..c.len_utf8()]);
            rest = &rest[c.len_utf8()..];
        }
        out.push(chars);
        out
    }

    fn expected_events(value: &Value) -> Vec<Emit> {
        let mut out = Vec::new();
        if !value["payload"].is_null() {
            out.push(Emit::Payload(value["payload"].clone()));
        }
        for key in ["suggested_values", "suggested_actions"] {
            if !value[key].is_null() {
                out.push(Emit::Suggestions(json!({ key: value[key].clone() })));
            }
        }
        out
    }

    fn sorted(mut events: Vec<Emit>) -> Vec<String> {
        let mut out: Vec<String> = events.drain(..).map(|e| format!("{e:?}")).collect();
        out.sort();
        out
    }

    fn assert_streams_as_checked(raw: &str, page: &str) {
        let contract = table_chat();
        let context = Context::new().with("page", page);
        let checked = contract.check(raw, &context);
        let value = checked.value.clone().unwrap_or(Value::Null);
        let message = normalise(value["message"].as_str().unwrap_or(""));
        for pieces in splits(raw) {
            let (text, others) = stream(&contract, &context, &pieces);
            assert_eq!(normalise(&text), message, "{raw:?} split {pieces:?}");
            if checked.is_valid() {
                assert_eq!(
                    sorted(others),
                    sorted(expected_events(&value)),
                    "{raw:?} split {pieces:?}"
                );
            }
        }
    }

    #[test]
    fn every_split_streams_the_checked_message_and_sections() {
        let replies = [
            "Hi there.\nSUGGESTED_VALUES: [\"a\", \"b\"]",
            "Hi.\n**SUGGESTED_VALUES:** [{\"label\": \"A\", \"value\": \"a\"}]\nBye.",
            "Hi.\n## SUGGESTED_ACTIONS:\n[{\"label\": \"Close\", \"action\": \"close_chat\"}]",
            "Ok.\nSUGGESTED_VALUES:\n```json\n[\"a\"]\n```\nBye.",
            "Ok.\n```\nSUGGESTED_VALUES: [\"a\"]\n```\nBye.",
            "Two.\nSUGGESTED_VALUES: [\"x\"]\nSUGGESTED_ACTIONS: [{\"label\": \"C\", \"action\": \"close_chat\"}]",
            "Rows:\nDATA_PROPOSAL: {\"operations\": [{\"action\": \"delete\", \"row_id\": 3}]}\nApply?",
            "Voilà ✓ **SUGGESTED_VALUES:** [\"é\"] ✓ 🎉",
            "Not one: SUGGESTED_VALUESX: [1] and MY_SUGGESTED_VALUES: [2].",
            "Cut: SUGGESTED_VALUES: [\"a\", \"b",
            "Missing: SUGGESTED_VALUES: none here\nSUGGESTED_VALUES: [\"z\"]",
            "*SUGGESTED_VALUES*: [\"i\"]\n***SUGGESTED_VALUES: [\"j\"]",
            "x**SUGGESTED_VALUES: [1]\n#SUGGESTED_VALUES: [\"h\"]",
            "```\nSUGGESTED_VALUES: [1]\nSCHEMA_PROPOSAL: {}\n```\nend",
            "Code:\n```sql\nselect 1;\n```\n\n```\n```\nSUGGESTED_VALUES: [\"q\"] ``` tail",
            "SCHEMA_PROPOSAL: {\"note\": \"SUGGESTED_VALUES: [1]\"} SUGGESTED_VALUES: [2]",
            "SCHEMA_PROPOSAL:*SCHEMA_PROPOSAL: {}",
            "SUGGESTED_VALUES: ```SUGGESTED_VALUES: ```x\n   \n hello",
            "SUGGESTED_VALUES: ```json",
            "A # heading\n####### SUGGESTED_VALUES: [1]\n  # SUGGESTED_VALUES: [2]",
            "x***SUGGESTED_ACTIONS:** \\_## ",
            "\u{feff}## SUGGESTED_VALUES: [1]\nHi",
            "\u{feff}```\nSUGGESTED_VALUES: [1]\n```\nHi",
            "```json SUGGESTED_VALUES: [1] ```",
        ];
        for raw in replies {
            assert_streams_as_checked(raw, "table_view");
        }
    }

    /// Pieces marker replies are made of, odd ones included.
    const PIECES: &[&str] = &[
        "SUGGESTED_VALUES",
        "SUGGESTED_ACTIONS",
        "SCHEMA_PROPOSAL",
        "DATA_PROPOSAL",
        "SUGG",
        ":",
        ": ",
        "*",
        "**",
        "#",
        "## ",
        " ",
        "\t",
        "\n",
        "\n\n",
        "\r\n",
        "```",
        "```json\n",
        "`",
        "[",
        "]",
        "{",
        "}",
        "\"",
        "\\",
        "x",
        "_",
        "é",
        "✓ ",
        "🎉",
        "\u{a0}",
        "Hello. ",
        "[\"a\"]",
        "[{\"label\": \"C\", \"action\": \"close_chat\"}]",
        "{\"operations\": [{\"action\": \"delete\", \"row_id\": 1}]}",
        "{\"mode\": \"create\", \"operations\": []}",
        "SUGGESTED_VALUES: ",
        "**SUGGESTED_ACTIONS:** ",
        "## SCHEMA_PROPOSAL:\n",
        "DATA_PROPOSAL:",
        "*SUGGESTED_VALUES*:",
        "```\n",
        "\n```\n",
        "\n```",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn any_reply_any_split(
            picks in proptest::collection::vec(0..PIECES.len(), 0..40),
            cuts in proptest::collection::vec(0usize..1000, 0..12),
            page in proptest::sample::select(vec!["table_view", "tables_list"]),
        ) {
            let raw: String = picks.iter().map(|&i| PIECES[i]).collect();
            let contract = table_chat();
            let context = Context::new().with("page", page);
            let checked = contract.check(&raw, &context);
            let value = checked.value.clone().unwrap_or(Value::Null);
            let message = normalise(value["message"].as_str().unwrap_or(""));
            let pieces = cut(&raw, &cuts);
            let (text, others) = stream(&contract, &context, &pieces);
            proptest::prop_assert_eq!(normalise(&text), message, "{:?} split {:?}", raw, pieces);
            if checked.is_valid() {
                proptest::prop_assert_eq!(sorted(others), sorted(expected_events(&value)), "{:?}", raw);
            }
        }
    }

    #[test]
    fn long_adversarial_replies_stream_in_linear_time() {
        let replies = [
            format!(
                "{}\n{}x",
                "SUGGESTED_VALUES: ```".repeat(2000),
                " ".repeat(20_000)
            ),
            format!("{}end", "x** ## SUGGESTED_VALUE *** ".repeat(2000)),
            format!(
                "```\n{}SUGGESTED_VALUES: [1]\n{}```",
                " \n".repeat(20_000),
                " ".repeat(20_000)
            ),
            format!(
                "DATA_PROPOSAL: {{\"operations\": [{}1]}}",
                "\"a\\\"]}\", ".repeat(8000)
            ),
            format!("{}SUGGESTED_VALUES: [\"a\"]", "`` ``\n".repeat(10_000)),
        ];
        let contract = table_chat();
        let context = Context::new().with("page", "table_view");
        for raw in &replies {
            let started = std::time::Instant::now();
            let pieces: Vec<&str> = raw
                .char_indices()
                .map(|(i, c)| &raw[i..i + c.len_utf8()])
                .collect();
            let mut check = StreamCheck::new(&contract, &context);
            let mut events = Vec::new();
            let mut text = String::new();
            for piece in pieces {
                assert!(check.push(piece, &mut events).is_ok());
                for event in events.drain(..) {
                    if let Emit::Text(t) = event {
                        text.push_str(&t);
                    }
                }
            }
            let checked = contract.check(raw, &context);
            check.finish(&checked, &mut events);
            for event in events.drain(..) {
                if let Emit::Text(t) = event {
                    text.push_str(&t);
                }
            }
            let message = checked
                .value
                .as_ref()
                .and_then(|v| v["message"].as_str())
                .unwrap_or("");
            assert_eq!(normalise(&text), normalise(message));
            // Quadratic work on these would take minutes, even unoptimised.
            assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
        }
    }

    #[test]
    fn only_what_may_be_a_marker_is_held_back() {
        // Deltas, and the text sent once each has been pushed (then after finish).
        let cases: &[(&[&str], &[&str])] = &[
            (
                &["Hello SUGG", "ESTED", "_VALUES: [\"a\"]", " bye"],
                // A line break stands where the section was, as in the message.
                &["Hello", "Hello", "Hello", "Hello\n bye", "Hello\n bye"],
            ),
            (&["Hi **", "x"], &["Hi", "Hi **x", "Hi **x"]),
            (&["Hi x**", "*"], &["Hi x", "Hi x*", "Hi x***"]),
            (&["## ", "Title"], &["", "## Title", "## Title"]),
            (&["#", "# SUGGESTED_VALUES: [1] ok"], &["", "ok", "ok"]),
            (
                &["MY_SUGGESTED_VALUES"],
                &["MY_SUGGESTED_VALUES", "MY_SUGGESTED_VALUES"],
            ),
            (
                &["SUGGESTED_VALUESX", ": 1"],
                &[
                    "SUGGESTED_VALUESX",
                    "SUGGESTED_VALUESX: 1",
                    "SUGGESTED_VALUESX: 1",
                ],
            ),
            (
                &["Ends SUGGESTED_VALUES"],
                &["Ends", "Ends SUGGESTED_VALUES"],
            ),
            (
                &["SUGGESTED_VALUES *", "x"],
                &[
                    "SUGGESTED_VALUES",
                    "SUGGESTED_VALUES *x",
                    "SUGGESTED_VALUES *x",
                ],
            ),
            (
                &["```\n", "SUGGESTED_VALUES: [1]\n", "```\nok"],
                &["", "", "ok", "ok"],
            ),
            (
                &["```py\n", "print(1)\n"],
                &["", "```py\nprint(1)", "```py\nprint(1)"],
            ),
            (&["Cut: SUGGESTED_VALUES: [\"a\", \"b"], &["Cut:", "Cut:"]),
        ];
        let contract = table_chat();
        let context = Context::new().with("page", "table_view");
        for (deltas, want) in cases {
            let mut check = StreamCheck::new(&contract, &context);
            let mut events = Vec::new();
            let mut text = String::new();
            let mut seen = Vec::new();
            let take = |events: &mut Vec<Emit>, text: &mut String| {
                for event in events.drain(..) {
                    if let Emit::Text(t) = event {
                        text.push_str(&t);
                    }
                }
            };
            for delta in *deltas {
                assert!(check.push(delta, &mut events).is_ok());
                take(&mut events, &mut text);
                seen.push(text.clone());
            }
            let checked = contract.check(&deltas.concat(), &context);
            check.finish(&checked, &mut events);
            take(&mut events, &mut text);
            seen.push(text.clone());
            assert_eq!(seen, *want, "{deltas:?}");
        }
    }
}
