// End-to-end tests of the admin console (/admin) in headless Chromium, against the real
// `bridle serve` with `bridle mock-llm` as its upstream (tests/browser/harness.mjs).
//
// The mock script gives, in order: a turn whose first attempt breaks the contract (wrong_key)
// and whose retry is valid; a turn that needs a repair (code fence); a turn whose first attempt
// is hostile plain text and whose retry is a valid reply holding <script>/onerror payloads; and
// an emergency assessment that blocks its conversation.
//
// BRIDLE_SCREENSHOTS=DIR saves the main screens there as admin-*.png (docs/screenshots).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_KEY, OTHER_KEY, ROOT, USER_KEY, launchBrowser, newPage, signIn, startBridle } from './harness.mjs';

const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">';
const SAFE = { is_safe: true, danger_level: null, detected_concerns: [], requires_intervention: false, safety_message: null };
const XSS_REPLY = {
  type: 'response',
  safety: SAFE,
  content: { text_blocks: [{ type: 'text', content: `Here: ${HOSTILE}` }], suggestions: [{ text: HOSTILE }] },
  metadata: { model: 'm', language: 'en' },
};
const EMERGENCY_REPLY = {
  type: 'response',
  safety: { is_safe: false, danger_level: 'emergency', detected_concerns: ['suicide'], requires_intervention: true, safety_message: 'You matter.' },
  content: { text_blocks: [{ type: 'error', content: 'Please call for help now.' }] },
  metadata: { model: 'm', language: 'en' },
};
const SCRIPT = {
  turns: [
    { attempts: [{ fault: { kind: 'wrong_key' } }, { valid: true }] },
    { attempts: [{ fault: { kind: 'fence' } }] },
    { attempts: [{ reply: `Sorry ${HOSTILE}` }, { reply: JSON.stringify(XSS_REPLY) }] },
    { attempts: [{ reply: JSON.stringify(EMERGENCY_REPLY) }] },
    { attempts: [{ fault: { kind: 'missing_required' } }, { fault: { kind: 'wrong_enum' } }, { reply: 'no JSON at all' }] },
    { attempts: [{ reply: `{"type": "response", "bogus": 1, "safety": ${JSON.stringify(SAFE)}}` }, { valid: true }] },
  ],
};
const SHOTS = process.env.BRIDLE_SCREENSHOTS ? join(ROOT, process.env.BRIDLE_SCREENSHOTS) : null;

let bridle;
let browser;
const ids = {};

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

async function conversation(key) {
  return (await call('POST', '/v1/conversations', key, { contract: 'selfhelp-response' })).id;
}

async function send(id, content) {
  return call('POST', `/v1/conversations/${id}/messages`, USER_KEY, { content });
}

/** Sends a message as a server-sent-events turn; the whole event stream as text. */
async function stream(id, content) {
  const response = await fetch(`${bridle.url}/v1/conversations/${id}/messages`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${USER_KEY}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ content }),
  });
  assert.equal(response.status, 200);
  return response.text();
}

async function shot(page, name, options = {}) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `admin-${name}.png`), ...options });
}

/** A signed-in admin page at `hash` (a fresh browser context each time). */
async function adminPage(hash = '', options) {
  const page = await newPage(browser, options);
  await page.goto(`${bridle.url}/admin`);
  await signIn(page, ADMIN_KEY);
  if (hash) await page.evaluate((h) => { location.hash = h; }, hash);
  return page;
}

async function attempts(page) {
  await page.locator('.timeline .attempt').first().waitFor();
  return page.locator('.timeline .attempt');
}

function clean(page) {
  assert.deepEqual(page.problems, [], 'no page errors, no CSP violations');
}

before(async () => {
  bridle = await startBridle({ script: SCRIPT });
  browser = await launchBrowser();
  // Enough older, empty conversations of another user for a second page.
  for (let i = 0; i < 20; i++) await conversation(OTHER_KEY);
  ids.retry = await conversation(USER_KEY);
  const first = await send(ids.retry, 'I feel anxious before exams');
  assert.equal(first.attempts, 2, 'the scripted turn needs a retry');
  await send(ids.retry, 'And I cannot sleep');
  ids.xss = await conversation(USER_KEY);
  await send(ids.xss, `Look: ${HOSTILE}`);
  ids.blocked = await conversation(USER_KEY);
  const emergency = await send(ids.blocked, 'I want to end it');
  assert.equal(emergency.safety?.blocked, true, JSON.stringify(emergency.safety));
  ids.fallback = await conversation(USER_KEY);
  const fallback = await send(ids.fallback, 'Tell me something');
  assert.equal(fallback.fallback, true, 'three failed attempts end in the fallback');
  ids.streamed = await conversation(USER_KEY);
  const events = await stream(ids.streamed, 'Stream it');
  assert.match(events, /event: attempt_failed/);
  assert.match(events, /event: message_complete/);
});

after(async () => {
  if (browser) await browser.close();
  if (bridle) await bridle.stop();
});

describe('admin console', () => {
  test('sign-in refuses a user key and accepts the admin key', async () => {
    const page = await newPage(browser);
    await page.goto(`${bridle.url}/admin`);
    await page.locator('form#signin').waitFor();
    await shot(page, 'signin');
    await page.locator('form#signin input[name="key"]').fill(USER_KEY);
    await page.locator('form#signin [type="submit"]').click();
    await assert.doesNotReject(page.locator('#sign-in-error', { hasText: 'user key' }).waitFor());
    await signIn(page, ADMIN_KEY);
    await page.locator('table.conversations').waitFor();
    clean(page);
    await page.context().close();
  });

  test('the list filters and paginates with the API', async () => {
    const page = await adminPage();
    await page.locator('#pager-info').waitFor();
    assert.equal(await page.locator('table.conversations tbody tr').count(), 20);
    assert.match(await page.locator('#pager-info').textContent(), /1–20 of 25/);
    const newest = await page.locator('table.conversations tbody tr').evaluateAll((rows) => rows.slice(0, 5).map((r) => r.dataset.id));
    assert.deepEqual(newest, [ids.streamed, ids.fallback, ids.blocked, ids.xss, ids.retry], 'newest first');
    await shot(page, 'conversations', { fullPage: true });
    await page.locator('.pager a[rel="next"]').click();
    await page.locator('#pager-info', { hasText: '21–25 of 25' }).waitFor();
    assert.equal(await page.locator('table.conversations tbody tr').count(), 5);

    await page.locator('#has_invalid').selectOption('true');
    await page.locator('form.filters [type="submit"]').click();
    await page.locator('#total', { hasText: '4 conversations match' }).waitFor();
    const shown = await page.locator('table.conversations tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.id));
    assert.deepEqual(shown.sort(), [ids.retry, ids.xss, ids.fallback, ids.streamed].sort());
    assert.match(await page.evaluate(() => location.hash), /has_invalid=true/);

    await page.evaluate(() => { location.hash = '#/conversations?blocked=true'; });
    await page.locator('#total', { hasText: '1 conversation match' }).waitFor();
    assert.equal(await page.locator('table.conversations tbody tr').getAttribute('data-id'), ids.blocked);
    assert.equal(await page.locator('table.conversations tbody tr .badge').first().textContent(), 'Blocked');

    await page.evaluate(() => { location.hash = '#/conversations?q=cannot%20sleep'; });
    await page.locator('#total', { hasText: '1 conversation match' }).waitFor();
    await page.locator('table.conversations tbody tr a').click();
    await page.locator('.conversation-head h1', { hasText: ids.retry }).waitFor();
    clean(page);
    await page.context().close();
  });

  test('a retried turn shows a yellow Invalid attempt with the retry banner, then a green Valid one', async () => {
    const page = await adminPage(`#/conversations/${ids.retry}`);
    const cards = await attempts(page);
    assert.equal(await cards.count(), 3, 'two attempts in turn 1, one in turn 2');
    const failed = cards.nth(0);
    const badge = failed.locator('header .badge');
    assert.equal(await badge.textContent(), 'Invalid');
    assert.match(await badge.getAttribute('class'), /badge--invalid/);
    assert.match(await failed.getAttribute('class'), /attempt--failed/);
    assert.equal(await failed.evaluate((n) => getComputedStyle(n).opacity), '0.7');
    assert.match(await failed.locator('.retry-banner').textContent(), /Retry: This attempt failed validation.*attempt 2/);
    assert.ok(await failed.locator('.violations li').count() > 0, 'violations listed');

    const valid = cards.nth(1);
    assert.equal(await valid.locator('header .badge').textContent(), 'Valid');
    assert.match(await valid.locator('header .badge').getAttribute('class'), /badge--valid/);
    assert.doesNotMatch(await valid.getAttribute('class'), /attempt--failed/);
    assert.equal(await valid.locator('.retry-banner').count(), 0);
    assert.equal(await valid.evaluate((n) => getComputedStyle(n).opacity), '1');

    const repaired = cards.nth(2);
    assert.equal(await repaired.locator('header .badge').textContent(), 'Valid');
    assert.match(await repaired.locator('.repairs').textContent(), /code_fence/);
    assert.match(await page.locator('.turn').nth(0).locator('.turn-summary').textContent(), /2 attempts · valid after retry/);
    await shot(page, 'conversation', { fullPage: true });
    clean(page);
    await page.context().close();
  });

  test('the payload popup shows the formatted request, copies JSON and curl, traps focus and closes on Escape', async () => {
    const page = await adminPage(`#/conversations/${ids.retry}`);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: bridle.url });
    const detail = await call('GET', `/admin/v1/conversations/${ids.retry}`, ADMIN_KEY);
    const stored = detail.messages.find((m) => m.role === 'assistant' && m.attempt === 2).request_payload;
    const cards = await attempts(page);
    const opener = cards.nth(1).locator('.payload-button');
    await opener.click();
    const dialog = page.locator('dialog.payload-dialog');
    await dialog.waitFor();
    assert.equal(await dialog.evaluate((d) => d.open && d.matches(':modal')), true);
    assert.match(await dialog.locator('h2').textContent(), /attempt 2/);

    const json = await dialog.locator('pre.payload-json').textContent();
    assert.equal(json, JSON.stringify(stored.body, null, 2), 'the exact stored body, pretty-printed');
    const roles = await dialog.locator('.request-message .role').allTextContents();
    assert.deepEqual(roles, stored.body.messages.map((m) => m.role));
    assert.equal(await dialog.locator('.request-message .badge', { hasText: 'retry feedback' }).count(), 1);
    assert.match(await dialog.locator('.facts .url').textContent(), /\/v1\/chat\/completions$/);

    const copyJson = dialog.locator('button.copy', { hasText: 'Copy JSON' });
    assert.equal(await copyJson.getAttribute('data-copy-text'), json);
    const curl = await dialog.locator('button.copy', { hasText: 'Copy as curl' }).getAttribute('data-copy-text');
    assert.ok(curl.startsWith(`curl -sS -X POST '${stored.url}'`), curl.slice(0, 120));
    assert.match(curl, /-H 'authorization: Bearer '"\$OPENAI_API_KEY"/i);
    assert.ok(!curl.includes('sk-browser-test') && !curl.includes('[REDACTED]'), 'no secret, no placeholder');
    assert.ok(curl.includes(`<<'BRIDLE_JSON'\n${json}\nBRIDLE_JSON\n`), 'the body as a quoted here-document');
    await dialog.locator('button.copy', { hasText: 'Copy as curl' }).click();
    await dialog.locator('.copy-status', { hasText: 'copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), curl);
    await shot(page, 'payload');

    // Focus stays in the dialog: Tab from the last control goes to the first, Shift+Tab back.
    const inside = () => page.evaluate(() => document.activeElement?.closest('dialog') !== null);
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      assert.equal(await inside(), true, `focus left the dialog after ${i + 1} Tab`);
    }
    await page.keyboard.press('Shift+Tab');
    assert.equal(await inside(), true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('payload-button')), true, 'focus back on the opener');
    clean(page);
    await page.context().close();
  });

  test('replaying a failed attempt shows the new check beside the original', async () => {
    const page = await adminPage(`#/conversations/${ids.retry}`);
    const cards = await attempts(page);
    const failed = cards.nth(0);
    await failed.locator('.replay-button').click();
    const panel = failed.locator('.replay-panel[data-state="done"]');
    await panel.waitFor({ timeout: 15000 });
    const verdict = panel.locator('h4 .badge').first();
    assert.match(await verdict.getAttribute('data-outcome'), /^(valid|invalid)$/);
    assert.match(await panel.locator('h4').textContent(), /original: Invalid/);
    assert.match(await panel.textContent(), /Original attempt's violations/);
    assert.ok((await panel.locator('pre.replay-content').textContent()).length > 0, 'the answer is shown');
    await failed.scrollIntoViewIfNeeded();
    await shot(page, 'replay');
    const after = await call('GET', `/admin/v1/conversations/${ids.retry}`, ADMIN_KEY);
    assert.equal(after.messages.length, 5, 'a replay is not stored');
    clean(page);
    await page.context().close();
  });

  test('hostile reply and user content render as inert text', async () => {
    const page = await adminPage(`#/conversations/${ids.xss}`);
    const cards = await attempts(page);
    assert.equal(await cards.count(), 2);
    assert.equal(await cards.nth(0).locator('header .badge').textContent(), 'Invalid');
    assert.equal(await cards.nth(1).locator('header .badge').textContent(), 'Valid');
    assert.equal(await page.locator('.user-text').textContent(), `Look: ${HOSTILE}`);
    assert.equal(await cards.nth(0).locator('pre.reply').textContent(), `Sorry ${HOSTILE}`);
    assert.ok((await cards.nth(1).locator('pre.reply').textContent()).includes(JSON.stringify(HOSTILE).slice(1, -1)));
    await cards.nth(1).locator('details.value summary').click();
    assert.match(await cards.nth(1).locator('details.value pre').textContent(), /<script>window.__pwned=1<\/script>/);
    await cards.nth(1).locator('.payload-button').click();
    await page.locator('dialog.payload-dialog').waitFor();
    assert.ok((await page.locator('dialog .request-message pre').allTextContents()).some((t) => t.includes(HOSTILE)));
    await page.keyboard.press('Escape');
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.locator('main script, main img[src="x"], dialog script').count(), 0, 'no element made from stored text');
    clean(page);
    await page.context().close();
  });

  test('a blocked conversation shows its safety event and unblocking changes its state', async () => {
    const page = await adminPage(`#/conversations/${ids.blocked}`);
    await page.locator('.conversation-head .badge[data-status="blocked"]').waitFor();
    const event = page.locator('table.safety tbody tr');
    assert.equal(await event.count(), 1);
    assert.equal(await event.getAttribute('data-action'), 'block');
    assert.match(await event.textContent(), /emergency/);
    assert.match(await event.textContent(), /suicide/);
    assert.match(await page.locator('.attempt .safety-line').textContent(), /Safety: emergency \(suicide\) · requires intervention/);
    await shot(page, 'blocked', { fullPage: true });

    // The user is refused while blocked.
    const refused = await fetch(`${bridle.url}/v1/conversations/${ids.blocked}/messages`, {
      method: 'POST', headers: { Authorization: `Bearer ${USER_KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ content: 'hello?' }),
    });
    assert.equal(refused.status, 423);

    await page.locator('#unblock').click();
    await page.locator('.conversation-head .badge[data-status="active"]').waitFor();
    assert.equal(await page.locator('#unblock').count(), 0);
    assert.match(await page.locator('#notice').textContent(), /unblocked/);
    const detail = await call('GET', `/admin/v1/conversations/${ids.blocked}`, ADMIN_KEY);
    assert.equal(detail.conversation.status, 'active');
    const again = await send(ids.blocked, 'thanks');
    assert.ok(again.value, 'the user can write again');
    clean(page);
    await page.context().close();
  });

  test('a turn whose attempts ran out shows every failed attempt and the fallback', async () => {
    const page = await adminPage(`#/conversations/${ids.fallback}`);
    const cards = await attempts(page);
    assert.equal(await cards.count(), 4, 'three attempts and the fallback');
    const badges = await cards.locator('header .badge').allTextContents();
    assert.deepEqual(badges, ['Invalid', 'Invalid', 'Invalid', 'Fallback']);
    assert.match(await cards.nth(1).locator('.retry-banner').textContent(), /attempt 3/);
    assert.match(await cards.nth(2).locator('.retry-banner').textContent(), /last attempt; the fallback followed/);
    assert.match(await cards.nth(2).locator('.violations').textContent(), /not_json/);
    assert.match(await cards.nth(3).getAttribute('class'), /attempt--fallback/);
    assert.match(await cards.nth(3).locator('.retry-banner').textContent(), /Fallback: the attempts ran out/);
    assert.match(await page.locator('.turn-summary').textContent(), /3 attempts · fallback returned/);
    await shot(page, 'fallback', { fullPage: true });
    clean(page);
    await page.context().close();
  });

  test('a streamed attempt stopped early is marked aborted', async () => {
    const page = await adminPage(`#/conversations/${ids.streamed}`);
    const cards = await attempts(page);
    assert.equal(await cards.count(), 2);
    const aborted = cards.nth(0).locator('header .badge');
    assert.equal(await aborted.textContent(), 'Invalid · aborted');
    assert.equal(await aborted.getAttribute('data-outcome'), 'aborted');
    assert.match(await aborted.getAttribute('class'), /badge--invalid/);
    assert.match(await cards.nth(0).locator('.retry-banner').textContent(), /Stopped early while streaming.*attempt 2/);
    assert.match(await cards.nth(0).locator('.violations').textContent(), /bogus/);
    assert.equal(await cards.nth(1).locator('header .badge').textContent(), 'Valid');
    clean(page);
    await page.context().close();
  });

  test('an unknown conversation says so, and signing out returns to the sign-in form', async () => {
    const page = await adminPage('#/conversations/no-such-id');
    await page.locator('.error-card h1', { hasText: 'Not found' }).waitFor();
    await page.locator('#sign-out').click();
    await page.locator('form#signin').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the key is forgotten');
    assert.equal(await page.locator('body[data-signed-in]').count(), 0);
    clean(page);
    await page.context().close();
  });

  test('the stats page draws its charts from the data', async () => {
    const page = await adminPage('#/stats?bucket_ms=60000');
    await page.locator('#stats-tiles').waitFor();
    const stats = await call('GET', '/admin/v1/stats?bucket_ms=60000', ADMIN_KEY);
    assert.ok(stats.turns >= 5);
    const figures = page.locator('figure.chart');
    assert.deepEqual(await figures.locator('figcaption').allTextContents(), [
      'Compliance rate over time', 'Turn outcomes over time', 'Attempts per turn',
      'Most violated rules', 'Repairs by kind', 'Tokens spent on retries',
    ]);
    assert.equal(await page.locator('figure.chart--empty').count(), 0, 'every chart has data');
    for (const svg of await page.locator('figure.chart svg[role="img"]').all()) {
      assert.ok((await svg.locator('title').first().textContent()).length > 0);
      assert.ok((await svg.locator('desc').textContent()).length > 0);
    }
    assert.ok(await figures.nth(0).locator('circle.dot').count() >= 1, 'compliance points');
    const histogram = await figures.nth(2).locator('rect.bar').evaluateAll((bars) => bars.map((b) => Number(b.dataset.value)));
    assert.deepEqual(histogram, stats.attempts_per_turn.map((a) => a.turns));
    const rules = await figures.nth(3).locator('.chart-data tbody tr td:first-child').allTextContents();
    assert.deepEqual(rules, stats.top_violated_rules.map((r) => r.rule));
    assert.ok(rules.length > 0);
    assert.match(await figures.nth(4).locator('.chart-data').textContent(), /code_fence/);
    const retries = await figures.nth(5).locator('rect.bar.s-failed').evaluateAll((bars) => bars.map((b) => Number(b.dataset.value)));
    assert.deepEqual(retries, [stats.tokens.retries_in, stats.tokens.retries_out].filter((n) => n > 0));
    assert.match(await page.locator('#stats-tiles').textContent(), new RegExp(`${(stats.compliance.compliance_rate * 100).toFixed(1)} %`));
    assert.equal(stats.streaming.aborted_attempts, 1);
    assert.match(await page.locator('#stats-tiles').textContent(), /1 aborted/);
    await shot(page, 'stats', { fullPage: true });

    // A quick range keeps the turns of the last hour, by the minute.
    await page.locator('button.preset[data-preset="Last hour"]').click();
    await page.waitForFunction(() => /from=\d+/.test(location.hash) && location.hash.includes('bucket_ms=60000'));
    await page.locator('#stats-tiles', { hasText: `${stats.turns}` }).waitFor();
    assert.equal(await page.locator('figure.chart--empty').count(), 0);

    // Another range: a contract with no turns draws empty charts, not broken ones.
    await page.locator('#stats-contract').fill('table-chat');
    await page.locator('form.filters [type="submit"]').click();
    await page.waitForFunction(() => location.hash.includes('contract=table-chat'));
    await page.locator('figure.chart--empty').first().waitFor();
    assert.equal(await page.locator('figure.chart--empty').count(), 6);
    assert.match(await page.locator('#stats-tiles').textContent(), /0\.0 %/);
    clean(page);
    await page.context().close();
  });

  test('phone width: the timeline and the list stay usable', async () => {
    const page = await adminPage(`#/conversations/${ids.retry}`, { viewport: { width: 390, height: 844 } });
    await attempts(page);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways scrolling (${overflow}px)`);
    await shot(page, 'phone');
    await page.locator('.attempt .payload-button').first().click();
    const dialog = page.locator('dialog.payload-dialog');
    await dialog.waitFor();
    assert.ok(await dialog.evaluate((d) => d.getBoundingClientRect().width <= window.innerWidth && d.scrollWidth <= d.clientWidth), 'the dialog fits the screen');
    await shot(page, 'phone-payload');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await page.evaluate(() => { location.hash = '#/conversations'; });
    await page.locator('table.conversations').waitFor();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth) <= 0);
    await shot(page, 'phone-list');
    await page.evaluate(() => { location.hash = '#/stats'; });
    await page.locator('figure.chart').first().waitFor();
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth) <= 0);
    clean(page);
    await page.context().close();
  });
});
