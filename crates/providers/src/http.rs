//! What the HTTP providers share: the client, error mapping (transport errors, error statuses
//! with `Retry-After` and the provider's own error message), header redaction for stored
//! payloads, and reading a server-sent-event stream into [`StreamEvent`]s.

use super::body::BodyEncoder;
use super::utf8::{ChunkError, whole_characters};
use super::{ProviderError, REDACTED, parse_retry_after};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use futures::stream::BoxStream;
use opentelemetry::KeyValue;
use serde_json::{Map, Value};
use std::time::Duration;

/// Settings every HTTP provider has.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpSettings {
    /// Base URL (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`, …).
    pub base_url: String,
    /// API key, sent as the provider's auth header; never stored.
    pub api_key: Option<String>,
    /// Time allowed for the whole call (for a stream: until the first byte and between events).
    pub timeout: Duration,
    /// Headers sent with every request besides the provider's own (a model entry's
    /// `headers`; checked by [`check_extras`]).
    pub headers: Vec<(String, String)>,
    /// Query parameters added to every request's URL (a model entry's `query`).
    pub query: Vec<(String, String)>,
}

/// Most extra headers, and most extra query parameters, a model entry may set.
pub const MAX_EXTRAS: usize = 32;
/// Longest name of an extra header or query parameter, in bytes.
pub const MAX_EXTRA_NAME: usize = 100;
/// Longest value of an extra header or query parameter, in bytes.
pub const MAX_EXTRA_VALUE: usize = 2048;

/// Headers a model entry may not set: the provider's own auth and body framing.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
    "x-goog-api-key",
    "anthropic-version",
    "content-type",
    "content-length",
    "transfer-encoding",
    "host",
    "connection",
];

/// Why an extra header or query parameter is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtrasError {
    /// More than [`MAX_EXTRAS`].
    #[error("at most {MAX_EXTRAS} entries")]
    TooMany,
    /// A name or value over its length limit.
    #[error("{0:?}: names are at most {MAX_EXTRA_NAME} bytes and values at most {MAX_EXTRA_VALUE}")]
    TooLong(String),
    /// Not a valid header name or value (or an empty parameter name).
    #[error("{0:?} is not a valid name or value")]
    Invalid(String),
    /// A header the provider sets itself (auth, content type).
    #[error(
        "{0:?} is set by the provider itself (its API key and body framing) and cannot be overridden"
    )]
    Reserved(String),
}

/// Checks a model entry's extra `headers` and `query` parameters: how many, how long, valid
/// header names and values, and no header that would override the provider's auth or content
/// type. The error names the entry it refuses.
pub fn check_extras(pairs: &[(String, String)], headers: bool) -> Result<(), ExtrasError> {
    if pairs.len() > MAX_EXTRAS {
        return Err(ExtrasError::TooMany);
    }
    for (name, value) in pairs {
        let shown: String = name.chars().take(MAX_EXTRA_NAME).collect();
        if name.len() > MAX_EXTRA_NAME || value.len() > MAX_EXTRA_VALUE {
            return Err(ExtrasError::TooLong(shown));
        }
        if name.is_empty() {
            return Err(ExtrasError::Invalid(shown));
        }
        if !headers {
            continue;
        }
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || reqwest::header::HeaderValue::from_str(value).is_err()
        {
            return Err(ExtrasError::Invalid(shown));
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(ExtrasError::Reserved(shown));
        }
    }
    Ok(())
}

/// Whether a header or query parameter of this name likely carries a secret (its value is
/// redacted in stored payloads): a name holding `key`, `token`, `secret`, `auth`, `password`,
/// `signature`, `cookie` or `credential`.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "auth",
        "password",
        "signature",
        "cookie",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

impl HttpSettings {
    /// `base_url` + `path`, with exactly one `/` between them, and the [`HttpSettings::query`]
    /// parameters after `fixed` (the provider's own: `api-version`, `alt`), each name and
    /// value percent-encoded.
    pub fn url_with(&self, path: &str, fixed: &[(&str, &str)]) -> String {
        self.query_url(path, fixed, false)
    }

    /// `base_url` + `path`, with exactly one `/` between them, and the extra query parameters.
    pub fn url(&self, path: &str) -> String {
        self.query_url(path, &[], false)
    }

    /// [`HttpSettings::url_with`] as stored: the values of secret-looking parameters
    /// ([`is_secret_name`]) redacted.
    pub fn stored_url(&self, path: &str, fixed: &[(&str, &str)]) -> String {
        self.query_url(path, fixed, true)
    }

    fn query_url(&self, path: &str, fixed: &[(&str, &str)], redact: bool) -> String {
        let mut url = format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        let extra = self.query.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let mut pairs = fixed.iter().copied().chain(extra).peekable();
        if pairs.peek().is_none() {
            return url;
        }
        let Ok(mut parsed) = reqwest::Url::parse(&url) else {
            // Not a URL (the client refuses it when sending): left without the parameters.
            return url;
        };
        {
            let mut query = parsed.query_pairs_mut();
            for (name, value) in pairs {
                let value = if redact && is_secret_name(name) {
                    REDACTED
                } else {
                    value
                };
                query.append_pair(name, value);
            }
        }
        url = parsed.into();
        url
    }

    /// `builder` with the extra [`HttpSettings::headers`].
    pub fn with_headers(&self, mut builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        builder
    }

    /// The extra headers as stored: secret-looking values ([`is_secret_name`]) redacted.
    pub fn stored_extra_headers(&self) -> Map<String, Value> {
        self.headers
            .iter()
            .map(|(name, value)| {
                let shown = if is_secret_name(name) {
                    REDACTED
                } else {
                    value
                };
                (name.clone(), Value::String(shown.to_owned()))
            })
            .collect()
    }
}

/// Builds the client (connection pooling, no proxy surprises in tests: system proxy honoured).
pub fn client(settings: &HttpSettings) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| ProviderError::Connection(format!("cannot build the HTTP client: {e}")))
}

/// A POST of the JSON `body` to `url`, encoded by `encoder` (long texts escaped once).
pub fn post_json(
    client: &reqwest::Client,
    url: String,
    body: &Value,
    encoder: &BodyEncoder,
) -> Result<reqwest::RequestBuilder, ProviderError> {
    let bytes = encoder.encode(body).map_err(|e| {
        ProviderError::Connection(format!("the request body could not be encoded: {e}"))
    })?;
    Ok(client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(bytes))
}

/// Maps a transport error. Its text names the endpoint without its query string or user info
/// (a key kept in the URL never reaches the record or the log).
pub fn send_error(error: &reqwest::Error, timeout: Duration) -> ProviderError {
    if error.is_timeout() {
        ProviderError::Timeout(timeout)
    } else if error.is_decode() {
        ProviderError::Decode(transport_text(error))
    } else {
        ProviderError::Connection(transport_text(error))
    }
}

/// `error`'s whole chain, with its URL (which reqwest quotes) shown as scheme, host, port and
/// path only.
pub(crate) fn transport_text(error: &reqwest::Error) -> String {
    let text = error_chain(error);
    match error.url() {
        Some(url) => text.replace(url.as_str(), &endpoint(url)),
        None => text,
    }
}

/// `url` without user info, query or fragment.
fn endpoint(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
    }
}

pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Reads the provider's own message from an error body: `None` when the body is not the
/// provider's error form (each provider reads it through its wire error type).
pub type ErrorMessage = fn(&str) -> Option<String>;

/// Turns a non-success response into a [`ProviderError::Status`], reading `Retry-After` and
/// the provider's error message (`message` reads it from the body: `{"error": {"message": …}}`
/// or `{"error": "…"}`), or an excerpt of the body.
pub async fn status_error(response: reqwest::Response, message: ErrorMessage) -> ProviderError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = response.text().await.unwrap_or_default();
    let message = message(&body).unwrap_or_else(|| body.chars().take(300).collect());
    ProviderError::Status {
        status,
        retry_after,
        message,
    }
}

/// How long a request may take under the provider's `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// The whole exchange, body included (a complete answer).
    Whole,
    /// Until the response headers; a stream's body is then read event by event, each gap
    /// bounded by [`sse`] — a long answer that keeps coming is never cut off.
    Headers,
}

/// Sends a prepared request with the provider's timeout; a non-success status becomes a
/// [`ProviderError::Status`] with the message `message` reads from its body.
///
/// The request carries the `traceparent` of the span in force (an attempt's `chat` span, the
/// client span of the model call in the GenAI conventions) to the provider
/// ([`crate::trace_context::inject`]), and records on that span the endpoint's host and port
/// and the response's status: no span of its own, one span fewer per attempt.
pub async fn send(
    builder: reqwest::RequestBuilder,
    timeout: Duration,
    deadline: Deadline,
    message: ErrorMessage,
) -> Result<reqwest::Response, ProviderError> {
    let builder = match deadline {
        Deadline::Whole => builder.timeout(timeout),
        Deadline::Headers => builder,
    };
    let (client, request) = builder.build_split();
    let mut request = request.map_err(|e| send_error(&e, timeout))?;
    let span = crate::traces::TraceSpan::current();
    crate::trace_context::inject(request.headers_mut());
    if span.is_recording() {
        let url = request.url();
        let host = url.host_str().unwrap_or("").to_owned();
        span.set(KeyValue::new("server.address", host));
        let port = url.port_or_known_default().unwrap_or(0);
        span.set(KeyValue::new("server.port", i64::from(port)));
    }
    let response = match deadline {
        Deadline::Whole => client.execute(request).await,
        Deadline::Headers => tokio::time::timeout(timeout, client.execute(request))
            .await
            .map_err(|_| ProviderError::Timeout(timeout))?,
    }
    .map_err(|e| send_error(&e, timeout))?;
    span.set_with(|| {
        let status = i64::from(response.status().as_u16());
        KeyValue::new("http.response.status_code", status)
    });
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(status_error(response, message).await)
    }
}

/// Reads a successful JSON response body — as it came: it is stored as the attempt's raw
/// response, and the provider reads its wire type from it.
pub async fn json_body(
    response: reqwest::Response,
    timeout: Duration,
) -> Result<Value, ProviderError> {
    let bytes = response
        .bytes()
        .await
        .map_err(|e| send_error(&e, timeout))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ProviderError::Decode(format!(
            "the body is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ))
    })
}

/// Stored headers: the ones sent, with every credential replaced by `[REDACTED]`.
pub fn stored_headers(pairs: &[(&str, Option<&str>)]) -> Map<String, Value> {
    let mut headers = Map::new();
    for (name, value) in pairs {
        let Some(value) = value else { continue };
        let secret = matches!(
            name.to_ascii_lowercase().as_str(),
            "authorization" | "x-api-key" | "api-key" | "x-goog-api-key" | "proxy-authorization"
        );
        let shown = if secret {
            match value.split_once(' ') {
                Some((scheme, _)) if scheme.eq_ignore_ascii_case("bearer") => {
                    format!("{scheme} {REDACTED}")
                }
                _ => REDACTED.to_owned(),
            }
        } else {
            (*value).to_owned()
        };
        headers.insert((*name).to_owned(), Value::String(shown));
    }
    headers
}

/// One server-sent event: its `event:` name (empty when absent) and `data:`.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// Event name.
    pub event: String,
    /// Data.
    pub data: String,
}

/// The response body as a stream of server-sent events; a silence longer than `timeout`
/// between events ends the stream with a timeout error, a broken connection with a stream error,
/// bytes that are not UTF-8 with a decode error at once (the SSE reader alone would hold every
/// later byte back until the upstream closed the stream).
pub fn sse(
    response: reqwest::Response,
    timeout: Duration,
) -> BoxStream<'static, Result<SseEvent, ProviderError>> {
    let events = Box::pin(whole_characters(response.bytes_stream()).eventsource());
    futures::stream::unfold(Some(events), move |state| async move {
        let mut events = state?;
        match tokio::time::timeout(timeout, events.next()).await {
            Ok(Some(Ok(event))) => Some((
                Ok(SseEvent {
                    event: event.event,
                    data: event.data,
                }),
                Some(events),
            )),
            Ok(Some(Err(e))) => Some((Err(sse_error(e)), None)),
            Ok(None) => None,
            Err(_) => Some((Err(ProviderError::Timeout(timeout)), None)),
        }
    })
    .boxed()
}

fn sse_error(error: EventStreamError<ChunkError<reqwest::Error>>) -> ProviderError {
    match error {
        EventStreamError::Transport(ChunkError::Transport(e)) => {
            ProviderError::Stream(transport_text(&e))
        }
        EventStreamError::Transport(ChunkError::NotUtf8 { at }) => ProviderError::Decode(format!(
            "the stream is not valid UTF-8 (byte {at} of the body)"
        )),
        EventStreamError::Utf8(e) => {
            ProviderError::Decode(format!("the stream is not valid UTF-8: {e}"))
        }
        EventStreamError::Parser(e) => {
            ProviderError::Decode(format!("the stream is not server-sent events: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_transport_error_names_the_endpoint_without_its_query_or_user_info() {
        // A port nobody listens on: the connection is refused.
        let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = unused.local_addr().unwrap().port();
        drop(unused);
        let url = format!("http://user:pw@127.0.0.1:{port}/v1/chat?key=sk-in-the-query#frag");
        let error = reqwest::Client::new().post(&url).send().await.unwrap_err();
        let ProviderError::Connection(text) = send_error(&error, Duration::from_secs(1)) else {
            panic!("a refused connection is a connection error");
        };
        assert!(!text.contains("sk-in-the-query"), "{text}");
        assert!(!text.contains("pw@"), "{text}");
        assert!(
            text.contains(&format!("127.0.0.1:{port}/v1/chat")),
            "{text}"
        );
    }

    #[test]
    fn credentials_are_redacted_and_other_headers_kept() {
        let h = stored_headers(&[
            ("authorization", Some("Bearer sk-secret")),
            ("x-api-key", Some("sk-ant-secret")),
            ("anthropic-version", Some("2023-06-01")),
            ("content-type", Some("application/json")),
            ("skipped", None),
        ]);
        let text = serde_json::to_string(&h).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(h["authorization"], "Bearer [REDACTED]");
        assert_eq!(h["x-api-key"], "[REDACTED]");
        assert_eq!(h["anthropic-version"], "2023-06-01");
        assert!(!h.contains_key("skipped"));
    }

    #[test]
    fn extra_query_parameters_are_encoded_and_secret_looking_ones_redacted_when_stored() {
        let s = HttpSettings {
            base_url: "https://h/v1".into(),
            query: vec![
                ("foo".into(), "a b&c".into()),
                ("sig_token".into(), "s3cret".into()),
            ],
            headers: vec![
                ("X-Team".into(), "blue".into()),
                ("X-Org-Key".into(), "k-123".into()),
            ],
            ..HttpSettings::default()
        };
        assert_eq!(
            s.url_with("chat", &[("api-version", "2024-10-21")]),
            "https://h/v1/chat?api-version=2024-10-21&foo=a+b%26c&sig_token=s3cret"
        );
        assert_eq!(
            s.stored_url("chat", &[]),
            "https://h/v1/chat?foo=a+b%26c&sig_token=%5BREDACTED%5D"
        );
        let stored = s.stored_extra_headers();
        assert_eq!(stored["X-Team"], "blue");
        assert_eq!(stored["X-Org-Key"], REDACTED);
        let plain = HttpSettings {
            base_url: "https://h/v1".into(),
            ..HttpSettings::default()
        };
        assert_eq!(plain.url("chat"), "https://h/v1/chat");
    }

    #[test]
    fn extras_are_bounded_and_may_not_override_auth_or_content_type() {
        let pair = |n: &str, v: &str| vec![(n.to_owned(), v.to_owned())];
        assert_eq!(check_extras(&pair("X-Team", "blue"), true), Ok(()));
        for reserved in ["Authorization", "api-key", "x-goog-api-key", "Content-Type"] {
            assert_eq!(
                check_extras(&pair(reserved, "x"), true),
                Err(ExtrasError::Reserved(reserved.into()))
            );
        }
        assert_eq!(
            check_extras(&pair("bad header", "x"), true),
            Err(ExtrasError::Invalid("bad header".into()))
        );
        assert_eq!(
            check_extras(&pair("X-A", "line\nbreak"), true),
            Err(ExtrasError::Invalid("X-A".into()))
        );
        // A query parameter may have any name and value (they are encoded).
        assert_eq!(check_extras(&pair("a b", "line\nbreak"), false), Ok(()));
        let long = "v".repeat(MAX_EXTRA_VALUE + 1);
        assert!(matches!(
            check_extras(&pair("X-A", &long), true),
            Err(ExtrasError::TooLong(_))
        ));
        let many: Vec<(String, String)> = (0..=MAX_EXTRAS)
            .map(|i| (format!("X-{i}"), "v".into()))
            .collect();
        assert_eq!(check_extras(&many, true), Err(ExtrasError::TooMany));
    }

    #[test]
    fn urls_join_with_one_slash() {
        let s = HttpSettings {
            base_url: "http://h/v1/".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            ..HttpSettings::default()
        };
        assert_eq!(s.url("/chat/completions"), "http://h/v1/chat/completions");
    }
}
