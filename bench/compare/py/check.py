"""Comparison 1 (bench/run): the Python JSON Schema validators on the same selfhelp-response
replies Bridle checks. For each reply: validation alone of the already parsed value (every
error collected, as Bridle reports every violation; fastjsonschema stops at the first error, it
has no other mode) and json.loads + validation.

usage: check.py INPUT_DIR  → JSON on stdout"""

import json
import sys
from importlib.metadata import version
from pathlib import Path

import fastjsonschema
import jsonschema
import jsonschema_rs

from timing import measure


def fastjsonschema_errors(validate):
    def run(value):
        try:
            validate(value)
            return []
        except fastjsonschema.JsonSchemaValueException as e:
            return [e]
    return run


def main():
    inputs = Path(sys.argv[1])
    manifest = json.loads((inputs / "manifest.json").read_text())
    schema = json.loads(Path(manifest["schema"]).read_text())
    tools = {
        "jsonschema": (version("jsonschema"),
                       lambda v, d=jsonschema.Draft7Validator(schema): list(d.iter_errors(v))),
        "jsonschema-rs": (version("jsonschema-rs"),
                          lambda v, d=jsonschema_rs.validator_for(schema): list(d.iter_errors(v))),
        "fastjsonschema": (version("fastjsonschema"),
                           fastjsonschema_errors(fastjsonschema.compile(schema))),
    }
    out = {}
    for name, (ver, errors) in tools.items():
        rows = []
        for case in manifest["check"]:
            text = (inputs / case["file"]).read_text()
            value = json.loads(text)
            found = errors(value)
            rows.append({
                "file": case["file"], "valid": not found, "errors": len(found),
                "validate": measure(lambda: errors(value)),
                "parse_validate": measure(lambda: errors(json.loads(text))),
            })
        out[name] = {"version": ver, "rows": rows}
    json.dump(out, sys.stdout, indent=1)


main()
