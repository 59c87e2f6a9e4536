//! Streaming `xml` replies through [`StreamCheck`]: the partial value of the built-in
//! `topic-analysis` contract grows with the document and ends as the complete check's value.

use bridle_core::{Context, Contracts, StreamCheck};
use serde_json::Value;

#[test]
fn partial_values_grow_into_the_checked_value() {
    let contract = Contracts::builtin().unwrap().get("topic-analysis").unwrap();
    let example = include_str!("../../../../contracts/topic-analysis/example.xml");
    for text in [
        example.to_owned(),
        format!("Here you go:\n```xml\n{example}\n```\nBye."),
    ] {
        let checked = contract.check(&text, &Context::new());
        assert!(checked.is_valid(), "{:?}", checked.violations);
        for size in [1, 5, 64] {
            let mut check = StreamCheck::new(&contract, &Context::new());
            let mut out = Vec::new();
            let mut partials: Vec<Value> = Vec::new();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                let delta: String = piece.iter().collect();
                assert!(check.push(&delta, &mut out).is_ok());
                if let Some(partial) = check.partial() {
                    assert!(!partial.contains('\n'));
                    partials.push(serde_json::from_str(&partial).unwrap());
                }
            }
            assert_eq!(partials.last(), checked.value.as_ref(), "size {size}");
            // Members once shown stay.
            for pair in partials.windows(2) {
                for key in pair[0].as_object().unwrap().keys() {
                    assert!(pair[1].get(key).is_some(), "{key} dropped: {pair:?}");
                }
            }
            assert!(out.is_empty());
        }
    }
}
