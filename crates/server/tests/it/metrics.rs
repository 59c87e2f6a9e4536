//! `/metrics`: the HTTP, turn, attempt, repair, violation, upstream, rate-limit and store series.

use crate::api::{ADA, Harness};
use axum::http::StatusCode;
use serde_json::json;

/// The value of the sample line that starts with `series` (name and labels, exactly).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split(' ').next()?.parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_attempts_repairs_violations_and_rejections() {
    let h = Harness::with_limits(
        "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.0\nfaults = [{ kind = \"wrong_enum\" }, { kind = \"fence\" }]\nseed = 3",
        // Three conversations started and two messages sent; the third message is one too many.
        5,
    )
    .await;
    // A conversation per turn: a generated reply may carry an emergency and block its
    // conversation.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = h.conversation(ADA).await;
        let (status, body) = h
            .call(
                "POST",
                &format!("/v1/conversations/{id}/messages"),
                Some(ADA),
                Some(json!({"content": "Hello"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        ids.push(id);
    }
    // A third message in the minute is refused.
    let third = h.conversation(ADA).await;
    let (status, _) = h
        .call(
            "POST",
            &format!("/v1/conversations/{third}/messages"),
            Some(ADA),
            Some(json!({"content": "Hello"})),
        )
        .await;
    assert!(
        status == StatusCode::TOO_MANY_REQUESTS,
        "the limit is 2 per minute: {status}"
    );

    let (status, body) = h.call("GET", "/metrics", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let text = body.as_str().unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let value = |series: &str| sample(text, series).unwrap_or_else(|| panic!("{series}\n{text}"));

    assert_eq!(
        value(
            r#"bridle_http_requests_total{method="POST",route="/v1/conversations/{id}/messages",status="200"}"#
        ),
        2.0
    );
    assert_eq!(
        value(
            r#"bridle_http_requests_total{method="POST",route="/v1/conversations/{id}/messages",status="429"}"#
        ),
        1.0
    );
    assert_eq!(
        value(r#"bridle_rate_limit_rejections_total{limit="requests_per_minute"}"#),
        1.0
    );
    assert_eq!(
        value(
            r#"bridle_http_request_duration_seconds_count{method="POST",route="/v1/conversations/{id}/messages"}"#
        ),
        3.0,
        "every answer is timed, refusals included"
    );
    // Each turn: a faulty first attempt, then a valid one.
    let valid = value(r#"bridle_attempts_total{contract="selfhelp-response",outcome="valid"}"#);
    assert_eq!(valid, 2.0);
    assert_eq!(
        value(r#"bridle_turns_total{contract="selfhelp-response",outcome="valid"}"#),
        2.0
    );
    assert_eq!(
        value(r#"bridle_turn_attempts_sum{contract="selfhelp-response",outcome="valid"}"#),
        4.0
    );
    // wrong_enum breaks `enum`; a fence is repaired.
    let invalid = sample(
        text,
        r#"bridle_attempts_total{contract="selfhelp-response",outcome="invalid"}"#,
    )
    .unwrap_or(0.0);
    let fenced = sample(
        text,
        r#"bridle_repairs_total{contract="selfhelp-response",kind="code_fence"}"#,
    )
    .unwrap_or(0.0);
    assert_eq!(
        invalid + fenced,
        2.0,
        "each first attempt is either invalid or repaired:\n{text}"
    );
    if invalid > 0.0 {
        assert_eq!(
            value(r#"bridle_violations_total{contract="selfhelp-response",rule="enum"}"#),
            invalid
        );
    }
    assert!(
        value(
            r#"bridle_tokens_total{contract="selfhelp-response",direction="completion",attempt="retry"}"#
        ) > 0.0
    );
    assert!(text.contains("bridle_upstream_latency_seconds_bucket{"));
    // The SQLite store's pauses of its writes are exported; a handful of writes never pauses
    // them (the log starts over after 2,048).
    assert_eq!(value("bridle_store_write_pause_seconds_count"), 0.0);
    assert!(text.contains(r#"bridle_store_write_pause_seconds_bucket{le="0.0001"} 0"#));
    // Concrete ids never become labels.
    for id in &ids {
        assert!(!text.contains(id.as_str()), "{text}");
    }
}
