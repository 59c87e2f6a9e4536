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

use super::extract::{self, Fence, Fences, Gap, Starts};
use super::fixer::{Fixed, Fixer, Outcome};
use super::tally::{Kind, Tally};
use super::{Repaired, RootHint, parses, rival};
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
}

impl Attempt {
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
        // Starts inside fences are tried again here, reading on past the fence's end: a
        // "closing fence" may have been a line of a string (with its line breaks unescaped).
        let mut starts = Starts::new(bytes, self.hint, MAX_STARTS);
        starts.skip_to(covered);
        while let Some(start) = starts.next() {
            self.found = true;
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
        };
        match attempt.fixed.outcome {
            Outcome::Complete { end } if valid(&attempt.fixed) => self.parsed(attempt, base + end),
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
            Outcome::Failed { at } => self.fail(base + at, attempt),
        }
    }

    /// Tries the reply as a bare scalar (`'text'`, `True`) starting at `start` and filling it;
    /// only a success counts, since such a reply holds no `{`/`[` to speak of.
    fn attempt_scalar(&mut self, start: usize) -> Verdict {
        let src = self.text.as_bytes();
        let fixed = fix(src, start, false);
        match fixed.outcome {
            Outcome::Complete { end }
                if !Gap::of(src.get(end..).unwrap_or_default()).prose && valid(&fixed) =>
            {
                self.found = true;
                let attempt = Attempt {
                    region: 0..src.len(),
                    fence: None,
                    start,
                    fixed,
                };
                self.parsed(attempt, end)
            }
            _ => Verdict::Continue { covered: 0 },
        }
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
            };
        };
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
        let trailing = match attempt.fixed.outcome {
            Outcome::Complete { end } => Gap::of(slice(region.start + end..region.end)),
            _ => Gap::default(),
        };
        tally.add(Kind::Comment, trailing.comments);
        tally.add(
            Kind::SurroundingProse,
            u32::from(outside_after || trailing.prose),
        );
        let ambiguous = match attempt.fixed.outcome {
            Outcome::Complete { end } => rival::rival(
                self.text,
                self.hint,
                region.start + attempt.start..region.start + end,
                &attempt.fixed.text,
            ),
            _ => None,
        };
        let mut text = attempt.fixed.text;
        let truncated = match attempt.fixed.outcome {
            Outcome::Cut(cut) => Some(cut),
            Outcome::Failed { at } => {
                // Keep the rest of the region as it was, so a parse error points at it.
                text.push_str(
                    self.text
                        .get(region.start + at..region.end)
                        .unwrap_or_default(),
                );
                None
            }
            Outcome::Complete { .. } => None,
        };
        Repaired {
            text,
            repairs: tally.into_repairs(),
            truncated,
            found_json,
            ambiguous,
        }
    }
}
