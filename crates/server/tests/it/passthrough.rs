//! The OpenAI-compatible endpoint as a drop-in for a call without a contract: what a client
//! sends reaches the upstream as it was written (tools, tool choice, tool results, content
//! parts, `seed`, `stop`, `n`, `logprobs`, `user`, `metadata`, fields Bridle does not model),
//! in the upstream's own wire format, or is refused by name when that format cannot say it.
//! The gateway runs on a loopback port in front of the mock LLM (OpenAI and Anthropic front
//! ends) on another; the upstream request is read from the mock's request log.

use crate::api::{ADA, ADMIN};
use bridle_engine::{Config, Engine, store};
use bridle_mock::{MockConfig, MockServer};
use bridle_server::{AppState, Keys, Role, ServerSettings, app};
use serde_json::{Value, json};
use std::sync::Arc;

/// The gateway with four models in front of one mock: `gpt` (OpenAI wire format), `claude`
/// (Anthropic's), `gemini` (Gemini's) and `azure` (an Azure OpenAI deployment).
struct Gateway {
    base: String,
    mock: MockServer,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Gateway {
    async fn start() -> Self {
        Self::start_with(MockConfig::default()).await
    }

    async fn start_with(config: MockConfig) -> Self {
        let mock = MockServer::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        let store = Arc::from(store::open(&url).await.unwrap());
        let text = format!(
            "default_model = \"gpt\"\n[retry]\ndelay_ms = 0\n\
             [providers.oa]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\n\
             [providers.an]\nkind = \"anthropic\"\nbase_url = \"{url}/v1\"\n\
             [providers.ge]\nkind = \"gemini\"\nbase_url = \"{url}/v1beta\"\n\
             [providers.az]\nkind = \"azure\"\nbase_url = \"{url}\"\n\
             [models.gpt]\nprovider = \"oa\"\nmodel = \"upstream-gpt\"\n\
             [models.claude]\nprovider = \"an\"\nmodel = \"upstream-claude\"\n\
             [models.gemini]\nprovider = \"ge\"\nmodel = \"upstream-gemini\"\n\
             [models.azure]\nprovider = \"az\"\nmodel = \"upstream-deployment\"\n",
            url = mock.url()
        );
        let engine = Engine::with_store(
            Config::from_toml(&text, &Default::default()).unwrap(),
            store,
        )
        .unwrap();
        let mut keys = Keys::default();
        keys.add_key(ADMIN, Role::Admin, "admin").unwrap();
        keys.add_key(ADA, Role::User, "ada").unwrap();
        let mut settings = ServerSettings::default();
        settings.limits.enabled = false;
        let limiter = bridle_server::limits::build(&settings.limits).unwrap();
        let state = AppState::new(engine, Arc::new(keys.into()), Arc::new(settings), limiter);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = app(state);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            base,
            mock,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn post(&self, body: &Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(ADA)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// The body of the last request the mock received.
    fn upstream_body(&self) -> Value {
        self.mock
            .requests()
            .last()
            .expect("a request upstream")
            .body
            .clone()
    }
}

/// A chat that uses every kind of message: instructions, a user message with an image, an
/// assistant's tool call sent back as the SDKs send it, and the tool's result.
fn tool_chat() -> Value {
    json!([
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is the weather where this photo was taken?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
        ]},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_abc", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "{\"temp_c\": 3}"}
    ])
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
        "strict": true
    }})
}

#[tokio::test]
async fn a_plain_call_reaches_an_openai_upstream_as_the_client_wrote_it() {
    let gateway = Gateway::start().await;
    let sent = json!({
        "model": "gpt",
        "messages": tool_chat(),
        "tools": [weather_tool()],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "seed": 42,
        "stop": ["END"],
        "n": 1,
        "user": "user-7",
        "metadata": {"team": "blue"},
        "logprobs": true,
        "top_logprobs": 2,
        "top_p": 0.9,
        "presence_penalty": 0.1,
        "logit_bias": {"50256": -100},
        "service_tier": "default",
        "max_completion_tokens": 300
    });
    let (status, answer) = gateway.post(&sent).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], "gpt", "the configured name answers");
    let mut upstream = gateway.upstream_body();
    assert_eq!(upstream["model"], "upstream-gpt");
    assert_eq!(upstream["stream"], false);
    // The token cap is sent as the (older, widely understood) `max_tokens`.
    assert_eq!(upstream["max_tokens"], 300);
    let fields = upstream.as_object_mut().unwrap();
    for changed in ["model", "stream", "max_tokens"] {
        fields.remove(changed);
    }
    let mut expected = sent.clone();
    let expected_fields = expected.as_object_mut().unwrap();
    for changed in ["model", "max_completion_tokens"] {
        expected_fields.remove(changed);
    }
    assert_eq!(
        upstream, expected,
        "nothing the client sent is dropped or changed"
    );
}

#[tokio::test]
async fn a_plain_call_reaches_an_anthropic_upstream_in_its_own_format() {
    let gateway = Gateway::start().await;
    let sent = json!({
        "model": "claude",
        "messages": tool_chat(),
        "tools": [weather_tool()],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": false,
        "stop": "END",
        "user": "user-7",
        "top_p": 0.9,
        "max_tokens": 200
    });
    let (status, answer) = gateway.post(&sent).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], "claude");
    let upstream = gateway.upstream_body();
    assert_eq!(upstream["model"], "upstream-claude");
    assert_eq!(upstream["system"], "Answer briefly.");
    assert_eq!(
        upstream["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is the weather where this photo was taken?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_abc", "name": "get_weather", "input": {"city": "Oslo"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_abc", "content": "{\"temp_c\": 3}"}
            ]}
        ])
    );
    assert_eq!(upstream["tools"][0]["name"], "get_weather");
    assert_eq!(
        upstream["tools"][0]["input_schema"],
        weather_tool()["function"]["parameters"]
    );
    assert_eq!(
        upstream["tool_choice"],
        json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true})
    );
    assert_eq!(upstream["stop_sequences"], json!(["END"]));
    assert_eq!(upstream["metadata"], json!({"user_id": "user-7"}));
    assert_eq!(upstream["top_p"], 0.9);
    assert_eq!(upstream["max_tokens"], 200);
}

#[tokio::test]
async fn what_the_upstream_format_cannot_say_is_a_400_naming_it_before_any_call() {
    let gateway = Gateway::start().await;
    let hi = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            json!({"model": "claude", "messages": hi, "seed": 1}),
            "seed",
        ),
        (json!({"model": "claude", "messages": hi, "n": 2}), "n"),
        (
            json!({"model": "claude", "messages": hi, "logprobs": true}),
            "logprobs",
        ),
        (
            json!({"model": "claude", "messages": hi, "logit_bias": {"1": 2}}),
            "logit_bias",
        ),
        (
            json!({"model": "claude", "messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
            ]}]}),
            "messages[0].content[0]",
        ),
        (
            json!({"model": "gpt", "messages": hi, "n": 2, "stream": true}),
            "n",
        ),
        (
            json!({"model": "gpt", "messages": hi,
                   "tools": [{"type": "custom", "custom": {"name": "grammar"}}]}),
            "tools[0]",
        ),
    ];
    for (body, param) in cases {
        let (status, answer) = gateway.post(&body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "unsupported_parameter", "{answer}");
        assert_eq!(answer["error"]["param"], param, "{answer}");
    }
    assert!(
        gateway.mock.requests().is_empty(),
        "nothing went upstream: {:?}",
        gateway.mock.requests()
    );
    // A made-up role or field name is never echoed whole.
    let (status, answer) = gateway
        .post(&json!({"model": "gpt", "messages": [{"role": "r".repeat(50_000), "content": "x"}]}))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().len() < 200,
        "{answer}"
    );
    let mut body = json!({"model": "claude", "messages": hi});
    body[&"k".repeat(50_000)] = json!(1);
    let (status, answer) = gateway.post(&body).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["param"].as_str().unwrap().chars().count() <= 100);
    assert!(answer["error"]["message"].as_str().unwrap().chars().count() <= 300);
}

#[tokio::test]
async fn an_openai_upstream_answer_comes_back_whole() {
    let gateway = Gateway::start().await;
    let sent = json!({"model": "gpt", "messages": [{"role": "user", "content": "hi"}]});
    let (status, answer) = gateway.post(&sent).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
    assert!(answer["choices"][0]["message"]["content"].is_string());
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
}

impl Gateway {
    /// Posts a streamed call and reads its chunks up to `[DONE]`.
    async fn stream(&self, body: &Value) -> Vec<Value> {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;
        let response = self
            .client
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(ADA)
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut events = response.bytes_stream().eventsource();
        let mut chunks = Vec::new();
        while let Some(event) = events.next().await {
            let data = event.unwrap().data;
            if data == "[DONE]" {
                return chunks;
            }
            chunks.push(serde_json::from_str(&data).unwrap());
        }
        panic!("the stream ended before [DONE]: {chunks:?}");
    }
}

/// Call → tool result → answer, as an application with tools runs it.
async fn tool_round_trip(gateway: &Gateway, model: &str) {
    let question = json!({"role": "user", "content": "What is the weather in Oslo?"});
    let (status, first) = gateway
        .post(&json!({
            "model": model,
            "messages": [question],
            "tools": [weather_tool()],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}
        }))
        .await;
    assert_eq!(status, 200, "{model}: {first}");
    let choice = &first["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{model}: {first}");
    let message = &choice["message"];
    assert!(message["content"].is_null(), "{model}: {message}");
    let call = &message["tool_calls"][0];
    let id = call["id"].as_str().unwrap();
    assert!(!id.is_empty(), "{model}: the call has an id");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments["city"].is_string(), "{model}: {arguments}");

    let (status, second) = gateway
        .post(&json!({
            "model": model,
            "messages": [
                question,
                message,
                {"role": "tool", "tool_call_id": id, "content": "{\"temp_c\": 3}"}
            ],
            "tools": [weather_tool()]
        }))
        .await;
    assert_eq!(status, 200, "{model}: {second}");
    assert_eq!(
        second["choices"][0]["finish_reason"], "stop",
        "{model}: {second}"
    );
    let answer = second["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!answer.is_empty(), "{model}");
    assert!(second["choices"][0]["message"]["tool_calls"].is_null());
}

#[tokio::test]
async fn a_tool_round_trip_works_through_every_upstream_format() {
    let gateway = Gateway::start().await;
    for model in ["gpt", "claude", "gemini", "azure"] {
        tool_round_trip(&gateway, model).await;
    }
}

#[tokio::test]
async fn a_streamed_tool_call_is_relayed_as_tool_call_deltas() {
    let gateway = Gateway::start().await;
    for model in ["gpt", "claude", "gemini", "azure"] {
        let chunks = gateway
            .stream(&json!({
                "model": model,
                "stream": true,
                "messages": [{"role": "user", "content": "Weather in Oslo?"}],
                "tools": [weather_tool()],
                "tool_choice": "required"
            }))
            .await;
        let mut id = String::new();
        let mut name = String::new();
        let mut arguments = String::new();
        for chunk in &chunks {
            for piece in chunk["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert_eq!(piece["index"], 0, "{model}: {piece}");
                id.push_str(piece["id"].as_str().unwrap_or(""));
                name.push_str(piece["function"]["name"].as_str().unwrap_or(""));
                arguments.push_str(piece["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
        assert!(!id.is_empty(), "{model}: {chunks:?}");
        assert_eq!(name, "get_weather", "{model}");
        let arguments: Value = serde_json::from_str(&arguments).unwrap();
        assert!(arguments["city"].is_string(), "{model}: {arguments}");
        let finish = chunks
            .iter()
            .find_map(|c| c["choices"][0]["finish_reason"].as_str())
            .unwrap();
        assert_eq!(finish, "tool_calls", "{model}");
        assert!(chunks.iter().all(|c| c["model"] == model), "{model}");
    }
}

#[tokio::test]
async fn a_tool_choice_naming_no_offered_tool_is_the_clients_400() {
    let gateway = Gateway::start().await;
    let (status, answer) = gateway
        .post(&json!({
            "model": "gpt",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [weather_tool()],
            "tool_choice": {"type": "function", "function": {"name": "get_time"}}
        }))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["type"], "invalid_request_error");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(!message.contains("127.0.0.1"), "{message}");
}

const PERSON: &str = r#"{"type": "object", "required": ["name", "age"],
    "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer"}},
    "additionalProperties": false}"#;

fn person_format() -> Value {
    let schema: Value = serde_json::from_str(PERSON).unwrap();
    json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
}

#[tokio::test]
async fn an_enforced_call_passes_the_clients_tools_and_returns_their_calls() {
    let gateway = Gateway::start().await;
    for model in ["gpt", "claude"] {
        let question = json!({"role": "user", "content": "Who is the weather reporter in Oslo?"});
        let (status, first) = gateway
            .post(&json!({
                "model": model,
                "messages": [question],
                "response_format": person_format(),
                "tools": [weather_tool()],
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                "stop": ["END"],
                "user": "user-7"
            }))
            .await;
        assert_eq!(status, 200, "{model}: {first}");
        // The upstream got the contract's instructions and the client's tools and options.
        let upstream = gateway.upstream_body();
        let tools = upstream["tools"].as_array().unwrap();
        let names: Vec<&str> = tools
            .iter()
            .map(|t| {
                t["name"]
                    .as_str()
                    .or(t["function"]["name"].as_str())
                    .unwrap()
            })
            .collect();
        assert_eq!(names, ["get_weather"], "{model}: {upstream}");
        let system = upstream["system"]
            .as_str()
            .or(upstream["messages"][0]["content"].as_str())
            .unwrap();
        assert!(
            system.contains("\"age\""),
            "{model}: the contract is in the prompt"
        );
        // The reply is the call, not a checked value.
        let choice = &first["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls", "{model}: {first}");
        assert!(choice["message"]["content"].is_null());
        let call = &choice["message"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "get_weather");
        assert_eq!(
            first["bridle"]["value"]["tool_calls"][0]["name"],
            "get_weather"
        );
        assert_eq!(first["model"], model);

        // The tool's result comes back; the answer meets the contract.
        let (status, second) = gateway
            .post(&json!({
                "model": model,
                "messages": [question, choice["message"],
                    {"role": "tool", "tool_call_id": call["id"], "content": "{\"reporter\": \"Kari\"}"}],
                "response_format": person_format(),
                "tools": [weather_tool()]
            }))
            .await;
        assert_eq!(status, 200, "{model}: {second}");
        let person: Value =
            serde_json::from_str(second["choices"][0]["message"]["content"].as_str().unwrap())
                .unwrap();
        assert!(person["age"].is_i64(), "{model}: {person}");
        assert_eq!(second["choices"][0]["finish_reason"], "stop");
        assert_eq!(second["bridle"]["value"], person);
    }
}

#[tokio::test]
async fn an_enforced_call_the_provider_cannot_honour_is_refused_before_anything_is_stored() {
    let gateway = Gateway::start().await;
    let (status, answer) = gateway
        .post(&json!({
            "model": "claude",
            "messages": [{"role": "user", "content": "Ada is 36."}],
            "response_format": person_format(),
            "seed": 7
        }))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "unsupported_parameter");
    assert_eq!(answer["error"]["param"], "seed");
    assert!(gateway.mock.requests().is_empty());
    let listed = gateway
        .client
        .get(format!("{}/v1/conversations", gateway.base))
        .bearer_auth(ADA)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(listed["total"], 0, "{listed}");
}

#[tokio::test]
async fn a_streamed_enforced_call_that_calls_a_tool_streams_the_call() {
    let gateway = Gateway::start().await;
    let chunks = gateway
        .stream(&json!({
            "model": "gpt",
            "stream": true,
            "messages": [{"role": "user", "content": "Weather in Oslo?"}],
            "response_format": person_format(),
            "tools": [weather_tool()],
            "tool_choice": "required"
        }))
        .await;
    let pieces: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(pieces.len(), 1, "{chunks:?}");
    assert_eq!(pieces[0]["function"]["name"], "get_weather");
    assert!(pieces[0]["id"].as_str().is_some_and(|id| !id.is_empty()));
    let last = chunks
        .iter()
        .find(|c| c["choices"][0]["finish_reason"].is_string())
        .unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        last["bridle"]["value"]["tool_calls"][0]["name"],
        "get_weather"
    );
}

#[tokio::test]
async fn a_relayed_stream_that_breaks_off_names_the_request_in_its_error_chunk() {
    let gateway = Gateway::start_with(
        MockConfig::default()
            .with_fault_rate(1.0)
            .with_faults(vec![bridle_mock::Fault::BrokenStream]),
    )
    .await;
    let response = gateway
        .client
        .post(format!("{}/v1/chat/completions", gateway.base))
        .bearer_auth(ADA)
        .header("x-request-id", "relay-req-7")
        .json(&json!({"model": "gpt", "stream": true,
                      "messages": [{"role": "user", "content": "Tell me a story"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "relay-req-7");
    let text = response.text().await.unwrap();
    let error: Value = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|chunk| chunk.get("error").is_some())
        .unwrap_or_else(|| panic!("no error chunk: {text}"));
    assert_eq!(error["error"]["code"], "upstream_failed", "{error}");
    assert_eq!(error["error"]["request_id"], "relay-req-7", "{error}");
}
