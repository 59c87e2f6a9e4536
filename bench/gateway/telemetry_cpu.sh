#!/usr/bin/env bash
# What traces cost the gateway in CPU time, not throughput (which a shared machine decides):
# `bridle mock-llm` and `bridle serve` (release) started afresh for each run, with traces off or
# exported over OTLP/HTTP to the local sink (otlp_sink.py); N requests to the OpenAI-compatible
# endpoint under `selfhelp-response` (after WARMUP unmeasured ones) from a small Python load
# generator (CONCURRENCY keep-alive connections); the gateway's CPU time (utime + stime from
# /proc/PID/stat) across the N requests, as ms per 1000 requests. Off and on alternate ROUNDS
# times; the summary gives each side's median and range, and the median cost of traces.
#
#   bench/gateway/telemetry_cpu.sh                     # builds bridle (release), 3 rounds of 5000
#   BRIDLE=/tmp/bridle-old ROUNDS=5 N=5000 bench/gateway/telemetry_cpu.sh
#   SAMPLE_RATIO=0.1 bench/gateway/telemetry_cpu.sh    # [telemetry] sample_ratio when on
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
N="${N:-5000}"
WARMUP="${WARMUP:-500}"
ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-16}"
SAMPLE_RATIO="${SAMPLE_RATIO:-1.0}"
KEY="bench-key-0123456789abcdef"
HZ="$(getconf CLK_TCK)"
WORK="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
if [ -z "${BRIDLE:-}" ]; then
    echo "building bridle (release)" >&2
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
    BRIDLE="${CARGO_TARGET_DIR:-$ROOT/target}/release/bridle"
fi

cpu_ms() {
    awk -v hz="$HZ" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat"
}

# `send URL COUNT`: COUNT requests, CONCURRENCY at a time; fails unless every one answers 200.
send() {
    python3 - "$1" "$2" "$CONCURRENCY" "$KEY" <<'PY'
import http.client, json, sys, threading, urllib.parse
url, count, workers, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
target = urllib.parse.urlsplit(url)
body = json.dumps({"model": "openai", "messages": [
    {"role": "user", "content": "I keep procrastinating, any tips?"}]})
headers = {"authorization": f"Bearer {key}", "content-type": "application/json",
           "x-bridle-contract": "selfhelp-response"}
failed = []
def work(n):
    conn = http.client.HTTPConnection(target.hostname, target.port)
    for _ in range(n):
        conn.request("POST", "/v1/chat/completions", body, headers)
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            failed.append(answer.status)
threads = [threading.Thread(target=work, args=(count // workers + (i < count % workers),))
           for i in range(workers)]
for t in threads: t.start()
for t in threads: t.join()
if failed:
    sys.exit(f"{len(failed)} of {count} requests failed: {sorted(set(failed))}")
PY
}

# `one TELEMETRY`: one run; prints the gateway's CPU ms per 1000 requests.
one() {
    local telemetry="$1" run="$WORK/run-$RANDOM" env=()
    mkdir -p "$run"
    "$BRIDLE" mock-llm --port 0 --seed 7 2>"$run/mock.log" &
    local mock_pid=$!
    pids+=("$mock_pid")
    local mock sink_pid=""
    mock="$(url_in "$run/mock.log")"
    if [ "$telemetry" = on ]; then
        python3 "$ROOT/bench/gateway/otlp_sink.py" 2>"$run/sink.log" &
        sink_pid=$!
        pids+=("$sink_pid")
        env=("BRIDLE__TELEMETRY__OTLP_ENDPOINT=$(url_in "$run/sink.log")"
             "BRIDLE__TELEMETRY__SAMPLE_RATIO=$SAMPLE_RATIO")
    fi
    env "${env[@]}" OPENAI_BASE_URL="$mock/v1" OPENAI_API_KEY="sk-bench" \
        BRIDLE_USER_KEYS="bench:$KEY" BRIDLE_ADMIN_KEY="bench-admin-key-0123456789" \
        BRIDLE__SERVER__LIMITS__ENABLED=false RUST_LOG=warn \
        "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$run/data" 2>"$run/gateway.log" &
    local gateway_pid=$!
    pids+=("$gateway_pid")
    local gateway
    gateway="$(url_in "$run/gateway.log")"
    send "$gateway" "$WARMUP"
    local before after
    before=$(cpu_ms "$gateway_pid")
    send "$gateway" "$N"
    # The batch processor exports every 0.5 s: let the last batch of these requests go out.
    sleep 1
    after=$(cpu_ms "$gateway_pid")
    kill "$gateway_pid" "$mock_pid" ${sink_pid:+"$sink_pid"} 2>/dev/null || true
    wait "$gateway_pid" "$mock_pid" ${sink_pid:+"$sink_pid"} 2>/dev/null || true
    awk -v ms=$((after - before)) -v n="$N" 'BEGIN {printf "%.0f\n", ms * 1000 / n}'
}

: >"$WORK/runs"
for round in $(seq 1 "$ROUNDS"); do
    for telemetry in off on; do
        ms=$(one "$telemetry")
        echo "round $round, traces $telemetry: $ms CPU ms per 1000 requests" >&2
        echo "$telemetry $ms" >>"$WORK/runs"
    done
done
python3 - "$WORK/runs" "$N" "$ROUNDS" "$SAMPLE_RATIO" <<'PY'
import statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
side = {s: sorted(int(ms) for t, ms in runs if t == s) for s in ("off", "on")}
off, on = statistics.median(side["off"]), statistics.median(side["on"])
print(f"gateway CPU ms per 1000 requests ({sys.argv[3]} rounds of {sys.argv[2]}, "
      f"sample_ratio {sys.argv[4]} when on)")
for s in ("off", "on"):
    print(f"  traces {s}: median {statistics.median(side[s]):.0f} "
          f"(runs {', '.join(map(str, side[s]))})")
print(f"  traces cost {on - off:.0f} ms per 1000 requests, {100 * (on - off) / off:+.1f} %")
PY
