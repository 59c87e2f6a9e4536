//! The server itself: API key, malformed requests, the request log, `/v1/models`, `serve`.

use crate::*;
use bridle_mock::{LoggedRequest, serve};

#[tokio::test]
async fn a_required_api_key_is_checked_in_either_header() {
    let server = start(MockConfig::new().with_api_key("sk-mock")).await;
    let body = openai_body(json!([{"role": "user", "content": "hi"}])).to_string();
    let missing = post_raw(&server, "/v1/chat/completions", body.clone(), &[]).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.body["error"]["code"], "invalid_api_key");
    let wrong = post_raw(
        &server,
        "/v1/chat/completions",
        body.clone(),
        &[("authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(wrong.status, 401);
    let bearer = post_raw(
        &server,
        "/v1/chat/completions",
        body,
        &[("authorization", "Bearer sk-mock")],
    )
    .await;
    assert_eq!(bearer.status, 200);
    let anthropic =
        json!({"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
    let refused = post_raw(&server, "/v1/messages", anthropic.clone(), &[]).await;
    assert_eq!(
        (refused.status, refused.body["error"]["type"].as_str()),
        (401, Some("authentication_error"))
    );
    let keyed = post_raw(
        &server,
        "/v1/messages",
        anthropic,
        &[("x-api-key", "sk-mock")],
    )
    .await;
    assert_eq!(keyed.status, 200);
    let statuses: Vec<(u16, bool)> = server
        .requests()
        .iter()
        .map(|l| (l.answer.status, l.answer.fault.is_none()))
        .collect();
    assert_eq!(
        statuses,
        [
            (401, true),
            (401, true),
            (200, true),
            (401, true),
            (200, true)
        ]
    );
}

#[tokio::test]
async fn malformed_requests_get_a_400_with_an_error_body() {
    let server = start(MockConfig::new()).await;
    let cases = [
        "{not json",
        "",
        "[1, 2]",
        r#"{"model": "m"}"#,
        r#"{"model": "m", "messages": [{"role": "user"}]}"#,
        r#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}}"#,
    ];
    for body in cases {
        let reply = post_raw(&server, "/v1/chat/completions", body.to_owned(), &[]).await;
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(
            reply.body["error"]["type"], "invalid_request_error",
            "{body}"
        );
        assert!(!reply.body["error"]["message"].as_str().unwrap().is_empty());
    }
    let reply = post_raw(
        &server,
        "/v1/messages",
        r#"{"model": "m", "messages": []}"#.into(),
        &[],
    )
    .await;
    assert_eq!(
        (reply.status, reply.body["error"]["type"].as_str()),
        (400, Some("invalid_request_error"))
    );
    // Still serving.
    let ok = post(
        &server,
        "/v1/chat/completions",
        &openai_body(json!([{"role": "user", "content": "x"}])),
    )
    .await;
    assert_eq!(ok.status, 200);
    let log = server.requests();
    assert_eq!(log[0].body, json!("{not json"));
    assert_eq!(log[1].body, Value::Null);
    assert!(
        log[..7]
            .iter()
            .all(|l| l.answer.status == 400 && l.answer.attempt.is_none())
    );
}

#[tokio::test]
async fn the_request_log_lists_every_request_in_order_and_can_be_cleared() {
    let server = start(MockConfig::new()).await;
    let client = reqwest::Client::new();
    let first = openai_body(json!([{"role": "user", "content": "first"}]));
    post(&server, "/v1/chat/completions", &first).await;
    client
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/nowhere", server.url()))
        .send()
        .await
        .unwrap();
    let log: Vec<LoggedRequest> = client
        .get(format!("{}/_mock/requests", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let seen: Vec<(&str, &str, u16)> = log
        .iter()
        .map(|l| (l.method.as_str(), l.path.as_str(), l.answer.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("POST", "/v1/chat/completions", 200),
            ("GET", "/v1/models", 200),
            ("GET", "/nowhere", 404)
        ]
    );
    assert_eq!(log[0].body, first);
    assert_eq!(
        (log[0].answer.attempt, log[0].answer.fault),
        (Some(1), None)
    );
    assert_eq!(log, server.requests());
    let deleted = client
        .delete(format!("{}/_mock/requests", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn models_are_listed_in_the_callers_format() {
    let server = start(MockConfig::new()).await;
    let client = reqwest::Client::new();
    let openai: Value = client
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openai["object"], "list");
    assert_eq!(openai["data"][0]["id"], "bridle-mock");
    let anthropic: Value = client
        .get(format!("{}/v1/models", server.url()))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(anthropic["data"][0]["type"], "model");
    assert_eq!(anthropic["has_more"], false);
}

#[tokio::test]
async fn serve_runs_on_a_given_listener_and_refuses_bad_config() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(serve(listener, MockConfig::new()));
    let models = reqwest::get(format!("http://{addr}/v1/models"))
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    task.abort();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = serve(listener, MockConfig::new().with_fault_rate(2.0))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert!(
        MockServer::start(MockConfig::new().with_fault_rate(-1.0))
            .await
            .is_err()
    );
}
