"""Part 3: the gateway client (`bridle.Client`, `bridle.AsyncClient`) against the real `bridle
serve`, its upstream a `bridle mock-llm` injecting faults: conversations, messages, the SSE
stream as typed events, question-card answers, the admin API, and errors as exceptions with
the API's type and code."""

import asyncio

import httpx
import pytest

import bridle
from bridle._client import _error
from conftest import ADMIN_KEY, USER_KEY, fault_of, requests


def test_a_turn_repaired_and_a_turn_retried(gateway):
    server, mock = gateway("--fault-rate", "1", "--faults", "trailing_comma")
    with bridle.Client(server.url, USER_KEY) as api:
        conversation = api.create_conversation("selfhelp-response")
        assert conversation.id and conversation.contract == "selfhelp-response"
        turn = api.send(conversation.id, "I feel anxious before exams")
        assert turn.attempts == 1 and not turn.fallback
        assert "trailing_comma" in [r["kind"] for r in turn.repairs]
        assert bridle.Contract.builtin("selfhelp-response").validate(turn.value) == []
        assert turn.conversation_id == conversation.id and turn.usage
        history = api.messages(conversation.id)
        assert [m.role for m in history] == ["user", "assistant"]
        assert history[0].content == "I feel anxious before exams" and history[1].value == turn.value
        assert api.conversation(conversation.id).context is not None
        assert conversation.id in [c.id for c in api.conversations().items]
        assert "selfhelp-response" in [c.name for c in api.contracts()]
        assert [m["object"] for m in api.models()][:1] == ["model"]
    assert len(requests(mock)) == 1


def test_a_content_fault_costs_one_retry_through_the_gateway(gateway):
    server, mock = gateway("--fault-rate", "1", "--faults", "wrong_key")
    with bridle.Client(server.url, USER_KEY) as api:
        conversation = api.create_conversation("selfhelp-response")
        turn = api.send(conversation.id, "How do I sleep better?")
    assert turn.attempts == 2
    assert [fault_of(e) for e in requests(mock)] == ["wrong_key", None]


def test_the_stream_is_typed_events(gateway):
    server, mock = gateway("--fault-rate", "1", "--faults", "wrong_enum", "--stream-piece-chars", "16")
    with bridle.Client(server.url, USER_KEY) as api:
        conversation = api.create_conversation("selfhelp-response")
        events = list(api.stream(conversation.id, "Exams make me anxious"))
    types = [e.type for e in events]
    assert types[0] == "attempt_started" and types[-1] == "message_complete"
    assert types.count("attempt_started") == 2 and "partial" in types
    [failed] = [e for e in events if e.type == "attempt_failed"]
    assert failed.data["reason"] == "aborted" and failed.data["violations"]
    final = events[-1].result
    assert isinstance(final, bridle.Turn) and final.attempts == 2
    assert final.value == events[-1].data["value"]


def test_question_cards_are_answered_by_id(gateway):
    server, _ = gateway()
    with bridle.Client(server.url, USER_KEY) as api:
        conversation = api.create_conversation("question-cards", context={"mode": "discovery"})
        turn = api.send(conversation.id, "Help me plan a dinner party")
        cards = turn.value.get("question_cards") or []
        assert cards, turn.value
        card = cards[0]
        answer = {"question_id": card["question_id"], "option_ids": [card["options"][0]["id"]]}
        answered = api.answer(conversation.id, answer)
        assert answered.turn_id != turn.turn_id
        history = api.messages(conversation.id)
        assert card["options"][0]["label"] in history[2].content
        with pytest.raises(bridle.ApiError) as raised:
            api.answer(conversation.id, {"question_id": "q_nope", "option_ids": ["opt_1"]})
        assert raised.value.status == 422


def test_errors_carry_the_api_type_and_code(gateway):
    server, _ = gateway()
    with bridle.Client(server.url, USER_KEY) as api:
        with pytest.raises(bridle.ApiError) as raised:
            api.send("0190aaaa-0000-7000-8000-000000000000", "hello")
        assert (raised.value.status, raised.value.type, raised.value.code) == \
            (404, "invalid_request_error", "not_found")
        with pytest.raises(bridle.ApiError) as raised:
            api.admin_conversations()
        assert (raised.value.status, raised.value.code) == (403, "forbidden")
        with pytest.raises(bridle.ApiError) as raised:
            list(api.stream("0190aaaa-0000-7000-8000-000000000000", "hello"))
        assert raised.value.status == 404
    with bridle.Client(server.url, "bk_wrong") as api, pytest.raises(bridle.ApiError) as raised:
        api.create_conversation("selfhelp-response")
    assert (raised.value.status, raised.value.type, raised.value.code) == \
        (401, "authentication_error", "invalid_api_key")
    assert isinstance(raised.value, bridle.BridleError)


def test_errors_carry_the_request_id_to_quote(gateway):
    server, _ = gateway()
    with bridle.Client(server.url, USER_KEY) as api:
        with pytest.raises(bridle.ApiError) as raised:
            api.send("0190aaaa-0000-7000-8000-000000000000", "hello")
    error = raised.value
    assert error.request_id, "the body's request_id"
    assert str(error).endswith(f"(request id {error.request_id})"), str(error)
    # The body's id is the response's header.
    answer = httpx.post(f"{server.url}/v1/conversations/0190aaaa-0000-7000-8000-000000000000"
                        "/messages", json={"content": "hello"},
                        headers={"Authorization": f"Bearer {USER_KEY}",
                                 "x-request-id": "quote-me-42"})
    assert answer.status_code == 404
    assert answer.headers["x-request-id"] == "quote-me-42"
    assert _error(answer).request_id == "quote-me-42"
    # An answer whose body has no request id (a method the route does not take): the header's.
    answer = httpx.delete(f"{server.url}/v1/conversations",
                          headers={"x-request-id": "from-the-header"})
    assert answer.status_code >= 400
    assert "request_id" not in answer.text
    error = _error(answer)
    assert error.request_id == "from-the-header"
    assert "(request id from-the-header)" in str(error)


def test_the_admin_api(gateway):
    server, _ = gateway("--fault-rate", "1", "--faults", "missing_required")
    with bridle.Client(server.url, USER_KEY) as api:
        conversation = api.create_conversation("selfhelp-response")
        api.send(conversation.id, "Tell me about sleep")
    with bridle.Client(server.url, ADMIN_KEY) as admin:
        page = admin.admin_conversations(contract="selfhelp-response", has_invalid=True)
        assert page.total == 1 and page.items[0].id == conversation.id
        record = admin.admin_conversation(conversation.id)
        attempts = [m for m in record["messages"] if m["role"] == "assistant"]
        assert [m["is_validated"] for m in attempts] == [False, True]
        replay = admin.replay(attempts[0]["id"])
        assert replay["message_id"] == attempts[0]["id"] and "check" in replay
        stats = admin.stats(contract="selfhelp-response")
        assert stats


def test_the_async_client(gateway):
    server, mock = gateway("--fault-rate", "1", "--faults", "prose")

    async def run():
        async with bridle.AsyncClient(server.url, USER_KEY) as api:
            conversation = await api.create_conversation("selfhelp-response")
            turn = await api.send(conversation.id, "Exams are close")
            events = [e async for e in api.stream(conversation.id, "And tomorrow?")]
            with pytest.raises(bridle.ApiError):
                await api.conversation("0190aaaa-0000-7000-8000-000000000000")
            return turn, events

    turn, events = asyncio.run(run())
    assert turn.attempts == 1 and "surrounding_prose" in [r["kind"] for r in turn.repairs]
    assert events[-1].type == "message_complete" and events[-1].result.attempts == 1
    assert len(requests(mock)) == 2
