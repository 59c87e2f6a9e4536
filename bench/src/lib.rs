//! Deterministic replies of the `selfhelp-response` contract at a chosen size, for benchmarks:
//! valid, invalid (wrong keys and enum values the model commonly produces), and needing repair
//! (fenced, with prose and trailing commas); `topic-analysis` XML replies; and discovery-mode
//! replies with question cards ([`card_text`], [`hostile_card_texts`]).
//! For the streaming benchmarks: a long `table-chat` message ([`marker_message`]), replies cut
//! into deltas ([`deltas`]) and fed to a `StreamCheck` with SSE encoding as the engine and
//! server do ([`stream_deltas`], [`stream_end`]).

use serde_json::{Value, json};

const SENTENCES: [&str; 6] = [
    "Slow breathing lowers your heart rate within a few minutes.",
    "Try inhaling for four counts, holding for four, and exhaling for six.",
    "Many people find it easier to start with one short session each evening.",
    "If your thoughts wander, notice it kindly and return to the count.",
    "Écrire trois choses positives chaque soir aide aussi à mieux dormir.",
    "Keep a glass of water nearby and sit somewhere you feel safe.",
];

/// A valid reply whose compact JSON is about `target` bytes.
pub fn valid_reply(target: usize) -> Value {
    let mut blocks = vec![json!({"type": "heading", "content": "Calming your breath"})];
    let mut value = build(&blocks);
    let mut i = 0;
    while value.to_string().len() < target {
        let kind = ["text", "info", "text", "success", "warning", "text", "code"][i % 7];
        let content = format!(
            "{} {}",
            SENTENCES[i % SENTENCES.len()],
            SENTENCES[(i + 2) % SENTENCES.len()]
        );
        blocks.push(json!({"type": kind, "content": content, "style": "default"}));
        value = build(&blocks);
        i += 1;
    }
    value
}

fn build(blocks: &[Value]) -> Value {
    json!({
        "type": "response",
        "safety": {"is_safe": true, "danger_level": "warning", "detected_concerns": ["substance_abuse"], "requires_intervention": false, "safety_message": null},
        "content": {
            "text_blocks": blocks,
            "form": {
                "title": "Check-in",
                "fields": [
                    {"id": "calm", "type": "scale", "label": "How calm do you feel?", "required": true, "min": 1, "max": 10},
                    {"id": "when", "type": "radio", "label": "When do you feel most tense?", "options": [
                        {"value": "morning", "label": "Morning"}, {"value": "evening", "label": "Evening"}, {"value": "night", "label": "At night"}
                    ]}
                ],
                "submit_label": "Send"
            },
            "media": [{"type": "audio", "url": "/assets/audio/breathing.mp3"}],
            "suggestions": [{"text": "Start the exercise"}, {"text": "Tell me more", "value": "Explain the 4-4-6 method"}]
        },
        "progress": {"percentage": 40, "current_topic": "breathing"},
        "metadata": {"model": "bench-model", "tokens_used": 512, "language": "en"}
    })
}

/// The same reply with mistakes models make: a suggestion with `label`, an unknown danger level,
/// an unknown block type and a radio field without options.
pub fn invalid_reply(target: usize) -> Value {
    let mut value = valid_reply(target);
    value["safety"]["danger_level"] = json!("high");
    value["content"]["suggestions"][0] = json!({"label": "Start the exercise"});
    value["content"]["text_blocks"][0]["type"] = json!("paragraph");
    if let Some(field) = value["content"]["form"]["fields"][1].as_object_mut() {
        field.remove("options");
    }
    value
}

/// The valid reply as a model often sends it: prose, a ```json fence, trailing commas.
pub fn needs_repair(target: usize) -> String {
    let pretty = serde_json::to_string_pretty(&valid_reply(target)).unwrap_or_default();
    let with_commas = pretty.replacen("\n      }\n    ]", "\n      },\n    ]", 1);
    format!("Here is my answer:\n```json\n{with_commas}\n```\nLet me know if you need more.")
}

/// A valid `topic-analysis` reply (`<llmResponse>` XML) of about `target` bytes: a long answer
/// with escaped characters, subjects with keywords (one with three below 4 KB, else three with
/// ten each), a summary.
pub fn topic_reply(target: usize) -> String {
    let (subject_count, keyword_count) = if target < 4_000 { (1, 3) } else { (3, 10) };
    let subjects: String = (0..subject_count)
        .map(|s| {
            let keywords: String = (0..keyword_count)
                .map(|k| {
                    format!(
                        "      <keyword term=\"term-{s}-{k}\" confidence=\"0.{}\" />\n",
                        60 + (s * 10 + k) % 40
                    )
                })
                .collect();
            format!(
                "    <subject name=\"subject-{s}\" description=\"Theme number {s} of this exchange &amp; its details\" isNew=\"{}\">\n{keywords}    </subject>\n",
                s % 2 == 0
            )
        })
        .collect();
    let fixed = subjects.len() + 400;
    let mut response = String::new();
    let mut i = 0;
    while response.is_empty() || response.len() + fixed < target {
        response.push_str(SENTENCES[i % SENTENCES.len()]);
        response.push_str(if i % 5 == 4 {
            " 5 &lt; 7 &amp; 8 &gt; 3. "
        } else {
            " "
        });
        i += 1;
    }
    format!(
        "<llmResponse>\n  <response>{}</response>\n  <analysis>\n{subjects}    <summaryUpdate>The user asked about calm breathing; we explained a 4-4-6 count and an evening routine.</summaryUpdate>\n  </analysis>\n</llmResponse>\n",
        response.trim_end()
    )
}

/// A `table-chat` (`markers` kind) reply of about `target` bytes: a few paragraphs for the
/// user, then a bold `**DATA_PROPOSAL:**` whose rows fill the rest (strings with braces and
/// escaped quotes, so the balanced extraction has work to do).
pub fn marker_reply(target: usize) -> String {
    let mut out = String::from(
        "I looked at the reading log and drafted the rows you asked for. Titles with braces or \
         quotes are kept as written.\n\nEach row has the title, the page count and the date you \
         finished it; unfinished books have no date yet.\n\n**DATA_PROPOSAL:** {\"reasoning\": \
         \"Seed the reading log\", \"operations\": [",
    );
    let mut i = 0u32;
    while out.len() + 120 < target {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!(
            "{{\"action\": \"add\", \"data\": {{\"Title\": \"Book {i} {{vol. {}}} \\\"annotated\\\"\", \"Pages\": {}, \"Finished\": \"2026-{:02}-{:02}\"}}}}",
            i % 7,
            120 + i * 3,
            1 + i % 12,
            1 + i % 28
        ));
        i += 1;
    }
    out.push_str("]}\n\nTick the rows you want and press Apply.");
    out
}

/// Prose paragraphs of a discovery-mode reply.
const CARD_PROSE: [&str; 5] = [
    "Thanks for walking me through the project. From what you describe, the first release should focus on the people who will use the tool every day, and the reporting side can follow once the basics are stable. That keeps the first version small enough to test with two or three shops before everyone moves over.",
    "Many teams start with a spreadsheet and outgrow it within a few months. The point where it breaks is usually the moment two managers edit the same week at once, or when someone needs a history of who changed what. A shared tool with a change log removes both problems, and it gives you numbers for payroll without copying anything by hand.",
    "Écrire les règles dès le départ évite beaucoup de discussions plus tard; we can keep the wording simple and add exceptions later. Most exceptions turn out to be about holidays, students who can only work evenings, and people who share one contract between two shops.",
    "The remaining decisions are smaller. Colours, logos and the wording of notifications can all change after launch without touching the data, so there is no need to settle them now. I will note them in the open questions list so they are not forgotten.",
    "Once these answers are in, I will draft the data model: shops, people, contracts, shifts and swaps, with the rules that connect them. You will be able to review it as a short document before anything is built, and we can adjust it in one more round of questions if something is missing.",
];

/// Questions with options, in the forms models write (lettered with rationale and lead-in,
/// numbered multiple choice, inline, `**Question:**` header with bold options, bulleted).
const CARD_QUESTIONS: [&str; 5] = [
    "Which problem should the first release solve?\n\nKnowing the main problem tells us which screens to build first.\n\nFor example:\n(A) Scheduling shifts across several shops\n(B) Tracking hours for payroll\n(C) Swapping shifts between colleagues (recommended)",
    "Where will the tool be used most? Select all that apply.\n\n1. On phones in the shop\n2. On a desktop in the office\n3. On a shared tablet at the entrance\n4. Not sure yet",
    "I will size the hosting after this. How many people need an account: (a) fewer than 20, (b) 20 to 100, or (c) more than 100?",
    "**Question:** How should employees sign in?\n\n**Options:**\n- **A)** **Email and password** — simplest to set up\n- **B)** **Single sign-on**: uses the accounts you already have\n- **C)** **Magic links** - no passwords to remember",
    "One more thing. Who approves a shift swap?\n- (A) The shop manager\n- (B) Any manager\n- (C) Nobody, swaps are automatic",
];

/// A discovery-mode reply of about `target` bytes: prose paragraphs with a question card about
/// every 1.5 KB (the first after one paragraph), cycling through the detected forms.
/// Deterministic.
pub fn card_text(target: usize) -> String {
    cards_every(target, 1_500)
}

/// Like [`card_text`], but with a question card after every paragraph: the card-heavy worst case.
pub fn card_text_dense(target: usize) -> String {
    cards_every(target, 1)
}

fn cards_every(target: usize, spacing: usize) -> String {
    let mut out = String::with_capacity(target + 1_024);
    let (mut prose, mut questions) = (0, 0);
    let mut since_question = spacing;
    while out.len() < target {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        if since_question >= spacing && prose > 0 {
            out.push_str(CARD_QUESTIONS[questions % CARD_QUESTIONS.len()]);
            questions += 1;
            since_question = 0;
        } else {
            let paragraph = CARD_PROSE[prose % CARD_PROSE.len()];
            out.push_str(paragraph);
            prose += 1;
            since_question += paragraph.len();
        }
    }
    out
}

/// Hostile texts of about `target` bytes for the card detector: marker soup, thousands of short
/// questions, a list far longer than six options, one huge line ending in a question.
pub fn hostile_card_texts(target: usize) -> Vec<(&'static str, String)> {
    let repeat = |unit: &str| unit.repeat(target / unit.len() + 1);
    vec![
        ("marker_soup", repeat("(A) x, (B) y (1) a (2) b? (a) ")),
        ("questions", repeat("Why? Which one?\n")),
        (
            "long_list",
            format!("Which one?\n{}", repeat("1. x\n2. y\n3. z\n4. w\n")),
        ),
        ("huge_line", format!("{}?\n(A) x\n(B) y", repeat("word "))),
    ]
}

// Streaming: the replies, deltas and engine-like driver of the `stream` bench and the
// `stream_slope` / `stream_memory` examples.

use bridle_core::{Abort, Checked, Context, Contract, StreamCheck};
use bridle_engine::{PartialThrottle, TurnEvent};

/// Markdown paragraphs of a long `table-chat` message: headings, lists, bold and italics (each
/// `*` run is held back by the live marker stripper until the next bytes decide), a word that
/// starts like a marker name, non-ASCII text.
const TABLE_PROSE: [&str; 5] = [
    "### What the log shows\n\nYou finished **38 books** this year, most of them in the autumn. The longest was 912 pages; the shortest, a collection of essays, had 96.",
    "- **Fiction** is two thirds of the list, and most of it is finished within two weeks.\n- **Non-fiction** takes longer: a month on average, and three books were put down half-way.\n- Books with a *series* volume in the title are always finished.",
    "If you want to compare months, the filter panel can group the rows by the date you finished a book; rows without a date are the books you are still reading. SUGGESTED reading lists are not part of the table, so I left them out.",
    "Les titres en français sont gardés tels quels, accents compris; the page counts come from the editions you entered, not from a catalogue.",
    "A few rows had the same title twice with different page counts. I kept both, because they are different editions, and marked the second one in its notes so you can delete it if you prefer.",
];

/// A `table-chat` reply of about `target` bytes with a long message: Markdown paragraphs
/// (headings, lists, bold) for about three quarters of it, then a bold `**DATA_PROPOSAL:**`
/// whose rows (a title with braces and escaped quotes, pages, a date and a two-sentence note,
/// ~260 bytes a row) fill the last quarter, and a closing line. The proposal stays under the
/// contract's 500 operations up to ~500 KB. Deterministic.
pub fn marker_message(target: usize) -> String {
    let rows_bytes = target / 4;
    let mut out = String::with_capacity(target + 512);
    let mut i = 0;
    while i == 0 || out.len() + rows_bytes + 100 < target {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(TABLE_PROSE[i % TABLE_PROSE.len()]);
        i += 1;
    }
    out.push_str(
        "\n\n**DATA_PROPOSAL:** {\"reasoning\": \"Rows for the books in your notes\", \"operations\": [",
    );
    let mut row = 0usize;
    while row == 0 || out.len() + 50 < target {
        if row > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!(
            "{{\"action\": \"add\", \"data\": {{\"Title\": \"Book {row} {{vol. {}}} \\\"annotated\\\"\", \"Pages\": {}, \"Finished\": \"2026-{:02}-{:02}\", \"Notes\": \"{} {}\"}}}}",
            row % 7,
            120 + row * 3,
            1 + row % 12,
            1 + row % 28,
            SENTENCES[row % SENTENCES.len()],
            SENTENCES[(row + 3) % SENTENCES.len()]
        ));
        row += 1;
    }
    out.push_str("]}\n\nTick the rows you want and press Apply.");
    out
}

/// The reply `make(target_bytes)` generates, with the byte target raised until the reply has at
/// least `chars` characters (the generators count bytes; a stream is cut in characters).
pub fn with_chars(chars: usize, make: impl Fn(usize) -> String) -> String {
    let mut target = chars;
    loop {
        let reply = make(target);
        let have = reply.chars().count();
        if have >= chars {
            return reply;
        }
        target += chars - have;
    }
}

/// `text` cut into deltas of `chars` characters (the last may be shorter), at character
/// boundaries, as a provider's stream delivers a reply.
pub fn deltas(text: &str, chars: usize) -> Vec<&str> {
    let chars = chars.max(1);
    let mut out = Vec::with_capacity(text.len() / chars + 1);
    let mut start = 0;
    for (n, (at, _)) in text.char_indices().enumerate() {
        if n > 0 && n % chars == 0 {
            out.push(&text[start..at]);
            start = at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// What a streamed reply wrote to the wire, so none of the work can be optimised away.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// SSE events written.
    pub events: usize,
    /// Of which `partial` events.
    pub partials: usize,
    /// SSE bytes written.
    pub bytes: usize,
}

impl Wire {
    /// Writes `event` as the server does (`event: NAME\ndata: DATA\n\n`) into `buf`, which
    /// stands for the connection's write buffer: cleared, then reused for every event.
    pub fn send(&mut self, event: &TurnEvent, buf: &mut String) {
        buf.clear();
        buf.push_str("event: ");
        buf.push_str(event.name());
        buf.push_str("\ndata: ");
        buf.push_str(&event.data());
        buf.push_str("\n\n");
        self.events += 1;
        self.bytes += buf.len();
        if matches!(event, TurnEvent::Partial { .. }) {
            self.partials += 1;
        }
    }
}

/// Streams `deltas` through a new [`StreamCheck`] as the engine's streamed attempt does: each
/// delta pushed and every event it emits SSE-encoded into `buf`; with `partial_every: Some(n)`,
/// `n` deltas arrive per partial interval (100 ms), on a simulated clock, and the engine's
/// [`PartialThrottle`] (the interval **and** an eighth of growth) decides when `partial()` is
/// asked and sent. `Err` is an early abort.
pub fn stream_deltas(
    contract: &Contract,
    context: &Context,
    deltas: &[&str],
    partial_every: Option<usize>,
    buf: &mut String,
    wire: &mut Wire,
) -> Result<StreamCheck, Abort> {
    let mut check = StreamCheck::new(contract, context);
    let mut emitted = Vec::new();
    let interval = std::time::Duration::from_millis(100);
    let mut throttle = PartialThrottle::new(interval);
    let start = std::time::Instant::now();
    let per_delta = partial_every.map(|n| interval / u32::try_from(n.max(1)).unwrap_or(u32::MAX));
    for (i, delta) in deltas.iter().enumerate() {
        check.push(delta, &mut emitted)?;
        for emit in emitted.drain(..) {
            wire.send(&TurnEvent::from_emit(emit), buf);
        }
        if let Some(per_delta) = per_delta {
            let now = start + per_delta * u32::try_from(i).unwrap_or(u32::MAX);
            if throttle.due(now, check.raw().len())
                && let Some(value) = check.partial()
            {
                throttle.shown(now, check.raw().len());
                wire.send(&TurnEvent::Partial { attempt: 1, value }, buf);
            }
        }
    }
    Ok(check)
}

/// The end of a streamed attempt, as the engine runs it: the complete check of the reply the
/// stream received, then (when valid) the held-back text released and SSE-encoded.
pub fn stream_end(
    contract: &Contract,
    context: &Context,
    check: &mut StreamCheck,
    buf: &mut String,
    wire: &mut Wire,
) -> Checked {
    let checked = contract.check(check.raw(), context);
    if checked.is_valid() {
        let mut emitted = Vec::new();
        check.finish(&checked, &mut emitted);
        for emit in emitted {
            wire.send(&TurnEvent::from_emit(emit), buf);
        }
    }
    checked
}

/// The kinds the streaming benchmarks cover, with their contract and context: `json`
/// (`selfhelp-response`), `markers` (`table-chat` on page `table_view`) and `text`
/// (`question-cards` in mode `discovery`).
pub const STREAM_KINDS: [(&str, &str, &str, &str); 3] = [
    ("json", "selfhelp-response", "", ""),
    ("markers", "table-chat", "page", "table_view"),
    ("text", "question-cards", "mode", "discovery"),
];

/// For a kind of [`STREAM_KINDS`]: its contract's name, the context, and a reply of at least
/// `chars` characters — compact [`valid_reply`] JSON, a [`marker_message`], a [`card_text`].
pub fn stream_case(kind: &str, chars: usize) -> Option<(&'static str, Context, String)> {
    let (_, contract, key, value) = STREAM_KINDS.into_iter().find(|k| k.0 == kind)?;
    let context = if key.is_empty() {
        Context::new()
    } else {
        Context::new().with(key, value)
    };
    let reply = match kind {
        "json" => with_chars(chars, |n| valid_reply(n).to_string()),
        "markers" => with_chars(chars, marker_message),
        _ => with_chars(chars, card_text),
    };
    Some((contract, context, reply))
}
