//! The OpenAI-compatible endpoint of the real `bridle serve`, driven over loopback by the
//! official `openai` Python package (installed by scripts/test.sh into target/py).

use crate::spawn_listening;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

/// The Python with the `openai` package: `BRIDLE_TEST_PYTHON`, else `target/py/bin/python`.
fn python() -> PathBuf {
    if let Ok(path) = std::env::var("BRIDLE_TEST_PYTHON") {
        return PathBuf::from(path);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py/bin/python");
    assert!(
        venv.is_file(),
        "no Python with the openai package at {}: run scripts/test.sh, which installs it",
        venv.display()
    );
    venv
}

/// `bridle serve` with zero config on a free port in a fresh data dir, the user key `user_key`
/// (`name:key`) and room for more calls than the default ten a minute: the data dir (kept while
/// the server runs), the server and its URL.
fn serve_for_clients(user_key: &str) -> (tempfile::TempDir, crate::Running, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        OsStr::new("serve"),
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--data-dir"),
        dir.path().as_os_str(),
    ];
    let (server, url) = spawn_listening(
        &args,
        &[
            ("BRIDLE_USER_KEYS", user_key),
            ("BRIDLE__SERVER__LIMITS__REQUESTS_PER_MINUTE", "100"),
        ],
    );
    (dir, server, url)
}

#[test]
fn the_official_openai_sdk_talks_to_bridle() {
    let (_dir, _server, url) = serve_for_clients("sdk:sdk-key-0123456789abcdef");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/openai_client.py");
    let output = Command::new(python())
        .arg(script)
        .arg(format!("{url}/v1"))
        .arg("sdk-key-0123456789abcdef")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK script failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("18 checks passed"), "{stdout}");
}

/// `node`, when the official `openai` npm package is installed beside the script
/// (scripts/test.sh runs `npm ci` in crates/cli/tests/js).
fn node_with_openai() -> PathBuf {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js/node_modules/openai");
    assert!(
        package.is_dir(),
        "the openai npm package is not installed at {}: run scripts/test.sh, which installs it",
        package.display()
    );
    PathBuf::from(std::env::var("BRIDLE_TEST_NODE").unwrap_or_else(|_| "node".into()))
}

#[test]
fn the_official_openai_npm_client_talks_to_bridle() {
    let node = node_with_openai();
    let (_dir, _server, url) = serve_for_clients("js:js-key-0123456789abcdef");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js/openai_client.mjs");
    let output = Command::new(node)
        .arg(script)
        .arg(format!("{url}/v1"))
        .arg("js-key-0123456789abcdef")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the npm client script failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("7 checks passed"), "{stdout}");
}
