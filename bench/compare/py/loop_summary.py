"""Comparison 6 (bench/run): turns the closed-loop results (each side's client report and each
mock's request log) into the report's table and target rows: $RESULTS/loop.json.

usage: loop_summary.py WORK_DIR FAULTS ATTEMPTS  → JSON on stdout"""

import json
import sys
from pathlib import Path

work, faults, attempts = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def mock_log(name):
    log = json.loads((work / f"mock-{name}.json").read_text())
    entries = log if isinstance(log, list) else log.get("requests", log.get("items", []))
    calls = [e for e in entries if e.get("method") == "POST"]
    faulty = [e for e in calls if (e.get("answer") or {}).get("fault")]
    return len(calls), len(faulty)


rows, measured = [], {}
labels = {"bridle": "Bridle (`bridle serve`, turn loop)",
          "instructor": "Instructor (JSON_SCHEMA mode; Pydantic model with the contract's rules)",
          "instructor-schema": "Instructor (JSON_SCHEMA mode; Pydantic model, schema only: rules not checked)"}
for name in labels:
    r = json.loads((work / f"{name}.json").read_text())
    calls, faulty = mock_log(name)
    ok = r["successes"]
    tokens = r["prompt_tokens"] + r["completion_tokens"]
    measured[name] = dict(r, calls=calls, tokens=tokens)
    label, version = labels[name], r.get("version", "")
    rows.append(f"| {label} | {version} | {ok}/{r['turns']} ({100 * ok / r['turns']:.1f} %) | "
                f"{calls / ok if ok else float('nan'):.3f} | {r['prompt_tokens'] / ok if ok else 0:,.0f} + "
                f"{r['completion_tokens'] / ok if ok else 0:,.0f} = **{tokens / ok if ok else 0:,.0f}** | "
                f"{faulty}/{calls} | {r['seconds']:.1f} s |")
b, i = measured["bridle"], measured["instructor"]
bt = b["tokens"] / b["successes"] if b["successes"] else float("inf")
it = i["tokens"] / i["successes"] if i["successes"] else float("inf")
si = measured["instructor-schema"]
st = si["tokens"] / si["successes"] if si["successes"] else float("inf")
markdown = [
    f"The model: `bridle mock-llm --fault-rate 0.25 --faults {faults} --seed 7`, one instance per "
    "side, the same questions (`py/loop_questions.py`) in the same order. A content fault is fixable "
    "by feedback: the mock answers correctly when the next request's feedback names what it broke. "
    f"Both sides get {attempts} attempts per turn. Calls are counted in each mock's request log; "
    "tokens are the usage the mock reported (summed over every call of a turn). A turn succeeds when "
    "the final answer is accepted by the same Pydantic model of the contract (`py/selfhelp_model.py`: "
    "schema and declared rules) and, for Bridle, is not the contract's fallback.", "",
    "| tool | version | success | calls per success | prompt + completion tokens per success | faulty replies / calls (mock log) | wall time |",
    "|---|---|---|---|---|---|---|", *rows, "",
    f"Instructor's tokens per success (with the rules) are {it / bt:.2f}× Bridle's." if bt and it != float('inf') else "",
    "",
    "How the mock reads the two: Bridle's system prompt names the contract, so the mock generates "
    "replies that meet the schema *and* the declared rules, and recognises Bridle's retry feedback "
    "(it starts with \"Your previous reply did not meet the contract\") as feedback, so the retry fixes "
    "the fault it names. Instructor sends the Pydantic model's JSON Schema as `response_format`: the "
    "mock generates from the schema, which cannot carry the rules (a radio field needs options; "
    "`is_safe` false only for critical or emergency). Instructor's retry message carries Pydantic's "
    "validation report; the mock reads it as feedback too: an injected fault whose location is a line "
    "of the report is fixed, and a reply the mock thought valid (it broke a rule it was never told) "
    "is written afresh, as a model trying again would. A real model that is not told the rules breaks "
    "them too; the schema-only row shows Instructor without that handicap. A reply cut at the token "
    "limit (`finish_reason: length`) makes Instructor raise `IncompleteOutputException` without a retry.",
]
for name, m in measured.items():
    if m.get("failures"):
        markdown.append(f"\n{name}: first failures: " + "; ".join(f"`{f[:200]}`" for f in m["failures"][:3]))
targets = [
    ["closed loop: ≥ 99.5 % success", f"{100 * b['successes'] / b['turns']:.2f} %", b["successes"] / b["turns"] >= 0.995],
    ["closed loop: ≤ 1.1 calls per success", f"{b['calls'] / b['successes']:.3f}" if b["successes"] else "—",
     bool(b["successes"]) and b["calls"] / b["successes"] <= 1.1],
    ["closed loop: ≤ 50 % of Instructor's tokens per success (Instructor with the same contract: schema + rules)",
     f"{100 * bt / it:.0f} % of Instructor's with the rules; {100 * bt / st:.0f} % of schema-only Instructor's",
     bt <= 0.5 * it],
]
json.dump({"markdown": markdown, "targets": targets, "measured": measured}, sys.stdout, indent=1)
