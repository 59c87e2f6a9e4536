"""Comparison 5 (bench/run): turns the oha runs of gateway.sh into the report's table and target
rows ($RESULTS/gateway.json).

usage: gateway_summary.py RUNS.jsonl LITELLM_VERSION WORKERS CONNECTIONS DURATION OHA LOAD_BEFORE LOAD_AFTER"""

import json
import sys

runs_file, litellm_version, workers, connections, duration, oha, before, after = sys.argv[1:9]
runs = [json.loads(line) for line in open(runs_file) if line.strip()]
by = {(r["target"], r["rate"]): r for r in runs}
names = {"direct": "direct (oha → mock)", "bridle_pass": "Bridle, pass-through (no contract)",
         "bridle_enforced": "Bridle, enforcing selfhelp-response (check + SQLite store)",
         "litellm": f"LiteLLM proxy {litellm_version}, {workers} workers"}
rates = sorted({r["rate"] for r in runs if r["rate"] != "max"}, key=float)


def cell(r, key):
    return f"{r[key]:.2f}" if r and key in r else "—"


md = [f"Load generator: {oha}, {connections} connections, {duration} s per run; fixed rates with "
      "latency corrected for coordinated omission, then closed-loop (max). Gateways, mock and oha share the "
      f"machine's cores unpinned. Load average during this part: before {before}, after {after}.", "",
      "| target | rate (req/s) | achieved req/s | success | p50 ms | p99 ms | added p50 ms | added p99 ms |",
      "|---|---|---|---|---|---|---|---|"]
for target in names:
    for rate in rates + ["max"]:
        r = by.get((target, rate))
        d = by.get(("direct", rate))
        if not r or "error" in r:
            md.append(f"| {names[target]} | {rate} | failed: {(r or {}).get('error', 'not run')[:80]} | | | | | |")
            continue
        add50 = f"{r['p50_ms'] - d['p50_ms']:.2f}" if d and "p50_ms" in d and target != "direct" else "—"
        add99 = f"{r['p99_ms'] - d['p99_ms']:.2f}" if d and "p99_ms" in d and target != "direct" else "—"
        md.append(f"| {names[target]} | {rate} | {r['rps']:,.0f} | {100 * r['success']:.1f} % | "
                  f"{cell(r, 'p50_ms')} | {cell(r, 'p99_ms')} | {add50} | {add99} |")
targets = []
added = []
for rate in rates:
    b, d = by.get(("bridle_enforced", rate)), by.get(("direct", rate))
    if b and d and "p99_ms" in b and "p99_ms" in d:
        added.append((rate, b["p99_ms"] - d["p99_ms"]))
if added:
    worst = max(added, key=lambda x: x[1])
    targets.append(["gateway: p99 added latency ≤ 1 ms (Bridle enforcing, every fixed rate)",
                    ", ".join(f"{a:.2f} ms at {r}/s" for r, a in added), worst[1] <= 1.0])
b, l = by.get(("bridle_enforced", "max")), by.get(("litellm", "max"))
if b and l and "rps" in b and "rps" in l and l["rps"] and l.get("success", 0) > 0:
    x = b["rps"] / l["rps"]
    p = by.get(("bridle_pass", "max"))
    passing = f"; pass-through {p['rps']:,.0f} req/s = {p['rps'] / l['rps']:.0f}×" if p and "rps" in p else ""
    targets.append(["gateway: ≥ 50× LiteLLM's throughput (max, Bridle enforcing)",
                    f"{b['rps']:,.0f} vs {l['rps']:,.0f} req/s = {x:.1f}×{passing}", x >= 50])
json.dump({"markdown": md, "targets": targets, "runs": runs}, sys.stdout, indent=1)
