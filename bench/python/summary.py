"""Turns bench/python/run.sh's results into Markdown: bench/python/results.md, and the same
section ("Python package") spliced into docs/benchmarks.md between its markers (bench/run's
report.py carries the section over when it rewrites the page).

usage: summary.py RESULTS FAULTS ATTEMPTS RESULTS_MD BENCHMARKS_MD"""

import json
import sys
from pathlib import Path

results, faults, attempts = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
results_md, benchmarks_md = Path(sys.argv[4]), Path(sys.argv[5])
BEGIN, END = "<!-- python-package:begin -->", "<!-- python-package:end -->"
machine = dict(line.split("=", 1) for line in (results / "machine.txt").read_text().splitlines() if "=" in line)


def us(ns):
    return f"{ns / 1000:,.1f} µs"


out = [BEGIN, "## Python package", "",
       f"Written by `bench/python/run.sh` ({machine.get('date', '?')}, {machine.get('cpu', '?')}, "
       f"{machine.get('python', '?')}, commit {machine.get('commit', '?')}; load average before "
       f"{machine.get('load_before', '?')}, after {machine.get('load_after', '?')}). "
       "The `bridle` wheel is built in release mode (thin LTO, mimalloc), as `pip install ./python` builds it"
       + (" — the input generator and the mock in debug (`BUILD_PROFILE=dev`): the loop's wall times are not "
          "comparable with comparison 6's; its calls and tokens are (the mock is seeded)."
          if machine.get("tools_profile") == "dev" else "."), ""]

check = results / "check.json"
if check.exists():
    data = json.loads(check.read_text())
    v = data["versions"]
    names = list(data["rows"][0]["times"])
    out += ["### The check from Python", "",
            "Input: the `selfhelp-response` replies of comparison 1 above (valid and invalid, ~1, ~10 and "
            "~100 KB of compact JSON), as a `str`. Each cell is the median time of one call from Python, "
            "everything included: `bridle` checks the text (parse, JSON Schema, the contract's declared rules; "
            "the value converted to Python objects only in the `+ value` row), the peers `json.loads` the text "
            "and validate the schema alone (they know no rules). Each cell is the median of "
            f"{data.get('rounds', 3)} rounds that alternate the tools (each round a median over ~1 ms batches). "
            f"Versions: bridle {v['bridle']}, jsonschema-rs {v['jsonschema-rs']}, jsonschema {v['jsonschema']}; "
            "method: `bench/compare/py/timing.py`.", "",
            "| reply | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names)]
    for row in data["rows"]:
        base = row["times"]["bridle.check (valid only)"]
        cells = []
        for n in names:
            t = row["times"][n]
            cells.append(f"**{us(t)}**" if n.startswith("bridle.check (") else f"{us(t)} ({t / base:.2f}×)")
        out.append(f"| {row['variant']} {row['size']} ({row['bytes']:,} B) | " + " | ".join(cells) + " |")
    ten = next(r for r in data["rows"] if r["variant"] == "valid" and r["size"] == "10KB")["times"]
    b, rs = ten["bridle.check (valid only)"], ten["jsonschema-rs: json.loads + is_valid"]
    met = "met" if b < rs else "**not met**"
    out += ["", f"Ratios: the peer's time ÷ `bridle.check (valid only)` in the same row. **Target (issue 32): the 10 KB "
            f"valid check faster than jsonschema-rs including the call overhead — {met}: {us(b)} against {us(rs)} "
            f"(json.loads + is_valid, its fastest; {rs / b:.2f}×).** With the value converted to Python objects "
            f"(`+ value`) it is {us(ten['bridle.check + value'])}.", ""]

loops = {s: results / f"loop-{s}.json" for s in ("contract", "model", "instructor")}
if all(p.exists() for p in loops.values()):
    labels = {"contract": "`bridle.complete(contract=\"selfhelp-response\")`",
              "model": "`bridle.complete(response_model=SelfhelpResponse)`",
              "instructor": "Instructor (JSON_SCHEMA mode, `response_model=SelfhelpResponse`)"}
    out += ["### The closed loop: `bridle.complete` against Instructor", "",
            f"The model: a fresh `bridle mock-llm --seed 7 --fault-rate 0.25 --faults {faults}` per side, the same "
            "questions in the same order (`bench/compare/py/loop_questions.py`), "
            f"{attempts} attempts per turn on each side, the official `openai` client. A turn succeeds when the "
            "`SelfhelpResponse` Pydantic model (the schema and the contract's rules as validators, "
            "`bench/compare/py/selfhelp_model.py`) accepts the final value (and, for Bridle, it is not the "
            "contract's fallback). Calls are counted in each mock's request log, tokens are the usage the mock "
            "reported, summed over every call.", "",
            "| loop | success | calls per success | prompt + completion tokens per success | faulty replies / calls | wall time |",
            "|---|---|---|---|---|---|"]
    per = {}
    for side, path in loops.items():
        r = json.loads(path.read_text())
        log = json.loads((results / f"mock-{side}.json").read_text())
        calls = [e for e in log if e.get("method") == "POST"]
        faulty = sum(1 for e in calls if (e.get("answer") or {}).get("fault"))
        ok = r["successes"]
        tokens = r["prompt_tokens"] + r["completion_tokens"]
        per[side] = tokens / ok if ok else float("inf")
        out.append(f"| {labels[side]} {r.get('version', '')} | {ok}/{r['turns']} ({100 * ok / r['turns']:.1f} %) | "
                   f"{len(calls) / ok if ok else float('nan'):.3f} | "
                   f"{r['prompt_tokens'] / max(ok, 1):,.0f} + {r['completion_tokens'] / max(ok, 1):,.0f} = "
                   f"**{tokens / max(ok, 1):,.0f}** | {faulty}/{len(calls)} | {r['seconds']:.1f} s |")
    out += ["", f"Instructor's tokens per success are {per['instructor'] / per['contract']:.2f}× those of "
            "`bridle.complete` with the contract. Why they differ is the same as in comparison 6 (the gateway's loop): "
            "Bridle's system prompt carries the contract (schema, rules, an example), its feedback names each "
            "violation's path so the retry fixes exactly that, and a retry sends only the last bad reply and "
            "its feedback; with `response_model` the prompt carries the model's JSON Schema, which cannot say "
            "the contract's rules, so the model's validators reject more first replies. That row also meets a "
            "quirk of the mock: it answers Pydantic's validation report (Instructor's retry) on a reply it "
            "thought valid with a fresh reply, but Bridle's feedback on such a reply (a rule only the model's "
            "validators know) with the same reply again (`crates/mock/src/model.rs`, `content`), so those turns "
            "fail all three attempts; a real model has no such preference. Use a contract (or the gateway) "
            "when the rules matter: its prompt states them.", ""]
out += [END]
section = "\n".join(out)
results_md.write_text("# Python package benchmarks (latest run)\n\n" + section.replace(BEGIN + "\n", "").replace("\n" + END, "") + "\n")
page = benchmarks_md.read_text()
if BEGIN in page and END in page:
    page = page[:page.index(BEGIN)] + section + page[page.index(END) + len(END):]
else:
    page = page.replace("\n## Reproduce", "\n" + section + "\n\n## Reproduce", 1)
benchmarks_md.write_text(page)
print(f"wrote {results_md} and the Python package section of {benchmarks_md}", file=sys.stderr)
