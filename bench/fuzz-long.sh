#!/usr/bin/env bash
# The long fuzz run: every fuzz target (repair, JSON check, markers, cards, XML, streaming, …)
# until RUNS executions each (default 10 million) without a crash; CI runs 30 s of each.
#
#   bench/fuzz-long.sh                 # 10 M runs per target
#   RUNS=1000000 bench/fuzz-long.sh    # shorter
#   TARGETS="xml stream" bench/fuzz-long.sh
#
# Writes bench/fuzz-results.md, or OUT (target, runs, seconds, runs/s, corpus size), a row as each
# target ends. A crash stops the run with the crashing input in fuzz/artifacts/<target>.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
RUNS="${RUNS:-10000000}"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
TARGETS="${TARGETS:-$(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list)}"
OUT="${OUT:-$ROOT/bench/fuzz-results.md}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# The table is written before the first target and a row added as each target ends, so a run
# stopped early keeps the targets it finished.
{
    echo "# Long fuzz run"
    echo
    echo "Measured $(date -u +%Y-%m-%d) by \`bench/fuzz-long.sh\` (libFuzzer via cargo-fuzz, no sanitizer,"
    echo "inputs up to 64 KiB, one core of $(nproc): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))."
    echo
    echo "| target | executions | seconds | exec/s | corpus | crashes |"
    echo "|---|---|---|---|---|---|"
} >"$OUT"
for target in $TARGETS; do
    echo "fuzzing $target for $RUNS runs" >&2
    start=$(date +%s)
    if ! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --sanitizer none --release "$target" -- \
        -runs="$RUNS" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "fuzz target $target crashed (artifacts in fuzz/artifacts/$target)" >&2
        exit 1
    fi
    seconds=$(( $(date +%s) - start ))
    done_runs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -n 1)
    corpus=$(grep -oE 'corp: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo "?")
    rate=$(( ${done_runs:-0} / (seconds > 0 ? seconds : 1) ))
    echo "| $target | ${done_runs:-?} | $seconds | $rate | $corpus | none |" | tee -a "$OUT"
done
