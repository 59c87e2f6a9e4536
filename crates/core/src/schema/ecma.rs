//! [`translate`]: an ECMA-262 regular expression, as a schema's `pattern` or `patternProperties`
//! key is written, rewritten into the dialect the `jsonschema` crate runs with the same meaning.
//!
//! JSON Schema patterns are ECMA-262 regular expressions. The validator (`jsonschema`) runs them
//! on the Rust `regex`/`fancy-regex` engines after a best-effort translation of its own, which
//! reads patterns with the `u` flag's strict grammar and Rust's meaning for what the two
//! dialects share in spelling only. Real schemas are written for browsers and ajv, so they also
//! use the lenient grammar of ECMA-262 Annex B (`^PUBMED:\{d}`, `[[a-z]]`, `\a`, `\07`, a lone
//! `]` or `{`), and some constructs mean different things in the two dialects (`\b`, `\z`,
//! `[[a-z]]`, `{,3}`, `\1` before its group). No library does this rewriting: `regress` (used
//! here as the judge of what ECMA-262 accepts) is an ECMAScript engine whose parse tree is
//! private and which `jsonschema` cannot run, so this module is hand-written.
//!
//! **Which reading.** A pattern that is valid with the `u` flag is read that way (what ajv and
//! the JSON-Schema-Test-Suite expect: `\p{Letter}`, `\u{1F600}`); otherwise, when it is valid
//! under Annex B (no flag), it is read that way; otherwise it is not a regular expression and the
//! schema does not load. [`regress`] decides validity in both readings.
//!
//! **The output** is a pattern in the `u` flag's grammar (so the draft-04/06/07 meta-schemas'
//! `format: "regex"` accepts it) that `jsonschema`'s own translation maps to what ECMA-262 means:
//! every literal is written plainly or escaped, `\d \w \s .` are left to that translation (which
//! gives them their ECMA-262 sets), `\b`/`\B` become ASCII word-boundary look-arounds, named
//! groups become numbered ones, a back-reference to a group not closed yet becomes the empty
//! match it is in ECMA-262, lone surrogates match nothing, and surrogate pairs written as two
//! `\u` escapes become the one code point they spell.
//!
//! **Known differences**, all documented in docs/contract-kinds.md: strings are matched by code
//! point in both readings (Annex B counts UTF-16 units, so `^.$` does not match an emoji in a
//! browser without `u`); a back-reference to a group that did not take part in the match fails
//! instead of matching the empty string; case-insensitive modifier groups `(?i:…)` fold case the
//! Rust way.

mod class;

use class::{class_escape_set, push_range};
use std::fmt::Write as _;

/// How a pattern was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Valid with the `u` flag.
    Unicode,
    /// Valid only under Annex B's lenient grammar (no flag).
    AnnexB,
}

/// A pattern rewritten for the validator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Translated {
    pub(crate) text: String,
    pub(crate) reading: Reading,
}

/// Why a pattern is not an ECMA-262 regular expression (the reason from the Annex B reading,
/// the most lenient one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotARegex(pub(crate) String);

/// Longest pattern read (a schema document is itself capped; this bounds one string).
const MAX_PATTERN_CHARS: usize = 64 * 1024;

/// `pattern` as the validator should run it, or why it is no ECMA-262 regular expression.
pub(crate) fn translate(pattern: &str) -> Result<Translated, NotARegex> {
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(NotARegex(format!(
            "longer than {MAX_PATTERN_CHARS} characters"
        )));
    }
    let reading = if regress::Regex::with_flags(pattern, "u").is_ok() {
        Reading::Unicode
    } else {
        match regress::Regex::with_flags(pattern, "") {
            Ok(_) => Reading::AnnexB,
            Err(e) => return Err(NotARegex(e.text)),
        }
    };
    // `jsonschema` leaves a pattern with a look-around or back-reference to the Rust engine as
    // it stands, so `\d \w \s .` then have to be spelled out here.
    let mut translator = Translator::new(pattern, reading, false);
    let mut text = translator.run()?;
    if translator.engine_as_is {
        text = Translator::new(pattern, reading, true).run()?;
    }
    Ok(Translated { text, reading })
}

/// The class `\w` stands for in ECMA-262 (no `i` flag), for the word-boundary look-arounds.
const WORD: &str = "[A-Za-z0-9_]";
/// `.` without the `s` modifier: anything but a line terminator.
const DOT: &str = r"[^\n\r\u{2028}\u{2029}]";
/// Every code point: `[^]` and `.` under the `s` modifier.
const ANY: &str = r"[\u{0}-\u{10FFFF}]";
/// No code point: `[]`, a lone surrogate.
const NOTHING: &str = r"[^\u{0}-\u{10FFFF}]";
/// The line terminators `^`/`$` stop at under the `m` modifier.
const TERMINATORS: &str = r"\n\r\u{2028}\u{2029}";

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    icase: bool,
    multiline: bool,
    dot_all: bool,
}

#[derive(Debug)]
struct Frame {
    /// The group's number when it captures.
    capture: Option<usize>,
    /// A look-around: Annex B lets a look-ahead take a quantifier.
    lookaround: bool,
    /// Where the group starts in the output.
    start: usize,
    /// The modifiers in force outside it.
    outer: Flags,
}

/// The last thing written, when a quantifier may follow it.
#[derive(Debug, Clone, Copy)]
struct Atom {
    start: usize,
    lookaround: bool,
}

struct Translator {
    src: Vec<char>,
    pos: usize,
    reading: Reading,
    out: String,
    /// Capturing groups in the whole pattern.
    groups: usize,
    /// Named groups: name and number, in order.
    names: Vec<(String, usize)>,
    /// Groups whose `)` has been read, by number.
    closed: Vec<bool>,
    frames: Vec<Frame>,
    flags: Flags,
    last: Option<Atom>,
    /// Capturing groups opened so far.
    opened: usize,
    /// Spell `\d \w \s .` out (for a pattern `jsonschema` hands to the engine as is).
    explicit: bool,
    /// The output has a look-around or back-reference: `jsonschema` will not translate it.
    engine_as_is: bool,
}

impl Translator {
    fn new(pattern: &str, reading: Reading, explicit: bool) -> Self {
        let src: Vec<char> = pattern.chars().collect();
        let (groups, names) = count_groups(&src);
        Self {
            src,
            pos: 0,
            reading,
            out: String::with_capacity(pattern.len() + 8),
            groups,
            names,
            closed: vec![false; groups + 1],
            frames: Vec::new(),
            flags: Flags::default(),
            last: None,
            opened: 0,
            explicit,
            engine_as_is: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.src.get(self.pos + ahead).copied()
    }

    fn annex_b(&self) -> bool {
        self.reading == Reading::AnnexB
    }

    fn run(&mut self) -> Result<String, NotARegex> {
        while let Some(c) = self.peek() {
            self.pos += 1;
            let start = self.out.len();
            match c {
                '|' => {
                    self.out.push('|');
                    self.last = None;
                }
                '(' => self.open_group(),
                ')' => self.close_group(),
                '[' => {
                    self.class();
                    self.atom(start, false);
                }
                '\\' => self.escape(start),
                '^' | '$' => {
                    self.anchor(c);
                    self.last = None;
                }
                '.' => {
                    let dot = match (self.flags.dot_all, self.explicit) {
                        (true, _) => ANY,
                        (false, true) => DOT,
                        (false, false) => ".",
                    };
                    self.out.push_str(dot);
                    self.atom(start, false);
                }
                '*' | '+' | '?' => self.quantifier(c)?,
                '{' if self.braced_quantifier_ahead() => self.quantifier('{')?,
                _ => {
                    push_literal(&mut self.out, c, false);
                    self.atom(start, false);
                }
            }
        }
        Ok(std::mem::take(&mut self.out))
    }

    fn atom(&mut self, start: usize, lookaround: bool) {
        self.last = Some(Atom { start, lookaround });
    }

    fn anchor(&mut self, c: char) {
        match (c, self.flags.multiline) {
            ('^', true) => {
                self.engine_as_is = true;
                let _ = write!(self.out, "(?<![^{TERMINATORS}])");
            }
            ('$', true) => {
                self.engine_as_is = true;
                let _ = write!(self.out, "(?![^{TERMINATORS}])");
            }
            _ => self.out.push(c),
        }
    }

    fn open_group(&mut self) {
        let start = self.out.len();
        let outer = self.flags;
        let (capture, lookaround) = if self.peek() != Some('?') {
            (Some(self.next_group()), false)
        } else {
            match (self.peek_at(1), self.peek_at(2)) {
                (Some(':'), _) => {
                    self.pos += 2;
                    self.out.push_str("(?:");
                    (None, false)
                }
                (Some(kind @ ('=' | '!')), _) => {
                    self.pos += 2;
                    self.engine_as_is = true;
                    let _ = write!(self.out, "(?{kind}");
                    (None, true)
                }
                (Some('<'), Some(kind @ ('=' | '!'))) => {
                    self.pos += 3;
                    self.engine_as_is = true;
                    let _ = write!(self.out, "(?<{kind}");
                    (None, true)
                }
                (Some('<'), _) => {
                    // A named group: numbered like any other; its name is not needed any more.
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '>' {
                            break;
                        }
                    }
                    let n = self.next_group();
                    (Some(n), false)
                }
                _ => {
                    self.modifiers();
                    (None, false)
                }
            }
        };
        self.frames.push(Frame {
            capture,
            lookaround,
            start,
            outer,
        });
        self.last = None;
    }

    /// `(` of a capturing group (named or not): its number.
    fn next_group(&mut self) -> usize {
        self.out.push('(');
        self.opened += 1;
        self.opened
    }

    /// `(?ims-ims:` (ES2025 modifiers): `i` is passed on, `m` and `s` are applied here.
    fn modifiers(&mut self) {
        self.pos += 1; // '?'
        let mut on = true;
        let mut flags = self.flags;
        let mut icase_written = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '-' => on = false,
                'i' => {
                    flags.icase = on;
                    icase_written = if on { "i".into() } else { "-i".into() };
                }
                'm' => flags.multiline = on,
                's' => flags.dot_all = on,
                _ => break, // ':'
            }
        }
        let _ = write!(self.out, "(?{icase_written}:");
        self.flags = flags;
    }

    fn close_group(&mut self) {
        self.out.push(')');
        match self.frames.pop() {
            Some(frame) => {
                if let Some(n) = frame.capture
                    && let Some(slot) = self.closed.get_mut(n)
                {
                    *slot = true;
                }
                self.flags = frame.outer;
                self.atom(frame.start, frame.lookaround);
            }
            None => self.last = None,
        }
    }

    /// Whether the `{` just read starts `{n}`, `{n,}` or `{n,m}`.
    fn braced_quantifier_ahead(&self) -> bool {
        braced_quantifier(&self.src, self.pos - 1).is_some()
    }

    /// A quantifier whose first character `c` has been read. One with nothing to repeat (a
    /// second quantifier, `a{2}{3}`) is refused as browsers refuse it (`regress` lets it by
    /// without the `u` flag).
    fn quantifier(&mut self, c: char) -> Result<(), NotARegex> {
        if self.last.is_none() {
            return Err(NotARegex("nothing to repeat".into()));
        }
        let (text, min) = match c {
            '{' => {
                let (end, min) =
                    braced_quantifier(&self.src, self.pos - 1).unwrap_or((self.pos, 1));
                let text: String = self.src[self.pos - 1..end].iter().collect();
                self.pos = end;
                (text, min)
            }
            '*' | '?' => (c.to_string(), 0),
            _ => (c.to_string(), 1),
        };
        let lazy = if self.peek() == Some('?') {
            self.pos += 1;
            "?"
        } else {
            ""
        };
        match self.last {
            // Annex B: a quantified look-ahead. It consumes nothing, so it either holds once
            // (min ≥ 1) or may be skipped (min = 0).
            Some(Atom {
                start,
                lookaround: true,
            }) => {
                if min == 0 {
                    self.out.insert_str(start, "(?:");
                    self.out.push_str("|)");
                }
            }
            _ => {
                self.out.push_str(&text);
                self.out.push_str(lazy);
            }
        }
        self.last = None;
        Ok(())
    }

    fn escape(&mut self, start: usize) {
        let Some(c) = self.peek() else {
            // A trailing backslash is rejected by both readings; keep it visible.
            self.out.push_str(r"\\");
            return;
        };
        self.pos += 1;
        match c {
            'b' | 'B' => {
                // ECMA-262's word boundary is between an ASCII word character and anything else.
                self.engine_as_is = true;
                let (after, before) = if c == 'b' { ("!", "=") } else { ("=", "!") };
                let _ = write!(
                    self.out,
                    "(?:(?<={WORD})(?{after}{WORD})|(?<!{WORD})(?{before}{WORD}))"
                );
                self.last = None;
                return;
            }
            'd' | 'D' | 'w' | 'W' | 's' | 'S' if self.explicit => {
                let mut body = String::new();
                for (lo, hi) in class_escape_set(c) {
                    push_range(&mut body, lo, hi);
                }
                let _ = write!(self.out, "[{body}]");
            }
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                self.out.push('\\');
                self.out.push(c);
            }
            'p' | 'P' if self.reading == Reading::Unicode => self.property(c),
            '1'..='9' => self.decimal(c),
            'k' if self.reading == Reading::Unicode || !self.names.is_empty() => {
                self.named_reference()
            }
            _ => {
                self.pos -= 1;
                match self.character_escape(false) {
                    Some(unit) => self.push_unit(unit),
                    None => {
                        // Annex B: `\c` not followed by a letter is a backslash, then `c`.
                        self.out.push_str(r"\\");
                        self.last = Some(Atom {
                            start,
                            lookaround: false,
                        });
                        return;
                    }
                }
            }
        }
        self.atom(start, false);
    }

    /// `\p{…}` / `\P{…}` (the `u` reading), kept as written: Rust knows ECMA-262's names.
    fn property(&mut self, c: char) {
        self.out.push('\\');
        self.out.push(c);
        while let Some(next) = self.peek() {
            self.pos += 1;
            self.out.push(next);
            if next == '}' {
                break;
            }
        }
    }

    /// `\` then a digit 1-9: a back-reference, or (Annex B, past the number of groups) a legacy
    /// octal escape or the digit itself.
    fn decimal(&mut self, first: char) {
        let begin = self.pos - 1;
        let mut end = self.pos;
        while self.src.get(end).is_some_and(char::is_ascii_digit) {
            end += 1;
        }
        let digits: String = self.src[begin..end].iter().collect();
        match digits.parse::<usize>() {
            Ok(n) if n <= self.groups => {
                self.pos = end;
                self.reference(&[n]);
            }
            _ => {
                // Annex B only (the `u` reading rejects it): reread as a character escape.
                self.pos = begin;
                if first >= '8' {
                    self.pos += 1;
                    push_literal(&mut self.out, first, false);
                } else {
                    let unit = self.octal();
                    self.push_unit(unit);
                }
            }
        }
    }

    /// `\k<name>`.
    fn named_reference(&mut self) {
        let mut name = String::new();
        if self.peek() == Some('<') {
            self.pos += 1;
            while let Some(c) = self.peek() {
                self.pos += 1;
                if c == '>' {
                    break;
                }
                name.push(c);
            }
        }
        let numbers: Vec<usize> = self
            .names
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, i)| *i)
            .collect();
        self.reference(&numbers);
    }

    /// A back-reference to any of `numbers` (several when groups share a name). One whose
    /// group is not closed yet (a forward or self reference) matches the empty string in
    /// ECMA-262, and so here.
    fn reference(&mut self, numbers: &[usize]) {
        let usable: Vec<usize> = numbers
            .iter()
            .copied()
            .filter(|n| self.closed.get(*n).copied().unwrap_or(false))
            .collect();
        match usable.as_slice() {
            [] => self.out.push_str("(?:)"),
            [one] => {
                self.engine_as_is = true;
                let _ = write!(self.out, r"\{one}");
            }
            many => {
                self.engine_as_is = true;
                self.out.push_str("(?:");
                for (i, n) in many.iter().enumerate() {
                    let bar = if i == 0 { "" } else { "|" };
                    let _ = write!(self.out, r"{bar}\{n}");
                }
                self.out.push(')');
            }
        }
    }

    /// A legacy octal escape (Annex B) at `pos` (the digits after the backslash).
    fn octal(&mut self) -> u32 {
        let mut value = 0u32;
        let first = self.peek().and_then(|c| c.to_digit(8)).unwrap_or(0);
        let max_digits = if first <= 3 { 3 } else { 2 };
        for _ in 0..max_digits {
            match self.peek().and_then(|c| c.to_digit(8)) {
                Some(d) => {
                    value = value * 8 + d;
                    self.pos += 1;
                }
                None => break,
            }
        }
        value
    }

    /// A character escape at `pos` (the character after the backslash): the code unit it
    /// stands for, or `None` for Annex B's `\c` without a control letter (a literal backslash;
    /// `pos` is left at the `c`).
    fn character_escape(&mut self, in_class: bool) -> Option<u32> {
        let c = self.peek()?;
        self.pos += 1;
        let unit = match c {
            't' => 0x09,
            'n' => 0x0A,
            'v' => 0x0B,
            'f' => 0x0C,
            'r' => 0x0D,
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    u32::from(l) % 32
                }
                // Annex B, in a class: `\c0`…`\c9` and `\c_` too.
                Some(l) if in_class && self.annex_b() && (l.is_ascii_digit() || l == '_') => {
                    self.pos += 1;
                    u32::from(l) % 32
                }
                _ => {
                    self.pos -= 1;
                    return None;
                }
            },
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => 0,
            '0'..='7' => {
                self.pos -= 1;
                self.octal()
            }
            'x' => match self.hex(2) {
                Some(v) => v,
                None => u32::from('x'),
            },
            'u' => self.unicode_escape().unwrap_or(u32::from('u')),
            other => u32::from(other),
        };
        Some(unit)
    }

    /// `count` hex digits at `pos`.
    fn hex(&mut self, count: usize) -> Option<u32> {
        let digits: String = self.src.get(self.pos..self.pos + count)?.iter().collect();
        if digits.len() != count || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(&digits, 16).ok()?;
        self.pos += count;
        Some(value)
    }

    /// After `\u`: `XXXX` (joined with a following `\uXXXX` trail surrogate), or `{X…}` in the
    /// `u` reading.
    fn unicode_escape(&mut self) -> Option<u32> {
        if self.reading == Reading::Unicode && self.peek() == Some('{') {
            let close = (self.pos..self.src.len()).find(|i| self.src[*i] == '}')?;
            let digits: String = self.src[self.pos + 1..close].iter().collect();
            let value = u32::from_str_radix(&digits, 16).ok()?;
            self.pos = close + 1;
            return Some(value);
        }
        let lead = self.hex(4)?;
        if (0xD800..0xDC00).contains(&lead)
            && self.peek() == Some('\\')
            && self.peek_at(1) == Some('u')
        {
            let save = self.pos;
            self.pos += 2;
            match self.hex(4) {
                Some(trail) if (0xDC00..0xE000).contains(&trail) => {
                    return Some(0x10000 + ((lead - 0xD800) << 10) + (trail - 0xDC00));
                }
                _ => self.pos = save,
            }
        }
        Some(lead)
    }

    /// A code unit or point outside a class.
    fn push_unit(&mut self, unit: u32) {
        match char::from_u32(unit) {
            Some(c) => push_literal(&mut self.out, c, false),
            // A lone surrogate: no string holds one.
            None => self.out.push_str(NOTHING),
        }
    }
}

/// `c` as a literal: escaped where it is syntax in either dialect, as `\u{…}` when it is a
/// control or space character other than the plain space.
fn push_literal(out: &mut String, c: char, in_class: bool) {
    let special = if in_class {
        matches!(c, '\\' | ']' | '[' | '^' | '-' | '&' | '~')
    } else {
        matches!(
            c,
            '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}'
        )
    };
    if special {
        out.push('\\');
        out.push(c);
    } else if c.is_control() || (c.is_whitespace() && c != ' ') {
        let _ = write!(out, "\\u{{{:X}}}", u32::from(c));
    } else {
        out.push(c);
    }
}

/// `{n}`, `{n,}` or `{n,m}` starting at `at`: the index after it and `n`.
fn braced_quantifier(src: &[char], at: usize) -> Option<(usize, u64)> {
    let mut i = at + 1;
    let digits = |i: &mut usize| {
        let start = *i;
        while src.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        (*i > start).then(|| src[start..*i].iter().collect::<String>())
    };
    let min = digits(&mut i)?;
    if src.get(i) == Some(&',') {
        i += 1;
        let _ = digits(&mut i);
    }
    if src.get(i) != Some(&'}') {
        return None;
    }
    Some((i + 1, min.parse().unwrap_or(u64::MAX)))
}

/// The capturing groups of a pattern: how many, and the named ones with their numbers.
fn count_groups(src: &[char]) -> (usize, Vec<(String, usize)>) {
    let mut count = 0;
    let mut names = Vec::new();
    let mut i = 0;
    let mut in_class = false;
    while i < src.len() {
        match src[i] {
            '\\' => i += 1,
            '[' if !in_class => {
                in_class = true;
                // `[]` and `[^]` are complete classes in ECMA-262.
                if src.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if src.get(i + 1) == Some(&']') {
                    in_class = false;
                    i += 1;
                }
            }
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                if src.get(i + 1) != Some(&'?') {
                    count += 1;
                } else if src.get(i + 2) == Some(&'<') && !matches!(src.get(i + 3), Some('=' | '!'))
                {
                    count += 1;
                    let name: String = src[i + 3..].iter().take_while(|c| **c != '>').collect();
                    names.push((name, count));
                }
            }
            _ => {}
        }
        i += 1;
    }
    (count, names)
}

#[cfg(test)]
mod tests;
