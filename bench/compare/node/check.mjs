// Comparison 1 (bench/run): ajv (allErrors) on the same selfhelp-response replies Bridle
// checks: validation alone of the already parsed value, and JSON.parse + validation.
// usage: node check.mjs INPUT_DIR  → JSON on stdout
import Ajv from "ajv";
import { readFileSync } from "node:fs";
import { measure, readJson, version } from "./timing.mjs";

const dir = process.argv[2];
const manifest = readJson(`${dir}/manifest.json`);
const schema = readJson(manifest.schema);
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const rows = manifest.check.map((c) => {
  const text = readFileSync(`${dir}/${c.file}`, "utf8");
  const value = JSON.parse(text);
  const valid = validate(value);
  return {
    file: c.file,
    valid,
    errors: valid ? 0 : validate.errors.length,
    validate: measure(() => validate(value)),
    parse_validate: measure(() => validate(JSON.parse(text))),
  };
});
console.log(JSON.stringify({ ajv: { version: version("ajv"), rows } }, null, 1));
