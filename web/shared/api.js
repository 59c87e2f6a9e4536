// The Bridle HTTP API from a page: every call sends `Authorization: Bearer KEY`, and an error
// answer ({"error": {"message", "type", "code"}}) becomes a thrown ApiError with that message.
//
// Exports:
//   ApiError                 Error with .status (HTTP), .code and .type from the error body
//   client(key, base = '')   {get(path, query?), post(path, body?), request(method, path,
//                            {body, query, headers, signal}), stream(path, body, onEvent,
//                            {signal})} — JSON in and out; stream() POSTs with
//                            Accept: text/event-stream and calls onEvent({event, data}) per
//                            server-sent event (see sse.js); resolves when the stream ends
//   keyStore(name)           {get(), set(key), clear()} over sessionStorage (a key lives as long
//                            as the tab, never in localStorage)

import { readEvents } from './sse.js';

export class ApiError extends Error {
  constructor(status, message, code = null, type = null, requestId = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    // The answer's x-request-id, for the user to quote when reporting the failure.
    this.requestId = requestId;
    this.code = code;
    this.type = type;
  }
}

async function errorFrom(response) {
  let message = `${response.status} ${response.statusText}`.trim();
  let code = null;
  let type = null;
  let requestId = response.headers.get('x-request-id');
  try {
    const body = await response.json();
    if (body && body.error) {
      message = body.error.message || message;
      code = body.error.code ?? null;
      type = body.error.type ?? null;
      if (typeof body.error.request_id === 'string') requestId = body.error.request_id;
    }
  } catch {
    // not a JSON error body: keep the status line
  }
  return new ApiError(response.status, message, code, type, requestId);
}

function withQuery(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
}

export function client(key, base = '') {
  async function send(method, path, { body, query, headers = {}, signal } = {}) {
    const init = {
      method,
      headers: { Authorization: `Bearer ${key}`, ...headers },
      signal,
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(base + withQuery(path, query), init);
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      throw new ApiError(0, `cannot reach the server: ${error.message}`, 'network');
    }
    if (!response.ok) throw await errorFrom(response);
    return response;
  }
  async function request(method, path, options = {}) {
    const response = await send(method, path, options);
    if (response.status === 204) return null;
    const type = response.headers.get('content-type') || '';
    return type.includes('application/json') ? response.json() : response.text();
  }
  return {
    request,
    get: (path, query, options = {}) => request('GET', path, { ...options, query }),
    post: (path, body, options = {}) => request('POST', path, { ...options, body }),
    async stream(path, body, onEvent, { signal } = {}) {
      const response = await send('POST', path, {
        body,
        signal,
        headers: { Accept: 'text/event-stream' },
      });
      await readEvents(response, onEvent, signal);
    },
  };
}

export function keyStore(name) {
  return {
    get: () => sessionStorage.getItem(name),
    set: (key) => sessionStorage.setItem(name, key),
    clear: () => sessionStorage.removeItem(name),
  };
}
