//! CLI integration tests: the real `bridle` binary on fixture files and standard input, its exit
//! codes (0 met, 1 not met, 2 usage/I-O) and its output shapes.

#![allow(clippy::unwrap_used)]

mod after_reply;
mod check;
mod closed_stdout;
mod config;
mod config_docs;
mod crash;
mod eval;
mod flows;
mod hostile;
mod hostile_mock;
mod keys;
mod mock_llm;
mod openai_sdk;
mod other;
#[cfg(unix)]
mod private_files;
mod request_ids;
mod schema_warnings;
mod serve;
mod shutdown;
mod store_faults;
mod telemetry;
mod upstream_faults;

use assert_cmd::Command;
use std::path::PathBuf;

/// The binary under test: `BRIDLE_TEST_BIN` when set (e.g. `target/release/bridle`, to run the
/// end-to-end tests against a release build), else the one cargo built for these tests.
pub fn bridle_path() -> PathBuf {
    match std::env::var_os("BRIDLE_TEST_BIN") {
        Some(path) => PathBuf::from(path),
        None => assert_cmd::cargo::cargo_bin("bridle"),
    }
}

pub fn bridle() -> Command {
    let mut cmd = Command::new(bridle_path());
    cmd.env_remove("BRIDLE_CONTRACTS_DIR");
    cmd
}

pub fn core_fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../core/tests/fixtures")
        .join(rel)
}

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

pub fn json_out(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON value ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// A child process killed when dropped, and what it has written to standard error.
#[derive(Debug)]
pub struct Running(
    std::process::Child,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
);

impl Running {
    /// Everything the process has written to standard error so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.1.lock().unwrap()).into_owned()
    }

    /// Sends the process `signal` (a `kill -SIGNAL` name such as `TERM`).
    pub fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.0.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Its exit status, waiting at most `timeout`; None while it still runs.
    pub fn exit_within(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a conversation under `contract` for the user whose key is `key` on the gateway at
/// `url`; returns its id.
pub async fn create_conversation(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    contract: &str,
) -> String {
    let response = client
        .post(format!("{url}/v1/conversations"))
        .bearer_auth(key)
        .json(&serde_json::json!({"contract": contract}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, reqwest::StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Sends `content` to `conversation` as the user whose key is `key`; the answer's JSON body.
pub async fn send_message(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    conversation: &str,
    content: &str,
) -> serde_json::Value {
    client
        .post(format!("{url}/v1/conversations/{conversation}/messages"))
        .bearer_auth(key)
        .json(&serde_json::json!({ "content": content }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Starts `bridle serve` on a free loopback port with its files in `dir`, and the environment
/// `envs`; returns it with its URL.
pub fn serve_in(dir: &std::path::Path, envs: &[(&str, &str)]) -> (Running, String) {
    spawn_listening(
        &[
            std::ffi::OsStr::new("serve"),
            std::ffi::OsStr::new("--bind"),
            std::ffi::OsStr::new("127.0.0.1:0"),
            std::ffi::OsStr::new("--data-dir"),
            dir.as_os_str(),
        ],
        envs,
    )
}

/// Starts `bridle ARGS` (a server that prints its `http://…` address on standard error) and
/// returns it with that URL; its standard error is kept from then on ([`Running::log`]).
pub fn spawn_listening(args: &[&std::ffi::OsStr], envs: &[(&str, &str)]) -> (Running, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(bridle_path())
        .args(args)
        .env_remove("OPENAI_BASE_URL")
        .envs(envs.iter().copied())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    // The address is on the first line that names one (debug logs may come before it).
    let mut head = String::new();
    let url = loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the server ended before printing its address: {head}");
        }
        head.push_str(&line);
        // A JSON log line has the banner's text as its "message".
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
            break url.split('"').next().unwrap_or(url).to_owned();
        }
    };
    // Keep draining its standard error (kept for `Running::log`) so that it never writes into
    // a closed pipe.
    let log = std::sync::Arc::new(std::sync::Mutex::new(head.into_bytes()));
    let kept = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        let mut chunk = String::new();
        while reader.read_line(&mut chunk).is_ok_and(|n| n > 0) {
            kept.lock().unwrap().extend_from_slice(chunk.as_bytes());
            chunk.clear();
        }
    });
    (Running(child, log), url)
}
