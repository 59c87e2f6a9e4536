#!/usr/bin/env bash
# json-repair's own test suite through `bridle repair` (issue 33, "never a fragment"): how many
# of its distinct malformed inputs Bridle repairs to the intended value, refuses, repairs to
# another value, or — never — cuts to a strict part of what was written. See
# py/json_repair_suite.py for the classes.
#
#   bench/compare/json_repair_suite.sh                    # clone the suite, summary
#   JSON_REPAIR_TESTS=DIR bench/compare/json_repair_suite.sh --list refuses
#
# The tests are not in json-repair's PyPI source distribution (its MANIFEST.in prunes
# `tests/`), so they are cloned from the project's repository into a temporary directory, read,
# and dropped — never committed. JSON_REPAIR_TESTS points at a `tests/` directory instead.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
TESTS="${JSON_REPAIR_TESTS:-}"
if [ -z "$TESTS" ]; then
    git clone --quiet --depth 1 https://github.com/mangiucugna/json_repair "$WORK/json_repair"
    TESTS="$WORK/json_repair/tests"
    grep -m1 '^version' "$WORK/json_repair/pyproject.toml" >&2
fi
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
python3 "$ROOT/bench/compare/py/json_repair_suite.py" "$TESTS" "${CARGO_TARGET_DIR:-$ROOT/target}/release/bridle" "$@"
