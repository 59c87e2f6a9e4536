"""Part 1: the contract core in-process — check, repair, prompt, contracts, Contract (built-in,
directory, schema, Pydantic), StreamCheck, every contract kind, errors as exceptions, stubs."""

import json
import sysconfig
from pathlib import Path

import pydantic
import pytest

import bridle

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "crates" / "core" / "tests" / "fixtures"
EXAMPLE = (ROOT / "contracts" / "selfhelp-response" / "example.json").read_text()


def test_the_installed_wheel_is_under_test():
    # Not the source tree: the tests must exercise what `pip install` put in site-packages.
    assert Path(bridle.__file__).is_relative_to(sysconfig.get_paths()["purelib"])
    assert Path(bridle._native.__file__).suffix == ".so"
    stubs = Path(bridle.__file__).parent
    assert (stubs / "_native.pyi").is_file() and (stubs / "py.typed").is_file()


def test_a_valid_reply_by_contract_name():
    checked = bridle.check(EXAMPLE, "selfhelp-response")
    assert checked.valid
    assert checked.violations == [] and checked.repairs == []
    assert checked.value == json.loads(EXAMPLE)
    assert checked.contract == "selfhelp-response"
    assert checked.feedback() == ""


def test_repairs_are_named_and_counted():
    raw = "Here you go:\n```json\n" + EXAMPLE.rstrip()[:-1].rstrip() + ",}\n```\nHope it helps!"
    checked = bridle.check(raw, bridle.Contract.builtin("selfhelp-response"))
    assert checked.valid, checked.violations
    kinds = [r.kind for r in checked.repairs]
    assert "code_fence" in kinds and "trailing_comma" in kinds
    assert all(r.count >= 1 and r.message for r in checked.repairs)
    assert checked.value == json.loads(EXAMPLE)


def test_violations_carry_path_rule_and_message_and_feedback_is_bounded():
    bad = json.loads(EXAMPLE)
    bad["safety"]["danger_level"] = "high"
    checked = bridle.check(json.dumps(bad), "selfhelp-response")
    assert not checked.valid
    [v] = [v for v in checked.violations if v.path == "/safety/danger_level"]
    assert v.rule == "enum" and "high" in v.message
    feedback = checked.feedback()
    assert feedback.startswith('Your previous reply did not meet the contract "selfhelp-response"')
    assert "/safety/danger_level" in feedback or "safety.danger_level" in feedback
    # Bounded whatever the reply: 500 violations still give at most MAX_FEEDBACK_CHARS.
    many = {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(500)}}
    worst = bridle.check(json.dumps({f"k{i}": i for i in range(500)}), schema=many)
    assert len(worst.violations) > bridle.MAX_FEEDBACK_ITEMS
    assert 0 < len(worst.feedback()) <= bridle.MAX_FEEDBACK_CHARS


def test_the_feedback_is_the_gateways(tmp_path):
    # The same text as `bridle check --json`'s contract feedback: built by the same core.
    bad = bridle.check('{"type": "response"}', "selfhelp-response")
    assert bad.feedback() == bridle.Contract.builtin("selfhelp-response").feedback(bad)
    assert bad.to_dict()["violations"][0] == bad.violations[0].to_dict()


def test_unreadable_replies():
    assert [v.rule for v in bridle.check("   ", "selfhelp-response").violations] == ["empty"]
    cut = bridle.check('{"type": "response", "content": {"blocks": [{"ty', "selfhelp-response")
    assert cut.value is None and cut.violations[0].rule == "truncated"
    prose = bridle.check("I cannot answer that.", "selfhelp-response")
    assert prose.violations[0].rule == "not_json"


def test_repair_returns_json_text_or_raises():
    assert json.loads(bridle.repair("{'a': True, 'b': None,}")) == {"a": True, "b": None}
    assert bridle.repair('{"a": 1}') == '{"a": 1}'
    with pytest.raises(bridle.RepairError, match="cut off"):
        bridle.repair('{"a": [1, 2')
    with pytest.raises(bridle.RepairError):
        bridle.repair("no json here")
    assert issubclass(bridle.RepairError, bridle.BridleError)


def test_prompt_uses_the_context():
    text = bridle.prompt("table-chat", {"page": "tables_list"})
    assert text == bridle.Contract.builtin("table-chat").instructions({"page": "tables_list"})
    assert text != bridle.prompt("table-chat", {"page": "table_view"})
    assert "selfhelp-response" in bridle.prompt("selfhelp-response") or "safety" in bridle.prompt("selfhelp-response")


def test_contracts_and_loading_from_a_directory():
    names = [c.name for c in bridle.contracts()]
    assert names == sorted(names)
    assert {"selfhelp-response", "table-chat", "topic-analysis", "question-cards"} <= set(names)
    kinds = {c.name: c.kind for c in bridle.contracts()}
    assert kinds["topic-analysis"] == "xml" and kinds["table-chat"] == "markers"
    loaded = bridle.Contract.load(ROOT / "contracts" / "selfhelp-response")
    assert loaded.name == "selfhelp-response" and loaded.has_fallback
    assert loaded.origin.endswith("selfhelp-response")
    everything = bridle.load_contracts(ROOT / "contracts")
    assert set(everything) == set(names)
    with pytest.raises(bridle.ContractError, match="load_contracts"):
        bridle.Contract.load(ROOT / "contracts")


def test_errors_are_python_exceptions_with_the_rust_message(tmp_path):
    with pytest.raises(bridle.ContractError, match='unknown contract "nope"'):
        bridle.check("{}", "nope")
    with pytest.raises(bridle.ContractError):
        bridle.Contract.from_schema({"type": "no-such-type"})
    (tmp_path / "manifest.toml").write_text('name = "x"\nbogus = 1\n')
    with pytest.raises(bridle.ContractError, match="manifest.toml"):
        bridle.Contract.load(tmp_path)
    with pytest.raises(TypeError):
        bridle.check("{}")
    with pytest.raises(TypeError):
        bridle.check("{}", context={"page": 3})


def test_from_schema_keeps_key_order_in_the_prompt():
    schema = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
              "required": ["zeta", "alpha"], "additionalProperties": False}
    contract = bridle.Contract.from_schema(schema, name="pair")
    text = contract.instructions()
    assert text.index("zeta") < text.index("alpha")
    assert contract.name == "pair" and contract.kind == "json" and not contract.has_fallback
    checked = contract.check('{"zeta": "z", "alpha": "1"}')
    assert [(v.path, v.rule) for v in checked.violations] == [("/alpha", "type")]


class Person(pydantic.BaseModel):
    name: str
    age: int

    @pydantic.field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("name must start with a capital letter")
        return value


def test_pydantic_models_give_model_values_and_their_validators_are_violations():
    contract = bridle.Contract.from_pydantic(Person)
    assert contract.name == "Person" and contract.model is Person
    good = contract.check("```json\n{\"name\": \"Ada\", \"age\": 36,}\n```")
    assert good.valid and isinstance(good.value, Person) and good.value.age == 36
    assert good.value is good.value  # converted once
    bad = bridle.check('{"name": "ada", "age": 36}', Person)
    assert not bad.valid
    [v] = bad.violations
    assert (v.path, v.rule) == ("/name", "value_error") and "capital" in v.message
    assert "/name" in bad.feedback() or "name" in bad.feedback()
    assert bad.value == {"name": "ada", "age": 36}
    schema_broken = contract.check('{"name": "Ada"}')
    assert [v.rule for v in schema_broken.violations] == ["required"]


def test_every_kind_checks():
    xml = (ROOT / "contracts" / "topic-analysis" / "example.xml").read_text()
    checked = bridle.check(xml, "topic-analysis")
    assert checked.valid and "response" in checked.value
    markers = (FIXTURES / "markers" / "suggestions_mixed.txt").read_text()
    checked = bridle.check(markers, "table-chat", context={"page": "table_view"})
    assert checked.value["message"] and "suggested_values" in checked.value
    cards = (FIXTURES / "cards" / "lettered_dot.txt").read_text()
    checked = bridle.check(cards, "question-cards", context={"mode": "discovery"})
    assert checked.valid
    [card] = checked.value["question_cards"]
    assert [o["label"] for o in card["options"]][0].startswith("Oven roasting")
    plain = bridle.check(cards, "question-cards", context={"mode": "chat"})
    assert plain.valid and not plain.value.get("question_cards")


def test_tools_and_check_reply_for_question_cards():
    contract = bridle.Contract.builtin("question-cards")
    [tool] = contract.tools({"mode": "discovery"})
    assert tool["function"]["name"] == "present_question"
    assert contract.tools({"mode": "chat"}) == []
    call = {"id": "call_1", "name": "present_question", "arguments": json.dumps({"oops": 1})}
    checked = contract.check_reply("", [call], {"mode": "discovery"})
    assert not checked.valid
    assert all(v.path.startswith("/tool_calls/0") for v in checked.violations)


def test_stream_check_json_partials_and_early_abort():
    reply = EXAMPLE
    stream = bridle.StreamCheck("selfhelp-response")
    events = []
    for i in range(0, len(reply), 7):
        events += stream.push(reply[i:i + 7])
    partials = [e.data["value"] for e in events if e.type == "partial"]
    assert partials, "a 10-step reply shows partial values"
    assert all(isinstance(p, dict) for p in partials)
    checked = stream.finish()
    assert checked.valid and checked.value == json.loads(reply)
    assert stream.raw == reply

    bad = bridle.StreamCheck("selfhelp-response")
    events = bad.push('{"safety": {"danger_level": "high", ')
    assert [e.type for e in events][-1] == "aborted"
    [violation] = events[-1].data["violations"]
    assert violation["path"] == "/safety/danger_level" and violation["rule"] == "enum"
    assert bad.aborted
    with pytest.raises(bridle.BridleError):
        bad.push("more")
    checked = bad.finish()
    assert not checked.valid and checked.violations[0].rule == "enum"
    assert "danger_level" in checked.feedback()


def test_stream_check_strips_markers_live_and_releases_held_text():
    text = (FIXTURES / "markers" / "suggestions_mixed.txt").read_text()
    stream = bridle.StreamCheck("table-chat", {"page": "table_view"})
    shown = []
    for i in range(0, len(text), 3):
        shown += stream.push(text[i:i + 3])
    checked = stream.finish()
    shown += stream.released
    visible = "".join(e.data["text"] for e in shown if e.type == "text_delta")
    assert "SUGGESTED_VALUES" not in visible
    assert " ".join(visible.split()) == " ".join(checked.value["message"].split())

    cards = (FIXTURES / "cards" / "lettered_dot.txt").read_text()
    stream = bridle.StreamCheck("question-cards", {"mode": "discovery"})
    for i in range(0, len(cards), 5):
        stream.push(cards[i:i + 5])
    checked = stream.finish()
    assert checked.valid and checked.value["question_cards"]
