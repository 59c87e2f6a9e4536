// Comparison 2 (bench/run): fast-xml-parser parsing the same topic-analysis reply Bridle
// checks (attributes read, as Bridle reads them; no validation: it has no schema step).
// usage: node xml.mjs INPUT_DIR  → JSON on stdout
import { XMLParser } from "fast-xml-parser";
import { readFileSync } from "node:fs";
import { measure, readJson, version } from "./timing.mjs";

const dir = process.argv[2];
const manifest = readJson(`${dir}/manifest.json`);
const parser = new XMLParser({ ignoreAttributes: false });
const rows = manifest.xml.map((c) => {
  const text = readFileSync(`${dir}/${c.file}`, "utf8");
  const value = parser.parse(text);
  return {
    file: c.file,
    ok: typeof value?.llmResponse === "object",
    parse: measure(() => parser.parse(text)),
  };
});
console.log(JSON.stringify({ "fast-xml-parser": { version: version("fast-xml-parser"), rows } }, null, 1));
