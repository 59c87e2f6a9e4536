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
//                      Nesting deeper than 8 levels is shown as plain text.
//   inline(source)     the inline nodes of one line of text, as an array.
//   liveMarkdown(container)  for a reply that grows while it streams: update(source) gives
//                      container the children markdown(source) would, keeping the nodes of the
//                      blocks that text appended later can no longer change and rendering only
//                      the rest (the last, open block or two) again.
//   work               {steps}: a count of the characters the passes looked at; the browser
//                      tests check it grows linearly with the input (they never time it).
//
// Why hand-written: the pages have no build step and no dependencies, so no Markdown library
// can be used. Why this way: the first version matched each line with one regular expression
// whose lazy groups rescanned to the end of the line from every unmatched opener (quadratic:
// 20,000 characters of `**a ` took 200 ms in Chromium, of `` ` `` or `[a](` 90 ms, redone every
// 30 ms while a reply streamed), and its heading pattern backtracked cubically on a long run of
// spaces (4,000 took 5.4 s). This scanner keeps that version's exact results — at each
// position the same constructs are tried in the same order, each ends at its first possible
// closer — but each kind of closer is found by a cursor that only moves forward (or, for code
// spans, from a table of the backtick runs), so a line costs a few passes at each nesting level.
// (A CommonMark-style delimiter stack would have changed results: there a code span wins over
// an emphasis opened before it.) Line kinds are recognised by plain loops for the same reason.
// Without the quadratic cost there is no length limit any more (inline text past 20,000
// characters used to be shown as plain text).

const MAX_DEPTH = 8;

export const work = { steps: 0 };

const BACKTICK = 0x60;
const STAR = 0x2a;
const UNDERSCORE = 0x5f;
const TILDE = 0x7e;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const LPAREN = 0x28;
const RPAREN = 0x29;
const LT = 0x3c;
const GT = 0x3e;
const QUOTE_MARK = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;
const SPACE = 0x20;
const HASH = 0x23;
const H = 0x68;
const ESCAPABLE = new Set('\\`*_{}[]()#+-.!~>|');
// Characters a bare URL does not end with (sentence punctuation and emphasis markers).
const TRAILING = new Set('.,;:!?\'"*_~');

// JavaScript's \s: white space and line terminators (NaN, past either end, is neither).
function isSpace(c) {
  return (
    c === SPACE || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

// JavaScript's \w.
function isWord(c) {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === UNDERSCORE;
}

// The characters `.` does not match.
function isLineEnd(c) {
  return c === NEWLINE || c === 0x0d || c === 0x2028 || c === 0x2029;
}

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

function text(value) {
  return document.createTextNode(value);
}

// What the closers are, each a test at position q of s (charCodeAt is NaN past either end).
const at = (s, q) => s.charCodeAt(q);
const CLOSES = [
  // **bold**: ** after a non-space.
  (s, q) => at(s, q) === STAR && at(s, q + 1) === STAR && !isSpace(at(s, q - 1)),
  // *italic*: * after neither a space nor *.
  (s, q) => at(s, q) === STAR && !isSpace(at(s, q - 1)) && at(s, q - 1) !== STAR,
  // __bold__: __ after a non-space, not before a word character.
  (s, q) => at(s, q) === UNDERSCORE && at(s, q + 1) === UNDERSCORE && !isSpace(at(s, q - 1)) && !isWord(at(s, q + 2)),
  // _italic_: _ after neither a space nor _, not before a word character.
  (s, q) => at(s, q) === UNDERSCORE && !isSpace(at(s, q - 1)) && at(s, q - 1) !== UNDERSCORE && !isWord(at(s, q + 1)),
  // ~~strike~~: ~~ after a non-space.
  (s, q) => at(s, q) === TILDE && at(s, q + 1) === TILDE && !isSpace(at(s, q - 1)),
  // The end of a link's label: ] (a line break ends the search).
  (s, q) => at(s, q) === RBRACKET || at(s, q) === NEWLINE,
  // The end of a link's URL.
  (s, q) => at(s, q) === RPAREN || at(s, q) === GT || isSpace(at(s, q)),
  // The end of a link's title: " (a line break ends the search).
  (s, q) => at(s, q) === QUOTE_MARK || at(s, q) === NEWLINE,
  // The end of a bare URL (before trailing punctuation is taken off).
  (s, q) => { const c = at(s, q); return isSpace(c) || c === LT || c === GT || c === LPAREN || c === RPAREN; },
  // Past white space: before the URL, before the title, before the ) after it.
  (s, q) => !isSpace(at(s, q)),
  (s, q) => !isSpace(at(s, q)),
  (s, q) => !isSpace(at(s, q)),
];
const [BOLD, ITALIC, UBOLD, UITALIC, STRIKE, LABEL_END, URL_END, TITLE_END, BARE_END, URL_AT, TITLE_AT, PAREN_AT] = CLOSES.keys();

// Which characters can start a construct.
const OPENS = new Uint8Array(128);
for (const c of [BACKTICK, STAR, UNDERSCORE, TILDE, LBRACKET, H, BACKSLASH]) OPENS[c] = 1;

// The first position ≥ from where CLOSES[kind] holds in src, or src.length. Asked with positions
// that never decrease, it resumes where it stopped, so all its answers cost O(n) together.
class Cursor {
  constructor(src, kind) {
    this.src = src;
    this.test = CLOSES[kind];
    this.asked = 0;
    this.found = -1;
  }

  next(from) {
    if (from < this.asked) this.found = -1;
    this.asked = from;
    if (this.found >= from) return this.found;
    const { src, test } = this;
    let q = from;
    while (q < src.length && !test(src, q)) q += 1;
    work.steps += q - from + 1;
    this.found = q;
    return q;
  }
}

// The backtick runs of src: starts, ends, and for code spans, after run i, the longest later run
// (longest[i + 1]) and the next longer run (longer[i]).
function backtickRuns(src) {
  const starts = [];
  const ends = [];
  for (let i = 0; i < src.length; i += 1) {
    if (src.charCodeAt(i) !== BACKTICK) continue;
    const start = i;
    while (i < src.length && src.charCodeAt(i) === BACKTICK) i += 1;
    starts.push(start);
    ends.push(i);
  }
  work.steps += src.length;
  const count = starts.length;
  const len = (j) => ends[j] - starts[j];
  const longest = new Array(count + 1).fill(0);
  const longer = new Array(count).fill(count);
  const stack = [];
  for (let j = count - 1; j >= 0; j -= 1) {
    longest[j] = Math.max(longest[j + 1], len(j));
    while (stack.length && len(stack[stack.length - 1]) <= len(j)) stack.pop();
    if (stack.length) longer[j] = stack[stack.length - 1];
    stack.push(j);
  }
  return { starts, ends, longest, longer, len, at: 0 };
}

// One line (or label, or emphasis content) at one nesting level: the old pattern's alternatives,
// tried at each position in the same order, each ending at its first possible closer.
class Scanner {
  constructor(src, depth) {
    this.src = src;
    this.n = src.length;
    this.depth = depth;
    this.cursors = [];
    this.runs = null;
    this.tailAt = -1;
    this.tail = null;
    this.afterAt = -1;
    this.afterEnd = -1;
  }

  find(kind, from) {
    const cursor = (this.cursors[kind] ??= new Cursor(this.src, kind));
    return cursor.next(from);
  }

  nested(from, to) {
    return inline(this.src.slice(from, to), this.depth + 1);
  }

  // `code`: at p inside a backtick run with k backticks left, the opener is the last k' ≤ k of
  // them where k' is the longest a later run can close; the closer is the first such run.
  code(p) {
    const runs = (this.runs ??= backtickRuns(this.src));
    while (runs.ends[runs.at] <= p) runs.at += 1;
    const i = runs.at;
    const k = Math.min(runs.ends[i] - p, runs.longest[i + 1]);
    if (k === 0) return { skip: runs.ends[i] };
    let j = i + 1;
    while (runs.len(j) < k) {
      j = runs.longer[j];
      work.steps += 1;
    }
    const node = document.createElement('code');
    node.textContent = this.src.slice(runs.ends[i], runs.ends[j] - k).replace(/^ (.*) $/s, '$1');
    return { start: runs.ends[i] - k, end: runs.ends[j], nodes: [node] };
  }

  // A delimiter `open` characters long at p, before a non-space: the content is src[p + open, q)
  // for the first q ≥ p + open + 1 where the closer `kind` is.
  pair(p, open, kind, tag) {
    const s = this.src;
    if (p + open >= this.n || isSpace(at(s, p + open))) return null;
    const q = this.find(kind, p + open + 1);
    if (q >= this.n) return null;
    return { start: p, end: q + open, nodes: [wrap(tag, this.nested(p + open, q))] };
  }

  star(p) {
    if (at(this.src, p + 1) === STAR) return this.pair(p, 2, BOLD, 'strong');
    return this.pair(p, 1, ITALIC, 'em');
  }

  underscore(p) {
    const s = this.src;
    if (at(s, p + 1) === UNDERSCORE) return this.pair(p, 2, UBOLD, 'strong');
    return isWord(at(s, p - 1)) ? null : this.pair(p, 1, UITALIC, 'em');
  }

  strike(p) {
    return at(this.src, p + 1) === TILDE ? this.pair(p, 2, STRIKE, 'del') : null;
  }

  // After a link's URL ending at e: an optional `>`, an optional "title" after white space,
  // white space, `)`. The end of the link, or -1. Links sharing a URL end share this answer.
  afterUrl(e) {
    if (e === this.afterAt) return this.afterEnd;
    const s = this.src;
    const pos = at(s, e) === GT ? e + 1 : e;
    const q = this.find(TITLE_AT, pos);
    let end = at(s, q) === RPAREN ? q + 1 : -1;
    if (q > pos && at(s, q) === QUOTE_MARK) {
      const c = this.find(TITLE_END, q + 1);
      if (at(s, c) === QUOTE_MARK) {
        const close = this.find(PAREN_AT, c + 1);
        if (at(s, close) === RPAREN) end = close + 1;
      }
    }
    this.afterAt = e;
    this.afterEnd = end;
    return end;
  }

  // The part of [label](url) after `](` at t: white space, the URL (inside <> or not), the rest:
  // {url, end}, or null.
  linkTail(t) {
    if (t === this.tailAt) return this.tail;
    const s = this.src;
    this.tailAt = t;
    this.tail = null;
    const w = this.find(URL_AT, t);
    if (w >= this.n) return null;
    const e = this.find(URL_END, w);
    const from = at(s, w) === LT && e > w + 1 ? w + 1 : w;
    if (e <= from) return null;
    const end = this.afterUrl(e);
    if (end >= 0) this.tail = { url: s.slice(from, e), end };
    return this.tail;
  }

  bracket(p) {
    const s = this.src;
    const r = this.find(LABEL_END, p + 1);
    if (at(s, r) !== RBRACKET || at(s, r + 1) !== LPAREN) return null;
    const found = this.linkTail(r + 2);
    if (!found) return null;
    const href = linkHref(found.url);
    const label = r > p + 1 ? this.nested(p + 1, r) : inline(found.url, this.depth + 1);
    return { start: p, end: found.end, nodes: href ? [link(href, label)] : label };
  }

  bareUrl(p) {
    const s = this.src;
    let start;
    if (s.startsWith('https://', p)) start = p + 8;
    else if (s.startsWith('http://', p)) start = p + 7;
    else return null;
    let end = this.find(BARE_END, start);
    while (end > start && TRAILING.has(s[end - 1])) {
      end -= 1;
      work.steps += 1;
    }
    if (end === start) return null;
    const url = s.slice(p, end);
    const href = linkHref(url);
    return { start: p, end, nodes: [href ? link(href, [text(url)]) : text(url)] };
  }

  // The construct starting at p, if any: {start, end, nodes}; {skip} passes a backtick run.
  match(p, c) {
    if (c === BACKTICK) return this.code(p);
    if (c === STAR) return this.star(p);
    if (c === UNDERSCORE) return this.underscore(p);
    if (c === TILDE) return this.strike(p);
    if (c === LBRACKET) return this.bracket(p);
    if (c === H) return this.bareUrl(p);
    const next = this.src[p + 1];
    return next !== undefined && ESCAPABLE.has(next) ? { start: p, end: p + 2, nodes: [text(next)] } : null;
  }

  run() {
    const { src, n } = this;
    const out = [];
    let last = 0;
    let p = 0;
    while (p < n) {
      work.steps += 1;
      const c = src.charCodeAt(p);
      const m = c < 128 && OPENS[c] === 1 ? this.match(p, c) : null;
      if (m === null) {
        p += 1;
      } else if (m.skip) {
        p = m.skip;
      } else {
        if (m.start > last) out.push(text(src.slice(last, m.start)));
        for (const node of m.nodes) out.push(node);
        p = m.end;
        last = p;
      }
    }
    if (last < n) out.push(text(src.slice(last)));
    return out;
  }
}

export function inline(source, depth = 0) {
  const src = String(source ?? '');
  if (depth > MAX_DEPTH) return [text(src)];
  return new Scanner(src, depth).run();
}

// ---- Line kinds. Each returns what the block pass needs, or null; each counts what it reads.

// The number of leading spaces, if at most three (else -1).
function indentUpTo3(line) {
  let i = 0;
  while (i < 4 && line.charCodeAt(i) === SPACE) i += 1;
  work.steps += i + 1;
  return i <= 3 ? i : -1;
}

// The end of the run of `is` characters from i.
function skip(line, i, is) {
  let j = i;
  while (j < line.length && is(line.charCodeAt(j))) j += 1;
  work.steps += j - i + 1;
  return j;
}

const isHash = (c) => c === HASH;
const notLineEnd = (c) => !isLineEnd(c);
const isDigit = (c) => c >= 0x30 && c <= 0x39;
const isInfo = (c) => isWord(c) || c === 0x2b || c === 0x2e || c === 0x2d;

// ``` or ~~~ (three or more), an optional language word, nothing else: {marker, language}.
function fenceOf(line) {
  const i = indentUpTo3(line);
  const c = line.charCodeAt(i);
  if (i < 0 || (c !== BACKTICK && c !== TILDE)) return null;
  const j = skip(line, i, (d) => d === c);
  if (j - i < 3) return null;
  const k = skip(line, j, isSpace);
  const l = skip(line, k, isInfo);
  if (skip(line, l, isSpace) !== line.length) return null;
  return { marker: line.slice(i, j), language: line.slice(k, l) };
}

// Where a heading's closing sequence — spaces, #s, spaces to the end of the line — begins
// (not before `from`).
function closingOf(line, from) {
  let closing = line.length;
  while (closing > from && isSpace(line.charCodeAt(closing - 1))) closing -= 1;
  while (closing > from && line.charCodeAt(closing - 1) === HASH) closing -= 1;
  while (closing > from && isSpace(line.charCodeAt(closing - 1))) closing -= 1;
  work.steps += line.length - closing + 1;
  return closing;
}

// #…###### and the heading's text: {level, text}. The closing sequence is not text; seven or
// more #s are a heading only when nothing but #s and spaces follows them.
function headingOf(line) {
  const i = indentUpTo3(line);
  if (i < 0 || line.charCodeAt(i) !== HASH) return null;
  const r = skip(line, i, isHash);
  const closing = closingOf(line, i);
  if (r - i <= 6) {
    const a = skip(line, r, isSpace);
    if (a > r && closing <= skip(line, a, notLineEnd)) return { level: r - i, text: line.slice(a, Math.max(a, closing)) };
    if (r >= closing) return { level: r - i, text: '' };
  }
  const level = Math.min(r - i - 1, 6);
  return level >= 1 && i + level >= closing ? { level, text: '' } : null;
}

// Three or more -, * or _ (the same one), with spaces between.
function isRule(line) {
  const i = indentUpTo3(line);
  const c = line.charCodeAt(i);
  if (i < 0 || (c !== 0x2d && c !== STAR && c !== UNDERSCORE)) return false;
  let count = 0;
  const end = skip(line, i, (d) => {
    if (d === c) count += 1;
    return d === c || isSpace(d);
  });
  return end === line.length && count >= 3;
}

// > and the quoted line.
function quoteOf(line) {
  const i = indentUpTo3(line);
  if (i < 0 || line.charCodeAt(i) !== GT) return null;
  const a = line.charCodeAt(i + 1) === SPACE ? i + 2 : i + 1;
  return skip(line, a, notLineEnd) === line.length ? line.slice(a) : null;
}

// After a list marker ending at m: white space (at least one), then the item's text.
function itemText(line, m) {
  const a = skip(line, m, isSpace);
  return a > m && skip(line, a, notLineEnd) === line.length ? line.slice(a) : null;
}

// -, * or + and text: {indent, text}.
function bulletOf(line) {
  const i = indentUpTo3(line);
  const c = line.charCodeAt(i);
  if (i < 0 || (c !== 0x2d && c !== STAR && c !== 0x2b)) return null;
  const body = itemText(line, i + 1);
  return body === null ? null : { indent: i, text: body };
}

// 1. or 1) (up to nine digits) and text: {indent, number, text}.
function numberedOf(line) {
  const i = indentUpTo3(line);
  if (i < 0) return null;
  const j = skip(line, i, isDigit);
  const c = line.charCodeAt(j);
  if (j === i || j - i > 9 || (c !== 0x2e && c !== RPAREN)) return null;
  const body = itemText(line, j + 1);
  return body === null ? null : { indent: i, number: line.slice(i, j), text: body };
}

function isBlockStart(line) {
  return fenceOf(line) !== null || headingOf(line) !== null || isRule(line) || quoteOf(line) !== null ||
    bulletOf(line) !== null || numberedOf(line) !== null;
}

// ---- Blocks.

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

// A list starting at lines[start]: items are marker lines at the list's indentation; the lines
// after an item that are indented deeper (or blank between such lines) belong to it.
function list(lines, start, ordered, depth) {
  const itemOf = ordered ? numberedOf : bulletOf;
  const sameList = (line) => line !== undefined && itemOf(line)?.indent === base;
  const first = itemOf(lines[start]);
  const base = first.indent;
  const node = document.createElement(ordered ? 'ol' : 'ul');
  if (ordered && first.number !== '1') node.setAttribute('start', String(Number(first.number)));
  let i = start;
  while (i < lines.length && sameList(lines[i])) {
    const body = [itemOf(lines[i]).text];
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
      if (indentOf(line) <= base && (bulletOf(line) !== null || numberedOf(line) !== null)) break;
      if (indentOf(line) === 0 && isBlockStart(line)) break;
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
    while (i < lines.length && lines[i].trim() === '' && sameList(lines[i + 1])) i += 1;
  }
  return { node, next: i };
}

// A fenced code block opening at lines[start]; it ends at a line of at least as many of the same
// marker, or runs to the end.
function fencedCode(lines, start, fence) {
  const closing = fence.marker[0].repeat(fence.marker.length);
  const body = [];
  let i = start + 1;
  while (i < lines.length && !(lines[i].trim().startsWith(closing) && lines[i].trim().replace(/[`~]/g, '') === '')) {
    body.push(lines[i]);
    i += 1;
  }
  const pre = document.createElement('pre');
  const code = document.createElement('code');
  if (fence.language) code.dataset.language = fence.language;
  code.textContent = body.join('\n');
  pre.appendChild(code);
  return { node: pre, next: i + 1 };
}

// The block starting at lines[i] (not blank): {node, next}, next the index after its last line.
function block(lines, i, depth) {
  const line = lines[i];
  const fence = fenceOf(line);
  if (fence) return fencedCode(lines, i, fence);
  const heading = headingOf(line);
  if (heading) {
    const h = document.createElement(`h${Math.min(heading.level + 2, 6)}`);
    for (const n of inline(heading.text, depth)) h.appendChild(n);
    return { node: h, next: i + 1 };
  }
  if (isRule(line)) return { node: document.createElement('hr'), next: i + 1 };
  const quoted = quoteOf(line);
  if (quoted !== null) {
    const body = [quoted];
    let next = i + 1;
    for (let q; next < lines.length && (q = quoteOf(lines[next])) !== null; next += 1) body.push(q);
    const quote = document.createElement('blockquote');
    quote.appendChild(blocks(body, depth + 1));
    return { node: quote, next };
  }
  const bullet = bulletOf(line) !== null;
  if (bullet || numberedOf(line) !== null) return list(lines, i, !bullet, depth);
  const para = [];
  let next = i;
  while (next < lines.length && lines[next].trim() !== '' && (para.length === 0 || !isBlockStart(lines[next]))) {
    para.push(lines[next]);
    next += 1;
  }
  return { node: paragraph(para, depth), next };
}

// Calls emit(node, next) for each block from lines[from] on.
function eachBlock(lines, from, depth, emit) {
  let i = from;
  while (i < lines.length) {
    if (lines[i].trim() === '') {
      i += 1;
      continue;
    }
    const { node, next } = block(lines, i, depth);
    emit(node, next);
    i = next;
  }
}

function blocks(lines, depth) {
  const frag = document.createDocumentFragment();
  if (depth > MAX_DEPTH) {
    const p = document.createElement('p');
    p.textContent = lines.join('\n');
    frag.appendChild(p);
    return frag;
  }
  eachBlock(lines, 0, depth, (node) => frag.appendChild(node));
  return frag;
}

function linesOf(source) {
  return String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
}

export function markdown(source) {
  return blocks(linesOf(source), 0);
}

// A block is final once the line after its end and the one after that are complete (the last
// line may still grow): no block's extent depends on a line further on — a paragraph or quote
// ends at the line after it, a list looks one line past a blank one, a fence ends at its closing
// line. The lines before `kept` are rendered for good; the nodes in `open` are redone.
export function liveMarkdown(container) {
  let source = null;
  let kept = 0;
  let open = [];
  return {
    update(next) {
      const src = String(next ?? '');
      if (source === null || !src.startsWith(source)) {
        while (container.firstChild) container.removeChild(container.firstChild);
        kept = 0;
        open = [];
      }
      for (const node of open) node.remove();
      open = [];
      source = src;
      const lines = linesOf(src);
      const final = lines.length - 3;
      eachBlock(lines, kept, 0, (node, end) => {
        container.appendChild(node);
        if (open.length === 0 && end <= final) kept = end;
        else open.push(node);
      });
    },
  };
}
