//! [`locate`]: the XML document inside a reply — past a byte-order mark, a code fence or
//! prose around it (each a reported repair) — starting at the prolog or the root's start tag.

use crate::repair_kind::RepairKind;
use crate::report::{Repair, Violation};
use crate::rule::Rule;
use crate::schema::cut;

/// The document inside `raw`: without a byte-order mark, a code fence, or text before the
/// root's start tag and after its end tag (each a reported repair).
pub(super) fn locate<'a>(
    raw: &'a str,
    root: &str,
    repairs: &mut Vec<Repair>,
) -> Result<&'a str, Violation> {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw).trim();
    let open = format!("<{root}");
    let Some(root_start) = find_start_tag(text, &open) else {
        return Err(Violation::new(
            "",
            Rule::NotXml,
            format!("the reply contains no <{root}> document; send only the XML"),
        )
        .with_found(cut(text, 60)));
    };
    // A declaration or DOCTYPE before the root belongs to the document: the parser reads the
    // encoding from the one and refuses the other.
    let prolog = ["<?xml", "<!DOCTYPE", "<!doctype"]
        .iter()
        .filter_map(|mark| text[..root_start].find(mark))
        .min();
    let start = prolog.unwrap_or(root_start);
    let close = format!("</{root}>");
    let end = text
        .rfind(&close)
        .filter(|&end| end >= start)
        .map_or(text.len(), |end| end + close.len());
    let (before, after) = (&text[..start], &text[end..]);
    if !before.trim().is_empty() || !after.trim().is_empty() {
        let fenced = before.trim_end().ends_with("```xml")
            || before.trim_end().ends_with("```")
            || after.trim_start().starts_with("```");
        let prose = strip_fence_marks(before).trim().is_empty()
            && strip_fence_marks(after).trim().is_empty();
        if fenced {
            repairs.push(Repair::text(
                RepairKind::CodeFence,
                1,
                "removed the code fence around the XML",
            ));
        }
        if !prose {
            repairs.push(Repair::text(
                RepairKind::SurroundingProse,
                1,
                "removed the text before and after the XML document",
            ));
        }
    }
    Ok(&text[start..end])
}

/// The first `<root` that is a whole tag name (`<root>`, `<root `, `<root/`).
fn find_start_tag(text: &str, open: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(open) {
        let at = from + found;
        match text[at + open.len()..].chars().next() {
            Some('>' | '/' | ' ' | '\t' | '\n' | '\r') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

fn strip_fence_marks(text: &str) -> String {
    text.replace("```xml", "").replace("```", "")
}
