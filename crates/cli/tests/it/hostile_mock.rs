//! The built-in mock as a denial-of-service lever, through the real `bridle serve` over
//! loopback: behind an OpenAI-compatible upstream (`bridle mock-llm`) the mock is no model — a
//! user's `"model": "mock"` is an unknown model, and the OpenAI-compatible endpoint answers
//! such a request with the configured upstream, as for any name it does not know; in a
//! zero-config server, where the mock is the model, a hostile `response_format` is answered
//! within the mock's byte budget and the stored attempts are no larger than the contract's
//! `max_bytes`.

use crate::{Running, spawn_listening};
use bridle_engine::store::{Message, MessageRole};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use std::ffi::OsStr;

const ADMIN: &str = "admin-hostile-key-0000000";
const ADA: &str = "ada-hostile-key-000000000";

/// The largest reply a contract made from a `response_format` schema accepts.
const MAX_BYTES: usize = 4 * 1024 * 1024;

/// `GET /admin/v1/conversations`.
#[derive(Debug, Deserialize)]
struct Listing {
    items: Vec<Listed>,
}

#[derive(Debug, Deserialize)]
struct Listed {
    id: String,
}

/// `GET /admin/v1/conversations/{id}`.
#[derive(Debug, Deserialize)]
struct Detail {
    messages: Vec<Message>,
}

/// `GET /v1/models`.
#[derive(Debug, Deserialize)]
struct Models {
    data: Vec<Model>,
}

#[derive(Debug, Deserialize)]
struct Model {
    id: String,
}

/// 1,000 strings of 65,536 characters (65 MB of reply asked for), and a schema nothing meets.
fn hostile_formats() -> [Value; 2] {
    let format = |schema: Value| json!({"type": "json_schema", "json_schema": {"name": "hostile", "schema": schema}});
    [
        format(json!({"type": "array", "minItems": 1000,
                      "items": {"type": "string", "minLength": 65536}})),
        format(json!({"not": {}})),
    ]
}

fn serve(dir: &std::path::Path, envs: &[(&str, &str)]) -> (Running, String) {
    let args = [
        OsStr::new("serve"),
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--data-dir"),
        dir.as_os_str(),
    ];
    let users = format!("ada:{ADA}");
    let mut all = vec![
        ("BRIDLE_ADMIN_KEY", ADMIN),
        ("BRIDLE_USER_KEYS", users.as_str()),
        ("BRIDLE__RETRY__DELAY_MS", "0"),
    ];
    all.extend_from_slice(envs);
    spawn_listening(&args, &all)
}

async fn get<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: String,
    key: &str,
) -> T {
    let response = client.get(url).bearer_auth(key).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

async fn post(client: &reqwest::Client, url: String, body: &Value) -> (StatusCode, String) {
    let response = client
        .post(url)
        .bearer_auth(ADA)
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

/// Every stored message of every conversation, through the admin API.
async fn stored(client: &reqwest::Client, base: &str) -> Vec<Message> {
    let listing: Listing = get(client, format!("{base}/admin/v1/conversations"), ADMIN).await;
    let mut all = Vec::new();
    for conversation in listing.items {
        let url = format!("{base}/admin/v1/conversations/{}", conversation.id);
        let detail: Detail = get(client, url, ADMIN).await;
        all.extend(detail.messages);
    }
    all
}

#[tokio::test]
async fn behind_an_upstream_the_mock_is_no_model() {
    let (_upstream, upstream_url) = spawn_listening(
        &["mock-llm", "--port", "0", "--seed", "5"].map(OsStr::new),
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let upstream = format!("{upstream_url}/v1");
    let (_gateway, base) = serve(dir.path(), &[("OPENAI_BASE_URL", &upstream)]);
    let client = reqwest::Client::new();

    let models: Models = get(&client, format!("{base}/v1/models"), ADA).await;
    let names: Vec<&str> = models.data.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(names, ["openai"]);

    // The conversation API refuses the name.
    let (status, body) = post(
        &client,
        format!("{base}/v1/conversations"),
        &json!({"contract": "selfhelp-response"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let conversation: Listed = serde_json::from_str(&body).unwrap();
    let (status, body) = post(
        &client,
        format!("{base}/v1/conversations/{}/messages", conversation.id),
        &json!({"content": "hello", "model": "mock"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("unknown model \\\"mock\\\""), "{body}");

    // The OpenAI-compatible endpoint refuses the name as OpenAI would (404 model_not_found),
    // so nothing runs; the same hostile schema sent to the configured model goes upstream,
    // never to a mock in the gateway.
    for format in hostile_formats() {
        let request = json!({"model": "mock", "response_format": format,
                             "messages": [{"role": "user", "content": "Fill it in."}]});
        let (status, body) = post(&client, format!("{base}/v1/chat/completions"), &request).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(body.contains("model_not_found"), "{body}");
        let request = json!({"model": "openai", "response_format": format,
                             "messages": [{"role": "user", "content": "Fill it in."}]});
        let (status, body) = post(&client, format!("{base}/v1/chat/completions"), &request).await;
        assert_ne!(status, StatusCode::OK, "{body}");
    }
    let attempts: Vec<Message> = stored(&client, &base)
        .await
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .collect();
    assert_eq!(attempts.len(), 6, "three attempts for each request");
    for attempt in &attempts {
        assert_eq!(attempt.data.provider.as_deref(), Some("openai"));
        assert!(attempt.data.content.len() <= bridle_mock::MAX_REPLY_BYTES);
    }
    let log: Vec<bridle_mock::LoggedRequest> =
        get(&client, format!("{upstream_url}/_mock/requests"), ADA).await;
    let completions = log
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(completions, 6, "each attempt reached the upstream");
}

#[tokio::test]
async fn zero_config_answers_a_hostile_schema_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (_gateway, base) = serve(dir.path(), &[]);
    let client = reqwest::Client::new();
    for format in hostile_formats() {
        let request = json!({"model": "mock", "response_format": format,
                             "messages": [{"role": "user", "content": "Fill it in."}]});
        let (status, body) = post(&client, format!("{base}/v1/chat/completions"), &request).await;
        // No value the mock can make meets either schema: the attempts run out (422
        // contract_unmet, which the OpenAI SDKs do not retry).
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body.contains("contract_unmet"), "{body}");
    }
    let attempts: Vec<Message> = stored(&client, &base)
        .await
        .into_iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .collect();
    assert_eq!(attempts.len(), 6, "three attempts for each request");
    let mut largest = 0;
    for attempt in &attempts {
        let data = &attempt.data;
        assert_eq!(data.provider.as_deref(), Some("mock"));
        assert!(!data.is_validated);
        let raw = data.raw_response.as_ref().unwrap().to_string().len();
        assert!(data.content.len() <= MAX_BYTES && raw <= MAX_BYTES);
        assert!(data.content.len() <= bridle_mock::MAX_REPLY_BYTES);
        largest = largest.max(data.content.len());
    }
    // The budget was reached (65 MB were asked for), not missed by answering something small.
    assert!(
        largest > bridle_mock::MAX_REPLY_BYTES / 2,
        "{largest} bytes"
    );
}
