// curl.js — a stored request payload ({provider, url, headers, body}) as a curl command that
// sends the same request to the provider again. Stored credentials are "[REDACTED]"; the
// command reads the key from the environment ($OPENAI_API_KEY, or $ANTHROPIC_API_KEY for
// Anthropic) and never holds a secret.

const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'api-key', 'proxy-authorization']);
const SKIPPED_HEADERS = new Set(['content-length', 'host', 'connection', 'transfer-encoding']);
const END = 'BRIDLE_JSON';

/** Single-quotes a word for a POSIX shell. */
export function shellQuote(text) {
  return `'${String(text).replace(/'/g, `'\\''`)}'`;
}

/** The environment variable the key of a provider kind is read from. */
export function keyVariable(provider) {
  return provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
}

/** The request body, pretty-printed: what "Copy JSON" copies. */
export function bodyJson(payload) {
  return JSON.stringify(payload?.body ?? null, null, 2);
}

/** The curl command for a stored payload (multi-line, body in a quoted here-document). */
export function curlCommand(payload) {
  const variable = keyVariable(payload.provider);
  const lines = [`curl -sS${payload.body?.stream ? ' -N' : ''} -X POST ${shellQuote(payload.url)}`];
  let contentType = false;
  for (const [name, raw] of Object.entries(payload.headers || {})) {
    const lower = name.toLowerCase();
    const value = typeof raw === 'string' ? raw : JSON.stringify(raw);
    if (SKIPPED_HEADERS.has(lower)) continue;
    if (lower === 'content-type') contentType = true;
    if (SECRET_HEADERS.has(lower) || value.includes('[REDACTED]')) {
      // Keep the scheme ("Bearer") when the stored value had one.
      const scheme = /^(\S+)\s+\[REDACTED\]$/.exec(value)?.[1];
      lines.push(`-H ${shellQuote(`${name}: ${scheme ? `${scheme} ` : ''}`)}"$${variable}"`);
    } else {
      lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
    }
  }
  if (!contentType) lines.push(`-H 'Content-Type: application/json'`);
  lines.push(`--data-binary @- <<'${END}'`);
  return `${lines.join(' \\\n  ')}\n${bodyJson(payload)}\n${END}\n`;
}
