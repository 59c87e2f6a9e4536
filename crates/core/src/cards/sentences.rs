//! [`Sentence`]: a span of one paragraph ending in `.`, `?`, `!` or `…` (or at a line that
//! starts a new thought), and the tests a sentence passes on the way to a card: a question
//! ([`is_question`]), a lead-in like "For example:" ([`is_lead_in`]), a `Question:` header
//! ([`strip_question_label`]).

use super::lines::{Kind, Line};
use super::normalise::plain;

/// One sentence of a paragraph, as byte offsets into the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sentence {
    pub start: usize,
    /// Just after the terminator (and any closing quote, bracket or emphasis).
    pub end: usize,
    /// Where the words begin: after the list marker of a list-item line, else `start`.
    pub body: usize,
    pub para: usize,
    /// The sentence starts a line shaped like a list item (`1. …`, `(A) …`).
    pub list_item: bool,
}

/// Lowercase words that end in a period without ending the sentence.
const ABBREVIATIONS: [&str; 9] = [
    "e.g", "i.e", "eg", "ie", "vs", "cf", "approx", "incl", "resp",
];

/// Characters that may follow a terminator and still belong to the sentence.
const CLOSERS: [char; 9] = ['"', '\'', '”', '’', ')', ']', '*', '_', '»'];

/// Appends the sentences of the paragraph made of `lines` (all text or heading lines).
pub(super) fn split(text: &str, lines: &[Line<'_>], para: usize, out: &mut Vec<Sentence>) {
    let mut open: Option<Sentence> = None;
    let mut prev_end = 0;
    for line in lines {
        let content = line.start + line.indent();
        let end = line.end();
        if content >= end {
            continue;
        }
        // A line continues the sentence only when it reads as a soft-wrapped continuation.
        let continues = line.marker.is_none()
            && line.kind != Kind::Heading
            && text[content..end].starts_with(char::is_lowercase);
        if !continues && let Some(mut sentence) = open.take() {
            sentence.end = prev_end;
            out.push(sentence);
        }
        let mut at = content;
        if open.is_none() {
            let body = line.marker.map_or(content, |m| line.start + m.text_at);
            open = Some(Sentence {
                start: content,
                end: content,
                body,
                para,
                list_item: line.marker.is_some(),
            });
            at = body;
        }
        let bytes = text.as_bytes();
        while at < end {
            if open.is_none() {
                let rest = text[at..end].trim_start();
                if rest.is_empty() {
                    break;
                }
                at = end - rest.len();
                open = Some(Sentence {
                    start: at,
                    end: at,
                    body: at,
                    para,
                    list_item: false,
                });
            }
            // Terminators are ASCII or start with 0xE2 (`…`); both are character boundaries.
            let Some(found) = bytes[at..end]
                .iter()
                .position(|b| matches!(b, b'?' | b'!' | b'.' | 0xE2))
            else {
                break;
            };
            let pos = at + found;
            let Some(c) = text[pos..end].chars().next() else {
                break;
            };
            at = pos + c.len_utf8();
            if !matches!(c, '?' | '!' | '.' | '…') {
                continue;
            }
            let after = skip_closers(text, at, end);
            let spaced = after == end || text[after..end].starts_with(char::is_whitespace);
            if spaced && ends_sentence(text, c, pos, after, end) {
                if let Some(mut sentence) = open.take() {
                    sentence.end = after;
                    out.push(sentence);
                }
                at = after;
            }
        }
        prev_end = end;
    }
    if let Some(mut sentence) = open.take() {
        sentence.end = prev_end;
        out.push(sentence);
    }
}

fn skip_closers(text: &str, mut at: usize, end: usize) -> usize {
    while let Some(c) = text[at..end].chars().next().filter(|c| CLOSERS.contains(c)) {
        at += c.len_utf8();
    }
    at
}

/// Whether the terminator `c` at `at` ends a sentence: not when a lowercase word follows
/// ("e.g. this", `"why?" he asked`) nor, for a period, after a known abbreviation.
fn ends_sentence(text: &str, c: char, at: usize, after: usize, end: usize) -> bool {
    if text[after..end]
        .trim_start()
        .starts_with(char::is_lowercase)
    {
        return false;
    }
    if c != '.' {
        return true;
    }
    let mut word: Vec<char> = text[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_alphabetic() || *c == '.')
        .take(8)
        .collect();
    word.reverse();
    let word = word.into_iter().collect::<String>().to_lowercase();
    !ABBREVIATIONS.contains(&word.as_str())
}

/// A sentence's words as display text: list marker, heading hashes and emphasis removed.
pub(super) fn clean(text: &str, sentence: &Sentence) -> String {
    let words = text.get(sentence.body..sentence.end).unwrap_or("");
    plain(strip_heading(words))
}

/// `text` without leading `#` heading marks.
pub(super) fn strip_heading(text: &str) -> &str {
    let trimmed = text.trim_start();
    let without = trimmed.trim_start_matches('#');
    if without.len() < trimmed.len() && (without.is_empty() || without.starts_with(' ')) {
        without.trim_start()
    } else {
        trimmed
    }
}

/// Whether display text asks a question: it ends in `?` (closing quotes and brackets aside)
/// and has a letter or digit.
pub(super) fn is_question(clean: &str) -> bool {
    clean.trim_end_matches(CLOSERS).ends_with('?') && clean.chars().any(char::is_alphanumeric)
}

/// Whether display text is a lead-in to a list of options: short, not a question, and ending
/// in a colon ("For example:", "Choose one:"), one of the usual words without it ("Options"),
/// or a short instruction ("Select all that apply.", "Pick up to 2.").
pub(super) fn is_lead_in(clean: &str) -> bool {
    const INSTRUCTIONS: [&str; 6] = [
        "choose ",
        "pick ",
        "select ",
        "please choose",
        "please pick",
        "please select",
    ];
    const BARE: [&str; 8] = [
        "options",
        "choices",
        "for example",
        "for instance",
        "examples",
        "possible answers",
        "your options",
        "choose one",
    ];
    if clean.contains('?') || clean.chars().count() > 120 {
        return false;
    }
    let lower = clean.trim_end_matches('.').trim().to_lowercase();
    clean.ends_with(':')
        || BARE.contains(&lower.as_str())
        || (lower.chars().count() <= 60 && INSTRUCTIONS.iter().any(|i| lower.starts_with(i)))
}

/// Display text without a leading `Question:` / `Question 2:` / `Q:` / `Q3:` label:
/// `Some(rest)` when there was one (`rest` may be empty: a bare label).
pub(super) fn strip_question_label(clean: &str) -> Option<&str> {
    let text = clean.trim_start().trim_start_matches(['*', '_']);
    let lower = text.get(..8).map(str::to_ascii_lowercase);
    let after = if lower.as_deref() == Some("question") {
        &text[8..]
    } else if text.starts_with(['Q', 'q']) {
        &text[1..]
    } else {
        return None;
    };
    let after = after
        .trim_start()
        .trim_start_matches('#')
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start_matches(['*', '_', ' ']);
    after
        .strip_prefix(':')
        .map(|rest| rest.trim_start_matches(['*', '_']).trim())
}

/// Rationale text without a leading "Rationale:" / "Why this matters:" style label.
pub(super) fn strip_rationale_label(clean: &str) -> &str {
    const LABELS: [&str; 5] = [
        "rationale:",
        "why this matters:",
        "why it matters:",
        "why i ask:",
        "context:",
    ];
    for label in LABELS {
        if clean
            .get(..label.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(label))
        {
            return clean[label.len()..].trim_start();
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cards::lines;

    fn sentences(text: &str) -> Vec<&str> {
        let lines = lines::split(text);
        let mut out = Vec::new();
        split(text, &lines, 0, &mut out);
        out.iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn splits_at_terminators_and_new_lines() {
        assert_eq!(
            sentences("Good. Which one, e.g. this one? Pick!  Done…"),
            ["Good.", "Which one, e.g. this one?", "Pick!", "Done…"]
        );
        assert_eq!(
            sentences("Version 3.5 is out. It costs $2.50 vs. $3. Why?"),
            ["Version 3.5 is out.", "It costs $2.50 vs. $3.", "Why?"]
        );
        assert_eq!(
            sentences("Which do you\nprefer?\nQuestion two\n1. Not a marker here?"),
            [
                "Which do you\nprefer?",
                "Question two",
                "1. Not a marker here?"
            ]
        );
        assert_eq!(
            sentences("He said \"why?\" and left. **Really?** Yes"),
            ["He said \"why?\" and left.", "**Really?**", "Yes"]
        );
    }

    #[test]
    fn list_item_sentences_start_after_the_marker() {
        let text = "1. What is it? Tell me.";
        let lines = lines::split(text);
        let mut out = Vec::new();
        split(text, &lines, 0, &mut out);
        assert_eq!(out.len(), 2);
        assert!(out[0].list_item);
        assert_eq!(&text[out[0].body..out[0].end], "What is it?");
        assert!(!out[1].list_item);
    }

    #[test]
    fn questions_lead_ins_and_labels() {
        assert!(is_question("Which one?"));
        assert!(is_question("Which one?)"));
        assert!(!is_question("?"));
        assert!(!is_question("Which one."));
        assert!(is_lead_in("For example:"));
        assert!(is_lead_in("Options"));
        assert!(is_lead_in("Here are a few directions we could take:"));
        assert!(!is_lead_in("Which of these:?"));
        assert!(!is_lead_in("Some prose."));
        assert!(is_lead_in("Select all that apply."));
        assert!(is_lead_in("Pick up to 2"));
        assert!(!is_lead_in(
            "Selecting a database is the first big decision we have to make today."
        ));
        assert_eq!(
            strip_question_label("Question: Which one?"),
            Some("Which one?")
        );
        assert_eq!(strip_question_label("Question 2: Which?"), Some("Which?"));
        assert_eq!(strip_question_label("Q3: Which?"), Some("Which?"));
        assert_eq!(strip_question_label("Question:"), Some(""));
        assert_eq!(strip_question_label("Quick one: which?"), None);
        assert_eq!(strip_question_label("Questions matter?"), None);
        assert_eq!(strip_question_label("Qé"), None);
        assert_eq!(
            strip_question_label("__Question 3:__ Which?"),
            Some("Which?")
        );
        assert_eq!(strip_question_label("_Question_: Which?"), Some("Which?"));
        assert_eq!(
            strip_rationale_label("Why this matters: it does"),
            "it does"
        );
        assert_eq!(strip_rationale_label("Because"), "Because");
        assert_eq!(strip_heading("### Which?"), "Which?");
        assert_eq!(strip_heading("#hashtag"), "#hashtag");
    }
}
