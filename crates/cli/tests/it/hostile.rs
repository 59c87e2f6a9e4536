//! The denial-of-service findings of the audit (issue 28), replayed against the real binary
//! over loopback — `BRIDLE_TEST_BIN=target/release/bridle` runs them against a release build:
//! thousands of junk methods and paths must leave `/metrics` small, and HTTP/2 prior-knowledge
//! connections must be refused without holding connection slots. And the OpenAI endpoint's
//! inputs of issue 30: an oversized `x-bridle-context` or model name gets a short refusal.

use crate::serve_in;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-hostile-key-000000000";

fn address(url: &str) -> String {
    url.trim_start_matches("http://").to_owned()
}

/// Writes `request` on a fresh connection and reads until the server closes it (5 s at most).
fn exchange(address: &str, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

/// `GET path` on a fresh connection: the status code and the body.
fn get(address: &str, path: &str) -> (u16, String) {
    let answer = exchange(
        address,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

#[test]
fn junk_methods_and_paths_leave_metrics_small() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve_in(dir.path(), &[("BRIDLE_ADMIN_KEY", ADMIN)]);
    let address = address(&url);
    // 3,000 requests with 1 KB random methods, to a real path and to junk paths.
    let mut seed = 0x2545_f491_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for _ in 0..3 {
        let mut batch = String::new();
        for i in 0..1000 {
            let method: String = (0..1024)
                .map(|_| char::from(b'A' + (next() % 26) as u8))
                .collect();
            let path = if i % 2 == 0 {
                "/v1/conversations".to_owned()
            } else {
                format!("/{}/{}", next(), next())
            };
            batch.push_str(&format!("{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n"));
        }
        batch.push_str("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(!exchange(&address, batch.as_bytes()).is_empty());
    }
    let (status, metrics) = get(&address, "/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.len() < 64 * 1024,
        "/metrics grew to {} bytes",
        metrics.len()
    );
    assert!(
        metrics.contains(r#"method="other",route="/v1/conversations""#),
        "junk methods are counted as other"
    );
}

#[test]
fn http2_prior_knowledge_is_refused_and_idle_h2_connections_hold_no_slot() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve_in(
        dir.path(),
        &[
            ("BRIDLE_ADMIN_KEY", ADMIN),
            ("BRIDLE__SERVER__MAX_CONNECTIONS", "4"),
            ("BRIDLE__SERVER__HEADER_TIMEOUT_MS", "60000"),
        ],
    );
    let address = address(&url);
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    // As many HTTP/2 connections as there are slots, each left open after its preface: each is
    // answered as HTTP/1.1 (or closed) at once, not served as HTTP/2 and left idle.
    let started = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(PREFACE).unwrap();
        idle.push(stream);
    }
    for stream in &mut idle {
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        assert!(read.is_ok(), "an HTTP/2 connection was kept open: {read:?}");
        let text = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || text.starts_with("HTTP/1.1 "),
            "answered as HTTP/2: {:?}",
            &answer[..answer.len().min(32)]
        );
    }
    // Well before the 60 s header deadline would have freed them.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(get(&address, "/healthz").0, 200, "the slots are free");
    // curl's own HTTP/2 prior knowledge, when this curl speaks HTTP/2.
    let curl = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
            "--max-time",
            "5",
        ])
        .arg("--http2-prior-knowledge")
        .arg(format!("{url}/healthz"))
        .output();
    if let Ok(out) = curl {
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(!said.starts_with("2 "), "served over HTTP/2: {said}");
    }
}

/// `POST /v1/chat/completions` of `body` with `extra_headers` (raw header lines) as the user
/// `KEY`: the status code and the body.
fn complete(address: &str, extra_headers: &str, body: &str) -> (u16, String) {
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Authorization: Bearer {USER_KEY}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{extra_headers}\r\n{body}",
        body.len()
    );
    let text = String::from_utf8_lossy(&exchange(address, request.as_bytes())).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

const USER_KEY: &str = "hostile-user-key-0000000000";

#[test]
fn oversized_context_headers_and_model_names_are_refused_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let users = format!("eve:{USER_KEY}");
    let (_server, url) = serve_in(dir.path(), &[("BRIDLE_USER_KEYS", users.as_str())]);
    let address = address(&url);
    let chat = r#""messages": [{"role": "user", "content": "hi"}]"#;
    let enforced =
        format!(r#"{{"model": "mock", "response_format": {{"type": "json_object"}}, {chat}}}"#);
    // A context past max_context_bytes (64 KiB of JSON) in the header: 422, nothing run.
    let huge = format!(r#"{{"page": "{}"}}"#, "p".repeat(70 * 1024));
    let (status, body) = complete(
        &address,
        &format!("x-bridle-context: {huge}\r\n"),
        &enforced,
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        body.len() < 1024,
        "the refusal stays short: {} bytes",
        body.len()
    );
    // A model name of 100,000 characters: 404, echoing at most 100 of them.
    let name = "m".repeat(100_000);
    let (status, body) = complete(&address, "", &format!(r#"{{"model": "{name}", {chat}}}"#));
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("model_not_found"), "{body}");
    assert!(
        body.len() < 1024,
        "the refusal stays short: {} bytes",
        body.len()
    );
}
