// Server-sent events over fetch: EventSource can neither POST nor send an Authorization header,
// so Bridle's pages read the response body themselves.
//
// Exports:
//   readEvents(response, onEvent, signal?)  reads response.body to its end, calling
//       onEvent({event, data}) for each event (`event` defaults to "message"; `data` is the
//       JSON-parsed data, or the raw string when it is not JSON). Comment lines
//       (": keep-alive") are skipped. UTF-8 split across reads and CRLF/CR/LF endings are
//       handled. Resolves when the stream ends; rejects when reading fails or signal aborts.
//   parseEvents()  a stateful parser: push(textChunk) → events completed so far (for tests).

export function parseEvents() {
  let buffer = '';
  let event = '';
  let data = [];
  function line(text, out) {
    if (text === '') {
      if (data.length > 0) {
        const raw = data.join('\n');
        let parsed = raw;
        try {
          parsed = JSON.parse(raw);
        } catch {
          // not JSON: keep the text
        }
        out.push({ event: event || 'message', data: parsed });
      }
      event = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return {
    push(chunk) {
      buffer += chunk;
      const out = [];
      let start = 0;
      for (let i = 0; i < buffer.length; i += 1) {
        const c = buffer[i];
        if (c === '\n' || c === '\r') {
          // A CR at the very end may be the first half of a CRLF: wait for more.
          if (c === '\r' && i === buffer.length - 1) break;
          line(buffer.slice(start, i), out);
          if (c === '\r' && buffer[i + 1] === '\n') i += 1;
          start = i + 1;
        }
      }
      buffer = buffer.slice(start);
      return out;
    },
  };
}

export async function readEvents(response, onEvent, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder('utf-8');
  const parser = parseEvents();
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', abort, { once: true });
  try {
    for (;;) {
      if (signal?.aborted) throw new DOMException('aborted', 'AbortError');
      const { value, done } = await reader.read();
      const chunk = done ? decoder.decode() + '\n\n' : decoder.decode(value, { stream: true });
      for (const e of parser.push(chunk)) onEvent(e);
      if (done) return;
    }
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}
