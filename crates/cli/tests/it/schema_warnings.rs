//! A contract's load-time warnings (a `format` Bridle does not know) reach its author: in the
//! start-up log of `bridle serve`, and in `bridle contracts --json`.

use crate::{bridle, json_out, spawn_listening};
use std::ffi::OsStr;
use std::fs;

/// A contract directory whose schema names the unknown format `zip-code`.
fn contract_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("manifest.toml"),
        "name = \"zips\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("schema.json"),
        r#"{"type": "object", "properties": {"zip": {"type": "string", "format": "zip-code"}}}"#,
    )
    .unwrap();
    dir
}

const WARNING: &str = "schema.json: at /properties/zip/format: format \"zip-code\" is not one Bridle knows, so it is not checked";

#[test]
fn serve_logs_a_contracts_warnings_at_start_up() {
    let contracts = contract_dir();
    let data = tempfile::tempdir().unwrap();
    let (server, _url) = spawn_listening(
        &[
            OsStr::new("--contracts"),
            contracts.path().as_os_str(),
            OsStr::new("serve"),
            OsStr::new("--bind"),
            OsStr::new("127.0.0.1:0"),
            OsStr::new("--data-dir"),
            data.path().as_os_str(),
        ],
        &[],
    );
    let log = server.log();
    let line = log
        .lines()
        .find(|l| l.contains("zip-code"))
        .unwrap_or_else(|| panic!("no warning in the start-up log:\n{log}"));
    // Standard error is a pipe: the log is JSON lines.
    let line: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["level"], "WARN", "{line}");
    assert_eq!(line["contract"], "zips", "the contract is named: {line}");
    assert_eq!(line["message"], WARNING, "{line}");
}

#[test]
fn contracts_json_lists_each_contracts_warnings() {
    let contracts = contract_dir();
    let output = bridle()
        .arg("--contracts")
        .arg(contracts.path())
        .args(["contracts", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let list = json_out(&output);
    let zips = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "zips")
        .unwrap();
    assert_eq!(zips["warnings"], serde_json::json!([WARNING]));
    let builtin = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "selfhelp-response")
        .unwrap();
    assert_eq!(builtin["warnings"], serde_json::json!([]));
}
