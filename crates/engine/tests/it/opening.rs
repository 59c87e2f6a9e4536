//! The user's message on PostgreSQL (`store_commit = "before_reply"`): committed by the same
//! transaction as the turn's first attempt, whatever that attempt was — an answer, a provider
//! error, an attempt the client cancelled — and stored even when the turn is dropped during the
//! model call and records nothing. Which transaction wrote a row is its `xmin`.

use crate::turn::{engine, script};
use bridle_engine::store::{self, Conversation, MessageRole, Store, View};
use bridle_engine::{Engine, EngineError, EventSink, TurnError};
use bridle_testkit::TestDatabase;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An engine on `store` with the mock settings `mock`, and a `selfhelp-response` conversation.
async fn started(store: &Arc<dyn Store>, mock: &str) -> (Engine, Conversation) {
    let engine = engine(Arc::clone(store), mock, "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    (engine, conversation)
}

async fn postgres() -> (TestDatabase, Arc<dyn Store>) {
    let database = TestDatabase::create().await;
    let store = Arc::from(store::open(&database.url).await.unwrap());
    (database, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failed_first_attempt_commits_with_the_user_message() {
    let (database, store) = postgres().await;
    let dir = tempfile::tempdir().unwrap();
    let steps = json!({"turns": [{"attempts": [{"fault": {"kind": "http500"}}, {"valid": true}]}]});
    let (engine, conversation) = started(&store, &script(&dir, &steps)).await;
    let outcome = engine.send(&conversation.id, "Hi", None).await.unwrap();
    assert_eq!(outcome.attempts, 2);
    let writers = database.message_writers(&outcome.turn_id).await;
    assert_eq!(writers.len(), 3, "user message and two attempts");
    assert_eq!(
        writers[0], writers[1],
        "the user message and the failed attempt"
    );
    assert_ne!(
        writers[2], writers[0],
        "the second attempt commits by itself"
    );
}

// With traces on, the opening's write has a span of its own; it must not make the write go
// out alone. (The tracer exports nowhere; it is the process's from here on, which no other test
// of this binary minds.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_with_traces_on_the_user_message_still_commits_with_the_first_attempt() {
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    bridle_engine::providers::traces::install(&provider);
    assert!(bridle_engine::providers::traces::enabled());
    let (database, store) = postgres().await;
    let (engine, conversation) = started(&store, "").await;
    let outcome = engine.send(&conversation.id, "Hi", None).await.unwrap();
    assert_eq!(outcome.attempts, 1);
    let writers = database.message_writers(&outcome.turn_id).await;
    assert_eq!(writers.len(), 2, "user message and attempt");
    assert_eq!(writers[0], writers[1], "one transaction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_cancelled_stream_commits_with_the_user_message() {
    let (database, store) = postgres().await;
    let (engine, conversation) = started(&store, "").await;
    // The client is gone before the first attempt starts.
    let (sink, events) = EventSink::channel(Duration::from_secs(60));
    drop(events);
    let error = engine
        .send_streaming(&conversation.id, "Hi", None, &sink)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            EngineError::Turn(TurnError::Cancelled { attempt: 1 })
        ),
        "{error}"
    );
    let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(
        messages.len(),
        2,
        "the user message and the cancelled attempt"
    );
    assert_eq!(messages[0].data.content, "Hi");
    let writers = database.message_writers(&messages[0].data.turn_id).await;
    assert_eq!(writers.len(), 2);
    assert_eq!(writers[0], writers[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_turn_dropped_during_the_model_call_keeps_the_user_message() {
    let (_database, store) = postgres().await;
    let (engine, conversation) = started(&store, "latency_ms = 30000").await;
    // The request goes away (a client disconnecting) while the model is still answering.
    let turn = engine.send(&conversation.id, "Still there?", None);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), turn)
            .await
            .is_err()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let messages = store.messages(&conversation.id, View::Admin).await.unwrap();
        if let [only] = messages.as_slice() {
            assert_eq!(only.data.role, MessageRole::User);
            assert_eq!(only.data.content, "Still there?");
            break;
        }
        assert!(messages.is_empty(), "{messages:?}");
        assert!(
            Instant::now() < deadline,
            "the user message was never stored"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
