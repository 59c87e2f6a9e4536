//! The `xml` kind on the built-in `topic-analysis` contract: the mapping to JSON, every
//! validation rule of the protocol, repairs, hostile documents, and the way back.

use bridle_core::{Checked, Context, Contract, Contracts};
use serde_json::{Value, json};
use std::sync::Arc;

fn topic() -> Arc<Contract> {
    Contracts::builtin().unwrap().get("topic-analysis").unwrap()
}

fn check(text: &str) -> Checked {
    topic().check(text, &Context::new())
}

/// A reply with `analysis` as the inside of `<analysis>`.
fn reply(analysis: &str) -> String {
    format!(
        "<llmResponse><response>Try a short walk after lunch.</response><analysis>{analysis}</analysis></llmResponse>"
    )
}

const SUBJECT: &str = r#"<subject name="daily-walks" description="Walking as a small daily habit" isNew="false"><keyword term="walking" confidence="0.9"/></subject>"#;

/// `(pointer, rule)` of each violation.
fn broken(checked: &Checked) -> Vec<(String, String)> {
    checked
        .violations
        .iter()
        .map(|v| (v.path.clone(), v.rule.to_string()))
        .collect()
}

fn repaired(checked: &Checked) -> Vec<&str> {
    checked.repairs.iter().map(|r| r.kind.as_str()).collect()
}

#[test]
fn a_reply_reads_as_the_schema_says() {
    let checked = check(&reply(&format!(
        "{SUBJECT}<summaryUpdate>They will walk daily.</summaryUpdate>"
    )));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    assert_eq!(
        checked.value.unwrap(),
        json!({
            "response": "Try a short walk after lunch.",
            "analysis": {
                "subject": [{
                    "@name": "daily-walks",
                    "@description": "Walking as a small daily habit",
                    "@isNew": false,
                    "keyword": [{"@term": "walking", "@confidence": 0.9}]
                }],
                "summaryUpdate": "They will walk daily."
            }
        }),
        "one subject and one keyword are still arrays; types come from the schema"
    );
    assert!(checked.repairs.is_empty());
}

#[test]
fn the_built_in_example_and_its_written_form_agree() {
    let contract = topic();
    let prompt = contract.instructions(&Context::new());
    assert!(prompt.contains("root element <llmResponse>"), "{prompt}");
    assert!(prompt.contains("<keyword term=\"bedtime\""), "{prompt}");
    let example = prompt
        .split("Example of a valid reply:\n")
        .nth(1)
        .unwrap()
        .trim();
    let checked = contract.check(example, &Context::new());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    let written = bridle_core::xml::write(&value, "llmResponse");
    let again = contract.check(&written, &Context::new());
    assert_eq!(again.value.unwrap(), value, "{written}");
}

#[test]
fn empty_optional_parts_are_fine() {
    for analysis in [
        "<summaryUpdate/>",
        "<summaryUpdate></summaryUpdate>",
        r#"<subject name="a" description="b" isNew="true"/><summaryUpdate>s</summaryUpdate>"#,
    ] {
        let checked = check(&reply(analysis));
        assert!(checked.is_valid(), "{analysis}: {:?}", checked.violations);
    }
}

#[test]
fn every_validation_rule_of_the_protocol_is_enforced() {
    let cases: Vec<(String, Vec<(&str, &str)>)> = vec![
        (
            "<llmResponse><response>Hi</response></llmResponse>".into(),
            vec![("", "required")],
        ),
        (
            "<llmResponse><response>  </response><analysis><summaryUpdate/></analysis></llmResponse>"
                .into(),
            vec![("/response", "minLength")],
        ),
        (reply(SUBJECT), vec![("/analysis", "required")]),
        (
            reply(&format!("{SUBJECT}{SUBJECT}{SUBJECT}{SUBJECT}<summaryUpdate/>")),
            vec![("/analysis/subject", "maxItems")],
        ),
        (
            reply(r#"<subject name="x" isNew="true"/><summaryUpdate/>"#),
            vec![("/analysis/subject/0", "required")],
        ),
        (
            reply(r#"<subject name="x" description="y" isNew="yes"/><summaryUpdate/>"#),
            vec![("/analysis/subject/0/@isNew", "type")],
        ),
        (
            reply(
                r#"<subject name="x" description="y" isNew="true"><keyword term="k" confidence="1.5"/></subject><summaryUpdate/>"#,
            ),
            vec![("/analysis/subject/0/keyword/0/@confidence", "maximum")],
        ),
        (
            reply(
                r#"<subject name="x" description="y" isNew="true"><keyword term="k" confidence="high"/></subject><summaryUpdate/>"#,
            ),
            vec![("/analysis/subject/0/keyword/0/@confidence", "type")],
        ),
        (
            reply(
                r#"<subject name="x" description="y" isNew="true"><keyword confidence="0.7"/></subject><summaryUpdate/>"#,
            ),
            vec![("/analysis/subject/0/keyword/0", "required")],
        ),
        (
            reply("<summaryUpdate>a</summaryUpdate><summaryUpdate>b</summaryUpdate>"),
            vec![("/analysis/summaryUpdate", "xml_repeated")],
        ),
    ];
    for (text, expected) in cases {
        let checked = check(&text);
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
            .collect();
        assert_eq!(broken(&checked), expected, "{text}");
    }
}

#[test]
fn eleven_keywords_are_too_many() {
    let keywords: String = (0..11)
        .map(|i| format!(r#"<keyword term="k{i}" confidence="0.8"/>"#))
        .collect();
    let checked = check(&reply(&format!(
        r#"<subject name="x" description="y" isNew="true">{keywords}</subject><summaryUpdate/>"#
    )));
    assert_eq!(
        broken(&checked),
        [(
            "/analysis/subject/0/keyword".to_owned(),
            "maxItems".to_owned()
        )]
    );
}

#[test]
fn fences_prose_bom_and_declaration_are_read_through() {
    let inner = reply("<summaryUpdate>s</summaryUpdate>");
    let fenced = format!("Here is my answer:\n```xml\n{inner}\n```\nHope it helps!");
    let checked = check(&fenced);
    assert!(checked.is_valid(), "{:?}", checked.violations);
    assert_eq!(repaired(&checked), ["code_fence", "surrounding_prose"]);

    let declared = format!("\u{feff}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{inner}");
    let checked = check(&declared);
    assert!(checked.is_valid(), "{:?}", checked.violations);

    let latin = format!("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>{inner}");
    assert_eq!(
        broken(&check(&latin)),
        [(String::new(), "xml_encoding".into())]
    );
}

#[test]
fn unknown_parts_are_left_out_and_reported() {
    let checked = check(&reply(
        r#"<mood level="calm">relaxed</mood><subject name="x" description="y" isNew="true" color="blue"/><summaryUpdate>s</summaryUpdate>"#,
    ));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    assert_eq!(repaired(&checked), ["ignored_element", "ignored_attribute"]);
    assert_eq!(checked.repairs[0].path.as_deref(), Some("/analysis/mood"));
    assert_eq!(
        checked.repairs[1].path.as_deref(),
        Some("/analysis/subject/0/@color")
    );
}

#[test]
fn escapes_cdata_and_character_references_become_text() {
    let checked = check(
        "<llmResponse><response><![CDATA[Use <b> & co]]> &amp; caf&#233; &#x1F600;</response><analysis><summaryUpdate>a &lt; b</summaryUpdate></analysis></llmResponse>",
    );
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    assert_eq!(value["response"], "Use <b> & co & café 😀");
    assert_eq!(value["analysis"]["summaryUpdate"], "a < b");
}

#[test]
fn hostile_documents_are_refused_without_expansion() {
    let laughs = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]><llmResponse><response>&lol2;</response><analysis><summaryUpdate/></analysis></llmResponse>";
    let external = "<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><llmResponse><response>&x;</response><analysis><summaryUpdate/></analysis></llmResponse>";
    for text in [laughs, external] {
        let checked = check(text);
        assert_eq!(broken(&checked), [(String::new(), "xml_doctype".into())]);
        assert!(checked.value.is_none());
    }
    let undefined = reply("<summaryUpdate>&nbsp;</summaryUpdate>");
    let checked = check(&undefined);
    assert_eq!(
        broken(&checked),
        [("/analysis/summaryUpdate".to_owned(), "xml_entity".into())]
    );

    let deep = format!(
        "<llmResponse><response>x</response>{}{}</llmResponse>",
        "<analysis>".repeat(10_000),
        "</analysis>".repeat(10_000)
    );
    let checked = check(&deep);
    assert_eq!(checked.violations[0].rule.as_str(), "xml_depth");

    // Past the contract's size limit, a document is refused before it is read; the reader's
    // own node limit holds for any size.
    let wide = reply(&format!(
        "{}<summaryUpdate/>",
        r#"<x a="1"/>"#.repeat(60_000)
    ));
    assert_eq!(check(&wide).violations[0].rule.as_str(), "too_large");
    let huge_attribute = reply(&format!(
        r#"<x a="{}"/><summaryUpdate/>"#,
        "A".repeat(1 << 20)
    ));
    assert_eq!(
        check(&huge_attribute).violations[0].rule.as_str(),
        "too_large"
    );
    let read = bridle_core::xml::read(&wide, "llmResponse", &bridle_core::xml::Shape::Any);
    assert_eq!(read.violations[0].rule.as_str(), "xml_size");
    assert!(read.value.is_none());
}

#[test]
fn broken_documents_say_what_and_where() {
    let cut = "<llmResponse><response>Half an ans";
    let checked = check(cut);
    assert_eq!(
        broken(&checked),
        [("/response".to_owned(), "truncated".into())]
    );

    let wrong_root = "<reply><response>x</response></reply>";
    assert_eq!(
        broken(&check(wrong_root)),
        [(String::new(), "not_xml".into())]
    );
    // The document starts at the first <llmResponse>; what encloses it cannot close there.
    let other_root = "<llmResponses><llmResponse/></llmResponses>";
    assert_eq!(broken(&check(other_root))[0].1, "xml_syntax");

    let mismatched = "<llmResponse><response>x</answer></llmResponse>";
    assert_eq!(broken(&check(mismatched))[0].1, "xml_syntax");

    assert_eq!(broken(&check("Sure, happy to help!"))[0].1, "not_xml");
    assert_eq!(broken(&check("  \n"))[0].1, "empty");

    let feedback = topic().feedback(&check(cut));
    assert!(
        feedback.contains("truncated") || feedback.contains("cut off"),
        "{feedback}"
    );
}

#[test]
fn the_reader_never_panics_on_junk() {
    let contract = topic();
    let junk = [
        "<llmResponse",
        "<llmResponse>\u{0}</llmResponse>",
        "<llmResponse><response a=\"1\" a=\"2\">x</response></llmResponse>",
        "<llmResponse><![CDATA[",
        "<llmResponse><!-- unterminated",
        "<llmResponse>&#xFFFFFFFF;</llmResponse>",
        "<llmResponse>&#0;</llmResponse>",
        "</llmResponse>",
        "<llmResponse/><llmResponse/>",
        "<llmResponse><response>é</response></llmResponse>trailing",
    ];
    for text in junk {
        let checked = contract.check(text, &Context::new());
        assert!(!checked.is_valid() || checked.value.is_some(), "{text}");
    }
}

#[test]
fn written_values_read_back_identically() {
    let value: Value = json!({
        "response": "5 < 7 & \"quotes\" 'too'",
        "analysis": {
            "subject": [
                {"@name": "a", "@description": "d <1>", "@isNew": true, "keyword": [
                    {"@term": "k1", "@confidence": 0.75}, {"@term": "k2", "@confidence": 1}
                ]},
                {"@name": "b", "@description": "e", "@isNew": false}
            ],
            "summaryUpdate": ""
        }
    });
    let text = bridle_core::xml::write(&value, "llmResponse");
    let checked = check(&text);
    assert!(checked.is_valid(), "{text}\n{:?}", checked.violations);
    assert_eq!(checked.value.unwrap(), value);
}

#[test]
fn long_text_with_references_and_line_ends_reads_whole() {
    let sentence = "Breathe in &amp; out: 4 &lt; 6 &gt; 2, caf&#233; &#x1F600;\r\nagain\r";
    let text = reply_with_response(&sentence.repeat(50));
    let checked = check(&text);
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let expected = "Breathe in & out: 4 < 6 > 2, café 😀\nagain\n".repeat(50);
    assert_eq!(checked.value.unwrap()["response"], expected.trim());
}

#[test]
fn broken_references_in_long_text_are_located() {
    let many = "a &lt; b. ".repeat(20);
    for (inside, rule) in [
        (format!("{many}&nbsp;{many}"), "xml_entity"),
        (format!("{many}a & b"), "xml_syntax"),
        (format!("{many}&#0;"), "xml_entity"),
    ] {
        let checked = check(&reply_with_response(&inside));
        assert_eq!(
            broken(&checked),
            [("/response".to_owned(), rule.to_owned())],
            "{inside}"
        );
    }
    let cut = format!("<llmResponse><response>{many}&amp; then");
    assert_eq!(
        broken(&check(&cut)),
        [("/response".to_owned(), "truncated".into())]
    );
}

#[test]
fn pointers_name_the_item_an_unknown_part_is_in() {
    let checked = check(&reply(
        r#"<subject name="x" description="y" isNew="true"><keyword term="a" confidence="0.7"/><keyword term="b" confidence="0.8" weight="2"><note>n</note></keyword></subject><summaryUpdate>s</summaryUpdate>"#,
    ));
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let repairs: Vec<_> = checked
        .repairs
        .iter()
        .map(|r| (r.kind.as_str(), r.path.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        repairs,
        [
            ("ignored_attribute", "/analysis/subject/0/keyword/1/@weight"),
            ("ignored_element", "/analysis/subject/0/keyword/1/note"),
        ]
    );
}

/// A reply whose `<response>` holds `response` (already escaped).
fn reply_with_response(response: &str) -> String {
    format!(
        "<llmResponse><response>{response}</response><analysis><summaryUpdate/></analysis></llmResponse>"
    )
}
