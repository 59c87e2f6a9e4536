//! `POST /v1/conversations/{id}/messages` with a `context` for its turn: merged over the
//! conversation's, stored with the user's message (the admin view shows it), refused when it is
//! not an object of strings (`app_state`: an object). (Its size cap and the SSE variant:
//! `streaming.rs`.)

use crate::api::{ADA, ADMIN, Harness};

/// A question-cards conversation on page "home" (a contract without a safety policy, so no
/// turn blocks it).
async fn conversation(h: &Harness) -> String {
    let (status, body) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "question-cards", "context": {"page": "home", "mode": "discovery"}, "prompt": "Be brief."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_owned()
}
use axum::http::StatusCode;
use serde_json::{Value, json};

async fn user_contexts(h: &Harness, id: &str) -> Vec<Value> {
    let (status, body) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["context"].clone())
        .collect()
}

#[tokio::test]
async fn a_message_brings_its_turns_context_and_keeps_it() {
    let h = Harness::new().await;
    let id = conversation(&h).await;
    let path = format!("/v1/conversations/{id}/messages");
    let (status, body) = h
        .call(
            "POST",
            &path,
            Some(ADA),
            Some(
                json!({"content": "Hello", "context": {"mode": "normal", "app_state": {"tab": 2}}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = h
        .call("POST", &path, Some(ADA), Some(json!({"content": "Again"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The first turn ran on its own page; the second on the conversation's. The conversation's
    // prompt stays with the conversation.
    assert_eq!(
        user_contexts(&h, &id).await,
        [
            json!({"page": "home", "mode": "normal", "app_state": {"tab": 2}}),
            json!({"page": "home", "mode": "discovery"})
        ]
    );
    // The user's own view shows the same: each message with the context its turn ran under.
    let (status, body) = h.call("GET", &path, Some(ADA), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let users: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2, "{body}");
    assert_eq!(users[0]["context"]["app_state"], json!({"tab": 2}));
    assert_eq!(users[1]["context"]["mode"], "discovery");
    assert!(users[0].get("answer").is_none(), "{body}");
}

#[tokio::test]
async fn a_bad_message_context_is_refused_and_nothing_is_stored() {
    let h = Harness::new().await;
    let id = conversation(&h).await;
    let path = format!("/v1/conversations/{id}/messages");
    for (context, status) in [
        (json!({"page": 3}), StatusCode::BAD_REQUEST),
        (json!({"app_state": "rows"}), StatusCode::BAD_REQUEST),
        (json!(["page"]), StatusCode::BAD_REQUEST),
    ] {
        let (got, body) = h
            .call(
                "POST",
                &path,
                Some(ADA),
                Some(json!({"content": "Hi", "context": context})),
            )
            .await;
        assert_eq!(got, status, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert!(user_contexts(&h, &id).await.is_empty());
}

#[tokio::test]
async fn a_card_is_answered_with_ids_over_http() {
    let h = Harness::new().await;
    let id = conversation(&h).await;
    let path = format!("/v1/conversations/{id}/messages");
    let (status, first) = h
        .call(
            "POST",
            &path,
            Some(ADA),
            Some(json!({"content": "I want an app"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let card = &first["value"]["question_cards"][0];
    let question_id = card["question_id"].clone();
    let refused = [
        json!({"answer": {"question_id": "q_nope", "option_ids": ["opt_1"]}}),
        json!({"answer": {"question_id": question_id, "option_ids": ["opt_9"]}}),
        json!({"answer": {"question_id": question_id}}),
        json!({"content": "x", "answer": {"question_id": question_id, "option_ids": ["opt_1"]}}),
    ];
    for body in refused {
        let (status, answer) = h.call("POST", &path, Some(ADA), Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
    }
    let (status, body) = h
        .call(
            "POST",
            &path,
            Some(ADA),
            Some(json!({"answer": {"question_id": question_id, "option_ids": ["opt_1"]}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, history) = h.call("GET", &path, Some(ADA), None).await;
    let users: Vec<&Value> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2, "the refused answers left nothing behind");
    let label = card["options"][0]["label"].as_str().unwrap();
    assert!(users[1]["content"].as_str().unwrap().ends_with(label));
    // ... and the user's view keeps the answer's ids, so a page can show the card answered.
    assert_eq!(
        users[1]["answer"],
        json!([{"question_id": question_id, "option_ids": ["opt_1"]}]),
        "{history}"
    );
}
