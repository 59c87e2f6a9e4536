//! [`bound`]: an attempt's record cut to the contract's `max_bytes` before it is stored. A
//! reply past the limit is refused unread (`too_large`), but its text would still go to the
//! store whole — a model (or a mock handed a hostile schema) answering 40 MB would cost 40 MB
//! of database per attempt. The stored text is the reply's first `max_bytes` bytes (cut at a
//! character boundary) and its `too_large` violation says how large the reply was and how much
//! is kept ("… reply of N bytes, first M stored"), so admins still see the oversized attempt.
//! The provider's raw response, which holds the same text, is kept as a JSON note of the same
//! size: `{"truncated": true, "bytes": N, "stored_bytes": M, "text": "<its first bytes>"}`.

use crate::store::NewMessage;
use bridle_core::{Rule, Violation};
use serde_json::{Value, json};

/// Cuts `record`'s content, error text and raw response to `max_bytes` each, noting each cut.
pub(crate) fn bound(record: &mut NewMessage, max_bytes: usize) {
    let content_note = cut(&mut record.content, max_bytes, "reply");
    let error_note = record
        .error
        .as_mut()
        .and_then(|error| cut(error, max_bytes, "error text"));
    if let Some(note) = content_note {
        match record
            .violations
            .iter_mut()
            .find(|v| v.rule == Rule::TooLarge)
        {
            Some(violation) => violation.message = format!("{}; {note}", violation.message),
            // A provider error's content is its error text: the error's own note tells.
            None if error_note.is_some() => {}
            None => match &mut record.error {
                Some(error) => error.push_str(&format!(" ({note})")),
                None => record
                    .violations
                    .push(Violation::new("", Rule::TooLarge, note)),
            },
        }
    }
    if let (Some(error), Some(note)) = (&mut record.error, error_note) {
        error.push_str(&format!(" ({note})"));
    }
    if let Some(raw) = &mut record.raw_response {
        bound_raw(raw, max_bytes);
    }
}

/// Cuts `text` (a `what`) to at most `max_bytes` bytes at a character boundary; the note
/// saying so, or `None` when it fits.
fn cut(text: &mut String, max_bytes: usize, what: &str) -> Option<String> {
    let size = text.len();
    if size <= max_bytes {
        return None;
    }
    let mut kept = max_bytes;
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    text.truncate(kept);
    Some(format!("{what} of {size} bytes, first {kept} stored"))
}

/// Replaces a raw response longer than `max_bytes` as JSON text by a note that is at most
/// `max_bytes` long (when the note's frame fits): its size and the start of its text.
fn bound_raw(raw: &mut Value, max_bytes: usize) {
    let Ok(text) = serde_json::to_string(raw) else {
        return;
    };
    let size = text.len();
    if size <= max_bytes {
        return;
    }
    let note = |kept: usize, prefix: &str| json!({"truncated": true, "bytes": size, "stored_bytes": kept, "text": prefix});
    // The frame's own size, with the largest numbers it can hold.
    let frame = note(size, "").to_string().len();
    let room = max_bytes.saturating_sub(frame);
    let mut written = 0;
    let mut kept = 0;
    for (at, c) in text.char_indices() {
        written += escaped_len(c);
        if written > room {
            break;
        }
        kept = at + c.len_utf8();
    }
    *raw = note(kept, &text[..kept]);
}

/// Bytes `c` takes inside a JSON string as `serde_json` writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MessageRole;

    fn record(content: &str, raw: Value) -> NewMessage {
        NewMessage {
            conversation_id: "c".into(),
            turn_id: "t".into(),
            role: MessageRole::Assistant,
            content: content.into(),
            value: None,
            is_validated: false,
            is_fallback: false,
            attempt: Some(1),
            contract: "x".into(),
            contract_version: "1.0.0".into(),
            request_payload: None,
            raw_response: Some(raw),
            violations: Vec::new(),
            repairs: Vec::new(),
            provider: None,
            model: None,
            tokens_in: None,
            tokens_out: None,
            latency_ms: None,
            error: None,
            interrupted: None,
            route: None,
            context: None,
            answer: None,
            request_id: None,
            trace_id: None,
        }
    }

    #[test]
    fn a_reply_over_the_limit_keeps_its_first_bytes_and_says_how_large_it_was() {
        // Two-byte characters, so the limit falls inside one.
        let content = "é\"\n".repeat(100);
        let mut over = record(&content, json!({"content": content}));
        over.violations
            .push(Violation::new("", Rule::TooLarge, "the reply is 400 bytes"));
        bound(&mut over, 101);
        assert_eq!(over.content.len(), 100);
        assert!(content.starts_with(&over.content));
        assert_eq!(
            over.violations[0].message,
            "the reply is 400 bytes; reply of 400 bytes, first 100 stored"
        );
        let raw = over.raw_response.unwrap();
        assert!(raw.to_string().len() <= 101, "{raw}");
        assert_eq!(raw["truncated"], true);
        assert_eq!(raw["bytes"], json!({"content": content}).to_string().len());
        let text = raw["text"].as_str().unwrap();
        assert_eq!(raw["stored_bytes"], text.len());
        assert!(json!({"content": content}).to_string().starts_with(text));

        let mut error = record(&"x".repeat(50), json!(null));
        error.error = Some(format!("status: {}", "x".repeat(50)));
        bound(&mut error, 20);
        assert_eq!(error.content.len(), 20);
        assert!(error.violations.is_empty());
        assert!(
            error
                .error
                .unwrap()
                .ends_with("xx (error text of 58 bytes, first 20 stored)")
        );
    }

    #[test]
    fn a_reply_within_the_limit_is_stored_as_it_came() {
        let mut within = record("abc", json!({"content": "abc"}));
        let before = within.clone();
        bound(&mut within, 17);
        assert_eq!(within, before);
        let mut unnoted = record(&"y".repeat(30), json!(null));
        bound(&mut unnoted, 10);
        assert_eq!(unnoted.violations.len(), 1);
        assert_eq!(unnoted.violations[0].rule, Rule::TooLarge);
        assert_eq!(unnoted.raw_response, Some(json!(null)));
    }
}
