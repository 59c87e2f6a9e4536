//! Turns over real HTTP: the engine's OpenAI and Anthropic providers against the mock LLM on
//! loopback, on SQLite and PostgreSQL — attempts in the store equal the mock's request log one
//! for one, 401 is not retried, the API key never reaches the store.

use bridle_engine::providers::ProviderError;
use bridle_engine::store::{MessageRole, Store, View};
use bridle_engine::{Config, Engine, EngineError, TurnError};
use bridle_mock::{Fault, MockConfig, MockServer};
use serde_json::json;
use std::sync::Arc;

const KEY: &str = "sk-live-9c1e-do-not-store";

on_both_backends! {
    stored_attempts_equal_the_request_log: sqlite_stored_attempts_equal_the_request_log, postgres_stored_attempts_equal_the_request_log;
    unauthorized_is_not_retried: sqlite_unauthorized_is_not_retried, postgres_unauthorized_is_not_retried;
    anthropic_tool_output_end_to_end: sqlite_anthropic_tool_output_end_to_end, postgres_anthropic_tool_output_end_to_end;
    present_question_over_http: sqlite_present_question_over_http, postgres_present_question_over_http;
}

fn engine(
    store: Arc<dyn Store>,
    server: &MockServer,
    kind: &str,
    key: &str,
    native: bool,
) -> Engine {
    let text = format!(
        "default_model = \"up\"\n[retry]\ndelay_ms = 0\n[providers.up]\nkind = \"{kind}\"\nbase_url = \"{}/v1\"\napi_key = \"{key}\"\n[models.up]\nprovider = \"up\"\nmodel = \"upstream-model\"\nnative_structured_output = {native}\n",
        server.url()
    );
    Engine::with_store(
        Config::from_toml(&text, &Default::default()).unwrap(),
        store,
    )
    .unwrap()
}

async fn stored_attempts_equal_the_request_log(store: Arc<dyn Store>) {
    let config = MockConfig {
        fault_rate: 1.0,
        faults: vec![Fault::WrongEnum, Fault::Http500, Fault::MissingRequired],
        seed: 5,
        require_api_key: Some(KEY.into()),
        ..MockConfig::default()
    };
    let server = MockServer::start(config).await.unwrap();
    let engine = engine(Arc::clone(&store), &server, "openai", KEY, false);
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let mut turns = 0;
    for message in ["I keep procrastinating", "Any tips for focus?", "Thanks!"] {
        match engine.send(&conversation.id, message, None).await {
            Ok(_) => turns += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(turns, 3);
    let stored: Vec<_> = store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant && !m.data.is_fallback)
        .collect();
    let logged = server.requests();
    assert!(
        logged.len() > 3,
        "faults should have caused retries: {}",
        logged.len()
    );
    assert_eq!(
        stored.len(),
        logged.len(),
        "one stored attempt per request the mock received"
    );
    for (attempt, request) in stored.iter().zip(&logged) {
        let payload = attempt.data.request_payload.as_ref().unwrap();
        assert_eq!(
            payload["body"], request.body,
            "the stored payload is exactly the request sent"
        );
        assert_eq!(
            attempt.data.is_validated,
            request.answer.fault.is_none() && request.answer.status == 200
        );
        let text = payload.to_string();
        assert!(!text.contains(KEY), "the API key reached the store: {text}");
        assert_eq!(payload["headers"]["authorization"], "Bearer [REDACTED]");
    }
}

async fn unauthorized_is_not_retried(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig {
        require_api_key: Some(KEY.into()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let engine = engine(Arc::clone(&store), &server, "openai", "sk-wrong", false);
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let error = engine
        .send(&conversation.id, "Hello", None)
        .await
        .unwrap_err();
    let EngineError::Turn(TurnError::Provider {
        attempt: 1,
        error: ProviderError::Status { status: 401, .. },
    }) = &error
    else {
        panic!("{error}")
    };
    assert_eq!(server.requests().len(), 1, "a 401 is never retried");
    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(stored.len(), 2, "the user message and the failed attempt");
    assert!(stored[1].data.error.as_deref().unwrap().contains("401"));
    assert!(!stored[1].data.is_validated);
}

async fn anthropic_tool_output_end_to_end(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig {
        require_api_key: Some(KEY.into()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let engine = engine(Arc::clone(&store), &server, "anthropic", KEY, true);
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert_eq!(outcome.attempts, 1);
    let logged = server.requests();
    assert_eq!(logged[0].path, "/v1/messages");
    assert_eq!(logged[0].body["tool_choice"]["name"], "respond");
    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    let payload = stored[1].data.request_payload.as_ref().unwrap();
    assert_eq!(payload["headers"]["x-api-key"], "[REDACTED]");
    assert!(!payload.to_string().contains(KEY));
}

on_both_backends! {
    replay_resends_the_stored_request_with_the_key: sqlite_replay_resends_the_stored_request_with_the_key, postgres_replay_resends_the_stored_request_with_the_key;
}

async fn replay_resends_the_stored_request_with_the_key(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig {
        fault_rate: 1.0,
        faults: vec![Fault::WrongEnum],
        require_api_key: Some(KEY.into()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gateway = engine(Arc::clone(&store), &server, "openai", KEY, false);
    let conversation = gateway
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = gateway.send(&conversation.id, "Hello", None).await.unwrap();
    assert_eq!(
        outcome.attempts, 2,
        "a faulty first reply, fixed by feedback"
    );
    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    let (first, second) = (&stored[1], &stored[2]);
    server.clear_requests();

    // The first attempt's request again: the same fault, the same violation.
    let replay = gateway.replay(first.id).await.unwrap();
    assert_eq!(replay.error, None, "the key was put back: {replay:?}");
    assert!(!replay.original.valid);
    let check = replay.check.as_ref().unwrap();
    assert!(!check.valid);
    assert!(
        check.violations.iter().any(|v| v.rule.as_str() == "enum"),
        "{check:?}"
    );
    // The second attempt (with the feedback) passes again.
    let replay = gateway.replay(second.id).await.unwrap();
    assert!(replay.check.as_ref().unwrap().valid, "{replay:?}");
    assert!(replay.original.valid);

    let logged = server.requests();
    assert_eq!(logged.len(), 2, "one upstream call per replay");
    for (request, attempt) in logged.iter().zip([first, second]) {
        assert_eq!(
            &request.body,
            &attempt.data.request_payload.as_ref().unwrap()["body"],
            "the stored body is sent as it was"
        );
    }
    let after = store.messages(&conversation.id, View::Admin).await.unwrap();
    assert_eq!(
        after.len(),
        stored.len(),
        "replays are not stored as attempts"
    );

    // Neither a user message nor an unknown id replays.
    assert!(matches!(
        gateway.replay(stored[0].id).await,
        Err(EngineError::NotReplayable(_))
    ));
    assert!(matches!(
        gateway.replay(i64::MAX).await,
        Err(EngineError::NoMessage(_))
    ));

    // A payload whose URL no configured provider sends to is refused, not followed.
    let elsewhere = MockServer::start(MockConfig::default()).await.unwrap();
    let other = engine(Arc::clone(&store), &elsewhere, "openai", KEY, false);
    let refused = other.replay(first.id).await.unwrap_err();
    assert!(
        matches!(&refused, EngineError::NotReplayable(m) if m.contains(&server.url())),
        "{refused}"
    );
    assert!(elsewhere.requests().is_empty());
}

/// The tool form over real HTTP, OpenAI and Anthropic: the request offers `present_question`
/// without forcing it, a first call missing a required argument is retried with feedback, the
/// second call becomes the card; the stored bodies are the bodies sent.
async fn present_question_over_http(store: Arc<dyn Store>) {
    for kind in ["openai", "anthropic"] {
        let server = MockServer::start(MockConfig {
            script: Some(bridle_mock::Script {
                turns: vec![bridle_mock::ScriptTurn {
                    attempts: vec![bridle_mock::Step::Fault(Fault::MissingRequired)],
                }],
            }),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let engine = engine(Arc::clone(&store), &server, kind, KEY, false);
        let conversation = engine
            .start_conversation("ada", "question-cards", json!({"mode": "discovery"}))
            .await
            .unwrap();
        let outcome = engine
            .send(&conversation.id, "I want an app for my flat", None)
            .await
            .unwrap();
        assert_eq!(outcome.attempts, 2, "{kind}");
        let card = &outcome.value["question_cards"][0];
        assert_eq!(card["metadata"]["option_style"], "tool", "{kind}");
        assert_eq!(card["options"].as_array().unwrap().len(), 3, "{kind}");

        let logged = server.requests();
        assert_eq!(logged.len(), 2, "{kind}");
        let tool_name = match kind {
            "openai" => &logged[0].body["tools"][0]["function"]["name"],
            _ => &logged[0].body["tools"][0]["name"],
        };
        assert_eq!(tool_name, "present_question", "{kind}");
        assert!(
            logged[0].body.get("tool_choice").is_none(),
            "{kind}: not forced"
        );
        let stored: Vec<_> = store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.data.role == MessageRole::Assistant)
            .collect();
        assert_eq!(stored.len(), 2, "{kind}");
        for (attempt, request) in stored.iter().zip(&logged) {
            assert_eq!(
                attempt.data.request_payload.as_ref().unwrap()["body"],
                request.body,
                "{kind}"
            );
        }
        assert!(!stored[0].data.is_validated, "{kind}");
        assert!(
            stored[0].data.violations[0]
                .path
                .starts_with("/tool_calls/0/arguments"),
            "{kind}: {:?}",
            stored[0].data.violations
        );
        assert!(stored[1].data.is_validated, "{kind}");
    }
}
