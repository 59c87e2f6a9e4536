//! The turn loop with the in-process mock: faults retried and recorded, feedback fixing them,
//! bounded retry prompts, fallback keeping safety, Retry-After, history — on SQLite and
//! PostgreSQL alike.

use bridle_engine::store::{self, Message, MessageRole, Store, View};
use bridle_engine::{Config, Engine, EngineError, TurnError};
use bridle_testkit::TestDatabase;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a test's store lives; kept alive for the test.
#[allow(dead_code)] // the fields are held for their `Drop`
pub(crate) enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(TestDatabase),
}

impl Backend {
    pub(crate) async fn sqlite() -> (Self, Arc<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        let store = Arc::from(store::open(&url).await.unwrap());
        (Self::Sqlite(dir), store)
    }

    pub(crate) async fn postgres() -> (Self, Arc<dyn Store>) {
        let db = TestDatabase::create().await;
        let store = Arc::from(store::open(&db.url).await.unwrap());
        (Self::Postgres(db), store)
    }
}

on_both_backends! {
    content_faults_are_fixed_by_feedback: sqlite_content_faults_are_fixed_by_feedback, postgres_content_faults_are_fixed_by_feedback;
    repairable_faults_need_no_retry: sqlite_repairable_faults_need_no_retry, postgres_repairable_faults_need_no_retry;
    retry_prompts_stay_bounded: sqlite_retry_prompts_stay_bounded, postgres_retry_prompts_stay_bounded;
    fallback_keeps_the_most_severe_safety: sqlite_fallback_keeps_the_most_severe_safety, postgres_fallback_keeps_the_most_severe_safety;
    provider_errors_are_retried_and_retry_after_honoured: sqlite_provider_errors_are_retried_and_retry_after_honoured, postgres_provider_errors_are_retried_and_retry_after_honoured;
    history_holds_validated_messages_only: sqlite_history_holds_validated_messages_only, postgres_history_holds_validated_messages_only;
    exhausted_without_fallback_is_an_error: sqlite_exhausted_without_fallback_is_an_error, postgres_exhausted_without_fallback_is_an_error;
    xml_contracts_run_the_same_turn: sqlite_xml_contracts_run_the_same_turn, postgres_xml_contracts_run_the_same_turn;
    marker_contracts_run_the_same_turn: sqlite_marker_contracts_run_the_same_turn, postgres_marker_contracts_run_the_same_turn;
    question_cards_come_from_the_mode: sqlite_question_cards_come_from_the_mode, postgres_question_cards_come_from_the_mode;
    present_question_calls_become_cards: sqlite_present_question_calls_become_cards, postgres_present_question_calls_become_cards;
    a_bad_present_question_call_is_retried: sqlite_a_bad_present_question_call_is_retried, postgres_a_bad_present_question_call_is_retried;
}

/// An engine over `store` with the in-process mock configured by `mock` (TOML lines of its
/// `[providers.mock]` entry) and no delay between attempts.
pub(crate) fn engine(store: Arc<dyn Store>, mock: &str, extra: &str) -> Engine {
    let text =
        format!("{extra}\n[retry]\ndelay_ms = 0\n[providers.mock]\nkind = \"mock\"\n{mock}\n");
    let config = Config::from_toml(&text, &Default::default()).unwrap();
    Engine::with_store(config, store).unwrap()
}

/// Writes a mock script and returns the `script = "…"` line for it.
pub(crate) fn script(dir: &tempfile::TempDir, steps: &Value) -> String {
    let path = dir.path().join("script.json");
    std::fs::write(&path, steps.to_string()).unwrap();
    format!("script = {:?}", path.display().to_string())
}

async fn admin_view(engine: &Engine, conversation: &str) -> Vec<Message> {
    engine
        .store()
        .messages(conversation, View::Admin)
        .await
        .unwrap()
}

fn attempts(messages: &[Message], turn: &str) -> Vec<Message> {
    messages
        .iter()
        .filter(|m| m.data.turn_id == turn && m.data.role == MessageRole::Assistant)
        .cloned()
        .collect()
}

async fn content_faults_are_fixed_by_feedback(store: Arc<dyn Store>) {
    for fault in [
        "wrong_key",
        "missing_required",
        "wrong_enum",
        "truncate",
        "plain_text",
    ] {
        let engine = engine(
            Arc::clone(&store),
            &format!("fault_rate = 1.0\nfaults = [{{ kind = \"{fault}\" }}]\nseed = 11"),
            "",
        );
        let conversation = engine
            .start_conversation("ada", "selfhelp-response", json!({}))
            .await
            .unwrap();
        let outcome = engine
            .send(&conversation.id, "I can't sleep before exams.", None)
            .await
            .unwrap();
        assert!(!outcome.fallback, "{fault}: fell back");
        assert_eq!(
            outcome.attempts, 2,
            "{fault}: the feedback should fix it on the second attempt"
        );
        let all = admin_view(&engine, &conversation.id).await;
        let tried = attempts(&all, &outcome.turn_id);
        assert_eq!(tried.len(), 2, "{fault}");
        assert!(
            !tried[0].data.is_validated && !tried[0].data.violations.is_empty(),
            "{fault}: {:?}",
            tried[0].data
        );
        assert!(tried[1].data.is_validated, "{fault}");
        assert_eq!(tried[1].id, outcome.message_id);
        assert_eq!(
            (tried[0].data.attempt, tried[1].data.attempt),
            (Some(1), Some(2))
        );
        // Every attempt carries its exact request, and the second one the first one's feedback.
        let second = &tried[1].data.request_payload.as_ref().unwrap()["body"]["messages"];
        let feedback = second.as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap();
        assert!(
            feedback.starts_with("Your previous reply did not meet the contract"),
            "{fault}: {feedback}"
        );
        // A reply stopped at the output token limit says so first: writing as much again
        // would be cut again.
        let rules: Vec<&str> = tried[0]
            .data
            .violations
            .iter()
            .map(|v| v.rule.as_str())
            .collect();
        if fault == "truncate" {
            assert_eq!(rules[..2], ["max_tokens", "truncated"], "{fault}");
            assert!(feedback.contains("output token limit"), "{feedback}");
        } else {
            assert!(!rules.contains(&"max_tokens"), "{fault}: {rules:?}");
        }
        assert_eq!(outcome.value, tried[1].data.value.clone().unwrap());
        // Each attempt keeps the provider's own answer, valid or not.
        for attempt in &tried {
            let raw = attempt.data.raw_response.as_ref();
            assert_eq!(
                raw.and_then(|raw| raw["content"].as_str()),
                Some(attempt.data.content.as_str()),
                "{fault}: {raw:?}"
            );
        }
        // Token usage is the sum over the attempts.
        let tokens: u64 = tried
            .iter()
            .map(|m| m.data.tokens_in.unwrap() + m.data.tokens_out.unwrap())
            .sum();
        assert_eq!(
            outcome.usage.input_tokens + outcome.usage.output_tokens,
            tokens,
            "{fault}"
        );
    }
}

async fn repairable_faults_need_no_retry(store: Arc<dyn Store>) {
    for (fault, repair) in [
        ("fence", "code_fence"),
        ("prose", "surrounding_prose"),
        ("trailing_comma", "trailing_comma"),
    ] {
        let engine = engine(
            Arc::clone(&store),
            &format!("fault_rate = 1.0\nfaults = [{{ kind = \"{fault}\" }}]"),
            "",
        );
        let conversation = engine
            .start_conversation("ada", "selfhelp-response", json!({}))
            .await
            .unwrap();
        let outcome = engine.send(&conversation.id, "Hello", None).await.unwrap();
        assert_eq!(outcome.attempts, 1, "{fault}");
        assert!(
            outcome.repairs.iter().any(|r| r.kind.as_str() == repair),
            "{fault}: {:?}",
            outcome.repairs
        );
        let stored = attempts(
            &admin_view(&engine, &conversation.id).await,
            &outcome.turn_id,
        );
        assert!(
            stored[0]
                .data
                .repairs
                .iter()
                .any(|r| r.kind.as_str() == repair)
        );
        assert!(
            stored[0].data.content.len()
                > stored[0].data.value.as_ref().unwrap().to_string().len() / 2
        );
    }
}

async fn retry_prompts_stay_bounded(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let steps = json!({"turns": [{"attempts": [{"fault": {"kind": "wrong_key"}}, {"fault": {"kind": "wrong_enum"}}, {"fault": {"kind": "missing_required"}}]}]});
    let engine = engine(Arc::clone(&store), &script(&dir, &steps), "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "Help me plan my week", None)
        .await
        .unwrap();
    assert!(outcome.fallback);
    assert_eq!(outcome.attempts, 3);
    let tried = attempts(
        &admin_view(&engine, &conversation.id).await,
        &outcome.turn_id,
    );
    assert_eq!(tried.len(), 4, "three attempts and the fallback");
    let sizes: Vec<usize> = tried[..3]
        .iter()
        .map(|m| {
            let messages = m.data.request_payload.as_ref().unwrap()["body"]["messages"]
                .as_array()
                .unwrap()
                .clone();
            let feedback = messages
                .iter()
                .filter(|x| {
                    x["content"]
                        .as_str()
                        .unwrap()
                        .starts_with("Your previous reply")
                })
                .count();
            assert!(feedback <= 1, "at most one feedback message per request");
            messages.len()
        })
        .collect();
    assert_eq!(
        sizes,
        vec![2, 4, 4],
        "system + user, then + the bad reply and its feedback only"
    );
    // The bad reply sent back is exactly what the model wrote.
    let third = &tried[2].data.request_payload.as_ref().unwrap()["body"]["messages"];
    assert_eq!(third[2]["role"], "assistant");
    assert_eq!(third[2]["content"], tried[1].data.content.as_str());
    // The fallback is stored as a fallback, not as a valid reply.
    assert!(tried[3].data.is_fallback && !tried[3].data.is_validated);
}

async fn fallback_keeps_the_most_severe_safety(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    // Three replies that break the contract but carry safety assessments, the worst in the middle.
    let with_safety = |level: Value, safe: bool, concerns: Value| {
        json!({"type": "response", "safety": {"is_safe": safe, "danger_level": level, "detected_concerns": concerns, "requires_intervention": !safe, "safety_message": null}, "content": {"text_blocks": []}, "metadata": {"model": "m"}}).to_string()
    };
    let steps = json!({"turns": [{"attempts": [
        {"reply": with_safety(json!("warning"), true, json!(["self_harm"]))},
        {"reply": with_safety(json!("emergency"), false, json!(["suicide", "self_harm"]))},
        {"reply": "I am so sorry, I cannot answer in JSON."}
    ]}]});
    let engine = engine(Arc::clone(&store), &script(&dir, &steps), "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "I don't want to be here anymore", None)
        .await
        .unwrap();
    assert!(outcome.fallback);
    assert_eq!(outcome.value["safety"]["danger_level"], "emergency");
    assert_eq!(
        outcome.value["safety"]["detected_concerns"],
        json!(["suicide", "self_harm"])
    );
    assert_eq!(outcome.value["content"]["text_blocks"][0]["type"], "error");
    let contract = engine.contracts().get("selfhelp-response").unwrap();
    assert!(contract.validate(&outcome.value).is_empty());
    let stored = engine
        .store()
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap();
    let fallback = stored.iter().find(|m| m.id == outcome.message_id).unwrap();
    assert!(fallback.data.is_fallback && !fallback.data.is_validated);
    assert_eq!(
        fallback.data.value.as_ref().unwrap()["safety"]["danger_level"],
        "emergency"
    );
    // The user view shows the user's message only: no invalid attempt, no fallback.
    let user = engine
        .store()
        .messages(&conversation.id, View::User)
        .await
        .unwrap();
    assert_eq!(user.len(), 1);
    assert_eq!(user[0].data.role, MessageRole::User);
}

async fn provider_errors_are_retried_and_retry_after_honoured(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let steps = json!({"turns": [{"attempts": [{"fault": {"kind": "http500"}}, {"fault": {"kind": "http429", "retry_after_secs": 1}}, {"valid": true}]}]});
    let engine = engine(Arc::clone(&store), &script(&dir, &steps), "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let started = Instant::now();
    let outcome = engine.send(&conversation.id, "Hi", None).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 must be waited out"
    );
    assert_eq!(outcome.attempts, 3);
    assert!(!outcome.fallback);
    let tried = attempts(
        &admin_view(&engine, &conversation.id).await,
        &outcome.turn_id,
    );
    assert!(
        tried[0].data.error.as_deref().unwrap().contains("500"),
        "{:?}",
        tried[0].data.error
    );
    assert!(
        tried[1].data.error.as_deref().unwrap().contains("429"),
        "{:?}",
        tried[1].data.error
    );
    assert!(tried[2].data.is_validated);
}

async fn history_holds_validated_messages_only(store: Arc<dyn Store>) {
    let engine = engine(
        Arc::clone(&store),
        "fault_rate = 1.0\nfaults = [{ kind = \"wrong_key\" }]",
        "",
    );
    let conversation = engine
        .start_conversation(
            "ada",
            "selfhelp-response",
            json!({"prompt": "You coach students.", "page": "home"}),
        )
        .await
        .unwrap();
    let first = engine
        .send(&conversation.id, "First question", None)
        .await
        .unwrap();
    let second = engine
        .send(&conversation.id, "Second question", None)
        .await
        .unwrap();
    let tried = attempts(
        &admin_view(&engine, &conversation.id).await,
        &second.turn_id,
    );
    let messages = tried[0].data.request_payload.as_ref().unwrap()["body"]["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        vec!["system", "user", "assistant", "user"],
        "system, first turn (user + its valid reply), new message"
    );
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("You coach students."),
        "the app prompt follows the contract's instructions"
    );
    assert_eq!(messages[1]["content"], "First question");
    assert_eq!(
        serde_json::from_str::<Value>(messages[2]["content"].as_str().unwrap()).unwrap(),
        first.value
    );
    let user_view = engine
        .store()
        .messages(&conversation.id, View::User)
        .await
        .unwrap();
    assert_eq!(
        user_view.len(),
        4,
        "two user messages and two valid replies"
    );
}

async fn exhausted_without_fallback_is_an_error(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contracts/answer");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(
        contract.join("manifest.toml"),
        "name = \"answer\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n",
    )
    .unwrap();
    std::fs::write(contract.join("schema.json"), r#"{"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}"#).unwrap();
    let steps = json!({"turns": [{"attempts": [{"reply": "no"}, {"reply": "{\"answer\": 1}"}]}]});
    let extra = format!(
        "contracts_dirs = [{:?}]\n[retry.contracts.answer]\nmax_attempts = 2",
        dir.path().join("contracts").display().to_string()
    );
    let engine = engine(Arc::clone(&store), &script(&dir, &steps), &extra);
    let conversation = engine
        .start_conversation("ada", "answer", json!({}))
        .await
        .unwrap();
    let error = engine
        .send(&conversation.id, "Question", None)
        .await
        .unwrap_err();
    let EngineError::Turn(TurnError::Exhausted {
        attempts,
        violations,
        ..
    }) = &error
    else {
        panic!("{error}")
    };
    assert_eq!(*attempts, 2);
    assert_eq!(violations[0].rule.as_str(), "type");
    assert_eq!(
        admin_view(&engine, &conversation.id).await.len(),
        3,
        "user message and both attempts are stored"
    );
}

#[tokio::test]
async fn a_blocked_conversation_takes_no_message() {
    let (_keep, store) = Backend::sqlite().await;
    let engine = engine(Arc::clone(&store), "", "");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    store
        .set_status(
            &conversation.id,
            bridle_engine::store::ConversationStatus::Blocked,
        )
        .await
        .unwrap();
    assert!(matches!(
        engine.send(&conversation.id, "hi", None).await,
        Err(EngineError::Blocked(_))
    ));
    assert!(matches!(
        engine.send("nope", "hi", None).await,
        Err(EngineError::NoConversation(_))
    ));
    assert!(matches!(
        engine.start_conversation("ada", "nope", json!({})).await,
        Err(EngineError::Contract(_))
    ));
    assert!(matches!(
        engine
            .start_conversation("ada", "selfhelp-response", json!({"page": 3}))
            .await,
        Err(EngineError::BadContext(_))
    ));
    assert!(
        store
            .messages(&conversation.id, View::Admin)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn zero_config_opens_sqlite_in_the_data_dir_and_answers_with_the_mock() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("bridle-data");
    let config = Config::from_toml(
        &format!("data_dir = {:?}", data_dir.display().to_string()),
        &Default::default(),
    )
    .unwrap();
    let engine = Engine::open(config).await.unwrap();
    assert!(data_dir.join("bridle.db").is_file());
    assert_eq!(engine.store().backend(), "sqlite");
    let conversation = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "Hello there", None)
        .await
        .unwrap();
    assert_eq!(outcome.attempts, 1);
    assert!(
        engine
            .contracts()
            .get("selfhelp-response")
            .unwrap()
            .validate(&outcome.value)
            .is_empty()
    );
}

/// The `xml` kind goes through the same turn: the mock answers an XML document, the stored
/// attempt keeps the XML as received and its value as read.
async fn xml_contracts_run_the_same_turn(store: Arc<dyn Store>) {
    let engine = engine(Arc::clone(&store), "seed = 4", "");
    let conversation = engine
        .start_conversation("ada", "topic-analysis", json!({}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "How do I save for a bike?", None)
        .await
        .unwrap();
    assert_eq!(outcome.attempts, 1);
    assert!(outcome.value["response"].is_string(), "{}", outcome.value);
    assert!(outcome.value["analysis"].is_object(), "{}", outcome.value);
    let all = admin_view(&engine, &conversation.id).await;
    let stored = &attempts(&all, &outcome.turn_id)[0];
    assert!(
        stored.data.content.trim_start().starts_with("<llmResponse"),
        "{}",
        stored.data.content
    );
    assert_eq!(stored.data.value.as_ref(), Some(&outcome.value));
    let system = &stored.data.request_payload.as_ref().unwrap()["body"]["messages"][0]["content"];
    assert!(
        system
            .as_str()
            .unwrap()
            .contains("root element <llmResponse>")
    );
    // The message went out as an <llmQuery>, and the reply's topics are kept with the
    // conversation and sent with the next message.
    let sent = &stored.data.request_payload.as_ref().unwrap()["body"]["messages"];
    let first_query = sent.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(first_query.starts_with("<llmQuery>"), "{first_query}");
    assert!(first_query.contains("<userMessage>How do I save for a bike?</userMessage>"));
    assert!(first_query.contains("messageCount=\"1\""), "{first_query}");
    let state = engine
        .store()
        .conversation(&conversation.id)
        .await
        .unwrap()
        .unwrap()
        .state;
    // Each named subject once, in the reply's order (the mock's reply may name one twice, or
    // none), commas turned into spaces, trimmed.
    let mut subjects: Vec<String> = Vec::new();
    let named = outcome.value["analysis"]["subject"].as_array();
    for subject in named.map_or(&[][..], Vec::as_slice) {
        let Some(name) = subject["@name"].as_str() else {
            continue;
        };
        let name = name.replace(',', " ").trim().to_owned();
        if !name.is_empty() && !subjects.contains(&name) {
            subjects.push(name);
        }
    }
    assert_eq!(
        state["topic"]["active_subjects"],
        json!(subjects),
        "{state}"
    );
    assert_eq!(state["topic"]["updates"], 1);
    let second = engine
        .send(&conversation.id, "And for a helmet & lights?", None)
        .await
        .unwrap();
    let all = admin_view(&engine, &conversation.id).await;
    let stored = &attempts(&all, &second.turn_id)[0];
    let sent = &stored.data.request_payload.as_ref().unwrap()["body"]["messages"];
    let query = sent.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(query.contains("helmet &amp; lights"), "{query}");
    assert!(query.contains("messageCount=\"3\""), "{query}");
    if let Some(first) = subjects.first() {
        assert!(query.contains(first), "{query}");
    }
    let system = sent[0]["content"].as_str().unwrap();
    if !outcome.value["analysis"]["summaryUpdate"]
        .as_str()
        .unwrap()
        .is_empty()
    {
        assert!(
            system.contains("Summary of the conversation so far:"),
            "{system}"
        );
    }
    // The user's own words are what the user view keeps.
    assert_eq!(
        stored_user_text(&all, &second.turn_id),
        "And for a helmet & lights?"
    );
    let too_long = "x".repeat(10_001);
    assert!(matches!(
        engine.send(&conversation.id, &too_long, None).await,
        Err(EngineError::BadMessage(_))
    ));

    // Faults come in the shape of XML replies, and the feedback fixes them.
    for fault in ["wrong_key", "missing_required", "truncate", "fence"] {
        let faulty = self::engine(
            Arc::clone(&store),
            &format!("fault_rate = 1.0\nfaults = [{{ kind = \"{fault}\" }}]\nseed = 5"),
            "",
        );
        let conversation = faulty
            .start_conversation("ada", "topic-analysis", json!({}))
            .await
            .unwrap();
        let outcome = faulty
            .send(&conversation.id, "Help me plan a garden", None)
            .await
            .unwrap();
        let all = admin_view(&faulty, &conversation.id).await;
        let first = &attempts(&all, &outcome.turn_id)[0].data;
        assert!(
            first.content.contains("<llmResponse"),
            "{fault}: {}",
            first.content
        );
        if fault == "fence" {
            assert_eq!(outcome.attempts, 1, "a fenced document is repaired");
            assert_eq!(outcome.repairs[0].kind.as_str(), "code_fence");
        } else {
            assert_eq!(outcome.attempts, 2, "{fault}: {:?}", first.violations);
            assert!(!first.is_validated);
        }
    }
}

/// The `markers` kind goes through the same turn: the page comes from the conversation's
/// context, valid replies go back into the history as marker text (not JSON), earlier payloads
/// are listed in the prompt, and faults in the shape of marker replies are fixed by feedback.
async fn marker_contracts_run_the_same_turn(store: Arc<dyn Store>) {
    let chat = engine(Arc::clone(&store), "seed = 6", "");
    let conversation = chat
        .start_conversation("ada", "table-chat", json!({"page": "table_view"}))
        .await
        .unwrap();
    let mut payloads = 0;
    for (n, text) in ["Track my reading", "Add some books", "Clean up the ratings"]
        .iter()
        .enumerate()
    {
        let outcome = chat.send(&conversation.id, text, None).await.unwrap();
        assert_eq!(outcome.attempts, 1, "{}", outcome.value);
        let value = &outcome.value;
        assert!(value["message"].is_string(), "{value}");
        payloads += usize::from(!value["payload"].is_null());
        if n == 2 {
            let all = admin_view(&chat, &conversation.id).await;
            let stored = &attempts(&all, &outcome.turn_id)[0];
            let body = &stored.data.request_payload.as_ref().unwrap()["body"]["messages"];
            let system = body[0]["content"].as_str().unwrap();
            assert!(system.contains("## Page: table_view"), "{system}");
            assert!(system.contains("DATA_PROPOSAL:"), "{system}");
            assert_eq!(
                system.contains("## Payloads earlier in this conversation"),
                payloads > 0,
                "{system}"
            );
            // The earlier replies are sent as the text a model writes, never as JSON.
            let earlier = body[2]["content"].as_str().unwrap();
            assert!(!earlier.trim_start().starts_with('{'), "{earlier}");
        }
    }
    assert!(payloads > 0, "the mock proposed nothing in three turns");

    for fault in ["wrong_key", "missing_required", "truncate"] {
        let engine = engine(
            Arc::clone(&store),
            &format!("fault_rate = 1.0\nfaults = [{{ kind = \"{fault}\" }}]\nseed = 21"),
            "",
        );
        let conversation = engine
            .start_conversation("ada", "table-chat", json!({"page": "table_view"}))
            .await
            .unwrap();
        let outcome = engine
            .send(&conversation.id, "Propose a reading log", None)
            .await
            .unwrap();
        assert!(!outcome.fallback, "{fault}");
        let all = admin_view(&engine, &conversation.id).await;
        let tried = attempts(&all, &outcome.turn_id);
        assert_eq!(outcome.attempts, 2, "{fault}: fixed by the feedback");
        {
            let first = &tried[0].data;
            assert!(!first.is_validated, "{fault}");
            assert!(
                !first.content.trim_start().starts_with('{'),
                "{fault}: {}",
                first.content
            );
        }
        assert!(tried.last().unwrap().data.is_validated, "{fault}");
    }
}

fn stored_user_text(messages: &[Message], turn: &str) -> String {
    messages
        .iter()
        .find(|m| m.data.turn_id == turn && m.data.role == MessageRole::User)
        .map(|m| m.data.content.clone())
        .unwrap_or_default()
}

/// The `text` kind with question cards: in discovery mode the mock's question becomes a card
/// (ids differ between turns), in another mode the same kind of reply stays text.
async fn question_cards_come_from_the_mode(store: Arc<dyn Store>) {
    let chat = engine(Arc::clone(&store), "seed = 8", "");
    let discovery = chat
        .start_conversation("ada", "question-cards", json!({"mode": "discovery"}))
        .await
        .unwrap();
    let first = chat
        .send(&discovery.id, "I want an app for my flat", None)
        .await
        .unwrap();
    let second = chat
        .send(&discovery.id, "Groceries mostly", None)
        .await
        .unwrap();
    for outcome in [&first, &second] {
        assert_eq!(outcome.attempts, 1);
        let cards = outcome.value["question_cards"].as_array().unwrap();
        assert_eq!(cards.len(), 1, "{}", outcome.value);
        assert_eq!(cards[0]["category"], "discovery");
        assert_eq!(cards[0]["options"].as_array().unwrap().len(), 3);
        assert_eq!(cards[0]["options"][1]["is_default"], true);
        let message = outcome.value["message"].as_str().unwrap();
        assert!(!message.contains("(A)"), "{message}");
    }
    assert_ne!(
        first.value["question_cards"][0]["question_id"],
        second.value["question_cards"][0]["question_id"]
    );
    // The card went back into the history as the text the model wrote.
    let all = admin_view(&chat, &discovery.id).await;
    let stored = &attempts(&all, &second.turn_id)[0];
    let sent = &stored.data.request_payload.as_ref().unwrap()["body"]["messages"];
    let earlier = sent[2]["content"].as_str().unwrap();
    assert!(earlier.contains("(A) "), "{earlier}");
    assert!(
        sent[0]["content"]
            .as_str()
            .unwrap()
            .contains("Conversation mode: discovery")
    );

    let plain = chat
        .start_conversation("ada", "question-cards", json!({"mode": "build"}))
        .await
        .unwrap();
    let outcome = chat
        .send(&plain.id, "I want an app for my flat", None)
        .await
        .unwrap();
    assert_eq!(outcome.value["question_cards"], json!([]));
    assert!(!outcome.value["message"].as_str().unwrap().is_empty());
}

/// The tool form: in discovery mode the engine offers `present_question`, the mock calls it,
/// and the call becomes the card; the stored attempt has the `tools` it was offered, the
/// call in its content and raw response. Outside the card modes no tool is offered.
async fn present_question_calls_become_cards(store: Arc<dyn Store>) {
    let chat = engine(Arc::clone(&store), "seed = 4", "");
    let discovery = chat
        .start_conversation("ada", "question-cards", json!({"mode": "discovery"}))
        .await
        .unwrap();
    let outcome = chat
        .send(&discovery.id, "I want an app for my flat", None)
        .await
        .unwrap();
    assert_eq!(outcome.attempts, 1);
    let cards = outcome.value["question_cards"].as_array().unwrap();
    assert_eq!(cards.len(), 1, "{}", outcome.value);
    let card = &cards[0];
    assert_eq!(card["metadata"]["option_style"], "tool");
    assert_eq!(card["category"], "discovery");
    assert!(card["question_text"].as_str().unwrap().ends_with('?'));
    assert_eq!(card["options"].as_array().unwrap().len(), 3);
    assert!(!outcome.value["message"].as_str().unwrap().is_empty());

    let stored = &attempts(&admin_view(&chat, &discovery.id).await, &outcome.turn_id)[0];
    let body = &stored.data.request_payload.as_ref().unwrap()["body"];
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "present_question");
    assert!(stored.data.is_validated);
    assert!(
        stored.data.content.contains("present_question({"),
        "{}",
        stored.data.content
    );
    assert_eq!(
        stored.data.raw_response.as_ref().unwrap()["tool_calls"][0]["name"],
        "present_question"
    );
    assert_eq!(stored.data.value.as_ref(), Some(&outcome.value));

    let build = chat
        .start_conversation("ada", "question-cards", json!({"mode": "build"}))
        .await
        .unwrap();
    let outcome = chat.send(&build.id, "Make it blue", None).await.unwrap();
    assert_eq!(outcome.value["question_cards"], json!([]));
    let stored = &attempts(&admin_view(&chat, &build.id).await, &outcome.turn_id)[0];
    let body = &stored.data.request_payload.as_ref().unwrap()["body"];
    assert!(
        body.get("tools").is_none(),
        "no tools outside the card modes: {body}"
    );
}

/// A first call with a required argument missing is an invalid attempt; the retry shows the
/// model its call and feedback naming `/tool_calls/0/arguments…`, and the second call is valid.
async fn a_bad_present_question_call_is_retried(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let steps = json!({"turns": [{"attempts": [{"fault": {"kind": "missing_required"}}]}]});
    let chat = engine(Arc::clone(&store), &script(&dir, &steps), "");
    let conversation = chat
        .start_conversation("ada", "question-cards", json!({"mode": "clarification"}))
        .await
        .unwrap();
    let outcome = chat
        .send(&conversation.id, "Make it work offline", None)
        .await
        .unwrap();
    assert!(!outcome.fallback);
    assert_eq!(outcome.attempts, 2);
    let tried = attempts(&admin_view(&chat, &conversation.id).await, &outcome.turn_id);
    assert_eq!(tried.len(), 2);
    assert!(!tried[0].data.is_validated);
    assert!(
        tried[0]
            .data
            .violations
            .iter()
            .all(|v| v.path.starts_with("/tool_calls/0/arguments")),
        "{:?}",
        tried[0].data.violations
    );
    assert!(tried[1].data.is_validated);
    let sent = tried[1].data.request_payload.as_ref().unwrap()["body"]["messages"]
        .as_array()
        .unwrap()
        .clone();
    let (bad, feedback) = (&sent[sent.len() - 2], &sent[sent.len() - 1]);
    assert_eq!(bad["role"], "assistant");
    assert_eq!(bad["content"], tried[0].data.content.as_str());
    assert!(
        bad["content"]
            .as_str()
            .unwrap()
            .contains("present_question(")
    );
    let feedback = feedback["content"].as_str().unwrap();
    assert!(feedback.contains("/tool_calls/0/arguments"), "{feedback}");
    assert!(
        feedback.contains("Call the tool `present_question` again"),
        "{feedback}"
    );
    let cards = outcome.value["question_cards"].as_array().unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0]["category"], "clarification");
}
