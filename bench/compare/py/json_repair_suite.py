"""json-repair's own test suite through `bridle repair` (issue 33, "never a fragment").

json-repair's tests are Python asserts of the form `assert repair_json(TEXT, ...) == EXPECTED`.
This script reads them with `ast` (never runs them), keeps each distinct TEXT that is not
valid JSON with the value the library's authors meant it to become (`EXPECTED`, parsed when it
is JSON text; `""` means "nothing to repair"), runs `bridle repair` over each and sorts the
outcomes:

- agrees     — Bridle returns the intended value (or both see nothing to return);
- refuses    — Bridle returns nothing (a `parse`, `truncated`, `ambiguous`, … violation);
- differs    — Bridle returns another value that is no part of the intended one;
- one of several — Bridle returns one whole document of several the model wrote (each in its
               own code fence, prose between), the library a list of all of them: no part of
               a document is lost, the other documents are left out;
- fragment   — Bridle returns a strict part of the intended value (an inner value, or an object
               or array with members or items left out): what the model wrote, silently cut.
               Must be 0.

The tests are not in json-repair's source distribution on PyPI (its MANIFEST.in prunes
`tests/`); they come from the project's repository, e.g.
`git clone --depth 1 https://github.com/mangiucugna/json_repair` and pass its `tests/`. They
are read at bench time and never committed.

usage: json_repair_suite.py TESTS_DIR BRIDLE_BINARY [--json] [--list KIND]
(bench/compare/json_repair_suite.sh clones the tests, builds Bridle and runs this.)
"""

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

# Keyword arguments that do not change what the text was meant to be.
NEUTRAL = {"return_objects", "skip_json_loads", "ensure_ascii", "stream_stable", "indent",
           "logging"}
# `loads(TEXT)` is `repair_json(TEXT, return_objects=True)`.
CALLS = {"repair_json", "loads"}
# The test modules that exercise plain repair (the schema, CLI, file and performance tests
# exercise other features).
MODULES = ["test_json_repair.py", "test_parse_array.py", "test_parse_comment.py",
           "test_parse_number.py", "test_parse_object.py", "test_parse_string.py"]
NOTHING = object()


def intended(expected, return_objects):
    """The value the test expects, or NOTHING when it expects no value."""
    if return_objects:
        return NOTHING if expected == "" else expected
    if not isinstance(expected, str) or expected == "":
        return NOTHING
    return json.loads(expected)


def cases(tests_dir):
    """[(input, intended value)], one per distinct malformed input, in file order."""
    seen, out = set(), []
    for name in MODULES:
        tree = ast.parse((Path(tests_dir) / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
                continue
            test = node.test
            call = test.left
            if not (len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                    and isinstance(call, ast.Call) and call.args
                    and getattr(call.func, "id", getattr(call.func, "attr", "")) in CALLS):
                continue
            try:
                text = ast.literal_eval(call.args[0])
                options = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                expected = ast.literal_eval(test.comparators[0])
            except (ValueError, SyntaxError, TypeError):
                continue  # built at run time: not a literal case
            if not isinstance(text, str) or len(call.args) > 1 or set(options) - NEUTRAL:
                continue
            if text in seen:
                continue
            try:
                json.loads(text)
                continue  # valid JSON: nothing to repair
            except ValueError:
                pass
            if options.get("logging"):  # (value, log)
                if not isinstance(expected, tuple) or len(expected) != 2:
                    continue
                expected = expected[0]
            objects = options.get("return_objects", False) or getattr(call.func, "id", "") == "loads"
            try:
                value = intended(expected, objects)
            except ValueError:
                continue
            seen.add(text)
            out.append((text, value))
    return out


def bridle(binary, text):
    """Bridle's value for `text`, or NOTHING when it refuses."""
    run = subprocess.run([binary, "repair", "-"], input=text.encode(), capture_output=True,
                         timeout=30)
    if run.returncode != 0:
        return NOTHING
    try:
        return json.loads(run.stdout)
    except ValueError:
        return NOTHING


def same(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


def within(part, whole):
    """`part` equals `whole` with members or items left out (recursively), or equals it."""
    if same(part, whole):
        return True
    if isinstance(part, dict) and isinstance(whole, dict):
        return all(k in whole and within(v, whole[k]) for k, v in part.items())
    if isinstance(part, list) and isinstance(whole, list):
        i = 0
        for item in part:  # a subsequence, each item within its match
            while i < len(whole) and not within(item, whole[i]):
                i += 1
            if i == len(whole):
                return False
            i += 1
        return True
    return False


def fragment(value, whole):
    """`value` is a strict part of `whole`: within it or within one of its inner values."""
    if same(value, whole) or not isinstance(value, (dict, list)):
        return False
    if within(value, whole):
        return True
    inner = whole.values() if isinstance(whole, dict) else whole if isinstance(whole, list) else []
    return any(fragment(value, v) or same(value, v) for v in inner)


def fenced(text):
    """How many code fences `text` has, and the values of those that hold valid JSON."""
    bodies = re.findall(r"```(?:json)?(.*?)```", text, re.S)
    values = []
    for body in bodies:
        try:
            values.append(json.loads(body))
        except ValueError:
            pass
    return len(bodies), values


def classify(text, got, want):
    if got is NOTHING:
        return "agrees" if want is NOTHING else "refuses"
    if want is not NOTHING and same(got, want):
        return "agrees"
    fences, documents = fenced(text)
    if fences > 1 and any(same(got, d) for d in documents):
        return "one of several"
    if want is not NOTHING and fragment(got, want):
        return "fragment"
    return "differs"


def main():
    args = sys.argv[1:]
    tests_dir, binary = args[0], args[1]
    rows = []
    for text, want in cases(tests_dir):
        got = bridle(binary, text)
        rows.append({"input": text, "kind": classify(text, got, want),
                     "intended": None if want is NOTHING else want,
                     "bridle": None if got is NOTHING else got})
    counts = Counter(r["kind"] for r in rows)
    summary = {"inputs": len(rows), **{k: counts.get(k, 0)
                                       for k in ["agrees", "refuses", "differs", "one of several",
                                                 "fragment"]}}
    if "--json" in args:
        json.dump({"summary": summary, "rows": rows}, sys.stdout, indent=1, ensure_ascii=False)
        return
    print(json.dumps(summary))
    if "--list" in args:
        kind = args[args.index("--list") + 1]
        for r in rows:
            if r["kind"] == kind:
                print(json.dumps({k: r[k] for k in ["input", "intended", "bridle"]},
                                 ensure_ascii=False))


main()
