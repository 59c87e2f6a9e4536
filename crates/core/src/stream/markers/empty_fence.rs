//! [`EmptyFences`]: the message text of a streaming `markers` reply, less every code fence that
//! wraps nothing — the complete check's tidy step drops those (a fence whose only content was a
//! marker section is the usual one).
//!
//! The rule mirrors the tidy step line by line: a line starting with ```` ``` ```` that would
//! open a fence (an even number of fence lines kept before it) is held, with the blank lines
//! after it, until the next non-blank line; when that line is exactly ```` ``` ```` both go,
//! otherwise the held lines are released. Only a line that may still be a fence line is
//! buffered; every other line passes straight through.

use crate::stream::out::Out;

/// What the current line is, as far as it has been received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Only whitespace so far.
    Space,
    /// Whitespace, then this many backticks (1 or 2).
    Ticks(u8),
    /// A fence line that would open a fence: held until the line after it decides.
    Opener,
    /// Whitespace, ```` ``` ````, whitespace — after a held opener: it may close it.
    Closer,
    /// Decided: passes through.
    Sent,
}

/// The filter. See the module docs.
#[derive(Debug)]
pub(super) struct EmptyFences {
    line: Line,
    /// The current line's text while it is not decided.
    held: String,
    /// A held opening fence line and the blank lines after it.
    opener: Option<String>,
    /// Fence lines released so far (odd: a fence is open).
    fences: usize,
}

impl Default for EmptyFences {
    fn default() -> Self {
        Self {
            line: Line::Space,
            held: String::new(),
            opener: None,
            fences: 0,
        }
    }
}

impl EmptyFences {
    /// Takes the next piece of message text.
    pub fn push(&mut self, text: &str, out: &mut Out) {
        let mut rest = text;
        loop {
            match rest.find('\n') {
                Some(at) => {
                    self.part(&rest[..at], out);
                    self.end_line(out);
                    rest = &rest[at + 1..];
                }
                None => {
                    self.part(rest, out);
                    return;
                }
            }
        }
    }

    /// The message is complete: the last line is decided as the tidy step decides it.
    pub fn finish(&mut self, out: &mut Out) {
        match self.line {
            Line::Closer => {
                self.opener = None;
                self.held.clear();
            }
            Line::Space => {
                self.release_opener(out);
                self.held.clear();
            }
            Line::Ticks(_) | Line::Opener => {
                self.release_opener(out);
                out.push(&self.held);
                self.held.clear();
            }
            Line::Sent => {}
        }
        self.line = Line::Sent;
    }

    /// Text within the current line.
    fn part(&mut self, text: &str, out: &mut Out) {
        let mut rest = text;
        while !rest.is_empty() {
            match self.line {
                Line::Sent => {
                    out.push(rest);
                    return;
                }
                Line::Opener => {
                    self.held.push_str(rest);
                    return;
                }
                Line::Space | Line::Ticks(_) | Line::Closer => {}
            }
            let Some(c) = rest.chars().next() else {
                return;
            };
            let next = &rest[c.len_utf8()..];
            self.line = match (self.line, c) {
                (Line::Space | Line::Closer, c) if c.is_whitespace() => self.line,
                (Line::Space, '`') => Line::Ticks(1),
                (Line::Ticks(1), '`') => Line::Ticks(2),
                (Line::Ticks(2), '`') => self.fence_line(out),
                // The line after a held opener has more than ``` : not a closer.
                (Line::Closer, _) => {
                    self.release_opener(out);
                    self.fences += 1;
                    self.send_held(out)
                }
                _ => {
                    self.release_opener(out);
                    self.send_held(out)
                }
            };
            // The character that decided the line goes out after what was held.
            match self.line {
                Line::Sent => out.push(&rest[..c.len_utf8()]),
                _ => self.held.push(c),
            }
            rest = next;
        }
    }

    /// The third backtick of a line: what the fence line is.
    fn fence_line(&mut self, out: &mut Out) -> Line {
        if self.opener.is_some() {
            Line::Closer
        } else if self.fences % 2 == 1 {
            // It closes a fence that has content: kept.
            self.fences += 1;
            self.send_held(out)
        } else {
            Line::Opener
        }
    }

    /// A line break.
    fn end_line(&mut self, out: &mut Out) {
        match self.line {
            Line::Space => {
                self.held.push('\n');
                match &mut self.opener {
                    Some(opener) => opener.push_str(&self.held),
                    None => out.push(&self.held),
                }
            }
            Line::Ticks(_) => {
                self.release_opener(out);
                self.held.push('\n');
                out.push(&self.held);
            }
            Line::Opener => {
                self.held.push('\n');
                self.opener = Some(std::mem::take(&mut self.held));
            }
            // The fence wrapped nothing: both lines go.
            Line::Closer => self.opener = None,
            Line::Sent => out.push("\n"),
        }
        self.held.clear();
        self.line = Line::Space;
    }

    /// The held opener turned out to wrap something: it is released (and counted).
    fn release_opener(&mut self, out: &mut Out) {
        if let Some(opener) = self.opener.take() {
            out.push(&opener);
            self.fences += 1;
        }
    }

    /// Releases the held part of the current line, which now passes through.
    fn send_held(&mut self, out: &mut Out) -> Line {
        out.push(&self.held);
        self.held.clear();
        Line::Sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Emit;

    /// The tidy step's fence rule, on a complete text (as `markers::read` applies it).
    fn tidy(text: &str) -> String {
        let mut out: Vec<&str> = Vec::new();
        for line in text.lines().map(str::trim_end) {
            if line.trim() == "```" {
                let mut back = out.len();
                while back > 0 && out[back - 1].is_empty() {
                    back -= 1;
                }
                let fences = out[..back]
                    .iter()
                    .filter(|l| l.trim_start().starts_with("```"))
                    .count();
                if back > 0 && out[back - 1].trim_start().starts_with("```") && fences % 2 == 1 {
                    out.truncate(back - 1);
                    continue;
                }
            }
            out.push(line);
        }
        normalise(&out.join("\n"))
    }

    fn normalise(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn streamed(pieces: &[&str]) -> String {
        let mut fences = EmptyFences::default();
        let mut out = Out::default();
        let mut events = Vec::new();
        for piece in pieces {
            fences.push(piece, &mut out);
        }
        fences.finish(&mut out);
        out.finish(&mut events);
        let text: String = events
            .into_iter()
            .map(|e| match e {
                Emit::Text(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        normalise(&text)
    }

    #[test]
    fn empty_fences_go_and_others_stay_however_the_text_is_split() {
        let texts = [
            "Ok.\n```\n\n```\nBye.",
            "Ok.\n```json\n  \n   ```  \nBye.",
            "```\ncode\n```\nafter",
            "```\n```\n```",
            "```a\nx\n```\n```\n```",
            "```\n```python\n```\n",
            "Look:\n```",
            "```\n\n",
            "a\n ``` \n``\n```\n",
            "```\n````\n```",
            "é ✓\n```\n\n```\n🎉 done",
            "```\n`x`\n```",
        ];
        for text in texts {
            let want = tidy(text);
            assert_eq!(streamed(&[text]), want, "{text:?}");
            let chars: Vec<String> = text.chars().map(String::from).collect();
            let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
            assert_eq!(streamed(&pieces), want, "{text:?} in 1-char pieces");
            for (at, _) in text.char_indices() {
                assert_eq!(
                    streamed(&[&text[..at], &text[at..]]),
                    want,
                    "{text:?} split at {at}"
                );
            }
        }
    }
}
