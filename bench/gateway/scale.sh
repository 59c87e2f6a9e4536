#!/usr/bin/env bash
# Scale-out: the same enforcing gateway (OpenAI endpoint, `selfhelp-response`, every attempt
# stored, durable commits) on SQLite, on PostgreSQL, and as two instances sharing PostgreSQL and
# Redis (limits on, kept in Redis), against the same `bridle mock-llm`, one after the other in
# one run. For each: the most requests per second (closed loop), the latency Bridle adds at a
# fixed rate over calling the mock directly, the bytes stored per turn and the connections held.
#
#   bench/gateway/scale.sh
#   RATE=1000 DURATION=10 CONNECTIONS=16 bench/gateway/scale.sh
#   COMMIT=after_reply bench/gateway/scale.sh
#   PG_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 bench/gateway/scale.sh
#   BRIDLE=/tmp/bridle bench/gateway/scale.sh   # a given binary (no build)
#
# Each configuration gets a fresh SQLite directory or PostgreSQL database (created from PG_URL,
# dropped at the end). Writes bench/gateway/results-scale.md (and prints it). No pinning: with
# two gateways there is no core to give each; all processes share the machine, as PostgreSQL
# does, so the numbers are for comparing the configurations with one another.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gateway/results-scale.md}"
RATE="${RATE:-1000}"
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-16}"
COMMIT="${COMMIT:-before_reply}"
PG_URL="${PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
WORK="$(mktemp -d)"
KEY="bench-key-0123456789abcdef"
ADMIN_KEY="bench-admin-key-0123456789"
DB="bridle_scale_$$"
pids=()
cleanup() {
    for pid in "${pids[@]}" $(cat "$WORK"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OHA="$(oha_bin)"
if [ -z "${BRIDLE:-}" ]; then
    echo "building bridle (release)" >&2
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p bridle
    BRIDLE="$ROOT/target/release/bridle"
fi
db_url="${PG_URL%/*}/$DB"

"$BRIDLE" mock-llm --port 0 --seed 7 2>"$WORK/mock.log" &
pids+=($!)
MOCK="$(url_in "$WORK/mock.log")"

# `gateway NAME STORE_URL LIMITS`: starts `bridle serve`; prints its URL.
gateway() {
    local name="$1" store="$2" limits="$3"
    local env=(OPENAI_BASE_URL="$MOCK/v1" OPENAI_API_KEY="sk-bench" BRIDLE_USER_KEYS="bench:$KEY"
        BRIDLE_ADMIN_KEY="$ADMIN_KEY" BRIDLE__STORE_COMMIT="$COMMIT" RUST_LOG=warn
        BRIDLE__STORE_URL="$store")
    if [ "$limits" = redis ]; then
        # On, shared through Redis, and high enough never to refuse the bench's requests.
        env+=(BRIDLE__SERVER__LIMITS__ENABLED=true BRIDLE__SERVER__LIMITS__REDIS_URL="$REDIS_URL"
            BRIDLE__SERVER__LIMITS__REQUESTS_PER_MINUTE=10000
            BRIDLE__SERVER__LIMITS__CONCURRENT_CONVERSATIONS=1000)
    else
        env+=(BRIDLE__SERVER__LIMITS__ENABLED=false)
    fi
    # Started from a command substitution: its pid goes to a file (the caller's `pids` is not
    # this shell's), its stdout away (or the substitution would wait for it).
    env "${env[@]}" "$BRIDLE" serve --bind 127.0.0.1:0 --data-dir "$WORK/data-$name" \
        >/dev/null 2>"$WORK/$name.log" &
    echo "$!" >"$WORK/$name.pid"
    url_in "$WORK/$name.log"
}

echo '{"model":"openai","messages":[{"role":"user","content":"I keep procrastinating, any tips?"}]}' >"$WORK/ask.json"

# `load URL BODY RATE CONNECTIONS [oha args]`: one oha run; prints "rps p50_ms p99_ms success".
load() {
    local url="$1" body="$2" rate="$3" connections="$4"
    shift 4
    local args=(-z "${DURATION}s" -c "$connections" --no-tui --output-format json -m POST
        -H "content-type: application/json" -H "authorization: Bearer $KEY" -D "$body")
    if [ "$rate" != "max" ]; then args+=(-q "$rate" --latency-correction); fi
    "$OHA" "${args[@]}" "$@" "$url" | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["summary"]; p = r["latencyPercentiles"]
print("%.0f %.2f %.2f %.4f" % (s["requestsPerSec"], p["p50"] * 1000, p["p99"] * 1000, s["successRate"]))'
}

# The body Bridle sends upstream, for the direct runs (the mock does the same work both ways).
direct_body() {
    local url="$1" admin=(-H "authorization: Bearer $ADMIN_KEY")
    local conversation
    conversation=$(curl -sf "${admin[@]}" "$url/admin/v1/conversations?offset=20&limit=1" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')
    curl -sf "${admin[@]}" "$url/admin/v1/conversations/$conversation" | python3 -c '
import json, sys
detail = json.load(sys.stdin)
sent = [m["request_payload"] for m in detail["messages"] if m.get("request_payload")]
print(json.dumps(sent[0]["body"]))' >"$WORK/direct.json"
}

# `turns URL`: turns stored, from the admin statistics.
turns() {
    curl -sf -H "authorization: Bearer $ADMIN_KEY" "$1/admin/v1/stats" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["turns"])'
}

# `measure LABEL STORE N`: N gateways on STORE (a URL); appends a row to rows.tsv.
measure() {
    local label="$1" store="$2" n="$3" limits=off urls=() i
    [ "$n" -gt 1 ] && limits=redis
    for i in $(seq 1 "$n"); do urls+=("$(gateway "$label-$i" "$store" "$limits")"); done
    local header=(-H "x-bridle-contract: selfhelp-response")
    echo "$label: warming up" >&2
    for url in "${urls[@]}"; do load "$url/v1/chat/completions" "$WORK/ask.json" max 4 "${header[@]}" >/dev/null; done
    [ -f "$WORK/direct.json" ] || direct_body "${urls[0]}"
    echo "$label: max throughput" >&2
    local per=$((CONNECTIONS / n)) total=0 p50s=() p99s=()
    for url in "${urls[@]}"; do
        load "$url/v1/chat/completions" "$WORK/ask.json" max "$per" "${header[@]}" >"$WORK/max-$label-$(basename "$url")" &
    done
    wait_loads
    for f in "$WORK"/max-"$label"-*; do
        read -r rps p50 p99 _ <"$f"
        total=$((total + rps)); p50s+=("$p50"); p99s+=("$p99")
    done
    echo "$label: $RATE req/s" >&2
    read -r _ d_p50 d_p99 _ < <(load "$MOCK/v1/chat/completions" "$WORK/direct.json" "$RATE" 64)
    local rate_each=$((RATE / n)) added=()
    for url in "${urls[@]}"; do
        load "$url/v1/chat/completions" "$WORK/ask.json" "$rate_each" $((64 / n)) "${header[@]}" >"$WORK/rate-$label-$(basename "$url")" &
    done
    wait_loads
    for f in "$WORK"/rate-"$label"-*; do
        read -r _ g_p50 g_p99 ok <"$f"
        added+=("$(python3 -c "print(f'{$g_p50 - $d_p50:.2f} / {$g_p99 - $d_p99:.2f}')")")
    done
    local stored bytes
    stored=$(turns "${urls[0]}")
    case "$store" in
        sqlite*) bytes=$(du -cb "$WORK/data-$label-1"/bridle.db* | tail -1 | cut -f1) ;;
        *) bytes=$(psql -qtA "$db_url" -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c \
               WHERE c.relname IN ('messages', 'conversations', 'prompts') AND c.relkind = 'r'") ;;
    esac
    local per_turn=$((bytes / stored))
    local conns="-"
    [ "$store" != "${store#postgres}" ] && conns=$(psql -qtA "$db_url" -c \
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '$DB' AND application_name = 'bridle'")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$n" "$total" "${p50s[*]}" "${p99s[*]}" \
        "${added[*]}" "$per_turn" "$conns" >>"$WORK/rows.tsv"
    for i in $(seq 1 "$n"); do kill "$(cat "$WORK/$label-$i.pid")"; done
}

wait_loads() {
    # The oha runs started in the background by `measure` (the servers keep running).
    local pid
    for pid in $(jobs -p); do
        case " ${pids[*]} " in *" $pid "*) ;; *) wait "$pid" ;; esac
    done
}

: >"$WORK/rows.tsv"
measure sqlite "sqlite://$WORK/data-sqlite-1/bridle.db" 1
psql -q "$PG_URL" -c "CREATE DATABASE $DB" >/dev/null
measure postgres "$db_url" 1
psql -q "$PG_URL" -c "DROP DATABASE $DB WITH (FORCE)" >/dev/null
psql -q "$PG_URL" -c "CREATE DATABASE $DB" >/dev/null
measure postgres-x2 "$db_url" 2

{
    echo "# Scale-out: SQLite, PostgreSQL, two gateways on PostgreSQL"
    echo
    echo "Measured $(date -u +%Y-%m-%d) by \`bench/gateway/scale.sh\` with oha $OHA_VERSION. Machine: $(nproc) cores,"
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); PostgreSQL $(psql -qtA "$PG_URL" -c 'SHOW server_version' | cut -d' ' -f1)"
    echo "and Redis on the same machine; load average at the start $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "\`store_commit = \"$COMMIT\"\`; the OpenAI endpoint enforcing \`selfhelp-response\` against"
    echo "\`bridle mock-llm\`; max throughput with $CONNECTIONS connections in all (closed loop, ${DURATION} s);"
    echo "added latency at $RATE req/s in all, over the mock called directly with the body Bridle sends."
    echo
    echo "| store | gateways | max req/s | p50 ms | p99 ms | added p50 / p99 ms at $RATE req/s | bytes a turn | PostgreSQL connections |"
    echo "|---|---|---|---|---|---|---|---|"
    while IFS=$'\t' read -r label n total p50 p99 added per_turn conns; do
        echo "| $label | $n | $total | $p50 | $p99 | $added | $per_turn | $conns |"
    done <"$WORK/rows.tsv"
} | tee "$OUT"
