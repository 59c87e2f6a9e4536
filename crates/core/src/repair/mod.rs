//! [`repair`]: turns an LLM's almost-JSON reply into JSON that `serde_json` can parse, naming
//! every change as a [`Repair`] and reporting a cut-off reply as a [`Truncation`].
//!
//! Text that already parses is returned unchanged. Otherwise the JSON is looked for, in order:
//! at the start of the reply when it begins with `{` or `[`; inside each Markdown code fence;
//! then at each `{`/`[` of the text (a bounded number of them). The search (`search.rs`) hands
//! each start to the token-level fixer (`fixer.rs`, with `string.rs` and `scalar.rs`), and the
//! first result that parses, and whose root is what the [`RootHint`] asks for, wins. Starts
//! that lie inside a value an earlier start already read are skipped, so an inner object is
//! never taken for the answer, and the total work stays linear in the length of the reply.
//!
//! Refused rather than guessed: a reply that ends with brackets still open (reported as
//! [`Truncation`]: a number or a list that ends there may have gone on); a reply that holds two
//! different answers of the same shape, or a second value right after the first
//! ([`Ambiguity`], `rival.rs`); and — never a fragment — a value that started the reply (or a
//! fence) and then breaks, or closes and goes on with more members (`{"a": 1}, "b": 2}`, read
//! by `follow.rs`): [`Broken`], with the place and a quote (`broken.rs`). Prose is dropped
//! only around the JSON: a broken value found in prose is passed over with everything inside
//! its brackets, and a bracket that is a member's value or a list's item is never an answer.

mod broken;
mod extract;
mod fixer;
pub(crate) mod follow;
#[cfg(test)]
mod fragment_tests;
mod output;
mod rival;
mod scalar;
mod search;
mod string;
mod tally;
#[cfg(test)]
mod tests;

use crate::report::Repair;
pub use broken::Broken;
pub(crate) use broken::{line_column, quote_around};
use search::Search;
use tally::{Kind, Tally};

/// What the contract expects at the root, used to pick the JSON inside prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RootHint {
    /// Any JSON value.
    #[default]
    Any,
    /// An object (`{…}`).
    Object,
    /// An array (`[…]`).
    Array,
}

/// Where and how a reply was cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// JSON pointer of the value being written when the text ended.
    pub path: String,
    /// What was cut, in words.
    pub message: String,
}

/// A reply that holds two different answers of the same shape (`Option A: {…} Option B: {…}`):
/// taking either would be a guess, so none is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguity {
    /// What was found, in words, for the feedback.
    pub message: String,
    /// The start of the second answer, quoted.
    pub found: String,
}

impl Ambiguity {
    /// The answers start at byte `first` and `second` of `text`.
    fn new(text: &str, first: usize, second: usize) -> Self {
        let line = |at: usize| text.get(..at).unwrap_or(text).matches('\n').count() + 1;
        let (a, b) = (line(first.min(second)), line(first.max(second)));
        let place = if a == b {
            format!("both on line {a}")
        } else {
            format!("on lines {a} and {b}")
        };
        let rest = text.get(second..).unwrap_or_default();
        let found: String = rest
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(60)
            .collect();
        Self {
            message: format!(
                "the reply holds two different JSON answers of the same shape ({place}); send exactly one"
            ),
            found,
        }
    }

    /// A second value starts at byte `second` of `text`, right after the answer.
    fn adjacent(text: &str, second: usize) -> Self {
        let (line, column) = line_column(text, second);
        Self {
            message: format!(
                "a second JSON value starts right after the first, at line {line}, column {column}; send exactly one JSON value"
            ),
            found: quote_around(text, second),
        }
    }
}

/// The result of [`repair`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The repaired text (the best candidate); it may still fail to parse.
    pub text: String,
    /// One entry per kind of change, in first-applied order; `count` is how often it applied.
    pub repairs: Vec<Repair>,
    /// Set when the reply was cut off.
    pub truncated: Option<Truncation>,
    /// False when nothing that could start JSON (`{`, `[`, a code fence) was found.
    pub found_json: bool,
    /// Set when the reply holds two different answers; `text` is then the first of them.
    pub ambiguous: Option<Ambiguity>,
    /// Set when the reply's JSON started but cannot be read whole; `text` then does not parse.
    pub broken: Option<Broken>,
}

/// Repairs an almost-JSON reply. Text that already parses is returned unchanged.
pub fn repair(raw: &str, hint: RootHint) -> Repaired {
    if parses(raw) {
        return Repaired {
            text: raw.to_owned(),
            repairs: Vec::new(),
            truncated: None,
            found_json: true,
            ambiguous: None,
            broken: None,
        };
    }
    let mut seed = Tally::default();
    let text = match raw.strip_prefix('\u{feff}') {
        Some(rest) => {
            seed.bump(Kind::Bom);
            rest
        }
        None => raw,
    };
    let mut search = Search::new(text, hint);
    search.run();
    search.finish(seed)
}

/// Whether `text` is JSON as `serde_json` reads it (into a `Value`, the contract's test).
fn parses(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}
