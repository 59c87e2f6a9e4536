//! Loading contracts from directories: what loads, and the clear error each mistake gets.

use bridle_core::{Context, ContractError, Contracts};
use std::fs;
use std::path::Path;

const SCHEMA: &str =
    r#"{"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}"#;

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

fn manifest(extra: &str) -> String {
    format!(
        "name = \"demo\"\nversion = \"1.2.3\"\nkind = \"json\"\nschema = \"schema.json\"\n{extra}"
    )
}

fn load(files: &[(&str, &str)]) -> Result<Contracts, ContractError> {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    let mut set = Contracts::new();
    set.load_dir(dir.path())?;
    Ok(set)
}

fn error(files: &[(&str, &str)]) -> String {
    load(files).expect_err("should fail").to_string()
}

#[test]
fn a_minimal_contract_loads_and_checks() {
    let m = manifest("");
    let set = load(&[("manifest.toml", &m), ("schema.json", SCHEMA)]).unwrap();
    let c = set.get("demo").unwrap();
    assert_eq!(c.version().to_string(), "1.2.3");
    assert!(c.check(r#"{"answer": "yes"}"#, &Context::new()).is_valid());
    assert!(!c.check(r#"{"answer": 1}"#, &Context::new()).is_valid());
}

#[test]
fn a_directory_of_contracts_loads_each_and_can_replace_a_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest("").replace("demo", "selfhelp-response");
    write(
        dir.path(),
        &[
            ("a/manifest.toml", &manifest("")),
            ("a/schema.json", SCHEMA),
            ("b/manifest.toml", &m),
            ("b/schema.json", SCHEMA),
        ],
    );
    let mut set = Contracts::builtin().unwrap();
    let mut names = set.load_dir(dir.path()).unwrap();
    names.sort();
    assert_eq!(names, vec!["demo", "selfhelp-response"]);
    assert_eq!(
        set.get("selfhelp-response").unwrap().version().to_string(),
        "1.2.3"
    );
}

#[test]
fn extra_schema_files_are_ref_targets() {
    let m = manifest("schemas = [\"defs.json\"]");
    let root =
        r#"{"type": "object", "properties": {"answer": {"$ref": "defs.json#/$defs/short"}}}"#;
    let defs = r#"{"$defs": {"short": {"type": "string", "maxLength": 3}}}"#;
    let set = load(&[
        ("manifest.toml", &m),
        ("schema.json", root),
        ("defs.json", defs),
    ])
    .unwrap();
    let c = set.get("demo").unwrap();
    assert!(c.check(r#"{"answer": "abc"}"#, &Context::new()).is_valid());
    let checked = c.check(r#"{"answer": "abcd"}"#, &Context::new());
    assert_eq!(checked.violations[0].rule.as_str(), "maxLength");
}

#[test]
fn mistakes_in_a_contract_are_clear_errors() {
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("manifest.toml", "name = ".into())], "manifest.toml"),
        (
            vec![
                ("manifest.toml", manifest("colour = \"red\"")),
                ("schema.json", SCHEMA.into()),
            ],
            "unknown field",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest("").replace("demo", "Demo Contract"),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "name",
        ),
        (
            vec![
                ("manifest.toml", manifest("").replace("1.2.3", "one")),
                ("schema.json", SCHEMA.into()),
            ],
            "semantic version",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest("").replace("\"json\"", "\"yaml\""),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "kind \"yaml\"",
        ),
        (
            vec![("manifest.toml", manifest(""))],
            "cannot read schema.json",
        ),
        (
            vec![
                ("manifest.toml", manifest("")),
                ("schema.json", "{not json".into()),
            ],
            "schema.json is not JSON",
        ),
        (
            vec![
                ("manifest.toml", manifest("")),
                ("schema.json", r#"{"type": "strnig"}"#.into()),
            ],
            "keyword",
        ),
        (
            vec![
                ("manifest.toml", manifest("")),
                (
                    "schema.json",
                    r#"{"$schema": "https://example.com/custom"}"#.into(),
                ),
            ],
            "unknown \"$schema\"",
        ),
        (
            vec![
                ("manifest.toml", manifest("example = \"example.json\"")),
                ("schema.json", SCHEMA.into()),
                ("example.json", r#"{"answer": 5}"#.into()),
            ],
            "the example does not meet the contract",
        ),
        (
            vec![
                ("manifest.toml", manifest("example = \"../secret.json\"")),
                ("schema.json", SCHEMA.into()),
            ],
            "relative path inside",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest("[[rules]]\nkind = \"unique\"\npath = \"no-slash\""),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "absolute path",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest(
                        "[[rules]]\nkind = \"implies\"\nwhen = { path = \"/a\" }\nthen = { path = \"/b\", equals = 1 }",
                    ),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "exactly one of",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest("[[rules]]\nkind = \"frobnicate\""),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "frobnicate",
        ),
        (
            vec![
                (
                    "manifest.toml",
                    manifest(
                        "[[coercions]]\nkind = \"rename_key\"\npath = \"/a\"\nfrom = \"x\"\nto = \"x\"",
                    ),
                ),
                ("schema.json", SCHEMA.into()),
            ],
            "two different",
        ),
    ];
    for (files, wanted) in cases {
        let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        let message = error(&refs);
        assert!(
            message.contains(wanted),
            "expected {wanted:?} in: {message}"
        );
    }
}

#[test]
fn an_empty_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let message = Contracts::new()
        .load_dir(dir.path())
        .unwrap_err()
        .to_string();
    assert!(message.contains("no manifest.toml"), "{message}");
}

#[test]
fn unknown_contract_names_the_known_ones() {
    let message = Contracts::builtin()
        .unwrap()
        .get("nope")
        .unwrap_err()
        .to_string();
    assert!(message.contains("selfhelp-response"), "{message}");
}

#[test]
fn formats_are_asserted_in_every_draft_unless_the_manifest_opts_out() {
    let schema = r#"{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "properties": {"id": {"format": "uuid"}, "at": {"format": "duration"}, "zip": {"format": "zip-code"}}}"#;
    let reply = r#"{"id": "not-a-uuid", "at": "3 days"}"#;
    let ctx = Context::new();

    let set = load(&[("manifest.toml", &manifest("")), ("schema.json", schema)]).unwrap();
    let contract = set.get("demo").unwrap();
    let rules: Vec<(String, String)> = contract
        .check(reply, &ctx)
        .violations
        .into_iter()
        .map(|v| (v.path, v.rule.to_string()))
        .collect();
    assert_eq!(
        rules,
        vec![
            ("/at".to_owned(), "format".to_owned()),
            ("/id".to_owned(), "format".to_owned())
        ]
    );
    assert_eq!(
        contract.warnings(),
        [
            "schema.json: at /properties/zip/format: format \"zip-code\" is not one Bridle knows, so it is not checked"
        ]
    );

    let set = load(&[
        ("manifest.toml", &manifest("formats = \"annotate\"")),
        ("schema.json", schema),
    ])
    .unwrap();
    let contract = set.get("demo").unwrap();
    assert!(contract.check(reply, &ctx).is_valid());
    assert!(contract.warnings().is_empty());

    let e = load(&[
        ("manifest.toml", &manifest("formats = \"sometimes\"")),
        ("schema.json", schema),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("formats"), "{e}");
}

#[test]
fn a_pattern_that_is_no_regex_fails_the_load_naming_file_and_place() {
    let e = load(&[
        ("manifest.toml", &manifest("schemas = [\"defs.json\"]")),
        ("schema.json", r#"{"$ref": "defs.json"}"#),
        (
            "defs.json",
            r#"{"properties": {"code": {"pattern": "(["}}}"#,
        ),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("defs.json#/properties/code/pattern"), "{e}");
    assert!(
        e.contains("\"([\" is not an ECMA-262 regular expression"),
        "{e}"
    );
}
