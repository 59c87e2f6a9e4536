//! Key rotation without a restart: `bridle keys add` and `bridle keys revoke` change the key
//! file of a running `bridle serve`, which puts the change in force within seconds; a key
//! from the environment keeps working throughout.

use crate::{bridle, serve_in};
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-rotation-key-0000000";

fn keys(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let output = bridle()
        .arg("keys")
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("BRIDLE_CONFIG")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "bridle keys {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

async fn status(client: &reqwest::Client, url: &str, key: &str) -> u16 {
    client
        .get(format!("{url}/v1/conversations"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Waits until `key` gets `want` (the server reloads its key file every 200 ms here).
async fn until(client: &reqwest::Client, url: &str, key: &str, want: u16) {
    let start = Instant::now();
    loop {
        let got = status(client, url, key).await;
        if got == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "key still answered {got}, wanted {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn keys_are_added_and_revoked_while_the_server_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = serve_in(
        dir.path(),
        &[
            ("BRIDLE_ADMIN_KEY", ADMIN),
            ("BRIDLE__SERVER__KEY_RELOAD_MS", "200"),
        ],
    );
    let client = reqwest::Client::new();

    let added = keys(dir.path(), &["add", "--user", "carol"]);
    let old = String::from_utf8(added.stdout).unwrap().trim().to_owned();
    assert!(old.starts_with("bk_"), "{old}");
    until(&client, &url, &old, 200).await;

    // Rotation: a second key for carol, then the first one revoked by its id.
    let new = String::from_utf8(keys(dir.path(), &["add", "--user", "carol"]).stdout)
        .unwrap()
        .trim()
        .to_owned();
    until(&client, &url, &new, 200).await;
    let listed = String::from_utf8(keys(dir.path(), &["list"]).stdout).unwrap();
    let stored = std::fs::read_to_string(dir.path().join("api-keys.json")).unwrap();
    assert!(
        !stored.contains(&old) && !stored.contains(&new) && !listed.contains(&new),
        "only hashes are stored and listed"
    );
    let old_id = &bridle_server::auth::hash(&old)[..12];
    assert!(listed.contains(old_id), "{listed}");
    keys(dir.path(), &["revoke", old_id]);
    until(&client, &url, &old, 401).await;
    assert_eq!(status(&client, &url, &new).await, 200);
    assert_eq!(
        status(&client, &url, ADMIN).await,
        200,
        "environment keys stay"
    );

    // A revoked user's every key.
    keys(dir.path(), &["revoke", "--user", "carol"]);
    until(&client, &url, &new, 401).await;
    let refused = bridle()
        .args(["keys", "revoke", "--user", "nobody", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!refused.status.success(), "revoking nothing is an error");
}

/// `bridle keys ARGS` in `dir`, whatever its outcome.
fn keys_output(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    bridle()
        .arg("keys")
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("BRIDLE_CONFIG")
        .output()
        .unwrap()
}

#[test]
fn user_ids_the_limiter_or_admins_own_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let long = "u".repeat(65);
    for user in ["admin", "Admin", long.as_str(), "a b", "ada/../x", ""] {
        let output = keys_output(dir.path(), &["add", "--user", user]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{user:?}: {stderr}");
        assert!(stderr.contains("refused"), "{user:?}: {stderr}");
        assert!(output.stdout.is_empty(), "no key printed for {user:?}");
    }
    assert!(
        !dir.path().join("api-keys.json").exists(),
        "nothing written"
    );
    // An admin key acts as admin; a plain user id of 64 characters is fine.
    keys(dir.path(), &["add", "--admin", "--user", "admin"]);
    keys(dir.path(), &["add", "--user", &"u".repeat(64)]);
    let stored = bridle_server::auth::read_file(&dir.path().join("api-keys.json")).unwrap();
    assert_eq!(stored.len(), 2);
}

#[test]
fn concurrent_adds_all_end_up_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let adding: Vec<_> = (0..16)
        .map(|i| {
            std::process::Command::new(crate::bridle_path())
                .args(["keys", "add", "--user", &format!("user{i}"), "--data-dir"])
                .arg(dir.path())
                .env_remove("BRIDLE_CONFIG")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut printed = Vec::new();
    for child in adding {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        printed.push(String::from_utf8(output.stdout).unwrap().trim().to_owned());
    }
    let stored = bridle_server::auth::read_file(&dir.path().join("api-keys.json")).unwrap();
    let mut users: Vec<_> = stored.iter().map(|e| e.user_id.clone()).collect();
    users.sort();
    let mut wanted: Vec<_> = (0..16).map(|i| format!("user{i}")).collect();
    wanted.sort();
    assert_eq!(users, wanted, "no add undid another");
    for key in printed {
        let hash = bridle_server::auth::hash(&key);
        assert!(stored.iter().any(|e| e.sha256 == hash), "{key} stored");
    }
}
