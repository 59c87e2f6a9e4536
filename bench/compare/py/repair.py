"""Comparison 3 (bench/run): json-repair (Python) on the repair corpus. A case is accepted when
json_repair returns a value (an empty string is its way of saying there was nothing to repair:
counted as a refusal) that the case's contract accepts (any JSON, or the selfhelp-response JSON
Schema via jsonschema). Time per case: repair_json(..., return_objects=True).

usage: repair.py INPUT_DIR  → JSON on stdout"""

import json
import sys
from importlib.metadata import version
from pathlib import Path

import jsonschema
from json_repair import repair_json

from timing import measure, budget


def main():
    inputs = Path(sys.argv[1])
    manifest = json.loads((inputs / "manifest.json").read_text())
    schema = json.loads(Path(manifest["schema"]).read_text())
    validator = jsonschema.Draft7Validator(schema)
    cases = json.loads((inputs / manifest["repair"]["file"]).read_text())
    rows = []
    for case in cases:
        text = case["input"]
        try:
            value = repair_json(text, return_objects=True)
            accepted = value != ""
        except Exception:  # a refusal, whatever its kind
            value, accepted = None, False
        if accepted and case["contract"] == "selfhelp-response":
            accepted = validator.is_valid(value)

        def run():
            try:
                repair_json(text, return_objects=True)
            except Exception:
                pass
        rows.append({"name": case["name"], "accepted": accepted,
                     "exact": accepted and value == case["expected"]
                     and json.dumps(value, sort_keys=True) == json.dumps(case["expected"], sort_keys=True),
                     "output": value if accepted else None,
                     "median_ns": measure(run, budget() / 10)["median_ns"]})
    json.dump({"json-repair": {"version": version("json-repair"), "rows": rows}}, sys.stdout,
              indent=1, default=str)


main()
