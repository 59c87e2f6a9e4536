//! CLI integration tests: the real `bridle` binary on fixture files and standard input, its exit
//! codes (0 met, 1 not met, 2 usage/I-O) and its output shapes.

#![allow(clippy::unwrap_used)]

mod check;
mod eval;
mod mock_llm;
mod openai_sdk;
mod other;
mod serve;

use assert_cmd::Command;
use std::path::PathBuf;

pub fn bridle() -> Command {
    let mut cmd = Command::cargo_bin("bridle").expect("binary built");
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

/// A child process killed when dropped.
#[derive(Debug)]
pub struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `bridle ARGS` (a server that prints its `http://…` address on its first line of
/// standard error) and returns it with that URL; its standard error is drained from then on.
pub fn spawn_listening(args: &[&std::ffi::OsStr], envs: &[(&str, &str)]) -> (Running, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("bridle"))
        .args(args)
        .env_remove("OPENAI_BASE_URL")
        .envs(envs.iter().copied())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    // Keep draining its standard error so that it never writes into a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (Running(child), url)
}
