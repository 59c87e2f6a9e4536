//! Standard output closed by its reader (`bridle check … | head`): every command that prints
//! ends quietly with its own exit code — no panic, no exit 101 — except `keys add`, whose key
//! must be read: it fails and leaves the key file as it was.

use crate::core_fixture;
use bridle_server::auth::{self, Role, StoredKey};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `bridle ARGS` with standard output a pipe whose reading end is closed before the
/// process starts (so its first write meets a broken pipe), standard input `stdin`.
fn closed_stdout(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write as _;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(crate::bridle_path())
        .args(args)
        .env_remove("BRIDLE_CONTRACTS_DIR")
        .env_remove("BRIDLE_CONFIG")
        .env_remove("BRIDLE_DATA_DIR")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that does not read its input may be gone already: that is no failure here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_printing_command_ends_quietly_when_its_reader_is_gone() {
    let valid = core_fixture("selfhelp/valid/with_form.json");
    let invalid = core_fixture("selfhelp/invalid/suggestion_label_instead_of_text.json");
    let dir = tempfile::tempdir().unwrap();
    let replies = dir.path().join("replies.jsonl");
    std::fs::write(&replies, "{}\nnot json\n".repeat(500)).unwrap();
    let data = dir.path().join("data");
    let entries: Vec<StoredKey> = (0..500)
        .map(|i| StoredKey::new(Role::User, &format!("user{i}"), &format!("key-{i:020}")))
        .collect();
    auth::write_file(&data.join("api-keys.json"), &entries).unwrap();
    let long = "a long message ".repeat(600);

    let sel = "selfhelp-response";
    let cases: Vec<(Vec<&str>, &[u8], i32)> = vec![
        (vec!["check", "--contract", sel, path(&valid)], b"", 0),
        (
            vec!["check", "--json", "--contract", sel, path(&invalid)],
            b"",
            1,
        ),
        (vec!["contracts"], b"", 0),
        (vec!["contracts", "--json"], b"", 0),
        (vec!["prompt", "--contract", sel], b"", 0),
        (vec!["eval", "--contract", sel, path(&replies)], b"", 1),
        (
            vec!["eval", "--json", "--contract", sel, path(&replies)],
            b"",
            1,
        ),
        (
            vec!["xml-query", "--topic-id", "t", "--message", &long],
            b"",
            0,
        ),
        (vec!["repair"], b"```json\n{'a': [1, 2,],}\n```", 0),
        (vec!["repair", "--pretty"], b"{\"a\": 1}", 0),
        (vec!["repair"], b"{\"a\": 1}", 0),
        (vec!["keys", "list", "--data-dir", path(&data)], b"", 0),
    ];
    let mut failed = Vec::new();
    for (args, stdin, code) in cases {
        let output = closed_stdout(&args, stdin);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("panicked")
            || stderr.contains("error")
            || output.status.code() != Some(code)
        {
            failed.push(format!(
                "bridle {args:?}: {:?} {stderr}",
                output.status.code()
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn a_new_key_that_cannot_be_printed_is_not_added() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("api-keys.json");
    auth::write_file(
        &file,
        &[StoredKey::new(Role::User, "ada", "ada-key-0000000000")],
    )
    .unwrap();
    let before = std::fs::read(&file).unwrap();
    let output = closed_stdout(
        &[
            "keys",
            "add",
            "--user",
            "bob",
            "--data-dir",
            path(dir.path()),
        ],
        b"",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not be printed") && !stderr.contains("panicked"),
        "{stderr}"
    );
    let after: Vec<StoredKey> = auth::read_file(&file).unwrap();
    assert_eq!(after.len(), 1, "{}", String::from_utf8_lossy(&before));
    assert_eq!(after[0].user_id, "ada");
}
