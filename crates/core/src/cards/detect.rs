//! [`detect`]: question cards in a finished reply, and the reply without them.
//!
//! Options come first: option groups on their own lines ([`Doc::groups`]) and inline runs
//! ([`inline::runs`]). From each, detection walks back over the sentences before it: an optional
//! lead-in ("For example:"), at most a few sentences of rationale, then the question — a sentence
//! ending in `?`, at most two blank-line-separated paragraphs back. Options without such a
//! question stay text. Every step is a bounded scan, so the whole is linear in the reply.

use super::build::Draft;
use super::doc::{Doc, Group};
use super::inline::{self, InlineRun};
use super::lines::Family;
use super::normalise::{self, Choice, plain};
use super::sentences::{
    clean, is_lead_in, is_question, strip_heading, strip_question_label, strip_rationale_label,
};
use super::{Category, Detection, MAX_RATIONALE_CHARS};

/// At most this many sentences between a question and its options.
const MAX_BETWEEN: usize = 3;
/// At most this many paragraph breaks between a question and its options.
const MAX_PARAGRAPHS_BACK: usize = 2;

/// Finds question+options patterns in a complete reply. `seed` makes question ids unique across
/// replies (the engine passes e.g. the conversation id and turn number); ids are deterministic
/// given `(seed, text)`. Never fails: text without a recognisable pattern yields no cards and
/// the reply, trimmed, as the message.
pub fn detect(text: &str, category: Category, seed: &str) -> Detection {
    if !text.contains('?') {
        return Detection {
            message: text.trim().to_owned(),
            cards: Vec::new(),
        };
    }
    let doc = Doc::new(text);
    let found = find(&doc);
    let spans: Vec<(usize, usize)> = found.iter().map(|(_, span)| *span).collect();
    let cards = found
        .into_iter()
        .enumerate()
        .map(|(index, (draft, _))| draft.into_card(category, seed, index))
        .collect();
    let message = if spans.is_empty() {
        text.trim().to_owned()
    } else {
        without(text, &spans)
    };
    Detection { message, cards }
}

/// The byte ranges [`detect`] cuts out of `text` as cards (sorted, disjoint): from each card's
/// question (or the rationale or `Question:` label before it) through its last option. The
/// message is `text` without them.
pub(crate) fn spans(text: &str) -> Vec<(usize, usize)> {
    if !text.contains('?') {
        return Vec::new();
    }
    let doc = Doc::new(text);
    find(&doc).into_iter().map(|(_, span)| span).collect()
}

/// Every card of a laid-out reply with its span, in reply order.
fn find(doc: &Doc<'_>) -> Vec<(Draft, (usize, usize))> {
    let mut candidates: Vec<(usize, Candidate<'_>)> = doc
        .groups
        .iter()
        .filter_map(|g| Some((doc.lines.get(g.first_line)?.start, Candidate::Block(g))))
        .collect();
    let runs = inline::runs(doc);
    candidates.extend(
        runs.iter()
            .filter_map(|r| Some((r.markers.first()?.0, Candidate::Inline(r)))),
    );
    candidates.sort_by_key(|(at, _)| *at);

    let mut found = Vec::new();
    let mut bound = 0;
    for (at, candidate) in candidates {
        if at < bound {
            continue;
        }
        let card = match candidate {
            Candidate::Block(group) => block(doc, group, bound),
            Candidate::Inline(run) => inline_card(doc, run, bound),
        };
        if let Some((draft, span)) = card {
            bound = span.1;
            found.push((draft, span));
        }
    }
    found
}

#[derive(Debug, Clone, Copy)]
enum Candidate<'a> {
    Block(&'a Group),
    Inline(&'a InlineRun),
}

/// What the walk back from a list of options found.
#[derive(Debug)]
struct Walk {
    question: usize,
    lead_in: Option<usize>,
    /// Sentences between question and options, nearest first.
    between: Vec<usize>,
}

/// The question, rationale and where the card's text starts.
#[derive(Debug)]
struct Ask {
    start: usize,
    question: String,
    rationale: Option<String>,
    header: bool,
}

fn block(doc: &Doc<'_>, group: &Group, bound: usize) -> Option<(Draft, (usize, usize))> {
    let para = doc.para_before_line(group.first_line)?;
    let end = doc.paras.get(para)?.sentences.end;
    let walk = walk(doc, para, end, true, bound)?;
    let options = group
        .options
        .iter()
        .map(|(head, continuation)| normalise::option(head, continuation))
        .collect::<Option<Vec<Choice>>>()?;
    let lead_in = walk.lead_in.map(|i| sentence_text(doc, i));
    let q = doc.sentences.get(walk.question)?;
    let question = doc.text.get(q.body..q.end)?.to_owned();
    let ask = ask(doc, walk.question, &walk.between, question, bound)?;
    let style = if ask.header {
        "header"
    } else if group.family == Family::Number {
        "numbered"
    } else {
        "lettered"
    };
    Some((
        draft(&ask, lead_in.as_deref(), options, style),
        (ask.start, group.end),
    ))
}

fn inline_card(doc: &Doc<'_>, run: &InlineRun, bound: usize) -> Option<(Draft, (usize, usize))> {
    let text = doc.text;
    let first = doc.sentences.get(run.first_sentence)?;
    let first_marker = run.markers.first()?.0;
    let prefix_start = if first.body <= first_marker {
        first.body
    } else {
        first.start
    };
    let prefix = text.get(prefix_start..first_marker)?;
    let options = run
        .options
        .iter()
        .map(|o| normalise::option(o, ""))
        .collect::<Option<Vec<Choice>>>()?;
    let last_question = is_question(&clean(text, doc.sentences.get(run.last_sentence)?));
    let (ask, lead_in) = if run.first_sentence == run.last_sentence && last_question {
        // The options are inside the question: "Which do you prefer: (A) x or (B) y?"
        let question = inline_question(text, prefix_start, prefix, run)?;
        (ask(doc, run.first_sentence, &[], question, bound)?, None)
    } else {
        // The options follow the question: "Which one? (A) x, (B) y."
        let lead = plain(prefix.trim_start_matches(['-', '*', '+', '•', ' ']));
        let walk = walk(doc, first.para, run.first_sentence, lead.is_empty(), bound)?;
        let lead = match walk.lead_in {
            Some(i) => sentence_text(doc, i),
            None => lead,
        };
        let q = doc.sentences.get(walk.question)?;
        let question = text.get(q.body..q.end)?.to_owned();
        (
            ask(doc, walk.question, &walk.between, question, bound)?,
            Some(lead),
        )
    };
    let style = if ask.header { "header" } else { "inline" };
    Some((
        draft(&ask, lead_in.as_deref(), options, style),
        (ask.start, run.end),
    ))
}

/// The question of a sentence with its options inside: the words before the options when they
/// end in a separator ("Which do you prefer:" → "Which do you prefer?"), else the sentence with
/// the option markers taken out.
fn inline_question(text: &str, start: usize, prefix: &str, run: &InlineRun) -> Option<String> {
    let head = prefix.trim_end();
    if let Some(stem) = head.strip_suffix([':', ',', ';', '—', '–', '-'])
        && stem.chars().any(char::is_alphanumeric)
    {
        return Some(format!("{}?", stem.trim_end()));
    }
    let mut out = String::new();
    let mut at = start;
    for &(from, to) in &run.markers {
        out.push_str(text.get(at..from)?);
        at = to;
    }
    out.push_str(text.get(at..run.end)?);
    Some(out)
}

fn draft(ask: &Ask, lead_in: Option<&str>, options: Vec<Choice>, style: &'static str) -> Draft {
    let hints = [
        Some(ask.question.as_str()),
        lead_in,
        ask.rationale.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    Draft {
        question: ask.question.clone(),
        rationale: ask.rationale.clone(),
        options,
        max_selections: None,
        hints,
        style,
    }
}

fn sentence_text(doc: &Doc<'_>, index: usize) -> String {
    doc.sentences
        .get(index)
        .map(|s| clean(doc.text, s))
        .unwrap_or_default()
}

/// Walks back from sentence `end` (exclusive), starting in paragraph `para`, to the question.
fn walk(doc: &Doc<'_>, para: usize, end: usize, allow_lead_in: bool, bound: usize) -> Option<Walk> {
    let mut para = para;
    let mut crossed = 0;
    let mut between = Vec::new();
    let mut between_chars = 0;
    let mut lead_in = None;
    let mut first = true;
    for index in (0..end).rev() {
        let sentence = doc.sentences.get(index)?;
        if sentence.start < bound {
            return None;
        }
        if sentence.para != para {
            let adjacent = doc.paras.get(para).is_some_and(|p| p.adjacent_prev);
            if sentence.para + 1 != para || !adjacent || crossed == MAX_PARAGRAPHS_BACK {
                return None;
            }
            crossed += 1;
            para = sentence.para;
        }
        let text = clean(doc.text, sentence);
        if std::mem::take(&mut first) && allow_lead_in && is_lead_in(&text) {
            lead_in = Some(index);
            continue;
        }
        if is_question(&text) {
            return Some(Walk {
                question: index,
                lead_in,
                between,
            });
        }
        let heading = doc.paras.get(sentence.para).is_some_and(|p| p.heading);
        if sentence.list_item || heading {
            return None;
        }
        between_chars += text.chars().count();
        between.push(index);
        if between.len() > MAX_BETWEEN || between_chars > MAX_RATIONALE_CHARS {
            return None;
        }
    }
    None
}

/// The question (its `Question:` label taken off), the rationale (the sentences between question
/// and options, else the sentence before the question in its paragraph) and where the card's
/// text starts.
fn ask(doc: &Doc<'_>, q: usize, between: &[usize], question: String, bound: usize) -> Option<Ask> {
    let sentence = doc.sentences.get(q)?;
    let mut start = sentence.start;
    let cleaned = plain(strip_heading(&question));
    let (mut header, question) = match strip_question_label(&cleaned) {
        Some(rest) => (true, rest.to_owned()),
        None => (false, cleaned.clone()),
    };
    if !is_question(&question) {
        return None;
    }
    // The sentence before, not taken by an earlier card: a bare `**Question:**` label may be
    // the paragraph (or heading) right above; a rationale is in the question's paragraph.
    let previous = q
        .checked_sub(1)
        .and_then(|i| doc.sentences.get(i))
        .filter(|s| s.start >= bound);
    let label_above = previous.filter(|s| {
        let adjacent = s.para + 1 == sentence.para
            && doc
                .paras
                .get(sentence.para)
                .is_some_and(|p| p.adjacent_prev);
        (s.para == sentence.para || adjacent)
            && strip_question_label(&clean(doc.text, s)) == Some("")
    });
    if let (false, Some(label)) = (header, label_above) {
        header = true;
        start = label.start;
    }
    let before = previous.filter(|s| s.para == sentence.para);
    let before_text = before.map(|s| clean(doc.text, s));
    let rationale = if !between.is_empty() {
        let parts: Vec<String> = between
            .iter()
            .rev()
            .map(|&i| sentence_text(doc, i))
            .collect();
        Some(strip_rationale_label(&parts.join(" ")).to_owned())
    } else if header {
        None
    } else {
        match (before, before_text) {
            (Some(s), Some(text))
                if !s.list_item
                    && !is_question(&text)
                    && !text.ends_with(':')
                    && !text.is_empty()
                    && text.chars().count() <= MAX_RATIONALE_CHARS
                    && !doc.paras.get(s.para).is_some_and(|p| p.heading) =>
            {
                start = s.start;
                Some(strip_rationale_label(&text).to_owned())
            }
            _ => None,
        }
    };
    Some(Ask {
        start,
        question,
        rationale,
        header,
    })
}

/// `text` without the byte ranges `spans` (sorted, disjoint): each cut joined with one space
/// when text continues on the same line, blank-line runs collapsed to one, trimmed.
fn without(text: &str, spans: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end) in spans {
        out.push_str(
            text.get(at..start)
                .unwrap_or("")
                .trim_end_matches([' ', '\t']),
        );
        let rest = text.get(end..).unwrap_or("");
        let kept = rest.trim_start_matches([' ', '\t']);
        at = text.len() - kept.len();
        let same_line = kept.chars().next().is_some_and(|c| c != '\n' && c != '\r');
        if same_line && !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
    }
    out.push_str(text.get(at..).unwrap_or(""));
    let mut message = String::with_capacity(out.len());
    let mut blank = false;
    for line in out.lines() {
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        if !message.is_empty() {
            message.push('\n');
            if blank {
                message.push('\n');
            }
        }
        blank = false;
        message.push_str(line);
    }
    message.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_joined_and_blank_runs_collapsed() {
        let text = "Intro. Cut me. Outro.\n\n\n\nNext\n  \nLast";
        let start = text.find("Cut").unwrap();
        let end = start + "Cut me.".len();
        assert_eq!(
            without(text, &[(start, end)]),
            "Intro. Outro.\n\nNext\n\nLast"
        );
        assert_eq!(without("  Only cut  ", &[(2, 10)]), "");
        assert_eq!(without("a\r\nb?\r\nc", &[(3, 5)]), "a\n\nc");
    }

    #[test]
    fn inline_question_forms() {
        let doc = Doc::new("Which do you prefer: (A) tea or (B) coffee?");
        let runs = inline::runs(&doc);
        let run = &runs[0];
        let start = doc.sentences[run.first_sentence].body;
        let prefix = &doc.text[start..run.markers[0].0];
        assert_eq!(
            inline_question(doc.text, start, prefix, run).as_deref(),
            Some("Which do you prefer?")
        );
        let doc = Doc::new("Would you like (A) tea or (B) coffee?");
        let runs = inline::runs(&doc);
        let run = &runs[0];
        let prefix = &doc.text[0..run.markers[0].0];
        assert_eq!(
            inline_question(doc.text, 0, prefix, run)
                .map(|q| plain(&q))
                .as_deref(),
            Some("Would you like tea or coffee?")
        );
    }
}
