//! The provider conformance suite: every provider (OpenAI-compatible, Azure OpenAI, Anthropic
//! and Gemini over real HTTP to the mock LLM on loopback, and the in-process mock) passes the
//! same checks — completion, streaming, retry classification, Retry-After, auth, timeouts,
//! redaction, tool calls, structured output.

use bridle_core::{Context, Contracts, ToolCall};
use bridle_mock::{Fault, MockConfig, MockServer, Script, ScriptTurn, Step};
use bridle_providers::gemini::GeminiOptions;
use bridle_providers::mock::Mock;
use bridle_providers::openai::{AZURE_API_VERSION, Azure};
use bridle_providers::{
    Anthropic, ChatMessage, ChatRequest, Gemini, HttpSettings, OpenAi, OpenAiOptions, Provider,
    ProviderError, ResponseFormat, Role, StreamEvent,
};
use futures::StreamExt;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    OpenAi,
    Azure,
    Anthropic,
    Gemini,
    InProcess,
}

const ALL: [Kind; 5] = [
    Kind::OpenAi,
    Kind::Azure,
    Kind::Anthropic,
    Kind::Gemini,
    Kind::InProcess,
];
const HTTP: [Kind; 4] = [Kind::OpenAi, Kind::Azure, Kind::Anthropic, Kind::Gemini];
const KEY: &str = "sk-test-4f9a-secret";
/// The model every request names (Azure's deployment, Gemini's model).
const MODEL: &str = "test-model";

/// An HTTP provider of `kind` for the mock at `server_url` (`http://127.0.0.1:PORT`).
fn http_provider(kind: Kind, server_url: &str, mut settings: HttpSettings) -> Box<dyn Provider> {
    match kind {
        Kind::OpenAi => {
            settings.base_url = format!("{server_url}/v1");
            Box::new(OpenAi::new(settings, OpenAiOptions::default()).unwrap())
        }
        Kind::Azure => {
            settings.base_url = server_url.to_owned();
            let azure = Azure {
                api_version: AZURE_API_VERSION.into(),
                deployment: MODEL.into(),
            };
            Box::new(OpenAi::azure(settings, OpenAiOptions::default(), azure).unwrap())
        }
        Kind::Anthropic => {
            settings.base_url = format!("{server_url}/v1");
            Box::new(Anthropic::new(settings, false).unwrap())
        }
        Kind::Gemini => {
            settings.base_url = format!("{server_url}/v1beta");
            let options = GeminiOptions {
                native_structured_output: false,
                model: MODEL.into(),
            };
            Box::new(Gemini::new(settings, options).unwrap())
        }
        Kind::InProcess => unreachable!("not over HTTP"),
    }
}

/// A provider of `kind` in front of a mock with `config`; the server (if any) lives as long as
/// the returned value.
async fn provider(
    kind: Kind,
    config: MockConfig,
    key: Option<&str>,
    timeout: Duration,
) -> (Option<MockServer>, Box<dyn Provider>) {
    let contracts = Contracts::builtin().unwrap();
    if kind == Kind::InProcess {
        return (
            None,
            Box::new(Mock::with_config(&contracts, config).unwrap()),
        );
    }
    let server = MockServer::start(config).await.unwrap();
    let settings = HttpSettings {
        api_key: key.map(str::to_owned),
        timeout,
        ..HttpSettings::default()
    };
    let provider = http_provider(kind, &server.url(), settings);
    (Some(server), provider)
}

fn scripted(steps: Vec<Step>) -> MockConfig {
    MockConfig {
        script: Some(Script {
            turns: vec![ScriptTurn { attempts: steps }],
        }),
        ..MockConfig::default()
    }
}

fn request() -> ChatRequest {
    let contracts = Contracts::builtin().unwrap();
    let contract = contracts.get("selfhelp-response").unwrap();
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            ChatMessage::new(Role::System, contract.instructions(&Context::new())),
            ChatMessage::new(Role::User, "How do I calm down before a talk?"),
        ],
        temperature: Some(0.2),
        max_tokens: Some(2048),
        response_format: None,
        ..ChatRequest::default()
    }
}

fn meets_contract(text: &str) -> bool {
    let contracts = Contracts::builtin().unwrap();
    contracts
        .get("selfhelp-response")
        .unwrap()
        .check(text, &Context::new())
        .is_valid()
}

async fn collect(
    provider: &dyn Provider,
    request: &ChatRequest,
) -> (String, Result<String, ProviderError>) {
    let mut stream = provider.stream(request).await.unwrap();
    let mut deltas = String::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::Delta(d)) => deltas.push_str(&d),
            Ok(StreamEvent::Done(c)) => return (deltas, Ok(c.content)),
            Ok(StreamEvent::ToolCall(piece)) => panic!("no tool was offered: {piece:?}"),
            Err(e) => return (deltas, Err(e)),
        }
    }
    (deltas, Err(ProviderError::Stream("no Done event".into())))
}

#[tokio::test]
async fn every_provider_completes_a_contract_reply() {
    for kind in ALL {
        let (_server, p) = provider(
            kind,
            MockConfig::default(),
            Some(KEY),
            Duration::from_secs(10),
        )
        .await;
        let completion = p.complete(&request()).await.unwrap();
        assert!(
            meets_contract(&completion.content),
            "{kind:?}: {}",
            completion.content
        );
        // The OpenAI-format providers give the answer back whole for the compatible endpoint.
        let whole = p.openai_answer(&completion.raw);
        assert_eq!(
            whole.is_some(),
            matches!(kind, Kind::OpenAi | Kind::Azure),
            "{kind:?}"
        );
        let usage = completion.usage.unwrap();
        assert!(
            usage.input_tokens > 0 && usage.output_tokens > 0,
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn every_provider_streams_deltas_that_add_up_to_the_reply() {
    for kind in ALL {
        let (_server, p) = provider(
            kind,
            MockConfig::default(),
            Some(KEY),
            Duration::from_secs(10),
        )
        .await;
        let (deltas, done) = collect(p.as_ref(), &request()).await;
        let done = done.unwrap();
        assert_eq!(deltas, done, "{kind:?}");
        assert!(meets_contract(&done), "{kind:?}");
    }
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retryable_with_retry_after() {
    for kind in ALL {
        let (_server, p) = provider(
            kind,
            scripted(vec![Step::Fault(Fault::Http500)]),
            None,
            Duration::from_secs(10),
        )
        .await;
        let e = p.complete(&request()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Status { status: 500, .. }) && e.is_retryable(),
            "{kind:?}: {e}"
        );

        let (_server, p) = provider(
            kind,
            scripted(vec![Step::Fault(Fault::Http429 {
                retry_after_secs: 2,
            })]),
            None,
            Duration::from_secs(10),
        )
        .await;
        let e = p.complete(&request()).await.unwrap_err();
        assert!(e.is_retryable(), "{kind:?}");
        assert_eq!(
            e.retry_after(),
            Some(Duration::from_secs(2)),
            "{kind:?}: {e}"
        );
    }
}

#[tokio::test]
async fn a_broken_stream_is_a_retryable_stream_error() {
    for kind in ALL {
        let (_server, p) = provider(
            kind,
            scripted(vec![Step::Fault(Fault::BrokenStream)]),
            None,
            Duration::from_secs(10),
        )
        .await;
        let result = match p.stream(&request()).await {
            Ok(mut stream) => {
                let mut last = None;
                while let Some(event) = stream.next().await {
                    last = Some(event);
                }
                last.unwrap()
            }
            Err(e) => Err(e),
        };
        let e = result.map(|_| ()).unwrap_err();
        assert!(e.is_retryable(), "{kind:?}: {e}");
    }
}

#[tokio::test]
async fn a_wrong_key_is_final_and_a_right_key_passes() {
    for kind in HTTP {
        let config = MockConfig {
            require_api_key: Some(KEY.into()),
            ..MockConfig::default()
        };
        let (_server, p) = provider(
            kind,
            config.clone(),
            Some("sk-wrong"),
            Duration::from_secs(10),
        )
        .await;
        let e = p.complete(&request()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Status { status: 401, .. }),
            "{kind:?}: {e}"
        );
        assert!(!e.is_retryable());
        let (_server, p) = provider(kind, config, Some(KEY), Duration::from_secs(10)).await;
        assert!(p.complete(&request()).await.is_ok(), "{kind:?}");
    }
}

#[tokio::test]
async fn slow_answers_time_out_and_dead_servers_refuse() {
    for kind in HTTP {
        let config = MockConfig {
            latency_ms: 2000,
            ..MockConfig::default()
        };
        let (_server, p) = provider(kind, config, None, Duration::from_millis(300)).await;
        let e = p.complete(&request()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Timeout(_)) && e.is_retryable(),
            "{kind:?}: {e}"
        );

        // A port nothing listens on.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let settings = HttpSettings {
            timeout: Duration::from_secs(2),
            ..HttpSettings::default()
        };
        let p = http_provider(kind, &format!("http://127.0.0.1:{port}"), settings);
        let e = p.complete(&request()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Connection(_)) && e.is_retryable(),
            "{kind:?}: {e}"
        );
    }
}

#[tokio::test]
async fn payloads_are_exact_bodies_with_keys_redacted() {
    for kind in HTTP {
        let (server, p) = provider(
            kind,
            MockConfig::default(),
            Some(KEY),
            Duration::from_secs(10),
        )
        .await;
        let request = request();
        p.complete(&request).await.unwrap();
        let payload = p.payload(&request, false);
        let text = serde_json::to_string(&payload).unwrap();
        assert!(!text.contains(KEY), "{kind:?}: the key leaked: {text}");
        assert!(text.contains("[REDACTED]"), "{kind:?}");
        // The stored body is exactly what the server received.
        let logged = server.unwrap().requests();
        assert_eq!(logged.len(), 1);
        assert_eq!(logged[0].body, payload.body, "{kind:?}");
    }
}

#[tokio::test]
async fn native_structured_output_is_passed_through_where_enabled() {
    let contracts = Contracts::builtin().unwrap();
    let schema = contracts
        .get("selfhelp-response")
        .unwrap()
        .schema()
        .raw()
        .clone();
    let mut req = request();
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "selfhelp-response".into(),
        schema,
    });
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let settings = HttpSettings {
        base_url: format!("{}/v1", server.url()),
        api_key: None,
        timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    };
    let openai = OpenAi::new(
        settings.clone(),
        OpenAiOptions {
            native_structured_output: true,
            merge_system: true,
        },
    )
    .unwrap();
    let body = openai.payload(&req, false).body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["messages"][0]["role"], "user",
        "system text merged into the first user message"
    );
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("meets the contract")
    );
    assert!(meets_contract(
        &openai.complete(&req).await.unwrap().content
    ));
    let plain = OpenAi::new(settings.clone(), OpenAiOptions::default()).unwrap();
    assert!(
        plain
            .payload(&req, false)
            .body
            .get("response_format")
            .is_none()
    );

    let anthropic = Anthropic::new(settings, true).unwrap();
    let body = anthropic.payload(&req, false).body;
    assert_eq!(body["tool_choice"]["name"], "respond");
    let completion = anthropic.complete(&req).await.unwrap();
    assert!(
        meets_contract(&completion.content),
        "{}",
        completion.content
    );
    let (deltas, done) = collect(&anthropic, &req).await;
    assert_eq!(deltas, done.unwrap());
}

/// A question-cards request in discovery mode offering the `present_question` tool.
fn card_request() -> ChatRequest {
    let contracts = Contracts::builtin().unwrap();
    let contract = contracts.get("question-cards").unwrap();
    let context = Context::new().with("mode", "discovery");
    ChatRequest {
        model: MODEL.into(),
        messages: vec![
            ChatMessage::new(Role::System, contract.instructions(&context)),
            ChatMessage::new(Role::User, "I want an app for my flat"),
        ],
        temperature: None,
        max_tokens: Some(1024),
        response_format: None,
        tools: contract.tools(&context),
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn every_provider_returns_the_tool_calls_whole_and_streamed() {
    let contracts = Contracts::builtin().unwrap();
    let contract = contracts.get("question-cards").unwrap();
    let context = Context::new()
        .with("mode", "discovery")
        .with("turn_id", "t");
    for kind in ALL {
        let (_server, p) =
            provider(kind, MockConfig::default(), None, Duration::from_secs(10)).await;
        let whole = p.complete(&card_request()).await.unwrap();
        assert_eq!(whole.tool_calls.len(), 1, "{kind:?}: {whole:?}");
        assert_eq!(whole.tool_calls[0].name, "present_question");
        assert!(!whole.content.is_empty(), "{kind:?}");
        let checked = contract.check_reply(&whole.content, &whole.tool_calls, &context);
        assert!(checked.is_valid(), "{kind:?}: {:?}", checked.violations);
        assert_eq!(
            checked.value.unwrap()["question_cards"][0]["metadata"]["option_style"],
            "tool"
        );

        let mut stream = p.stream(&card_request()).await.unwrap();
        let mut deltas = String::new();
        let mut done = None;
        // Each call's pieces, by index: id and name from the first, then the arguments.
        let mut pieces: std::collections::BTreeMap<u32, (String, String, String)> =
            std::collections::BTreeMap::new();
        while let Some(event) = stream.next().await {
            match event.unwrap() {
                StreamEvent::Delta(d) => deltas.push_str(&d),
                StreamEvent::ToolCall(piece) => {
                    let call = pieces.entry(piece.index).or_default();
                    call.0.push_str(piece.id.as_deref().unwrap_or(""));
                    let function = piece.function.unwrap_or_default();
                    call.1.push_str(function.name.as_deref().unwrap_or(""));
                    call.2.push_str(function.arguments.as_deref().unwrap_or(""));
                }
                StreamEvent::Done(c) => done = Some(c),
            }
        }
        let done = done.unwrap();
        let without_ids = |calls: &[ToolCall]| -> Vec<(String, serde_json::Value)> {
            calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect()
        };
        assert_eq!(
            without_ids(&done.tool_calls),
            without_ids(&whole.tool_calls),
            "{kind:?}"
        );
        assert!(
            whole.tool_calls.iter().all(|c| !c.id.is_empty()),
            "{kind:?}: ids"
        );
        let streamed: Vec<ToolCall> = pieces
            .into_values()
            .map(|(id, name, arguments)| ToolCall::from_text(name, &arguments).with_id(id))
            .collect();
        assert_eq!(
            streamed, done.tool_calls,
            "{kind:?}: the pieces make the calls"
        );
        assert_eq!(
            deltas, done.content,
            "{kind:?}: only the text is streamed as deltas"
        );
        assert_eq!(done.content, whole.content, "{kind:?}");
        if kind != Kind::InProcess {
            assert_eq!(done.finish_reason, whole.finish_reason, "{kind:?}");
        }
    }
}

#[tokio::test]
async fn a_stream_longer_than_the_timeout_is_not_cut_while_it_keeps_coming() {
    const TIMEOUT: Duration = Duration::from_millis(1500);
    for kind in HTTP {
        // Frames every 100 ms for well over the 1.5 s timeout: each gap is short (a wide
        // margin, so a loaded machine does not stretch one past the timeout), the whole answer
        // long — as a model writing a long reply.
        let config = MockConfig {
            stream_interval_ms: 100,
            stream_piece_chars: 40,
            ..MockConfig::default()
        };
        let (_server, p) = provider(kind, config, Some(KEY), TIMEOUT).await;
        let started = std::time::Instant::now();
        let (deltas, done) = collect(p.as_ref(), &request()).await;
        let done =
            done.unwrap_or_else(|e| panic!("{kind:?}: cut after {:?}: {e}", started.elapsed()));
        assert!(
            started.elapsed() > TIMEOUT * 2,
            "{kind:?}: the stream should outlast the timeout ({:?})",
            started.elapsed()
        );
        assert_eq!(deltas, done, "{kind:?}");

        // A stream that goes silent longer than the timeout still ends with a timeout.
        let silent = MockConfig {
            stream_interval_ms: 4000,
            ..MockConfig::default()
        };
        let (_server, p) = provider(kind, silent, Some(KEY), TIMEOUT).await;
        let (_, done) = collect(p.as_ref(), &request()).await;
        assert!(
            matches!(done, Err(ProviderError::Timeout(_))),
            "{kind:?}: {done:?}"
        );
    }
}

/// A function tool of OpenAI's form whose arguments must be a city and a unit.
fn weather_tool() -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {"name": "get_weather", "description": "Weather now",
        "parameters": {"type": "object", "required": ["city", "unit"], "additionalProperties": false,
            "properties": {"city": {"type": "string", "minLength": 1},
                           "unit": {"enum": ["celsius", "fahrenheit"]}}}}})
}

/// A named `tool_choice` is a call of that tool, not the reply, for every provider.
#[tokio::test]
async fn a_forced_call_comes_back_as_a_call_and_its_result_is_read() {
    for kind in ALL {
        let (server, p) =
            provider(kind, MockConfig::default(), None, Duration::from_secs(10)).await;
        let mut request = ChatRequest {
            model: MODEL.into(),
            messages: vec![ChatMessage::new(Role::User, "What is the weather in Oslo?")],
            tools: vec![weather_tool()],
            tool_choice: Some(
                serde_json::from_value(
                    serde_json::json!({"type": "function", "function": {"name": "get_weather"}}),
                )
                .unwrap(),
            ),
            ..ChatRequest::default()
        };
        assert_eq!(p.check(&request), Ok(()), "{kind:?}");
        let whole = p.complete(&request).await.unwrap();
        assert_eq!(whole.tool_calls.len(), 1, "{kind:?}: {whole:?}");
        let call = whole.tool_calls[0].clone();
        assert_eq!(call.name, "get_weather");
        assert!(!call.id.is_empty(), "{kind:?}: calls have ids");
        let unit = &call.arguments["unit"];
        assert!(
            unit == "celsius" || unit == "fahrenheit",
            "{kind:?}: {call:?}"
        );

        // The call and its result go back; the model answers in text.
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls = vec![call.clone()];
        let mut result = ChatMessage::new(Role::Tool, "{\"temperature\": 3}");
        result.tool_call_id = Some(call.id.clone());
        request.messages.extend([assistant, result]);
        request.tool_choice = None;
        assert_eq!(p.check(&request), Ok(()), "{kind:?}");
        let answer = p.complete(&request).await.unwrap();
        assert!(answer.tool_calls.is_empty(), "{kind:?}: {answer:?}");
        assert!(!answer.content.is_empty(), "{kind:?}");
        if kind == Kind::Gemini {
            let logged = server.unwrap().requests();
            let first = &logged[0].body["toolConfig"]["functionCallingConfig"];
            assert_eq!(first["mode"], "ANY");
            assert_eq!(first["allowedFunctionNames"][0], "get_weather");
            let response = &logged[1].body["contents"][2]["parts"][0]["functionResponse"];
            assert_eq!(response["name"], "get_weather", "named after its call");
            assert_eq!(response["response"]["temperature"], 3);
        }
    }
}

#[tokio::test]
async fn gemini_sends_a_schema_it_can_say_natively_and_answers_by_it() {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let settings = HttpSettings {
        base_url: format!("{}/v1beta", server.url()),
        timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    };
    let options = GeminiOptions {
        native_structured_output: true,
        model: MODEL.into(),
    };
    let gemini = Gemini::new(settings, options).unwrap();
    let schema = serde_json::json!({"type": "object", "required": ["city", "score"],
        "properties": {"city": {"type": "string", "minLength": 1},
                       "score": {"type": "integer", "minimum": 1, "maximum": 5}}});
    let request = ChatRequest {
        model: MODEL.into(),
        messages: vec![ChatMessage::new(Role::User, "Rate Oslo.")],
        response_format: Some(ResponseFormat::JsonSchema {
            name: "rating".into(),
            schema: schema.clone(),
        }),
        ..ChatRequest::default()
    };
    let payload = gemini.payload(&request, false);
    assert_eq!(
        payload.body["generationConfig"]["responseSchema"]["properties"]["score"]["type"],
        "INTEGER"
    );
    let checks = |text: &str| {
        bridle_core::Contract::from_schema("rating", schema.clone())
            .unwrap()
            .check(text, &Context::new())
            .is_valid()
    };
    let whole = gemini.complete(&request).await.unwrap();
    assert!(checks(&whole.content), "{}", whole.content);
    let (deltas, done) = collect(&gemini, &request).await;
    assert_eq!(deltas, done.as_deref().unwrap());
    assert!(checks(&done.unwrap()));
}

#[tokio::test]
async fn each_provider_s_error_message_is_read_from_its_error_body() {
    for kind in HTTP {
        let config = MockConfig {
            require_api_key: Some(KEY.into()),
            ..MockConfig::default()
        };
        let (_server, p) = provider(kind, config, Some("wrong"), Duration::from_secs(10)).await;
        let e = p.complete(&request()).await.unwrap_err();
        let ProviderError::Status {
            status, message, ..
        } = &e
        else {
            panic!("{kind:?}: {e}")
        };
        assert_eq!(*status, 401, "{kind:?}");
        assert!(
            message.starts_with("Incorrect or missing API key"),
            "{kind:?}: the message, not the body: {message}"
        );
    }
}

/// Reads one HTTP request on `listener` (head and body), answers it with a 500, returns the
/// request's text.
async fn capture_one(listener: tokio::net::TcpListener) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = socket.read(&mut buffer).await.unwrap();
        bytes.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length || n == 0 {
                break;
            }
        }
        if n == 0 {
            break;
        }
    }
    let answer =
        "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    socket.write_all(answer.as_bytes()).await.unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn a_model_s_headers_and_query_go_with_every_request_beside_the_provider_s_own() {
    for kind in HTTP {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let capture = tokio::spawn(capture_one(listener));
        let settings = HttpSettings {
            api_key: Some(KEY.into()),
            timeout: Duration::from_secs(10),
            headers: vec![("X-Team".into(), "blue".into())],
            query: vec![("foo".into(), "bar".into())],
            ..HttpSettings::default()
        };
        let p = http_provider(kind, &url, settings);
        let e = p.complete(&request()).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Status { status: 500, .. }),
            "{kind:?}: {e}"
        );
        let sent = capture.await.unwrap().to_ascii_lowercase();
        let first_line = sent.lines().next().unwrap().to_owned();
        let expected_path = match kind {
            Kind::OpenAi => "/v1/chat/completions?foo=bar".to_owned(),
            Kind::Azure => format!(
                "/openai/deployments/{MODEL}/chat/completions?api-version={AZURE_API_VERSION}&foo=bar"
            ),
            Kind::Anthropic => "/v1/messages?foo=bar".to_owned(),
            Kind::Gemini => format!("/v1beta/models/{MODEL}:generatecontent?foo=bar"),
            Kind::InProcess => unreachable!(),
        };
        assert_eq!(
            first_line,
            format!("post {} http/1.1", expected_path.to_ascii_lowercase()),
            "{kind:?}"
        );
        assert!(sent.contains("\r\nx-team: blue\r\n"), "{kind:?}: {sent}");
        let auth = match kind {
            Kind::OpenAi => format!("authorization: bearer {KEY}"),
            Kind::Azure => format!("api-key: {KEY}"),
            Kind::Anthropic => format!("x-api-key: {KEY}"),
            Kind::Gemini => format!("x-goog-api-key: {KEY}"),
            Kind::InProcess => unreachable!(),
        };
        assert!(
            sent.contains(&auth.to_ascii_lowercase()),
            "{kind:?}: {sent}"
        );
        assert!(sent.contains("content-type: application/json"), "{kind:?}");
    }
}
