//! [`Tally`]: the repairs one attempt made, counted per [`Kind`] in first-applied order.
//!
//! The fixer and the extraction step only bump counters here; the words a person reads are
//! written once, at the end, by [`Tally::into_repairs`], so the hot loop never formats text.

use crate::repair_kind::RepairKind;
use crate::report::Repair;

/// One kind of change the lenient repair makes to the raw text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Bom,
    CodeFence,
    SurroundingProse,
    Comment,
    TrailingComma,
    ExtraComma,
    MissingComma,
    PythonLiteral,
    NonFiniteNumber,
    SingleQuote,
    SmartQuote,
    RawNewline,
    ControlCharacter,
    UnquotedKey,
    InvalidEscape,
    UnescapedQuote,
    UnclosedBracket,
}

impl Kind {
    /// The kind as it appears in [`Repair::kind`].
    pub(super) fn repair_kind(self) -> RepairKind {
        match self {
            Self::Bom => RepairKind::Bom,
            Self::CodeFence => RepairKind::CodeFence,
            Self::SurroundingProse => RepairKind::SurroundingProse,
            Self::Comment => RepairKind::Comment,
            Self::TrailingComma => RepairKind::TrailingComma,
            Self::ExtraComma => RepairKind::ExtraComma,
            Self::MissingComma => RepairKind::MissingComma,
            Self::PythonLiteral => RepairKind::PythonLiteral,
            Self::NonFiniteNumber => RepairKind::NonFiniteNumber,
            Self::SingleQuote => RepairKind::SingleQuote,
            Self::SmartQuote => RepairKind::SmartQuote,
            Self::RawNewline => RepairKind::RawNewline,
            Self::ControlCharacter => RepairKind::ControlCharacter,
            Self::UnquotedKey => RepairKind::UnquotedKey,
            Self::InvalidEscape => RepairKind::InvalidEscape,
            Self::UnescapedQuote => RepairKind::UnescapedQuote,
            Self::UnclosedBracket => RepairKind::UnclosedBracket,
        }
    }

    /// What was done `n` times, in words.
    fn message(self, n: u32) -> String {
        let s = if n == 1 { "" } else { "s" };
        match self {
            Self::Bom => "removed the byte order mark at the start".to_owned(),
            Self::CodeFence => "took the JSON out of a code fence".to_owned(),
            Self::SurroundingProse => {
                if n == 1 {
                    "dropped the text around the JSON".to_owned()
                } else {
                    format!("dropped {n} pieces of text around the JSON")
                }
            }
            Self::Comment => format!("removed {n} comment{s}"),
            Self::TrailingComma => format!("removed {n} trailing comma{s}"),
            Self::ExtraComma => format!("removed {n} extra comma{s}"),
            Self::MissingComma => format!("inserted {n} missing comma{s}"),
            Self::PythonLiteral => {
                format!("replaced {n} True/False/None/undefined literal{s} with true/false/null")
            }
            Self::NonFiniteNumber => format!("replaced {n} NaN/Infinity value{s} with null"),
            Self::SingleQuote => format!("turned {n} single-quoted string{s} into JSON strings"),
            Self::SmartQuote => format!("turned {n} curly-quoted string{s} into JSON strings"),
            Self::RawNewline => format!("escaped {n} raw line break{s} inside strings"),
            Self::ControlCharacter => {
                format!("escaped {n} raw control character{s} inside strings")
            }
            Self::UnquotedKey => format!("quoted {n} bare key{s}"),
            Self::InvalidEscape => format!("fixed {n} invalid backslash escape{s}"),
            Self::UnescapedQuote => format!("escaped {n} unescaped quote{s} inside strings"),
            Self::UnclosedBracket => format!("closed {n} unclosed bracket{s}"),
        }
    }
}

/// Counts per [`Kind`], kept in the order each kind was first applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tally {
    counts: Vec<(Kind, u32)>,
    /// Messages that say more than the count alone (which fence the JSON came from).
    messages: Vec<(Kind, String)>,
}

impl Tally {
    /// Records one more application of `kind`.
    pub(super) fn bump(&mut self, kind: Kind) {
        self.add(kind, 1);
    }

    /// Records `n` more applications of `kind` (nothing when `n` is 0).
    pub(super) fn add(&mut self, kind: Kind, n: u32) {
        if n == 0 {
            return;
        }
        match self.counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, count)) => *count = count.saturating_add(n),
            None => self.counts.push((kind, n)),
        }
    }

    /// Records one more application of `kind`, described by `message` instead of the default.
    pub(super) fn bump_with(&mut self, kind: Kind, message: String) {
        self.bump(kind);
        self.messages.push((kind, message));
    }

    /// Adds every count of `other` after this tally's own.
    pub(super) fn extend(&mut self, other: &Tally) {
        for &(kind, n) in &other.counts {
            self.add(kind, n);
        }
        self.messages.extend(other.messages.iter().cloned());
    }

    /// How often `kind` was applied.
    #[cfg(test)]
    pub(super) fn count(&self, kind: Kind) -> u32 {
        self.counts
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |&(_, n)| n)
    }

    /// The report entries, one per kind, in first-applied order.
    pub(super) fn into_repairs(mut self) -> Vec<Repair> {
        self.counts
            .iter()
            .map(|&(kind, n)| {
                let noted = self.messages.iter().position(|(k, _)| *k == kind);
                let message = match noted {
                    Some(i) if n == 1 => self.messages.swap_remove(i).1,
                    _ => kind.message(n),
                };
                Repair::text(kind.repair_kind(), n, message)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_applied_order_and_sums() {
        let mut t = Tally::default();
        t.bump(Kind::TrailingComma);
        t.bump(Kind::Comment);
        t.add(Kind::TrailingComma, 2);
        t.add(Kind::MissingComma, 0);
        let repairs = t.into_repairs();
        let kinds: Vec<_> = repairs.iter().map(|r| (r.kind.as_str(), r.count)).collect();
        assert_eq!(kinds, [("trailing_comma", 3), ("comment", 1)]);
        assert_eq!(repairs[0].message, "removed 3 trailing commas");
        assert_eq!(repairs[1].message, "removed 1 comment");
        assert!(repairs.iter().all(|r| r.path.is_none()));
    }

    #[test]
    fn a_described_repair_keeps_its_message() {
        let mut t = Tally::default();
        t.bump_with(
            Kind::CodeFence,
            "took the JSON out of a ```json code fence".to_owned(),
        );
        let repairs = t.into_repairs();
        assert_eq!(
            repairs[0].message,
            "took the JSON out of a ```json code fence"
        );
    }
}
