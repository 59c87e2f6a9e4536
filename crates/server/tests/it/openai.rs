//! The OpenAI-compatible endpoint's wire shapes: the completion and models bodies, a request
//! without a model, an unknown model (404 `model_not_found`), and the 400 answers to bad
//! requests (each with its message).

use crate::api::{ADA, Harness};
use axum::http::StatusCode;
use serde_json::{Value, json};

fn hi(extra: Value) -> Value {
    let mut body = json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]});
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

#[tokio::test]
async fn completions_and_models_keep_their_openai_shape() {
    let h = Harness::new().await;
    let (status, body) = h
        .call(
            "POST",
            "/v1/chat/completions",
            Some(ADA),
            Some(hi(json!({}))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert!(
        body["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{body}"
    );
    assert_eq!(body["model"], "mock");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["logprobs"], Value::Null);
    assert!(
        choice.as_object().unwrap().contains_key("logprobs"),
        "{body}"
    );
    assert_eq!(choice["message"]["role"], "assistant");
    assert!(choice["message"]["content"].is_string(), "{body}");
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );

    let (status, list) = h.call("GET", "/v1/models", Some(ADA), None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["object"], "list");
    for model in list["data"].as_array().unwrap() {
        let keys: Vec<&String> = model.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["created", "id", "object", "owned_by"], "{model}");
        assert_eq!(
            (&model["object"], &model["created"], &model["owned_by"]),
            (&json!("model"), &json!(0), &json!("bridle"))
        );
    }
}

#[tokio::test]
async fn a_request_without_a_model_is_answered_by_the_default_model() {
    let h = Harness::new().await;
    for model in [None, Some(Value::Null)] {
        let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
        if let Some(model) = model {
            body["model"] = model;
        }
        let (status, answer) = h
            .call("POST", "/v1/chat/completions", Some(ADA), Some(body))
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert!(!answer["model"].as_str().unwrap().is_empty(), "{answer}");
    }
}

#[tokio::test]
async fn an_unknown_model_is_404_model_not_found_never_another_model() {
    let h = Harness::new().await;
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let enforced = json!({"type": "json_schema", "json_schema": {"name": "a", "schema": schema}});
    // Passed through and enforced alike: OpenAI's answer, naming the parameter.
    for extra in [json!({}), json!({"response_format": enforced})] {
        let mut body = hi(extra);
        body["model"] = json!("gpt-4o");
        let (status, answer) = h
            .call("POST", "/v1/chat/completions", Some(ADA), Some(body))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
        let error = &answer["error"];
        assert_eq!(error["type"], "invalid_request_error", "{answer}");
        assert_eq!(error["code"], "model_not_found", "{answer}");
        assert_eq!(error["param"], "model", "{answer}");
        assert!(
            error["message"].as_str().unwrap().contains("\"gpt-4o\""),
            "{answer}"
        );
    }
    // Nothing ran: no conversation was recorded for the refused calls.
    let (_, list) = h.call("GET", "/v1/conversations", Some(ADA), None).await;
    assert_eq!(list["total"], 0, "{list}");
}

#[tokio::test]
async fn the_completion_names_the_configured_model_and_the_upstream_one_in_a_header() {
    let h = Harness::new().await;
    let (status, headers, body) = complete(&h, &[], hi(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The built-in mock model is configured as `mock`; its provider calls it `bridle-mock`.
    assert_eq!(headers["x-bridle-upstream-model"], "bridle-mock");
    assert_eq!(body["model"], "mock", "{body}");
}

#[tokio::test]
async fn an_unmet_contract_with_a_fallback_answers_with_it_as_a_completion() {
    // Every attempt breaks selfhelp-response, whose manifest has a fallback.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let invalid = json!({"reply": "not json at all"});
    let turn = json!({"attempts": [invalid, invalid, invalid, invalid, invalid]});
    std::fs::write(&script, json!({"turns": [turn]}).to_string()).unwrap();
    let h = Harness::with_config(&format!(
        "[providers.mock]\nkind = \"mock\"\nscript = {:?}\n",
        script.display().to_string()
    ))
    .await;
    let contract = [("x-bridle-contract", "selfhelp-response")];
    let (status, headers, body) = complete(&h, &contract, hi(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["x-bridle-fallback"], "true");
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["type"], "response", "{content}");
    // The checked value rides along in the `bridle` object.
    let bridle = &body["bridle"];
    assert_eq!(bridle["value"], content, "{body}");
    assert_eq!(bridle["fallback"], true, "{body}");
    assert_eq!(bridle["contract"], "selfhelp-response", "{body}");
    assert_eq!(bridle["attempts"], 3, "{body}");
    assert!(!body.to_string().contains("not json at all"), "{body}");
}

/// `POST /v1/chat/completions` of `body` with `headers` added (ADA's key); the answer's status,
/// headers and JSON body.
async fn complete(
    h: &Harness,
    headers: &[(&str, &str)],
    body: Value,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let mut request = axum::http::Request::builder()
        .method("POST")
        .uri("/v1/chat/completions")
        .header("authorization", format!("Bearer {ADA}"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = h.respond(request).await;
    let (parts, body) = response.into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .unwrap()
        .to_bytes();
    (
        parts.status,
        parts.headers,
        serde_json::from_slice(&bytes).unwrap(),
    )
}

/// An enforced call of `question-cards` with `headers` added and `extra` in the body.
async fn cards_call(h: &Harness, headers: &[(&str, &str)], extra: Value) -> (StatusCode, Value) {
    let mut with_contract = vec![("x-bridle-contract", "question-cards")];
    with_contract.extend_from_slice(headers);
    let (status, _, body) = complete(h, &with_contract, hi(extra)).await;
    (status, body)
}

#[tokio::test]
async fn an_enforced_call_gets_its_context_from_the_header_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let options =
        json!({"reply": "Which part of the day is hardest?\nA) Mornings\nB) Evenings\nC) Nights"});
    let turns: Vec<Value> = (0..4).map(|_| json!({"attempts": [options]})).collect();
    std::fs::write(&script, json!({"turns": turns}).to_string()).unwrap();
    let h = Harness::with_config(&format!(
        "[providers.mock]\nkind = \"mock\"\nscript = {:?}\n",
        script.display().to_string()
    ))
    .await;
    // Without a context the reply is plain text; in discovery mode its options are a card —
    // given by the header, or by the request's metadata.
    let (status, plain) = cards_call(&h, &[], json!({})).await;
    assert_eq!(status, StatusCode::OK, "{plain}");
    assert!(
        plain["bridle"]["value"]["question_cards"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{plain}"
    );
    let discovery = [(
        "x-bridle-context",
        r#"{"mode": "discovery", "page": "home"}"#,
    )];
    let (status, by_header) = cards_call(&h, &discovery, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{by_header}");
    let cards = by_header["bridle"]["value"]["question_cards"]
        .as_array()
        .unwrap();
    assert_eq!(cards.len(), 1, "{by_header}");
    let (status, by_metadata) =
        cards_call(&h, &[], json!({"metadata": {"mode": "discovery"}})).await;
    assert_eq!(status, StatusCode::OK, "{by_metadata}");
    assert_eq!(
        by_metadata["bridle"]["value"]["question_cards"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The context is recorded with the call's conversation.
    let id = by_header["bridle"]["conversation_id"].as_str().unwrap();
    let (_, stored) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(crate::api::ADMIN),
            None,
        )
        .await;
    assert_eq!(
        stored["conversation"]["context"],
        json!({"mode": "discovery", "page": "home", "source": "openai"}),
        "{stored}"
    );
    // A header that is not an object of strings is refused, naming the header.
    for bad in [
        r#"["discovery"]"#,
        r#"{"mode": 1}"#,
        "not json",
        r#"{"prompt": "x"}"#,
    ] {
        let (status, body) = cards_call(&h, &[("x-bridle-context", bad)], json!({})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
}

#[tokio::test]
async fn bad_requests_are_400_with_a_message_naming_the_fault() {
    let h = Harness::new().await;
    let schema = json!({"type": "object"});
    let cases = [
        (json!({"messages": []}), "messages must not be empty"),
        (
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            "messages[0]: a tool message needs the tool_call_id it answers",
        ),
        (
            json!({"messages": [{"role": "function", "name": "f", "content": "x"}]}),
            "unsupported message role \"function\"",
        ),
        (
            json!({"messages": [{"role": "robot", "content": "x"}]}),
            "unsupported message role \"robot\"",
        ),
        (
            json!({"messages": [{"role": "user"}]}),
            "messages[0]: content is missing",
        ),
        (
            json!({"messages": [{"role": "user", "content": 5}]}),
            "messages[0].content",
        ),
        (
            json!({"response_format": {"type": "json_schema"}}),
            "response_format.json_schema is missing",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
            "response_format.json_schema.schema is missing",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "", "schema": schema}}}),
            "response_format.json_schema.name must be 1-64 letters, digits, '_' or '-'",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": 7, "schema": schema}}}),
            "response_format.json_schema.name",
        ),
        (
            json!({"response_format": {"type": "xml"}}),
            "unsupported response_format type \"xml\"",
        ),
    ];
    for (extra, message) in cases {
        let (status, body) = h
            .call(
                "POST",
                "/v1/chat/completions",
                Some(ADA),
                Some(hi(extra.clone())),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}: {body}");
        let text = body["error"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{extra}: {text}");
    }
}

#[tokio::test]
async fn streamed_chunks_keep_their_frames() {
    let h = Harness::new().await;
    let body = hi(json!({"stream": true, "stream_options": {"include_usage": true}}));
    let (status, answer) = h
        .call("POST", "/v1/chat/completions", Some(ADA), Some(body))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let text = answer.as_str().unwrap();
    let frames: Vec<&str> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .collect();
    assert_eq!(frames.last(), Some(&"[DONE]"), "{text}");
    let chunks: Vec<Value> = frames[..frames.len() - 1]
        .iter()
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    let (id, created) = (&chunks[0]["id"], &chunks[0]["created"]);
    let frame = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": "mock", "system_fingerprint": null, "choices": choices});
    let choice = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    assert_eq!(
        chunks[0],
        frame(choice(
            json!({"role": "assistant", "content": ""}),
            Value::Null
        ))
    );
    let n = chunks.len();
    assert_eq!(chunks[n - 2], frame(choice(json!({}), json!("stop"))));
    let mut usage = frame(json!([]));
    usage["usage"] = chunks[n - 1]["usage"].clone();
    assert_eq!(chunks[n - 1], usage);
    let u = &usage["usage"];
    assert_eq!(
        u.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["completion_tokens", "prompt_tokens", "total_tokens"]
    );
    for chunk in &chunks[1..n - 2] {
        let content = &chunk["choices"][0]["delta"]["content"];
        assert_eq!(
            *chunk,
            frame(choice(json!({"content": content}), Value::Null))
        );
    }
}
