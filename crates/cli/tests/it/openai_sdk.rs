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

#[test]
fn the_official_openai_sdk_talks_to_bridle() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        OsStr::new("serve"),
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--data-dir"),
        dir.path().as_os_str(),
    ];
    let (_server, url) = spawn_listening(
        &args,
        &[("BRIDLE_USER_KEYS", "sdk:sdk-key-0123456789abcdef")],
    );
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
    assert!(stdout.contains("12 checks passed"), "{stdout}");
}
