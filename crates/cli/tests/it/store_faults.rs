//! The store failing under a running `bridle serve`: PostgreSQL going away and coming back
//! (every connection cut, new ones refused — a restart, through a relay the test controls) and
//! SQLite on a disk that fills up or turns read-only. Requests meanwhile get 200 or a clear
//! 503 `store_unavailable` with `Retry-After` — never a hang, a 500 or a dead server; the
//! gateway recovers by itself; every reply given is stored whole and the database is intact.
//! On a read-only disk the gateway refuses to start and says why.

use crate::crash::{Received, check_turns};
use crate::{Running, create_conversation, serve_in};
use bridle_testkit::{TcpProxy, TestDatabase, server_address, with_address};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const ADMIN: &str = "admin-faults-key-00000000";
const ADA: &str = "ada-faults-key-0000000000";

fn start(dir: &Path, store_url: Option<&str>) -> (Running, String) {
    let mut envs = vec![
        ("BRIDLE_ADMIN_KEY", ADMIN),
        ("BRIDLE_USER_KEYS", "ada:ada-faults-key-0000000000"),
        ("BRIDLE__SERVER__LIMITS__ENABLED", "false"),
        ("BRIDLE__RETRY__DELAY_MS", "0"),
    ];
    if let Some(url) = store_url {
        envs.push(("BRIDLE__STORE_URL", url));
    }
    serve_in(dir, &envs)
}

fn client() -> reqwest::Client {
    // A request that hangs longer than this is a failure of the test, not a slow answer.
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn conversation(client: &reqwest::Client, url: &str) -> String {
    // A contract without a safety assessment: no generated emergency blocks the test's
    // conversations.
    create_conversation(client, url, ADA, "table-chat").await
}

/// What one message got: the reply, or the 503's error code and `Retry-After`.
enum Outcome {
    Replied(Received),
    Unavailable,
}

async fn send(client: &reqwest::Client, url: &str, conversation: &str, n: usize) -> Outcome {
    let response = client
        .post(format!("{url}/v1/conversations/{conversation}/messages"))
        .bearer_auth(ADA)
        .json(&json!({"content": format!("message {n}")}))
        .send()
        .await
        .expect("the gateway answers every request, in time");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").cloned();
    let body: Value = response.json().await.unwrap();
    match status {
        200 => Outcome::Replied(Received::from_reply(conversation, &body)),
        503 => {
            assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
            assert!(retry_after.is_some(), "a 503 says when to retry");
            Outcome::Unavailable
        }
        other => panic!("message {n}: {other} {body}"),
    }
}

/// The whole SSE answer to one streamed message.
async fn streamed_events(client: &reqwest::Client, url: &str, conversation: &str) -> String {
    client
        .post(format!("{url}/v1/conversations/{conversation}/messages"))
        .bearer_auth(ADA)
        .header("accept", "text/event-stream")
        .json(&json!({"content": "a streamed message"}))
        .send()
        .await
        .expect("the gateway answers")
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_going_away_and_back() {
    let database = TestDatabase::create().await;
    let mut proxy = TcpProxy::start(server_address(&database.url)).await;
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = start(
        dir.path(),
        Some(&with_address(&database.url, proxy.address())),
    );
    let client = client();
    let conversations = [
        conversation(&client, &url).await,
        conversation(&client, &url).await,
        conversation(&client, &url).await,
    ];
    let load = |phase: &'static str| {
        let (client, url, conversations) = (client.clone(), url.clone(), conversations.clone());
        async move {
            let mut tasks = Vec::new();
            for (i, id) in conversations.into_iter().enumerate() {
                let (client, url) = (client.clone(), url.clone());
                tasks.push(tokio::spawn(async move {
                    let mut outcomes = Vec::new();
                    for n in 0..6 {
                        outcomes.push(send(&client, &url, &id, i * 100 + n).await);
                        if phase == "outage" {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                    outcomes
                }));
            }
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.unwrap());
            }
            all
        }
    };

    let before = load("before").await;
    // The outage: connections reset while turns are in flight, new ones refused for 3 s.
    let during = tokio::spawn(load("outage"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    proxy.cut();
    let health = client.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(
        health.status().as_u16(),
        503,
        "health tells the store is down"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    proxy.restore().await;
    let during = during.await.unwrap();
    let after = load("after").await;

    let replied = |outcomes: &[Outcome]| {
        outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Replied(r) => Some(r.clone()),
                Outcome::Unavailable => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(replied(&before).len(), before.len());
    assert_eq!(
        replied(&after).len(),
        after.len(),
        "the gateway reconnected by itself"
    );
    let mut received = replied(&before);
    received.extend(replied(&during));
    received.extend(replied(&after));
    check_turns(&url, ADMIN, &received).await;
}

/// A tmpfs of its own, unmounted when dropped. Mounting needs root (CI runs as root).
struct SmallDisk {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(megabytes: u32) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            // Only root may mount; elsewhere this test cannot make a full disk.
            let root = std::process::Command::new("id")
                .arg("-u")
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"0"));
            assert!(!root, "root could not mount a tmpfs");
            eprintln!("skipped: mounting a small disk needs root");
            return None;
        }
        Some(Self { path, _dir: dir })
    }

    fn remount(&self, mode: &str) {
        let ok = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(&self.path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "remount {mode}");
    }

    /// Fills the disk to the last byte with a file of its own.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.path.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        while file.write_all(&[0]).is_ok() {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}

/// Sends until a message gets a 503 (a WAL with room left may take a few more writes first),
/// keeping the replies; at most `tries`.
async fn until_unavailable(
    client: &reqwest::Client,
    url: &str,
    conversation: &str,
    tries: usize,
    received: &mut Vec<Received>,
) {
    for n in 0..tries {
        match send(client, url, conversation, n).await {
            Outcome::Replied(r) => received.push(r),
            Outcome::Unavailable => return,
        }
    }
    panic!("the store never refused a write");
}

/// Sends until a message is answered again (the store recovered); at most `tries`.
async fn until_replied(
    client: &reqwest::Client,
    url: &str,
    conversation: &str,
    tries: usize,
    received: &mut Vec<Received>,
) {
    for n in 0..tries {
        if let Outcome::Replied(r) = send(client, url, conversation, n).await {
            received.push(r);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the store did not recover");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_full_then_read_only_disk() {
    let Some(disk) = SmallDisk::mount(16) else {
        return;
    };
    let (server, url) = start(&disk.path, None);
    let client = client();
    let id = conversation(&client, &url).await;
    let mut received = Vec::new();
    until_replied(&client, &url, &id, 1, &mut received).await;

    // Full: writes fail with a clear 503 and the server stays up; room again → answers again.
    let filler = disk.fill();
    until_unavailable(&client, &url, &id, 200, &mut received).await;
    let health = client.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(
        health.status().as_u16(),
        200,
        "reads still work: {health:?}"
    );
    // Readiness says the store cannot write, without the database's own words.
    let ready = client.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 503, "{ready:?}");
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["error"]["code"], "store_unavailable", "{ready}");
    assert!(!ready.to_string().contains("disk"), "{ready}");
    // A streamed turn whose reply cannot be stored never says it is complete.
    let events = streamed_events(&client, &url, &id).await;
    assert!(!events.contains("event: message_complete"), "{events}");
    assert!(events.contains("event: error"), "{events}");
    assert!(events.contains("store_unavailable"), "{events}");
    std::fs::remove_file(filler).unwrap();
    until_replied(&client, &url, &id, 50, &mut received).await;
    let ready = client.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 200, "writes work again: {ready:?}");

    check_turns(&url, ADMIN, &received).await;
    drop(server);

    // Read-only (a volume mounted read-only; a file open for writing keeps a disk from turning
    // read-only under a running server): the gateway refuses to start, saying why.
    disk.remount("ro");
    let refused = crate::bridle()
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(&disk.path)
        .env("BRIDLE_ADMIN_KEY", ADMIN)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.to_lowercase().contains("read-only"), "{said}");
    disk.remount("rw");

    // The database file is intact, and a restarted gateway finds every reply.
    let db = disk.path.join("bridle.db");
    let raw = rusqlite::Connection::open(&db).unwrap();
    let check: String = raw
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(raw);
    let (_again, url) = start(&disk.path, None);
    check_turns(&url, ADMIN, &received).await;
}
