//! The `markers` kind through the built-in `table-chat` contract: marker wrapping, fences,
//! balanced extraction, normalised suggestions, violations that make the engine retry, page
//! availability, the prompt sections, the reply writer and properties of the extractor.

use crate::fixture_dir;
use bridle_core::{Checked, Context, Contract, Contracts};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::sync::Arc;

fn table_chat() -> Arc<Contract> {
    Contracts::builtin().unwrap().get("table-chat").unwrap()
}

fn page(name: &str) -> Context {
    Context::new().with("page", name)
}

fn check(raw: &str, context: &Context) -> Checked {
    table_chat().check(raw, context)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir("markers").join(name)).unwrap()
}

fn rules(checked: &Checked) -> Vec<(String, String)> {
    checked
        .violations
        .iter()
        .map(|v| (v.path.clone(), v.rule.to_string()))
        .collect()
}

fn repair_kinds(checked: &Checked) -> Vec<&str> {
    checked.repairs.iter().map(|r| r.kind.as_str()).collect()
}

#[test]
fn a_fenced_update_proposal_is_read_and_removed_with_its_fence() {
    let checked = check(&fixture("update_with_fence.txt"), &page("table_edit"));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    assert_eq!(value["payload"]["type"], "schema_proposal");
    assert_eq!(
        value["payload"]["data"]["operations"][1]["column_id"],
        "col_owner"
    );
    assert_eq!(
        value["message"],
        "Good idea — a priority column will let you sort the backlog. I also renamed **Owner** to *Assignee* as you asked.\n\nApply it when it looks right."
    );
    assert_eq!(value["suggested_values"], Value::Null);
}

#[test]
fn braces_and_quotes_inside_strings_do_not_end_the_payload() {
    let checked = check(&fixture("data_rows.txt"), &page("table_view"));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    let ops = &value["payload"]["data"]["operations"];
    assert_eq!(ops.as_array().unwrap().len(), 4);
    assert_eq!(ops[1]["data"]["Title"], "Piranesi {illustrated}");
    assert_eq!(
        value["message"],
        "I drafted three reading-log rows and marked the duplicate for deletion:"
    );
}

#[test]
fn plain_and_object_suggestions_become_one_shape() {
    let checked = check(&fixture("suggestions_mixed.txt"), &page("table_view"));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.clone().unwrap();
    assert_eq!(
        value["suggested_values"],
        json!([
            {"label": "Add a category column", "value": "Add a category column"},
            {"label": "Import last month", "value": "Import last month's bank export into this table"}
        ])
    );
    assert_eq!(
        value["suggested_actions"],
        json!([{"label": "Done for now", "action": "close_chat", "handler": "client"}])
    );
    assert_eq!(
        value["message"],
        "Your budget table now has **4 columns**. Monthly totals are in the footer."
    );
    assert_eq!(
        repair_kinds(&checked),
        ["plain_suggestion", "default_handler"]
    );
}

#[test]
fn every_marker_wrapping_is_recognised() {
    for marker in [
        "SUGGESTED_VALUES:",
        "**SUGGESTED_VALUES:**",
        "**SUGGESTED_VALUES**:",
        "*SUGGESTED_VALUES*:",
        "## SUGGESTED_VALUES:",
    ] {
        let raw = format!("Sure.\n\n{marker}\n[\"Show totals\", \"Sort by date\"]");
        let checked = check(&raw, &Context::new());
        assert!(checked.is_valid(), "{marker}: {:?}", checked.violations);
        let value = checked.value.unwrap();
        assert_eq!(value["message"], "Sure.", "{marker}");
        assert_eq!(value["suggested_values"][1]["value"], "Sort by date");
    }
}

#[test]
fn a_marker_whose_json_is_broken_is_a_violation_not_a_skip() {
    let raw = "Here you go.\nSUGGESTED_VALUES: [{\"label\": \"A\" \"value\": }]";
    let checked = check(raw, &Context::new());
    assert!(!checked.is_valid());
    assert_eq!(
        rules(&checked),
        [("/suggested_values".into(), "marker_json".into())]
    );
    // The broken section never reaches the user.
    assert_eq!(checked.value.unwrap()["message"], "Here you go.");
    let feedback = table_chat().feedback(&check(raw, &Context::new()));
    assert!(feedback.contains("SUGGESTED_VALUES"), "{feedback}");
}

#[test]
fn cut_off_and_missing_json_are_violations() {
    let checked = check(
        "Proposal:\nSCHEMA_PROPOSAL: {\"mode\": \"create\", \"operations\": [",
        &Context::new(),
    );
    assert_eq!(rules(&checked), [("/payload".into(), "truncated".into())]);
    let checked = check("Ok\nSUGGESTED_ACTIONS: close the chat", &Context::new());
    assert_eq!(
        rules(&checked),
        [("/suggested_actions".into(), "marker_json".into())]
    );
}

#[test]
fn lenient_json_inside_a_section_is_repaired_and_reported() {
    let raw = "Done.\nSUGGESTED_VALUES: ['Add a row', 'Rename the table',]";
    let checked = check(raw, &Context::new());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let kinds = repair_kinds(&checked);
    assert!(kinds.contains(&"single_quote"), "{kinds:?}");
    assert!(kinds.contains(&"trailing_comma"), "{kinds:?}");
}

#[test]
fn payload_data_is_validated_against_its_type_schema() {
    // create mode allows only "add" and needs sample rows.
    let raw = r#"New table:
SCHEMA_PROPOSAL: {"mode": "create", "table_name": "Trips", "table_description": "Where and when", "operations": [{"action": "remove", "column_id": "col_1"}]}"#;
    let checked = check(raw, &page("tables_list"));
    let found = rules(&checked);
    assert!(
        found.contains(&("".into(), "required".into()))
            || found
                .iter()
                .any(|(p, r)| p == "/payload/data" && r == "required"),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(p, _)| p.starts_with("/payload/data/operations/0")),
        "{found:?}"
    );
    // A select column without options.
    let raw = r#"SCHEMA_PROPOSAL: {"mode": "update", "operations": [{"action": "add", "column": {"name": "Mood", "type": "select"}}]}"#;
    let checked = check(raw, &page("table_edit"));
    assert!(
        rules(&checked)
            .iter()
            .any(|(p, r)| p == "/payload/data/operations/0/column" && r == "required"),
        "{:?}",
        checked.violations
    );
}

#[test]
fn a_payload_not_offered_on_the_page_is_a_violation() {
    let raw = r#"Adding rows.
DATA_PROPOSAL: {"operations": [{"action": "delete", "row_id": 3}]}"#;
    assert!(check(raw, &page("table_view")).is_valid());
    let checked = check(raw, &page("tables_list"));
    assert_eq!(
        rules(&checked),
        [("/payload".into(), "payload_unavailable".into())]
    );
    assert_eq!(checked.value.unwrap()["message"], "Adding rows.");
}

#[test]
fn actions_must_be_registered_by_the_context() {
    let raw = r#"OK.
SUGGESTED_ACTIONS: [{"label": "Filters", "action": "open_filters", "handler": "client"}, {"label": "Export", "action": "export_csv", "handler": "client"}]"#;
    let checked = check(raw, &page("table_view"));
    assert_eq!(
        rules(&checked),
        [(
            "/suggested_actions/1/action".into(),
            "unknown_action".into()
        )]
    );
    let with_export = page("table_view").with("actions", "export_csv, print");
    assert!(check(raw, &with_export).is_valid());
    // open_filters belongs to table_view only.
    assert!(!check(raw, &page("table_edit").with("actions", "export_csv")).is_valid());
}

#[test]
fn first_payload_wins_and_suggestions_give_way_to_a_proposal() {
    let raw = r#"Two ideas.
DATA_PROPOSAL: {"operations": [{"action": "delete", "row_id": 4}]}
SCHEMA_PROPOSAL: {"mode": "update", "operations": [{"action": "remove", "column_id": "col_9"}]}
SUGGESTED_VALUES: ["Apply it"]"#;
    let checked = check(raw, &page("table_view"));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.clone().unwrap();
    assert_eq!(value["payload"]["type"], "data_proposal");
    assert_eq!(value["suggested_values"], Value::Null);
    assert_eq!(value["message"], "Two ideas.");
    assert_eq!(
        repair_kinds(&checked),
        ["extra_payload", "suggestions_with_proposal"]
    );
}

#[test]
fn the_prompt_has_the_spec_sections_for_the_page() {
    let contract = table_chat();
    let context = page("table_view")
        .with("table", "Books(col_title: text, col_pages: number)")
        .with("actions", "export_csv");
    let history = [
        json!({"message": "", "suggested_values": null, "suggested_actions": null,
        "payload": {"type": "schema_proposal", "data": {"mode": "create", "table_name": "Books", "operations": [{}, {}]}}}),
    ];
    let prompt = contract.instructions_with_history(&context, &history);
    for needle in [
        "table app",
        "## Page: table_view",
        "## Current context",
        "- table: Books(col_title: text, col_pages: number)",
        "## Payloads earlier in this conversation",
        "schema_proposal (mode: create; operations: 2 item(s); table_name: Books)",
        "### SCHEMA_PROPOSAL:",
        "### DATA_PROPOSAL:",
        "- open_filters: Open the filter panel",
        "- export_csv",
        "- close_chat",
        "## Format rules",
    ] {
        assert!(prompt.contains(needle), "missing {needle:?} in:\n{prompt}");
    }
    let list_page = contract.instructions(&page("tables_list"));
    assert!(!list_page.contains("DATA_PROPOSAL:"));
    assert!(!list_page.contains("open_filters"));
}

#[test]
fn written_replies_read_back_to_the_same_value() {
    let contract = table_chat();
    let value = json!({
        "message": "Here are sample rows.",
        "suggested_values": null,
        "suggested_actions": null,
        "payload": {"type": "data_proposal", "data": {"operations": [{"action": "add", "data": {"Name": "x}\"]"}}]}}
    });
    let text = contract.reply_text(&value);
    let checked = contract.check(&text, &page("table_view"));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    assert_eq!(checked.value.unwrap(), value);
}

proptest! {
    #[test]
    fn extraction_never_panics_and_the_message_keeps_no_marker(
        prefix in ".{0,80}",
        wrap in prop::sample::select(vec!["", "*", "**"]),
        marker in prop::sample::select(vec!["SUGGESTED_VALUES", "SUGGESTED_ACTIONS", "SCHEMA_PROPOSAL", "DATA_PROPOSAL"]),
        body in "[\\[\\]{}\"\\\\a-z:, ]{0,40}",
        suffix in ".{0,80}",
    ) {
        let raw = format!("{prefix}\n{wrap}{marker}{wrap}: {body}\n{suffix}");
        let checked = check(&raw, &Context::new());
        if let Some(value) = &checked.value {
            let message = value["message"].as_str().unwrap();
            for name in ["SUGGESTED_VALUES:", "SUGGESTED_ACTIONS:", "SCHEMA_PROPOSAL:", "DATA_PROPOSAL:"] {
                // Only text the generator put around the section may mention a marker.
                if !prefix.contains(name) && !suffix.contains(name) && !prefix.contains(&name[..name.len() - 1]) && !suffix.contains(&name[..name.len() - 1]) {
                    prop_assert!(!message.contains(name), "{message:?}");
                }
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(raw in "(?s).{0,400}") {
        let _ = check(&raw, &page("table_view"));
    }
}
