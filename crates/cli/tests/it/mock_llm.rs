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

#[test]
fn bad_mock_settings_exit_2() {
    for args in [
        vec!["--fault-rate", "1.5"],
        vec!["--faults", "nonsense"],
        vec!["--script", "/no/such/script.json"],
    ] {
        let status = Command::new(assert_cmd::cargo::cargo_bin("bridle"))
            .args(["mock-llm", "--port", "0"])
            .args(&args)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}
