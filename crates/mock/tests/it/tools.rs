//! Tools over HTTP in both wire formats: a forced call (OpenAI's named and `required`
//! `tool_choice`, Anthropic's `any` and a forced tool that is not Bridle's structured output)
//! answered whole and streamed, a call a script step asks for under `auto`, the round trip
//! call → tool result → answer, the request log's calls, and the 400s for tools not offered.

use crate::*;
use bridle_mock::{LoggedRequest, Script, ScriptCall, ScriptTurn, Step};

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "required": ["city", "unit"],
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"enum": ["celsius", "fahrenheit"]}
        },
        "additionalProperties": false
    })
}

fn valid_weather(arguments: &Value) -> bool {
    Contract::from_schema("arguments", weather_schema())
        .unwrap()
        .check(&arguments.to_string(), &Context::new())
        .is_valid()
}

fn openai_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                          "parameters": weather_schema()}}
    ])
}

fn anthropic_tools() -> Value {
    json!([
        {"name": "get_weather", "description": "Weather now", "input_schema": weather_schema()},
        {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}
    ])
}

fn openai_request(messages: Value, choice: Value, stream: bool) -> Value {
    json!({"model": "gpt-mock", "messages": messages, "tools": openai_tools(),
           "tool_choice": choice, "stream": stream})
}

fn anthropic_request(messages: Value, choice: Value, stream: bool) -> Value {
    json!({"model": "claude-mock", "max_tokens": 500, "messages": messages,
           "tools": anthropic_tools(), "tool_choice": choice, "stream": stream})
}

fn weather_question() -> Value {
    json!([{"role": "user", "content": "What is the weather in Oslo?"}])
}

fn named() -> Value {
    json!({"type": "function", "function": {"name": "get_weather"}})
}

/// A streamed OpenAI call put together: (id, name, arguments text, finish reason).
fn openai_streamed_call(events: &[Event]) -> (String, String, String, String) {
    let (mut id, mut name, mut arguments, mut finish) =
        (String::new(), String::new(), String::new(), String::new());
    assert_eq!(events.last().unwrap().data, "[DONE]");
    for event in events.iter().filter(|e| e.data != "[DONE]") {
        let chunk = data(event);
        let choice = &chunk["choices"][0];
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = reason.to_owned();
        }
        for piece in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(piece["index"], 0);
            if let Some(first) = piece["id"].as_str() {
                assert!(id.is_empty(), "the id comes once");
                id = first.to_owned();
                assert_eq!(piece["type"], "function");
            }
            name.push_str(piece["function"]["name"].as_str().unwrap_or(""));
            arguments.push_str(piece["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    (id, name, arguments, finish)
}

#[tokio::test]
async fn openai_forced_functions_are_called_whole_and_streamed() {
    let server = start(MockConfig::new().with_seed(21)).await;
    let whole = post(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), named(), false),
    )
    .await;
    assert_eq!(whole.status, 200);
    let choice = &whole.body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(
        (&call["type"], &call["function"]["name"]),
        (&json!("function"), &json!("get_weather"))
    );
    let id = call["id"].as_str().unwrap();
    assert!(id.starts_with("call_"), "{id}");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(valid_weather(&arguments), "{arguments}");

    // Streamed: the id and name first, then the arguments in pieces — the same call.
    let (events, clean) = stream(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), named(), true),
    )
    .await;
    assert!(clean);
    let opening = data(&events[0]);
    assert_eq!(
        opening["choices"][0]["delta"].get("content"),
        Some(&Value::Null),
        "a call-only message's content is null, streamed too"
    );
    let (streamed_id, name, text, finish) = openai_streamed_call(&events);
    assert_eq!(
        (streamed_id.as_str(), name.as_str(), finish.as_str()),
        (id, "get_weather", "tool_calls")
    );
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), arguments);
    let argument_pieces = events
        .iter()
        .filter(|e| e.data.contains("\"arguments\":\"") && !e.data.contains("\"arguments\":\"\""))
        .count();
    assert!(argument_pieces > 1, "arguments come in several deltas");

    // `required`: the first tool; the log shows each call with the id it was sent with.
    let required = post(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), json!("required"), false),
    )
    .await;
    let first = &required.body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(first["function"]["name"], "get_time");
    let logged: Vec<LoggedRequest> = server.requests();
    assert_eq!(logged.len(), 3);
    assert_eq!(logged[0].answer.calls[0].id, id);
    assert_eq!(logged[0].answer.calls[0].arguments, arguments);
    assert_eq!(logged[2].answer.calls[0].name, "get_time");
}

#[tokio::test]
async fn openai_round_trip_call_then_result_then_answer() {
    let server = start(MockConfig::new().with_seed(5)).await;
    let call = post(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), named(), false),
    )
    .await;
    let message = call.body["choices"][0]["message"].clone();
    let id = message["tool_calls"][0]["id"].clone();
    let mut messages = weather_question();
    let history = messages.as_array_mut().unwrap();
    history.push(message);
    history.push(json!({"role": "tool", "tool_call_id": id, "content": "{\"temp\": 4}"}));
    for stream_it in [false, true] {
        let body = openai_request(Value::Array(history.clone()), json!("auto"), stream_it);
        if stream_it {
            let (events, clean) = stream(&server, "/v1/chat/completions", &body).await;
            assert!(clean);
            let (id, _, _, finish) = openai_streamed_call(&events);
            assert_eq!((id.as_str(), finish.as_str()), ("", "stop"));
        } else {
            let answer = post(&server, "/v1/chat/completions", &body).await;
            assert_eq!(answer.status, 200);
            let choice = &answer.body["choices"][0];
            assert_eq!(choice["finish_reason"], "stop");
            assert!(choice["message"].get("tool_calls").is_none());
            assert!(!choice["message"]["content"].as_str().unwrap().is_empty());
        }
    }
    // With Bridle's contract in the system prompt, the answer after the result meets it.
    history.insert(0, json!({"role": "system", "content": instructions()}));
    let body = openai_request(Value::Array(history.clone()), json!("auto"), false);
    let answer = post(&server, "/v1/chat/completions", &body).await;
    assert!(is_valid(
        answer.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
    ));
}

fn call_script(arguments: Option<Value>) -> MockConfig {
    MockConfig {
        script: Some(Script {
            turns: vec![ScriptTurn {
                attempts: vec![
                    Step::Call(ScriptCall {
                        name: "get_weather".into(),
                        arguments,
                    }),
                    Step::Reply("It is 4 degrees in Oslo.".into()),
                ],
            }],
        }),
        ..MockConfig::new().with_seed(8)
    }
}

#[tokio::test]
async fn anthropic_script_step_calls_under_auto_and_the_result_gets_the_next_entry() {
    let server = start(call_script(Some(
        json!({"city": "Oslo", "unit": "celsius"}),
    )))
    .await;
    let first = post(
        &server,
        "/v1/messages",
        &anthropic_request(weather_question(), json!({"type": "auto"}), false),
    )
    .await;
    assert_eq!(first.status, 200);
    assert_eq!(first.body["stop_reason"], "tool_use");
    let block = first.body["content"][0].clone();
    assert_eq!(
        first.body["content"].as_array().unwrap().len(),
        1,
        "a call, no text"
    );
    assert_eq!(
        (&block["type"], &block["name"]),
        (&json!("tool_use"), &json!("get_weather"))
    );
    assert_eq!(block["input"], json!({"city": "Oslo", "unit": "celsius"}));
    let id = block["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("toolu_"), "{id}");
    assert_eq!(server.requests()[0].answer.calls[0].id, id);

    let messages = json!([
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": first.body["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "4 degrees"}]}
    ]);
    let (events, clean) = stream(
        &server,
        "/v1/messages",
        &anthropic_request(messages, json!({"type": "auto"}), true),
    )
    .await;
    assert!(clean);
    let text: String = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .map(|e| data(e)["delta"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "It is 4 degrees in Oslo.");
    assert!(server.requests()[1].answer.calls.is_empty());
}

#[tokio::test]
async fn anthropic_forced_calls_stream_a_tool_use_block_with_input_json_deltas() {
    let server = start(MockConfig::new().with_seed(3)).await;
    // Bridle's instructions name a contract, but the forced tool is the client's own.
    let messages = json!([{"role": "user", "content": "Weather in Oslo?"}]);
    let mut body = anthropic_request(
        messages,
        json!({"type": "tool", "name": "get_weather"}),
        false,
    );
    body["system"] = json!(instructions());
    let whole = post(&server, "/v1/messages", &body).await;
    assert_eq!(whole.body["stop_reason"], "tool_use");
    let input = whole.body["content"][0]["input"].clone();
    assert!(valid_weather(&input), "{input}");

    for choice in [
        json!({"type": "tool", "name": "get_weather"}),
        json!({"type": "any"}),
    ] {
        body["tool_choice"] = choice.clone();
        body["stream"] = json!(true);
        let (events, clean) = stream(&server, "/v1/messages", &body).await;
        assert!(clean);
        let start = events
            .iter()
            .find(|e| e.name.as_deref() == Some("content_block_start"))
            .map(data)
            .unwrap();
        assert_eq!(start["content_block"]["type"], "tool_use", "{choice}");
        assert_eq!(start["content_block"]["name"], "get_weather", "{choice}");
        assert_eq!(start["content_block"]["input"], json!({}));
        let deltas: Vec<String> = events
            .iter()
            .filter(|e| e.name.as_deref() == Some("content_block_delta"))
            .map(|e| {
                let delta = data(e)["delta"].clone();
                assert_eq!(delta["type"], "input_json_delta");
                delta["partial_json"].as_str().unwrap().to_owned()
            })
            .collect();
        assert!(deltas.len() > 1, "{choice}");
        let streamed: Value = serde_json::from_str(&deltas.concat()).unwrap();
        assert!(valid_weather(&streamed), "{choice}: {streamed}");
        let stop = events
            .iter()
            .find(|e| e.name.as_deref() == Some("message_delta"))
            .map(data)
            .unwrap();
        assert_eq!(stop["delta"]["stop_reason"], "tool_use", "{choice}");
    }
}

#[tokio::test]
async fn tools_that_are_not_offered_get_a_400_that_names_them() {
    let server = start(call_script(None)).await;
    // A script step naming a tool the request does not offer (`none` offers none).
    let none = post(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), json!("none"), false),
    )
    .await;
    assert_eq!(none.status, 400);
    let message = none.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"get_weather\"") && message.contains("mock script"),
        "{message}"
    );
    let logged = &server.requests()[0].answer;
    assert_eq!((logged.status, logged.fault), (400, None));

    // A forced function that is not among the tools, in either format.
    let unknown = json!({"type": "function", "function": {"name": "get_stock"}});
    let openai = post(
        &server,
        "/v1/chat/completions",
        &openai_request(weather_question(), unknown, false),
    )
    .await;
    assert_eq!(openai.status, 400);
    assert_eq!(openai.body["error"]["type"], "invalid_request_error");
    let anthropic = post(
        &server,
        "/v1/messages",
        &anthropic_request(
            weather_question(),
            json!({"type": "tool", "name": "get_stock"}),
            false,
        ),
    )
    .await;
    assert_eq!(anthropic.status, 400);
    assert_eq!(anthropic.body["error"]["type"], "invalid_request_error");
}
