//! Fuzz target: the `markers` kind — `check` of the `table-chat` contract on arbitrary bytes,
//! on each page. Never panics; the feedback stays bounded; the message never keeps a
//! recognised marker (`NAME:` right after a line start); a valid value written back as a reply
//! reads the same.

#![no_main]

use bridle_core::{Context, Contract, Contracts, MAX_FEEDBACK_CHARS};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

const MARKERS: [&str; 4] = [
    "SUGGESTED_VALUES:",
    "SUGGESTED_ACTIONS:",
    "SCHEMA_PROPOSAL:",
    "DATA_PROPOSAL:",
];

fn contract() -> &'static Arc<Contract> {
    static CONTRACT: OnceLock<Arc<Contract>> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        Contracts::builtin().and_then(|set| set.get("table-chat")).expect("built-in contract")
    })
}

fuzz_target!(|data: &[u8]| {
    let contract = contract();
    let page = ["tables_list", "table_edit", "table_view"][data.len() % 3];
    let context = Context::new().with("page", page);
    let checked = contract.check_bytes(data, &context);
    assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
    let Some(value) = checked.value.as_ref() else {
        return;
    };
    let message = value["message"].as_str().expect("the message is a string");
    for line in message.lines() {
        for marker in MARKERS {
            assert!(!line.starts_with(marker), "{marker} left in {message:?}");
        }
    }
    if checked.is_valid() {
        let again = contract.check(&contract.reply_text(value), &context);
        assert_eq!(again.value.as_ref().map(|v| &v["payload"]), Some(&value["payload"]));
        assert_eq!(
            again.value.as_ref().map(|v| &v["suggested_values"]),
            Some(&value["suggested_values"])
        );
    }
});
