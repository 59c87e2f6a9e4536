#!/usr/bin/env bash
# Gateway overhead: the latency `bridle serve` adds (contract in the prompt, upstream call,
# check, every attempt stored in SQLite) over calling `bridle mock-llm` directly, at fixed
# request rates, and the most requests per second each sustains. Load generator: oha.
#
#   bench/gateway/run.sh                 # rates 250 500 1000, 5 trials of 10 s each
#   RATES="1000" TRIALS=9 bench/gateway/run.sh
#   DATA_DIR=/dev/shm bench/gateway/run.sh   # the store on a RAM disk (a fresh directory in it)
#   PIN=0 bench/gateway/run.sh           # no CPU pinning
#   BRIDLE=/tmp/bridle-old bench/gateway/run.sh   # a given binary (no build)
#   COMMIT=after_reply OUT=bench/gateway/results-after-reply.md bench/gateway/run.sh
#                                        # store_commit: answer, then commit (default before_reply)
#   TELEMETRY=1 OUT=bench/gateway/results-telemetry.md bench/gateway/run.sh
#                                        # traces on: OTLP/HTTP export to a local sink
#                                        # (otlp_sink.py, on the load generator's cores)
#
# Writes bench/gateway/results.md (and prints it). Everything runs on this machine. With PIN=1
# (the default on two or more cores) the gateway gets a core of its own (GATEWAY_CPUS, default
# 1) and the load generator and the mock share the others (LOAD_CPUS, default 0): otherwise
# their bursts land on the gateway's core and the tail measures the scheduler, not Bridle.
#
# Each rate runs TRIALS times (DURATION seconds each), direct and through Bridle one right
# after the other, so both see the machine in the same state. A p99 of 10,000 requests is its
# 100 slowest: one burst of another process (a database's housekeeping, the kernel's memory
# monitor) can decide it. So each trial also reports the CPU time the rest of the machine took
# while it ran (busy time from /proc/stat minus oha's, the mock's and the gateway's), and the
# summary gives the median trial and the range of all of them, never a picked one.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gateway/results.md}"
RATES="${RATES:-250 500 1000}"
DURATION="${DURATION:-10}"
TRIALS="${TRIALS:-5}"
CONNECTIONS="${CONNECTIONS:-64}"
PIN="${PIN:-$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)}"
GATEWAY_CPUS="${GATEWAY_CPUS:-1}"
LOAD_CPUS="${LOAD_CPUS:-0}"
COMMIT="${COMMIT:-before_reply}"
TELEMETRY="${TELEMETRY:-0}"
WORK="$(mktemp -d)"
KEY="bench-key-0123456789abcdef"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK" "$DATA"
}
trap cleanup EXIT
DATA="${DATA_DIR:-$WORK}/bridle-bench-$$"
# Prefixes that pin a command to the load generator's and the gateway's cores (empty when
# pinning is off). A prefix, not a shell function: a function run with `&` is a subshell, and
# killing it would leave the server it started running.
ON_LOAD=()
ON_GATEWAY=()
if [ "$PIN" = 1 ]; then
    ON_LOAD=(taskset -c "$LOAD_CPUS")
    ON_GATEWAY=(taskset -c "$GATEWAY_CPUS")
fi

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OHA="$(oha_bin)"
HZ="$(getconf CLK_TCK)"

if [ -z "${BRIDLE:-}" ]; then
    echo "building bridle (release)" >&2
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
    BRIDLE="$ROOT/target/release/bridle"
fi


"${ON_LOAD[@]}" "$BRIDLE" mock-llm --port 0 --seed 7 2>"$WORK/mock.log" &
MOCK_PID=$!
pids+=("$MOCK_PID")
MOCK="$(url_in "$WORK/mock.log")"
if [ "$TELEMETRY" = 1 ]; then
    "${ON_LOAD[@]}" python3 "$ROOT/bench/gateway/otlp_sink.py" 2>"$WORK/sink.log" &
    SINK_PID=$!
    pids+=("$SINK_PID")
    BRIDLE__TELEMETRY__OTLP_ENDPOINT="$(url_in "$WORK/sink.log")"
    export BRIDLE__TELEMETRY__OTLP_ENDPOINT
fi
OPENAI_BASE_URL="$MOCK/v1" OPENAI_API_KEY="sk-bench" BRIDLE_USER_KEYS="bench:$KEY" \
    BRIDLE_ADMIN_KEY="bench-admin-key-0123456789" BRIDLE__SERVER__LIMITS__ENABLED=false \
    BRIDLE__STORE_COMMIT="$COMMIT" RUST_LOG=warn "${ON_GATEWAY[@]}" "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$DATA" \
    2>"$WORK/gateway.log" &
GATEWAY_PID=$!
pids+=("$GATEWAY_PID")
GATEWAY="$(url_in "$WORK/gateway.log")"

# Through Bridle: a question under the built-in contract, named by header.
echo '{"model":"openai","messages":[{"role":"user","content":"I keep procrastinating, any tips?"}]}' >"$WORK/named.json"

# CPU time (ms) of process PID so far.
cpu_ms() {
    awk -v hz="$HZ" '{print ($14 + $15) * 1000 / hz}' "/proc/$1/stat"
}

# CPU time (ms) the machine has been busy so far, all cores (idle and iowait left out).
busy_ms() {
    awk -v hz="$HZ" '/^cpu /{print ($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz}' /proc/stat
}

# CPU time (ms) of the mock and the gateway together so far.
servers_ms() {
    echo $(($(cpu_ms "$MOCK_PID" | cut -d. -f1) + $(cpu_ms "$GATEWAY_PID" | cut -d. -f1)))
}

# One oha run; prints "rps p50_ms p99_ms success_rate p95_ms p99.9_ms other_cpu_ms", the last
# being the CPU time everything but oha, the mock and the gateway took meanwhile.
run() {
    local url="$1" body="$2" rate="$3" duration="$4"
    shift 4
    local args=(-z "${duration}s" -c "$CONNECTIONS" --no-tui --output-format json -m POST
        -H "content-type: application/json" -H "authorization: Bearer $KEY" -D "$body")
    if [ "$rate" != "max" ]; then args+=(-q "$rate" --latency-correction); fi
    local busy0 servers0 oha=0
    busy0=$(busy_ms)
    servers0=$(servers_ms)
    "${ON_LOAD[@]}" "$OHA" "${args[@]}" "$@" "$url" >"$WORK/oha.json" &
    local pid=$!
    # oha's own CPU time, read until it exits (it runs `duration` seconds).
    sleep "$duration"
    while kill -0 "$pid" 2>/dev/null; do
        oha=$(cpu_ms "$pid" 2>/dev/null || echo "$oha")
        sleep 0.05
    done
    wait "$pid"
    python3 - "$WORK/oha.json" "$busy0" "$(busy_ms)" "$servers0" "$(servers_ms)" "$oha" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]; p = r["latencyPercentiles"]
busy0, busy1, servers0, servers1, oha = map(float, sys.argv[2:])
other = max(0.0, (busy1 - busy0) - (servers1 - servers0) - oha)
print(f'{s["requestsPerSec"]:.0f} {p["p50"]*1000:.3f} {p["p99"]*1000:.3f} {s["successRate"]:.4f} {p["p95"]*1000:.3f} {p["p99.9"]*1000:.3f} {other:.0f}')
EOF
}

direct="$MOCK/v1/chat/completions"
through="$GATEWAY/v1/chat/completions"
echo "warming up" >&2
run "$through" "$WORK/named.json" max 3 -H "x-bridle-contract: selfhelp-response" >/dev/null
# Direct: exactly the body Bridle sent upstream for that question (its stored request_payload:
# the contract's instructions as the system message, the user's question), so the mock does
# the same work either way and the difference is what the gateway adds.
ADMIN=(-H "authorization: Bearer bench-admin-key-0123456789")
# (The newest conversations may have been cut off when the warm-up ended: take an older one.)
conversation=$(curl -sf "${ADMIN[@]}" "$GATEWAY/admin/v1/conversations?offset=100&limit=1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')
curl -sf "${ADMIN[@]}" "$GATEWAY/admin/v1/conversations/$conversation" | python3 -c '
import json, sys
detail = json.load(sys.stdin)
sent = [m["request_payload"] for m in detail["messages"] if m.get("request_payload")]
print(json.dumps(sent[0]["body"]))' >"$WORK/direct.json"
run "$direct" "$WORK/direct.json" max 3 >/dev/null

# One line per trial: rate, trial, direct p50/p99, Bridle rps/p50/p95/p99/p99.9/success, and
# the CPU time the rest of the machine took during the direct and the Bridle run.
: >"$WORK/trials.tsv"
for rate in $RATES; do
    for trial in $(seq 1 "$TRIALS"); do
        echo "rate $rate/s, trial $trial of $TRIALS" >&2
        read -r _ d_p50 d_p99 _ _ _ d_other < <(run "$direct" "$WORK/direct.json" "$rate" "$DURATION")
        read -r g_rps g_p50 g_p99 g_ok g_p95 g_p999 g_other < <(run "$through" "$WORK/named.json" "$rate" "$DURATION" -H "x-bridle-contract: selfhelp-response")
        printf '%s\t' "$rate" "$trial" "$d_p50" "$d_p99" "$g_rps" "$g_p50" "$g_p95" "$g_p99" "$g_p999" "$g_ok" "$d_other" >>"$WORK/trials.tsv"
        printf '%s\n' "$g_other" >>"$WORK/trials.tsv"
    done
done
echo "max throughput" >&2
read -r d_max _ _ _ _ _ < <(run "$direct" "$WORK/direct.json" max "$DURATION")
read -r g_max g_max50 g_max99 g_maxok _ _ < <(run "$through" "$WORK/named.json" max "$DURATION" -H "x-bridle-contract: selfhelp-response")

traces="off"
if [ "$TELEMETRY" = 1 ]; then
    kill -TERM "$SINK_PID" 2>/dev/null || true
    wait "$SINK_PID" 2>/dev/null || true
    traces="on, exported over OTLP/HTTP to a local sink on the load generator's cores ($(tail -1 "$WORK/sink.log"))"
fi
stored=$(curl -s -H "authorization: Bearer bench-admin-key-0123456789" "$GATEWAY/admin/v1/stats" |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("turns", "?"))' 2>/dev/null || echo "?")

{
    echo "# Gateway overhead"
    echo
    echo "Measured $(date -u +%Y-%m-%d) by \`bench/gateway/run.sh\` with oha $OHA_VERSION ($CONNECTIONS connections,"
    echo "$TRIALS trials of ${DURATION} s per rate, latency corrected for coordinated omission). Machine: $(nproc) cores,"
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB;"
    if [ "$PIN" = 1 ]; then
        echo "\`bridle serve\` pinned to CPU $GATEWAY_CPUS; oha and \`bridle mock-llm\` pinned to CPU $LOAD_CPUS."
    else
        echo "the load generator, \`bridle mock-llm\` and \`bridle serve\` share these cores (no pinning)."
    fi
    echo "Store: SQLite in \`$([ -n "${DATA_DIR:-}" ] && echo "$DATA_DIR" || echo "a temporary directory")\` ($(df -T "$(dirname "$DATA")" | awk 'NR==2{print $2}')),"
    echo "\`store_commit = \"$COMMIT\"\`. Traces: $traces."
    echo
    echo "Direct: oha → mock-llm with the very body Bridle sends upstream for the same question (taken"
    echo "from a stored \`request_payload\`: the contract's instructions and the question), so the mock's"
    echo "work is the same both ways."
    echo "Through Bridle: oha → \`bridle serve\` (\`x-bridle-contract: selfhelp-response\`: instructions"
    echo "into the prompt, upstream call to the same mock over HTTP, repair + parse + validate + rules,"
    echo "a conversation, the user message and the attempt stored in SQLite) → mock-llm."
    echo
    python3 "$ROOT/bench/gateway/summary.py" "$WORK/trials.tsv"
    echo
    echo "Max throughput (closed loop, $CONNECTIONS connections): direct $d_max req/s; through Bridle"
    echo "$g_max req/s (p50 $g_max50 ms, p99 $g_max99 ms, success $g_maxok). Turns stored: $stored."
} | tee "$OUT"
