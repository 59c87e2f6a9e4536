//! Fuzz target: the `xml` kind — `check` of the `topic-analysis` contract and the reader with
//! an open shape — on arbitrary bytes. Never panics; a value read back through the writer
//! reads the same.

#![no_main]

use bridle_core::xml::{Shape, read, write};
use bridle_core::{Context, Contract, Contracts, MAX_FEEDBACK_CHARS};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn contract() -> &'static Arc<Contract> {
    static CONTRACT: OnceLock<Arc<Contract>> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        Contracts::builtin().and_then(|set| set.get("topic-analysis")).expect("built-in contract")
    })
}

fuzz_target!(|data: &[u8]| {
    let contract = contract();
    let checked = contract.check_bytes(data, &Context::new());
    assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
    if checked.is_valid() {
        let value = checked.value.as_ref().expect("a valid reply has a value");
        let again = contract.check(&write(value, "llmResponse"), &Context::new());
        assert_eq!(again.value.as_ref(), Some(value), "write then read changes nothing");
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = read(text, "llmResponse", &Shape::Any);
    }
});
