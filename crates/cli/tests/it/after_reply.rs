//! `bridle serve` with `store_commit = "after_reply"` (SQLite answers, then commits): a
//! conversation's later turns and the user's listing see every answer already given; `/metrics`
//! counts writes lost after their answer; SIGTERM commits what was answered before the process
//! ends; a second server on the same data dir is refused with a clear error.

use crate::{bridle, create_conversation, send_message, serve_in};
use predicates::str::contains;
use serde_json::Value;
use std::time::Duration;

const ADA: &str = "ada-after-reply-key-00000";
const ENVS: &[(&str, &str)] = &[
    ("BRIDLE_USER_KEYS", "ada:ada-after-reply-key-00000"),
    ("BRIDLE_ADMIN_KEY", "admin-after-reply-key-000"),
    ("BRIDLE__SERVER__LIMITS__ENABLED", "false"),
    ("BRIDLE__STORE_COMMIT", "after_reply"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_come_first_and_everything_answered_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = serve_in(dir.path(), ENVS);
    let client = reqwest::Client::new();
    let conversation = create_conversation(&client, &url, ADA, "selfhelp-response").await;

    let mut answered = Vec::new();
    for n in 0..3 {
        let body = send_message(&client, &url, ADA, &conversation, &format!("message {n}")).await;
        let id = body["message_id"]
            .as_i64()
            .unwrap_or_else(|| panic!("{body}"));
        answered.push(id);
        // Read right after the answer: the user's view already holds it.
        let listed: Value = client
            .get(format!("{url}/v1/conversations/{conversation}/messages"))
            .bearer_auth(ADA)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ids: Vec<i64> = listed["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| m["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, answered, "{listed}");
    }
    let metrics = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("bridle_store_write_failures_total 0"),
        "{metrics}"
    );

    // A second server on the same data dir would give the same ids: refused.
    bridle()
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .envs(ENVS.iter().copied())
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .stderr(contains("needs it to itself"));

    server.signal("TERM");
    let status = tokio::task::spawn_blocking(move || {
        (server.exit_within(Duration::from_secs(20)), server.log())
    })
    .await
    .unwrap();
    assert!(status.0.is_some_and(|s| s.success()), "{status:?}");

    let db = rusqlite::Connection::open(dir.path().join("bridle.db")).unwrap();
    for id in answered {
        let stored: i64 = db
            .query_row("SELECT count(*) FROM messages WHERE id = ?", [id], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(stored, 1, "message {id}");
    }
    let users: i64 = db
        .query_row(
            "SELECT count(*) FROM messages WHERE role = 'user' AND conversation_id = ?",
            [&conversation],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(users, 3);
}
