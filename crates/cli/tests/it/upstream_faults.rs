//! Every upstream fault through the real binaries: `bridle serve` behind `bridle mock-llm`,
//! whose script gives each turn one fault then a valid reply — HTTP 500, 429 with
//! `Retry-After`, an answer slower than the provider timeout, a connection reset before any
//! status line, a stream broken off, bytes that are not UTF-8, a garbage body, a truncated
//! reply — non-streamed and streamed; then turns whose every attempt fails, and an upstream
//! nobody listens on. Each turn ends in a valid reply or a clear error (502 `upstream_failed`,
//! or an SSE `error` event), the gateway stays healthy, and the attempts it stored are the
//! mock's request log one for one, in order, each with the body the mock received.

use crate::{create_conversation, fixture, serve_in, spawn_listening};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-faults-key-0000000";
const ADA: &str = "ada-faults-key-000000000";
/// The provider timeout; the `slow` fault answers later than this.
const TIMEOUT_SECS: &str = "0.5";
const SLOW_MS: u64 = 1500;
const MAX_ATTEMPTS: usize = 3;

/// The faults a turn meets once before a valid reply, as script entries.
fn transient() -> Vec<(&'static str, Value)> {
    vec![
        ("http500", json!({"kind": "http500"})),
        ("http429", json!({"kind": "http429", "retry_after_secs": 1})),
        ("slow", json!({"kind": "slow", "ms": SLOW_MS})),
        ("reset", json!({"kind": "reset"})),
        ("broken_stream", json!({"kind": "broken_stream"})),
        ("invalid_utf8", json!({"kind": "invalid_utf8"})),
        ("garbage", json!({"kind": "garbage"})),
        ("truncate", json!({"kind": "truncate"})),
    ]
}

/// A turn that fails at every attempt, for each way of sending.
fn hopeless(streamed: bool) -> [&'static str; MAX_ATTEMPTS] {
    if streamed {
        ["broken_stream", "invalid_utf8", "garbage"]
    } else {
        ["reset", "garbage", "invalid_utf8"]
    }
}

/// One turn of the run: what the script does to it, and how it must end.
struct Turn {
    label: String,
    streamed: bool,
    script: Vec<Value>,
    /// `Some(n)`: a valid reply after n attempts; `None`: a clear error.
    attempts: Option<usize>,
}

fn turns() -> Vec<Turn> {
    let mut turns = Vec::new();
    for streamed in [false, true] {
        for (name, fault) in transient() {
            turns.push(Turn {
                label: format!("{name} (streamed: {streamed})"),
                streamed,
                script: vec![json!({"fault": fault}), json!({"valid": true})],
                attempts: Some(2),
            });
        }
        let faults = hopeless(streamed);
        turns.push(Turn {
            label: format!("{} (streamed: {streamed})", faults.join(", ")),
            streamed,
            script: faults
                .iter()
                .map(|kind| json!({"fault": {"kind": kind}}))
                .collect(),
            attempts: None,
        });
    }
    turns
}

/// How a turn ended, as the client saw it.
#[derive(Debug)]
enum Ending {
    /// A valid reply (not a fallback): its value and attempts.
    Reply { value: Value, attempts: usize },
    /// A clear error: its code and message.
    Error { code: String, message: String },
}

struct Gateway {
    url: String,
    client: reqwest::Client,
}

impl Gateway {
    async fn conversation(&self) -> String {
        create_conversation(&self.client, &self.url, ADA, "ticket-triage").await
    }

    /// Sends one message to `model` and reads how the turn ended, plainly or as server-sent
    /// events.
    async fn send(&self, conversation: &str, text: &str, model: &str, streamed: bool) -> Ending {
        let mut request = self
            .client
            .post(format!(
                "{}/v1/conversations/{conversation}/messages",
                self.url
            ))
            .bearer_auth(ADA)
            .json(&json!({"content": text, "model": model}));
        if streamed {
            request = request.header("accept", "text/event-stream");
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        if !streamed {
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {status} {text}"));
            return match status {
                StatusCode::OK => {
                    assert_eq!(body["fallback"], false, "{body}");
                    Ending::Reply {
                        value: body["value"].clone(),
                        attempts: usize::try_from(body["attempts"].as_u64().unwrap()).unwrap(),
                    }
                }
                StatusCode::BAD_GATEWAY => Ending::Error {
                    code: body["error"]["code"].as_str().unwrap().to_owned(),
                    message: body["error"]["message"].as_str().unwrap().to_owned(),
                },
                other => panic!("neither a reply nor a clear error: {other} {body}"),
            };
        }
        assert_eq!(status, StatusCode::OK, "{text}");
        let events = sse_events(&text);
        let (name, data) = events.last().unwrap_or_else(|| panic!("no event: {text}"));
        match name.as_str() {
            "message_complete" => {
                assert_eq!(data["fallback"], false, "{data}");
                Ending::Reply {
                    value: data["value"].clone(),
                    attempts: usize::try_from(data["attempts"].as_u64().unwrap()).unwrap(),
                }
            }
            "error" => Ending::Error {
                code: data["code"].as_str().unwrap().to_owned(),
                message: data["message"].as_str().unwrap().to_owned(),
            },
            other => panic!("the stream ended with {other}: {text}"),
        }
    }

    /// The attempts stored for a conversation: assistant messages that are not fallbacks.
    async fn attempts(&self, conversation: &str) -> Vec<Value> {
        let view: Value = self
            .client
            .get(format!(
                "{}/admin/v1/conversations/{conversation}",
                self.url
            ))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        view["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant" && m["is_fallback"] != true)
            .cloned()
            .collect()
    }
}

/// `(event, data)` of each server-sent event (comments skipped).
fn sse_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((name.to_owned(), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

/// A port nothing listens on (bound, then let go).
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn every_upstream_fault_ends_in_a_reply_or_a_clear_error_and_every_request_is_stored() {
    let started = Instant::now();
    let turns = turns();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let entries: Vec<Value> = turns
        .iter()
        .map(|t| json!({"attempts": t.script}))
        .collect();
    std::fs::write(&script, json!({"turns": entries}).to_string()).unwrap();
    let contracts = fixture("contracts");
    let contracts = contracts.to_str().unwrap();

    let (_mock, mock_url) = spawn_listening(
        &[
            OsStr::new("mock-llm"),
            OsStr::new("--port"),
            OsStr::new("0"),
            OsStr::new("--seed"),
            OsStr::new("7"),
            OsStr::new("--script"),
            script.as_os_str(),
        ],
        &[("BRIDLE_CONTRACTS_DIR", contracts)],
    );
    let data = dir.path().join("data");
    let upstream = format!("{mock_url}/v1");
    let dead = format!("http://127.0.0.1:{}/v1", dead_port());
    let (_serve, url) = serve_in(
        &data,
        &[
            ("BRIDLE_CONTRACTS_DIR", contracts),
            ("BRIDLE_ADMIN_KEY", ADMIN),
            ("BRIDLE_USER_KEYS", &format!("ada:{ADA}")),
            ("BRIDLE__RETRY__DELAY_MS", "0"),
            // More turns than the default per-user rate allows in a minute.
            ("BRIDLE__SERVER__LIMITS__ENABLED", "false"),
            // The mock, with a short timeout (the OPENAI_BASE_URL provider's is fixed).
            ("BRIDLE__PROVIDERS__UP__KIND", "openai"),
            ("BRIDLE__PROVIDERS__UP__BASE_URL", &upstream),
            ("BRIDLE__PROVIDERS__UP__TIMEOUT_SECS", TIMEOUT_SECS),
            ("BRIDLE__MODELS__UP__PROVIDER", "up"),
            ("BRIDLE__MODELS__UP__MODEL", "mock-model"),
            ("BRIDLE__DEFAULT_MODEL", "up"),
            // The dead upstream, as model "openai".
            ("OPENAI_BASE_URL", &dead),
        ],
    );
    let gateway = Gateway {
        url,
        client: reqwest::Client::new(),
    };

    let mut conversations = Vec::new();
    for (n, turn) in turns.iter().enumerate() {
        let conversation = gateway.conversation().await;
        let text = format!("Ticket {n}: the export button does nothing");
        let ending = gateway
            .send(&conversation, &text, "up", turn.streamed)
            .await;
        match (&ending, turn.attempts) {
            (Ending::Reply { value, attempts }, Some(expected)) => {
                assert_eq!(*attempts, expected, "{}: {value}", turn.label);
                assert!(value["priority"].is_string(), "{}: {value}", turn.label);
            }
            (Ending::Error { code, message }, None) => {
                assert_eq!(code, "upstream_failed", "{}: {message}", turn.label);
                assert!(message.contains("attempt"), "{}: {message}", turn.label);
            }
            _ => panic!("{}: {ending:?}", turn.label),
        }
        conversations.push(conversation);
    }

    // Nobody listens upstream: every attempt fails to connect, the turn ends in a clear error.
    for streamed in [false, true] {
        let conversation = gateway.conversation().await;
        let ending = gateway
            .send(&conversation, "Is anyone there?", "openai", streamed)
            .await;
        let Ending::Error { code, message } = &ending else {
            panic!("dead upstream (streamed: {streamed}): {ending:?}")
        };
        assert_eq!(code, "upstream_failed", "{message}");
        let attempts = gateway.attempts(&conversation).await;
        assert_eq!(
            attempts.len(),
            MAX_ATTEMPTS,
            "dead upstream: every attempt stored"
        );
        for attempt in &attempts {
            let error = attempt["error"].as_str().unwrap();
            assert!(error.starts_with("connection:"), "{error}");
        }
    }

    // Still healthy: a plain turn goes through (the script is used up: a valid reply).
    let health = gateway
        .client
        .get(format!("{}/healthz", gateway.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let conversation = gateway.conversation().await;
    let ending = gateway
        .send(&conversation, "One more ticket", "up", false)
        .await;
    assert!(
        matches!(ending, Ending::Reply { attempts: 1, .. }),
        "{ending:?}"
    );
    conversations.push(conversation);

    // The stored attempts are the mock's request log, one for one and in order.
    let mut stored = Vec::new();
    for conversation in &conversations {
        stored.extend(gateway.attempts(conversation).await);
    }
    let logged: Value = gateway
        .client
        .get(format!("{mock_url}/_mock/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let logged = logged.as_array().unwrap();
    let expected: usize = turns
        .iter()
        .map(|t| t.attempts.unwrap_or(MAX_ATTEMPTS))
        .sum::<usize>()
        + 1;
    assert_eq!(logged.len(), expected, "requests the mock received");
    assert_eq!(
        stored.len(),
        logged.len(),
        "one stored attempt per request the mock received"
    );
    let faults: Vec<Value> = logged
        .iter()
        .map(|r| r["answer"]["fault"].clone())
        .collect();
    for (i, (attempt, request)) in stored.iter().zip(logged).enumerate() {
        assert_eq!(
            attempt["request_payload"]["body"], request["body"],
            "attempt {i}: the stored body is the body the mock received"
        );
        let failed_upstream = attempt["error"].is_string();
        let fault = request["answer"]["fault"]["kind"].as_str().unwrap_or("");
        let transport = !fault.is_empty() && fault != "truncate";
        assert_eq!(
            failed_upstream, transport,
            "attempt {i} ({fault}): {attempt}"
        );
        assert_eq!(
            attempt["is_validated"] == true,
            fault.is_empty(),
            "attempt {i} ({fault})"
        );
    }
    // Every fault was met, in the order of the script.
    let met: Vec<&str> = faults.iter().filter_map(|f| f["kind"].as_str()).collect();
    let planned: Vec<&str> = turns
        .iter()
        .flat_map(|t| t.script.iter())
        .filter_map(|e| e["fault"]["kind"].as_str())
        .collect();
    assert_eq!(met, planned);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
