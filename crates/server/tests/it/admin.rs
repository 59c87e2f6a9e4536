//! The admin API: roles, filters, pagination, every attempt with its payload, unblocking.

use crate::api::{ADA, ADMIN, BOB, Harness};
use axum::http::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn admins_see_every_attempt_with_its_payload() {
    let h = Harness::with_config(
        "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.0\nfaults = [{ kind = \"wrong_key\" }]",
    )
    .await;
    let id = h.conversation(ADA).await;
    let (status, sent) = h
        .call(
            "POST",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            Some(json!({"content": "Hello"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["attempts"], 2);
    let (_, detail) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    let messages = detail["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "the user message and both attempts");
    assert_eq!(messages[1]["is_validated"], false);
    assert!(!messages[1]["violations"].as_array().unwrap().is_empty());
    assert!(messages[1]["request_payload"]["body"]["messages"].is_array());
    assert_eq!(messages[2]["is_validated"], true);
    // The owner still sees only the validated reply.
    let (_, history) = h
        .call(
            "GET",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            None,
        )
        .await;
    assert_eq!(history["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn listing_filters_and_paginates() {
    let h = Harness::with_config(
        "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.0\nfaults = [{ kind = \"wrong_enum\" }]",
    )
    .await;
    let ada = h.conversation(ADA).await;
    h.call(
        "POST",
        &format!("/v1/conversations/{ada}/messages"),
        Some(ADA),
        Some(json!({"content": "unusual words zebra"})),
    )
    .await;
    for _ in 0..4 {
        h.conversation(BOB).await;
    }
    let list = |query: &'static str| {
        let h = &h;
        async move {
            let (status, body) = h
                .call(
                    "GET",
                    &format!("/admin/v1/conversations?{query}"),
                    Some(ADMIN),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{query}: {body}");
            body
        }
    };
    assert_eq!(list("").await["total"], 5);
    assert_eq!(list("user=bob").await["total"], 4);
    assert_eq!(list("has_invalid=true").await["total"], 1);
    assert_eq!(
        list("has_invalid=true").await["items"][0]["id"],
        ada.as_str()
    );
    assert_eq!(list("q=zebra").await["total"], 1);
    assert_eq!(list("blocked=true").await["total"], 0);
    let page = list("limit=2&offset=4").await;
    assert_eq!(
        (
            page["total"].as_u64(),
            page["items"].as_array().unwrap().len()
        ),
        (Some(5), 1)
    );
    let (status, body) = h
        .call("GET", "/admin/v1/conversations?bogus=1", Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn unblocking_lets_the_conversation_continue() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    h.state
        .engine
        .store()
        .set_status(&id, bridle_engine::store::ConversationStatus::Blocked)
        .await
        .unwrap();
    let path = format!("/v1/conversations/{id}/messages");
    assert_eq!(
        h.call("POST", &path, Some(ADA), Some(json!({"content": "hi"})))
            .await
            .0,
        StatusCode::LOCKED
    );
    let (status, body) = h
        .call(
            "POST",
            &format!("/admin/v1/conversations/{id}/unblock"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        h.call("POST", &path, Some(ADA), Some(json!({"content": "hi"})))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        h.call(
            "POST",
            "/admin/v1/conversations/nope/unblock",
            Some(ADMIN),
            None
        )
        .await
        .0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_emergency_blocks_until_an_admin_unblocks() {
    let dir = tempfile::tempdir().unwrap();
    let emergency = json!({"type": "response",
        "safety": {"is_safe": false, "danger_level": "emergency", "detected_concerns": ["suicide"], "requires_intervention": true, "safety_message": "You matter."},
        "content": {"text_blocks": [{"type": "error", "content": "Please call for help now."}]},
        "metadata": {"model": "m", "language": "en"}});
    let script = json!({"turns": [{"attempts": [{"reply": emergency.to_string()}]}]});
    let path = dir.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let h = Harness::with_config(&format!(
        "[providers.mock]\nkind = \"mock\"\nscript = {:?}",
        path.display().to_string()
    ))
    .await;
    let id = h.conversation(ADA).await;
    let messages = format!("/v1/conversations/{id}/messages");
    let (status, body) = h
        .call(
            "POST",
            &messages,
            Some(ADA),
            Some(json!({"content": "I want to end it"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["safety"]["blocked"], true, "{body}");
    assert!(
        body["safety"]["crisis_resources"]
            .as_str()
            .unwrap()
            .contains("112")
    );
    // Later messages get the blocked answer; the model is not called.
    let (status, body) = h
        .call(
            "POST",
            &messages,
            Some(ADA),
            Some(json!({"content": "hello?"})),
        )
        .await;
    assert_eq!(status, StatusCode::LOCKED, "{body}");
    let (_, detail) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(detail["conversation"]["status"], "blocked");
    let events = detail["safety_events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["action"], "block");
    assert_eq!(
        detail["messages"].as_array().unwrap().len(),
        2,
        "the refused message was not stored nor sent"
    );
    assert_eq!(
        h.call(
            "POST",
            &format!("/admin/v1/conversations/{id}/unblock"),
            Some(ADMIN),
            None
        )
        .await
        .0,
        StatusCode::OK
    );
    assert_eq!(
        h.call(
            "POST",
            &messages,
            Some(ADA),
            Some(json!({"content": "thanks"}))
        )
        .await
        .0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn stats_count_turns_attempts_rules_and_repairs() {
    let h = Harness::with_config(
        "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.0\nfaults = [{ kind = \"wrong_enum\" }]",
    )
    .await;
    let id = h.conversation(ADA).await;
    for text in ["one", "two"] {
        let (status, _) = h
            .call(
                "POST",
                &format!("/v1/conversations/{id}/messages"),
                Some(ADA),
                Some(json!({"content": text})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(
        h.call("GET", "/admin/v1/stats", Some(ADA), None).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, stats) = h
        .call("GET", "/admin/v1/stats?bucket_ms=60000", Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(stats["turns"], 2);
    assert_eq!(stats["attempts"], 4, "each turn needed a retry");
    assert_eq!(stats["invalid_attempts"], 2);
    assert_eq!(stats["compliance"]["compliance_rate"], 1.0);
    assert_eq!(
        stats["attempts_per_turn"],
        json!([{"attempts": 2, "turns": 2}])
    );
    assert_eq!(stats["top_violated_rules"][0]["rule"], "enum");
    assert!(stats["tokens"]["retries_in"].as_u64().unwrap() > 0);
    let (_, none) = h
        .call("GET", "/admin/v1/stats?contract=other", Some(ADMIN), None)
        .await;
    assert_eq!(none["turns"], 0);
}

#[tokio::test]
async fn attempts_purged_by_retention_keep_their_outcome_and_cannot_be_replayed() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    h.call(
        "POST",
        &format!("/v1/conversations/{id}/messages"),
        Some(ADA),
        Some(json!({"content": "Hello"})),
    )
    .await;
    let everything = bridle_engine::store::PurgeRange {
        from: 0,
        before: i64::MAX,
        limit: 100,
    };
    let purged = h
        .state
        .engine
        .store()
        .purge_payloads(everything)
        .await
        .unwrap();
    assert_eq!(purged.count, 1);

    let (_, detail) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    let attempt = &detail["messages"][1];
    assert_eq!(attempt["request_payload"], Value::Null, "{attempt}");
    assert_eq!(attempt["raw_response"], Value::Null, "{attempt}");
    assert!(attempt["payload_purged_at"].is_i64(), "{attempt}");
    assert_eq!(
        attempt["is_validated"], true,
        "the outcome stays: {attempt}"
    );
    assert!(attempt["value"].is_object(), "{attempt}");

    let message = attempt["id"].as_i64().unwrap();
    let (status, body) = h
        .call(
            "POST",
            &format!("/admin/v1/messages/{message}/replay"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("purged by the retention policy"),
        "{body}"
    );
}

#[tokio::test]
async fn admins_replay_an_attempt() {
    let h = Harness::with_config(
        "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.0\nfaults = [{ kind = \"wrong_key\" }]",
    )
    .await;
    let id = h.conversation(ADA).await;
    h.call(
        "POST",
        &format!("/v1/conversations/{id}/messages"),
        Some(ADA),
        Some(json!({"content": "Hello"})),
    )
    .await;
    let (_, detail) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    let messages = detail["messages"].as_array().unwrap();
    let (user, failed, passed) = (
        messages[0]["id"].as_i64().unwrap(),
        messages[1]["id"].as_i64().unwrap(),
        messages[2]["id"].as_i64().unwrap(),
    );
    let replay = |message: i64, key: Option<&'static str>| {
        let h = &h;
        async move {
            h.call(
                "POST",
                &format!("/admin/v1/messages/{message}/replay"),
                key,
                None,
            )
            .await
        }
    };
    assert_eq!(replay(failed, None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(replay(failed, Some(ADA)).await.0, StatusCode::FORBIDDEN);

    let (status, body) = replay(failed, Some(ADMIN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["message_id"], failed);
    assert_eq!(body["conversation_id"], id.as_str());
    assert_eq!(body["provider"], "mock");
    assert_eq!(body["original"]["valid"], false);
    assert_eq!(
        body["check"]["valid"], false,
        "the fault reproduces: {body}"
    );
    assert!(body["content"].is_string());
    let (status, body) = replay(passed, Some(ADMIN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["check"]["valid"], true, "{body}");

    let (status, body) = replay(user, Some(ADMIN)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a model attempt")
    );
    assert_eq!(replay(i64::MAX, Some(ADMIN)).await.0, StatusCode::NOT_FOUND);
    let (status, _) = h
        .call("POST", "/admin/v1/messages/abc/replay", Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Nothing was added to the conversation.
    let (_, after) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(after["messages"].as_array().unwrap().len(), 3);
}
