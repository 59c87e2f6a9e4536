//! The official JSON-Schema-Test-Suite through Bridle's schema path ([`Schema::compile_with`] +
//! `is_valid`), every draft Bridle reads, `optional/` included.
//!
//! The suite ships inside the source distribution of Python's `jsonschema` 4.26.0 on PyPI
//! (`json/tests/`); it is fetched with pip on first use into the target directory (or read from
//! `BRIDLE_JSON_SCHEMA_SUITE`), never committed. Every case runs in its draft (the draft's
//! folder decides where a schema names no `$schema`), with formats asserted (Bridle's default).
//!
//! What it asserts: the failing cases are exactly those listed in
//! `schema_suite_known_failures.txt` beside this file (each group of them explained there) — a
//! new failure fails the test, and so does a listed case that now passes (the list only
//! shrinks). Cases whose schema points at the suite's remote documents
//! (`http://localhost:1234/…`) are counted apart: Bridle never fetches a URL, so they fail by
//! design. The pass counts per draft are printed (`--nocapture`) and recorded in
//! docs/contract-kinds.md.

use bridle_core::schema::{Formats, Schema, SchemaDraft, SchemaOptions};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = "4.26.0";
const KNOWN: &str = include_str!("schema_suite_known_failures.txt");
/// Where the suite keeps its remote documents (never fetched by Bridle).
const REMOTE: &str = "localhost:1234";

#[derive(Deserialize)]
struct Group {
    description: String,
    schema: Value,
    tests: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    description: String,
    data: Value,
    valid: bool,
}

/// Counts for one draft, required or optional.
#[derive(Default, Debug)]
struct Tally {
    passed: usize,
    total: usize,
    /// Cases that need a remote document and fail (all counted in `total`).
    remote_failed: usize,
}

/// The suite's `tests/` folder, fetched with pip when it is not there yet.
fn suite() -> PathBuf {
    if let Ok(dir) = std::env::var("BRIDLE_JSON_SCHEMA_SUITE") {
        return PathBuf::from(dir);
    }
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let dir = target.join(format!("json-schema-test-suite-{VERSION}"));
    if dir.join("tests").is_dir() {
        return dir.join("tests");
    }
    let download = tempfile::tempdir_in(&target).expect("a scratch folder in the target dir");
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-binary",
            ":all:",
            "--no-deps",
        ])
        .arg(format!("jsonschema=={VERSION}"))
        .arg("-d")
        .arg(download.path())
        .status()
        .expect("python3 -m pip runs");
    assert!(
        status.success(),
        "pip download jsonschema=={VERSION} failed"
    );
    let archive = download.path().join(format!("jsonschema-{VERSION}.tar.gz"));
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(download.path())
        .arg(format!("jsonschema-{VERSION}/json"))
        .status()
        .expect("tar runs");
    assert!(status.success(), "unpacking {} failed", archive.display());
    // A rename is atomic: a concurrent run sees the whole suite or none of it.
    let unpacked = download.path().join(format!("jsonschema-{VERSION}/json"));
    if std::fs::rename(&unpacked, &dir).is_err() {
        assert!(
            dir.join("tests").is_dir(),
            "cannot place the suite in {}",
            dir.display()
        );
    }
    dir.join("tests")
}

/// Every `.json` file under `dir`, sorted, with its path relative to `dir`.
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, path));
            }
        }
    }
    out.sort();
    out
}

/// Runs one draft's folder (only the files `only` names, when given); returns (required,
/// optional) tallies and the failing case ids.
fn run_draft(
    root: &Path,
    folder: &str,
    options: &SchemaOptions,
    only: Option<&str>,
) -> (Tally, Tally, Vec<String>) {
    let (mut required, mut optional) = (Tally::default(), Tally::default());
    let mut failures = Vec::new();
    for (rel, path) in files(&root.join(folder)) {
        if only.is_some_and(|file| file != rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let groups: Vec<Group> = serde_json::from_str(&text).unwrap();
        let tally = if rel.starts_with("optional") {
            &mut optional
        } else {
            &mut required
        };
        for group in groups {
            let remote = group.schema.to_string().contains(REMOTE);
            let compiled = Schema::compile_with(group.schema, &[], options);
            for case in group.tests {
                let ok = match &compiled {
                    Ok(schema) => schema.is_valid(&case.data) == case.valid,
                    Err(_) => false,
                };
                tally.total += 1;
                if ok {
                    tally.passed += 1;
                } else if remote {
                    tally.remote_failed += 1;
                } else {
                    failures.push(format!(
                        "{folder}/{rel}: {} / {}",
                        group.description, case.description
                    ));
                }
            }
        }
    }
    (required, optional, failures)
}

#[test]
fn json_schema_test_suite() {
    let root = suite();
    let drafts = [
        ("draft4", SchemaDraft::Draft04),
        ("draft6", SchemaDraft::Draft06),
        ("draft7", SchemaDraft::Draft07),
        ("draft2019-09", SchemaDraft::Draft201909),
        ("draft2020-12", SchemaDraft::Draft202012),
    ];
    let known: BTreeSet<&str> = KNOWN
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut failing = BTreeSet::new();
    println!(
        "| draft | required passed | optional passed | failing: remote refs (never fetched) |"
    );
    println!("|---|---|---|---|");
    for (folder, draft) in drafts {
        let options = SchemaOptions {
            default_draft: Some(draft),
            ..SchemaOptions::default()
        };
        let (required, optional, failures) = run_draft(&root, folder, &options, None);
        println!(
            "| {folder} | {}/{} | {}/{} | {} + {} |",
            required.passed,
            required.total,
            optional.passed,
            optional.total,
            required.remote_failed,
            optional.remote_failed
        );
        failing.extend(failures);
    }
    let new: Vec<&String> = failing
        .iter()
        .filter(|f| !known.contains(f.as_str()))
        .collect();
    let fixed: Vec<&&str> = known.iter().filter(|k| !failing.contains(**k)).collect();
    assert!(
        new.is_empty(),
        "{} new failures (not in schema_suite_known_failures.txt):\n{}",
        new.len(),
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        fixed.is_empty(),
        "{} listed failures now pass; remove them from schema_suite_known_failures.txt:\n{}",
        fixed.len(),
        fixed.iter().map(|s| **s).collect::<Vec<_>>().join("\n")
    );
}

/// The one listed group of failures, the 2020-12 suite's "format is only an annotation by
/// default", passes when the contract opts out of format assertion.
#[test]
fn annotate_passes_the_required_format_cases() {
    let options = SchemaOptions {
        default_draft: Some(SchemaDraft::Draft202012),
        formats: Formats::Annotate,
    };
    let (required, _, failures) =
        run_draft(&suite(), "draft2020-12", &options, Some("format.json"));
    assert!(required.total > 100, "{required:?}");
    assert_eq!(failures, Vec::<String>::new());
}
