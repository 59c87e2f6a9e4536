//! Faults over HTTP: fixed by Bridle's feedback or repeated, 429/500, broken streams, delays,
//! scripts.

use crate::*;
use bridle_mock::{Fault, Script};
use std::time::{Duration, Instant};

fn faulty(fault: Fault) -> MockConfig {
    MockConfig::new()
        .with_fault_rate(1.0)
        .with_faults(vec![fault])
}

fn content(reply: &Reply) -> String {
    reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Attempt 1, then attempt 2 with the bad reply and `feedback`, as Bridle sends them.
async fn with_feedback(server: &MockServer, first: &str, feedback: &str) -> Reply {
    let messages = json!([
        {"role": "system", "content": instructions()},
        {"role": "user", "content": "Can you help me plan my week?"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": feedback},
    ]);
    post(server, "/v1/chat/completions", &openai_body(messages)).await
}

#[tokio::test]
async fn bridles_feedback_fixes_a_fault_and_unrelated_feedback_does_not() {
    let contract = selfhelp();
    for fault in [
        Fault::WrongKey,
        Fault::MissingRequired,
        Fault::WrongEnum,
        Fault::Truncate,
    ] {
        let server = start(faulty(fault).with_seed(21)).await;
        let messages = json!([
            {"role": "system", "content": instructions()},
            {"role": "user", "content": "Can you help me plan my week?"},
        ]);
        let first = content(&post(&server, "/v1/chat/completions", &openai_body(messages)).await);
        let checked = contract.check(&first, &Context::new());
        assert!(!checked.is_valid(), "{fault}");
        let good = contract.feedback(&checked);

        // Feedback about something else: the same mistake again.
        let other = contract.check(r#"{"type": "response"}"#, &Context::new());
        let unrelated = contract.feedback(&other);
        let target = server.requests()[0].answer.target.clone().unwrap();
        assert!(
            !unrelated.contains(&format!("at {target} ")),
            "{fault}: {unrelated}"
        );
        let again = with_feedback(&server, &first, &unrelated).await;
        assert_eq!(content(&again), first, "{fault}");

        let fixed = with_feedback(&server, &first, &good).await;
        assert!(is_valid(&content(&fixed)), "{fault}");

        let log = server.requests();
        let answers: Vec<(Option<Fault>, Option<u32>)> = log
            .iter()
            .map(|l| (l.answer.fault, l.answer.attempt))
            .collect();
        assert_eq!(
            answers,
            [
                (Some(fault), Some(1)),
                (Some(fault), Some(2)),
                (None, Some(2))
            ]
        );
    }
}

#[tokio::test]
async fn http_429_carries_retry_after_in_both_formats() {
    let server = start(faulty(Fault::Http429 {
        retry_after_secs: 2,
    }))
    .await;
    let body = openai_body(json!([{"role": "user", "content": "hi"}]));
    let reply = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!(
        (reply.status, reply.retry_after.as_deref()),
        (429, Some("2"))
    );
    assert_eq!(reply.body["error"]["code"], "rate_limit_exceeded");
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Rate limit")
    );
    let anthropic =
        json!({"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(&server, "/v1/messages", &anthropic).await;
    assert_eq!(
        (reply.status, reply.retry_after.as_deref()),
        (429, Some("2"))
    );
    assert_eq!(reply.body["type"], "error");
    assert_eq!(reply.body["error"]["type"], "rate_limit_error");
    let server = start(faulty(Fault::Http500)).await;
    let reply = post(&server, "/v1/chat/completions", &body).await;
    assert_eq!((reply.status, reply.retry_after), (500, None));
    assert_eq!(reply.body["error"]["type"], "server_error");
    assert_eq!(server.requests()[0].answer.fault, Some(Fault::Http500));
}

#[tokio::test]
async fn a_broken_stream_stops_mid_way_without_its_final_events() {
    let server = start(faulty(Fault::BrokenStream)).await;
    let mut body = openai_body(
        json!([{"role": "system", "content": instructions()}, {"role": "user", "content": "hi"}]),
    );
    body["stream"] = json!(true);
    let (events, clean) = stream(&server, "/v1/chat/completions", &body).await;
    assert!(!clean, "the connection breaks");
    assert!(events.len() > 3, "some deltas arrive first");
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    assert!(
        events
            .iter()
            .all(|e| data(e)["choices"][0]["finish_reason"].is_null())
    );
    let anthropic = json!({"model": "c", "max_tokens": 10, "stream": true, "system": instructions(),
                           "messages": [{"role": "user", "content": "hi"}]});
    let (events, clean) = stream(&server, "/v1/messages", &anthropic).await;
    assert!(!clean && events.len() > 3);
    assert!(
        events
            .iter()
            .all(|e| e.name.as_deref() != Some("message_stop"))
    );
    // Not streaming: a 500.
    body["stream"] = json!(false);
    assert_eq!(
        post(&server, "/v1/chat/completions", &body).await.status,
        500
    );
}

#[tokio::test]
async fn slow_and_latency_delay_the_answer() {
    let server = start(faulty(Fault::Slow { ms: 150 }).with_latency_ms(50)).await;
    let started = Instant::now();
    let reply = post(
        &server,
        "/v1/chat/completions",
        &openai_body(json!([{"role": "user", "content": "hi"}])),
    )
    .await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(reply.status, 200);
    let answer = &server.requests()[0].answer;
    assert_eq!(
        (answer.fault, answer.delay_ms),
        (Some(Fault::Slow { ms: 150 }), 200)
    );
}

#[tokio::test]
async fn a_script_file_drives_the_turns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        r#"{"turns": [
            {"attempts": [{"fault": {"kind": "wrong_key"}}, {"valid": true}]},
            {"attempts": [{"reply": "literal text"}]},
            {"attempts": [{"fault": {"kind": "http429", "retry_after_secs": 1}}]}
        ]}"#,
    )
    .unwrap();
    let server = start(MockConfig::new().with_script(Script::load(&path).unwrap())).await;
    let turn = |user: &str| {
        openai_body(
            json!([{"role": "system", "content": instructions()}, {"role": "user", "content": user}]),
        )
    };
    let first = content(&post(&server, "/v1/chat/completions", &turn("one")).await);
    assert!(!is_valid(&first));
    let fixed = with_feedback(
        &server,
        &first,
        "Your previous reply did not meet the contract",
    )
    .await;
    assert_eq!(fixed.status, 200);
    let literal = post(&server, "/v1/chat/completions", &turn("two")).await;
    assert_eq!(content(&literal), "literal text");
    let limited = post(&server, "/v1/chat/completions", &turn("three")).await;
    assert_eq!(
        (limited.status, limited.retry_after.as_deref()),
        (429, Some("1"))
    );
    let retried = post(&server, "/v1/chat/completions", &turn("three")).await;
    assert!(is_valid(&content(&retried)), "the script ran out: valid");
    let faults: Vec<Option<Fault>> = server.requests().iter().map(|l| l.answer.fault).collect();
    assert_eq!(
        faults,
        [
            Some(Fault::WrongKey),
            None,
            None,
            Some(Fault::Http429 {
                retry_after_secs: 1
            }),
            None
        ]
    );
}
