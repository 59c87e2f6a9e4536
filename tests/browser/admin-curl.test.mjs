// The admin console's "Copy as curl" command (web/admin/curl.js), run for real: bash runs the
// command against a local HTTP server, which must receive the stored body byte for byte and the
// key from the environment — with quotes, `$`, backticks and newlines in the body unexpanded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { ROOT } from './harness.mjs';

// curl.js is a browser module without imports; load it as one.
const source = readFileSync(join(ROOT, 'web', 'admin', 'curl.js'), 'utf8');
const { curlCommand, bodyJson, shellQuote, keyVariable } = await import(`data:text/javascript,${encodeURIComponent(source)}`);

const TRICKY = `it's "quoted" $HOME \`id\` $(id) \\ back\nnew line BRIDLE_JSON\n'; rm -rf / #`;

function receive(fn) {
  return new Promise((resolve, reject) => {
    const server = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (c) => { body += c; });
      request.on('end', () => {
        response.setHeader('content-type', 'application/json');
        response.end('{"ok": true}');
        server.close();
        resolve({ method: request.method, url: request.url, headers: request.headers, body });
      });
    });
    server.listen(0, '127.0.0.1', () => fn(`http://127.0.0.1:${server.address().port}`).catch((e) => {
      server.close();
      reject(e);
    }));
  });
}

function bash(command, env) {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', command], { env: { PATH: process.env.PATH, ...env } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

test('the curl command sends the stored body unchanged with the key from $OPENAI_API_KEY', async () => {
  const body = { model: 'gpt', temperature: 0, messages: [{ role: 'system', content: TRICKY }, { role: 'user', content: 'héllo ✓' }] };
  let command;
  const got = await receive(async (base) => {
    command = curlCommand({
      provider: 'openai',
      url: `${base}/v1/chat/completions?x='y'`,
      headers: { authorization: 'Bearer [REDACTED]', 'content-type': 'application/json', 'content-length': '123', 'x-trace': "a'b" },
      body,
    });
    await bash(command, { OPENAI_API_KEY: 'sk-from-env' });
  });
  assert.equal(got.method, 'POST');
  assert.equal(got.url, "/v1/chat/completions?x='y'");
  assert.equal(got.headers.authorization, 'Bearer sk-from-env');
  assert.equal(got.headers['x-trace'], "a'b");
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.body, `${JSON.stringify(body, null, 2)}\n`, 'the pretty body plus the here-document newline');
  assert.deepEqual(JSON.parse(got.body), body);
  assert.ok(!command.includes('[REDACTED]'));
});

test('Anthropic keys come from $ANTHROPIC_API_KEY; streamed bodies get -N; a missing content type is added', async () => {
  assert.equal(keyVariable('anthropic'), 'ANTHROPIC_API_KEY');
  assert.equal(keyVariable('openai'), 'OPENAI_API_KEY');
  const command = curlCommand({
    provider: 'anthropic',
    url: 'http://127.0.0.1:9/v1/messages',
    headers: { 'x-api-key': '[REDACTED]', 'anthropic-version': '2023-06-01' },
    body: { stream: true, messages: [] },
  });
  assert.match(command, /^curl -sS -N -X POST 'http:\/\/127\.0\.0\.1:9\/v1\/messages'/);
  assert.ok(command.includes(`-H 'x-api-key: '"$ANTHROPIC_API_KEY"`));
  assert.ok(command.includes(`-H 'anthropic-version: 2023-06-01'`));
  assert.ok(command.includes(`-H 'Content-Type: application/json'`));
});

test('shell quoting and the JSON copy', () => {
  assert.equal(shellQuote("a'b"), `'a'\\''b'`);
  assert.equal(bodyJson({ body: { a: [1] } }), '{\n  "a": [\n    1\n  ]\n}');
  assert.equal(bodyJson({}), 'null');
});
