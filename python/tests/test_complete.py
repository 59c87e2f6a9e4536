"""Part 2: the closed loop (`bridle.complete`) with the official openai client, sync and async,
streamed and not, against the real `bridle mock-llm` injecting faults: each repairable fault
is repaired without another call, each content fault is fixed by one retry whose prompt holds
only the bad reply and Bridle's feedback on it."""

import asyncio
import json

import pydantic
import pytest
from openai import AsyncOpenAI, OpenAI

import bridle
from conftest import fault_of, requests

REPAIRABLE = {"fence": "code_fence", "prose": "surrounding_prose", "trailing_comma": "trailing_comma"}
CONTENT = ["wrong_key", "missing_required", "wrong_enum", "truncate", "plain_text"]
ASK = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "I can't sleep before exams"}]


def client(mock, cls=OpenAI):
    # No SDK-level retries: every call the loop makes is one request in the mock's log.
    return cls(base_url=f"{mock.url}/v1", api_key="sk-test", max_retries=0)


@pytest.mark.parametrize("fault", sorted(REPAIRABLE))
def test_a_repairable_fault_is_repaired_without_a_call(mock_llm, fault):
    mock = mock_llm("--fault-rate", "1", "--faults", fault)
    completion = bridle.complete(client(mock), model="gpt-test", messages=ASK,
                                 contract="selfhelp-response")
    [attempt] = completion.attempts
    assert attempt.valid and not completion.fallback
    assert REPAIRABLE[fault] in [r.kind for r in attempt.repairs]
    assert bridle.check(attempt.raw, "selfhelp-response").valid
    [logged] = requests(mock)
    assert fault_of(logged) == fault
    assert completion.value == bridle.check(attempt.raw, "selfhelp-response").value
    assert completion.usage["total_tokens"] > 0


@pytest.mark.parametrize("fault", CONTENT)
def test_a_content_fault_is_fixed_by_one_retry(mock_llm, fault):
    mock = mock_llm("--fault-rate", "1", "--faults", fault)
    completion = bridle.complete(client(mock), model="gpt-test", messages=ASK,
                                 contract="selfhelp-response")
    first, second = completion.attempts
    assert not first.valid and first.violations and second.valid
    logged = requests(mock)
    assert [fault_of(entry) for entry in logged] == [fault, None]
    # The retry is the first request plus the bad reply and the feedback, nothing else.
    sent = [entry["body"]["messages"] for entry in logged]
    assert sent[0] == first.request["messages"] and sent[1] == second.request["messages"]
    assert sent[1][:-2] == sent[0]
    assert sent[1][-2:] == [{"role": "assistant", "content": first.raw},
                            {"role": "user", "content": first.checked.feedback()}]
    # The contract's instructions lead the system message; the caller's own follows them.
    system = sent[0][0]
    assert system["role"] == "system"
    assert system["content"] == bridle.prompt("selfhelp-response") + "\n\nBe kind."
    assert [m["role"] for m in sent[0]] == ["system", "user"]
    assert completion.usage["prompt_tokens"] == sum(a.usage["prompt_tokens"] for a in completion.attempts)


def test_the_prompt_never_grows(mock_llm, tmp_path):
    script = tmp_path / "script.json"
    bad = ["not json at all", '{"name": 3}', '{"name": "x", "age": "old"}']
    script.write_text(json.dumps({"turns": [{"attempts": [{"reply": r} for r in bad] + [{"valid": True}]}]}))
    mock = mock_llm("--script", str(script))
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    completion = bridle.complete(client(mock), model="gpt-test", schema=schema, max_attempts=4,
                                 messages=[{"role": "user", "content": "Who are you?"}])
    assert [a.valid for a in completion.attempts] == [False, False, False, True]
    assert [a.raw for a in completion.attempts[:3]] == bad
    lengths = [len(entry["body"]["messages"]) for entry in requests(mock)]
    assert lengths == [2, 4, 4, 4]
    for previous, attempt in zip(completion.attempts, completion.attempts[1:]):
        assert attempt.request["messages"][-2]["content"] == previous.raw
        assert attempt.request["messages"][-1]["content"] == previous.checked.feedback()


def test_exhausted_attempts_raise_or_fall_back(mock_llm, tmp_path):
    script = tmp_path / "script.json"
    turn = {"attempts": [{"reply": "no"}, {"reply": "still no"}]}
    script.write_text(json.dumps({"turns": [turn, turn]}))
    mock = mock_llm("--script", str(script))
    with pytest.raises(bridle.ContractUnmet) as raised:
        bridle.complete(client(mock), model="gpt-test", schema={"type": "object"}, max_attempts=2,
                        messages=[{"role": "user", "content": "hi"}])
    assert len(raised.value.attempts) == 2
    assert [v.rule for v in raised.value.violations] == ["not_json"]
    # selfhelp-response has a fallback: the gateway's answer when attempts run out.
    completion = bridle.complete(client(mock), model="gpt-test", contract="selfhelp-response",
                                 max_attempts=2, messages=[{"role": "user", "content": "hi"}])
    assert completion.fallback and len(completion.attempts) == 2
    assert bridle.Contract.builtin("selfhelp-response").validate(completion.value) == []


class Sleep(pydantic.BaseModel):
    hours: int
    advice: str


def test_response_model_gives_the_model_instance(mock_llm):
    mock = mock_llm("--fault-rate", "1", "--faults", "missing_required")
    completion = bridle.complete(client(mock), model="gpt-test", response_model=Sleep,
                                 messages=[{"role": "user", "content": "How long should I sleep?"}])
    assert isinstance(completion.value, Sleep)
    assert [a.valid for a in completion.attempts] == [False, True]
    assert completion.attempts[0].violations[0].rule == "required"


@pytest.mark.parametrize("fault", ["trailing_comma", "wrong_enum"])
def test_async_client(mock_llm, fault):
    mock = mock_llm("--fault-rate", "1", "--faults", fault)

    async def run():
        async with client(mock, AsyncOpenAI) as api:
            awaited = await bridle.complete(api, model="gpt-test", messages=ASK,
                                            contract="selfhelp-response")
            explicit = await bridle.acomplete(api, model="gpt-test", messages=ASK,
                                              contract="selfhelp-response")
            return awaited, explicit

    awaited, explicit = asyncio.run(run())
    expected = 1 if fault in REPAIRABLE else 2
    assert len(awaited.attempts) == len(explicit.attempts) == expected
    assert awaited.attempts[-1].valid and explicit.attempts[-1].valid
    assert len(requests(mock)) == 2 * expected


def test_streaming_aborts_a_proven_violation_and_retries(mock_llm):
    mock = mock_llm("--fault-rate", "1", "--faults", "wrong_enum", "--stream-piece-chars", "16",
                    "--stream-interval-ms", "2")
    events = list(bridle.complete_stream(client(mock), model="gpt-test", messages=ASK,
                                         contract="selfhelp-response"))
    types = [e.type for e in events]
    assert types[0] == "attempt_started" and types[-1] == "message_complete"
    assert types.count("attempt_started") == 2
    [failed] = [e for e in events if e.type == "attempt_failed"]
    assert failed.data["reason"] == "aborted" and failed.data["violations"][0]["rule"] == "enum"
    assert any(e.type == "partial" for e in events)
    completion = events[-1].result
    first, second = completion.attempts
    assert first.aborted and not first.valid and second.valid and not second.aborted
    logged = requests(mock)
    # The aborted stream was closed before its end: the mock saw the client go away.
    assert logged[0]["answer"]["stream"]["completed"] is False
    assert logged[0]["answer"]["stream"]["frames_sent"] < logged[0]["answer"]["stream"]["frames_total"]
    assert logged[1]["body"]["messages"][-2:] == [
        {"role": "assistant", "content": first.raw},
        {"role": "user", "content": first.checked.feedback()}]
    assert events[-1].data["value"] == completion.value
    # stream=True on complete() drains the same loop.
    again = bridle.complete(client(mock), model="gpt-test", messages=ASK,
                            contract="selfhelp-response", stream=True)
    assert [a.aborted for a in again.attempts] == [True, False]


def test_streaming_markers_text_without_markers(mock_llm):
    mock = mock_llm("--stream-piece-chars", "3")
    events = list(bridle.complete_stream(client(mock), model="gpt-test",
                                         messages=[{"role": "user", "content": "Show my budget"}],
                                         contract="table-chat", context={"page": "table_view"}))
    text = "".join(e.data["text"] for e in events if e.type == "text_delta")
    completion = events[-1].result
    assert completion.attempts[0].valid
    assert "SUGGESTED_" not in text and "PROPOSAL" not in text
    assert " ".join(text.split()) == " ".join(completion.value["message"].split())


def test_async_streaming(mock_llm):
    mock = mock_llm("--fault-rate", "1", "--faults", "missing_required")

    async def run():
        async with client(mock, AsyncOpenAI) as api:
            return [e async for e in bridle.acomplete_stream(api, model="gpt-test", messages=ASK,
                                                             contract="selfhelp-response")]

    events = asyncio.run(run())
    [failed] = [e for e in events if e.type == "attempt_failed"]
    assert failed.data["attempt"] == 1
    completion = events[-1].result
    assert [(a.valid, a.aborted) for a in completion.attempts] == [(False, True), (True, False)]
    # An aborted stream reports no usage; a finished one does (stream_options.include_usage).
    assert completion.attempts[0].usage is None
    assert completion.attempts[1].usage["completion_tokens"] > 0


def test_question_cards_through_the_contracts_tool(mock_llm):
    mock = mock_llm()
    ask = [{"role": "user", "content": "Help me plan a dinner party"}]
    completion = bridle.complete(client(mock), model="gpt-test", contract="question-cards",
                                 context={"mode": "discovery"}, messages=ask)
    [attempt] = completion.attempts
    assert [t["function"]["name"] for t in attempt.request["tools"]] == ["present_question"]
    assert [c["name"] for c in attempt.tool_calls] == ["present_question"]
    [card] = completion.value["question_cards"]
    assert card["options"] and card["metadata"]["option_style"] == "tool"
    events = list(bridle.complete_stream(client(mock), model="gpt-test", contract="question-cards",
                                         context={"mode": "discovery"}, messages=ask))
    cards = [e.data for e in events if e.type == "question_card"]
    assert cards and cards == events[-1].result.value["question_cards"]
    # Outside the card modes no tool is offered.
    plain = bridle.complete(client(mock), model="gpt-test", contract="question-cards",
                            context={"mode": "chat"}, messages=ask)
    assert "tools" not in plain.attempts[0].request
