//! [`Mock`]: the built-in mock LLM as an in-process provider — the zero-config default. The
//! same model as `bridle mock-llm` (`bridle_mock::MockModel`: schema-driven replies, scripted or
//! random faults that feedback naming the right path fixes), without HTTP. Offered function
//! tools reach the model as [`MockTool`]s, and its calls come back as
//! [`Completion::tool_calls`]. Replies are made on the blocking pool, never on an async worker,
//! and are at most `bridle_mock::MAX_REPLY_BYTES` of JSON whatever schema the request brings.

use super::events::async_stream_events;
use super::{
    ChatRequest, Completion, EventStream, Provider, ProviderError, RequestPayload, ResponseFormat,
    Role, Usage, offered_functions,
};
use async_trait::async_trait;
use bridle_core::{Contracts, ToolCall};
use bridle_mock::{
    CallMade, MockConfig, MockMessage, MockModel, MockReply, MockRequest, MockTool, ReplyFormat,
    StopReason,
};
use bridle_wire::openai::{ToolChoice, ToolChoiceMode};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The in-process mock provider.
#[derive(Debug, Clone)]
pub struct Mock {
    model: Arc<MockModel>,
}

impl From<Role> for bridle_mock::Role {
    /// The mock's roles; `developer` is `system`.
    fn from(role: Role) -> Self {
        match role {
            Role::System | Role::Developer => Self::System,
            Role::User => Self::User,
            Role::Tool => Self::Tool,
            Role::Assistant => Self::Assistant,
        }
    }
}

impl Mock {
    /// A mock that knows `contracts`, with `config`'s faults, seed, script and latency.
    pub fn with_config(contracts: &Contracts, config: MockConfig) -> Result<Self, ProviderError> {
        let config = MockConfig {
            contracts: contracts.clone(),
            ..config
        };
        let model = MockModel::new(config)
            .map_err(|e| ProviderError::Connection(format!("mock configuration: {e}")))?;
        Ok(Self {
            model: Arc::new(model),
        })
    }

    fn request(request: &ChatRequest, stream: bool) -> MockRequest {
        let messages = request.messages.iter().map(mock_message).collect();
        let mut format = match &request.response_format {
            Some(ResponseFormat::JsonSchema { schema, .. }) => ReplyFormat::JsonSchema {
                schema: schema.clone(),
            },
            Some(ResponseFormat::JsonObject) => ReplyFormat::JsonObject,
            None => ReplyFormat::Free,
        };
        let mut tools: Vec<MockTool> = offered_functions(&request.tools)
            .map(|function| MockTool {
                name: function.name,
                parameters: function.parameters.unwrap_or(Value::Null),
            })
            .collect();
        // As the HTTP front end reads `tool_choice`: `none` offers nothing, `required` and a
        // named function force a call.
        match &request.tool_choice {
            Some(ToolChoice::Mode(ToolChoiceMode::None)) => tools.clear(),
            Some(ToolChoice::Mode(ToolChoiceMode::Required)) => {
                format = ReplyFormat::Call { name: None };
            }
            Some(ToolChoice::Named(named)) => {
                format = ReplyFormat::Call {
                    name: named.function.as_ref().map(|f| f.name.clone()),
                };
            }
            _ => {}
        }
        MockRequest {
            model: request.model.clone(),
            messages,
            format,
            stream,
            tools,
        }
    }

    /// Answers like the HTTP mock would, after its configured latency.
    async fn answer(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Completion, ProviderError> {
        match self.reply(request, stream).await? {
            (completion, _, None) => Ok(completion),
            (_, _, Some(error)) => Err(error),
        }
    }

    /// The reply: the completion, the deltas a stream sends it in when the script says, and —
    /// for a broken stream or an answer spoiled on the wire (`invalid_utf8`, `garbage`) — the
    /// error it breaks off with (after half of the deltas; not streamed, the error alone).
    async fn reply(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<(Completion, Option<Vec<String>>, Option<ProviderError>), ProviderError> {
        // Generating and checking a value is CPU work (up to `bridle_mock::MAX_TRIES_BYTES`
        // of it): keep it off the async workers.
        let model = Arc::clone(&self.model);
        let mock_request = Self::request(request, stream);
        let reply = tokio::task::spawn_blocking(move || model.respond(&mock_request))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "mock model task failed");
                ProviderError::Connection("the mock model failed to answer".into())
            })?;
        let delay = reply.info().delay;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let fault = reply.fault().map(|f| f.name());
        let info = reply.info().clone();
        let mut broken = None;
        let reply = match reply {
            MockReply::Reset { .. } => {
                return Err(ProviderError::Connection(
                    "the mock closed the connection without an answer (injected reset)".into(),
                ));
            }
            MockReply::Corrupt { fault, reply } => {
                broken = Some(ProviderError::Decode(format!(
                    "the mock's answer could not be read (injected {fault})"
                )));
                *reply
            }
            other => other,
        };
        let (content, calls, usage, pieces, stop) = match reply {
            MockReply::Text {
                content,
                calls,
                usage,
                pieces,
                stop,
                ..
            } => (content, calls, usage, pieces, stop),
            MockReply::ToolCall {
                input,
                usage,
                pieces,
                ..
            } => (
                input.to_string(),
                Vec::new(),
                usage,
                pieces,
                StopReason::End,
            ),
            MockReply::Http {
                status,
                retry_after,
                message,
                ..
            } => {
                return Err(ProviderError::Status {
                    status,
                    retry_after: retry_after.map(std::time::Duration::from_secs),
                    message,
                });
            }
            MockReply::Reset { .. } | MockReply::Corrupt { .. } => {
                return Err(ProviderError::Decode(
                    "the mock's answer could not be read".into(),
                ));
            }
            MockReply::BrokenStream { content, usage, .. } => {
                broken = Some(ProviderError::Stream(
                    "the mock broke the stream off (injected fault)".into(),
                ));
                (content, Vec::new(), usage, None, StopReason::End)
            }
        };
        let usage = Usage::from(usage);
        let tool_calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall::new(call.name, call.arguments).with_id(info.call_id(i)))
            .collect();
        let mut raw = json!({"object": "bridle.mock.completion", "content": content, "fault": fault, "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens}});
        // The finish reasons an OpenAI-compatible server gives.
        let finish = if !tool_calls.is_empty() {
            raw["tool_calls"] = json!(tool_calls);
            "tool_calls"
        } else if stop == StopReason::Length {
            "length"
        } else {
            "stop"
        };
        let completion = Completion {
            raw,
            content,
            tool_calls,
            usage: Some(usage),
            model: request.model.clone(),
            finish_reason: Some(finish.into()),
        };
        Ok((completion, pieces, broken))
    }

    /// The deltas a stream sends `content` in: the scripted pieces, or pieces of the configured
    /// size.
    fn pieces(&self, content: &str, scripted: Option<Vec<String>>) -> Vec<String> {
        if let Some(pieces) = scripted {
            return pieces;
        }
        let size = self.model.config().stream_piece_chars.max(1);
        let chars: Vec<char> = content.chars().collect();
        chars.chunks(size).map(|c| c.iter().collect()).collect()
    }
}

/// A whole call as one stream piece in OpenAI's form.
fn call_piece(index: usize, call: &ToolCall) -> bridle_wire::openai::ToolCallDelta {
    bridle_wire::openai::ToolCallDelta {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        id: Some(call.id.clone()),
        kind: Some(bridle_wire::openai::ToolKind::Function),
        function: Some(bridle_wire::openai::FunctionCallDelta {
            name: Some(call.name.clone()),
            arguments: Some(call.arguments_text()),
            extra: bridle_wire::Extra::new(),
        }),
        extra: bridle_wire::Extra::new(),
    }
}

/// A message as the mock reads it: an assistant's calls and a tool's result as such.
fn mock_message(m: &crate::ChatMessage) -> MockMessage {
    if m.role == Role::Tool {
        return MockMessage::tool_result(m.tool_call_id.clone().unwrap_or_default(), &m.content);
    }
    if m.role == Role::Assistant && !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|call| CallMade {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })
            .collect();
        return MockMessage::assistant_calls(&m.content, calls);
    }
    MockMessage::new(m.role.into(), m.content.clone())
}

#[async_trait]
impl Provider for Mock {
    fn name(&self) -> &str {
        "mock"
    }

    /// Refuses what would change the answer's shape (`n` above 1, `logprobs`); sampling
    /// options (`seed`, `top_p`, `stop`, penalties) mean nothing to the mock and are accepted.
    fn check(&self, request: &ChatRequest) -> Result<(), ProviderError> {
        let shape = request
            .options
            .beyond_basics()
            .into_iter()
            .find(|name| matches!(name.as_str(), "n" | "logprobs" | "top_logprobs"));
        match shape {
            Some(field) => Err(ProviderError::Unsupported {
                message: format!("the mock provider cannot honour `{field}`"),
                field,
            }),
            None => Ok(()),
        }
    }

    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        let mut body = serde_json::to_value(request).unwrap_or(Value::Null);
        body["stream"] = json!(stream);
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.endpoint(),
            headers: Map::new(),
            body,
            notes: Vec::new(),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        self.answer(request, false).await
    }

    fn endpoint(&self) -> String {
        "mock://in-process".into()
    }

    async fn send(&self, body: &Value) -> Result<Completion, ProviderError> {
        let request: ChatRequest = serde_json::from_value(body.clone()).map_err(|e| {
            ProviderError::Decode(format!("the stored body is not a mock request: {e}"))
        })?;
        self.answer(&request, false).await
    }

    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let request: ChatRequest = serde_json::from_value(body.clone()).map_err(|e| {
            ProviderError::Decode(format!("the stored body is not a mock request: {e}"))
        })?;
        let (completion, scripted, broken) = self.reply(&request, true).await?;
        let mut pieces = self.pieces(&completion.content, scripted);
        if broken.is_some() {
            pieces.truncate(pieces.len() / 2);
        }
        let interval = std::time::Duration::from_millis(self.model.config().stream_interval_ms);
        Ok(async_stream_events(move |tx| async move {
            for (i, piece) in pieces.iter().enumerate() {
                if i > 0 && !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                if !tx.delta(piece).await {
                    return;
                }
            }
            if broken.is_none() {
                for (index, call) in completion.tool_calls.iter().enumerate() {
                    if !tx.tool_call(call_piece(index, call)).await {
                        return;
                    }
                }
            }
            match broken {
                Some(error) => tx.error(error).await,
                None => tx.done(completion).await,
            }
        }))
    }
}
