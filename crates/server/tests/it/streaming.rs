//! Streaming end to end over loopback: the gateway served on a real port, its OpenAI provider
//! streaming from the mock LLM on another, and a real SSE client (reqwest + eventsource-stream)
//! reading `POST /v1/conversations/{id}/messages` with `Accept: text/event-stream`.

use crate::api::{ADA, ADMIN};
use bridle_engine::store::{Interruption, MessageRole, View};
use bridle_engine::{Config, Engine, store};
use bridle_mock::{Fault, MockConfig, MockServer, Script, ScriptTurn, Step};
use bridle_server::{AppState, Keys, Role, ServerSettings, app};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The gateway on a loopback port, in front of a mock LLM on another.
struct Live {
    base: String,
    mock: MockServer,
    state: AppState,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Live {
    async fn start(mock: MockConfig, tune: impl FnOnce(&mut ServerSettings)) -> Self {
        let mock = MockServer::start(mock).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        let store = Arc::from(store::open(&url).await.unwrap());
        let text = format!(
            "default_model = \"up\"\n[retry]\ndelay_ms = 0\nmax_attempts = 3\n\
             [providers.up]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n\
             [models.up]\nprovider = \"up\"\nmodel = \"upstream-model\"\n",
            mock.url()
        );
        let engine = Engine::with_store(
            Config::from_toml(&text, &Default::default()).unwrap(),
            store,
        )
        .unwrap();
        let mut keys = Keys::default();
        keys.add_key(ADMIN, Role::Admin, "admin").unwrap();
        keys.add_key(ADA, Role::User, "ada").unwrap();
        let mut settings = ServerSettings::default();
        settings.limits.enabled = false;
        tune(&mut settings);
        let limiter = bridle_server::limits::build(&settings.limits).unwrap();
        let state = AppState::new(engine, Arc::new(keys.into()), Arc::new(settings), limiter);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = app(state.clone());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            base,
            mock,
            state,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn conversation(&self, contract: &str, context: Value) -> String {
        let response = self
            .client
            .post(format!("{}/v1/conversations", self.base))
            .bearer_auth(ADA)
            .json(&json!({"contract": contract, "context": context}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        response.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn post_events(&self, conversation: &str, content: &str) -> reqwest::Response {
        let response = self
            .client
            .post(format!(
                "{}/v1/conversations/{conversation}/messages",
                self.base
            ))
            .bearer_auth(ADA)
            .header("accept", "text/event-stream")
            .json(&json!({"content": content}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        response
    }

    /// Sends a message and reads every event until the stream ends.
    async fn send(&self, conversation: &str, content: &str) -> Vec<(String, Value)> {
        let response = self.post_events(conversation, content).await;
        let mut events = response.bytes_stream().eventsource();
        let mut out = Vec::new();
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            let data: Value = serde_json::from_str(&event.data)
                .unwrap_or_else(|e| panic!("{}: {e}: {:?}", event.event, event.data));
            out.push((event.event, data));
        }
        out
    }
}

fn scripted(steps: Vec<Vec<Step>>) -> MockConfig {
    MockConfig {
        script: Some(Script {
            turns: steps
                .into_iter()
                .map(|attempts| ScriptTurn { attempts })
                .collect(),
        }),
        ..MockConfig::default()
    }
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

fn texts(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter(|(name, _)| name == "text_delta")
        .map(|(_, data)| data["text"].as_str().unwrap())
        .collect()
}

fn complete(events: &[(String, Value)]) -> &Value {
    let (name, data) = events.last().expect("events");
    assert_eq!(name, "message_complete", "{:?}", names(events));
    data
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

const MARKER_REPLY: &str = "Here are a few ideas for the table — café ☕ style.\n\n**SUGGESTED_VALUES:**\n```json\n[\"Add a column\", {\"label\": \"Sort by name\", \"value\": \"sort name\"}]\n```\nTell me which one.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markers_are_stripped_live_wherever_the_chunks_split() {
    // One turn per split position, the upstream bytes also re-cut in 3-byte network reads (so
    // multi-byte characters arrive in pieces).
    let splits: Vec<usize> = MARKER_REPLY
        .char_indices()
        .map(|(i, _)| i)
        .filter(|i| *i > 0)
        .collect();
    let steps = splits
        .iter()
        .map(|&at| {
            vec![Step::Pieces(vec![
                MARKER_REPLY[..at].to_owned(),
                MARKER_REPLY[at..].to_owned(),
            ])]
        })
        .collect();
    let mock = MockConfig {
        stream_chunk_bytes: Some(3),
        ..scripted(steps)
    };
    let live = Live::start(mock, |_| {}).await;
    let id = live
        .conversation("table-chat", json!({"page": "table_view"}))
        .await;
    for at in splits {
        let events = live.send(&id, "What can I do here?").await;
        let done = complete(&events);
        assert_eq!(done["attempts"], 1, "split at {at}");
        let text = texts(&events);
        assert!(!text.contains("SUGGESTED"), "split at {at}: {text:?}");
        assert!(!text.contains("```"), "split at {at}: {text:?}");
        assert_eq!(
            squash(&text),
            squash(done["value"]["message"].as_str().unwrap()),
            "split at {at}"
        );
        let suggestions: Vec<&Value> = events
            .iter()
            .filter(|(name, _)| name == "suggestions")
            .map(|(_, data)| data)
            .collect();
        assert_eq!(
            suggestions,
            [&json!({"suggested_values": done["value"]["suggested_values"]})],
            "split at {at}"
        );
        assert_eq!(names(&events)[0], "attempt_started");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn question_cards_come_as_events_and_their_text_is_never_streamed() {
    let reply = "Thanks — a shared grocery list is a good start.\n\nWho should be able to add items?\n\n(A) Only me\n(B) Everyone in the flat (recommended)\n(C) Everyone, plus guests\n";
    let pieces: Vec<String> = reply
        .chars()
        .collect::<Vec<_>>()
        .chunks(3)
        .map(|c| c.iter().collect())
        .collect();
    let live = Live::start(scripted(vec![vec![Step::Pieces(pieces)]]), |_| {}).await;
    let id = live
        .conversation("question-cards", json!({"mode": "discovery"}))
        .await;
    let events = live.send(&id, "I want a grocery app").await;
    let done = complete(&events);
    let cards = done["value"]["question_cards"].as_array().unwrap();
    assert_eq!(cards.len(), 1);
    let card_events: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "question_card")
        .map(|(_, data)| &data["card"])
        .collect();
    assert_eq!(card_events, cards.iter().collect::<Vec<_>>());
    let text = texts(&events);
    assert!(!text.contains("Only me"), "{text:?}");
    assert!(!text.contains("Who should"), "{text:?}");
    assert_eq!(
        squash(&text),
        squash(done["value"]["message"].as_str().unwrap())
    );
    let order = names(&events);
    let first_card = order.iter().position(|n| *n == "question_card").unwrap();
    let last_text = order.iter().rposition(|n| *n == "text_delta").unwrap();
    assert!(last_text < first_card, "{order:?}");
}

/// The built-in example reply of `selfhelp-response` with `type` changed to `"reply"`: the
/// `const` is broken by the time the first comma arrives.
fn wrong_type_reply() -> String {
    let example = include_str!("../../../../contracts/selfhelp-response/example.json");
    assert!(example.starts_with("{\n  \"type\": \"response\","));
    example.replacen("\"response\"", "\"reply\"", 1)
}

async fn wait_for<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_violation_aborts_the_stream_and_the_retry_starts_at_once() {
    let mock = MockConfig {
        stream_piece_chars: 4,
        stream_interval_ms: 5,
        ..scripted(vec![vec![Step::Reply(wrong_type_reply()), Step::Valid]])
    };
    let live = Live::start(mock, |s| s.partial_interval_ms = 20).await;
    let id = live.conversation("selfhelp-response", json!({})).await;
    let events = live.send(&id, "I sleep badly").await;
    let done = complete(&events).clone();
    assert_eq!(done["attempts"], 2);
    let failed: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "attempt_failed")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["attempt"], 1);
    assert_eq!(failed[0]["reason"], "aborted");
    assert_eq!(failed[0]["violations"][0]["path"], "/type");
    assert_eq!(failed[0]["violations"][0]["rule"], "const");

    // Partials of the valid attempt: each one parses, and what one shows the next keeps.
    let partials: Vec<&Value> = events
        .iter()
        .filter(|(name, data)| name == "partial" && data["attempt"] == 2)
        .map(|(_, data)| &data["value"])
        .collect();
    assert!(partials.len() >= 3, "{} partials", partials.len());
    for pair in partials.windows(2) {
        for key in pair[0].as_object().unwrap().keys() {
            assert!(pair[1].get(key).is_some(), "{key} disappeared");
        }
    }
    let order = names(&events);
    assert_eq!(
        order.iter().filter(|n| **n == "attempt_started").count(),
        2,
        "{order:?}"
    );

    // The aborted attempt is stored as such, with the text and estimated tokens so far.
    let store = live.state.engine.store();
    let messages = store.messages(&id, View::Admin).await.unwrap();
    let attempts: Vec<_> = messages
        .iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .collect();
    assert_eq!(attempts.len(), 2);
    let aborted = &attempts[0].data;
    assert_eq!(aborted.interrupted, Some(Interruption::Aborted));
    assert!(!aborted.is_validated);
    assert_eq!(aborted.violations[0].rule.as_str(), "const");
    assert!(aborted.content.starts_with("{\n  \"type\": \"reply\","));
    assert!(aborted.content.len() < wrong_type_reply().len() / 2);
    assert!(aborted.tokens_out.unwrap() > 0);
    assert!(attempts[1].data.is_validated);
    assert_eq!(attempts[1].data.interrupted, None);

    // The upstream stream was cut: the mock saw its client go away before the end.
    let ended = wait_for("the mock's stream record", async || {
        live.mock.requests().first()?.answer.stream
    })
    .await;
    assert!(!ended.completed, "{ended:?}");
    assert!(ended.frames_sent < ended.frames_total, "{ended:?}");

    // Stats and metrics report the abort and what it saved.
    let stats = live
        .client
        .get(format!("{}/admin/v1/stats", live.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(stats["streaming"]["aborted_attempts"], 1, "{stats}");
    assert!(
        stats["streaming"]["tokens_saved"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let metrics = live
        .client
        .get(format!("{}/metrics", live.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "bridle_attempts_total{contract=\"selfhelp-response\",outcome=\"aborted\"} 1"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("bridle_stream_aborted_tokens_total"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_and_truncated_streams_fail_their_attempt_and_are_retried() {
    let steps = vec![
        vec![Step::Fault(Fault::BrokenStream), Step::Valid],
        vec![Step::Fault(Fault::Truncate), Step::Valid],
    ];
    let live = Live::start(scripted(steps), |_| {}).await;
    let id = live.conversation("selfhelp-response", json!({})).await;

    let events = live.send(&id, "hello").await;
    assert_eq!(complete(&events)["attempts"], 2);
    let failed = events.iter().find(|(n, _)| n == "attempt_failed").unwrap();
    assert_eq!(failed.1["reason"], "provider_error", "{}", failed.1);

    let events = live.send(&id, "and again").await;
    assert_eq!(complete(&events)["attempts"], 2);
    let failed = events.iter().find(|(n, _)| n == "attempt_failed").unwrap();
    assert_eq!(failed.1["reason"], "invalid");
    // The stream ended at the token limit: said first, then where the JSON was cut.
    assert_eq!(failed.1["violations"][0]["rule"], "max_tokens");
    assert_eq!(failed.1["violations"][1]["rule"], "truncated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_upstream_and_the_attempt_is_kept() {
    let mock = MockConfig {
        stream_piece_chars: 4,
        stream_interval_ms: 20,
        ..MockConfig::default()
    };
    let live = Live::start(mock, |_| {}).await;
    let id = live.conversation("selfhelp-response", json!({})).await;
    let response = live.post_events(&id, "hello").await;
    let mut events = response.bytes_stream().eventsource();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.event, "attempt_started");
    // Wait until the stream is under way, then hang up.
    let _ = events.next().await;
    drop(events);

    let store = live.state.engine.store();
    let cancelled = wait_for("the cancelled attempt", async || {
        let messages = store.messages(&id, View::Admin).await.ok()?;
        messages
            .into_iter()
            .find(|m| m.data.interrupted == Some(Interruption::Cancelled))
    })
    .await;
    assert_eq!(cancelled.data.attempt, Some(1));
    assert!(!cancelled.data.is_validated);
    let messages = store.messages(&id, View::Admin).await.unwrap();
    assert_eq!(
        messages.len(),
        2,
        "the user message and the cancelled attempt"
    );
    let ended = wait_for("the mock's stream record", async || {
        live.mock.requests().first()?.answer.stream
    })
    .await;
    assert!(!ended.completed, "{ended:?}");
    // No second attempt was started for a client that is gone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(live.mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_stream_gets_keep_alive_comments() {
    let mock = MockConfig {
        latency_ms: 400,
        ..MockConfig::default()
    };
    let live = Live::start(mock, |s| s.sse_keep_alive_ms = 50).await;
    let id = live.conversation("selfhelp-response", json!({})).await;
    let body = live.post_events(&id, "hello").await.text().await.unwrap();
    assert!(body.contains(": keep-alive\n"), "{body}");
    assert!(body.contains("event: message_complete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_before_the_turn_are_http_errors_and_during_it_an_error_event() {
    let steps = vec![vec![Step::Fault(Fault::Http500); 3]];
    let live = Live::start(scripted(steps), |_| {}).await;
    let id = live.conversation("selfhelp-response", json!({})).await;
    // Unknown conversation: a plain 404 before any stream starts.
    let response = live
        .client
        .post(format!("{}/v1/conversations/nope/messages", live.base))
        .bearer_auth(ADA)
        .header("accept", "text/event-stream")
        .json(&json!({"content": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    // Every attempt fails upstream and the contract's fallback answers.
    let events = live.send(&id, "hello").await;
    let done = complete(&events);
    assert_eq!(done["fallback"], true);
    assert_eq!(
        events
            .iter()
            .filter(|(n, d)| n == "attempt_failed" && d["reason"] == "provider_error")
            .count(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_plain_requests_stream_through_delta_by_delta() {
    let mock = MockConfig {
        stream_piece_chars: 5,
        ..scripted(vec![vec![Step::Reply(
            "A plain answer, streamed as the model writes it.".into(),
        )]])
    };
    let live = Live::start(mock, |_| {}).await;
    let response = live
        .client
        .post(format!("{}/v1/chat/completions", live.base))
        .bearer_auth(ADA)
        .json(&json!({"model": "up", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = response.bytes_stream().eventsource();
    let mut content = String::new();
    let mut chunks = 0;
    let mut usage = None;
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if event.data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(&event.data).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(text) = chunk
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            if !text.is_empty() {
                chunks += 1;
            }
            content.push_str(text);
        }
        if chunk.get("usage").is_some_and(|u| !u.is_null()) {
            usage = Some(chunk["usage"].clone());
        }
    }
    assert!(done);
    assert_eq!(content, "A plain answer, streamed as the model writes it.");
    assert_eq!(chunks, 10, "one chunk per upstream delta");
    assert!(usage.unwrap()["completion_tokens"].as_u64().unwrap() > 0);
}

/// A streamed turn takes its message's context as a JSON turn does: the page's rules check it,
/// the user's message stores it, and a context past `max_context_bytes` is refused before the
/// turn starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_message_brings_its_context() {
    let live = Live::start(MockConfig::default(), |s| s.max_context_bytes = 200).await;
    let id = live
        .conversation("table-chat", json!({"page": "tables_list"}))
        .await;
    let url = format!("{}/v1/conversations/{id}/messages", live.base);
    let send = |context: Value| {
        live.client
            .post(&url)
            .bearer_auth(ADA)
            .header("accept", "text/event-stream")
            .json(&json!({"content": "Show my rows", "context": context}))
            .send()
    };
    let response = send(json!({"page": "table_view", "app_state": {"rows": [1, 2]}}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("event: message_complete"), "{text}");
    let messages = live
        .state
        .engine
        .store()
        .messages(&id, View::Admin)
        .await
        .unwrap();
    assert_eq!(
        messages[0].data.context,
        Some(json!({"page": "table_view", "app_state": {"rows": [1, 2]}}))
    );
    let request = &live.mock.requests()[0].body;
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("## Page: table_view"), "{system}");
    assert!(system.contains("## Application state"), "{system}");

    let big = json!({"app_state": {"rows": "x".repeat(300)}});
    let response = send(big).await.unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 200"),
        "{body}"
    );
}
