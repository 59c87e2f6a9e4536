// The admin console on a turn that escalated: the real `bridle serve` with two models in front
// of one scripted `bridle mock-llm` — `small` (the default) escalates to `large` after one
// invalid reply — and headless Chromium reading the conversation and the stats page.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, USER_KEY, launchBrowser, newPage, signIn, startBridle } from './harness.mjs';

// The first attempt (to `small`) breaks the contract, the second (to `large`) meets it.
const SCRIPT = { turns: [{ attempts: [{ fault: { kind: 'wrong_key' } }, { valid: true }] }] };

let bridle;
let browser;
let id;

async function call(method, path, key, body) {
  const response = await fetch(`${bridle.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

before(async () => {
  bridle = await startBridle({
    script: SCRIPT,
    env: (mock) => ({
      BRIDLE__DEFAULT_MODEL: 'small',
      BRIDLE__PROVIDERS__UP__KIND: 'openai',
      BRIDLE__PROVIDERS__UP__BASE_URL: mock.baseUrl,
      BRIDLE__MODELS__SMALL__PROVIDER: 'up',
      BRIDLE__MODELS__SMALL__MODEL: 'small-upstream',
      BRIDLE__MODELS__SMALL__ESCALATE_TO: 'large',
      BRIDLE__MODELS__SMALL__ESCALATE_AFTER: '1',
      BRIDLE__MODELS__LARGE__PROVIDER: 'up',
      BRIDLE__MODELS__LARGE__MODEL: 'large-upstream',
    }),
  });
  browser = await launchBrowser();
  id = (await call('POST', '/v1/conversations', USER_KEY, { contract: 'selfhelp-response' })).id;
  const turn = await call('POST', `/v1/conversations/${id}/messages`, USER_KEY, { content: 'I feel anxious' });
  assert.equal(turn.attempts, 2, JSON.stringify(turn));
  assert.equal(turn.model, 'large', 'the escalated model answered');
});

after(async () => {
  if (browser) await browser.close();
  if (bridle) await bridle.stop();
});

async function adminPage(hash) {
  const page = await newPage(browser);
  await page.goto(`${bridle.url}/admin`);
  await signIn(page, ADMIN_KEY);
  await page.evaluate((h) => { location.hash = h; }, hash);
  return page;
}

describe('admin console, escalation', () => {
  test('the escalated attempt is marked, with the model it went to and where the turn moved', async () => {
    const page = await adminPage(`#/conversations/${id}`);
    const cards = page.locator('.timeline .attempt');
    await cards.first().waitFor();
    assert.equal(await cards.count(), 2);
    const [first, second] = [cards.nth(0), cards.nth(1)];
    assert.equal(await first.locator('header .badge--route').count(), 0, 'the first attempt went to the turn\'s own model');
    assert.match(await first.locator('.retry-banner').textContent(), /escalated to model large/);
    const route = second.locator('header .badge--route');
    assert.equal(await route.textContent(), 'Escalated');
    assert.equal(await route.getAttribute('data-route'), 'escalated');
    assert.equal(await second.locator('header .badge').first().textContent(), 'Valid');
    const details = await second.textContent();
    assert.match(details, /large-upstream/, 'the upstream model is shown');
    assert.deepEqual(page.problems, [], 'no page errors, no CSP violations');
    await page.context().close();
  });

  test('the stats page counts the attempts per model and the escalation', async () => {
    const page = await adminPage('#/stats');
    const table = page.locator('#stats-models');
    await table.waitFor();
    const large = table.locator('tr[data-model="large"] td');
    assert.equal(await large.nth(1).textContent(), '1', 'one attempt to large');
    assert.equal(await large.nth(2).textContent(), '1', 'and it was valid');
    assert.equal(await large.nth(3).textContent(), '1', 'reached by escalation');
    const small = table.locator('tr[data-model="small"] td');
    assert.equal(await small.nth(1).textContent(), '1');
    assert.equal(await small.nth(2).textContent(), '0');
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });
});
