//! [`check`]: whether an `<llmQuery>` document an application built itself follows spec 05's
//! query rules: well-formed XML (1) whose root is `<llmQuery>` (2), exactly one non-blank
//! `<userMessage>` (3), exactly one `<context>` with `topicId` and `messageCount` attributes (4;
//! `messageCount` a whole number), and in it at most one `<activeSubjects>` and one
//! `<recentKeywords>` (5). Read by the same safe reader as replies (no DTD, no entities), against
//! a schema of the query, so the violations name paths and rules as a reply's do.
//!
//! ```
//! let ok = "<llmQuery><userMessage>Hi</userMessage>\
//!           <context topicId=\"t-1\" messageCount=\"0\"/></llmQuery>";
//! assert!(bridle_core::xml::query_check::check(ok).is_empty());
//! let bad = "<llmQuery><context topicId=\"t-1\"/></llmQuery>";
//! assert_eq!(bridle_core::xml::query_check::check(bad).len(), 2);
//! ```

use super::shape::Shape;
use crate::report::Violation;
use crate::schema::Schema;
use serde_json::{Value, json};
use std::sync::OnceLock;

/// The query's root element.
pub const ROOT: &str = "llmQuery";

struct QuerySchema {
    shape: Shape,
    schema: Schema,
}

fn query_schema() -> &'static QuerySchema {
    static SCHEMA: OnceLock<QuerySchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let raw: Value = json!({
            "type": "object",
            "required": ["userMessage", "context"],
            "properties": {
                "userMessage": {"type": "string", "pattern": "\\S"},
                "context": {
                    "type": "object",
                    "required": ["@topicId", "@messageCount"],
                    "properties": {
                        "@topicId": {"type": "string", "minLength": 1},
                        "@messageCount": {"type": "integer", "minimum": 0},
                        "activeSubjects": {"type": "string"},
                        "recentKeywords": {"type": "string"}
                    }
                }
            }
        });
        QuerySchema {
            shape: Shape::of(&raw),
            // A fixed, valid schema: compiling it cannot fail.
            schema: Schema::compile(raw, &[]).unwrap_or_else(|e| unreachable!("{e}")),
        }
    })
}

/// The violations of the query rules in `raw` (none: the query is valid).
pub fn check(raw: &str) -> Vec<Violation> {
    let QuerySchema { shape, schema } = query_schema();
    let read = super::read(raw, ROOT, shape);
    let mut violations = read.violations;
    if let Some(value) = &read.value {
        violations.extend(schema.violations(value));
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(raw: &str) -> Vec<(String, String)> {
        check(raw)
            .into_iter()
            .map(|v| (v.path, v.rule.as_str().to_owned()))
            .collect()
    }

    #[test]
    fn a_query_built_by_bridle_is_valid() {
        let subjects = vec!["sleep".to_owned()];
        let built = super::super::query::build(&super::super::query::Query {
            message: "How do I sleep better?",
            topic_id: "t-1",
            message_count: 4,
            active_subjects: &subjects,
            recent_keywords: &[],
        })
        .unwrap();
        assert!(check(&built).is_empty(), "{:?}", check(&built));
    }

    #[test]
    fn each_query_rule_is_reported_by_path() {
        let ok_context = r#"<context topicId="t" messageCount="2"/>"#;
        let cases: Vec<(String, Vec<(&str, &str)>)> = vec![
            ("<llmQuery><userMessage>x</userMessage>".into(), vec![("", "truncated")]),
            (
                format!("<llmQuery><userMessage>x</context>{ok_context}</llmQuery>"),
                vec![("/userMessage", "xml_syntax")],
            ),
            (
                format!("<llmResponse><userMessage>x</userMessage>{ok_context}</llmResponse>"),
                vec![("", "not_xml")],
            ),
            (
                format!("<llmQuery><userMessage>  </userMessage>{ok_context}</llmQuery>"),
                vec![("/userMessage", "pattern")],
            ),
            (
                format!(
                    "<llmQuery><userMessage>a</userMessage><userMessage>b</userMessage>{ok_context}</llmQuery>"
                ),
                vec![("/userMessage", "xml_repeated")],
            ),
            (
                r#"<llmQuery><userMessage>a</userMessage><context topicId="t"/></llmQuery>"#.into(),
                vec![("/context", "required")],
            ),
            (
                r#"<llmQuery><userMessage>a</userMessage><context topicId="t" messageCount="many"/></llmQuery>"#.into(),
                vec![("/context/@messageCount", "type")],
            ),
            (
                r#"<llmQuery><userMessage>a</userMessage><context topicId="t" messageCount="1"><activeSubjects>a</activeSubjects><activeSubjects>b</activeSubjects></context></llmQuery>"#.into(),
                vec![("/context/activeSubjects", "xml_repeated")],
            ),
            ("<llmQuery/>".into(), vec![("", "required"), ("", "required")]),
        ];
        for (raw, expected) in cases {
            let got = rules(&raw);
            let expected: Vec<(String, String)> = expected
                .into_iter()
                .map(|(p, r)| (p.to_owned(), r.to_owned()))
                .collect();
            assert_eq!(got, expected, "{raw}");
        }
    }
}
