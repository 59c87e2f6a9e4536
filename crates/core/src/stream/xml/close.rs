//! [`close`]: an XML reply cut off mid-stream, made into a whole document the contract's XML
//! reader can read — the unfinished markup at the end cut, the open elements closed.
//!
//! From the root's start tag on, the text is walked once: complete tags, comments, processing
//! instructions and references are kept; an unfinished one at the end is cut (an unfinished
//! CDATA section keeps its text so far and is closed). An element the schema reads as a
//! number, an integer or a boolean is cut back to before its start tag while it is open, so a
//! half-written `<count>1` or `<isNew>tr` never shows as another value than the one it
//! becomes. After the root's end tag nothing more is read.

use crate::xml::{Scalar, Shape};

/// The shape of an element the schema does not describe.
static ANY: Shape = Shape::Any;

/// One open element.
#[derive(Debug)]
struct Open<'s> {
    /// Its name, as written.
    name: std::ops::Range<usize>,
    /// Where its start tag begins.
    at: usize,
    shape: &'s Shape,
}

/// The document so far, closed: `None` before the root's start tag is complete.
pub(super) fn close(raw: &str, root: &str, shape: &Shape) -> Option<String> {
    let start = find_start_tag(raw, root)?;
    let b = raw.as_bytes();
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut cut = raw.len();
    let mut cdata = false;
    let mut i = start;
    while let Some(offset) = b
        .get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'<' || c == b'&'))
    {
        let k = i + offset;
        let rest = raw.get(k..).unwrap_or_default();
        if rest.starts_with('&') {
            // A reference runs to its `;`; one that cannot (`& b`) is left to the reader.
            let end = rest
                .bytes()
                .skip(1)
                .position(|c| matches!(c, b';' | b'<' | b'&') || c.is_ascii_whitespace());
            match end.map(|n| (n + 1, rest.as_bytes().get(n + 1))) {
                Some((n, Some(b';'))) => i = k + n + 1,
                Some(_) => i = k + 1,
                None => {
                    cut = k;
                    break;
                }
            }
            continue;
        }
        // Markup that ends with its own terminator.
        let closers: [(&str, &str); 4] = [
            ("<!--", "-->"),
            ("<![CDATA[", "]]>"),
            ("<?", "?>"),
            ("<!", ">"),
        ];
        if let Some((opener, terminator)) = closers
            .iter()
            .find(|(opener, _)| rest.starts_with(opener) || opener.starts_with(rest))
        {
            match rest.get(opener.len()..).and_then(|r| r.find(terminator)) {
                Some(end) => {
                    i = k + opener.len() + end + terminator.len();
                    continue;
                }
                None if *opener == "<![CDATA[" && rest.len() >= opener.len() => {
                    // Keep the text so far, without a `]` that may begin the terminator.
                    cut = raw.trim_end_matches(']').len().max(k + opener.len());
                    cdata = true;
                }
                None => cut = k,
            }
            break;
        }
        let Some(end) = tag_end(b, k) else {
            cut = k;
            break;
        };
        i = end + 1;
        if rest.starts_with("</") {
            stack.pop();
            if stack.is_empty() {
                cut = i;
                break;
            }
            continue;
        }
        let name_end = (k + 1..end)
            .find(|&j| matches!(b.get(j), Some(b' ' | b'\t' | b'\n' | b'\r' | b'/')))
            .unwrap_or(end);
        if b.get(end.wrapping_sub(1)) == Some(&b'/') {
            if stack.is_empty() {
                cut = i;
                break;
            }
            continue;
        }
        let name = b.get(k + 1..name_end).unwrap_or_default();
        let child = match stack.last() {
            None => shape,
            Some(parent) => parent.shape.entry(name).map_or(&ANY, |(_, m)| &m.shape),
        };
        stack.push(Open {
            name: k + 1..name_end,
            at: k,
            shape: child,
        });
    }
    // An open element read as a number or boolean is shown only once it is complete.
    while let Some(open) = stack.last() {
        if !matches!(open.shape, Shape::Text(scalar) if *scalar != Scalar::String) {
            break;
        }
        cut = open.at;
        cdata = false;
        stack.pop();
    }
    let mut out = String::with_capacity(cut + 64);
    out.push_str(raw.get(..cut)?);
    if cdata {
        out.push_str("]]>");
    }
    for open in stack.iter().rev() {
        out.push_str("</");
        out.push_str(raw.get(open.name.clone())?);
        out.push('>');
    }
    Some(out)
}

/// Where the tag starting at `b[k]` (`<`) ends (its `>`, outside quoted attribute values).
fn tag_end(b: &[u8], k: usize) -> Option<usize> {
    let mut quote = None;
    for (j, &c) in b.iter().enumerate().skip(k + 1) {
        match (quote, c) {
            (None, b'"' | b'\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, b'>') => return Some(j),
            _ => {}
        }
    }
    None
}

/// The first `<root` that is a whole start tag name (followed by `>`, `/` or whitespace), as
/// the XML reader locates the document.
fn find_start_tag(text: &str, root: &str) -> Option<usize> {
    let open = format!("<{root}");
    let mut from = 0;
    while let Some(found) = text.get(from..)?.find(&open) {
        let at = from + found;
        match text.get(at + open.len()..)?.chars().next() {
            Some('>' | '/' | ' ' | '\t' | '\n' | '\r') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape() -> Shape {
        Shape::of(&json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "n": {"type": "number"},
                "flag": {"type": "boolean"},
                "item": {"type": "array", "items": {"type": "object", "properties": {"@id": {"type": "string"}}}}
            }
        }))
    }

    #[test]
    fn prefixes_are_cut_and_closed() {
        let shape = shape();
        for (text, want) in [
            ("Sure:\n<r", None),
            ("<r>", Some("<r></r>")),
            ("Here: <r><text>Hel", Some("Here: <r><text>Hel</text></r>")),
            ("<r><text>a &amp", Some("<r><text>a </text></r>")),
            ("<r><text>a &amp; b", Some("<r><text>a &amp; b</text></r>")),
            (
                "<r><text>a & b<n>2</n>",
                Some("<r><text>a & b<n>2</n></text></r>"),
            ),
            ("<r><text>a</te", Some("<r><text>a</text></r>")),
            ("<r><item id=\"x>y", Some("<r></r>")),
            ("<r><item id=\"x>y\"/>", Some("<r><item id=\"x>y\"/></r>")),
            ("<r><n>1.", Some("<r></r>")),
            ("<r><n>1.5</n><flag>tr", Some("<r><n>1.5</n></r>")),
            (
                "<r><text><![CDATA[a <b>]",
                Some("<r><text><![CDATA[a <b>]]></text></r>"),
            ),
            ("<r><text><![CDA", Some("<r><text></text></r>")),
            ("<r><!-- note", Some("<r></r>")),
            (
                "<r><!-- note --><text>x",
                Some("<r><!-- note --><text>x</text></r>"),
            ),
            (
                "<r><text>x</text></r>\nbye <",
                Some("<r><text>x</text></r>"),
            ),
            ("<r/> more", Some("<r/>")),
        ] {
            assert_eq!(close(text, "r", &shape).as_deref(), want, "{text:?}");
        }
    }
}
