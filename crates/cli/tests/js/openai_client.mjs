// Bridle's OpenAI-compatible endpoint driven by the official `openai` npm package, at its
// default retry settings.
//
// Usage: node openai_client.mjs BASE_URL API_KEY
// Exits non-zero (with the failed assertion) when Bridle does not behave like OpenAI's API.

import assert from "node:assert/strict";
import OpenAI from "openai";
import { VERSION } from "openai/version";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey });
let checks = 0;

const PERSON = {
  type: "object",
  required: ["name", "age"],
  properties: { name: { type: "string", minLength: 1 }, age: { type: "integer", minimum: 0 } },
  additionalProperties: false,
};

// 1. response_format json_schema is enforced; the checked value rides along in `bridle`.
{
  const { data, response } = await client.chat.completions
    .create({
      model: "mock",
      messages: [{ role: "user", content: "Ada is 36." }],
      response_format: { type: "json_schema", json_schema: { name: "person", schema: PERSON } },
    })
    .withResponse();
  const person = JSON.parse(data.choices[0].message.content);
  assert.ok(person.name && Number.isInteger(person.age), JSON.stringify(person));
  assert.equal(response.headers.get("x-bridle-contract"), "inline:person");
  assert.deepEqual(data.bridle.value, person);
  assert.equal(data.bridle.fallback, false);
  checks += 1;
}

// 2. A built-in contract by header; streamed, the validated reply arrives in chunks.
{
  const stream = await client.chat.completions.create(
    {
      model: "mock",
      messages: [{ role: "user", content: "I feel anxious before exams." }],
      stream: true,
    },
    { headers: { "x-bridle-contract": "selfhelp-response" } },
  );
  let text = "";
  let bridle = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    bridle = chunk.bridle ?? bridle;
  }
  assert.equal(JSON.parse(text).type, "response");
  // The finish chunk carries the checked value.
  assert.deepEqual(bridle.value, JSON.parse(text));
  checks += 1;
}

// 3. Tools, round trip: a forced call, the SDK's message sent back with the tool's result,
// then the model's answer.
{
  const tools = [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "The weather in a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    },
  ];
  const question = { role: "user", content: "What is the weather in Oslo?" };
  const first = await client.chat.completions.create({
    model: "mock",
    messages: [question],
    tools,
    tool_choice: { type: "function", function: { name: "get_weather" } },
  });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, null);
  const call = choice.message.tool_calls[0];
  assert.ok(call.id);
  assert.equal(call.function.name, "get_weather");
  assert.equal(typeof JSON.parse(call.function.arguments).city, "string");
  const second = await client.chat.completions.create({
    model: "mock",
    messages: [question, choice.message, { role: "tool", tool_call_id: call.id, content: '{"temp_c": 3}' }],
    tools,
  });
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.ok(second.choices[0].message.content);
  checks += 1;

  // Streamed, the call arrives as tool_calls deltas.
  const stream = await client.chat.completions.create({
    model: "mock",
    messages: [question],
    tools,
    tool_choice: "required",
    stream: true,
  });
  let name = "";
  let args = "";
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    for (const piece of c.delta.tool_calls ?? []) {
      name += piece.function?.name ?? "";
      args += piece.function?.arguments ?? "";
    }
    finish = c.finish_reason ?? finish;
  }
  assert.equal(name, "get_weather");
  assert.equal(typeof JSON.parse(args).city, "string");
  assert.equal(finish, "tool_calls");
  checks += 1;
}

// 4. An unmeetable contract is a 422 contract_unmet that the SDK, at its default retry
// settings, does not retry: one recorded conversation, not three.
{
  const total = async () => {
    const answer = await fetch(`${baseURL}/conversations`, { headers: { authorization: `Bearer ${apiKey}` } });
    return (await answer.json()).total;
  };
  const before = await total();
  await assert.rejects(
    client.chat.completions.create({
      model: "mock",
      messages: [{ role: "user", content: "Anything." }],
      response_format: { type: "json_schema", json_schema: { name: "never", schema: { not: {} } } },
    }),
    (error) => {
      assert.ok(error instanceof OpenAI.UnprocessableEntityError, String(error));
      assert.equal(error.code, "contract_unmet");
      assert.ok(error.error.violations.length > 0);
      return true;
    },
  );
  assert.equal(await total(), before + 1);
  checks += 1;
}

// 5. An unknown model is OpenAI's 404; what the provider cannot honour is a 400 naming it.
{
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] }),
    (error) => error instanceof OpenAI.NotFoundError && error.code === "model_not_found",
  );
  await assert.rejects(
    client.chat.completions.create({ model: "mock", messages: [{ role: "user", content: "x" }], n: 2 }),
    (error) => error instanceof OpenAI.BadRequestError && error.param === "n",
  );
  checks += 1;
}

// 6. The model list.
{
  const ids = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.ok(ids.includes("mock"), ids.join(","));
  checks += 1;
}

console.log(`openai npm ${VERSION}: ${checks} checks passed`);
