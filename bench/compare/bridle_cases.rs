//! The repair corpus: project-written text files in `bench/compare/repair/`, read into the JSON
//! list every tool is given (`repair-cases.json`).
//!
//! `malformed.txt` holds LLM-style malformed replies, each with the JSON it was meant to be;
//! `must-not-repair.txt` holds replies no tool may turn into an accepted value (cut off, no JSON
//! at all, ambiguous), and `fragments.txt` more of them: JSON that breaks inside, closes early and
//! goes on, or is followed by a second value (issue 33; judged as `reject` cases). A case starts with `### NAME` (optionally `### NAME | CONTRACT`, the
//! contract the result is judged by: `any` JSON by default, or `selfhelp-response`); its input is
//! every line up to `=== expected` (or the next case), and the expected JSON follows that line.
//! Lines before the first case are comments.

use serde_json::{Value, json};
use std::path::Path;

/// The corpus files and the kind of their cases.
pub const FILES: [(&str, &str); 3] = [
    ("malformed.txt", "malformed"),
    ("must-not-repair.txt", "reject"),
    ("fragments.txt", "reject"),
];

/// Every case of every file: `{name, kind, contract, input, expected}`.
pub fn load(dir: &Path) -> Vec<Value> {
    FILES
        .iter()
        .flat_map(|(file, kind)| load_file(dir, file, kind))
        .collect()
}

/// The cases of one file, of `kind` (`malformed` cases must have their expected JSON).
pub fn load_file(dir: &Path, file: &str, kind: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let text =
        std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    for case in text.split("\n### ").skip(1) {
        let (header, body) = case.split_once('\n').unwrap_or((case, ""));
        let (name, contract) = match header.split_once(" | ") {
            Some((name, contract)) => (name.trim(), contract.trim()),
            None => (header.trim(), "any"),
        };
        let (input, expected) = match body.split_once("\n=== expected\n") {
            Some((input, expected)) => {
                let value: Value = serde_json::from_str(expected.trim()).unwrap_or_else(|e| {
                    panic!("{file}: case {name:?}: expected JSON does not parse: {e}")
                });
                (input, value)
            }
            None => (body.strip_suffix('\n').unwrap_or(body), Value::Null),
        };
        assert!(
            kind == "reject" || expected != Value::Null || body.contains("=== expected"),
            "{file}: case {name:?} has no expected JSON"
        );
        out.push(json!({"name": name, "kind": kind, "contract": contract,
                        "input": input, "expected": expected}));
    }
    out
}
