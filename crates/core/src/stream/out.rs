//! [`Out`]: the text a streaming check has released for the user, laid out the way the final
//! message is — no leading or trailing whitespace, trailing spaces off each line, and a run of
//! blank lines down to one — and handed out as [`Emit::Text`] events.
//!
//! Whitespace is held until text follows it, so a run that turns out to end the reply is never
//! sent; each byte is looked at once.

use super::Emit;

/// Released text waiting to be emitted, and whitespace waiting for text to follow it.
#[derive(Debug, Default)]
pub(super) struct Out {
    /// Laid-out text not emitted yet.
    ready: String,
    /// Whitespace seen after the last text; laid out when text follows.
    space: String,
    /// Some text was released (leading whitespace is dropped).
    started: bool,
    /// The last character released is a line break.
    at_line_start: bool,
}

impl Out {
    /// Releases `text`.
    pub fn push(&mut self, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            let word = rest.trim_start();
            if word.len() < rest.len() {
                self.space.push_str(&rest[..rest.len() - word.len()]);
                rest = word;
                continue;
            }
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            self.lay_out_space();
            self.ready.push_str(&rest[..end]);
            self.started = true;
            self.at_line_start = false;
            rest = &rest[end..];
        }
    }

    /// Separates what comes next from what came before, as the text around a cut-out card is
    /// joined: one space, unless whitespace already separates them or nothing came before.
    pub fn separate(&mut self) {
        if self.space.is_empty() && self.started && !self.at_line_start {
            self.space.push(' ');
        }
    }

    /// Moves the laid-out text to `out` as one [`Emit::Text`], when there is any.
    pub fn emit(&mut self, out: &mut Vec<Emit>) {
        if !self.ready.is_empty() {
            out.push(Emit::Text(std::mem::take(&mut self.ready)));
        }
    }

    /// The reply is complete: whitespace still held ends it, and is dropped.
    pub fn finish(&mut self, out: &mut Vec<Emit>) {
        self.space.clear();
        self.emit(out);
    }

    /// The held whitespace, before the text that follows it: line breaks (at most two: one
    /// blank line), then the spaces that indent the new line (or the spaces themselves).
    fn lay_out_space(&mut self) {
        if self.space.is_empty() {
            return;
        }
        if self.started {
            let breaks = self.space.matches('\n').count();
            let indent = match self.space.rfind('\n') {
                Some(at) => &self.space[at + 1..],
                None => self.space.as_str(),
            };
            if breaks > 0 {
                self.ready.push_str(if breaks > 1 { "\n\n" } else { "\n" });
                self.at_line_start = true;
            }
            self.ready.push_str(indent);
            if !indent.is_empty() {
                self.at_line_start = false;
            }
        }
        self.space.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(pushes: &[&str], separate_before: &[usize]) -> String {
        let mut out = Out::default();
        let mut events = Vec::new();
        for (i, push) in pushes.iter().enumerate() {
            if separate_before.contains(&i) {
                out.separate();
            }
            out.push(push);
            out.emit(&mut events);
        }
        out.finish(&mut events);
        events
            .into_iter()
            .map(|e| match e {
                Emit::Text(t) => t,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn whitespace_is_laid_out_as_the_message_is() {
        let cases: &[(&[&str], &[usize], &str)] = &[
            (&["  \n Hello", " world  \n\n"], &[], "Hello world"),
            (&["a  \n", "\n\n\n  b"], &[], "a\n\n  b"),
            (&["a \r\n", "b"], &[], "a\nb"),
            (&["one", "two"], &[1], "one two"),
            (&["one\n", "two"], &[1], "one\ntwo"),
            (&["one ", "two"], &[1], "one two"),
            (&["", "first"], &[1], "first"),
            (&["tab\t", "\tx"], &[], "tab\t\tx"),
            (&["é ✓", " 🎉"], &[], "é ✓ 🎉"),
        ];
        for (pushes, separate, want) in cases {
            assert_eq!(text(pushes, separate), *want, "{pushes:?}");
        }
    }

    #[test]
    fn nothing_is_emitted_for_whitespace_alone() {
        let mut out = Out::default();
        let mut events = Vec::new();
        out.push(" \n\t ");
        out.emit(&mut events);
        out.finish(&mut events);
        assert!(events.is_empty());
    }
}
