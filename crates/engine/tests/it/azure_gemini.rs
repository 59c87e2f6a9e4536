//! Turns through the Azure OpenAI and Gemini providers over real HTTP against the mock LLM on
//! loopback, on SQLite and PostgreSQL: the stored request is what the mock received, at the
//! provider's own URL with the model's extra query parameters and headers, keys redacted; a
//! stored attempt replays; Gemini notes whether structured output went out natively; a model's
//! own `timeout_secs` overrides its provider's; streamed turns retry after a bad reply.

use bridle_engine::events::TurnEvent;
use bridle_engine::providers::ProviderError;
use bridle_engine::store::{MessageRole, Store, View};
use bridle_engine::{Config, Engine};
use bridle_mock::{Fault, MockConfig, MockServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "sk-azure-gemini-7d2b-secret";

on_both_backends! {
    azure_and_gemini_turns_store_what_was_sent: sqlite_azure_and_gemini_turns_store_what_was_sent, postgres_azure_and_gemini_turns_store_what_was_sent;
    gemini_says_how_structured_output_went_out: sqlite_gemini_says_how_structured_output_went_out, postgres_gemini_says_how_structured_output_went_out;
    streamed_turns_through_azure_and_gemini: sqlite_streamed_turns_through_azure_and_gemini, postgres_streamed_turns_through_azure_and_gemini;
}

/// An engine whose default model `up` runs on a `kind` provider in front of `server`, with the
/// model's `extra` keys.
fn engine(store: Arc<dyn Store>, server: &MockServer, kind: &str, extra: &str) -> Engine {
    let base_url = match kind {
        "gemini" => format!("{}/v1beta", server.url()),
        _ => server.url(),
    };
    let text = format!(
        "default_model = \"up\"\n[retry]\ndelay_ms = 0\n\
         [providers.up]\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\napi_key = \"{KEY}\"\n\
         timeout_secs = 30\n\
         [models.up]\nprovider = \"up\"\nmodel = \"upstream-model\"\n{extra}\n"
    );
    Engine::with_store(
        Config::from_toml(&text, &Default::default()).unwrap(),
        store,
    )
    .unwrap()
}

async fn azure_and_gemini_turns_store_what_was_sent(store: Arc<dyn Store>) {
    for (kind, path, key_header) in [
        (
            "azure",
            "/openai/deployments/upstream-model/chat/completions",
            "api-key",
        ),
        (
            "gemini",
            "/v1beta/models/upstream-model:generateContent",
            "x-goog-api-key",
        ),
    ] {
        let server = MockServer::start(MockConfig {
            fault_rate: 1.0,
            faults: vec![Fault::WrongEnum],
            require_api_key: Some(KEY.into()),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let extra = "headers = { \"X-Team\" = \"blue\", \"X-Team-Token\" = \"t0k\" }\n\
                     query = { foo = \"bar\" }";
        let engine = engine(Arc::clone(&store), &server, kind, extra);
        let conversation = engine
            .start_conversation("ada", "selfhelp-response", json!({}))
            .await
            .unwrap();
        let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
        assert_eq!(outcome.attempts, 2, "{kind}: a fault fixed by feedback");
        let logged = server.requests();
        let stored: Vec<_> = store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.data.role == MessageRole::Assistant)
            .collect();
        assert_eq!(stored.len(), logged.len(), "{kind}");
        for (attempt, request) in stored.iter().zip(&logged) {
            assert_eq!(request.path, path, "{kind}");
            let payload = attempt.data.request_payload.as_ref().unwrap();
            assert_eq!(payload["body"], request.body, "{kind}");
            assert_eq!(payload["provider"], kind);
            let url = payload["url"].as_str().unwrap();
            assert!(url.ends_with("foo=bar"), "{kind}: {url}");
            assert!(url.contains(path), "{kind}: {url}");
            assert_eq!(payload["headers"][key_header], "[REDACTED]", "{kind}");
            assert_eq!(payload["headers"]["X-Team"], "blue", "{kind}");
            assert_eq!(payload["headers"]["X-Team-Token"], "[REDACTED]", "{kind}");
            let text = payload.to_string();
            assert!(
                !text.contains(KEY) && !text.contains("t0k"),
                "{kind}: {text}"
            );
        }
        if kind == "azure" {
            assert!(
                stored[0].data.request_payload.as_ref().unwrap()["url"]
                    .as_str()
                    .unwrap()
                    .contains("api-version=2024-10-21"),
            );
        }

        // The first attempt replays: the same request, at the same URL, the key put back.
        server.clear_requests();
        let replay = engine.replay(stored[0].id).await.unwrap();
        assert_eq!(replay.error, None, "{kind}: {replay:?}");
        assert_eq!(replay.provider, kind);
        let again = server.requests();
        assert_eq!(again.len(), 1, "{kind}");
        assert_eq!(
            &again[0].body,
            &stored[0].data.request_payload.as_ref().unwrap()["body"]
        );
    }
}

async fn gemini_says_how_structured_output_went_out(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let engine = engine(
        Arc::clone(&store),
        &server,
        "gemini",
        "native_structured_output = true",
    );
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    engine.send(&conversation.id, "Hello", None).await.unwrap();
    let stored = store.messages(&conversation.id, View::Admin).await.unwrap();
    let payload = stored[1].data.request_payload.as_ref().unwrap();
    // The contract's schema uses `allOf` and `if`/`then`: Gemini's subset cannot say it.
    assert_eq!(payload["notes"][0]["kind"], "structured_output");
    assert_eq!(payload["notes"][0]["mode"], "prompt_only");
    let reason = payload["notes"][0]["reason"].as_str().unwrap();
    assert!(
        reason
            == "`allOf` at /properties/content/properties/form/$ref/properties/fields/items/$ref",
        "{reason}"
    );
    assert!(
        payload["body"]["generationConfig"]
            .get("responseSchema")
            .is_none()
    );
}

#[tokio::test]
async fn a_model_s_own_timeout_overrides_its_provider_s() {
    let server = MockServer::start(MockConfig {
        latency_ms: 3000,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let (_keep, store) = crate::turn::Backend::sqlite().await;
    let engine = engine(Arc::clone(&store), &server, "gemini", "timeout_secs = 0.3");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
    assert!(outcome.fallback, "every attempt timed out");
    let attempts: Vec<_> = store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant && !m.data.is_fallback)
        .collect();
    assert_eq!(attempts.len(), 3);
    let error = ProviderError::Timeout(Duration::from_millis(300));
    let timeout = format!("{}: {error}", error.kind());
    for attempt in attempts {
        assert_eq!(
            attempt.data.error.as_deref(),
            Some(timeout.as_str()),
            "the model's 0.3 s, not the provider's 30 s"
        );
    }
}

async fn streamed_turns_through_azure_and_gemini(store: Arc<dyn Store>) {
    for (kind, path) in [
        (
            "azure",
            "/openai/deployments/upstream-model/chat/completions",
        ),
        (
            "gemini",
            "/v1beta/models/upstream-model:streamGenerateContent",
        ),
    ] {
        let server = MockServer::start(MockConfig {
            fault_rate: 1.0,
            faults: vec![Fault::WrongEnum],
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let engine = engine(Arc::clone(&store), &server, kind, "");
        let conversation = engine
            .start_conversation("ada", "selfhelp-response", json!({}))
            .await
            .unwrap();
        let (result, seen) = crate::streamed_turn(&engine, &conversation.id, "Hello").await;
        let outcome = result.unwrap();
        assert_eq!(outcome.attempts, 2, "{kind}");
        assert!(!outcome.fallback, "{kind}");
        let failed = seen.iter().filter(|e| {
            matches!(
                e,
                TurnEvent::AttemptFailed {
                    attempt: 1,
                    reason: "invalid",
                    ..
                }
            )
        });
        assert_eq!(failed.count(), 1, "{kind}: {seen:?}");
        assert!(
            seen.iter()
                .any(|e| matches!(e, TurnEvent::Partial { attempt: 2, .. })),
            "{kind}: the value came in pieces: {seen:?}"
        );
        let logged = server.requests();
        assert_eq!(logged.len(), 2, "{kind}");
        let stored: Vec<_> = store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.data.role == MessageRole::Assistant)
            .collect();
        for (attempt, request) in stored.iter().zip(&logged) {
            assert_eq!(request.path, path, "{kind}");
            let payload = attempt.data.request_payload.as_ref().unwrap();
            assert_eq!(payload["body"], request.body, "{kind}");
        }
    }
}
