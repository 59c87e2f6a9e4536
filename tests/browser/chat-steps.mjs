// Steps shared by the chat page's browser tests: mock scripts, opening a conversation, sending
// a message and waiting for its reply.
//
// Exports:
//   reply(text), turns(...replies)   a mock script: one turn per reply (an array: its attempts)
//   openChat(browser, bridle, {contract, page, mode, viewport})  the chat page signed in as
//                                    USER_KEY with a new conversation under `contract`
//   reply_n(page, n)                 waits until reply number n (1-based) has finished
//   say(page, text)                  types `text`, presses Enter, returns the reply's bubble
//   shot(page, name)                 with BRIDLE_SCREENSHOTS=1, saves docs/screenshots/chat-NAME.png

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, USER_KEY, newPage, signIn } from './harness.mjs';

export async function shot(page, name) {
  if (process.env.BRIDLE_SCREENSHOTS !== '1') return;
  const dir = join(ROOT, 'docs', 'screenshots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `chat-${name}.png`), fullPage: false });
}

export const reply = (text) => ({ reply: text });
export const turns = (...replies) => ({ turns: replies.map((r) => ({ attempts: Array.isArray(r) ? r : [r] })) });

export async function openChat(browser, bridle, { contract = 'selfhelp-response', page: pageName = '', mode = '', viewport } = {}) {
  const page = await newPage(browser, viewport ? { viewport } : {});
  await page.goto(`${bridle.url}/`);
  await signIn(page, USER_KEY);
  if (viewport && viewport.width <= 720) await page.locator('#toggle-sidebar').click();
  await page.locator('#nc-contract').fill(contract);
  await page.locator('#nc-page').selectOption(pageName);
  await page.locator('#nc-mode').selectOption(mode);
  await page.locator('#new-conversation button[type="submit"]').click();
  await page.locator('#chat-title', { hasText: contract }).waitFor();
  return page;
}

export async function reply_n(page, n) {
  const bubble = page.locator('.msg.assistant').nth(n - 1);
  await bubble.and(page.locator('[data-state="complete"], [data-state="error"]')).waitFor({ timeout: 20000 });
  if ((await bubble.getAttribute('data-state')) === 'error') throw new Error(`reply ${n} failed: ${await bubble.innerText()}`);
  return bubble;
}

export async function say(page, text) {
  const before = await page.locator('.msg.assistant').count();
  await page.locator('#composer-input').fill(text);
  await page.locator('#composer-input').press('Enter');
  return reply_n(page, before + 1);
}
