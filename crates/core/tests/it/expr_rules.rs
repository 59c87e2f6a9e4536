//! Expression rules (`kind = "expr"`) through a loaded contract: the four examples of issue 33,
//! load errors naming the rule, the context's application state, and the feedback a model reads.

use bridle_core::{Context, ContractError, Contracts, Rule};
use serde_json::json;
use std::fs;

const SCHEMA: &str = r#"{"type": "object"}"#;

const RULES: &str = r#"
[[rules]]
kind = "expr"
name = "end-after-start"
path = "/bookings/*"
expr = "this.end > this.start"
message = "the end {this.end} must come after the start {this.start}"

[[rules]]
kind = "expr"
name = "total-is-sum"
path = ""
expr = "!has(this.total) || this.total == this.items.map(i, i.price).sum()"
message = "total {this.total} must equal the sum of the items' prices"

[[rules]]
kind = "expr"
name = "one-recommended"
path = "/options"
expr = "this.filter(o, has(o.recommended) && o.recommended).size() <= 1"
message = "at most one option may be marked recommended"

[[rules]]
kind = "expr"
name = "row-in-table"
path = "/rows/*"
expr = "context.app_state.table.rows.exists(r, r.id == this.id)"
message = "row {this.id} is not in the table the application shows"
"#;

fn load(rules: &str) -> Result<Contracts, ContractError> {
    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "name = \"orders\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n{rules}"
    );
    fs::write(dir.path().join("manifest.toml"), manifest).unwrap();
    fs::write(dir.path().join("schema.json"), SCHEMA).unwrap();
    let mut set = Contracts::new();
    set.load_dir(dir.path())?;
    Ok(set)
}

fn table() -> Context {
    Context::new()
        .with("page", "table_view")
        .with_app_state(json!({"table": {"rows": [{"id": "r1"}, {"id": "r2"}]}}))
}

fn violations(reply: serde_json::Value) -> Vec<(String, String)> {
    let set = load(RULES).unwrap();
    let checked = set
        .get("orders")
        .unwrap()
        .check(&reply.to_string(), &table());
    checked
        .violations
        .into_iter()
        .map(|v| {
            assert_eq!(v.rule, Rule::Expr);
            (v.path, v.message)
        })
        .collect()
}

#[test]
fn a_reply_that_keeps_every_rule_passes() {
    let good = json!({
        "bookings": [{"start": "2026-01-01", "end": "2026-01-05"}],
        "total": 30, "items": [{"price": 10}, {"price": 20}],
        "options": [{"recommended": true}, {"recommended": false}, {}],
        "rows": [{"id": "r2"}]
    });
    assert_eq!(violations(good), vec![]);
}

#[test]
fn end_date_after_start_date() {
    let got = violations(json!({"bookings": [
        {"start": "2026-01-01", "end": "2026-01-05"},
        {"start": "2026-03-01", "end": "2026-02-01"}
    ]}));
    assert_eq!(
        got,
        vec![(
            "/bookings/1".into(),
            "rule \"end-after-start\" failed: the end \"2026-02-01\" must come after the start \"2026-03-01\"".into()
        )]
    );
}

#[test]
fn total_equals_the_sum_of_the_items() {
    let got = violations(json!({"total": 31, "items": [{"price": 10}, {"price": 20}]}));
    assert_eq!(got[0].0, "");
    assert_eq!(
        got[0].1,
        "rule \"total-is-sum\" failed: total 31 must equal the sum of the items' prices"
    );
    let missing = violations(json!({"total": 30, "items": [{"price": 10}, {"cost": 20}]}));
    assert!(
        missing[0]
            .1
            .contains("could not be checked here: no member \"price\""),
        "{missing:?}"
    );
}

#[test]
fn at_most_one_option_is_recommended() {
    let got = violations(json!({"options": [{"recommended": true}, {"recommended": true}]}));
    assert_eq!(
        got,
        vec![(
            "/options".into(),
            "rule \"one-recommended\" failed: at most one option may be marked recommended".into()
        )]
    );
}

#[test]
fn an_id_appears_in_the_contexts_table() {
    let got = violations(json!({"rows": [{"id": "r1"}, {"id": "r9"}]}));
    assert_eq!(
        got,
        vec![(
            "/rows/1".into(),
            "rule \"row-in-table\" failed: row \"r9\" is not in the table the application shows"
                .into()
        )]
    );
    let set = load(RULES).unwrap();
    let without_state = set
        .get("orders")
        .unwrap()
        .check(r#"{"rows": [{"id": "r1"}]}"#, &Context::new());
    assert!(
        without_state.violations[0]
            .message
            .contains("could not be checked here: no member \"app_state\""),
        "{:?}",
        without_state.violations
    );
}

#[test]
fn a_bad_expression_is_a_load_error_naming_the_rule_and_place() {
    let err =
        load("[[rules]]\nkind = \"expr\"\nname = \"broken\"\npath = \"/a\"\nexpr = \"this.x >\"\n")
            .unwrap_err()
            .to_string();
    assert!(
        err.contains("expr rule \"broken\": the expression does not parse at line 1, column"),
        "{err}"
    );
    let err = load("[[rules]]\nkind = \"expr\"\nname = \"a\"\nexpr = \"true\"\n[[rules]]\nkind = \"expr\"\nname = \"a\"\nexpr = \"true\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("two expr rules are named \"a\""), "{err}");
    let err =
        load("[[rules]]\nkind = \"expr\"\nname = \"a\"\nexpr = \"true\"\nmessage = \"{that.x}\"\n")
            .unwrap_err()
            .to_string();
    assert!(
        err.contains("must start with this, reply or context"),
        "{err}"
    );
}

#[test]
fn feedback_for_a_broken_expr_rule() {
    let set = load(RULES).unwrap();
    let contract = set.get("orders").unwrap();
    let reply = json!({
        "bookings": [{"start": "2026-03-01", "end": "2026-02-01"}],
        "total": 31, "items": [{"price": 10}, {"price": 20}],
        "rows": [{"id": "r9"}]
    });
    let checked = contract.check(&reply.to_string(), &table());
    insta::assert_snapshot!(contract.feedback(&checked));
}
