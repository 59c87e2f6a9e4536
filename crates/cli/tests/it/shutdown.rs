//! Stopping `bridle serve` the way process managers and rolling deploys do (SIGTERM): requests
//! in flight finish and are stored, new connections are refused, the process exits 0.

use crate::{create_conversation, serve_in, spawn_listening};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::time::Duration;

const ADA: &str = "ada-shutdown-key-00000000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_requests_in_flight_then_exits() {
    // A model that takes a second to answer, so the turn is in flight when the signal comes.
    let (_mock, mock_url) = spawn_listening(
        &[
            OsStr::new("mock-llm"),
            OsStr::new("--port"),
            OsStr::new("0"),
            OsStr::new("--latency-ms"),
            OsStr::new("1000"),
        ],
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let upstream = format!("{mock_url}/v1");
    let (mut server, url) = serve_in(
        dir.path(),
        &[
            ("BRIDLE_USER_KEYS", "ada:ada-shutdown-key-00000000"),
            ("BRIDLE_ADMIN_KEY", "admin-shutdown-key-000000"),
            ("OPENAI_BASE_URL", upstream.as_str()),
            ("OPENAI_API_KEY", "sk-shutdown"),
        ],
    );
    let client = reqwest::Client::new();
    let id = create_conversation(&client, &url, ADA, "table-chat").await;
    let in_flight = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move {
            client
                .post(format!("{url}/v1/conversations/{id}/messages"))
                .bearer_auth(ADA)
                .json(&json!({"content": "show me the table"}))
                .send()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.signal("TERM");

    let answer = in_flight
        .await
        .unwrap()
        .expect("the request in flight is answered");
    assert_eq!(answer.status().as_u16(), 200);
    let body: Value = answer.json().await.unwrap();
    assert!(body["message_id"].is_i64(), "{body}");
    let status = tokio::task::spawn_blocking(move || {
        let status = server.exit_within(Duration::from_secs(20));
        (status, server.log())
    })
    .await
    .unwrap();
    let (status, log) = status;
    assert!(
        status.is_some_and(|s| s.success()),
        "exit {status:?}: {log}"
    );
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(
        client.get(format!("{url}/healthz")).send().await.is_err(),
        "no longer listening"
    );
}
