//! Tests of the wire spoilers: the mark lands inside the reply's strings, spoiling keeps frame
//! lengths and leaves exactly the marked frame invalid, garbage is one frame of HTML.

use super::*;
use crate::request::{MockCall, ReplyInfo, StopReason, Usage};
use serde_json::json;
use std::time::Duration;

fn info() -> ReplyInfo {
    ReplyInfo {
        id: "abc".into(),
        attempt: 1,
        delay: Duration::ZERO,
        target: None,
    }
}

fn text(content: &str, calls: Vec<MockCall>) -> MockReply {
    MockReply::Text {
        content: content.into(),
        calls,
        usage: Usage::default(),
        stop: StopReason::End,
        fault: None,
        pieces: Some(vec![content.into()]),
        info: info(),
    }
}

#[test]
fn the_mark_goes_inside_the_text_or_the_longest_string_of_a_value() {
    let MockReply::Text {
        content, pieces, ..
    } = mark(text("héllo!", Vec::new()))
    else {
        panic!("not text")
    };
    assert_eq!(content, "hél\u{E000}lo!");
    assert_eq!(pieces, None, "scripted pieces would not hold the mark");

    let call = MockCall {
        name: "present_question".into(),
        arguments: json!({"question": "Which one?", "options": ["a", "bb"]}),
    };
    let MockReply::Text { calls, .. } = mark(text("", vec![call])) else {
        panic!("not text")
    };
    assert_eq!(calls[0].arguments["question"], "Which\u{E000} one?");

    let tool = MockReply::ToolCall {
        name: "respond".into(),
        input: json!({"type": "response", "blocks": [{"text": "a longer one"}]}),
        usage: Usage::default(),
        fault: None,
        pieces: None,
        info: info(),
    };
    let MockReply::ToolCall { input, .. } = mark(tool) else {
        panic!("not a tool call")
    };
    assert_eq!(input["blocks"][0]["text"], "a long\u{E000}er one");
    assert_eq!(input["type"], "response");
}

#[test]
fn spoiling_replaces_the_mark_in_place_or_breaks_the_first_string() {
    let marked = json!({"content": "ab\u{E000}cd"}).to_string();
    let spoiled = spoil(marked.as_bytes());
    assert_eq!(spoiled.len(), marked.len(), "same length");
    assert!(std::str::from_utf8(&spoiled).is_err());
    assert_eq!(
        String::from_utf8_lossy(&spoiled),
        "{\"content\":\"ab\u{FFFD}\u{FFFD}(cd\"}"
    );
    let plain = spoil(b"{\"a\":1}");
    assert_eq!(&plain[..2], b"{\"");
    assert!(std::str::from_utf8(&plain).is_err());
}

#[test]
fn only_the_marked_frame_is_spoiled_and_garbage_is_one_frame_of_html() {
    let frames = vec![
        "data: {\"a\":\"x\"}\n\n".to_owned(),
        "data: {\"a\":\"y\u{E000}\"}\n\n".to_owned(),
        "data: [DONE]\n\n".to_owned(),
    ];
    let spoiled = super::frames(frames.clone(), Some(Fault::InvalidUtf8));
    let valid: Vec<bool> = spoiled
        .iter()
        .map(|f| std::str::from_utf8(f).is_ok())
        .collect();
    assert_eq!(valid, [true, false, true]);
    let lengths = |fs: &[Bytes]| fs.iter().map(Bytes::len).collect::<Vec<_>>();
    let original: Vec<usize> = frames.iter().map(String::len).collect();
    assert_eq!(lengths(&spoiled), original);

    let garbage = super::frames(frames.clone(), Some(Fault::Garbage));
    assert_eq!(garbage.len(), 4);
    assert_eq!(garbage[1], format!("data: {GARBAGE_PAGE}\n\n"));
    assert!(serde_json::from_str::<Value>(GARBAGE_PAGE).is_err());

    let untouched = super::frames(frames.clone(), None);
    assert_eq!(lengths(&untouched), original);
    // No frame carries the mark: the first one is spoiled all the same.
    let unmarked = super::frames(vec!["data: {}\n\n".to_owned()], Some(Fault::InvalidUtf8));
    assert!(std::str::from_utf8(&unmarked[0]).is_err());
}
