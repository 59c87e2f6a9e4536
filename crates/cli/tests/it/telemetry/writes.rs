//! The writes that follow a turn's attempts, each a span below its turn: the turn's opening
//! (the user's message, written while the model is called), the conversation's state after a
//! topic analysis, and the safety event (beside its notification) after a worrying message.
//! The requests came without a trace: the log line written inside one carries the trace the
//! gateway began for it.

use super::receiver::{self, Got};
use super::{children, named};
use crate::{create_conversation, send_message, serve_in, spawn_listening};
use serde_json::json;
use std::ffi::OsStr;
use std::time::Duration;

const ADA: &str = "ada-telemetry-key-000000";

const TOPIC_REPLY: &str = r#"<llmResponse>
  <response>Many families start with a 529 plan.</response>
  <analysis>
    <subject name="college-savings" description="Saving for university costs" isNew="true">
      <keyword term="529-plan" confidence="0.95" />
    </subject>
    <summaryUpdate>The user asked how much to save for college.</summaryUpdate>
  </analysis>
</llmResponse>"#;

/// The store writes right below `turn`, by their `bridle.record`.
fn writes<'s>(spans: &'s [Got], turn: &Got) -> Vec<&'s Got> {
    let mut writes: Vec<&Got> = children(spans, turn)
        .into_iter()
        .filter(|s| s.name == "bridle.store.write")
        .collect();
    writes.sort_by(|a, b| a.str("bridle.record").cmp(b.str("bridle.record")));
    writes
}

fn check_write(write: &Got, record: &str, operation: &str, collection: &str) {
    assert_eq!(write.str("bridle.record"), record, "{write:#?}");
    assert_eq!(write.str("db.system.name"), "sqlite", "{write:#?}");
    assert_eq!(write.str("db.operation.name"), operation, "{write:#?}");
    assert_eq!(write.str("db.collection.name"), collection, "{write:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_state_and_safety_writes_are_spans_of_their_turn() {
    let (endpoint, spans) = receiver::http().await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let turns = json!({"turns": [
        {"attempts": [{"valid": true}]},
        {"attempts": [{"reply": TOPIC_REPLY}]},
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let (_mock, mock_url) = spawn_listening(
        &[
            OsStr::new("mock-llm"),
            OsStr::new("--port"),
            OsStr::new("0"),
            OsStr::new("--script"),
            script.as_os_str(),
        ],
        &[],
    );
    let upstream = format!("{mock_url}/v1");
    let (mut serve, url) = serve_in(
        &dir.path().join("data"),
        &[
            ("BRIDLE_USER_KEYS", &format!("ada:{ADA}")),
            ("BRIDLE__PROVIDERS__UP__KIND", "openai"),
            ("BRIDLE__PROVIDERS__UP__BASE_URL", &upstream),
            ("BRIDLE__MODELS__UP__PROVIDER", "up"),
            ("BRIDLE__MODELS__UP__MODEL", "mock-model"),
            ("BRIDLE__DEFAULT_MODEL", "up"),
            ("BRIDLE__TELEMETRY__OTLP_ENDPOINT", &endpoint),
        ],
    );
    let client = reqwest::Client::new();
    let turns = [
        ("selfhelp-response", "I hurt myself yesterday"),
        ("topic-analysis", "How much should we save for college?"),
    ];
    for (contract, content) in turns {
        let conversation = create_conversation(&client, &url, ADA, contract).await;
        let body = send_message(&client, &url, ADA, &conversation, content).await;
        assert_eq!(body["attempts"], 1, "{contract}: {body}");
    }
    serve.signal("TERM");
    let status = serve.exit_within(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{}", serve.log());

    let spans = spans.all();
    let all = || format!("{spans:#?}");
    let turns = named(&spans, "bridle.turn");
    assert_eq!(turns.len(), 2, "{}", all());
    let turn = |contract: &str| {
        *turns
            .iter()
            .find(|t| t.str("bridle.contract") == contract)
            .unwrap_or_else(|| panic!("no turn on {contract}: {}", all()))
    };

    let selfhelp = turn("selfhelp-response");
    let below = children(&spans, selfhelp);
    let notify: Vec<_> = below
        .iter()
        .filter(|s| s.name == "bridle.safety.notify")
        .collect();
    assert_eq!(
        notify.len(),
        1,
        "the notification is the turn's: {below:#?}"
    );
    let written = writes(&spans, selfhelp);
    assert_eq!(written.len(), 2, "{written:#?}");
    check_write(written[0], "safety_event", "insert", "safety_events");
    check_write(written[1], "user", "insert", "messages");
    let log = serve.log();
    let safety_line: serde_json::Value = log
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .find(|line: &serde_json::Value| line["message"] == "safety event")
        .unwrap_or_else(|| panic!("no safety event logged: {log}"));
    assert_eq!(
        safety_line["trace_id"], selfhelp.trace_id,
        "the log line carries the trace begun for its request: {safety_line}"
    );
    assert!(safety_line["request_id"].is_string(), "{safety_line}");

    let topic = turn("topic-analysis");
    let written = writes(&spans, topic);
    assert_eq!(written.len(), 2, "{written:#?}");
    check_write(written[0], "state", "update", "conversations");
    check_write(written[1], "user", "insert", "messages");
    for write in written {
        assert_eq!(write.trace_id, topic.trace_id);
    }
}
