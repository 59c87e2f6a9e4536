"""Bridle's OpenAI-compatible endpoint driven by the official `openai` Python package.

Usage: python openai_client.py BASE_URL API_KEY
Exits non-zero (with the failed assertion) when Bridle does not behave like OpenAI's API.
"""

import json
import sys
import urllib.request

import openai
from openai import OpenAI
from pydantic import BaseModel

base_url, api_key = sys.argv[1], sys.argv[2]
# At its default retry settings, as applications use it.
client = OpenAI(base_url=base_url, api_key=api_key)
checks = 0

PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}

# 1. response_format json_schema is enforced; attempts and repairs come back as headers.
raw = client.chat.completions.with_raw_response.create(
    model="mock",
    messages=[{"role": "system", "content": "Extract the person."}, {"role": "user", "content": "Ada is 36."}],
    response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
)
completion = raw.parse()
person = json.loads(completion.choices[0].message.content)
assert isinstance(person["name"], str) and person["name"], person
assert isinstance(person["age"], int) and person["age"] >= 0, person
assert int(raw.headers["x-bridle-attempts"]) >= 1, dict(raw.headers)
# An inline schema is recorded as inline:NAME, never as a loaded contract of the same name.
assert raw.headers["x-bridle-contract"] == "inline:person", dict(raw.headers)
assert completion.usage.total_tokens > 0
checks += 1

# 2. A built-in contract chosen with extra_headers.
completion = client.chat.completions.create(
    model="mock",
    messages=[{"role": "user", "content": "I feel anxious before exams."}],
    extra_headers={"x-bridle-contract": "selfhelp-response"},
)
reply = json.loads(completion.choices[0].message.content)
assert reply["type"] == "response" and reply["content"]["text_blocks"], reply
assert completion.choices[0].finish_reason == "stop"
# The checked value rides along as an extra field the SDK keeps.
bridle = completion.model_extra["bridle"]
assert bridle["value"] == reply and bridle["contract"] == "selfhelp-response", bridle
assert bridle["attempts"] >= 1 and bridle["fallback"] is False, bridle
checks += 1

# 3. json_object is enforced as "a valid JSON object".
completion = client.chat.completions.create(
    model="mock",
    messages=[{"role": "user", "content": "Give me JSON."}],
    response_format={"type": "json_object"},
)
assert isinstance(json.loads(completion.choices[0].message.content), dict)
checks += 1

# 4. A plain request passes through.
raw = client.chat.completions.with_raw_response.create(model="mock", messages=[{"role": "user", "content": "Hello!"}])
assert raw.headers["x-bridle-contract"] == "none"
assert raw.parse().choices[0].message.content
checks += 1

# 5. Streaming delivers the validated reply.
stream = client.chat.completions.create(
    model="mock",
    messages=[{"role": "user", "content": "Stream it."}],
    extra_headers={"x-bridle-contract": "selfhelp-response"},
    stream=True,
)
text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
assert json.loads(text)["type"] == "response", text
checks += 1

# 5b. A streamed json_schema request: the validated value in chunks, then usage when asked for.
stream = client.chat.completions.create(
    model="mock",
    messages=[{"role": "user", "content": "Grace is 85."}],
    response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}},
    stream=True,
    stream_options={"include_usage": True},
)
chunks = list(stream)
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
person = json.loads(text)
assert isinstance(person["age"], int), person
assert chunks[0].choices[0].delta.role == "assistant"
finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
assert finishes == ["stop"], finishes
# The finish chunk carries the bridle extension, as a non-streamed completion does.
last = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
assert last.model_extra["bridle"]["value"] == person, last.model_extra
assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0, chunks[-1]
checks += 1

# 5c. A plain streamed request passes through chunk by chunk, as the model writes it.
stream = client.chat.completions.create(
    model="mock", messages=[{"role": "user", "content": "Tell me a story."}], stream=True
)
pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
assert len(pieces) > 1, pieces
assert "".join(pieces).strip(), pieces
checks += 1

# 6. Errors use OpenAI's shapes, so the SDK raises its own exceptions.
try:
    client.chat.completions.create(
        model="mock", messages=[{"role": "user", "content": "x"}], extra_headers={"x-bridle-contract": "no-such-contract"}
    )
    raise AssertionError("an unknown contract must be refused")
except openai.BadRequestError as error:
    assert "unknown contract" in str(error), error
checks += 1

try:
    OpenAI(base_url=base_url, api_key="wrong-key-0000000000", max_retries=0).chat.completions.create(
        model="mock", messages=[{"role": "user", "content": "x"}]
    )
    raise AssertionError("a wrong key must be refused")
except openai.AuthenticationError:
    pass
checks += 1

# 6b. An unknown model is OpenAI's 404, never another model's answer.
try:
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    raise AssertionError("an unknown model must be refused")
except openai.NotFoundError as error:
    assert error.code == "model_not_found", error
checks += 1


def conversations():
    request = urllib.request.Request(f"{base_url}/conversations", headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["total"]


# 6c. A contract no reply can meet: 422 contract_unmet, which the SDK at its default retry
# settings does not retry — one enforced call (one recorded conversation), not three.
before = conversations()
try:
    OpenAI(base_url=base_url, api_key=api_key).chat.completions.create(
        model="mock",
        messages=[{"role": "user", "content": "Anything."}],
        response_format={"type": "json_schema", "json_schema": {"name": "never", "schema": {"not": {}}}},
    )
    raise AssertionError("an unmeetable contract must be refused")
except openai.UnprocessableEntityError as error:
    assert error.code == "contract_unmet", error
    assert error.body["violations"], error.body
assert conversations() == before + 1, (before, conversations())
checks += 1

# 8. client.chat.completions.parse with a Pydantic model: the SDK sends a strict json_schema,
# Bridle enforces it, and the SDK's own parsing gives back the model instance.
class Person(BaseModel):
    name: str
    age: int


completion = client.chat.completions.parse(
    model="mock",
    messages=[{"role": "user", "content": "Ada Lovelace was 36."}],
    response_format=Person,
)
person = completion.choices[0].message.parsed
assert isinstance(person, Person) and person.name and person.age >= 0, person
assert completion.model_extra["bridle"]["contract"] == "inline:Person", completion.model_extra
checks += 1


# 9. Tools, round trip: a forced call comes back as a tool call (ids, null content,
# finish_reason tool_calls); the SDK's own message object goes back with the tool's result;
# the model answers in text.
class GetWeather(BaseModel):
    city: str


tools = [openai.pydantic_function_tool(GetWeather)]
question = {"role": "user", "content": "What is the weather in Oslo?"}
first = client.chat.completions.create(
    model="mock",
    messages=[question],
    tools=tools,
    tool_choice={"type": "function", "function": {"name": "GetWeather"}},
)
choice = first.choices[0]
assert choice.finish_reason == "tool_calls", choice
call = choice.message.tool_calls[0]
assert call.id and call.type == "function" and call.function.name == "GetWeather", call
assert isinstance(json.loads(call.function.arguments)["city"], str), call
second = client.chat.completions.create(
    model="mock",
    messages=[question, choice.message, {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 3}'}],
    tools=tools,
)
assert second.choices[0].finish_reason == "stop", second
assert second.choices[0].message.content and not second.choices[0].message.tool_calls, second
checks += 1

# 9b. parse() with a strict Pydantic tool reads the call's arguments into the model.
parsed = client.chat.completions.parse(
    model="mock", messages=[question], tools=tools, tool_choice="required"
)
arguments = parsed.choices[0].message.tool_calls[0].function.parsed_arguments
assert isinstance(arguments, GetWeather) and arguments.city, arguments
checks += 1

# 9c. A streamed tool call arrives as tool_calls deltas the SDK puts together.
stream = client.chat.completions.create(
    model="mock", messages=[question], tools=tools, tool_choice="required", stream=True
)
names, arguments, finish = "", "", None
for chunk in stream:
    if not chunk.choices:
        continue
    for piece in chunk.choices[0].delta.tool_calls or []:
        names += piece.function.name or ""
        arguments += piece.function.arguments or ""
    finish = chunk.choices[0].finish_reason or finish
assert names == "GetWeather" and json.loads(arguments)["city"], (names, arguments)
assert finish == "tool_calls", finish
checks += 1

# 9d. An enforced call with tools: the call comes back as a call (the contract applies to
# content replies), and after the tool's result the reply is parsed into the Pydantic model.
first = client.chat.completions.parse(
    model="mock", messages=[question], response_format=Person, tools=tools, tool_choice="required"
)
message = first.choices[0].message
assert first.choices[0].finish_reason == "tool_calls" and message.tool_calls, first
assert first.model_extra["bridle"]["value"]["tool_calls"][0]["name"] == "GetWeather", first.model_extra
result = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": '{"temp_c": 3}'}
second = client.chat.completions.parse(
    model="mock", messages=[question, message, result], response_format=Person, tools=tools
)
assert isinstance(second.choices[0].message.parsed, Person), second
checks += 1

# 10. What the provider cannot honour is a 400 naming the parameter, never a silent drop.
try:
    client.chat.completions.create(model="mock", messages=[{"role": "user", "content": "x"}], n=2)
    raise AssertionError("n=2 must be refused by the mock provider")
except openai.BadRequestError as error:
    assert error.code == "unsupported_parameter" and error.param == "n", error
checks += 1

# 11. The model list.
assert "mock" in [m.id for m in client.models.list()]
checks += 1

print(f"openai SDK {openai.__version__}: {checks} checks passed")
