#!/usr/bin/env bash
# Gateway overhead: the latency `bridle serve` adds (contract in the prompt, upstream call,
# check, every attempt stored in SQLite) over calling `bridle mock-llm` directly, at fixed
# request rates, and the most requests per second each sustains. Load generator: oha.
#
#   bench/gateway/run.sh                 # rates 250 500 1000, 15 s each
#   RATES="1000" DURATION=30 bench/gateway/run.sh
#
# Writes bench/gateway/results.md (and prints it). Everything runs on this machine: the load
# generator, the mock and the gateway share its cores, as the figures say.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gateway/results.md}"
RATES="${RATES:-250 500 1000}"
DURATION="${DURATION:-15}"
CONNECTIONS="${CONNECTIONS:-64}"
OHA_VERSION="1.14.0"
TOOLS="$ROOT/target/bench-tools"
WORK="$(mktemp -d)"
KEY="bench-key-0123456789abcdef"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

oha_bin() {
    if command -v oha >/dev/null; then
        command -v oha
    elif [ -x "$TOOLS/bin/oha" ]; then
        echo "$TOOLS/bin/oha"
    else
        echo "installing oha $OHA_VERSION into $TOOLS" >&2
        cargo install oha --version "$OHA_VERSION" --locked --root "$TOOLS" >&2
        echo "$TOOLS/bin/oha"
    fi
}
OHA="$(oha_bin)"

echo "building bridle (release)" >&2
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
BRIDLE="$ROOT/target/release/bridle"

# The URL a server printed on the first line of its log (waits for it).
url_in() {
    local log="$1"
    for _ in $(seq 1 100); do
        if grep -qo 'http://[0-9.:]*' "$log" 2>/dev/null; then
            grep -o 'http://[0-9.:]*' "$log" | head -1
            return
        fi
        sleep 0.1
    done
    echo "server did not start: $(cat "$log")" >&2
    return 1
}

"$BRIDLE" mock-llm --port 0 --seed 7 2>"$WORK/mock.log" &
pids+=("$!")
MOCK="$(url_in "$WORK/mock.log")"
OPENAI_BASE_URL="$MOCK/v1" OPENAI_API_KEY="sk-bench" BRIDLE_USER_KEYS="bench:$KEY" \
    BRIDLE_ADMIN_KEY="bench-admin-key-0123456789" BRIDLE__SERVER__LIMITS__ENABLED=false \
    RUST_LOG=warn "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$WORK/data" 2>"$WORK/gateway.log" &
pids+=("$!")
GATEWAY="$(url_in "$WORK/gateway.log")"

SCHEMA="$ROOT/contracts/selfhelp-response/schema.json"
# Direct: the mock answers a json_schema request with a valid selfhelp-response reply.
python3 - "$SCHEMA" >"$WORK/direct.json" <<'EOF'
import json, sys
schema = json.load(open(sys.argv[1]))
print(json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "I keep procrastinating, any tips?"}],
                  "response_format": {"type": "json_schema", "json_schema": {"name": "selfhelp", "schema": schema}}}))
EOF
# Through Bridle: the same question under the built-in contract, named by header.
echo '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"I keep procrastinating, any tips?"}]}' >"$WORK/named.json"

# One oha run; prints "rps p50_ms p99_ms success_rate".
run() {
    local url="$1" body="$2" rate="$3" duration="$4"
    shift 4
    local args=(-z "${duration}s" -c "$CONNECTIONS" --no-tui --output-format json -m POST
        -H "content-type: application/json" -H "authorization: Bearer $KEY" -D "$body")
    if [ "$rate" != "max" ]; then args+=(-q "$rate" --latency-correction); fi
    "$OHA" "${args[@]}" "$@" "$url" >"$WORK/oha.json"
    python3 - "$WORK/oha.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]; p = r["latencyPercentiles"]
print(f'{s["requestsPerSec"]:.0f} {p["p50"]*1000:.3f} {p["p99"]*1000:.3f} {s["successRate"]:.4f}')
EOF
}

direct="$MOCK/v1/chat/completions"
through="$GATEWAY/v1/chat/completions"
echo "warming up" >&2
run "$direct" "$WORK/direct.json" max 3 >/dev/null
run "$through" "$WORK/named.json" max 3 -H "x-bridle-contract: selfhelp-response" >/dev/null

rows=()
for rate in $RATES; do
    echo "rate $rate/s" >&2
    read -r d_rps d_p50 d_p99 d_ok < <(run "$direct" "$WORK/direct.json" "$rate" "$DURATION")
    read -r g_rps g_p50 g_p99 g_ok < <(run "$through" "$WORK/named.json" "$rate" "$DURATION" -H "x-bridle-contract: selfhelp-response")
    add50=$(python3 -c "print(f'{$g_p50-$d_p50:.3f}')")
    add99=$(python3 -c "print(f'{$g_p99-$d_p99:.3f}')")
    rows+=("| $rate | $d_rps | $d_p50 | $d_p99 | $g_rps | $g_p50 | $g_p99 | **$add50** | **$add99** | $g_ok |")
done
echo "max throughput" >&2
read -r d_max _ _ _ < <(run "$direct" "$WORK/direct.json" max "$DURATION")
read -r g_max g_max50 g_max99 g_maxok < <(run "$through" "$WORK/named.json" max "$DURATION" -H "x-bridle-contract: selfhelp-response")

stored=$(curl -s -H "authorization: Bearer bench-admin-key-0123456789" "$GATEWAY/admin/v1/stats" |
    python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("turns", "?"))' 2>/dev/null || echo "?")

{
    echo "# Gateway overhead"
    echo
    echo "Measured $(date -u +%Y-%m-%d) by \`bench/gateway/run.sh\` with oha $OHA_VERSION ($CONNECTIONS connections,"
    echo "${DURATION} s per rate, latency corrected for coordinated omission). Machine: $(nproc) cores,"
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB;"
    echo "the load generator, \`bridle mock-llm\` and \`bridle serve\` share these cores."
    echo
    echo "Direct: oha → mock-llm (a \`json_schema\` request; the mock answers a valid selfhelp-response)."
    echo "Through Bridle: oha → \`bridle serve\` (\`x-bridle-contract: selfhelp-response\`: instructions"
    echo "into the prompt, upstream call to the same mock over HTTP, repair + parse + validate + rules,"
    echo "a conversation, the user message and the attempt stored in SQLite) → mock-llm."
    echo
    echo "| rate (req/s) | direct rps | direct p50 ms | direct p99 ms | Bridle rps | Bridle p50 ms | Bridle p99 ms | added p50 ms | added p99 ms | Bridle success |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Max throughput (closed loop, $CONNECTIONS connections): direct $d_max req/s; through Bridle"
    echo "$g_max req/s (p50 $g_max50 ms, p99 $g_max99 ms, success $g_maxok). Turns stored: $stored."
} | tee "$OUT"
