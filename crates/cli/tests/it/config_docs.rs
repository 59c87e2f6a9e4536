//! docs/configuration.md cannot drift from the code: every key `bridle config show` prints is
//! in its tables with the same default, and every key in its tables is printed.
//!
//! A table row is `| `key.path` | default | meaning |`; an entry's name is written `<name>`
//! (`<contract>`, `<language>`). A default that is one code span alone (`` `3` ``,
//! `` `"./bridle-data"` ``) is the TOML value `show` must print when the key is not set;
//! anything else (`required`, `none (…)`, a sentence) describes a default that depends on other
//! keys, and is not compared.

use super::config::{config, full_config, stdout_of};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The documented keys and their defaults (`None`: described, not a value).
fn documented() -> BTreeMap<String, Option<String>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut keys = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            5,
            "a row is | key | default | meaning |: {line}"
        );
        let key = cells[1].trim_matches('`').to_owned();
        let default = cells[2];
        let value = (default.len() > 1
            && default.starts_with('`')
            && default.ends_with('`')
            && default.matches('`').count() == 2)
            .then(|| default.trim_matches('`').to_owned());
        assert!(
            keys.insert(key.clone(), value).is_none(),
            "{key} is documented twice"
        );
    }
    keys
}

/// `providers.up.kind` → `providers.<name>.kind`, and so on for every table of entries.
fn general(path: &[String]) -> String {
    let mut parts = path.to_vec();
    let first = parts.first().map(String::as_str);
    let second = parts.get(1).map(String::as_str);
    let slot = match (first, second) {
        (Some("providers" | "models"), _) => Some((1, "<name>")),
        (Some("retry"), Some("contracts")) => Some((2, "<contract>")),
        (Some("safety"), Some("crisis" | "blocked_notice")) => Some((2, "<language>")),
        _ => None,
    };
    if let Some((at, name)) = slot
        && at < parts.len()
    {
        parts[at] = name.to_owned();
    }
    // A model's own headers and query parameters: `models.<name>.headers.<header>`.
    let extra = match parts.get(2).map(String::as_str) {
        Some("headers") if path[0] == "models" => Some("<header>"),
        Some("query") if path[0] == "models" => Some("<param>"),
        _ => None,
    };
    if let Some(name) = extra
        && parts.len() > 3
    {
        parts[3] = name.to_owned();
    }
    parts.join(".")
}

/// Every leaf key of a TOML text (an array is one leaf), generalised, with its value.
fn leaves(text: &str) -> Vec<(String, String)> {
    fn walk(table: &toml::Table, path: &mut Vec<String>, out: &mut Vec<(String, String)>) {
        for (key, value) in table {
            path.push(key.clone());
            match value {
                toml::Value::Table(inner) => walk(inner, path, out),
                leaf => out.push((general(path), leaf.to_string())),
            }
            path.pop();
        }
    }
    let table: toml::Table = toml::from_str(text).unwrap();
    let mut out = Vec::new();
    walk(&table, &mut Vec::new(), &mut out);
    out
}

/// Checks what `show` printed for `input` against the documentation; returns the keys printed.
fn check_against_docs(
    input: &str,
    shown: &str,
    docs: &BTreeMap<String, Option<String>>,
) -> BTreeSet<String> {
    let set: BTreeSet<String> = leaves(input).into_iter().map(|(key, _)| key).collect();
    let mut printed = BTreeSet::new();
    for (key, value) in leaves(shown) {
        let Some(default) = docs.get(&key) else {
            panic!("`config show` prints {key}, which docs/configuration.md does not list");
        };
        if let Some(default) = default
            && !set.contains(&key)
        {
            assert_eq!(
                &value, default,
                "{key}: `config show` prints {value}, docs/configuration.md says {default}"
            );
        }
        printed.insert(key);
    }
    printed
}

#[test]
fn the_documented_keys_and_defaults_are_what_show_prints() {
    let docs = documented();
    let dir = tempfile::tempdir().unwrap();
    // No configuration: every key printed is documented, with the default printed.
    let shown = stdout_of(&mut config(dir.path(), "show"));
    let printed = check_against_docs("", &shown, &docs);
    assert!(
        printed.contains("server.limits.requests_per_minute"),
        "{shown}"
    );

    // Every optional table and entry kind present: every documented key is printed.
    let input = full_config(dir.path(), true);
    let file = dir.path().join("bridle.toml");
    std::fs::write(&file, &input).unwrap();
    let shown = stdout_of(config(dir.path(), "show").arg(&file).env("UP_KEY", "k"));
    let printed = check_against_docs(&input, &shown, &docs);
    let missing: Vec<&String> = docs.keys().filter(|k| !printed.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md lists keys `config show` never prints: {missing:?}\n{shown}"
    );
}
