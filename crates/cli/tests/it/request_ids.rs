//! Request ids and the log, end to end: the real `bridle serve` (standard error a pipe, so JSON
//! lines by default) behind the real `bridle mock-llm`, which refuses the gateway's key so that
//! every turn fails upstream (a 502 whose messages are stored, and a warning logged inside the
//! request). Checked over loopback: `x-request-id` echoed when sane, generated otherwise, a
//! hostile one replaced and never echoed; the id in the error bodies of the native API, the
//! OpenAI-compatible endpoint and an SSE stream; stored with the turn (with the trace id of the
//! caller's `traceparent`) and found by the admin search, on SQLite and on PostgreSQL; the trace
//! link template in the admin view; every log line one JSON object without ANSI escapes, those
//! written inside the request carrying its ids — and the text format on request.

use crate::{Running, spawn_listening};
use bridle_testkit::TestDatabase;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use std::ffi::OsStr;

const ADMIN: &str = "admin-rid-key-000000000000";
const ADA: &str = "ada-rid-key-00000000000000";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TEMPLATE: &str = "https://jaeger.example/trace/{trace_id}";
const HOSTILE: &str = "<script>alert(1)</script> x";

/// The mock upstream, which wants a key the gateway does not have.
fn upstream() -> (Running, String) {
    let (mock, url) = spawn_listening(
        &[
            "mock-llm",
            "--port",
            "0",
            "--require-api-key",
            "the-right-key",
        ]
        .map(OsStr::new),
        &[],
    );
    (mock, format!("{url}/v1"))
}

fn gateway(upstream: &str, envs: &[(&str, &str)]) -> (Running, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        OsStr::new("serve"),
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--data-dir"),
        dir.path().as_os_str(),
    ];
    let mut all = vec![
        ("BRIDLE_ADMIN_KEY", ADMIN),
        ("BRIDLE_USER_KEYS", "ada:ada-rid-key-00000000000000"),
        ("BRIDLE__RETRY__DELAY_MS", "0"),
        ("OPENAI_BASE_URL", upstream),
        ("OPENAI_API_KEY", "sk-the-wrong-key-7d1e"),
        ("BRIDLE__TELEMETRY__TRACE_URL_TEMPLATE", TEMPLATE),
    ];
    all.extend_from_slice(envs);
    let (process, url) = spawn_listening(&args, &all);
    (process, dir, url)
}

/// An answer: status, its `x-request-id`, its body (JSON, else the text as a string).
struct Answer {
    status: StatusCode,
    request_id: String,
    body: Value,
}

async fn call(request: reqwest::RequestBuilder, headers: &[(&str, &str)]) -> Answer {
    let mut request = request;
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let request_id = response
        .headers()
        .get("x-request-id")
        .map(|v| v.to_str().unwrap().to_owned())
        .expect("every answer has x-request-id");
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Answer {
        status,
        request_id,
        body,
    }
}

fn is_generated(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok_and(|u| u.get_version_num() == 7)
}

/// The admin listing's items.
#[derive(Debug, Deserialize)]
struct Listing {
    items: Vec<Listed>,
}

#[derive(Debug, Deserialize)]
struct Listed {
    id: String,
}

/// The admin view of a conversation, the parts checked here.
#[derive(Debug, Deserialize)]
struct Detail {
    messages: Vec<StoredMessage>,
    trace_url_template: Option<String>,
}

#[derive(Debug, Deserialize)]
struct StoredMessage {
    request_id: Option<String>,
    trace_id: Option<String>,
}

/// Runs the checks against a gateway on `store_url` (`None`: SQLite in its data dir); returns
/// its log.
async fn request_ids_end_to_end(store_url: Option<&str>, envs: &[(&str, &str)]) -> String {
    let (_mock, upstream) = upstream();
    let mut all = envs.to_vec();
    if let Some(url) = store_url {
        all.push(("BRIDLE__STORE_URL", url));
    }
    let (gateway, _dir, base) = gateway(&upstream, &all);
    let client = reqwest::Client::new();

    // Generated when not sent (a static page too), echoed when sane, replaced when hostile.
    let plain = call(client.get(format!("{base}/healthz")), &[]).await;
    assert!(is_generated(&plain.request_id), "{}", plain.request_id);
    let page = call(client.get(format!("{base}/admin")), &[]).await;
    assert!(is_generated(&page.request_id));
    assert_ne!(page.request_id, plain.request_id);
    let echoed = call(
        client.get(format!("{base}/healthz")),
        &[("x-request-id", "client-req.42")],
    )
    .await;
    assert_eq!(echoed.request_id, "client-req.42");
    let long = "x".repeat(129);
    for hostile in [HOSTILE, long.as_str()] {
        let replaced = call(
            client.get(format!("{base}/healthz")),
            &[("x-request-id", hostile)],
        )
        .await;
        assert!(
            is_generated(&replaced.request_id),
            "{}",
            replaced.request_id
        );
    }

    // In error bodies: an unauthenticated call, the OpenAI-compatible endpoint's 404.
    let refused = call(client.get(format!("{base}/v1/conversations")), &[]).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.body["error"]["request_id"],
        refused.request_id.as_str()
    );
    assert_eq!(refused.body["error"]["code"], "invalid_api_key");
    let openai = call(
        client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(ADA)
            .json(
                &json!({"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]}),
            ),
        &[("x-request-id", "openai-req-1")],
    )
    .await;
    assert_eq!(openai.status, StatusCode::NOT_FOUND, "{}", openai.body);
    assert_eq!(openai.request_id, "openai-req-1");
    assert_eq!(openai.body["error"]["request_id"], "openai-req-1");
    assert_eq!(openai.body["error"]["code"], "model_not_found");
    assert_eq!(openai.body["error"]["param"], "model");

    // A turn that fails upstream: the 502 names the request; its messages keep both ids.
    let created = call(
        client
            .post(format!("{base}/v1/conversations"))
            .bearer_auth(ADA)
            .json(&json!({"contract": "selfhelp-response"})),
        &[],
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let conversation = created.body["id"].as_str().unwrap().to_owned();
    let failed = call(
        client
            .post(format!("{base}/v1/conversations/{conversation}/messages"))
            .bearer_auth(ADA)
            .json(&json!({"content": "I cannot focus"})),
        &[
            ("x-request-id", "turn-req-1"),
            ("traceparent", &format!("00-{TRACE_ID}-00f067aa0ba902b7-01")),
        ],
    )
    .await;
    assert_eq!(failed.status, StatusCode::BAD_GATEWAY, "{}", failed.body);
    assert_eq!(failed.request_id, "turn-req-1");
    assert_eq!(failed.body["error"]["request_id"], "turn-req-1");

    // Streamed: the header, and the stream's error event.
    let streamed = call(
        client
            .post(format!("{base}/v1/conversations/{conversation}/messages"))
            .bearer_auth(ADA)
            .json(&json!({"content": "Still cannot focus"})),
        &[
            ("x-request-id", "sse-req-1"),
            ("accept", "text/event-stream"),
        ],
    )
    .await;
    assert_eq!(streamed.status, StatusCode::OK);
    assert_eq!(streamed.request_id, "sse-req-1");
    let text = streamed.body.as_str().unwrap();
    assert!(
        text.contains("event: error") && text.contains(r#""request_id":"sse-req-1""#),
        "{text}"
    );

    // Found by the admin search, stored on every message of the turn, linked to its trace.
    let admin = |path: String| client.get(format!("{base}{path}")).bearer_auth(ADMIN);
    let found = call(
        admin("/admin/v1/conversations?request_id=turn-req-1".into()),
        &[],
    )
    .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    let listing: Listing = serde_json::from_value(found.body).unwrap();
    let ids: Vec<&str> = listing.items.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [conversation.as_str()]);
    let none = call(
        admin("/admin/v1/conversations?request_id=turn-req".into()),
        &[],
    )
    .await;
    let none: Listing = serde_json::from_value(none.body).unwrap();
    assert!(none.items.is_empty(), "an exact match only");
    let bad = call(
        admin("/admin/v1/conversations?request_id=%3Cscript%3E".into()),
        &[],
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let detail = call(
        admin(format!("/admin/v1/conversations/{conversation}")),
        &[],
    )
    .await;
    let detail: Detail = serde_json::from_value(detail.body).unwrap();
    assert_eq!(detail.trace_url_template.as_deref(), Some(TEMPLATE));
    let first_turn: Vec<&StoredMessage> = detail
        .messages
        .iter()
        .filter(|m| m.request_id.as_deref() == Some("turn-req-1"))
        .collect();
    assert!(
        first_turn.len() >= 2,
        "the user message and the failed attempt"
    );
    assert!(
        first_turn
            .iter()
            .all(|m| m.trace_id.as_deref() == Some(TRACE_ID))
    );
    let second_turn = detail
        .messages
        .iter()
        .filter(|m| m.request_id.as_deref() == Some("sse-req-1"))
        .count();
    assert!(second_turn >= 2, "the streamed turn's messages");
    assert_eq!(
        detail.messages.len(),
        first_turn.len() + second_turn,
        "every message has its request's id"
    );

    let log = gateway.log();
    assert!(!log.contains("<script>"), "a hostile id is never logged");
    assert!(
        !log.contains('\u{1b}'),
        "no ANSI escapes in a log that is not a terminal"
    );
    log
}

/// A JSON log line, the fields checked here.
#[derive(Debug, Deserialize)]
struct LogLine {
    timestamp: String,
    level: String,
    message: String,
    request_id: Option<String>,
    trace_id: Option<String>,
}

fn json_lines(log: &str) -> Vec<LogLine> {
    log.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect()
}

#[tokio::test]
async fn request_ids_on_sqlite_and_json_log_lines() {
    // Only warnings: the request's span (and so its ids) must not be filtered away with `info`.
    let log = request_ids_end_to_end(None, &[("RUST_LOG", "warn")]).await;
    let lines = json_lines(&log);
    assert!(
        lines
            .iter()
            .any(|l| l.message.starts_with("bridle: serving on http://")),
        "the banner is JSON too"
    );
    for line in &lines {
        assert!(["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&line.level.as_str()));
        assert!(line.timestamp.ends_with('Z'), "{}", line.timestamp);
    }
    // The failed turn's warning was written inside its request.
    let inside: Vec<&LogLine> = lines
        .iter()
        .filter(|l| l.request_id.as_deref() == Some("turn-req-1"))
        .collect();
    assert!(!inside.is_empty(), "{log}");
    assert!(
        inside
            .iter()
            .all(|l| l.trace_id.as_deref() == Some(TRACE_ID))
    );
    assert!(inside.iter().any(|l| l.level == "WARN"), "{log}");
}

#[tokio::test]
async fn request_ids_on_postgres_and_text_log_lines() {
    let database = TestDatabase::create().await;
    let log = request_ids_end_to_end(Some(&database.url), &[("BRIDLE__LOG__FORMAT", "text")]).await;
    assert!(
        log.lines().any(|l| l.contains("request_id=\"turn-req-1\"")
            || l.contains("request_id=turn-req-1")),
        "{log}"
    );
    assert!(log.contains("bridle: serving on http://"));
    assert!(!log.lines().any(|l| l.starts_with('{')), "{log}");
}
