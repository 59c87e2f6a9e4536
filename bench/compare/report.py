"""Writes docs/benchmarks.md and docs/img/bench-*.png from one run of bench/run: every number
comes from the JSON files that run wrote into RESULTS (nothing is stored between runs).

usage: report.py RESULTS INPUTS OUT_MD IMG_DIR"""

import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS, INPUTS, OUT_MD, IMG = (Path(a) for a in sys.argv[1:5])
NOTES = Path(__file__).with_name("notes.md")


def load(name):
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() and path.stat().st_size else None


def machine():
    info = {}
    for line in (RESULTS / "machine.txt").read_text().splitlines():
        key, _, value = line.partition("=")
        info[key] = value
    return info


def fmt(ns):
    if ns is None:
        return "—"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs" if ns < 1e5 else f"{ns / 1e3:.0f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.3g} s"


def ratio(ns, base):
    if ns is None or not base:
        return "—"
    r = ns / base
    return f"{r:.2f}×" if r < 10 else f"{r:.0f}×"


def slope(points):
    """Least-squares slope of ln(time) against ln(size)."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x and y]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def verdict(ok):
    return "**met**" if ok else "**missed**"


out = []
targets = []  # (target, measured, ok)
info = machine()
manifest = json.loads((INPUTS / "manifest.json").read_text())
bridle = load("bridle.json") or {}
IMG.mkdir(parents=True, exist_ok=True)

# ---------------------------------------------------------------------------------------------
# 1. check
check_sections = []
py_check = load("py-check.json") or {}
node_check = load("node-check.json") or {}
if bridle.get("check"):
    files = [c["file"] for c in manifest["check"]]
    labels = [f'{c["variant"]} {c["size"]}' for c in manifest["check"]]
    sizes = {c["file"]: c["bytes"] for c in manifest["check"]}
    b = {r["file"]: r for r in bridle["check"]}
    base = {f: b[f]["check"]["median_ns"] for f in files}
    rows = [("Bridle", bridle["version"], "full check: parse + repair scan + coercions + schema (all errors) + rules",
             {f: b[f]["check"]["median_ns"] for f in files}, {f: b[f]["valid"] for f in files}),
            ("Bridle (part)", bridle["version"], "serde_json parse alone",
             {f: b[f]["parse"]["median_ns"] for f in files}, {}),
            ("Bridle (part)", bridle["version"], "schema + rules alone (parsed value)",
             {f: b[f]["validate"]["median_ns"] for f in files}, {})]
    peers = {**node_check, **py_check}
    for name, peer in peers.items():
        r = {x["file"]: x for x in peer["rows"]}
        first = " (stops at the first error)" if name == "fastjsonschema" else " (all errors)"
        parse = "JSON.parse" if name == "ajv" else "json.loads"
        rows.append((name, peer["version"], f"{parse} + validate{first}",
                     {f: r[f]["parse_validate"]["median_ns"] for f in files},
                     {f: r[f]["valid"] for f in files}))
        rows.append((name, peer["version"], "validate alone (parsed value)",
                     {f: r[f]["validate"]["median_ns"] for f in files}, {}))
    table = ["| tool | version | what is timed | " + " | ".join(
        f"{lab} ({sizes[f] / 1000:.1f} KB)" for lab, f in zip(labels, files)) + " |",
        "|---|---|---|" + "---|" * len(files)]
    for name, ver, what, times, valid in rows:
        cells = []
        for f in files:
            flag = "" if valid.get(f, None) in (None, f.startswith("check-valid")) else " ⚠ wrong verdict"
            cells.append(f"{fmt(times[f])} ({ratio(times[f], base[f])}){flag}")
        table.append(f"| {name} | {ver} | {what} | " + " | ".join(cells) + " |")
    check_sections += table
    ten = "check-valid-10KB.json"
    t10 = base[ten]
    targets.append(("check, 10 KB valid reply ≤ 25 µs", fmt(t10), t10 <= 25_000))
    if "ajv" in node_check:
        a = {x["file"]: x for x in node_check["ajv"]["rows"]}
        for f in (ten, "check-invalid-10KB.json"):
            ajv = a[f]["parse_validate"]["median_ns"]
            kind = "valid" if "valid-" in f and "invalid" not in f else "invalid"
            targets.append((f"check of the 10 KB {kind} reply at least as fast as ajv's parse + validate",
                            f"Bridle {fmt(base[f])}, ajv {fmt(ajv)} (ajv takes {ratio(ajv, base[f])} Bridle's time)",
                            base[f] <= ajv))
    # Plot: growth with reply size, valid replies.
    fig, ax = plt.subplots(figsize=(7, 4.5))
    valid_files = [c["file"] for c in manifest["check"] if c["variant"] == "valid"]
    xs = [sizes[f] / 1000 for f in valid_files]
    for name, ver, what, times, _ in rows:
        if "alone" in what and name != "Bridle (part)":
            continue
        if name == "Bridle (part)":
            continue
        ax.plot(xs, [times[f] / 1e3 for f in valid_files], marker="o",
                label=f"{name} {ver}: {what.split(' (')[0]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reply size (KB, compact JSON)")
    ax.set_ylabel("median time per reply (µs)")
    ax.set_title("selfhelp-response check, valid replies (lower is better)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(IMG / "bench-check.png", dpi=110)
    plt.close(fig)

# ---------------------------------------------------------------------------------------------
# 2. xml
xml_section = []
node_xml = load("node-xml.json") or {}
if bridle.get("xml"):
    bx = bridle["xml"][0]
    base = bx["check"]["median_ns"]
    xml_section += ["| tool | version | what is timed | median | ratio to Bridle |", "|---|---|---|---|---|",
                    f"| Bridle | {bridle['version']} | safe read into JSON + JSON Schema validation | {fmt(base)} | 1.00× |"]
    fxp = None
    for name, peer in node_xml.items():
        row = peer["rows"][0]
        fxp = row["parse"]["median_ns"]
        xml_section.append(f"| {name} | {peer['version']} | parse alone (attributes kept, no validation) | {fmt(fxp)} | {ratio(fxp, base)} |")
    targets.append(("XML, 10 KB topic-analysis reply ≤ 20 µs", fmt(base), base <= 20_000))
    if fxp:
        targets.append(("XML ≥ 10× faster than fast-xml-parser's parse",
                        f"fast-xml-parser takes {ratio(fxp, base)} Bridle's time", fxp >= 10 * base))

# ---------------------------------------------------------------------------------------------
# 3. repair
repair_section = []
misses = []
cases = json.loads((INPUTS / manifest["repair"]["file"]).read_text())
kinds = {c["name"]: c["kind"] for c in cases}
n_bad = sum(1 for c in cases if c["kind"] == "malformed")
n_reject = len(cases) - n_bad
tools = []
if bridle.get("repair"):
    tools.append(("Bridle", bridle["version"], "contract check (`any` JSON or selfhelp-response): repair + parse + validate", bridle["repair"]))
for fname, what in (("py-repair.json", "repair_json(return_objects=True); schema cases: + jsonschema"),
                    ("node-repair.json", "JSON.parse(jsonrepair(text)); schema cases: + ajv")):
    for name, peer in (load(fname) or {}).items():
        tools.append((name, peer["version"], what, peer["rows"]))
if tools:
    base_total = sum(r["median_ns"] for r in tools[0][3])
    base_median = sorted(r["median_ns"] for r in tools[0][3])[len(tools[0][3]) // 2]
    repair_section += [f"Corpus: {n_bad} malformed replies with their intended JSON, {n_reject} replies that must not be accepted "
                       "(`bench/compare/repair/`).", "",
                       "| tool | version | what is timed | exact | exact rate | false acceptances | median per case | corpus total | ratio to Bridle (total) |",
                       "|---|---|---|---|---|---|---|---|---|"]
    for name, ver, what, rows in tools:
        exact = sum(1 for r in rows if kinds[r["name"]] == "malformed" and r["exact"])
        false = [r["name"] for r in rows if kinds[r["name"]] == "reject" and r["accepted"]]
        total = sum(r["median_ns"] for r in rows)
        med = sorted(r["median_ns"] for r in rows)[len(rows) // 2]
        repair_section.append(f"| {name} | {ver} | {what} | {exact}/{n_bad} | {100 * exact / n_bad:.1f} % | "
                              f"{len(false)}/{n_reject} | {fmt(med)} | {fmt(total)} | {ratio(total, base_total)} |")
        wrong = [r for r in rows if kinds[r["name"]] == "malformed" and not r["exact"]]
        misses.append((name, wrong, false))
        if name == "Bridle":
            rate = exact / n_bad
            targets.append(("repair ≥ 98 % exact", f"{100 * rate:.1f} % ({exact}/{n_bad})", rate >= 0.98))
            targets.append(("repair: 0 false acceptances", f"{len(false)}/{n_reject}", not false))

# ---------------------------------------------------------------------------------------------
# 4. stream
stream_section = []
stream_series = []
if bridle.get("stream"):
    deltas = {r["scale"]: r["deltas"] for r in bridle["stream"]}
    scales = sorted(deltas)
    series = [("Bridle", bridle["version"], "incremental check: push every delta (early abort), complete check at the end",
               {r["scale"]: r["incremental"]["median_ns"] for r in bridle["stream"]}),
              ("Bridle", bridle["version"], "as the engine streams: + value so far (throttled: 100 ms at 50 tok/s and ⅛ growth) + SSE",
               {r["scale"]: r["partials_throttled"]["median_ns"] for r in bridle["stream"]}),
              ("Bridle", bridle["version"], "like the peers: push + value so far after every delta",
               {r["scale"]: (r["partial_every_delta"] or {}).get("median_ns") for r in bridle["stream"]})]
    for fname, what in (("py-stream.json", "jiter.from_json(bytes so far, partial_mode='trailing-strings') per delta"),
                        ("node-stream.json", None)):
        for name, peer in (load(fname) or {}).items():
            desc = what or ("parse(text so far) per delta" if name == "partial-json"
                            else "await parsePartialJson(text so far) per delta")
            series.append((name, peer["version"], desc, {r["scale"]: r["total"]["median_ns"] for r in peer["rows"]}))
    base = series[0][3]
    stream_section += ["| tool | version | what is timed | " + " | ".join(
        f"{s}× ({deltas[s]:,} deltas)" for s in scales) + " | log-log slope | ratio to Bridle at 1× |",
        "|---|---|---|" + "---|" * len(scales) + "---|---|"]
    for name, ver, what, t in series:
        pts = [(deltas[s], t.get(s)) for s in scales if t.get(s)]
        sl = slope(pts)
        cells = [fmt(t[s]) if t.get(s) else "not run ¹" for s in scales]
        shown = f"{sl:.3f}" if sl is not None else "—"
        stream_section.append(f"| {name} | {ver} | {what} | " + " | ".join(cells)
                              + f" | {shown} | {ratio(t.get(1), base.get(1))} |")
        stream_series.append((name, what, pts))
    sl = slope([(deltas[s], base[s]) for s in scales])
    targets.append(("streaming: log-log slope of the incremental check ≤ 1.05", f"{sl:.3f}", sl <= 1.05))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, what, pts in stream_series:
        ax.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], marker="o",
                label=f"{name}: {what.split(':')[0][:40]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("deltas of 4 characters")
    ax.set_ylabel("median total time for the reply (ms)")
    ax.set_title("Streaming a selfhelp-response reply (lower is better)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(IMG / "bench-stream.png", dpi=110)
    plt.close(fig)

# ---------------------------------------------------------------------------------------------
# 5. gateway, 6. closed loop (written by gateway.sh / loop.sh)
gateway = load("gateway.json")
loop = load("loop.json")

# ---------------------------------------------------------------------------------------------
out += ["# Benchmarks: Bridle side by side", "",
        "Written by `bench/run` (one command: installs the peers at pinned versions from PyPI and npm into "
        "`target/bench-peers`, writes the inputs, times every tool on the same files, writes this page and "
        "`docs/img/bench-*.png`). Every number below comes from the one run that wrote this page; ratios are "
        "peer time ÷ Bridle time measured in that run (above 1×: the peer is slower).", "",
        "## Machine and load", "",
        f"- {info.get('cpu')}, {info.get('cores')} cores, {info.get('memory_gib')} GiB, {info.get('kernel')}",
        f"- {info.get('rustc')}; {info.get('python')}; Node {info.get('node')}; commit {info.get('commit')}",
        f"- run at {info.get('date')}; load average (1, 5, 15 min) **before {info.get('load_before')}, after "
        f"{info.get('load_after')}** — the machine was shared with other work, so expect noise of ±15 % or more "
        "between runs; the ratios are measured minutes apart under the same load.",
        f"- method (the same in Rust, Python and Node: `bench/compare/timing.*`): warm-up calls for a fifth of the budget, then batches of calls "
        f"lasting about 1 ms, batches for {info.get('bench_seconds')} s per case (at least 5), the median time per call. "
        "Streaming runs are timed whole (at least 3 runs). Bridle is built in release mode with mimalloc, as the `bridle` binary ships.",
        ""]
out += ["## Targets", "", "| target | measured | verdict |", "|---|---|---|"]
if gateway:
    targets += gateway.get("targets", [])
if loop:
    targets += loop.get("targets", [])
out += [f"| {t} | {m} | {verdict(ok)} |" for t, m, ok in targets]
out += [""]
if NOTES.exists():
    out += [NOTES.read_text().strip(), ""]

out += ["## 1. Checking a selfhelp-response reply", "",
        "Inputs: `selfhelp-response` replies generated by `bridle_bench::valid_reply` / `invalid_reply` "
        "(compact JSON; the invalid one has an unknown danger level, a suggestion with `label`, an unknown "
        "block type, a radio field without options). Schema: `contracts/selfhelp-response/schema.json` "
        "(draft-07), the same file for every validator. Bridle also runs the contract's declared rules and "
        "coercions, which the validators have no counterpart for. Cells: median (ratio to Bridle's full check).",
        "", *check_sections, "", "![check time against reply size](img/bench-check.png)", ""]
out += ["## 2. XML: a 10 KB topic-analysis reply", "",
        f"Input: `bridle_bench::topic_reply(10_000)` ({manifest['xml'][0]['bytes']:,} B).", "", *xml_section, ""]
out += ["## 3. Repair accuracy and speed", "", *repair_section, ""]
for name, wrong, false in misses:
    if wrong or false:
        out.append(f"<details><summary>{name}: {len(wrong)} not exact, {len(false)} false acceptances</summary>\n")
        for r in wrong:
            got = json.dumps(r["output"], ensure_ascii=False) if r["accepted"] else "(refused)"
            out.append(f"- not exact: *{r['name']}* → `{got[:160]}`")
        for f in false:
            out.append(f"- accepted although it must not be: *{f}*")
        out.append("\n</details>\n")
out += ["## 4. Streaming", "",
        "Input: a compact `selfhelp-response` reply of at least 5,306 tokens × 4 characters "
        f"({manifest['stream'][0]['bytes']:,} B), and 2×, 4×, 8× longer replies, cut into 4-character deltas. "
        "Bridle pushes each delta into its `StreamCheck` (which spots violations no continuation can fix and "
        "stops the stream) and checks the complete reply at the end; the peers re-parse the text so far after "
        "every delta, which is how they give a value mid-stream. Cells: median total time for the whole reply.", "",
        *stream_section, "",
        "¹ A peer's next size is skipped once one run of a size took longer than `STREAM_CAP_SECONDS` (20 s); "
        "Bridle's value-after-every-delta row is run at 1× and 2× only (it is quadratic, like the peers).", "",
        "![streaming time against reply length](img/bench-stream.png)", ""]
out += ["## 5. Gateway overhead", ""]
out += gateway["markdown"] if gateway else ["Not run in this run (`PARTS` without `gateway`, or it failed: see `target/bench-compare/results/gateway.log`)."]
out += ["", "## 6. Closed loop: Bridle's turn loop vs Instructor", ""]
out += loop["markdown"] if loop else ["Not run in this run (`PARTS` without `loop`, or it failed: see `target/bench-compare/results/loop.log`)."]
# The Python package's section is written by bench/python/run.sh; a rewrite of this page keeps it.
old_page = OUT_MD.read_text() if OUT_MD.exists() else ""
begin, end = "<!-- python-package:begin -->", "<!-- python-package:end -->"
if begin in old_page and end in old_page:
    out += ["", old_page[old_page.index(begin):old_page.index(end) + len(end)]]
out += ["", "## Reproduce", "", "```sh", "bench/run                                   # everything, about 15 minutes",
        'PARTS="check xml repair stream" bench/run   # comparisons 1–4 only',
        "```", "", "Files: `bench/run`, `bench/compare/` (`bridle.rs`: Bridle's timing binary, "
        "`py/` and `node/`: the peers' scripts with pinned `requirements*.txt` and `package.json` + "
        "`package-lock.json`, `repair/`: the corpus, `loop.sh`, `gateway.sh`, `report.py`: this page).", ""]
OUT_MD.write_text("\n".join(out))
print(f"wrote {OUT_MD}", file=sys.stderr)
