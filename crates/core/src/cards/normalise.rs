//! Text normalisation shared by detection and the tool form: [`Choice`] (an option's label,
//! description and default flag) from option text, with the `Label — description` split, the
//! `(recommended)` / `(default)` markers, Markdown emphasis removed and the length limits
//! ([`truncate`]); and [`selection_limit`], the multi-select phrases that set `max_selections`.

use super::{MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS};

/// An option before it gets its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Choice {
    pub label: String,
    pub description: Option<String>,
    pub is_default: bool,
}

/// Markers that make an option the default; matched case-insensitively and removed.
const DEFAULT_MARKERS: [&str; 6] = [
    "(recommended)",
    "[recommended]",
    "(default)",
    "[default]",
    "(suggested)",
    "[suggested]",
];

/// A label longer than this is not split at `: ` (the colon is then punctuation, not a separator).
const MAX_COLON_LABEL_CHARS: usize = 80;

/// The option written as `head` (the text after its marker) and `continuation` (indented lines
/// under it, which extend the description). `None` when nothing is left for a label.
pub(super) fn option(head: &str, continuation: &str) -> Option<Choice> {
    let (head, head_default) = take_default(&collapse(head));
    let (continuation, continuation_default) = take_default(&collapse(continuation));
    let head = if head_default { collapse(&head) } else { head };
    let (label, description) = split_label(&head);
    let continuation = plain(&continuation);
    let description = match (description, continuation.is_empty()) {
        (description, true) => description,
        (Some(d), false) => Some(format!("{d} {continuation}")),
        (None, false) => Some(continuation),
    };
    choice(label, description, head_default || continuation_default)
}

/// An option given as separate label and description (the tool form): whitespace collapsed,
/// markers removed, limits applied; the text is otherwise taken as given (a detected option fed
/// back through here comes out unchanged).
pub(super) fn option_parts(
    label: &str,
    description: Option<&str>,
    is_default: bool,
) -> Option<Choice> {
    choice(collapse(label), description.map(collapse), is_default)
}

/// The final steps for both forms: default markers (again: cleaning may have formed one, and
/// a label must never keep one), the label falling back to the description, the limits.
fn choice(label: String, description: Option<String>, is_default: bool) -> Option<Choice> {
    let (label, label_default) = unmark(&label);
    let (mut description, description_default) = match description {
        Some(d) => {
            let (d, found) = unmark(&d);
            ((!d.is_empty()).then_some(d), found)
        }
        None => (None, false),
    };
    let label = if label.is_empty() {
        description.take()?
    } else {
        label
    };
    Some(Choice {
        label: truncate(label, MAX_LABEL_CHARS),
        description: description.map(|d| truncate(d, MAX_DESCRIPTION_CHARS)),
        is_default: is_default || label_default || description_default,
    })
}

/// [`take_default`], with whitespace tidied where a marker was.
fn unmark(text: &str) -> (String, bool) {
    let (text, found) = take_default(text);
    if found {
        (collapse(&text), true)
    } else {
        (text, false)
    }
}

/// Whitespace runs (newlines included) as one space, trimmed.
pub(super) fn collapse(text: &str) -> String {
    let bytes = text.as_bytes();
    let tidy = bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        && !bytes.windows(2).any(|pair| pair == b"  ")
        && !text.chars().any(|c| c != ' ' && c.is_whitespace());
    if tidy {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Display text: whitespace collapsed, bold markers (`**`) removed, and a whole-text wrapping
/// of `__`, `*` or `_` unwrapped.
pub(super) fn plain(text: &str) -> String {
    let mut out = if text.contains('*') {
        collapse(&text.replace("**", ""))
    } else {
        collapse(text)
    };
    'unwrap: loop {
        for wrap in ["__", "*", "_"] {
            if out.len() > 2 * wrap.len() && out.starts_with(wrap) && out.ends_with(wrap) {
                out = out[wrap.len()..out.len() - wrap.len()].trim().to_owned();
                continue 'unwrap;
            }
        }
        return out;
    }
}

/// `text` with every default marker removed, and whether there was one. One pass that checks
/// the output's end at each closing bracket, so markers formed by removing an inner one
/// (`(recom(default)mended)`) go too and the result never holds a marker.
pub(super) fn take_default(text: &str) -> (String, bool) {
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    for c in text.chars() {
        out.push(c);
        if c != ')' && c != ']' {
            continue;
        }
        let ends_with_marker = DEFAULT_MARKERS.iter().find(|m| {
            out.len()
                .checked_sub(m.len())
                .and_then(|at| out.get(at..))
                .is_some_and(|tail| tail.eq_ignore_ascii_case(m))
        });
        if let Some(marker) = ends_with_marker {
            out.truncate(out.len() - marker.len());
            found = true;
        }
    }
    (out, found)
}

/// Splits `Label — description`, `Label - description`, `Label: description` and
/// `**Label** description` forms; a label without a clear separator stays whole.
pub(super) fn split_label(text: &str) -> (String, Option<String>) {
    let described = |label: &str, description: &str| {
        let description = plain(description);
        (
            clean_label(label),
            (!description.is_empty()).then_some(description),
        )
    };
    for wrap in ["**", "__"] {
        let Some(inner) = text.strip_prefix(wrap) else {
            continue;
        };
        let Some(close) = inner.find(wrap) else {
            continue;
        };
        let (label, rest) = (&inner[..close], inner[close + wrap.len()..].trim());
        if rest.is_empty() {
            return described(label, "");
        }
        if let Some(description) = after_separator(rest) {
            return described(label, description);
        }
        if label.trim_end().ends_with(':') {
            return described(label, rest);
        }
    }
    let text = plain(text);
    match separator(&text) {
        Some((at, len)) => described(&text[..at], &text[at + len..]),
        None => (clean_label(&text), None),
    }
}

/// The earliest clear separator in `text`: a spaced dash (` — `, ` – `, ` - `, ` -- `), or `: `
/// after a short label. Returns its byte offset and length.
fn separator(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let found = (1..bytes.len()).find_map(|at| match bytes[at] {
        b' ' => [" — ", " – ", " -- ", " - "]
            .iter()
            .find(|sep| text[at..].starts_with(**sep))
            .map(|sep| (at, sep.len())),
        b':' if bytes.get(at + 1) == Some(&b' ')
            && text[..at].chars().count() <= MAX_COLON_LABEL_CHARS =>
        {
            Some((at, 2))
        }
        _ => None,
    })?;
    (!text[found.0 + found.1..].trim().is_empty()).then_some(found)
}

/// `rest` after a leading separator (`:`, `-`, `--`, `—`, `–` and a space), if it starts with one.
fn after_separator(rest: &str) -> Option<&str> {
    ["--", ":", "-", "—", "–"].iter().find_map(|sep| {
        let after = rest.strip_prefix(sep)?;
        (after.is_empty() || after.starts_with(char::is_whitespace)).then(|| after.trim())
    })
}

fn clean_label(label: &str) -> String {
    plain(label).trim_end_matches(':').trim_end().to_owned()
}

/// `text` cut to at most `max` characters (a cut one ends with `…`), on a character boundary.
pub(super) fn truncate(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some(_) => {
            let keep = max.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            format!("{}…", text[..end].trim_end())
        }
    }
}

/// How many options the phrases in `hints` (the question, its lead-in and rationale) allow:
/// `pick up to N` → N, `select all that apply` / `choose any` / `one or more` → all of them;
/// `None` when nothing says (a single choice).
pub(super) fn selection_limit(hints: &str, options: usize) -> Option<u32> {
    let lower = hints.to_lowercase();
    let all = u32::try_from(options).unwrap_or(u32::MAX);
    if let Some(n) = up_to(&lower) {
        return Some(n.min(all));
    }
    const ALL: [&str; 10] = [
        "all that apply",
        "choose any",
        "select any",
        "pick any",
        "one or more",
        "choose multiple",
        "select multiple",
        "pick multiple",
        "as many as you",
        "multiple choices",
    ];
    ALL.iter().any(|p| lower.contains(p)).then_some(all)
}

/// N of the first `up to N` (digits or a number word up to ten).
fn up_to(lower: &str) -> Option<u32> {
    const WORDS: [&str; 10] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    lower.match_indices("up to ").find_map(|(at, phrase)| {
        let rest = &lower[at + phrase.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            return digits.parse().ok();
        }
        let word: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
        WORDS
            .iter()
            .position(|w| *w == word)
            .and_then(|i| u32::try_from(i + 1).ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> (String, Option<String>) {
        split_label(text)
    }

    #[test]
    fn labels_and_descriptions() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "Postgres — reliable and boring",
                "Postgres",
                Some("reliable and boring"),
            ),
            ("Postgres – reliable", "Postgres", Some("reliable")),
            ("Postgres - reliable", "Postgres", Some("reliable")),
            ("Postgres -- reliable", "Postgres", Some("reliable")),
            ("Postgres: reliable", "Postgres", Some("reliable")),
            ("**Postgres** — reliable", "Postgres", Some("reliable")),
            ("**Postgres:** reliable", "Postgres", Some("reliable")),
            ("**Postgres**: reliable", "Postgres", Some("reliable")),
            ("**Postgres**", "Postgres", None),
            (
                "**Serverless** (Lambda) — per call",
                "Serverless (Lambda)",
                Some("per call"),
            ),
            ("Meet at 10:30 on Monday", "Meet at 10:30 on Monday", None),
            ("Ratio 16:9", "Ratio 16:9", None),
            ("Well-known option", "Well-known option", None),
            ("2020–2024 data", "2020–2024 data", None),
            ("Trailing colon:", "Trailing colon", None),
            ("Label -", "Label -", None),
            (
                "A long sentence that goes on well past eighty characters before any colon shows up: here",
                "A long sentence that goes on well past eighty characters before any colon shows up: here",
                None,
            ),
        ];
        for (text, label, description) in cases {
            let got = split(text);
            assert_eq!(
                (got.0.as_str(), got.1.as_deref()),
                (*label, *description),
                "{text:?}"
            );
        }
    }

    #[test]
    fn default_markers() {
        assert_eq!(take_default("Go (Recommended)"), ("Go ".to_owned(), true));
        assert_eq!(take_default("[DEFAULT] Go"), (" Go".to_owned(), true));
        assert_eq!(
            take_default("Go (fast) [beta]"),
            ("Go (fast) [beta]".to_owned(), false)
        );
        assert_eq!(
            take_default("a (recom(default)mended) b"),
            ("a  b".to_owned(), true)
        );
        let parts = option_parts("  Go  (recom(default)mended) ", Some(" (default) "), false);
        let want = Choice {
            label: "Go".into(),
            description: None,
            is_default: true,
        };
        assert_eq!(parts, Some(want));
        let fallback = option_parts("(default)", Some("Fallback"), false);
        assert_eq!(fallback.map(|c| c.label).as_deref(), Some("Fallback"));
        let choice = option("**Rust** (recommended) — safe", "").unwrap();
        assert_eq!(choice.label, "Rust");
        assert_eq!(choice.description.as_deref(), Some("safe"));
        assert!(choice.is_default);
    }

    #[test]
    fn continuation_extends_the_description() {
        let choice = option("Rust — safe", "and   fast\n(default)").unwrap();
        assert_eq!(choice.description.as_deref(), Some("safe and fast"));
        assert!(choice.is_default);
        let choice = option("Rust", "Memory safety without a GC").unwrap();
        assert_eq!(
            choice.description.as_deref(),
            Some("Memory safety without a GC")
        );
        assert_eq!(option("(default)", ""), None);
        assert_eq!(option("**:** —", ""), None);
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(truncate("abcd".into(), 3), "ab…");
        let long = "é".repeat(250);
        let cut = truncate(long, 200);
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate("ab cd".into(), 4), "ab…");
    }

    #[test]
    fn plain_text() {
        assert_eq!(plain("  **Which**  one?\n"), "Which one?");
        assert_eq!(plain("_Which one?_"), "Which one?");
        assert_eq!(plain("*"), "*");
        assert_eq!(plain("snake_case_name"), "snake_case_name");
        assert_eq!(collapse(" a \t b\u{a0}c  d\n"), "a b c d");
        assert_eq!(collapse("a b"), "a b");
    }

    #[test]
    fn selection_phrases() {
        assert_eq!(
            selection_limit("Which apply? Select all that apply.", 4),
            Some(4)
        );
        assert_eq!(selection_limit("Pick up to 2 of these", 5), Some(2));
        assert_eq!(selection_limit("Choose up to three", 5), Some(3));
        assert_eq!(selection_limit("Pick up to 9", 4), Some(4));
        assert_eq!(selection_limit("It is up to you. Which one?", 4), None);
        assert_eq!(selection_limit("You can choose any of them", 3), Some(3));
        assert_eq!(selection_limit("Which one do you prefer?", 3), None);
    }
}
