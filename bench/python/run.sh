#!/usr/bin/env bash
# The Python package's benchmarks (issue 32), in one run on this machine: builds the bridle
# wheel (release) and installs it with the pinned peers (requirements.txt) into
# target/bench-peers/python, then
#   1. check: the 10 KB selfhelp-response check from Python — bridle against jsonschema-rs and
#      jsonschema (json.loads + validate), the inputs of bench/run's comparison 1 (check.py);
#   2. loop: bridle.complete against Instructor on the same fault-injecting `bridle mock-llm`
#      (loop.py, ../compare/py/loop_instructor.py) — success rate, calls and tokens per success;
# and writes bench/python/results.md and the "Python package" section of docs/benchmarks.md.
#
#   bench/python/run.sh                    # both (a few minutes)
#   PARTS=check bench/python/run.sh        # one part (check loop)
#   BENCH_SECONDS=3 LOOP_TURNS=400 ...     # time per measured case (default 2), turns (default 200)
#   BUILD_PROFILE=dev ...                  # build the input generator and the mock in debug
#                                          # (quicker to build; neither is timed — the wheel is
#                                          # always release; the loop's wall time then is not
#                                          # comparable with bench/run's)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/bench/python"
PARTS="${PARTS:-check loop}"
TURNS="${LOOP_TURNS:-200}"
ATTEMPTS="${LOOP_ATTEMPTS:-3}"
FAULTS="fence,prose,trailing_comma,wrong_key,missing_required,wrong_enum,truncate,plain_text"
export BENCH_SECONDS="${BENCH_SECONDS:-2}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROFILE="${BUILD_PROFILE:-release}"
OUT_DIR="$TARGET/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")"
VENV="$ROOT/target/bench-peers/python"
WORK="$ROOT/target/bench-python"
has() { [[ " $PARTS " == *" $1 "* ]]; }
say() { echo "[bench/python $(date +%H:%M:%S)] $*" >&2; }
mkdir -p "$WORK/results"

# --- the package and the peers -----------------------------------------------------------
stamp="$(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "installing the peers into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" "maturin==1.16.0"
    echo "$stamp" >"$VENV/.stamp"
fi
say "building the bridle wheel (release)"
rm -f "$TARGET"/wheels/bridle-*.whl
CARGO_TARGET_DIR="$TARGET" "$VENV/bin/maturin" build --release --locked --quiet \
    --manifest-path "$ROOT/python/Cargo.toml" --out "$TARGET/wheels" >&2
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall "$TARGET"/wheels/bridle-*.whl
PY="$VENV/bin/python"

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
    echo "python=$("$PY" --version 2>&1)"
    echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo '+changes')"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "tools_profile=$PROFILE"
} >"$WORK/results/machine.txt"

if has check; then
    say "writing the inputs (bench/run's generator)"
    cargo build --profile "$PROFILE" --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle-bench --example compare
    "$OUT_DIR/examples/compare" gen "$WORK/inputs"
    say "check: bridle, jsonschema-rs, jsonschema ($BENCH_SECONDS s per case)"
    "$PY" "$HERE/check.py" "$WORK/inputs" >"$WORK/results/check.json"
fi

if has loop; then
    cargo build --profile "$PROFILE" --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
    BRIDLE="$OUT_DIR/bridle"
    # shellcheck source=../lib.sh
    source "$ROOT/bench/lib.sh"
    pids=()
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
    for side in contract model instructor; do
        "$BRIDLE" mock-llm --port 0 --seed 7 --fault-rate 0.25 --faults "$FAULTS" >/dev/null 2>"$WORK/mock-$side.log" &
        pids+=("$!")
        url="$(url_in "$WORK/mock-$side.log")"
        say "loop: $side, $TURNS turns against $url"
        if [ "$side" = instructor ]; then
            (cd "$ROOT/bench/compare/py" && "$PY" loop_instructor.py "$url/v1" "$TURNS" "$ATTEMPTS") >"$WORK/results/loop-$side.json"
        else
            "$PY" "$HERE/loop.py" "$url/v1" "$TURNS" "$ATTEMPTS" "$side" >"$WORK/results/loop-$side.json"
        fi
        curl -sf "$url/_mock/requests" >"$WORK/results/mock-$side.json"
    done
fi
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/results/machine.txt"
"$PY" "$HERE/summary.py" "$WORK/results" "$FAULTS" "$ATTEMPTS" "$HERE/results.md" "$ROOT/docs/benchmarks.md"
