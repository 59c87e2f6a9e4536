"""The closed loop for any OpenAI-compatible client: `complete` (and `acomplete`,
`complete_stream`, `acomplete_stream`).

Each attempt sends the contract's instructions as the system message (the caller's own system
and developer messages follow them), the caller's messages and, on a retry, the previous bad
reply and Bridle's bounded feedback on it — only that pair, replacing the one before, so the
prompt never grows with the retries. The reply is checked by the Rust core (repairs, schema,
rules, and a Pydantic model's own validators); a valid one ends the loop. Streamed, each
delta goes through a `StreamCheck`: text and partial values come out as events, and a reply
that already proves a violation is stopped at once (the stream is closed) and retried.

Sync and async share one `_Loop`, which builds each request and records each reply; only the
calls to the client differ.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterator, Mapping, Sequence

from bridle._native import BridleError, Checked, Contract, Repair, StreamCheck, Violation


@dataclass
class Attempt:
    """One call to the model and what the check made of its reply."""

    number: int
    #: The keyword arguments given to `chat.completions.create` (model, messages, …).
    request: dict[str, Any]
    #: The reply's text exactly as received ("" when the model only called tools).
    raw: str
    checked: Checked
    #: Token usage as the provider reported it (`prompt_tokens`, `completion_tokens`,
    #: `total_tokens`); `None` when it reported none (an aborted stream).
    usage: dict[str, int] | None = None
    #: Tool calls in the reply: `{"id", "name", "arguments"}` with arguments as JSON text.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: True when a streamed reply was stopped early because it already broke the contract.
    aborted: bool = False
    #: The SDK's response object (a non-streamed attempt), for anything else it carries.
    response: Any = None

    @property
    def valid(self) -> bool:
        return self.checked.valid

    @property
    def violations(self) -> list[Violation]:
        return self.checked.violations

    @property
    def repairs(self) -> list[Repair]:
        return self.checked.repairs


@dataclass
class Completion:
    """The result of `complete`: the checked value and every attempt it took."""

    #: The checked value: the Pydantic model's instance with `response_model` (or a contract
    #: made from a model), else plain JSON (dicts, lists, …); the contract's fallback when
    #: `fallback` is true.
    value: Any
    attempts: list[Attempt]
    contract: Contract
    fallback: bool = False

    @property
    def checked(self) -> Checked:
        """The last attempt's check."""
        return self.attempts[-1].checked

    @property
    def usage(self) -> dict[str, int]:
        """Tokens summed over every attempt that reported usage."""
        total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for attempt in self.attempts:
            for key in total:
                total[key] += int((attempt.usage or {}).get(key) or 0)
        return total


class ContractUnmet(BridleError):
    """Every attempt broke the contract and the contract has no fallback."""

    def __init__(self, contract: Contract, attempts: list[Attempt]):
        self.contract = contract
        self.attempts = attempts
        last = attempts[-1].checked.violations if attempts else []
        self.violations = last
        rules = ", ".join(f"{v.path or '/'} ({v.rule})" for v in last[:5])
        super().__init__(
            f"no reply met the contract {contract.name!r} in {len(attempts)} attempt(s); "
            f"the last broke: {rules}"
        )


@dataclass
class Event:
    """One event of a streamed turn: `type` and `data` as the gateway's SSE events carry them
    (`attempt_started`, `text_delta`, `partial`, `suggestions`, `payload`, `attempt_failed`,
    `question_card`, `message_complete`; the gateway client adds `safety`, `budget_spent`,
    `error`). `result` is set on `message_complete`: the `Completion` (closed loop) or the
    `Turn` (gateway client)."""

    type: str
    data: dict[str, Any]
    result: Any = None


def _resolve(contract: Any, response_model: Any, schema: Any) -> Contract:
    given = [x for x in (contract, response_model, schema) if x is not None]
    if len(given) != 1:
        raise TypeError("give exactly one of contract=, response_model= or schema=")
    if response_model is not None:
        return Contract.from_pydantic(response_model)
    if schema is not None:
        return Contract.from_schema(schema)
    if isinstance(contract, Contract):
        return contract
    if isinstance(contract, str):
        return Contract.builtin(contract)
    if isinstance(contract, type) and hasattr(contract, "model_json_schema"):
        return Contract.from_pydantic(contract)
    raise TypeError("contract must be a bridle.Contract, a built-in contract's name or a Pydantic model")


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    if hasattr(message, "model_dump"):
        return message.model_dump(exclude_none=True)
    raise TypeError("each message is a dict such as {'role': 'user', 'content': '…'}")


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        part = _as_dict(part)
        if part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def _usage(usage: Any) -> dict[str, int] | None:
    if usage is None:
        return None
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    if isinstance(usage, Mapping):
        return {k: int(usage.get(k) or 0) for k in keys}
    return {k: int(getattr(usage, k, 0) or 0) for k in keys}


class _Loop:
    """The state of one closed-loop turn, independent of how the client is called."""

    def __init__(self, contract, model, messages, max_attempts, context, options):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.contract = contract
        self.model = model
        self.max_attempts = max_attempts
        self.context = dict(context) if context else None
        self.options = options
        self.tools = contract.tools(self.context)
        system = contract.instructions(self.context)
        rest = []
        for message in messages:
            message = _as_dict(message)
            if message.get("role") in ("system", "developer"):
                text = _text(message.get("content")).strip()
                if text:
                    system += "\n\n" + text
            else:
                rest.append(message)
        self.base = [{"role": "system", "content": system}, *rest]
        self.correction: tuple[str, str] | None = None
        self.attempts: list[Attempt] = []

    def request(self, stream: bool = False) -> dict[str, Any]:
        messages = list(self.base)
        if self.correction is not None:
            bad, feedback = self.correction
            messages.append({"role": "assistant", "content": bad})
            messages.append({"role": "user", "content": feedback})
        request = {"model": self.model, "messages": messages, **self.options}
        if self.tools:
            request["tools"] = [*request.get("tools", []), *self.tools]
        if stream:
            request["stream"] = True
            request.setdefault("stream_options", {"include_usage": True})
        return request

    def check(self, raw: str, calls: list[dict[str, Any]]) -> Checked:
        if calls:
            return self.contract.check_reply(raw, calls, self.context)
        return self.contract.check(raw, self.context)

    def record(self, attempt: Attempt) -> None:
        self.attempts.append(attempt)
        if not attempt.checked.valid:
            self.correction = (attempt.raw, attempt.checked.feedback())

    @property
    def number(self) -> int:
        return len(self.attempts) + 1

    def done(self) -> bool:
        return bool(self.attempts) and (
            self.attempts[-1].checked.valid or len(self.attempts) >= self.max_attempts
        )

    def result(self) -> Completion:
        last = self.attempts[-1]
        if last.checked.valid:
            return Completion(last.checked.value, self.attempts, self.contract)
        if self.contract.has_fallback:
            readable = [a.checked.to_dict()["value"] for a in self.attempts]
            value = self.contract.fallback([v for v in readable if v is not None])
            return Completion(value, self.attempts, self.contract, fallback=True)
        raise ContractUnmet(self.contract, self.attempts)

    def reply(self, request: dict[str, Any], response: Any) -> Attempt:
        """The attempt of a non-streamed response."""
        message = response.choices[0].message
        raw = message.content or ""
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in (getattr(message, "tool_calls", None) or [])
        ]
        return Attempt(
            number=self.number,
            request=request,
            raw=raw,
            checked=self.check(raw, calls),
            usage=_usage(getattr(response, "usage", None)),
            tool_calls=calls,
            response=response,
        )


class _Streamed:
    """One streamed attempt: chunks in, events out, the attempt at the end."""

    def __init__(self, loop: _Loop, request: dict[str, Any]):
        self.loop = loop
        self.request = request
        self.number = loop.number
        self.stream = StreamCheck(loop.contract, loop.context)
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] | None = None

    def started(self) -> Event:
        return Event("attempt_started", {"attempt": self.number, "model": self.loop.model})

    def feed(self, chunk: Any) -> list[Event]:
        if getattr(chunk, "usage", None) is not None:
            self.usage = _usage(chunk.usage)
        events: list[Event] = []
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            for call in getattr(delta, "tool_calls", None) or []:
                slot = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function is not None:
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
            if delta.content:
                for e in self.stream.push(delta.content):
                    if e.type == "aborted":  # reported as attempt_failed, as the gateway does
                        continue
                    data = dict(e.data)
                    if e.type == "partial":
                        data["attempt"] = self.number
                    events.append(Event(e.type, data))
        return events

    @property
    def aborted(self) -> bool:
        return self.stream.aborted

    def finish(self) -> tuple[Attempt, list[Event]]:
        calls = [self.calls[i] for i in sorted(self.calls)]
        checked = self.stream.finish(calls or None)
        attempt = Attempt(
            number=self.number,
            request=self.request,
            raw=self.stream.raw,
            checked=checked,
            usage=self.usage,
            tool_calls=calls,
            aborted=self.stream.aborted,
        )
        events = [Event(e.type, dict(e.data)) for e in self.stream.released]
        if not checked.valid:
            events.append(Event("attempt_failed", {
                "attempt": self.number,
                "reason": "aborted" if attempt.aborted else "invalid",
                "violations": [v.to_dict() for v in checked.violations],
                "message": "the reply broke the contract; discard what this attempt showed",
            }))
        return attempt, events


def _closing(completion: Completion) -> list[Event]:
    events = []
    value = completion.checked.to_dict()["value"] if not completion.fallback else None
    cards = value.get("question_cards") if isinstance(value, dict) else None
    for card in cards or []:
        events.append(Event("question_card", card))
    plain = completion.value
    if hasattr(plain, "model_dump"):
        plain = plain.model_dump(mode="json")
    events.append(Event("message_complete", {
        "value": plain,
        "attempts": len(completion.attempts),
        "repairs": [r.to_dict() for r in completion.checked.repairs],
        "fallback": completion.fallback,
        "usage": completion.usage,
    }, result=completion))
    return events


def _is_async(client: Any) -> bool:
    """An async client (`openai.AsyncOpenAI` wraps its `create`, so look beneath the wrapper)."""
    create = client.chat.completions.create
    return inspect.iscoroutinefunction(inspect.unwrap(create)) or inspect.iscoroutinefunction(create)


def complete(client: Any, *, model: str, messages: Sequence[Any], contract: Any = None,
             response_model: Any = None, schema: Any = None, max_attempts: int = 3,
             context: Mapping[str, str] | None = None, stream: bool = False,
             **options: Any) -> Any:
    """Asks `client` (an `openai.OpenAI`, or any client with its `chat.completions.create`)
    until a reply meets the contract, at most `max_attempts` times; returns a `Completion`.
    With an `openai.AsyncOpenAI` it returns an awaitable (the same as `acomplete`). `options`
    (temperature, max_tokens, …) go with every request."""
    if _is_async(client):
        return acomplete(client, model=model, messages=messages, contract=contract,
                         response_model=response_model, schema=schema,
                         max_attempts=max_attempts, context=context, stream=stream, **options)
    if stream:
        completion = None
        for event in complete_stream(client, model=model, messages=messages, contract=contract,
                                     response_model=response_model, schema=schema,
                                     max_attempts=max_attempts, context=context, **options):
            completion = event.result or completion
        return completion
    loop = _Loop(_resolve(contract, response_model, schema), model, messages, max_attempts,
                 context, options)
    while not loop.done():
        request = loop.request()
        response = client.chat.completions.create(**request)
        loop.record(loop.reply(request, response))
    return loop.result()


async def acomplete(client: Any, *, model: str, messages: Sequence[Any], contract: Any = None,
                    response_model: Any = None, schema: Any = None, max_attempts: int = 3,
                    context: Mapping[str, str] | None = None, stream: bool = False,
                    **options: Any) -> Completion:
    """`complete` for an async client (`openai.AsyncOpenAI`)."""
    if stream:
        completion = None
        async for event in acomplete_stream(client, model=model, messages=messages,
                                            contract=contract, response_model=response_model,
                                            schema=schema, max_attempts=max_attempts,
                                            context=context, **options):
            completion = event.result or completion
        return completion
    loop = _Loop(_resolve(contract, response_model, schema), model, messages, max_attempts,
                 context, options)
    while not loop.done():
        request = loop.request()
        response = await client.chat.completions.create(**request)
        loop.record(loop.reply(request, response))
    return loop.result()


def complete_stream(client: Any, *, model: str, messages: Sequence[Any], contract: Any = None,
                    response_model: Any = None, schema: Any = None, max_attempts: int = 3,
                    context: Mapping[str, str] | None = None, **options: Any) -> Iterator[Event]:
    """The closed loop, streamed: yields `Event`s as the model writes (the last one,
    `message_complete`, carries the `Completion` in `result`). A reply that already proves a
    violation is cut off (its stream closed) and retried at once."""
    loop = _Loop(_resolve(contract, response_model, schema), model, messages, max_attempts,
                 context, options)
    while not loop.done():
        request = loop.request(stream=True)
        attempt = _Streamed(loop, request)
        yield attempt.started()
        stream = client.chat.completions.create(**request)
        try:
            for chunk in stream:
                yield from attempt.feed(chunk)
                if attempt.aborted:
                    break
        finally:
            stream.close()
        record, events = attempt.finish()
        loop.record(record)
        yield from events
    yield from _closing(loop.result())


async def acomplete_stream(client: Any, *, model: str, messages: Sequence[Any],
                           contract: Any = None, response_model: Any = None, schema: Any = None,
                           max_attempts: int = 3, context: Mapping[str, str] | None = None,
                           **options: Any) -> AsyncIterator[Event]:
    """`complete_stream` for an async client."""
    loop = _Loop(_resolve(contract, response_model, schema), model, messages, max_attempts,
                 context, options)
    while not loop.done():
        request = loop.request(stream=True)
        attempt = _Streamed(loop, request)
        yield attempt.started()
        stream = await client.chat.completions.create(**request)
        try:
            async for chunk in stream:
                for event in attempt.feed(chunk):
                    yield event
                if attempt.aborted:
                    break
        finally:
            await stream.close()
        record, events = attempt.finish()
        loop.record(record)
        for event in events:
            yield event
    for event in _closing(loop.result()):
        yield event
