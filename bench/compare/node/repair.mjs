// Comparison 3 (bench/run): jsonrepair (npm) on the repair corpus. A case is accepted when
// jsonrepair returns text that JSON.parse reads and the case's contract accepts (any JSON, or
// the selfhelp-response JSON Schema via ajv); a thrown error is a refusal. Time per case:
// JSON.parse(jsonrepair(input)).
// usage: node repair.mjs INPUT_DIR  → JSON on stdout
import Ajv from "ajv";
import { jsonrepair } from "jsonrepair";
import { budget, measure, readJson, version } from "./timing.mjs";

const dir = process.argv[2];
const manifest = readJson(`${dir}/manifest.json`);
const validate = new Ajv({ allErrors: true, strict: false }).compile(readJson(manifest.schema));
const cases = readJson(`${dir}/${manifest.repair.file}`);

// JSON text with object keys sorted, for comparing values.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

const rows = cases.map((c) => {
  let value = null;
  let accepted = false;
  try {
    value = JSON.parse(jsonrepair(c.input));
    accepted = true;
  } catch {}
  if (accepted && c.contract === "selfhelp-response") accepted = validate(value);
  const run = () => {
    try {
      JSON.parse(jsonrepair(c.input));
    } catch {}
  };
  return {
    name: c.name,
    accepted,
    exact: accepted && canonical(value) === canonical(c.expected),
    output: accepted ? value : null,
    median_ns: measure(run, budget() / 10).median_ns,
  };
});
console.log(JSON.stringify({ jsonrepair: { version: version("jsonrepair"), rows } }, null, 1));
