//! Fuzz target: `StreamCheck` on arbitrary text split at arbitrary points, for every built-in
//! contract kind. Never panics; every partial is one line of valid JSON; a reply the complete
//! check finds valid is never aborted, and its held-back text is released without panicking;
//! a `parse` abort (a value closed early, more members after it) is the complete check's own.

#![no_main]

use bridle_core::{Context, Contract, Contracts, Rule, StreamCheck};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn contracts() -> &'static [(Arc<Contract>, Context)] {
    static ALL: OnceLock<Vec<(Arc<Contract>, Context)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let set = Contracts::builtin().expect("built-in contracts");
        [
            ("selfhelp-response", Context::new()),
            ("topic-analysis", Context::new()),
            ("table-chat", Context::new().with("page", "table_view")),
            ("question-cards", Context::new().with("mode", "discovery")),
        ]
        .into_iter()
        .map(|(name, context)| (set.get(name).expect("built-in contract"), context))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((&step, rest)) = rest.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (contract, context) = &contracts()[usize::from(selector) % 4];
    let step = usize::from(step % 16) + 1;
    let mut check = StreamCheck::new(contract, context);
    let mut emitted = Vec::new();
    let mut at = 0;
    let mut aborted = None;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if let Err(abort) = check.push(&text[at..end], &mut emitted) {
            aborted = Some(abort);
            break;
        }
        if let Some(partial) = check.partial() {
            assert!(!partial.contains('\n'), "{partial:?}");
            serde_json::from_str::<serde_json::Value>(&partial).expect("a partial is JSON");
        }
        at = end;
    }
    let checked = contract.check(&text, context);
    if checked.is_valid() {
        assert!(aborted.is_none(), "a valid reply was aborted: {text:?}");
        check.finish(&checked, &mut emitted);
    }
    let parse = aborted
        .iter()
        .flat_map(|a| &a.violations)
        .find(|v| v.rule == Rule::Parse);
    if let Some(v) = parse {
        let same = checked
            .violations
            .iter()
            .any(|c| c.rule == Rule::Parse && c.message == v.message);
        assert!(same, "{v:?} not in {:?}: {text:?}", checked.violations);
    }
});
