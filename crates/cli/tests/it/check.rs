//! `bridle check`.

use crate::{bridle, core_fixture, fixture, json_out};
use predicates::str::contains;

#[test]
fn a_valid_reply_exits_0_with_a_readable_report() {
    bridle()
        .args(["check", "--contract", "selfhelp-response"])
        .arg(core_fixture("selfhelp/valid/with_form.json"))
        .assert()
        .code(0)
        .stdout(contains("✓ the reply meets selfhelp-response 1.0.0"));
}

#[test]
fn an_invalid_reply_exits_1_and_names_path_and_rule() {
    bridle()
        .args(["check", "--contract", "selfhelp-response"])
        .arg(core_fixture(
            "selfhelp/invalid/suggestion_label_instead_of_text.json",
        ))
        .assert()
        .code(1)
        .stdout(contains("/content/suggestions/0"))
        .stdout(contains("[required]"));
}

#[test]
fn json_output_is_exactly_one_object_of_the_documented_shape() {
    let output = bridle()
        .args(["check", "--contract", "selfhelp-response", "--json"])
        .arg(core_fixture("selfhelp/raw/code_fence.txt"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let v = json_out(&output);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec!["contract", "repairs", "valid", "value", "violations"]
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.starts_with("{\"valid\":true,\"contract\":\"selfhelp-response\",\"value\":"),
        "members in documented order: {text}"
    );
    assert_eq!(text.lines().count(), 1);
    assert_eq!(v["valid"], true);
    assert_eq!(v["contract"], "selfhelp-response");
    assert_eq!(v["value"]["type"], "response");
    assert_eq!(v["repairs"][0]["kind"], "code_fence");

    let output = bridle()
        .args(["check", "--contract", "selfhelp-response", "--json"])
        .arg(core_fixture(
            "selfhelp/invalid/danger_level_not_in_enum.json",
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let v = json_out(&output);
    assert_eq!(v["valid"], false);
    let first = &v["violations"][0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, vec!["message", "path", "rule"]);
    assert_eq!(first["path"], "/safety/danger_level");
}

#[test]
fn standard_input_is_read_with_dash_or_nothing() {
    let reply = std::fs::read(core_fixture("selfhelp/valid/minimal.json")).unwrap();
    for args in [
        vec!["check", "--contract", "selfhelp-response", "-"],
        vec!["check", "--contract", "selfhelp-response"],
    ] {
        bridle()
            .args(&args)
            .write_stdin(reply.clone())
            .assert()
            .code(0);
    }
}

#[test]
fn declared_rule_violations_are_reported() {
    let output = bridle()
        .args(["check", "--contract", "selfhelp-response", "--json"])
        .arg(core_fixture("selfhelp/rules/critical_but_is_safe.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let v = json_out(&output);
    assert!(
        v["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["rule"] == "implies" && x["path"] == "/safety/is_safe"),
        "{v}"
    );
}

#[test]
fn an_ad_hoc_schema_of_any_draft_is_a_contract() {
    for schema in [
        "draft04.json",
        "draft07.json",
        "no_dollar_schema.json",
        "draft2019.json",
    ] {
        bridle()
            .args(["check", "--schema"])
            .arg(fixture(&format!("schemas/{schema}")))
            .write_stdin(r#"{"name": "Ada", "age": 36}"#)
            .assert()
            .code(0);
        bridle()
            .args(["check", "--json", "--schema"])
            .arg(fixture(&format!("schemas/{schema}")))
            .write_stdin(r#"{"name": "Ada", "age": -1}"#)
            .assert()
            .code(1)
            .stdout(contains("\"/age\""));
    }
}

#[test]
fn usage_and_io_errors_exit_2() {
    bridle()
        .args(["check", "--contract", "no-such-contract"])
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains("unknown contract"));
    bridle()
        .args([
            "check",
            "--contract",
            "selfhelp-response",
            "/no/such/file.json",
        ])
        .assert()
        .code(2)
        .stderr(contains("cannot read"));
    bridle()
        .args(["check"])
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains("--contract"));
    bridle()
        .args(["check", "--schema"])
        .arg(fixture("schemas/not_a_schema.json"))
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains("keyword"));
    bridle()
        .args(["check", "--schema"])
        .arg(fixture("schemas/not_json.json"))
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains("not JSON"));
    bridle()
        .args(["check", "--schema"])
        .arg(fixture("schemas/remote_ref.json"))
        .write_stdin("{}")
        .assert()
        .code(2);
    bridle()
        .args([
            "check",
            "--contract",
            "selfhelp-response",
            "--context",
            "oops",
        ])
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains("KEY=VALUE"));
    bridle()
        .args([
            "check",
            "--contract",
            "selfhelp-response",
            "--schema",
            "x.json",
        ])
        .write_stdin("{}")
        .assert()
        .code(2);
    bridle()
        .args(["check", "--contract", "selfhelp-response"])
        .arg(fixture(""))
        .assert()
        .code(2)
        .stderr(contains("directory"));
}

#[test]
fn bad_replies_are_violations_with_exit_1() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (Vec::new(), "empty"),
        (vec![0xff, 0xfe, 0x00, 0x01], "encoding"),
        ((1u8..=31).cycle().take(2000).collect(), "not_json"),
        (
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            "parse",
        ),
        ("Sorry, I cannot help with that.".into(), "not_json"),
    ];
    let junk: Vec<u8> = (0u8..=127).cycle().take(2000).collect();
    let output = bridle()
        .args(["check", "--json", "--contract", "selfhelp-response"])
        .write_stdin(junk)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        ["parse", "not_json"]
            .contains(&json_out(&output)["violations"][0]["rule"].as_str().unwrap())
    );
    for (input, rule) in cases {
        let output = bridle()
            .args(["check", "--json", "--contract", "selfhelp-response"])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{rule}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let v = json_out(&output);
        assert_eq!(v["violations"][0]["rule"], rule, "{v}");
    }
}

#[test]
fn a_100_mb_reply_is_refused_by_size_without_loading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(100 * 1024 * 1024).unwrap();
    let output = bridle()
        .args(["check", "--json", "--contract", "selfhelp-response"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let v = json_out(&output);
    assert_eq!(v["violations"][0]["rule"], "too_large");
    assert!(
        v["violations"][0]["message"]
            .as_str()
            .unwrap()
            .contains("104857600")
    );
    // The same through standard input: counted while streaming, never held whole.
    let big = vec![b' '; 20 * 1024 * 1024];
    let output = bridle()
        .args(["check", "--json", "--contract", "selfhelp-response"])
        .write_stdin(big)
        .output()
        .unwrap();
    assert_eq!(json_out(&output)["violations"][0]["rule"], "too_large");
}

#[test]
fn context_pairs_are_accepted() {
    bridle()
        .args([
            "check",
            "--contract",
            "selfhelp-response",
            "--context",
            "page=home",
            "--context",
            "mode=discovery",
        ])
        .arg(core_fixture("selfhelp/valid/minimal.json"))
        .assert()
        .code(0);
}

#[test]
fn xml_replies_are_checked_with_the_same_output() {
    let reply = "Sure!\n```xml\n<llmResponse><response>Start with a budget.</response><analysis><subject name=\"budgeting\" description=\"Planning money\" isNew=\"true\"><keyword term=\"budget\" confidence=\"0.9\"/></subject><summaryUpdate>Budget first.</summaryUpdate></analysis></llmResponse>\n```";
    let output = bridle()
        .args(["check", "--contract", "topic-analysis", "--json"])
        .write_stdin(reply)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let report = json_out(&output);
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["value"]["analysis"]["subject"][0]["@isNew"], true);
    let kinds: Vec<&str> = report["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["code_fence", "surrounding_prose"]);

    let output = bridle()
        .args(["check", "--contract", "topic-analysis", "--json"])
        .write_stdin("<!DOCTYPE x [<!ENTITY a \"b\">]><llmResponse/>")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json_out(&output)["violations"][0]["rule"], "xml_doctype");
}

#[test]
fn marker_replies_are_checked_with_the_page_from_context() {
    let reply = "Here are two rows.\n\n**DATA_PROPOSAL:**\n```json\n{\"operations\": [{\"action\": \"delete\", \"row_id\": 2}]}\n```";
    let run = |page: &str| {
        bridle()
            .args(["check", "--contract", "table-chat", "--json", "--context"])
            .arg(format!("page={page}"))
            .write_stdin(reply)
            .output()
            .unwrap()
    };
    let output = run("table_view");
    assert_eq!(output.status.code(), Some(0));
    let report = json_out(&output);
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["value"]["message"], "Here are two rows.");
    assert_eq!(report["value"]["payload"]["type"], "data_proposal");
    // The same reply where the page does not offer data proposals: same object, not valid.
    let output = run("tables_list");
    assert_eq!(output.status.code(), Some(1));
    let report = json_out(&output);
    assert_eq!(
        report["violations"][0]["rule"], "payload_unavailable",
        "{report}"
    );
    assert_eq!(report["value"]["message"], "Here are two rows.");
}

#[test]
fn xml_query_builds_an_escaped_query_within_limits() {
    let output = bridle()
        .args([
            "xml-query",
            "--topic-id",
            "t-7",
            "--message-count",
            "4",
            "--subject",
            "savings",
            "--keyword",
            "bike",
            "--keyword",
            "budget",
        ])
        .write_stdin("Can I afford a <fast> bike & a helmet?")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains(
            "<userMessage>Can I afford a &lt;fast&gt; bike &amp; a helmet?</userMessage>"
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"<context topicId="t-7" messageCount="4">"#),
        "{text}"
    );
    assert!(
        text.contains("<recentKeywords>bike, budget</recentKeywords>"),
        "{text}"
    );
    let long = "x".repeat(10_001);
    bridle()
        .args(["xml-query", "--topic-id", "t", "--message", &long])
        .assert()
        .code(2)
        .stderr(contains("10001 characters"));
}

#[test]
fn xml_query_checks_an_applications_own_query() {
    // A query it built passes its own check, from a file and from standard input.
    let built = bridle()
        .args(["xml-query", "--topic-id", "t-7", "--message", "Hi <there>"])
        .output()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("query.xml");
    std::fs::write(&file, &built.stdout).unwrap();
    bridle()
        .args(["xml-query", "--check"])
        .arg(&file)
        .assert()
        .code(0)
        .stdout(contains("follows the llmQuery rules"));
    // One the rules refuse: exit 1, each violation by path and rule.
    bridle()
        .args(["xml-query", "--check", "-"])
        .write_stdin(r#"<llmQuery><context topicId="t" messageCount="x"/></llmQuery>"#)
        .assert()
        .code(1)
        .stdout(contains("(document) required"))
        .stdout(contains("/context/@messageCount type"));
    // A DOCTYPE is refused, never read; binary input is a clear failure.
    bridle()
        .args(["xml-query", "--check", "-"])
        .write_stdin("<!DOCTYPE x [<!ENTITY a 'b'>]><llmQuery/>")
        .assert()
        .code(1)
        .stdout(contains("xml_doctype"));
    bridle()
        .args(["xml-query", "--check", "-"])
        .write_stdin(vec![0xff_u8, 0xfe, 0x00])
        .assert()
        .code(1)
        .stdout(contains("not UTF-8"));
    // Checking and building do not mix.
    bridle()
        .args(["xml-query", "--check", "-", "--topic-id", "t"])
        .assert()
        .code(2);
}

#[test]
fn a_draft04_schema_gets_every_format_and_browser_patterns() {
    let schema = fixture("schemas/draft04_formats.json");
    // `uuid` (from 2019-09) is asserted in a draft-04 schema; `\{d}` is read as browsers do.
    bridle()
        .args(["check", "--schema"])
        .arg(&schema)
        .write_stdin(r#"{"id": "2eb8aa08-aa98-11ea-b4aa-73b441d16380", "ref": "PUBMED:{d}"}"#)
        .assert()
        .code(0)
        // An unknown format is a warning on stderr, naming its place.
        .stderr(contains(
            "warning: contract draft04_formats: schema: at /properties/zip/format: format \"zip-code\" is not one Bridle knows",
        ));
    bridle()
        .args(["check", "--json", "--schema"])
        .arg(&schema)
        .write_stdin(r#"{"id": "2eb8aa08-aa98-11ea-b4aa", "ref": "PUBMED:12"}"#)
        .assert()
        .code(1)
        .stdout(contains(r#""path":"/id","rule":"format""#))
        // The pattern as written (quoted, then JSON-escaped), not as rewritten for the engine.
        .stdout(contains(
            r#"does not match the pattern \"^PUBMED:\\\\{d}\""#,
        ));
}

#[test]
fn a_pattern_that_is_no_regex_is_a_load_error_naming_its_place() {
    bridle()
        .args(["check", "--schema"])
        .arg(fixture("schemas/bad_pattern.json"))
        .write_stdin("{}")
        .assert()
        .code(2)
        .stderr(contains(
            "at /properties/n/pattern: \"a{2,1}\" is not an ECMA-262 regular expression",
        ));
}

#[test]
fn a_builtin_contracts_expression_rule_is_reported_with_its_name_and_place() {
    let output = bridle()
        .args(["check", "--contract", "selfhelp-response", "--json"])
        .arg(core_fixture(
            "selfhelp/rules/topic_covered_and_remaining.json",
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let v = json_out(&output);
    assert_eq!(
        v["violations"],
        serde_json::json!([{
            "path": "/progress",
            "rule": "expr",
            "message": "rule \"topic-covered-or-remaining\" failed: a topic is either in topics_covered or in topics_remaining, never in both"
        }])
    );
}

/// `order` written to a file of `dir`.
fn order_file(
    dir: &tempfile::TempDir,
    name: &str,
    order: &serde_json::Value,
) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, order.to_string()).unwrap();
    path
}

#[test]
fn expression_rules_read_the_reply_and_the_turns_context() {
    let dir = tempfile::tempdir().unwrap();
    let good = order_file(
        &dir,
        "good.json",
        &serde_json::json!({
            "items": [
                {"sku": "tea", "price": 3, "quantity": 2, "gift": false},
                {"sku": "mug", "price": 9, "quantity": 1, "gift": true}
            ],
            "total": 15,
            "delivery": {"earliest": "2026-12-01", "latest": "2026-12-03"}
        }),
    );
    let check = |extra: &[&str], file: &std::path::Path| {
        let output = bridle()
            .arg("check")
            .arg("--contracts")
            .arg(fixture("contracts"))
            .args(["--contract", "order-summary", "--json"])
            .args(extra)
            .arg(file)
            .output()
            .unwrap();
        (output.status.code(), json_out(&output))
    };
    let (code, v) = check(&[], &good);
    assert_eq!((code, &v["violations"]), (Some(0), &serde_json::json!([])));

    // The same reply under a context whose catalogue lacks the mug.
    let (code, v) = check(&["--context", "catalogue=tea,teapot"], &good);
    assert_eq!(code, Some(1));
    assert_eq!(
        v["violations"],
        serde_json::json!([{
            "path": "/items/1",
            "rule": "expr",
            "message": "rule \"in-the-catalogue\" failed: sku \"mug\" is not in the catalogue"
        }])
    );

    let bad = order_file(
        &dir,
        "bad.json",
        &serde_json::json!({
            "items": [
                {"sku": "tea", "price": 3, "quantity": 2, "gift": true},
                {"sku": "mug", "price": 9, "quantity": 1, "gift": true}
            ],
            "total": 14,
            "delivery": {"earliest": "2026-12-04", "latest": "2026-12-03"}
        }),
    );
    let (code, v) = check(&[], &bad);
    assert_eq!(code, Some(1));
    let found: Vec<(&str, &str)> = v["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["path"].as_str().unwrap(), x["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        vec![
            (
                "",
                "rule \"total-is-the-sum\" failed: total 14 must be the sum of price × quantity over the items"
            ),
            (
                "/delivery",
                "rule \"window-in-order\" failed: latest (\"2026-12-03\") must come after earliest (\"2026-12-04\")"
            ),
            (
                "",
                "rule \"at-most-one-gift\" failed: at most one item is a gift"
            ),
        ]
    );
}

#[test]
fn a_contract_whose_expression_does_not_compile_is_refused_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("broken-expr");
    std::fs::create_dir(&contract).unwrap();
    std::fs::write(contract.join("schema.json"), r#"{"type": "object"}"#).unwrap();
    std::fs::write(
        contract.join("manifest.toml"),
        "name = \"broken-expr\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n\n\
         [[rules]]\nkind = \"expr\"\nname = \"sum-check\"\npath = \"\"\nexpr = \"this.total == \"\n",
    )
    .unwrap();
    let reply = order_file(&dir, "reply.json", &serde_json::json!({"total": 1}));
    bridle()
        .arg("check")
        .arg("--contracts")
        .arg(dir.path())
        .args(["--contract", "broken-expr"])
        .arg(reply)
        .assert()
        .code(2)
        .stderr(contains("expr rule \"sum-check\""))
        .stderr(contains("does not parse at line 1"));
}
