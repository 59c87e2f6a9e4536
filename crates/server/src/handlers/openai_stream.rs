//! `stream: true` on the OpenAI-compatible endpoint, as `chat.completion.chunk` server-sent
//! events ending in `data: [DONE]`.
//!
//! - [`validated`]: a contract-enforced request streams the **validated** final attempt. The
//!   turn runs first (repairs, retries), then the value is sent in chunks: the client never sees
//!   text that a retry later takes back, and errors still arrive as ordinary HTTP errors. The
//!   price is time to first token: nothing arrives until the turn is done.
//! - [`relay`]: a plain request (no contract) streams through as the model writes it, one chunk
//!   per upstream delta — text, or a piece of a tool call (`delta.tool_calls`, the first piece
//!   of a call with its id and name); an upstream failure mid-stream arrives as an `error`
//!   chunk.
//!
//! With `stream_options.include_usage`, a last chunk with empty `choices` carries `usage`.

use super::openai_passthrough::finish_of;
use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bridle_engine::providers::{EventStream, StreamEvent, Usage};
use bridle_wire::Extra;
use bridle_wire::openai::{
    self, ChatCompletionChunk, ChunkChoice, Delta, ErrorBody, ErrorCode, FinishReason, Role,
};
use futures::StreamExt;

/// Characters of validated content per chunk.
const CHUNK_CHARS: usize = 64;

/// How one stream's chunks are written.
#[derive(Debug, Clone)]
pub struct Chunks {
    /// `chatcmpl-…`.
    pub id: String,
    /// The model named in each chunk.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    /// Send a usage chunk before `[DONE]`.
    pub include_usage: bool,
}

impl Chunks {
    /// A chunk of this stream with `choices` and `usage`.
    fn chunk(&self, choices: Vec<ChunkChoice>, usage: Option<Usage>) -> String {
        data(&self.chunk_body(choices, usage))
    }

    fn chunk_body(&self, choices: Vec<ChunkChoice>, usage: Option<Usage>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage: usage.map(|u| Some(super::openai::wire_usage(u))),
            system_fingerprint: Some(None),
            service_tier: None,
            extra: Extra::new(),
        }
    }

    fn choice(delta: Delta, finish: Option<&str>) -> ChunkChoice {
        ChunkChoice {
            index: 0,
            delta,
            finish_reason: Some(finish.map(FinishReason::from)),
            logprobs: Some(None),
            extra: Extra::new(),
        }
    }

    fn frame(&self, delta: Delta, finish: Option<&str>) -> String {
        self.chunk(vec![Self::choice(delta, finish)], None)
    }

    fn role(&self) -> String {
        let delta = Delta {
            role: Some(Role::Assistant),
            content: Some(Some(String::new())),
            ..Delta::default()
        };
        self.frame(delta, None)
    }

    fn tool_call(&self, piece: openai::ToolCallDelta) -> String {
        let delta = Delta {
            tool_calls: Some(vec![piece]),
            ..Delta::default()
        };
        self.frame(delta, None)
    }

    fn content(&self, text: &str) -> String {
        let delta = Delta {
            content: Some(Some(text.to_owned())),
            ..Delta::default()
        };
        self.frame(delta, None)
    }

    /// The finish chunk (carrying `bridle`, an enforced call's extension, when given), the
    /// usage chunk when asked for, and `[DONE]`.
    fn end(&self, finish: &str, usage: Option<Usage>, bridle: Option<serde_json::Value>) -> String {
        let mut last = self.chunk_body(vec![Self::choice(Delta::default(), Some(finish))], None);
        if let Some(bridle) = bridle {
            last.extra.insert("bridle".into(), bridle);
        }
        let mut out = data(&last);
        if self.include_usage {
            out.push_str(&self.chunk(Vec::new(), Some(usage.unwrap_or_default())));
        }
        out.push_str("data: [DONE]\n\n");
        out
    }
}

/// One server-sent event carrying `body`.
fn data(body: &impl serde::Serialize) -> String {
    // Serializing these types cannot fail: their maps have string keys.
    let json = serde_json::to_string(body).unwrap_or_default();
    format!("data: {json}\n\n")
}

/// The `error` chunk of a stream that failed midway, with the request's id when it has one.
fn error_frame(message: String, request_id: Option<&str>) -> String {
    let mut extra = Extra::new();
    if let Some(id) = request_id {
        extra.insert("request_id".into(), id.into());
    }
    let error = openai::ApiError {
        message,
        kind: Some(Some("upstream_error".into())),
        param: None,
        code: Some(Some(ErrorCode::Text("upstream_failed".into()))),
        extra,
    };
    data(&ErrorBody {
        error,
        extra: Extra::new(),
    })
}

fn sse(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The final reply of an enforced call.
#[derive(Debug, Clone, Copy)]
pub enum Reply<'a> {
    /// The validated value's text.
    Text(&'a str),
    /// Calls of the client's own tools.
    ToolCalls(&'a [bridle_core::ToolCall]),
}

/// The final `reply` as a stream of chunks; the finish chunk carries `bridle`.
pub fn validated(
    chunks: &Chunks,
    reply: Reply<'_>,
    usage: Usage,
    bridle: Option<serde_json::Value>,
) -> Response {
    let mut body = chunks.role();
    let finish = match reply {
        Reply::Text(content) => {
            let chars: Vec<char> = content.chars().collect();
            for piece in chars.chunks(CHUNK_CHARS) {
                body.push_str(&chunks.content(&piece.iter().collect::<String>()));
            }
            "stop"
        }
        Reply::ToolCalls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                body.push_str(&chunks.tool_call(whole_call(index, call)));
            }
            "tool_calls"
        }
    };
    body.push_str(&chunks.end(finish, Some(usage), bridle));
    sse(Body::from(body))
}

/// A whole tool call as one stream piece: index, id, name and all of its arguments.
fn whole_call(index: usize, call: &bridle_core::ToolCall) -> openai::ToolCallDelta {
    openai::ToolCallDelta {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        id: Some(call.id.clone()),
        kind: Some(openai::ToolKind::Function),
        function: Some(openai::FunctionCallDelta {
            name: Some(call.name.clone()),
            arguments: Some(call.arguments_text()),
            extra: Extra::new(),
        }),
        extra: Extra::new(),
    }
}

/// The model's own stream, relayed delta by delta.
pub fn relay(chunks: Chunks, events: EventStream, lease: Option<crate::limits::Lease>) -> Response {
    let first = futures::stream::once({
        let role = chunks.role();
        async move { role }
    });
    // The stream is read after the handler returned, outside the request's task: its ids
    // travel with it, for the error frame and the log line.
    let ids = crate::request_id::current().unwrap_or_default();
    // The lease travels with the stream: the slot is held until the last frame.
    let rest = futures::stream::unfold(Some((chunks, events, lease)), move |state| {
        let ids = ids.clone();
        async move {
            let (chunks, mut events, lease) = state?;
            match events.next().await {
                Some(Ok(StreamEvent::Delta(text))) => {
                    let frame = chunks.content(&text);
                    Some((frame, Some((chunks, events, lease))))
                }
                Some(Ok(StreamEvent::ToolCall(piece))) => {
                    let frame = chunks.tool_call(piece);
                    Some((frame, Some((chunks, events, lease))))
                }
                Some(Ok(StreamEvent::Done(completion))) => {
                    let finish = finish_of(&completion);
                    Some((chunks.end(finish, completion.usage, None), None))
                }
                Some(Err(error)) => {
                    let span = crate::request_id::span(&ids);
                    span.in_scope(|| tracing::warn!(%error, "the model's stream failed"));
                    let message = crate::error::provider_message(&error);
                    Some((error_frame(message, ids.request_id.as_deref()), None))
                }
                None => {
                    let message = "the model's stream ended without its completion".to_owned();
                    Some((error_frame(message, ids.request_id.as_deref()), None))
                }
            }
        }
    });
    let frames = first
        .chain(rest)
        .map(|frame| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(frame)));
    sse(Body::from_stream(frames))
}
