//! Character classes of [`super::translate`]: `[…]` read item by item (ranges, class escapes,
//! Annex B's literal `-` next to a class escape) and written back for the validator.

use super::{ANY, NOTHING, Reading, Translator, push_literal};
use std::fmt::Write as _;

/// `\d`, `\w` and `\s` of ECMA-262 as code point ranges.
const DIGIT_SET: &[(u32, u32)] = &[(0x30, 0x39)];
const WORD_SET: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
const SPACE_SET: &[(u32, u32)] = &[
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
];

/// One item of a character class.
#[derive(Debug)]
pub(super) enum Item {
    /// Code points `lo..=hi` (UTF-16 code units where a lone surrogate was written).
    Range(u32, u32),
    /// A class escape kept as written (`\d`, `\p{L}`).
    Escape(String),
}

impl Translator {
    /// A character class, `[` read.
    pub(super) fn class(&mut self) {
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut items: Vec<Item> = Vec::new();
        while let Some(c) = self.peek() {
            if c == ']' {
                self.pos += 1;
                break;
            }
            let Some(item) = self.class_atom() else {
                continue;
            };
            let is_range = self.peek() == Some('-')
                && self.peek_at(1).is_some_and(|n| n != ']')
                && matches!(item, Item::Range(..));
            if !is_range {
                items.push(item);
                continue;
            }
            let save = self.pos;
            self.pos += 1; // '-'
            match (item, self.class_atom()) {
                (Item::Range(lo, _), Some(Item::Range(hi, _))) => {
                    items.push(Item::Range(lo, hi));
                }
                // Annex B: a class escape at either end makes the `-` a literal.
                (first, Some(second)) => {
                    items.push(first);
                    items.push(Item::Range(u32::from('-'), u32::from('-')));
                    items.push(second);
                }
                (first, None) => {
                    self.pos = save;
                    items.push(first);
                }
            }
        }
        self.push_class(negated, &items);
    }

    /// One atom of a class: a code unit (as a one-unit range) or a class escape; `None` only
    /// at the end of the pattern.
    fn class_atom(&mut self) -> Option<Item> {
        let c = self.peek()?;
        self.pos += 1;
        if c != '\\' {
            return Some(Item::Range(u32::from(c), u32::from(c)));
        }
        let Some(e) = self.peek() else {
            return Some(Item::Range(u32::from('\\'), u32::from('\\')));
        };
        match e {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                self.pos += 1;
                Some(Item::Escape(format!("\\{e}")))
            }
            'p' | 'P' if self.reading == Reading::Unicode => {
                let begin = self.pos - 1;
                while let Some(n) = self.peek() {
                    self.pos += 1;
                    if n == '}' {
                        break;
                    }
                }
                Some(Item::Escape(self.src[begin..self.pos].iter().collect()))
            }
            'b' => {
                self.pos += 1;
                Some(Item::Range(8, 8))
            }
            '-' => {
                self.pos += 1;
                Some(Item::Range(u32::from('-'), u32::from('-')))
            }
            '8' | '9' => {
                self.pos += 1;
                Some(Item::Range(u32::from(e), u32::from(e)))
            }
            _ => match self.character_escape(true) {
                Some(unit) => Some(Item::Range(unit, unit)),
                // `\c` without a control letter: the backslash alone; `c` comes next.
                None => Some(Item::Range(u32::from('\\'), u32::from('\\'))),
            },
        }
    }

    fn push_class(&mut self, negated: bool, items: &[Item]) {
        let mut body = String::new();
        for item in items {
            match item {
                Item::Escape(text) if self.explicit && text.len() == 2 => {
                    let letter = text.chars().nth(1).unwrap_or('d');
                    for (lo, hi) in class_escape_set(letter) {
                        push_range(&mut body, lo, hi);
                    }
                }
                Item::Escape(text) => body.push_str(text),
                Item::Range(lo, hi) => push_range(&mut body, *lo, *hi),
            }
        }
        match (negated, body.is_empty()) {
            (false, true) => self.out.push_str(NOTHING),
            (true, true) => self.out.push_str(ANY),
            (false, false) => {
                let _ = write!(self.out, "[{body}]");
            }
            (true, false) => {
                let _ = write!(self.out, "[^{body}]");
            }
        }
    }
}

/// The code points of `\d \D \w \W \s \S` (by its letter) in ECMA-262.
pub(super) fn class_escape_set(letter: char) -> Vec<(u32, u32)> {
    let set = match letter.to_ascii_lowercase() {
        'd' => DIGIT_SET,
        'w' => WORD_SET,
        _ => SPACE_SET,
    };
    if letter.is_ascii_lowercase() {
        return set.to_vec();
    }
    let mut out = Vec::new();
    let mut next = 0u32;
    for (lo, hi) in set {
        if *lo > next {
            out.push((next, lo - 1));
        }
        next = hi + 1;
    }
    out.push((next, 0x10FFFF));
    out
}

/// `lo..=hi` in a class, without the surrogate block (no string holds a lone surrogate).
pub(super) fn push_range(body: &mut String, lo: u32, hi: u32) {
    let pieces = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)];
    for (a, b) in pieces {
        if a > b {
            continue;
        }
        let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) else {
            continue;
        };
        push_literal(body, a, true);
        if b != a {
            body.push('-');
            push_literal(body, b, true);
        }
    }
}
