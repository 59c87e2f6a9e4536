// The browser-test harness: the real `bridle` binary (built beforehand by scripts/test.sh,
// `cargo build -p bridle`), its mock LLM as the upstream, and headless Chromium driven by
// playwright-core. Nothing is faked.
//
// Exports:
//   ROOT, BRIDLE                 the repository root and target/debug/bridle
//   ADMIN_KEY, USER_KEY, OTHER_KEY   the keys the server accepts (users "ada" and "bob")
//   startMock({script, args})    `bridle mock-llm --port 0` (script: an object written to a
//                                temp file for --script) → {url, baseUrl, requests(), stop()}
//   startBridle({script, mockArgs, env})  a mock plus `bridle serve --bind 127.0.0.1:0
//                                --data-dir <tmp>` with OPENAI_BASE_URL at the mock, the keys
//                                above, rate limits off and a 50 ms retry delay (env: more
//                                variables, or a function of the started mock giving them) →
//                                {url, mock, dataDir, log(), stop()}
//   launchBrowser()              headless /usr/bin/chromium (--no-sandbox)
//   newPage(browser, {viewport}) a page whose uncaught errors and CSP violations are collected
//                                in page.problems (assert it stays empty)
//   signIn(page, key)            on a Bridle page (chat or admin): fills the key into
//                                `form#signin input[name=key]`, submits, and waits for
//                                `body[data-signed-in="true"]`
//   withBridle(options, fn)      startBridle + launchBrowser, fn({bridle, browser}), teardown

import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BRIDLE = process.env.BRIDLE_BIN || join(ROOT, 'target', 'debug', 'bridle');
export const CHROMIUM = process.env.BRIDLE_CHROMIUM || '/usr/bin/chromium';
export const ADMIN_KEY = 'bk_browser_admin_key_0123456789';
export const USER_KEY = 'bk_browser_user_ada_0123456789';
export const OTHER_KEY = 'bk_browser_user_bob_0123456789';

function requireBinary() {
  if (!existsSync(BRIDLE)) {
    throw new Error(`${BRIDLE} is missing: run \`cargo build -p bridle\` first (scripts/test.sh does)`);
  }
}

// Spawns `bridle args…` and resolves with the URL of its "serving on" / "listening on" line.
function spawnListening(args, env) {
  requireBinary();
  const child = spawn(BRIDLE, args, {
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bridle ${args[0]} printed no address within 30 s:\n${log}`));
    }, 30000);
    let found = false;
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      if (found) return;
      // Only a whole line: a chunk may end inside the address ("http://127.0"). A JSON log
      // line has the text as its "message".
      const match = log.match(/(?:serving|listening) on (http:\/\/[^\s"]+)(?:"[^\n]*)?\r?\n/);
      if (match) {
        found = true;
        clearTimeout(timer);
        resolvePromise({
          child,
          url: match[1].replace(/\/$/, ''),
          log: () => log,
          stop: () => stopChild(child),
        });
      }
    });
    child.on('exit', (code) => {
      if (!found) {
        clearTimeout(timer);
        reject(new Error(`bridle ${args[0]} exited (${code}) before printing its address:\n${log}`));
      }
    });
  });
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

export async function startMock({ script, args = [] } = {}) {
  const argv = ['mock-llm', '--port', '0', ...args];
  let dir = null;
  if (script) {
    dir = mkdtempSync(join(tmpdir(), 'bridle-mock-'));
    const file = join(dir, 'script.json');
    writeFileSync(file, JSON.stringify(script));
    argv.push('--script', file);
  }
  const running = await spawnListening(argv, {});
  return {
    url: running.url,
    baseUrl: `${running.url}/v1`,
    log: running.log,
    async requests() {
      const response = await fetch(`${running.url}/_mock/requests`);
      return response.json();
    },
    async stop() {
      await running.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startBridle({ script, mockArgs = [], env = {} } = {}) {
  const mock = await startMock({ script, args: mockArgs });
  const dataDir = mkdtempSync(join(tmpdir(), 'bridle-web-'));
  let server;
  try {
    server = await spawnListening(['serve', '--bind', '127.0.0.1:0', '--data-dir', dataDir], {
      OPENAI_BASE_URL: mock.baseUrl,
      OPENAI_API_KEY: 'sk-browser-test',
      BRIDLE_ADMIN_KEY: ADMIN_KEY,
      BRIDLE_USER_KEYS: `ada:${USER_KEY},bob:${OTHER_KEY}`,
      BRIDLE__SERVER__LIMITS__ENABLED: 'false',
      BRIDLE__RETRY__DELAY_MS: '50',
      ...(typeof env === 'function' ? env(mock) : env),
    });
  } catch (error) {
    await mock.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: server.url,
    mock,
    dataDir,
    log: server.log,
    async stop() {
      await server.stop();
      await mock.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/test.sh does)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

export async function newPage(browser, { viewport = { width: 1280, height: 860 } } = {}) {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    const text = message.text();
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(text)) {
      page.problems.push(`CSP: ${text}`);
    }
  });
  return page;
}

export async function signIn(page, key) {
  await page.locator('form#signin input[name="key"]').fill(key);
  await page.locator('form#signin [type="submit"]').click();
  await page.locator('body[data-signed-in="true"]').waitFor({ timeout: 10000 });
}

export async function withBridle(options, fn) {
  const bridle = await startBridle(options);
  let browser;
  try {
    browser = await launchBrowser();
    return await fn({ bridle, browser });
  } catch (error) {
    error.message += `\n--- bridle serve log ---\n${bridle.log().slice(-4000)}`;
    throw error;
  } finally {
    if (browser) await browser.close();
    await bridle.stop();
  }
}
