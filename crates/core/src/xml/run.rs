//! [`text_run`]: the text between two pieces of markup, read in one step.
//!
//! The reader reports such text as one event per piece between references (`a &lt; b` is
//! three events), which costs more than the text itself in prose full of escapes. After a
//! markup event the reader stands at the start of the text, so the run up to the next `<` is
//! read here directly — with the same meaning the events would give: line ends normalised
//! (`\r\n` and `\r` become `\n`), the predefined entities and character references resolved —
//! and then consumed through the reader's own stream, which keeps its positions exact. A run
//! with anything else in it (an unterminated or unknown reference, no markup after it) is left
//! to the events, which report it.

use super::frame::Frame;
use memchr::{memchr, memchr2};
use quick_xml::Reader;
use quick_xml::events::BytesRef;
use std::borrow::Cow;
use std::io::BufRead as _;

/// What a reference stands for.
pub(super) enum Resolved {
    /// A predefined entity's text.
    Text(&'static str),
    /// A character reference's character.
    Char(char),
}

/// `&name;` or `&#…;` → its text. Only the predefined entities and character references exist
/// here: with DOCTYPEs refused, no other entity can be declared.
pub(super) fn resolve_reference(reference: &BytesRef<'_>) -> Result<Resolved, String> {
    if reference.is_char_ref() {
        return match reference.resolve_char_ref() {
            Ok(Some(c)) => Ok(Resolved::Char(c)),
            Ok(None) => Err("a character reference names no character".into()),
            Err(e) => Err(format!("bad character reference: {e}")),
        };
    }
    let name = reference
        .decode()
        .map_err(|e| format!("bad entity reference: {e}"))?;
    quick_xml::escape::resolve_predefined_entity(&name)
        .map(Resolved::Text)
        .ok_or_else(|| {
            format!("undefined entity &{name};: only &lt; &gt; &amp; &quot; &apos; and character references are accepted")
        })
}

/// Reads the text that follows a markup event into the open element `frame` (when it is
/// kept) and consumes it from `reader`. `document` is the reader's whole input. Returns false,
/// having read and consumed nothing, when the events must read the run: it ends the document
/// or holds a reference the events refuse.
pub(super) fn text_run<'a>(
    reader: &mut Reader<&'a [u8]>,
    document: &'a str,
    frame: &mut Frame<'_, 'a>,
) -> bool {
    let rest: &'a [u8] = reader.get_ref();
    let Some(run) = document
        .len()
        .checked_sub(rest.len())
        .and_then(|start| document.get(start..))
        .filter(|run| run.as_ptr() == rest.as_ptr())
    else {
        return false;
    };
    let Some(end) = memchr(b'<', run.as_bytes()) else {
        return false;
    };
    if end == 0 {
        return true;
    }
    let Some(text) = decode(&run[..end]) else {
        return false;
    };
    if frame.kept {
        frame.text.push(text);
    }
    reader.stream().consume(end);
    true
}

/// The text a run of character data means (borrowed when it has no reference and no `\r`),
/// or None when a reference in it is unterminated or unknown.
fn decode(run: &str) -> Option<Cow<'_, str>> {
    if memchr2(b'&', b'\r', run.as_bytes()).is_none() {
        return Some(Cow::Borrowed(run));
    }
    // References only ever shrink the text.
    let mut out = String::with_capacity(run.len());
    let mut rest = run;
    while let Some(amp) = memchr(b'&', rest.as_bytes()) {
        push_normalized(&mut out, &rest[..amp]);
        let after = &rest[amp + 1..];
        // The reader ends a reference at the first `;`, and refuses one with `&` before it.
        let semi =
            memchr2(b';', b'&', after.as_bytes()).filter(|&i| after.as_bytes()[i] == b';')?;
        let name = &after[..semi];
        if name.starts_with('#') {
            out.push(BytesRef::new(name).resolve_char_ref().ok()??);
        } else {
            out.push_str(quick_xml::escape::resolve_predefined_entity(name)?);
        }
        rest = &after[semi + 1..];
    }
    push_normalized(&mut out, rest);
    Some(Cow::Owned(out))
}

/// Appends `piece` (text between references) with XML 1.0 line ends: `\r\n` and a lone `\r`
/// become `\n`.
fn push_normalized(out: &mut String, piece: &str) {
    let mut rest = piece;
    while let Some(cr) = memchr(b'\r', rest.as_bytes()) {
        out.push_str(&rest[..cr]);
        out.push('\n');
        rest = &rest[cr + 1..];
        rest = rest.strip_prefix('\n').unwrap_or(rest);
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xml::shape::Shape;

    /// The text of `<a>{run}</a>` read by `text_run`, or None when it leaves it to the events.
    fn run(content: &str) -> Option<String> {
        let document = format!("<a>{content}</a>");
        let mut reader = Reader::from_str(&document);
        let _ = reader.read_event();
        let mut frame = Frame::new(Cow::Borrowed("a"), None, &Shape::Any, true);
        if !text_run(&mut reader, &document, &mut frame) {
            return None;
        }
        assert_eq!(reader.buffer_position() as usize, document.len() - 4);
        Some(frame.text.into_trimmed())
    }

    #[test]
    fn runs_read_like_the_events() {
        assert_eq!(run(" 5 &lt; 7 &amp;&gt; 3 ").as_deref(), Some("5 < 7 &> 3"));
        assert_eq!(run("caf&#233; &#x1F600;").as_deref(), Some("café 😀"));
        assert_eq!(run("a\r\nb\rc").as_deref(), Some("a\nb\nc"));
        assert_eq!(run("a\r&#10;\r\r\nb").as_deref(), Some("a\n\n\n\nb"));
        assert_eq!(run("x\r&#13;\ny").as_deref(), Some("x\n\r\ny"));
        assert_eq!(run("").as_deref(), Some(""));
        assert_eq!(run("&#32;x").as_deref(), Some("x"));
    }

    #[test]
    fn anything_else_is_left_to_the_events() {
        for content in [
            "&nbsp;",
            "a & b",
            "&lt",
            "&a&b;",
            "&#0;",
            "&#xFFFFFFFF;",
            "&;",
        ] {
            assert_eq!(run(content), None, "{content}");
        }
        let document = "<a>no end";
        let mut reader = Reader::from_str(document);
        let _ = reader.read_event();
        let mut frame = Frame::new(Cow::Borrowed("a"), None, &Shape::Any, true);
        assert!(!text_run(&mut reader, document, &mut frame));
    }
}
