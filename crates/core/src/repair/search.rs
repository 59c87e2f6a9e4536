//! [`Search`]: the hunt for the JSON in a reply: which start positions are handed to the
//! [`Fixer`], in which order, and which [`Attempt`] answers.
//!
//! The order is: the start of the reply when it begins with `{` or `[` (or a bare scalar that
//! fills it); the starts inside each code fence; then every `{`/`[` of the text. A start inside
//! text an earlier attempt read is skipped, so each byte is read by a bounded number of
//! attempts and an inner value is never taken for the whole. The first attempt that parses
//! with the root the hint asks for answers; failing that, a cut-off one, then any that parsed,
//! then the failure that read farthest. A start the fixer fails on is read a second time with
//! unescaped inner quotes allowed for (so at most twice).
//!
//! Never a fragment: an attempt whose value started its region (the reply's first token, or a
//! fence's) and then breaks after it was plainly JSON, or closes with more of its document
//! after it ([`Follow::MoreMembers`]), is the answer — refused, as [`Broken`]; found in prose,
//! it is a failure, and the search goes on only after its brackets close. A complete answer
//! with a second value right after it is refused as ambiguous unless that value is plainly no
//! answer (the same value again, or a root the hint does not take). A start that is a member's
//! value or a list's item (`"k": {`, `2, [`) is passed over with the value it starts.

use super::broken::Broken;
use super::extract::{self, Fence, Fences, Gap, Starts};
use super::fixer::{Fixed, Fixer, Outcome};
use super::follow::{self, Follow};
use super::tally::{Kind, Tally};
use super::{Ambiguity, Repaired, RootHint, parses, rival};
use std::ops::Range;

/// How many code fences are looked into.
const MAX_FENCES: usize = 8;
/// How many `{`/`[` starts are tried inside one fence, and in the whole text.
const MAX_STARTS: usize = 16;

/// Runs the fixer from `start` (`close_at_end`: the reply goes on after `src`); when it
/// fails, once more reading a `"` that cannot end its string (`"He said "hi""`) as a quote the
/// writer forgot to escape. That reading is kept only when it yields a whole value that
/// parses, so it never changes what the strict one reads.
fn fix(src: &[u8], start: usize, close_at_end: bool) -> Fixed {
    let strict = Fixer::fix(src, start, false, close_at_end);
    if !matches!(strict.outcome, Outcome::Failed { .. }) {
        return strict;
    }
    let lenient = Fixer::fix(src, start, true, close_at_end);
    match lenient.outcome {
        Outcome::Complete { .. } if valid(&lenient) => lenient,
        _ => strict,
    }
}

/// Whether a complete output is valid JSON: by the fixer's construction, unless it flagged
/// something only `serde_json` can settle.
fn valid(fixed: &Fixed) -> bool {
    if cfg!(test) && !fixed.needs_parse {
        // The fixer's grammar promises this; the tests hold it to the promise.
        assert!(parses(&fixed.text), "{:?}", fixed.text);
    }
    !fixed.needs_parse || parses(&fixed.text)
}

/// Whether the `{`/`[` at `src[start]` is a member's value (`"key": {`) or an item after
/// another (`"a", [`, `2, {`): then it lies inside a larger document that did not read, and is
/// never an answer of its own.
fn inside_document(src: &[u8], start: usize) -> bool {
    let before = src.get(..start).unwrap_or_default();
    let mut back = before.iter().rev().filter(|b| !b.is_ascii_whitespace());
    match back.next() {
        Some(b':') => matches!(back.next(), Some(b'"' | b'\'')),
        Some(b',') => matches!(back.next(), Some(b'"' | b'\'' | b']' | b'}' | b'0'..=b'9')),
        _ => false,
    }
}

/// Whether the scalar ending at `src[end]` is a member name: a `:` and a value follow it
/// (`"key": "value"`, not `"Note": the …`).
fn is_key(src: &[u8], end: usize) -> bool {
    let after =
        |from: usize| extract::first_token(src.get(from..).unwrap_or_default()).map(|k| from + k);
    let Some(colon) = after(end).filter(|&k| src[k] == b':') else {
        return false;
    };
    after(colon + 1).is_some_and(|value| {
        !matches!(
            Fixer::fix(src, value, false, false).outcome,
            Outcome::Failed { .. }
        )
    })
}

/// Where the value starting at `src[start]` ends, as far as the fixer reads it: the starts
/// inside it are passed over with it.
fn value_end(src: &[u8], start: usize) -> usize {
    match Fixer::fix(src, start, false, false).outcome {
        Outcome::Complete { end } => end,
        Outcome::Failed { at, .. } => at.max(start + 1),
        Outcome::Cut(_) => src.len(),
    }
}

/// One start position handed to the fixer, and what came of it.
#[derive(Debug)]
struct Attempt {
    /// The text the fixer read: the whole reply, or a fence's content.
    region: Range<usize>,
    /// The fence the region came from.
    fence: Option<Fence>,
    /// Where the value starts, within the region.
    start: usize,
    fixed: Fixed,
    /// Set when the value closes at this byte (of the reply) but more of its document follows.
    closed_early: Option<usize>,
}

impl Attempt {
    /// Whether the value starts its region: the reply's first token, or a fence's.
    fn started(&self, text: &str) -> bool {
        let region = text.as_bytes().get(self.region.clone()).unwrap_or_default();
        extract::first_token(region) == Some(self.start)
    }

    fn root_matches(&self, hint: RootHint) -> bool {
        match hint {
            RootHint::Any => true,
            RootHint::Object => self.fixed.text.starts_with('{'),
            RootHint::Array => self.fixed.text.starts_with('['),
        }
    }
}

/// What one attempt means for the search.
enum Verdict {
    /// Stop: this is the answer.
    Final,
    /// Go on; the region's text up to `covered` (an absolute position) was read by the attempt.
    Continue { covered: usize },
}

/// The search for the JSON in a reply, keeping the best attempt of each kind.
#[derive(Debug)]
pub(super) struct Search<'a> {
    text: &'a str,
    hint: RootHint,
    found: bool,
    /// The answer, once found.
    chosen: Option<Attempt>,
    /// The first attempt that parsed but whose root is not what the hint asks for.
    parsed: Option<Attempt>,
    /// The first attempt that ran into the end of its region while reading.
    cut: Option<Attempt>,
    /// The failed attempt that read farthest.
    failed: Option<(usize, Attempt)>,
    /// Set when a second answer follows the chosen value right after it.
    adjacent: Option<Ambiguity>,
    /// Set when the reply starts inside a value whose opening bracket is missing.
    headless: Option<Attempt>,
}

impl<'a> Search<'a> {
    pub(super) fn new(text: &'a str, hint: RootHint) -> Self {
        Self {
            text,
            hint,
            found: false,
            chosen: None,
            parsed: None,
            cut: None,
            failed: None,
            adjacent: None,
            headless: None,
        }
    }

    pub(super) fn run(&mut self) {
        let bytes = self.text.as_bytes();
        let whole = 0..bytes.len();
        let mut covered = 0;
        if let Some(p) = extract::first_token(bytes) {
            let b = bytes[p];
            if b == b'{' || b == b'[' {
                self.found = true;
                match self.attempt(whole.clone(), None, p) {
                    Verdict::Final => return,
                    Verdict::Continue { covered: c } => covered = c.max(p + 1),
                }
            } else if !matches!(b, b'/' | b'`' | b'~') {
                // A reply that is a bare scalar (`'text'`, `True`), with nothing after it.
                if let Verdict::Final = self.attempt_scalar(p) {
                    return;
                }
            }
        }
        for fence in Fences::new(bytes).take(MAX_FENCES) {
            self.found = true;
            if self.search_fence(&fence) {
                return;
            }
        }
        // A reply that starts inside a value: refused, unless a fence held the answer (every
        // start outside fences is inside that value).
        if let Some(headless) = self.headless.take() {
            self.chosen = Some(headless);
            return;
        }
        // Starts inside fences are tried again here, reading on past the fence's end: a
        // "closing fence" may have been a line of a string (with its line breaks unescaped).
        let mut starts = Starts::new(bytes, self.hint, MAX_STARTS);
        starts.skip_to(covered);
        while let Some(start) = starts.next() {
            self.found = true;
            if inside_document(bytes, start) {
                starts.skip_to(value_end(bytes, start));
                continue;
            }
            match self.attempt(whole.clone(), None, start) {
                Verdict::Final => return,
                Verdict::Continue { covered } => starts.skip_to(covered),
            }
        }
    }

    /// Tries the starts inside one fence; returns whether the answer was found.
    fn search_fence(&mut self, fence: &Fence) -> bool {
        let content = self
            .text
            .as_bytes()
            .get(fence.content.clone())
            .unwrap_or_default();
        let mut starts = Starts::new(content, self.hint, MAX_STARTS);
        while let Some(start) = starts.next() {
            if inside_document(content, start) {
                starts.skip_to(value_end(content, start));
                continue;
            }
            match self.attempt(fence.content.clone(), Some(fence.clone()), start) {
                Verdict::Final => return true,
                Verdict::Continue { covered } => {
                    starts.skip_to(covered.saturating_sub(fence.content.start));
                }
            }
        }
        false
    }

    /// Runs the fixer from `start` in `region` and files the result.
    fn attempt(&mut self, region: Range<usize>, fence: Option<Fence>, start: usize) -> Verdict {
        let src = self.text.as_bytes().get(region.clone()).unwrap_or_default();
        let fixed = fix(src, start, region.end < self.text.len());
        let base = region.start;
        let attempt = Attempt {
            region,
            fence,
            start,
            fixed,
            closed_early: None,
        };
        match attempt.fixed.outcome {
            Outcome::Complete { end } if valid(&attempt.fixed) => {
                self.complete(attempt, base + end)
            }
            Outcome::Complete { end } => self.fail(base + end, attempt),
            Outcome::Cut(_) => {
                // The fixer read consistently up to the end of the text: this is the reply, cut
                // off. (A fence's closing delimiter may end a region first; then another fence
                // may still hold a whole value.)
                if base + src.len() == self.text.len() {
                    self.chosen = Some(attempt);
                    return Verdict::Final;
                }
                self.cut.get_or_insert(attempt);
                Verdict::Continue {
                    covered: base + src.len(),
                }
            }
            // Plainly JSON that breaks: no part of it is taken. Where it started the reply (or
            // a fence) nothing after it is either; in prose, only what follows its brackets.
            Outcome::Failed {
                at,
                committed: true,
                ..
            } => self.broke(attempt, base + at),
            Outcome::Failed { at, .. } => self.fail(base + at, attempt),
        }
    }

    /// Files an attempt that read a whole value, ending at `end`, by what follows it: more of
    /// the same document (the value was closed too early: refused), a second value right after
    /// it (refused as ambiguous, unless it is plainly not an answer), or anything else.
    fn complete(&mut self, attempt: Attempt, end: usize) -> Verdict {
        let region = self.text.as_bytes().get(..attempt.region.end);
        match follow::follow(region.unwrap_or_default(), end) {
            Follow::MoreMembers { .. } => {
                let mut attempt = attempt;
                attempt.closed_early = Some(end.saturating_sub(1));
                self.broke(attempt, end)
            }
            Follow::SecondValue { at } if attempt.root_matches(self.hint) => {
                if self.second_answers(&attempt, at) {
                    self.adjacent = Some(Ambiguity::adjacent(self.text, at));
                }
                self.parsed(attempt, end)
            }
            _ => self.parsed(attempt, end),
        }
    }

    /// Whether the value starting at byte `at`, right after the answer `first`, is another
    /// answer: one whose root fits the hint and that is not the same value again (read whole,
    /// cut off, or broken after it plainly started).
    fn second_answers(&self, first: &Attempt, at: usize) -> bool {
        let bytes = self.text.as_bytes();
        let fits = match self.hint {
            RootHint::Any => true,
            RootHint::Object => bytes.get(at) == Some(&b'{'),
            RootHint::Array => bytes.get(at) == Some(&b'['),
        };
        if !fits {
            return false;
        }
        let end = first.region.end;
        let second = fix(bytes.get(..end).unwrap_or_default(), at, end < bytes.len());
        match second.outcome {
            Outcome::Complete { .. } if valid(&second) => {
                let read = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
                read(&second.text) != read(&first.fixed.text)
            }
            Outcome::Complete { .. } | Outcome::Cut(_) => true,
            Outcome::Failed { committed, .. } => committed,
        }
    }

    /// Tries the reply as a bare scalar (`'text'`, `True`) starting at `start` and filling it;
    /// only a success counts, since such a reply holds no `{`/`[` to speak of — except a
    /// scalar that a `:` and a value, or more items, follow (`"key": 1, …`, `1, 2, {…}]`): then
    /// the reply starts inside a JSON value whose opening bracket is missing, and is refused
    /// unless a code fence holds the answer.
    fn attempt_scalar(&mut self, start: usize) -> Verdict {
        let src = self.text.as_bytes();
        let fixed = fix(src, start, false);
        let Outcome::Complete { end } = fixed.outcome else {
            return Verdict::Continue { covered: 0 };
        };
        let opener_missing =
            is_key(src, end) || matches!(follow::follow(src, end), Follow::MoreMembers { .. });
        if !opener_missing && (Gap::of(src.get(end..).unwrap_or_default()).prose || !valid(&fixed))
        {
            return Verdict::Continue { covered: 0 };
        }
        self.found = true;
        let mut attempt = Attempt {
            region: 0..src.len(),
            fence: None,
            start,
            fixed,
            closed_early: None,
        };
        if opener_missing {
            attempt.fixed.text.clear();
            attempt.fixed.outcome = Outcome::Failed {
                at: start,
                committed: true,
                expected: "the opening '{' or '[' of the JSON value",
            };
            self.headless = Some(attempt);
            return Verdict::Continue { covered: 0 };
        }
        self.parsed(attempt, end)
    }

    /// Files an attempt whose text parses; `end` is where its value ended.
    fn parsed(&mut self, attempt: Attempt, end: usize) -> Verdict {
        if attempt.root_matches(self.hint) {
            self.chosen = Some(attempt);
            return Verdict::Final;
        }
        self.parsed.get_or_insert(attempt);
        Verdict::Continue { covered: end }
    }

    /// Files an attempt whose value plainly started and broke at `reached` (or closed there
    /// with more of its document after it): the answer, refused, when it started its region;
    /// otherwise a failure, the search going on after its brackets close.
    fn broke(&mut self, attempt: Attempt, reached: usize) -> Verdict {
        if attempt.started(self.text) {
            self.chosen = Some(attempt);
            return Verdict::Final;
        }
        let region = attempt.region.clone();
        let src = self.text.as_bytes().get(region.clone()).unwrap_or_default();
        let covered = region.start + extract::extent(src, attempt.start);
        self.fail(reached, attempt);
        Verdict::Continue {
            covered: covered.max(reached),
        }
    }

    fn fail(&mut self, reached: usize, attempt: Attempt) -> Verdict {
        if self.failed.as_ref().is_none_or(|(best, _)| reached > *best) {
            self.failed = Some((reached, attempt));
        }
        Verdict::Continue { covered: reached }
    }

    /// The attempt to answer with: a parsed one whose root fits the hint, else a cut one whose
    /// root fits, else any parsed one, else any cut one, else the failure that read farthest.
    fn best(&mut self) -> Option<Attempt> {
        if let Some(chosen) = self.chosen.take() {
            return Some(chosen);
        }
        let hint = self.hint;
        if self.cut.as_ref().is_some_and(|cut| cut.root_matches(hint)) {
            return self.cut.take();
        }
        self.parsed
            .take()
            .or_else(|| self.cut.take())
            .or_else(|| self.failed.take().map(|(_, a)| a))
    }

    pub(super) fn finish(mut self, mut tally: Tally) -> Repaired {
        let found_json = self.found;
        let Some(attempt) = self.best() else {
            return Repaired {
                text: self.text.to_owned(),
                repairs: tally.into_repairs(),
                truncated: None,
                found_json,
                ambiguous: None,
                broken: None,
            };
        };
        let closed_early = attempt.closed_early;
        self.tally_surroundings(&attempt, closed_early.is_none(), &mut tally);
        let region = attempt.region.clone();
        let ambiguous = match attempt.fixed.outcome {
            Outcome::Complete { end } if closed_early.is_none() => {
                self.adjacent.take().or_else(|| {
                    rival::rival(
                        self.text,
                        self.hint,
                        region.start + attempt.start..region.start + end,
                        &attempt.fixed.text,
                    )
                })
            }
            _ => None,
        };
        let mut text = attempt.fixed.text;
        // A broken value keeps the rest of its region as it was, so it never parses.
        let rest = |from: usize| self.text.get(from..region.end).unwrap_or_default();
        let (truncated, broken) = match attempt.fixed.outcome {
            Outcome::Cut(cut) => (Some(cut), None),
            Outcome::Failed { at, expected, .. } => {
                text.push_str(rest(region.start + at));
                let broken = Broken::failed(self.text, region.start + at, expected);
                (None, Some(broken))
            }
            Outcome::Complete { end } => match closed_early {
                Some(closer) => {
                    text.push_str(rest(region.start + end));
                    (None, Some(Broken::closed_early(self.text, closer)))
                }
                None => (None, None),
            },
        };
        Repaired {
            text,
            repairs: tally.into_repairs(),
            truncated,
            found_json,
            ambiguous,
            broken,
        }
    }

    /// Counts what was done around the attempt's value — the fence it came from, comments and
    /// prose dropped before it (and, when `after`, after it) — then the fixer's own repairs.
    fn tally_surroundings(&self, attempt: &Attempt, after: bool, tally: &mut Tally) {
        let bytes = self.text.as_bytes();
        let slice = |r: Range<usize>| bytes.get(r).unwrap_or_default();
        let region = attempt.region.clone();
        let (outside_before, outside_after) = match &attempt.fence {
            Some(fence) => {
                let opener = self.text.get(fence.opener.clone()).unwrap_or("```");
                let message = format!("took the JSON out of a {opener} code fence");
                tally.bump_with(Kind::CodeFence, message);
                (
                    Gap::of(slice(0..fence.span.start)).prose,
                    Gap::of(slice(fence.span.end..bytes.len())).prose,
                )
            }
            None => (false, false),
        };
        let leading = Gap::of(slice(region.start..region.start + attempt.start));
        tally.add(Kind::Comment, leading.comments);
        tally.add(
            Kind::SurroundingProse,
            u32::from(outside_before || leading.prose),
        );
        tally.extend(&attempt.fixed.tally);
        if !after {
            return;
        }
        let trailing = match attempt.fixed.outcome {
            Outcome::Complete { end } => Gap::of(slice(region.start + end..region.end)),
            _ => Gap::default(),
        };
        tally.add(Kind::Comment, trailing.comments);
        tally.add(
            Kind::SurroundingProse,
            u32::from(outside_after || trailing.prose),
        );
    }
}
