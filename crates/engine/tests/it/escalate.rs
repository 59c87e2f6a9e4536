//! Escalation, failover and the turn's token budget over real HTTP: a small model and a large
//! (or backup) one on two mock LLM servers on loopback, on SQLite and PostgreSQL — which model
//! each attempt went to and why is stored per attempt, the larger model sees the bad reply and
//! its feedback, a 500 or a timeout moves the attempt to the failover model, and a spent token
//! budget stops the retries (fallback, or an exhausted error that says so; an SSE event).

use bridle_engine::store::{Message, MessageRole, ModelCount, Route, StatsQuery, Store, View};
use bridle_engine::{Config, Engine, EngineError, TurnError, TurnEvent};
use bridle_mock::{MockConfig, MockServer, Script};
use serde_json::json;
use std::sync::Arc;

on_both_backends! {
    escalation_reaches_the_large_model: sqlite_escalation_reaches_the_large_model, postgres_escalation_reaches_the_large_model;
    a_500_fails_over_for_that_attempt: sqlite_a_500_fails_over_for_that_attempt, postgres_a_500_fails_over_for_that_attempt;
    a_timeout_fails_over: sqlite_a_timeout_fails_over, postgres_a_timeout_fails_over;
    a_streamed_turn_escalates_too: sqlite_a_streamed_turn_escalates_too, postgres_a_streamed_turn_escalates_too;
    the_token_budget_stops_retries: sqlite_the_token_budget_stops_retries, postgres_the_token_budget_stops_retries;
}

/// The small model's server, following `script` (JSON), and the large/backup one (always
/// valid).
async fn servers(script: &serde_json::Value) -> (MockServer, MockServer) {
    let small = MockServer::start(MockConfig {
        script: Some(Script::from_json(&script.to_string()).unwrap()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let large = MockServer::start(MockConfig::default()).await.unwrap();
    (small, large)
}

/// `small` (on the first server) escalates to `large` after two failed content attempts and
/// fails over to `backup` (both on the second server); `extra` adds keys to `[retry]`.
fn engine(store: Arc<dyn Store>, small: &MockServer, large: &MockServer, extra: &str) -> Engine {
    engine_with(store, small, large, "", extra)
}

/// [`engine`] with `top` keys at the top of the configuration.
fn engine_with(
    store: Arc<dyn Store>,
    small: &MockServer,
    large: &MockServer,
    top: &str,
    extra: &str,
) -> Engine {
    let text = format!(
        r#"
{top}
default_model = "small"
[retry]
delay_ms = 0
max_attempts = 3
{extra}
[providers.a]
kind = "openai"
base_url = "{}/v1"
timeout_secs = 0.5
[providers.b]
kind = "openai"
base_url = "{}/v1"
[models.small]
provider = "a"
model = "mini"
escalate_to = "large"
escalate_after = 2
failover = ["backup"]
[models.large]
provider = "b"
model = "big"
[models.backup]
provider = "b"
model = "spare"
"#,
        small.url(),
        large.url()
    );
    let config = Config::from_toml(&text, &Default::default()).unwrap();
    Engine::with_store(config, store).unwrap()
}

/// The attempts stored for a conversation, in order.
async fn attempts(store: &dyn Store, conversation: &str) -> Vec<Message> {
    store
        .messages(conversation, View::Admin)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant && m.data.attempt.is_some())
        .collect()
}

/// (configured model, route, upstream model in the stored request) of each attempt.
fn routes(attempts: &[Message]) -> Vec<(String, Option<Route>, String)> {
    attempts
        .iter()
        .map(|m| {
            let body = &m.data.request_payload.as_ref().unwrap()["body"];
            (
                m.data.model.clone().unwrap(),
                m.data.route,
                body["model"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn route(model: &str, route: Option<Route>, upstream: &str) -> (String, Option<Route>, String) {
    (model.to_owned(), route, upstream.to_owned())
}

fn wrong_enum_twice() -> serde_json::Value {
    let wrong = json!({"fault": {"kind": "wrong_enum"}});
    json!({"turns": [{"attempts": [wrong, wrong]}]})
}

async fn escalation_reaches_the_large_model(store: Arc<dyn Store>) {
    let (small, large) = servers(&wrong_enum_twice()).await;
    let engine = engine(Arc::clone(&store), &small, &large, "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert!(!outcome.fallback);
    assert_eq!((outcome.attempts, outcome.model.as_str()), (3, "large"));

    let stored = attempts(store.as_ref(), &conversation.id).await;
    assert_eq!(
        routes(&stored),
        [
            route("small", None, "mini"),
            route("small", None, "mini"),
            route("large", Some(Route::Escalated), "big"),
        ]
    );
    assert!(!stored[1].data.is_validated && stored[2].data.is_validated);
    assert_eq!((small.requests().len(), large.requests().len()), (2, 1));

    // The large model sees the small one's bad reply and the feedback on it.
    let sent = &large.requests()[0].body;
    let messages = sent["messages"].as_array().unwrap();
    let [.., bad, feedback] = messages.as_slice() else {
        panic!("{sent}")
    };
    assert_eq!(bad["role"], "assistant");
    assert_eq!(bad["content"], stored[1].data.content.as_str());
    assert_eq!(feedback["role"], "user");
    assert!(
        feedback["content"].as_str().unwrap().contains("enum"),
        "{feedback}"
    );
    assert_eq!(
        sent,
        &stored[2].data.request_payload.as_ref().unwrap()["body"]
    );

    // The statistics count the escalation against the model it reached.
    let stats = store.stats(&StatsQuery::default()).await.unwrap();
    assert_eq!(
        stats.models,
        [
            model_count("small", 2, 0, (0, 0)),
            model_count("large", 1, 1, (1, 0)),
        ]
    );
    let metrics = metrics(&engine);
    assert!(
        metrics.contains("bridle_escalations_total{from=\"small\",to=\"large\"} 1"),
        "{metrics}"
    );
}

/// The engine's metrics as OpenMetrics text.
fn metrics(engine: &Engine) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, engine.metrics().registry()).unwrap();
    text
}

/// A row of the per-model statistics; `routed` is (escalations, failovers).
fn model_count(model: &str, attempts: u64, valid: u64, routed: (u64, u64)) -> ModelCount {
    ModelCount {
        model: model.to_owned(),
        attempts,
        valid,
        escalations: routed.0,
        failovers: routed.1,
    }
}

async fn a_500_fails_over_for_that_attempt(store: Arc<dyn Store>) {
    let script = json!({"turns": [{"attempts": [{"fault": {"kind": "http500"}}]}]});
    let (small, backup) = servers(&script).await;
    let engine = engine(Arc::clone(&store), &small, &backup, "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert_eq!((outcome.attempts, outcome.model.as_str()), (2, "backup"));
    let stored = attempts(store.as_ref(), &conversation.id).await;
    assert_eq!(
        routes(&stored),
        [
            route("small", None, "mini"),
            route("backup", Some(Route::Failover), "spare"),
        ]
    );
    assert!(stored[0].data.error.as_deref().unwrap().contains("500"));
    // A provider error is no content failure: the backup got the plain request, no feedback.
    let sent = &backup.requests()[0].body["messages"];
    assert_eq!(sent.as_array().unwrap().last().unwrap()["role"], "user");
    assert_eq!(
        sent.as_array().unwrap().len(),
        small.requests()[0].body["messages"]
            .as_array()
            .unwrap()
            .len()
    );

    // The next turn starts on its own model again (in a conversation of its own: the mock's
    // reply may have had the safety policy block this one).
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let next = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert_eq!((next.attempts, next.model.as_str()), (1, "small"));

    let stats = store.stats(&StatsQuery::default()).await.unwrap();
    assert_eq!(
        stats.models,
        [
            model_count("small", 2, 1, (0, 0)),
            model_count("backup", 1, 1, (0, 1)),
        ]
    );
    let metrics = metrics(&engine);
    assert!(
        metrics.contains("bridle_failovers_total{from=\"small\",to=\"backup\"} 1"),
        "{metrics}"
    );
}

async fn a_timeout_fails_over(store: Arc<dyn Store>) {
    // The small model's provider allows 0.5 s; this answer takes 5.
    let script = json!({"turns": [{"attempts": [{"fault": {"kind": "slow", "ms": 5000}}]}]});
    let (small, backup) = servers(&script).await;
    let engine = engine(Arc::clone(&store), &small, &backup, "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert_eq!(outcome.model, "backup");
    let stored = attempts(store.as_ref(), &conversation.id).await;
    assert_eq!(
        stored[0].data.error.as_deref().unwrap().split(':').next(),
        Some("timeout")
    );
    assert_eq!(stored[1].data.route, Some(Route::Failover));
}

async fn a_streamed_turn_escalates_too(store: Arc<dyn Store>) {
    let (small, large) = servers(&wrong_enum_twice()).await;
    let engine = engine(Arc::clone(&store), &small, &large, "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let (result, seen) = crate::streamed_turn(&engine, &conversation.id, "Hello").await;
    let outcome = result.unwrap();
    assert_eq!((outcome.attempts, outcome.model.as_str()), (3, "large"));
    let started: Vec<(String, Option<&str>)> = seen
        .iter()
        .filter_map(|event| match event {
            TurnEvent::AttemptStarted { model, route, .. } => Some((model.clone(), *route)),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            ("small".to_owned(), None),
            ("small".to_owned(), None),
            ("large".to_owned(), Some("escalated")),
        ]
    );
    let complete = seen
        .iter()
        .find(|e| e.name() == "message_complete")
        .unwrap();
    assert!(
        complete.data().contains("\"model\":\"large\""),
        "{}",
        complete.data()
    );
    let stored = attempts(store.as_ref(), &conversation.id).await;
    assert_eq!(stored[2].data.route, Some(Route::Escalated));
}

async fn the_token_budget_stops_retries(store: Arc<dyn Store>) {
    // Every reply of the small model is wrong; one attempt spends the budget.
    let wrong = json!({"reply": "not a document"});
    let script = json!({"turns": [
        {"attempts": [{"fault": {"kind": "wrong_enum"}}, {"fault": {"kind": "wrong_enum"}}]},
        {"attempts": [wrong, wrong, wrong]},
    ]});
    let (small, large) = servers(&script).await;
    // A configured contract without a fallback.
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("answer");
    std::fs::create_dir_all(&answer).unwrap();
    std::fs::write(
        answer.join("manifest.toml"),
        "name = \"answer\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n",
    )
    .unwrap();
    std::fs::write(
        answer.join("schema.json"),
        r#"{"type": "object", "required": ["answer"]}"#,
    )
    .unwrap();
    let engine = engine_with(
        Arc::clone(&store),
        &small,
        &large,
        &format!("contracts_dirs = [{:?}]", dir.path().display().to_string()),
        "max_turn_tokens = 1\n[retry.contracts.answer]\nmax_turn_tokens = 1",
    );

    // A contract with a fallback: the fallback, after the one attempt.
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert!(outcome.fallback);
    assert_eq!(outcome.attempts, 1);
    assert!(outcome.usage.input_tokens + outcome.usage.output_tokens >= 1);
    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    let fallback = stored.last().unwrap();
    assert!(fallback.data.is_fallback);
    let error = fallback.data.error.as_deref().unwrap();
    assert!(error.contains("fallback after 1 attempt(s)"), "{error}");
    assert!(error.contains("token budget was spent"), "{error}");

    // Without a fallback: exhausted, saying the budget was spent; streamed, an event says so.
    let conversation = engine
        .start_conversation("ada", "answer", json!({}))
        .await
        .unwrap();
    let (result, seen) = crate::streamed_turn(&engine, &conversation.id, "Hello").await;
    let error = result.unwrap_err();
    let EngineError::Turn(TurnError::Exhausted {
        attempts: 1,
        budget_spent: true,
        reason,
        ..
    }) = &error
    else {
        panic!("{error}")
    };
    assert!(reason.contains("token budget was spent"), "{reason}");
    let spent = seen.iter().find(|e| e.name() == "budget_spent").unwrap();
    assert!(spent.data().contains("\"budget\":1"), "{}", spent.data());
    assert_eq!(small.requests().len(), 2, "one attempt per turn");
    let metrics = metrics(&engine);
    for contract in ["selfhelp-response", "answer"] {
        let series = format!("bridle_turn_budget_spent_total{{contract=\"{contract}\"}} 1");
        assert!(metrics.contains(&series), "{metrics}");
    }
    assert!(large.requests().is_empty(), "no escalation past the budget");
}
