//! The native API through `app()`: routes, status codes, input limits and the
//! error body shape.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use bridle_engine::store::{self, ConversationStatus};
use bridle_engine::{Config, Engine};
use bridle_server::{AppState, Keys, Role, ServerSettings, app};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

pub const ADMIN: &str = "admin-key-000000000000";
pub const ADA: &str = "ada-key-0000000000000000";
pub const BOB: &str = "bob-key-0000000000000000";

pub struct Harness {
    pub state: AppState,
    _dir: tempfile::TempDir,
}

impl Harness {
    pub async fn new() -> Self {
        Self::with_config("").await
    }

    /// A harness whose bridle.toml also holds `extra`.
    pub async fn with_config(extra: &str) -> Self {
        Self::with_limits(extra, 1000).await
    }

    /// A harness allowing `rpm` requests per minute per user.
    pub async fn with_limits(extra: &str, rpm: u32) -> Self {
        Self::with_toml(&format!("[retry]\ndelay_ms = 0\n{extra}"), rpm).await
    }

    /// A harness whose bridle.toml is `text`, allowing `rpm` requests per minute per user.
    pub async fn with_toml(text: &str, rpm: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        let store = Arc::from(store::open(&url).await.unwrap());
        let config = Config::from_toml(text, &Default::default()).unwrap();
        let engine = Engine::with_store(config, store).unwrap();
        let mut keys = Keys::default();
        keys.add_key(ADMIN, Role::Admin, "admin").unwrap();
        keys.add_key(ADA, Role::User, "ada").unwrap();
        keys.add_key(BOB, Role::User, "bob").unwrap();
        let mut settings = ServerSettings {
            max_message_chars: 200,
            max_body_bytes: 4096,
            ..ServerSettings::default()
        };
        settings.limits.requests_per_minute = rpm;
        let limiter = bridle_server::limits::build(&settings.limits).unwrap();
        Self {
            state: AppState::new(engine, Arc::new(keys.into()), Arc::new(settings), limiter),
            _dir: dir,
        }
    }

    /// Sends a request; `key` None sends no key.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        call_app(&self.state, method, path, key, body).await
    }

    pub async fn raw(&self, request: Request<Body>) -> (StatusCode, Value) {
        raw_app(&self.state, request).await
    }

    /// Sends a request and returns the whole response, headers included.
    pub async fn respond(&self, request: Request<Body>) -> axum::response::Response {
        app(self.state.clone()).oneshot(request).await.unwrap()
    }

    /// The SQLite database file of the harness's store.
    pub fn database_path(&self) -> std::path::PathBuf {
        self._dir.path().join("bridle.db")
    }

    /// A conversation of the key's user.
    pub async fn conversation(&self, key: &str) -> String {
        let (status, body) = self.call("POST", "/v1/conversations", Some(key), Some(json!({"contract": "selfhelp-response", "context": {"page": "home"}, "prompt": "Be brief."}))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }
}

/// Sends one request to `app(state)`; the status and the body (JSON, else as a string).
pub async fn call_app(
    state: &AppState,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let request = match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => request.body(Body::empty()).unwrap(),
    };
    raw_app(state, request).await
}

async fn raw_app(state: &AppState, request: Request<Body>) -> (StatusCode, Value) {
    let response = app(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    (status, value)
}

fn assert_error_shape(body: &Value) {
    assert!(
        body["error"]["message"].is_string()
            && body["error"]["type"].is_string()
            && body["error"]["code"].is_string(),
        "{body}"
    );
}

#[tokio::test]
async fn health_needs_no_key() {
    let h = Harness::new().await;
    let (status, body) = h.call("GET", "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["store"], "sqlite");
}

#[tokio::test]
async fn users_list_the_contracts_they_can_start() {
    let h = Harness::new().await;
    let (status, body) = h.call("GET", "/v1/contracts", Some(ADA), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let items = body["items"].as_array().unwrap();
    let named = |name: &str| items.iter().find(|c| c["name"] == name).cloned();
    let selfhelp = named("selfhelp-response").expect("a built-in contract");
    assert_eq!(selfhelp["kind"], "json");
    assert!(selfhelp["description"].as_str().unwrap().len() > 10);
    assert_eq!(named("topic-analysis").unwrap()["kind"], "xml");
    assert_eq!(items.len(), 4, "{body}");
}

#[tokio::test]
async fn a_conversation_round_trip() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    let (status, body) = h
        .call(
            "POST",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            Some(json!({"content": "I feel stressed"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["value"]["type"], "response");
    assert_eq!(body["attempts"], 1);
    assert_eq!(body["fallback"], false);
    assert!(body["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let (status, history) = h
        .call(
            "GET",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["content"], "I feel stressed");
    assert_eq!(messages[1]["value"], body["value"]);
    let text = history.to_string();
    for secret in ["request_payload", "raw_response", "violations"] {
        assert!(!text.contains(secret), "{secret} is admin-only");
    }
    let (status, list) = h.call("GET", "/v1/conversations", Some(ADA), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["id"], id.as_str());
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    let path = format!("/v1/conversations/{id}/messages");
    let cases: Vec<(Option<Value>, StatusCode)> = vec![
        (
            Some(json!({"content": "x".repeat(201)})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Some(json!({"content": "   "})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (Some(json!({"content": 5})), StatusCode::BAD_REQUEST),
        (Some(json!({"text": "hi"})), StatusCode::BAD_REQUEST),
        (
            Some(json!({"content": "hi", "model": "nope"})),
            StatusCode::BAD_REQUEST,
        ),
        (
            Some(json!({"content": "y".repeat(5000)})),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
    ];
    for (body, expected) in cases {
        let (status, response) = h.call("POST", &path, Some(ADA), body.clone()).await;
        assert_eq!(status, expected, "{body:?}: {response}");
        assert_error_shape(&response);
    }
    let garbage = Request::builder()
        .method("POST")
        .uri(&path)
        .header(header::AUTHORIZATION, format!("Bearer {ADA}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(vec![0xff, 0xfe, b'{']))
        .unwrap();
    let (status, response) = h.raw(garbage).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error_shape(&response);
    let (status, response) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "no-such"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown contract")
    );
    let (status, _) = h
        .call(
            "POST",
            "/v1/conversations/missing/messages",
            Some(ADA),
            Some(json!({"content": "hi"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Nothing was stored by the refused messages.
    let (_, history) = h.call("GET", &path, Some(ADA), None).await;
    assert_eq!(history["messages"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn a_blocked_conversation_refuses_messages() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    h.state
        .engine
        .store()
        .set_status(&id, ConversationStatus::Blocked)
        .await
        .unwrap();
    let (status, body) = h
        .call(
            "POST",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            Some(json!({"content": "hi"})),
        )
        .await;
    assert_eq!(status, StatusCode::LOCKED, "{body}");
    assert_error_shape(&body);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("112"),
        "the blocked answer carries crisis resources: {body}"
    );
}

#[tokio::test]
async fn the_request_limit_answers_429_with_retry_after() {
    // Starting the conversation is one of the four requests of the minute.
    let h = Harness::with_limits("", 4).await;
    let id = h.conversation(ADA).await;
    let path = format!("/v1/conversations/{id}/messages");
    for _ in 0..3 {
        assert_eq!(
            h.call("POST", &path, Some(ADA), Some(json!({"content": "hi"})))
                .await
                .0,
            StatusCode::OK
        );
    }
    let request = Request::builder()
        .method("POST")
        .uri(&path)
        .header(header::AUTHORIZATION, format!("Bearer {ADA}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"content": "one more"}).to_string()))
        .unwrap();
    let response = app(h.state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    // Another user is not affected.
    let bob = h.conversation(BOB).await;
    assert_eq!(
        h.call(
            "POST",
            &format!("/v1/conversations/{bob}/messages"),
            Some(BOB),
            Some(json!({"content": "hi"}))
        )
        .await
        .0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn limits_can_be_turned_off() {
    let mut h = Harness::with_limits("", 1).await;
    let mut settings = (*h.state.settings).clone();
    settings.limits.enabled = false;
    h.state.settings = Arc::new(settings);
    let id = h.conversation(ADA).await;
    for _ in 0..3 {
        let (status, body) = h
            .call(
                "POST",
                &format!("/v1/conversations/{id}/messages"),
                Some(ADA),
                Some(json!({"content": "hi"})),
            )
            .await;
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    }
}
