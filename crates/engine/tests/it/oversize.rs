//! Replies larger than the contract's `max_bytes`, from the mock LLM over loopback (the OpenAI
//! provider), read whole and streamed: the stored attempt keeps the first `max_bytes` bytes of
//! the reply and of its raw response, and its `too_large` violation says how large it was — on
//! SQLite and PostgreSQL alike.

use bridle_engine::store::{MessageRole, Store, View};
use bridle_engine::{Config, Engine, EngineError, TurnError};
use bridle_mock::{MockConfig, MockServer, Script, ScriptTurn, Step};
use serde_json::json;
use std::sync::Arc;

const MAX_BYTES: usize = 1024;

on_both_backends! {
    oversized_replies_are_stored_as_their_first_bytes: sqlite_oversized_replies_are_stored_as_their_first_bytes, postgres_oversized_replies_are_stored_as_their_first_bytes;
}

/// A JSON reply of about ten times `MAX_BYTES`, of two-byte characters (so that the limit falls
/// inside one).
fn huge_reply() -> String {
    format!("{{\"answer\":\"{}\"}}", "é".repeat(5 * MAX_BYTES))
}

async fn oversized_replies_are_stored_as_their_first_bytes(store: Arc<dyn Store>) {
    let huge = huge_reply();
    let size = huge.len();
    assert!(size >= 10 * MAX_BYTES);
    let turn = || ScriptTurn {
        attempts: vec![Step::Reply(huge.clone()), Step::Reply(huge.clone())],
    };
    let script = Script {
        turns: vec![turn(), turn()],
    };
    let server = MockServer::start(MockConfig::new().with_script(script))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contracts/small");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(
        contract.join("manifest.toml"),
        format!("name = \"small\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\nmax_bytes = {MAX_BYTES}\n"),
    )
    .unwrap();
    std::fs::write(contract.join("schema.json"), r#"{"type": "object"}"#).unwrap();
    let text = format!(
        "default_model = \"up\"\ncontracts_dirs = [{:?}]\n[retry]\ndelay_ms = 0\nmax_attempts = 2\n\
         [providers.up]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[models.up]\nprovider = \"up\"\n",
        dir.path().join("contracts").display().to_string(),
        server.url()
    );
    let engine = Engine::with_store(
        Config::from_toml(&text, &Default::default()).unwrap(),
        Arc::clone(&store),
    )
    .unwrap();
    let conversation = engine
        .start_conversation("ada", "small", json!({}))
        .await
        .unwrap();

    let plain = engine.send(&conversation.id, "Tell me", None).await;
    assert!(
        matches!(
            plain,
            Err(EngineError::Turn(TurnError::Exhausted { attempts: 2, .. }))
        ),
        "{plain:?}"
    );
    let (streamed, _) = crate::streamed_turn(&engine, &conversation.id, "Tell me more").await;
    assert!(
        matches!(
            streamed,
            Err(EngineError::Turn(TurnError::Exhausted { attempts: 2, .. }))
        ),
        "{streamed:?}"
    );

    let attempts: Vec<_> = store
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .collect();
    assert_eq!(attempts.len(), 4, "two turns of two attempts");
    for (i, attempt) in attempts.iter().enumerate() {
        let data = &attempt.data;
        let streamed = i >= 2;
        // The first bytes of the reply, cut before the character the limit falls in.
        assert_eq!(data.content.len(), MAX_BYTES - 1, "attempt {i}");
        assert!(huge.starts_with(&data.content), "attempt {i}");
        assert_eq!(
            data.violations.len(),
            1,
            "attempt {i}: {:?}",
            data.violations
        );
        let violation = &data.violations[0];
        assert_eq!(violation.rule.as_str(), "too_large");
        // A stream is stopped once past the limit: what arrived by then is its size.
        let received = if streamed {
            let stated: usize = violation
                .message
                .split_whitespace()
                .nth(3)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{}", violation.message));
            assert!(stated > MAX_BYTES && stated < size, "{}", violation.message);
            stated
        } else {
            size
        };
        assert!(
            violation.message.ends_with(&format!(
                "; reply of {received} bytes, first {} stored",
                MAX_BYTES - 1
            )),
            "attempt {i}: {}",
            violation.message
        );
        match &data.raw_response {
            Some(raw) => {
                assert!(!streamed);
                assert!(raw.to_string().len() <= MAX_BYTES, "{raw}");
                assert_eq!(raw["truncated"], true);
                assert!(raw["bytes"].as_u64().unwrap() > size as u64, "{raw}");
            }
            None => assert!(streamed, "attempt {i} keeps its raw response"),
        }
    }
}
