//! [`MockServer`] and [`serve`]: the mock model over HTTP (axum) — `POST /v1/chat/completions`
//! (OpenAI), `POST /openai/deployments/{deployment}/chat/completions?api-version=…` (Azure
//! OpenAI: the same front end), `POST /v1/messages` (Anthropic),
//! `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`
//! (Gemini; also under `/v1/models/`), `GET /v1/models`, and the request log at
//! `GET`/`DELETE /_mock/requests`. Handlers only read the body, check the API key, let the
//! front end ([`crate::openai`], [`crate::anthropic`]) parse it, ask the [`MockModel`], wait
//! out any delay and send what the front end rendered — JSON, or SSE frames paced and cut as
//! configured ([`crate::stream`]), possibly breaking off, spoiled on the wire
//! ([`crate::corrupt`]), or nothing at all: the connection reset ([`crate::reset`]); how a
//! stream ended is written back into its log entry. Malformed requests get a 400 with an error
//! body, never a panic.

use crate::config::{ConfigError, MockConfig};
use crate::corrupt;
use crate::faults::Fault;
use crate::log::{Answer, LoggedRequest, RequestLog};
use crate::model::MockModel;
use crate::request::{CallMade, MockReply, MockRequest};
use crate::reset::{ResetHandle, ResettableListener};
use crate::stream::{Pacing, Tally, sse_body};
use crate::{anthropic, gemini, openai};
use axum::Extension;
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Largest request body accepted.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Largest non-JSON body kept in the log, in bytes.
const MAX_LOGGED_TEXT: usize = 64 * 1024;
/// Model names listed by `GET /v1/models` (any name is accepted in requests).
const MODELS: &[&str] = &["bridle-mock", "bridle-mock-large"];

/// A parsed request and the front-end options the model does not need.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub request: MockRequest,
    /// OpenAI `stream_options.include_usage` (Anthropic always reports usage).
    pub include_usage: bool,
}

/// What a front end made of a reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rendered {
    /// A JSON body (a completion, or an error with `Retry-After`).
    Json {
        status: u16,
        retry_after: Option<u64>,
        body: Value,
    },
    /// SSE frames; `broken` cuts the connection after them.
    Events { frames: Vec<String>, broken: bool },
    /// No response: the connection is closed before anything is sent.
    Reset,
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
    /// Gemini, for `model` (from the path); `stream` for `streamGenerateContent`.
    Gemini {
        model: String,
        stream: bool,
    },
}

impl Api {
    fn parse(&self, body: &Value) -> Result<Call, String> {
        match self {
            Self::OpenAi => openai::parse(body),
            Self::Anthropic => anthropic::parse(body),
            Self::Gemini { model, stream } => gemini::parse(body, model, *stream),
        }
    }

    fn render(&self, reply: &MockReply, call: &Call, piece_chars: usize) -> Rendered {
        match self {
            Self::OpenAi => openai::render(reply, call, piece_chars),
            Self::Anthropic => anthropic::render(reply, call, piece_chars),
            Self::Gemini { .. } => gemini::render(reply, call, piece_chars),
        }
    }

    fn calls_made(&self, reply: &MockReply) -> Vec<CallMade> {
        match self {
            Self::OpenAi => openai::calls_made(reply),
            Self::Anthropic => anthropic::calls_made(reply),
            Self::Gemini { .. } => gemini::calls_made(reply),
        }
    }

    fn error(&self, status: u16, message: &str) -> Response {
        let body = match self {
            Self::OpenAi => openai::error(status, message),
            Self::Anthropic => anthropic::error(status, message),
            Self::Gemini { .. } => gemini::error(status, message),
        };
        json_response(status, None, &body)
    }
}

#[derive(Debug)]
struct Shared {
    model: MockModel,
    log: RequestLog,
}

/// The mock's axum app (for `oneshot` tests); [`serve`] and [`MockServer`] run it. Served
/// any other way than by those two, a `reset` fault cannot close the connection: its answer
/// is a 200 whose body fails at once.
pub fn app(config: MockConfig) -> Result<Router, ConfigError> {
    Ok(router(Arc::new(Shared {
        model: MockModel::new(config)?,
        log: RequestLog::default(),
    })))
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .route(
            "/openai/deployments/{deployment}/chat/completions",
            post(azure_chat_completions),
        )
        .route("/v1beta/models/{target}", post(generate_content))
        .route("/v1/models/{target}", post(generate_content))
        .route("/v1/models", get(models))
        .route("/_mock/requests", get(list_requests).delete(clear_requests))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

/// Serves the mock on `listener` until the task is dropped or the listener fails.
pub async fn serve(listener: TcpListener, config: MockConfig) -> std::io::Result<()> {
    let app = app(config).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    run(listener, app).await
}

/// Serves `app` on `listener` through connections a handler can reset.
async fn run(listener: TcpListener, app: Router) -> std::io::Result<()> {
    let app = app.into_make_service_with_connect_info::<ResetHandle>();
    axum::serve(ResettableListener(listener), app).await
}

/// A mock server on `127.0.0.1` with an OS-chosen port, running in a background task until
/// dropped. For tests: point a provider at [`MockServer::url`], then read
/// [`MockServer::requests`].
#[derive(Debug)]
pub struct MockServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Binds `127.0.0.1:0` and starts serving. Needs a Tokio runtime.
    pub async fn start(config: MockConfig) -> std::io::Result<Self> {
        let model = MockModel::new(config)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            model,
            log: RequestLog::default(),
        });
        let app = router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(e) = run(listener, app).await {
                tracing::error!(error = %e, "mock server stopped");
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT` (append `/v1` for an OpenAI or Anthropic base URL).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.log.all()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.shared.log.clear();
    }

    /// The model behind the server (e.g. to [`MockModel::reset`] a script).
    pub fn model(&self) -> &MockModel {
        &self.shared.model
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The connection a request came on, when it can be reset (not through [`app`] alone).
type Connection = Option<Extension<ConnectInfo<ResetHandle>>>;

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    connection: Connection,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reset = connection.map(|Extension(ConnectInfo(handle))| handle);
    let path = "/v1/chat/completions";
    complete(shared, Api::OpenAi, path, reset, &headers, &body).await
}

async fn messages(
    State(shared): State<Arc<Shared>>,
    connection: Connection,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reset = connection.map(|Extension(ConnectInfo(handle))| handle);
    complete(
        shared,
        Api::Anthropic,
        "/v1/messages",
        reset,
        &headers,
        &body,
    )
    .await
}

/// The query parameters the Azure and Gemini routes read.
#[derive(Debug, Default, serde::Deserialize)]
struct RouteQuery {
    /// Azure's API version (required there).
    #[serde(rename = "api-version")]
    api_version: Option<String>,
    /// Gemini's response form: `sse` for a server-sent-event stream.
    alt: Option<String>,
}

async fn azure_chat_completions(
    State(shared): State<Arc<Shared>>,
    connection: Connection,
    Path(deployment): Path<String>,
    Query(query): Query<RouteQuery>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reset = connection.map(|Extension(ConnectInfo(handle))| handle);
    let path = uri.path().to_owned();
    if query.api_version.is_none() {
        return refuse(
            &shared,
            &Api::OpenAi,
            &path,
            &body,
            "Missing required query parameter: api-version (mock: Azure OpenAI deployment URLs need it).",
        );
    }
    // Azure's body may leave the model out: the deployment is the model.
    let body = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(mut map)) => {
            map.entry("model").or_insert(Value::String(deployment));
            Bytes::from(serde_json::to_vec(&map).unwrap_or_default())
        }
        _ => body,
    };
    complete(shared, Api::OpenAi, &path, reset, &headers, &body).await
}

async fn generate_content(
    State(shared): State<Arc<Shared>>,
    connection: Connection,
    Path(target): Path<String>,
    Query(query): Query<RouteQuery>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reset = connection.map(|Extension(ConnectInfo(handle))| handle);
    let path = uri.path().to_owned();
    let sse = query.alt.as_deref() == Some("sse");
    let (model, stream) = match target.rsplit_once(':') {
        Some((model, "generateContent")) => (model, false),
        Some((model, "streamGenerateContent")) if sse => (model, true),
        Some((_, "streamGenerateContent")) => {
            let api = Api::Gemini {
                model: String::new(),
                stream: true,
            };
            let message = "the mock streams with alt=sse only (:streamGenerateContent?alt=sse)";
            return refuse(&shared, &api, &path, &body, message);
        }
        _ => {
            let api = Api::Gemini {
                model: String::new(),
                stream: false,
            };
            let message =
                format!("Invalid URL (POST {path}): expected models/MODEL:generateContent");
            return refuse_with(&shared, &api, 404, &path, &body, &message);
        }
    };
    let api = Api::Gemini {
        model: model.to_owned(),
        stream,
    };
    complete(shared, api, &path, reset, &headers, &body).await
}

/// A 400 for a request refused before it is parsed, logged.
fn refuse(shared: &Shared, api: &Api, path: &str, body: &[u8], message: &str) -> Response {
    refuse_with(shared, api, 400, path, body, message)
}

/// An error `status` for a request refused before it is parsed, logged.
fn refuse_with(
    shared: &Shared,
    api: &Api,
    status: u16,
    path: &str,
    body: &[u8],
    message: &str,
) -> Response {
    shared.log.push(LoggedRequest {
        method: "POST".into(),
        path: path.to_owned(),
        body: serde_json::from_slice(body).unwrap_or_else(|_| logged_text(body)),
        answer: Answer::refused(status),
        traceparent: None,
    });
    api.error(status, message)
}

/// Auth → parse → model → log → render → delay → send (a stream's end logged when it comes),
/// or reset the connection (`reset`: the handle of the connection the request came on).
async fn complete(
    shared: Arc<Shared>,
    api: Api,
    path: &str,
    reset: Option<ResetHandle>,
    headers: &HeaderMap,
    raw: &[u8],
) -> Response {
    let parsed: Result<Value, _> = serde_json::from_slice(raw);
    let logged_body = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => logged_text(raw),
    };
    let traceparent = headers
        .get("traceparent")
        .filter(|v| v.len() <= 256)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let log = |answer: Answer| {
        shared.log.push(LoggedRequest {
            method: "POST".into(),
            path: path.into(),
            body: logged_body.clone(),
            answer,
            traceparent: traceparent.clone(),
        })
    };
    if !authorised(shared.model.config().require_api_key.as_deref(), headers) {
        log(Answer::refused(401));
        return api.error(401, "Incorrect or missing API key (mock: send Authorization: Bearer KEY, x-api-key, api-key or x-goog-api-key: KEY).");
    }
    let call = match parsed
        .map_err(|e| format!("could not parse the JSON body of your request: {e}"))
        .and_then(|body| api.parse(&body))
    {
        Ok(call) => call,
        Err(message) => {
            log(Answer::refused(400));
            return api.error(400, &message);
        }
    };
    // Generating and checking a value is CPU work: keep it off the async workers.
    let worker = Arc::clone(&shared);
    let request = call.request.clone();
    let reply = match tokio::task::spawn_blocking(move || worker.model.respond(&request)).await {
        Ok(reply) => reply,
        Err(e) => {
            tracing::error!(error = %e, "mock model task failed");
            log(Answer::refused(500));
            return api.error(500, "The mock model failed to answer.");
        }
    };
    let info = reply.info();
    let seq = log(Answer {
        status: reply.status(),
        fault: reply.fault(),
        attempt: Some(info.attempt),
        target: info.target.clone(),
        delay_ms: u64::try_from(info.delay.as_millis()).unwrap_or(u64::MAX),
        calls: api.calls_made(&reply),
        stream: None,
    });
    let delay = info.delay;
    let config = shared.model.config();
    // The answer as sent, and how it is spoiled on the wire.
    let (reply, spoiled) = match reply {
        MockReply::Corrupt {
            fault: Fault::InvalidUtf8,
            reply,
        } => (corrupt::mark(*reply), Some(Fault::InvalidUtf8)),
        MockReply::Corrupt { fault, reply } => (*reply, Some(fault)),
        other => (other, None),
    };
    // Made before the delay (a body stream starts only when sent): a client that leaves while
    // the delay runs is logged too.
    let response = match api.render(&reply, &call, config.stream_piece_chars) {
        Rendered::Json {
            status,
            retry_after,
            body,
        } => match spoiled {
            Some(Fault::Garbage) => {
                raw_json_response(Bytes::from_static(corrupt::GARBAGE_PAGE.as_bytes()))
            }
            Some(Fault::InvalidUtf8) => {
                let text = serde_json::to_vec(&body).unwrap_or_default();
                raw_json_response(Bytes::from(corrupt::spoil(&text)))
            }
            _ => json_response(status, retry_after, &body),
        },
        Rendered::Events { frames, broken } => {
            let frames = corrupt::frames(frames, spoiled);
            let log = Arc::clone(&shared);
            let tally = Tally::new(&frames, move |end| {
                log.log.update(seq, |entry| entry.answer.stream = Some(end));
            });
            sse_response(frames, broken, Pacing::of(config), tally)
        }
        Rendered::Reset => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            return match reset {
                Some(handle) => {
                    handle.reset();
                    // Never written: the connection fails hyper's first write.
                    StatusCode::BAD_GATEWAY.into_response()
                }
                None => failing_response(),
            };
        }
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    response
}

async fn models(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let api = if headers.contains_key("anthropic-version") {
        Api::Anthropic
    } else {
        Api::OpenAi
    };
    let log = |status: u16| {
        shared.log.push(LoggedRequest {
            method: method.to_string(),
            path: uri.path().to_owned(),
            body: Value::Null,
            answer: Answer::refused(status),
            traceparent: None,
        });
    };
    if !authorised(shared.model.config().require_api_key.as_deref(), &headers) {
        log(401);
        return api.error(401, "Incorrect or missing API key.");
    }
    log(200);
    let body = match api {
        Api::OpenAi | Api::Gemini { .. } => {
            json!({"object": "list", "data": MODELS.iter().map(|id| json!({
            "id": id, "object": "model", "created": 0, "owned_by": "bridle-mock"
        })).collect::<Vec<_>>()})
        }
        Api::Anthropic => json!({
            "data": MODELS.iter().map(|id| json!({
                "type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"
            })).collect::<Vec<_>>(),
            "has_more": false,
            "first_id": MODELS.first(),
            "last_id": MODELS.last(),
        }),
    };
    json_response(200, None, &body)
}

async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    json_response(200, None, &json!(shared.log.all()))
}

async fn clear_requests(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.log.clear();
    StatusCode::NO_CONTENT
}

async fn not_found(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    shared.log.push(LoggedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        body: serde_json::from_slice(&body).unwrap_or_else(|_| logged_text(&body)),
        answer: Answer::refused(404),
        traceparent: None,
    });
    Api::OpenAi.error(404, &format!("Invalid URL ({method} {})", uri.path()))
}

/// True when no key is required, or the request carries it as a bearer token, `x-api-key`
/// (Anthropic), `api-key` (Azure) or `x-goog-api-key` (Gemini).
fn authorised(expected: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let bearer = header(header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "));
    bearer.map(str::trim) == Some(expected)
        || ["x-api-key", "api-key", "x-goog-api-key"]
            .iter()
            .any(|name| header(name) == Some(expected))
}

/// A body that is not JSON, as a (bounded) string for the log; no body is `null`.
fn logged_text(raw: &[u8]) -> Value {
    if raw.is_empty() {
        return Value::Null;
    }
    let text = String::from_utf8_lossy(&raw[..raw.len().min(MAX_LOGGED_TEXT)]);
    Value::String(text.into_owned())
}

fn json_response(status: u16, retry_after: Option<u64>, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// A 200 labelled `application/json` whatever `body` holds (`garbage`, `invalid_utf8`).
fn raw_json_response(body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A reset where the connection cannot be closed: a 200 whose body fails before its first byte.
fn failing_response() -> Response {
    let cut = std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "mock: the connection is reset (reset fault)",
    );
    Response::new(Body::from_stream(futures::stream::once(async move {
        Err::<Bytes, _>(cut)
    })))
}

fn sse_response(frames: Vec<Bytes>, broken: bool, pacing: Pacing, tally: Tally) -> Response {
    let body = sse_body(frames, broken, pacing, tally);
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_are_read_from_either_header() {
        let mut headers = HeaderMap::new();
        assert!(authorised(None, &headers));
        assert!(!authorised(Some("k"), &headers));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        assert!(authorised(Some("k"), &headers));
        assert!(!authorised(Some("other"), &headers));
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        assert!(authorised(Some("k"), &headers));
    }
}
