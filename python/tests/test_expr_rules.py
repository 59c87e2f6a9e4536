"""Expression rules (`[[rules]] kind = "expr"`) from Python: the built-in contract's rules and a
contract directory's rules checked in-process (with the turn's context), and through the
gateway a reply that breaks one retried and fixed by the feedback."""

import json
from pathlib import Path

import bridle
from conftest import USER_KEY, fault_of, requests

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.loads((ROOT / "contracts" / "selfhelp-response" / "example.json").read_text())
ORDER_SUMMARY = ROOT / "crates" / "cli" / "tests" / "fixtures" / "contracts" / "order-summary"


def test_a_builtin_expression_rule_is_a_violation_with_its_name_and_place():
    reply = json.loads(json.dumps(EXAMPLE))
    reply["progress"]["topics_covered"].append("routine")
    checked = bridle.check(json.dumps(reply), "selfhelp-response")
    assert not checked.valid
    [violation] = checked.violations
    assert (violation.path, violation.rule) == ("/progress", "expr")
    assert violation.message.startswith('rule "topic-covered-or-remaining" failed: a topic is')
    assert "topic-covered-or-remaining" in checked.feedback()
    # The rule is in the prompt the model gets.
    assert "topic-covered-or-remaining" in bridle.Contract.builtin("selfhelp-response").instructions()


def test_a_contracts_expression_rules_read_the_reply_and_the_context():
    contract = bridle.Contract.load(ORDER_SUMMARY)
    order = {
        "items": [{"sku": "tea", "price": 3, "quantity": 2, "gift": False},
                  {"sku": "mug", "price": 9, "quantity": 1, "gift": True}],
        "total": 15,
        "delivery": {"earliest": "2026-12-01", "latest": "2026-12-03"},
    }
    assert contract.check(json.dumps(order)).valid
    checked = contract.check(json.dumps(order), {"catalogue": "tea,teapot"})
    assert [(v.path, v.message) for v in checked.violations] == [
        ("/items/1", 'rule "in-the-catalogue" failed: sku "mug" is not in the catalogue')]
    order["total"] = 14
    assert [v.message for v in contract.validate(order)] == [
        'rule "total-is-the-sum" failed: total 14 must be the sum of price × quantity over the items']


def test_the_gateway_retries_a_broken_expression_rule_and_the_first_retry_fixes_it(gateway):
    server, mock = gateway("--seed", "7", "--fault-rate", "1", "--faults", "broken_expr")
    turns = []
    with bridle.Client(server.url, USER_KEY) as api:
        for n in range(8):
            conversation = api.create_conversation("selfhelp-response")
            turns.append(api.send(conversation.id, f"Question {n}: how far along am I?"))
    log = requests(mock)
    broken = [i for i, e in enumerate(log) if fault_of(e) == "broken_expr"]
    assert len(broken) >= 2, f"only {len(broken)} of 8 first replies could be broken"
    for i in broken:
        assert log[i]["answer"]["attempt"] == 1 and log[i]["answer"]["target"] == "/progress"
        assert log[i + 1]["answer"]["attempt"] == 2 and fault_of(log[i + 1]) is None
    assert sum(t.attempts for t in turns) == len(turns) + len(broken)
    assert not any(t.fallback for t in turns)
