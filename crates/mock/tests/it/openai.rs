//! `POST /v1/chat/completions`: completions, streams, `response_format`, plain text.

use crate::*;
use bridle_mock::Fault;

fn conversation(user: &str) -> Value {
    json!([{"role": "system", "content": instructions()}, {"role": "user", "content": user}])
}

#[tokio::test]
async fn a_completion_meets_the_named_contract() {
    let server = start(MockConfig::new().with_seed(3)).await;
    let reply = post(
        &server,
        "/v1/chat/completions",
        &openai_body(conversation("I can't sleep.")),
    )
    .await;
    assert_eq!(reply.status, 200);
    let body = reply.body;
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-mock");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(is_valid(content), "{content}");
    let value: Value = serde_json::from_str(content).unwrap();
    assert_eq!(value["metadata"]["model"], "gpt-mock");
    let usage = &body["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > instructions().len() as u64 / 5);
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
}

#[tokio::test]
async fn the_stream_assembles_to_the_same_text_as_the_completion() {
    for seed in [1, 2, 3] {
        let server = start(MockConfig::new().with_seed(seed)).await;
        let plain = post(
            &server,
            "/v1/chat/completions",
            &openai_body(conversation("Hello")),
        )
        .await;
        let expected = plain.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut body = openai_body(conversation("Hello"));
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let (events, clean) = stream(&server, "/v1/chat/completions", &body).await;
        assert!(clean);
        assert_eq!(events.last().unwrap().data, "[DONE]");
        let chunks: Vec<Value> = events[..events.len() - 1].iter().map(data).collect();
        assert!(
            chunks
                .iter()
                .all(|c| c["object"] == "chat.completion.chunk")
        );
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, expected);
        assert!(chunks.len() > 10, "the text comes in small pieces");
        let finish: Vec<&Value> = chunks
            .iter()
            .map(|c| &c["choices"][0]["finish_reason"])
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(finish, [&json!("stop")]);
        let usage = chunks.last().unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"], plain.body["usage"]);
    }
}

#[tokio::test]
async fn response_format_json_schema_is_met() {
    let schema = json!({"type": "object", "required": ["city", "population"], "additionalProperties": false,
        "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}}});
    let server = start(MockConfig::new()).await;
    let mut body = openai_body(json!([{"role": "user", "content": "Biggest city?"}]));
    body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "city", "schema": schema.clone(), "strict": true}});
    let reply = post(&server, "/v1/chat/completions", &body).await;
    let content = reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    let contract = Contract::from_schema("city", schema).unwrap();
    assert!(
        contract.check(content, &Context::new()).is_valid(),
        "{content}"
    );
}

#[tokio::test]
async fn without_a_schema_the_model_just_talks() {
    let server = start(MockConfig::new()).await;
    let body = openai_body(json!([{"role": "user", "content": "How are you?"}]));
    let reply = post(&server, "/v1/chat/completions", &body).await;
    let content = reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(serde_json::from_str::<Value>(content).is_err());
    assert!(content.len() > 10);
}

#[tokio::test]
async fn truncation_ends_with_finish_reason_length() {
    let config = MockConfig::new()
        .with_fault_rate(1.0)
        .with_faults(vec![Fault::Truncate]);
    let server = start(config).await;
    let reply = post(
        &server,
        "/v1/chat/completions",
        &openai_body(conversation("Hi")),
    )
    .await;
    assert_eq!(reply.body["choices"][0]["finish_reason"], "length");
    let content = reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    let checked = selfhelp().check(content, &Context::new());
    assert_eq!(checked.violations[0].rule.as_str(), "truncated");
    let logged = server.requests();
    assert_eq!(
        logged[0].answer.target.as_deref(),
        Some(checked.violations[0].path.as_str())
    );
}
