//! Faults of the wire over real HTTP: `reset` closes the connection before a status line (seen
//! by a raw TCP client), `invalid_utf8` sends bytes that are no character inside the content,
//! `garbage` an HTML page where JSON was promised — plain and streamed, OpenAI and Anthropic.

use crate::*;
use bridle_mock::{Fault, Script};
use std::io::{Read, Write};
use std::time::Duration;

fn faulty(fault: Fault) -> MockConfig {
    MockConfig::new()
        .with_fault_rate(1.0)
        .with_faults(vec![fault])
}

fn openai(stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "messages": [
        {"role": "system", "content": instructions()},
        {"role": "user", "content": "Can you help me plan my week?"}]})
}

fn anthropic(stream: bool) -> Value {
    json!({"model": "c", "max_tokens": 100, "stream": stream, "system": instructions(),
           "messages": [{"role": "user", "content": "Can you help me plan my week?"}]})
}

/// Every request the tests make: (path, body).
fn requests() -> [(&'static str, Value); 4] {
    [
        ("/v1/chat/completions", openai(false)),
        ("/v1/chat/completions", openai(true)),
        ("/v1/messages", anthropic(false)),
        ("/v1/messages", anthropic(true)),
    ]
}

/// Sends `body` over a plain TCP connection and returns every byte that came back before the
/// server closed it (a reset counts as closed).
fn raw_exchange(server: &MockServer, path: &str, body: &Value) -> Vec<u8> {
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    tcp.write_all(request.as_bytes()).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tcp.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the connection neither answered nor closed: {e}"),
        }
    }
    received
}

/// Status, content type and body bytes of a request (streamed bodies read whole).
async fn fetch(server: &MockServer, path: &str, body: &Value) -> (u16, String, Vec<u8>) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", server.url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (status, kind, response.bytes().await.unwrap().to_vec())
}

/// The SSE frames of a body, as bytes.
fn frames(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.windows(2).position(|w| w == b"\n\n") {
        out.push(&rest[..at]);
        rest = &rest[at + 2..];
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_closes_the_connection_before_any_status_line() {
    let server = start(faulty(Fault::Reset)).await;
    for (path, body) in requests() {
        let server_ref = &server;
        let received = tokio::task::block_in_place(|| raw_exchange(server_ref, path, &body));
        assert!(
            received.is_empty(),
            "{path}: {:?}",
            String::from_utf8_lossy(&received)
        );
    }
    let logged = server.requests();
    assert_eq!(logged.len(), 4);
    for entry in &logged {
        assert_eq!(
            (entry.answer.status, entry.answer.fault),
            (0, Some(Fault::Reset))
        );
    }
    // An HTTP client sees a failed request, and the server goes on serving.
    let error = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url()))
        .json(&openai(false))
        .send()
        .await
        .unwrap_err();
    assert!(!error.is_timeout(), "{error}");
    let models = reqwest::get(format!("{}/v1/models", server.url()))
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripted_reset_is_followed_by_a_valid_answer_to_the_same_request() {
    let script =
        Script::from_json(r#"{"turns": [{"attempts": [{"fault": {"kind": "reset"}}]}]}"#).unwrap();
    let server = start(MockConfig::new().with_script(script)).await;
    let server_ref = &server;
    let received = tokio::task::block_in_place(|| {
        raw_exchange(server_ref, "/v1/chat/completions", &openai(false))
    });
    assert!(received.is_empty());
    let again = post(&server, "/v1/chat/completions", &openai(false)).await;
    assert_eq!(again.status, 200);
    let text = again.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(selfhelp().check(text, &Context::new()).is_valid(), "{text}");
}

#[tokio::test]
async fn invalid_utf8_spoils_the_content_plain_and_streamed() {
    let server = start(faulty(Fault::InvalidUtf8).with_seed(3)).await;
    for (path, body) in requests() {
        let (status, kind, bytes) = fetch(&server, path, &body).await;
        assert_eq!(status, 200, "{path}");
        assert!(std::str::from_utf8(&bytes).is_err(), "{path}: valid UTF-8");
        let shown = String::from_utf8_lossy(&bytes);
        if body["stream"] == true {
            assert_eq!(kind, "text/event-stream");
            let bad: Vec<String> = frames(&bytes)
                .into_iter()
                .filter(|f| std::str::from_utf8(f).is_err())
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            assert_eq!(bad.len(), 1, "{path}: one spoiled frame: {shown}");
            assert!(
                bad[0].contains("\"content\":\"") || bad[0].contains("_delta"),
                "{path}: the spoiled frame is a content delta: {}",
                bad[0]
            );
        } else {
            assert_eq!(kind, "application/json");
            let lossy: Value = serde_json::from_str(&shown).unwrap();
            let content = lossy
                .pointer("/choices/0/message/content")
                .or_else(|| lossy.pointer("/content/0/text"))
                .and_then(Value::as_str)
                .unwrap();
            assert!(content.contains('\u{FFFD}'), "{path}: {content}");
        }
    }
    let logged = server.requests();
    assert!(
        logged
            .iter()
            .all(|e| e.answer.status == 200 && e.answer.fault == Some(Fault::InvalidUtf8))
    );
}

#[tokio::test]
async fn garbage_is_html_where_json_was_promised() {
    let server = start(faulty(Fault::Garbage)).await;
    for (path, body) in requests() {
        let (status, kind, bytes) = fetch(&server, path, &body).await;
        assert_eq!(status, 200, "{path}");
        let text = String::from_utf8(bytes).unwrap();
        if body["stream"] == true {
            assert_eq!(kind, "text/event-stream");
            let not_json: Vec<&str> = text
                .split("\n\n")
                .filter_map(|block| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .filter(|d| *d != "[DONE]" && serde_json::from_str::<Value>(d).is_err())
                })
                .collect();
            assert_eq!(not_json.len(), 1, "{path}: {text}");
            assert!(not_json[0].starts_with("<html>"), "{path}");
        } else {
            assert_eq!(kind, "application/json", "{path}");
            assert!(text.starts_with("<html>"), "{path}: {text}");
            assert!(serde_json::from_str::<Value>(&text).is_err());
        }
    }
    assert!(
        server
            .requests()
            .iter()
            .all(|e| e.answer.fault == Some(Fault::Garbage))
    );
}
