//! `kill -9` of `bridle serve` under load, then a restart on the same store (SQLite in WAL
//! mode, and PostgreSQL): every reply a client received has its user message and all its
//! attempt rows, numbered 1..n and ending in the message the client got; no turn in the store
//! is torn (gaps in attempt numbers, an attempt without its user message, a final message
//! without its attempts). With `store_commit = "after_reply"` the replies of the last
//! milliseconds may be lost — only the newest of each conversation, never one in the middle —
//! no turn is torn either, and no message id given before the crash is given again (SQLite and
//! PostgreSQL alike).

use crate::{Running, create_conversation, send_message, serve_in};
use bridle_testkit::TestDatabase;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ADMIN: &str = "admin-crash-key-000000000";
const ADA: &str = "ada-crash-key-00000000000";
const CLIENTS: usize = 8;

fn start(dir: &std::path::Path, store_url: Option<&str>) -> (Running, String) {
    start_with(dir, store_url, &[])
}

fn start_with(
    dir: &std::path::Path,
    store_url: Option<&str>,
    more: &[(&'static str, &'static str)],
) -> (Running, String) {
    let mut envs = vec![
        ("BRIDLE_ADMIN_KEY", ADMIN),
        ("BRIDLE_USER_KEYS", "ada:ada-crash-key-00000000000"),
        ("BRIDLE__SERVER__LIMITS__ENABLED", "false"),
        ("BRIDLE__RETRY__DELAY_MS", "0"),
        // Some first replies break the contract, so turns have several attempts.
        ("BRIDLE__PROVIDERS__MOCK__KIND", "mock"),
        ("BRIDLE__PROVIDERS__MOCK__FAULT_RATE", "0.3"),
    ];
    if let Some(url) = store_url {
        envs.push(("BRIDLE__STORE_URL", url));
    }
    envs.extend_from_slice(more);
    serve_in(dir, &envs)
}

/// A reply a client received: conversation, turn, message id, attempts.
#[derive(Debug, Clone)]
pub struct Received {
    pub conversation: String,
    pub turn: String,
    pub message: i64,
    pub attempts: u64,
    pub value: Value,
}

impl Received {
    /// The reply to a message sent to `conversation`, from the native API's answer.
    pub fn from_reply(conversation: &str, body: &Value) -> Self {
        Self {
            conversation: conversation.to_owned(),
            turn: body["turn_id"].as_str().unwrap().to_owned(),
            message: body["message_id"].as_i64().unwrap(),
            attempts: body["attempts"].as_u64().unwrap(),
            value: body["value"].clone(),
        }
    }
}

async fn load_then_kill(url: &str, server: Running) -> Vec<Received> {
    let client = reqwest::Client::new();
    let received = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let conversation = create_conversation(&client, url, ADA, "selfhelp-response").await;
        let (client, url, received) = (client.clone(), url.to_owned(), Arc::clone(&received));
        clients.push(tokio::spawn(async move {
            for n in 0.. {
                let sent = client
                    .post(format!("{url}/v1/conversations/{conversation}/messages"))
                    .bearer_auth(ADA)
                    .json(&json!({"content": format!("client {i} message {n}")}))
                    .send()
                    .await;
                // The server is gone: this client is done.
                let Ok(response) = sent else { break };
                if !response.status().is_success() {
                    continue;
                }
                let Ok(body) = response.json::<Value>().await else {
                    break;
                };
                received
                    .lock()
                    .unwrap()
                    .push(Received::from_reply(&conversation, &body));
            }
        }));
    }
    // Load until a good number of replies went out, then SIGKILL in the middle of it.
    for _ in 0..400 {
        if received.lock().unwrap().len() >= 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    drop(server);
    for c in clients {
        c.await.unwrap();
    }
    let received = received.lock().unwrap().clone();
    assert!(received.len() >= 20, "too little load: {}", received.len());
    assert!(
        received.iter().any(|r| r.attempts > 1),
        "some turns needed a retry (the mock's faults are on)"
    );
    received
}

/// Reads every conversation a reply of `received` belongs to through the admin API (as
/// `admin`) and checks that each turn stored is whole and each received reply is there.
pub async fn check_turns(url: &str, admin: &str, received: &[Received]) {
    let lost = check_stored_turns(url, admin, received, false).await;
    assert_eq!(lost, 0);
}

/// [`check_turns`]; with `newest_may_be_lost`, the newest replies of a conversation may be
/// missing (answered before their commit, then the crash) — the first of them possibly with
/// its user message kept —, though none before a stored one. How many replies were missing.
async fn check_stored_turns(
    url: &str,
    admin: &str,
    received: &[Received],
    newest_may_be_lost: bool,
) -> usize {
    let mut lost = 0;
    let client = reqwest::Client::new();
    let mut by_conversation: BTreeMap<&str, Vec<&Received>> = BTreeMap::new();
    for r in received {
        by_conversation.entry(&r.conversation).or_default().push(r);
    }
    for (conversation, replies) in by_conversation {
        let detail: Value = client
            .get(format!("{url}/admin/v1/conversations/{conversation}"))
            .bearer_auth(admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let messages = detail["messages"].as_array().expect("messages");
        let mut turns: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
        for m in messages {
            turns
                .entry(m["turn_id"].as_str().unwrap())
                .or_default()
                .push(m);
        }
        // Every turn in the store is whole as far as it went: its user message first, then
        // attempts 1, 2, … without a gap, at most one of them validated and only the last.
        for (turn, rows) in &turns {
            assert_eq!(rows[0]["role"], "user", "turn {turn} starts with the user");
            for (k, row) in rows[1..].iter().enumerate() {
                assert_eq!(row["role"], "assistant");
                assert_eq!(row["attempt"], k as u64 + 1, "turn {turn}: {row}");
                assert!(row["request_payload"].is_object(), "turn {turn}: {row}");
                if row["is_validated"] == true {
                    assert_eq!(k + 2, rows.len(), "turn {turn}: rows after the final one");
                }
            }
        }
        // Replies in the order they were received (each conversation's client is sequential).
        // Answering first, a reply counts as kept when its final attempt is stored: its
        // turn's user message may have been committed in an earlier batch than its attempts,
        // so a crash can keep the one and lose the other.
        let kept = |reply: &&&Received| match turns.get(reply.turn.as_str()) {
            Some(rows) => !newest_may_be_lost || rows.len() as u64 == reply.attempts + 1,
            None => false,
        };
        let stored = replies.iter().take_while(kept).count();
        let missing = replies.len() - stored;
        let checked = if newest_may_be_lost {
            lost += missing;
            &replies[..stored]
        } else {
            &replies[..]
        };
        for reply in checked {
            let rows = turns
                .get(reply.turn.as_str())
                .unwrap_or_else(|| panic!("turn {} of a received reply is lost", reply.turn));
            let attempts = &rows[1..];
            assert_eq!(attempts.len() as u64, reply.attempts, "turn {}", reply.turn);
            let last = attempts.last().unwrap();
            assert_eq!(last["id"], reply.message);
            assert_eq!(last["value"], reply.value);
        }
        // Writes commit in the order they were queued: nothing of a reply after a lost one is
        // stored (the first lost reply's turn may keep its user message and first attempts).
        let after_gap = replies.iter().skip(replies.len() - missing + 1);
        for reply in after_gap {
            assert!(
                !turns.contains_key(reply.turn.as_str()),
                "turn {} is stored after a lost one",
                reply.turn
            );
        }
    }
    lost
}

async fn crash_and_recover(store_url: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let (server, url) = start(dir.path(), store_url);
    let received = load_then_kill(&url, server).await;
    let (_again, url) = start(dir.path(), store_url);
    check_turns(&url, ADMIN, &received).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_on_sqlite_loses_no_reply_it_gave() {
    crash_and_recover(None).await;
}

/// `kill -9` of a gateway answering before its commits, then a restart on the same store.
async fn crash_answering_first_and_recover(store_url: Option<&str>) {
    const AFTER_REPLY: &[(&str, &str)] = &[("BRIDLE__STORE_COMMIT", "after_reply")];
    let dir = tempfile::tempdir().unwrap();
    let (server, url) = start_with(dir.path(), store_url, AFTER_REPLY);
    let received = load_then_kill(&url, server).await;
    let (_again, url) = start_with(dir.path(), store_url, AFTER_REPLY);
    let lost = check_stored_turns(&url, ADMIN, &received, true).await;
    assert!(lost < received.len(), "{lost} of {} lost", received.len());
    // Ids given to replies that were lost are not given again.
    let client = reqwest::Client::new();
    let conversation = create_conversation(&client, &url, ADA, "selfhelp-response").await;
    let body = send_message(&client, &url, ADA, &conversation, "after the restart").await;
    let highest = received.iter().map(|r| r.message).max().unwrap();
    assert!(body["message_id"].as_i64().unwrap() > highest, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_answering_first_loses_only_its_newest_replies_and_reuses_no_id() {
    crash_answering_first_and_recover(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_on_postgres_answering_first_loses_only_its_newest_replies() {
    let database = TestDatabase::create().await;
    crash_answering_first_and_recover(Some(&database.url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_on_postgres_loses_no_reply_it_gave() {
    let database = TestDatabase::create().await;
    crash_and_recover(Some(&database.url)).await;
}
