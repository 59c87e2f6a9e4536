"""`Client` and `AsyncClient`: the Bridle gateway's native API (conversations, messages, card
answers, the SSE stream of a turn) and its admin API, over httpx (SSE through httpx-sse).

Every answer is read into a typed object (`Conversation`, `Turn`, `Page`, `ContractInfo`,
`HistoryMessage`); fields this version does not know are kept in its `extra` dict. Admin
answers that are whole stored records (a conversation's attempts, statistics, a replay) are
returned as the JSON the API sends (docs/api.md describes them). An error answer raises
`ApiError` with the API's `type`, `code` and message.

Both clients share the request building and answer reading below; only the sending differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, AsyncIterator, Iterator, Mapping, Sequence, TypeVar

import httpx
import httpx_sse

from bridle._complete import Event
from bridle._native import BridleError

T = TypeVar("T")


class ApiError(BridleError):
    """An error answer of the gateway: its HTTP `status`, and the body's `type`, `code` and
    `message` (`{"error": {…}}`); `param` and `violations` when the API gives them,
    `retry_after` (seconds) on a 429 or 503, and `request_id`: the request's id (the body's
    `request_id`, else the `x-request-id` header) for a user to quote, in `str()` too."""

    def __init__(self, status: int, type: str, code: str, message: str, param: str | None = None,
                 violations: list[dict[str, Any]] | None = None, retry_after: float | None = None,
                 request_id: str | None = None):
        self.status = status
        self.type = type
        self.code = code
        self.message = message
        self.param = param
        self.violations = violations or []
        self.retry_after = retry_after
        self.request_id = request_id
        text = f"{status} {code}: {message}"
        if request_id:
            text += f" (request id {request_id})"
        super().__init__(text)


def _typed(cls: type[T], data: Mapping[str, Any]) -> T:
    """`data` as `cls` (a dataclass with an `extra` field): known keys become fields."""
    names = {f.name for f in fields(cls)} - {"extra"}  # type: ignore[arg-type]
    known = {k: v for k, v in data.items() if k in names}
    extra = {k: v for k, v in data.items() if k not in names}
    return cls(**known, extra=extra)  # type: ignore[call-arg]


@dataclass
class Conversation:
    """A conversation: `id`, its contract, status (`active`, `blocked`), Unix-ms times; the
    whole `context` when read one by one, a short `summary` of it in a list."""

    id: str
    contract: str = ""
    status: str = ""
    created_at: int = 0
    updated_at: int = 0
    context: dict[str, Any] | None = None
    summary: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Turn:
    """The answer to a message: the checked `value` (the contract's fallback when `fallback`),
    how many `attempts` it took, the `repairs` made, token `usage`, the `model` whose reply is
    final and the `safety` decision (or `None`)."""

    conversation_id: str = ""
    turn_id: str = ""
    message_id: int = 0
    value: Any = None
    attempts: int = 0
    repairs: list[dict[str, Any]] = field(default_factory=list)
    fallback: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    model: str = ""
    safety: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ContractInfo:
    """A contract a conversation can be started under."""

    name: str
    version: str = ""
    kind: str = ""
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class HistoryMessage:
    """One message of the user's view: a user's `content`, or a reply's checked `value`."""

    id: int
    role: str
    created_at: int = 0
    content: str | None = None
    value: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Page:
    """One page of a list: `items`, and `total`, `offset`, `limit` when the API gives them."""

    items: list[Any]
    total: int | None = None
    offset: int | None = None
    limit: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _error(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
        error = body.get("error", {}) if isinstance(body, dict) else {}
    except ValueError:
        error = {}
    if not isinstance(error, dict):
        error = {}
    retry = response.headers.get("retry-after")
    try:
        retry_after = float(retry) if retry is not None else None
    except ValueError:
        retry_after = None
    request_id = error.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        request_id = response.headers.get("x-request-id") or None
    return ApiError(
        status=response.status_code,
        type=str(error.get("type", "http_error")),
        code=str(error.get("code", response.status_code)),
        message=str(error.get("message", response.reason_phrase or "request failed")),
        param=error.get("param"),
        violations=error.get("violations"),
        retry_after=retry_after,
        request_id=request_id,
    )


def _json(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise _error(response)
    return response.json()


def _message_body(content: str | None, context: Mapping[str, Any] | None, model: str | None,
                  answer: Any) -> dict[str, Any]:
    if (content is None) == (answer is None):
        raise TypeError("give either content or answer")
    body: dict[str, Any] = {"content": content} if content is not None else {"answer": answer}
    if context is not None:
        body["context"] = dict(context)
    if model is not None:
        body["model"] = model
    return body


def _query(**params: Any) -> dict[str, Any]:
    out = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key.rstrip("_")] = str(value).lower() if isinstance(value, bool) else value
    return out


def _page(data: Mapping[str, Any], item: type | None) -> Page:
    page = _typed(Page, data)
    if item is not None:
        page.items = [_typed(item, i) for i in page.items]
    return page


def _event(sse: httpx_sse.ServerSentEvent) -> Event:
    data = json.loads(sse.data) if sse.data else {}
    if not isinstance(data, dict):
        data = {"value": data}
    result = _typed(Turn, data) if sse.event == "message_complete" else None
    return Event(sse.event or "message", data, result=result)


class _Base:
    def __init__(self, base_url: str, api_key: str, timeout: float):
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = timeout

    def _url(self, path: str) -> str:
        return self._base + path


class Client(_Base):
    """A synchronous client of the gateway at `base_url` (`http://127.0.0.1:8080`) with an API
    key (a user key for the native API, an admin key for `admin_*`)."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0,
                 http: httpx.Client | None = None):
        super().__init__(base_url, api_key, timeout)
        self._http = http or httpx.Client(timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Any = None, params: Any = None) -> Any:
        response = self._http.request(method, self._url(path), json=body, params=params,
                                      headers=self._headers)
        return _json(response)

    # --- the native API ------------------------------------------------------------------

    def contracts(self) -> list[ContractInfo]:
        return [_typed(ContractInfo, c) for c in self._call("GET", "/v1/contracts")["items"]]

    def models(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/models").get("data", []))

    def create_conversation(self, contract: str, context: Mapping[str, Any] | None = None,
                            prompt: str | None = None) -> Conversation:
        body: dict[str, Any] = {"contract": contract}
        if context is not None:
            body["context"] = dict(context)
        if prompt is not None:
            body["prompt"] = prompt
        return _typed(Conversation, self._call("POST", "/v1/conversations", body))

    def conversations(self, offset: int | None = None, limit: int | None = None) -> Page:
        data = self._call("GET", "/v1/conversations", params=_query(offset=offset, limit=limit))
        return _page(data, Conversation)

    def conversation(self, conversation_id: str) -> Conversation:
        return _typed(Conversation, self._call("GET", f"/v1/conversations/{conversation_id}"))

    def messages(self, conversation_id: str) -> list[HistoryMessage]:
        data = self._call("GET", f"/v1/conversations/{conversation_id}/messages")
        return [_typed(HistoryMessage, m) for m in data["messages"]]

    def send(self, conversation_id: str, content: str | None = None,
             context: Mapping[str, Any] | None = None, *, model: str | None = None,
             answer: Any = None) -> Turn:
        body = _message_body(content, context, model, answer)
        return _typed(Turn, self._call("POST", f"/v1/conversations/{conversation_id}/messages", body))

    def answer(self, conversation_id: str, answer: Mapping[str, Any] | Sequence[Mapping[str, Any]],
               context: Mapping[str, Any] | None = None) -> Turn:
        """Answers question cards by id: `{"question_id", "option_ids", "text"?}` or a list."""
        return self.send(conversation_id, None, context, answer=_answers(answer))

    def stream(self, conversation_id: str, content: str | None = None,
               context: Mapping[str, Any] | None = None, *, model: str | None = None,
               answer: Any = None) -> Iterator[Event]:
        """The turn as it happens: `Event`s with the gateway's SSE names and data; the last is
        `message_complete` (its `result` a `Turn`) or `error`."""
        body = _message_body(content, context, model, _answers(answer) if answer else None)
        headers = {**self._headers, "Accept": "text/event-stream"}
        url = self._url(f"/v1/conversations/{conversation_id}/messages")
        with httpx_sse.connect_sse(self._http, "POST", url, json=body, headers=headers) as source:
            if source.response.status_code >= 400:
                source.response.read()
                raise _error(source.response)
            for sse in source.iter_sse():
                yield _event(sse)

    # --- the admin API (an admin key) ------------------------------------------------------

    def admin_conversations(self, *, user: str | None = None, contract: str | None = None,
                            from_: int | None = None, to: int | None = None, q: str | None = None,
                            has_invalid: bool | None = None, blocked: bool | None = None,
                            offset: int | None = None, limit: int | None = None) -> Page:
        params = _query(user=user, contract=contract, from_=from_, to=to, q=q,
                        has_invalid=has_invalid, blocked=blocked, offset=offset, limit=limit)
        return _page(self._call("GET", "/admin/v1/conversations", params=params), Conversation)

    def admin_conversation(self, conversation_id: str) -> dict[str, Any]:
        """`{conversation, messages, safety_events}`: every attempt with its request payload,
        raw response, violations and repairs."""
        return self._call("GET", f"/admin/v1/conversations/{conversation_id}")

    def unblock(self, conversation_id: str) -> dict[str, Any]:
        return self._call("POST", f"/admin/v1/conversations/{conversation_id}/unblock")

    def replay(self, message_id: int) -> dict[str, Any]:
        return self._call("POST", f"/admin/v1/messages/{message_id}/replay")

    def stats(self, *, from_: int | None = None, to: int | None = None,
              contract: str | None = None, bucket_ms: int | None = None) -> dict[str, Any]:
        params = _query(from_=from_, to=to, contract=contract, bucket_ms=bucket_ms)
        return self._call("GET", "/admin/v1/stats", params=params)


class AsyncClient(_Base):
    """`Client` for asyncio: the same methods, awaited (`stream` is an async iterator)."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0,
                 http: httpx.AsyncClient | None = None):
        super().__init__(base_url, api_key, timeout)
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, body: Any = None, params: Any = None) -> Any:
        response = await self._http.request(method, self._url(path), json=body, params=params,
                                            headers=self._headers)
        return _json(response)

    async def contracts(self) -> list[ContractInfo]:
        data = await self._call("GET", "/v1/contracts")
        return [_typed(ContractInfo, c) for c in data["items"]]

    async def models(self) -> list[dict[str, Any]]:
        return list((await self._call("GET", "/v1/models")).get("data", []))

    async def create_conversation(self, contract: str, context: Mapping[str, Any] | None = None,
                                  prompt: str | None = None) -> Conversation:
        body: dict[str, Any] = {"contract": contract}
        if context is not None:
            body["context"] = dict(context)
        if prompt is not None:
            body["prompt"] = prompt
        return _typed(Conversation, await self._call("POST", "/v1/conversations", body))

    async def conversations(self, offset: int | None = None, limit: int | None = None) -> Page:
        data = await self._call("GET", "/v1/conversations",
                                params=_query(offset=offset, limit=limit))
        return _page(data, Conversation)

    async def conversation(self, conversation_id: str) -> Conversation:
        data = await self._call("GET", f"/v1/conversations/{conversation_id}")
        return _typed(Conversation, data)

    async def messages(self, conversation_id: str) -> list[HistoryMessage]:
        data = await self._call("GET", f"/v1/conversations/{conversation_id}/messages")
        return [_typed(HistoryMessage, m) for m in data["messages"]]

    async def send(self, conversation_id: str, content: str | None = None,
                   context: Mapping[str, Any] | None = None, *, model: str | None = None,
                   answer: Any = None) -> Turn:
        body = _message_body(content, context, model, answer)
        data = await self._call("POST", f"/v1/conversations/{conversation_id}/messages", body)
        return _typed(Turn, data)

    async def answer(self, conversation_id: str,
                     answer: Mapping[str, Any] | Sequence[Mapping[str, Any]],
                     context: Mapping[str, Any] | None = None) -> Turn:
        return await self.send(conversation_id, None, context, answer=_answers(answer))

    async def stream(self, conversation_id: str, content: str | None = None,
                     context: Mapping[str, Any] | None = None, *, model: str | None = None,
                     answer: Any = None) -> AsyncIterator[Event]:
        body = _message_body(content, context, model, _answers(answer) if answer else None)
        headers = {**self._headers, "Accept": "text/event-stream"}
        url = self._url(f"/v1/conversations/{conversation_id}/messages")
        async with httpx_sse.aconnect_sse(self._http, "POST", url, json=body,
                                          headers=headers) as source:
            if source.response.status_code >= 400:
                await source.response.aread()
                raise _error(source.response)
            async for sse in source.aiter_sse():
                yield _event(sse)

    async def admin_conversations(self, *, user: str | None = None, contract: str | None = None,
                                  from_: int | None = None, to: int | None = None,
                                  q: str | None = None, has_invalid: bool | None = None,
                                  blocked: bool | None = None, offset: int | None = None,
                                  limit: int | None = None) -> Page:
        params = _query(user=user, contract=contract, from_=from_, to=to, q=q,
                        has_invalid=has_invalid, blocked=blocked, offset=offset, limit=limit)
        data = await self._call("GET", "/admin/v1/conversations", params=params)
        return _page(data, Conversation)

    async def admin_conversation(self, conversation_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/admin/v1/conversations/{conversation_id}")

    async def unblock(self, conversation_id: str) -> dict[str, Any]:
        return await self._call("POST", f"/admin/v1/conversations/{conversation_id}/unblock")

    async def replay(self, message_id: int) -> dict[str, Any]:
        return await self._call("POST", f"/admin/v1/messages/{message_id}/replay")

    async def stats(self, *, from_: int | None = None, to: int | None = None,
                    contract: str | None = None, bucket_ms: int | None = None) -> dict[str, Any]:
        params = _query(from_=from_, to=to, contract=contract, bucket_ms=bucket_ms)
        return await self._call("GET", "/admin/v1/stats", params=params)


def _answers(answer: Any) -> Any:
    if isinstance(answer, Mapping):
        return dict(answer)
    return [dict(a) for a in answer]
