//! `stream: true` on the OpenAI-compatible endpoint, as `chat.completion.chunk` server-sent
//! events ending in `data: [DONE]`.
//!
//! - [`validated`]: a contract-enforced request streams the **validated** final attempt. The
//!   turn runs first (repairs, retries), then the value is sent in chunks: the client never sees
//!   text that a retry later takes back, and errors still arrive as ordinary HTTP errors. The
//!   price is time to first token: nothing arrives until the turn is done.
//! - [`relay`]: a plain request (no contract) streams through as the model writes it, one chunk
//!   per upstream delta; an upstream failure mid-stream arrives as an `error` chunk.
//!
//! With `stream_options.include_usage`, a last chunk with empty `choices` carries `usage`.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bridle_engine::providers::{EventStream, StreamEvent, Usage};
use futures::StreamExt;
use serde_json::{Value, json};

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
    fn frame(&self, delta: Value, finish: Option<&str>) -> String {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    }

    fn role(&self) -> String {
        self.frame(json!({"role": "assistant", "content": ""}), None)
    }

    fn content(&self, text: &str) -> String {
        self.frame(json!({"content": text}), None)
    }

    /// The finish chunk, the usage chunk when asked for, and `[DONE]`.
    fn end(&self, finish: &str, usage: Option<Usage>) -> String {
        let mut out = self.frame(json!({}), Some(finish));
        if self.include_usage {
            let usage = usage.unwrap_or_default();
            let chunk = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "system_fingerprint": null,
                "choices": [],
                "usage": {
                    "prompt_tokens": usage.input_tokens,
                    "completion_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                },
            });
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        out.push_str("data: [DONE]\n\n");
        out
    }
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

/// The validated `content` as a stream of chunks.
pub fn validated(chunks: &Chunks, content: &str, usage: Usage) -> Response {
    let mut body = chunks.role();
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(CHUNK_CHARS) {
        body.push_str(&chunks.content(&piece.iter().collect::<String>()));
    }
    body.push_str(&chunks.end("stop", Some(usage)));
    sse(Body::from(body))
}

/// The model's own stream, relayed delta by delta.
pub fn relay(chunks: Chunks, events: EventStream, lease: Option<crate::limits::Lease>) -> Response {
    let first = futures::stream::once({
        let role = chunks.role();
        async move { role }
    });
    // The lease travels with the stream: the slot is held until the last frame.
    let rest = futures::stream::unfold(Some((chunks, events, lease)), |state| async move {
        let (chunks, mut events, lease) = state?;
        match events.next().await {
            Some(Ok(StreamEvent::Delta(text))) => {
                let frame = chunks.content(&text);
                Some((frame, Some((chunks, events, lease))))
            }
            Some(Ok(StreamEvent::Done(completion))) => {
                let finish = completion.finish_reason.as_deref().unwrap_or("stop");
                Some((chunks.end(finish, completion.usage), None))
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "the model's stream failed");
                let message = crate::error::provider_message(&error);
                let body = json!({"error": {"message": message, "type": "upstream_error", "code": "upstream_failed"}});
                Some((format!("data: {body}\n\n"), None))
            }
            None => {
                let body = json!({"error": {"message": "the model's stream ended without its completion", "type": "upstream_error", "code": "upstream_failed"}});
                Some((format!("data: {body}\n\n"), None))
            }
        }
    });
    let frames = first
        .chain(rest)
        .map(|frame| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(frame)));
    sse(Body::from_stream(frames))
}
