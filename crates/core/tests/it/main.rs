//! Integration tests of the contract core: fixture files for every rule, repair and coercion of
//! the built-in `selfhelp-response` contract, contract loading, snapshots of the prompt and the
//! feedback, question cards, and property tests.

#![allow(clippy::unwrap_used)]

mod card_properties;
mod cards;
mod expr_limits;
mod expr_rules;
mod fallback;
mod fallback_kinds;
mod feedback_kinds;
mod fixtures;
mod fragments;
mod loading;
mod markers;
mod properties;
mod schema_suite;
mod snapshots;
mod stream_json;
mod stream_text;
mod stream_xml;
mod tool_reply;
mod xml;

use bridle_core::{Contract, Contracts};
use std::path::PathBuf;
use std::sync::Arc;

pub fn selfhelp() -> Arc<Contract> {
    Contracts::builtin()
        .expect("built-in contracts load")
        .get("selfhelp-response")
        .expect("selfhelp-response exists")
}

pub fn fixture_dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub)
}
