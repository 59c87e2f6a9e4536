//! [`Line`]: one line of a reply, classified for card detection — blank, inside a code fence, a
//! thematic break, a heading, or text — and, for text shaped like a list option (`(A)`, `A)`,
//! `A.`, `1.`, `1)`, `(1)`, optionally after a bullet and inside bold), its [`Marker`].

/// Which alphabet a list marker counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `A`, `B`, `C`, …
    Upper,
    /// `a`, `b`, `c`, …
    Lower,
    /// `1`, `2`, `3`, …
    Number,
}

/// The list marker at the start of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    pub family: Family,
    /// Position in the sequence: `A` and `1` are 1.
    pub value: u32,
    /// Bytes of leading whitespace.
    pub indent: usize,
    /// Byte offset, within the line, of the text after the marker.
    pub text_at: usize,
    /// Bold was opened before the marker and is still open (`**A) Label** — …`).
    pub bold_open: bool,
}

/// What a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Blank,
    /// A code fence or a line inside one: never options, never a question.
    Code,
    /// `---`, `***`, `___`: a thematic break.
    Break,
    /// `# …` to `###### …`.
    Heading,
    Text,
}

/// One line of the reply.
#[derive(Debug, Clone, Copy)]
pub(super) struct Line<'a> {
    /// Byte offset of the line in the reply.
    pub start: usize,
    /// The line without its `\n` / `\r\n`.
    pub text: &'a str,
    pub kind: Kind,
    /// Set for text lines shaped like a list option.
    pub marker: Option<Marker>,
}

impl Line<'_> {
    /// Bytes of leading whitespace.
    pub fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start().len()
    }

    /// Byte offset in the reply just after the line's last non-whitespace character.
    pub fn end(&self) -> usize {
        self.start + self.text.trim_end().len()
    }
}

/// The lines of `text`, classified.
pub(super) fn split(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut start = 0;
    for raw in text.split_inclusive('\n') {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        let (kind, marker) = classify(body, &mut in_code);
        out.push(Line {
            start,
            text: body,
            kind,
            marker,
        });
        start += raw.len();
    }
    out
}

/// What the line `body` (without its `\n` / `\r\n`) is, and its option marker, given whether
/// a code fence is open before it; a fence line opens or closes the fence (`in_code` flips).
pub(crate) fn classify(body: &str, in_code: &mut bool) -> (Kind, Option<Marker>) {
    let trimmed = body.trim();
    let kind = if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
        *in_code = !*in_code;
        Kind::Code
    } else if *in_code {
        Kind::Code
    } else if trimmed.is_empty() {
        Kind::Blank
    } else if is_break(trimmed) {
        Kind::Break
    } else if is_heading(trimmed) {
        Kind::Heading
    } else {
        Kind::Text
    };
    let marker = if kind == Kind::Text {
        marker(body)
    } else {
        None
    };
    (kind, marker)
}

fn is_break(trimmed: &str) -> bool {
    let mut chars = trimmed.chars().filter(|c| !c.is_whitespace());
    let Some(first) = chars.next() else {
        return false;
    };
    matches!(first, '-' | '*' | '_' | '=') && {
        let mut count = 1;
        chars.all(|c| {
            count += 1;
            c == first
        }) && count >= 3
    }
}

fn is_heading(trimmed: &str) -> bool {
    let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes)
        && trimmed[hashes..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
}

/// The option marker at the start of `line`, if the line is shaped like an option with text.
pub(super) fn marker(line: &str) -> Option<Marker> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let mut rest = trimmed;
    if let Some(after) = rest.strip_prefix(['-', '*', '+', '•'])
        && after.starts_with([' ', '\t'])
    {
        rest = after.trim_start();
    }
    let bold = rest.starts_with("**") || rest.starts_with("__");
    if bold {
        rest = &rest[2..];
    }
    let (family, value, used) = token(rest, false)?;
    rest = &rest[used..];
    let mut bold_open = bold;
    if bold && (rest.starts_with("**") || rest.starts_with("__")) {
        rest = &rest[2..];
        bold_open = false;
    }
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let text = rest.trim_start();
    if text.is_empty() {
        return None;
    }
    Some(Marker {
        family,
        value,
        indent,
        text_at: line.len() - text.len(),
        bold_open,
    })
}

/// A marker token at the start of `s`: `(X)`, or (unless `paren_only`) `X)` / `X.`, where `X`
/// is one ASCII letter or one or two digits. Returns the family, the value and the bytes used.
pub(super) fn token(s: &str, paren_only: bool) -> Option<(Family, u32, usize)> {
    let bytes = s.as_bytes();
    let open = bytes.first() == Some(&b'(');
    if paren_only && !open {
        return None;
    }
    let mut i = usize::from(open);
    let first = *bytes.get(i)?;
    let (family, value) = if first.is_ascii_uppercase() {
        i += 1;
        (Family::Upper, u32::from(first - b'A') + 1)
    } else if first.is_ascii_lowercase() {
        i += 1;
        (Family::Lower, u32::from(first - b'a') + 1)
    } else if first.is_ascii_digit() {
        let mut value = 0u32;
        while let Some(d) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
            if i - usize::from(open) == 2 {
                return None;
            }
            value = value * 10 + u32::from(d - b'0');
            i += 1;
        }
        (Family::Number, value)
    } else {
        return None;
    };
    let close = *bytes.get(i)?;
    let closes = if open {
        close == b')'
    } else {
        close == b')' || close == b'.'
    };
    closes.then_some((family, value, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Family, value, text after the marker, bold still open.
    type Shape<'a> = (Family, u32, &'a str, bool);

    fn shape(line: &str) -> Option<Shape<'_>> {
        marker(line).map(|m| (m.family, m.value, &line[m.text_at..], m.bold_open))
    }

    #[test]
    fn option_markers() {
        use Family::*;
        let cases: &[(&str, Option<Shape<'_>>)] = &[
            ("(A) Alpha", Some((Upper, 1, "Alpha", false))),
            ("B) Beta", Some((Upper, 2, "Beta", false))),
            ("C. Gamma", Some((Upper, 3, "Gamma", false))),
            ("  - (d) delta", Some((Lower, 4, "delta", false))),
            ("* 12) twelve", Some((Number, 12, "twelve", false))),
            ("1. First", Some((Number, 1, "First", false))),
            ("(3) Third", Some((Number, 3, "Third", false))),
            ("**A)** Bold marker", Some((Upper, 1, "Bold marker", false))),
            (
                "- **B) Bold all** — d",
                Some((Upper, 2, "Bold all** — d", true)),
            ),
            ("**(C)** x", Some((Upper, 3, "x", false))),
            ("123. too many digits", None),
            ("A) ", None),
            ("A)no space", None),
            ("AB) two letters", None),
            ("10:30 meeting", None),
            ("Plain text", None),
            ("**bold** text", None),
            ("(A)", None),
            ("3.5 kg of flour", None),
            ("", None),
        ];
        for (line, want) in cases {
            assert_eq!(shape(line), *want, "{line:?}");
        }
    }

    #[test]
    fn kinds_and_offsets() {
        let text = "Intro\r\n\n```\n1. code\n```\n---\n## Head\n1. item";
        let lines = split(text);
        let kinds: Vec<Kind> = lines.iter().map(|l| l.kind).collect();
        use Kind::*;
        assert_eq!(kinds, [Text, Blank, Code, Code, Code, Break, Heading, Text]);
        assert_eq!(lines[0].text, "Intro");
        assert!(lines[3].marker.is_none(), "no options inside code");
        assert_eq!(&text[lines[7].start..], "1. item");
        assert!(lines[7].marker.is_some());
    }

    #[test]
    fn breaks_and_headings() {
        assert!(is_break("---"));
        assert!(is_break("* * *"));
        assert!(!is_break("--"));
        assert!(!is_break("-*-"));
        assert!(is_heading("### Which one?"));
        assert!(is_heading("#"));
        assert!(!is_heading("#hashtag"));
        assert!(!is_heading("####### seven"));
    }
}
