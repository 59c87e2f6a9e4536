//! Request ids: every answer of the gateway carries `x-request-id`, so a user who reports a
//! failed request has an id to quote and an administrator finds its turn with it.
//!
//! [`assign`] (the outermost layer of the router) takes the caller's `x-request-id` when it is
//! sane — 1 to [`MAX_REQUEST_ID_CHARS`] characters of a small safe set ([`is_sane_request_id`])
//! — and otherwise makes one (a UUIDv7, time-ordered like every other id of Bridle); a hostile
//! value is replaced, never echoed or logged. The caller's W3C `traceparent` gives the trace id
//! ([`trace_id_of`]) when it is valid. The ids go into the request's extensions
//! ([`RequestIds`], which the handlers hand to the engine so that they are stored with the
//! turn's messages), into a `request` span (fields `request_id` and `trace_id`, so every log
//! line written inside the request carries them) and into a task-local ([`current`]) from which
//! [`crate::ApiError`] puts the id into every error body.
//!
//! Hand-written rather than tower-http's request-id layers: those echo whatever the caller sent
//! (no length or character check), and the id is also needed in the error bodies and the span,
//! which is a few lines here either way.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
pub use bridle_engine::store::RequestIds;
use tracing::Instrument as _;

/// The header that carries the request id, both ways.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The W3C trace-context header a caller's trace arrives in.
pub const TRACEPARENT_HEADER: HeaderName = HeaderName::from_static("traceparent");

/// Longest request id taken from a caller, in characters (a UUID is 36).
pub const MAX_REQUEST_ID_CHARS: usize = 128;

tokio::task_local! {
    /// The ids of the request the current task serves.
    static CURRENT: RequestIds;
}

/// The ids of the request being served by the current task, when it serves one.
pub fn current() -> Option<RequestIds> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Runs `future` as part of the request `ids` (for a task spawned by a handler: its errors and
/// log lines then carry the request's ids).
pub async fn within<F: Future>(ids: RequestIds, future: F) -> F::Output {
    let span = span(&ids);
    CURRENT.scope(ids, future.instrument(span)).await
}

/// Serves the rest of a request within `ids` once its trace id is known (the trace the gateway
/// began for a request that came without one): the request's log span (from [`assign`], the
/// span in force) records the trace id, and the handlers and errors get the new ids. No second
/// log span: the one request has one.
pub async fn with_trace<F: Future>(ids: RequestIds, future: F) -> F::Output {
    if let Some(trace_id) = ids.trace_id.as_deref() {
        tracing::Span::current().record("trace_id", trace_id);
    }
    CURRENT.scope(ids, future).await
}

/// Whether `value` is a request id the gateway takes from a caller: 1 to
/// [`MAX_REQUEST_ID_CHARS`] ASCII letters, digits and `-_.:+=@/`.
pub fn is_sane_request_id(value: &str) -> bool {
    (1..=MAX_REQUEST_ID_CHARS).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+=@/".contains(&b))
}

/// A new request id: a UUIDv7.
pub fn generate() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The request id for a request with `headers`: the caller's `x-request-id` when there is
/// exactly one and it is sane, else a new one.
pub fn request_id_of(headers: &HeaderMap) -> String {
    let mut sent = headers.get_all(REQUEST_ID_HEADER).iter();
    match (sent.next(), sent.next()) {
        (Some(value), None) => match value.to_str() {
            Ok(text) if is_sane_request_id(text) => text.to_owned(),
            _ => generate(),
        },
        _ => generate(),
    }
}

/// The trace id (32 lowercase hex digits) of a valid W3C `traceparent` header
/// (`VERSION-TRACEID-PARENTID-FLAGS`: 2, 32, 16 and 2 lowercase hex digits, the version not
/// `ff`, neither id all zeros; a later version may add fields after the flags), else `None`.
pub fn trace_id_of(headers: &HeaderMap) -> Option<String> {
    let mut sent = headers.get_all(TRACEPARENT_HEADER).iter();
    let (Some(value), None) = (sent.next(), sent.next()) else {
        return None;
    };
    let text = value.to_str().ok()?.trim();
    let mut fields = text.split('-');
    let (version, trace, parent, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && !zero(trace)
        && hex(parent, 16)
        && !zero(parent)
        && hex(flags, 2)
        && (version != "00" || fields.next().is_none());
    valid.then(|| trace.to_owned())
}

/// The span every log line of a request is written in (also for a response body read after
/// the handler returned: a relayed stream). At the `ERROR` level so that every filter that lets
/// any line through keeps it (`RUST_LOG=warn` included): a span writes no line of its own, it
/// only gives its fields to the lines written inside it.
pub fn span(ids: &RequestIds) -> tracing::Span {
    tracing::error_span!(
        "request",
        request_id = ids.request_id.as_deref().unwrap_or_default(),
        trace_id = ids.trace_id.as_deref(),
    )
}

/// The middleware: gives the request its ids, serves it within them, and answers with
/// `x-request-id` (every answer: the routes', the errors', the fallback's).
pub async fn assign(mut request: Request, next: Next) -> Response {
    let request_id = request_id_of(request.headers());
    let ids = RequestIds {
        request_id: Some(request_id.clone()),
        trace_id: trace_id_of(request.headers()),
    };
    request.extensions_mut().insert(ids.clone());
    let mut response = within(ids, next.run(request)).await;
    // Sane by construction (generated, or checked above), so always a valid header value.
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&HeaderName, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append((*name).clone(), HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn a_sane_id_is_kept_and_anything_else_replaced() {
        for kept in ["abc", "req-42", "a.b:c_d+e=f@g/h", &"x".repeat(128)] {
            let got = request_id_of(&headers(&[(&REQUEST_ID_HEADER, kept.as_bytes())]));
            assert_eq!(got, kept);
        }
        for hostile in [
            &b""[..],
            b"has space",
            b"<script>",
            b"new\tline",
            b"quote\"",
            "caf\u{e9}".as_bytes(),
            &[b'x'; 129][..],
        ] {
            let got = request_id_of(&headers(&[(&REQUEST_ID_HEADER, hostile)]));
            assert_ne!(got.as_bytes(), hostile);
            assert!(uuid::Uuid::parse_str(&got).is_ok(), "{got}");
        }
        let two = headers(&[(&REQUEST_ID_HEADER, b"a"), (&REQUEST_ID_HEADER, b"b")]);
        assert!(uuid::Uuid::parse_str(&request_id_of(&two)).is_ok());
        let generated = request_id_of(&HeaderMap::new());
        assert_eq!(
            uuid::Uuid::parse_str(&generated).unwrap().get_version_num(),
            7
        );
        assert_ne!(generated, request_id_of(&HeaderMap::new()));
    }

    #[test]
    fn traceparent_gives_the_trace_id_when_valid() {
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        let of = |value: &str| trace_id_of(&headers(&[(&TRACEPARENT_HEADER, value.as_bytes())]));
        assert_eq!(
            of(&format!("00-{trace}-00f067aa0ba902b7-01")).as_deref(),
            Some(trace)
        );
        // A later version may carry more fields.
        assert_eq!(
            of(&format!("01-{trace}-00f067aa0ba902b7-01-more")).as_deref(),
            Some(trace)
        );
        for bad in [
            String::new(),
            format!("ff-{trace}-00f067aa0ba902b7-01"),
            format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)),
            format!("00-{trace}-0000000000000000-01"),
            format!("00-{}-00f067aa0ba902b7-01", trace.to_uppercase()),
            format!("00-{trace}-00f067aa0ba902b7"),
            format!("00-{trace}-00f067aa0ba902b7-01-extra"),
            format!("00-{trace}x-00f067aa0ba902b7-01"),
            "00-zz-00f067aa0ba902b7-01".to_owned(),
        ] {
            assert_eq!(of(&bad), None, "{bad}");
        }
    }
}
