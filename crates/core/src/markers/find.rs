//! [`find_sections`]: where the marker sections of a reply are — a marker such as
//! `SUGGESTED_VALUES:` (also `**X:**`, `**X**:`, `*X*:`, after a Markdown heading's `#`s),
//! then the JSON that follows it, directly or inside a ```` ```json ```` fence.
//!
//! The JSON is cut out by escape-aware balanced matching: brackets inside strings, `\"` and
//! `\\` are tracked, so a `}` in a label never ends an object early. Work is linear in the
//! reply: each marker name is searched once, and each section is scanned once.

/// One marker found in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section<'a> {
    /// Index into the marker names given to [`find_sections`].
    pub marker: usize,
    /// Byte range to remove from the message: the marker, its JSON and a fence around it.
    pub start: usize,
    pub end: usize,
    /// What follows the marker.
    pub body: Body<'a>,
}

/// What follows a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// A balanced JSON object or array (not yet parsed).
    Json(&'a str),
    /// An object or array that opens but never closes: the reply was cut off.
    Unclosed(&'a str),
    /// No `{` or `[` after the marker: the text that follows instead (trimmed, may be empty).
    Missing(&'a str),
}

/// Every marker section of `text`, in order of position. Occurrences inside an earlier
/// section's JSON (a marker name quoted in a string) are skipped; a marker name glued to a
/// word (`MY_SUGGESTED_VALUES:`) is not a marker.
pub(crate) fn find_sections<'a, S: AsRef<str>>(text: &'a str, markers: &[S]) -> Vec<Section<'a>> {
    // (start, where the name starts, after the colon, marker)
    let mut hits: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (index, name) in markers.iter().enumerate() {
        let name = name.as_ref();
        if name.is_empty() {
            continue;
        }
        let mut from = 0;
        while let Some(offset) = text[from..].find(name) {
            let at = from + offset;
            from = at + name.len();
            if let Some((start, after)) = marker_at(text, at, name.len()) {
                hits.push((start, at, after, index));
            }
        }
    }
    hits.sort_unstable();
    let mut sections: Vec<Section<'a>> = Vec::new();
    for (start, name_at, after, marker) in hits {
        let previous_end = sections.last().map_or(0, |s| s.end);
        if name_at < previous_end {
            continue;
        }
        // `*` shared with the previous marker's `:**` belongs to that one.
        let start = start.max(previous_end);
        let (body, body_end) = body_after(text, after);
        let (start, end) = match widen_to_fence(text, start, body_end) {
            // A fence that opens inside the previous section is not this section's fence.
            (wide, _) if wide < previous_end => (start, body_end),
            widened => widened,
        };
        sections.push(Section {
            marker,
            start,
            end,
            body,
        });
    }
    sections
}

/// When the marker name at `at..at+len` is a marker (`*`s, optional spaces, `:`, `*`s), the
/// section's start (including leading `*`s and a heading's `#`s) and the offset after it.
fn marker_at(text: &str, at: usize, len: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut start = at;
    while start > 0 && bytes[start - 1] == b'*' && at - start < 2 {
        start -= 1;
    }
    if start > 0 && is_word_byte(bytes[start - 1]) {
        return None;
    }
    let mut i = at + len;
    if bytes.get(i).copied().is_some_and(is_word_byte) {
        return None;
    }
    i += count(bytes, i, b'*', 2);
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    if bytes.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    i += count(bytes, i, b'*', 2);
    Some((heading_start(bytes, start), i))
}

/// A Markdown heading's `#`s and space right before `start` on its line belong to the marker.
fn heading_start(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while i > 0 && bytes[i - 1] == b' ' {
        i -= 1;
    }
    let hashes_end = i;
    while i > 0 && bytes[i - 1] == b'#' {
        i -= 1;
    }
    let line_start = i == 0 || bytes[i - 1] == b'\n';
    if hashes_end > i && hashes_end - i <= 6 && line_start {
        i
    } else {
        start
    }
}

fn count(bytes: &[u8], from: usize, byte: u8, max: usize) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .take(max)
        .take_while(|&&b| b == byte)
        .count()
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The body after a marker ending at `after`, and where the section ends.
fn body_after(text: &str, after: usize) -> (Body<'_>, usize) {
    let bytes = text.as_bytes();
    let mut i = skip_space(bytes, after);
    let mut fenced = false;
    if bytes[i..].starts_with(b"```") {
        // ```json (or any info string) up to the end of its line.
        match text[i..].find('\n') {
            Some(nl) => {
                i = skip_space(bytes, i + nl + 1);
                fenced = true;
            }
            None => return (Body::Missing(""), text.len()),
        }
    }
    match bytes.get(i) {
        Some(b'{' | b'[') => match balanced_end(bytes, i) {
            Some(end) => {
                let mut section_end = end;
                if fenced {
                    let j = skip_space(bytes, end);
                    if bytes[j..].starts_with(b"```") {
                        section_end = j + 3;
                    }
                }
                (Body::Json(&text[i..end]), section_end)
            }
            None => (Body::Unclosed(&text[i..]), text.len()),
        },
        _ => {
            let rest = &text[i..];
            let line = rest.split('\n').next().unwrap_or("").trim();
            (Body::Missing(line), after)
        }
    }
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the JSON object or array opening at `open`, matching brackets
/// outside strings; `None` when the text ends first.
pub(crate) fn balanced_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (offset, &b) in bytes[open..].iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                // A mismatched closer still closes the innermost bracket: the JSON parser
                // reports it precisely, and the section ends where a reader would expect.
                stack.pop();
                if stack.is_empty() {
                    return Some(open + offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// When the section `start..end` is the only content of a Markdown code fence, the range
/// grows to cover the fence (so no empty fence is left in the message).
fn widen_to_fence(text: &str, start: usize, end: usize) -> (usize, usize) {
    let before = &text[..start];
    let open_line_start = before.trim_end().rfind('\n').map_or(0, |i| i + 1);
    let open_line = before[open_line_start..].trim_end();
    let before_is_fence = open_line.starts_with("```")
        && !open_line[3..].contains('`')
        && before[open_line_start + open_line.len()..]
            .chars()
            .all(char::is_whitespace);
    if !before_is_fence {
        return (start, end);
    }
    let after = &text[end..];
    let trimmed = after.trim_start();
    if !trimmed.starts_with("```") {
        return (start, end);
    }
    let close_end = end + (after.len() - trimmed.len()) + 3;
    (open_line_start, close_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["SUGGESTED_VALUES", "SCHEMA_PROPOSAL"];

    fn json_of<'a>(s: &Section<'a>) -> &'a str {
        match s.body {
            Body::Json(j) => j,
            ref other => panic!("not json: {other:?}"),
        }
    }

    #[test]
    fn every_wrapping_is_a_marker() {
        for text in [
            "Hi.\nSUGGESTED_VALUES: [\"a\"]",
            "Hi.\n**SUGGESTED_VALUES:** [\"a\"]",
            "Hi.\n**SUGGESTED_VALUES**: [\"a\"]",
            "Hi.\n*SUGGESTED_VALUES*: [\"a\"]",
            "Hi.\nSUGGESTED_VALUES : [\"a\"]",
            "Hi.\n### SUGGESTED_VALUES:\n[\"a\"]",
        ] {
            let found = find_sections(text, NAMES);
            assert_eq!(found.len(), 1, "{text}");
            assert_eq!(json_of(&found[0]), "[\"a\"]");
            assert_eq!(&text[..found[0].start], "Hi.\n", "{text}");
            assert_eq!(found[0].end, text.len());
        }
    }

    #[test]
    fn glued_names_and_missing_colons_are_not_markers() {
        for text in [
            "MY_SUGGESTED_VALUES: [1]",
            "SUGGESTED_VALUESX: [1]",
            "the SUGGESTED_VALUES list [1]",
        ] {
            assert!(find_sections(text, NAMES).is_empty(), "{text}");
        }
    }

    #[test]
    fn strings_and_escapes_do_not_end_the_json() {
        let text = r#"SCHEMA_PROPOSAL: {"a": "x } ] \" {", "b": ["\\", "]"]} tail"#;
        let found = find_sections(text, NAMES);
        assert_eq!(
            json_of(&found[0]),
            r#"{"a": "x } ] \" {", "b": ["\\", "]"]}"#
        );
        assert_eq!(&text[found[0].end..], " tail");
    }

    #[test]
    fn fenced_json_after_a_marker_and_a_fence_around_the_section() {
        let text = "Ok.\nSUGGESTED_VALUES:\n```json\n[\"a\"]\n```\nBye.";
        let found = find_sections(text, NAMES);
        assert_eq!(json_of(&found[0]), "[\"a\"]");
        assert_eq!(&text[found[0].end..], "\nBye.");
        let text = "Ok.\n```\nSUGGESTED_VALUES: [\"a\"]\n```\nBye.";
        let found = find_sections(text, NAMES);
        assert_eq!(&text[..found[0].start], "Ok.\n");
        assert_eq!(&text[found[0].end..], "\nBye.");
    }

    #[test]
    fn markers_inside_an_earlier_section_are_skipped() {
        let text = r#"SCHEMA_PROPOSAL: {"note": "SUGGESTED_VALUES: [1]"} SUGGESTED_VALUES: [2]"#;
        let found = find_sections(text, NAMES);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].marker, 1);
        assert_eq!(json_of(&found[1]), "[2]");
    }

    #[test]
    fn cut_off_and_missing_bodies() {
        let found = find_sections("SUGGESTED_VALUES: [\"a\", \"b", NAMES);
        assert_eq!(found[0].body, Body::Unclosed("[\"a\", \"b"));
        let found = find_sections("SUGGESTED_VALUES: none today\nmore", NAMES);
        assert_eq!(found[0].body, Body::Missing("none today"));
        let found = find_sections("SUGGESTED_VALUES:", NAMES);
        assert_eq!(found[0].body, Body::Missing(""));
    }

    #[test]
    fn sections_never_overlap() {
        let text = "SUGGESTED_VALUES: x\n```\nSCHEMA_PROPOSAL: {}\n```";
        let found = find_sections(text, NAMES);
        assert_eq!(found.len(), 2);
        assert!(found[0].end <= found[1].start, "{found:?}");
        let text = "```\nSUGGESTED_VALUES: [1]\nSCHEMA_PROPOSAL: {}\n```";
        let found = find_sections(text, NAMES);
        assert!(found[0].end <= found[1].start, "{found:?}");
        // The `*` after the first colon could open the second marker's wrapping.
        let text = "SCHEMA_PROPOSAL:*SCHEMA_PROPOSAL: {}";
        let found = find_sections(text, NAMES);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].body, Body::Json("{}"));
    }

    #[test]
    fn multibyte_text_around_markers() {
        let text = "Voilà ✓ **SUGGESTED_VALUES:** [\"é\"] ✓";
        let found = find_sections(text, NAMES);
        assert_eq!(json_of(&found[0]), "[\"é\"]");
        assert_eq!(&text[found[0].end..], " ✓");
    }
}
