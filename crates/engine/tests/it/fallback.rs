//! Every built-in contract answers with its fallback when the mock fails every attempt — on
//! SQLite and PostgreSQL alike: table-chat with the last text without markers or payload,
//! question-cards with the plain text and no card, topic-analysis with a minimal analysis that
//! leaves the conversation's topic state as it was. The fallback is stored as a fallback (not
//! validated), the conversation is not blocked (no attempt assessed any danger), and the next
//! turn goes on as before.

use crate::turn::engine;
use bridle_engine::Engine;
use bridle_engine::store::{ConversationStatus, Message, MessageRole, Store, View};
use serde_json::{Value, json};
use std::sync::Arc;

on_both_backends! {
    table_chat_falls_back_to_the_text_without_markers: sqlite_table_chat_falls_back_to_the_text_without_markers, postgres_table_chat_falls_back_to_the_text_without_markers;
    question_cards_fall_back_to_the_plain_text: sqlite_question_cards_fall_back_to_the_plain_text, postgres_question_cards_fall_back_to_the_plain_text;
    topic_analysis_falls_back_keeping_the_topic_state: sqlite_topic_analysis_falls_back_keeping_the_topic_state, postgres_topic_analysis_falls_back_keeping_the_topic_state;
}

/// An engine whose mock follows `turns` (script turns).
fn scripted(store: &Arc<dyn Store>, dir: &tempfile::TempDir, turns: &Value) -> Engine {
    let path = dir.path().join("script.json");
    std::fs::write(&path, json!({ "turns": turns }).to_string()).unwrap();
    engine(
        Arc::clone(store),
        &format!("script = {:?}", path.display().to_string()),
        "",
    )
}

/// The final message of `turn`, checked to be stored as a fallback after three attempts.
async fn stored_fallback(engine: &Engine, conversation: &str, turn: &str) -> Message {
    let all = engine
        .store()
        .messages(conversation, View::Admin)
        .await
        .unwrap();
    let replies: Vec<&Message> = all
        .iter()
        .filter(|m| m.data.turn_id == turn && m.data.role == MessageRole::Assistant)
        .collect();
    assert_eq!(replies.len(), 4, "three attempts and the fallback");
    assert!(
        replies[..3]
            .iter()
            .all(|m| !m.data.is_validated && !m.data.is_fallback)
    );
    let last = replies[3].clone();
    assert!(last.data.is_fallback && !last.data.is_validated);
    last
}

async fn assert_not_blocked(engine: &Engine, conversation: &str) {
    let stored = engine
        .store()
        .conversation(conversation)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, ConversationStatus::Active);
}

async fn table_chat_falls_back_to_the_text_without_markers(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let broken = |n: u32| json!({"reply": format!("Attempt {n}: here are the rows.\n\nDATA_PROPOSAL:\n{{\"operations\": [{{\"action\": \"add\", \"data\": {n}}}]}}\n\nApply them when ready.")});
    let engine = scripted(
        &store,
        &dir,
        &json!([
            {"attempts": [broken(1), broken(2), broken(3)]},
            {"attempts": [{"valid": true}]},
            {"attempts": [broken(4), broken(5), broken(6)]}
        ]),
    );
    let conversation = engine
        .start_conversation("ada", "table-chat", json!({"page": "table_view"}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "Add three books", None)
        .await
        .unwrap();
    assert!(outcome.fallback);
    assert_eq!(outcome.attempts, 3);
    assert_eq!(
        outcome.value,
        json!({"message": "Attempt 3: here are the rows.\n\nApply them when ready.", "suggested_values": null, "suggested_actions": null, "payload": null})
    );
    let stored = stored_fallback(&engine, &conversation.id, &outcome.turn_id).await;
    assert_eq!(stored.data.value.as_ref(), Some(&outcome.value));
    assert_eq!(outcome.safety.as_ref().and_then(|s| s.level.clone()), None);
    assert_not_blocked(&engine, &conversation.id).await;
    // The conversation goes on.
    let next = engine.send(&conversation.id, "Thanks", None).await.unwrap();
    assert!(!next.fallback);
    // Streamed, the fallback is the turn's `message_complete`.
    let (result, seen) = crate::streamed_turn(&engine, &conversation.id, "Add two more").await;
    let streamed = result.unwrap();
    assert!(streamed.fallback);
    assert_eq!(
        streamed.value["message"],
        "Attempt 6: here are the rows.\n\nApply them when ready."
    );
    let complete = seen
        .iter()
        .find(|e| e.name() == "message_complete")
        .unwrap();
    let data: Value = serde_json::from_str(&complete.data()).unwrap();
    assert_eq!(data["fallback"], true, "{data}");
    assert_eq!(data["value"], streamed.value, "{data}");
}

async fn question_cards_fall_back_to_the_plain_text(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let bad_call = json!({"fault": {"kind": "missing_required"}});
    let engine = scripted(
        &store,
        &dir,
        &json!([{"attempts": [bad_call, bad_call, bad_call]}]),
    );
    let conversation = engine
        .start_conversation("ada", "question-cards", json!({"mode": "clarification"}))
        .await
        .unwrap();
    let outcome = engine
        .send(&conversation.id, "Make it work offline", None)
        .await
        .unwrap();
    assert!(outcome.fallback);
    assert_eq!(outcome.value["question_cards"], json!([]));
    let message = outcome.value["message"].as_str().unwrap();
    assert!(!message.trim().is_empty(), "{}", outcome.value);
    let contract = engine.contracts().get("question-cards").unwrap();
    assert!(contract.validate(&outcome.value).is_empty());
    stored_fallback(&engine, &conversation.id, &outcome.turn_id).await;
    assert_not_blocked(&engine, &conversation.id).await;
}

async fn topic_analysis_falls_back_keeping_the_topic_state(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    // Readable, but a keyword's confidence is out of range.
    let broken = json!({"reply": "<llmResponse><response>Put a little aside every week.</response><analysis><subject name=\"savings\" description=\"Saving money\" isNew=\"true\"><keyword term=\"budget\" confidence=\"9\"/></subject><summaryUpdate>Broken.</summaryUpdate></analysis></llmResponse>"});
    let engine = scripted(
        &store,
        &dir,
        &json!([
            {"attempts": [{"valid": true}]},
            {"attempts": [broken, {"reply": "no XML at all"}, {"reply": "<llmResponse>"}]},
            {"attempts": [{"valid": true}]}
        ]),
    );
    let conversation = engine
        .start_conversation("ada", "topic-analysis", json!({}))
        .await
        .unwrap();
    let first = engine
        .send(&conversation.id, "How do I save for a bike?", None)
        .await
        .unwrap();
    assert!(!first.fallback);
    let state = |engine: &Engine| {
        let engine = engine.clone();
        let id = conversation.id.clone();
        async move {
            engine
                .store()
                .conversation(&id)
                .await
                .unwrap()
                .unwrap()
                .state
        }
    };
    let before = state(&engine).await;
    assert_eq!(before["topic"]["updates"], 1, "{before}");

    let outcome = engine
        .send(&conversation.id, "And for a helmet?", None)
        .await
        .unwrap();
    assert!(outcome.fallback);
    // The one readable answer, with an analysis that adds nothing.
    assert_eq!(
        outcome.value,
        json!({"response": "Put a little aside every week.", "analysis": {"summaryUpdate": ""}})
    );
    stored_fallback(&engine, &conversation.id, &outcome.turn_id).await;
    assert_eq!(
        state(&engine).await,
        before,
        "the fallback left the topic state"
    );
    assert_not_blocked(&engine, &conversation.id).await;

    // The next query still carries the subjects of the first turn.
    let third = engine.send(&conversation.id, "Thanks", None).await.unwrap();
    assert!(!third.fallback);
    let after = state(&engine).await;
    assert_eq!(after["topic"]["updates"], 2, "{after}");
    let all = engine
        .store()
        .messages(&conversation.id, View::Admin)
        .await
        .unwrap();
    let sent = all
        .iter()
        .find(|m| m.data.turn_id == third.turn_id && m.data.role == MessageRole::Assistant)
        .and_then(|m| m.data.request_payload.clone())
        .unwrap();
    let query = sent["body"]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    for subject in before["topic"]["active_subjects"].as_array().unwrap() {
        assert!(
            query.contains(subject.as_str().unwrap()),
            "{subject} not in {query}"
        );
    }
}
