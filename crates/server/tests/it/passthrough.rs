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

/// The gateway with two models in front of one mock: `gpt` (OpenAI wire format) and
/// `claude` (Anthropic's).
struct Gateway {
    base: String,
    mock: MockServer,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Gateway {
    async fn start() -> Self {
        let mock = MockServer::start(MockConfig::default()).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        let store = Arc::from(store::open(&url).await.unwrap());
        let text = format!(
            "default_model = \"gpt\"\n[retry]\ndelay_ms = 0\n\
             [providers.oa]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\n\
             [providers.an]\nkind = \"anthropic\"\nbase_url = \"{url}/v1\"\n\
             [models.gpt]\nprovider = \"oa\"\nmodel = \"upstream-gpt\"\n\
             [models.claude]\nprovider = \"an\"\nmodel = \"upstream-claude\"\n",
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
