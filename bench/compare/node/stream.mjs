// Comparison 4 (bench/run): re-parsing the reply so far after every 4-character delta with
// partial-json (`parse`, every partial kind allowed) and the AI SDK's `parsePartialJson` (`ai`;
// async, awaited as its users do), on the same streamed replies as Bridle. Deltas are cut at
// character boundaries (code points, as Rust and Python count characters).
// usage: node stream.mjs INPUT_DIR  → JSON on stdout
// STREAM_SECONDS (default 3): time per size; a size whose single run takes longer than
// STREAM_CAP_SECONDS (default 20) is the last one run for that tool.
import { parsePartialJson } from "ai";
import { readFileSync } from "node:fs";
import { parse } from "partial-json";
import { measureLong, readJson, version } from "./timing.mjs";

const dir = process.argv[2];
const manifest = readJson(`${dir}/manifest.json`);
const seconds = Number(process.env.STREAM_SECONDS ?? "3");
const cap = Number(process.env.STREAM_CAP_SECONDS ?? "20");

function deltas(text, n) {
  const chars = Array.from(text);
  const out = [];
  for (let i = 0; i < chars.length; i += n) out.push(chars.slice(i, i + n).join(""));
  return out;
}

const tools = {
  "partial-json": [version("partial-json"), async (pieces) => {
    let soFar = "";
    for (const piece of pieces) {
      soFar += piece;
      parse(soFar);
    }
  }],
  ai: [version("ai"), async (pieces) => {
    let soFar = "";
    for (const piece of pieces) {
      soFar += piece;
      await parsePartialJson(soFar);
    }
  }],
};

const out = {};
for (const [name, [ver, run]] of Object.entries(tools)) {
  const rows = [];
  for (const c of manifest.stream) {
    const pieces = deltas(readFileSync(`${dir}/${c.file}`, "utf8"), c.delta_chars);
    const total = await measureLong(() => run(pieces), seconds);
    rows.push({ file: c.file, scale: c.scale, deltas: pieces.length, total });
    if (total.median_ns > cap * 1e9) break;
  }
  out[name] = { version: ver, rows };
}
console.log(JSON.stringify(out, null, 1));
