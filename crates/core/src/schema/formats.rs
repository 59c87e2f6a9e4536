//! [`FORMATS`]: the `format` names Bridle asserts, in every draft.
//!
//! The validator knows each format from the draft that introduced it (`uuid` and `duration`
//! from 2019-09, `iri` from draft-07, …) and ignores it in older drafts. A schema's author who
//! wrote `"format": "uuid"` in a draft-04 schema asked for a UUID all the same, so for each
//! format a draft lacks, [`with_formats`] registers the validator's own check of it (as its
//! newest draft defines it) under that name. A `format` outside this list is not checked; the
//! contract carries a warning naming it (see [`super::SchemaWarning`]).

use jsonschema::{Draft, ValidationOptions, Validator};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Every format Bridle asserts (when the contract asserts formats), whatever the draft.
pub const FORMATS: &[&str] = &[
    "date",
    "date-time",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "uuid",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Whether Bridle asserts the format `name`.
pub fn is_known(name: &str) -> bool {
    FORMATS.contains(&name)
}

/// The validator's check of each format as its newest draft defines it.
fn newest_checks() -> &'static HashMap<&'static str, Validator> {
    static CHECKS: OnceLock<HashMap<&'static str, Validator>> = OnceLock::new();
    CHECKS.get_or_init(|| {
        FORMATS
            .iter()
            .filter_map(|name| {
                let validator = jsonschema::options()
                    .with_draft(Draft::Draft202012)
                    .should_validate_formats(true)
                    .build(&json!({"format": name}))
                    .ok()?;
                Some((*name, validator))
            })
            .collect()
    })
}

/// `options` with a check registered for every format of [`FORMATS`] that `draft` lacks.
pub(crate) fn with_formats<'i>(
    mut options: ValidationOptions<'i>,
    draft: Draft,
) -> ValidationOptions<'i> {
    for name in FORMATS {
        if options.is_known_format(draft, name) {
            continue;
        }
        if newest_checks().contains_key(name) {
            options = options.with_format(*name, move |text: &str| {
                newest_checks()
                    .get(name)
                    .is_none_or(|v| v.is_valid(&Value::String(text.to_owned())))
            });
        }
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_format_has_a_check() {
        for name in FORMATS {
            let v = &newest_checks()[name];
            assert!(v.is_valid(&json!(42)), "{name}: non-strings pass");
        }
        // Each check rejects something (so none of them is an annotation).
        for name in FORMATS {
            assert!(
                !newest_checks()[name].is_valid(&json!("\\ not [ a (valid value")),
                "{name}"
            );
        }
    }

    #[test]
    fn formats_a_draft_lacks_are_registered_and_asserted() {
        let options = with_formats(jsonschema::options(), Draft::Draft4)
            .with_draft(Draft::Draft4)
            .should_validate_formats(true);
        let v = options.build(&json!({"format": "uuid"})).expect("compiles");
        assert!(v.is_valid(&json!("2eb8aa08-aa98-11ea-b4aa-73b441d16380")));
        assert!(!v.is_valid(&json!("2eb8aa08-aa98-11ea-b4aa-73b441d1638")));
    }
}
