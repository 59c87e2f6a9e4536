//! `bridle mock-llm`: the real binary serving the mock over loopback.

use crate::{Running, spawn_listening};
use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// Starts `bridle mock-llm --port 0 ARGS` and returns it with its base URL.
fn start(args: &[&str]) -> (Running, String) {
    let mut all: Vec<&OsStr> = ["mock-llm", "--port", "0"].iter().map(OsStr::new).collect();
    all.extend(args.iter().map(OsStr::new));
    spawn_listening(&all, &[])
}

#[tokio::test]
async fn the_mock_answers_openai_requests_and_logs_them() {
    let (_child, url) = start(&["--seed", "3"]);
    let client = reqwest::Client::new();
    let models: serde_json::Value = client
        .get(format!("{url}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(models["data"].is_array());
    let contracts = bridle_core::Contracts::builtin().unwrap();
    let contract = contracts.get("selfhelp-response").unwrap();
    let body = serde_json::json!({
        "model": "m",
        "messages": [
            {"role": "system", "content": contract.instructions(&bridle_core::Context::new())},
            {"role": "user", "content": "hello"}
        ]
    });
    let reply: serde_json::Value = client
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let content = reply["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        contract
            .check(content, &bridle_core::Context::new())
            .is_valid(),
        "{content}"
    );
    let log: serde_json::Value = client
        .get(format!("{url}/_mock/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        log.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["path"] == "/v1/chat/completions")
            .count(),
        1
    );
}

#[tokio::test]
async fn the_mock_requires_the_configured_key() {
    let (_child, url) = start(&["--require-api-key", "sk-mock"]);
    let client = reqwest::Client::new();
    let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let status = client
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 401);
    let status = client
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth("sk-mock")
        .json(&body)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 200);
}

#[tokio::test]
async fn the_stream_flags_set_deltas_pacing_and_write_size() {
    let (_child, url) = start(&[
        "--stream-piece-chars",
        "2",
        "--stream-interval-ms",
        "10",
        "--stream-chunk-bytes",
        "3",
    ]);
    let client = reqwest::Client::new();
    let body = serde_json::json!({"model": "m", "stream": true,
                                  "messages": [{"role": "user", "content": "hello"}]});
    let started = std::time::Instant::now();
    let mut response = client
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut raw = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        assert!(chunk.len() <= 3, "a write of {} bytes", chunk.len());
        raw.extend_from_slice(&chunk);
    }
    let elapsed = started.elapsed();
    let text = String::from_utf8(raw).unwrap();
    let frames: Vec<&str> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .collect();
    assert_eq!(frames.last(), Some(&"[DONE]"));
    let deltas: Vec<String> = frames
        .iter()
        .filter_map(|f| serde_json::from_str::<serde_json::Value>(f).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|d| !d.is_empty())
        .collect();
    assert!(deltas.len() > 3);
    assert!(deltas.iter().all(|d| d.chars().count() <= 2), "{deltas:?}");
    let least = std::time::Duration::from_millis(10 * (frames.len() as u64 - 1));
    assert!(elapsed >= least, "{elapsed:?} < {least:?}");
    // The log says the stream was read to its end (written as the server sees the end).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log: serde_json::Value = client
            .get(format!("{url}/_mock/requests"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let stream = &log[0]["answer"]["stream"];
        if !stream.is_null() {
            assert_eq!(stream["completed"], true);
            assert_eq!(stream["frames_total"].as_u64(), Some(frames.len() as u64));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no stream end logged: {log}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[test]
fn bad_mock_settings_exit_2() {
    for args in [
        vec!["--fault-rate", "1.5"],
        vec!["--faults", "nonsense"],
        vec!["--script", "/no/such/script.json"],
        vec!["--stream-piece-chars", "0"],
        vec!["--stream-chunk-bytes", "0"],
        vec!["--stream-interval-ms", "600001"],
        vec!["--stream-chunk-bytes", "many"],
    ] {
        let status = Command::new(crate::bridle_path())
            .args(["mock-llm", "--port", "0"])
            .args(&args)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}

/// The process's `THP_enabled` flag from `/proc/PID/status` (Linux 5.0 and later).
#[cfg(target_os = "linux")]
fn huge_pages_enabled(process: &Running) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{}/status", process.0.id())).unwrap();
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("THP_enabled:"))
        .expect("the kernel reports THP_enabled");
    line.trim() == "1"
}

#[cfg(target_os = "linux")]
#[test]
fn the_servers_run_without_transparent_huge_pages_unless_mimalloc_is_told_otherwise() {
    let (mock, _) = start(&[]);
    assert!(!huge_pages_enabled(&mock));
    let dir = tempfile::tempdir().unwrap();
    let (serve, _) = crate::serve_in(dir.path(), &[]);
    assert!(!huge_pages_enabled(&serve));
    let (allowed, _) = spawn_listening(
        &["mock-llm", "--port", "0"].map(OsStr::new),
        &[("MIMALLOC_ALLOW_THP", "1")],
    );
    assert!(huge_pages_enabled(&allowed));
}

/// The danger levels the mock gives `n` ordinary messages ("message N") under `selfhelp-response`.
async fn danger_levels(url: &str, n: usize) -> std::collections::BTreeSet<String> {
    let contracts = bridle_core::Contracts::builtin().unwrap();
    let contract = contracts.get("selfhelp-response").unwrap();
    let system = contract.instructions(&bridle_core::Context::new());
    let client = reqwest::Client::new();
    let mut levels = std::collections::BTreeSet::new();
    for i in 0..n {
        let body = serde_json::json!({"model": "m", "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": format!("message {i}")}
        ]});
        let reply: serde_json::Value = client
            .post(format!("{url}/v1/chat/completions"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let content = reply["choices"][0]["message"]["content"].as_str().unwrap();
        let value: serde_json::Value = serde_json::from_str(content).unwrap();
        levels.insert(value["safety"]["danger_level"].to_string());
    }
    levels
}

#[tokio::test]
async fn safety_follows_the_message_unless_random_is_asked_for() {
    let (_quiet, url) = start(&["--seed", "1"]);
    let levels = danger_levels(&url, 30).await;
    assert_eq!(levels.into_iter().collect::<Vec<_>>(), ["null"]);
    let (_random, url) = start(&["--seed", "1", "--safety", "random"]);
    let levels = danger_levels(&url, 30).await;
    assert!(levels.len() >= 3, "every level can be drawn: {levels:?}");
}
