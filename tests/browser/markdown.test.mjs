// The Markdown renderer (web/shared/markdown.js) in headless Chromium, imported by the chat page
// from the real `bridle serve`: every construct renders as it did before the linear scanner
// replaced the regular expressions (literal expectations, and on random strings the replaced
// renderer, kept as markdown-regex.js); lines of 20,000 and 200,000 hostile characters render
// right with work growing linearly (the module's step counter — never a clock); the streaming
// renderer matches a full render at every step and keeps the blocks already finished, also in
// the chat page while a reply streams.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, USER_KEY, newPage, signIn, withBridle } from './harness.mjs';

// Opens the chat page with the renderer loaded as window.md, html(nodes) to serialise its
// output, and (with oracle) the replaced regex renderer as window.regexMd.
async function open(browser, bridle, { oracle = false } = {}) {
  const page = await newPage(browser);
  await page.goto(`${bridle.url}/`);
  await page.evaluate(async () => {
    window.md = await import('/assets/shared/markdown.js');
    window.html = (nodes) => {
      const div = document.createElement('div');
      div.append(...nodes);
      return div.innerHTML;
    };
  });
  if (oracle) {
    const source = readFileSync(join(ROOT, 'tests', 'browser', 'markdown-regex.js'), 'utf8').replace(/^export /gm, '');
    await page.evaluate(`(() => { ${source}\nwindow.regexMd = { markdown, inline }; })()`);
  }
  return page;
}

// A deterministic pseudo-random source (the same strings on every run).
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

// Written with the regex renderer and checked against it before the scanner replaced it;
// ORIGIN stands for the server's address (relative links resolve against the page).
const INLINE_CASES = [
  ["plain words, nothing else", "plain words, nothing else"],
  ["`code` and `more code`", "<code>code</code> and <code>more code</code>"],
  ["`` a`b ``", "<code>a`b</code>"],
  ["` padded `", "<code>padded</code>"],
  ["`  `", "<code></code>"],
  ["``a`", "`<code>a</code>"],
  ["`a``", "<code>a`</code>"],
  ["```a``b```", "<code>a``b</code>"],
  ["`unclosed", "`unclosed"],
  ["`<b>not bold</b>`", "<code>&lt;b&gt;not bold&lt;/b&gt;</code>"],
  ["**bold** and __bold__", "<strong>bold</strong> and <strong>bold</strong>"],
  ["*italic* and _italic_", "<em>italic</em> and <em>italic</em>"],
  ["~~strike~~", "<del>strike</del>"],
  ["**bold *italic* ~~strike~~ `code`**", "<strong>bold <em>italic</em> <del>strike</del> <code>code</code></strong>"],
  ["*a **b** c*", "<em>a **b</em>* c*"],
  ["***both***", "<strong>*both</strong>*"],
  ["_a __b__ c_", "<em>a <strong>b</strong> c</em>"],
  ["__init__.py and snake_case_name", "<strong>init</strong>.py and snake_case_name"],
  ["** not bold** and * not italic*", "** not bold** and * not italic*"],
  ["a * b * c and 2*3*4", "a * b * c and 2<em>3</em>4"],
  ["_a_b and a_b_ c", "<em>a_b and a_b</em> c"],
  ["**unclosed and *unclosed", "**unclosed and *unclosed"],
  ["~~ not~~ ~~a~~b", "~~ not~~ <del>a</del>b"],
  ["[text](https://example.com/a?b=1&c=2)", "<a href=\"https://example.com/a?b=1&amp;c=2\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">text</a>"],
  ["[title](http://example.org/x \"A title\")", "<a href=\"http://example.org/x\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">title</a>"],
  ["[angle]( <https://example.org/p> )", "<a href=\"https://example.org/p\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">angle</a>"],
  ["[mail](mailto:someone@example.com)", "<a href=\"mailto:someone@example.com\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">mail</a>"],
  ["[js](javascript:alert(1)) and [data](data:text/html,x)", "js) and data"],
  ["[](https://example.com/empty-label)", "<a href=\"https://example.com/empty-label\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"><a href=\"https://example.com/empty-label\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com/empty-label</a></a>"],
  ["[**bold** label](https://example.com/b)", "<a href=\"https://example.com/b\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"><strong>bold</strong> label</a>"],
  ["[relative](/docs/page)", "<a href=\"ORIGIN/docs/page\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">relative</a>"],
  ["[no link] (https://example.com) and [x]", "[no link] (<a href=\"https://example.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com</a>) and [x]"],
  ["[a](b c) [a](<>) [a](x>)", "[a](b c) <a href=\"ORIGIN/%3C\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">a</a> <a href=\"ORIGIN/x\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">a</a>"],
  ["see https://example.com/path?q=1. And http://example.org/a_b_(c)!", "see <a href=\"https://example.com/path?q=1\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com/path?q=1</a>. And <a href=\"http://example.org/a_b\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">http://example.org/a_b</a>_(c)!"],
  ["https://x.y/z* and (https://example.com/in-parens), https://a.b/c...", "<a href=\"https://x.y/z\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://x.y/z</a>* and (<a href=\"https://example.com/in-parens\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com/in-parens</a>), <a href=\"https://a.b/c\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://a.b/c</a>..."],
  ["http:// and https://... and ftp://example.com", "http:// and https://... and ftp://example.com"],
  ["\\*not italic\\* \\` \\\\ \\a \\_ \\[x\\] \\~\\~", "*not italic* ` \\ \\a _ [x] ~~"],
  ["<script>alert(1)</script> <img src=x onerror=alert(1)> &amp;", "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; &amp;amp;"],
  ["**[link](https://example.com) inside** and [`code` label](https://e.com)", "<strong><a href=\"https://example.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">link</a> inside</strong> and <a href=\"https://e.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"><code>code</code> label</a>"],
  ["mixed **a `b** c`", "mixed <strong>a `b</strong> c`"],
  ["**a**b** and [a](https://e.com \"t\" ) and [a](https://e.com \"open)", "<strong>a</strong>b** and <a href=\"https://e.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">a</a> and [a](<a href=\"https://e.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://e.com</a> \"open)"],
];

const BLOCK_CASES = [
  ["# H1\n## H2\n### H3\n#### H4\n##### H5\n###### H6", "<h3>H1</h3><h4>H2</h4><h5>H3</h5><h6>H4</h6><h6>H5</h6><h6>H6</h6>"],
  ["####### seven\n#hashtag\n#\n## closed ##\n   # indented\n    # four spaces", "<p>####### seven<br>#hashtag</p><h3></h3><h4>closed</h4><h3>indented</h3><p># four spaces</p>"],
  ["# **bold** heading ###", "<h3><strong>bold</strong> heading</h3>"],
  ["```js\nconst a = 1 < 2 && b;\n**not bold**\n```\nafter", "<pre><code data-language=\"js\">const a = 1 &lt; 2 &amp;&amp; b;\n**not bold**</code></pre><p>after</p>"],
  ["~~~\ntilde fence\n~~~", "<pre><code>tilde fence</code></pre>"],
  ["```\nunclosed fence\nruns to the end", "<pre><code>unclosed fence\nruns to the end</code></pre>"],
  ["````\n```\ninner\n```\n````", "<pre><code>```\ninner\n```</code></pre>"],
  ["``` py thon\nnot a fence", "<p>``` py thon<br>not a fence</p>"],
  ["- a\n- b\n* c\n+ d", "<ul><li>a</li><li>b</li><li>c</li><li>d</li></ul>"],
  ["1. one\n2. two\n\n3. three", "<ol><li>one</li><li>two</li><li>three</li></ol>"],
  ["3) three\n4) four", "<ol start=\"3\"><li>three</li><li>four</li></ol>"],
  ["- a\n  - b\n    - c\n- d", "<ul><li><p>a</p><ul><li><p>b</p><ul><li>c</li></ul></li></ul></li><li>d</li></ul>"],
  ["- a\n\n- b", "<ul><li>a</li><li>b</li></ul>"],
  ["- item\n  continued\n\n  second paragraph\n- next", "<ul><li><p>item<br>continued</p><p>second paragraph</p></li><li>next</li></ul>"],
  ["1. x\n- y", "<ol><li>x</li></ol><ul><li>y</li></ul>"],
  ["- **bold** item\n- [link](https://example.com)", "<ul><li><strong>bold</strong> item</li><li><a href=\"https://example.com/\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">link</a></li></ul>"],
  ["> quoted\n> **bold**", "<blockquote><p>quoted<br><strong>bold</strong></p></blockquote>"],
  ["> a\n>\n> b", "<blockquote><p>a</p><p>b</p></blockquote>"],
  ["> > nested\n> back", "<blockquote><blockquote><p>nested</p></blockquote><p>back</p></blockquote>"],
  ["> - list in quote\n> - two", "<blockquote><ul><li>list in quote</li><li>two</li></ul></blockquote>"],
  ["---\n* * *\n___\n--\n- - - -", "<hr><hr><hr><p>--</p><hr>"],
  ["line one\nline two\n\nnext paragraph", "<p>line one<br>line two</p><p>next paragraph</p>"],
  ["para\n# heading right after\n- list right after\n> quote", "<p>para</p><h3>heading right after</h3><ul><li>list right after</li></ul><blockquote><p>quote</p></blockquote>"],
  ["a\r\nb\rc", "<p>a<br>b<br>c</p>"],
  ["  leading spaces  \n\n\n\ntrailing", "<p>leading spaces</p><p>trailing</p>"],
  ["> > > > > > > > > > **deep** *quote*", "<blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><p>&gt; **deep** *quote*</p></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote>"],
  ["> > > > > > > > **depth 8** allows **one _more_ level**", "<blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><blockquote><p><strong>depth 8</strong> allows <strong>one _more_ level</strong></p></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote></blockquote>"],
  ["- a\n  - b\n    - c\n      - d\n        - e\n          - f\n            - g\n              - h\n                - i\n                  - j **k**", "<ul><li><p>a</p><ul><li><p>b</p><ul><li><p>c</p><ul><li><p>d</p><ul><li><p>e</p><ul><li><p>f</p><ul><li><p>g</p><ul><li><p>h</p><ul><li><p>i\n- j **k**</p></li></ul></li></ul></li></ul></li></ul></li></ul></li></ul></li></ul></li></ul></li></ul>"],
  ["<script>window.__x=1</script>\n\n<img src=x onerror=\"window.__x=2\">", "<p>&lt;script&gt;window.__x=1&lt;/script&gt;</p><p>&lt;img src=x onerror=\"window.__x=2\"&gt;</p>"],
];

test('every supported construct renders as it did: inline and block cases', async () => {
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await open(browser, bridle);
    const got = await page.evaluate(
      ([inline, blocks]) => [inline.map(([s]) => html(md.inline(s))), blocks.map(([s]) => html([md.markdown(s)]))],
      [INLINE_CASES, BLOCK_CASES],
    );
    const fix = (h) => h.split(bridle.url).join('ORIGIN');
    INLINE_CASES.forEach(([source, want], i) => assert.equal(fix(got[0][i]), want, `inline(${JSON.stringify(source)})`));
    BLOCK_CASES.forEach(([source, want], i) => assert.equal(fix(got[1][i]), want, `markdown(${JSON.stringify(source)})`));
    assert.deepEqual(page.problems, []);
  });
});

// Pieces that open, close and nest every construct, and the white space and line kinds around.
const PIECES = [
  '*', '**', '_', '__', '~~', '~', '`', '``', '```', '[', ']', '(', ')', '](', '<', '>', '"', '\\', ' ', '  ',
  '\n', '\n\n', 'a', 'b', 'x_y', 'http://', 'https://', 'e.com', '.', '#', '# ', '- ', '1. ', '> ', '    ',
  '\t', '\u2028', '\u00a0', 'mailto:a@b', 'javascript:x', '!', '---', '~~~', '12)', '+ ',
];

test('random strings render exactly as the replaced regex renderer rendered them', async () => {
  const next = random(28);
  const sources = [];
  for (let i = 0; i < 4000; i += 1) {
    let s = '';
    const length = 1 + Math.floor(next() * (i < 3000 ? 40 : 160));
    while (s.length < length) s += PIECES[Math.floor(next() * PIECES.length)];
    sources.push(s);
  }
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await open(browser, bridle, { oracle: true });
    const differ = await page.evaluate((all) => {
      const out = [];
      for (const s of all) {
        const inline = [html(md.inline(s)), html(regexMd.inline(s))];
        const block = [html([md.markdown(s)]), html([regexMd.markdown(s)])];
        if (inline[0] !== inline[1]) out.push({ s, kind: 'inline', now: inline[0], before: inline[1] });
        if (block[0] !== block[1]) out.push({ s, kind: 'markdown', now: block[0], before: block[1] });
      }
      return out;
    }, sources);
    assert.deepEqual(differ.slice(0, 5), [], `${differ.length} of ${sources.length} strings render differently`);
    assert.deepEqual(page.problems, []);
  });
});

// Lines made of one piece repeated (n a multiple of 80), and what they render as: unmatched
// openers that made the regex renderer rescan to the end of the line from each of them.
const HOSTILE_INLINE = [
  ['*', (n) => '<strong>*</strong>'.repeat(n / 5)],
  ['_', (n) => `${'<strong>'.repeat(9)}${'_'.repeat(n - 36)}${'</strong>'.repeat(9)}`],
  ['`', (n) => '`'.repeat(n)],
  ['[', (n) => '['.repeat(n)],
  ['**a ', (n) => '**a '.repeat(n / 4)],
  ['[a](', (n) => '[a]('.repeat(n / 4)],
  ['~~', (n) => '<del>~</del>'.repeat(n / 5)],
  ['*_`[~~**a [a](_ ', (n) => `<em>_\`[~~</em>${'<em>a [a](_ *_`[~~</em>'.repeat(n / 16 - 1)}*a [a](_ `],
];

// Lines of n characters for each line kind, and what they render as (the heading's pattern
// backtracked cubically on the spaces; the fence's and list items' quadratically).
const HOSTILE_BLOCKS = [
  [(n) => `# a${' '.repeat(n)}b`, (n) => `<h3>a${' '.repeat(n)}b</h3>`],
  [(n) => `# a${' #'.repeat(n / 2)}b`, (n) => `<h3>a${' #'.repeat(n / 2)}b</h3>`],
  [(n) => '#'.repeat(n), () => '<h6></h6>'],
  [(n) => `\`\`\`${' '.repeat(n)}x y`, (n) => `<p>\`\`\`${' '.repeat(n)}x y</p>`],
  [(n) => `-${' '.repeat(n)}x\u2028`, (n) => `<p>-${' '.repeat(n)}x</p>`],
  [(n) => `1.${' '.repeat(n)}x\u2028`, (n) => `<p>1.${' '.repeat(n)}x</p>`],
  [(n) => `-${' -'.repeat(n / 2)}x`, (n) => `<ul><li>${' -'.repeat(n / 2 - 1).slice(1)} -x</li></ul>`],
  [(n) => `${'> '.repeat(n / 2)}x`, (n) => `${'<blockquote>'.repeat(9)}<p>${'&gt; '.repeat(n / 2 - 9)}x</p>${'</blockquote>'.repeat(9)}`],
];

// At most this many steps (characters looked at) per character of input: up to nine nesting
// levels each read their text once or twice. (A quadratic pass would need thousands.)
const STEPS_PER_CHAR = 12;

test('hostile lines of 20,000 and 200,000 characters render right, with work linear in their length', async () => {
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await open(browser, bridle, { oracle: true });
    const render = (fn, source, renderer = 'md') =>
      page.evaluate(([f, s, r]) => {
        window.md.work.steps = 0;
        const out = f === 'inline' ? html(window[r].inline(s)) : html([window[r].markdown(s)]);
        return { out, steps: window.md.work.steps };
      }, [fn, source, renderer]);
    const cases = [
      ...HOSTILE_INLINE.map(([piece, want]) => ['inline', (n) => piece.repeat(n / piece.length), want]),
      ...HOSTILE_BLOCKS.map(([make, want]) => ['markdown', make, want]),
    ];
    for (const [fn, make, want] of cases) {
      // The expectation is the regex renderer's on a short line of the same kind.
      const short = await render(fn, make(80), 'regexMd');
      assert.equal(short.out, want(80), `the regex renderer on ${JSON.stringify(make(80))}`);
      for (const n of [20000, 200000]) {
        const source = make(n);
        const { out, steps } = await render(fn, source);
        const label = `${fn}(${JSON.stringify(source.slice(0, 24))}… ${source.length} characters)`;
        assert.ok(out === want(n), `${label} renders as expected: ${out.slice(0, 200)}…`);
        assert.ok(steps <= STEPS_PER_CHAR * source.length, `${label}: ${steps} steps, more than ${STEPS_PER_CHAR} per character`);
      }
    }
    assert.deepEqual(page.problems, []);
  });
});

test('past the old 20,000-character limit a line keeps its Markdown', async () => {
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await open(browser, bridle);
    const piece = '**b** *i* `c` ~~d~~ [l](https://example.com/) ';
    const counts = await page.evaluate((line) => {
      const div = document.createElement('div');
      div.append(md.markdown(line));
      return ['strong', 'em', 'code', 'del', 'a'].map((tag) => div.querySelectorAll(tag).length);
    }, piece.repeat(5000));
    assert.deepEqual(counts, [5000, 5000, 5000, 5000, 5000]);
    assert.deepEqual(page.problems, []);
  });
});

const STREAM_PIECES = [
  '*', '**', '_', '`', '```', '~~~', '[a](https://e.com)', ' ', '\n', '\n', '\n\n', '\r', '\r\n', 'word', '# ',
  '- ', '  - ', '1. ', '> ', '    ', '---', 'text ', '\n  ',
];

test('streaming: at every step the live render equals a full render, and finished blocks are kept', async () => {
  const next = random(16);
  const streams = [];
  for (let i = 0; i < 400; i += 1) {
    let s = '';
    const length = Math.floor(next() * 400);
    while (s.length < length) s += STREAM_PIECES[Math.floor(next() * STREAM_PIECES.length)];
    const cuts = [];
    for (let at = 0; at < s.length; ) {
      at = Math.min(s.length, at + 1 + Math.floor(next() * 12));
      cuts.push(at);
    }
    streams.push({ s, cuts });
  }
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await open(browser, bridle);
    const differ = await page.evaluate((all) => {
      const out = [];
      for (const { s, cuts } of all) {
        const div = document.createElement('div');
        const live = md.liveMarkdown(div);
        for (const at of cuts) {
          live.update(s.slice(0, at));
          const want = html([md.markdown(s.slice(0, at))]);
          if (div.innerHTML !== want) {
            out.push({ source: s.slice(0, at), live: div.innerHTML, want });
            break;
          }
        }
      }
      return out;
    }, streams);
    assert.deepEqual(differ.slice(0, 3), [], `${differ.length} of ${streams.length} streams differ from a full render`);

    // 500 paragraphs streamed 40 characters at a time: each update redoes only the open end, so
    // the whole stream costs a few full renders of the final text (rendering all of it at each
    // update, as before, cost hundreds).
    const cost = await page.evaluate(() => {
      let text = '';
      for (let i = 0; i < 500; i += 1) text += `Paragraph ${i} with **bold**, \`code\` and a [link](https://example.com/${i}).\n\n`;
      const div = document.createElement('div');
      const live = md.liveMarkdown(div);
      md.work.steps = 0;
      live.update(text.slice(0, 300));
      const first = div.querySelector('p');
      for (let at = 340; at < text.length; at += 40) live.update(text.slice(0, at));
      live.update(text);
      const streamed = md.work.steps;
      md.work.steps = 0;
      md.markdown(text);
      return { streamed, full: md.work.steps, kept: div.querySelector('p') === first, paragraphs: div.querySelectorAll('p').length };
    });
    assert.equal(cost.paragraphs, 500);
    assert.ok(cost.kept, 'the first paragraph, finished early, is the same element at the end');
    assert.ok(cost.streamed <= 10 * cost.full, `the stream cost ${cost.streamed} steps, ${(cost.streamed / cost.full).toFixed(1)} full renders`);
    assert.deepEqual(page.problems, []);
  });
});

test("the chat page keeps a streamed reply's finished paragraphs while the rest streams in", async () => {
  const pieces = ['First paragraph, finished early.\n\n', 'Second ', 'paragraph.\n\n', 'Third ', 'paragraph.\n\n', 'Fourth ', 'paragraph.\n\n', 'Fifth ', 'and last.'];
  const script = { turns: [{ attempts: [{ pieces }] }] };
  await withBridle({ script, mockArgs: ['--stream-interval-ms', '150'] }, async ({ bridle, browser }) => {
    const page = await newPage(browser);
    await page.goto(`${bridle.url}/`);
    await signIn(page, USER_KEY);
    await page.locator('#nc-contract').fill('table-chat');
    await page.locator('#nc-page').selectOption('table_view');
    await page.locator('#new-conversation button[type="submit"]').click();
    await page.locator('#chat-title', { hasText: 'table-chat' }).waitFor();
    // The element showing the first paragraph when the third, then the fourth, appeared.
    await page.evaluate(() => {
      window.__firstAt = {};
      new MutationObserver(() => {
        const text = document.querySelector('.msg.assistant[data-state="streaming"] .message-text');
        if (!text) return;
        for (const mark of ['Third', 'Fourth']) {
          if (!(mark in window.__firstAt) && text.textContent.includes(mark)) window.__firstAt[mark] = text.querySelector('p');
        }
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    });
    await page.locator('#composer-input').fill('Tell me in paragraphs');
    await page.locator('#composer-input').press('Enter');
    await page.locator('.msg.assistant[data-state="complete"]').waitFor({ timeout: 20000 });
    const seen = await page.evaluate(() => ({
      both: 'Third' in window.__firstAt && 'Fourth' in window.__firstAt,
      same: window.__firstAt.Third === window.__firstAt.Fourth,
      text: window.__firstAt.Third?.textContent,
    }));
    assert.deepEqual(seen, { both: true, same: true, text: 'First paragraph, finished early.' });
    assert.match(await page.locator('.msg.assistant .body').innerText(), /First paragraph[\s\S]*Fifth and last\.$/);
    assert.deepEqual(page.problems, []);
  });
});
