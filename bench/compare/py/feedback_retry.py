"""Feedback quality (issue 33, part 5): the share of the mock's content faults that Bridle's
retry feedback gets fixed on the first retry, per fault kind and contract.

For each contract and each content fault, a fresh `bridle mock-llm --faults FAULT
--fault-rate 1` (every first reply broken that way) behind a fresh `bridle serve`; TURNS
questions through the OpenAI-compatible endpoint (`x-bridle-contract`, 3 attempts). The mock
fixes a fault on the next attempt only when the feedback names what it broke (the JSON pointer
of the broken place; a whole-reply fault is named by any feedback), so "fixed on the first
retry" measures whether the feedback points at the right place. Read from the mock's request
log: per turn, attempt 1's fault, and whether attempt 2 came and was clean. Faults that Bridle
repairs without a retry (fence, prose, trailing comma) show as "repaired, no retry". The rule
faults (`broken_rule`: a `unique`, `less_than` or `implies` rule broken; `broken_expr`: an
expression rule broken; the schema still met) apply only to contracts with such rules, and only
to replies where a small edit can break one.

usage: [FAULTS=a,b] [CONTRACTS=c,d] feedback_retry.py BRIDLE_BINARY [TURNS] [--json]
       → a Markdown table (or JSON) on stdout
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

FAULTS = ["fence", "prose", "trailing_comma", "wrong_key", "missing_required", "wrong_enum",
          "truncate", "plain_text", "broken_rule", "broken_expr"]
CONTRACTS = ["selfhelp-response", "table-chat", "question-cards", "topic-analysis"]
# A subset: FAULTS=broken_expr CONTRACTS=selfhelp-response feedback_retry.py BIN 100
FAULTS = os.environ["FAULTS"].split(",") if os.environ.get("FAULTS") else FAULTS
CONTRACTS = os.environ["CONTRACTS"].split(",") if os.environ.get("CONTRACTS") else CONTRACTS
KEY = "bench-key-0123456789abcdef"


def started(cmd, log, env=None):
    """Starts `cmd` with stderr to `log`; returns (process, the first http:// address it printed)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    for _ in range(300):
        found = re.search(r"http://[0-9.:]+", open(log).read())
        if found:
            return proc, found.group(0)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{cmd[1]} did not start: {open(log).read()[-2000:]}")


def post(url, body, headers):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def run(binary, contract, fault, turns, work):
    mock, mock_url = started([binary, "mock-llm", "--port", "0", "--seed", "7", "--fault-rate", "1",
                              "--faults", fault], f"{work}/mock.log")
    env = dict(os.environ, OPENAI_BASE_URL=f"{mock_url}/v1", OPENAI_API_KEY="sk-bench",
               BRIDLE_USER_KEYS=f"bench:{KEY}", BRIDLE_ADMIN_KEY="bench-admin-key-0123456789",
               BRIDLE__SERVER__LIMITS__ENABLED="false", RUST_LOG="warn")
    gateway, url = started([binary, "serve", "--bind", "127.0.0.1:0", "--data-dir",
                            f"{work}/data-{contract}-{fault}"], f"{work}/gateway.log", env)
    try:
        for n in range(turns):
            post(f"{url}/v1/chat/completions",
                 {"model": "openai", "messages": [
                     {"role": "user", "content": f"Question {n}: how do I calm down before a talk?"}]},
                 {"authorization": f"Bearer {KEY}", "content-type": "application/json",
                  "x-bridle-contract": contract})
        with urllib.request.urlopen(f"{mock_url}/_mock/requests", timeout=30) as r:
            log = json.load(r)
    finally:
        for proc in (gateway, mock):
            proc.kill()
            proc.wait()
    entries = log if isinstance(log, list) else log.get("requests", log.get("items", []))
    answers = [e.get("answer") or {} for e in entries if e.get("method") == "POST"]
    return tally(answers)


def tally(answers):
    """Per turn (the requests come one turn at a time, attempts in order): attempt 1 faulty,
    then a second attempt or none, and the second attempt clean."""
    faulty = retried = fixed = 0
    for i, a in enumerate(answers):
        if a.get("attempt") != 1 or not a.get("fault"):
            continue
        faulty += 1
        nxt = answers[i + 1] if i + 1 < len(answers) else {}
        if nxt.get("attempt") == 2:
            retried += 1
            fixed += not nxt.get("fault")
    return {"faulty_first": faulty, "retried": retried, "fixed_first_retry": fixed}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary, turns = args[0], int(args[1]) if len(args) > 1 else 20
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for contract in CONTRACTS:
            for fault in FAULTS:
                results[(contract, fault)] = run(binary, contract, fault, turns, work)
                print(f"{contract} {fault}: {results[(contract, fault)]}", file=sys.stderr)
    if "--json" in sys.argv:
        json.dump([{"contract": c, "fault": f, **r} for (c, f), r in results.items()], sys.stdout,
                  indent=1)
        return
    print("| contract | " + " | ".join(FAULTS) + " |")
    print("|---|" + "---|" * len(FAULTS))
    for contract in CONTRACTS:
        cells = []
        for fault in FAULTS:
            r = results[(contract, fault)]
            if not r["faulty_first"]:
                cells.append("— (not applicable)")
            elif not r["retried"]:
                cells.append(f"repaired, no retry ({r['faulty_first']})")
            else:
                share = 100 * r["fixed_first_retry"] / r["retried"]
                cells.append(f"{r['fixed_first_retry']}/{r['retried']} ({share:.0f} %)"
                             + (f", {r['faulty_first'] - r['retried']} repaired"
                                if r["faulty_first"] > r["retried"] else ""))
        print(f"| {contract} | " + " | ".join(cells) + " |")


main()
