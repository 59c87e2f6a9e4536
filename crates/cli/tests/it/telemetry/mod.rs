//! Traces through the real binaries: `bridle serve` behind `bridle mock-llm`, exporting to a
//! test OTLP receiver ([`receiver`]) over HTTP/protobuf and over gRPC. One turn meets an HTTP
//! 500 on its first attempt and a valid reply on its second; the caller sends a W3C
//! `traceparent`. The spans the receiver gets (flushed when the server stops on SIGTERM) form
//! the tree request → turn → opening and attempts → their store writes, with their attributes;
//! the mock saw each upstream call's `traceparent` in the same trace, naming its attempt's span.
//! Prompt and reply text are in no span unless `capture_content` is on.

mod receiver;
mod writes;

use crate::{create_conversation, fixture, serve_in, spawn_listening};
use bridle_mock::LoggedRequest;
use receiver::{Got, Spans};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::time::Duration;

const ADA: &str = "ada-telemetry-key-000000";
const ADMIN: &str = "admin-telemetry-key-0000";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
/// A word of the user's message that only the prompt carries.
const MARKER: &str = "zebracrossing";
const SERVER: i32 = 2;
const CLIENT: i32 = 3;

/// What one run changes.
struct Run {
    /// `[telemetry] protocol`.
    protocol: &'static str,
    capture_content: bool,
    /// Whether the caller sends a `traceparent` of its own.
    caller_trace: bool,
}

/// The spans of one turn and the upstream requests the mock logged.
struct Traced {
    spans: Vec<Got>,
    upstream: Vec<LoggedRequest>,
    conversation: String,
    /// The trace id stored with the turn's user message.
    stored_trace_id: Option<String>,
    caller_trace: bool,
}

async fn traced_turn(run: &Run, endpoint: &str, spans: &Spans) -> Traced {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let attempts = json!([{"fault": {"kind": "http500"}}, {"valid": true}]);
    std::fs::write(
        &script,
        json!({"turns": [{"attempts": attempts}]}).to_string(),
    )
    .unwrap();
    let contracts = fixture("contracts");
    let contracts = contracts.to_str().unwrap();
    let (_mock, mock_url) = spawn_listening(
        &[
            OsStr::new("mock-llm"),
            OsStr::new("--port"),
            OsStr::new("0"),
            OsStr::new("--seed"),
            OsStr::new("7"),
            OsStr::new("--script"),
            script.as_os_str(),
        ],
        &[("BRIDLE_CONTRACTS_DIR", contracts)],
    );
    let upstream = format!("{mock_url}/v1");
    let capture = run.capture_content.to_string();
    let (mut serve, url) = serve_in(
        &dir.path().join("data"),
        &[
            ("BRIDLE_CONTRACTS_DIR", contracts),
            ("BRIDLE_USER_KEYS", &format!("ada:{ADA}")),
            ("BRIDLE_ADMIN_KEY", ADMIN),
            ("BRIDLE__RETRY__DELAY_MS", "0"),
            ("BRIDLE__PROVIDERS__UP__KIND", "openai"),
            ("BRIDLE__PROVIDERS__UP__BASE_URL", &upstream),
            ("BRIDLE__MODELS__UP__PROVIDER", "up"),
            ("BRIDLE__MODELS__UP__MODEL", "mock-model"),
            ("BRIDLE__DEFAULT_MODEL", "up"),
            ("BRIDLE__TELEMETRY__OTLP_ENDPOINT", endpoint),
            ("BRIDLE__TELEMETRY__PROTOCOL", run.protocol),
            ("BRIDLE__TELEMETRY__CAPTURE_CONTENT", &capture),
            ("OTEL_SERVICE_NAME", "bridle-under-test"),
        ],
    );
    let client = reqwest::Client::new();
    let conversation = create_conversation(&client, &url, ADA, "ticket-triage").await;
    let mut post = client
        .post(format!("{url}/v1/conversations/{conversation}/messages"))
        .bearer_auth(ADA);
    if run.caller_trace {
        post = post.header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"));
    }
    let response = post
        .json(&json!({"content": format!("The {MARKER} export button does nothing")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["attempts"], 2, "{body}");
    let upstream: Vec<LoggedRequest> = client
        .get(format!("{mock_url}/_mock/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stored: Value = client
        .get(format!("{url}/admin/v1/conversations/{conversation}"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stored_trace_id = stored["messages"][0]["trace_id"]
        .as_str()
        .map(str::to_owned);
    // A graceful stop exports what is still queued.
    serve.signal("TERM");
    let status = serve.exit_within(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{}", serve.log());
    Traced {
        spans: spans.all(),
        upstream,
        conversation,
        stored_trace_id,
        caller_trace: run.caller_trace,
    }
}

fn named<'s>(spans: &'s [Got], name: &str) -> Vec<&'s Got> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn children<'s>(spans: &'s [Got], parent: &Got) -> Vec<&'s Got> {
    spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id)
        .collect()
}

/// The tree and attributes every run must show; the chat spans, in attempt order.
fn check_tree(traced: &Traced) -> Vec<Got> {
    let spans = &traced.spans;
    let all = || format!("{spans:#?}");
    assert!(
        spans.iter().all(|s| s.service == "bridle-under-test"),
        "{}",
        all()
    );
    let requests = named(spans, "POST /v1/conversations/{id}/messages");
    assert_eq!(requests.len(), 1, "{}", all());
    let request = requests[0];
    assert_eq!(request.kind, SERVER);
    let trace = request.trace_id.as_str();
    if traced.caller_trace {
        assert_eq!(trace, TRACE_ID, "the caller's trace is continued");
        assert_eq!(request.parent_span_id, CALLER_SPAN);
    } else {
        assert_eq!(trace.len(), 32, "a trace begun here");
        assert!(request.parent_span_id.is_empty(), "{request:#?}");
    }
    assert_eq!(
        traced.stored_trace_id.as_deref(),
        Some(trace),
        "the turn is stored under its trace"
    );
    assert_eq!(request.str("http.request.method"), "POST");
    assert_eq!(request.str("http.route"), "/v1/conversations/{id}/messages");
    assert_eq!(request.int("http.response.status_code"), 200);

    let turns = children(spans, request);
    assert_eq!(turns.len(), 1, "{}", all());
    let turn = turns[0];
    assert_eq!(turn.name, "bridle.turn");
    assert_eq!(turn.str("bridle.contract"), "ticket-triage");
    assert_eq!(turn.str("bridle.turn.outcome"), "valid");
    assert_eq!(turn.int("bridle.turn.attempts"), 2);

    // Below the turn: its opening (the user's message, written while the model is called)
    // and its attempts.
    let below = children(spans, turn);
    let openings: Vec<_> = below
        .iter()
        .filter(|s| s.name == "bridle.store.write")
        .collect();
    assert_eq!(openings.len(), 1, "{below:#?}");
    assert_eq!(openings[0].str("bridle.record"), "user");
    assert_eq!(openings[0].str("db.system.name"), "sqlite");
    assert_eq!(openings[0].str("db.collection.name"), "messages");
    let mut chats: Vec<Got> = below
        .into_iter()
        .filter(|s| s.name.starts_with("chat "))
        .cloned()
        .collect();
    chats.sort_by_key(|c| c.int("bridle.attempt.number"));
    assert_eq!(chats.len(), 2, "{}", all());
    for (n, chat) in chats.iter().enumerate() {
        assert_eq!(chat.name, "chat mock-model");
        assert_eq!(chat.kind, CLIENT);
        assert_eq!(chat.trace_id, trace);
        assert_eq!(chat.int("bridle.attempt.number"), n as i64 + 1);
        assert_eq!(chat.str("gen_ai.operation.name"), "chat");
        assert_eq!(chat.str("gen_ai.provider.name"), "openai");
        assert_eq!(chat.str("gen_ai.system"), "openai");
        assert_eq!(chat.str("gen_ai.request.model"), "mock-model");
        assert_eq!(chat.str("bridle.model"), "up");
        // The attempt is the client span of its upstream call (no span of its own): the
        // endpoint and the status are on it, and the mock saw it as the parent.
        assert_eq!(chat.str("server.address"), "127.0.0.1");
        assert!(chat.int("server.port") > 0);
        let status = if n == 0 { 500 } else { 200 };
        assert_eq!(chat.int("http.response.status_code"), status);
        let parent = format!("00-{trace}-{}-01", chat.span_id);
        assert_eq!(
            traced.upstream[n].traceparent.as_deref(),
            Some(parent.as_str()),
            "upstream request {}",
            n + 1
        );
        // Below each attempt: its store write, only.
        let below = children(spans, chat);
        assert_eq!(below.len(), 1, "attempt {}: {below:#?}", n + 1);
        assert_eq!(below[0].name, "bridle.store.write");
        assert_eq!(below[0].str("bridle.record"), "attempt");
        assert_eq!(below[0].str("db.operation.name"), "insert");
    }
    assert_eq!(chats[0].str("bridle.attempt.outcome"), "provider_error");
    assert_eq!(chats[0].str("error.type"), "status");
    let valid = &chats[1];
    assert_eq!(valid.str("bridle.attempt.outcome"), "valid");
    assert_eq!(valid.int("bridle.violations"), 0);
    assert!(valid.int("bridle.repairs") >= 0);
    assert!(!valid.str("gen_ai.response.model").is_empty());
    assert!(valid.int("gen_ai.usage.input_tokens") > 0);
    assert!(valid.int("gen_ai.usage.output_tokens") > 0);
    assert_eq!(traced.upstream.len(), 2);
    assert!(!traced.conversation.is_empty());
    chats
}

/// Whether any attribute of any span holds `text`.
fn anywhere(spans: &[Got], text: &str) -> bool {
    spans
        .iter()
        .flat_map(|s| s.attrs.values())
        .any(|v| format!("{v:?}").contains(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_with_two_attempts_is_one_trace_over_otlp_http_without_its_text() {
    let (endpoint, spans) = receiver::http().await;
    let run = Run {
        protocol: "http",
        capture_content: false,
        caller_trace: true,
    };
    let traced = traced_turn(&run, &endpoint, &spans).await;
    let chats = check_tree(&traced);
    assert!(
        !anywhere(&traced.spans, MARKER),
        "the prompt is in no span by default"
    );
    assert!(!chats[1].attrs.contains_key("gen_ai.input.messages"));
    assert!(!chats[1].attrs.contains_key("gen_ai.output.messages"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_capture_content_the_attempts_carry_their_text_over_otlp_grpc() {
    let (endpoint, spans) = receiver::grpc().await;
    let run = Run {
        protocol: "grpc",
        capture_content: true,
        caller_trace: true,
    };
    let traced = traced_turn(&run, &endpoint, &spans).await;
    let chats = check_tree(&traced);
    for chat in &chats {
        assert!(
            chat.str("gen_ai.input.messages").contains(MARKER),
            "{chat:#?}"
        );
    }
    assert!(!chats[1].str("gen_ai.output.messages").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_trace_is_stored_under_the_one_begun_for_it() {
    let (endpoint, spans) = receiver::http().await;
    let run = Run {
        protocol: "http",
        capture_content: false,
        caller_trace: false,
    };
    let traced = traced_turn(&run, &endpoint, &spans).await;
    check_tree(&traced);
}
