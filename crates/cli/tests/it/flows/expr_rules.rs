//! Expression rules end to end through the gateway: a reply that breaks one is retried with
//! feedback naming the rule, the place and the message, and the retry's reply is the answer;
//! the mock's `broken_expr` fault is fixed on the first retry by that feedback alone; and a rule
//! that reads the turn's context sees what the application sent (`x-bridle-context`, string
//! facts and `app_state`).

use super::{Backend, Flow, replies};
use crate::fixture;
use bridle_core::Violation;
use serde_json::{Value, json};

/// The built-in contract's example with `topic` both covered and remaining.
fn overlapping_topics() -> (Value, Value) {
    let contracts = bridle_core::Contracts::builtin().unwrap();
    let example = contracts
        .get("selfhelp-response")
        .unwrap()
        .example()
        .unwrap()
        .clone();
    let mut broken = example.clone();
    broken["progress"]["topics_covered"] = json!(["introduction", "routine"]);
    (broken, example)
}

fn rules_of(violations: &[Violation]) -> Vec<(&str, &str)> {
    violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.as_str()))
        .collect()
}

#[tokio::test]
async fn a_reply_breaking_a_builtin_expression_rule_is_retried_with_the_rule_named() {
    let (broken, example) = overlapping_topics();
    let turn = replies(&[&broken.to_string(), &example.to_string()]);
    let flow = Flow::start(Backend::Sqlite, vec![turn]).await;
    let conversation = flow.create("selfhelp-response", json!({})).await;
    let answer = flow
        .send(
            &conversation,
            &json!({"content": "Where are we in the module?"}),
        )
        .await;
    assert_eq!(answer["value"], example, "{answer}");

    let sent = flow.sent().await;
    assert_eq!(sent.len(), 2);
    let feedback = sent[1].last();
    for named in ["/progress", "topic-covered-or-remaining", "never in both"] {
        assert!(feedback.contains(named), "{named} not in: {feedback}");
    }
    // The prompt lists the rule, so the first attempt already knew it.
    assert!(sent[0].system().contains("topic-covered-or-remaining"));

    let view = flow.admin_view(&conversation).await;
    let attempts = view.replies(0);
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        rules_of(&attempts[0].data.violations),
        vec![("/progress", "expr")]
    );
    assert!(attempts[1].data.violations.is_empty());
}

#[tokio::test]
async fn the_mocks_broken_expressions_are_fixed_on_the_first_retry_on_postgres() {
    // Every first reply breaks an expression rule when one can be broken; the mock mends it
    // only when the retry feedback names the place it broke.
    let mock = [
        "--seed",
        "7",
        "--fault-rate",
        "1",
        "--faults",
        "broken_expr",
    ];
    let flow = Flow::start_with(Backend::Postgres, Vec::new(), &mock, None).await;
    for n in 0..10 {
        let question =
            json!({"role": "user", "content": format!("Question {n}: how far along am I?")});
        let completion = flow
            .complete("selfhelp-response", &json!({}), &[question])
            .await;
        assert_eq!(
            completion.value()["type"],
            "response",
            "{}",
            completion.body
        );
    }
    let log = flow.mock_log().await;
    let mut faulty = 0;
    for (i, entry) in log.iter().enumerate() {
        if entry.answer.attempt != Some(1) || entry.answer.fault.is_none() {
            continue;
        }
        faulty += 1;
        assert_eq!(entry.answer.target.as_deref(), Some("/progress"));
        let retry = &log[i + 1].answer;
        assert_eq!(retry.attempt, Some(2), "the broken rule was retried");
        assert_eq!(retry.fault, None, "fixed on the first retry");
    }
    assert!(
        faulty >= 3,
        "only {faulty} of 10 first replies could be broken"
    );
}

fn order(skus: &[&str]) -> String {
    let items: Vec<Value> = skus
        .iter()
        .map(|sku| json!({"sku": sku, "price": 4, "quantity": 1, "gift": false}))
        .collect();
    json!({
        "items": items,
        "total": 4 * skus.len(),
        "delivery": {"earliest": "2026-12-01", "latest": "2026-12-02"}
    })
    .to_string()
}

#[tokio::test]
async fn expression_rules_read_the_context_the_application_sends() {
    let turns = vec![
        replies(&[&order(&["tea", "mug"]), &order(&["tea"])]),
        replies(&[&order(&["tea", "kettle"]), &order(&["tea", "teapot"])]),
    ];
    let contracts = fixture("contracts");
    let flow = Flow::start_with(Backend::Sqlite, turns, &[], Some(&contracts)).await;
    let ask = |text: &str| json!({"role": "user", "content": text});

    // A string fact of the context.
    let completion = flow
        .complete(
            "order-summary",
            &json!({"catalogue": "tea,teapot"}),
            &[ask("Tea and a mug, please")],
        )
        .await;
    assert_eq!(
        completion.value()["items"],
        json!([{"sku": "tea", "price": 4, "quantity": 1, "gift": false}])
    );
    let sent = flow.sent().await;
    assert_eq!(sent.len(), 2);
    assert!(sent[1].last().contains("/items/1"), "{}", sent[1].last());
    assert!(
        sent[1]
            .last()
            .contains("sku \"mug\" is not in the catalogue"),
        "{}",
        sent[1].last()
    );

    // The application's JSON state.
    let state = json!({"app_state": {"catalogue": ["tea", "teapot"]}});
    let completion = flow
        .complete("order-summary", &state, &[ask("Tea and a kettle")])
        .await;
    assert_eq!(completion.value()["items"][1]["sku"], "teapot");
    let sent = flow.sent().await;
    assert_eq!(sent.len(), 2);
    let feedback = sent[1].last();
    assert!(
        feedback.contains("in-the-application-catalogue"),
        "{feedback}"
    );
    assert!(feedback.contains("sku \"kettle\""), "{feedback}");
}
