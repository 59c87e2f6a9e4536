//! CLI integration tests: the real `bridle` binary on fixture files and standard input, its exit
//! codes (0 met, 1 not met, 2 usage/I-O) and its output shapes.

#![allow(clippy::unwrap_used)]

mod check;
mod eval;
mod mock_llm;
mod other;

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
