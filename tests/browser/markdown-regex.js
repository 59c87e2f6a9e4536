// TEST REFERENCE ONLY — not served, not for use. web/shared/markdown.js as it was at commit
// 8fb30e2: the regular-expression renderer (its lazy patterns are quadratic on unmatched
// openers, its heading pattern cubic on long runs of spaces), kept unchanged below so that
// markdown.test.mjs can check the page's renderer still renders short random strings exactly
// as it did.
//
// A safe Markdown subset renderer, written for Bridle: it builds DOM nodes with textContent and
// never parses HTML, so markup in a model's reply (<script>, <img onerror=…>) shows as text.
//
// Exports:
//   markdown(source)   DocumentFragment. Blocks: ATX headings (#…######, shown as h3–h6),
//                      fenced code (``` or ~~~, an unclosed fence runs to the end — streaming),
//                      bullet and numbered lists (nested by indentation), block quotes,
//                      thematic breaks, paragraphs (single newlines kept as line breaks).
//                      Inline: `code`, **bold**, __bold__, *italic*, _italic_, ~~strike~~,
//                      [text](url) and bare http(s) URLs — links only for http, https and
//                      mailto, opened with rel="noopener noreferrer" — and backslash escapes.
//   inline(source)     the inline nodes of one line of text, as an array.

const FENCE = /^ {0,3}(```+|~~~+)\s*([\w+.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const BULLET = /^( {0,3})[-*+]\s+(.*)$/;
const NUMBERED = /^( {0,3})(\d{1,9})[.)]\s+(.*)$/;
// Inline text longer than this is shown as plain text (keeps the lazy patterns linear enough).
const INLINE_LIMIT = 20000;
const MAX_DEPTH = 8;

const INLINE =
  /(`+)([^`][\s\S]*?)\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__(?!\w)|\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])|~~(?=\S)([\s\S]*?\S)~~|\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"\n]*")?\s*\)|(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"*_~])|\\([\\`*_{}[\]()#+\-.!~>|])/g;

function linkHref(url) {
  let parsed;
  try {
    parsed = new URL(url, document.baseURI);
  } catch {
    return null;
  }
  return ['http:', 'https:', 'mailto:'].includes(parsed.protocol) ? parsed.href : null;
}

function link(href, children) {
  const a = document.createElement('a');
  a.setAttribute('href', href);
  a.setAttribute('rel', 'noopener noreferrer nofollow');
  a.setAttribute('target', '_blank');
  for (const c of children) a.appendChild(c);
  return a;
}

function wrap(tag, children) {
  const node = document.createElement(tag);
  for (const c of children) node.appendChild(c);
  return node;
}

export function inline(source, depth = 0) {
  const src = String(source ?? '');
  if (src.length > INLINE_LIMIT || depth > MAX_DEPTH) return [document.createTextNode(src)];
  const out = [];
  let last = 0;
  INLINE.lastIndex = 0;
  const re = new RegExp(INLINE.source, 'g');
  let m;
  while ((m = re.exec(src)) !== null) {
    if (m.index > last) out.push(document.createTextNode(src.slice(last, m.index)));
    last = re.lastIndex;
    if (m[1] !== undefined) {
      const code = document.createElement('code');
      code.textContent = m[2].replace(/^ (.*) $/s, '$1');
      out.push(code);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      out.push(wrap('strong', inline(m[3] ?? m[4], depth + 1)));
    } else if (m[5] !== undefined || m[6] !== undefined) {
      out.push(wrap('em', inline(m[5] ?? m[6], depth + 1)));
    } else if (m[7] !== undefined) {
      out.push(wrap('del', inline(m[7], depth + 1)));
    } else if (m[8] !== undefined) {
      const href = linkHref(m[9]);
      const label = inline(m[8] || m[9], depth + 1);
      if (href) out.push(link(href, label));
      else out.push(...label);
    } else if (m[10] !== undefined) {
      const href = linkHref(m[10]);
      out.push(href ? link(href, [document.createTextNode(m[10])]) : document.createTextNode(m[10]));
    } else if (m[11] !== undefined) {
      out.push(document.createTextNode(m[11]));
    }
  }
  if (last < src.length) out.push(document.createTextNode(src.slice(last)));
  return out;
}

function paragraph(lines, depth) {
  const p = document.createElement('p');
  lines.forEach((line, i) => {
    if (i > 0) p.appendChild(document.createElement('br'));
    for (const n of inline(line.trim(), depth)) p.appendChild(n);
  });
  return p;
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

// A list starting at lines[i]: items are marker lines at the list's indentation; the lines after
// an item that are indented deeper (or blank between such lines) belong to it.
function list(lines, start, ordered, depth) {
  const pattern = ordered ? NUMBERED : BULLET;
  const first = lines[start].match(pattern);
  const base = first[1].length;
  const node = document.createElement(ordered ? 'ol' : 'ul');
  if (ordered && first[2] !== '1') node.setAttribute('start', String(Number(first[2])));
  let i = start;
  while (i < lines.length) {
    const m = lines[i].match(pattern);
    if (!m || m[1].length !== base) break;
    const body = [ordered ? m[3] : m[2]];
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      if (line.trim() === '') {
        const next = lines[i + 1];
        if (next !== undefined && next.trim() !== '' && indentOf(next) > base) {
          body.push('');
          i += 1;
          continue;
        }
        break;
      }
      if (indentOf(line) <= base && (BULLET.test(line) || NUMBERED.test(line))) break;
      if (indentOf(line) <= base && body.length > 0 && indentOf(line) === 0 && isBlockStart(line)) break;
      body.push(line.slice(Math.min(indentOf(line), base + 2)));
      i += 1;
    }
    const li = document.createElement('li');
    if (body.length === 1) {
      for (const n of inline(body[0].trim(), depth)) li.appendChild(n);
    } else {
      li.appendChild(blocks(body, depth + 1));
    }
    node.appendChild(li);
    while (i < lines.length && lines[i].trim() === '' && lines[i + 1] !== undefined && pattern.test(lines[i + 1]) && lines[i + 1].match(pattern)[1].length === base) i += 1;
  }
  return { node, next: i };
}

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || BULLET.test(line) || NUMBERED.test(line);
}

function blocks(lines, depth) {
  const frag = document.createDocumentFragment();
  if (depth > MAX_DEPTH) {
    const p = document.createElement('p');
    p.textContent = lines.join('\n');
    frag.appendChild(p);
    return frag;
  }
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const fence = line.match(FENCE);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[1][0].repeat(fence[1].length)) && lines[i].trim().replace(/[`~]/g, '') === '')) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1;
      const pre = document.createElement('pre');
      const code = document.createElement('code');
      if (fence[2]) code.dataset.language = fence[2];
      code.textContent = body.join('\n');
      pre.appendChild(code);
      frag.appendChild(pre);
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      const h = document.createElement(`h${Math.min(heading[1].length + 2, 6)}`);
      for (const n of inline(heading[2] || '', depth)) h.appendChild(n);
      frag.appendChild(h);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      frag.appendChild(document.createElement('hr'));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        body.push(lines[i].match(QUOTE)[1]);
        i += 1;
      }
      const quote = document.createElement('blockquote');
      quote.appendChild(blocks(body, depth + 1));
      frag.appendChild(quote);
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      const { node, next } = list(lines, i, !BULLET.test(line), depth);
      frag.appendChild(node);
      i = next;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() !== '' && (para.length === 0 || !isBlockStart(lines[i]))) {
      para.push(lines[i]);
      i += 1;
    }
    frag.appendChild(paragraph(para, depth));
  }
  return frag;
}

export function markdown(source) {
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  return blocks(lines, 0);
}
