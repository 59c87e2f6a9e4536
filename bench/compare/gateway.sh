#!/usr/bin/env bash
# Comparison 5 of bench/run: what a gateway adds in front of `bridle mock-llm`. One mock (no
# faults) as upstream; oha (the same load generator for every target) at fixed rates and then
# closed-loop against:
#   direct            oha → mock
#   Bridle, pass      oha → `bridle serve` (no contract: forwarded as it is) → mock
#   Bridle, enforced  oha → `bridle serve` (`x-bridle-contract: selfhelp-response`: instructions
#                     into the prompt, check, every attempt stored in SQLite) → mock
#   LiteLLM           oha → `litellm --num_workers 2` (its docs: one worker per core) → mock
# Every upstream request carries the same body (the one Bridle sends when it enforces the
# contract), so the mock does the same work for all four. No CPU pinning: the gateways, the mock
# and oha share the 2 cores (LiteLLM's two workers need both). Writes $RESULTS/gateway.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
: "${PEERS:?}" "${RESULTS:?}"
RATES="${GATEWAY_RATES:-100 250 500}"
DURATION="${GATEWAY_DURATION:-10}"
CONNECTIONS="${GATEWAY_CONNECTIONS:-64}"
WORKERS="${LITELLM_WORKERS:-$(nproc)}"
# One key for both gateways: a Bridle user key, and LiteLLM's master key (which must start with sk-).
KEY="sk-bench-key-0123456789abcdef"
ADMIN="bench-admin-key-0123456789"
WORK="$(mktemp -d)"
pids=()
LITELLM_PID=""
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "$LITELLM_PID" ] && kill -- "-$LITELLM_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
exec 2>>"$RESULTS/gateway.log"

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OHA="$(oha_bin)"
cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
BRIDLE="$ROOT/target/release/bridle"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$BRIDLE" mock-llm --port 0 --seed 7 2>"$WORK/mock.log" &
pids+=("$!")
MOCK="$(url_in "$WORK/mock.log" 300)"
OPENAI_BASE_URL="$MOCK/v1" OPENAI_API_KEY="sk-bench" BRIDLE_USER_KEYS="bench:$KEY" \
    BRIDLE_ADMIN_KEY="$ADMIN" BRIDLE__SERVER__LIMITS__ENABLED=false \
    RUST_LOG=warn "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$WORK/data" 2>"$WORK/bridle.log" &
pids+=("$!")
GATEWAY="$(url_in "$WORK/bridle.log" 300)"

# LiteLLM: the same mock as an OpenAI-compatible model, a master key (it refuses to start
# without one), no database, no callbacks.
LPORT="$(free_port)"
cat >"$WORK/litellm.yaml" <<EOF
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: $MOCK/v1
      api_key: sk-bench
litellm_settings:
  set_verbose: false
  telemetry: false
EOF
# (In a session of its own, so its worker processes are stopped with it; the model cost map
# from the package, not fetched: this machine reaches no network.)
LITELLM_MASTER_KEY="$KEY" LITELLM_LOG=ERROR LITELLM_LOCAL_MODEL_COST_MAP=True setsid "$PEERS/proxy/bin/litellm" --config "$WORK/litellm.yaml" \
    --host 127.0.0.1 --port "$LPORT" --num_workers "$WORKERS" >"$WORK/litellm.log" 2>&1 &
LITELLM_PID="$!"
LITELLM="http://127.0.0.1:$LPORT"
for _ in $(seq 1 600); do
    curl -sf "$LITELLM/health/liveliness" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf "$LITELLM/health/liveliness" >/dev/null || { echo "LiteLLM did not start:" >&2; tail -20 "$WORK/litellm.log" >&2; }
LITELLM_VERSION="$("$PEERS/proxy/bin/python" -c 'from importlib.metadata import version; print(version("litellm"))')"

# The upstream body: what Bridle sends the mock when it enforces the contract for the question.
echo '{"model":"openai","messages":[{"role":"user","content":"I keep procrastinating, any tips?"}]}' >"$WORK/question.json"
H=(-H "content-type: application/json" -H "authorization: Bearer $KEY")
for _ in 1 2 3; do
    curl -sf "${H[@]}" -H "x-bridle-contract: selfhelp-response" -d @"$WORK/question.json" "$GATEWAY/v1/chat/completions" >/dev/null
done
conversation=$(curl -sf -H "authorization: Bearer $ADMIN" "$GATEWAY/admin/v1/conversations?limit=1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')
curl -sf -H "authorization: Bearer $ADMIN" "$GATEWAY/admin/v1/conversations/$conversation" | python3 -c '
import json, sys
detail = json.load(sys.stdin)
sent = [m["request_payload"] for m in detail["messages"] if m.get("request_payload")]
print(json.dumps(sent[0]["body"]))' >"$WORK/upstream.json"
curl -sf "${H[@]}" -d @"$WORK/upstream.json" "$LITELLM/v1/chat/completions" >"$WORK/litellm-answer.json" ||
    echo "LiteLLM did not answer the upstream body" >&2

# One oha run → one JSON line.
run() {
    local target="$1" url="$2" body="$3" rate="$4"
    shift 4
    local args=(-z "${DURATION}s" -c "$CONNECTIONS" --no-tui --output-format json -m POST "${H[@]}" -D "$body")
    if [ "$rate" != "max" ]; then args+=(-q "$rate" --latency-correction); fi
    "$OHA" "${args[@]}" "$@" "$url" >"$WORK/oha.json" 2>>"$RESULTS/gateway.log" || true
    python3 - "$WORK/oha.json" "$target" "$rate" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    s, p = r["summary"], r["latencyPercentiles"]
    print(json.dumps({"target": sys.argv[2], "rate": sys.argv[3], "rps": s["requestsPerSec"],
        "success": s["successRate"], "p50_ms": p["p50"] * 1000, "p99_ms": p["p99"] * 1000,
        "statuses": r.get("statusCodeDistribution", {})}))
except Exception as e:
    print(json.dumps({"target": sys.argv[2], "rate": sys.argv[3], "error": str(e)}))
PY
}
declare -A URL=([direct]="$MOCK/v1/chat/completions" [bridle_pass]="$GATEWAY/v1/chat/completions"
    [bridle_enforced]="$GATEWAY/v1/chat/completions" [litellm]="$LITELLM/v1/chat/completions")
declare -A BODY=([direct]="$WORK/upstream.json" [bridle_pass]="$WORK/upstream.json"
    [bridle_enforced]="$WORK/question.json" [litellm]="$WORK/upstream.json")
: >"$WORK/runs.jsonl"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for target in direct bridle_pass bridle_enforced litellm; do
    extra=()
    [ "$target" = bridle_enforced ] && extra=(-H "x-bridle-contract: selfhelp-response")
    run "$target" "${URL[$target]}" "${BODY[$target]}" max "${extra[@]}" >/dev/null # warm-up
    for rate in $RATES max; do
        echo "gateway: $target at $rate" >&2
        run "$target" "${URL[$target]}" "${BODY[$target]}" "$rate" "${extra[@]}" >>"$WORK/runs.jsonl"
    done
done
python3 "$ROOT/bench/compare/py/gateway_summary.py" "$WORK/runs.jsonl" "$LITELLM_VERSION" "$WORKERS" \
    "$CONNECTIONS" "$DURATION" "$(basename "$OHA") $("$OHA" --version | awk '{print $2}')" \
    "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$RESULTS/gateway.json"
