//! [`rival`]: a second answer in the reply. When the JSON was found inside prose or fences and
//! the reply holds another complete value of the same shape (an object with the same keys, or
//! an array of such objects) that differs from it, the reply offers two answers
//! (`Option A: {…} Option B: {…}`) and taking either one would be a guess.
//!
//! Snippets of another shape (`fields like {"extra": 1} were left out`) and repeats of the
//! same value (a command shown again in a shell example) are not rivals.

use super::extract::Starts;
use super::fixer::{Fixer, Outcome};
use super::{Ambiguity, RootHint};
use serde_json::Value;
use std::collections::BTreeSet;
use std::ops::Range;

/// How many starts outside the answer are tried.
const MAX_STARTS: usize = 16;

/// Looks for a rival of the answer `chosen` (the repaired JSON text), which was read from
/// `span` of `text`.
pub(super) fn rival(
    text: &str,
    hint: RootHint,
    span: Range<usize>,
    chosen: &str,
) -> Option<Ambiguity> {
    let bytes = text.as_bytes();
    let mut starts = Starts::new(bytes, hint, MAX_STARTS);
    let mut answer: Option<Option<Value>> = None;
    while let Some(start) = starts.next() {
        if span.contains(&start) {
            starts.skip_to(span.end);
            continue;
        }
        let fixed = Fixer::fix(bytes, start, false, false);
        let end = match fixed.outcome {
            Outcome::Complete { end } => end,
            Outcome::Failed { at, .. } => {
                starts.skip_to(at.max(start + 1));
                continue;
            }
            Outcome::Cut(_) => return None,
        };
        starts.skip_to(end);
        let Ok(other) = serde_json::from_str::<Value>(&fixed.text) else {
            continue;
        };
        let answer = answer.get_or_insert_with(|| serde_json::from_str::<Value>(chosen).ok());
        let answer = answer.as_ref()?;
        if same_shape(answer, &other) && *answer != other {
            return Some(Ambiguity::new(text, span.start, start));
        }
    }
    None
}

/// Objects with the same set of keys, or non-empty arrays whose first items are such objects.
fn same_shape(a: &Value, b: &Value) -> bool {
    fn keys(map: &serde_json::Map<String, Value>) -> BTreeSet<&str> {
        map.keys().map(String::as_str).collect()
    }
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => !a.is_empty() && keys(a) == keys(b),
        (Value::Array(a), Value::Array(b)) => match (a.first(), b.first()) {
            (Some(x @ Value::Object(_)), Some(y @ Value::Object(_))) => same_shape(x, y),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_keys_not_values() {
        assert!(same_shape(
            &json!({"a": 1, "b": 2}),
            &json!({"b": "x", "a": null})
        ));
        assert!(!same_shape(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!same_shape(&json!({}), &json!({})));
        assert!(same_shape(&json!([{"n": 1}]), &json!([{"n": 2}, {"n": 3}])));
        assert!(!same_shape(&json!([1, 2]), &json!([3])));
        assert!(!same_shape(&json!([]), &json!([])));
        assert!(!same_shape(&json!(1), &json!(2)));
    }
}
