//! Fuzz target: `repair` and `check` of the `selfhelp-response` contract on arbitrary bytes.
//! Never panics; text that already parses is never changed; feedback stays bounded; a reply
//! refused as broken never leaves text that parses (no part of it is taken), and its quote is
//! bounded and marks the place.

#![no_main]

use bridle_core::{Context, Contract, Contracts, MAX_FEEDBACK_CHARS, RootHint, repair};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn contract() -> &'static Arc<Contract> {
    static CONTRACT: OnceLock<Arc<Contract>> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        Contracts::builtin()
            .and_then(|set| set.get("selfhelp-response"))
            .expect("built-in contract")
    })
}

fuzz_target!(|data: &[u8]| {
    let contract = contract();
    let checked = contract.check_bytes(data, &Context::new());
    assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
    if let Ok(text) = std::str::from_utf8(data) {
        let repaired = repair(text, RootHint::Object);
        if serde_json::from_str::<serde_json::Value>(text).is_ok() {
            assert_eq!(repaired.text, text, "text that parses must not change");
            assert!(repaired.repairs.is_empty());
        }
        if let Some(broken) = &repaired.broken {
            let parses = serde_json::from_str::<serde_json::Value>(&repaired.text).is_ok();
            assert!(!parses, "a broken reply left text that parses: {text:?}");
            assert!(broken.found.contains("⟨here⟩"), "{broken:?}");
            // 30 characters each side, the mark, and an ellipsis at each cut side.
            assert!(
                broken.found.chars().count() <= 30 + 6 + 30 + 2,
                "{broken:?}"
            );
        }
    }
});
