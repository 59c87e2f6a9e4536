//! The real `bridle serve` binary end to end over loopback: configured only through the
//! environment (`OPENAI_BASE_URL`, `BRIDLE__…` overrides, keys), on PostgreSQL, with the
//! `bridle mock-llm` binary as its upstream; and two instances sharing one PostgreSQL store
//! and one Redis for the rate limits, and a safety block made on one holding on the other.

use crate::{Running, spawn_listening};
use bridle_testkit::TestDatabase;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::ffi::OsStr;

const UPSTREAM_KEY: &str = "sk-e2e-upstream-5f2a9c";
const ADMIN: &str = "admin-e2e-key-00000000";
const ADA: &str = "ada-e2e-key-000000000000";

/// A running `bridle serve` and the directory it keeps its files in.
struct Gateway {
    process: Running,
    _dir: tempfile::TempDir,
    url: String,
}

fn gateway(envs: &[(&str, &str)]) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        OsStr::new("serve"),
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--data-dir"),
        dir.path().as_os_str(),
    ];
    let mut all = vec![
        ("BRIDLE_ADMIN_KEY", ADMIN),
        ("BRIDLE_USER_KEYS", "ada:ada-e2e-key-000000000000"),
        ("BRIDLE__RETRY__DELAY_MS", "0"),
    ];
    all.extend_from_slice(envs);
    let (process, url) = spawn_listening(&args, &all);
    Gateway {
        process,
        _dir: dir,
        url,
    }
}

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    key: &str,
    body: Option<Value>,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = client.request(method, url).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, value)
}

async fn get_text(client: &reqwest::Client, url: String) -> String {
    client.get(url).send().await.unwrap().text().await.unwrap()
}

async fn get_json(client: &reqwest::Client, url: String) -> Value {
    serde_json::from_str(&get_text(client, url).await).unwrap()
}

async fn new_conversation(client: &reqwest::Client, base: &str) -> String {
    let (status, _, body) = call(
        client,
        reqwest::Method::POST,
        format!("{base}/v1/conversations"),
        ADA,
        Some(json!({"contract": "selfhelp-response"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Sends message number `n` (the mock derives its choices from the text, so texts differ).
async fn send(
    client: &reqwest::Client,
    base: &str,
    conversation: &str,
    n: usize,
) -> (StatusCode, Value) {
    let (status, headers, body) = call(
        client,
        reqwest::Method::POST,
        format!("{base}/v1/conversations/{conversation}/messages"),
        ADA,
        Some(json!({"content": format!("I cannot focus on my work ({n})")})),
    )
    .await;
    if status == StatusCode::TOO_MANY_REQUESTS {
        assert!(headers.contains_key("retry-after"), "{headers:?}");
    }
    (status, body)
}

#[tokio::test]
async fn serve_on_postgres_behind_an_openai_compatible_upstream() {
    let (_mock, mock_url) = spawn_listening(
        &[
            "mock-llm",
            "--port",
            "0",
            "--seed",
            "11",
            "--fault-rate",
            "0.6",
            "--faults",
            "wrong_enum,http500,fence,missing_required",
            "--require-api-key",
            UPSTREAM_KEY,
        ]
        .map(OsStr::new),
        &[],
    );
    let database = TestDatabase::create().await;
    let upstream = format!("{mock_url}/v1");
    let gateway = gateway(&[
        ("OPENAI_BASE_URL", &upstream),
        ("OPENAI_API_KEY", UPSTREAM_KEY),
        ("BRIDLE__STORE_URL", &database.url),
        // Everything the gateway logs is searched for the key below.
        ("RUST_LOG", "debug"),
    ]);
    let client = reqwest::Client::new();
    let base = gateway.url.as_str();

    let health: Value = get_json(&client, format!("{base}/healthz")).await;
    assert_eq!(health["store"], "postgres", "BRIDLE__STORE_URL took effect");

    // A conversation per message: a generated reply may carry an emergency and block its
    // conversation, which would refuse the next message.
    for n in 0..4 {
        let conversation = new_conversation(&client, base).await;
        let (status, body) = send(&client, base, &conversation, n).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["value"]["type"], "response", "{body}");
    }

    // Every request the upstream received is one stored attempt, and no stored payload holds
    // the upstream key.
    let logged: Value = get_json(&client, format!("{mock_url}/_mock/requests")).await;
    let logged = logged.as_array().unwrap().len();
    let pool = PgPool::connect(&database.url).await.unwrap();
    let attempts: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM messages WHERE role = 'assistant' AND NOT is_fallback",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(attempts, i64::try_from(logged).unwrap());
    assert!(logged > 4, "the faults caused retries: {logged}");
    let leaked: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM messages WHERE request_payload::text LIKE '%' || $1 || '%' \
         OR raw_response::text LIKE '%' || $1 || '%'",
    )
    .bind(UPSTREAM_KEY)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(leaked, 0, "the upstream key reached the store");

    // Replaying the first attempt sends its stored request upstream again, key put back.
    let first: i64 = sqlx::query_scalar(
        "SELECT MIN(id) FROM messages WHERE role = 'assistant' AND NOT is_fallback",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let (status, _, replay) = call(
        &client,
        reqwest::Method::POST,
        format!("{base}/admin/v1/messages/{first}/replay"),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(replay["provider"], "openai");
    assert_ne!(
        replay["error"].as_str().unwrap_or_default(),
        "status: the provider answered HTTP 401: invalid API key",
    );
    let after: Value = get_json(&client, format!("{mock_url}/_mock/requests")).await;
    assert_eq!(after.as_array().unwrap().len(), logged + 1);
    let last = after.as_array().unwrap().last().unwrap();
    assert_ne!(last["answer"]["status"], 401, "the replay carried the key");

    let metrics = get_text(&client, format!("{base}/metrics")).await;
    assert!(
        metrics.contains(r#"bridle_turns_total{contract="selfhelp-response",outcome="valid"} 4"#),
        "{metrics}"
    );
    assert!(!metrics.contains(UPSTREAM_KEY));

    // Nor does anything else the gateway shows: the admin API's views of every conversation
    // (payloads, raw replies, errors), the replay answer, its debug log.
    let listed = get_json_as(&client, format!("{base}/admin/v1/conversations?limit=100")).await;
    for item in listed["items"].as_array().unwrap() {
        let id = item["id"].as_str().unwrap();
        let detail = get_json_as(&client, format!("{base}/admin/v1/conversations/{id}")).await;
        assert!(detail["messages"].as_array().is_some_and(|m| !m.is_empty()));
        assert!(!detail.to_string().contains(UPSTREAM_KEY), "{detail}");
    }
    assert!(!replay.to_string().contains(UPSTREAM_KEY), "{replay}");
    let log = gateway.process.log();
    assert!(log.contains("DEBUG"), "the log was at debug level: {log}");
    assert!(
        !log.contains(UPSTREAM_KEY),
        "the upstream key is in the log"
    );
    pool.close().await;
}

/// GETs `url` as the admin.
async fn get_json_as(client: &reqwest::Client, url: String) -> Value {
    let (status, _, body) = call(client, reqwest::Method::GET, url, ADMIN, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn two_instances_share_the_store_and_the_redis_rate_limits() {
    let database = TestDatabase::create().await;
    let prefix = format!("bridle-e2e-{}", uuid::Uuid::now_v7().simple());
    let shared = [
        ("BRIDLE__STORE_URL", database.url.as_str()),
        (
            "BRIDLE__SERVER__LIMITS__REDIS_URL",
            "redis://127.0.0.1:6379",
        ),
        ("BRIDLE__SERVER__LIMITS__KEY_PREFIX", prefix.as_str()),
        // The four conversations started below count too: seven requests a minute in all.
        ("BRIDLE__SERVER__LIMITS__REQUESTS_PER_MINUTE", "7"),
    ];
    let a = gateway(&shared);
    let b = gateway(&shared);
    let client = reqwest::Client::new();

    // Made on one instance, listed and continued on the other.
    let conversations: Vec<String> = [&a, &b, &a, &b].iter().map(|g| g.url.clone()).collect();
    let mut ids = Vec::new();
    for base in &conversations {
        ids.push(new_conversation(&client, base).await);
    }
    let (status, _, listed) = call(
        &client,
        reqwest::Method::GET,
        format!("{}/v1/conversations", b.url),
        ADA,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let listed = listed.to_string();
    assert!(
        ids.iter().all(|id| listed.contains(id.as_str())),
        "{listed}"
    );

    // Three messages left in the minute in all, whichever instance takes them.
    let mut statuses = Vec::new();
    for (i, base) in [&a.url, &b.url, &a.url, &b.url].into_iter().enumerate() {
        statuses.push(send(&client, base, &ids[i], i).await.0);
    }
    assert_eq!(
        statuses,
        [
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
    let metrics_b = get_text(&client, format!("{}/metrics", b.url)).await;
    assert!(
        metrics_b.contains(r#"bridle_rate_limit_rejections_total{limit="requests_per_minute"} 1"#),
        "{metrics_b}"
    );
}

#[tokio::test]
async fn a_block_on_one_instance_holds_on_the_other_until_unblocked_there() {
    let database = TestDatabase::create().await;
    let dir = tempfile::tempdir().unwrap();
    // The model's first answer is an emergency; later ones are generated and valid.
    let emergency = json!({"type": "response",
        "safety": {"is_safe": false, "danger_level": "emergency", "detected_concerns": ["suicide"], "requires_intervention": true, "safety_message": "You matter."},
        "content": {"text_blocks": [{"type": "error", "content": "Please call for help now."}]},
        "metadata": {"model": "m", "language": "en"}});
    let script = json!({"turns": [
        {"attempts": [{"reply": emergency.to_string()}]},
        {"attempts": [{"valid": true}]}
    ]});
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let script_path = script_path.display().to_string();
    let shared = [
        ("BRIDLE__STORE_URL", database.url.as_str()),
        ("BRIDLE__PROVIDERS__MOCK__KIND", "mock"),
        ("BRIDLE__PROVIDERS__MOCK__SCRIPT", script_path.as_str()),
    ];
    let a = gateway(&shared);
    let b = gateway(&shared);
    let client = reqwest::Client::new();
    let id = new_conversation(&client, &a.url).await;
    let (status, body) = send(&client, &a.url, &id, 0).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["safety"]["blocked"], true, "{body}");

    // Blocked on A, so blocked on B: the other instance refuses without calling its model.
    let (status, body) = send(&client, &b.url, &id, 1).await;
    assert_eq!(status, StatusCode::LOCKED, "{body}");
    // Unblocked through B's admin API, A lets the conversation go on.
    let (status, _, _) = call(
        &client,
        reqwest::Method::POST,
        format!("{}/admin/v1/conversations/{id}/unblock", b.url),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(&client, &a.url, &id, 2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let detail = get_json_as(&client, format!("{}/admin/v1/conversations/{id}", a.url)).await;
    assert_eq!(
        detail["messages"].as_array().unwrap().len(),
        4,
        "two turns stored; the refused message neither stored nor sent: {detail}"
    );
    assert_eq!(detail["safety_events"][0]["action"], "block");
}
