// The admin console and request ids: the real `bridle serve` (with a trace UI configured,
// `[telemetry] trace_url_template`) in front of the scripted `bridle mock-llm`; a turn sent with
// its own `x-request-id` and `traceparent` is found by the console's request-id search, and its
// turn shows the id and links to the trace.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, USER_KEY, launchBrowser, newPage, signIn, startBridle, withBridle } from './harness.mjs';
import { openChat } from './chat-steps.mjs';

const SCRIPT = { turns: [{ attempts: [{ valid: true }] }, { attempts: [{ valid: true }] }] };
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const REQUEST_ID = 'support-ticket-4711';

let bridle;
let browser;
let id;
let other;

async function call(path, body, headers = {}) {
  const response = await fetch(`${bridle.url}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${USER_KEY}`, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.ok(response.ok, `${path}: ${response.status} ${JSON.stringify(json)}`);
  return { json, requestId: response.headers.get('x-request-id') };
}

before(async () => {
  bridle = await startBridle({
    script: SCRIPT,
    env: { BRIDLE__TELEMETRY__TRACE_URL_TEMPLATE: 'https://jaeger.example/trace/{trace_id}?from=bridle' },
  });
  browser = await launchBrowser();
  id = (await call('/v1/conversations', { contract: 'selfhelp-response' })).json.id;
  const sent = await call(`/v1/conversations/${id}/messages`, { content: 'I feel anxious' },
    { 'x-request-id': REQUEST_ID, traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` });
  assert.equal(sent.requestId, REQUEST_ID);
  // Another conversation, which the search must leave out.
  other = (await call('/v1/conversations', { contract: 'selfhelp-response' })).json.id;
  await call(`/v1/conversations/${other}/messages`, { content: 'Hello' });
});

after(async () => {
  if (browser) await browser.close();
  if (bridle) await bridle.stop();
});

describe('admin console, request ids', () => {
  test('the request-id search finds the conversation; its turn shows the id and the trace link', async () => {
    const page = await newPage(browser);
    await page.goto(`${bridle.url}/admin`);
    await signIn(page, ADMIN_KEY);
    await page.locator('form.filters input[name="request_id"]').waitFor();
    await page.locator('form.filters input[name="request_id"]').fill(REQUEST_ID);
    await page.locator('form.filters [type="submit"]').click();
    await page.waitForFunction((rid) => location.hash.includes(`request_id=${rid}`), REQUEST_ID);
    const rows = page.locator(`tr[data-id]`);
    await page.locator(`tr[data-id="${id}"]`).waitFor();
    assert.equal(await rows.count(), 1, 'only the conversation of that request');
    assert.equal(await page.locator(`tr[data-id="${other}"]`).count(), 0);

    await page.evaluate((c) => { location.hash = `#/conversations/${c}`; }, id);
    const ids = page.locator('.timeline .turn-ids').first();
    await ids.waitFor();
    assert.equal(await ids.locator('.request-id').textContent(), REQUEST_ID);
    const link = ids.locator('a.trace-link');
    assert.equal(await link.getAttribute('href'), `https://jaeger.example/trace/${TRACE_ID}?from=bridle`);
    assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');
    assert.deepEqual(page.problems, [], 'no page errors, no CSP violations');
    await page.context().close();
  });
});

describe('chat page, request ids', () => {
  test('a failed turn shows the request id to quote', async () => {
    // The upstream wants another key: the turn's first attempt gets 401, which ends the turn.
    await withBridle({ mockArgs: ['--require-api-key', 'not-the-gateways-key'] }, async ({ bridle: failing, browser: chromium }) => {
      const page = await openChat(chromium, failing);
      await page.locator('#composer-input').fill('Hello?');
      await page.locator('#composer-input').press('Enter');
      const callout = page.locator('.msg.assistant .callout.error');
      await callout.waitFor({ timeout: 20000 });
      const text = await callout.textContent();
      const match = text.match(/\(request id ([0-9a-f-]{36})\)$/);
      assert.ok(match, text);
      // The id the page shows is the one the admin search finds.
      const response = await fetch(`${failing.url}/admin/v1/conversations?request_id=${match[1]}`, {
        headers: { Authorization: `Bearer ${ADMIN_KEY}` },
      });
      assert.equal((await response.json()).items.length, 1);
      assert.deepEqual(page.problems, []);
      await page.context().close();
    });
  });
});
