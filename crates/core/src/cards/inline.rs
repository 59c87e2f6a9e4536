//! [`InlineRun`]: options written inside a paragraph — "… (A) x, (B) y, or (C) z" — found by
//! scanning for `(A)` / `(a)` / `(1)` tokens that count up in sequence, each next one in the
//! same sentence or starting the next.

use super::doc::Doc;
use super::lines::{Family, token};
use super::{MAX_OPTIONS, MIN_OPTIONS};

/// Inline options within one paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct InlineRun {
    /// Byte range of each `(X)` token.
    pub markers: Vec<(usize, usize)>,
    /// Each option's raw text, separators (`,`, `or`, `and`, the final `?` / `.`) removed.
    pub options: Vec<String>,
    /// Sentence index (in [`Doc::sentences`]) of the first and of the last token.
    pub first_sentence: usize,
    pub last_sentence: usize,
    /// Byte offset where the last option's sentence ends.
    pub end: usize,
}

#[derive(Debug)]
struct Open {
    family: Family,
    expected: u32,
    broken: bool,
    markers: Vec<(usize, usize)>,
    /// Where the next run of the same family starts, if one does.
    restart: Option<usize>,
}

/// A run of tokens, and where the next run of its family starts.
type TokenRun = (Vec<(usize, usize)>, Option<usize>);

/// The inline option runs of every paragraph, in reply order.
pub(super) fn runs(doc: &Doc<'_>) -> Vec<InlineRun> {
    let mut out = Vec::new();
    for para in &doc.paras {
        let (Some(first), Some(last)) = (
            doc.sentences.get(para.sentences.start),
            para.sentences
                .end
                .checked_sub(1)
                .and_then(|i| doc.sentences.get(i)),
        ) else {
            continue;
        };
        let (start, end) = (first.start, last.end);
        let mut found: Vec<InlineRun> = Vec::new();
        for (markers, restart) in token_runs(doc.text, start, end) {
            if let Some(run) = build(doc, para.sentences.clone(), markers, restart) {
                found.push(run);
            }
        }
        found.sort_by_key(|r| r.markers.first().map_or(0, |m| m.0));
        let mut taken_to = 0;
        for run in found {
            let first_marker = run.markers.first().map_or(0, |m| m.0);
            if first_marker >= taken_to {
                taken_to = run.end;
                out.push(run);
            }
        }
    }
    out
}

/// Runs of `(X)` tokens in `text[start..end]` that start at A / a / 1 and count up by one.
fn token_runs(text: &str, start: usize, end: usize) -> Vec<TokenRun> {
    let mut open: Vec<Open> = Vec::new();
    let mut done = Vec::new();
    let region = &text[start..end];
    for (offset, _) in region.match_indices('(') {
        let at = start + offset;
        let before_ok = text[..at].chars().next_back().is_none_or(|c| {
            c.is_whitespace() || matches!(c, ':' | ',' | ';' | '—' | '–' | '-' | '*')
        });
        if !before_ok {
            continue;
        }
        let Some((family, value, used)) = token(&text[at..end], true) else {
            continue;
        };
        let after = at + used;
        if !text[after..end].starts_with(char::is_whitespace) {
            continue;
        }
        let slot = open.iter().position(|o| o.family == family);
        if value == 1 {
            if let Some(i) = slot {
                let mut closed = open.swap_remove(i);
                closed.restart = Some(at);
                done.push(closed);
            }
            open.push(Open {
                family,
                expected: 2,
                broken: false,
                markers: vec![(at, after)],
                restart: None,
            });
        } else if let Some(run) = slot.and_then(|i| open.get_mut(i)) {
            run.broken |= value != run.expected;
            run.expected = value + 1;
            run.markers.push((at, after));
        }
    }
    done.extend(open);
    done.into_iter()
        .filter(|r| !r.broken && (MIN_OPTIONS..=MAX_OPTIONS).contains(&r.markers.len()))
        .map(|r| (r.markers, r.restart))
        .collect()
}

fn build(
    doc: &Doc<'_>,
    sentences: std::ops::Range<usize>,
    markers: Vec<(usize, usize)>,
    restart: Option<usize>,
) -> Option<InlineRun> {
    let text = doc.text;
    let para = doc.sentences.get(sentences.clone())?;
    let sentence_of = |pos: usize| {
        let i = para.partition_point(|s| s.end <= pos);
        para.get(i)
            .filter(|s| s.start <= pos)
            .map(|_| sentences.start + i)
    };
    let mut indices = Vec::with_capacity(markers.len());
    for &(at, _) in &markers {
        indices.push(sentence_of(at)?);
    }
    // Each token is in the sentence of the one before, or starts the next sentence.
    for (pair, marks) in indices.windows(2).zip(markers.windows(2)) {
        let same = pair[0] == pair[1];
        let starts_next = pair[1] == pair[0] + 1
            && doc
                .sentences
                .get(pair[1])
                .is_some_and(|s| s.start == marks[1].0);
        if !same && !starts_next {
            return None;
        }
    }
    let last_sentence = *indices.last()?;
    let last_end = doc.sentences.get(last_sentence)?.end;
    // A new run starting inside the last option's sentence makes both ambiguous; giving up
    // here also keeps the work linear (no option text reaches past the next run).
    if restart.is_some_and(|at| at < last_end) {
        return None;
    }
    let mut options = Vec::with_capacity(markers.len());
    for (i, &(_, after)) in markers.iter().enumerate() {
        let until = markers.get(i + 1).map_or(last_end, |next| next.0);
        let option = trim_option(text.get(after..until)?);
        if option.is_empty() {
            return None;
        }
        options.push(option.to_owned());
    }
    Some(InlineRun {
        markers,
        options,
        first_sentence: *indices.first()?,
        last_sentence,
        end: last_end,
    })
}

/// An inline option's text without the separators around it: `x, or` → `x`, `z?` → `z`.
fn trim_option(raw: &str) -> &str {
    let mut text = raw.trim();
    loop {
        let before = text;
        text = text
            .trim_end_matches([',', ';', '.', '?', '!', '…'])
            .trim_end();
        for word in ["or", "and"] {
            let Some(head) = text.len().checked_sub(word.len()).and_then(|at| {
                let (head, tail) = (text.get(..at)?, text.get(at..)?);
                let bounded = head.is_empty() || head.ends_with(char::is_whitespace);
                (tail.eq_ignore_ascii_case(word) && bounded).then_some(head)
            }) else {
                continue;
            };
            text = head.trim_end();
        }
        if text == before {
            return text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(text: &str) -> Vec<Vec<String>> {
        runs(&Doc::new(text))
            .into_iter()
            .map(|r| r.options)
            .collect()
    }

    #[test]
    fn inline_options() {
        assert_eq!(
            options("Do you want (A) a dashboard, (B) a weekly report, or (C) alerts?"),
            [["a dashboard", "a weekly report", "alerts"]]
        );
        assert_eq!(
            options("Which? (1) Fast. (2) Cheap. (3) Good."),
            [["Fast", "Cheap", "Good"]]
        );
        assert_eq!(
            options("Which db? (A) x, (B) y. Which host? (A) aws, or (B) gcp."),
            [["x", "y"], ["aws", "gcp"]]
        );
        assert_eq!(
            options("Tea (a) or coffee (b) then (a) x (b) y."),
            [["x", "y"]],
            "a restart inside the last option's sentence ends the first run"
        );
        assert!(
            options("Clauses (a) and (c) apply here.").is_empty(),
            "out of sequence"
        );
        assert!(
            options("See f(A) and g(B) here.").is_empty(),
            "glued to a word"
        );
        assert!(
            options("(A) one. More text. (B) two.").is_empty(),
            "a whole sentence between two options"
        );
    }

    #[test]
    fn separators_are_trimmed() {
        assert_eq!(trim_option(" x, or "), "x");
        assert_eq!(trim_option("x and"), "x");
        assert_eq!(trim_option("sand"), "sand");
        assert_eq!(trim_option("or"), "");
        assert_eq!(trim_option("SQLite?"), "SQLite");
        assert_eq!(trim_option("rock and roll"), "rock and roll");
    }
}
