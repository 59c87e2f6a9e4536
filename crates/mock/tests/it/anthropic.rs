//! `POST /v1/messages`: text and forced-tool replies, plain and streamed.

use crate::*;
use bridle_mock::Fault;

fn body(stream: bool) -> Value {
    json!({
        "model": "claude-mock",
        "max_tokens": 2048,
        "system": instructions(),
        "messages": [{"role": "user", "content": "I feel tired all the time."}],
        "stream": stream,
    })
}

fn tool_body(stream: bool) -> Value {
    json!({
        "model": "claude-mock",
        "max_tokens": 2048,
        "system": [{"type": "text", "text": instructions()}],
        "messages": [{"role": "user", "content": "Help me relax."}],
        "tools": [{"name": "reply", "description": "Send the reply", "input_schema": selfhelp().schema().raw()}],
        "tool_choice": {"type": "tool", "name": "reply"},
        "stream": stream,
    })
}

#[tokio::test]
async fn a_message_meets_the_named_contract_and_streams_the_same_text() {
    let server = start(MockConfig::new().with_seed(11)).await;
    let reply = post(&server, "/v1/messages", &body(false)).await;
    assert_eq!(reply.status, 200);
    let message = reply.body;
    assert_eq!(
        (message["type"].as_str(), message["role"].as_str()),
        (Some("message"), Some("assistant"))
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["content"][0]["type"], "text");
    let text = message["content"][0]["text"].as_str().unwrap();
    assert!(is_valid(text));
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 100);

    let (events, clean) = stream(&server, "/v1/messages", &body(true)).await;
    assert!(clean);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names[1], "content_block_start");
    assert_eq!(
        &names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    for event in &events {
        assert_eq!(data(event)["type"].as_str(), event.name.as_deref());
    }
    let streamed: String = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .map(|e| {
            let d = data(e);
            assert_eq!(d["delta"]["type"], "text_delta");
            d["delta"]["text"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(streamed, text);
    let delta = data(&events[events.len() - 2]);
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(
        delta["usage"]["output_tokens"],
        message["usage"]["output_tokens"]
    );
}

#[tokio::test]
async fn a_forced_tool_gets_a_tool_use_block_plain_and_streamed() {
    let server = start(MockConfig::new().with_seed(5)).await;
    let reply = post(&server, "/v1/messages", &tool_body(false)).await;
    let message = reply.body;
    assert_eq!(message["stop_reason"], "tool_use");
    let block = &message["content"][0];
    assert_eq!(
        (block["type"].as_str(), block["name"].as_str()),
        (Some("tool_use"), Some("reply"))
    );
    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
    assert!(selfhelp().validate(&block["input"]).is_empty());

    let (events, clean) = stream(&server, "/v1/messages", &tool_body(true)).await;
    assert!(clean);
    let start = data(&events[1]);
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["input"], json!({}));
    let partial: String = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .map(|e| {
            let d = data(e);
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        block["input"]
    );
    assert_eq!(
        data(&events[events.len() - 2])["delta"]["stop_reason"],
        "tool_use"
    );
}

#[tokio::test]
async fn a_forced_tool_only_gets_faults_that_keep_it_json() {
    let config = MockConfig::new().with_fault_rate(1.0).with_faults(vec![
        Fault::Fence,
        Fault::Truncate,
        Fault::WrongKey,
    ]);
    let server = start(config).await;
    for _ in 0..3 {
        let reply = post(&server, "/v1/messages", &tool_body(false)).await;
        let input = &reply.body["content"][0]["input"];
        assert!(input.is_object());
        assert!(!selfhelp().validate(input).is_empty());
    }
    for logged in server.requests() {
        assert!(
            logged.answer.fault.unwrap().is_structural(),
            "{:?}",
            logged.answer
        );
    }
}
