//! [`Output`]: the repaired text being written, the [`Tally`] of changes made to it, and
//! whether it holds something that only a full parse can vouch for.
//!
//! The fixer writes JSON's grammar by construction, so most outputs need no second parse.
//! What the grammar alone does not settle is flagged: `\u` escapes of UTF-16 surrogates (which
//! must pair up), numbers that may overflow an `f64`, and nesting deeper than `serde_json`'s
//! limit. Only then does the caller pay for a parse.

use super::tally::{Kind, Tally};

/// The repaired text being written, with what was changed to write it.
#[derive(Debug, Clone, Default)]
pub(super) struct Output {
    pub(super) bytes: Vec<u8>,
    pub(super) tally: Tally,
    /// Whether the text needs a full parse before it can be called valid.
    pub(super) needs_parse: bool,
}

impl Output {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(capacity),
            ..Self::default()
        }
    }

    pub(super) fn push(&mut self, b: u8) {
        self.bytes.push(b);
    }

    pub(super) fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Records one more application of `kind`.
    pub(super) fn bump(&mut self, kind: Kind) {
        self.tally.bump(kind);
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }
}
