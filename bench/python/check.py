"""The Python package's check benchmark (bench/python/run.sh): a selfhelp-response reply of
~1, ~10 and ~100 KB, valid and invalid (the inputs `cargo run --release -p bridle-bench
--example compare -- gen DIR` writes for bench/run, so the same files as its comparison 1) checked
from Python — `bridle.check` with the contract (parse, schema, the contract's declared rules),
against `json.loads` + validation with `jsonschema-rs` and `jsonschema` (schema only; they
know no rules). Each tool's time includes everything a call from Python costs.

usage: check.py INPUT_DIR  → JSON on stdout"""

import json
import os
import statistics
import sys
from importlib.metadata import version
from pathlib import Path

import jsonschema
import jsonschema_rs

import bridle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare" / "py"))
from timing import measure  # noqa: E402  (bench/compare/py/timing.py: the method every bench uses)

ROOT = Path(__file__).resolve().parents[2]
#: Rounds over all the tools per reply (CHECK_ROUNDS, default 3).
ROUNDS = int(os.environ.get("CHECK_ROUNDS", "3"))


def main():
    replies = Path(sys.argv[1])
    schema = json.loads((ROOT / "contracts" / "selfhelp-response" / "schema.json").read_text())
    contract = bridle.Contract.builtin("selfhelp-response")
    rs = jsonschema_rs.validator_for(schema)
    py = jsonschema.validators.validator_for(schema)(schema)
    cases = {
        "bridle.check (valid only)": lambda t: contract.check(t).valid,
        "bridle.check + value": lambda t: contract.check(t).value,
        "bridle.check(text, name)": lambda t: bridle.check(t, "selfhelp-response").valid,
        "bridle.check + violations": lambda t: contract.check(t).violations,
        "jsonschema-rs: json.loads + is_valid": lambda t: rs.is_valid(json.loads(t)),
        "jsonschema-rs: json.loads + iter_errors": lambda t: list(rs.iter_errors(json.loads(t))),
        "jsonschema: json.loads + iter_errors": lambda t: list(py.iter_errors(json.loads(t))),
        "json.loads alone": lambda t: json.loads(t),
    }
    out = {"versions": {"bridle": bridle.__version__, "jsonschema-rs": version("jsonschema-rs"),
                        "jsonschema": version("jsonschema"), "python": sys.version.split()[0]},
           "rounds": ROUNDS, "rows": []}
    for variant, size in [(v, s) for v in ("valid", "invalid") for s in ("1KB", "10KB", "100KB")]:
        text = (replies / f"check-{variant}-{size}.json").read_text()
        assert contract.check(text).valid == rs.is_valid(json.loads(text)) == (variant == "valid")
        row = {"variant": variant, "size": size, "bytes": len(text.encode()), "times": {}}
        rounds: dict[str, list[float]] = {name: [] for name in cases}
        # Rounds alternate the tools, so a burst of load on a shared machine lands on all of
        # them; each cell is the median of its rounds' medians, with the range kept.
        for _ in range(ROUNDS):
            for name, run in cases.items():
                rounds[name].append(measure(lambda run=run: run(text))["median_ns"])
        row["times"] = {name: statistics.median(r) for name, r in rounds.items()}
        row["ranges"] = {name: [min(r), max(r)] for name, r in rounds.items()}
        out["rows"].append(row)
    json.dump(out, sys.stdout, indent=1)


main()
