use super::*;
use serde_json::json;

fn run(rule: &ExprRule, value: &Value, context: &Context) -> Vec<Violation> {
    let mut out = Vec::new();
    rule.check(&ExprInputs::new(value, context), &mut out);
    out
}

#[test]
fn every_allowed_function_exists() {
    let cases = [
        "size('ab') == 2",
        "'abc'.contains('b')",
        "'abc'.startsWith('a')",
        "'abc'.endsWith('c')",
        "int('3') == 3 && 1 - -1 == 2",
        "uint(3) == uint(3)",
        "double(1) == 1.0",
        "string(1) == '1'",
        "bool('true')",
        "bytes('a') == b'a'",
        "type(1) == type(2)",
        "dyn(1) == 1",
        "[1, 2].sum() == 3",
    ];
    assert_eq!(cases.len(), FUNCTIONS.len());
    for case in cases {
        let rule = ExprRule::compile("f", "", case, None).unwrap();
        assert!(run(&rule, &json!({}), &Context::new()).is_empty(), "{case}");
    }
}

#[test]
fn numbers_compare_across_int_and_double_and_sum_keeps_the_kind() {
    for case in [
        "this.a == 2.0",
        "this.b == 2",
        "[1, 2.5].sum() == 3.5",
        "this.l.sum() == 3",
    ] {
        let rule = ExprRule::compile("n", "", case, None).unwrap();
        let got = run(
            &rule,
            &json!({"a": 2, "b": 2.0, "l": [1, 2]}),
            &Context::new(),
        );
        assert!(got.is_empty(), "{case}: {got:?}");
    }
    let rule = ExprRule::compile("n", "", "['a'].sum() == 0", None).unwrap();
    let got = run(&rule, &json!({}), &Context::new());
    assert!(got[0].message.contains("sum() needs numbers"), "{got:?}");
}

#[test]
fn compile_errors_name_the_rule_and_the_place() {
    let err = ExprRule::compile("r", "", "this.a >", None).unwrap_err();
    assert!(
        err.starts_with("expr rule \"r\": the expression does not parse at line 1, column"),
        "{err}"
    );
    let err = ExprRule::compile("r", "", "this.a > 1 &&\n  thing.b", None).unwrap_err();
    assert_eq!(
        err,
        "expr rule \"r\": unknown name \"thing\" (use this, reply or context) at line 2, column 3"
    );
    let err = ExprRule::compile("r", "", "exec(this)", None).unwrap_err();
    assert!(
        err.contains("unknown function \"exec\" at line 1, column"),
        "{err}"
    );
    let err = ExprRule::compile("r", "", &"1 + ".repeat(300), None).unwrap_err();
    assert!(err.contains("longer than 1000 characters"), "{err}");
    for n in [9, 40, 400] {
        let deep = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        let err = ExprRule::compile("r", "", &deep, None).unwrap_err();
        assert!(err.contains("deeper than 8 levels"), "{err}");
        let list = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(ExprRule::compile("r", "", &list, None).is_err());
    }
    let ok = format!("{}1{} == 1", "(".repeat(8), ")".repeat(8));
    assert!(ExprRule::compile("r", "", &ok, None).is_ok());
    let err = ExprRule::compile("r", "", &format!("{}true", "!".repeat(300)), None).unwrap_err();
    assert!(err.contains("four unary"), "{err}");
    assert!(ExprRule::compile("r", "", "'((((((((((((((((' != ''", None).is_ok());
    let wide = vec!["this.a"; 100].join(" + ");
    let err = ExprRule::compile("r", "", &wide, None).unwrap_err();
    assert!(err.contains("nests more than 24 operations deep"), "{err}");
    assert!(ExprRule::compile("bad name", "", "true", None).is_err());
    assert!(ExprRule::compile("r", "no-slash", "true", None).is_err());
    assert!(ExprRule::compile("r", "", "true", Some("{nope}")).is_err());
}

#[test]
fn macro_variables_are_known_inside_their_macro_only() {
    assert!(ExprRule::compile("r", "", "this.l.all(x, x > 0)", None).is_ok());
    assert!(ExprRule::compile("r", "", "this.l.all(x, x > 0) && x > 0", None).is_err());
}

#[test]
fn runtime_errors_and_non_booleans_are_violations_with_the_rule_name() {
    let rule = ExprRule::compile("end-after-start", "/b/*", "this.end > this.start", None).unwrap();
    let got = run(&rule, &json!({"b": [{"start": "a"}]}), &Context::new());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/b/0");
    assert_eq!(got[0].rule, Rule::Expr);
    assert!(
        got[0]
            .message
            .starts_with("rule \"end-after-start\" could not be checked here: no member \"end\""),
        "{}",
        got[0].message
    );
    let rule = ExprRule::compile("num", "", "this.a + 1", None).unwrap();
    let got = run(&rule, &json!({"a": 1}), &Context::new());
    assert!(
        got[0]
            .message
            .contains("gave an integer, not true or false")
    );
    assert!(
        run(&rule, &json!({"b": []}), &Context::new())[0]
            .message
            .contains("no member")
    );
}
