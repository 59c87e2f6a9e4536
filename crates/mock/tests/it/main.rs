//! Integration tests of `bridle-mock` over real HTTP on loopback: the OpenAI (and Azure),
//! Anthropic and Gemini front ends (plain and streamed, forced tools), faults and their fixes through Bridle's own
//! feedback, scripts, the API key, malformed requests and the request log; streams paced,
//! re-cut and scripted, and how their delivery is logged; tools called as clients ask (forced,
//! scripted) and answered after their results.

#![allow(clippy::unwrap_used)]

mod anthropic;
mod faults;
mod gemini;
mod openai;
mod server;
mod stream;
mod tools;
mod wire_faults;

use bridle_core::{Context, Contract, Contracts};
use bridle_mock::{MockConfig, MockServer};
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;

pub fn selfhelp() -> Arc<Contract> {
    Contracts::builtin()
        .unwrap()
        .get("selfhelp-response")
        .unwrap()
}

pub fn instructions() -> String {
    selfhelp().instructions(&Context::new())
}

pub async fn start(config: MockConfig) -> MockServer {
    MockServer::start(config).await.unwrap()
}

/// A JSON answer: status, `Retry-After`, body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Value,
}

pub async fn post(server: &MockServer, path: &str, body: &Value) -> Reply {
    post_raw(server, path, body.to_string(), &[]).await
}

pub async fn post_raw(
    server: &MockServer,
    path: &str,
    body: String,
    headers: &[(&str, &str)],
) -> Reply {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", server.url()))
        .header("content-type", "application/json")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.json().await.unwrap();
    Reply {
        status,
        retry_after,
        body,
    }
}

/// One server-sent event: its `event:` name (if any) and its `data:`.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

/// The events of a streamed answer, and whether the stream ended cleanly.
pub async fn stream(server: &MockServer, path: &str, body: &Value) -> (Vec<Event>, bool) {
    let (chunks, clean) = stream_chunks(server, path, body).await;
    (events(&chunks.concat()), clean)
}

/// The network reads of a streamed answer, as they came, and whether the stream ended cleanly.
pub async fn stream_chunks(server: &MockServer, path: &str, body: &Value) -> (Vec<Vec<u8>>, bool) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", server.url()))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut bytes = response.bytes_stream();
    let mut chunks = Vec::new();
    let mut clean = true;
    while let Some(chunk) = bytes.next().await {
        match chunk {
            Ok(chunk) => chunks.push(chunk.to_vec()),
            Err(_) => {
                clean = false;
                break;
            }
        }
    }
    (chunks, clean)
}

/// The events of an SSE byte stream (decoded whole: a read may end inside a character).
pub fn events(raw: &[u8]) -> Vec<Event> {
    std::str::from_utf8(raw)
        .unwrap()
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = Event {
                name: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event.name = Some(name.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data.push_str(data);
                }
            }
            event
        })
        .collect()
}

pub fn data(event: &Event) -> Value {
    serde_json::from_str(&event.data).unwrap()
}

pub fn openai_body(messages: Value) -> Value {
    json!({"model": "gpt-mock", "messages": messages})
}

pub fn is_valid(text: &str) -> bool {
    selfhelp().check(text, &Context::new()).is_valid()
}
